/*
 * Tests of the S3 leaf (s3.c) over real HTTP.
 *
 * Always: against a tiny canned HTTP server on 127.0.0.1 (one thread, one
 * request per connection) that records each request, so the tests see what
 * the leaf sends (encoded paths, sorted queries, Content-MD5, payload
 * hashes) and how it maps what comes back (error documents, 200 with an
 * <Error> body, a server ignoring Range, a refused or silent port).
 *
 * The quirks of Ceph RGW 16 the leaf handles, each replayed by the canned
 * server (test_rgw_*).
 *
 * With OBJFS_TEST_S3_ENDPOINT etc. set (tests/integration/store_s3.sh, a
 * real Swift, or store_rgw.sh, a real Ceph RGW): a wrong secret key is
 * EACCES, odd keys round-trip, many threads share a small connection pool.
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
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "backend/backend.h"
#include "backend/s3_internal.h"
#include "common/buf.h"
#include "common/io.h"
#include "common/log.h"
#include "common/metrics.h"

/* ---- the canned server ------------------------------------------------- */

#define MAX_REQ (256 * 1024)

struct canned {
	int lfd;
	int port;
	pthread_t thr;
	pthread_mutex_t mu;
	/* the next responses, consumed in order (protected by mu) */
	const char *responses[8];
	size_t n_responses;
	size_t next;
	/* the last request seen */
	char req[MAX_REQ];
	size_t req_len;
	bool stop;
};

static size_t find_hdr_end(const char *b, size_t n)
{
	size_t i;

	for (i = 0; i + 3 < n; i++)
		if (memcmp(b + i, "\r\n\r\n", 4) == 0)
			return i + 4;
	return 0;
}

static void *canned_main(void *arg)
{
	struct canned *cs = arg;

	for (;;) {
		char buf[MAX_REQ];
		size_t n = 0, he = 0, need = 0;
		const char *resp;
		int fd = accept(cs->lfd, NULL, NULL);

		if (fd < 0)
			break;
		pthread_mutex_lock(&cs->mu);
		if (cs->stop) {
			pthread_mutex_unlock(&cs->mu);
			close(fd);
			break;
		}
		pthread_mutex_unlock(&cs->mu);
		while (n < sizeof(buf) - 1) {
			ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);

			if (r <= 0)
				break;
			n += (size_t)r;
			buf[n] = '\0';
			if (he == 0) {
				he = find_hdr_end(buf, n);
				if (he != 0) {
					const char *cl = strcasestr(buf,
						"\r\ncontent-length:");

					if (cl != NULL && cl < buf + he)
						need = strtoul(cl + 17, NULL,
							       10);
				}
			}
			if (he != 0 && n >= he + need)
				break;
		}
		pthread_mutex_lock(&cs->mu);
		memcpy(cs->req, buf, n);
		cs->req[n] = '\0';
		cs->req_len = n;
		resp = cs->next < cs->n_responses ? cs->responses[cs->next++] :
			"HTTP/1.1 500 Internal Server Error\r\n"
			"Content-Length: 0\r\nConnection: close\r\n\r\n";
		pthread_mutex_unlock(&cs->mu);
		if (write(fd, resp, strlen(resp)) < 0)
			(void)0;
		shutdown(fd, SHUT_WR);
		close(fd);
	}
	return NULL;
}

static int listen_any(int *port)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static struct canned *canned_start(void)
{
	struct canned *cs = calloc(1, sizeof(*cs));

	assert_non_null(cs);
	pthread_mutex_init(&cs->mu, NULL);
	cs->lfd = listen_any(&cs->port);
	assert_int_equal(pthread_create(&cs->thr, NULL, canned_main, cs), 0);
	return cs;
}

static void canned_stop(struct canned *cs)
{
	pthread_mutex_lock(&cs->mu);
	cs->stop = true;
	pthread_mutex_unlock(&cs->mu);
	shutdown(cs->lfd, SHUT_RDWR);
	close(cs->lfd);
	pthread_join(cs->thr, NULL);
	pthread_mutex_destroy(&cs->mu);
	free(cs);
}

static void canned_set(struct canned *cs, const char *const *r, size_t n)
{
	size_t i;

	pthread_mutex_lock(&cs->mu);
	for (i = 0; i < n; i++)
		cs->responses[i] = r[i];
	cs->n_responses = n;
	cs->next = 0;
	cs->req[0] = '\0';
	pthread_mutex_unlock(&cs->mu);
}

static struct objfs_store *canned_store(struct canned *cs, bool path_style)
{
	struct objfs_s3_config cfg = { 0 };
	struct objfs_store *s = NULL;
	char ep[64];

	/* curl resolves localhost and *.localhost itself, without DNS. */
	snprintf(ep, sizeof(ep), "http://%s:%d",
		 path_style ? "127.0.0.1" : "localhost", cs->port);
	cfg.endpoint = ep;
	cfg.bucket = "bkt";
	cfg.region = "us-east-1";
	cfg.path_style = path_style;
	cfg.access_key = "AKID";
	cfg.secret_key = "SECRET-never-in-logs";
	cfg.max_connections = 2;
	cfg.low_speed_timeout_s = 2;
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), 0);
	return s;
}

/* Bodies run to the end of the connection (no Content-Length). */
#define RESP(status, extra) \
	"HTTP/1.1 " status "\r\nConnection: close\r\n" extra "\r\n"

static void test_config(void **state)
{
	struct objfs_s3_config cfg = { 0 };
	struct objfs_store *s = NULL;

	(void)state;
	cfg.bucket = "b";
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), EINVAL);
	cfg.endpoint = "ftp://127.0.0.1";
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), EINVAL);
	cfg.endpoint = "http://127.0.0.1:1/some/path";
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), EINVAL);
	cfg.endpoint = "http://user@127.0.0.1:1";
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), EINVAL);
	cfg.endpoint = "http://127.0.0.1:1/";
	cfg.bucket = "a/b";
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), EINVAL);
	cfg.bucket = "b";
	cfg.access_key = "only-the-id";
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), EINVAL);
	cfg.secret_key = "x";
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), 0);
	assert_string_equal(s->ops->name, "s3");
	objfs_store_destroy(s);
}

static void test_refused_and_silent(void **state)
{
	struct objfs_s3_config cfg = { 0 };
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_store *s = NULL;
	char ep[64];
	int port, fd;

	(void)state;
	/* A port nobody listens on. */
	fd = listen_any(&port);
	close(fd);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", port);
	cfg.endpoint = ep;
	cfg.bucket = "b";
	cfg.path_style = true;
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), 0);
	assert_int_equal(objfs_store_head(s, "k", &info), ECONNREFUSED);
	objfs_store_destroy(s);

	/* A port that accepts but never answers: the stall timeout. */
	fd = listen_any(&port);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", port);
	cfg.low_speed_timeout_s = 1;
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), 0);
	assert_int_equal(objfs_store_head(s, "k", &info), ETIMEDOUT);
	objfs_store_destroy(s);
	close(fd);
}

/* The stall threshold: max(stall_ms, k * p90 of the samples), capped. */
static void test_stall_threshold(void **state)
{
	unsigned v[64] = { 0 };
	size_t i;

	(void)state;
	assert_int_equal(objfs_s3_stall_threshold(3000, 30000, 4, v, 0), 3000);
	for (i = 0; i < 64; i++)
		v[i] = 10;
	assert_int_equal(objfs_s3_stall_threshold(3000, 30000, 4, v, 64), 3000);
	/* a few long silences (under a tenth) do not move it */
	for (i = 0; i < 6; i++)
		v[i] = 20000;
	assert_int_equal(objfs_s3_stall_threshold(3000, 30000, 4, v, 64), 3000);
	/* a server slow for a tenth of its answers raises it */
	for (i = 0; i < 64; i++)
		v[i] = i < 50 ? 10 : 2000;
	assert_int_equal(objfs_s3_stall_threshold(3000, 30000, 4, v, 64), 8000);
	for (i = 0; i < 64; i++)
		v[i] = 60000;
	assert_int_equal(objfs_s3_stall_threshold(3000, 30000, 4, v, 64),
			 30000);
	/* the cap never goes under stall_ms; more than 64 samples: the
	 * first 64 */
	assert_int_equal(objfs_s3_stall_threshold(3000, 1000, 4, v, 64), 3000);
	assert_int_equal(objfs_s3_stall_threshold(100, 0, 4, v, 1000), 240000);
}

static struct objfs_store *silent_store(int port, long stall_ms,
					long low_speed_s,
					struct objfs_metrics *reg)
{
	struct objfs_s3_config cfg = { 0 };
	struct objfs_store *s = NULL;
	char ep[64];

	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", port);
	cfg.endpoint = ep;
	cfg.bucket = "b";
	cfg.path_style = true;
	cfg.stall_timeout_ms = stall_ms;
	cfg.low_speed_timeout_s = low_speed_s;
	cfg.max_connections = 4;
	cfg.metrics = reg;
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), 0);
	return s;
}

/* A PUT whose body was sent and whose answer never comes is a stall like
 * any other silence (it used to wait out the low-speed limit), and the
 * stall teaches the threshold: the next try waits longer. */
static void test_answer_wait_stalled(void **state)
{
	struct objfs_store *s;
	struct objfs_source src;
	char body[1000];
	long long t0, took;
	int port, fd;

	(void)state;
	memset(body, 'x', sizeof(body));
	fd = listen_any(&port);         /* accepts (the kernel), never answers */
	s = silent_store(port, 300, 20, NULL);
	assert_int_equal(objfs_s3_stall_now(s), 300);
	objfs_source_mem(&src, body, sizeof(body));
	t0 = objfs_now_ms();
	assert_int_equal(objfs_store_put(s, "k", &src, NULL, NULL), ETIMEDOUT);
	took = objfs_now_ms() - t0;
	assert_true(took >= 300);
	assert_true(took < 10000);      /* not the 20 s low-speed limit */
	assert_true(objfs_s3_stall_now(s) >= 4 * 300);
	objfs_store_destroy(s);
	close(fd);
}

struct silent_head {
	struct objfs_store *s;
	int err;
	long long took;
};

static void *silent_head_main(void *arg)
{
	struct silent_head *h = arg;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	long long t0 = objfs_now_ms();

	h->err = objfs_store_head(h->s, "k", &info);
	h->took = objfs_now_ms() - t0;
	objfs_obj_info_release(&info);
	return NULL;
}

/* Two transfers silent at once: the server is slow for everyone, neither
 * is abandoned at the stall threshold; they end at the low-speed limit. */
static void test_slow_server_not_stalled(void **state)
{
	struct objfs_metrics *reg = NULL;
	struct objfs_buf out = OBJFS_BUF_INIT(1 << 20, EFBIG);
	struct silent_head h[2];
	pthread_t t[2];
	int port, fd, i;

	(void)state;
	assert_int_equal(objfs_metrics_create(&reg), 0);
	fd = listen_any(&port);
	h[0].s = h[1].s = silent_store(port, 1000, 3, reg);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, silent_head_main,
						&h[i]), 0);
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(h[i].err, ETIMEDOUT);
		assert_true(h[i].took >= 2000);
	}
	assert_int_equal(objfs_metrics_render(reg, &out), 0);
	/* (the one that outlasts the other is alone for a moment at its
	 * end, and may then be taken for stalled: no count of stalls) */
	assert_non_null(strstr(out.p, "\nobjfs_s3_slow_server_waits_total 2\n"));
	objfs_buf_release(&out);
	objfs_store_destroy(h[0].s);
	objfs_metrics_destroy(reg);
	close(fd);
}

static void test_request_shape(void **state)
{
	static const char *const r[] = {
		RESP("200 OK", "ETag: \"e1\"\r\nContent-Length: 0\r\n"),
	};
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	struct objfs_meta meta = OBJFS_META_INIT;
	struct objfs_put_opts po = { &meta, "text/plain", false };
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_source src;

	(void)state;
	assert_int_equal(objfs_meta_set(&meta, "mode", "0644"), 0);
	objfs_source_mem(&src, "hello", 5);
	canned_set(cs, r, 1);
	assert_int_equal(objfs_store_put(s, "dir/a b+c%d~e=f\xc3\xbc", &src,
					 &po, &info), 0);
	assert_string_equal(info.etag, "\"e1\"");
	assert_non_null(strstr(cs->req,
		"PUT /bkt/dir/a%20b%2Bc%25d~e%3Df%C3%BC HTTP/1.1\r\n"));
	assert_non_null(strcasestr(cs->req, "\r\nx-amz-meta-mode: 0644\r\n"));
	assert_non_null(strcasestr(cs->req, "\r\nContent-Type: text/plain\r\n"));
	/* The payload hash is sent and signed (sha256("hello")). */
	assert_non_null(strcasestr(cs->req, "\r\nx-amz-content-sha256: "
		"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\r\n"));
	assert_non_null(strstr(cs->req, "Credential=AKID/"));
	assert_non_null(strstr(cs->req, "x-amz-content-sha256;x-amz-date"));
	assert_null(strstr(cs->req, "SECRET"));
	assert_non_null(strstr(cs->req, "\r\n\r\nhello"));

	/* Keys are not normalised: dot segments reach the server. */
	canned_set(cs, r, 1);
	assert_int_equal(objfs_store_put(s, "a/../b/./c//d", &src, NULL,
					 NULL), 0);
	assert_non_null(strstr(cs->req, "PUT /bkt/a/../b/./c//d HTTP/1.1"));
	/* Header injection through metadata is refused before sending. */
	assert_int_equal(objfs_meta_set(&meta, "evil", "x\r\nHost: y"), 0);
	assert_int_equal(objfs_store_put(s, "k", &src, &po, NULL), EINVAL);
	objfs_meta_release(&meta);
	objfs_obj_info_release(&info);
	objfs_store_destroy(s);

	/* Virtual-hosted addressing: the bucket moves into Host. */
	s = canned_store(cs, false);
	canned_set(cs, r, 1);
	assert_int_equal(objfs_store_del(s, "x y"), 0);
	assert_non_null(strstr(cs->req, "DELETE /x%20y HTTP/1.1\r\n"));
	assert_non_null(strcasestr(cs->req, "\r\nHost: bkt.localhost:"));
	objfs_store_destroy(s);
	canned_stop(cs);
}

static void test_list_query(void **state)
{
	static const char *const r[] = {
		RESP("200 OK", "")
		"<ListBucketResult><IsTruncated>true</IsTruncated>"
		"<Contents><Key>p/a%20b</Key><Size>3</Size><ETag>\"x\"</ETag>"
		"</Contents><CommonPrefixes><Prefix>p/d%2B/</Prefix>"
		"</CommonPrefixes><NextContinuationToken>dG9r</NextContinuationToken>"
		"<EncodingType>url</EncodingType></ListBucketResult>",
	};
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	struct objfs_list_req lr = { "p/", "/", NULL, "p/0", 10 };
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;

	(void)state;
	canned_set(cs, r, 1);
	assert_int_equal(objfs_store_list(s, &lr, &pg), 0);
	assert_non_null(strstr(cs->req, "GET /bkt/?delimiter=%2F&encoding-type"
		"=url&list-type=2&max-keys=10&prefix=p%2F&start-after=p%2F0 "));
	assert_int_equal(pg.n_entries, 1);
	assert_string_equal(pg.entries[0].key, "p/a b");
	assert_int_equal(pg.entries[0].size, 3);
	assert_string_equal(pg.prefixes[0], "p/d+/");
	assert_string_equal(pg.next, "dG9r");
	objfs_list_page_release(&pg);
	objfs_store_destroy(s);
	canned_stop(cs);
}

static void test_error_mapping(void **state)
{
	static const char *const r[] = {
		RESP("404 Not Found", "Content-Type: application/xml\r\n")
		"<Error><Code>NoSuchKey</Code><Message/></Error>\n\n\n\n\n",
		RESP("503 Slow Down", "")
		"<Error><Code>SlowDown</Code></Error>\n\n\n\n\n\n\n\n\n",
		RESP("403 Forbidden", "")
		"<Error><Code>SignatureDoesNotMatch</Code></Error>\n\n\n\n\n\n\n\n\n",
		RESP("412 Precondition Failed", ""),
		RESP("500 Internal Server Error", ""),
		RESP("429 Too Many Requests", ""),
		RESP("416 Requested Range Not Satisfiable", ""),
	};
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_get_opts go = { 10, 5, NULL };
	struct objfs_sink sink;

	(void)state;
	objfs_sink_membuf(&sink, &mb);
	canned_set(cs, r, 7);
	assert_int_equal(objfs_store_get(s, "k", NULL, &sink, NULL), ENOENT);
	assert_int_equal(objfs_store_get(s, "k", NULL, &sink, NULL), EAGAIN);
	assert_int_equal(objfs_store_get(s, "k", NULL, &sink, NULL), EACCES);
	assert_int_equal(objfs_store_get(s, "k", NULL, &sink, NULL), ESTALE);
	assert_int_equal(objfs_store_get(s, "k", NULL, &sink, NULL), EIO);
	assert_int_equal(objfs_store_get(s, "k", NULL, &sink, NULL), EAGAIN);
	assert_int_equal(objfs_store_get(s, "k", &go, &sink, NULL), ERANGE);
	assert_non_null(strcasestr(cs->req, "\r\nRange: bytes=10-14\r\n"));
	assert_int_equal(mb.len, 0);
	objfs_membuf_release(&mb);
	objfs_store_destroy(s);
	canned_stop(cs);
}

/* Debug logging of failures and transport errors never shows the secret
 * key, the session token or the signature. */
static void test_no_secrets_in_logs(void **state)
{
	static const char *const r[] = {
		RESP("403 Forbidden", "")
		"<Error><Code>SignatureDoesNotMatch</Code><Message>x</Message>"
		"</Error>",
	};
	struct canned *cs = canned_start();
	struct objfs_s3_config cfg = { 0 };
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_store *s = NULL;
	struct objfs_log *log;
	char ep[64], buf[65536];
	ssize_t n;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	log = objfs_log_create(p[1], OBJFS_LOG_DEBUG);
	assert_non_null(log);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", cs->port);
	cfg.endpoint = ep;
	cfg.bucket = "bkt";
	cfg.path_style = true;
	cfg.access_key = "AKIDPUBLIC";
	cfg.secret_key = "TOPSECRETKEY";
	cfg.session_token = "TOPSECRETTOKEN";
	assert_int_equal(objfs_s3_store_create(&cfg, log, &s), 0);
	canned_set(cs, r, 1);
	assert_int_equal(objfs_store_head(s, "k", &info), EACCES);
	/* The token is sent (and signed), the secret never is. */
	assert_non_null(strcasestr(cs->req,
				   "\r\nx-amz-security-token: TOPSECRETTOKEN"));
	assert_non_null(strstr(cs->req, "x-amz-security-token, Signature="));
	assert_null(strstr(cs->req, "TOPSECRETKEY"));
	objfs_store_destroy(s);
	canned_stop(cs);
	objfs_log_destroy(log);
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	assert_true(n > 0);     /* something was logged */
	buf[n] = '\0';
	assert_null(strstr(buf, "TOPSECRET"));
	assert_null(strstr(buf, "Signature"));
}

static void test_range_ignored(void **state)
{
	/* A server that ignores Range and sends the whole object. */
	static const char *const r[] = {
		RESP("200 OK", "ETag: \"z\"\r\nContent-Length: 10\r\n") "0123456789",
	};
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_get_opts go = { 3, 4, NULL };
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_sink sink;

	(void)state;
	objfs_sink_membuf(&sink, &mb);
	canned_set(cs, r, 1);
	assert_int_equal(objfs_store_get(s, "k", &go, &sink, &info), 0);
	assert_int_equal(mb.len, 4);
	assert_memory_equal(mb.data, "3456", 4);
	assert_int_equal(info.size, 10);
	assert_string_equal(info.etag, "\"z\"");
	objfs_membuf_release(&mb);
	objfs_obj_info_release(&info);
	objfs_store_destroy(s);
	canned_stop(cs);
}

static void test_multipart_shapes(void **state)
{
	static const char *const r[] = {
		RESP("200 OK", "")
		"<InitiateMultipartUploadResult><UploadId>u+1/=</UploadId>"
		"</InitiateMultipartUploadResult>\n\n\n",
		RESP("200 OK", "ETag: \"p1\"\r\nContent-Length: 0\r\n"),
		/* 200 whose body is an error */
		RESP("200 OK", "")
		"<Error><Code>InternalError</Code></Error>\n\n\n\n\n\n\n\n\n\n\n\n",
		RESP("404 Not Found", "")
		"<Error><Code>NoSuchUpload</Code></Error>\n\n\n\n\n\n\n\n\n",
	};
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	struct objfs_part part;
	struct objfs_source src;
	char *id = NULL;

	(void)state;
	canned_set(cs, r, 4);
	assert_int_equal(objfs_store_mpu_create(s, "m", NULL, &id), 0);
	assert_string_equal(id, "u+1/=");
	assert_non_null(strstr(cs->req, "POST /bkt/m?uploads= HTTP/1.1"));
	objfs_source_mem(&src, "abc", 3);
	assert_int_equal(objfs_store_mpu_part(s, "m", id, 7, &src, &part), 0);
	assert_non_null(strstr(cs->req,
		"PUT /bkt/m?partNumber=7&uploadId=u%2B1%2F%3D HTTP/1.1"));
	assert_int_equal(part.number, 7);
	assert_string_equal(part.etag, "\"p1\"");
	assert_int_equal(objfs_store_mpu_complete(s, "m", id, &part, 1, NULL),
			 EIO);
	assert_non_null(strstr(cs->req, "<PartNumber>7</PartNumber><ETag>"
				       "&quot;p1&quot;</ETag>"));
	/* Aborting an unknown upload succeeds. */
	assert_int_equal(objfs_store_mpu_abort(s, "m", id), 0);
	assert_non_null(strstr(cs->req, "DELETE /bkt/m?uploadId=u%2B1%2F%3D "));
	free(id);
	objfs_store_destroy(s);
	canned_stop(cs);
}

/* Ceph RGW 16 answers CompleteMultipartUpload with an empty <ETag/>: the
 * leaf computes the ETag from the parts' MD5s, or asks HEAD when a part's
 * ETag is not an MD5. */
static void test_rgw_complete_etag(void **state)
{
	static const char *const r[] = {
		RESP("200 OK", "")
		"<CompleteMultipartUploadResult><Bucket>bkt</Bucket><Key>m</Key>"
		"<ETag></ETag></CompleteMultipartUploadResult>",
		RESP("200 OK", "")
		"<CompleteMultipartUploadResult><ETag></ETag>"
		"</CompleteMultipartUploadResult>",
		RESP("200 OK", "ETag: \"from-head-2\"\r\nContent-Length: 1\r\n"),
	};
	/* MD5s of "a" and "b". */
	struct objfs_part parts[2] = {
		{ 1, "\"0cc175b9c0f1b6a831c399e269772661\"" },
		{ 2, "92EB5FFEE6AE2FEC3AD71C777531578F" },
	};
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;

	(void)state;
	canned_set(cs, r, 3);
	assert_int_equal(objfs_store_mpu_complete(s, "m", "u", parts, 2, &info),
			 0);
	assert_string_equal(info.etag,
			    "\"96e024ba2074fe77e8e965ba43a704be-2\"");
	snprintf(parts[1].etag, sizeof(parts[1].etag), "\"not-an-md5\"");
	assert_int_equal(objfs_store_mpu_complete(s, "m", "u", parts, 2, &info),
			 0);
	assert_non_null(strstr(cs->req, "HEAD /bkt/m HTTP/1.1"));
	assert_string_equal(info.etag, "\"from-head-2\"");
	objfs_obj_info_release(&info);
	objfs_store_destroy(s);
	canned_stop(cs);
}

/* Ceph RGW 16 answers the completion of an aborted upload with a 500
 * ("This multipart completion is already in progress"): ENOENT when
 * ListParts says the upload is gone, EIO (a server failure) when not. */
static void test_rgw_complete_aborted(void **state)
{
	static const char *const r[] = {
		RESP("500 Internal Server Error", "")
		"<Error><Code>InternalError</Code><Message>This multipart "
		"completion is already in progress</Message></Error>",
		RESP("404 Not Found", "")
		"<Error><Code>NoSuchKey</Code></Error>",
		RESP("500 Internal Server Error", "")
		"<Error><Code>InternalError</Code></Error>",
		RESP("200 OK", "")
		"<ListPartsResult><UploadId>u</UploadId></ListPartsResult>",
	};
	struct objfs_part part = { 1, "\"0cc175b9c0f1b6a831c399e269772661\"" };
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);

	(void)state;
	canned_set(cs, r, 4);
	assert_int_equal(objfs_store_mpu_complete(s, "m", "u", &part, 1, NULL),
			 ENOENT);
	assert_non_null(strstr(cs->req,
			       "GET /bkt/m?max-parts=1&uploadId=u HTTP/1.1"));
	assert_int_equal(objfs_store_mpu_complete(s, "m", "u", &part, 1, NULL),
			 EIO);
	objfs_store_destroy(s);
	canned_stop(cs);
}

/* Ceph RGW 16: CopyObject reads its condition from x-amz-copy-if-match
 * (both names are sent) and answers an ETag without quotes (added). */
static void test_rgw_copy(void **state)
{
	static const char *const r[] = {
		RESP("200 OK", "")
		"<CopyObjectResult><LastModified>2026-11-24T06:36:13.078Z"
		"</LastModified><ETag>d4ca1ed7571e2e7b1f1c375bd50fa220</ETag>"
		"</CopyObjectResult>",
		RESP("200 OK", "")
		"<CopyObjectResult><ETag></ETag></CopyObjectResult>",
	};
	struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL,
				      "\"d4ca1ed7571e2e7b1f1c375bd50fa220\"" };
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;

	(void)state;
	canned_set(cs, r, 2);
	assert_int_equal(objfs_store_copy(s, "a", "b", &co, &info), 0);
	assert_string_equal(info.etag, "\"d4ca1ed7571e2e7b1f1c375bd50fa220\"");
	assert_non_null(strcasestr(cs->req, "\r\nx-amz-copy-source-if-match: "
				   "\"d4ca1ed7571e2e7b1f1c375bd50fa220\"\r\n"));
	assert_non_null(strcasestr(cs->req, "\r\nx-amz-copy-if-match: "
				   "\"d4ca1ed7571e2e7b1f1c375bd50fa220\"\r\n"));
	/* An empty ETag in a copy result is still a protocol error. */
	assert_int_equal(objfs_store_copy(s, "a", "b", NULL, &info), EPROTO);
	objfs_obj_info_release(&info);
	objfs_store_destroy(s);
	canned_stop(cs);
}

/* Ceph RGW 16 ignores the source conditions of UploadPartCopy: a source
 * rewritten while its parts are copied is found by a HEAD after the last
 * part, and the upload is aborted (ESTALE). */
static void test_rgw_copy_parts_source_changed(void **state)
{
	static const char *const r[] = {
		RESP("200 OK", "ETag: \"e1\"\r\nContent-Length: 1\r\n"),
		RESP("200 OK", "")
		"<InitiateMultipartUploadResult><UploadId>u</UploadId>"
		"</InitiateMultipartUploadResult>",
		RESP("200 OK", "")
		"<CopyPartResult><ETag>0cc175b9c0f1b6a831c399e269772661</ETag>"
		"</CopyPartResult>",
		RESP("200 OK", "ETag: \"e2\"\r\nContent-Length: 1\r\n"),
		RESP("204 No Content", ""),
	};
	struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);

	(void)state;
	canned_set(cs, r, 5);
	assert_int_equal(objfs_s3_copy_multipart(s, "src", "dst", &co,
						 5u << 20, NULL), ESTALE);
	assert_non_null(strstr(cs->req, "DELETE /bkt/dst?uploadId=u "));
	objfs_store_destroy(s);
	canned_stop(cs);
}

/* Ceph RGW 16 lists from any continuation token, as from a start-after
 * key: a token that cannot be one it issued (not base64, not under the
 * prefix) is EINVAL. */
static void test_rgw_forged_token(void **state)
{
	static const char *const r[] = {
		RESP("200 OK", "")
		"<ListBucketResult><IsTruncated>false</IsTruncated>"
		"<ContinuationToken>zzz</ContinuationToken></ListBucketResult>",
		RESP("200 OK", "")
		"<ListBucketResult><IsTruncated>false</IsTruncated>"
		"<Contents><Key>p/l</Key><Size>1</Size></Contents>"
		"</ListBucketResult>",
	};
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	struct objfs_list_req lr = { "p/", NULL, "forged-token", NULL, 0 };
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;

	(void)state;
	canned_set(cs, r, 2);
	assert_int_equal(objfs_store_list(s, &lr, &pg), EINVAL);
	/* RGW's own tokens are keys under the prefix. */
	lr.continuation = "p/k";
	assert_int_equal(objfs_store_list(s, &lr, &pg), 0);
	assert_int_equal(pg.n_entries, 1);
	objfs_list_page_release(&pg);
	objfs_store_destroy(s);
	canned_stop(cs);
}

static void test_delete_many_shape(void **state)
{
	static const char *const r[] = {
		RESP("200 OK", "")
		"<DeleteResult><Error><Key>b</Key><Code>AccessDenied</Code>"
		"</Error><Error><Key>c</Key><Code>NoSuchKey</Code></Error>"
		"</DeleteResult>",
	};
	const char *keys[] = { "a", "b", "c&d" };
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	size_t failed = 0;

	(void)state;
	canned_set(cs, r, 1);
	assert_int_equal(objfs_store_del_many(s, keys, 3, &failed), EACCES);
	assert_int_equal(failed, 1);
	assert_non_null(strstr(cs->req, "POST /bkt/?delete= HTTP/1.1"));
	assert_non_null(strcasestr(cs->req, "\r\nContent-MD5: "));
	assert_non_null(strstr(cs->req, "<Key>c&amp;d</Key>"));
	objfs_store_destroy(s);
	canned_stop(cs);
}

/* Ceph RGW 16 refuses a DeleteObjects (403) to keys that a bucket policy
 * scopes to a prefix, where a DELETE of each key is allowed: the leaf
 * deletes one by one, and from then on without asking again. */
static void test_rgw_delete_many_scoped(void **state)
{
	static const char *const r[] = {
		RESP("403 Forbidden", "")
		"<Error><Code>AccessDenied</Code></Error>",
		RESP("204 No Content", ""),
		RESP("204 No Content", ""),
		RESP("204 No Content", ""),
	};
	const char *keys[] = { "p/a", "p/b" };
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	size_t failed = 9;

	(void)state;
	canned_set(cs, r, 4);
	assert_int_equal(objfs_store_del_many(s, keys, 2, &failed), 0);
	assert_int_equal(failed, 0);
	assert_non_null(strstr(cs->req, "DELETE /bkt/p/b HTTP/1.1"));
	/* Remembered: the next batch is single DELETEs only. */
	assert_int_equal(objfs_store_del_many(s, keys, 1, &failed), 0);
	assert_non_null(strstr(cs->req, "DELETE /bkt/p/a HTTP/1.1"));
	objfs_store_destroy(s);
	canned_stop(cs);
}

/* Wrong keys: the batch and the single DELETE are refused alike, EACCES,
 * and the leaf keeps using DeleteObjects. */
static void test_delete_many_denied(void **state)
{
	static const char *const r[] = {
		RESP("403 Forbidden", "") "<Error><Code>AccessDenied</Code></Error>",
		RESP("403 Forbidden", "") "<Error><Code>AccessDenied</Code></Error>",
		RESP("403 Forbidden", "") "<Error><Code>AccessDenied</Code></Error>",
		RESP("403 Forbidden", "") "<Error><Code>AccessDenied</Code></Error>",
	};
	const char *keys[] = { "p/a", "p/b" };
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	size_t failed = 0;

	(void)state;
	canned_set(cs, r, 4);
	assert_int_equal(objfs_store_del_many(s, keys, 2, &failed), EACCES);
	assert_int_equal(failed, 2);
	/* Not remembered: a batch again, then the single DELETE. */
	assert_int_equal(objfs_store_del_many(s, keys, 1, &failed), EACCES);
	pthread_mutex_lock(&cs->mu);
	assert_int_equal(cs->next, 4);
	pthread_mutex_unlock(&cs->mu);
	objfs_store_destroy(s);
	canned_stop(cs);
}

/* AWS and RGW answer 403 for a missing key to keys without ListBucket
 * for it (a policy scoping ListBucket to a prefix): a listing tells
 * absent (ENOENT) from refused (EACCES). */
static void test_missing_key_403(void **state)
{
	static const char *const r[] = {
		/* HEAD refused, the listing lacks the key: absent */
		RESP("403 Forbidden", ""),
		RESP("200 OK", "")
		"<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>",
		/* GET refused, the listing has the key: refused */
		RESP("403 Forbidden", "") "<Error><Code>AccessDenied</Code></Error>",
		RESP("200 OK", "")
		"<ListBucketResult><IsTruncated>false</IsTruncated>"
		"<Contents><Key>p/k</Key><Size>1</Size></Contents></ListBucketResult>",
		/* HEAD refused, the listing refused too: refused */
		RESP("403 Forbidden", ""),
		RESP("403 Forbidden", "") "<Error><Code>AccessDenied</Code></Error>",
	};
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_get_opts o = OBJFS_GET_ALL;
	struct objfs_sink sink;

	(void)state;
	canned_set(cs, r, 6);
	assert_int_equal(objfs_store_head(s, "p/k", NULL), ENOENT);
	assert_non_null(strstr(cs->req, "GET /bkt/?"));
	assert_non_null(strstr(cs->req, "max-keys=1&prefix=p%2Fk"));
	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(objfs_store_get(s, "p/k", &o, &sink, NULL), EACCES);
	assert_int_equal(objfs_store_head(s, "p/k", NULL), EACCES);
	objfs_membuf_release(&mb);
	objfs_store_destroy(s);
	canned_stop(cs);
}

/* A bucket in another region than configured: AWS answers 301 (a HEAD,
 * x-amz-bucket-region only) or 400 AuthorizationHeaderMalformed naming
 * the region; the leaf signs for that region from then on and sends the
 * request again, instead of failing. */
static void test_region_redirect(void **state)
{
	static const char *const r[] = {
		RESP("301 Moved Permanently", "x-amz-bucket-region: eu-west-1\r\n"),
		RESP("200 OK", "ETag: \"e\"\r\nContent-Length: 0\r\n"),
		RESP("200 OK", "ETag: \"e\"\r\nContent-Length: 0\r\n"),
		RESP("400 Bad Request", "")
		"<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region "
		"'eu-west-1' is wrong; expecting 'ap-south-1'</Message>"
		"<Region>ap-south-1</Region></Error>",
		RESP("200 OK", "") "hello",
	};
	struct canned *cs = canned_start();
	struct objfs_store *s = canned_store(cs, true);
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_get_opts o = OBJFS_GET_ALL;
	struct objfs_sink sink;
	char host[128];

	(void)state;
	canned_set(cs, r, 5);
	assert_int_equal(objfs_store_head(s, "k", NULL), 0);
	assert_non_null(strstr(cs->req, "/eu-west-1/s3/aws4_request"));
	/* Remembered. */
	assert_int_equal(objfs_store_head(s, "k", NULL), 0);
	assert_non_null(strstr(cs->req, "/eu-west-1/s3/aws4_request"));
	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(objfs_store_get(s, "k", &o, &sink, NULL), 0);
	assert_int_equal(mb.len, 5);
	assert_memory_equal(mb.data, "hello", 5);
	assert_non_null(strstr(cs->req, "/ap-south-1/s3/aws4_request"));
	objfs_membuf_release(&mb);
	objfs_store_destroy(s);
	canned_stop(cs);

	/* On AWS's endpoints the host follows the region too. */
	assert_int_equal(objfs_s3_region_host("b.s3.us-east-1.amazonaws.com", "eu-west-1",
					      host, sizeof(host)), 0);
	assert_string_equal(host, "b.s3.eu-west-1.amazonaws.com");
	assert_int_equal(objfs_s3_region_host("s3.amazonaws.com", "eu-west-1",
					      host, sizeof(host)), 0);
	assert_string_equal(host, "s3.eu-west-1.amazonaws.com");
	assert_int_equal(objfs_s3_region_host("my.dotted.bkt.s3-us-west-2.amazonaws.com",
					      "eu-west-1", host, sizeof(host)), 0);
	assert_string_equal(host, "my.dotted.bkt.s3.eu-west-1.amazonaws.com");
	assert_int_equal(objfs_s3_region_host("s3-logs.s3.us-east-1.amazonaws.com",
					      "eu-west-1", host, sizeof(host)), 0);
	assert_string_equal(host, "s3-logs.s3.eu-west-1.amazonaws.com");
	assert_int_equal(objfs_s3_region_host("s3.example.com", "eu-west-1",
					      host, sizeof(host)), ENOENT);
	assert_int_equal(objfs_s3_region_host("s3.us-east-1.amazonaws.com", "EU/../x",
					      host, sizeof(host)), ENOENT);
}

/* ---- TLS: a self-signed 127.0.0.1 server -------------------------------- */

struct tls_srv {
	int lfd;
	int port;
	SSL_CTX *ctx;
	pthread_t thr;
	int conns;              /* connections to serve, then exit */
};

static void *tls_main(void *arg)
{
	struct tls_srv *t = arg;
	static const char resp[] = "HTTP/1.1 200 OK\r\nETag: \"tls\"\r\n"
		"Content-Length: 7\r\nConnection: close\r\n\r\n";
	int i;

	for (i = 0; i < t->conns; i++) {
		char buf[8192];
		size_t n = 0;
		int fd = accept(t->lfd, NULL, NULL);
		SSL *ssl;

		if (fd < 0)
			break;
		ssl = SSL_new(t->ctx);
		SSL_set_fd(ssl, fd);
		if (SSL_accept(ssl) == 1) {
			while (n < sizeof(buf) - 1) {
				int r = SSL_read(ssl, buf + n,
						 (int)(sizeof(buf) - 1 - n));

				if (r <= 0)
					break;
				n += (size_t)r;
				buf[n] = '\0';
				if (strstr(buf, "\r\n\r\n") != NULL)
					break;
			}
			SSL_write(ssl, resp, (int)strlen(resp));
			SSL_shutdown(ssl);
		}
		SSL_free(ssl);
		close(fd);
	}
	return NULL;
}

/* A P-256 key and a self-signed certificate for IP 127.0.0.1, the
 * certificate also written to cert_path (PEM). */
static SSL_CTX *tls_ctx(const char *cert_path)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name;
	X509_EXTENSION *ext;
	X509V3_CTX v3;
	SSL_CTX *ctx;
	FILE *f;

	assert_non_null(key);
	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, key);
	name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
				   (const unsigned char *)"127.0.0.1", -1, -1,
				   0);
	X509_set_issuer_name(x, name);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name,
				  "IP:127.0.0.1");
	assert_non_null(ext);
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints,
				  "critical,CA:TRUE");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	f = fopen(cert_path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, x), 1);
	fclose(f);
	ctx = SSL_CTX_new(TLS_server_method());
	assert_non_null(ctx);
	assert_int_equal(SSL_CTX_use_certificate(ctx, x), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
	X509_free(x);
	EVP_PKEY_free(key);
	return ctx;
}

static void test_tls(void **state)
{
	char cert[] = "/tmp/objfs-tls-XXXXXX";
	struct objfs_s3_config cfg = { 0 };
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_store *s = NULL;
	struct tls_srv t;
	char ep[64];
	int fd;

	(void)state;
	fd = mkstemp(cert);
	assert_true(fd >= 0);
	close(fd);
	memset(&t, 0, sizeof(t));
	t.ctx = tls_ctx(cert);
	t.lfd = listen_any(&t.port);
	t.conns = 3;
	assert_int_equal(pthread_create(&t.thr, NULL, tls_main, &t), 0);
	snprintf(ep, sizeof(ep), "https://127.0.0.1:%d", t.port);
	cfg.endpoint = ep;
	cfg.bucket = "b";
	cfg.path_style = true;
	cfg.access_key = "a";
	cfg.secret_key = "s";
	/* What is tested is verification, not timeouts: the server thread
	 * may be starved for seconds on a loaded machine, and a lone HEAD
	 * silent for the 3 s stall threshold (or a handshake past the 10 s
	 * connect timeout) is abandoned with ETIMEDOUT by design (s3_req.c,
	 * test_stall_threshold). */
	cfg.stall_timeout_ms = 120000;
	cfg.connect_timeout_ms = 120000;

	/* Verification is on by default: an unknown CA is refused. */
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), 0);
	assert_int_equal(objfs_store_head(s, "k", &info), EACCES);
	objfs_store_destroy(s);
	/* The private CA given as ca_file is trusted. */
	cfg.ca_file = cert;
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), 0);
	assert_int_equal(objfs_store_head(s, "k", &info), 0);
	assert_string_equal(info.etag, "\"tls\"");
	assert_int_equal(info.size, 7);
	objfs_store_destroy(s);
	/* Or verification is skipped when explicitly asked. */
	cfg.ca_file = NULL;
	cfg.insecure_skip_verify = true;
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), 0);
	assert_int_equal(objfs_store_head(s, "k", &info), 0);
	objfs_store_destroy(s);

	pthread_join(t.thr, NULL);
	close(t.lfd);
	SSL_CTX_free(t.ctx);
	unlink(cert);
	objfs_obj_info_release(&info);
}

/* ---- against a real server (store_s3.sh) --------------------------------- */

static bool have_live(void)
{
	return getenv("OBJFS_TEST_S3_ENDPOINT") != NULL &&
	       getenv("OBJFS_TEST_S3_BUCKET") != NULL;
}

static struct objfs_store *live_store(const char *secret, unsigned maxconn)
{
	struct objfs_s3_config cfg = { 0 };
	struct objfs_store *s = NULL;

	cfg.endpoint = getenv("OBJFS_TEST_S3_ENDPOINT");
	cfg.bucket = getenv("OBJFS_TEST_S3_BUCKET");
	cfg.region = getenv("OBJFS_TEST_S3_REGION");
	cfg.access_key = getenv("OBJFS_TEST_S3_ACCESS_KEY");
	cfg.secret_key = secret != NULL ? secret :
		getenv("OBJFS_TEST_S3_SECRET_KEY");
	cfg.path_style = true;
	if (getenv("OBJFS_TEST_S3_ADDRESSING") != NULL &&
	    strcmp(getenv("OBJFS_TEST_S3_ADDRESSING"), "virtual") == 0) {
		/* BUCKET.s3.localhost: RGW's rgw_dns_name (store_s3.sh) */
		cfg.endpoint = getenv("OBJFS_TEST_S3_VHOST_ENDPOINT");
		cfg.path_style = false;
		assert_non_null(cfg.endpoint);
	}
	cfg.max_connections = maxconn;
	assert_int_equal(objfs_s3_store_create(&cfg, NULL, &s), 0);
	return s;
}

static void test_live_wrong_secret(void **state)
{
	struct objfs_store *bad, *good;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_list_req lr = { NULL, NULL, NULL, NULL, 1 };
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
	struct objfs_source src;

	(void)state;
	if (!have_live())
		return;
	good = live_store(NULL, 2);
	bad = live_store("not-the-secret", 2);
	objfs_source_mem(&src, "x", 1);
	assert_int_equal(objfs_store_put(good, "auth-check", &src, NULL, NULL),
			 0);
	assert_int_equal(objfs_store_head(bad, "auth-check", &info), EACCES);
	assert_int_equal(objfs_store_put(bad, "auth-check", &src, NULL, NULL),
			 EACCES);
	assert_int_equal(objfs_store_list(bad, &lr, &pg), EACCES);
	assert_int_equal(objfs_store_head(good, "auth-check", &info), 0);
	assert_int_equal(info.size, 1);
	assert_int_equal(objfs_store_del(good, "auth-check"), 0);
	objfs_obj_info_release(&info);
	objfs_store_destroy(bad);
	objfs_store_destroy(good);
}

static void test_live_odd_keys(void **state)
{
	static const char *const keys[] = {
		"odd/a b", "odd/a+b", "odd/a%b", "odd/a~b", "odd/a=b",
		"odd/\xc3\xa9t\xc3\xa9 \xe2\x82\xac", "odd/a&b<c>'\"",
		"odd/a?b#c", "odd/tab\there", "odd/x//y", "odd/./z",
	};
	const size_t n = sizeof(keys) / sizeof(keys[0]);
	struct objfs_store *s;
	struct objfs_list_req lr = { "odd/", NULL, NULL, NULL, 0 };
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
	size_t i, j, failed = 0;

	(void)state;
	if (!have_live())
		return;
	s = live_store(NULL, 4);
	for (i = 0; i < n; i++) {
		struct objfs_source src;
		struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
		struct objfs_sink sink;

		objfs_source_mem(&src, keys[i], strlen(keys[i]));
		objfs_sink_membuf(&sink, &mb);
		assert_int_equal(objfs_store_put(s, keys[i], &src, NULL, NULL),
				 0);
		assert_int_equal(objfs_store_get(s, keys[i], NULL, &sink,
						 NULL), 0);
		assert_int_equal(mb.len, strlen(keys[i]));
		assert_memory_equal(mb.data, keys[i], mb.len);
		objfs_membuf_release(&mb);
	}
	assert_int_equal(objfs_store_list(s, &lr, &pg), 0);
	assert_int_equal(pg.n_entries, n);
	for (i = 0; i < n; i++) {
		bool found = false;

		for (j = 0; j < pg.n_entries; j++)
			if (strcmp(pg.entries[j].key, keys[i]) == 0)
				found = true;
		assert_true(found);
	}
	objfs_list_page_release(&pg);
	/* The copy source header carries the odd key too. */
	assert_int_equal(objfs_store_copy(s, keys[1], "odd-copy/a+b %", NULL,
					  NULL), 0);
	assert_int_equal(objfs_store_del(s, "odd-copy/a+b %"), 0);
	assert_int_equal(objfs_store_del_many(s, (const char *const *)keys, n,
					      &failed), 0);
	assert_int_equal(failed, 0);
	assert_int_equal(objfs_store_list(s, &lr, &pg), 0);
	assert_int_equal(pg.n_entries, 0);
	objfs_list_page_release(&pg);
	objfs_store_destroy(s);
}

static void test_live_conditional(void **state)
{
	struct objfs_put_opts po = { NULL, NULL, true };
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_get_opts go = { 0, OBJFS_LEN_ALL, NULL };
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_store *s;
	struct objfs_source src, empty;
	struct objfs_sink sink;

	(void)state;
	if (!have_live())
		return;
	s = live_store(NULL, 2);
	objfs_source_mem(&src, "abc", 3);
	objfs_source_mem(&empty, "", 0);
	objfs_sink_membuf(&sink, &mb);
	(void)objfs_store_del(s, "cond/k");
	/* If-None-Match: * creates once, then refuses. */
	assert_int_equal(objfs_store_put(s, "cond/k", &src, &po, &info), 0);
	assert_int_equal(objfs_store_put(s, "cond/k", &src, &po, NULL), EEXIST);
	/* If-Match with the current ETag reads, a stale one is ESTALE. */
	go.if_match = info.etag;
	assert_int_equal(objfs_store_get(s, "cond/k", &go, &sink, NULL), 0);
	assert_int_equal(mb.len, 3);
	go.if_match = "\"00000000000000000000000000000000\"";
	assert_int_equal(objfs_store_get(s, "cond/k", &go, &sink, NULL),
			 ESTALE);
	/* An empty object reads as empty, also with a range from 0. */
	assert_int_equal(objfs_store_put(s, "cond/empty", &empty, NULL, NULL),
			 0);
	go.if_match = NULL;
	go.len = 10;
	mb.len = 0;
	assert_int_equal(objfs_store_get(s, "cond/empty", &go, &sink, &info),
			 0);
	assert_int_equal(mb.len, 0);
	assert_int_equal(info.size, 0);
	assert_int_equal(objfs_store_del(s, "cond/k"), 0);
	assert_int_equal(objfs_store_del(s, "cond/empty"), 0);
	/* Deleting again is fine. */
	assert_int_equal(objfs_store_del(s, "cond/k"), 0);
	objfs_membuf_release(&mb);
	objfs_obj_info_release(&info);
	objfs_store_destroy(s);
}

static void test_live_copy_parts(void **state)
{
	const size_t size = 11u << 20;
	struct objfs_meta meta = OBJFS_META_INIT, meta2 = OBJFS_META_INIT;
	struct objfs_put_opts po = { &meta, "text/x-test", false };
	struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_store *s;
	struct objfs_source src;
	struct objfs_sink sink;
	char *data;
	size_t i;

	(void)state;
	if (!have_live())
		return;
	s = live_store(NULL, 2);
	data = malloc(size);
	assert_non_null(data);
	for (i = 0; i < size; i++)
		data[i] = (char)(i * 7 + i / 4096);
	assert_int_equal(objfs_meta_set(&meta, "color", "blue"), 0);
	objfs_source_mem(&src, data, size);
	assert_int_equal(objfs_store_put(s, "cp/src", &src, &po, NULL), 0);

	/* Three UploadPartCopy parts (5 + 5 + 1 MiB), metadata kept. */
	assert_int_equal(objfs_s3_copy_multipart(s, "cp/src", "cp/dst a+b",
						 &co, 5u << 20, &info), 0);
	assert_int_equal(info.size, size);
	assert_true(strstr(info.etag, "-3") != NULL);
	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(objfs_store_get(s, "cp/dst a+b", NULL, &sink, &info),
			 0);
	assert_int_equal(mb.len, size);
	assert_memory_equal(mb.data, data, size);
	assert_string_equal(objfs_meta_get(&info.meta, "color"), "blue");
	assert_string_equal(info.content_type, "text/x-test");

	/* REPLACE takes the new metadata; a stale source ETag is ESTALE. */
	assert_int_equal(objfs_meta_set(&meta2, "color", "red"), 0);
	co.directive = OBJFS_META_REPLACE;
	co.meta = &meta2;
	co.content_type = "text/plain";
	assert_int_equal(objfs_s3_copy_multipart(s, "cp/src", "cp/dst2", &co,
						 5u << 20, NULL), 0);
	assert_int_equal(objfs_store_head(s, "cp/dst2", &info), 0);
	assert_string_equal(objfs_meta_get(&info.meta, "color"), "red");
	co.if_match = "\"0123\"";
	assert_int_equal(objfs_s3_copy_multipart(s, "cp/src", "cp/dst3", &co,
						 5u << 20, NULL), ESTALE);
	assert_int_equal(objfs_s3_copy_multipart(s, "cp/missing", "cp/dst3",
						 &co, 5u << 20, NULL), ENOENT);
	{
		const char *keys[] = { "cp/src", "cp/dst a+b", "cp/dst2" };
		size_t failed = 0;

		assert_int_equal(objfs_store_del_many(s, keys, 3, &failed), 0);
	}
	objfs_membuf_release(&mb);
	objfs_obj_info_release(&info);
	objfs_meta_release(&meta);
	objfs_meta_release(&meta2);
	free(data);
	objfs_store_destroy(s);
}

struct worker {
	struct objfs_store *s;
	int id;
	int err;
};

static void *hammer(void *arg)
{
	struct worker *w = arg;
	char key[64], data[64];
	int i;

	for (i = 0; i < 20 && w->err == 0; i++) {
		struct objfs_source src;
		struct objfs_fixedbuf fb = { NULL, 0, 0 };
		struct objfs_sink sink;
		char got[64];

		snprintf(key, sizeof(key), "hammer/%d/%d", w->id, i);
		snprintf(data, sizeof(data), "worker %d item %d", w->id, i);
		objfs_source_mem(&src, data, strlen(data));
		w->err = objfs_store_put(w->s, key, &src, NULL, NULL);
		if (w->err != 0)
			break;
		fb.data = got;
		fb.cap = sizeof(got);
		objfs_sink_fixed(&sink, &fb);
		w->err = objfs_store_get(w->s, key, NULL, &sink, NULL);
		if (w->err == 0 && (fb.got != strlen(data) ||
				    memcmp(got, data, fb.got) != 0))
			w->err = EIO;
		if (w->err == 0)
			w->err = objfs_store_del(w->s, key);
	}
	return NULL;
}

static void test_live_threads(void **state)
{
	struct worker w[8];
	pthread_t t[8];
	struct objfs_store *s;
	int i;

	(void)state;
	if (!have_live())
		return;
	s = live_store(NULL, 3);
	for (i = 0; i < 8; i++) {
		w[i].s = s;
		w[i].id = i;
		w[i].err = 0;
		assert_int_equal(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].err, 0);
	}
	objfs_store_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stall_threshold),
		cmocka_unit_test(test_answer_wait_stalled),
		cmocka_unit_test(test_slow_server_not_stalled),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_refused_and_silent),
		cmocka_unit_test(test_request_shape),
		cmocka_unit_test(test_list_query),
		cmocka_unit_test(test_error_mapping),
		cmocka_unit_test(test_range_ignored),
		cmocka_unit_test(test_no_secrets_in_logs),
		cmocka_unit_test(test_multipart_shapes),
		cmocka_unit_test(test_delete_many_shape),
		cmocka_unit_test(test_rgw_delete_many_scoped),
		cmocka_unit_test(test_delete_many_denied),
		cmocka_unit_test(test_missing_key_403),
		cmocka_unit_test(test_region_redirect),
		cmocka_unit_test(test_rgw_complete_etag),
		cmocka_unit_test(test_rgw_complete_aborted),
		cmocka_unit_test(test_rgw_copy),
		cmocka_unit_test(test_rgw_copy_parts_source_changed),
		cmocka_unit_test(test_rgw_forged_token),
		cmocka_unit_test(test_tls),
		cmocka_unit_test(test_live_wrong_secret),
		cmocka_unit_test(test_live_odd_keys),
		cmocka_unit_test(test_live_conditional),
		cmocka_unit_test(test_live_copy_parts),
		cmocka_unit_test(test_live_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
