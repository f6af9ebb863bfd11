/*
 * Unit tests of the limit layer (limit.c) over a stub leaf whose latency
 * (on a fake clock) and errors the tests script, and which can hold its
 * callers at a gate to make requests pile up.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/limit.h"
#include "backend/retry.h"
#include "common/buf.h"
#include "common/metrics.h"

/* ---- the stub leaf ------------------------------------------------------ */

struct stub {
	uint64_t now;                   /* atomic: the fake clock (ms) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool gated;                     /* mu: callers wait at the gate */
	unsigned running, max_running;  /* mu */
	unsigned calls;                 /* mu */
	int err;                        /* mu: what a call answers */
	unsigned fail_first;            /* mu: the first N calls fail with
					   fail_err, the rest answer err */
	int fail_err;
	unsigned lat_ms;                /* mu: a call's latency */
	unsigned xfer_ms;               /* mu: a get's or put's transfer */
};

static uint64_t fake_now(void *arg)
{
	return __atomic_load_n(&((struct stub *)arg)->now, __ATOMIC_RELAXED);
}

static void advance(struct stub *st, unsigned ms)
{
	__atomic_add_fetch(&st->now, ms, __ATOMIC_RELAXED);
}

static void fake_sleep(void *arg, unsigned ms)
{
	advance(arg, ms);
}

/* Enters a call: waits at the gate, counts; returns the answer and the
 * latency and transfer times to play. */
static int enter(struct stub *st, unsigned *lat, unsigned *xfer)
{
	int err;

	pthread_mutex_lock(&st->mu);
	st->running++;
	if (st->running > st->max_running)
		st->max_running = st->running;
	pthread_cond_broadcast(&st->cv);
	while (st->gated)
		pthread_cond_wait(&st->cv, &st->mu);
	err = st->calls < st->fail_first ? st->fail_err : st->err;
	st->calls++;
	*lat = st->lat_ms;
	*xfer = st->xfer_ms;
	pthread_mutex_unlock(&st->mu);
	return err;
}

static void leave(struct stub *st)
{
	pthread_mutex_lock(&st->mu);
	st->running--;
	pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
}

static int stub_head(struct objfs_store *s, const char *key,
		     struct objfs_obj_info *info)
{
	struct stub *st = s->ctx;
	unsigned lat, xfer;
	int err = enter(st, &lat, &xfer);

	(void)key;
	(void)info;
	advance(st, lat);
	leave(st);
	return err;
}

/* lat to the first byte, then xfer to the second. */
static int stub_get(struct objfs_store *s, const char *key,
		    const struct objfs_get_opts *opts,
		    const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	struct stub *st = s->ctx;
	unsigned lat, xfer;
	int err = enter(st, &lat, &xfer);

	(void)key;
	(void)opts;
	(void)info;
	advance(st, lat);
	if (err == 0)
		err = sink->write_at(sink->arg, 0, "a", 1);
	advance(st, xfer);
	if (err == 0)
		err = sink->write_at(sink->arg, 1, "b", 1);
	leave(st);
	return err;
}

/* The body read over xfer, then lat to the answer. */
static int stub_put(struct objfs_store *s, const char *key,
		    const struct objfs_source *src,
		    const struct objfs_put_opts *opts,
		    struct objfs_obj_info *info)
{
	struct stub *st = s->ctx;
	unsigned lat, xfer;
	char buf[4];
	uint64_t off;
	int err = enter(st, &lat, &xfer);

	(void)key;
	(void)opts;
	(void)info;
	for (off = 0; err == 0 && off < src->size; off++) {
		advance(st, xfer / (unsigned)src->size);
		err = src->read_at(src->arg, off, buf, 1);
	}
	advance(st, lat);
	leave(st);
	return err;
}

static int stub_list(struct objfs_store *s, const struct objfs_list_req *req,
		     struct objfs_list_page *page)
{
	(void)s; (void)req; (void)page;
	return EOPNOTSUPP;
}

static int stub_copy(struct objfs_store *s, const char *src, const char *dst,
		     const struct objfs_copy_opts *opts,
		     struct objfs_obj_info *info)
{
	(void)s; (void)src; (void)dst; (void)opts; (void)info;
	return EOPNOTSUPP;
}

static int stub_del(struct objfs_store *s, const char *key)
{
	(void)s; (void)key;
	return EOPNOTSUPP;
}

static int stub_del_many(struct objfs_store *s, const char *const *keys,
			 size_t n, size_t *failed)
{
	(void)s; (void)keys; (void)n; (void)failed;
	return EOPNOTSUPP;
}

static int stub_mpu_create(struct objfs_store *s, const char *key,
			   const struct objfs_put_opts *opts, char **upload_id)
{
	(void)s; (void)key; (void)opts; (void)upload_id;
	return EOPNOTSUPP;
}

static int stub_mpu_part(struct objfs_store *s, const char *key,
			 const char *upload_id, unsigned number,
			 const struct objfs_source *src, struct objfs_part *part)
{
	(void)s; (void)key; (void)upload_id; (void)number; (void)src; (void)part;
	return EOPNOTSUPP;
}

static int stub_mpu_complete(struct objfs_store *s, const char *key,
			     const char *upload_id,
			     const struct objfs_part *parts, size_t n,
			     struct objfs_obj_info *info)
{
	(void)s; (void)key; (void)upload_id; (void)parts; (void)n; (void)info;
	return EOPNOTSUPP;
}

static int stub_mpu_abort(struct objfs_store *s, const char *key,
			  const char *upload_id)
{
	(void)s; (void)key; (void)upload_id;
	return EOPNOTSUPP;
}

static void stub_destroy(struct objfs_store *s)
{
	free(s);
}

static const struct objfs_store_ops stub_ops = {
	.name = "stub",
	.get = stub_get,
	.put = stub_put,
	.head = stub_head,
	.list = stub_list,
	.copy = stub_copy,
	.del = stub_del,
	.del_many = stub_del_many,
	.mpu_create = stub_mpu_create,
	.mpu_part = stub_mpu_part,
	.mpu_complete = stub_mpu_complete,
	.mpu_abort = stub_mpu_abort,
	.destroy = stub_destroy,
};

/* ---- fixture: [retry ->] limit -> stub ---------------------------------- */

struct fixture {
	struct stub st;
	struct objfs_store *limit;      /* the limit layer */
	struct objfs_store *top;        /* retry, or the limit layer */
	struct objfs_metrics *reg;
};

static struct fixture *build(unsigned max, bool retry)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct objfs_store *leaf = calloc(1, sizeof(*leaf));
	struct objfs_limit_config cfg = { 0 };

	assert_non_null(f);
	assert_non_null(leaf);
	pthread_mutex_init(&f->st.mu, NULL);
	pthread_cond_init(&f->st.cv, NULL);
	f->st.now = 1000;
	f->st.lat_ms = 10;
	leaf->ops = &stub_ops;
	leaf->ctx = &f->st;
	assert_int_equal(objfs_metrics_create(&f->reg), 0);
	cfg.max = max;
	cfg.metrics = f->reg;
	assert_int_equal(objfs_limit_store_create(leaf, &cfg, &f->limit), 0);
	assert_int_equal(objfs_limit_store_set_clock(f->limit, fake_now,
						     &f->st), 0);
	f->top = f->limit;
	if (retry) {
		struct objfs_retry_config rc = {
			.max_attempts = OBJFS_RETRY_UNLIMITED,
			.max_total_ms = 600000,
		};
		struct objfs_retry_hooks h = { fake_sleep, fake_now, &f->st };

		assert_int_equal(objfs_retry_store_create(f->limit, &rc,
							  &f->top), 0);
		assert_int_equal(objfs_retry_store_set_hooks(f->top, &h), 0);
	}
	return f;
}

static void teardown(struct fixture *f)
{
	objfs_store_destroy(f->top);
	objfs_metrics_destroy(f->reg);
	pthread_cond_destroy(&f->st.cv);
	pthread_mutex_destroy(&f->st.mu);
	free(f);
}

static unsigned limit_now(struct fixture *f)
{
	unsigned l = 0;

	assert_int_equal(objfs_limit_store_stats(f->limit, &l, NULL, NULL), 0);
	return l;
}

static void script(struct fixture *f, int err, unsigned lat, unsigned xfer)
{
	pthread_mutex_lock(&f->st.mu);
	f->st.err = err;
	f->st.lat_ms = lat;
	f->st.xfer_ms = xfer;
	pthread_mutex_unlock(&f->st.mu);
}

static void gate(struct fixture *f, bool shut)
{
	pthread_mutex_lock(&f->st.mu);
	f->st.gated = shut;
	pthread_cond_broadcast(&f->st.cv);
	pthread_mutex_unlock(&f->st.mu);
}

/* Waits (really, briefly) until cond(f) holds; fails the test after 10 s. */
static void await(struct fixture *f, bool (*cond)(struct fixture *, unsigned),
		  unsigned arg)
{
	struct timespec ts = { 0, 1000000L };
	unsigned i;

	for (i = 0; i < 10000 && !cond(f, arg); i++)
		nanosleep(&ts, NULL);
	assert_true(cond(f, arg));
}

static bool running_is(struct fixture *f, unsigned n)
{
	unsigned r;

	pthread_mutex_lock(&f->st.mu);
	r = f->st.running;
	pthread_mutex_unlock(&f->st.mu);
	return r == n;
}

static bool waits_reach(struct fixture *f, unsigned n)
{
	uint64_t w = 0;

	objfs_limit_store_stats(f->limit, NULL, NULL, &w);
	return w >= n;
}

/* ---- tests -------------------------------------------------------------- */

/* Timeouts and throttling bring L down by x 0.7 each, to 2 at least; fast
 * answers bring it back by 1 per L of them, up to max. */
static void test_falls_and_rises(void **state)
{
	struct fixture *f = build(16, false);
	unsigned i, want[] = { 11, 7, 4, 2, 2 };

	(void)state;
	assert_int_equal(limit_now(f), 16);
	for (i = 0; i < 5; i++) {
		script(f, i % 2 == 0 ? ETIMEDOUT : EAGAIN, 10, 0);
		assert_int_equal(objfs_store_head(f->top, "k", NULL),
				 i % 2 == 0 ? ETIMEDOUT : EAGAIN);
		assert_int_equal(limit_now(f), want[i]);
	}
	/* an error that is no congestion leaves it */
	script(f, ECONNREFUSED, 10, 0);
	assert_int_equal(objfs_store_head(f->top, "k", NULL), ECONNREFUSED);
	assert_int_equal(limit_now(f), 2);
	/* 2 + 3 + ... + 15 fast answers bring it back to 16 */
	script(f, 0, 10, 0);
	for (i = 0; i < 119; i++)
		assert_int_equal(objfs_store_head(f->top, "k", NULL), 0);
	assert_int_equal(limit_now(f), 16);
	for (i = 0; i < 100; i++)
		assert_int_equal(objfs_store_head(f->top, "k", NULL), 0);
	assert_int_equal(limit_now(f), 16);     /* max is the ceiling */
	teardown(f);
}

/* Latency: far above the median (4 x p50, 200 ms at least) is a
 * decrease; between the target and far holds L; a get counts its first
 * byte and a put its answer after the body, not the transfer. */
static void test_latency(void **state)
{
	struct fixture *f = build(16, false);
	struct objfs_fixedbuf fb;
	struct objfs_sink sink;
	struct objfs_source src;
	char buf[8];
	unsigned i;

	(void)state;
	script(f, 0, 100, 0);
	for (i = 0; i < OBJFS_LIMIT_SAMPLES; i++)
		assert_int_equal(objfs_store_head(f->top, "k", NULL), 0);
	assert_int_equal(limit_now(f), 16);
	script(f, 0, 300, 0);           /* over 2 x p50, under 4 x */
	assert_int_equal(objfs_store_head(f->top, "k", NULL), 0);
	assert_int_equal(limit_now(f), 16);
	script(f, 0, 400, 0);           /* 4 x p50 */
	assert_int_equal(objfs_store_head(f->top, "k", NULL), 0);
	assert_int_equal(limit_now(f), 11);
	/* a get of 100 ms to its first byte and 10 s of transfer */
	script(f, 0, 100, 10000);
	fb.data = buf;
	fb.cap = sizeof(buf);
	fb.got = 0;
	objfs_sink_fixed(&sink, &fb);
	for (i = 0; i < 11; i++) {
		struct objfs_get_opts go = OBJFS_GET_ALL;

		assert_int_equal(objfs_store_get(f->top, "k", &go, &sink,
						 NULL), 0);
	}
	assert_int_equal(limit_now(f), 12);     /* 11 fast: + 1 */
	/* a put of 10 s of body and 100 ms to its answer */
	objfs_source_mem(&src, "0123456789", 10);
	for (i = 0; i < 12; i++)
		assert_int_equal(objfs_store_put(f->top, "k", &src, NULL,
						 NULL), 0);
	assert_int_equal(limit_now(f), 13);     /* 12 fast: + 1 */
	/* the same get, silent for 10 s before its first byte */
	script(f, 0, 10000, 100);
	{
		struct objfs_get_opts go = OBJFS_GET_ALL;

		assert_int_equal(objfs_store_get(f->top, "k", &go, &sink,
						 NULL), 0);
	}
	assert_int_equal(limit_now(f), 9);
	teardown(f);
}

struct worker {
	struct fixture *f;
	struct objfs_cancel *cancel;
	unsigned n;                     /* calls to make */
	int err;                        /* the first error, or 0 */
	pthread_t t;
};

static void *head_worker(void *arg)
{
	struct worker *w = arg;
	unsigned i;
	int err;

	for (i = 0; i < w->n; i++) {
		err = objfs_store_head(w->f->top, "k", NULL);
		if (err != 0 && w->err == 0)
			w->err = err;
	}
	return NULL;
}

static void *get_worker(void *arg)
{
	struct worker *w = arg;
	struct objfs_get_opts go = OBJFS_GET_ALL;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_sink sink;

	objfs_sink_membuf(&sink, &mb);
	go.cancel = w->cancel;
	w->err = objfs_store_get(w->f->top, "k", &go, &sink, NULL);
	objfs_membuf_release(&mb);
	return NULL;
}

/* Many requests that fail together (one overload) lower L once. */
static void test_one_decrease_per_overload(void **state)
{
	struct fixture *f = build(16, false);
	struct worker w[8];
	unsigned i;

	(void)state;
	script(f, ETIMEDOUT, 10, 0);
	gate(f, true);
	for (i = 0; i < 8; i++) {
		w[i] = (struct worker){ .f = f, .n = 1 };
		assert_int_equal(pthread_create(&w[i].t, NULL, head_worker,
						&w[i]), 0);
	}
	await(f, running_is, 8);
	gate(f, false);
	for (i = 0; i < 8; i++) {
		pthread_join(w[i].t, NULL);
		assert_int_equal(w[i].err, ETIMEDOUT);
	}
	assert_int_equal(limit_now(f), 11);
	/* the next failure, begun after the decrease, counts again */
	assert_int_equal(objfs_store_head(f->top, "k", NULL), ETIMEDOUT);
	assert_int_equal(limit_now(f), 7);
	teardown(f);
}

/* Requests past L wait, never fail, and all are served; at most L run. */
static void test_waiters_served(void **state)
{
	struct fixture *f = build(4, false);
	struct worker w[12];
	unsigned i, in_flight = 0;
	uint64_t waits = 0;

	(void)state;
	gate(f, true);
	for (i = 0; i < 12; i++) {
		w[i] = (struct worker){ .f = f, .n = 1 };
		assert_int_equal(pthread_create(&w[i].t, NULL, head_worker,
						&w[i]), 0);
	}
	await(f, running_is, 4);
	await(f, waits_reach, 8);
	assert_int_equal(objfs_limit_store_stats(f->limit, NULL, &in_flight,
						 &waits), 0);
	assert_int_equal(in_flight, 4);
	assert_int_equal(waits, 8);
	assert_true(running_is(f, 4));
	gate(f, false);
	for (i = 0; i < 12; i++) {
		pthread_join(w[i].t, NULL);
		assert_int_equal(w[i].err, 0);
	}
	assert_int_equal(f->st.calls, 12);
	assert_int_equal(f->st.max_running, 4);
	assert_int_equal(objfs_limit_store_stats(f->limit, NULL, &in_flight,
						 NULL), 0);
	assert_int_equal(in_flight, 0);
	/* exported */
	{
		struct objfs_buf out = OBJFS_BUF_INIT(1 << 20, EFBIG);

		assert_int_equal(objfs_metrics_render(f->reg, &out), 0);
		assert_non_null(strstr(out.p,
				       "objfs_store_concurrency_limit 4"));
		assert_non_null(strstr(out.p,
				       "objfs_store_concurrency_waits_total 8"));
		objfs_buf_release(&out);
	}
	teardown(f);
}

/* A waiting get whose cancel fires leaves with ECANCELED, sending
 * nothing. */
static void test_cancelled_wait(void **state)
{
	struct fixture *f = build(2, false);
	struct worker w[2], g;
	struct objfs_cancel c;
	unsigned i;

	(void)state;
	objfs_cancel_init(&c);
	gate(f, true);
	for (i = 0; i < 2; i++) {
		w[i] = (struct worker){ .f = f, .n = 1 };
		assert_int_equal(pthread_create(&w[i].t, NULL, head_worker,
						&w[i]), 0);
	}
	await(f, running_is, 2);
	g = (struct worker){ .f = f, .cancel = &c };
	assert_int_equal(pthread_create(&g.t, NULL, get_worker, &g), 0);
	await(f, waits_reach, 1);
	objfs_cancel_fire(&c);
	pthread_join(g.t, NULL);
	assert_int_equal(g.err, ECANCELED);
	gate(f, false);
	for (i = 0; i < 2; i++) {
		pthread_join(w[i].t, NULL);
		assert_int_equal(w[i].err, 0);
	}
	assert_int_equal(f->st.calls, 2);
	objfs_cancel_release(&c);
	teardown(f);
}

/* Under the retry layer: a throttling store that recovers; 8 threads of
 * 50 calls, every try waiting for a slot; all succeed, nothing hangs,
 * and L comes back up. */
static void test_under_retry(void **state)
{
	struct fixture *f = build(4, true);
	struct worker w[8];
	unsigned i, in_flight = 1;

	(void)state;
	pthread_mutex_lock(&f->st.mu);
	f->st.fail_first = 40;
	f->st.fail_err = EAGAIN;
	f->st.lat_ms = 1;
	pthread_mutex_unlock(&f->st.mu);
	for (i = 0; i < 8; i++) {
		w[i] = (struct worker){ .f = f, .n = 50 };
		assert_int_equal(pthread_create(&w[i].t, NULL, head_worker,
						&w[i]), 0);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(w[i].t, NULL);
		assert_int_equal(w[i].err, 0);
	}
	assert_int_equal(f->st.calls, 8 * 50 + 40);
	assert_true(f->st.max_running <= 4);
	assert_int_equal(objfs_limit_store_stats(f->limit, NULL, &in_flight,
						 NULL), 0);
	assert_int_equal(in_flight, 0);
	assert_int_equal(limit_now(f), 4);
	teardown(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_falls_and_rises),
		cmocka_unit_test(test_latency),
		cmocka_unit_test(test_one_decrease_per_overload),
		cmocka_unit_test(test_waiters_served),
		cmocka_unit_test(test_cancelled_wait),
		cmocka_unit_test(test_under_retry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
