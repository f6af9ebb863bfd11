/*
 * readahead.c - reads of clean files (no spool) from the store.
 *
 * Each open handle has RA_MAX read-ahead slots (fh->mu): FREE, LOADING (a
 * ranged GET on the pool fills buf; the bytes arrived so far are published
 * in got), READY or ERROR.  A sequential reader keeps ra_chunks chunks of
 * ra_chunk bytes in flight ahead of it; random reads go through whole
 * chunks only with the data cache.  Chunk buffers are mapped directly,
 * counted in the mem_limit budget, and up to RA_MAX of them are kept for
 * reuse while files are open (fs->rabuf_mu).  Only its GET's end moves a
 * slot out of LOADING; a handle is freed after its loads end.
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

#include "fs/fs_int.h"
#include "fs/ops.h"

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

struct ra_task {
	struct fhandle *fh;
	struct ra_chunk *c;
	uint64_t arrived;               /* bytes in c->buf, not all published */
	char key[KEYBUF];
	char etag[OBJFS_ETAG_MAX];
};

#define RA_PUBLISH (256u << 10)  /* progress is published per this many */

/* Bytes of a read-ahead GET land in the chunk and are published (got)
 * as they arrive, so readers need not wait for the whole chunk.  A retried
 * GET rewrites the same bytes: got only grows. */
static int ra_sink_write(void *arg, uint64_t off, const void *data, size_t n)
{
	struct ra_task *t = arg;
	struct ra_chunk *c = t->c;

	if (off > c->len || n > c->len - off)
		return EFBIG;
	memcpy(c->buf + off, data, n);
	if (off + n > t->arrived)
		t->arrived = off + n;
	/* c->got (fh->mu) is what readers may use: moved on per
	 * RA_PUBLISH bytes, waking only readers that wait (a lock and a
	 * wake-up per piece cost more than the copy) */
	if (t->arrived >= c->got + RA_PUBLISH) {
		pthread_mutex_lock(&t->fh->mu);
		c->got = t->arrived;
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
	struct objfs_get_opts go = { t->c->off, t->c->len, NULL };
	struct objfs_sink sink = { ra_sink_write, t };
	int err;

	err = objfs_store_get(fh->fs->store, t->key, &go, &sink, NULL);
	if (err == 0 && fh->fs->dcache != NULL)
		objfs_dcache_put(fh->fs->dcache, t->key, t->etag, t->c->off,
				 t->c->buf, t->c->got);
	pthread_mutex_lock(&fh->mu);
	if (t->arrived > t->c->got)
		t->c->got = t->arrived;
	t->c->err = err;
	t->c->state = err == 0 ? RA_READY : RA_ERROR;
	pthread_cond_broadcast(&fh->cv);
	pthread_mutex_unlock(&fh->mu);
	free(t);
}

/* Starts read-ahead GETs for n chunks from the one holding off (fh->mu
 * held); chunks in the data cache are loaded from it at once. */
static void ra_schedule(struct fhandle *fh, const char *key, const char *etag,
			uint64_t off, uint64_t fsize, unsigned n)
{
	struct objfs_fs *fs = fh->fs;
	uint64_t chunk = fs->o.ra_chunk, coff;
	unsigned k, i;

	for (k = 0; k < n && k < RA_MAX; k++) {
		struct ra_chunk *slot = NULL;
		struct ra_task *t;
		size_t len;

		coff = (off / chunk + k) * chunk;
		if (coff >= fsize)
			break;
		for (i = 0; i < RA_MAX; i++) {
			if (fh->ra[i].state != RA_FREE && fh->ra[i].off == coff)
				break;
			if (fh->ra[i].state == RA_FREE && slot == NULL)
				slot = &fh->ra[i];
		}
		if (i < RA_MAX)
			continue;
		if (slot == NULL)
			break;
		len = (size_t)(fsize - coff < chunk ? fsize - coff : chunk);
		slot->buf = ra_buf_get(fs, len);
		if (slot->buf == NULL)
			break;
		t = calloc(1, sizeof(*t));
		if (t == NULL) {
			ra_buf_put(fs, slot->buf, len);
			slot->buf = NULL;
			break;
		}
		slot->off = coff;
		slot->len = len;
		slot->got = 0;
		if (fs->dcache != NULL &&
		    objfs_dcache_get(fs->dcache, key, etag, coff, slot->buf, len,
				     &slot->got) && slot->got == len) {
			slot->state = RA_READY;
			free(t);
			continue;
		}
		slot->got = 0;
		slot->state = RA_LOADING;
		t->fh = fh;
		t->c = slot;
		snprintf(t->key, sizeof(t->key), "%s", key);
		snprintf(t->etag, sizeof(t->etag), "%s", etag);
		if (objfs_pool_submit(fs->pool, NULL, ra_run, t) != 0) {
			free(t);
			ra_free_chunk(fs, slot);
			break;
		}
	}
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

/* Reads [off, off+size) of a clean file from read-ahead chunks or the
 * store and replies to req: straight from the chunk when one holds it all
 * (no copy), else through a buffer.  0, or an errno not yet replied. */
int read_store(struct fhandle *fh, fuse_req_t req, uint64_t off,
	       size_t size)
{
	struct objfs_fs *fs = fh->fs;
	struct inode *in = fh->in;
	char key[KEYBUF], etag[OBJFS_ETAG_MAX];
	uint64_t fsize, end, window;
	struct ra_chunk *whole;
	size_t done = 0;
	char *buf = NULL;
	bool store;
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
		fuse_reply_buf(req, NULL, 0);
		fs_metrics_read(fs, FS_READ_READAHEAD, 0);
		return 0;
	}
	end = off + size < fsize ? off + size : fsize;
	window = fs->o.ra_chunk * fs->o.ra_chunks;

	pthread_mutex_lock(&fh->mu);
	/* sequential: the next bytes, or a short skip forward (the kernel
	 * skips pages its cache still holds) */
	if (off >= fh->next_off && off - fh->next_off <= window)
		fh->seq++;
	else
		fh->seq = 0;
	fh->next_off = end;
	for (i = 0; i < RA_MAX; i++) {
		struct ra_chunk *c = &fh->ra[i];

		if (c->state == RA_READY || c->state == RA_ERROR) {
			if (c->off + c->len <= off || c->off >= off + window)
				ra_free_chunk(fs, c);
		}
	}
	if ((fh->seq >= 1 || off == 0) && window > 0)
		ra_schedule(fh, key, etag, off, fsize, fs->o.ra_chunks);
	else if (fs->dcache != NULL)
		/* random reads go through whole cached chunks */
		ra_schedule(fh, key, etag, off, fsize,
			    (unsigned)((end - 1) / fs->o.ra_chunk -
				       off / fs->o.ra_chunk + 1));
	whole = ra_whole(fh, off, end);
	if (whole != NULL) {
		/* the chunk stays while fh->mu is held: reply from it */
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT((size_t)(end - off));

		bv.buf[0].mem = whole->buf + (off - whole->off);
		fuse_reply_data(req, &bv, FUSE_BUF_NO_SPLICE);
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

		objfs_sink_fixed(&sink, &fb);
		err = objfs_store_get(fs->store, key, &go, &sink, NULL);
		if (err == ERANGE)
			err = 0;        /* shrank meanwhile */
		done += fb.got;
	}
	if (err == 0) {
		fuse_reply_buf(req, buf, done);
		fs_metrics_read(fs, store ? FS_READ_STORE : FS_READ_READAHEAD, done);
	}
	free(buf);
	return err;
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
