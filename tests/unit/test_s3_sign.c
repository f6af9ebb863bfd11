/*
 * Unit tests of the SigV4 signer against AWS's published Signature Version 4
 * test suite (service "service", 20150830T123600Z) and the S3 examples of the
 * S3 SigV4 documentation (examplebucket, 20130524T000000Z), plus the key
 * characters objfs must round-trip.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backend/s3_sign.h"

#define SUITE_DATE "20150830T123600Z"
#define S3_DATE "20130524T000000Z"
#define H(n, v) { (n), (v) }

static const struct objfs_sigv4_key suite_key = {
	"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1",
	"service",
};
static const struct objfs_sigv4_key s3_key = {
	"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"us-east-1", "s3",
};

static const char *sig_of(const char *auth)
{
	const char *p = strstr(auth, "Signature=");

	assert_non_null(p);
	return p + strlen("Signature=");
}

/* Signs and compares the signature (and the signed headers when given). */
static void check(const char *method, const char *path,
		  const struct objfs_sigv4_param *params, size_t np,
		  const struct objfs_sigv4_header *hdrs, size_t nh,
		  const char *payload, const struct objfs_sigv4_key *key,
		  const char *date, const char *want_sig,
		  const char *want_signed_headers)
{
	struct objfs_sigv4_request req = {
		method, path, params, np, hdrs, nh, payload,
	};
	char auth[OBJFS_SIGV4_AUTH_MAX];

	assert_int_equal(objfs_sigv4_authorization(&req, key, date, auth,
						   sizeof(auth)), 0);
	assert_string_equal(sig_of(auth), want_sig);
	if (want_signed_headers != NULL) {
		char want[512];

		snprintf(want, sizeof(want), "SignedHeaders=%s, ",
			 want_signed_headers);
		assert_non_null(strstr(auth, want));
	}
}

static void check_creq(const char *method, const char *path,
		       const struct objfs_sigv4_param *params, size_t np,
		       const struct objfs_sigv4_header *hdrs, size_t nh,
		       const char *payload, const char *want)
{
	struct objfs_sigv4_request req = {
		method, path, params, np, hdrs, nh, payload,
	};
	char creq[4096], sh[512];

	assert_int_equal(objfs_sigv4_canonical_request(&req, creq,
						       sizeof(creq), sh,
						       sizeof(sh)), 0);
	assert_string_equal(creq, want);
}

static const struct objfs_sigv4_header vanilla_h[] = {
	H("Host", "example.amazonaws.com"), H("X-Amz-Date", SUITE_DATE),
};

static void test_get_vanilla(void **state)
{
	(void)state;
	check_creq("GET", "/", NULL, 0, vanilla_h, 2, OBJFS_SIGV4_EMPTY_SHA256,
		   "GET\n/\n\nhost:example.amazonaws.com\n"
		   "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
		   OBJFS_SIGV4_EMPTY_SHA256);
	check("GET", "/", NULL, 0, vanilla_h, 2, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
	      "host;x-amz-date");
}

static void test_get_vanilla_string_to_sign(void **state)
{
	struct objfs_sigv4_request req = {
		"GET", "/", NULL, 0, vanilla_h, 2, OBJFS_SIGV4_EMPTY_SHA256,
	};
	char creq[1024], sh[128], sts[512];

	(void)state;
	assert_int_equal(objfs_sigv4_canonical_request(&req, creq,
						       sizeof(creq), sh,
						       sizeof(sh)), 0);
	assert_int_equal(objfs_sigv4_string_to_sign(
		SUITE_DATE, "20150830/us-east-1/service/aws4_request", creq,
		sts, sizeof(sts)), 0);
	assert_string_equal(sts,
		"AWS4-HMAC-SHA256\n20150830T123600Z\n"
		"20150830/us-east-1/service/aws4_request\n"
		"bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
}

static void test_query_order(void **state)
{
	static const struct objfs_sigv4_param key_case[] = {
		{ "Param2", "value2" }, { "Param1", "value1" },
	};
	static const struct objfs_sigv4_param key_order[] = {
		{ "Param1", "value2" }, { "Param1", "Value1" },
	};
	static const struct objfs_sigv4_param value_order[] = {
		{ "Param1", "value2" }, { "Param1", "value1" },
	};
	static const struct objfs_sigv4_param one[] = {
		{ "Param1", "value1" },
	};

	(void)state;
	check("GET", "/", key_case, 2, vanilla_h, 2, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
	      NULL);
	check("GET", "/", key_order, 2, vanilla_h, 2,
	      OBJFS_SIGV4_EMPTY_SHA256, &suite_key, SUITE_DATE,
	      "eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1",
	      NULL);
	check("GET", "/", value_order, 2, vanilla_h, 2,
	      OBJFS_SIGV4_EMPTY_SHA256, &suite_key, SUITE_DATE,
	      "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694",
	      NULL);
	check("GET", "/", one, 1, vanilla_h, 2, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb",
	      NULL);
	check("POST", "/", one, 1, vanilla_h, 2, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11",
	      NULL);
}

static void test_unreserved_and_utf8(void **state)
{
	static const char unres[] = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "abcdefghijklmnopqrstuvwxyz";
	const struct objfs_sigv4_param q_unres[] = { { unres, unres } };
	static const struct objfs_sigv4_param q_utf8[] = {
		{ "\xe1\x88\xb4", "bar" },
	};
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "/%s", unres);
	check("GET", path, NULL, 0, vanilla_h, 2, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f",
	      NULL);
	check("GET", "/", q_unres, 1, vanilla_h, 2, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197",
	      NULL);
	check_creq("GET", "/", q_utf8, 1, vanilla_h, 2,
		   OBJFS_SIGV4_EMPTY_SHA256,
		   "GET\n/\n%E1%88%B4=bar\nhost:example.amazonaws.com\n"
		   "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
		   OBJFS_SIGV4_EMPTY_SHA256);
	check("GET", "/", q_utf8, 1, vanilla_h, 2, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04",
	      NULL);
}

static void test_get_space(void **state)
{
	(void)state;
	check_creq("GET", "/example space/", NULL, 0, vanilla_h, 2,
		   OBJFS_SIGV4_EMPTY_SHA256,
		   "GET\n/example%20space/\n\nhost:example.amazonaws.com\n"
		   "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
		   OBJFS_SIGV4_EMPTY_SHA256);
	check("GET", "/example space/", NULL, 0, vanilla_h, 2,
	      OBJFS_SIGV4_EMPTY_SHA256, &suite_key, SUITE_DATE,
	      "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
	      NULL);
}

static void test_headers(void **state)
{
	static const struct objfs_sigv4_header trim[] = {
		H("Host", "example.amazonaws.com"), H("My-Header1", " value1"),
		H("My-Header2", " \"a   b   c\""), H("X-Amz-Date", SUITE_DATE),
	};
	static const struct objfs_sigv4_header dup[] = {
		H("Host", "example.amazonaws.com"), H("My-Header1", "value2"),
		H("My-Header1", "value2"), H("My-Header1", "value1"),
		H("X-Amz-Date", SUITE_DATE),
	};
	static const struct objfs_sigv4_header order[] = {
		H("Host", "example.amazonaws.com"), H("My-Header1", "value4"),
		H("My-Header1", "value1"), H("My-Header1", "value3"),
		H("My-Header1", "value2"), H("X-Amz-Date", SUITE_DATE),
	};
	/* Given out of order and in mixed case. */
	static const struct objfs_sigv4_header vcase[] = {
		H("X-AMZ-DATE", SUITE_DATE), H("my-header1", "VALUE1"),
		H("HOST", "example.amazonaws.com"),
	};
	static const struct objfs_sigv4_header sort[] = {
		H("Host", "example.amazonaws.com"), H("My-Header1", "value1"),
		H("X-Amz-Date", SUITE_DATE),
	};

	(void)state;
	check_creq("GET", "/", NULL, 0, trim, 4, OBJFS_SIGV4_EMPTY_SHA256,
		   "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\n"
		   "my-header2:\"a b c\"\nx-amz-date:20150830T123600Z\n\n"
		   "host;my-header1;my-header2;x-amz-date\n"
		   OBJFS_SIGV4_EMPTY_SHA256);
	check("GET", "/", NULL, 0, trim, 4, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
	      "host;my-header1;my-header2;x-amz-date");
	check("GET", "/", NULL, 0, dup, 5, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea",
	      "host;my-header1;x-amz-date");
	check("GET", "/", NULL, 0, order, 6, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01",
	      NULL);
	check("POST", "/", NULL, 0, vcase, 3, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d",
	      "host;my-header1;x-amz-date");
	check("POST", "/", NULL, 0, sort, 3, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c",
	      NULL);
	check("POST", "/", NULL, 0, vanilla_h, 2, OBJFS_SIGV4_EMPTY_SHA256,
	      &suite_key, SUITE_DATE,
	      "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
	      NULL);
}

static void test_post_form(void **state)
{
	static const struct objfs_sigv4_header h[] = {
		H("Content-Type", "application/x-www-form-urlencoded"),
		H("Host", "example.amazonaws.com"), H("X-Amz-Date", SUITE_DATE),
	};
	char hash[65];

	(void)state;
	assert_int_equal(objfs_sha256_hex("Param1=value1", 13, hash), 0);
	assert_string_equal(hash, "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e");
	check("POST", "/", NULL, 0, h, 3, hash, &suite_key, SUITE_DATE,
	      "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
	      "content-type;host;x-amz-date");
}

static void test_security_token(void **state)
{
	static const struct objfs_sigv4_header h[] = {
		H("Host", "example.amazonaws.com"), H("X-Amz-Date", SUITE_DATE),
		H("X-Amz-Security-Token",
		  "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4"
		  "FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/"
		  "qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDY"
		  "wT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38x"
		  "Vqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvK"
		  "Tr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="),
	};

	(void)state;
	check("POST", "/", NULL, 0, h, 3, OBJFS_SIGV4_EMPTY_SHA256, &suite_key,
	      SUITE_DATE,
	      "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead",
	      "host;x-amz-date;x-amz-security-token");
}

/* ---- the S3 documentation examples ------------------------------------ */

static void test_s3_get_object_range(void **state)
{
	static const struct objfs_sigv4_header h[] = {
		H("Host", "examplebucket.s3.amazonaws.com"),
		H("Range", "bytes=0-9"),
		H("x-amz-content-sha256", OBJFS_SIGV4_EMPTY_SHA256),
		H("x-amz-date", S3_DATE),
	};
	struct objfs_sigv4_request req = {
		"GET", "/test.txt", NULL, 0, h, 4, OBJFS_SIGV4_EMPTY_SHA256,
	};
	char creq[1024], sh[256], sts[512], auth[OBJFS_SIGV4_AUTH_MAX];

	(void)state;
	assert_int_equal(objfs_sigv4_canonical_request(&req, creq,
						       sizeof(creq), sh,
						       sizeof(sh)), 0);
	assert_int_equal(objfs_sigv4_string_to_sign(
		S3_DATE, "20130524/us-east-1/s3/aws4_request", creq, sts,
		sizeof(sts)), 0);
	assert_string_equal(sts, "AWS4-HMAC-SHA256\n20130524T000000Z\n"
		"20130524/us-east-1/s3/aws4_request\n"
		"7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
	assert_int_equal(objfs_sigv4_authorization(&req, &s3_key, S3_DATE,
						   auth, sizeof(auth)), 0);
	assert_string_equal(auth,
		"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/"
		"us-east-1/s3/aws4_request, SignedHeaders=host;range;"
		"x-amz-content-sha256;x-amz-date, Signature="
		"f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void test_s3_put_object(void **state)
{
	static const char body[] = "Welcome to Amazon S3.";
	char hash[65];

	(void)state;
	assert_int_equal(objfs_sha256_hex(body, strlen(body), hash), 0);
	assert_string_equal(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
	{
		const struct objfs_sigv4_header h[] = {
			H("Host", "examplebucket.s3.amazonaws.com"),
			H("Date", "Fri, 24 May 2013 00:00:00 GMT"),
			H("x-amz-content-sha256", hash),
			H("x-amz-date", S3_DATE),
			H("x-amz-storage-class", "REDUCED_REDUNDANCY"),
		};

		check("PUT", "/test$file.text", NULL, 0, h, 5, hash, &s3_key,
		      S3_DATE,
		      "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
		      "date;host;x-amz-content-sha256;x-amz-date;"
		      "x-amz-storage-class");
	}
}

static void test_s3_bucket_requests(void **state)
{
	static const struct objfs_sigv4_header h[] = {
		H("Host", "examplebucket.s3.amazonaws.com"),
		H("x-amz-content-sha256", OBJFS_SIGV4_EMPTY_SHA256),
		H("x-amz-date", S3_DATE),
	};
	static const struct objfs_sigv4_param lifecycle[] = {
		{ "lifecycle", NULL },
	};
	static const struct objfs_sigv4_param list[] = {
		{ "prefix", "J" }, { "max-keys", "2" },
	};
	char q[64];

	(void)state;
	check("GET", "/", lifecycle, 1, h, 3, OBJFS_SIGV4_EMPTY_SHA256,
	      &s3_key, S3_DATE,
	      "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
	      NULL);
	check("GET", "/", list, 2, h, 3, OBJFS_SIGV4_EMPTY_SHA256, &s3_key,
	      S3_DATE,
	      "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
	      NULL);
	assert_int_equal(objfs_sigv4_canonical_query(list, 2, q, sizeof(q)),
			 0);
	assert_string_equal(q, "max-keys=2&prefix=J");
	assert_int_equal(objfs_sigv4_canonical_query(lifecycle, 1, q,
						     sizeof(q)), 0);
	assert_string_equal(q, "lifecycle=");
}

/* ---- keys objfs must round-trip --------------------------------------- */

static void test_uri_encode_keys(void **state)
{
	static const char key[] = "dir/a b+c%d~e=f&g?h#\xc3\xbc.txt";
	static const struct objfs_sigv4_param q[] = {
		{ "prefix", "dir/a b+" }, { "delimiter", "/" },
		{ "list-type", "2" },
	};
	char out[256];

	(void)state;
	assert_int_equal(objfs_sigv4_uri_encode(key, strlen(key), true, out,
						sizeof(out)), 0);
	assert_string_equal(out,
		"dir/a%20b%2Bc%25d~e%3Df%26g%3Fh%23%C3%BC.txt");
	assert_int_equal(objfs_sigv4_uri_encode(key, strlen(key), false, out,
						sizeof(out)), 0);
	assert_string_equal(out,
		"dir%2Fa%20b%2Bc%25d~e%3Df%26g%3Fh%23%C3%BC.txt");
	assert_int_equal(objfs_sigv4_canonical_query(q, 3, out, sizeof(out)),
			 0);
	assert_string_equal(out,
		"delimiter=%2F&list-type=2&prefix=dir%2Fa%20b%2B");
	/* The signature of such a key is stable and depends on the key. */
	{
		static const struct objfs_sigv4_header h[] = {
			H("Host", "127.0.0.1:8080"),
			H("x-amz-content-sha256", OBJFS_SIGV4_UNSIGNED),
			H("x-amz-date", S3_DATE),
		};
		struct objfs_sigv4_request r1 = {
			"GET", "/b/a b", NULL, 0, h, 3, OBJFS_SIGV4_UNSIGNED,
		};
		struct objfs_sigv4_request r2 = r1;
		char a1[OBJFS_SIGV4_AUTH_MAX], a2[OBJFS_SIGV4_AUTH_MAX];
		char creq[1024], sh[128];

		r2.path = "/b/a+b";
		assert_int_equal(objfs_sigv4_authorization(&r1, &s3_key,
							   S3_DATE, a1,
							   sizeof(a1)), 0);
		assert_int_equal(objfs_sigv4_authorization(&r2, &s3_key,
							   S3_DATE, a2,
							   sizeof(a2)), 0);
		assert_string_not_equal(sig_of(a1), sig_of(a2));
		assert_int_equal(objfs_sigv4_canonical_request(
			&r2, creq, sizeof(creq), sh, sizeof(sh)), 0);
		assert_non_null(strstr(creq, "\n/b/a%2Bb\n"));
		assert_non_null(strstr(creq, "\nUNSIGNED-PAYLOAD"));
	}
}

static void test_bounds(void **state)
{
	static const struct objfs_sigv4_header h[] = {
		H("Host", "example.amazonaws.com"), H("X-Amz-Date", SUITE_DATE),
	};
	struct objfs_sigv4_request req = {
		"GET", "/", NULL, 0, h, 2, OBJFS_SIGV4_EMPTY_SHA256,
	};
	char small[8], creq[1024], sh[4];
	char date[17];

	(void)state;
	assert_int_equal(objfs_sigv4_uri_encode("a b c", 5, true, small, 8),
			 E2BIG);
	assert_int_equal(objfs_sigv4_uri_encode("abc", 3, true, small, 8), 0);
	assert_int_equal(objfs_sigv4_canonical_request(&req, creq, 10, sh, 4),
			 E2BIG);
	assert_int_equal(objfs_sigv4_canonical_request(&req, creq,
						       sizeof(creq), sh, 4),
			 E2BIG);
	assert_int_equal(objfs_sigv4_authorization(&req, &suite_key,
						   SUITE_DATE, small,
						   sizeof(small)), E2BIG);
	req.path = "relative";
	assert_int_equal(objfs_sigv4_authorization(&req, &suite_key,
						   SUITE_DATE, creq,
						   sizeof(creq)), EINVAL);
	objfs_sigv4_amz_date(1440938160, date);
	assert_string_equal(date, SUITE_DATE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_vanilla),
		cmocka_unit_test(test_get_vanilla_string_to_sign),
		cmocka_unit_test(test_query_order),
		cmocka_unit_test(test_unreserved_and_utf8),
		cmocka_unit_test(test_get_space),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_post_form),
		cmocka_unit_test(test_security_token),
		cmocka_unit_test(test_s3_get_object_range),
		cmocka_unit_test(test_s3_put_object),
		cmocka_unit_test(test_s3_bucket_requests),
		cmocka_unit_test(test_uri_encode_keys),
		cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
