/*
 * hedge.c - the hedge layer: a GET that has been silent much longer than
 * GETs usually are is raced by a second, identical GET; the first to
 * finish answers and the other is cancelled (objfs_cancel).  A stalled
 * transfer then costs about the threshold and one GET, not the stall
 * timeout plus a retry.
 *
 * A hedgeable GET (a known range of at most max_len bytes) runs in a
 * thread of its own (the primary), writing into the caller's sink
 * through a gate that notes when bytes arrive; the caller waits for an
 * answer.  The primary's deadline is its last byte (or its start) + the
 * threshold.  One timer thread per layer watches the deadlines; at one,
 * while the primary still runs and fewer than max_hedges hedges do, it
 * starts the hedge: a thread running the same GET into its own buffer.
 * Both own copies of the key and If-Match: a loser outlives the call.
 *
 *   RUNNING -> primary ok first  -> PRIMARY: the hedge is cancelled
 *           -> hedge ok first    -> HEDGE: the gate shuts (the primary's
 *                                   later bytes never reach the sink), the
 *                                   primary is cancelled, and the caller
 *                                   writes the hedge's whole range into
 *                                   the sink (sinks accept rewrites) and
 *                                   returns its info
 *           -> one fails         -> the other's answer, if one runs
 * The caller leaves as soon as there is an answer: a loser ends by itself
 * (ECANCELED at its leaf's next look, within a second) and frees what it
 * holds.  Both GETs carry the caller's If-Match; whichever wins, the sink
 * ends with one answer's bytes (the hedge's rewrite covers all the
 * primary wrote).
 *
 * Two thresholds, each clamp(k * p95 of the last SAMPLES primaries that
 * answered, floor_ms, ceiling_ms), ceiling_ms until MIN_SAMPLES were
 * seen: one for the wait for the first byte (the server's work), one for
 * a silence after it (between two bytes: the transfer's own jitter,
 * much shorter).  A silence is what a stall looks like, and unlike a
 * GET's duration it does not grow with its size.  A context (hget)
 * lives while the caller or a racer holds it (refs).  Lock order: h->mu,
 * then g->mu, then the caller's sink (gate_write).
 *
 * Hedges are extra load, and a loaded server must not be fed more of
 * it (measured on an oversubscribed machine: a cold read sent 2.2-2.6x
 * the GETs with hedging on).  Two rules, checked when a GET reaches its
 * threshold:
 *   - a budget: a token bucket in thousandths, each hedgeable GET earns
 *     budget_percent * 10, a hedge costs 1000, at most budget_burst *
 *     1000 saved (full at the start): hedges stay under budget_percent
 *     of GETs, plus the burst;
 *   - no hedge while the server is slow for everyone: the current
 *     first-byte waits (each primary in flight: its wait so far, or its
 *     first byte's; and the last RECENT primaries that ended) are
 *     compared with the longer-term p50 (the SAMPLES ring); when more
 *     than half pass max(floor_ms / 2, p50 * slow_percent / 100) (the
 *     floor's half: a GET at its threshold is late), most GETs
 *     are late, a second GET would wait as long, and none is sent.  A GET
 *     in flight that a younger one overtook (one that began floor_ms or
 *     more after it has ended) counts as on time: the GETs in flight are biased to the slow ones (with 8
 *     readers and 30% of GETs held 5 s, they were mostly the held ones
 *     and every hedge was refused).  Only an outlier against the current
 *     distribution is raced.
 *   THRESHOLD -> slow server -> REFUSED (looked at again a threshold later)
 *             -> no token    -> REFUSED (the same)
 *             -> else        -> take 1000, start the hedge
 * Refusals are counted once per GET and reason
 * (objfs_store_hedges_refused_total{reason}).
 *
 * Why a thread per GET: the caller must leave the moment the hedge
 * answers, and a transfer blocked in curl notices a cancel only at its
 * next progress callback (up to a second): measured, waiting for it
 * made a stalled cold read 2.9x its fault-free time instead of 1.14x.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "common/io.h"
#include "common/log.h"
#include "common/metrics.h"

#define SAMPLES 64
#define MIN_SAMPLES 4
#define RECENT 4                /* ended primaries in the current view */
#define MILLI 1000              /* a hedge's cost in budget thousandths */

static const char *const refusal_names[] = { "budget", "slow_server" };
enum { REF_NONE = -1, REF_BUDGET = 0, REF_SLOW = 1 };

static const struct objfs_metric_def def_hedges = {
	.name = "objfs_store_hedges_total",
	.help = "Second GETs sent to race a GET silent past its threshold.",
	.type = OBJFS_METRIC_COUNTER,
};

static const struct objfs_metric_def def_hedges_won = {
	.name = "objfs_store_hedges_won_total",
	.help = "Hedged GETs the second GET answered first.",
	.type = OBJFS_METRIC_COUNTER,
};

static const struct objfs_metric_def def_refused = {
	.name = "objfs_store_hedges_refused_total",
	.help = "GETs past their threshold that were not raced: budget (hedges are kept to about 5% of GETs) or slow_server (most GETs are late, not this one).",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "reason", refusal_names, 2 } },
	.n_labels = 1,
};

enum winner { W_NONE = 0, W_PRIMARY, W_HEDGE };

struct hget {
	struct hedge *h;
	unsigned refs;                  /* h->mu: caller, racers */
	struct hget *next;              /* h->pending, h->mu */
	struct hget *live_next;         /* h->live, h->mu */
	long long start_ms;
	long long hedge_start_ms;       /* h->mu: when its hedge began */
	long long not_before_ms;        /* h->mu: refused, look again then */
	bool refused[2];                /* h->mu: counted, by reason */
	unsigned first_ms, gap_ms;      /* the thresholds when it began */
	char *key, *if_match;
	uint64_t off, len;
	bool want_info;
	const struct objfs_sink *sink;  /* the caller's, while it waits */

	pthread_mutex_t mu;
	pthread_cond_t cv;              /* an answer, or a racer's end */
	enum winner winner;             /* mu */
	bool primary_done, hedging, hedge_done;         /* mu */
	int primary_err, hedge_err;     /* mu */
	long long last_ms;              /* mu: the primary's last byte */
	long long first_byte_ms;        /* mu: its first byte's wait, or -1 */
	long long max_gap_ms;           /* mu: its longest silence after */
	struct objfs_cancel pcancel, hcancel;
	struct objfs_obj_info pinfo;    /* the primary's info */
	struct objfs_membuf hbuf;       /* the hedge's bytes */
	struct objfs_obj_info hinfo;    /* the hedge's info */
};

struct hedge {
	struct objfs_hedge_config cfg;  /* resolved */
	struct objfs_store *inner;      /* the store's (not owned here) */
	struct objfs_log *log;
	pthread_mutex_t mu;
	pthread_cond_t cv;              /* the timer's wake-ups, h->mu */
	pthread_cond_t idle;            /* a racer ended, h->mu */
	pthread_t timer;
	bool stopping;                  /* h->mu */
	struct hget *pending;           /* primaries with a deadline, h->mu */
	struct hget *live;              /* primaries in flight, h->mu */
	unsigned hedges;                /* hedge threads, h->mu */
	unsigned racers;                /* all threads of GETs, h->mu */
	struct ring {
		unsigned v[SAMPLES];    /* ms */
		unsigned n, next;
	} first, gap;                   /* h->mu */
	unsigned recent[RECENT];        /* h->mu: first-byte waits of the */
	unsigned n_recent, next_recent; /* last primaries that ended */
	long long ended_start_ms;       /* h->mu: the latest start of a
					   primary that ended */
	unsigned tokens;                /* h->mu: budget, in thousandths */
	uint64_t hedged, won;           /* h->mu */
	uint64_t refusals[2];           /* h->mu */
	struct objfs_metric *m_hedges, *m_won, *m_refused;  /* NULL: off */
};

/* The value at percentile pct of ring r (r->n > 0; h->mu). */
static unsigned ring_pct(const struct ring *r, unsigned pct)
{
	unsigned v[SAMPLES], i, j, n = r->n;

	memcpy(v, r->v, n * sizeof(v[0]));
	for (i = 1; i < n; i++) {       /* 64 at most: insertion sort */
		unsigned x = v[i];

		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return v[(n * pct + 99) / 100 - 1];
}

/* A threshold from ring r (h->mu). */
static unsigned threshold_ms(const struct hedge *h, const struct ring *r)
{
	unsigned p95;
	uint64_t t;

	if (r->n < MIN_SAMPLES)
		return h->cfg.ceiling_ms;
	p95 = ring_pct(r, 95);
	t = (uint64_t)p95 * h->cfg.k_percent / 100;
	if (t < h->cfg.floor_ms)
		t = h->cfg.floor_ms;
	if (t > h->cfg.ceiling_ms)
		t = h->cfg.ceiling_ms;
	return (unsigned)t;
}

/* A primary's silence into r (h->mu). */
static void sample(struct ring *r, long long ms)
{
	r->v[r->next] = ms < 0 ? 0 : ms > 3600000 ? 3600000 : (unsigned)ms;
	r->next = (r->next + 1) % SAMPLES;
	if (r->n < SAMPLES)
		r->n++;
}

/* A primary's first-byte wait into the recent view, and its start
 * (h->mu). */
static void sample_recent(struct hedge *h, long long ms, long long start_ms)
{
	h->recent[h->next_recent] = ms < 0 ? 0 : ms > 3600000 ? 3600000 :
				    (unsigned)ms;
	h->next_recent = (h->next_recent + 1) % RECENT;
	if (h->n_recent < RECENT)
		h->n_recent++;
	if (start_ms > h->ended_start_ms)
		h->ended_start_ms = start_ms;
}

/* Whether most current first-byte waits are late against the longer-term
 * p50 (h->mu). */
static bool server_slow(struct hedge *h, long long now)
{
	uint64_t bar;
	unsigned i, n = 0, late = 0;
	struct hget *g;

	if (h->first.n < MIN_SAMPLES)
		return false;
	bar = (uint64_t)ring_pct(&h->first, 50) * h->cfg.slow_percent / 100;
	if (bar < h->cfg.floor_ms / 2)    /* below any threshold */
		bar = h->cfg.floor_ms / 2;
	for (g = h->live; g != NULL; g = g->live_next) {
		long long wait;

		pthread_mutex_lock(&g->mu);
		wait = g->first_byte_ms >= 0 ? g->first_byte_ms :
		       now - g->start_ms;
		pthread_mutex_unlock(&g->mu);
		n++;
		/* a GET that a younger one overtook (one that began a floor
		 * later has ended) is its own outlier, not the server's
		 * slowness: those in flight are biased to the slow ones,
		 * the quick have ended */
		late += wait > (long long)bar &&
			h->ended_start_ms <= g->start_ms + (long long)h->cfg.floor_ms;
	}
	for (i = 0; i < h->n_recent; i++) {
		n++;
		late += h->recent[i] > bar;
	}
	return 2 * late > n;
}

/* Why g may not be hedged now, or REF_NONE (h->mu). */
static int refusal(struct hedge *h, long long now)
{
	if (server_slow(h, now))
		return REF_SLOW;
	if (h->tokens < MILLI)
		return REF_BUDGET;
	return REF_NONE;
}

static void hget_put(struct hget *g)
{
	struct hedge *h = g->h;
	bool last;

	pthread_mutex_lock(&h->mu);
	last = --g->refs == 0;
	pthread_mutex_unlock(&h->mu);
	if (!last)
		return;
	objfs_cancel_release(&g->pcancel);
	objfs_cancel_release(&g->hcancel);
	objfs_membuf_release(&g->hbuf);
	objfs_obj_info_release(&g->hinfo);
	objfs_obj_info_release(&g->pinfo);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	free(g->key);
	free(g->if_match);
	free(g);
}

/* The primary's writes reach the caller's sink until the hedge won. */
static int gate_write(void *arg, uint64_t off, const void *data, size_t n)
{
	struct hget *g = arg;
	int err;

	long long now = objfs_now_ms();

	pthread_mutex_lock(&g->mu);
	if (g->first_byte_ms < 0)
		g->first_byte_ms = now - g->start_ms;
	else if (now - g->last_ms > g->max_gap_ms)
		g->max_gap_ms = now - g->last_ms;
	g->last_ms = now;
	/* once there is an answer the caller may be gone with its sink */
	err = g->winner != W_NONE ? ECANCELED :
	      g->sink->write_at(g->sink->arg, off, data, n);
	pthread_mutex_unlock(&g->mu);
	return err;
}

static void unlink_pending(struct hedge *h, struct hget *g);
static void unlink_live(struct hedge *h, struct hget *g);

/* A racer thread's end (g->mu held by none). */
static void racer_exit(struct hedge *h, struct hget *g, bool hedge)
{
	hget_put(g);
	pthread_mutex_lock(&h->mu);
	h->racers--;
	if (hedge)
		h->hedges--;
	pthread_cond_broadcast(&h->idle);
	pthread_cond_signal(&h->cv);    /* a GET may wait for a free slot */
	pthread_mutex_unlock(&h->mu);
}

static void *primary_main(void *arg)
{
	struct hget *g = arg;
	struct hedge *h = g->h;
	struct objfs_get_opts go = { g->off, g->len, g->if_match, &g->pcancel,
				     false };
	struct objfs_sink gate = { gate_write, g };
	long long end;
	int err;

	err = objfs_store_get(h->inner, g->key, &go, &gate,
			      g->want_info ? &g->pinfo : NULL);
	end = objfs_now_ms();
	pthread_mutex_lock(&h->mu);
	unlink_pending(h, g);           /* no hedge from now on */
	unlink_live(h, g);
	pthread_mutex_lock(&g->mu);
	g->primary_done = true;
	g->primary_err = err;
	/* a primary its hedge beat is in the view as the hedge's answer */
	if (g->winner != W_HEDGE)
		sample_recent(h, g->first_byte_ms >= 0 ? g->first_byte_ms :
			      end - g->start_ms, g->start_ms);
	if (err == 0 && g->winner == W_NONE) {
		g->winner = W_PRIMARY;
		if (g->first_byte_ms >= 0) {
			sample(&h->first, g->first_byte_ms);
			sample(&h->gap, end - g->last_ms > g->max_gap_ms ?
				       end - g->last_ms : g->max_gap_ms);
		}
		if (g->hedging)
			objfs_cancel_fire(&g->hcancel);
	}
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_mutex_unlock(&h->mu);
	racer_exit(h, g, false);
	return NULL;
}

static void *hedge_main(void *arg)
{
	struct hget *g = arg;
	struct hedge *h = g->h;
	struct objfs_get_opts go = { g->off, g->len, g->if_match, &g->hcancel,
				     false };
	struct objfs_sink sink;
	int err;

	objfs_sink_membuf(&sink, &g->hbuf);
	err = objfs_store_get(h->inner, g->key, &go, &sink,
			      g->want_info ? &g->hinfo : NULL);
	pthread_mutex_lock(&h->mu);
	pthread_mutex_lock(&g->mu);
	g->hedge_done = true;
	g->hedge_err = err;
	if (err == 0 && g->winner == W_NONE) {
		/* what the server answers now: a hedge that beat its
		 * primary shows the server is not slow for everyone (the
		 * beaten primary's wait would count as late: with a few
		 * stalled GETs raced and won, a last stalled one looked
		 * like a slow server and waited out its stall unraced) */
		sample_recent(h, objfs_now_ms() - g->hedge_start_ms,
			      g->hedge_start_ms);
		g->winner = W_HEDGE;
		h->won++;
		objfs_metric_add(h->m_won, 0, 1);
		objfs_cancel_fire(&g->pcancel);
	}
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_mutex_unlock(&h->mu);
	racer_exit(h, g, true);
	return NULL;
}

/* Runs fn(g) in a detached thread holding a reference (h->mu held).
 * False when no thread could be made. */
static bool racer_start(struct hedge *h, struct hget *g, void *(*fn)(void *))
{
	pthread_attr_t attr;
	pthread_t t;
	bool ok;

	g->refs++;
	h->racers++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ok = pthread_create(&t, &attr, fn, g) == 0;
	pthread_attr_destroy(&attr);
	if (!ok) {
		g->refs--;
		h->racers--;
	}
	return ok;
}

/* Starts the hedge of g, paying for it (h->mu held). */
static void hedge_start(struct hedge *h, struct hget *g)
{
	pthread_mutex_lock(&g->mu);
	if (g->winner != W_NONE || g->primary_done) {
		pthread_mutex_unlock(&g->mu);
		return;
	}
	g->hedging = true;
	pthread_mutex_unlock(&g->mu);
	g->hedge_start_ms = objfs_now_ms();
	if (!racer_start(h, g, hedge_main)) {
		pthread_mutex_lock(&g->mu);
		g->hedging = false;
		pthread_mutex_unlock(&g->mu);
		return;
	}
	h->tokens -= MILLI;
	h->hedges++;
	h->hedged++;
	objfs_metric_add(h->m_hedges, 0, 1);
	objfs_debug(h->log, "hedge", "GET %s [%llu, +%llu): silent %s for "
		    "%u ms after %lld ms, a second GET races it", g->key,
		    (unsigned long long)g->off, (unsigned long long)g->len,
		    g->first_byte_ms < 0 ? "before its first byte" : "",
		    g->first_byte_ms < 0 ? g->first_ms : g->gap_ms,
		    objfs_now_ms() - g->start_ms);
}

static void *timer_main(void *arg)
{
	struct hedge *h = arg;

	pthread_mutex_lock(&h->mu);
	while (!h->stopping) {
		struct hget **pp, *g;
		long long now = objfs_now_ms(), next = -1;

		for (pp = &h->pending; (g = *pp) != NULL;) {
			long long deadline;
			unsigned thr;
			int why;

			pthread_mutex_lock(&g->mu);
			thr = g->first_byte_ms < 0 ? g->first_ms : g->gap_ms;
			deadline = g->last_ms + thr;
			pthread_mutex_unlock(&g->mu);
			if (deadline < g->not_before_ms)
				deadline = g->not_before_ms;
			if (deadline > now) {
				if (next < 0 || deadline < next)
					next = deadline;
				pp = &g->next;
				continue;
			}
			if (h->hedges >= h->cfg.max_hedges) {
				/* later, when one ends (idle is broadcast) */
				pp = &g->next;
				continue;
			}
			why = refusal(h, now);
			if (why != REF_NONE) {
				if (!g->refused[why]) {
					g->refused[why] = true;
					h->refusals[why]++;
					objfs_metric_add(h->m_refused,
							 (size_t)why, 1);
					objfs_debug(h->log, "hedge", "GET %s: "
						    "silent past %u ms, not "
						    "raced (%s)", g->key, thr,
						    why == REF_SLOW ?
						    "most GETs are late" :
						    "hedge budget spent");
				}
				g->not_before_ms = now + thr;
				if (next < 0 || g->not_before_ms < next)
					next = g->not_before_ms;
				pp = &g->next;
				continue;
			}
			*pp = g->next;          /* one hedge per GET */
			g->next = NULL;
			hedge_start(h, g);
		}
		if (next < 0) {
			pthread_cond_wait(&h->cv, &h->mu);
		} else {
			struct timespec ts;

			objfs_deadline_ms(CLOCK_MONOTONIC, next - now, &ts);
			pthread_cond_timedwait(&h->cv, &h->mu, &ts);
		}
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

static void unlink_live(struct hedge *h, struct hget *g)
{
	struct hget **pp;

	for (pp = &h->live; *pp != NULL; pp = &(*pp)->live_next) {
		if (*pp == g) {
			*pp = g->live_next;
			break;
		}
	}
}

static void unlink_pending(struct hedge *h, struct hget *g)
{
	struct hget **pp;

	for (pp = &h->pending; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	}
}

static int hedge_get(struct objfs_store *s, const char *key,
		     const struct objfs_get_opts *opts,
		     const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	struct hedge *h = s->ctx;
	struct hget *g;
	bool started;
	int err;

	if (h->cfg.ceiling_ms == 0 || opts == NULL || opts->len == 0 ||
	    opts->len > h->cfg.max_len || opts->cancel != NULL ||
	    opts->background)
		return objfs_store_get(s->inner, key, opts, sink, info);
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return ENOMEM;
	g->h = h;
	g->refs = 1;
	g->key = strdup(key);
	g->if_match = opts->if_match != NULL ? strdup(opts->if_match) : NULL;
	if (g->key == NULL || (opts->if_match != NULL && g->if_match == NULL)) {
		free(g->key);
		free(g->if_match);
		free(g);
		return ENOMEM;
	}
	g->off = opts->off;
	g->len = opts->len;
	g->want_info = info != NULL;
	g->sink = sink;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	objfs_cancel_init(&g->pcancel);
	objfs_cancel_init(&g->hcancel);
	g->pinfo = (struct objfs_obj_info)OBJFS_OBJ_INFO_INIT;
	g->hbuf = (struct objfs_membuf)OBJFS_MEMBUF_INIT((size_t)opts->len);
	g->hinfo = (struct objfs_obj_info)OBJFS_OBJ_INFO_INIT;

	pthread_mutex_lock(&h->mu);
	g->start_ms = objfs_now_ms();
	g->last_ms = g->start_ms;
	g->first_byte_ms = -1;
	g->first_ms = threshold_ms(h, &h->first);
	g->gap_ms = threshold_ms(h, &h->gap);
	started = racer_start(h, g, primary_main);
	if (started) {
		g->next = h->pending;
		h->pending = g;
		g->live_next = h->live;
		h->live = g;
		h->tokens += h->cfg.budget_percent * MILLI / 100;
		if (h->tokens > h->cfg.budget_burst * MILLI)
			h->tokens = h->cfg.budget_burst * MILLI;
		pthread_cond_signal(&h->cv);
	}
	pthread_mutex_unlock(&h->mu);
	if (!started) {
		hget_put(g);
		return objfs_store_get(s->inner, key, opts, sink, info);
	}

	pthread_mutex_lock(&g->mu);
	while (g->winner == W_NONE &&
	       !(g->primary_done && (!g->hedging || g->hedge_done)))
		pthread_cond_wait(&g->cv, &g->mu);
	if (g->winner == W_PRIMARY) {
		err = 0;
		if (info != NULL) {
			objfs_obj_info_release(info);
			*info = g->pinfo;
			g->pinfo = (struct objfs_obj_info)OBJFS_OBJ_INFO_INIT;
		}
	} else if (g->winner == W_HEDGE) {
		objfs_debug(h->log, "hedge", "GET %s [%llu, +%llu): the second "
			    "GET answered after %lld ms", g->key,
			    (unsigned long long)g->off,
			    (unsigned long long)g->len,
			    objfs_now_ms() - g->start_ms);
		err = g->hbuf.len == 0 ? 0 :
		      sink->write_at(sink->arg, 0, g->hbuf.data, g->hbuf.len);
		if (err == 0 && info != NULL) {
			objfs_obj_info_release(info);
			*info = g->hinfo;
			g->hinfo = (struct objfs_obj_info)OBJFS_OBJ_INFO_INIT;
		}
	} else {
		/* both failed: the primary's reason, unless it was only
		 * cancelled */
		err = g->primary_err == ECANCELED && g->hedging ?
		      g->hedge_err : g->primary_err;
	}
	pthread_mutex_unlock(&g->mu);
	hget_put(g);
	return err;
}

static void hedge_destroy(struct objfs_store *s)
{
	struct hedge *h = s->ctx;

	if (h != NULL) {
		/* no call runs any more; racers that lost may still */
		pthread_mutex_lock(&h->mu);
		h->stopping = true;
		pthread_cond_broadcast(&h->cv);
		while (h->racers > 0)
			pthread_cond_wait(&h->idle, &h->mu);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->timer, NULL);
		pthread_cond_destroy(&h->idle);
		pthread_cond_destroy(&h->cv);
		pthread_mutex_destroy(&h->mu);
		free(h);
	}
	objfs_store_destroy(s->inner);
	free(s);
}

static const struct objfs_store_ops hedge_ops = {
	.name = "hedge",
	.get = hedge_get,
	.destroy = hedge_destroy,
	/* every other op is the store's below (unset slots forward) */
};

void objfs_hedge_stats(struct objfs_store *s, uint64_t *hedged, uint64_t *won)
{
	struct hedge *h = s->ctx;

	*hedged = *won = 0;
	if (s->ops != &hedge_ops)
		return;
	pthread_mutex_lock(&h->mu);
	*hedged = h->hedged;
	*won = h->won;
	pthread_mutex_unlock(&h->mu);
}

void objfs_hedge_refusals(struct objfs_store *s, uint64_t *budget,
			  uint64_t *slow)
{
	struct hedge *h = s->ctx;

	*budget = *slow = 0;
	if (s->ops != &hedge_ops)
		return;
	pthread_mutex_lock(&h->mu);
	*budget = h->refusals[REF_BUDGET];
	*slow = h->refusals[REF_SLOW];
	pthread_mutex_unlock(&h->mu);
}

int objfs_hedge_store_create(struct objfs_store *inner,
			     const struct objfs_hedge_config *cfg,
			     struct objfs_log *log, struct objfs_store **out)
{
	struct objfs_store *s = NULL;
	struct hedge *h = NULL;
	pthread_condattr_t ca;
	int err;

	*out = NULL;
	if (inner == NULL || cfg == NULL)
		return EINVAL;
	s = calloc(1, sizeof(*s));
	h = calloc(1, sizeof(*h));
	if (s == NULL || h == NULL) {
		err = ENOMEM;
		goto fail;
	}
	h->cfg = *cfg;
	if (h->cfg.floor_ms == 0)
		h->cfg.floor_ms = 50;
	if (h->cfg.k_percent == 0)
		h->cfg.k_percent = 200;
	if (h->cfg.max_len == 0)
		h->cfg.max_len = 16ULL << 20;
	if (h->cfg.max_hedges == 0)
		h->cfg.max_hedges = 8;
	if (h->cfg.budget_percent == 0)
		h->cfg.budget_percent = 5;
	if (h->cfg.budget_percent > 100)
		h->cfg.budget_percent = 100;
	if (h->cfg.budget_burst == 0)
		h->cfg.budget_burst = 10;
	if (h->cfg.budget_burst > 1000000)
		h->cfg.budget_burst = 1000000;
	if (h->cfg.slow_percent == 0)
		h->cfg.slow_percent = 300;
	if (h->cfg.floor_ms > h->cfg.ceiling_ms)
		h->cfg.floor_ms = h->cfg.ceiling_ms;
	h->tokens = h->cfg.budget_burst * MILLI;
	err = objfs_metrics_register(cfg->metrics, &def_hedges, &h->m_hedges);
	if (err == 0)
		err = objfs_metrics_register(cfg->metrics, &def_hedges_won,
					     &h->m_won);
	if (err == 0)
		err = objfs_metrics_register(cfg->metrics, &def_refused,
					     &h->m_refused);
	if (err != 0)
		goto fail;
	h->inner = inner;
	h->log = log;
	pthread_mutex_init(&h->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&h->idle, NULL);
	err = pthread_create(&h->timer, NULL, timer_main, h);
	if (err != 0) {
		pthread_cond_destroy(&h->idle);
		pthread_cond_destroy(&h->cv);
		pthread_mutex_destroy(&h->mu);
		goto fail;
	}
	s->ops = &hedge_ops;
	s->inner = inner;
	s->ctx = h;
	s->log = log != NULL ? log : inner->log;
	*out = s;
	return 0;

fail:
	free(h);
	free(s);
	objfs_store_destroy(inner);
	return err;
}
