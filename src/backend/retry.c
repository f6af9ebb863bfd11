/*
 * retry.c - the retry layer: retries transient failures of the inner store.
 *
 * Every op is retried while its error is retryable (objfs_retry_retryable)
 * and the budget lasts:
 *
 *   TRY -> ok                              -> return 0
 *       -> error, not retryable            -> return it
 *       -> error, attempts == max_attempts -> return it (the last error)
 *       -> error, the store failing for >= max_total_ms (since the
 *          first failure after its last answer, seen by any request),
 *          or this request's tries >= 2 x max_total_ms
 *                                          -> return it (the first
 *                                             contact's bound: below)
 *       -> else sleep(min(delay, max_total_ms - elapsed)), TRY again
 *
 * With max_attempts OBJFS_RETRY_UNLIMITED only time ends the tries: an
 * outage shorter than max_total_ms costs the caller a pause, not an
 * error, and the last try comes at the bound.  Giving up is logged at
 * error (op, key, tries, time, cause), a recovery at info.
 * delay is full jitter over a capped exponential (objfs_retry_delay_ms)
 * drawn from a per-instance xorshift64* generator seeded from getrandom and
 * guarded by a mutex.  Gets are retried from the start of their range
 * (sinks accept rewrites); puts and parts re-read their source (sources
 * may be read more than once); a cancelled get is not tried again.  The
 * first retry of a call is logged at
 * warn with the op, key and error, later ones at debug; nothing secret is
 * known to this layer.
 *
 * The retry budget bounds the extra load retries put on a store that
 * fails: a token bucket per layer (so per store), as in the AWS SDKs'
 * standard retry mode.  It starts full (cfg->budget tokens); a retry
 * takes objfs_retry_cost(err) (5, or 10 after a timeout or a lost
 * connection) and keeps them while it fails; an answer without a retry
 * gives back 1, an answer after retries gives back what the last retry
 * took (any answer counts: a 404 is a healthy store).  A retry the bucket
 * cannot pay for is not refused: that would turn a slow store into
 * errors.  It sleeps objfs_retry_wait_ms() (half to all of max_delay_ms)
 * instead of the backoff and then goes ahead, still within max_total_ms
 * (counted: objfs_store_retry_budget_waits_total).  So while the store
 * fails for long, each call retries about once per max_delay_ms and the
 * store sees that, not a burst of quick retries from every call; an
 * application still gets an error only when max_total_ms (or
 * max_attempts) is spent:
 *
 *   retry wanted -> tokens >= cost -> tokens -= cost, sleep the backoff
 *                -> else           -> sleep objfs_retry_wait_ms(), retry
 *
 * First contact: until the store has answered once, a failure that finds
 * nothing at its address (ECONNREFUSED, EHOSTUNREACH: no listener, no
 * route, a name that does not resolve) is retried for
 * OBJFS_RETRY_FIRST_CONTACT_MS, not max_total_ms: a wrong host or port
 * fails a new mount in seconds, with its cause.
 *
 * Every try is logged at debug; the meter layer under this one counts it
 * (objfs_store_requests(), meter.c).  With cfg->metrics, every retry and every give-up is counted by op
 * (objfs_store_retries_total, objfs_store_retries_exhausted_total).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "common/clock.h"
#include "common/io.h"
#include "backend/retry.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"

struct retry_ctx {
	struct objfs_retry_config cfg;          /* resolved */
	struct objfs_retry_hooks hooks;
	pthread_mutex_t mu;
	uint64_t rng;                           /* protected by mu */
	unsigned tokens;                        /* protected by mu */
	uint64_t waits;                         /* protected by mu */
	bool reached;                           /* mu: the store answered once */
	bool down;                              /* mu: failing since down_since */
	uint64_t down_since;                    /* mu: the first failure since
						   the last answer (now_ms) */
	struct objfs_metric *retries, *giveups; /* NULL: not counted */
	struct objfs_metric *budget_waits;      /* NULL: not counted */
};

bool objfs_retry_retryable(int err)
{
	switch (err) {
	case EAGAIN:
	case EIO:
	case ETIMEDOUT:
	case ECONNRESET:
	case ECONNREFUSED:
	case EPIPE:
	case EHOSTUNREACH:
		return true;
	default:
		return false;
	}
}

struct objfs_retry_config objfs_retry_config_resolve(
	const struct objfs_retry_config *cfg)
{
	struct objfs_retry_config c = { 0 };

	if (cfg != NULL)
		c = *cfg;
	if (c.max_attempts == 0)
		c.max_attempts = 5;
	if (c.base_delay_ms == 0)
		c.base_delay_ms = 100;
	if (c.max_delay_ms == 0)
		c.max_delay_ms = 2000;
	if (c.max_total_ms == 0)
		c.max_total_ms = 60000;
	if (c.budget == 0)
		c.budget = 500;
	return c;
}

unsigned objfs_retry_cost(int err)
{
	switch (err) {
	case ETIMEDOUT:
	case ECONNRESET:
	case ECONNREFUSED:
	case EPIPE:
	case EHOSTUNREACH:
		return OBJFS_RETRY_COST_TIMEOUT;
	default:
		return OBJFS_RETRY_COST;
	}
}

unsigned objfs_retry_wait_ms(const struct objfs_retry_config *cfg,
			     uint64_t rnd)
{
	unsigned half = cfg->max_delay_ms / 2;

	return half + (unsigned)(rnd % ((uint64_t)cfg->max_delay_ms - half + 1));
}

unsigned objfs_retry_delay_ms(const struct objfs_retry_config *cfg,
			      unsigned attempt, uint64_t rnd)
{
	uint64_t cap = cfg->base_delay_ms;
	unsigned i;

	for (i = 1; i < attempt && cap < cfg->max_delay_ms; i++)
		cap *= 2;
	if (cap > cfg->max_delay_ms)
		cap = cfg->max_delay_ms;
	return (unsigned)(rnd % (cap + 1));
}

static void real_sleep_ms(void *arg, unsigned ms)
{
	(void)arg;
	objfs_sleep_ms(ms);
}

static uint64_t real_now_ms(void *arg)
{
	(void)arg;
	return (uint64_t)objfs_now_ms();
}

static uint64_t next_random(struct retry_ctx *c)
{
	uint64_t x;

	pthread_mutex_lock(&c->mu);
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	x = c->rng * 0x2545F4914F6CDD1DULL;
	pthread_mutex_unlock(&c->mu);
	return x;
}

/* One call to the inner store, with its arguments. */
enum call_op {
	C_GET, C_PUT, C_HEAD, C_LIST, C_COPY, C_DEL, C_DEL_MANY,
	C_MPU_CREATE, C_MPU_PART, C_MPU_COMPLETE, C_MPU_ABORT, C_MPU_PART_COPY,
};

static const char *const call_names[OBJFS_STORE_REQ_OPS] = {
	"get", "put", "head", "list", "copy", "del", "del_many",
	"mpu_create", "mpu_part", "mpu_complete", "mpu_abort", "mpu_part_copy",
};

static const struct objfs_metric_def def_retries = {
	.name = "objfs_store_retries_total",
	.help = "Store requests tried again after a transient failure, by operation.",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "op", call_names, sizeof(call_names) / sizeof(call_names[0]) } },
	.n_labels = 1,
	.sparse = true,
};

static const struct objfs_metric_def def_budget_waits = {
	.name = "objfs_store_retry_budget_waits_total",
	.help = "Retries the retry budget could not pay for, which waited about max_delay instead of the backoff, by operation.",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "op", call_names, sizeof(call_names) / sizeof(call_names[0]) } },
	.n_labels = 1,
	.sparse = true,
};

static const struct objfs_metric_def def_giveups = {
	.name = "objfs_store_retries_exhausted_total",
	.help = "Store operations that failed after every try the retry budget allowed, by operation.",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "op", call_names, sizeof(call_names) / sizeof(call_names[0]) } },
	.n_labels = 1,
	.sparse = true,
};

struct call {
	enum call_op op;
	const char *key;
	const char *key2;
	const char *upload_id;
	unsigned number;
	const struct objfs_get_opts *get_opts;
	const struct objfs_sink *sink;
	const struct objfs_source *src;
	const struct objfs_put_opts *put_opts;
	const struct objfs_copy_opts *copy_opts;
	const struct objfs_part_copy *part_copy;
	const struct objfs_list_req *req;
	struct objfs_list_page *page;
	const char *const *keys;
	size_t n;
	size_t *failed;
	const struct objfs_part *parts;
	struct objfs_part *part;
	char **upload_id_out;
	struct objfs_obj_info *info;
};

static int call_once(struct objfs_store *in, const struct call *c)
{
	switch (c->op) {
	case C_GET:
		return objfs_store_get(in, c->key, c->get_opts, c->sink, c->info);
	case C_PUT:
		return objfs_store_put(in, c->key, c->src, c->put_opts, c->info);
	case C_HEAD:
		return objfs_store_head(in, c->key, c->info);
	case C_LIST:
		return objfs_store_list(in, c->req, c->page);
	case C_COPY:
		return objfs_store_copy(in, c->key, c->key2, c->copy_opts,
					c->info);
	case C_DEL:
		return objfs_store_del(in, c->key);
	case C_DEL_MANY:
		return objfs_store_del_many(in, c->keys, c->n, c->failed);
	case C_MPU_CREATE:
		return objfs_store_mpu_create(in, c->key, c->put_opts,
					      c->upload_id_out);
	case C_MPU_PART:
		return objfs_store_mpu_part(in, c->key, c->upload_id, c->number,
					    c->src, c->part);
	case C_MPU_COMPLETE:
		return objfs_store_mpu_complete(in, c->key, c->upload_id,
						c->parts, c->n, c->info);
	case C_MPU_ABORT:
		return objfs_store_mpu_abort(in, c->key, c->upload_id);
	case C_MPU_PART_COPY:
		return objfs_store_mpu_part_copy(in, c->key, c->upload_id,
						 c->number, c->part_copy,
						 c->part);
	}
	return EINVAL;
}

/* The key a call names, for logs. */
static const char *call_key(const struct call *c)
{
	if (c->key != NULL)
		return c->key;
	return c->op == C_DEL_MANY && c->n > 0 ? c->keys[0] : "";
}

/* Takes cost tokens for a retry: true, or false when the bucket holds
 * fewer (then it is not touched). */
static bool budget_take(struct retry_ctx *rc, unsigned cost)
{
	bool paid = true;

	if (rc->cfg.budget == OBJFS_RETRY_NO_BUDGET)
		return true;
	pthread_mutex_lock(&rc->mu);
	if (rc->tokens >= cost)
		rc->tokens -= cost;
	else {
		paid = false;
		rc->waits++;
	}
	pthread_mutex_unlock(&rc->mu);
	return paid;
}

/* Gives n tokens back, up to the capacity. */
static void budget_give(struct retry_ctx *rc, unsigned n)
{
	if (rc->cfg.budget == OBJFS_RETRY_NO_BUDGET)
		return;
	pthread_mutex_lock(&rc->mu);
	rc->tokens = rc->cfg.budget - rc->tokens > n ? rc->tokens + n :
		     rc->cfg.budget;
	pthread_mutex_unlock(&rc->mu);
}

/* A failure that says nothing answers at the address: no route, no
 * name, no listener.  Until the store has answered once (rc->reached),
 * such a failure is retried for OBJFS_RETRY_FIRST_CONTACT_MS at most: a
 * mount or a plugin that has never reached its store is misconfigured
 * far more often than it meets an outage, and says so within seconds;
 * once the store has answered, an outage is ridden through for the whole
 * max_total_ms. */
static bool nothing_there(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH;
}

/* A try failed at now with err: how long the store has been failing (since
 * the first failure after its last answer, whichever request saw it), and
 * the bound that applies (the first contact's or max_total_ms). */
static uint64_t failing_for(struct retry_ctx *rc, uint64_t now, int err,
			    uint64_t *bound)
{
	uint64_t since;

	pthread_mutex_lock(&rc->mu);
	if (!rc->down) {
		rc->down = true;
		rc->down_since = now;
	}
	since = rc->down_since;
	*bound = rc->cfg.max_total_ms;
	if (nothing_there(err) && !rc->reached && *bound > OBJFS_RETRY_FIRST_CONTACT_MS)
		*bound = OBJFS_RETRY_FIRST_CONTACT_MS;
	pthread_mutex_unlock(&rc->mu);
	return now > since ? now - since : 0;
}

/* A call ended with err (not ECANCELED): an answer of the store (any
 * reply, or an error that is not "nothing there") marks it reached; a
 * success or a final answer (not retryable) ends its failing time. */
static void call_ended(struct retry_ctx *rc, int err)
{
	pthread_mutex_lock(&rc->mu);
	if (!nothing_there(err))
		rc->reached = true;
	if (!objfs_retry_retryable(err))
		rc->down = false;
	pthread_mutex_unlock(&rc->mu);
}

static int run(struct objfs_store *s, const struct call *c)
{
	struct retry_ctx *rc = s->ctx;
	const struct objfs_retry_hooks *h = &rc->hooks;
	const struct objfs_retry_config *cfg = &rc->cfg;
	uint64_t start = h->now_ms(h->arg), elapsed = 0, now, failing, bound;
	unsigned attempt, delay, lease = 0;     /* what the last retry took */
	bool paid;
	int err;

	for (attempt = 1;; attempt++) {
		objfs_debug(s->log, "retry", "request %s %s", call_names[c->op],
			    call_key(c));
		err = call_once(s->inner, c);
		if (err == 0 || !objfs_retry_retryable(err))
			break;
		if (c->op == C_GET && c->get_opts != NULL &&
		    objfs_cancel_fired(c->get_opts->cancel)) {
			err = ECANCELED;        /* another GET answered */
			break;
		}
		now = h->now_ms(h->arg);
		elapsed = now - start;
		failing = failing_for(rc, now, err, &bound);
		/* The bound counts from when the store stopped answering, for
		 * every request alike: a system call that makes several
		 * requests in an outage gets its error once the store has been
		 * failing for the bound, not after a bound per request.  A
		 * request whose own tries outlast two bounds (the store answers
		 * others, not this one) gives up too. */
		if (attempt >= cfg->max_attempts || failing >= bound ||
		    elapsed >= 2 * bound) {
			objfs_error(s->log, "retry",
				    "%s %s: giving up after %u tries in %llu ms: "
				    "%s", call_names[c->op], call_key(c),
				    attempt, (unsigned long long)elapsed,
				    objfs_strerror(err));
			objfs_metric_add(rc->giveups, c->op, 1);
			break;
		}
		paid = budget_take(rc, objfs_retry_cost(err));
		lease = paid ? objfs_retry_cost(err) : 0;
		if (paid) {
			delay = objfs_retry_delay_ms(cfg, attempt,
						     next_random(rc));
		} else {
			delay = objfs_retry_wait_ms(cfg, next_random(rc));
			objfs_metric_add(rc->budget_waits, c->op, 1);
		}
		/* The last try comes at the bound, not before it. */
		if (failing + delay > bound)
			delay = (unsigned)(bound - failing);
		/* An outage retries many times: the first retry is a warning,
		 * the rest debug, the end (recovery or giving up) is said. */
		objfs_logf(s->log, attempt == 1 ? OBJFS_LOG_WARN : OBJFS_LOG_DEBUG,
			   "retry", "%s %s failed: %s; try %u in %u ms%s",
			   call_names[c->op], call_key(c),
			   objfs_strerror(err), attempt + 1, delay,
			   paid ? "" : " (retry budget spent)");
		objfs_metric_add(rc->retries, c->op, 1);
		h->sleep_ms(h->arg, delay);
		if (c->op == C_LIST)
			objfs_list_page_release(c->page);   /* defensive */
	}
	/* The store answered (not necessarily 2xx: a 404 is a healthy
	 * store): the bucket gets back what the last retry took, or 1. */
	if (!objfs_retry_retryable(err) && err != ECANCELED)
		budget_give(rc, lease > 0 ? lease : OBJFS_RETRY_EARN);
	if (err != ECANCELED)
		call_ended(rc, err);
	if (err == 0 && attempt > 1)
		objfs_info(s->log, "retry", "%s %s succeeded at try %u after "
			   "%llu ms", call_names[c->op], call_key(c), attempt,
			   (unsigned long long)(h->now_ms(h->arg) - start));
	return err;
}

static int retry_get(struct objfs_store *s, const char *key,
		     const struct objfs_get_opts *opts,
		     const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	struct call c = { .op = C_GET, .key = key, .get_opts = opts,
			  .sink = sink, .info = info };

	return run(s, &c);
}

static int retry_put(struct objfs_store *s, const char *key,
		     const struct objfs_source *src,
		     const struct objfs_put_opts *opts,
		     struct objfs_obj_info *info)
{
	struct call c = { .op = C_PUT, .key = key, .src = src,
			  .put_opts = opts, .info = info };

	return run(s, &c);
}

static int retry_head(struct objfs_store *s, const char *key,
		      struct objfs_obj_info *info)
{
	struct call c = { .op = C_HEAD, .key = key, .info = info };

	return run(s, &c);
}

static int retry_list(struct objfs_store *s, const struct objfs_list_req *req,
		      struct objfs_list_page *page)
{
	struct call c = { .op = C_LIST, .key = req->prefix, .req = req,
			  .page = page };

	return run(s, &c);
}

static int retry_copy(struct objfs_store *s, const char *src, const char *dst,
		      const struct objfs_copy_opts *opts,
		      struct objfs_obj_info *info)
{
	struct call c = { .op = C_COPY, .key = src, .key2 = dst,
			  .copy_opts = opts, .info = info };

	return run(s, &c);
}

static int retry_del(struct objfs_store *s, const char *key)
{
	struct call c = { .op = C_DEL, .key = key };

	return run(s, &c);
}

static int retry_del_many(struct objfs_store *s, const char *const *keys,
			  size_t n, size_t *failed)
{
	struct call c = { .op = C_DEL_MANY, .keys = keys, .n = n,
			  .failed = failed };

	return run(s, &c);
}

static int retry_mpu_create(struct objfs_store *s, const char *key,
			    const struct objfs_put_opts *opts, char **upload_id)
{
	struct call c = { .op = C_MPU_CREATE, .key = key, .put_opts = opts,
			  .upload_id_out = upload_id };

	return run(s, &c);
}

static int retry_mpu_part(struct objfs_store *s, const char *key,
			  const char *upload_id, unsigned number,
			  const struct objfs_source *src, struct objfs_part *part)
{
	struct call c = { .op = C_MPU_PART, .key = key,
			  .upload_id = upload_id, .number = number, .src = src,
			  .part = part };

	return run(s, &c);
}

static int retry_mpu_part_copy(struct objfs_store *s, const char *key,
			       const char *upload_id, unsigned number,
			       const struct objfs_part_copy *pc,
			       struct objfs_part *part)
{
	struct call c = { .op = C_MPU_PART_COPY, .key = key,
			  .upload_id = upload_id, .number = number,
			  .part_copy = pc, .part = part };

	return run(s, &c);
}

static int retry_mpu_complete(struct objfs_store *s, const char *key,
			      const char *upload_id,
			      const struct objfs_part *parts, size_t n,
			      struct objfs_obj_info *info)
{
	struct call c = { .op = C_MPU_COMPLETE, .key = key,
			  .upload_id = upload_id, .parts = parts, .n = n,
			  .info = info };

	return run(s, &c);
}

static int retry_mpu_abort(struct objfs_store *s, const char *key,
			   const char *upload_id)
{
	struct call c = { .op = C_MPU_ABORT, .key = key,
			  .upload_id = upload_id };

	return run(s, &c);
}

static void retry_destroy(struct objfs_store *s)
{
	struct retry_ctx *rc = s->ctx;

	objfs_store_destroy(s->inner);
	if (rc != NULL) {
		pthread_mutex_destroy(&rc->mu);
		free(rc);
	}
	free(s);
}

static const struct objfs_store_ops retry_ops = {
	.name = "retry",
	.get = retry_get,
	.put = retry_put,
	.head = retry_head,
	.list = retry_list,
	.copy = retry_copy,
	.del = retry_del,
	.del_many = retry_del_many,
	.mpu_create = retry_mpu_create,
	.mpu_part = retry_mpu_part,
	.mpu_complete = retry_mpu_complete,
	.mpu_part_copy = retry_mpu_part_copy,
	.mpu_abort = retry_mpu_abort,
	.destroy = retry_destroy,
};

int objfs_retry_store_set_hooks(struct objfs_store *s,
				const struct objfs_retry_hooks *hooks)
{
	struct retry_ctx *rc;

	if (s == NULL || s->ops != &retry_ops || hooks == NULL ||
	    hooks->sleep_ms == NULL || hooks->now_ms == NULL)
		return EINVAL;
	rc = s->ctx;
	rc->hooks = *hooks;
	return 0;
}

int objfs_retry_store_budget(struct objfs_store *s, unsigned *tokens,
			     uint64_t *waits)
{
	struct retry_ctx *rc;

	if (s == NULL || s->ops != &retry_ops)
		return EINVAL;
	rc = s->ctx;
	pthread_mutex_lock(&rc->mu);
	*tokens = rc->tokens;
	*waits = rc->waits;
	pthread_mutex_unlock(&rc->mu);
	return 0;
}

int objfs_retry_store_create(struct objfs_store *inner,
			     const struct objfs_retry_config *cfg,
			     struct objfs_store **out)
{
	struct objfs_store *s = NULL;
	struct retry_ctx *rc = NULL;
	int err;

	*out = NULL;
	if (inner == NULL)
		return EINVAL;
	s = calloc(1, sizeof(*s));
	rc = calloc(1, sizeof(*rc));
	if (s == NULL || rc == NULL) {
		err = ENOMEM;
		goto fail_alloc;
	}
	err = objfs_random_bytes(&rc->rng, sizeof(rc->rng));
	if (err == 0 && cfg != NULL)
		err = objfs_metrics_register(cfg->metrics, &def_retries, &rc->retries);
	if (err == 0 && cfg != NULL)
		err = objfs_metrics_register(cfg->metrics, &def_giveups, &rc->giveups);
	if (err == 0 && cfg != NULL)
		err = objfs_metrics_register(cfg->metrics, &def_budget_waits,
					     &rc->budget_waits);
	if (err != 0)
		goto fail_alloc;
	if (rc->rng == 0)
		rc->rng = 0x9E3779B97F4A7C15ULL;
	err = pthread_mutex_init(&rc->mu, NULL);
	if (err != 0)
		goto fail_alloc;
	rc->cfg = objfs_retry_config_resolve(cfg);
	rc->tokens = rc->cfg.budget;
	rc->hooks.sleep_ms = real_sleep_ms;
	rc->hooks.now_ms = real_now_ms;
	s->ops = &retry_ops;
	s->inner = inner;
	s->ctx = rc;
	s->log = inner->log;
	*out = s;
	return 0;

fail_alloc:
	free(rc);
	free(s);
	objfs_store_destroy(inner);
	return err;
}
