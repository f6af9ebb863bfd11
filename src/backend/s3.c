/*
 * s3.c - the S3 leaf store: every objfs_store_ops slot as one (or a few)
 * signed HTTP requests made with libcurl.  The request itself (struct
 * s3_req, the connection pool, callbacks, signing, performing) is in
 * s3_req.c; what both share is in s3_int.h.
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
 *   - Credentials come from the store's provider (credprov.h: static keys,
 *     or temporary ones fetched and renewed before they expire); each
 *     request signs with a copy, wiped after; never logged (logs carry
 *     method, key, status and S3 error code only).
 *   - AWS (and Ceph RGW) answer a HEAD or GET of a missing key with 403
 *     when the keys may not list it (keys scoped to a prefix): a 403 is
 *     checked with a listing of the key (denied_or_absent()).
 *   - Swift quirks handled here: DeleteObjects needs Content-MD5 (always
 *     sent); a continuation token Swift did not issue gives a 500 (mapped to
 *     EINVAL when the token is not even base64, which no server issues);
 *     PUT with If-None-Match is 501 (then, once per store, replaced by a
 *     HEAD before the PUT: best effort, as backend.h allows).
 *   - Ceph RGW 16 (Pacific) quirks handled here: DeleteObjects is refused
 *     (403) to keys scoped to a prefix that may DELETE each key (then,
 *     once per store, one DELETE per key); CompleteMultipartUpload
 *     answers an empty <ETag/> (the ETag is computed from the parts'); the
 *     ETags of CopyObject and UploadPartCopy results come without quotes
 *     (added, s3_xml.c); CopyObject reads its condition from
 *     x-amz-copy-if-match, not x-amz-copy-source-if-match (both sent);
 *     UploadPartCopy ignores source conditions (the source is checked again
 *     after the last part; Swift 2.30 fails them on multipart sources:
 *     detected once per store, then not sent); completing an aborted upload is a 500 (ENOENT
 *     when ListParts says the upload is gone); a continuation token it did
 *     not issue lists from that string instead of failing (EINVAL when it
 *     cannot be one of its tokens).
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
#include "backend/s3_int.h"
#include "backend/s3_errors.h"
#include "backend/s3_internal.h"
#include "backend/s3_sign.h"
#include "backend/s3_xml.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/log.h"

/* ---- ops ------------------------------------------------------------------ */

static int s3_list(struct objfs_store *s, const struct objfs_list_req *lr,
		   struct objfs_list_page *page);

/* After a HEAD or GET of key answered 403 (rc EACCES).  AWS answers 403,
 * not 404, for a key that does not exist when the keys lack s3:ListBucket
 * for it, and a policy that scopes ListBucket to a prefix (the
 * s3:prefix condition, as keys scoped to objfs's base prefix have) grants
 * none to a GET; Ceph RGW does the same.  A listing of the key tells:
 * when it succeeds without the key, the key is absent (ENOENT); else the
 * refusal stands. */
static int denied_or_absent(struct objfs_store *s, const char *key, int rc,
			    const struct s3_req *r)
{
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_list_req lr;

	/* An HTTP 403 that is not a failed signature or unknown key (HEAD
	 * has no body to say). */
	if (rc != EACCES || r->status != 403 ||
	    (r->err.code[0] != '\0' && strcmp(r->err.code, "AccessDenied") != 0))
		return rc;
	memset(&lr, 0, sizeof(lr));
	lr.prefix = key;
	lr.max_keys = 1;
	if (s3_list(s, &lr, &page) == 0 &&
	    (page.n_entries == 0 || strcmp(page.entries[0].key, key) != 0))
		rc = ENOENT;
	objfs_list_page_release(&page);
	return rc;
}

static int s3_head(struct objfs_store *s, const char *key,
		   struct objfs_obj_info *info)
{
	struct s3_req r;
	int rc;

	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	s3_req_init(&r, "HEAD", key);
	rc = s3_perform(s, &r);
	if (rc == 0)
		s3_take_info(&r, info, r.have_length ? r.content_length : 0);
	rc = denied_or_absent(s, key, rc, &r);
	s3_req_release(&r);
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
	s3_req_init(&r, "GET", key);
	r.sink = sink;
	r.cancel = opts->cancel;
	if (ranged) {
		if (len == OBJFS_LEN_ALL)
			snprintf(range, sizeof(range), "bytes=%llu-",
				 (unsigned long long)off);
		else
			snprintf(range, sizeof(range), "bytes=%llu-%llu",
				 (unsigned long long)off,
				 (unsigned long long)(off + len - 1));
		rc = s3_req_header(&r, "", "Range", range);
		if (rc != 0)
			goto out;
	}
	if (opts->if_match != NULL) {
		rc = s3_req_header(&r, "", "If-Match", opts->if_match);
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
		s3_req_release(&r);
		ranged = false;
		goto again;
	}
	if (rc != 0)
		goto out;
	if (r.status == 206) {
		s3_take_info(&r, info, r.have_total ? r.range_total :
			  r.sink_off);
	} else {
		/* 200: the whole object (if the server ignored the Range, the
		 * write callback would have had to skip; see on_write). */
		s3_take_info(&r, info, r.have_length ? r.content_length :
			  r.sink_off);
	}
out:
	rc = denied_or_absent(s, key, rc, &r);
	s3_req_release(&r);
	return rc;
}

static int put_once(struct objfs_store *s, const char *key,
		    const struct objfs_source *src,
		    const struct objfs_put_opts *opts, bool if_none_match,
		    struct objfs_obj_info *info)
{
	struct s3_req r;
	int rc;

	s3_req_init(&r, "PUT", key);
	r.src = src;
	rc = s3_req_meta(&r, opts ? opts->meta : NULL,
		      opts ? opts->content_type : NULL);
	if (rc == 0 && if_none_match)
		rc = s3_req_header(&r, "", "If-None-Match", "*");
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
	s3_req_release(&r);
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

/* Whether some server could have issued token for a listing of prefix.
 * AWS and Swift issue base64; Ceph RGW issues the last key (or common
 * prefix) it listed, so its tokens begin with the prefix, and it answers
 * any other string with a listing from there instead of an error. */
static bool token_possible(const char *token, const char *prefix)
{
	if (is_base64(token))
		return true;
	return prefix == NULL || strncmp(token, prefix, strlen(prefix)) == 0;
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
	s3_req_init(&r, "GET", NULL);
	r.want_body = true;
	s3_req_param(&r, "list-type", "2");
	s3_req_param(&r, "encoding-type", "url");
	s3_req_param(&r, "max-keys", maxk);
	if (lr->prefix != NULL && lr->prefix[0] != '\0')
		s3_req_param(&r, "prefix", lr->prefix);
	if (lr->delimiter != NULL && lr->delimiter[0] != '\0')
		s3_req_param(&r, "delimiter", lr->delimiter);
	if (lr->continuation != NULL)
		s3_req_param(&r, "continuation-token", lr->continuation);
	if (lr->start_after != NULL && lr->start_after[0] != '\0')
		s3_req_param(&r, "start-after", lr->start_after);
	rc = s3_perform(s, &r);
	if (rc == EIO && lr->continuation != NULL &&
	    !is_base64(lr->continuation))
		rc = EINVAL;   /* Swift: 500 for a token it cannot decode */
	if (rc == 0 && lr->continuation != NULL &&
	    !token_possible(lr->continuation, lr->prefix))
		rc = EINVAL;
	if (rc == 0)
		rc = objfs_s3_xml_parse_list(r.body.p, r.body.len, page, &r.err);
	if (rc == EREMOTEIO)
		rc = objfs_s3_errno_http(500, r.err.code);
	s3_req_release(&r);
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
	return s3_req_header(r, "", "x-amz-copy-source", enc);
}

/* The copy's condition on the source ETag.  Ceph RGW 16 ignores
 * x-amz-copy-source-if-match on CopyObject and reads x-amz-copy-if-match
 * instead: both are sent (other servers ignore the second). */
static int copy_if_match(struct s3_req *r, const char *etag)
{
	int rc = s3_req_header(r, "", "x-amz-copy-source-if-match", etag);

	if (rc == 0)
		rc = s3_req_header(r, "", "x-amz-copy-if-match", etag);
	return rc;
}

static int s3_mpu_create(struct objfs_store *s, const char *key,
			 const struct objfs_put_opts *opts, char **upload_id);
static int s3_mpu_complete(struct objfs_store *s, const char *key,
			   const char *upload_id,
			   const struct objfs_part *parts, size_t n,
			   struct objfs_obj_info *info);
static int s3_mpu_abort(struct objfs_store *s, const char *key,
			const char *upload_id);

/* After the last UploadPartCopy: 0 if src still has etag, else ESTALE (or
 * the HEAD's error).  Ceph RGW 16 ignores every source condition of
 * UploadPartCopy, so a source rewritten between two parts would otherwise
 * give a destination made of both versions. */
static int source_unchanged(struct objfs_store *s, const char *src,
			    const char *etag)
{
	struct objfs_obj_info now = OBJFS_OBJ_INFO_INIT;
	int rc = s3_head(s, src, &now);

	if (rc == 0 && strcmp(now.etag, etag) != 0)
		rc = ESTALE;
	else if (rc == ENOENT)
		rc = ESTALE;
	objfs_obj_info_release(&now);
	return rc;
}

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
		s3_req_init(&r, "PUT", dst);
		r.want_body = true;
		r.slow = true;
		s3_req_param(&r, "partNumber", num);
		s3_req_param(&r, "uploadId", upload_id);
		rc = copy_source_header(&r, c, src);
		if (rc == 0 && sinfo.size > 0)
			rc = s3_req_header(&r, "", "x-amz-copy-source-range",
					range);
		if (rc == 0 && sinfo.etag[0] != '\0')
			rc = copy_if_match(&r, sinfo.etag);
		if (rc == 0)
			rc = s3_perform(s, &r);
		if (rc == 0)
			rc = objfs_s3_xml_parse_etag(r.body.p, r.body.len,
						     "CopyPartResult",
						     parts[i].etag, &r.err);
		if (rc == 0 && parts[i].etag[0] == '\0')
			rc = EPROTO;
		if (rc == EREMOTEIO)
			rc = objfs_s3_errno_http(500, r.err.code);
		parts[i].number = (unsigned)(i + 1);
		s3_req_release(&r);
	}
	if (rc == 0)
		rc = source_unchanged(s, src, sinfo.etag);
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
	s3_req_init(&r, "PUT", dst);
	r.want_body = true;
	r.slow = true;
	rc = copy_source_header(&r, c, src);
	if (rc == 0)
		rc = s3_req_header(&r, "", "x-amz-metadata-directive",
				opts->directive == OBJFS_META_REPLACE ?
				"REPLACE" : "COPY");
	if (rc == 0 && opts->directive == OBJFS_META_REPLACE)
		rc = s3_req_meta(&r, opts->meta, opts->content_type);
	if (rc == 0 && opts->if_match != NULL)
		rc = copy_if_match(&r, opts->if_match);
	if (rc != 0)
		goto out;
	rc = s3_perform(s, &r);
	if (rc == 0) {
		char etag[OBJFS_ETAG_MAX];

		rc = objfs_s3_xml_parse_etag(r.body.p, r.body.len,
					     "CopyObjectResult", etag, &r.err);
		if (rc == 0 && etag[0] == '\0')
			rc = EPROTO;
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
	s3_req_release(&r);
	return rc;
}

static int s3_del(struct objfs_store *s, const char *key)
{
	struct s3_req r;
	int rc;

	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	s3_req_init(&r, "DELETE", key);
	rc = s3_perform(s, &r);
	if (rc == ENOENT && strcmp(r.err.code, "NoSuchBucket") != 0)
		rc = 0;
	s3_req_release(&r);
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

/* Deletes keys[0..n) one by one: the first error, *failed counted. */
static int del_each(struct objfs_store *s, const char *const *keys, size_t n,
		    size_t *failed)
{
	int first = 0, rc;
	size_t i;

	*failed = 0;
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

static int del_batch(struct objfs_store *s, const char *const *keys, size_t n,
		     size_t *failed)
{
	struct s3_ctx *c = s->ctx;
	struct objfs_source src;
	struct s3_req r;
	char *doc = NULL;
	char md5[32], hash[65];
	size_t len = 0;
	int rc;

	*failed = 0;
	if (__atomic_load_n(&c->no_multi_delete, __ATOMIC_RELAXED) != 0)
		return del_each(s, keys, n, failed);
	rc = objfs_s3_xml_build_delete(keys, n, &doc, &len);
	if (rc == EILSEQ)   /* a key XML cannot carry */
		return del_each(s, keys, n, failed);
	if (rc != 0) {
		*failed = n;
		return rc;
	}
	s3_req_init(&r, "POST", NULL);
	r.want_body = true;
	r.slow = true;
	s3_req_param(&r, "delete", NULL);
	objfs_source_mem(&src, doc, len);
	r.src = &src;
	rc = content_md5(doc, len, md5);
	if (rc == 0)
		rc = objfs_sha256_hex(doc, len, hash);
	r.payload_hash = hash;
	if (rc == 0)
		rc = s3_req_header(&r, "", "Content-MD5", md5);
	if (rc == 0)
		rc = s3_req_header(&r, "", "Content-Type", "application/xml");
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
	s3_req_release(&r);
	free(doc);
	if (rc == EACCES && *failed == 0) {
		/* Ceph RGW 16 checks s3:DeleteObject of a DeleteObjects against
		 * the bucket, not each key (AWS: each key), so keys scoped to
		 * a prefix by a bucket policy are refused the whole batch.
		 * When a DELETE of the first key is allowed, the server is
		 * such: this store deletes one by one from now on. */
		if (s3_del(s, keys[0]) != 0) {
			*failed = n;
			return rc;
		}
		if (__atomic_exchange_n(&c->no_multi_delete, 1, __ATOMIC_RELAXED) == 0)
			objfs_info(s->log, "s3", "server refuses DeleteObjects "
				   "where DELETE is allowed; deleting one by one");
		rc = del_each(s, keys + 1, n - 1, failed);
	}
	if (rc != 0 && *failed == 0)
		*failed = n;
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
	s3_req_init(&r, "POST", key);
	r.want_body = true;
	s3_req_param(&r, "uploads", NULL);
	rc = s3_req_meta(&r, opts ? opts->meta : NULL,
		      opts ? opts->content_type : NULL);
	if (rc == 0)
		rc = s3_perform(s, &r);
	if (rc == 0)
		rc = objfs_s3_xml_parse_initiate(r.body.p, r.body.len,
						 upload_id, &r.err);
	if (rc == EREMOTEIO)
		rc = objfs_s3_errno_http(500, r.err.code);
	s3_req_release(&r);
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
	s3_req_init(&r, "PUT", key);
	s3_req_param(&r, "partNumber", num);
	s3_req_param(&r, "uploadId", upload_id);
	r.src = src;
	rc = s3_perform(s, &r);
	if (rc == 0 && r.cap.etag[0] == '\0')
		rc = EPROTO;
	if (rc == 0 && part != NULL) {
		part->number = number;
		memcpy(part->etag, r.cap.etag, sizeof(part->etag));
	}
	s3_req_release(&r);
	return rc;
}

static int part_copy_once(struct objfs_store *s, const char *key,
			  const char *upload_id, unsigned number,
			  const struct objfs_part_copy *pc, bool cond,
			  struct objfs_part *part);

/* UploadPartCopy of one range.  A server that does not implement it
 * (NotImplemented, 501, 405, or 400 InvalidRequest: a copy source it does
 * not take) is remembered: EOPNOTSUPP from then on without a request.
 * Swift 2.30 checks x-amz-copy-source-if-match of UploadPartCopy against
 * its own ETag of a multipart source, not the S3 one, so the condition
 * always fails there: a 412 from a source a HEAD finds unchanged is
 * remembered, and the condition is no longer sent (the caller checks the
 * source after its last part, as for RGW). */
static int s3_mpu_part_copy(struct objfs_store *s, const char *key,
			    const char *upload_id, unsigned number,
			    const struct objfs_part_copy *pc,
			    struct objfs_part *part)
{
	struct s3_ctx *c = s->ctx;
	bool cond = pc != NULL && pc->if_match != NULL &&
		__atomic_load_n(&c->no_copy_cond, __ATOMIC_RELAXED) == 0;
	int rc = part_copy_once(s, key, upload_id, number, pc, cond, part);

	if (rc == ESTALE && cond) {
		struct objfs_obj_info now = OBJFS_OBJ_INFO_INIT;
		const char *a = pc->if_match, *b;

		if (s3_head(s, pc->src, &now) == 0) {
			b = now.etag;
			a += *a == '"';
			b += *b == '"';
			if (strncmp(a, b, strcspn(a, "\"")) == 0 &&
			    strcspn(a, "\"") == strcspn(b, "\"")) {
				__atomic_store_n(&c->no_copy_cond, 1,
						 __ATOMIC_RELAXED);
				objfs_info(s->log, "s3", "server fails the "
					   "source condition of UploadPartCopy "
					   "on a matching source; not sent "
					   "from now on");
				rc = part_copy_once(s, key, upload_id, number,
						    pc, false, part);
			}
		}
		objfs_obj_info_release(&now);
	}
	return rc;
}

static int part_copy_once(struct objfs_store *s, const char *key,
			  const char *upload_id, unsigned number,
			  const struct objfs_part_copy *pc, bool cond,
			  struct objfs_part *part)
{
	struct s3_ctx *c = s->ctx;
	struct s3_req r;
	char num[16], range[64];
	int rc;

	rc = objfs_key_valid(key);
	if (rc != 0)
		return rc;
	if (pc == NULL || objfs_key_valid(pc->src) != 0 || upload_id == NULL ||
	    upload_id[0] == '\0' || number < 1 ||
	    number > OBJFS_MPU_MAX_PARTS || pc->len == 0)
		return EINVAL;
	if (pc->len > OBJFS_MPU_MAX_PART)
		return EFBIG;
	if (__atomic_load_n(&c->no_part_copy, __ATOMIC_RELAXED) != 0)
		return EOPNOTSUPP;
	snprintf(num, sizeof(num), "%u", number);
	snprintf(range, sizeof(range), "bytes=%llu-%llu",
		 (unsigned long long)pc->off,
		 (unsigned long long)(pc->off + pc->len - 1));
	s3_req_init(&r, "PUT", key);
	r.want_body = true;
	r.slow = true;
	s3_req_param(&r, "partNumber", num);
	s3_req_param(&r, "uploadId", upload_id);
	rc = copy_source_header(&r, c, pc->src);
	if (rc == 0)
		rc = s3_req_header(&r, "", "x-amz-copy-source-range", range);
	if (rc == 0 && cond)
		rc = s3_req_header(&r, "", "x-amz-copy-source-if-match",
				   pc->if_match);
	if (rc == 0)
		rc = s3_perform(s, &r);
	if (rc == 0)
		rc = objfs_s3_xml_parse_etag(r.body.p, r.body.len,
					     "CopyPartResult", part->etag,
					     &r.err);
	if (rc == 0 && part->etag[0] == '\0')
		rc = EPROTO;
	if (rc == EREMOTEIO)
		rc = objfs_s3_errno_http(500, r.err.code);
	if (rc == ENOSYS || rc == ENOTSUP ||
	    (rc == EINVAL && strcmp(r.err.code, "InvalidRequest") == 0)) {
		__atomic_store_n(&c->no_part_copy, 1, __ATOMIC_RELAXED);
		objfs_info(s->log, "s3", "server refuses UploadPartCopy (%s); "
			   "changed files are uploaded whole",
			   r.err.code[0] != '\0' ? r.err.code : "no code");
		rc = EOPNOTSUPP;
	}
	if (rc == 0)
		part->number = number;
	s3_req_release(&r);
	return rc;
}

/* The ETag S3 gives a completed multipart upload: the MD5 of the parts'
 * binary MD5s, then "-" and the number of parts.  Ceph RGW 16 answers
 * CompleteMultipartUpload with an empty <ETag/>; it computes its ETag this
 * way, so it is computed here; a part ETag that is not an MD5 (encrypted
 * parts) makes a HEAD of key answer instead.  0 or an errno. */
static int mpu_etag(struct objfs_store *s, const char *key,
		    const struct objfs_part *parts, size_t n,
		    char etag[OBJFS_ETAG_MAX])
{
	struct objfs_obj_info hinfo = OBJFS_OBJ_INFO_INIT;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool md5s = ctx != NULL &&
		EVP_DigestInit_ex(ctx, EVP_md5(), NULL) == 1;
	size_t i;
	int rc;

	for (i = 0; i < n && md5s; i++) {
		const char *e = parts[i].etag;
		unsigned char bin[16];
		unsigned j;

		if (e[0] == '"')
			e++;
		if (strspn(e, "0123456789abcdefABCDEF") != 32 ||
		    (e[32] != '\0' && strcmp(e + 32, "\"") != 0)) {
			md5s = false;
			break;
		}
		for (j = 0; j < 16; j++) {
			char hex[3] = { e[2 * j], e[2 * j + 1], '\0' };

			bin[j] = (unsigned char)strtoul(hex, NULL, 16);
		}
		md5s = EVP_DigestUpdate(ctx, bin, sizeof(bin)) == 1;
	}
	if (md5s && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 16) {
		char *p = etag;

		*p++ = '"';
		for (i = 0; i < 16; i++) {
			snprintf(p, 3, "%02x", md[i]);
			p += 2;
		}
		snprintf(p, OBJFS_ETAG_MAX - 33, "-%zu\"", n);
		rc = 0;
	} else {
		rc = s3_head(s, key, &hinfo);
		if (rc == 0 && hinfo.etag[0] == '\0')
			rc = EPROTO;
		if (rc == 0)
			memcpy(etag, hinfo.etag, OBJFS_ETAG_MAX);
		objfs_obj_info_release(&hinfo);
	}
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* 0 if upload_id of key still exists, ENOENT if not, or another errno
 * (ListParts of one part).  Ceph RGW 16 answers the completion of an
 * aborted upload with 500 InternalError ("This multipart completion is
 * already in progress"), which would be retried as a server failure. */
static int mpu_exists(struct objfs_store *s, const char *key,
		      const char *upload_id)
{
	struct s3_req r;
	int rc;

	s3_req_init(&r, "GET", key);
	r.want_body = true;
	s3_req_param(&r, "max-parts", "1");
	s3_req_param(&r, "uploadId", upload_id);
	rc = s3_perform(s, &r);
	s3_req_release(&r);
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
	s3_req_init(&r, "POST", key);
	r.want_body = true;
	r.slow = true;
	s3_req_param(&r, "uploadId", upload_id);
	objfs_source_mem(&src, doc, len);
	r.src = &src;
	rc = objfs_sha256_hex(doc, len, hash);
	r.payload_hash = hash;
	if (rc == 0)
		rc = s3_req_header(&r, "", "Content-Type", "application/xml");
	if (rc == 0)
		rc = s3_perform(s, &r);
	if (rc == EIO && r.status == 500 &&
	    mpu_exists(s, key, upload_id) == ENOENT)
		rc = ENOENT;
	if (rc == 0) {
		/* 200 may still carry an <Error>. */
		rc = objfs_s3_xml_parse_etag(r.body.p, r.body.len,
					     "CompleteMultipartUploadResult",
					     etag, &r.err);
		if (rc == EREMOTEIO)
			rc = objfs_s3_errno_http(500, r.err.code);
		if (rc == 0 && etag[0] == '\0')
			rc = mpu_etag(s, key, parts, n, etag);
		if (rc == 0 && info != NULL) {
			objfs_obj_info_release(info);
			memcpy(info->etag, etag, sizeof(info->etag));
		}
	}
	s3_req_release(&r);
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
	s3_req_init(&r, "DELETE", key);
	s3_req_param(&r, "uploadId", upload_id);
	rc = s3_perform(s, &r);
	if (rc == ENOENT && strcmp(r.err.code, "NoSuchBucket") != 0)
		rc = 0;
	s3_req_release(&r);
	return rc;
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
	objfs_credprov_destroy(c->creds);
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
	.mpu_part_copy = s3_mpu_part_copy,
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
	const char *ep, *hp, *slash = NULL;
	size_t hl = 0;
	bool fail = false, mu_init = false, cv_init = false, global = false;
	int rc;

	*out = NULL;
	if (cfg == NULL || cfg->endpoint == NULL || cfg->bucket == NULL)
		return EINVAL;
	/* each refusal names its cause: EINVAL alone reaches the user as
	 * "Invalid argument" */
	if (!bucket_name_ok(cfg->bucket)) {
		objfs_error(log, "s3", "bucket name \"%s\" is not one S3 takes "
			    "(1-255 of a-z, A-Z, 0-9, '.', '-', '_')",
			    cfg->bucket);
		return EINVAL;
	}
	if ((cfg->access_key == NULL) != (cfg->secret_key == NULL)) {
		objfs_error(log, "s3", "an access key without a secret key, or "
			    "a secret key without an access key: give both "
			    "(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
			    "both lines of the credentials file)");
		return EINVAL;
	}
	if (cfg->access_key == NULL && !objfs_creds_any(cfg->keyless) &&
	    cfg->creds_looked != NULL) {
		objfs_error(log, "s3", "no credentials found; objfs looked at, in "
			    "order: %s (a public bucket: -o no_sign_request)",
			    cfg->creds_looked);
		return EACCES;
	}
	ep = cfg->endpoint;
	if (strncmp(ep, "http://", 7) == 0)
		hp = ep + 7;
	else if (strncmp(ep, "https://", 8) == 0)
		hp = ep + 8;
	else
		hp = NULL;
	if (hp != NULL) {
		slash = strchr(hp, '/');
		hl = slash != NULL ? (size_t)(slash - hp) : strlen(hp);
	}
	if (hp != NULL && memchr(hp, '@', hl) != NULL) {
		/* not echoed: user:password@ is a secret */
		objfs_error(log, "s3", "the endpoint carries user@ (keys go in "
			    "the credentials, never in the endpoint)");
		return EINVAL;
	}
	if (hp == NULL || hl == 0 || hl > 255 ||
	    (slash != NULL && slash[1] != '\0')) {
		objfs_error(log, "s3", "endpoint \"%s\" is not http[s]://HOST"
			    "[:PORT] (no path)", ep);
		return EINVAL;
	}

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
	if (fail || c->scheme == NULL || c->url_host == NULL ||
	    c->base_path == NULL) {
		rc = ENOMEM;
		goto fail;
	}
	{
		/* static keys, else the keyless sources, else anonymous */
		struct objfs_creds st = OBJFS_CREDS_INIT;
		struct objfs_credprov_config pc = { 0 };

		st.access_key = (char *)cfg->access_key;
		st.secret_key = (char *)cfg->secret_key;
		st.session_token = (char *)cfg->session_token;
		pc.creds = cfg->access_key != NULL ? &st : cfg->keyless;
		pc.region = c->region;
		pc.ca_file = cfg->ca_file;
		pc.insecure_skip_verify = cfg->insecure_skip_verify;
		pc.refresh_s = cfg->creds_refresh_s;
		pc.looked = cfg->creds_looked;
		if (pc.creds != NULL) {
			rc = objfs_credprov_create(&pc, log, &c->creds);
			if (rc != 0)
				goto fail;
		}
	}
	c->insecure = cfg->insecure_skip_verify;
	c->unsigned_payload = cfg->unsigned_payload ||
		(strcmp(c->scheme, "https") == 0 && !cfg->signed_payload);
	c->connect_timeout_ms = cfg->connect_timeout_ms > 0 ?
		cfg->connect_timeout_ms : 10000;
	c->low_speed_s = cfg->low_speed_timeout_s > 0 ?
		cfg->low_speed_timeout_s : 30;
	c->stall_ms = cfg->stall_timeout_ms > 0 ? cfg->stall_timeout_ms : 3000;
	c->stall_thr_ms = c->stall_ms;
	c->max_conn = cfg->max_connections > 0 ? cfg->max_connections : 16;
	c->free_handles = calloc(c->max_conn, sizeof(*c->free_handles));
	if (c->free_handles == NULL) {
		rc = ENOMEM;
		goto fail;
	}
	rc = s3_meter_init(&c->meter, cfg->metrics);
	if (rc != 0)
		goto fail;
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
	objfs_info(log, "s3", "s3 store %s://%s%s (region %s, %s, %s payloads, %s)",
		   c->scheme, c->url_host, c->base_path, c->region,
		   cfg->path_style ? "path style" : "virtual hosted",
		   c->unsigned_payload ? "unsigned" : "hashed",
		   c->creds != NULL ? objfs_credprov_kind(c->creds) : "anonymous");
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
