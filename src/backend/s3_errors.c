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
#include <string.h>

#include "backend/s3_errors.h"

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

int objfs_s3_errno_curl(CURLcode cc)
{
	size_t i;

	if (cc == CURLE_OK)
		return 0;
	for (i = 0; i < TABLE_N; i++)
		if (table[i].kind == ROW_CURL && table[i].curl == (int)cc)
			return table[i].err;
	return EIO;
}

int objfs_s3_errno_http(long status, const char *code)
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

int objfs_s3_errno(CURLcode cc, long status, const char *code)
{
	if (cc != CURLE_OK)
		return objfs_s3_errno_curl(cc);
	return objfs_s3_errno_http(status, code);
}
