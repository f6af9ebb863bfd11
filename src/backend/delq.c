/*
 * delq.c - the deferred-delete layer: an unlink is answered at once and
 * its key deleted later, up to OBJFS_DELQ_BATCH keys in one DeleteObjects
 * (issue 18: a DELETE per file is what made `rm` slow; the store answers
 * a batch of 1,000 in about the time of a few DELETEs).
 *
 *   del_deferred(key)  queues key (waits while queue_max keys are queued)
 *   sender thread      one batch in flight: sends the oldest keys when the
 *                      oldest has waited delay_ms, at once when a batch is
 *                      full, the queue is full or a barrier waits; objfs_store_del_many()
 *                      below (the retry layer retries it whole: deleting a
 *                      missing key succeeds)
 *   del_barrier()      waits until every key queued before it is answered;
 *                      EIO when one failed since the last barrier
 *
 * A key is pending from del_deferred until its batch is answered.  While
 * it is, this layer answers for it as if it were gone:
 *   head, get, copy from it    ENOENT, without asking the store
 *   list                       leaves it out; a common prefix is left out
 *                              when every key under it is pending (one
 *                              flat listing of it tells); with keys pending
 *                              under the prefix, pages of 1,000 keys are
 *                              asked for (so a page may hold more than
 *                              max_keys: an rmdir's LIST of 2 keys after
 *                              `rm` of 1,000 is 1 LIST, not 500), and a
 *                              page left empty with more to come is
 *                              followed by the next
 *   put, copy to it, mpu_create, mpu_complete
 *                              cancels it while queued (the write replaces
 *                              the object anyway; a put with if_none_match
 *                              deletes it first, synchronously); waits for
 *                              its batch while in flight
 *   del, del_many              drop it from the queue, then delete now
 * A batch that fails after the retries below is sent again key by key, to
 * tell the keys that failed: each is logged with the store's account and
 * counted, and becomes visible again (it was never deleted); the next
 * barrier returns EIO.  destroy sends everything still queued first.
 *
 * Pending keys are in a hash table (by key) and, while queued, in a FIFO
 * in the order they were queued (seq); the batch in flight is an array.
 * A listing holds `view` for reading from its request to its filtering,
 * and deleted keys leave the table with it held for writing: a listing
 * the store answered while a key was still there never sees it live
 * (writer-preferring, so listings cannot starve the sender).
 * One mutex guards everything; store requests are made without it.  The
 * done callback (resume's state log) is called without it, once per
 * del_deferred (a key queued twice: the second at once), under tell_mu
 * so objfs_delq_set_done(NULL) returns after any call running; a batch's
 * keys are told before a barrier waiting for them returns.
 *
 * This layer sits at the top of a stack (stack.c), above prefix, so the
 * keys it holds are the volume's; with delay 0 it is not built and
 * objfs_store_del_deferred() deletes at once.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/delq.h"
#include "backend/store_error.h"
#include "common/io.h"
#include "common/list.h"
#include "common/log.h"
#include "common/metrics.h"

#define SUB "delq"
#define NBUCKETS 16384
#define LOG_FAILED_MAX 8        /* failed keys named per batch */

enum dstate { D_QUEUED, D_SENDING };

struct dkey {
	char *key;
	uint64_t seq;
	long long since_ms;
	enum dstate st;
	struct objfs_list fifo;         /* in q->fifo, while queued */
	struct dkey *hnext;             /* hash chain */
};

enum { K_DELETED, K_CANCELLED, K_FAILED, K_N };
static const char *const key_results[K_N] = { "deleted", "cancelled", "failed" };

static const struct objfs_metric_def def_keys = {
	.name = "objfs_delq_keys_total",
	.help = "Deferred deletes by how they ended: deleted by the store, "
		"cancelled by a write to the key, or failed (visible again).",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "result", key_results, K_N } },
	.n_labels = 1,
};

static const struct objfs_metric_def def_batches = {
	.name = "objfs_delq_batches_total",
	.help = "DeleteObjects batches the deferred-delete queue sent.",
	.type = OBJFS_METRIC_COUNTER,
};

static const struct objfs_metric_def def_queued = {
	.name = "objfs_delq_pending",
	.help = "Deferred deletes queued or in flight.",
	.type = OBJFS_METRIC_GAUGE,
};

struct delq {
	struct objfs_delq_config cfg;
	struct objfs_store *inner;      /* s->inner */
	struct objfs_log *log;
	pthread_mutex_t tell_mu;        /* held while done_fn runs */
	objfs_delq_done_fn done_fn;     /* tell_mu */
	void *done_arg;                 /* tell_mu */
	struct objfs_metric *m_keys, *m_batches, *m_pending;

	pthread_rwlock_t view;          /* read: a listing; write: keys
					   leave the table as deleted */
	pthread_mutex_t mu;
	pthread_cond_t work;            /* the sender's: keys or stop */
	pthread_cond_t answered;        /* a batch answered, a key dropped */
	pthread_t sender;
	bool started;
	bool stopping;                  /* mu */
	struct dkey *buckets[NBUCKETS]; /* mu: every pending key */
	struct objfs_list fifo;         /* mu: the queued ones, by seq */
	size_t queued;                  /* mu */
	struct dkey **batch;            /* mu: in flight, OBJFS_DELQ_BATCH */
	size_t nbatch;                  /* mu */
	uint64_t seq;                   /* mu: the last key queued */
	uint64_t urgent;                /* mu: send keys up to this seq now */
	uint64_t failed;                /* mu: failures no barrier reported */
};

static const struct objfs_store_ops delq_ops;

static struct delq *q_of(struct objfs_store *s)
{
	return s->ctx;
}

static size_t hash(const char *k)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *k != '\0'; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ULL;
	return (size_t)(h % NBUCKETS);
}

/* mu held. */
static struct dkey *find(struct delq *q, const char *key)
{
	struct dkey *e;

	for (e = q->buckets[hash(key)]; e != NULL; e = e->hnext)
		if (strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

/* Takes e out of the hash table (mu held). */
static void unhash(struct delq *q, struct dkey *e)
{
	struct dkey **pp = &q->buckets[hash(e->key)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	objfs_metric_sub(q->m_pending, 0, 1);
}

#define DKEY(l) objfs_list_entry(l, struct dkey, fifo)

/* The oldest queued key, or NULL (mu held). */
static struct dkey *fifo_first(struct delq *q)
{
	struct objfs_list *l = objfs_list_first(&q->fifo);

	return l != NULL ? DKEY(l) : NULL;
}

/* Takes queued e out of the FIFO (mu held). */
static void unqueue(struct delq *q, struct dkey *e)
{
	objfs_list_remove(&e->fifo);
	q->queued--;
}

static void dkey_free(struct dkey *e)
{
	if (e != NULL)
		free(e->key);
	free(e);
}

static bool pending(struct delq *q, const char *key)
{
	bool p;

	pthread_mutex_lock(&q->mu);
	p = find(q, key) != NULL;
	pthread_mutex_unlock(&q->mu);
	return p;
}

static void tell(struct delq *q, const char *key, int err)
{
	pthread_mutex_lock(&q->tell_mu);
	if (q->done_fn != NULL)
		q->done_fn(q->done_arg, key, err);
	pthread_mutex_unlock(&q->tell_mu);
}

/* Makes key writable: a delete of it in flight is waited for; a queued
 * one is taken out: cancelled, or sent now when must_be_gone (the key
 * must not exist for the caller's write). */
static void settle(struct delq *q, const char *key, bool must_be_gone)
{
	struct dkey *e;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		e = find(q, key);
		if (e == NULL || e->st == D_QUEUED)
			break;
		pthread_cond_wait(&q->answered, &q->mu);
	}
	if (e != NULL) {
		unqueue(q, e);
		unhash(q, e);
		pthread_cond_broadcast(&q->answered);
	}
	pthread_mutex_unlock(&q->mu);
	if (e == NULL)
		return;
	/* a delete before a put that must not find the key: the old
	 * object would make it EEXIST */
	if (must_be_gone) {
		int err = objfs_store_del(q->inner, key);

		objfs_metric_add(q->m_keys, err == 0 ? K_DELETED : K_FAILED, 1);
		tell(q, key, err);
	} else {
		objfs_metric_add(q->m_keys, K_CANCELLED, 1);
		tell(q, key, 0);
	}
	dkey_free(e);
}

/* ---- the sender ------------------------------------------------------- */

/* Whether the head of the queue should go now (mu held); *wait_ms: how
 * long until it should, when not. */
static bool due(struct delq *q, long long now, long long *wait_ms)
{
	struct dkey *head = fifo_first(q);

	*wait_ms = -1;
	if (head == NULL)
		return false;
	if (q->stopping || q->queued >= OBJFS_DELQ_BATCH ||
	    q->queued >= q->cfg.queue_max || q->urgent >= head->seq)
		return true;
	*wait_ms = head->since_ms + q->cfg.delay_ms - now;
	return *wait_ms <= 0;
}

static void wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long long ms)
{
	struct timespec ts;

	objfs_deadline_ms(CLOCK_REALTIME, ms, &ts);
	pthread_cond_timedwait(cv, mu, &ts);
}

/* Sends the batch (mu not held): per-key results into errs. */
static void send_batch(struct delq *q, const char **keys, size_t n, int *errs)
{
	size_t failed = 0, i, named = 0, nf = 0;
	char why[512];
	int err;

	err = objfs_store_del_many(q->inner, keys, n, &failed);
	objfs_metric_add(q->m_batches, 0, 1);
	for (i = 0; i < n; i++)
		errs[i] = 0;
	if (err == 0)
		return;
	/* which keys?  Each again, alone (deleting a deleted key succeeds) */
	for (i = 0; i < n; i++) {
		errs[i] = objfs_store_del(q->inner, keys[i]);
		if (errs[i] == 0)
			continue;
		nf++;
		if (named++ < LOG_FAILED_MAX)
			objfs_error(q->log, SUB, "deleting \"%s\" failed: %s; "
				    "the name is visible again and the next "
				    "fsync of its directory fails", keys[i],
				    objfs_store_error_text(errs[i], why,
							   sizeof(why)));
	}
	if (nf > named)
		objfs_error(q->log, SUB, "%zu more deletes of the batch failed",
			    nf - named);
}

static void *sender(void *arg)
{
	struct delq *q = arg;
	const char **keys;
	int *errs;
	size_t n, i;

	keys = malloc(OBJFS_DELQ_BATCH * sizeof(*keys));
	errs = malloc(OBJFS_DELQ_BATCH * sizeof(*errs));
	pthread_mutex_lock(&q->mu);
	for (;;) {
		long long w;

		if (!due(q, objfs_now_ms(), &w)) {
			if (q->stopping)
				break;
			if (w < 0)
				pthread_cond_wait(&q->work, &q->mu);
			else
				wait_ms(&q->work, &q->mu, w);
			continue;
		}
		for (n = 0; n < OBJFS_DELQ_BATCH && fifo_first(q) != NULL;
		     n++) {
			struct dkey *e = fifo_first(q);

			unqueue(q, e);
			e->st = D_SENDING;
			q->batch[n] = e;
			keys[n] = e->key;
		}
		q->nbatch = n;
		pthread_cond_broadcast(&q->answered);   /* room */
		pthread_mutex_unlock(&q->mu);
		if (keys == NULL || errs == NULL) {
			for (i = 0; i < n; i++)
				if (errs != NULL)
					errs[i] = ENOMEM;
		} else {
			send_batch(q, keys, n, errs);
		}
		/* no listing made while they were pending may see them
		 * live: it ends first */
		pthread_rwlock_wrlock(&q->view);
		pthread_mutex_lock(&q->mu);
		for (i = 0; i < n; i++) {
			int e = errs != NULL ? errs[i] : ENOMEM;

			unhash(q, q->batch[i]);
			objfs_metric_add(q->m_keys, e == 0 ? K_DELETED : K_FAILED, 1);
			if (e != 0)
				q->failed++;
		}
		pthread_mutex_unlock(&q->mu);
		pthread_rwlock_unlock(&q->view);
		/* told before a barrier may return */
		for (i = 0; i < n; i++)
			tell(q, q->batch[i]->key, errs != NULL ? errs[i] : ENOMEM);
		pthread_mutex_lock(&q->mu);
		for (i = 0; i < n; i++)
			dkey_free(q->batch[i]);
		q->nbatch = 0;
		pthread_cond_broadcast(&q->answered);
	}
	pthread_mutex_unlock(&q->mu);
	free(keys);
	free(errs);
	return NULL;
}

/* ---- the ops ---------------------------------------------------------- */

static int delq_del_deferred(struct objfs_store *s, const char *key)
{
	struct delq *q = q_of(s);
	struct dkey *e;
	int err;

	err = objfs_key_valid(key);
	if (err != 0)
		return err;
	if (q->cfg.delay_ms == 0) {
		err = objfs_store_del(s->inner, key);
		tell(q, key, err);
		return err;
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL || (e->key = strdup(key)) == NULL) {
		free(e);
		return ENOMEM;
	}
	pthread_mutex_lock(&q->mu);
	for (;;) {
		struct dkey *old = find(q, key);

		if (old != NULL && old->st == D_QUEUED) {       /* once is enough */
			pthread_mutex_unlock(&q->mu);
			dkey_free(e);
			tell(q, key, 0);
			return 0;
		}
		if (old == NULL && q->queued < q->cfg.queue_max)
			break;
		/* in flight (it may fail: queue it again after), or no room */
		pthread_cond_broadcast(&q->work);
		pthread_cond_wait(&q->answered, &q->mu);
	}
	e->seq = ++q->seq;
	e->since_ms = objfs_now_ms();
	e->st = D_QUEUED;
	objfs_list_push_back(&q->fifo, &e->fifo);
	q->queued++;
	e->hnext = q->buckets[hash(key)];
	q->buckets[hash(key)] = e;
	objfs_metric_add(q->m_pending, 0, 1);
	if (q->queued == 1 || q->queued >= OBJFS_DELQ_BATCH)
		pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->mu);
	return 0;
}

static int delq_del_barrier(struct objfs_store *s)
{
	struct delq *q = q_of(s);
	uint64_t target;
	int err;

	pthread_mutex_lock(&q->mu);
	target = q->seq;
	if (q->urgent < target)
		q->urgent = target;
	pthread_cond_signal(&q->work);
	while ((fifo_first(q) != NULL && fifo_first(q)->seq <= target) ||
	       (q->nbatch > 0 && q->batch[0]->seq <= target))
		pthread_cond_wait(&q->answered, &q->mu);
	err = q->failed > 0 ? EIO : 0;
	q->failed = 0;
	pthread_mutex_unlock(&q->mu);
	return err;
}

static int delq_get(struct objfs_store *s, const char *key,
		    const struct objfs_get_opts *opts,
		    const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	if (pending(q_of(s), key))
		return ENOENT;
	return objfs_store_get(s->inner, key, opts, sink, info);
}

static int delq_head(struct objfs_store *s, const char *key,
		     struct objfs_obj_info *info)
{
	if (pending(q_of(s), key))
		return ENOENT;
	return objfs_store_head(s->inner, key, info);
}

static int delq_put(struct objfs_store *s, const char *key,
		    const struct objfs_source *src,
		    const struct objfs_put_opts *opts,
		    struct objfs_obj_info *info)
{
	settle(q_of(s), key, opts != NULL && opts->if_none_match);
	return objfs_store_put(s->inner, key, src, opts, info);
}

static int delq_copy(struct objfs_store *s, const char *src, const char *dst,
		     const struct objfs_copy_opts *opts,
		     struct objfs_obj_info *info)
{
	if (pending(q_of(s), src))
		return ENOENT;
	settle(q_of(s), dst, false);
	return objfs_store_copy(s->inner, src, dst, opts, info);
}

static int delq_mpu_part_copy(struct objfs_store *s, const char *key,
			      const char *upload_id, unsigned number,
			      const struct objfs_part_copy *pc,
			      struct objfs_part *part)
{
	if (pending(q_of(s), pc->src))
		return ENOENT;
	return objfs_store_mpu_part_copy(s->inner, key, upload_id, number, pc,
					 part);
}

/* Drops keys from the queue: their delete is sent now by the caller. */
static void drop(struct delq *q, const char *const *keys, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		settle(q, keys[i], false);
}

static int delq_del(struct objfs_store *s, const char *key)
{
	drop(q_of(s), &key, 1);
	return objfs_store_del(s->inner, key);
}

static int delq_del_many(struct objfs_store *s, const char *const *keys,
			 size_t n, size_t *failed)
{
	drop(q_of(s), keys, n);
	return objfs_store_del_many(s->inner, keys, n, failed);
}

static int delq_mpu_create(struct objfs_store *s, const char *key,
			   const struct objfs_put_opts *opts, char **upload_id)
{
	settle(q_of(s), key, opts != NULL && opts->if_none_match);
	return objfs_store_mpu_create(s->inner, key, opts, upload_id);
}

static int delq_mpu_complete(struct objfs_store *s, const char *key,
			     const char *upload_id,
			     const struct objfs_part *parts, size_t n,
			     struct objfs_obj_info *info)
{
	settle(q_of(s), key, false);
	return objfs_store_mpu_complete(s->inner, key, upload_id, parts, n, info);
}

/* ---- list ------------------------------------------------------------- */

/* Whether a pending key starts with prefix (mu held). */
static bool pending_under(struct delq *q, const char *prefix, size_t pl)
{
	struct objfs_list *l;
	size_t i;

	objfs_list_each(l, &q->fifo)
		if (strncmp(DKEY(l)->key, prefix, pl) == 0)
			return true;
	for (i = 0; i < q->nbatch; i++)
		if (strncmp(q->batch[i]->key, prefix, pl) == 0)
			return true;
	return false;
}

/* Whether the store holds a key under prefix that is not pending. */
static int has_live(struct objfs_store *s, const char *prefix, bool *live)
{
	struct delq *q = q_of(s);
	struct objfs_list_req req = { .prefix = prefix };
	char *cont = NULL;
	int err = 0;

	*live = false;
	do {
		struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
		size_t i;

		req.continuation = cont;
		err = objfs_store_list(s->inner, &req, &page);
		free(cont);
		cont = NULL;
		if (err != 0)
			break;
		pthread_mutex_lock(&q->mu);
		for (i = 0; i < page.n_entries && !*live; i++)
			*live = find(q, page.entries[i].key) == NULL;
		pthread_mutex_unlock(&q->mu);
		if (!*live && page.next != NULL) {
			cont = page.next;
			page.next = NULL;
		}
		objfs_list_page_release(&page);
	} while (cont != NULL);
	return err;
}

/* Leaves pending keys out of page, and common prefixes that hold nothing
 * else. */
static int filter(struct objfs_store *s, struct objfs_list_page *page)
{
	struct delq *q = q_of(s);
	size_t i, k = 0;
	int err = 0;

	pthread_mutex_lock(&q->mu);
	if (q->queued + q->nbatch == 0) {
		pthread_mutex_unlock(&q->mu);
		return 0;
	}
	for (i = 0; i < page->n_entries; i++) {
		if (find(q, page->entries[i].key) != NULL)
			free(page->entries[i].key);
		else
			page->entries[k++] = page->entries[i];
	}
	page->n_entries = k;
	pthread_mutex_unlock(&q->mu);
	for (i = 0, k = 0; i < page->n_prefixes; i++) {
		const char *p = page->prefixes[i];
		bool under, live = true;

		pthread_mutex_lock(&q->mu);
		under = pending_under(q, p, strlen(p));
		pthread_mutex_unlock(&q->mu);
		if (under && err == 0)
			err = has_live(s, p, &live);
		if (live)
			page->prefixes[k++] = page->prefixes[i];
		else
			free(page->prefixes[i]);
	}
	page->n_prefixes = k;
	return err;
}

/* delq_list with the view held for reading. */
static int list_filtered(struct objfs_store *s, const struct objfs_list_req *req,
			 struct objfs_list_page *page)
{
	struct delq *q = q_of(s);
	struct objfs_list_req r = *req;
	const char *p = req->prefix != NULL ? req->prefix : "";
	char *cont = NULL;
	int err;

	/* pending keys under the prefix: a whole page at once, so that "is
	 * anything there" (max_keys 1 or 2) costs one request, not two */
	pthread_mutex_lock(&q->mu);
	if (q->queued + q->nbatch > 0 && pending_under(q, p, strlen(p)))
		r.max_keys = OBJFS_DELETE_BATCH;
	pthread_mutex_unlock(&q->mu);
	for (;;) {
		err = objfs_store_list(s->inner, &r, page);
		free(cont);
		cont = NULL;
		if (err == 0)
			err = filter(s, page);
		if (err != 0) {
			objfs_list_page_release(page);
			return err;
		}
		/* a page all pending, with more to come: the next one */
		if (page->n_entries + page->n_prefixes > 0 || page->next == NULL)
			return 0;
		cont = page->next;
		page->next = NULL;
		objfs_list_page_release(page);
		r.continuation = cont;
		r.start_after = NULL;
		r.max_keys = OBJFS_DELETE_BATCH;
	}
}

static int delq_list(struct objfs_store *s, const struct objfs_list_req *req,
		     struct objfs_list_page *page)
{
	struct delq *q = q_of(s);
	int err;

	pthread_rwlock_rdlock(&q->view);
	err = list_filtered(s, req, page);
	pthread_rwlock_unlock(&q->view);
	return err;
}

/* ---- life cycle ------------------------------------------------------- */

static void delq_destroy(struct objfs_store *s)
{
	struct delq *q = q_of(s);

	if (q != NULL) {
		if (q->started) {
			pthread_mutex_lock(&q->mu);
			q->stopping = true;
			pthread_cond_signal(&q->work);
			pthread_mutex_unlock(&q->mu);
			pthread_join(q->sender, NULL);
		}
		pthread_rwlock_destroy(&q->view);
		pthread_mutex_destroy(&q->mu);
		pthread_mutex_destroy(&q->tell_mu);
		pthread_cond_destroy(&q->work);
		pthread_cond_destroy(&q->answered);
		free(q->batch);
		free(q);
	}
	objfs_store_destroy(s->inner);
	free(s);
}

static const struct objfs_store_ops delq_ops = {
	.name = "delq",
	.get = delq_get,
	.put = delq_put,
	.head = delq_head,
	.list = delq_list,
	.copy = delq_copy,
	.del = delq_del,
	.del_many = delq_del_many,
	.mpu_create = delq_mpu_create,
	.mpu_complete = delq_mpu_complete,
	/* mpu_part and mpu_abort: the store's below (unset slots forward) */
	.mpu_part_copy = delq_mpu_part_copy,
	.destroy = delq_destroy,
	.del_deferred = delq_del_deferred,
	.del_barrier = delq_del_barrier,
};

int objfs_delq_set_done(struct objfs_store *s, objfs_delq_done_fn fn,
			void *arg)
{
	struct delq *q;

	if (s == NULL || s->ops != &delq_ops)
		return ENOENT;
	q = q_of(s);
	pthread_mutex_lock(&q->tell_mu);
	q->done_fn = fn;
	q->done_arg = arg;
	pthread_mutex_unlock(&q->tell_mu);
	return 0;
}

size_t objfs_delq_pending(struct objfs_store *s)
{
	struct delq *q;
	size_t n;

	if (s == NULL || s->ops != &delq_ops)
		return 0;
	q = q_of(s);
	pthread_mutex_lock(&q->mu);
	n = q->queued + q->nbatch;
	pthread_mutex_unlock(&q->mu);
	return n;
}

int objfs_delq_store_create(struct objfs_store *inner,
			    const struct objfs_delq_config *cfg,
			    struct objfs_log *log, struct objfs_store **out)
{
	struct objfs_store *s = NULL;
	struct delq *q = NULL;
	pthread_rwlockattr_t ra;
	int err;

	*out = NULL;
	if (inner == NULL || cfg == NULL) {
		objfs_store_destroy(inner);
		return EINVAL;
	}
	s = calloc(1, sizeof(*s));
	q = calloc(1, sizeof(*q));
	if (s == NULL || q == NULL ||
	    (q->batch = calloc(OBJFS_DELQ_BATCH, sizeof(*q->batch))) == NULL) {
		err = ENOMEM;
		goto fail;
	}
	objfs_list_init(&q->fifo);
	q->cfg = *cfg;
	if (q->cfg.queue_max == 0)
		q->cfg.queue_max = OBJFS_DELQ_QUEUE_MAX;
	q->inner = inner;
	q->log = log;
	err = objfs_metrics_register(cfg->metrics, &def_keys, &q->m_keys);
	if (err == 0)
		err = objfs_metrics_register(cfg->metrics, &def_batches,
					     &q->m_batches);
	if (err == 0)
		err = objfs_metrics_register(cfg->metrics, &def_queued,
					     &q->m_pending);
	if (err != 0)
		goto fail;
	pthread_rwlockattr_init(&ra);
	/* the sender waits for listings under way, not for ones after it */
	pthread_rwlockattr_setkind_np(&ra,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&q->view, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&q->mu, NULL);
	pthread_mutex_init(&q->tell_mu, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->answered, NULL);
	s->ops = &delq_ops;
	s->inner = inner;
	s->ctx = q;
	s->log = log;
	err = pthread_create(&q->sender, NULL, sender, q);
	if (err != 0) {
		objfs_store_destroy(s);
		return err;
	}
	q->started = true;
	*out = s;
	return 0;

fail:
	if (q != NULL)
		free(q->batch);
	free(q);
	free(s);
	objfs_store_destroy(inner);
	return err;
}
