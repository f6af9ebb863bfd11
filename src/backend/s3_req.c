/*
 * s3_req.c - one S3 request (see s3.c's design comment): the pooled curl
 * handles, the callbacks that stream bodies in and out and capture
 * headers, SigV4 signing of exactly what is sent, and the mapping of the
 * outcome to an errno.
 *
 * Stall detection, relative to the server: a transfer is abandoned
 * (ETIMEDOUT, then the retry layer tries again) only when it is silent
 * (moves no byte either way, the wait for the answer after a whole body
 * included) for longer than the store's current threshold,
 *   T = min(max(stall_ms, S3_STALL_K * p90 of the longest silences of the
 *           last S3_SILENCES requests), the low-speed limit),
 * and the silence is its own: when at least two transfers are under way
 * and no transfer of the store moved a byte since this one's last, the
 * server is slow for everyone, sending again would only add load, and the
 * transfer
 * waits on (counted: objfs_s3_slow_server_waits_total) until curl's
 * low-speed limit (low_speed_s: under 1 byte/s that long) ends it.  A
 * transfer moving bytes is never abandoned.  Each request that got an
 * answer gives its longest silence as a sample, and so does each one
 * abandoned as stalled before the first byte of the answer (its silence
 * then), so a server whose answers take longer than T teaches the
 * threshold instead of having every try abandoned (a lone reader of a
 * server that takes 5 s to answer would otherwise never get an answer);
 * a transfer that falls silent in the middle of the answer's body is a
 * stalled connection and teaches nothing.  Requests whose server works before answering (copies,
 * completions, multi-deletes: r->slow) have no stall check, only the
 * low-speed limit times S3_SLOW_FACTOR.
 *
 *   silence < T                             -> wait
 *   silence >= T, others moving (or alone)  -> stalled: abandon
 *   silence >= T, nothing moved since       -> slow server: wait
 *   under 1 byte/s for the low-speed limit  -> curl abandons it
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "backend/backend.h"
#include "backend/credprov.h"
#include "backend/http.h"
#include "backend/s3_int.h"
#include "backend/s3_errors.h"
#include "backend/s3_internal.h"
#include "backend/s3_sign.h"
#include "backend/s3_xml.h"
#include "backend/store_error.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/io.h"
#include "common/log.h"
#include "common/metrics.h"

void s3_req_init(struct s3_req *r, const char *method, const char *key)
{
	struct objfs_obj_info empty = OBJFS_OBJ_INFO_INIT;

	memset(r, 0, sizeof(*r));
	r->method = method;
	r->key = key;
	r->cap = empty;
	r->limit = UINT64_MAX;
}

void s3_req_release(struct s3_req *r)
{
	size_t i;

	for (i = 0; i < r->n_hdrs; i++)
		free(r->hdr_store[i]);
	r->n_hdrs = 0;
	objfs_buf_release(&r->body);
	objfs_obj_info_release(&r->cap);
}

void s3_req_param(struct s3_req *r, const char *name, const char *value)
{
	if (r->n_params < sizeof(r->params) / sizeof(r->params[0])) {
		r->params[r->n_params].name = name;
		r->params[r->n_params].value = value;
		r->n_params++;
	}
}

static bool header_value_ok(const char *v)
{
	for (; *v != '\0'; v++)
		if (*v == '\r' || *v == '\n')
			return false;
	return true;
}

static bool header_name_ok(const char *n)
{
	if (*n == '\0')
		return false;
	for (; *n != '\0'; n++) {
		unsigned char c = (unsigned char)*n;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.'))
			return false;
	}
	return true;
}

/* Adds a header (copied).  0, EINVAL (CR/LF in a value, bad name), E2BIG
 * or ENOMEM. */
int s3_req_header(struct s3_req *r, const char *prefix, const char *name,
		      const char *value)
{
	size_t pl = strlen(prefix), nl = strlen(name), vl = strlen(value);
	char *s;

	if (!header_value_ok(value) || !header_name_ok(name))
		return EINVAL;
	if (r->n_hdrs >= S3_MAX_EXTRA_HEADERS)
		return E2BIG;
	if (pl + nl + vl + 4 > S3_MAX_HEADER_LINE)
		return E2BIG;
	s = malloc(pl + nl + vl + 2);
	if (s == NULL)
		return ENOMEM;
	memcpy(s, prefix, pl);
	memcpy(s + pl, name, nl + 1);
	memcpy(s + pl + nl + 1, value, vl + 1);
	r->hdr_store[r->n_hdrs] = s;
	r->hdrs[r->n_hdrs].name = s;
	r->hdrs[r->n_hdrs].value = s + pl + nl + 1;
	r->n_hdrs++;
	return 0;
}

int s3_req_meta(struct s3_req *r, const struct objfs_meta *meta,
		    const char *content_type)
{
	size_t i;
	int rc = 0;

	if (meta != NULL)
		for (i = 0; i < meta->n && rc == 0; i++)
			rc = s3_req_header(r, "x-amz-meta-", meta->items[i].name,
					meta->items[i].value);
	if (rc == 0)
		rc = s3_req_header(r, "", "Content-Type",
				content_type != NULL ? content_type :
				"application/octet-stream");
	return rc;
}

/* ---- connection pool ---------------------------------------------------- */

static CURL *pool_get(struct s3_ctx *c)
{
	CURL *h = NULL;

	pthread_mutex_lock(&c->mu);
	while (c->n_free == 0 && c->n_total >= c->max_conn)
		pthread_cond_wait(&c->cv, &c->mu);
	if (c->n_free > 0) {
		h = c->free_handles[--c->n_free];
		pthread_mutex_unlock(&c->mu);
		return h;
	}
	c->n_total++;
	pthread_mutex_unlock(&c->mu);
	h = curl_easy_init();
	if (h == NULL) {
		pthread_mutex_lock(&c->mu);
		c->n_total--;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->mu);
	}
	return h;
}

/* Returns h to the pool; a handle whose transfer failed at the transport
 * level is closed instead (its connection may be half-dead). */
static void pool_put(struct s3_ctx *c, CURL *h, bool broken)
{
	if (broken) {
		curl_easy_cleanup(h);
		pthread_mutex_lock(&c->mu);
		c->n_total--;
	} else {
		pthread_mutex_lock(&c->mu);
		c->free_handles[c->n_free++] = h;
	}
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* ---- stall detection (the design comment above) ------------------------ */

long objfs_s3_stall_threshold(long stall_ms, long cap_ms, unsigned k,
			      const unsigned *samples, size_t n)
{
	unsigned v[S3_SILENCES];
	size_t i, j;
	long t = stall_ms;

	if (n > S3_SILENCES)
		n = S3_SILENCES;
	if (n > 0) {
		memcpy(v, samples, n * sizeof(v[0]));
		for (i = 1; i < n; i++) {       /* 64 at most */
			unsigned x = v[i];

			for (j = i; j > 0 && v[j - 1] > x; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
		if ((long long)v[(n * 90 + 99) / 100 - 1] * k > t)
			t = (long)v[(n * 90 + 99) / 100 - 1] * (long)k;
	}
	if (cap_ms > 0 && t > cap_ms)
		t = cap_ms;
	if (t < stall_ms)
		t = stall_ms;
	return t;
}

long objfs_s3_stall_now(struct objfs_store *s)
{
	struct s3_ctx *c = s->ctx;

	return __atomic_load_n(&c->stall_thr_ms, __ATOMIC_RELAXED);
}

/* r starts a transfer with a stall check. */
static void active_add(struct s3_ctx *c, struct s3_req *r)
{
	pthread_mutex_lock(&c->mu);
	r->active_next = c->active;
	c->active = r;
	pthread_mutex_unlock(&c->mu);
}

/* r's transfer ended: out of the list, and its longest silence becomes a
 * sample when it got an answer, or was abandoned as stalled while it
 * waited for one (no answer byte yet: the server may be slower than T). */
static void active_del(struct s3_ctx *c, struct s3_req *r, bool answered)
{
	struct s3_req **pp;
	long long ms = r->max_silence_ms;

	if (answered && objfs_now_ms() - r->moved_at_ms > ms)
		ms = objfs_now_ms() - r->moved_at_ms;
	pthread_mutex_lock(&c->mu);
	for (pp = &c->active; *pp != NULL; pp = &(*pp)->active_next) {
		if (*pp == r) {
			*pp = r->active_next;
			break;
		}
	}
	if (answered || (r->stalled && r->moved_dl == 0)) {
		c->silences[c->next_silence] = ms < 0 ? 0 :
			ms > 3600000 ? 3600000 : (unsigned)ms;
		c->next_silence = (c->next_silence + 1) % S3_SILENCES;
		if (c->n_silences < S3_SILENCES)
			c->n_silences++;
		__atomic_store_n(&c->stall_thr_ms,
				 objfs_s3_stall_threshold(c->stall_ms,
							  c->low_speed_s * 1000,
							  S3_STALL_K,
							  c->silences,
							  c->n_silences),
				 __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&c->mu);
}

/* Whether r's silence is the server's, not its connection's: two
 * transfers at least under way, and no transfer of this store moved a
 * byte since r's last one.  A server starved of CPU moves nothing on any
 * connection; one that answered others while r sat silent has shown that
 * r's connection is stuck. */
static bool server_silent(struct s3_ctx *c, const struct s3_req *r)
{
	const struct s3_req *a;
	unsigned n = 0;

	if (__atomic_load_n(&c->moved_ms, __ATOMIC_RELAXED) >
	    __atomic_load_n(&r->moved_at_ms, __ATOMIC_RELAXED))
		return false;
	pthread_mutex_lock(&c->mu);
	for (a = c->active; a != NULL && n < 2; a = a->active_next)
		n++;
	pthread_mutex_unlock(&c->mu);
	return n >= 2;
}

/* ---- curl callbacks -------------------------------------------------------- */

/* Aborts a transfer whose get was cancelled, or that is stalled (the
 * design comment above).  libcurl calls this at least once a second. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct s3_req *r = arg;
	long long now = objfs_now_ms(), silence;

	(void)dltotal;
	(void)ultotal;
	if (objfs_cancel_fired(r->cancel))
		return 1;
	if (r->stall_ms == 0)
		return 0;
	silence = now - r->moved_at_ms;
	if (silence > r->max_silence_ms)
		r->max_silence_ms = silence;
	if (dlnow != r->moved_dl || ulnow != r->moved_ul) {
		r->moved_dl = dlnow;
		r->moved_ul = ulnow;
		__atomic_store_n(&r->moved_at_ms, now, __ATOMIC_RELAXED);
		__atomic_store_n(&r->ctx->moved_ms, now, __ATOMIC_RELAXED);
		return 0;
	}
	if (silence < r->stall_ms ||
	    silence < __atomic_load_n(&r->ctx->stall_thr_ms, __ATOMIC_RELAXED))
		return 0;
	if (server_silent(r->ctx, r)) {
		if (!r->slow_server)
			objfs_metric_add(r->ctx->meter.slow_waits, 0, 1);
		r->slow_server = true;
		return 0;
	}
	r->stalled = true;
	return 1;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct s3_req *r = arg;
	size_t n = size * nmemb;
	bool ok = r->status >= 200 && r->status < 300;

	if (!ok || r->sink == NULL) {
		objfs_buf_add(&r->body, p, n);
		if (ok && r->body.err != 0) {
			r->sink_err = EPROTO;
			return 0;
		}
		return n;
	}
	if (r->ranged && !r->range_checked) {
		r->range_checked = true;
		if (r->status == 200) {
			r->skip = r->range_off;
			r->limit = r->range_len;
		}
	}
	{
		const char *d = p;
		size_t left = n;

		/* A server that answered a Range request with 200 sends the
		 * whole object: skip to the range. */
		if (r->skip > 0) {
			size_t k = left < r->skip ? left : (size_t)r->skip;

			d += k;
			left -= k;
			r->skip -= k;
		}
		if (left > r->limit - r->sink_off)
			left = (size_t)(r->limit - r->sink_off);
		if (left > 0) {
			int rc = r->sink->write_at(r->sink->arg, r->sink_off,
						   d, left);

			if (rc != 0) {
				r->sink_err = rc;
				return 0;
			}
			r->sink_off += left;
		}
	}
	return n;
}

static bool hdr_is(const char *line, size_t len, const char *name,
		   const char **val, size_t *vlen)
{
	size_t nl = strlen(name);

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return false;
	line += nl + 1;
	len -= nl + 1;
	while (len > 0 && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n' ||
			   line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	/* a CR, LF or NUL inside a value is no HTTP: the header is ignored */
	if (memchr(line, '\r', len) != NULL || memchr(line, '\n', len) != NULL ||
	    memchr(line, '\0', len) != NULL)
		return false;
	*val = line;
	*vlen = len;
	return true;
}

static int parse_u64n(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return EPROTO;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
			return EPROTO;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

size_t s3_on_header(char *line, size_t size, size_t nmemb, void *arg)
{
	struct s3_req *r = arg;
	size_t len = size * nmemb;
	const char *v;
	size_t vl;
	char tmp[1024];

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		/* A new response (after 100 Continue): start over. */
		struct objfs_obj_info empty = OBJFS_OBJ_INFO_INIT;

		objfs_obj_info_release(&r->cap);
		r->cap = empty;
		r->have_length = r->have_total = false;
		r->hdr_err = 0;
		{
			/* "HTTP/1.1 200 OK": the line is not NUL-terminated */
			long st = 0;
			const char *sp = memchr(line, ' ', len);
			const char *end = line + len;

			for (sp = sp != NULL ? sp + 1 : end;
			     sp < end && *sp >= '0' && *sp <= '9' && st < 1000; sp++)
				st = st * 10 + (*sp - '0');
			r->status = st;
		}
		return len;
	}
	if (hdr_is(line, len, "x-amz-bucket-region", &v, &vl)) {
		if (vl < sizeof(r->bucket_region)) {
			memcpy(r->bucket_region, v, vl);
			r->bucket_region[vl] = '\0';
		}
	} else if (hdr_is(line, len, "ETag", &v, &vl)) {
		if (vl < OBJFS_ETAG_MAX) {
			memcpy(r->cap.etag, v, vl);
			r->cap.etag[vl] = '\0';
		}
	} else if (hdr_is(line, len, "Content-Length", &v, &vl)) {
		r->have_length = parse_u64n(v, vl, &r->content_length) == 0;
	} else if (hdr_is(line, len, "Content-Range", &v, &vl)) {
		const char *slash = memchr(v, '/', vl);

		if (slash != NULL)
			r->have_total = parse_u64n(slash + 1,
						   vl - (size_t)(slash + 1 - v),
						   &r->range_total) == 0;
	} else if (hdr_is(line, len, "Last-Modified", &v, &vl)) {
		if (vl < sizeof(tmp)) {
			time_t t;

			memcpy(tmp, v, vl);
			tmp[vl] = '\0';
			t = curl_getdate(tmp, NULL);
			if (t != -1) {
				r->cap.mtime.tv_sec = t;
				r->cap.mtime.tv_nsec = 0;
			}
		}
	} else if (hdr_is(line, len, "Content-Type", &v, &vl)) {
		free(r->cap.content_type);
		r->cap.content_type = strndup(v, vl);
		if (r->cap.content_type == NULL)
			r->hdr_err = ENOMEM;
	} else if (len > 11 && strncasecmp(line, "x-amz-meta-", 11) == 0) {
		const char *colon = memchr(line, ':', len);

		/* a name that is empty or holds a NUL is no metadata */
		if (colon != NULL && (size_t)(colon - line) - 11 < 256 &&
		    colon - line > 11 &&
		    memchr(line + 11, '\0', (size_t)(colon - line) - 11) == NULL) {
			char name[256];
			size_t nl = (size_t)(colon - line) - 11;
			char *val;

			memcpy(name, line + 11, nl);
			name[nl] = '\0';
			v = colon + 1;
			vl = len - (size_t)(v - line);
			while (vl > 0 && (*v == ' ' || *v == '\t')) {
				v++;
				vl--;
			}
			while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n' ||
					  v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (memchr(v, '\r', vl) != NULL || memchr(v, '\n', vl) != NULL ||
			    memchr(v, '\0', vl) != NULL)
				return len;     /* no HTTP: ignored, as above */
			val = strndup(v, vl);
			if (val == NULL ||
			    objfs_meta_set(&r->cap.meta, name, val) != 0)
				r->hdr_err = ENOMEM;
			free(val);
		}
	}
	return len;
}

static size_t on_read(char *buf, size_t size, size_t nitems, void *arg)
{
	struct s3_req *r = arg;
	size_t n = size * nitems;
	uint64_t left = r->src->size - r->src_off;
	int rc;

	if (n > left)
		n = (size_t)left;
	if (n == 0)
		return 0;
	rc = r->src->read_at(r->src->arg, r->src_off, buf, n);
	if (rc != 0) {
		r->src_err = rc;
		return CURL_READFUNC_ABORT;
	}
	r->src_off += n;
	return n;
}

static int on_seek(void *arg, curl_off_t off, int origin)
{
	struct s3_req *r = arg;

	if (origin != SEEK_SET || off < 0 || (uint64_t)off > r->src->size)
		return CURL_SEEKFUNC_FAIL;
	r->src_off = (uint64_t)off;
	return CURL_SEEKFUNC_OK;
}

/* ---- signing and performing -------------------------------------------- */

static int source_sha256(const struct objfs_source *src, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;
	EVP_MD_CTX *ctx = NULL;
	char *buf = NULL;
	uint64_t off;
	int rc = 0;

	ctx = EVP_MD_CTX_new();
	/* no bigger than the body: a 1 MiB block is a mmap per small PUT */
	buf = malloc(src->size < S3_HASH_CHUNK ? (size_t)src->size + 1 :
		     S3_HASH_CHUNK);
	if (ctx == NULL || buf == NULL) {
		rc = ENOMEM;
		goto out;
	}
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		rc = EIO;
		goto out;
	}
	for (off = 0; off < src->size; ) {
		size_t n = src->size - off > S3_HASH_CHUNK ?
			S3_HASH_CHUNK : (size_t)(src->size - off);

		rc = src->read_at(src->arg, off, buf, n);
		if (rc != 0)
			goto out;
		if (EVP_DigestUpdate(ctx, buf, n) != 1) {
			rc = EIO;
			goto out;
		}
		off += n;
	}
	if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32) {
		rc = EIO;
		goto out;
	}
	for (i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
	return rc;
}

/* Appends "name: value" to a curl header list. */
static int slist_add(struct curl_slist **l, const char *name,
		     const char *value)
{
	char line[S3_MAX_HEADER_LINE + 64];
	struct curl_slist *n;
	int k;

	k = snprintf(line, sizeof(line), "%s: %s", name, value);
	if (k < 0 || (size_t)k >= sizeof(line))
		return E2BIG;
	n = curl_slist_append(*l, line);
	if (n == NULL)
		return ENOMEM;
	*l = n;
	return 0;
}

static int build_path(const struct s3_ctx *c, const char *key, char *raw,
		      size_t cap)
{
	int k = snprintf(raw, cap, "%s/%s", c->base_path,
			 key != NULL ? key : "");

	return k < 0 || (size_t)k >= cap ? E2BIG : 0;
}

/* A region name: a host label of [a-z0-9-]. */
static bool region_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '-'))
			return false;
	return i > 0 && i <= 63;
}

/* The start of label number back (1: the last) of host[0..len), or NULL. */
static const char *label_back(const char *host, size_t len, int back)
{
	const char *p = host + len;

	while (back-- > 0) {
		while (p > host && p[-1] != '.')
			p--;
		if (back > 0) {
			if (p == host)
				return NULL;
			len = (size_t)(p - 1 - host);
			p = host + len;
		}
	}
	return p;
}

int objfs_s3_region_host(const char *host, const char *region, char *out,
			 size_t cap)
{
	const char *aws = ".amazonaws.com", *s3, *l2;
	size_t hl = strlen(host), al = strlen(aws), len;
	int n;

	if (hl <= al || strcmp(host + hl - al, aws) != 0 || !region_ok(region))
		return ENOENT;
	/* Before .amazonaws.com: "s3", "s3-REGION" or "s3.REGION", after
	 * the bucket's labels (which may hold "s3" themselves). */
	len = hl - al;
	s3 = label_back(host, len, 1);
	l2 = label_back(host, len, 2);
	if (l2 != NULL && strncmp(l2, "s3.", 3) == 0)
		s3 = l2;        /* s3.REGION */
	else if (s3 == NULL || (strncmp(s3, "s3.", 3) != 0 && strncmp(s3, "s3-", 3) != 0))
		return ENOENT;  /* not s3 nor s3-REGION */
	n = snprintf(out, cap, "%.*ss3.%s%s", (int)(s3 - host), host, region, aws);
	return n < 0 || (size_t)n >= cap ? ENAMETOOLONG : 0;
}

/* After a failed request: whether the server says the bucket lives in
 * another region than the one signed for, and which (into out).  AWS
 * answers a request sent to the wrong region with 301 PermanentRedirect
 * (a HEAD: no body) or 400 AuthorizationHeaderMalformed, naming the
 * bucket's region in x-amz-bucket-region and (400) in <Region>; a bucket
 * just made answers 307 TemporaryRedirect the same way. */
static bool moved_region(const struct s3_req *r, const char *cur, char *out,
			 size_t cap)
{
	const char *reg = r->bucket_region[0] != '\0' ? r->bucket_region :
		r->err.region;

	if (r->status != 301 && r->status != 307 &&
	    !(r->status == 400 && (r->bucket_region[0] != '\0' ||
				   strcmp(r->err.code, "AuthorizationHeaderMalformed") == 0)))
		return false;
	if (!region_ok(reg) || strcmp(reg, cur) == 0 || strlen(reg) >= cap)
		return false;
	snprintf(out, cap, "%s", reg);
	return true;
}

/* Makes the store sign for region (and, on an AWS endpoint, send to the
 * region's endpoint) from now on. */
static void follow_region(struct objfs_store *s, const char *region)
{
	struct s3_ctx *c = s->ctx;
	char host[320];
	char *nr = strdup(region), *nh = NULL;

	if (nr == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	if (objfs_s3_region_host(c->url_host, region, host, sizeof(host)) == 0)
		nh = strdup(host);
	free(c->region);
	c->region = nr;
	if (nh != NULL) {
		free(c->url_host);
		c->url_host = nh;
	}
	pthread_mutex_unlock(&c->mu);
	objfs_info(s->log, "s3", "bucket %s is in region %s: following it%s%s "
		   "(give region=%s to save the redirect)", c->bucket, region,
		   nh != NULL ? " to " : "", nh != NULL ? host : "", region);
}

static int perform_once(struct objfs_store *s, struct s3_req *r);

/* Runs r.  0 for a 2xx response (r->body holds the document when
 * want_body), else an errno; r->err holds the S3 error code if any.  A
 * request the server redirects to the bucket's region is sent again
 * there, once. */
int s3_perform(struct objfs_store *s, struct s3_req *r)
{
	struct s3_ctx *c = s->ctx;
	char cur[64], moved[64];
	int rc = perform_once(s, r);

	if (rc == 0 || (r->status != 301 && r->status != 307 && r->status != 400))
		return rc;
	pthread_mutex_lock(&c->mu);
	snprintf(cur, sizeof(cur), "%s", c->region);
	pthread_mutex_unlock(&c->mu);
	if (!moved_region(r, cur, moved, sizeof(moved)))
		return rc;
	follow_region(s, moved);
	r->src_off = 0;         /* the body is sent again from its start */
	r->sink_off = 0;
	r->bucket_region[0] = '\0';
	memset(&r->err, 0, sizeof(r->err));
	return perform_once(s, r);
}

/* http:// to a port that speaks TLS: the server resets the connection,
 * says nothing or answers TLS bytes, which looks like an outage and was
 * retried for retry_timeout.  On such a failure of a store that never
 * answered, once per store: a TLS handshake with the same host and port
 * (nothing sent; the certificate is not checked: it only tells the
 * protocol).  When it succeeds the failure is EPROTO, not retried, its
 * line naming the fix; else rc as it was. */
static int tls_port(struct s3_ctx *c, const char *host, CURLcode cc, int rc)
{
	char url[400], msg[800];
	const char *ep = host;
	size_t n;
	int was;
	CURL *h;

	if (strcmp(c->scheme, "http") != 0 ||
	    __atomic_load_n(&c->answered, __ATOMIC_RELAXED) != 0 ||
	    (cc != CURLE_RECV_ERROR && cc != CURLE_GOT_NOTHING &&
	     cc != CURLE_SEND_ERROR && cc != CURLE_WEIRD_SERVER_REPLY &&
	     cc != CURLE_UNSUPPORTED_PROTOCOL))
		return rc;
	/* virtual-hosted: BUCKET.host[:port] */
	n = strlen(c->bucket);
	if (c->base_path[0] == '\0' && strncmp(host, c->bucket, n) == 0 &&
	    host[n] == '.')
		ep = host + n + 1;
	was = __atomic_load_n(&c->tls_port, __ATOMIC_ACQUIRE);
	if (was == 0) {
		was = 2;
		h = curl_easy_init();
		if (h != NULL && (size_t)snprintf(url, sizeof(url), "https://%s/",
						  host) < sizeof(url)) {
			curl_easy_setopt(h, CURLOPT_URL, url);
			curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
			curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
			curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
			curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
			curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
			if (curl_easy_perform(h) == CURLE_OK)
				was = 1;
		}
		if (h != NULL)
			curl_easy_cleanup(h);
		__atomic_store_n(&c->tls_port, was, __ATOMIC_RELEASE);
	}
	if (was != 1)
		return rc;
	snprintf(msg, sizeof(msg), "%s answers TLS (http:// to an https port); "
		 "the endpoint speaks https: use https://%s", ep, ep);
	objfs_store_error_note(EPROTO, 0, NULL, msg);
	return EPROTO;
}

static int perform_once(struct objfs_store *s, struct s3_req *r)
{
	struct s3_ctx *c = s->ctx;
	struct objfs_sigv4_header all[S3_MAX_EXTRA_HEADERS + 4];
	struct objfs_sigv4_request sreq;
	struct objfs_sigv4_key skey;
	struct curl_slist *hl = NULL;
	char raw_path[OBJFS_KEY_MAX + 512];
	char enc_path[3 * (OBJFS_KEY_MAX + 512) + 1];
	char *query = NULL, *url = NULL, *auth = NULL;
	char amz_date[17], hash[65];
	char host[320], region[64];
	struct objfs_creds keys = OBJFS_CREDS_INIT;
	const char *payload;
	size_t n = 0, i;
	CURL *h = NULL;
	CURLcode cc = CURLE_OK;
	bool broken = false;
	int rc, k;

	pthread_mutex_lock(&c->mu);
	snprintf(host, sizeof(host), "%s", c->url_host);
	snprintf(region, sizeof(region), "%s", c->region);
	pthread_mutex_unlock(&c->mu);
	objfs_buf_release(&r->body);
	r->body = (struct objfs_buf)OBJFS_BUF_INIT(r->want_body ? OBJFS_S3_XML_MAX_DOC
							  : S3_ERRBODY_MAX, EFBIG);
	query = malloc(S3_URL_MAX);
	url = malloc(S3_URL_MAX + sizeof(enc_path) + 256);
	auth = malloc(OBJFS_SIGV4_AUTH_MAX);
	if (query == NULL || url == NULL || auth == NULL) {
		rc = ENOMEM;
		goto out;
	}
	rc = build_path(c, r->key, raw_path, sizeof(raw_path));
	if (rc == 0)
		rc = objfs_sigv4_uri_encode(raw_path, strlen(raw_path), true,
					    enc_path, sizeof(enc_path));
	if (rc == 0)
		rc = objfs_sigv4_canonical_query(r->params, r->n_params,
						 query, S3_URL_MAX);
	if (rc != 0)
		goto out;
	k = snprintf(url, S3_URL_MAX + sizeof(enc_path) + 256, "%s://%s%s%s%s",
		     c->scheme, host, enc_path, query[0] ? "?" : "",
		     query);
	if (k < 0 || (size_t)k >= S3_URL_MAX + sizeof(enc_path) + 256) {
		rc = E2BIG;
		goto out;
	}

	if (r->payload_hash != NULL) {
		payload = r->payload_hash;
	} else if (r->src == NULL || r->src->size == 0) {
		payload = OBJFS_SIGV4_EMPTY_SHA256;
	} else if (c->unsigned_payload) {
		payload = OBJFS_SIGV4_UNSIGNED;
	} else {
		rc = source_sha256(r->src, hash);
		if (rc != 0)
			goto out;
		payload = hash;
	}
	objfs_sigv4_amz_date(time(NULL), amz_date);
	all[n].name = "Host";
	all[n++].value = host;
	all[n].name = "x-amz-date";
	all[n++].value = amz_date;
	all[n].name = "x-amz-content-sha256";
	all[n++].value = payload;
	if (c->creds != NULL) {
		rc = objfs_credprov_get(c->creds, &keys);
		if (rc != 0)
			goto out;
	}
	if (keys.session_token != NULL) {
		all[n].name = "x-amz-security-token";
		all[n++].value = keys.session_token;
	}
	for (i = 0; i < r->n_hdrs; i++)
		all[n++] = r->hdrs[i];
	for (i = 0; i < n && rc == 0; i++)
		rc = slist_add(&hl, all[i].name, all[i].value);
	if (rc != 0)
		goto out;
	if (keys.access_key != NULL) {
		sreq.method = r->method;
		sreq.path = raw_path;
		sreq.params = r->params;
		sreq.n_params = r->n_params;
		sreq.headers = all;
		sreq.n_headers = n;
		sreq.payload_hash = payload;
		skey.access_key = keys.access_key;
		skey.secret_key = keys.secret_key;
		skey.region = region;
		skey.service = "s3";
		rc = objfs_sigv4_authorization(&sreq, &skey, amz_date, auth,
					       OBJFS_SIGV4_AUTH_MAX);
		if (rc == 0)
			rc = slist_add(&hl, "Authorization", auth);
		OPENSSL_cleanse(auth, OBJFS_SIGV4_AUTH_MAX);
		if (rc != 0)
			goto out;
	}
	/* No 100-continue round trip; no default form content type. */
	{
		struct curl_slist *t = curl_slist_append(hl, "Expect:");

		if (t == NULL) {
			rc = ENOMEM;
			goto out;
		}
		hl = t;
	}

	h = pool_get(c);
	if (h == NULL) {
		rc = ENOMEM;
		goto out;
	}
	curl_easy_reset(h);
	objfs_http_setup(h, url, c->ca_file, c->insecure);
	curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	r->ctx = c;
	r->stalled = false;
	r->slow_server = false;
	r->moved_dl = 0;
	r->moved_ul = 0;
	r->moved_at_ms = objfs_now_ms();
	r->max_silence_ms = 0;
	r->stall_ms = r->slow ? 0 : c->stall_ms;
	if (objfs_cancel_fired(r->cancel)) {
		rc = ECANCELED;
		goto out;
	}
	if (r->stall_ms > 0 || r->cancel != NULL) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, r);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	} else {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 1L);
	}
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	/* DeleteObjects, CompleteMultipartUpload and copies may work for a
	 * long time before answering (Swift sends no keep-alive bytes). */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
			 r->slow ? S3_SLOW_FACTOR * c->low_speed_s :
			 c->low_speed_s);
	/* Large buffers only for large bodies: curl allocates them per
	 * transfer, and past the mount's mmap threshold each one is a mmap,
	 * page faults and a munmap (a tenth of a DELETE's time on RGW).
	 * Small requests keep curl's defaults (16 KiB down, 64 KiB up). */
	if (r->sink != NULL && (!r->ranged || r->range_len >= S3_BIG_BUF))
		curl_easy_setopt(h, CURLOPT_BUFFERSIZE, (long)S3_BIG_BUF);
	if (r->src != NULL && r->src->size >= S3_BIG_BUF)
		curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, (long)S3_BIG_BUF);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, s3_on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	if (r->src != NULL) {
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, r);
		curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(h, CURLOPT_SEEKDATA, r);
	}
	if (strcmp(r->method, "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(r->method, "PUT") == 0) {
		static const struct objfs_source empty_src = { 0, NULL, NULL };

		if (r->src == NULL) {
			r->src = &empty_src;
			curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
			curl_easy_setopt(h, CURLOPT_READDATA, r);
		}
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)r->src->size);
	} else if (strcmp(r->method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		if (r->src != NULL) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
					 (curl_off_t)r->src->size);
		} else {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
		}
	} else {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	}

	if (r->stall_ms > 0)
		active_add(c, r);
	cc = curl_easy_perform(h);
	if (r->stall_ms > 0)
		active_del(c, r, cc == CURLE_OK);
	{
		long st = 0;

		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
		r->status = st;
		if (st > 0)
			__atomic_store_n(&c->answered, 1, __ATOMIC_RELAXED);
	}
	s3_meter_note(&c->meter, r, h, cc);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	if (cc != CURLE_OK && objfs_cancel_fired(r->cancel)) {
		broken = true;
		rc = ECANCELED;
		goto out;
	}
	if (cc != CURLE_OK) {
		broken = true;
		if (r->sink_err != 0)
			rc = r->sink_err;
		else if (r->src_err != 0)
			rc = r->src_err;
		else if (r->stalled)
			rc = ETIMEDOUT;
		else
			rc = tls_port(c, host, cc, objfs_s3_errno_curl(cc));
		if (r->stalled)
			objfs_warn(s->log, "s3", "%s %s: no byte moved for %lld ms "
				   "while other transfers moved; abandoned",
				   r->method, r->key ? r->key : "/",
				   r->max_silence_ms);
		else if (r->slow_server)
			objfs_warn(s->log, "s3", "%s %s: no byte moved for %lld "
				   "ms by a server slow for every transfer; "
				   "abandoned at the low-speed limit", r->method,
				   r->key ? r->key : "/", r->max_silence_ms);
		objfs_debug(s->log, "s3", "%s %s: transport error %d (%s)",
			    r->method, r->key ? r->key : "/", (int)cc,
			    curl_easy_strerror(cc));
		goto out;
	}
	if (r->status >= 200 && r->status < 300) {
		rc = r->hdr_err;
		goto out;
	}
	if (r->body.len > 0 && r->body.err == 0)
		(void)objfs_s3_xml_parse_error(r->body.p, r->body.len, &r->err);
	rc = objfs_s3_errno_reply(r->status, r->err.code, r->err.message);
	objfs_debug(s->log, "s3", "%s %s: HTTP %ld %s", r->method,
		    r->key ? r->key : "/", r->status, r->err.code);
out:
	objfs_creds_release(&keys);
	if (h != NULL)
		pool_put(c, h, broken);
	curl_slist_free_all(hl);
	free(query);
	free(url);
	free(auth);
	return rc;
}

/* Moves the captured headers into info (when not NULL). */
void s3_take_info(struct s3_req *r, struct objfs_obj_info *info,
		      uint64_t size)
{
	struct objfs_obj_info empty = OBJFS_OBJ_INFO_INIT;

	if (info == NULL)
		return;
	objfs_obj_info_release(info);
	*info = r->cap;
	info->size = size;
	r->cap = empty;
}
