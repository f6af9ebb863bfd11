/*
 * fault.c - the fault layer: injects errors, delays and short reads.
 *
 * State, per operation, all under one mutex (struct objfs_fault):
 *   fail_n/fail_err    fail the next fail_n calls with fail_err
 *   prob/prob_err/rng  fail each call with probability prob (xorshift64*
 *                      seeded by the test: deterministic)
 *   delay_ms           sleep before each call
 *   calls              every call, failed or not
 *   sent               bytes of the puts and parts forwarded (bytes a
 *                      client would have sent)
 * and for gets: short_k/short_n (cut the next short_n gets, or every get
 * while short_all, after short_k bytes), stall_n/stall_ms (the next
 * stall_n gets hang up to stall_ms first, stall_then_ms after the first,
 * ended early by their cancel);
 * for listings: lag_ms and lag[] (the keys written or deleted less than
 * lag_ms ago, each with what a listing showed of it before: nothing, or
 * its old entry).
 *
 * A lagging listing (lag_ms > 0): every write of a key (put, copy's
 * target, multipart completion, delete) first records the key's state
 * before it (a HEAD of the inner store, unless the key changed within
 * lag_ms already: then its older state stays), and its time, again when
 * it succeeded.  A LIST reads the whole flat listing of its prefix from
 * the inner store, puts each recorded key back as it was (hidden when it
 * did not exist, its old entry when it did), then applies the delimiter,
 * the start and max_keys itself: its tokens are "lag:" and the last key
 * or prefix given.  Records older than lag_ms are dropped as calls come.
 * Two writes of one key racing may record the state between them: a test
 * layer, good enough.
 *
 * A call first counts itself, then sleeps (outside the lock), then either
 * fails without reaching the inner store or is forwarded.  A cut get wraps
 * the caller's sink: bytes up to short_k pass, the first byte past it
 * aborts the transfer, and the get returns EIO.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/fault.h"
#include "common/clock.h"

#define LAG_TOKEN "lag:"

/* A key written less than lag_ms ago and what a listing showed before. */
struct lag_key {
	char *key;
	double t;                       /* its last write (CLOCK_MONOTONIC s) */
	bool listed;                    /* it existed before: old is shown */
	struct objfs_list_entry old;    /* old.key unused (NULL) */
};

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
	unsigned stall_n, stall_ms, stall_then_ms;      /* protected by mu */
	bool stall_distinct;                    /* protected by mu */
	struct { uint64_t off, len; } stalled[16];      /* protected by mu */
	unsigned n_stalled;                     /* protected by mu */
	unsigned lag_ms;                        /* protected by mu */
	uint64_t sent;                          /* protected by mu */
	struct lag_key *lag;                    /* protected by mu */
	size_t n_lag, cap_lag;                  /* protected by mu */
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
	objfs_fault_stall_then(f, n, ms, ms);
}

void objfs_fault_stall_ranges(struct objfs_fault *f, unsigned n, unsigned ms)
{
	objfs_fault_stall(f, n, ms);
	pthread_mutex_lock(&f->mu);
	f->stall_distinct = true;
	pthread_mutex_unlock(&f->mu);
}

void objfs_fault_stall_then(struct objfs_fault *f, unsigned n,
			    unsigned first_ms, unsigned then_ms)
{
	pthread_mutex_lock(&f->mu);
	f->stall_n = n;
	f->stall_distinct = false;
	f->n_stalled = 0;
	f->stall_ms = first_ms;
	f->stall_then_ms = then_ms;
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

uint64_t objfs_fault_sent(struct objfs_fault *f)
{
	uint64_t n;

	pthread_mutex_lock(&f->mu);
	n = f->sent;
	pthread_mutex_unlock(&f->mu);
	return n;
}

static void count_sent(struct objfs_store *s, const struct objfs_source *src)
{
	struct objfs_fault *f = s->ctx;

	if (src == NULL)
		return;
	pthread_mutex_lock(&f->mu);
	f->sent += src->size;
	pthread_mutex_unlock(&f->mu);
}

void objfs_fault_reset(struct objfs_fault *f)
{
	pthread_mutex_lock(&f->mu);
	memset(f->r, 0, sizeof(f->r));
	f->sent = 0;
	f->short_k = 0;
	f->short_n = 0;
	f->short_all = false;
	f->stall_n = 0;
	pthread_mutex_unlock(&f->mu);
	objfs_fault_list_lag(f, 0);
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
		objfs_sleep_ms(delay);
	return err;
}

/* ---- lagging listings ---------------------------------------------------- */

/* Drops the records older than lag_ms (all when the lag is off).  mu
 * held. */
static void lag_prune(struct objfs_fault *f, double now)
{
	size_t i, j;

	for (i = 0, j = 0; i < f->n_lag; i++) {
		if (f->lag_ms > 0 && (now - f->lag[i].t) * 1000.0 < f->lag_ms) {
			f->lag[j++] = f->lag[i];
			continue;
		}
		free(f->lag[i].key);
	}
	f->n_lag = j;
}

static struct lag_key *lag_find(struct objfs_fault *f, const char *key)
{
	size_t i;

	for (i = 0; i < f->n_lag; i++) {
		if (strcmp(f->lag[i].key, key) == 0)
			return &f->lag[i];
	}
	return NULL;
}

void objfs_fault_list_lag(struct objfs_fault *f, unsigned ms)
{
	pthread_mutex_lock(&f->mu);
	f->lag_ms = ms;
	lag_prune(f, objfs_now_mono());
	if (ms == 0) {
		free(f->lag);
		f->lag = NULL;
		f->cap_lag = 0;
	}
	pthread_mutex_unlock(&f->mu);
}

/* key is about to be written (done false: its state before is recorded
 * unless a recent record holds it) or was (done: its time renewed). */
static void lag_write(struct objfs_store *s, const char *key, bool done)
{
	struct objfs_fault *f = s->ctx;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct lag_key *k;
	bool known;
	int herr = 0;

	pthread_mutex_lock(&f->mu);
	lag_prune(f, objfs_now_mono());
	known = f->lag_ms == 0 || lag_find(f, key) != NULL;
	pthread_mutex_unlock(&f->mu);
	if (!known && !done)
		herr = objfs_store_head(s->inner, key, &info);
	pthread_mutex_lock(&f->mu);
	if (f->lag_ms == 0)
		goto out;
	k = lag_find(f, key);
	if (k == NULL && !done && (herr == 0 || herr == ENOENT)) {
		if (f->n_lag == f->cap_lag) {
			size_t nc = f->cap_lag ? f->cap_lag * 2 : 64;
			struct lag_key *nl = realloc(f->lag, nc * sizeof(*nl));

			if (nl == NULL)
				goto out;
			f->lag = nl;
			f->cap_lag = nc;
		}
		k = &f->lag[f->n_lag];
		memset(k, 0, sizeof(*k));
		k->key = strdup(key);
		if (k->key == NULL)
			goto out;
		f->n_lag++;
		k->listed = herr == 0;
		k->old.size = info.size;
		memcpy(k->old.etag, info.etag, sizeof(k->old.etag));
		k->old.mtime = info.mtime;
	}
	if (k != NULL)
		k->t = objfs_now_mono();
out:
	pthread_mutex_unlock(&f->mu);
	objfs_obj_info_release(&info);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct objfs_list_entry *x = a, *y = b;

	return strcmp(x->key, y->key);
}

/* The flat listing of prefix from the inner store, all pages, into *out
 * (*n entries, keys owned), in key order. */
static int lag_flat(struct objfs_store *s, const char *prefix,
		    struct objfs_list_entry **out, size_t *n, size_t *cap)
{
	struct objfs_list_req rq = { prefix, NULL, NULL, NULL, 1000 };
	char *token = NULL;
	size_t i;
	int err;

	do {
		struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;

		rq.continuation = token;
		err = objfs_store_list(s->inner, &rq, &pg);
		free(token);
		token = NULL;
		if (err != 0)
			break;
		if (*n + pg.n_entries > *cap) {
			size_t nc = (*n + pg.n_entries) * 2 + 64;
			struct objfs_list_entry *ne = realloc(*out,
							      nc * sizeof(*ne));

			if (ne == NULL) {
				objfs_list_page_release(&pg);
				err = ENOMEM;
				break;
			}
			*out = ne;
			*cap = nc;
		}
		for (i = 0; i < pg.n_entries; i++) {
			(*out)[(*n)++] = pg.entries[i];
			pg.entries[i].key = NULL;       /* moved */
		}
		token = pg.next;
		pg.next = NULL;
		objfs_list_page_release(&pg);
	} while (token != NULL);
	free(token);
	return err;
}

/* Appends an entry (key copied) or a prefix to page, within caps. */
static int page_push(struct objfs_list_page *pg, const struct objfs_list_entry *e,
		     const char *prefix, size_t plen)
{
	if (e != NULL) {
		struct objfs_list_entry *ne = realloc(pg->entries,
						      (pg->n_entries + 1) *
						      sizeof(*ne));

		if (ne == NULL)
			return ENOMEM;
		pg->entries = ne;
		ne[pg->n_entries] = *e;
		ne[pg->n_entries].key = strdup(e->key);
		if (ne[pg->n_entries].key == NULL)
			return ENOMEM;
		pg->n_entries++;
	} else {
		char **np = realloc(pg->prefixes,
				    (pg->n_prefixes + 1) * sizeof(*np));

		if (np == NULL)
			return ENOMEM;
		pg->prefixes = np;
		np[pg->n_prefixes] = strndup(prefix, plen);
		if (np[pg->n_prefixes] == NULL)
			return ENOMEM;
		pg->n_prefixes++;
	}
	return 0;
}

/* The item of len bytes at item against key after: <0, 0, >0. */
static int item_cmp(const char *item, size_t len, const char *after)
{
	int c = strncmp(item, after, len);

	if (c != 0)
		return c;
	return after[len] == '\0' ? 0 : -1;     /* after has len bytes */
}

/* A LIST as it would be lag_ms ago for the keys recorded (see the top). */
static int lag_list(struct objfs_store *s, const struct objfs_list_req *req,
		    struct objfs_list_page *page)
{
	struct objfs_fault *f = s->ctx;
	const char *prefix = req->prefix != NULL ? req->prefix : "";
	const char *delim = req->delimiter;
	const char *after = req->start_after;
	struct objfs_list_entry *e = NULL;
	size_t n = 0, n0, cap = 0, plen = strlen(prefix), i, j, given = 0;
	unsigned char *drop = NULL;
	unsigned max = req->max_keys ? req->max_keys : 1000;
	char *last = NULL;
	int err;

	if (req->continuation != NULL) {
		if (strncmp(req->continuation, LAG_TOKEN,
			    strlen(LAG_TOKEN)) != 0)
			return EINVAL;
		after = req->continuation + strlen(LAG_TOKEN);
	}
	err = lag_flat(s, prefix, &e, &n, &cap);
	if (err != 0)
		goto out;
	n0 = n;
	drop = calloc(n0 + 1, 1);
	if (drop == NULL) {
		err = ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&f->mu);
	lag_prune(f, objfs_now_mono());
	for (i = 0; i < f->n_lag && err == 0; i++) {
		const struct lag_key *k = &f->lag[i];
		struct objfs_list_entry key = { k->key, 0, "", { 0, 0 } };
		struct objfs_list_entry *hit;

		if (strncmp(k->key, prefix, plen) != 0)
			continue;
		hit = n0 > 0 ? bsearch(&key, e, n0, sizeof(*e), entry_cmp) : NULL;
		if (hit != NULL && !k->listed) {
			drop[hit - e] = 1;      /* new: not listed yet */
		} else if (hit == NULL && k->listed) {
			/* gone: still listed (appended, sorted below) */
			if (n == cap) {
				size_t nc = cap * 2 + 64;
				struct objfs_list_entry *ne = realloc(e, nc * sizeof(*ne));

				if (ne == NULL) {
					err = ENOMEM;
					break;
				}
				e = ne;
				cap = nc;
			}
			e[n] = k->old;
			e[n].key = strdup(k->key);
			if (e[n].key == NULL)
				err = ENOMEM;
			else
				n++;
		}
	}
	pthread_mutex_unlock(&f->mu);
	for (i = 0, j = 0; i < n; i++) {
		if (i < n0 && drop[i])
			free(e[i].key);
		else
			e[j++] = e[i];
	}
	n = j;
	if (err != 0)
		goto out;
	if (n > 1)	/* qsort(NULL, 0) is undefined */
		qsort(e, n, sizeof(*e), entry_cmp);
	/* the page: keys and common prefixes in one order, after `after` */
	for (i = 0; i < n && err == 0; i++) {
		const char *rest = e[i].key + plen;
		const char *d = delim != NULL && *delim != '\0' ?
				strstr(rest, delim) : NULL;
		size_t ilen = d != NULL ? (size_t)(d - e[i].key) + strlen(delim) :
			      strlen(e[i].key);

		if (last != NULL && strlen(last) == ilen &&
		    strncmp(last, e[i].key, ilen) == 0)
			continue;       /* the same common prefix */
		if (after != NULL && item_cmp(e[i].key, ilen, after) <= 0)
			continue;       /* not after the start */
		if (given == max) {
			size_t tl = strlen(LAG_TOKEN) + strlen(last) + 1;

			page->next = malloc(tl);
			if (page->next == NULL)
				err = ENOMEM;
			else
				snprintf(page->next, tl, "%s%s", LAG_TOKEN, last);
			break;
		}
		err = page_push(page, d != NULL ? NULL : &e[i], e[i].key, ilen);
		free(last);
		last = strndup(e[i].key, ilen);
		if (last == NULL)
			err = ENOMEM;
		given++;
	}
out:
	for (i = 0; i < n; i++)
		free(e[i].key);
	free(e);
	free(drop);
	free(last);
	if (err != 0)
		objfs_list_page_release(page);
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

/* With stall_distinct: true when opts's range hung before; else it is
 * remembered.  Called with mu held. */
static bool stalled_before(struct objfs_fault *f, const struct objfs_get_opts *opts)
{
	uint64_t off = opts != NULL ? opts->off : 0;
	uint64_t len = opts != NULL ? opts->len : 0;
	unsigned i;

	for (i = 0; i < f->n_stalled; i++)
		if (f->stalled[i].off == off && f->stalled[i].len == len)
			return true;
	if (f->n_stalled < sizeof(f->stalled) / sizeof(f->stalled[0])) {
		f->stalled[f->n_stalled].off = off;
		f->stalled[f->n_stalled].len = len;
		f->n_stalled++;
	}
	return false;
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
	if (f->stall_n > 0 && !(f->stall_distinct && stalled_before(f, opts))) {
		f->stall_n--;
		stall = f->stall_ms;
		f->stall_ms = f->stall_then_ms;
	}
	pthread_mutex_unlock(&f->mu);
	for (; stall > 0; stall -= stall < 10 ? stall : 10) {
		if (opts != NULL && objfs_cancel_fired(opts->cancel))
			return ECANCELED;
		objfs_sleep_ms(stall < 10 ? stall : 10);
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

	if (err != 0)
		return err;
	lag_write(s, key, false);
	count_sent(s, src);
	err = objfs_store_put(s->inner, key, src, opts, info);
	lag_write(s, key, true);
	return err;
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
	struct objfs_fault *f = s->ctx;
	int err = enter(s, OBJFS_FOP_LIST);
	bool lag;

	if (err != 0)
		return err;
	pthread_mutex_lock(&f->mu);
	lag = f->lag_ms > 0;
	pthread_mutex_unlock(&f->mu);
	return lag ? lag_list(s, req, page) :
		objfs_store_list(s->inner, req, page);
}

static int fault_copy(struct objfs_store *s, const char *src, const char *dst,
		      const struct objfs_copy_opts *opts,
		      struct objfs_obj_info *info)
{
	int err = enter(s, OBJFS_FOP_COPY);

	if (err != 0)
		return err;
	lag_write(s, dst, false);
	err = objfs_store_copy(s->inner, src, dst, opts, info);
	lag_write(s, dst, true);
	return err;
}

static int fault_del(struct objfs_store *s, const char *key)
{
	int err = enter(s, OBJFS_FOP_DEL);

	if (err != 0)
		return err;
	lag_write(s, key, false);
	err = objfs_store_del(s->inner, key);
	lag_write(s, key, true);
	return err;
}

static int fault_del_many(struct objfs_store *s, const char *const *keys,
			  size_t n, size_t *failed)
{
	int err = enter(s, OBJFS_FOP_DEL_MANY);
	size_t i;

	if (err != 0) {
		if (failed != NULL)
			*failed = n;
		return err;
	}
	for (i = 0; i < n; i++)
		lag_write(s, keys[i], false);
	err = objfs_store_del_many(s->inner, keys, n, failed);
	for (i = 0; i < n; i++)
		lag_write(s, keys[i], true);
	return err;
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

	if (err != 0)
		return err;
	count_sent(s, src);
	return objfs_store_mpu_part(s->inner, key, upload_id, number, src, part);
}

static int fault_mpu_part_copy(struct objfs_store *s, const char *key,
			       const char *upload_id, unsigned number,
			       const struct objfs_part_copy *pc,
			       struct objfs_part *part)
{
	int err = enter(s, OBJFS_FOP_MPU_PART_COPY);

	return err != 0 ? err :
		objfs_store_mpu_part_copy(s->inner, key, upload_id, number, pc,
					  part);
}

static int fault_mpu_complete(struct objfs_store *s, const char *key,
			      const char *upload_id,
			      const struct objfs_part *parts, size_t n,
			      struct objfs_obj_info *info)
{
	int err = enter(s, OBJFS_FOP_MPU_COMPLETE);

	if (err != 0)
		return err;
	lag_write(s, key, false);
	err = objfs_store_mpu_complete(s->inner, key, upload_id, parts, n,
				       info);
	lag_write(s, key, true);
	return err;
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
		f->lag_ms = 0;
		lag_prune(f, 0);
		free(f->lag);
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
	.mpu_part_copy = fault_mpu_part_copy,
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
