/*
 * s3_sign.h - AWS Signature Version 4 (header authentication) as pure
 * functions.
 *
 * Nothing here touches the network, a clock or global state: the caller
 * passes the date, the request parts and the credentials, and gets the
 * canonical request, the string to sign and the Authorization header back in
 * buffers it owns.  The S3 leaf (s3.c) builds its URLs with the same encoding
 * functions, so what is signed is exactly what is sent.
 *
 * S3 flavour: the path is URI-encoded once, '/' kept, and never normalised
 * ("." and ".." segments and double slashes are part of S3 keys).
 */
#ifndef OBJFS_S3_SIGN_H
#define OBJFS_S3_SIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define OBJFS_SHA256_HEX_LEN 64
/* SHA-256 of the empty string, hex. */
#define OBJFS_SIGV4_EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define OBJFS_SIGV4_UNSIGNED "UNSIGNED-PAYLOAD"

/* Caps of what we build (bounded buffers; too big is E2BIG). */
#define OBJFS_SIGV4_MAX_HEADERS 64
#define OBJFS_SIGV4_MAX_PARAMS 16
#define OBJFS_SIGV4_CREQ_MAX (64 * 1024)
#define OBJFS_SIGV4_SIGNED_HEADERS_MAX 2048
#define OBJFS_SIGV4_AUTH_MAX 4096

/* One request header as sent; names in any case, values untrimmed. */
struct objfs_sigv4_header {
	const char *name;
	const char *value;
};

/* One query parameter, decoded.  A NULL or empty value is written "name=". */
struct objfs_sigv4_param {
	const char *name;
	const char *value;
};

/* A request to sign.  path is the decoded path ("/bucket/my key");
 * headers must include Host and X-Amz-Date (and x-amz-content-sha256 and
 * x-amz-security-token when they are sent: every header given is signed).
 * payload_hash is 64 hex digits or "UNSIGNED-PAYLOAD". */
struct objfs_sigv4_request {
	const char *method;
	const char *path;
	const struct objfs_sigv4_param *params;
	size_t n_params;
	const struct objfs_sigv4_header *headers;
	size_t n_headers;
	const char *payload_hash;
};

/* Credentials and scope.  Strings are not copied. */
struct objfs_sigv4_key {
	const char *access_key;
	const char *secret_key;
	const char *region;
	const char *service;        /* "s3" */
};

/* Percent-encodes len bytes of in per SigV4 (unreserved A-Z a-z 0-9 - . _ ~
 * kept, everything else %XX upper-case; '/' kept when keep_slash) into out
 * (cap bytes, NUL-terminated).  0 or E2BIG. */
int objfs_sigv4_uri_encode(const char *in, size_t len, bool keep_slash,
			   char *out, size_t cap);

/* The canonical query string of params ("a=1&b=" sorted by encoded name,
 * then value) into out.  Also used as the query string sent.  0 or E2BIG. */
int objfs_sigv4_canonical_query(const struct objfs_sigv4_param *params,
				size_t n, char *out, size_t cap);

/* The canonical request into creq and the signed header list
 * ("host;x-amz-date") into signed_headers.  0, E2BIG or EINVAL. */
int objfs_sigv4_canonical_request(const struct objfs_sigv4_request *req,
				  char *creq, size_t creq_cap,
				  char *signed_headers, size_t sh_cap);

/* The string to sign for amz_date ("20150830T123600Z") and scope
 * ("20150830/us-east-1/service/aws4_request").  0 or E2BIG. */
int objfs_sigv4_string_to_sign(const char *amz_date, const char *scope,
			       const char *creq, char *out, size_t cap);

/* kSigning = HMAC chain over "AWS4"+secret, date8, region, service,
 * "aws4_request".  0 or EIO (OpenSSL failure). */
int objfs_sigv4_signing_key(const char *secret_key, const char *date8,
			    const char *region, const char *service,
			    unsigned char key[32]);

/* The whole signature: fills auth (cap bytes) with the Authorization header
 * value "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...".
 * amz_date is the X-Amz-Date value.  The intermediate buffers are heap
 * allocated and wiped.  0, E2BIG, EINVAL, ENOMEM or EIO. */
int objfs_sigv4_authorization(const struct objfs_sigv4_request *req,
			      const struct objfs_sigv4_key *key,
			      const char *amz_date, char *auth, size_t cap);

/* ISO8601 basic date "YYYYMMDDTHHMMSSZ" of t (UTC) into out[17]. */
void objfs_sigv4_amz_date(time_t t, char out[17]);

/* Lower-case hex SHA-256 of data into out[65].  0 or EIO. */
int objfs_sha256_hex(const void *data, size_t len, char out[65]);

#endif
