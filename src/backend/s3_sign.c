/*
 * s3_sign.c - AWS Signature Version 4, header flavour (see s3_sign.h).
 *
 * Pure functions over caller buffers.  Every string is built in a fixed
 * objfs_buf (common/buf.h) over the caller's memory: an overflowed build is
 * E2BIG, never a write past the end.  Secrets only pass through the HMAC
 * chain; the derived key and the "AWS4"+secret buffer are wiped with
 * OPENSSL_cleanse before returning.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "backend/s3_sign.h"
#include "common/buf.h"

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

static void sb_encode(struct objfs_buf *b, const char *in, size_t len,
		      bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < len && b->err == 0; i++) {
		unsigned char c = (unsigned char)in[i];

		if (unreserved(c) || (keep_slash && c == '/')) {
			objfs_buf_addc(b, (char)c);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			objfs_buf_add(b, e, 3);
		}
	}
}

int objfs_sigv4_uri_encode(const char *in, size_t len, bool keep_slash,
			   char *out, size_t cap)
{
	struct objfs_buf b;

	objfs_buf_fixed(&b, out, cap, E2BIG);
	sb_encode(&b, in, len, keep_slash);
	return b.err != 0 ? E2BIG : 0;
}

/* Encoded parameter, for sorting. */
struct enc_param {
	char name[1024];
	char value[3200];
};

int objfs_sigv4_canonical_query(const struct objfs_sigv4_param *params,
				size_t n, char *out, size_t cap)
{
	struct enc_param *ep = NULL;
	size_t i, j;
	struct objfs_buf b;
	int rc = 0;

	objfs_buf_fixed(&b, out, cap, E2BIG);
	if (b.err != 0)
		return E2BIG;
	if (n == 0)
		return 0;
	if (n > OBJFS_SIGV4_MAX_PARAMS)
		return E2BIG;
	ep = calloc(n, sizeof(*ep));
	if (ep == NULL)
		return ENOMEM;
	for (i = 0; i < n; i++) {
		const char *v = params[i].value != NULL ? params[i].value : "";

		if (params[i].name == NULL) {
			rc = EINVAL;
			goto out;
		}
		rc = objfs_sigv4_uri_encode(params[i].name,
					    strlen(params[i].name), false,
					    ep[i].name, sizeof(ep[i].name));
		if (rc == 0)
			rc = objfs_sigv4_uri_encode(v, strlen(v), false,
						    ep[i].value,
						    sizeof(ep[i].value));
		if (rc != 0)
			goto out;
	}
	/* Insertion sort: n is tiny. */
	for (i = 1; i < n; i++) {
		struct enc_param tmp = ep[i];

		for (j = i; j > 0; j--) {
			int c = strcmp(ep[j - 1].name, tmp.name);

			if (c < 0 || (c == 0 &&
				      strcmp(ep[j - 1].value, tmp.value) <= 0))
				break;
			ep[j] = ep[j - 1];
		}
		ep[j] = tmp;
	}
	for (i = 0; i < n; i++) {
		if (i > 0)
			objfs_buf_addc(&b, '&');
		objfs_buf_adds(&b, ep[i].name);
		objfs_buf_addc(&b, '=');
		objfs_buf_adds(&b, ep[i].value);
	}
	rc = b.err != 0 ? E2BIG : 0;
out:
	free(ep);
	return rc;
}

static int ascii_casecmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		int ca = (unsigned char)*a, cb = (unsigned char)*b;

		if (ca >= 'A' && ca <= 'Z')
			ca += 'a' - 'A';
		if (cb >= 'A' && cb <= 'Z')
			cb += 'a' - 'A';
		if (ca != cb || ca == 0)
			return ca - cb;
	}
}

/* Appends value trimmed, with runs of spaces and tabs folded to one space. */
static void sb_add_trimmed(struct objfs_buf *b, const char *v)
{
	bool space = false, any = false;

	for (; *v != '\0'; v++) {
		if (*v == ' ' || *v == '\t') {
			space = true;
			continue;
		}
		if (space && any)
			objfs_buf_addc(b, ' ');
		space = false;
		any = true;
		objfs_buf_addc(b, *v);
	}
}

static void sb_add_lower(struct objfs_buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		char c = *s;

		if (c >= 'A' && c <= 'Z')
			c = (char)(c + ('a' - 'A'));
		objfs_buf_addc(b, c);
	}
}

int objfs_sigv4_canonical_request(const struct objfs_sigv4_request *req,
				  char *creq, size_t creq_cap,
				  char *signed_headers, size_t sh_cap)
{
	size_t order[OBJFS_SIGV4_MAX_HEADERS];
	size_t n = req->n_headers, i, j;
	struct objfs_buf b, sh;
	int rc;

	if (req->method == NULL || req->path == NULL || req->path[0] != '/' ||
	    req->payload_hash == NULL)
		return EINVAL;
	if (n > OBJFS_SIGV4_MAX_HEADERS)
		return E2BIG;
	objfs_buf_fixed(&b, creq, creq_cap, E2BIG);
	objfs_buf_fixed(&sh, signed_headers, sh_cap, E2BIG);

	objfs_buf_adds(&b, req->method);
	objfs_buf_addc(&b, '\n');
	sb_encode(&b, req->path, strlen(req->path), true);
	objfs_buf_addc(&b, '\n');
	if (b.err == 0) {
		rc = objfs_sigv4_canonical_query(req->params, req->n_params,
						 b.p + b.len, b.cap - b.len);
		if (rc != 0)
			return rc;
		b.len += strlen(b.p + b.len);
	}
	objfs_buf_addc(&b, '\n');

	/* Stable sort of header indices by lower-cased name. */
	for (i = 0; i < n; i++) {
		if (req->headers[i].name == NULL ||
		    req->headers[i].value == NULL)
			return EINVAL;
		order[i] = i;
	}
	for (i = 1; i < n; i++) {
		size_t t = order[i];

		for (j = i; j > 0 &&
		     ascii_casecmp(req->headers[order[j - 1]].name,
				   req->headers[t].name) > 0; j--)
			order[j] = order[j - 1];
		order[j] = t;
	}
	for (i = 0; i < n; i++) {
		const struct objfs_sigv4_header *h = &req->headers[order[i]];
		bool same = i > 0 &&
			ascii_casecmp(req->headers[order[i - 1]].name,
				      h->name) == 0;

		if (same && b.err == 0) {
			/* Duplicate names: values joined with ',' in order. */
			b.len--; /* the '\n' */
			b.p[b.len] = '\0';
			objfs_buf_addc(&b, ',');
		} else if (!same) {
			sb_add_lower(&b, h->name);
			objfs_buf_addc(&b, ':');
			if (i > 0)
				objfs_buf_addc(&sh, ';');
			sb_add_lower(&sh, h->name);
		}
		sb_add_trimmed(&b, h->value);
		objfs_buf_addc(&b, '\n');
	}
	objfs_buf_addc(&b, '\n');
	objfs_buf_adds(&b, sh.err != 0 ? "" : sh.p);
	objfs_buf_addc(&b, '\n');
	objfs_buf_adds(&b, req->payload_hash);
	return b.err != 0 || sh.err != 0 ? E2BIG : 0;
}

static void hex_encode(const unsigned char *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * n] = '\0';
}

int objfs_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen != 32)
		return EIO;
	hex_encode(md, 32, out);
	return 0;
}

int objfs_sigv4_string_to_sign(const char *amz_date, const char *scope,
			       const char *creq, char *out, size_t cap)
{
	char hash[65];
	struct objfs_buf b;
	int rc;

	rc = objfs_sha256_hex(creq, strlen(creq), hash);
	if (rc != 0)
		return rc;
	objfs_buf_fixed(&b, out, cap, E2BIG);
	objfs_buf_adds(&b, "AWS4-HMAC-SHA256\n");
	objfs_buf_adds(&b, amz_date);
	objfs_buf_addc(&b, '\n');
	objfs_buf_adds(&b, scope);
	objfs_buf_addc(&b, '\n');
	objfs_buf_adds(&b, hash);
	return b.err != 0 ? E2BIG : 0;
}

static int hmac(const unsigned char *key, size_t klen, const char *msg,
		unsigned char out[32])
{
	unsigned int olen = 0;

	if (HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg,
		 strlen(msg), out, &olen) == NULL || olen != 32)
		return EIO;
	return 0;
}

int objfs_sigv4_signing_key(const char *secret_key, const char *date8,
			    const char *region, const char *service,
			    unsigned char key[32])
{
	unsigned char k[32];
	size_t slen = strlen(secret_key);
	unsigned char *ks;
	int rc;

	ks = malloc(slen + 5);
	if (ks == NULL)
		return ENOMEM;
	memcpy(ks, "AWS4", 4);
	memcpy(ks + 4, secret_key, slen);
	rc = hmac(ks, slen + 4, date8, k);
	if (rc == 0)
		rc = hmac(k, 32, region, k);
	if (rc == 0)
		rc = hmac(k, 32, service, k);
	if (rc == 0)
		rc = hmac(k, 32, "aws4_request", key);
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(ks, slen + 5);
	free(ks);
	return rc;
}

int objfs_sigv4_authorization(const struct objfs_sigv4_request *req,
			      const struct objfs_sigv4_key *key,
			      const char *amz_date, char *auth, size_t cap)
{
	char signed_headers[OBJFS_SIGV4_SIGNED_HEADERS_MAX];
	char scope[256], date8[9], sigx[65];
	unsigned char kSigning[32], sig[32];
	unsigned int siglen = 0;
	char *creq = NULL, *sts = NULL;
	struct objfs_buf b;
	int rc;

	if (key == NULL || key->access_key == NULL || key->secret_key == NULL ||
	    key->region == NULL || key->service == NULL || amz_date == NULL ||
	    strlen(amz_date) != 16)
		return EINVAL;
	memcpy(date8, amz_date, 8);
	date8[8] = '\0';
	objfs_buf_fixed(&b, scope, sizeof(scope), E2BIG);
	objfs_buf_adds(&b, date8);
	objfs_buf_addc(&b, '/');
	objfs_buf_adds(&b, key->region);
	objfs_buf_addc(&b, '/');
	objfs_buf_adds(&b, key->service);
	objfs_buf_adds(&b, "/aws4_request");
	if (b.err != 0)
		return E2BIG;

	creq = malloc(OBJFS_SIGV4_CREQ_MAX);
	sts = malloc(1024);
	if (creq == NULL || sts == NULL) {
		rc = ENOMEM;
		goto out;
	}
	rc = objfs_sigv4_canonical_request(req, creq, OBJFS_SIGV4_CREQ_MAX,
					   signed_headers,
					   sizeof(signed_headers));
	if (rc != 0)
		goto out;
	rc = objfs_sigv4_string_to_sign(amz_date, scope, creq, sts, 1024);
	if (rc != 0)
		goto out;
	rc = objfs_sigv4_signing_key(key->secret_key, date8, key->region,
				     key->service, kSigning);
	if (rc != 0)
		goto out;
	if (HMAC(EVP_sha256(), kSigning, 32, (const unsigned char *)sts,
		 strlen(sts), sig, &siglen) == NULL || siglen != 32) {
		rc = EIO;
		goto out;
	}
	hex_encode(sig, 32, sigx);
	objfs_buf_fixed(&b, auth, cap, E2BIG);
	objfs_buf_adds(&b, "AWS4-HMAC-SHA256 Credential=");
	objfs_buf_adds(&b, key->access_key);
	objfs_buf_addc(&b, '/');
	objfs_buf_adds(&b, scope);
	objfs_buf_adds(&b, ", SignedHeaders=");
	objfs_buf_adds(&b, signed_headers);
	objfs_buf_adds(&b, ", Signature=");
	objfs_buf_adds(&b, sigx);
	rc = b.err != 0 ? E2BIG : 0;
out:
	OPENSSL_cleanse(kSigning, sizeof(kSigning));
	free(creq);
	free(sts);
	return rc;
}

void objfs_sigv4_amz_date(time_t t, char out[17])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}
