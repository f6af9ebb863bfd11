/*
 * Unit tests of the retry layer: the policy functions, and retries over
 * the fault layer and a scripted stub on a local store, with an injected
 * clock and sleep (nothing sleeps for real).
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "backend/backend.h"
#include "backend/fault.h"
#include "store_testutil.h"
#include "backend/retry.h"

/* ---- a fake clock ------------------------------------------------------- */

#define MAX_SLEEPS 64

struct fake_clock {
	uint64_t now;
	unsigned sleeps[MAX_SLEEPS];
	unsigned n;
};

static void fake_sleep(void *arg, unsigned ms)
{
	struct fake_clock *c = arg;

	if (c->n < MAX_SLEEPS)
		c->sleeps[c->n] = ms;
	c->n++;
	c->now += ms;
}

static uint64_t fake_now(void *arg)
{
	return ((struct fake_clock *)arg)->now;
}

/* ---- a scripted stub layer ---------------------------------------------- */

/* Puts read their whole source (hashing it) and then fail with the next
 * scripted errno, or forward when the script is used up; heads fail with
 * the script the same way.  Everything else forwards. */
#define SCRIPT_MAX 8

struct script {
	int errs[SCRIPT_MAX];
	unsigned n, next;
	unsigned char sha[SCRIPT_MAX + 1][32];   /* per put attempt */
	unsigned puts;
};

static int script_next(struct script *sc)
{
	return sc->next < sc->n ? sc->errs[sc->next++] : 0;
}

static int stub_put(struct objfs_store *s, const char *key,
		    const struct objfs_source *src,
		    const struct objfs_put_opts *opts,
		    struct objfs_obj_info *info)
{
	struct script *sc = s->ctx;
	unsigned char *buf = malloc(src->size + 1);
	unsigned int len = 0;
	int err;

	if (buf == NULL)
		return ENOMEM;
	err = src->read_at(src->arg, 0, buf, src->size);
	if (err == 0 && sc->puts <= SCRIPT_MAX)
		EVP_Digest(buf, src->size, sc->sha[sc->puts], &len,
			   EVP_sha256(), NULL);
	free(buf);
	sc->puts++;
	if (err == 0)
		err = script_next(sc);
	return err != 0 ? err : objfs_store_put(s->inner, key, src, opts, info);
}

static int stub_head(struct objfs_store *s, const char *key,
		     struct objfs_obj_info *info)
{
	int err = script_next(s->ctx);

	return err != 0 ? err : objfs_store_head(s->inner, key, info);
}

static int stub_get(struct objfs_store *s, const char *key,
		    const struct objfs_get_opts *opts,
		    const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	return objfs_store_get(s->inner, key, opts, sink, info);
}

static int stub_list(struct objfs_store *s, const struct objfs_list_req *req,
		     struct objfs_list_page *page)
{
	return objfs_store_list(s->inner, req, page);
}

static int stub_copy(struct objfs_store *s, const char *src, const char *dst,
		     const struct objfs_copy_opts *opts,
		     struct objfs_obj_info *info)
{
	return objfs_store_copy(s->inner, src, dst, opts, info);
}

static int stub_del(struct objfs_store *s, const char *key)
{
	return objfs_store_del(s->inner, key);
}

static int stub_del_many(struct objfs_store *s, const char *const *keys,
			 size_t n, size_t *failed)
{
	return objfs_store_del_many(s->inner, keys, n, failed);
}

static int stub_mpu_create(struct objfs_store *s, const char *key,
			   const struct objfs_put_opts *opts, char **id)
{
	return objfs_store_mpu_create(s->inner, key, opts, id);
}

static int stub_mpu_part(struct objfs_store *s, const char *key,
			 const char *id, unsigned number,
			 const struct objfs_source *src, struct objfs_part *part)
{
	return objfs_store_mpu_part(s->inner, key, id, number, src, part);
}

static int stub_mpu_complete(struct objfs_store *s, const char *key,
			     const char *id, const struct objfs_part *parts,
			     size_t n, struct objfs_obj_info *info)
{
	return objfs_store_mpu_complete(s->inner, key, id, parts, n, info);
}

static int stub_mpu_abort(struct objfs_store *s, const char *key,
			  const char *id)
{
	return objfs_store_mpu_abort(s->inner, key, id);
}

static void stub_destroy(struct objfs_store *s)
{
	objfs_store_destroy(s->inner);
	free(s);
}

static const struct objfs_store_ops stub_ops = {
	"stub", stub_get, stub_put, stub_head, stub_list, stub_copy, stub_del,
	stub_del_many, stub_mpu_create, stub_mpu_part, stub_mpu_complete,
	stub_mpu_abort, stub_destroy,
};

/* ---- fixture: retry -> (fault | stub) -> local ------------------------- */

struct fixture {
	char dir[64];
	struct objfs_store *s;          /* the retry layer */
	struct objfs_fault *fault;      /* NULL with the stub */
	struct script script;
	struct fake_clock clock;
};

static int build(void **state, bool stub, const struct objfs_retry_config *cfg)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct objfs_store *local = NULL, *mid = NULL;
	struct objfs_retry_hooks hooks;

	if (f == NULL)
		return -1;
	if (tu_tmpdir(f->dir, sizeof(f->dir), "retry") != 0 ||
	    objfs_local_store_create(f->dir, NULL, &local) != 0)
		goto fail;
	if (stub) {
		mid = calloc(1, sizeof(*mid));
		if (mid == NULL) {
			objfs_store_destroy(local);
			goto fail;
		}
		mid->ops = &stub_ops;
		mid->inner = local;
		mid->ctx = &f->script;
	} else if (objfs_fault_store_create(local, &mid, &f->fault) != 0) {
		goto fail;
	}
	if (objfs_retry_store_create(mid, cfg, &f->s) != 0)
		goto fail;
	hooks.sleep_ms = fake_sleep;
	hooks.now_ms = fake_now;
	hooks.arg = &f->clock;
	if (objfs_retry_store_set_hooks(f->s, &hooks) != 0)
		goto fail;
	*state = f;
	return 0;
fail:
	objfs_store_destroy(f->s);
	free(f);
	return -1;
}

static int setup_fault(void **state)
{
	struct objfs_retry_config cfg = { 4, 100, 1000, 60000 };

	return build(state, false, &cfg);
}

static int setup_stub(void **state)
{
	struct objfs_retry_config cfg = { 3, 100, 1000, 60000 };

	return build(state, true, &cfg);
}

static int setup_budget(void **state)
{
	struct objfs_retry_config cfg = { 100, 200, 200, 1000 };

	return build(state, false, &cfg);
}

static int setup_outage(void **state)
{
	struct objfs_retry_config cfg = { OBJFS_RETRY_UNLIMITED, 100, 1000,
					  20000 };

	return build(state, false, &cfg);
}

static int setup_small_budget(void **state)
{
	struct objfs_retry_config cfg = { OBJFS_RETRY_UNLIMITED, 100, 1000,
					  20000, .budget = 12 };

	return build(state, false, &cfg);
}

static int setup_capped(void **state)
{
	struct objfs_retry_config cfg = { 2, 100, 1000, 60000 };

	return build(state, false, &cfg);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	objfs_store_destroy(f->s);
	tu_rm_tree(f->dir);
	free(f);
	return 0;
}

static void put_str(struct objfs_store *s, const char *key, const char *v,
		    int want)
{
	struct objfs_source src;

	objfs_source_mem(&src, v, strlen(v));
	assert_int_equal(objfs_store_put(s, key, &src, NULL, NULL), want);
}

/* ---- policy ---------------------------------------------------------------- */

static void test_retryable(void **state)
{
	static const int yes[] = { EAGAIN, EIO, ETIMEDOUT, ECONNRESET,
				   ECONNREFUSED, EPIPE, EHOSTUNREACH };
	static const int no[] = { 0, ENOENT, EACCES, EINVAL, ESTALE, ERANGE,
				  EEXIST, ENOMEM, EFBIG };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(objfs_retry_retryable(yes[i]));
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(objfs_retry_retryable(no[i]));
}

static void test_delay_bounds(void **state)
{
	struct objfs_retry_config in = { 0, 0, 0, 0 };
	struct objfs_retry_config c = objfs_retry_config_resolve(&in);
	uint64_t x = 88172645463325252ULL, cap;
	unsigned a, i, d, lo, hi;

	(void)state;
	assert_int_equal(c.max_attempts, 5);
	assert_int_equal(c.base_delay_ms, 100);
	assert_int_equal(c.max_delay_ms, 2000);
	assert_int_equal(c.max_total_ms, 60000);
	for (a = 1; a <= 64; a++) {
		cap = a < 8 ? 100ULL << (a - 1) : 2000;
		if (cap > 2000)
			cap = 2000;
		assert_int_equal(objfs_retry_delay_ms(&c, a, cap), cap);
		assert_int_equal(objfs_retry_delay_ms(&c, a, 0), 0);
		lo = UINT32_MAX;
		hi = 0;
		for (i = 0; i < 2000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			d = objfs_retry_delay_ms(&c, a, x);
			assert_true(d <= cap);
			if (d < lo)
				lo = d;
			if (d > hi)
				hi = d;
		}
		/* full jitter: the draws cover the whole [0, cap] */
		assert_true(lo <= cap / 10);
		assert_true(hi >= cap - cap / 10);
	}
	assert_true(objfs_retry_delay_ms(&c, UINT32_MAX, UINT64_MAX) <= 2000);
}

/* ---- behaviour ------------------------------------------------------------- */

static void test_transient_then_success(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	unsigned i;

	objfs_fault_fail_next(f->fault, OBJFS_FOP_PUT, 3, EIO);
	put_str(f->s, "k", "value", 0);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_PUT), 4);
	assert_int_equal(f->clock.n, 3);
	for (i = 0; i < 3; i++)
		assert_true(f->clock.sleeps[i] <= (100u << i));

	objfs_fault_fail_next(f->fault, OBJFS_FOP_HEAD, 2, ECONNRESET);
	assert_int_equal(objfs_store_head(f->s, "k", &info), 0);
	assert_int_equal(info.size, 5);
	objfs_obj_info_release(&info);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_HEAD), 3);
}

static void test_give_up(void **state)
{
	struct fixture *f = *state;
	unsigned i;

	objfs_fault_fail_next(f->fault, OBJFS_FOP_PUT, 100, ETIMEDOUT);
	put_str(f->s, "k", "value", ETIMEDOUT);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_PUT), 4);
	assert_int_equal(f->clock.n, 3);
	for (i = 0; i < 3; i++)
		assert_true(f->clock.sleeps[i] <= (100u << i));
}

static void test_not_retried(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	static const int errs[] = { EACCES, EINVAL, ESTALE, ERANGE, EEXIST,
				    ENOENT };
	size_t i;

	/* A real ENOENT from the store. */
	assert_int_equal(objfs_store_head(f->s, "missing", &info), ENOENT);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_HEAD), 1);
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		objfs_fault_reset(f->fault);
		objfs_fault_fail_next(f->fault, OBJFS_FOP_DEL, 5, errs[i]);
		assert_int_equal(objfs_store_del(f->s, "x"), errs[i]);
		assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_DEL), 1);
	}
	assert_int_equal(f->clock.n, 0);
}

static void test_last_error_returned(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;

	f->script.errs[0] = EIO;
	f->script.errs[1] = EAGAIN;
	f->script.errs[2] = ECONNRESET;
	f->script.errs[3] = EIO;
	f->script.n = 4;
	assert_int_equal(objfs_store_head(f->s, "k", &info), ECONNRESET);
	assert_int_equal(f->script.next, 3);
	assert_int_equal(f->clock.n, 2);

	/* A non-retryable error after transient ones ends the retries. */
	f->script.errs[0] = EAGAIN;
	f->script.errs[1] = EACCES;
	f->script.n = 2;
	f->script.next = 0;
	assert_int_equal(objfs_store_head(f->s, "k", &info), EACCES);
	assert_int_equal(f->script.next, 2);
}

static void test_put_resends_identical_bytes(void **state)
{
	struct fixture *f = *state;
	struct objfs_get_opts all = OBJFS_GET_ALL;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_sink sink;
	struct objfs_source src;
	char data[10000];
	size_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 31 + 7);
	f->script.errs[0] = EIO;
	f->script.errs[1] = EPIPE;
	f->script.n = 2;
	objfs_source_mem(&src, data, sizeof(data));
	assert_int_equal(objfs_store_put(f->s, "same", &src, NULL, NULL), 0);
	assert_int_equal(f->script.puts, 3);
	assert_memory_equal(f->script.sha[0], f->script.sha[1], 32);
	assert_memory_equal(f->script.sha[0], f->script.sha[2], 32);

	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(objfs_store_get(f->s, "same", &all, &sink, NULL), 0);
	assert_int_equal(mb.len, sizeof(data));
	assert_memory_equal(mb.data, data, sizeof(data));
	objfs_membuf_release(&mb);
}

static void test_total_budget(void **state)
{
	struct fixture *f = *state;
	uint64_t slept = 0;
	unsigned i;

	objfs_fault_fail_next(f->fault, OBJFS_FOP_LIST, 1000, EAGAIN);
	{
		struct objfs_list_req req = { 0 };
		struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;

		assert_int_equal(objfs_store_list(f->s, &req, &page), EAGAIN);
	}
	for (i = 0; i < f->clock.n && i < MAX_SLEEPS; i++) {
		assert_true(f->clock.sleeps[i] <= 200);
		slept += f->clock.sleeps[i];
	}
	assert_true(f->clock.n < MAX_SLEEPS);
	assert_true(slept <= 1000);
	assert_true(objfs_fault_calls(f->fault, OBJFS_FOP_LIST) < 100);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_LIST),
			 f->clock.n + 1);
}

/* Unlimited tries: an outage shorter than the bound is a pause, not an
 * error; a longer one ends with the last try at the bound. */
static void test_outage(void **state)
{
	struct fixture *f = *state;
	uint64_t slept = 0;
	unsigned i;

	/* the store answered once: an outage is ridden out */
	put_str(f->s, "first", "x", 0);
	objfs_fault_reset(f->fault);
	/* 30 refused connections in a row (under 20 s of sleeps at the 1 s
	 * cap): the put waits them out and succeeds. */
	objfs_fault_fail_next(f->fault, OBJFS_FOP_PUT, 30, ECONNREFUSED);
	put_str(f->s, "k", "v", 0);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_PUT), 31);
	for (i = 0; i < f->clock.n && i < MAX_SLEEPS; i++)
		slept += f->clock.sleeps[i];
	assert_true(slept < 20000);
	tu_check(f->s, "k", "v", 1);

	/* Down for good: the tries go on until the bound, not past it. */
	objfs_fault_reset(f->fault);
	f->clock.n = 0;
	f->clock.now = 0;
	objfs_fault_fail_next(f->fault, OBJFS_FOP_PUT, 100000, ECONNREFUSED);
	put_str(f->s, "k", "w", ECONNREFUSED);
	assert_int_equal(f->clock.now, 20000);
	assert_true(objfs_fault_calls(f->fault, OBJFS_FOP_PUT) > 20);
	tu_check(f->s, "k", "v", 1);
}

/* A store never reached: nothing at its address is retried for the first
 * contact's bound only (a wrong host or port fails fast); an error that
 * is an answer (a 5xx: EIO) is retried for the whole bound; once the
 * store answered, refused connections are an outage, ridden out. */
static void test_first_contact(void **state)
{
	struct fixture *f = *state;
	static const int nothing[] = { ECONNREFUSED, EHOSTUNREACH };
	size_t i;

	for (i = 0; i < sizeof(nothing) / sizeof(nothing[0]); i++) {
		objfs_fault_reset(f->fault);
		f->clock.n = 0;
		f->clock.now = 0;
		objfs_fault_fail_next(f->fault, OBJFS_FOP_PUT, 100000, nothing[i]);
		put_str(f->s, "k", "v", nothing[i]);
		assert_int_equal(f->clock.now, OBJFS_RETRY_FIRST_CONTACT_MS);
	}
	/* a 5xx is an answer: the store is there */
	objfs_fault_reset(f->fault);
	f->clock.n = 0;
	f->clock.now = 0;
	objfs_fault_fail_next(f->fault, OBJFS_FOP_PUT, 100000, EIO);
	put_str(f->s, "k", "v", EIO);
	assert_int_equal(f->clock.now, 20000);
	/* and from then on refused connections are an outage */
	objfs_fault_reset(f->fault);
	f->clock.n = 0;
	f->clock.now = 0;
	objfs_fault_fail_next(f->fault, OBJFS_FOP_PUT, 100000, ECONNREFUSED);
	put_str(f->s, "k", "v", ECONNREFUSED);
	assert_int_equal(f->clock.now, 20000);
}

/* The bound counts from when the store stopped answering, for every
 * request alike: a system call that sends several requests in an outage
 * gets its error once the store has failed for the bound (issue 31: an
 * open+write+fsync waited 93 s with a 60 s bound); an answer ends the
 * failing time. */
static void test_outage_per_store(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;

	put_str(f->s, "k", "v", 0);             /* reached */
	objfs_fault_reset(f->fault);
	f->clock.now = 1000;
	objfs_fault_fail_next(f->fault, OBJFS_FOP_ALL, 100000, ECONNRESET);
	/* the first request of the call waits out the bound ... */
	put_str(f->s, "a", "1", ECONNRESET);
	assert_int_equal(f->clock.now, 1000 + 20000);
	/* ... the next ones of the same call give up at their first try */
	f->clock.n = 0;
	put_str(f->s, "b", "2", ECONNRESET);
	assert_int_equal(objfs_store_head(f->s, "k", &info), ECONNRESET);
	assert_int_equal(f->clock.n, 0);
	assert_int_equal(f->clock.now, 1000 + 20000);
	/* the store answers again: a new failure has the whole bound */
	objfs_fault_reset(f->fault);
	assert_int_equal(objfs_store_head(f->s, "k", &info), 0);
	objfs_obj_info_release(&info);
	objfs_fault_fail_next(f->fault, OBJFS_FOP_PUT, 3, ECONNRESET);
	put_str(f->s, "c", "3", 0);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_PUT), 4);
}

static void test_short_read_retried(void **state)
{
	struct fixture *f = *state;
	struct objfs_get_opts all = OBJFS_GET_ALL;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_sink sink;
	char data[5000];
	size_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)(i ^ 0x5a);
	{
		struct objfs_source src;

		objfs_source_mem(&src, data, sizeof(data));
		assert_int_equal(objfs_store_put(f->s, "sr", &src, NULL, NULL), 0);
	}
	/* Two gets cut after 1000 bytes, then a whole one. */
	objfs_fault_short_read(f->fault, 1000, 2);
	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(objfs_store_get(f->s, "sr", &all, &sink, NULL), 0);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_GET), 3);
	assert_int_equal(mb.len, sizeof(data));
	assert_memory_equal(mb.data, data, sizeof(data));
	objfs_membuf_release(&mb);
}

static void test_upload_with_flaky_parts(void **state)
{
	struct fixture *f = *state;
	struct objfs_get_opts all = OBJFS_GET_ALL;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_sink sink;
	struct objfs_source src;
	const size_t size = (11u << 20) + 123;
	char *data = malloc(size);
	size_t i;

	assert_non_null(data);
	for (i = 0; i < size; i++)
		data[i] = (char)(i * 13 + (i >> 12));
	/* Part uploads fail with probability 0.4; max 4 tries each: with a
	 * fixed seed this sequence of draws lets every part through. */
	objfs_fault_fail_prob(f->fault, OBJFS_FOP_MPU_PART, 0.4, EIO, 7);
	objfs_source_mem(&src, data, size);
	assert_int_equal(objfs_store_upload(f->s, "up", &src, NULL, 0, 1,
					    NULL), 0);
	assert_true(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_PART) > 3);
	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(objfs_store_get(f->s, "up", &all, &sink, NULL), 0);
	assert_int_equal(mb.len, size);
	assert_memory_equal(mb.data, data, size);
	objfs_membuf_release(&mb);
	free(data);
}

/* ---- the retry budget ------------------------------------------------------ */

static void test_budget_policy(void **state)
{
	struct objfs_retry_config in = { 0 };
	struct objfs_retry_config c = objfs_retry_config_resolve(&in);
	uint64_t x = 0x1234567887654321ULL;
	unsigned i, d, lo = UINT32_MAX, hi = 0;

	(void)state;
	assert_int_equal(c.budget, 500);
	assert_int_equal(objfs_retry_cost(EIO), OBJFS_RETRY_COST);
	assert_int_equal(objfs_retry_cost(EAGAIN), OBJFS_RETRY_COST);
	assert_int_equal(objfs_retry_cost(ETIMEDOUT), OBJFS_RETRY_COST_TIMEOUT);
	assert_int_equal(objfs_retry_cost(ECONNRESET), OBJFS_RETRY_COST_TIMEOUT);
	assert_int_equal(objfs_retry_cost(ECONNREFUSED),
			 OBJFS_RETRY_COST_TIMEOUT);
	for (i = 0; i < 2000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		d = objfs_retry_wait_ms(&c, x);
		assert_true(d >= 1000 && d <= 2000);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	assert_true(lo < 1100 && hi > 1900);
}

static void budget_of(struct fixture *f, unsigned *tokens, uint64_t *waits)
{
	assert_int_equal(objfs_retry_store_budget(f->s, tokens, waits), 0);
}

/* 12 tokens: two retries after EIO are paid (backoff), the next ones wait
 * instead; the call still succeeds.  Answers refill the bucket. */
static void test_budget_spaces_retries(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	unsigned tokens, i;
	uint64_t waits;

	put_str(f->s, "k", "v", 0);
	budget_of(f, &tokens, &waits);
	assert_int_equal(tokens, 12);
	assert_int_equal(waits, 0);

	objfs_fault_fail_next(f->fault, OBJFS_FOP_HEAD, 5, EIO);
	assert_int_equal(objfs_store_head(f->s, "k", &info), 0);
	objfs_obj_info_release(&info);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_HEAD), 6);
	assert_int_equal(f->clock.n, 5);
	assert_true(f->clock.sleeps[0] <= 100);
	assert_true(f->clock.sleeps[1] <= 200);
	for (i = 2; i < 5; i++)
		assert_true(f->clock.sleeps[i] >= 500 &&
			    f->clock.sleeps[i] <= 1000);
	budget_of(f, &tokens, &waits);
	assert_int_equal(waits, 3);
	assert_int_equal(tokens, 2 + OBJFS_RETRY_EARN);

	/* answers (a 404 too) earn a token each, up to the capacity */
	for (i = 0; i < 20; i++)
		assert_int_equal(objfs_store_head(f->s, i % 2 ? "k" : "none",
						  &info), i % 2 ? 0 : ENOENT);
	objfs_obj_info_release(&info);
	budget_of(f, &tokens, &waits);
	assert_int_equal(tokens, 12);

	/* a timeout's retry takes 10; its success gives them back */
	objfs_fault_fail_next(f->fault, OBJFS_FOP_HEAD, 1, ETIMEDOUT);
	assert_int_equal(objfs_store_head(f->s, "k", &info), 0);
	objfs_obj_info_release(&info);
	budget_of(f, &tokens, &waits);
	assert_int_equal(tokens, 12);
	assert_int_equal(waits, 3);
}

/* An empty budget never turns an outage shorter than max_total_ms into an
 * error, and the last try still comes at the bound. */
static void test_budget_no_error_in_window(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	unsigned tokens;
	uint64_t waits;

	/* the store answered once (a 404 is an answer): refused
	 * connections are an outage now, not a wrong address */
	assert_int_equal(objfs_store_head(f->s, "none", &info), ENOENT);
	objfs_fault_fail_next(f->fault, OBJFS_FOP_PUT, 15, ECONNREFUSED);
	put_str(f->s, "k", "v", 0);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_PUT), 16);
	assert_true(f->clock.now < 20000);
	budget_of(f, &tokens, &waits);
	assert_int_equal(waits, 14);            /* one retry was paid */
	tu_check(f->s, "k", "v", 1);

	f->clock.now = 0;
	objfs_fault_reset(f->fault);
	objfs_fault_fail_next(f->fault, OBJFS_FOP_PUT, 100000, ECONNREFUSED);
	put_str(f->s, "k", "w", ECONNREFUSED);
	assert_int_equal(f->clock.now, 20000);
	/* a try at most about every max_delay_ms: no burst */
	assert_true(objfs_fault_calls(f->fault, OBJFS_FOP_PUT) <= 42);
}

/* A steady failure with one retry per call: the first 500 / 5 retries are
 * paid, every later one waits; the bucket stays empty. */
static void test_budget_steady_failure(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	unsigned tokens, i;
	uint64_t waits;

	objfs_fault_fail_next(f->fault, OBJFS_FOP_HEAD, 1000000, EIO);
	for (i = 0; i < 300; i++) {
		/* all within the failing store's bound (past it, a call
		 * gives up at its first try: test_outage_per_store) */
		f->clock.now = 0;
		assert_int_equal(objfs_store_head(f->s, "k", &info), EIO);
	}
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_HEAD), 600);
	budget_of(f, &tokens, &waits);
	assert_int_equal(tokens, 0);
	assert_int_equal(waits, 300 - 500 / OBJFS_RETRY_COST);
	assert_int_equal(objfs_retry_store_budget(NULL, &tokens, &waits),
			 EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retryable),
		cmocka_unit_test(test_delay_bounds),
		cmocka_unit_test_setup_teardown(test_transient_then_success,
						setup_fault, teardown),
		cmocka_unit_test_setup_teardown(test_give_up, setup_fault, teardown),
		cmocka_unit_test_setup_teardown(test_not_retried, setup_fault,
						teardown),
		cmocka_unit_test_setup_teardown(test_last_error_returned,
						setup_stub, teardown),
		cmocka_unit_test_setup_teardown(test_put_resends_identical_bytes,
						setup_stub, teardown),
		cmocka_unit_test_setup_teardown(test_outage, setup_outage,
						teardown),
		cmocka_unit_test_setup_teardown(test_first_contact, setup_outage,
						teardown),
		cmocka_unit_test_setup_teardown(test_outage_per_store, setup_outage,
						teardown),
		cmocka_unit_test_setup_teardown(test_total_budget, setup_budget,
						teardown),
		cmocka_unit_test_setup_teardown(test_short_read_retried,
						setup_fault, teardown),
		cmocka_unit_test_setup_teardown(test_upload_with_flaky_parts,
						setup_fault, teardown),
		cmocka_unit_test(test_budget_policy),
		cmocka_unit_test_setup_teardown(test_budget_spaces_retries,
						setup_small_budget, teardown),
		cmocka_unit_test_setup_teardown(test_budget_no_error_in_window,
						setup_small_budget, teardown),
		cmocka_unit_test_setup_teardown(test_budget_steady_failure,
						setup_capped, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
