/* Unit tests of the one HTTP/S3/curl -> errno table (s3_errors.c). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "backend/s3_errors.h"

static void test_success(void **state)
{
	(void)state;
	assert_int_equal(objfs_s3_errno(CURLE_OK, 200, NULL), 0);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 204, ""), 0);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 206, NULL), 0);
	assert_int_equal(objfs_s3_errno_curl(CURLE_OK), 0);
}

static void test_codes(void **state)
{
	(void)state;
	assert_int_equal(objfs_s3_errno(CURLE_OK, 404, "NoSuchKey"), ENOENT);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 404, "NoSuchBucket"), ENOENT);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 404, "NoSuchUpload"), ENOENT);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 403, "AccessDenied"), EACCES);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 403, "SignatureDoesNotMatch"),
			 EACCES);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 403, "InvalidAccessKeyId"),
			 EACCES);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 412, "PreconditionFailed"),
			 ESTALE);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 416, "InvalidRange"), ERANGE);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 503, "SlowDown"), EAGAIN);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 400, "EntityTooSmall"),
			 EINVAL);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 400, "InvalidPart"), EINVAL);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 500, "InternalError"), EIO);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 400, "RequestTimeout"),
			 ETIMEDOUT);
	/* The code wins over the status: a 200 with an Error body is
	 * mapped by the caller with the code. */
	assert_int_equal(objfs_s3_errno_http(500, "SlowDown"), EAGAIN);
	/* Unknown codes fall back to the status. */
	assert_int_equal(objfs_s3_errno(CURLE_OK, 404, "Whatever"), ENOENT);
}

static void test_status(void **state)
{
	(void)state;
	assert_int_equal(objfs_s3_errno(CURLE_OK, 404, NULL), ENOENT);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 403, ""), EACCES);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 401, NULL), EACCES);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 412, NULL), ESTALE);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 416, NULL), ERANGE);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 429, NULL), EAGAIN);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 503, NULL), EAGAIN);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 500, NULL), EIO);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 502, NULL), EIO);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 504, NULL), EIO);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 599, NULL), EIO);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 418, NULL), EINVAL);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 0, NULL), EPROTO);
	assert_int_equal(objfs_s3_errno(CURLE_OK, 100, NULL), EPROTO);
}

static void test_curl(void **state)
{
	(void)state;
	assert_int_equal(objfs_s3_errno(CURLE_OPERATION_TIMEDOUT, 0, NULL),
			 ETIMEDOUT);
	assert_int_equal(objfs_s3_errno(CURLE_COULDNT_CONNECT, 0, NULL),
			 ECONNREFUSED);
	assert_int_equal(objfs_s3_errno(CURLE_COULDNT_RESOLVE_HOST, 0, NULL),
			 EHOSTUNREACH);
	assert_int_equal(objfs_s3_errno(CURLE_PEER_FAILED_VERIFICATION, 0,
					NULL), EACCES);
	assert_int_equal(objfs_s3_errno(CURLE_SSL_CONNECT_ERROR, 0, NULL),
			 EPROTO);
	assert_int_equal(objfs_s3_errno(CURLE_SEND_ERROR, 0, NULL), ECONNRESET);
	assert_int_equal(objfs_s3_errno(CURLE_RECV_ERROR, 0, NULL), ECONNRESET);
	assert_int_equal(objfs_s3_errno(CURLE_GOT_NOTHING, 0, NULL),
			 ECONNRESET);
	assert_int_equal(objfs_s3_errno(CURLE_OUT_OF_MEMORY, 0, NULL), ENOMEM);
	/* A transport failure wins over whatever status was seen. */
	assert_int_equal(objfs_s3_errno(CURLE_PARTIAL_FILE, 200, NULL),
			 ECONNRESET);
	/* Unknown codes are EIO. */
	assert_int_equal(objfs_s3_errno_curl((CURLcode)9999), EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_success),
		cmocka_unit_test(test_codes),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_curl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
