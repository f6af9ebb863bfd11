/*
 * readahead.c - reads of clean files (no spool) from the store.
 *
 * Each open handle has RA_MAX read-ahead slots (fh->mu): FREE, LOADING (a
 * ranged GET on the pool fills buf; the bytes arrived so far are published
 * in got), READY or ERROR.  A sequential reader keeps chunks of ra_chunk
 * bytes in flight ahead of it; random reads go through whole chunks only
 * with the data cache.  A GET may fill several chunks (below): each is
 * handed over (READY) as soon as its bytes are in, and the GET never
 * touches it again; a handle is freed after its GETs end (fh->ra_tasks,
 * ra_release).
 *
 * A handle is a sequential reader from its first read at 0 (cat) or from
 * its RA_SEQ-th read in a row within RA_SKIP after the last one's end (a
 * read up to RA_SKIP before it, the kernel's parallel reads arriving out
 * of order, neither counts nor breaks the row, and starts no GET of a
 * chunk: it reads as a random read does).  Any other read is random:
 * served from the chunks the handle holds, else by a GET of its own range
 * (what it reads; the kernel's page cache keeps it), and the chunks held
 * stay (given back only while another reader waits for a buffer).  Before
 * (issue 33), one read landing within ra_chunk x ra_chunks after the
 * previous one started that many chunks: random 4 KiB reads received
 * 106-126x the bytes read.
 *
 * Memory (issue 31): chunk buffers are mapped directly and counted in the
 * mem_limit budget of the whole mount; up to RA_MAX freed ones are kept
 * for reuse while files are open (fs->rabuf_mu).  Every handle that reads
 * ahead is a reader (fs->ra_readers, from its first sequential read to its
 * release), and each reader starts GETs for at most its share of
 * mem_limit ahead of it, mem_limit / readers (at least one chunk; the
 * chunks it holds past a share that shrank stay until read), never more
 * than RA_MAX chunks: N readers each get
 * read-ahead, and together never more than mem_limit.  A sequential
 * reader that finds no buffer waits for one that another reader gives
 * back (RA_BUF_WAIT seconds without any given back: it reads with a GET
 * of its own, as a random read does), rather than reading through GETs of
 * a read's size.
 *
 * A store slow to start GETs (overload, or a distant one) gets fewer,
 * larger GETs: the read-ahead GETs' average wait for their first byte
 * (ttfb) and a chunk's transfer after it (xfer) give the span, the chunks
 * one GET asks for (ra_span_for(): ttfb / xfer / 2, 1 to RA_SPAN_MAX, at
 * most RA_SPAN_BYTES): a GET whose start costs as much as several chunks'
 * transfer brings several chunks.  A reader then keeps ra_chunks x span
 * chunks ahead (as many GETs in flight as on a quiet store, 2 at least;
 * its share at most) and sends a GET only for span missing chunks (or for
 * its own chunk, or the file's end).  On a quiet store the span is 1:
 * ra_chunks GETs of ra_chunk bytes in flight per reader, as before.
 *
 *   reader: first sequential read (counted) -> ... -> release (uncounted)
 *   slot:   FREE -> LOADING (in a GET of span chunks) -> READY (its bytes
 *           in) | ERROR (the GET failed first) -> FREE (behind the reader)
 *
 * A small file opened for reading is read whole at its open: the GET
 * of its first chunk that revalidates it (instead of a HEAD) fills the
 * handle's first chunk, so `cp -r` or a build reading many small files
 * pays one request per file (ra_open_revalidate); prefetch.c sends those
 * GETs ahead of the reader, in parallel.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "fs/fs_int.h"
#include "fs/ops.h"

#define RA_PUBLISH (256u << 10)  /* progress is published per this many */
#define RA_BUF_WAIT 10.0         /* seconds a reader waits for a buffer
				    while none is given back */
#define RA_SKIP (1u << 20)       /* a skip forward (or back) of at most
				    this still reads in order: the
				    kernel's max_readahead (fs.c) */
#define RA_SEQ 2                 /* reads in order that make a reader */

/* Read-ahead buffers are mapped and unmapped directly: malloc would keep
 * freed multi-MiB blocks in per-thread arenas, so the process would grow
 * well past mem_limit.  Freed buffers of ra_chunk bytes are kept (with
 * their share of mem_limit) while files are open: mapping anew costs a
 * page fault and a zeroed page per 4 KiB read. */
static char *ra_buf_get(struct objfs_fs *fs, size_t len)
{
	char *p = NULL;
	void *m;

	pthread_mutex_lock(&fs->rabuf_mu);
	if (len == fs->o.ra_chunk && fs->n_rabuf > 0)
		p = fs->rabuf[--fs->n_rabuf];
	pthread_mutex_unlock(&fs->rabuf_mu);
	if (p != NULL || !objfs_budget_take(&fs->mem, len))
		return p;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m != MAP_FAILED)
		return m;
	objfs_budget_give(&fs->mem, len);
	return NULL;
}

static void ra_buf_put(struct objfs_fs *fs, char *p, size_t len)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&fs->rabuf_mu);
	if (len == fs->o.ra_chunk && fs->n_rabuf < RA_MAX) {
		fs->rabuf[fs->n_rabuf++] = p;
		p = NULL;
	}
	pthread_mutex_unlock(&fs->rabuf_mu);
	if (p != NULL) {
		munmap(p, len);
		objfs_budget_give(&fs->mem, len);
	}
	pthread_mutex_lock(&fs->rabuf_mu);
	fs->ra_given++;
	pthread_cond_broadcast(&fs->rabuf_cv);
	pthread_mutex_unlock(&fs->rabuf_mu);
}

/* Whether a chunk buffer could be taken now (rabuf_mu held). */
static bool ra_buf_free(struct objfs_fs *fs)
{
	uint64_t used;

	if (fs->n_rabuf > 0 || fs->o.mem_limit == 0)
		return true;
	used = objfs_budget_used(&fs->mem);
	return used <= fs->o.mem_limit &&
	       fs->o.ra_chunk <= fs->o.mem_limit - used;
}

enum { RA_BUF_NOW, RA_BUF_WAITED, RA_BUF_NONE };

/* Waits until a chunk buffer could be taken: RA_BUF_NOW (at once),
 * RA_BUF_WAITED, or RA_BUF_NONE when none was given back for RA_BUF_WAIT
 * seconds (its holders are not reading).  No lock held. */
static int ra_buf_wait(struct objfs_fs *fs)
{
	int res = RA_BUF_NOW;

	pthread_mutex_lock(&fs->rabuf_mu);
	while (!ra_buf_free(fs)) {
		uint64_t given = fs->ra_given;
		struct timespec ts;
		double t;

		clock_gettime(CLOCK_REALTIME, &ts);
		t = (double)ts.tv_nsec / 1e9 + RA_BUF_WAIT;
		ts.tv_sec += (time_t)t;
		ts.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
		res = RA_BUF_WAITED;
		if (pthread_cond_timedwait(&fs->rabuf_cv, &fs->rabuf_mu,
					   &ts) != 0 && fs->ra_given == given) {
			res = RA_BUF_NONE;
			break;
		}
	}
	pthread_mutex_unlock(&fs->rabuf_mu);
	return res;
}

/* Unmaps the kept buffers (no file open, or at the end). */
void ra_buf_drain(struct objfs_fs *fs)
{
	pthread_mutex_lock(&fs->rabuf_mu);
	while (fs->n_rabuf > 0) {
		munmap(fs->rabuf[--fs->n_rabuf], fs->o.ra_chunk);
		objfs_budget_give(&fs->mem, fs->o.ra_chunk);
	}
	pthread_mutex_unlock(&fs->rabuf_mu);
}

void ra_free_chunk(struct objfs_fs *fs, struct ra_chunk *c)
{
	ra_buf_put(fs, c->buf, c->len);
	memset(c, 0, sizeof(*c));
}

void ra_release(struct fhandle *fh)
{
	struct objfs_fs *fs = fh->fs;
	unsigned i;

	pthread_mutex_lock(&fh->mu);
	while (fh->ra_tasks > 0)
		pthread_cond_wait(&fh->cv, &fh->mu);
	for (i = 0; i < RA_MAX; i++)
		ra_free_chunk(fs, &fh->ra[i]);
	if (fh->ra_reader) {
		fh->ra_reader = false;
		pthread_mutex_lock(&fs->rabuf_mu);
		fs->ra_readers--;
		pthread_mutex_unlock(&fs->rabuf_mu);
	}
	pthread_mutex_unlock(&fh->mu);
}

unsigned ra_span_for(double ttfb, double xfer, uint64_t chunk)
{
	uint64_t most = chunk > 0 ? RA_SPAN_BYTES / chunk : 1;
	double r;

	if (most > RA_SPAN_MAX)
		most = RA_SPAN_MAX;
	if (most < 1)
		most = 1;
	if (!(ttfb > 0) || !(xfer > 0))
		return 1;
	/* half: a GET of one more chunk is worth it when its start costs
	 * two chunks' transfer */
	r = ttfb / xfer / 2;
	if (r >= (double)most)
		return (unsigned)most;
	return r < 1 ? 1 : (unsigned)r;
}

/* The span of read-ahead GETs now. */
static unsigned ra_span(struct objfs_fs *fs)
{
	double ttfb, xfer;

	pthread_mutex_lock(&fs->rabuf_mu);
	ttfb = fs->ra_ttfb;
	xfer = fs->ra_xfer;
	pthread_mutex_unlock(&fs->rabuf_mu);
	return ra_span_for(ttfb, xfer, fs->o.ra_chunk);
}

/* Chunks a sequential reader keeps ahead with GETs of span chunks: as
 * many GETs as ra_chunks (2 at least when span > 1), its share of
 * mem_limit at most (1 at least), RA_MAX at most. */
static unsigned ra_want(struct objfs_fs *fs, unsigned span)
{
	uint64_t want = (uint64_t)fs->o.ra_chunks * span, share;
	unsigned readers;

	if (span > 1 && want < 2ULL * span)
		want = 2ULL * span;
	pthread_mutex_lock(&fs->rabuf_mu);
	readers = fs->ra_readers > 0 ? fs->ra_readers : 1;
	pthread_mutex_unlock(&fs->rabuf_mu);
	if (fs->o.mem_limit > 0) {
		share = fs->o.mem_limit / fs->o.ra_chunk / readers;
		if (want > share)
			want = share > 0 ? share : 1;
	}
	return want > RA_MAX ? RA_MAX : (unsigned)want;
}

/* Notes a read-ahead GET's wait for its first byte and its transfer
 * (moving averages, 1/8 per GET). */
static void ra_note(struct objfs_fs *fs, double ttfb, double xfer)
{
	pthread_mutex_lock(&fs->rabuf_mu);
	if (fs->ra_xfer <= 0) {
		fs->ra_ttfb = ttfb;
		fs->ra_xfer = xfer;
	} else {
		fs->ra_ttfb += (ttfb - fs->ra_ttfb) / 8;
		fs->ra_xfer += (xfer - fs->ra_xfer) / 8;
	}
	pthread_mutex_unlock(&fs->rabuf_mu);
}

/* One GET of n consecutive chunks: c[i] holds [off + i x ra_chunk, ...).
 * Chunks before done were handed over: the task no longer touches them
 * (another GET may own their slot by now). */
struct ra_task {
	struct fhandle *fh;
	struct ra_chunk *c[RA_SPAN_MAX];
	unsigned n, done;
	uint64_t off, len;              /* the GET's range */
	uint64_t arrived;               /* bytes in (from 0: writes come in
					   order, a retry or a hedge's
					   rewrite starts again at 0) */
	uint64_t published;
	double first;                   /* its first byte (mono), 0: none */
	char key[KEYBUF];
	char etag[OBJFS_ETAG_MAX];
};

/* Chunks of t whose bytes are all in. */
static unsigned ra_full(const struct ra_task *t)
{
	uint64_t chunk = t->fh->fs->o.ra_chunk;

	if (t->arrived >= t->len)
		return t->n;
	return (unsigned)(t->arrived / chunk);
}

/* Moves the chunks' got to what arrived and hands over the full ones
 * (fh->mu held). */
static void ra_publish(struct ra_task *t)
{
	uint64_t chunk = t->fh->fs->o.ra_chunk;
	unsigned i, full = ra_full(t);

	for (i = t->done; i < t->n; i++) {
		uint64_t base = (uint64_t)i * chunk, g;

		if (t->arrived <= base)
			break;
		g = t->arrived - base;
		if (g > t->c[i]->len)
			g = t->c[i]->len;
		if (g > t->c[i]->got)
			t->c[i]->got = (size_t)g;
		if (i < full)
			t->c[i]->state = RA_READY;
	}
	if (full > t->done)
		t->done = full;
	t->published = t->arrived;
}

/* Keeps the full chunks not yet handed over in the data cache. */
static void ra_cache_full(struct ra_task *t)
{
	struct objfs_fs *fs = t->fh->fs;
	unsigned i, full = ra_full(t);

	for (i = t->done; fs->dcache != NULL && i < full; i++)
		objfs_dcache_put(fs->dcache, t->key, t->etag, t->c[i]->off,
				 t->c[i]->buf, t->c[i]->len);
}

/* Bytes of a read-ahead GET land in its chunks and are published (got)
 * as they arrive, so readers need not wait for the whole GET; a chunk
 * whose bytes are all in is handed over at once.  A retried GET rewrites
 * the same bytes: got only grows, and handed-over chunks are skipped. */
static int ra_sink_write(void *arg, uint64_t off, const void *data, size_t n)
{
	struct ra_task *t = arg;
	uint64_t chunk = t->fh->fs->o.ra_chunk, pos = off, end = off + n;
	uint64_t skip = (uint64_t)t->done * chunk;
	const char *p = data;

	if (off > t->len || n > t->len - off)
		return EFBIG;
	if (t->first == 0)
		t->first = now_mono();
	if (pos < skip) {
		if (end <= skip)
			return 0;
		p += skip - pos;
		pos = skip;
	}
	while (pos < end) {
		struct ra_chunk *c = t->c[pos / chunk];
		uint64_t in = pos % chunk, k = end - pos;

		if (k > c->len - in)
			k = c->len - in;
		memcpy(c->buf + in, p, (size_t)k);
		p += k;
		pos += k;
	}
	if (end > t->arrived)
		t->arrived = end;
	/* got (fh->mu) is what readers may use: moved on per RA_PUBLISH
	 * bytes or a full chunk, waking only readers that wait (a lock and
	 * a wake-up per piece cost more than the copy) */
	if (t->arrived >= t->published + RA_PUBLISH || ra_full(t) > t->done) {
		ra_cache_full(t);
		pthread_mutex_lock(&t->fh->mu);
		ra_publish(t);
		if (t->fh->waiters > 0)
			pthread_cond_broadcast(&t->fh->cv);
		pthread_mutex_unlock(&t->fh->mu);
	}
	return 0;
}

static void ra_run(void *arg)
{
	struct ra_task *t = arg;
	struct fhandle *fh = t->fh;
	struct objfs_fs *fs = fh->fs;
	struct objfs_get_opts go = { t->off, t->len, NULL };
	struct objfs_sink sink = { ra_sink_write, t };
	double start = now_mono(), end;
	unsigned i;
	int err;

	err = objfs_store_get(fs->store, t->key, &go, &sink, NULL);
	end = now_mono();
	if (err == 0 && t->arrived > 0 && t->first > 0)
		ra_note(fs, t->first - start, (end - t->first) *
			(double)fs->o.ra_chunk / (double)t->arrived);
	if (err == 0)
		ra_cache_full(t);
	pthread_mutex_lock(&fh->mu);
	ra_publish(t);
	for (i = t->done; i < t->n; i++) {
		t->c[i]->err = err;
		t->c[i]->state = err == 0 ? RA_READY : RA_ERROR;
	}
	fh->ra_tasks--;
	pthread_cond_broadcast(&fh->cv);
	pthread_mutex_unlock(&fh->mu);
	free(t);
}

/* Sends t's GET (fh->mu held); on failure its chunks are freed. */
static void ra_send(struct fhandle *fh, struct ra_task *t)
{
	struct objfs_fs *fs = fh->fs;
	unsigned i;

	if (t == NULL)
		return;
	if (t->n > 0 && objfs_pool_submit(fs->pool, NULL, ra_run, t) == 0) {
		fh->ra_tasks++;
		__atomic_add_fetch(&fs->ra_gets, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&fs->ra_bytes, t->len, __ATOMIC_RELAXED);
		return;
	}
	for (i = 0; i < t->n; i++)
		ra_free_chunk(fs, t->c[i]);
	free(t);
}

/* Whether the chunk at coff is in a slot (fh->mu held). */
static bool ra_has(struct fhandle *fh, uint64_t coff)
{
	unsigned i;

	for (i = 0; i < RA_MAX; i++)
		if (fh->ra[i].state != RA_FREE && fh->ra[i].off == coff)
			return true;
	return false;
}

/* Starts read-ahead GETs for the n chunks from the one holding off that
 * no slot holds (fh->mu held), span chunks per GET: a run of fewer missing
 * chunks waits (the reader has the chunks before it) unless it is the
 * reader's own chunk or the file's end.  Chunks in the data cache are
 * loaded from it at once. */
static void ra_schedule(struct fhandle *fh, const char *key, const char *etag,
			uint64_t off, uint64_t fsize, unsigned n, unsigned span)
{
	struct objfs_fs *fs = fh->fs;
	uint64_t chunk = fs->o.ra_chunk, first = off / chunk, coff;
	struct ra_task *t = NULL;
	unsigned k, i, run;

	if (span > n / 2)
		span = n / 2 > 0 ? n / 2 : 1;
	for (k = 0; k < n && k < RA_MAX; k++) {
		struct ra_chunk *slot = NULL;
		size_t len;

		coff = (first + k) * chunk;
		if (coff >= fsize)
			break;
		if (ra_has(fh, coff)) {
			ra_send(fh, t);
			t = NULL;
			continue;
		}
		if (t == NULL && k > 0 && span > 1) {
			/* a new run: sent when it is span chunks long */
			for (run = 0; k + run < n && run < span &&
			     (first + k + run) * chunk < fsize &&
			     !ra_has(fh, (first + k + run) * chunk); run++)
				;
			if (run < span && (first + k + run) * chunk < fsize)
				break;
		}
		for (i = 0; i < RA_MAX && slot == NULL; i++)
			if (fh->ra[i].state == RA_FREE)
				slot = &fh->ra[i];
		if (slot == NULL)
			break;
		len = (size_t)(fsize - coff < chunk ? fsize - coff : chunk);
		slot->buf = ra_buf_get(fs, len);
		if (slot->buf == NULL)
			break;
		slot->off = coff;
		slot->len = len;
		slot->got = 0;
		if (fs->dcache != NULL &&
		    objfs_dcache_get(fs->dcache, key, etag, coff, slot->buf, len,
				     &slot->got) && slot->got == len) {
			slot->state = RA_READY;
			ra_send(fh, t);
			t = NULL;
			continue;
		}
		slot->got = 0;
		slot->state = RA_LOADING;
		if (t == NULL) {
			t = calloc(1, sizeof(*t));
			if (t == NULL) {
				ra_free_chunk(fs, slot);
				break;
			}
			t->fh = fh;
			t->off = coff;
			snprintf(t->key, sizeof(t->key), "%s", key);
			snprintf(t->etag, sizeof(t->etag), "%s", etag);
		}
		t->c[t->n++] = slot;
		t->len += len;
		if (t->n == span || t->n == RA_SPAN_MAX) {
			ra_send(fh, t);
			t = NULL;
		}
	}
	ra_send(fh, t);
}

/* The slot holding byte pos (loading, ready or failed), or NULL
 * (fh->mu held). */
static struct ra_chunk *ra_find(struct fhandle *fh, uint64_t pos)
{
	unsigned i;

	for (i = 0; i < RA_MAX; i++) {
		if (fh->ra[i].state != RA_FREE && fh->ra[i].off <= pos &&
		    pos < fh->ra[i].off + fh->ra[i].len)
			return &fh->ra[i];
	}
	return NULL;
}

/* Waits for read-ahead progress (fh->mu held); sinks wake waiters only. */
static void ra_wait(struct fhandle *fh)
{
	fh->waiters++;
	pthread_cond_wait(&fh->cv, &fh->mu);
	fh->waiters--;
}

/* Serves [off, end) from read-ahead buffers; returns how many bytes from
 * off it could copy into buf (fh->mu held; waits for loading chunks). */
static size_t ra_copy(struct fhandle *fh, uint64_t off, uint64_t end, char *buf)
{
	uint64_t pos = off;

	while (pos < end) {
		struct ra_chunk *c = ra_find(fh, pos);
		uint64_t n;

		if (c == NULL)
			break;
		if (c->state == RA_LOADING && pos >= c->off + c->got) {
			/* another read of this handle may free and reuse the
			 * slot meanwhile: look the chunk up again after */
			ra_wait(fh);
			continue;
		}
		if ((c->state != RA_READY && c->state != RA_LOADING) ||
		    pos >= c->off + c->got)
			break;
		n = c->off + c->got - pos;
		if (n > end - pos)
			n = end - pos;
		memcpy(buf + (pos - off), c->buf + (pos - c->off), n);
		pos += n;
	}
	return (size_t)(pos - off);
}

/* The chunk holding all of [off, end) (arrived: it may still be loading
 * past it), waiting for those bytes (fh->mu held); NULL when the range is
 * not in a single chunk. */
static struct ra_chunk *ra_whole(struct fhandle *fh, uint64_t off, uint64_t end)
{
	for (;;) {
		struct ra_chunk *c = ra_find(fh, off);

		if (c == NULL || (c->state != RA_READY && c->state != RA_LOADING))
			return NULL;
		if (end <= c->off + c->got)
			return c;
		if (c->state == RA_READY || end > c->off + c->len)
			return NULL;
		ra_wait(fh);
	}
}

/* Sequential read-ahead for a read at off (fh->mu held, dropped while
 * waiting for a buffer): the reader is counted, its chunks behind off or
 * past what it may keep are freed, and its GETs started; a reader that
 * got no chunk for off waits for a buffer. */
static void ra_ahead(struct fhandle *fh, const char *key, const char *etag,
		     uint64_t off, uint64_t fsize)
{
	struct objfs_fs *fs = fh->fs;
	uint64_t chunk = fs->o.ra_chunk, keep, start = off / chunk * chunk;
	unsigned span, want, i, tries;

	if (!fh->ra_reader) {
		fh->ra_reader = true;
		pthread_mutex_lock(&fs->rabuf_mu);
		fs->ra_readers++;
		pthread_mutex_unlock(&fs->rabuf_mu);
	}
	for (tries = 0; tries < 2 * RA_MAX; tries++) {
		span = ra_span(fs);
		want = ra_want(fs, span);
		/* chunks ahead stay when the share shrinks: they are read
		 * next (dropped, they would be fetched again) */
		keep = (uint64_t)RA_MAX * chunk;
		for (i = 0; i < RA_MAX; i++) {
			struct ra_chunk *c = &fh->ra[i];

			if ((c->state == RA_READY || c->state == RA_ERROR) &&
			    (c->off + c->len <= off || c->off >= start + keep))
				ra_free_chunk(fs, c);
		}
		ra_schedule(fh, key, etag, off, fsize, want, span);
		if (ra_find(fh, off) != NULL || fs->o.mem_limit == 0)
			break;
		pthread_mutex_unlock(&fh->mu);
		i = (unsigned)ra_buf_wait(fs);
		pthread_mutex_lock(&fh->mu);
		if (i == RA_BUF_NONE)
			break;
	}
}

int ra_read(struct fhandle *fh, uint64_t off, size_t size,
	    const struct ra_reply *rp)
{
	struct objfs_fs *fs = fh->fs;
	struct inode *in = fh->in;
	char key[KEYBUF], etag[OBJFS_ETAG_MAX];
	uint64_t fsize, end, window;
	struct ra_chunk *whole;
	size_t done = 0;
	char *buf = NULL;
	bool store, first, fwd, short_of;
	unsigned i;
	int err;

	pthread_mutex_lock(&fs->lock);
	fsize = in->size;
	snprintf(etag, sizeof(etag), "%s", in->etag);
	err = inode_key(fs, in, false, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		return err == ENOENT ? EIO : err;
	if (off >= fsize || size == 0) {
		rp->bytes(rp->arg, NULL, 0);
		fs_metrics_read(fs, FS_READ_READAHEAD, 0);
		return 0;
	}
	end = off + size < fsize ? off + size : fsize;
	window = fs->o.ra_chunk * fs->o.ra_chunks;

	pthread_mutex_lock(&fh->mu);
	/* the handle's first read, at 0: a reader from the start (cat) */
	first = off == 0 && fh->next_off == 0 && fh->seq == 0;
	/* sequential: the next bytes, or a short skip forward (the kernel
	 * skips pages its cache still holds, and its parallel reads of one
	 * read-ahead batch arrive in any order); a read shortly before the
	 * last one's end is such a read too, and neither counts nor breaks */
	fwd = off >= fh->next_off && off - fh->next_off <= RA_SKIP;
	if (fwd) {
		fh->seq++;
		fh->next_off = end;
	} else if (off < fh->next_off && fh->next_off - off <= RA_SKIP) {
		if (end > fh->next_off)
			fh->next_off = end;
	} else {
		fh->seq = 0;
		fh->next_off = end;
	}
	/* a read before the last end is served from the chunks held or a
	 * GET of its own: read-ahead from it would fetch again the chunk
	 * the reader has left behind */
	if (((fwd && fh->seq >= RA_SEQ) || first) && window > 0) {
		ra_ahead(fh, key, etag, off, fsize);
	} else {
		/* not sequential: the chunks held stay for reads of their
		 * range (dropped, they would be fetched again), given back
		 * only while another reader waits for a buffer */
		pthread_mutex_lock(&fs->rabuf_mu);
		short_of = !ra_buf_free(fs);
		pthread_mutex_unlock(&fs->rabuf_mu);
		for (i = 0; short_of && i < RA_MAX; i++) {
			struct ra_chunk *c = &fh->ra[i];

			if ((c->state == RA_READY || c->state == RA_ERROR) &&
			    (c->off + c->len <= off || c->off >= end))
				ra_free_chunk(fs, c);
		}
		/* random reads go through whole cached chunks */
		if (fs->dcache != NULL)
			ra_schedule(fh, key, etag, off, fsize,
				    (unsigned)((end - 1) / fs->o.ra_chunk -
					       off / fs->o.ra_chunk + 1), 1);
	}
	whole = ra_whole(fh, off, end);
	if (whole != NULL) {
		/* the chunk stays while fh->mu is held: reply from it */
		rp->bytes(rp->arg, whole->buf + (off - whole->off),
			  (size_t)(end - off));
		pthread_mutex_unlock(&fh->mu);
		fs_metrics_read(fs, FS_READ_READAHEAD, (size_t)(end - off));
		return 0;
	}
	buf = malloc((size_t)(end - off));
	if (buf == NULL) {
		pthread_mutex_unlock(&fh->mu);
		return ENOMEM;
	}
	done = ra_copy(fh, off, end, buf);
	pthread_mutex_unlock(&fh->mu);

	store = off + done < end;
	if (store) {
		struct objfs_fixedbuf fb = { buf + done, (size_t)(end - off - done), 0 };
		struct objfs_get_opts go = { off + done, end - off - done, NULL };
		struct objfs_sink sink;

		__atomic_add_fetch(&fs->ra_direct, 1, __ATOMIC_RELAXED);
		objfs_sink_fixed(&sink, &fb);
		err = objfs_store_get(fs->store, key, &go, &sink, NULL);
		if (err == ERANGE)
			err = 0;        /* shrank meanwhile */
		done += fb.got;
	}
	if (err == 0) {
		rp->bytes(rp->arg, buf, done);
		fs_metrics_read(fs, store ? FS_READ_STORE : FS_READ_READAHEAD, done);
	}
	free(buf);
	return err;
}

static void ra_reply_fuse(void *arg, const char *data, size_t n)
{
	fuse_reply_buf(arg, data, n);
}

/* Reads [off, off+size) of a clean file from read-ahead chunks or the
 * store and replies to req: straight from the chunk when one holds it all
 * (no copy), else through a buffer.  0, or an errno not yet replied. */
int read_store(struct fhandle *fh, fuse_req_t req, uint64_t off,
	       size_t size)
{
	struct ra_reply rp = { ra_reply_fuse, req };

	return ra_read(fh, off, size, &rp);
}

int ra_open_revalidate(struct objfs_fs *fs, struct inode *in, bool reading,
		       struct ra_open *ro)
{
	struct objfs_fixedbuf fb;
	struct objfs_sink sink;
	bool small, fetched;
	int err;

	memset(ro, 0, sizeof(*ro));
	pthread_mutex_lock(&fs->lock);
	small = reading && S_ISREG(in->mode) && in->size <= fs->o.ra_chunk &&
		fs->o.ra_chunks > 0;
	pthread_mutex_unlock(&fs->lock);
	if (small)
		ro->buf = ra_buf_get(fs, fs->o.ra_chunk);
	if (ro->buf == NULL)
		return revalidate(fs, in, true);
	fb = (struct objfs_fixedbuf){ ro->buf, fs->o.ra_chunk, 0 };
	objfs_sink_fixed(&sink, &fb);
	err = revalidate_get(fs, in, fs->o.ra_chunk, &sink, &fetched);
	ro->got = fb.got;
	if (!fetched)
		ra_open_release(fs, ro);
	return err;
}

void ra_open_install(struct fhandle *fh, struct ra_open *ro)
{
	struct ra_chunk *c = &fh->ra[0];

	if (ro->buf == NULL)
		return;
	pthread_mutex_lock(&fh->mu);
	c->off = 0;
	c->len = fh->fs->o.ra_chunk;    /* the buffer's size: see ra_free_chunk */
	c->buf = ro->buf;
	c->got = ro->got;
	c->state = RA_READY;
	pthread_mutex_unlock(&fh->mu);
	ro->buf = NULL;
}

void ra_open_release(struct objfs_fs *fs, struct ra_open *ro)
{
	ra_buf_put(fs, ro->buf, fs->o.ra_chunk);
	ro->buf = NULL;
}
