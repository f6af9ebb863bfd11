/* Unit tests of store URLs and stack assembly (stack.c). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "common/buf.h"
#include "common/metrics.h"

static void parse_ok(const char *url, const char *scheme, const char *bucket,
		     const char *prefix)
{
	char *s = NULL, *b = NULL, *p = NULL;

	assert_int_equal(objfs_store_url_parse(url, &s, &b, &p), 0);
	assert_string_equal(s, scheme);
	assert_string_equal(b, bucket);
	assert_string_equal(p, prefix);
	free(s);
	free(b);
	free(p);
}

static void parse_bad(const char *url)
{
	char *s = (char *)1, *b = (char *)1, *p = (char *)1;

	assert_int_equal(objfs_store_url_parse(url, &s, &b, &p), EINVAL);
	assert_null(s);
	assert_null(b);
	assert_null(p);
}

static void test_parse(void **state)
{
	char big[5000];

	(void)state;
	parse_ok("s3://b", "s3", "b", "");
	parse_ok("s3://b/", "s3", "b", "");
	parse_ok("s3://my-bucket.x/p/q", "s3", "my-bucket.x", "p/q");
	parse_ok("s3://b/p/q/", "s3", "b", "p/q/");
	parse_ok("s3://b/vol a+b", "s3", "b", "vol a+b");
	parse_ok("file:///x/y", "file", "/x/y", "");
	parse_ok("file:///x//y/", "file", "/x/y", "");
	parse_ok("file:///x", "file", "/x", "");

	parse_bad(NULL);
	parse_bad("");
	parse_bad("s3://");
	parse_bad("s3:///p");
	parse_bad("s3://b@d/p");
	parse_bad("s3://b?x=1");
	parse_bad("s3://b/p#frag");
	parse_bad("s3:/b");
	parse_bad("S4://b");
	parse_bad("http://host/b");
	parse_bad("file://");
	parse_bad("file:///");
	parse_bad("file://host/x");
	parse_bad("file:relative/x");
	parse_bad("file:///x/../y");
	parse_bad("file:///x/./y");
	parse_bad("s3://b/p\nq");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "s3://b/", 7);
	parse_bad(big);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int put_str(struct objfs_store *s, const char *key, const char *v)
{
	struct objfs_source src;

	objfs_source_mem(&src, v, strlen(v));
	return objfs_store_put(s, key, &src, NULL, NULL);
}

static void test_file_stacks(void **state)
{
	char tmpl[] = "/tmp/objfs-stack-XXXXXX";
	char url[256], path[256];
	struct objfs_store_config cfg;
	struct objfs_store *a = NULL, *vol = NULL, *root = NULL;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_store_requests rq;
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	memset(&cfg, 0, sizeof(cfg));

	/* No marker anywhere: the path (and its parents) become a root. */
	snprintf(url, sizeof(url), "file://%s/new/store", tmpl);
	cfg.url = url;
	assert_int_equal(objfs_store_stack_create(&cfg, NULL, &a), 0);
	assert_string_equal(a->ops->name, "prefix");
	snprintf(path, sizeof(path), "%s/new/store/.objfs-store", tmpl);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(put_str(a, "k", "v"), 0);
	objfs_store_destroy(a);

	/* A deeper path under that root is a prefix inside it. */
	snprintf(url, sizeof(url), "file://%s/new/store/vols/v1/", tmpl);
	cfg.url = url;
	assert_int_equal(objfs_store_stack_create(&cfg, NULL, &vol), 0);
	assert_int_equal(put_str(vol, "file", "data"), 0);
	snprintf(path, sizeof(path), "%s/new/store/vols", tmpl);
	assert_int_not_equal(stat(path, &st), 0);   /* no new root made */
	snprintf(path, sizeof(path), "%s/new/store", tmpl);
	assert_int_equal(objfs_local_store_create(path, NULL, &root), 0);
	assert_int_equal(objfs_store_head(root, "vols/v1/file", &info), 0);
	assert_int_equal(info.size, 4);
	assert_int_equal(objfs_store_head(root, "k", &info), 0);
	assert_int_equal(objfs_store_head(vol, "k", &info), ENOENT);
	/* a file stack counts its requests too (one put, one head) */
	assert_int_equal(objfs_store_requests(vol, &rq), 0);
	assert_int_equal(rq.total, 2);
	assert_int_equal(rq.n[1], 1);
	assert_int_equal(rq.n[2], 1);
	assert_int_equal(objfs_store_requests(root, &rq), ENOENT);
	assert_int_equal(rq.total, 0);
	objfs_obj_info_release(&info);
	objfs_store_destroy(root);
	objfs_store_destroy(vol);

	cfg.url = "file:///x/../etc";
	assert_int_equal(objfs_store_stack_create(&cfg, NULL, &a), EINVAL);
	assert_null(a);
	assert_int_equal(nftw(tmpl, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void test_s3_stack(void **state)
{
	struct objfs_store_config cfg;
	struct objfs_store *s = NULL;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_store_requests rq;
	struct objfs_metrics *reg = NULL;
	struct objfs_buf text = OBJFS_BUF_INIT(1u << 20, EFBIG);
	char line[128];
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char ep[64];
	int fd;

	(void)state;
	/* A closed local port: creating never touches the network, using
	 * it is refused (one attempt, no retry sleeps). */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", ntohs(sa.sin_port));

	memset(&cfg, 0, sizeof(cfg));
	cfg.url = "s3://bkt/vols/v1";
	cfg.s3.endpoint = ep;
	cfg.s3.path_style = true;
	cfg.s3.access_key = "a";
	cfg.s3.secret_key = "b";
	cfg.retry.max_attempts = 1;
	assert_int_equal(objfs_store_stack_create(&cfg, NULL, &s), 0);
	assert_string_equal(s->ops->name, "prefix");
	assert_non_null(s->inner);
	assert_string_equal(s->inner->ops->name, "retry");
	assert_non_null(s->inner->inner);
	assert_string_equal(s->inner->inner->ops->name, "limit");
	assert_string_equal(s->inner->inner->inner->ops->name, "meter");
	assert_string_equal(s->inner->inner->inner->inner->ops->name, "s3");
	assert_null(s->inner->inner->inner->inner->inner);
	assert_int_equal(objfs_store_head(s, "k", &info), ECONNREFUSED);
	/* metrics off: the stack still counts its requests */
	assert_int_equal(objfs_store_requests(s, &rq), 0);
	assert_int_equal(rq.total, 1);
	assert_int_equal(rq.n[2], 1);           /* head */
	objfs_store_destroy(s);

	/* metrics on: objfs_store_requests_total counts the same tries */
	cfg.retry.max_attempts = 3;
	cfg.retry.base_delay_ms = 1;
	cfg.retry.max_delay_ms = 1;
	assert_int_equal(objfs_metrics_create(&reg), 0);
	cfg.metrics = reg;
	assert_int_equal(objfs_store_stack_create(&cfg, NULL, &s), 0);
	assert_int_equal(objfs_store_head(s, "k", &info), ECONNREFUSED);
	assert_int_equal(objfs_store_requests(s, &rq), 0);
	assert_int_equal(rq.total, 3);
	assert_int_equal(rq.n[2], 3);
	assert_int_equal(objfs_store_requests_format(&rq, line, sizeof(line)), 0);
	assert_string_equal(line, "total=3 head=3");
	assert_int_equal(objfs_metrics_render(reg, &text), 0);
	assert_non_null(strstr(text.p, "objfs_store_requests_total{op=\"head\",result=\"unreachable\"} 3\n"));
	/* the limit layer's: refused connections are no congestion */
	assert_non_null(strstr(text.p, "objfs_store_concurrency_limit 16\n"));
	assert_non_null(strstr(text.p, "objfs_store_concurrency_waits_total 0\n"));
	objfs_buf_release(&text);
	objfs_store_destroy(s);
	objfs_metrics_destroy(reg);
	cfg.metrics = NULL;
	cfg.retry.max_attempts = 1;

	cfg.url = "s3://bad/bucket?";
	assert_int_equal(objfs_store_stack_create(&cfg, NULL, &s), EINVAL);
	/* No endpoint: AWS's for the region, not a refusal. */
	cfg.url = "s3://bkt";
	cfg.s3.endpoint = NULL;
	cfg.s3.region = "eu-west-1";
	assert_int_equal(objfs_store_stack_create(&cfg, NULL, &s), 0);
	assert_string_equal(s->inner->inner->inner->inner->ops->name, "s3");
	objfs_store_destroy(s);
	s = NULL;
	cfg.s3.region = "eu west";
	assert_int_equal(objfs_store_stack_create(&cfg, NULL, &s), EINVAL);
	assert_null(s);
}

static void test_aws_endpoint(void **state)
{
	char buf[128];
	bool path = true;

	(void)state;
	assert_int_equal(objfs_s3_aws_endpoint("eu-west-1", "bkt", buf, sizeof(buf), &path), 0);
	assert_string_equal(buf, "https://s3.eu-west-1.amazonaws.com");
	assert_false(path);
	assert_int_equal(objfs_s3_aws_endpoint(NULL, "bkt", buf, sizeof(buf), &path), 0);
	assert_string_equal(buf, "https://s3.us-east-1.amazonaws.com");
	assert_int_equal(objfs_s3_aws_endpoint("", "my.dotted.bucket", buf, sizeof(buf), &path), 0);
	assert_true(path);
	assert_int_equal(objfs_s3_aws_endpoint("eu-west-1/../x", "b", buf, sizeof(buf), &path), EINVAL);
	assert_int_equal(objfs_s3_aws_endpoint("us-east-1", "b", buf, 10, &path), EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_file_stacks),
		cmocka_unit_test(test_s3_stack),
		cmocka_unit_test(test_aws_endpoint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
