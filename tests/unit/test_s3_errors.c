/* Unit tests of the one HTTP/S3/curl -> errno table (s3_errors.c). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "backend/s3_errors.h"
#include "backend/store_error.h"

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

/* err is want, and the thread's account of it holds text. */
static void expect_text(int err, int want, const char *text, char *buf, size_t len)
{
	assert_int_equal(err, want);
	objfs_store_error_text(err, buf, len);
	assert_non_null(strstr(buf, text));
}

/* Every mapped failure is recorded for the thread with what to check, so
 * people see the store's cause, not "No such file or directory". */
static void test_detail(void **state)
{
	struct objfs_store_error e;
	char buf[512];

	(void)state;
	assert_int_equal(objfs_s3_errno_reply(404, "NoSuchBucket",
					      "The specified bucket does not exist"), ENOENT);
	assert_true(objfs_store_error_get(ENOENT, &e));
	assert_true(e.config);
	assert_int_equal(e.status, 404);
	assert_string_equal(e.code, "NoSuchBucket");
	objfs_store_error_text(ENOENT, buf, sizeof(buf));
	assert_non_null(strstr(buf, "S3 NoSuchBucket (HTTP 404): The specified bucket does not exist; "));
	assert_non_null(strstr(buf, "check that the bucket exists"));
	/* Only for the errno it was recorded with. */
	assert_false(objfs_store_error_get(EACCES, &e));
	assert_string_equal(objfs_store_error_text(ENOMEM, buf, sizeof(buf)),
			    "Cannot allocate memory");

	/* A wrong region, a wrong secret key, an unknown key id; a HEAD has
	 * no body: the status alone still says what to check. */
	expect_text(objfs_s3_errno_reply(400, "AuthorizationHeaderMalformed", NULL), EINVAL,
		    "check the region", buf, sizeof(buf));
	expect_text(objfs_s3_errno_reply(403, "SignatureDoesNotMatch", ""), EACCES,
		    "check the secret access key", buf, sizeof(buf));
	expect_text(objfs_s3_errno_http(403, "InvalidAccessKeyId"), EACCES,
		    "check the access key id", buf, sizeof(buf));
	expect_text(objfs_s3_errno_http(403, NULL), EACCES, "HTTP 403", buf, sizeof(buf));
	assert_true(objfs_store_error_get(EACCES, &e));
	assert_true(e.config);

	/* Transport: unknown host, https to an http server, untrusted CA. */
	expect_text(objfs_s3_errno_curl(CURLE_COULDNT_RESOLVE_HOST), EHOSTUNREACH,
		    "cannot reach the store: ", buf, sizeof(buf));
	assert_non_null(strstr(buf, "check the endpoint's host name"));
	assert_false(objfs_store_error_get(EHOSTUNREACH, &e) && e.config);
	expect_text(objfs_s3_errno_curl(CURLE_SSL_CONNECT_ERROR), EPROTO, "speaks https",
		    buf, sizeof(buf));
	expect_text(objfs_s3_errno_curl(CURLE_PEER_FAILED_VERIFICATION), EACCES, "CA bundle",
		    buf, sizeof(buf));
	/* One line, always. */
	assert_null(strchr(buf, '\n'));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_success),
		cmocka_unit_test(test_codes),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_curl),
		cmocka_unit_test(test_detail),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
