/* Unit tests of common/metrics.c and common/metrics_http.c: the text
 * exposition (escaping, cumulative buckets, _sum and _count, sparse
 * families), registration rules, counters and histograms under many
 * threads, merging expositions under extra labels, and the /metrics
 * responder and client over a unix socket (a long path, a successor
 * taking the name over). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/metrics.h"
#include "common/metrics_http.h"

static const char *const odd_values[] = { "a\"b", "c\\d", "e\nf" };
static const char *const ops[] = { "get", "put" };

static const struct objfs_metric_def def_odd = {
	.name = "t_odd_total",
	.help = "Help with a \\ and a\nline break.",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "v", odd_values, 3 } },
	.n_labels = 1,
};

static const double bounds[] = { 0.001, 0.01, 0.1 };

static const struct objfs_metric_def def_hist = {
	.name = "t_seconds",
	.help = "A histogram.",
	.type = OBJFS_METRIC_HISTOGRAM,
	.labels = { { "op", ops, 2 } },
	.n_labels = 1,
	.bounds = bounds,
	.n_bounds = 3,
	.scale = 1e9,
	.sparse = true,
};

static const struct objfs_metric_def def_gauge = {
	.name = "t_gauge",
	.help = "A gauge.",
	.type = OBJFS_METRIC_GAUGE,
};

static char *render(struct objfs_metrics *reg)
{
	struct objfs_buf b = OBJFS_BUF_INIT(1 << 20, EFBIG);

	assert_int_equal(objfs_metrics_render(reg, &b), 0);
	return objfs_buf_detach(&b);
}

static void test_exposition(void **state)
{
	struct objfs_metrics *reg;
	struct objfs_metric *odd, *h, *g;
	size_t idx[1] = { 2 };
	char *t;

	(void)state;
	assert_int_equal(objfs_metrics_create(&reg), 0);
	assert_int_equal(objfs_metrics_register(reg, &def_odd, &odd), 0);
	assert_int_equal(objfs_metrics_register(reg, &def_hist, &h), 0);
	assert_int_equal(objfs_metrics_register(reg, &def_gauge, &g), 0);
	objfs_metric_add(odd, objfs_metric_index(odd, idx), 3);
	objfs_metric_add(odd, 0, 1);
	/* 0.5 ms, 1 ms (on the bound: in it), 5 ms, 2 s: put only */
	objfs_metric_observe(h, 1, 500000);
	objfs_metric_observe(h, 1, 1000000);
	objfs_metric_observe(h, 1, 5000000);
	objfs_metric_observe(h, 1, 2000000000);
	objfs_metric_set(g, 0, -7);
	t = render(reg);
	assert_non_null(strstr(t,
		"# HELP t_odd_total Help with a \\\\ and a\\nline break.\n"
		"# TYPE t_odd_total counter\n"
		"t_odd_total{v=\"a\\\"b\"} 1\n"
		"t_odd_total{v=\"c\\\\d\"} 0\n"
		"t_odd_total{v=\"e\\nf\"} 3\n"));
	/* sparse: get never moved, so it is absent; buckets cumulative */
	assert_null(strstr(t, "op=\"get\""));
	assert_non_null(strstr(t,
		"# TYPE t_seconds histogram\n"
		"t_seconds_bucket{op=\"put\",le=\"0.001\"} 2\n"
		"t_seconds_bucket{op=\"put\",le=\"0.01\"} 3\n"
		"t_seconds_bucket{op=\"put\",le=\"0.1\"} 3\n"
		"t_seconds_bucket{op=\"put\",le=\"+Inf\"} 4\n"
		"t_seconds_sum{op=\"put\"} 2.0065\n"
		"t_seconds_count{op=\"put\"} 4\n"));
	assert_non_null(strstr(t, "# TYPE t_gauge gauge\nt_gauge -7\n"));
	assert_int_equal(objfs_metric_value(h, 1), 4);
	free(t);
	objfs_metrics_destroy(reg);
}

static void test_register_rules(void **state)
{
	static const struct objfs_metric_def bad_name = {
		.name = "1bad", .help = "x", .type = OBJFS_METRIC_COUNTER,
	};
	static const struct objfs_metric_def other_odd = {
		.name = "t_odd_total", .help = "x", .type = OBJFS_METRIC_COUNTER,
	};
	static const double unsorted[] = { 1, 0.5 };
	static const struct objfs_metric_def bad_bounds = {
		.name = "t_b", .help = "x", .type = OBJFS_METRIC_HISTOGRAM,
		.bounds = unsorted, .n_bounds = 2,
	};
	static const struct objfs_metric_def le_label = {
		.name = "t_le", .help = "x", .type = OBJFS_METRIC_COUNTER,
		.labels = { { "le", ops, 2 } }, .n_labels = 1,
	};
	struct objfs_metrics *reg;
	struct objfs_metric *a, *b;

	(void)state;
	assert_int_equal(objfs_metrics_register(NULL, &def_odd, &a), 0);
	assert_null(a);
	objfs_metric_add(a, 0, 1);      /* NULL: nothing, no crash */
	assert_int_equal(objfs_metrics_create(&reg), 0);
	assert_int_equal(objfs_metrics_register(reg, &bad_name, &a), EINVAL);
	assert_int_equal(objfs_metrics_register(reg, &bad_bounds, &a), EINVAL);
	assert_int_equal(objfs_metrics_register(reg, &le_label, &a), EINVAL);
	assert_int_equal(objfs_metrics_register(reg, &def_odd, &a), 0);
	/* the same def again shares; another def of the name does not */
	assert_int_equal(objfs_metrics_register(reg, &def_odd, &b), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(objfs_metrics_register(reg, &other_odd, &b), EEXIST);
	objfs_metrics_destroy(reg);
}

#define THREADS 8
#define ADDS 200000

struct worker {
	struct objfs_metric *c, *h;
	pthread_barrier_t *go;
};

static void *hammer(void *arg)
{
	struct worker *w = arg;
	unsigned i;

	pthread_barrier_wait(w->go);
	for (i = 0; i < ADDS; i++) {
		objfs_metric_add(w->c, i & 1, 1);
		objfs_metric_observe(w->h, 0, (uint64_t)(i % 4) * 1000000);
	}
	return NULL;
}

static void test_concurrency(void **state)
{
	struct objfs_metrics *reg;
	struct objfs_metric *c, *h;
	pthread_t t[THREADS];
	struct worker w[THREADS];
	pthread_barrier_t go;
	char *text, line[128];
	unsigned i;

	(void)state;
	assert_int_equal(objfs_metrics_create(&reg), 0);
	assert_int_equal(objfs_metrics_register(reg, &def_odd, &c), 0);
	assert_int_equal(objfs_metrics_register(reg, &def_hist, &h), 0);
	pthread_barrier_init(&go, NULL, THREADS);
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ c, h, &go };
		assert_int_equal(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	assert_int_equal(objfs_metric_value(c, 0), THREADS * ADDS / 2);
	assert_int_equal(objfs_metric_value(c, 1), THREADS * ADDS / 2);
	assert_int_equal(objfs_metric_value(h, 0), THREADS * ADDS);
	text = render(reg);
	/* observations of 0, 1, 2, 3 ms: le 0.001 holds 0 and 1 ms */
	snprintf(line, sizeof(line), "t_seconds_bucket{op=\"get\",le=\"0.001\"} %u\n",
		 THREADS * ADDS / 2);
	assert_non_null(strstr(text, line));
	snprintf(line, sizeof(line), "t_seconds_count{op=\"get\"} %u\n", THREADS * ADDS);
	assert_non_null(strstr(text, line));
	/* sum: (0+1+2+3)/4 ms average */
	snprintf(line, sizeof(line), "t_seconds_sum{op=\"get\"} %g\n",
		 (double)THREADS * ADDS * 1.5e-3);
	assert_non_null(strstr(text, line));
	free(text);
	objfs_metrics_destroy(reg);
}

static void test_merge(void **state)
{
	static const char *const names[] = { "volume_id", "pvc" };
	static const char *const v1[] = { "vol-1", "data \"x\"" };
	static const char *const v2[] = { "vol-2", "logs" };
	const char *a =
		"# HELP m_total Things.\n# TYPE m_total counter\n"
		"m_total{op=\"get\"} 1\nm_total{op=\"put\",} 2\n"
		"# HELP h Hist.\n# TYPE h histogram\n"
		"h_bucket{le=\"+Inf\"} 3\nh_sum 0.5\nh_count 3\n"
		"# a comment\n";
	const char *b =
		"# HELP m_total Things.\n# TYPE m_total counter\n"
		"m_total 7\n"
		"# HELP g A gauge.\n# TYPE g gauge\ng{} 4\n";
	const char *own = "# HELP up Up.\n# TYPE up gauge\nup 1\n";
	struct objfs_metrics_source src[3] = {
		{ own, NULL, NULL, 0 },
		{ a, names, v1, 2 },
		{ b, names, v2, 2 },
	};
	struct objfs_buf out = OBJFS_BUF_INIT(1 << 20, EFBIG);

	(void)state;
	assert_int_equal(objfs_metrics_merge(src, 3, &out), 0);
	assert_string_equal(out.p,
		"# HELP up Up.\n# TYPE up gauge\nup 1\n"
		"# HELP m_total Things.\n# TYPE m_total counter\n"
		"m_total{volume_id=\"vol-1\",pvc=\"data \\\"x\\\"\",op=\"get\"} 1\n"
		"m_total{volume_id=\"vol-1\",pvc=\"data \\\"x\\\"\",op=\"put\"} 2\n"
		"m_total{volume_id=\"vol-2\",pvc=\"logs\"} 7\n"
		"# HELP h Hist.\n# TYPE h histogram\n"
		"h_bucket{volume_id=\"vol-1\",pvc=\"data \\\"x\\\"\",le=\"+Inf\"} 3\n"
		"h_sum{volume_id=\"vol-1\",pvc=\"data \\\"x\\\"\"} 0.5\n"
		"h_count{volume_id=\"vol-1\",pvc=\"data \\\"x\\\"\"} 3\n"
		"# HELP g A gauge.\n# TYPE g gauge\n"
		"g{volume_id=\"vol-2\",pvc=\"logs\"} 4\n");
	objfs_buf_release(&out);

	/* a label block that never ends is refused */
	src[1].text = "x{a=\"}\" 1\n";
	out = (struct objfs_buf)OBJFS_BUF_INIT(1 << 20, EFBIG);
	assert_int_equal(objfs_metrics_merge(&src[1], 1, &out), EINVAL);
	objfs_buf_release(&out);
}

static void test_addr_parse(void **state)
{
	char host[64], port[8];

	(void)state;
	assert_int_equal(objfs_metrics_addr_parse("9100", host, sizeof(host), port,
						  sizeof(port)), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_string_equal(port, "9100");
	assert_int_equal(objfs_metrics_addr_parse("0.0.0.0:80", host, sizeof(host),
						  port, sizeof(port)), 0);
	assert_string_equal(host, "0.0.0.0");
	assert_int_equal(objfs_metrics_addr_parse("[::1]:9", host, sizeof(host),
						  port, sizeof(port)), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(objfs_metrics_addr_parse("h:0", host, sizeof(host), port,
						  sizeof(port)), EINVAL);
	assert_int_equal(objfs_metrics_addr_parse("h:70000", host, sizeof(host),
						  port, sizeof(port)), EINVAL);
	assert_int_equal(objfs_metrics_addr_parse("::1:9", host, sizeof(host), port,
						  sizeof(port)), EINVAL);
	assert_int_equal(objfs_metrics_addr_parse("", host, sizeof(host), port,
						  sizeof(port)), EINVAL);
}

static int render_const(void *arg, struct objfs_buf *out)
{
	objfs_buf_adds(out, arg);
	return 0;
}

static void test_http(void **state)
{
	char dir[] = "/tmp/objfs-metrics-XXXXXX";
	char deep[512], sock[600];
	struct objfs_metrics_server_config c = { 0 };
	struct objfs_metrics_server *s1 = NULL, *s2 = NULL;
	struct objfs_buf b = OBJFS_BUF_INIT(1 << 20, EFBIG);
	struct stat st;
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* a path longer than sockaddr_un holds */
	n = (size_t)snprintf(deep, sizeof(deep), "%s/%0100d", dir, 0);
	assert_true(n > 110);
	assert_int_equal(mkdir(deep, 0700), 0);
	snprintf(sock, sizeof(sock), "%s/metrics.sock", deep);
	assert_int_equal(objfs_metrics_fetch_unix(sock, 1000, &b), ENOENT);

	c.unix_path = sock;
	c.render = render_const;
	c.arg = "first 1\n";
	assert_int_equal(objfs_metrics_server_start(&c, &s1), 0);
	assert_int_equal(objfs_metrics_fetch_unix(sock, 2000, &b), 0);
	assert_string_equal(b.p, "first 1\n");
	objfs_buf_reset(&b);

	/* a successor takes the name; the first one's stop leaves it */
	c.arg = "second 2\n";
	assert_int_equal(objfs_metrics_server_start(&c, &s2), 0);
	objfs_metrics_server_stop(s1);
	assert_int_equal(stat(sock, &st), 0);
	assert_int_equal(objfs_metrics_fetch_unix(sock, 2000, &b), 0);
	assert_string_equal(b.p, "second 2\n");
	objfs_metrics_server_stop(s2);
	assert_int_not_equal(stat(sock, &st), 0);
	objfs_buf_release(&b);
	assert_int_equal(rmdir(deep), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* A client that sends its head a byte at a time, every 100 ms, until
 * told to stop or cut off by the server. */
struct trickle {
	const char *path;
	volatile int stop;
	int cut;                /* the server closed it */
};

static void *trickle_main(void *arg)
{
	struct trickle *t = arg;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), i;
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", t->path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		goto out;
	/* at most 60 s: the server cuts it off long before */
	for (i = 0; i < 600 && !t->stop; i++) {
		if (send(fd, "G", 1, MSG_NOSIGNAL) != 1) {
			t->cut = 1;
			break;
		}
		nanosleep(&ts, NULL);
	}
out:
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* Slow clients delay no scrape: each has IO_TIMEOUT_S for its whole
 * request, and the others are served meanwhile. */
static void test_http_slow_clients(void **state)
{
	char dir[] = "/tmp/objfs-metrics-XXXXXX", sock[64];
	struct objfs_metrics_server_config c = { 0 };
	struct objfs_metrics_server *s = NULL;
	struct objfs_buf b = OBJFS_BUF_INIT(1 << 20, EFBIG);
	struct trickle t[3];
	pthread_t th[3];
	int i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/m.sock", dir);
	c.unix_path = sock;
	c.render = render_const;
	c.arg = "up 1\n";
	assert_int_equal(objfs_metrics_server_start(&c, &s), 0);
	for (i = 0; i < 3; i++) {
		t[i] = (struct trickle){ .path = sock };
		assert_int_equal(pthread_create(&th[i], NULL, trickle_main, &t[i]), 0);
	}
	/* with the tricklers connected (the server served one at a time
	 * before, each as long as it kept sending) */
	for (i = 0; i < 5; i++) {
		assert_int_equal(objfs_metrics_fetch_unix(sock, 30000, &b), 0);
		assert_string_equal(b.p, "up 1\n");
		objfs_buf_reset(&b);
	}
	/* and the server cuts them off by itself */
	for (i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_true(t[i].cut);
	}
	objfs_metrics_server_stop(s);
	objfs_buf_release(&b);
	assert_int_equal(rmdir(dir), 0);
}

/* A one-shot server that answers with fixed bytes and closes. */
struct shortsrv {
	int lfd;
	const char *answer;
};

static void *shortsrv_main(void *arg)
{
	struct shortsrv *ss = arg;
	char buf[512];
	int fd = accept(ss->lfd, NULL, NULL);

	if (fd >= 0) {
		(void)!recv(fd, buf, sizeof(buf), 0);
		(void)!send(fd, ss->answer, strlen(ss->answer), MSG_NOSIGNAL);
		close(fd);
	}
	return NULL;
}

/* An answer shorter than a status line is EPROTO, read within its bytes. */
static void test_fetch_short_answer(void **state)
{
	static const char *const answers[] = { "", "HTTP/1.", "HTTP/1.1", "HTTP/1.1 20",
					      "HTTP/1.1 500 x\r\n\r\n" };
	char dir[] = "/tmp/objfs-metrics-XXXXXX";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct objfs_buf b = OBJFS_BUF_INIT(1 << 20, EFBIG);
	size_t i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s.sock", dir);
	for (i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		struct shortsrv ss = { .answer = answers[i] };
		pthread_t th;

		ss.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(ss.lfd >= 0);
		unlink(sa.sun_path);
		assert_int_equal(bind(ss.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(listen(ss.lfd, 1), 0);
		assert_int_equal(pthread_create(&th, NULL, shortsrv_main, &ss), 0);
		assert_int_equal(objfs_metrics_fetch_unix(sa.sun_path, 30000, &b), EPROTO);
		assert_int_equal(pthread_join(th, NULL), 0);
		close(ss.lfd);
		objfs_buf_reset(&b);
	}
	unlink(sa.sun_path);
	objfs_buf_release(&b);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition),
		cmocka_unit_test(test_register_rules),
		cmocka_unit_test(test_concurrency),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_addr_parse),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_http_slow_clients),
		cmocka_unit_test(test_fetch_short_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
