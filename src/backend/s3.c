/*
 * s3.c - the S3 leaf store: every objfs_store_ops slot as one (or a few)
 * signed HTTP requests made with libcurl.
 *
 * Design:
 *   - One request = one struct s3_req: method, key, sorted query parameters,
 *     extra headers, an optional body (a source, streamed), and what to do
 *     with the response (a sink for 2xx GET data, a bounded buffer for XML
 *     and error documents, captured headers).  s3_perform() signs it with
 *     SigV4 (s3_sign.c), runs it on a pooled easy handle and maps the
 *     outcome to an errno (s3_errors.c).  The same encoder builds the URL
 *     that built the canonical request, so what is signed is what is sent.
 *   - Connection pool: up to max_connections easy handles.  A handle keeps
 *     its connection (and TLS session) alive between requests.  States of a
 *     handle: FREE (on the stack, protected by mu) -> BUSY (owned by one
 *     request, no lock) -> FREE.  A request waits on cv while all handles
 *     are busy.
 *   - No retries here: the retry layer above decides from the errno.
 *   - Credentials are copied at create, used only to sign, wiped with
 *     OPENSSL_cleanse at destroy and never logged (logs carry method, key,
 *     status and S3 error code only).
 *   - Swift quirks handled here: DeleteObjects needs Content-MD5 (always
 *     sent); a continuation token Swift did not issue gives a 500 (mapped to
 *     EINVAL when the token is not even base64, which no server issues);
 *     PUT with If-None-Match is 501 (then, once per store, replaced by a
 *     HEAD before the PUT: best effort, as backend.h allows).
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
#include "backend/s3_errors.h"
#include "backend/s3_internal.h"
#include "backend/s3_sign.h"
#include "backend/s3_xml.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/log.h"

#define S3_MAX_EXTRA_HEADERS 48
#define S3_MAX_HEADER_LINE 4096
#define S3_ERRBODY_MAX (64u * 1024)
#define S3_URL_MAX (8 * 1024)
#define S3_HASH_CHUNK (1u << 20)
/* Objects above this are copied with UploadPartCopy. */
#define S3_COPY_MAX OBJFS_MPU_MAX_PART
#define S3_COPY_PART (1ULL << 30)
/* Stall timeout multiplier for requests that do server-side work. */
#define S3_SLOW_FACTOR 4

struct s3_ctx {
	char *scheme;            /* "http" or "https" */
	char *url_host;          /* host[:port] in URLs (bucket. prefixed when
				    virtual-hosted) */
	char *base_path;         /* "/bucket" (path style) or "" */
	char *bucket;
	char *region;
	char *ca_file;
	char *access_key;        /* secret-ish: never logged */
	char *secret_key;        /* secret: wiped at destroy */
	char *session_token;     /* secret: wiped at destroy */
	bool insecure;
	bool unsigned_payload;
	long connect_timeout_ms;
	long low_speed_s;
	unsigned max_conn;
	int no_cond_put;         /* the server refused If-None-Match on PUT
				    (Swift: 501); atomic */

	pthread_mutex_t mu;
	pthread_cond_t cv;
	CURL **free_handles;     /* protected by mu */
	unsigned n_free;         /* protected by mu */
	unsigned n_total;        /* protected by mu */
};

struct s3_req {
	/* request */
	const char *method;
	const char *key;                         /* NULL: the bucket */
	struct objfs_sigv4_param params[8];
	size_t n_params;
	char *hdr_store[S3_MAX_EXTRA_HEADERS];   /* "name\0value" strings */
	struct objfs_sigv4_header hdrs[S3_MAX_EXTRA_HEADERS];
	size_t n_hdrs;
	const struct objfs_source *src;          /* body, or NULL */
	const char *payload_hash;                /* NULL: computed */
	bool want_body;                          /* keep a 2xx body (XML) */
	bool slow;                               /* server-side work before
						    the first response byte */

	/* response */
	const struct objfs_sink *sink;           /* 2xx data, or NULL */
	uint64_t skip;                           /* 200 to a Range: skip */
	uint64_t limit;                          /* ... and stop after */
	bool ranged;                             /* a Range was sent */
	bool range_checked;
	uint64_t range_off;
	uint64_t range_len;
	uint64_t sink_off;
	int sink_err;
	uint64_t src_off;
	int src_err;
	struct objfs_buf body;                   /* error or XML document */
	long status;
	struct objfs_obj_info cap;               /* captured headers */
	uint64_t content_length;
	bool have_length;
	uint64_t range_total;
	bool have_total;
	int hdr_err;
	struct objfs_s3_error err;
};

static void req_init(struct s3_req *r, const char *method, const char *key)
{
	struct objfs_obj_info empty = OBJFS_OBJ_INFO_INIT;

	memset(r, 0, sizeof(*r));
	r->method = method;
	r->key = key;
	r->cap = empty;
	r->limit = UINT64_MAX;
}

static void req_release(struct s3_req *r)
{
	size_t i;

	for (i = 0; i < r->n_hdrs; i++)
		free(r->hdr_store[i]);
	r->n_hdrs = 0;
	objfs_buf_release(&r->body);
	objfs_obj_info_release(&r->cap);
}

static void req_param(struct s3_req *r, const char *name, const char *value)
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
static int req_header(struct s3_req *r, const char *prefix, const char *name,
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

static int req_meta(struct s3_req *r, const struct objfs_meta *meta,
		    const char *content_type)
{
	size_t i;
	int rc = 0;

	if (meta != NULL)
		for (i = 0; i < meta->n && rc == 0; i++)
			rc = req_header(r, "x-amz-meta-", meta->items[i].name,
					meta->items[i].value);
	if (rc == 0)
		rc = req_header(r, "", "Content-Type",
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

/* ---- curl callbacks -------------------------------------------------------- */

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

static size_t on_header(char *line, size_t size, size_t nmemb, void *arg)
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
			long st = 0;
			const char *sp = memchr(line, ' ', len);

			if (sp != NULL)
				st = strtol(sp + 1, NULL, 10);
			r->status = st;
		}
		return len;
	}
	if (hdr_is(line, len, "ETag", &v, &vl)) {
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

		if (colon != NULL && (size_t)(colon - line) - 11 < 256) {
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
	buf = malloc(S3_HASH_CHUNK);
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

/* Runs r.  0 for a 2xx response (r->body holds the document when
 * want_body), else an errno; r->err holds the S3 error code if any. */
static int s3_perform(struct objfs_store *s, struct s3_req *r)
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
	const char *payload;
	size_t n = 0, i;
	CURL *h = NULL;
	CURLcode cc = CURLE_OK;
	bool broken = false;
	int rc, k;

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
		     c->scheme, c->url_host, enc_path, query[0] ? "?" : "",
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
	all[n++].value = c->url_host;
	all[n].name = "x-amz-date";
	all[n++].value = amz_date;
	all[n].name = "x-amz-content-sha256";
	all[n++].value = payload;
	if (c->session_token != NULL) {
		all[n].name = "x-amz-security-token";
		all[n++].value = c->session_token;
	}
	for (i = 0; i < r->n_hdrs; i++)
		all[n++] = r->hdrs[i];
	for (i = 0; i < n && rc == 0; i++)
		rc = slist_add(&hl, all[i].name, all[i].value);
	if (rc != 0)
		goto out;
	if (c->access_key != NULL) {
		sreq.method = r->method;
		sreq.path = raw_path;
		sreq.params = r->params;
		sreq.n_params = r->n_params;
		sreq.headers = all;
		sreq.n_headers = n;
		sreq.payload_hash = payload;
		skey.access_key = c->access_key;
		skey.secret_key = c->secret_key;
		skey.region = c->region;
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
	curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS,
			 (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, PACKAGE_NAME "/" PACKAGE_VERSION);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	/* DeleteObjects, CompleteMultipartUpload and copies may work for a
	 * long time before answering (Swift sends no keep-alive bytes). */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
			 r->slow ? S3_SLOW_FACTOR * c->low_speed_s :
			 c->low_speed_s);
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024);
	curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	if (c->ca_file != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
	if (c->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
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

	cc = curl_easy_perform(h);
	{
		long st = 0;

		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
		r->status = st;
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	if (cc != CURLE_OK) {
		broken = true;
		if (r->sink_err != 0)
			rc = r->sink_err;
		else if (r->src_err != 0)
			rc = r->src_err;
		else
			rc = objfs_s3_errno_curl(cc);
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
	if (h != NULL)
		pool_put(c, h, broken);
	curl_slist_free_all(hl);
	free(query);
	free(url);
	free(auth);
	return rc;
}

/* Moves the captured headers into info (when not NULL). */
static void take_info(struct s3_req *r, struct objfs_obj_info *info,
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

/* ---- ops ------------------------------------------------------------------ */

static int s3_head(struct objfs_store *s, const char *key,
		   struct objfs_obj_info *info)
{
	struct s3_req r;
	int rc;

	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	req_init(&r, "HEAD", key);
	rc = s3_perform(s, &r);
	if (rc == 0)
		take_info(&r, info, r.have_length ? r.content_length : 0);
	req_release(&r);
	return rc;
}

static int s3_get(struct objfs_store *s, const char *key,
		  const struct objfs_get_opts *opts,
		  const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	static const struct objfs_get_opts all = OBJFS_GET_ALL;
	struct objfs_obj_info hinfo = OBJFS_OBJ_INFO_INIT;
	char range[64];
	struct s3_req r;
	uint64_t off, len;
	bool ranged;
	int rc;

	if (opts == NULL)
		opts = &all;
	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	off = opts->off;
	len = opts->len;
	if (len != OBJFS_LEN_ALL && len > UINT64_MAX - off)
		len = OBJFS_LEN_ALL;
	if (len == 0) {
		/* Nothing to transfer: the object must exist and the offset
		 * must be inside it. */
		rc = s3_head(s, key, &hinfo);
		if (rc == 0 && opts->if_match != NULL &&
		    strcmp(opts->if_match, hinfo.etag) != 0)
			rc = ESTALE;
		if (rc == 0 && hinfo.size > 0 && off >= hinfo.size)
			rc = ERANGE;
		if (rc == 0 && info != NULL) {
			objfs_obj_info_release(info);
			*info = hinfo;
		} else {
			objfs_obj_info_release(&hinfo);
		}
		return rc;
	}
	ranged = off > 0 || len != OBJFS_LEN_ALL;
again:
	req_init(&r, "GET", key);
	r.sink = sink;
	if (ranged) {
		if (len == OBJFS_LEN_ALL)
			snprintf(range, sizeof(range), "bytes=%llu-",
				 (unsigned long long)off);
		else
			snprintf(range, sizeof(range), "bytes=%llu-%llu",
				 (unsigned long long)off,
				 (unsigned long long)(off + len - 1));
		rc = req_header(&r, "", "Range", range);
		if (rc != 0)
			goto out;
	}
	if (opts->if_match != NULL) {
		rc = req_header(&r, "", "If-Match", opts->if_match);
		if (rc != 0)
			goto out;
	}
	/* For a server that ignores the Range and answers 200. */
	r.ranged = ranged;
	r.range_off = off;
	r.range_len = len;
	rc = s3_perform(s, &r);
	if (rc == ERANGE && ranged && off == 0) {
		/* bytes=0-N of an empty object is 416: read it whole. */
		req_release(&r);
		ranged = false;
		goto again;
	}
	if (rc != 0)
		goto out;
	if (r.status == 206) {
		take_info(&r, info, r.have_total ? r.range_total :
			  r.sink_off);
	} else {
		/* 200: the whole object (if the server ignored the Range, the
		 * write callback would have had to skip; see on_write). */
		take_info(&r, info, r.have_length ? r.content_length :
			  r.sink_off);
	}
out:
	req_release(&r);
	return rc;
}

static int put_once(struct objfs_store *s, const char *key,
		    const struct objfs_source *src,
		    const struct objfs_put_opts *opts, bool if_none_match,
		    struct objfs_obj_info *info)
{
	struct s3_req r;
	int rc;

	req_init(&r, "PUT", key);
	r.src = src;
	rc = req_meta(&r, opts ? opts->meta : NULL,
		      opts ? opts->content_type : NULL);
	if (rc == 0 && if_none_match)
		rc = req_header(&r, "", "If-None-Match", "*");
	if (rc == 0)
		rc = s3_perform(s, &r);
	if (rc == ESTALE && if_none_match)
		rc = EEXIST;
	if (rc == 0 && info != NULL) {
		objfs_obj_info_release(info);
		memcpy(info->etag, r.cap.etag, sizeof(info->etag));
		info->size = src->size;
		info->mtime = r.cap.mtime;
	}
	req_release(&r);
	return rc;
}

static int s3_put(struct objfs_store *s, const char *key,
		  const struct objfs_source *src,
		  const struct objfs_put_opts *opts,
		  struct objfs_obj_info *info)
{
	struct s3_ctx *c = s->ctx;
	bool cond = opts != NULL && opts->if_none_match;
	int rc;

	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	if (src == NULL)
		return EINVAL;
	if (src->size > OBJFS_MPU_MAX_PART)
		return EFBIG;
	if (cond && __atomic_load_n(&c->no_cond_put, __ATOMIC_RELAXED) == 0) {
		rc = put_once(s, key, src, opts, true, info);
		if (rc != ENOSYS)
			return rc;
		/* Not implemented by this server: remember, fall back. */
		__atomic_store_n(&c->no_cond_put, 1, __ATOMIC_RELAXED);
		objfs_info(s->log, "s3", "server refuses conditional PUT; "
			   "checking existence first instead");
	}
	if (cond) {
		/* Best effort: a racing writer can slip in between. */
		rc = s3_head(s, key, NULL);
		if (rc == 0)
			return EEXIST;
		if (rc != ENOENT)
			return rc;
	}
	return put_once(s, key, src, opts, false, info);
}

static bool is_base64(const char *s)
{
	size_t n = strlen(s), i, pad = 0;

	if (n == 0 || n % 4 != 0)
		return false;
	for (i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '=') {
			pad++;
			continue;
		}
		if (pad > 0)
			return false;
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '+' || ch == '/'))
			return false;
	}
	return pad <= 2;
}

static int s3_list(struct objfs_store *s, const struct objfs_list_req *lr,
		   struct objfs_list_page *page)
{
	struct s3_req r;
	char maxk[16];
	unsigned mk;
	int rc;

	if (lr == NULL || page == NULL)
		return EINVAL;
	mk = lr->max_keys == 0 || lr->max_keys > 1000 ? 1000 : lr->max_keys;
	snprintf(maxk, sizeof(maxk), "%u", mk);
	req_init(&r, "GET", NULL);
	r.want_body = true;
	req_param(&r, "list-type", "2");
	req_param(&r, "encoding-type", "url");
	req_param(&r, "max-keys", maxk);
	if (lr->prefix != NULL && lr->prefix[0] != '\0')
		req_param(&r, "prefix", lr->prefix);
	if (lr->delimiter != NULL && lr->delimiter[0] != '\0')
		req_param(&r, "delimiter", lr->delimiter);
	if (lr->continuation != NULL)
		req_param(&r, "continuation-token", lr->continuation);
	if (lr->start_after != NULL && lr->start_after[0] != '\0')
		req_param(&r, "start-after", lr->start_after);
	rc = s3_perform(s, &r);
	if (rc == EIO && lr->continuation != NULL &&
	    !is_base64(lr->continuation))
		rc = EINVAL;   /* Swift: 500 for a token it cannot decode */
	if (rc == 0)
		rc = objfs_s3_xml_parse_list(r.body.p, r.body.len, page, &r.err);
	if (rc == EREMOTEIO)
		rc = objfs_s3_errno_http(500, r.err.code);
	req_release(&r);
	return rc;
}

static int copy_source_header(struct s3_req *r, struct s3_ctx *c,
			      const char *src)
{
	char raw[OBJFS_KEY_MAX + 256];
	char enc[3 * (OBJFS_KEY_MAX + 256) + 1];
	int k;

	k = snprintf(raw, sizeof(raw), "/%s/%s", c->bucket, src);
	if (k < 0 || (size_t)k >= sizeof(raw))
		return E2BIG;
	k = objfs_sigv4_uri_encode(raw, strlen(raw), true, enc, sizeof(enc));
	if (k != 0)
		return k;
	return req_header(r, "", "x-amz-copy-source", enc);
}

static int s3_mpu_create(struct objfs_store *s, const char *key,
			 const struct objfs_put_opts *opts, char **upload_id);
static int s3_mpu_complete(struct objfs_store *s, const char *key,
			   const char *upload_id,
			   const struct objfs_part *parts, size_t n,
			   struct objfs_obj_info *info);
static int s3_mpu_abort(struct objfs_store *s, const char *key,
			const char *upload_id);

/* CopyObject is limited to 5 GiB: bigger objects are copied part by part
 * with UploadPartCopy, each part conditional on the source ETag seen. */
int objfs_s3_copy_multipart(struct objfs_store *s, const char *src,
			    const char *dst,
			    const struct objfs_copy_opts *opts,
			    uint64_t part_size, struct objfs_obj_info *info)
{
	struct s3_ctx *c = s->ctx;
	struct objfs_obj_info sinfo = OBJFS_OBJ_INFO_INIT;
	struct objfs_put_opts popts = { 0 };
	struct objfs_part *parts = NULL;
	char *upload_id = NULL;
	size_t n = 0, i;
	int rc;

	rc = s3_head(s, src, &sinfo);
	if (rc != 0)
		goto out;
	if (opts->if_match != NULL && strcmp(opts->if_match, sinfo.etag) != 0) {
		rc = ESTALE;
		goto out;
	}
	if (opts->directive == OBJFS_META_REPLACE) {
		popts.meta = opts->meta;
		popts.content_type = opts->content_type;
	} else {
		popts.meta = &sinfo.meta;
		popts.content_type = sinfo.content_type;
	}
	if (part_size < OBJFS_MPU_MIN_PART || part_size > OBJFS_MPU_MAX_PART) {
		rc = EINVAL;
		goto out;
	}
	n = (size_t)((sinfo.size + part_size - 1) / part_size);
	if (n > OBJFS_MPU_MAX_PARTS) {
		rc = EFBIG;
		goto out;
	}
	if (n == 0)
		n = 1;
	parts = calloc(n, sizeof(*parts));
	if (parts == NULL) {
		rc = ENOMEM;
		goto out;
	}
	rc = s3_mpu_create(s, dst, &popts, &upload_id);
	if (rc != 0)
		goto out;
	for (i = 0; i < n && rc == 0; i++) {
		uint64_t a = (uint64_t)i * part_size;
		uint64_t b = a + part_size - 1;
		char num[16], range[64];
		struct s3_req r;

		if (b >= sinfo.size)
			b = sinfo.size - 1;
		snprintf(num, sizeof(num), "%zu", i + 1);
		snprintf(range, sizeof(range), "bytes=%llu-%llu",
			 (unsigned long long)a, (unsigned long long)b);
		req_init(&r, "PUT", dst);
		r.want_body = true;
		r.slow = true;
		req_param(&r, "partNumber", num);
		req_param(&r, "uploadId", upload_id);
		rc = copy_source_header(&r, c, src);
		if (rc == 0 && sinfo.size > 0)
			rc = req_header(&r, "", "x-amz-copy-source-range",
					range);
		if (rc == 0 && sinfo.etag[0] != '\0')
			rc = req_header(&r, "", "x-amz-copy-source-if-match",
					sinfo.etag);
		if (rc == 0)
			rc = s3_perform(s, &r);
		if (rc == 0)
			rc = objfs_s3_xml_parse_etag(r.body.p, r.body.len,
						     "CopyPartResult",
						     parts[i].etag, &r.err);
		if (rc == EREMOTEIO)
			rc = objfs_s3_errno_http(500, r.err.code);
		parts[i].number = (unsigned)(i + 1);
		req_release(&r);
	}
	if (rc == 0)
		rc = s3_mpu_complete(s, dst, upload_id, parts, n, info);
	if (rc != 0)
		(void)s3_mpu_abort(s, dst, upload_id);
	else if (info != NULL)
		info->size = sinfo.size;
out:
	objfs_obj_info_release(&sinfo);
	free(parts);
	free(upload_id);
	return rc;
}

static int s3_copy(struct objfs_store *s, const char *src, const char *dst,
		   const struct objfs_copy_opts *opts,
		   struct objfs_obj_info *info)
{
	static const struct objfs_copy_opts dflt = { OBJFS_META_COPY, NULL,
						     NULL, NULL };
	struct s3_ctx *c = s->ctx;
	struct s3_req r;
	int rc;

	if (opts == NULL)
		opts = &dflt;
	if (objfs_key_valid(src) != 0 || objfs_key_valid(dst) != 0)
		return EINVAL;
	req_init(&r, "PUT", dst);
	r.want_body = true;
	r.slow = true;
	rc = copy_source_header(&r, c, src);
	if (rc == 0)
		rc = req_header(&r, "", "x-amz-metadata-directive",
				opts->directive == OBJFS_META_REPLACE ?
				"REPLACE" : "COPY");
	if (rc == 0 && opts->directive == OBJFS_META_REPLACE)
		rc = req_meta(&r, opts->meta, opts->content_type);
	if (rc == 0 && opts->if_match != NULL)
		rc = req_header(&r, "", "x-amz-copy-source-if-match",
				opts->if_match);
	if (rc != 0)
		goto out;
	rc = s3_perform(s, &r);
	if (rc == 0) {
		char etag[OBJFS_ETAG_MAX];

		rc = objfs_s3_xml_parse_etag(r.body.p, r.body.len,
					     "CopyObjectResult", etag, &r.err);
		if (rc == EREMOTEIO)
			rc = objfs_s3_errno_http(500, r.err.code);
		if (rc == 0 && info != NULL) {
			objfs_obj_info_release(info);
			memcpy(info->etag, etag, sizeof(info->etag));
		}
	} else if ((rc == EINVAL || rc == EFBIG) &&
		   (strcmp(r.err.code, "InvalidRequest") == 0 ||
		    strcmp(r.err.code, "EntityTooLarge") == 0)) {
		/* Over the CopyObject limit. */
		struct objfs_obj_info sinfo = OBJFS_OBJ_INFO_INIT;

		if (s3_head(s, src, &sinfo) == 0 && sinfo.size > S3_COPY_MAX)
			rc = objfs_s3_copy_multipart(s, src, dst, opts,
						     S3_COPY_PART, info);
		objfs_obj_info_release(&sinfo);
	}
out:
	req_release(&r);
	return rc;
}

static int s3_del(struct objfs_store *s, const char *key)
{
	struct s3_req r;
	int rc;

	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	req_init(&r, "DELETE", key);
	rc = s3_perform(s, &r);
	if (rc == ENOENT && strcmp(r.err.code, "NoSuchBucket") != 0)
		rc = 0;
	req_release(&r);
	return rc;
}

static int content_md5(const char *data, size_t len, char out[32])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (EVP_Digest(data, len, md, &mdlen, EVP_md5(), NULL) != 1 ||
	    mdlen != 16)
		return EIO;
	EVP_EncodeBlock((unsigned char *)out, md, 16);
	return 0;
}

static int del_batch(struct objfs_store *s, const char *const *keys, size_t n,
		     size_t *failed)
{
	struct objfs_source src;
	struct s3_req r;
	char *doc = NULL;
	char md5[32], hash[65];
	size_t len = 0, i;
	int rc;

	*failed = 0;
	rc = objfs_s3_xml_build_delete(keys, n, &doc, &len);
	if (rc == EILSEQ) {
		/* A key XML cannot carry: one by one. */
		int first = 0;

		for (i = 0; i < n; i++) {
			rc = s3_del(s, keys[i]);
			if (rc != 0) {
				(*failed)++;
				if (first == 0)
					first = rc;
			}
		}
		return first;
	}
	if (rc != 0) {
		*failed = n;
		return rc;
	}
	req_init(&r, "POST", NULL);
	r.want_body = true;
	r.slow = true;
	req_param(&r, "delete", NULL);
	objfs_source_mem(&src, doc, len);
	r.src = &src;
	rc = content_md5(doc, len, md5);
	if (rc == 0)
		rc = objfs_sha256_hex(doc, len, hash);
	r.payload_hash = hash;
	if (rc == 0)
		rc = req_header(&r, "", "Content-MD5", md5);
	if (rc == 0)
		rc = req_header(&r, "", "Content-Type", "application/xml");
	if (rc == 0)
		rc = s3_perform(s, &r);
	if (rc == 0) {
		rc = objfs_s3_xml_parse_delete(r.body.p, r.body.len, failed,
					       &r.err);
		if (rc == 0 && *failed > 0)
			rc = objfs_s3_errno_http(500, r.err.code);
		else if (rc == EREMOTEIO)
			rc = objfs_s3_errno_http(500, r.err.code);
	}
	if (rc != 0 && *failed == 0)
		*failed = n;
	req_release(&r);
	free(doc);
	return rc;
}

static int s3_del_many(struct objfs_store *s, const char *const *keys,
		       size_t n, size_t *failed)
{
	size_t done = 0, nf = 0, i;
	int first = 0;

	for (i = 0; i < n; i++) {
		if (objfs_key_valid(keys[i]) != 0) {
			if (failed != NULL)
				*failed = n;
			return EINVAL;
		}
	}
	while (done < n) {
		size_t b = n - done > OBJFS_DELETE_BATCH ?
			OBJFS_DELETE_BATCH : n - done;
		size_t bf = 0;
		int rc = del_batch(s, keys + done, b, &bf);

		nf += bf;
		if (rc != 0 && first == 0)
			first = rc;
		done += b;
	}
	if (failed != NULL)
		*failed = nf;
	return first;
}

static int s3_mpu_create(struct objfs_store *s, const char *key,
			 const struct objfs_put_opts *opts, char **upload_id)
{
	struct s3_req r;
	int rc;

	*upload_id = NULL;
	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	req_init(&r, "POST", key);
	r.want_body = true;
	req_param(&r, "uploads", NULL);
	rc = req_meta(&r, opts ? opts->meta : NULL,
		      opts ? opts->content_type : NULL);
	if (rc == 0)
		rc = s3_perform(s, &r);
	if (rc == 0)
		rc = objfs_s3_xml_parse_initiate(r.body.p, r.body.len,
						 upload_id, &r.err);
	if (rc == EREMOTEIO)
		rc = objfs_s3_errno_http(500, r.err.code);
	req_release(&r);
	return rc;
}

static int s3_mpu_part(struct objfs_store *s, const char *key,
		       const char *upload_id, unsigned number,
		       const struct objfs_source *src, struct objfs_part *part)
{
	struct s3_req r;
	char num[16];
	int rc;

	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	if (upload_id == NULL || upload_id[0] == '\0' || number < 1 ||
	    number > OBJFS_MPU_MAX_PARTS || src == NULL)
		return EINVAL;
	if (src->size > OBJFS_MPU_MAX_PART)
		return EFBIG;
	snprintf(num, sizeof(num), "%u", number);
	req_init(&r, "PUT", key);
	req_param(&r, "partNumber", num);
	req_param(&r, "uploadId", upload_id);
	r.src = src;
	rc = s3_perform(s, &r);
	if (rc == 0 && r.cap.etag[0] == '\0')
		rc = EPROTO;
	if (rc == 0 && part != NULL) {
		part->number = number;
		memcpy(part->etag, r.cap.etag, sizeof(part->etag));
	}
	req_release(&r);
	return rc;
}

static int s3_mpu_complete(struct objfs_store *s, const char *key,
			   const char *upload_id,
			   const struct objfs_part *parts, size_t n,
			   struct objfs_obj_info *info)
{
	struct objfs_source src;
	struct s3_req r;
	char *doc = NULL;
	char hash[65], etag[OBJFS_ETAG_MAX];
	size_t len = 0;
	int rc;

	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	if (upload_id == NULL || upload_id[0] == '\0')
		return EINVAL;
	rc = objfs_s3_xml_build_complete(parts, n, &doc, &len);
	if (rc != 0)
		return rc;
	req_init(&r, "POST", key);
	r.want_body = true;
	r.slow = true;
	req_param(&r, "uploadId", upload_id);
	objfs_source_mem(&src, doc, len);
	r.src = &src;
	rc = objfs_sha256_hex(doc, len, hash);
	r.payload_hash = hash;
	if (rc == 0)
		rc = req_header(&r, "", "Content-Type", "application/xml");
	if (rc == 0)
		rc = s3_perform(s, &r);
	if (rc == 0) {
		/* 200 may still carry an <Error>. */
		rc = objfs_s3_xml_parse_etag(r.body.p, r.body.len,
					     "CompleteMultipartUploadResult",
					     etag, &r.err);
		if (rc == EREMOTEIO)
			rc = objfs_s3_errno_http(500, r.err.code);
		if (rc == 0 && info != NULL) {
			objfs_obj_info_release(info);
			memcpy(info->etag, etag, sizeof(info->etag));
		}
	}
	req_release(&r);
	free(doc);
	return rc;
}

static int s3_mpu_abort(struct objfs_store *s, const char *key,
			const char *upload_id)
{
	struct s3_req r;
	int rc;

	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	if (upload_id == NULL || upload_id[0] == '\0')
		return EINVAL;
	req_init(&r, "DELETE", key);
	req_param(&r, "uploadId", upload_id);
	rc = s3_perform(s, &r);
	if (rc == ENOENT && strcmp(r.err.code, "NoSuchBucket") != 0)
		rc = 0;
	req_release(&r);
	return rc;
}

static void wipe_free(char *s)
{
	if (s != NULL) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

static void s3_ctx_free(struct s3_ctx *c)
{
	unsigned i;

	if (c == NULL)
		return;
	for (i = 0; i < c->n_free; i++)
		curl_easy_cleanup(c->free_handles[i]);
	free(c->free_handles);
	free(c->scheme);
	free(c->url_host);
	free(c->base_path);
	free(c->bucket);
	free(c->region);
	free(c->ca_file);
	wipe_free(c->access_key);
	wipe_free(c->secret_key);
	wipe_free(c->session_token);
	free(c);
}

static void s3_destroy(struct objfs_store *s)
{
	struct s3_ctx *c = s->ctx;

	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	s3_ctx_free(c);
	free(s);
	curl_global_cleanup();
}

static const struct objfs_store_ops s3_ops = {
	.name = "s3",
	.get = s3_get,
	.put = s3_put,
	.head = s3_head,
	.list = s3_list,
	.copy = s3_copy,
	.del = s3_del,
	.del_many = s3_del_many,
	.mpu_create = s3_mpu_create,
	.mpu_part = s3_mpu_part,
	.mpu_complete = s3_mpu_complete,
	.mpu_abort = s3_mpu_abort,
	.destroy = s3_destroy,
};

static bool bucket_name_ok(const char *b)
{
	size_t n = strlen(b), i;

	if (n < 1 || n > 255)
		return false;
	for (i = 0; i < n; i++) {
		char ch = b[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
		      ch == '_'))
			return false;
	}
	return true;
}

static char *dup_or_null(const char *s, bool *fail)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*fail = true;
	return d;
}

int objfs_s3_store_create(const struct objfs_s3_config *cfg,
			  struct objfs_log *log, struct objfs_store **out)
{
	struct objfs_store *s = NULL;
	struct s3_ctx *c = NULL;
	const char *ep, *hp, *slash;
	size_t hl;
	bool fail = false, mu_init = false, cv_init = false, global = false;
	int rc;

	*out = NULL;
	if (cfg == NULL || cfg->endpoint == NULL || cfg->bucket == NULL ||
	    !bucket_name_ok(cfg->bucket) ||
	    (cfg->access_key == NULL) != (cfg->secret_key == NULL))
		return EINVAL;
	ep = cfg->endpoint;
	if (strncmp(ep, "http://", 7) == 0)
		hp = ep + 7;
	else if (strncmp(ep, "https://", 8) == 0)
		hp = ep + 8;
	else
		return EINVAL;
	slash = strchr(hp, '/');
	hl = slash != NULL ? (size_t)(slash - hp) : strlen(hp);
	if (hl == 0 || hl > 255 || (slash != NULL && slash[1] != '\0') ||
	    memchr(hp, '@', hl) != NULL)
		return EINVAL;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return ENOMEM;
	global = true;
	c = calloc(1, sizeof(*c));
	s = calloc(1, sizeof(*s));
	if (c == NULL || s == NULL) {
		rc = ENOMEM;
		goto fail;
	}
	c->scheme = strndup(ep, (size_t)(hp - ep) - 3);
	if (cfg->path_style) {
		c->url_host = strndup(hp, hl);
		if (c->url_host != NULL) {
			size_t bl = strlen(cfg->bucket);

			c->base_path = malloc(bl + 2);
			if (c->base_path != NULL) {
				c->base_path[0] = '/';
				memcpy(c->base_path + 1, cfg->bucket, bl + 1);
			}
		}
	} else {
		size_t bl = strlen(cfg->bucket);

		c->url_host = malloc(bl + 1 + hl + 1);
		if (c->url_host != NULL) {
			memcpy(c->url_host, cfg->bucket, bl);
			c->url_host[bl] = '.';
			memcpy(c->url_host + bl + 1, hp, hl);
			c->url_host[bl + 1 + hl] = '\0';
		}
		c->base_path = strdup("");
	}
	c->bucket = dup_or_null(cfg->bucket, &fail);
	c->region = dup_or_null(cfg->region ? cfg->region : "us-east-1",
				&fail);
	c->ca_file = dup_or_null(cfg->ca_file, &fail);
	c->access_key = dup_or_null(cfg->access_key, &fail);
	c->secret_key = dup_or_null(cfg->secret_key, &fail);
	c->session_token = dup_or_null(cfg->session_token, &fail);
	if (fail || c->scheme == NULL || c->url_host == NULL ||
	    c->base_path == NULL) {
		rc = ENOMEM;
		goto fail;
	}
	c->insecure = cfg->insecure_skip_verify;
	c->unsigned_payload = cfg->unsigned_payload ||
		(strcmp(c->scheme, "https") == 0 && !cfg->signed_payload);
	c->connect_timeout_ms = cfg->connect_timeout_ms > 0 ?
		cfg->connect_timeout_ms : 10000;
	c->low_speed_s = cfg->low_speed_timeout_s > 0 ?
		cfg->low_speed_timeout_s : 30;
	c->max_conn = cfg->max_connections > 0 ? cfg->max_connections : 16;
	c->free_handles = calloc(c->max_conn, sizeof(*c->free_handles));
	if (c->free_handles == NULL) {
		rc = ENOMEM;
		goto fail;
	}
	rc = pthread_mutex_init(&c->mu, NULL);
	if (rc != 0)
		goto fail;
	mu_init = true;
	rc = pthread_cond_init(&c->cv, NULL);
	if (rc != 0)
		goto fail;
	cv_init = true;

	s->ops = &s3_ops;
	s->inner = NULL;
	s->ctx = c;
	s->log = log;
	objfs_info(log, "s3", "s3 store %s://%s%s (region %s, %s, %s payloads)",
		   c->scheme, c->url_host, c->base_path, c->region,
		   cfg->path_style ? "path style" : "virtual hosted",
		   c->unsigned_payload ? "unsigned" : "hashed");
	*out = s;
	return 0;
fail:
	if (cv_init)
		pthread_cond_destroy(&c->cv);
	if (mu_init)
		pthread_mutex_destroy(&c->mu);
	s3_ctx_free(c);
	free(s);
	if (global)
		curl_global_cleanup();
	return rc;
}
