/*
 * prefetch.c - sequential-scan prefetch of small files (prefetch=N).
 *
 * A reader that goes through a directory's files in its listing order
 * (cp -r, tar c, rsync, grep -r: readdir, then open, read and close of
 * each name in turn) pays one GET per file at its open (readahead.c), one
 * after the other.  When a file is opened for reading, a readdir read its
 * directory's listing (dir->snap: pf_scanned), and every file of that
 * listing between the one opened before and this one was opened too (or
 * it is the first), the next N small files of
 * the listing (at most PF_FILE_MAX bytes each, as listed; clean, no hard
 * links) are fetched whole on the pool, in parallel, each by one GET that
 * also brings the object's attributes and ETag (pfcache.c holds them,
 * PF_MEM bytes at most, the oldest pushed out first).
 *
 * revalidate() (the HEAD, or the GET of an open) takes what a prefetch
 * brought instead, when its GET started at most attr_ttl ago and not
 * before the inode's attributes were last set: a GET is as good as a HEAD
 * at the moment it was sent, so an open answered from it is as fresh as
 * one that sent a HEAD attr_ttl ago (the same window getattr and the
 * kernel's attribute cache keep).  The inode's attributes then date from
 * that moment (attr_time).  An open waits for a prefetch still loading
 * rather than sending the same GET again; a getattr only uses a finished
 * one.  Every change of a name here (write or truncate at open, setattr,
 * unlink, rename, link, create) drops its entry, loading ones too (a GET
 * that started before the change never lands after it).
 *
 * Listings ahead: a tree walk reads a directory's subdirectories in its
 * listing order too, each costing a LIST, its index and its
 * subdirectories' marker HEADs in series.  When readdirplus reads a
 * directory after the sibling before it (the second one of a walk on),
 * its parent's next PF_DIRS_AHEAD subdirectories and its own first ones
 * are queued (pinned, pf_listing) for PF_LISTERS threads of their own
 * (snap_fetch_attrs() waits for tasks on the pool, which a pool task may
 * not do) that list them as readdirplus would; a readdir of a directory
 * being listed ahead waits for that listing (pf_dir_wait()), fresh for
 * dir_ttl like any other.
 *
 * A walk that reads files: when an open used a prefetched file in the
 * last PF_READING seconds, a readdirplus from the start of a directory
 * read in a walk (it, or its parent, came after a sibling) starts the
 * prefetch of its first files at once, rather than at the open of the
 * first one (which would wait for its own GET, and the second for the
 * prefetch that open started).  A walk that only lists (find, ls -lR, du)
 * uses no prefetch, so it never starts one.
 *
 * Per directory (fs->lock): pf_time names the listing the positions
 * count in (its time), pf_next the position after the last file opened,
 * pf_upto the position up to which prefetches were started, pf_dnext and
 * pf_dupto the same for subdirectories read and listed ahead, pf_walk
 * that it was read in a walk.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs_int.h"
#include "fs/pfcache.h"

#define PF_MEM (8ULL << 20)             /* bytes held at most */
#define PF_FILE_MAX (1ULL << 20)        /* a larger file is not prefetched */
#define PF_ENTRIES 256
#define PF_DIRS_AHEAD 4                 /* subdirectories listed ahead */
#define PF_READING 2.0                  /* seconds after an open used a
					   prefetch that a walk counts as
					   reading files */

static struct pf_starts *pf_collect(struct objfs_fs *fs, struct inode *dir,
				    const struct dirsnap *s, size_t from);

/* When an open last used a prefetched file (mono seconds; no lock). */
static double pf_last_use(struct objfs_fs *fs)
{
	return (double)__atomic_load_n(&fs->pf.used_ms, __ATOMIC_RELAXED) /
	       1000.0;
}

int pf_init(struct objfs_fs *fs)
{
	int err;

	pthread_cond_init(&fs->pf.cv, NULL);
	if (fs->o.prefetch == 0)
		return 0;
	err = objfs_pfcache_create(PF_MEM, PF_ENTRIES, sizeof(struct probe),
				   &fs->pf.cache);
	if (err != 0)
		pthread_cond_destroy(&fs->pf.cv);
	return err;
}

void pf_destroy(struct objfs_fs *fs)
{
	objfs_pfcache_destroy(fs->pf.cache);
	fs->pf.cache = NULL;
	pthread_cond_destroy(&fs->pf.cv);
}

/* ---- listings read ahead ---------------------------------------------- */

/* A lister: lists the queued directories, with their entries' attributes
 * (what readdirplus fetches), until pf_stop. */
static void *pf_lister(void *arg)
{
	struct objfs_fs *fs = arg;

	pthread_mutex_lock(&fs->lock);
	for (;;) {
		struct dirsnap *s = NULL;
		struct aidx_pre *pre;
		struct inode *c;

		while (!fs->pf.stop && fs->pf.dirq_n == 0)
			pthread_cond_wait(&fs->pf.cv, &fs->lock);
		if (fs->pf.stop)
			break;
		c = fs->pf.dirq[0];
		memmove(&fs->pf.dirq[0], &fs->pf.dirq[1],
			--fs->pf.dirq_n * sizeof(fs->pf.dirq[0]));
		pthread_mutex_unlock(&fs->lock);
		pre = snap_index_start(fs, c);
		if (snap_build(fs, c, NULL, pre, &s) == 0 && !s->more && s->base == 0)
			snap_fetch_attrs(fs, c, s, pre);
		else
			aidx_pre_cancel(pre);
		pthread_mutex_lock(&fs->lock);
		snap_put_locked(s);
		fs->pf.listed++;
		c->pf.listing = false;
		pthread_cond_broadcast(&fs->pf.cv);
		pthread_mutex_unlock(&fs->lock);
		unpin(fs, c);
		pthread_mutex_lock(&fs->lock);
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

int pf_start(struct objfs_fs *fs)
{
	int err = 0;

	while (fs->pf.cache != NULL && fs->pf.nthreads < PF_LISTERS && err == 0) {
		err = pthread_create(&fs->pf.threads[fs->pf.nthreads], NULL,
				     pf_lister, fs);
		if (err == 0)
			fs->pf.nthreads++;
	}
	return err;
}

void pf_stop(struct objfs_fs *fs)
{
	unsigned i;

	pthread_mutex_lock(&fs->lock);
	fs->pf.stop = true;
	pthread_cond_broadcast(&fs->pf.cv);
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < fs->pf.nthreads; i++)
		pthread_join(fs->pf.threads[i], NULL);
	fs->pf.nthreads = 0;
	pthread_mutex_lock(&fs->lock);
	while (fs->pf.dirq_n > 0) {
		struct inode *c = fs->pf.dirq[--fs->pf.dirq_n];

		c->pf.listing = false;
		pthread_mutex_unlock(&fs->lock);
		unpin(fs, c);
		pthread_mutex_lock(&fs->lock);
	}
	pthread_mutex_unlock(&fs->lock);
}

void pf_dir_wait(struct objfs_fs *fs, struct inode *dir)
{
	fs_assert_locked(fs);
	while (dir->pf.listing)
		pthread_cond_wait(&fs->pf.cv, &fs->lock);
}

/* Queues the subdirectory of dir listing entry d to be listed ahead: false
 * when it cannot be (no inode yet, the queue full), true when queued or
 * not needed (listed, fresh, or being listed).  fs->lock held. */
static bool pf_queue_dir(struct objfs_fs *fs, struct inode *dir,
			 const struct dent *d)
{
	struct inode *c = find_child(fs, dir, d->name);

	if (c == NULL || !S_ISDIR(c->mode) || fs->pf.dirq_n == PF_DIRQ)
		return false;
	if (c->pf.listing || (c->snap != NULL &&
			      now_mono() - c->snap->time < fs->o.dir_ttl))
		return true;
	c->refs++;
	c->pf.listing = true;
	fs->pf.dirq[fs->pf.dirq_n++] = c;
	pthread_cond_broadcast(&fs->pf.cv);
	return true;
}

/* Queues the subdirectories of dir's whole listing s from position from
 * on, up to PF_DIRS_AHEAD of them counted from position `count_from`,
 * those before dir->pf.dupto queued already.  fs->lock held. */
static void pf_queue_dirs(struct objfs_fs *fs, struct inode *dir,
			  const struct dirsnap *s, size_t count_from)
{
	size_t j, dirs = 0;

	for (j = count_from; j < s->n && dirs < PF_DIRS_AHEAD; j++) {
		if (!s->e[j].is_dir)
			continue;
		dirs++;
		if (j >= dir->pf.dupto && !pf_queue_dir(fs, dir, &s->e[j]))
			break;
		if (j + 1 > dir->pf.dupto)
			dir->pf.dupto = j + 1;
	}
}

/* dir's scan positions count in listing s (a new listing starts them
 * over).  fs->lock held. */
static void pf_positions(struct inode *dir, const struct dirsnap *s)
{
	if (dir->pf.time != s->time) {
		dir->pf.time = s->time;
		dir->pf.next = dir->pf.upto = 0;
		dir->pf.dnext = dir->pf.dupto = 0;
		dir->pf.scanned = false;
	}
}

struct pf_starts *pf_dir_read(struct objfs_fs *fs, struct inode *dir,
			      const struct dirsnap *s, bool plus, bool first)
{
	struct inode *p = dir->parent;
	const struct dirsnap *ps;
	size_t i, j;
	bool found, seq;

	fs_assert_locked(fs);
	if (fs->pf.cache == NULL || s->more || s->base != 0)
		return NULL;
	pf_positions(dir, s);
	dir->pf.scanned = true;
	if (!plus || fs->pf.nthreads == 0)
		return NULL;
	ps = p != NULL ? p->snap : NULL;
	if (first && ps != NULL && !ps->more && ps->base == 0) {
		/* after the sibling read before it: a tree walk */
		i = snap_find(ps, dir->name, &found);
		pf_positions(p, ps);
		seq = found && p->pf.dnext > 0 && i >= p->pf.dnext;
		for (j = p->pf.dnext; seq && j < i; j++)
			if (ps->e[j].is_dir)
				seq = false;
		if (found)
			p->pf.dnext = i + 1;
		dir->pf.walk = seq;
		if (seq)
			pf_queue_dirs(fs, p, ps, i + 1);
	} else if (first) {
		dir->pf.walk = false;
	}
	if (dir->pf.walk) {
		pf_positions(dir, s);
		pf_queue_dirs(fs, dir, s, 0);
	}
	/* a walk that reads files (a prefetched one was just used): this
	 * directory's first files are next */
	if (first && dir->pf.upto == 0 &&
	    (dir->pf.walk || (p != NULL && p->pf.walk)) &&
	    now_mono() - pf_last_use(fs) < PF_READING)
		return pf_collect(fs, dir, s, 0);
	return NULL;
}

struct pf_task {
	struct objfs_fs *fs;
	uint64_t id;
	size_t len;
	char key[];
};

static void pf_run(void *arg)
{
	struct pf_task *t = arg;
	struct objfs_fs *fs = t->fs;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_get_opts go = { 0, t->len, NULL, NULL, true };
	struct objfs_fixedbuf fb = { malloc(t->len), t->len, 0 };
	struct objfs_sink sink;
	struct probe p;
	int err = ENOMEM;

	memset(&p, 0, sizeof(p));
	if (fb.data != NULL) {
		objfs_sink_fixed(&sink, &fb);
		err = objfs_store_get(fs->store, t->key, &go, &sink, &info);
	}
	if (err == 0)
		probe_from_info(fs, &info, false, &p);
	objfs_obj_info_release(&info);
	objfs_pfcache_fill(fs->pf.cache, t->id, err, fb.data, fb.got, &p);
	free(t);
}

/* Whether listing entry d of dir may be prefetched (fs->lock held). */
static bool pf_candidate(struct objfs_fs *fs, struct inode *dir,
			 const struct dent *d)
{
	struct inode *c;

	/* what an open reads whole (ra_open_revalidate) */
	if (d->is_dir || d->hlink || d->etag[0] == '\0' ||
	    d->size >= PF_FILE_MAX || d->size >= fs->o.ra_chunk ||
	    fs->o.ra_chunks == 0 || (d->have_attr && !S_ISREG(d->fa.mode)))
		return false;
	c = find_child(fs, dir, d->name);
	return c == NULL || (S_ISREG(c->mode) && !c->dirty && c->spool == NULL &&
			     c->in_store && !c->attr_dirty && c->hl.id == NULL &&
			     !c->hl.data && !c->hl.pending);
}

/* GETs to start, collected under fs->lock, sent without it. */
struct pf_starts {
	size_t n;
	struct pf_start {
		char key[KEYBUF];
		size_t len;
	} e[];
};

/* Collects the prefetch candidates of dir's listing s from position
 * `from` on (up to o.prefetch files; those before dir->pf.upto started
 * already) into a new batch.  fs->lock held; NULL when none or out of
 * memory. */
static struct pf_starts *pf_collect(struct objfs_fs *fs, struct inode *dir,
				    const struct dirsnap *s, size_t from)
{
	struct pf_starts *st;
	char dkey[KEYBUF];
	size_t j, files = 0;

	fs_assert_locked(fs);
	if (inode_key(fs, dir, true, dkey, sizeof(dkey)) != 0)
		return NULL;
	st = malloc(sizeof(*st) + fs->o.prefetch * sizeof(st->e[0]));
	if (st == NULL)
		return NULL;
	st->n = 0;
	for (j = from; j < s->n && files < fs->o.prefetch; j++) {
		const struct dent *d = &s->e[j];

		if (d->is_dir)
			continue;
		files++;
		if (j < dir->pf.upto || !pf_candidate(fs, dir, d) ||
		    objfs_key_join(dkey, d->name, false, st->e[st->n].key,
				   sizeof(st->e[st->n].key)) != 0)
			continue;
		/* one byte more than listed: a file grown since shows */
		st->e[st->n++].len = (size_t)d->size + 1;
	}
	if (j > dir->pf.upto)
		dir->pf.upto = j;
	if (st->n == 0) {
		free(st);
		st = NULL;
	}
	return st;
}

void pf_submit(struct objfs_fs *fs, struct pf_starts *st)
{
	size_t i;

	for (i = 0; st != NULL && i < st->n; i++) {
		size_t kl = strlen(st->e[i].key);
		struct pf_task *t = malloc(sizeof(*t) + kl + 1);

		if (t == NULL)
			break;
		t->fs = fs;
		t->len = st->e[i].len;
		memcpy(t->key, st->e[i].key, kl + 1);
		t->id = objfs_pfcache_reserve(fs->pf.cache, t->key, t->len, now_mono());
		if (t->id == 0) {
			free(t);
			continue;
		}
		if (objfs_pool_submit(fs->pool, NULL, pf_run, t) != 0) {
			objfs_pfcache_fill(fs->pf.cache, t->id, ENOMEM, NULL, 0, NULL);
			free(t);
		}
	}
	free(st);
}

void pf_opened(struct objfs_fs *fs, struct inode *in)
{
	struct pf_starts *st = NULL;
	struct inode *dir;
	struct dirsnap *s;
	size_t i, j;
	bool found, seq = true;

	if (fs->pf.cache == NULL)
		return;
	pthread_mutex_lock(&fs->lock);
	dir = in->parent;
	s = dir != NULL && in->linked ? dir->snap : NULL;
	if (s == NULL || s->more || s->base != 0)
		goto out;
	i = snap_find(s, in->name, &found);
	if (!found)
		goto out;
	pf_positions(dir, s);
	/* a scan reads the directory first (not, say, rsync's receiver
	 * reopening a file it just wrote) */
	if (!dir->pf.scanned)
		goto out;
	/* in order: no file of the listing skipped since the last open */
	if (i < dir->pf.next)
		seq = false;
	for (j = dir->pf.next; seq && j < i; j++)
		if (!s->e[j].is_dir)
			seq = false;
	dir->pf.next = i + 1;
	/* out of order: nothing now (what was prefetched before is not
	 * fetched again: a reader going back over the listing finds it in
	 * the page cache) */
	if (seq)
		st = pf_collect(fs, dir, s, i + 1);
out:
	pthread_mutex_unlock(&fs->lock);
	pf_submit(fs, st);
}

bool pf_revalidate(struct objfs_fs *fs, const char *key, double attr_time,
		   const struct objfs_sink *sink, struct probe *p,
		   double *when)
{
	double not_before = now_mono() - fs->o.attr_ttl;
	char *data = NULL;
	size_t len = 0;
	bool hit;

	if (fs->pf.cache == NULL)
		return false;
	if (attr_time > not_before)
		not_before = attr_time;
	hit = objfs_pfcache_get(fs->pf.cache, key, sink != NULL, sink != NULL,
				not_before, p, when, &data, &len);
	/* only a whole regular file, no hard link's name */
	if (hit && (p->is_dir || !S_ISREG(p->fa.mode) || p->hl_id[0] != '\0' ||
		    p->size != len))
		hit = false;
	if (hit && sink != NULL && len > 0 &&
	    sink->write_at(sink->arg, 0, data, len) != 0)
		hit = false;
	if (hit && sink != NULL)
		__atomic_store_n(&fs->pf.used_ms,
				 (uint64_t)(now_mono() * 1000.0), __ATOMIC_RELAXED);
	free(data);
	return hit;
}

/* Drops the entries of key and of every key it begins (a directory's
 * tree; a name it prefixes besides costs only a GET again). */
static void pf_drop_key(struct objfs_fs *fs, int err, const char *key)
{
	if (err == 0)
		objfs_pfcache_drop_prefix(fs->pf.cache, key);
}

void pf_drop_inode(struct objfs_fs *fs, struct inode *in)
{
	char key[KEYBUF];
	int err;

	if (fs->pf.cache == NULL)
		return;
	pthread_mutex_lock(&fs->lock);
	err = inode_key(fs, in, false, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	pf_drop_key(fs, err, key);
}

void pf_drop_name(struct objfs_fs *fs, struct inode *dir, const char *name)
{
	char dkey[KEYBUF], key[KEYBUF];
	int err;

	if (fs->pf.cache == NULL)
		return;
	pthread_mutex_lock(&fs->lock);
	err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	pthread_mutex_unlock(&fs->lock);
	if (err == 0)
		err = objfs_key_join(dkey, name, false, key, sizeof(key));
	pf_drop_key(fs, err, key);
}
