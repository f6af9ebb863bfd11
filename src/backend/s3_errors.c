/*
 * s3_errors.c - HTTP status + S3 error code + CURLcode -> errno, in one
 * table (see s3_errors.h for the precedence).
 *
 * The retry layer decides what to retry from these values alone, so the
 * choice matters: EAGAIN, EIO, ETIMEDOUT, ECONNRESET, ECONNREFUSED and
 * EHOSTUNREACH are transient; EACCES, ENOENT, EINVAL, ESTALE, ERANGE are
 * final.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend/s3_errors.h"
#include "backend/store_error.h"
#include "common/errors.h"

enum row_kind { ROW_CURL, ROW_CODE, ROW_STATUS };

struct row {
	enum row_kind kind;
	int curl;               /* ROW_CURL */
	const char *code;       /* ROW_CODE */
	long status;            /* ROW_STATUS */
	int err;
};

#define CURL_ROW(c, e) { ROW_CURL, (c), NULL, 0, (e) }
#define CODE_ROW(c, e) { ROW_CODE, 0, (c), 0, (e) }
#define STATUS_ROW(s, e) { ROW_STATUS, 0, NULL, (s), (e) }

static const struct row table[] = {
	/* transport (libcurl) */
	CURL_ROW(CURLE_UNSUPPORTED_PROTOCOL, EPROTONOSUPPORT),
	CURL_ROW(CURLE_FAILED_INIT, EIO),
	CURL_ROW(CURLE_URL_MALFORMAT, EINVAL),
	CURL_ROW(CURLE_NOT_BUILT_IN, ENOSYS),
	CURL_ROW(CURLE_COULDNT_RESOLVE_PROXY, EHOSTUNREACH),
	CURL_ROW(CURLE_COULDNT_RESOLVE_HOST, EHOSTUNREACH),
	CURL_ROW(CURLE_COULDNT_CONNECT, ECONNREFUSED),
	CURL_ROW(CURLE_WEIRD_SERVER_REPLY, EPROTO),
	CURL_ROW(CURLE_REMOTE_ACCESS_DENIED, EACCES),
	CURL_ROW(CURLE_HTTP2, EPROTO),
	CURL_ROW(CURLE_PARTIAL_FILE, ECONNRESET),
	CURL_ROW(CURLE_WRITE_ERROR, EIO),
	CURL_ROW(CURLE_READ_ERROR, EIO),
	CURL_ROW(CURLE_OUT_OF_MEMORY, ENOMEM),
	CURL_ROW(CURLE_OPERATION_TIMEDOUT, ETIMEDOUT),
	CURL_ROW(CURLE_RANGE_ERROR, ERANGE),
	CURL_ROW(CURLE_SSL_CONNECT_ERROR, EPROTO),
	CURL_ROW(CURLE_BAD_DOWNLOAD_RESUME, EIO),
	CURL_ROW(CURLE_ABORTED_BY_CALLBACK, ECANCELED),
	CURL_ROW(CURLE_BAD_FUNCTION_ARGUMENT, EINVAL),
	CURL_ROW(CURLE_TOO_MANY_REDIRECTS, ELOOP),
	CURL_ROW(CURLE_GOT_NOTHING, ECONNRESET),
	CURL_ROW(CURLE_SSL_ENGINE_NOTFOUND, EPROTO),
	CURL_ROW(CURLE_SSL_ENGINE_SETFAILED, EPROTO),
	CURL_ROW(CURLE_SEND_ERROR, ECONNRESET),
	CURL_ROW(CURLE_RECV_ERROR, ECONNRESET),
	CURL_ROW(CURLE_SSL_CERTPROBLEM, EACCES),
	CURL_ROW(CURLE_SSL_CIPHER, EPROTO),
	CURL_ROW(CURLE_PEER_FAILED_VERIFICATION, EACCES),
	CURL_ROW(CURLE_BAD_CONTENT_ENCODING, EPROTO),
	CURL_ROW(CURLE_FILESIZE_EXCEEDED, EFBIG),
	CURL_ROW(CURLE_USE_SSL_FAILED, EPROTO),
	CURL_ROW(CURLE_SEND_FAIL_REWIND, EIO),
	CURL_ROW(CURLE_SSL_ENGINE_INITFAILED, EPROTO),
	CURL_ROW(CURLE_LOGIN_DENIED, EACCES),
	CURL_ROW(CURLE_SSL_CACERT_BADFILE, EINVAL),
	CURL_ROW(CURLE_SSL_SHUTDOWN_FAILED, ECONNRESET),
	CURL_ROW(CURLE_AGAIN, EAGAIN),
	CURL_ROW(CURLE_SSL_CRL_BADFILE, EINVAL),
	CURL_ROW(CURLE_SSL_ISSUER_ERROR, EACCES),
	CURL_ROW(CURLE_NO_CONNECTION_AVAILABLE, EAGAIN),
	CURL_ROW(CURLE_SSL_PINNEDPUBKEYNOTMATCH, EACCES),
	CURL_ROW(CURLE_SSL_INVALIDCERTSTATUS, EACCES),
	CURL_ROW(CURLE_HTTP2_STREAM, EPROTO),
	CURL_ROW(CURLE_RECURSIVE_API_CALL, EDEADLK),
	CURL_ROW(CURLE_AUTH_ERROR, EACCES),
	CURL_ROW(CURLE_HTTP3, EPROTO),
	CURL_ROW(CURLE_QUIC_CONNECT_ERROR, EPROTO),
	CURL_ROW(CURLE_PROXY, EHOSTUNREACH),
	CURL_ROW(CURLE_SSL_CLIENTCERT, EACCES),
	CURL_ROW(CURLE_UNRECOVERABLE_POLL, EIO),

	/* S3 error codes (Error/Code in the response body) */
	CODE_ROW("NoSuchKey", ENOENT),
	CODE_ROW("NoSuchBucket", ENOENT),
	CODE_ROW("NoSuchUpload", ENOENT),
	CODE_ROW("NoSuchVersion", ENOENT),
	CODE_ROW("AccessDenied", EACCES),
	CODE_ROW("AllAccessDisabled", EACCES),
	CODE_ROW("AccountProblem", EACCES),
	CODE_ROW("SignatureDoesNotMatch", EACCES),
	CODE_ROW("InvalidAccessKeyId", EACCES),
	CODE_ROW("InvalidSecurity", EACCES),
	CODE_ROW("InvalidToken", EACCES),
	CODE_ROW("ExpiredToken", EACCES),
	CODE_ROW("TokenRefreshRequired", EACCES),
	CODE_ROW("RequestTimeTooSkewed", EACCES),
	CODE_ROW("InvalidObjectState", EACCES),
	CODE_ROW("PreconditionFailed", ESTALE),
	CODE_ROW("InvalidRange", ERANGE),
	CODE_ROW("SlowDown", EAGAIN),
	CODE_ROW("ServiceUnavailable", EAGAIN),
	CODE_ROW("Throttling", EAGAIN),
	CODE_ROW("ThrottlingException", EAGAIN),
	CODE_ROW("RequestLimitExceeded", EAGAIN),
	CODE_ROW("TooManyRequests", EAGAIN),
	CODE_ROW("OperationAborted", EAGAIN),
	CODE_ROW("InternalError", EIO),
	CODE_ROW("BadDigest", EIO),
	CODE_ROW("IncompleteBody", EIO),
	CODE_ROW("XAmzContentSHA256Mismatch", EIO),
	CODE_ROW("RequestTimeout", ETIMEDOUT),
	CODE_ROW("EntityTooSmall", EINVAL),
	CODE_ROW("EntityTooLarge", EFBIG),
	CODE_ROW("InvalidPart", EINVAL),
	CODE_ROW("InvalidPartOrder", EINVAL),
	CODE_ROW("InvalidArgument", EINVAL),
	CODE_ROW("InvalidRequest", EINVAL),
	CODE_ROW("InvalidDigest", EINVAL),
	CODE_ROW("InvalidBucketName", EINVAL),
	CODE_ROW("InvalidURI", EINVAL),
	CODE_ROW("MalformedXML", EINVAL),
	CODE_ROW("MissingContentLength", EINVAL),
	CODE_ROW("AuthorizationHeaderMalformed", EINVAL),
	CODE_ROW("PermanentRedirect", EINVAL),
	CODE_ROW("TemporaryRedirect", EAGAIN),
	CODE_ROW("KeyTooLongError", ENAMETOOLONG),
	CODE_ROW("MetadataTooLarge", E2BIG),
	CODE_ROW("NotImplemented", ENOSYS),
	CODE_ROW("MethodNotAllowed", ENOTSUP),
	CODE_ROW("BucketAlreadyOwnedByYou", EEXIST),
	CODE_ROW("BucketAlreadyExists", EEXIST),
	CODE_ROW("BucketNotEmpty", ENOTEMPTY),

	/* HTTP status, when the body names no known code */
	STATUS_ROW(301, EINVAL),
	STATUS_ROW(307, EAGAIN),
	STATUS_ROW(400, EINVAL),
	STATUS_ROW(401, EACCES),
	STATUS_ROW(403, EACCES),
	STATUS_ROW(404, ENOENT),
	STATUS_ROW(405, ENOTSUP),
	STATUS_ROW(408, ETIMEDOUT),
	STATUS_ROW(409, EBUSY),
	STATUS_ROW(411, EINVAL),
	STATUS_ROW(412, ESTALE),
	STATUS_ROW(413, EFBIG),
	STATUS_ROW(414, ENAMETOOLONG),
	STATUS_ROW(416, ERANGE),
	STATUS_ROW(429, EAGAIN),
	STATUS_ROW(500, EIO),
	STATUS_ROW(501, ENOSYS),
	STATUS_ROW(502, EIO),
	STATUS_ROW(503, EAGAIN),
	STATUS_ROW(504, EIO),
};

#define TABLE_N (sizeof(table) / sizeof(table[0]))

/* What to check, for the failures a person can fix.  config: the same
 * request fails until someone does (the CSI controller then answers a
 * code the CO does not retry blindly). */
struct hint_row {
	enum row_kind kind;
	int curl;               /* ROW_CURL */
	const char *code;       /* ROW_CODE */
	long status;            /* ROW_STATUS (replies without a code) */
	bool config;
	const char *hint;
};

#define CURL_HINT(c, cf, h) { ROW_CURL, (c), NULL, 0, (cf), (h) }
#define CODE_HINT(c, cf, h) { ROW_CODE, 0, (c), 0, (cf), (h) }
#define STATUS_HINT(s, cf, h) { ROW_STATUS, 0, NULL, (s), (cf), (h) }

static const struct hint_row hints[] = {
	CURL_HINT(CURLE_COULDNT_RESOLVE_HOST, false,
		  "unknown host: check the endpoint's host name and DNS"),
	CURL_HINT(CURLE_COULDNT_RESOLVE_PROXY, false,
		  "unknown proxy host: check the https_proxy/http_proxy variables"),
	CURL_HINT(CURLE_COULDNT_CONNECT, false,
		  "nothing accepts connections there: check the endpoint's host and port"),
	CURL_HINT(CURLE_OPERATION_TIMEDOUT, false,
		  "no answer in time: check the endpoint, proxies and firewalls"),
	CURL_HINT(CURLE_SSL_CONNECT_ERROR, true,
		  "TLS handshake failed: check that the endpoint speaks https (use http:// for a plain HTTP store)"),
	CURL_HINT(CURLE_WEIRD_SERVER_REPLY, true,
		  "the server does not speak HTTP as expected: check the endpoint's scheme (http/https) and port"),
	CURL_HINT(CURLE_UNSUPPORTED_PROTOCOL, true,
		  "check the endpoint's scheme: http:// or https://"),
	CURL_HINT(CURLE_URL_MALFORMAT, true,
		  "check the endpoint URL: http(s)://host[:port]"),
	CURL_HINT(CURLE_PEER_FAILED_VERIFICATION, true,
		  "the server's certificate is not trusted: check the CA bundle (ca_file, caBundle) and the endpoint's host name"),
	CURL_HINT(CURLE_SSL_CACERT_BADFILE, true,
		  "the CA bundle cannot be read: check the ca_file path and that it holds PEM certificates"),
	CODE_HINT("NoSuchBucket", true,
		  "check that the bucket exists and its name (bucket parameter, s3.bucket)"),
	CODE_HINT("InvalidBucketName", true,
		  "check the bucket name: 3-63 lower-case letters, digits, dots and hyphens"),
	CODE_HINT("AuthorizationHeaderMalformed", true,
		  "check the region: it must be the bucket's region"),
	CODE_HINT("PermanentRedirect", true,
		  "the bucket lives elsewhere: check the region and the endpoint"),
	CODE_HINT("IllegalLocationConstraintException", true,
		  "check the region: it must be the bucket's region"),
	CODE_HINT("InvalidAccessKeyId", true,
		  "the store does not know this access key: check the access key id"),
	CODE_HINT("SignatureDoesNotMatch", true,
		  "check the secret access key (it does not match the access key id) and the region"),
	CODE_HINT("AccessDenied", true,
		  "the keys may not do this: check the keys' policy for this bucket and prefix"),
	CODE_HINT("AllAccessDisabled", true, "access to this bucket is disabled: check the bucket"),
	CODE_HINT("AccountProblem", true, "check the store account"),
	CODE_HINT("InvalidToken", true, "check the session token"),
	CODE_HINT("ExpiredToken", true, "the session token expired: renew the credentials"),
	CODE_HINT("RequestTimeTooSkewed", true, "this machine's clock is wrong: check its time (NTP)"),
	STATUS_HINT(301, true, "the bucket lives elsewhere: check the region and the endpoint"),
	STATUS_HINT(400, true,
		    "check the region, the addressing style, and whether the endpoint wants https"),
	STATUS_HINT(401, true, "check the access keys"),
	STATUS_HINT(403, true,
		    "access denied: check the access keys, the region and the keys' policy for this bucket"),
};

#define HINTS_N (sizeof(hints) / sizeof(hints[0]))

static __thread struct objfs_store_error last_error;

static void note(int err, enum row_kind kind, int cc, long status,
		 const char *code, const char *message)
{
	struct objfs_store_error *e = &last_error;
	size_t i;

	memset(e, 0, sizeof(*e));
	e->err = err;
	e->status = status;
	snprintf(e->code, sizeof(e->code), "%s", code != NULL ? code : "");
	snprintf(e->message, sizeof(e->message), "%s", message != NULL ? message : "");
	for (i = 0; i < HINTS_N && e->hint == NULL; i++) {
		if (hints[i].kind != kind)
			continue;
		if ((kind == ROW_CURL && hints[i].curl == cc) ||
		    (kind == ROW_CODE && strcmp(hints[i].code, e->code) == 0) ||
		    (kind == ROW_STATUS && hints[i].status == status)) {
			e->hint = hints[i].hint;
			e->config = hints[i].config;
		}
	}
	/* A code without its own hint: the status may still tell. */
	if (e->hint == NULL && kind == ROW_CODE)
		for (i = 0; i < HINTS_N && e->hint == NULL; i++)
			if (hints[i].kind == ROW_STATUS && hints[i].status == status &&
			    status != 400) {
				e->hint = hints[i].hint;
				e->config = hints[i].config;
			}
}

void objfs_store_error_note(int err, long status, const char *code,
			    const char *message)
{
	note(err, status == 0 ? ROW_CURL : code != NULL && code[0] != '\0' ?
	     ROW_CODE : ROW_STATUS, -1, status, code, message);
}

bool objfs_store_error_get(int err, struct objfs_store_error *out)
{
	if (err == 0 || last_error.err != err) {
		memset(out, 0, sizeof(*out));
		return false;
	}
	*out = last_error;
	return true;
}

const char *objfs_store_error_text(int err, char *buf, size_t len)
{
	struct objfs_store_error e;
	char what[400];

	if (!objfs_store_error_get(err, &e)) {
		snprintf(buf, len, "%s", objfs_strerror(err));
		return buf;
	}
	if (e.status == 0)
		snprintf(what, sizeof(what), "cannot reach the store: %s", e.message);
	else if (e.code[0] != '\0')
		snprintf(what, sizeof(what), "S3 %s (HTTP %ld)%s%s", e.code, e.status,
			 e.message[0] != '\0' ? ": " : "", e.message);
	else
		snprintf(what, sizeof(what), "HTTP %ld from the store (%s)", e.status,
			 objfs_strerror(err));
	snprintf(buf, len, "%s%s%s", what, e.hint != NULL ? "; " : "",
		 e.hint != NULL ? e.hint : "");
	return buf;
}

int objfs_s3_errno_curl(CURLcode cc)
{
	size_t i;
	int err = EIO;

	if (cc == CURLE_OK)
		return 0;
	for (i = 0; i < TABLE_N; i++)
		if (table[i].kind == ROW_CURL && table[i].curl == (int)cc) {
			err = table[i].err;
			break;
		}
	note(err, ROW_CURL, (int)cc, 0, NULL, curl_easy_strerror(cc));
	return err;
}

static int errno_http(long status, const char *code)
{
	size_t i;

	if (status >= 200 && status < 300)
		return 0;
	if (code != NULL && code[0] != '\0')
		for (i = 0; i < TABLE_N; i++)
			if (table[i].kind == ROW_CODE &&
			    strcmp(table[i].code, code) == 0)
				return table[i].err;
	for (i = 0; i < TABLE_N; i++)
		if (table[i].kind == ROW_STATUS && table[i].status == status)
			return table[i].err;
	if (status >= 400 && status < 500)
		return EINVAL;
	/* 5xx, 1xx, 3xx and nonsense: the server misbehaved. */
	return status >= 500 && status < 600 ? EIO : EPROTO;
}

int objfs_s3_errno_reply(long status, const char *code, const char *message)
{
	int err = errno_http(status, code);

	if (err != 0)
		note(err, code != NULL && code[0] != '\0' ? ROW_CODE : ROW_STATUS,
		     -1, status, code, message);
	return err;
}

int objfs_s3_errno_http(long status, const char *code)
{
	return objfs_s3_errno_reply(status, code, NULL);
}

int objfs_s3_errno(CURLcode cc, long status, const char *code)
{
	if (cc != CURLE_OK)
		return objfs_s3_errno_curl(cc);
	return objfs_s3_errno_http(status, code);
}
