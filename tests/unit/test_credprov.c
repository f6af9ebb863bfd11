/*
 * Tests of the credential provider (backend/credprov.h) without a server:
 * the STS and container answers it reads, the URIs it accepts, the
 * sources it picks, and renewal before expiry against a container
 * endpoint played by a tiny HTTP server on 127.0.0.1 (one answer per
 * connection, each with keys that expire in 3 s).  The exchange with a
 * real STS (Ceph RGW's) and real expiry: tests/integration/keyless.py.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/credprov.h"
#include "common/creds.h"

static void test_parse_sts(void **state)
{
	static const char ok[] =
		"<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult>"
		"<Credentials><AccessKeyId>AKID</AccessKeyId>"
		"<Expiration>2030-01-02T03:04:05.123456789Z</Expiration>"
		"<SecretAccessKey>SECRET</SecretAccessKey>"
		"<SessionToken>TOK/EN+=</SessionToken></Credentials>"
		"</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
	static const char err[] =
		"<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
		"<Message>Couldn't retrieve verification key</Message></Error></ErrorResponse>";
	struct objfs_creds c = OBJFS_CREDS_INIT;
	long long exp = 0;
	char why[200];

	(void)state;
	assert_int_equal(objfs_credprov_parse_sts(ok, strlen(ok), &c, &exp, why, sizeof(why)), 0);
	assert_string_equal(c.access_key, "AKID");
	assert_string_equal(c.secret_key, "SECRET");
	assert_string_equal(c.session_token, "TOK/EN+=");
	assert_int_equal(exp, 1893553445LL);
	objfs_creds_release(&c);
	assert_int_equal(objfs_credprov_parse_sts(err, strlen(err), &c, &exp, why, sizeof(why)),
			 EACCES);
	assert_string_equal(why, "InvalidIdentityToken: Couldn't retrieve verification key");
	assert_null(c.access_key);
	assert_int_equal(objfs_credprov_parse_sts("<a>", 3, &c, &exp, why, sizeof(why)), EPROTO);
	assert_int_equal(objfs_credprov_parse_sts("<Credentials><AccessKeyId>A</AccessKeyId>"
						  "</Credentials>", 50, &c, &exp, why,
						  sizeof(why)), EPROTO);
	assert_null(c.access_key);
}

static void test_parse_json(void **state)
{
	static const char ok[] =
		"{\"AccessKeyId\" : \"AK\\/ID\", \"SecretAccessKey\":\"S\\\"K\","
		" \"Token\":\"T\", \"Expiration\":\"2030-01-02T03:04:05Z\"}";
	static const char notoken[] =
		"{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\",\"Token\":\"\","
		"\"Expiration\":\"2030-01-02T03:04:05Z\"}";
	struct objfs_creds c = OBJFS_CREDS_INIT;
	long long exp = 0;

	(void)state;
	assert_int_equal(objfs_credprov_parse_json(ok, strlen(ok), &c, &exp), 0);
	assert_string_equal(c.access_key, "AK/ID");
	assert_string_equal(c.secret_key, "S\"K");
	assert_string_equal(c.session_token, "T");
	assert_int_equal(exp, 1893553445LL);
	objfs_creds_release(&c);
	assert_int_equal(objfs_credprov_parse_json(notoken, strlen(notoken), &c, &exp), 0);
	assert_null(c.session_token);
	objfs_creds_release(&c);
	assert_int_equal(objfs_credprov_parse_json("{\"AccessKeyId\":\"A\"}", 18, &c, &exp),
			 EPROTO);
	/* json-c: \u escapes are read; only top-level members count; an
	 * instance metadata error "Code" is EACCES; trailing text, a NUL
	 * and a non-string value are refused */
	{
		static const char esc[] =
			"{\"AccessKeyId\":\"A\\u0042\\u00e9\",\"SecretAccessKey\":\"S\","
			"\"Expiration\":\"2030-01-02T03:04:05Z\"}";
		static const char nested[] =
			"{\"Outer\":{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
			"\"Expiration\":\"2030-01-02T03:04:05Z\"}}";
		static const char shadow[] =
			"{\"X\":{\"AccessKeyId\":\"EVIL\"},\"AccessKeyId\":\"A\","
			"\"SecretAccessKey\":\"S\",\"Expiration\":\"2030-01-02T03:04:05Z\"}";
		static const char imds[] =
			"{\"Code\":\"Success\",\"LastUpdated\":\"2030-01-01T00:00:00Z\","
			"\"Type\":\"AWS-HMAC\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
			"\"Token\":\"T\",\"Expiration\":\"2030-01-02T03:04:05Z\"}\n";
		static const char failed[] =
			"{\"Code\":\"AssumeRoleUnauthorizedAccess\",\"AccessKeyId\":\"A\","
			"\"SecretAccessKey\":\"S\",\"Expiration\":\"2030-01-02T03:04:05Z\"}";
		static const char trailing[] =
			"{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
			"\"Expiration\":\"2030-01-02T03:04:05Z\"} x";
		static const char nul[] =
			"{\"AccessKeyId\":\"A\\u0000B\",\"SecretAccessKey\":\"S\","
			"\"Expiration\":\"2030-01-02T03:04:05Z\"}";
		static const char num[] =
			"{\"AccessKeyId\":1,\"SecretAccessKey\":\"S\","
			"\"Expiration\":\"2030-01-02T03:04:05Z\"}";

		assert_int_equal(objfs_credprov_parse_json(esc, strlen(esc), &c, &exp), 0);
		assert_string_equal(c.access_key, "AB\xc3\xa9");
		objfs_creds_release(&c);
		assert_int_equal(objfs_credprov_parse_json(nested, strlen(nested), &c, &exp),
				 EPROTO);
		assert_null(c.access_key);
		assert_int_equal(objfs_credprov_parse_json(shadow, strlen(shadow), &c, &exp), 0);
		assert_string_equal(c.access_key, "A");
		objfs_creds_release(&c);
		assert_int_equal(objfs_credprov_parse_json(imds, strlen(imds), &c, &exp), 0);
		assert_string_equal(c.session_token, "T");
		objfs_creds_release(&c);
		assert_int_equal(objfs_credprov_parse_json(failed, strlen(failed), &c, &exp),
				 EACCES);
		assert_null(c.access_key);
		assert_int_equal(objfs_credprov_parse_json(trailing, strlen(trailing), &c, &exp),
				 EPROTO);
		assert_int_equal(objfs_credprov_parse_json(nul, strlen(nul), &c, &exp), EPROTO);
		assert_int_equal(objfs_credprov_parse_json(num, strlen(num), &c, &exp), EPROTO);
		assert_int_equal(objfs_credprov_parse_json("[]", 2, &c, &exp), EPROTO);
		assert_null(c.access_key);
	}
	assert_int_equal(objfs_credprov_parse_json("{\"AccessKeyId\":\"A", 17, &c, &exp),
			 EPROTO);
	assert_null(c.access_key);
}

static void test_uri_allowed(void **state)
{
	(void)state;
	assert_true(objfs_credprov_uri_allowed("https://example.com/creds"));
	assert_true(objfs_credprov_uri_allowed("http://169.254.170.23/v1/credentials"));
	assert_true(objfs_credprov_uri_allowed("http://127.0.0.1:8080/creds"));
	assert_true(objfs_credprov_uri_allowed("http://127.1.2.3/creds"));
	assert_true(objfs_credprov_uri_allowed("http://[fd00:ec2::23]/v1"));
	assert_true(objfs_credprov_uri_allowed("http://localhost:9/x"));
	assert_false(objfs_credprov_uri_allowed("http://example.com/creds"));
	assert_false(objfs_credprov_uri_allowed("http://127.0.0.1.evil.com/creds"));
	assert_false(objfs_credprov_uri_allowed("http://user@127.0.0.1/creds"));
	assert_false(objfs_credprov_uri_allowed("file:///etc/passwd"));
	assert_false(objfs_credprov_uri_allowed("https://"));
}

static void test_sources(void **state)
{
	struct objfs_creds c = OBJFS_CREDS_INIT, out = OBJFS_CREDS_INIT;
	struct objfs_credprov_config cfg = { &c, NULL, NULL, false, 0, NULL };
	struct objfs_credprov *p = NULL;

	(void)state;
	/* static keys win, and are handed out as they are */
	assert_int_equal(objfs_creds_set(&c, "access_key_id", "A"), 0);
	assert_int_equal(objfs_creds_set(&c, "secret_access_key", "S"), 0);
	assert_int_equal(objfs_creds_set(&c, "role_arn", "arn:aws:iam::1:role/r"), 0);
	assert_int_equal(objfs_credprov_create(&cfg, NULL, &p), 0);
	assert_string_equal(objfs_credprov_kind(p), "static keys");
	assert_int_equal(objfs_credprov_get(p, &out), 0);
	assert_string_equal(out.access_key, "A");
	objfs_creds_release(&out);
	objfs_credprov_destroy(p);
	objfs_creds_release(&c);
	/* a role without its token file, a container URI not allowed */
	assert_int_equal(objfs_creds_set(&c, "role_arn", "arn:aws:iam::1:role/r"), 0);
	assert_int_equal(objfs_credprov_create(&cfg, NULL, &p), EINVAL);
	objfs_creds_release(&c);
	assert_int_equal(objfs_creds_set(&c, "container_credentials_full_uri",
					 "http://example.com/"), 0);
	assert_int_equal(objfs_credprov_create(&cfg, NULL, &p), EINVAL);
	objfs_creds_release(&c);
	/* a token file that cannot be read: no keys (EACCES), never a crash */
	assert_int_equal(objfs_creds_set(&c, "role_arn", "arn:aws:iam::1:role/r"), 0);
	assert_int_equal(objfs_creds_set(&c, "web_identity_token_file", "/nonexistent/t"), 0);
	assert_int_equal(objfs_creds_set(&c, "sts_endpoint", "http://127.0.0.1:9"), 0);
	assert_int_equal(objfs_credprov_create(&cfg, NULL, &p), 0);
	assert_string_equal(objfs_credprov_kind(p), "web identity");
	assert_int_equal(objfs_credprov_get(p, &out), EACCES);
	assert_null(out.access_key);
	objfs_credprov_destroy(p);
	objfs_creds_release(&c);
	/* instance metadata: the last source; nothing answering (a closed
	 * port on 127.0.0.1) is no keys, at once */
	assert_int_equal(objfs_creds_set(&c, "ec2_metadata_endpoint", "http://127.0.0.1:9"), 0);
	assert_int_equal(objfs_credprov_create(&cfg, NULL, &p), 0);
	assert_string_equal(objfs_credprov_kind(p), "instance metadata");
	assert_int_equal(objfs_credprov_get(p, &out), EACCES);
	assert_null(out.access_key);
	objfs_credprov_destroy(p);
	objfs_creds_release(&c);
	assert_int_equal(objfs_creds_set(&c, "ec2_metadata_endpoint", "file:///etc"), 0);
	assert_int_equal(objfs_credprov_create(&cfg, NULL, &p), EINVAL);
	objfs_creds_release(&c);
}

/* ---- a container endpoint on 127.0.0.1 ---------------------------------- */

struct endpoint {
	int lfd, port, served;
	pthread_t thr;
	char auth[128];                 /* Authorization seen last */
};

static void *endpoint_main(void *arg)
{
	struct endpoint *e = arg;
	char req[4096], body[256], resp[512];
	int fd;

	while ((fd = accept(e->lfd, NULL, NULL)) >= 0) {
		ssize_t n = read(fd, req, sizeof(req) - 1);
		time_t exp = time(NULL) + 3;
		struct tm tm;
		char when[32];
		const char *a;

		req[n > 0 ? n : 0] = '\0';
		a = strcasestr(req, "\r\nAuthorization: ");
		if (a != NULL)
			sscanf(a + 17, "%127[^\r]", e->auth);
		gmtime_r(&exp, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		e->served++;
		snprintf(body, sizeof(body),
			 "{\"AccessKeyId\":\"KEY%d\",\"SecretAccessKey\":\"S\","
			 "\"Expiration\":\"%s\"}", e->served, when);
		snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n%s", strlen(body), body);
		if (write(fd, resp, strlen(resp)) < 0)
			(void)0;
		close(fd);
	}
	return NULL;
}

static void test_renewal(void **state)
{
	struct objfs_creds c = OBJFS_CREDS_INIT, out = OBJFS_CREDS_INIT;
	struct objfs_credprov_config cfg = { &c, NULL, NULL, false, 1.5, NULL };
	struct objfs_credprov *p = NULL;
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	struct endpoint e;
	char uri[64], tok[] = "/tmp/objfs-credprov-XXXXXX";
	int fd;

	(void)state;
	memset(&e, 0, sizeof(e));
	e.lfd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(e.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(e.lfd, 8), 0);
	assert_int_equal(getsockname(e.lfd, (struct sockaddr *)&a, &al), 0);
	e.port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&e.thr, NULL, endpoint_main, &e), 0);
	fd = mkstemp(tok);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "pod-token\n", 10), 10);
	close(fd);
	snprintf(uri, sizeof(uri), "http://127.0.0.1:%d/creds", e.port);
	assert_int_equal(objfs_creds_set(&c, "container_credentials_full_uri", uri), 0);
	assert_int_equal(objfs_creds_set(&c, "container_authorization_token_file", tok), 0);
	assert_int_equal(objfs_credprov_create(&cfg, NULL, &p), 0);
	assert_int_equal(objfs_credprov_get(p, &out), 0);
	assert_string_equal(out.access_key, "KEY1");
	assert_string_equal(e.auth, "pod-token");
	/* 2 or 3 s to go, more than refresh_s: the same keys */
	assert_int_equal(objfs_credprov_get(p, &out), 0);
	assert_string_equal(out.access_key, "KEY1");
	/* within 1.5 s of expiry: renewed, without waiting for it */
	sleep(2);
	assert_int_equal(objfs_credprov_get(p, &out), 0);
	assert_string_equal(out.access_key, "KEY2");
	assert_int_equal(objfs_credprov_renewals(p), 2);
	objfs_creds_release(&out);
	objfs_credprov_destroy(p);
	objfs_creds_release(&c);
	unlink(tok);
	shutdown(e.lfd, SHUT_RDWR);
	close(e.lfd);
	pthread_join(e.thr, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_sts),
		cmocka_unit_test(test_parse_json),
		cmocka_unit_test(test_uri_allowed),
		cmocka_unit_test(test_sources),
		cmocka_unit_test(test_renewal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
