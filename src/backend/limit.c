/*
 * limit.c - the limit layer: an adaptive bound L on the requests in flight
 * to one store, so N writers and readers share a slow server instead of
 * all timing out together (AIMD, as TCP's congestion window and Netflix's
 * concurrency-limits).
 *
 * stack.c puts it under the retry layer and over the meter layer: every
 * try, retries included, takes a slot for as long as the store below
 * works on it; the retry layer's sleeps hold none (so nothing above can
 * deadlock on a slot).  A request beyond L waits (a condition variable)
 * rather than fails; a GET with a cancel (the hedge layer's loser) stops
 * waiting within WAIT_POLL_MS of the cancel and ends with ECANCELED.
 * Every end of a request or rise of L wakes all waiters, and the first to
 * run takes the slot (no queue order: waits are short next to a request).
 *
 * L starts at cfg->max (the S3 leaf's max_connections), never exceeds it,
 * and never goes under OBJFS_LIMIT_MIN.  Each request, when it ends:
 *
 *   congestion (ETIMEDOUT: a stall or curl timeout; ECONNRESET, EPIPE: a
 *   lost connection; EAGAIN: 429 or 503 SlowDown)
 *                                   -> DECREASE: L = max(MIN, L x 0.7)
 *   latency >= far                  -> DECREASE
 *   latency <= target, or no baseline yet, or an op without a latency
 *   sample that answered            -> fast: after L fast answers, L + 1
 *   in between, ECANCELED, other errors (ENOENT, ECONNREFUSED: nothing to
 *   share, ...)                     -> L unchanged
 *
 * One overload makes many requests fail at once: a decrease is made only
 * by a request that began after the previous decrease (a generation
 * number), so it costs one x 0.7, as TCP halves once per round trip.
 *
 * Latency is the server's wait, not the transfer's length (which grows
 * with the size and with the sharing of the bandwidth):
 *   get                       time to the first byte of the answer (the
 *                             whole time when none came)
 *   put, mpu_part             time from the last byte of the body handed
 *                             to the store to the answer
 *   head, list, del,
 *   mpu_create, mpu_abort     the whole time
 *   copy, mpu_part_copy,      none (the server works in proportion to
 *   mpu_complete, del_many    the size before it answers)
 * The baseline is the median (p50) of the last OBJFS_LIMIT_SAMPLES
 * samples (after OBJFS_LIMIT_MIN_SAMPLES of them): target =
 * max(2 x p50, 20 ms), far = max(4 x p50, 200 ms).  A server slow for
 * everyone raises its own baseline within a few dozen answers; a sudden
 * slowdown or errors bring L down first.
 *
 * Exported (cfg->metrics): objfs_store_concurrency_limit (gauge, L) and
 * objfs_store_concurrency_waits_total (requests that waited for a slot).
 * Lock order: l->mu, then a cancel's mu (objfs_cancel_fired).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/limit.h"
#include "common/io.h"
#include "common/metrics.h"

#define DEFAULT_MAX 16
#define WAIT_POLL_MS 50         /* a cancellable wait looks this often */

static const struct objfs_metric_def def_limit = {
	.name = "objfs_store_concurrency_limit",
	.help = "Requests the store may have in flight now (AIMD: lowered by timeouts, throttling and latency far above the recent median, raised back by fast answers).",
	.type = OBJFS_METRIC_GAUGE,
};

static const struct objfs_metric_def def_waits = {
	.name = "objfs_store_concurrency_waits_total",
	.help = "Store requests that waited for a slot under the concurrency limit.",
	.type = OBJFS_METRIC_COUNTER,
};

struct limit {
	unsigned max;
	uint64_t (*now_ms)(void *arg);
	void *now_arg;
	pthread_mutex_t mu;
	pthread_cond_t cv;              /* a slot freed or L rose */
	unsigned limit;                 /* mu: L */
	unsigned in_flight;             /* mu */
	unsigned waiting;               /* mu: requests waiting for a slot */
	unsigned fast;                  /* mu: fast answers since L changed */
	uint64_t gen;                   /* mu: decreases made */
	uint64_t waits;                 /* mu: requests that waited */
	uint32_t ring[OBJFS_LIMIT_SAMPLES];     /* mu: latencies (ms) */
	unsigned n_ring, ring_pos;      /* mu */
	struct objfs_metric *m_limit, *m_waits;   /* NULL: not exported */
};

/* What a request's latency sample is (the design comment). */
enum sample {
	S_NONE,
	S_WHOLE,        /* start to end */
	S_FIRST,        /* start to the first byte of the answer (the mark) */
	S_LAST,         /* the last byte of the body (the mark) to the end */
};

/* One request holding (or waiting for) a slot. */
struct slot {
	struct limit *l;
	uint64_t gen;                   /* l->gen when it got its slot */
	uint64_t t0;                    /* when it got its slot */
	uint64_t mark;                  /* atomic: the first byte of a get's
					   answer, the last of a put's body;
					   0: none yet */
};

static uint64_t real_now_ms(void *arg)
{
	(void)arg;
	return (uint64_t)objfs_now_ms();
}

static uint64_t now_ms(const struct limit *l)
{
	uint64_t t = l->now_ms(l->now_arg);

	return t > 0 ? t : 1;           /* 0 means "no mark" */
}

static void wait_a_while(struct limit *l)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += WAIT_POLL_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&l->cv, &l->mu, &ts);
}

/* Takes a slot, waiting while L are in flight.  0, or
 * ECANCELED when cancel fired first. */
static int acquire(struct limit *l, struct objfs_cancel *cancel,
		   struct slot *sl)
{
	int err = 0;

	pthread_mutex_lock(&l->mu);
	if (l->in_flight >= l->limit) {
		l->waits++;
		l->waiting++;
		objfs_metric_add(l->m_waits, 0, 1);
		while (l->in_flight >= l->limit) {
			if (objfs_cancel_fired(cancel)) {
				err = ECANCELED;
				break;
			}
			if (cancel != NULL)
				wait_a_while(l);
			else
				pthread_cond_wait(&l->cv, &l->mu);
		}
		l->waiting--;
	}
	if (err == 0) {
		l->in_flight++;
		sl->gen = l->gen;
	}
	pthread_mutex_unlock(&l->mu);
	sl->l = l;
	sl->t0 = now_ms(l);
	sl->mark = 0;
	return err;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The median of the samples (l->mu held, n_ring > 0). */
static uint32_t p50(const struct limit *l)
{
	uint32_t v[OBJFS_LIMIT_SAMPLES];

	memcpy(v, l->ring, l->n_ring * sizeof(v[0]));
	qsort(v, l->n_ring, sizeof(v[0]), cmp_u32);
	return v[l->n_ring / 2];
}

static void set_limit(struct limit *l, unsigned n)
{
	l->limit = n;
	l->fast = 0;
	objfs_metric_set(l->m_limit, 0, (int64_t)n);
}

/* l->mu held. */
static void decrease(struct limit *l, const struct slot *sl)
{
	unsigned n;

	if (sl->gen != l->gen)
		return;                 /* this overload was already counted */
	l->gen++;
	n = l->limit * OBJFS_LIMIT_DECREASE_NUM / OBJFS_LIMIT_DECREASE_DEN;
	set_limit(l, n < OBJFS_LIMIT_MIN ? OBJFS_LIMIT_MIN : n);
}

/* l->mu held. */
static void fast_answer(struct limit *l)
{
	if (++l->fast < l->limit)
		return;
	if (l->limit < l->max) {
		set_limit(l, l->limit + 1);
		pthread_cond_broadcast(&l->cv);
	} else {
		l->fast = 0;
	}
}

static bool congestion(int err)
{
	return err == ETIMEDOUT || err == ECONNRESET || err == EPIPE ||
	       err == EAGAIN;
}

/* Gives the slot back and adapts L to how the request ended. */
static void release(struct slot *sl, enum sample kind, int err)
{
	struct limit *l = sl->l;
	uint64_t end = now_ms(l), from = sl->t0, to = end, mark;
	uint32_t lat = 0, base, target, far;

	mark = __atomic_load_n(&sl->mark, __ATOMIC_RELAXED);
	if (kind == S_FIRST && mark != 0)
		to = mark;
	else if (kind == S_LAST && mark != 0)
		from = mark;
	if (to > from)
		lat = to - from > UINT32_MAX ? UINT32_MAX :
		      (uint32_t)(to - from);
	pthread_mutex_lock(&l->mu);
	l->in_flight--;
	if (congestion(err)) {
		decrease(l, sl);
	} else if (err == 0 || err == ENOENT || err == ESTALE ||
		   err == EEXIST || err == ERANGE) {
		/* the store answered */
		if (kind == S_NONE) {
			fast_answer(l);
		} else {
			if (l->n_ring >= OBJFS_LIMIT_MIN_SAMPLES) {
				base = p50(l);
				target = OBJFS_LIMIT_TARGET_K * base;
				if (target < OBJFS_LIMIT_FLOOR_MS)
					target = OBJFS_LIMIT_FLOOR_MS;
				far = OBJFS_LIMIT_FAR_K * base;
				if (far < OBJFS_LIMIT_FAR_FLOOR_MS)
					far = OBJFS_LIMIT_FAR_FLOOR_MS;
				if (lat >= far)
					decrease(l, sl);
				else if (lat <= target)
					fast_answer(l);
			} else {
				fast_answer(l);
			}
			l->ring[l->ring_pos] = lat;
			l->ring_pos = (l->ring_pos + 1) % OBJFS_LIMIT_SAMPLES;
			if (l->n_ring < OBJFS_LIMIT_SAMPLES)
				l->n_ring++;
		}
	}
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

/* ---- marks: a get's first byte, a put's last ---------------------------- */

struct mark_sink {
	const struct objfs_sink *to;
	struct slot *sl;
};

static int mark_write(void *arg, uint64_t off, const void *data, size_t n)
{
	struct mark_sink *m = arg;

	if (__atomic_load_n(&m->sl->mark, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&m->sl->mark, now_ms(m->sl->l),
				 __ATOMIC_RELAXED);
	return m->to->write_at(m->to->arg, off, data, n);
}

struct mark_source {
	const struct objfs_source *from;
	struct slot *sl;
};

static int mark_read(void *arg, uint64_t off, void *buf, size_t n)
{
	struct mark_source *m = arg;
	int err = m->from->read_at(m->from->arg, off, buf, n);

	__atomic_store_n(&m->sl->mark, now_ms(m->sl->l), __ATOMIC_RELAXED);
	return err;
}

/* ---- the ops ------------------------------------------------------------ */

static int limit_get(struct objfs_store *s, const char *key,
		     const struct objfs_get_opts *opts,
		     const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	struct slot sl;
	struct mark_sink ms = { sink, &sl };
	struct objfs_sink mine = { mark_write, &ms };
	int err;

	err = acquire(s->ctx, opts != NULL ? opts->cancel : NULL, &sl);
	if (err != 0)
		return err;
	err = objfs_store_get(s->inner, key, opts, sink != NULL ? &mine : NULL,
			      info);
	release(&sl, S_FIRST, err);
	return err;
}

/* A put or a part: the source wrapped to mark its last byte. */
static void wrap_source(struct objfs_source *mine, struct mark_source *ms,
			const struct objfs_source *src, struct slot *sl)
{
	ms->from = src;
	ms->sl = sl;
	mine->size = src->size;
	mine->read_at = mark_read;
	mine->arg = ms;
}

static int limit_put(struct objfs_store *s, const char *key,
		     const struct objfs_source *src,
		     const struct objfs_put_opts *opts,
		     struct objfs_obj_info *info)
{
	struct slot sl;
	struct mark_source ms;
	struct objfs_source mine;
	int err;

	if (src != NULL)
		wrap_source(&mine, &ms, src, &sl);
	acquire(s->ctx, NULL, &sl);
	err = objfs_store_put(s->inner, key, src != NULL ? &mine : NULL, opts,
			      info);
	release(&sl, S_LAST, err);
	return err;
}

static int limit_mpu_part(struct objfs_store *s, const char *key,
			  const char *upload_id, unsigned number,
			  const struct objfs_source *src, struct objfs_part *part)
{
	struct slot sl;
	struct mark_source ms;
	struct objfs_source mine;
	int err;

	if (src != NULL)
		wrap_source(&mine, &ms, src, &sl);
	acquire(s->ctx, NULL, &sl);
	err = objfs_store_mpu_part(s->inner, key, upload_id, number,
				   src != NULL ? &mine : NULL, part);
	release(&sl, S_LAST, err);
	return err;
}

/* The ops with nothing to wrap: take a slot, call, give it back. */
#define LIMITED(kind, call)                                     \
	do {                                                    \
		struct slot sl;                                 \
		int err_;                                       \
								\
		acquire(s->ctx, NULL, &sl);                     \
		err_ = (call);                                  \
		release(&sl, (kind), err_);                     \
		return err_;                                    \
	} while (0)

static int limit_head(struct objfs_store *s, const char *key,
		      struct objfs_obj_info *info)
{
	LIMITED(S_WHOLE, objfs_store_head(s->inner, key, info));
}

static int limit_list(struct objfs_store *s, const struct objfs_list_req *req,
		      struct objfs_list_page *page)
{
	LIMITED(S_WHOLE, objfs_store_list(s->inner, req, page));
}

static int limit_copy(struct objfs_store *s, const char *src, const char *dst,
		      const struct objfs_copy_opts *opts,
		      struct objfs_obj_info *info)
{
	LIMITED(S_NONE, objfs_store_copy(s->inner, src, dst, opts, info));
}

static int limit_del(struct objfs_store *s, const char *key)
{
	LIMITED(S_WHOLE, objfs_store_del(s->inner, key));
}

static int limit_del_many(struct objfs_store *s, const char *const *keys,
			  size_t n, size_t *failed)
{
	LIMITED(S_NONE, objfs_store_del_many(s->inner, keys, n, failed));
}

static int limit_mpu_create(struct objfs_store *s, const char *key,
			    const struct objfs_put_opts *opts, char **upload_id)
{
	LIMITED(S_WHOLE, objfs_store_mpu_create(s->inner, key, opts, upload_id));
}

static int limit_mpu_part_copy(struct objfs_store *s, const char *key,
			       const char *upload_id, unsigned number,
			       const struct objfs_part_copy *pc,
			       struct objfs_part *part)
{
	LIMITED(S_NONE, objfs_store_mpu_part_copy(s->inner, key, upload_id,
						  number, pc, part));
}

static int limit_mpu_complete(struct objfs_store *s, const char *key,
			      const char *upload_id,
			      const struct objfs_part *parts, size_t n,
			      struct objfs_obj_info *info)
{
	LIMITED(S_NONE, objfs_store_mpu_complete(s->inner, key, upload_id,
						 parts, n, info));
}

static int limit_mpu_abort(struct objfs_store *s, const char *key,
			   const char *upload_id)
{
	LIMITED(S_WHOLE, objfs_store_mpu_abort(s->inner, key, upload_id));
}

static void limit_destroy(struct objfs_store *s)
{
	struct limit *l = s->ctx;

	objfs_store_destroy(s->inner);
	if (l != NULL) {
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		free(l);
	}
	free(s);
}

static const struct objfs_store_ops limit_ops = {
	.name = "limit",
	.get = limit_get,
	.put = limit_put,
	.head = limit_head,
	.list = limit_list,
	.copy = limit_copy,
	.del = limit_del,
	.del_many = limit_del_many,
	.mpu_create = limit_mpu_create,
	.mpu_part = limit_mpu_part,
	.mpu_complete = limit_mpu_complete,
	.mpu_part_copy = limit_mpu_part_copy,
	.mpu_abort = limit_mpu_abort,
	.destroy = limit_destroy,
};

int objfs_limit_store_stats(struct objfs_store *s, unsigned *limit,
			    unsigned *in_flight, uint64_t *waits)
{
	struct limit *l;

	if (s == NULL || s->ops != &limit_ops)
		return EINVAL;
	l = s->ctx;
	pthread_mutex_lock(&l->mu);
	if (limit != NULL)
		*limit = l->limit;
	if (in_flight != NULL)
		*in_flight = l->in_flight;
	if (waits != NULL)
		*waits = l->waits;
	pthread_mutex_unlock(&l->mu);
	return 0;
}

int objfs_limit_store_set_clock(struct objfs_store *s,
				uint64_t (*now)(void *arg), void *arg)
{
	struct limit *l;

	if (s == NULL || s->ops != &limit_ops || now == NULL)
		return EINVAL;
	l = s->ctx;
	l->now_ms = now;
	l->now_arg = arg;
	return 0;
}

int objfs_limit_store_create(struct objfs_store *inner,
			     const struct objfs_limit_config *cfg,
			     struct objfs_store **out)
{
	struct objfs_store *s = NULL;
	struct limit *l = NULL;
	bool mu = false;
	int err;

	*out = NULL;
	if (inner == NULL)
		return EINVAL;
	s = calloc(1, sizeof(*s));
	l = calloc(1, sizeof(*l));
	if (s == NULL || l == NULL) {
		err = ENOMEM;
		goto fail;
	}
	err = objfs_metrics_register(cfg != NULL ? cfg->metrics : NULL,
				     &def_limit, &l->m_limit);
	if (err == 0)
		err = objfs_metrics_register(cfg != NULL ? cfg->metrics : NULL,
					     &def_waits, &l->m_waits);
	if (err != 0)
		goto fail;
	err = pthread_mutex_init(&l->mu, NULL);
	if (err != 0)
		goto fail;
	mu = true;
	err = pthread_cond_init(&l->cv, NULL);
	if (err != 0)
		goto fail;
	l->max = cfg != NULL && cfg->max > 0 ? cfg->max : DEFAULT_MAX;
	if (l->max < OBJFS_LIMIT_MIN)
		l->max = OBJFS_LIMIT_MIN;
	l->now_ms = real_now_ms;
	set_limit(l, l->max);
	s->ops = &limit_ops;
	s->inner = inner;
	s->ctx = l;
	s->log = inner->log;
	*out = s;
	return 0;
fail:
	if (mu)
		pthread_mutex_destroy(&l->mu);
	free(l);
	free(s);
	objfs_store_destroy(inner);
	return err;
}
