/*
 * s3_xml.c - S3 XML documents in and out (see s3_xml.h).
 *
 * One expat driver (struct xp) tracks the stack of element local names
 * (namespaces stripped) and the text of the innermost element; each document
 * kind is a small end-of-element handler that looks at that path.  Invariants:
 *   - depth <= OBJFS_S3_XML_MAX_DEPTH, text <= OBJFS_S3_XML_MAX_TEXT bytes;
 *   - no DOCTYPE is accepted, so no entity can be declared (billion laughs,
 *     external entities);
 *   - the first error stops the parser and is the result (EPROTO/ENOMEM).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <expat.h>

#include "backend/s3_xml.h"
#include "common/hex.h"

#define NAME_MAX_LEN 64
#define NS_SEP '\x01'

struct xp;
typedef void (*xp_end_fn)(struct xp *x, void *arg);

struct xp {
	XML_Parser p;
	int depth;
	char names[OBJFS_S3_XML_MAX_DEPTH][NAME_MAX_LEN];
	char text[OBJFS_S3_XML_MAX_TEXT + 1];
	size_t tlen;
	int err;
	const char *root;               /* expected root */
	bool error_doc;                 /* root is <Error> */
	struct objfs_s3_error *errout;  /* may be NULL */
	xp_end_fn on_end;
	void *arg;
};

static void xp_fail(struct xp *x, int err)
{
	if (x->err == 0)
		x->err = err;
	XML_StopParser(x->p, XML_FALSE);
}

static const char *local_name(const char *name)
{
	const char *s = strrchr(name, NS_SEP);

	return s != NULL ? s + 1 : name;
}

static void XMLCALL xp_start(void *data, const XML_Char *name,
			     const XML_Char **attrs)
{
	struct xp *x = data;
	const char *ln = local_name(name);
	size_t n = strlen(ln);

	(void)attrs;
	if (x->err != 0)
		return;
	if (x->depth >= OBJFS_S3_XML_MAX_DEPTH || n >= NAME_MAX_LEN) {
		xp_fail(x, EPROTO);
		return;
	}
	if (x->depth == 0) {
		if (strcmp(ln, "Error") == 0)
			x->error_doc = true;
		else if (x->root == NULL || strcmp(ln, x->root) != 0) {
			xp_fail(x, EPROTO);
			return;
		}
	}
	memcpy(x->names[x->depth], ln, n + 1);
	x->depth++;
	x->tlen = 0;
	x->text[0] = '\0';
}

static void copy_trunc(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void XMLCALL xp_end(void *data, const XML_Char *name)
{
	struct xp *x = data;

	(void)name;
	if (x->err != 0)
		return;
	if (x->error_doc) {
		if (x->depth == 2 && x->errout != NULL) {
			if (strcmp(x->names[1], "Code") == 0)
				copy_trunc(x->errout->code,
					   sizeof(x->errout->code), x->text);
			else if (strcmp(x->names[1], "Message") == 0)
				copy_trunc(x->errout->message,
					   sizeof(x->errout->message),
					   x->text);
			else if (strcmp(x->names[1], "Region") == 0)
				copy_trunc(x->errout->region,
					   sizeof(x->errout->region), x->text);
		}
	} else if (x->on_end != NULL) {
		x->on_end(x, x->arg);
	}
	x->depth--;
	x->tlen = 0;
	x->text[0] = '\0';
}

static void XMLCALL xp_chars(void *data, const XML_Char *s, int len)
{
	struct xp *x = data;

	if (x->err != 0 || len <= 0)
		return;
	if ((size_t)len > OBJFS_S3_XML_MAX_TEXT - x->tlen) {
		xp_fail(x, EPROTO);
		return;
	}
	memcpy(x->text + x->tlen, s, (size_t)len);
	x->tlen += (size_t)len;
	x->text[x->tlen] = '\0';
}

static void XMLCALL xp_doctype(void *data, const XML_Char *name,
			       const XML_Char *sysid, const XML_Char *pubid,
			       int has_internal_subset)
{
	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal_subset;
	xp_fail(data, EPROTO);
}

static void XMLCALL xp_entity(void *data, const XML_Char *name, int is_pe,
			      const XML_Char *value, int value_len,
			      const XML_Char *base, const XML_Char *sysid,
			      const XML_Char *pubid, const XML_Char *notation)
{
	(void)name;
	(void)is_pe;
	(void)value;
	(void)value_len;
	(void)base;
	(void)sysid;
	(void)pubid;
	(void)notation;
	xp_fail(data, EPROTO);
}

/* Runs the driver over doc.  0, EPROTO, ENOMEM, or EREMOTEIO for an
 * <Error> document (x->errout filled). */
static int xp_run(struct xp *x, const char *doc, size_t len)
{
	int rc = 0;

	if (doc == NULL || len > OBJFS_S3_XML_MAX_DOC || len > INT_MAX)
		return EPROTO;
	x->p = XML_ParserCreateNS(NULL, NS_SEP);
	if (x->p == NULL)
		return ENOMEM;
	XML_SetUserData(x->p, x);
	XML_SetElementHandler(x->p, xp_start, xp_end);
	XML_SetCharacterDataHandler(x->p, xp_chars);
	XML_SetStartDoctypeDeclHandler(x->p, xp_doctype);
	XML_SetEntityDeclHandler(x->p, xp_entity);
	if (XML_Parse(x->p, doc, (int)len, XML_TRUE) != XML_STATUS_OK &&
	    x->err == 0)
		x->err = EPROTO;
	if (x->err == 0 && x->depth != 0)
		x->err = EPROTO;
	rc = x->err;
	if (rc == 0 && x->error_doc)
		rc = EREMOTEIO;
	XML_ParserFree(x->p);
	x->p = NULL;
	return rc;
}

static struct xp *xp_new(const char *root, struct objfs_s3_error *errout,
			 xp_end_fn fn, void *arg)
{
	struct xp *x = calloc(1, sizeof(*x));

	if (x == NULL)
		return NULL;
	x->root = root;
	x->errout = errout;
	x->on_end = fn;
	x->arg = arg;
	if (errout != NULL)
		memset(errout, 0, sizeof(*errout));
	return x;
}

/* Path check: the current element path equals the given names. */
static bool at(const struct xp *x, int depth, const char *a, const char *b)
{
	if (x->depth != depth)
		return false;
	if (depth >= 2 && strcmp(x->names[1], a) != 0)
		return false;
	if (depth >= 3 && strcmp(x->names[2], b) != 0)
		return false;
	return true;
}

/* An ETag as HEAD, GET and PUT send it, in quotes.  Ceph RGW 16 sends the
 * ETag of <CopyObjectResult> (and <CopyPartResult>) without them, so the
 * same object would otherwise have two ETags; they are added here. */
static int copy_etag(char etag[OBJFS_ETAG_MAX], const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= OBJFS_ETAG_MAX)
		return EPROTO;
	if (s[0] == '"') {
		if (n < 2 || s[n - 1] != '"')
			return EPROTO;  /* a quote on one side only */
		memcpy(etag, s, n + 1);
		return 0;
	}
	if (n + 2 >= OBJFS_ETAG_MAX)
		return EPROTO;
	etag[0] = '"';
	memcpy(etag + 1, s, n);
	etag[n + 1] = '"';
	etag[n + 2] = '\0';
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return EPROTO;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return EPROTO;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* "2009-10-12T17:50:30.000Z" (fraction optional). */
static int parse_iso8601(const char *s, struct timespec *ts)
{
	struct tm tm;
	const char *end;
	long nsec = 0, scale = 100000000;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end == NULL)
		return EPROTO;
	if (*end == '.') {
		for (end++; *end >= '0' && *end <= '9'; end++) {
			nsec += (*end - '0') * scale;
			scale /= 10;
		}
	}
	if (*end != 'Z' && *end != '\0')
		return EPROTO;
	ts->tv_sec = timegm(&tm);
	ts->tv_nsec = nsec;
	return 0;
}

/* In-place URL decoding ('+' is a space).  0 or EPROTO. */
static int url_decode(char *s)
{
	char *r = s, *w = s;

	for (; *r != '\0'; r++) {
		if (*r == '+') {
			*w++ = ' ';
		} else if (*r == '%') {
			int hi, lo, i;
			int v[2];

			for (i = 0; i < 2; i++) {
				v[i] = objfs_hexval(r[1 + i]);
				if (v[i] < 0)
					return EPROTO;
			}
			hi = v[0];
			lo = v[1];
			if (hi == 0 && lo == 0)
				return EPROTO;
			*w++ = (char)(hi * 16 + lo);
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return 0;
}

/* ---- <Error> ----------------------------------------------------------- */

int objfs_s3_xml_parse_error(const char *doc, size_t len,
			     struct objfs_s3_error *err)
{
	struct xp *x = xp_new("Error", err, NULL, NULL);
	int rc;

	if (x == NULL)
		return ENOMEM;
	rc = xp_run(x, doc, len);
	free(x);
	return rc == EREMOTEIO ? 0 : (rc != 0 ? rc : EPROTO);
}

/* ---- ListObjectsV2 ------------------------------------------------------ */

struct list_state {
	struct objfs_list_page *page;
	size_t cap_entries;
	size_t cap_prefixes;
	struct objfs_list_entry cur;
	bool have_key;
	bool truncated;
	bool url_encoded;
};

static void list_end(struct xp *x, void *arg)
{
	struct list_state *ls = arg;
	struct objfs_list_page *pg = ls->page;
	int rc = 0;

	if (at(x, 2, "IsTruncated", NULL)) {
		if (strcmp(x->text, "true") == 0)
			ls->truncated = true;
		else if (strcmp(x->text, "false") != 0)
			rc = EPROTO;
	} else if (at(x, 2, "NextContinuationToken", NULL)) {
		free(pg->next);
		pg->next = strdup(x->text);
		if (pg->next == NULL)
			rc = ENOMEM;
	} else if (at(x, 2, "EncodingType", NULL)) {
		ls->url_encoded = strcmp(x->text, "url") == 0;
	} else if (at(x, 3, "Contents", "Key")) {
		free(ls->cur.key);
		ls->cur.key = strdup(x->text);
		ls->have_key = ls->cur.key != NULL;
		if (ls->cur.key == NULL)
			rc = ENOMEM;
	} else if (at(x, 3, "Contents", "Size")) {
		rc = parse_u64(x->text, &ls->cur.size);
	} else if (at(x, 3, "Contents", "ETag")) {
		rc = copy_etag(ls->cur.etag, x->text);
	} else if (at(x, 3, "Contents", "LastModified")) {
		rc = parse_iso8601(x->text, &ls->cur.mtime);
	} else if (at(x, 2, "Contents", NULL)) {
		if (!ls->have_key || ls->cur.key[0] == '\0') {
			rc = EPROTO;
		} else {
			if (pg->n_entries == ls->cap_entries) {
				size_t nc = ls->cap_entries ?
					ls->cap_entries * 2 : 64;
				void *ne = realloc(pg->entries,
						   nc * sizeof(*pg->entries));

				if (ne == NULL) {
					rc = ENOMEM;
					goto out;
				}
				pg->entries = ne;
				ls->cap_entries = nc;
			}
			pg->entries[pg->n_entries++] = ls->cur;
			memset(&ls->cur, 0, sizeof(ls->cur));
			ls->have_key = false;
		}
	} else if (at(x, 3, "CommonPrefixes", "Prefix")) {
		char *p;

		if (pg->n_prefixes == ls->cap_prefixes) {
			size_t nc = ls->cap_prefixes ? ls->cap_prefixes * 2 : 16;
			void *np = realloc(pg->prefixes,
					   nc * sizeof(*pg->prefixes));

			if (np == NULL) {
				rc = ENOMEM;
				goto out;
			}
			pg->prefixes = np;
			ls->cap_prefixes = nc;
		}
		p = strdup(x->text);
		if (p == NULL || p[0] == '\0') {
			free(p);
			rc = p == NULL ? ENOMEM : EPROTO;
			goto out;
		}
		pg->prefixes[pg->n_prefixes++] = p;
	}
out:
	if (rc != 0)
		xp_fail(x, rc);
}

int objfs_s3_xml_parse_list(const char *doc, size_t len,
			    struct objfs_list_page *page,
			    struct objfs_s3_error *err)
{
	struct list_state ls;
	struct xp *x;
	size_t i;
	int rc;

	memset(&ls, 0, sizeof(ls));
	ls.page = page;
	x = xp_new("ListBucketResult", err, list_end, &ls);
	if (x == NULL)
		return ENOMEM;
	rc = xp_run(x, doc, len);
	free(ls.cur.key);
	if (rc == 0 && ls.url_encoded) {
		for (i = 0; i < page->n_entries && rc == 0; i++)
			rc = url_decode(page->entries[i].key);
		for (i = 0; i < page->n_prefixes && rc == 0; i++)
			rc = url_decode(page->prefixes[i]);
	}
	if (rc == 0 && ls.truncated && page->next == NULL)
		rc = EPROTO;
	if (rc == 0 && !ls.truncated) {
		free(page->next);
		page->next = NULL;
	}
	if (rc != 0)
		objfs_list_page_release(page);
	free(x);
	return rc;
}

/* ---- InitiateMultipartUploadResult ------------------------------------- */

static void initiate_end(struct xp *x, void *arg)
{
	char **id = arg;

	if (at(x, 2, "UploadId", NULL)) {
		free(*id);
		*id = strdup(x->text);
		if (*id == NULL)
			xp_fail(x, ENOMEM);
	}
}

int objfs_s3_xml_parse_initiate(const char *doc, size_t len,
				char **upload_id, struct objfs_s3_error *err)
{
	char *id = NULL;
	struct xp *x = xp_new("InitiateMultipartUploadResult", err,
			      initiate_end, &id);
	int rc;

	if (x == NULL)
		return ENOMEM;
	rc = xp_run(x, doc, len);
	if (rc == 0 && (id == NULL || id[0] == '\0'))
		rc = EPROTO;
	if (rc != 0) {
		free(id);
		id = NULL;
	}
	*upload_id = id;
	free(x);
	return rc;
}

/* ---- results carrying an ETag ------------------------------------------- */

struct etag_state {
	char *etag;
	int found;
};

static void etag_end(struct xp *x, void *arg)
{
	struct etag_state *es = arg;

	if (at(x, 2, "ETag", NULL)) {
		if (x->text[0] == '\0') {
			/* Ceph RGW 16: <CompleteMultipartUploadResult> with an
			 * empty <ETag/>; the caller decides what to do. */
			es->etag[0] = '\0';
			es->found = 1;
		} else if (copy_etag(es->etag, x->text) != 0) {
			xp_fail(x, EPROTO);
		} else {
			es->found = 1;
		}
	}
}

int objfs_s3_xml_parse_etag(const char *doc, size_t len, const char *root,
			    char etag[OBJFS_ETAG_MAX],
			    struct objfs_s3_error *err)
{
	struct etag_state es = { etag, 0 };
	struct xp *x = xp_new(root, err, etag_end, &es);
	int rc;

	if (x == NULL)
		return ENOMEM;
	rc = xp_run(x, doc, len);
	if (rc == 0 && !es.found)
		rc = EPROTO;
	free(x);
	return rc;
}

/* ---- DeleteResult --------------------------------------------------------- */

struct delete_state {
	size_t failed;
	struct objfs_s3_error *first;
	char code[64];
};

static void delete_end(struct xp *x, void *arg)
{
	struct delete_state *ds = arg;

	if (at(x, 3, "Error", "Code")) {
		copy_trunc(ds->code, sizeof(ds->code), x->text);
	} else if (at(x, 2, "Error", NULL)) {
		if (strcmp(ds->code, "NoSuchKey") != 0) {
			if (ds->failed == 0 && ds->first != NULL)
				copy_trunc(ds->first->code,
					   sizeof(ds->first->code),
					   ds->code[0] != '\0' ? ds->code :
					   "InternalError");
			ds->failed++;
		}
		ds->code[0] = '\0';
	}
}

int objfs_s3_xml_parse_delete(const char *doc, size_t len, size_t *failed,
			      struct objfs_s3_error *err)
{
	struct delete_state ds;
	struct xp *x;
	int rc;

	memset(&ds, 0, sizeof(ds));
	ds.first = err;
	x = xp_new("DeleteResult", err, delete_end, &ds);
	if (x == NULL)
		return ENOMEM;
	rc = xp_run(x, doc, len);
	*failed = rc == 0 ? ds.failed : 0;
	free(x);
	return rc;
}

/* ---- builders ------------------------------------------------------------- */

int objfs_s3_xml_escape(const char *s, char *out, size_t cap)
{
	size_t len = 0;

	if (cap == 0)
		return E2BIG;
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		const char *rep = NULL;
		char one[2] = { (char)c, '\0' };
		size_t n;

		switch (c) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&apos;"; break;
		case '\t': rep = "&#9;"; break;
		case '\n': rep = "&#10;"; break;
		case '\r': rep = "&#13;"; break;
		default:
			if (c < 0x20 || c == 0x7f)
				return EILSEQ;
			rep = one;
		}
		n = strlen(rep);
		if (n >= cap - len)
			return E2BIG;
		memcpy(out + len, rep, n);
		len += n;
	}
	out[len] = '\0';
	return 0;
}

/* Appends a literal; the buffers below are sized so this cannot overflow,
 * but it checks anyway. */
static int put(char *buf, size_t cap, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (n >= cap - *len)
		return E2BIG;
	memcpy(buf + *len, s, n + 1);
	*len += n;
	return 0;
}

int objfs_s3_xml_build_complete(const struct objfs_part *parts, size_t n,
				char **out, size_t *len)
{
	/* Per part: tags (~70) + number (5) + escaped ETag (<= 6 * 80). */
	const size_t per = 80 + 6 + 6 * OBJFS_ETAG_MAX;
	size_t cap, l = 0, i;
	char *buf;
	int rc = 0;

	*out = NULL;
	*len = 0;
	if (parts == NULL || n == 0 || n > OBJFS_MPU_MAX_PARTS)
		return EINVAL;
	cap = 128 + n * per;
	buf = malloc(cap);
	if (buf == NULL)
		return ENOMEM;
	buf[0] = '\0';
	rc = put(buf, cap, &l, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (i = 0; i < n && rc == 0; i++) {
		char num[16], etag[6 * OBJFS_ETAG_MAX + 1];
		int k;

		if (parts[i].number < 1 ||
		    parts[i].number > OBJFS_MPU_MAX_PARTS ||
		    (i > 0 && parts[i].number <= parts[i - 1].number) ||
		    strnlen(parts[i].etag, OBJFS_ETAG_MAX) >= OBJFS_ETAG_MAX) {
			rc = EINVAL;
			break;
		}
		k = snprintf(num, sizeof(num), "%u", parts[i].number);
		if (k < 0 || (size_t)k >= sizeof(num)) {
			rc = EINVAL;
			break;
		}
		rc = objfs_s3_xml_escape(parts[i].etag, etag, sizeof(etag));
		if (rc != 0) {
			rc = EINVAL;
			break;
		}
		rc = put(buf, cap, &l, "<Part><PartNumber>");
		if (rc == 0)
			rc = put(buf, cap, &l, num);
		if (rc == 0)
			rc = put(buf, cap, &l, "</PartNumber><ETag>");
		if (rc == 0)
			rc = put(buf, cap, &l, etag);
		if (rc == 0)
			rc = put(buf, cap, &l, "</ETag></Part>");
	}
	if (rc == 0)
		rc = put(buf, cap, &l, "</CompleteMultipartUpload>");
	if (rc != 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = l;
	return 0;
}

int objfs_s3_xml_build_delete(const char *const *keys, size_t n, char **out,
			      size_t *len)
{
	const size_t per = 32 + 6 * OBJFS_KEY_MAX;
	size_t cap, l = 0, i;
	char *buf, *esc = NULL;
	int rc = 0;

	*out = NULL;
	*len = 0;
	if (keys == NULL || n == 0 || n > OBJFS_DELETE_BATCH)
		return EINVAL;
	cap = 128 + n * per;
	buf = malloc(cap);
	esc = malloc(6 * OBJFS_KEY_MAX + 1);
	if (buf == NULL || esc == NULL) {
		rc = ENOMEM;
		goto out;
	}
	buf[0] = '\0';
	rc = put(buf, cap, &l, "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>");
	for (i = 0; i < n && rc == 0; i++) {
		if (keys[i] == NULL || keys[i][0] == '\0' ||
		    strnlen(keys[i], OBJFS_KEY_MAX + 1) > OBJFS_KEY_MAX) {
			rc = EINVAL;
			break;
		}
		rc = objfs_s3_xml_escape(keys[i], esc, 6 * OBJFS_KEY_MAX + 1);
		if (rc == E2BIG)
			rc = EINVAL;
		if (rc == 0)
			rc = put(buf, cap, &l, "<Object><Key>");
		if (rc == 0)
			rc = put(buf, cap, &l, esc);
		if (rc == 0)
			rc = put(buf, cap, &l, "</Key></Object>");
	}
	if (rc == 0)
		rc = put(buf, cap, &l, "</Delete>");
out:
	free(esc);
	if (rc != 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = l;
	return 0;
}
