/*
 * fault.c - the fault layer: injects errors, delays and short reads.
 *
 * State, per operation, all under one mutex (struct objfs_fault):
 *   fail_n/fail_err    fail the next fail_n calls with fail_err
 *   prob/prob_err/rng  fail each call with probability prob (xorshift64*
 *                      seeded by the test: deterministic)
 *   delay_ms           sleep before each call
 *   calls              every call, failed or not
 * and for gets: short_k/short_n (cut the next short_n gets, or every get
 * while short_all, after short_k bytes), stall_n/stall_ms (the next
 * stall_n gets hang up to stall_ms first, ended early by their cancel).
 *
 * A call first counts itself, then sleeps (outside the lock), then either
 * fails without reaching the inner store or is forwarded.  A cut get wraps
 * the caller's sink: bytes up to short_k pass, the first byte past it
 * aborts the transfer, and the get returns EIO.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/fault.h"

struct fault_rule {
	unsigned fail_n;
	int fail_err;
	double prob;
	int prob_err;
	uint64_t rng;
	unsigned delay_ms;
	uint64_t calls;
};

struct objfs_fault {
	pthread_mutex_t mu;
	struct fault_rule r[OBJFS_FOP_COUNT];   /* protected by mu */
	uint64_t short_k;                       /* protected by mu */
	unsigned short_n;                       /* protected by mu */
	bool short_all;                         /* protected by mu */
	unsigned stall_n, stall_ms;             /* protected by mu */
};

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1DULL;
}

static void rules_apply(struct objfs_fault *f, enum objfs_fault_op op,
			void (*fn)(struct fault_rule *, const void *),
			const void *arg)
{
	unsigned i;

	pthread_mutex_lock(&f->mu);
	if (op == OBJFS_FOP_ALL) {
		for (i = 0; i < OBJFS_FOP_COUNT; i++)
			fn(&f->r[i], arg);
	} else if ((unsigned)op < OBJFS_FOP_COUNT) {
		fn(&f->r[op], arg);
	}
	pthread_mutex_unlock(&f->mu);
}

struct fail_args {
	unsigned n;
	int err;
	double p;
	uint64_t seed;
};

static void set_fail_next(struct fault_rule *r, const void *arg)
{
	const struct fail_args *a = arg;

	r->fail_n = a->n;
	r->fail_err = a->err;
}

void objfs_fault_fail_next(struct objfs_fault *f, enum objfs_fault_op op,
			   unsigned n, int err)
{
	struct fail_args a = { .n = n, .err = err };

	rules_apply(f, op, set_fail_next, &a);
}

static void set_fail_prob(struct fault_rule *r, const void *arg)
{
	const struct fail_args *a = arg;

	r->prob = a->p;
	r->prob_err = a->err;
	/* xorshift must not start at 0 */
	r->rng = a->seed != 0 ? a->seed : 0x9E3779B97F4A7C15ULL;
}

void objfs_fault_fail_prob(struct objfs_fault *f, enum objfs_fault_op op,
			   double p, int err, uint64_t seed)
{
	struct fail_args a = { .err = err, .p = p, .seed = seed };

	rules_apply(f, op, set_fail_prob, &a);
}

static void set_delay(struct fault_rule *r, const void *arg)
{
	r->delay_ms = *(const unsigned *)arg;
}

void objfs_fault_delay(struct objfs_fault *f, enum objfs_fault_op op,
		       unsigned ms)
{
	rules_apply(f, op, set_delay, &ms);
}

void objfs_fault_short_read(struct objfs_fault *f, uint64_t k, unsigned n)
{
	pthread_mutex_lock(&f->mu);
	f->short_k = k;
	f->short_n = n;
	f->short_all = n == 0 && k != UINT64_MAX;
	pthread_mutex_unlock(&f->mu);
}

void objfs_fault_stall(struct objfs_fault *f, unsigned n, unsigned ms)
{
	pthread_mutex_lock(&f->mu);
	f->stall_n = n;
	f->stall_ms = ms;
	pthread_mutex_unlock(&f->mu);
}

uint64_t objfs_fault_calls(struct objfs_fault *f, enum objfs_fault_op op)
{
	uint64_t n = 0;
	unsigned i;

	pthread_mutex_lock(&f->mu);
	if (op == OBJFS_FOP_ALL) {
		for (i = 0; i < OBJFS_FOP_COUNT; i++)
			n += f->r[i].calls;
	} else if ((unsigned)op < OBJFS_FOP_COUNT) {
		n = f->r[op].calls;
	}
	pthread_mutex_unlock(&f->mu);
	return n;
}

void objfs_fault_reset(struct objfs_fault *f)
{
	pthread_mutex_lock(&f->mu);
	memset(f->r, 0, sizeof(f->r));
	f->short_k = 0;
	f->short_n = 0;
	f->short_all = false;
	f->stall_n = 0;
	pthread_mutex_unlock(&f->mu);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Counts a call of op, sleeps as told, and returns the errno it must fail
 * with (0: forward it). */
static int enter(struct objfs_store *s, enum objfs_fault_op op)
{
	struct objfs_fault *f = s->ctx;
	struct fault_rule *r = &f->r[op];
	unsigned delay;
	int err = 0;

	pthread_mutex_lock(&f->mu);
	r->calls++;
	delay = r->delay_ms;
	if (r->fail_n > 0) {
		r->fail_n--;
		err = r->fail_err;
	} else if (r->prob > 0 &&
		   (double)(rng_next(&r->rng) >> 11) * 0x1.0p-53 < r->prob) {
		err = r->prob_err;
	}
	pthread_mutex_unlock(&f->mu);
	if (delay > 0)
		sleep_ms(delay);
	return err;
}

/* A sink that passes the first k bytes of a range and then fails. */
struct short_sink {
	const struct objfs_sink *sink;
	uint64_t k;
	bool cut;
};

static int short_write_at(void *arg, uint64_t off, const void *data, size_t n)
{
	struct short_sink *ss = arg;
	size_t pass = n;
	int err;

	if (off >= ss->k)
		pass = 0;
	else if (off + n > ss->k)
		pass = (size_t)(ss->k - off);
	if (pass > 0) {
		err = ss->sink->write_at(ss->sink->arg, off, data, pass);
		if (err != 0)
			return err;
	}
	if (pass < n) {
		ss->cut = true;
		return EIO;
	}
	return 0;
}

static int fault_get(struct objfs_store *s, const char *key,
		     const struct objfs_get_opts *opts,
		     const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	struct objfs_fault *f = s->ctx;
	struct short_sink ss = { .sink = sink };
	struct objfs_sink cut = { short_write_at, &ss };
	bool shorten = false;
	unsigned stall = 0;
	int err;

	err = enter(s, OBJFS_FOP_GET);
	if (err != 0)
		return err;
	pthread_mutex_lock(&f->mu);
	if (f->stall_n > 0) {
		f->stall_n--;
		stall = f->stall_ms;
	}
	pthread_mutex_unlock(&f->mu);
	for (; stall > 0; stall -= stall < 10 ? stall : 10) {
		if (opts != NULL && objfs_cancel_fired(opts->cancel))
			return ECANCELED;
		sleep_ms(stall < 10 ? stall : 10);
	}
	pthread_mutex_lock(&f->mu);
	if (f->short_all || f->short_n > 0) {
		shorten = true;
		ss.k = f->short_k;
		if (f->short_n > 0)
			f->short_n--;
	}
	pthread_mutex_unlock(&f->mu);
	if (!shorten)
		return objfs_store_get(s->inner, key, opts, sink, info);
	err = objfs_store_get(s->inner, key, opts, &cut, info);
	return ss.cut ? EIO : err;
}

static int fault_put(struct objfs_store *s, const char *key,
		     const struct objfs_source *src,
		     const struct objfs_put_opts *opts,
		     struct objfs_obj_info *info)
{
	int err = enter(s, OBJFS_FOP_PUT);

	return err != 0 ? err : objfs_store_put(s->inner, key, src, opts, info);
}

static int fault_head(struct objfs_store *s, const char *key,
		      struct objfs_obj_info *info)
{
	int err = enter(s, OBJFS_FOP_HEAD);

	return err != 0 ? err : objfs_store_head(s->inner, key, info);
}

static int fault_list(struct objfs_store *s, const struct objfs_list_req *req,
		      struct objfs_list_page *page)
{
	int err = enter(s, OBJFS_FOP_LIST);

	return err != 0 ? err : objfs_store_list(s->inner, req, page);
}

static int fault_copy(struct objfs_store *s, const char *src, const char *dst,
		      const struct objfs_copy_opts *opts,
		      struct objfs_obj_info *info)
{
	int err = enter(s, OBJFS_FOP_COPY);

	return err != 0 ? err : objfs_store_copy(s->inner, src, dst, opts, info);
}

static int fault_del(struct objfs_store *s, const char *key)
{
	int err = enter(s, OBJFS_FOP_DEL);

	return err != 0 ? err : objfs_store_del(s->inner, key);
}

static int fault_del_many(struct objfs_store *s, const char *const *keys,
			  size_t n, size_t *failed)
{
	int err = enter(s, OBJFS_FOP_DEL_MANY);

	if (err != 0) {
		if (failed != NULL)
			*failed = n;
		return err;
	}
	return objfs_store_del_many(s->inner, keys, n, failed);
}

static int fault_mpu_create(struct objfs_store *s, const char *key,
			    const struct objfs_put_opts *opts, char **upload_id)
{
	int err = enter(s, OBJFS_FOP_MPU_CREATE);

	return err != 0 ? err :
		objfs_store_mpu_create(s->inner, key, opts, upload_id);
}

static int fault_mpu_part(struct objfs_store *s, const char *key,
			  const char *upload_id, unsigned number,
			  const struct objfs_source *src, struct objfs_part *part)
{
	int err = enter(s, OBJFS_FOP_MPU_PART);

	return err != 0 ? err :
		objfs_store_mpu_part(s->inner, key, upload_id, number, src, part);
}

static int fault_mpu_complete(struct objfs_store *s, const char *key,
			      const char *upload_id,
			      const struct objfs_part *parts, size_t n,
			      struct objfs_obj_info *info)
{
	int err = enter(s, OBJFS_FOP_MPU_COMPLETE);

	return err != 0 ? err :
		objfs_store_mpu_complete(s->inner, key, upload_id, parts, n,
					 info);
}

static int fault_mpu_abort(struct objfs_store *s, const char *key,
			   const char *upload_id)
{
	int err = enter(s, OBJFS_FOP_MPU_ABORT);

	return err != 0 ? err : objfs_store_mpu_abort(s->inner, key, upload_id);
}

static void fault_destroy(struct objfs_store *s)
{
	struct objfs_fault *f = s->ctx;

	objfs_store_destroy(s->inner);
	if (f != NULL) {
		pthread_mutex_destroy(&f->mu);
		free(f);
	}
	free(s);
}

static const struct objfs_store_ops fault_ops = {
	.name = "fault",
	.get = fault_get,
	.put = fault_put,
	.head = fault_head,
	.list = fault_list,
	.copy = fault_copy,
	.del = fault_del,
	.del_many = fault_del_many,
	.mpu_create = fault_mpu_create,
	.mpu_part = fault_mpu_part,
	.mpu_complete = fault_mpu_complete,
	.mpu_abort = fault_mpu_abort,
	.destroy = fault_destroy,
};

int objfs_fault_store_create(struct objfs_store *inner,
			     struct objfs_store **out, struct objfs_fault **ctl)
{
	struct objfs_store *s = NULL;
	struct objfs_fault *f = NULL;
	int err;

	*out = NULL;
	if (ctl != NULL)
		*ctl = NULL;
	if (inner == NULL)
		return EINVAL;
	s = calloc(1, sizeof(*s));
	f = calloc(1, sizeof(*f));
	if (s == NULL || f == NULL) {
		err = ENOMEM;
		goto fail_alloc;
	}
	err = pthread_mutex_init(&f->mu, NULL);
	if (err != 0)
		goto fail_alloc;
	s->ops = &fault_ops;
	s->inner = inner;
	s->ctx = f;
	s->log = inner->log;
	*out = s;
	if (ctl != NULL)
		*ctl = f;
	return 0;

fail_alloc:
	free(f);
	free(s);
	objfs_store_destroy(inner);
	return err;
}
