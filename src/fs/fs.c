/*
 * fs.c - the objfs filesystem over the libfuse3 low-level API.
 *
 * Objects: an inode per name the kernel knows (inode number = a counter,
 * never reused), found by number (ino hash) and by (parent, name) (name
 * hash).  An inode lives while the kernel holds lookups on it (nlookup),
 * files are open on it (nopen), children or running operations pin it
 * (refs), or it holds unsaved data (dirty).
 *
 * Locks, always taken in this order:
 *   fs->ns     rwlock.  Read side: any operation that writes or deletes
 *              keys of existing names (upload, unlink, rmdir, setattr).
 *              Write side: rename, so a renamed tree never changes under
 *              it and no upload writes to an old key meanwhile.
 *   in->mu     the inode's data: spool, dirty.  Held across store I/O of
 *              that file (upload, fetch into the spool).
 *   fs->lock   mutex.  Tables, tree links, nlookup/nopen/refs, every
 *              attribute field, listing snapshots, capacity counters.
 *              Never held across store I/O.
 *
 * File data states:
 *   clean, no spool   reads are ranged GETs (with read-ahead per handle)
 *   spool, clean      the spool mirrors the stored object (present ranges
 *                     plus fetch on demand); kept while the file is open
 *   spool, dirty      local changes not yet uploaded; uploaded (whole
 *                     object, multipart when large) on flush, fsync,
 *                     release, setattr without a handle, rename, and at
 *                     unmount.  A dirty inode is never freed.
 * An acknowledged flush/fsync/close means the object is in the store.
 *
 * Spool bound: fs->spool_used counts the spools' disk blocks.  Past
 * spool_limit a streaming writer punches its sent parts out of its spool
 * (stream->punched: those bytes live only in the upload, which completes
 * before they are read or changed), other files' spools are freed (dirty
 * ones uploaded early), and last the written file is uploaded early.
 *
 * Consistency: attributes and names are trusted for attr_ttl/entry_ttl;
 * every open of a clean file revalidates it with a HEAD; the kernel page
 * cache is kept (FOPEN_KEEP_CACHE) only while the ETag is the one whose
 * data it caches (cache_etag), and attributes are invalidated when it
 * changed.  Listings are cached for dir_ttl and dropped on local changes.
 *
 * Capacity: `used` is one listing of the volume (a background scan at
 * start and every usage_refresh seconds) plus local deltas; every size
 * change is charged against the capacity of the volume record before it is
 * made (ENOSPC otherwise), so nothing past the capacity is ever uploaded.
 */
#define FUSE_USE_VERSION 312
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/errors.h"
#include "common/log.h"
#include "volume/volrec.h"
#include "fs/attr.h"
#include "fs/dcache.h"
#include "fs/fs.h"
#include "common/pool.h"
#include "fs/spool.h"

#define HASH_BITS 16
#define HASH_SIZE (1u << HASH_BITS)
#define KEYBUF (OBJFS_KEY_MAX + 2)
#define ROOT_ATTR_KEY ".objfs/root"
#define RA_MAX 16
#define SNAP_RELIST_MAX 1000    /* entries: one LIST page */
#define LINK_MAX_LEN 4096
#define SUB "fs"

struct dent {
	char *name;
	bool is_dir;
	bool have_attr;         /* fa/size/etag from a HEAD */
	bool marker;            /* a directory with a marker object */
	uint64_t size;
	char etag[OBJFS_ETAG_MAX];
	struct timespec mtime;  /* Last-Modified from the listing */
	struct objfs_fattr fa;
};

/* A directory listing; shared by readdir handles (refs, fs->lock). */
struct dirsnap {
	unsigned refs;
	size_t n;
	struct dent *e;
	double time;
	bool attrs_done;
};

/* A multipart upload fed while a file is written sequentially: every
 * completed part_size bytes go up at once, so closing a large file only
 * sends the tail.  The parts array and counters are under mu (tasks finish
 * without the inode's lock); the rest belongs to the inode (in->mu). */
struct stream {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char key[KEYBUF];
	char *upload_id;
	struct objfs_part *parts;       /* index = part number - 1 */
	unsigned n_parts;               /* parts started */
	unsigned inflight;              /* mu */
	int err;                        /* first failure, mu */
	uint64_t off;                   /* bytes handed to parts */
	uint64_t punched;               /* [0, punched) left the spool: only
					   the completed parts hold it */
	bool attrs_changed;             /* mode, owner or mtime set meanwhile:
					   stored by a copy after completion */
	struct objfs_fattr fa;          /* attributes sent at create */
};

struct inode {
	fuse_ino_t ino;
	struct inode *ino_next;         /* ino hash chain */
	struct inode *name_next;        /* name hash chain (when linked) */
	struct inode *parent;           /* pinned (refs); NULL for root/unlinked */
	struct inode *child;            /* first child (linked ones) */
	struct inode *sib_prev, *sib_next;
	char *name;
	uint64_t nlookup;
	unsigned nopen;
	unsigned refs;
	bool linked;

	/* attributes (fs->lock) */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t size;
	struct timespec mtime;
	struct timespec ctime;
	char etag[OBJFS_ETAG_MAX];       /* of the stored object */
	char cache_etag[OBJFS_ETAG_MAX]; /* whose data the page cache holds */
	double attr_time;                /* when attributes were fetched */
	bool in_store;                   /* the object (or marker) exists */
	uint64_t stored_size;
	uint64_t charged;                /* bytes counted in fs->used */
	struct dirsnap *snap;
	char *link;

	/* data (mu) */
	pthread_mutex_t mu;
	struct objfs_spool *spool;
	bool dirty;                      /* also read under fs->lock */
	bool seq;                        /* written only at its end since empty */
	struct stream *stream;           /* parts already on their way */
	uint64_t spool_disk;             /* fs->lock: the spool's blocks, as
					    counted in fs->spool_used */
};

struct ra_chunk {
	uint64_t off;
	size_t len;
	char *buf;
	size_t got;
	int state;          /* RA_FREE, RA_LOADING, RA_READY, RA_ERROR */
	int err;
};
enum { RA_FREE = 0, RA_LOADING, RA_READY, RA_ERROR };

struct fhandle {
	struct objfs_fs *fs;
	struct inode *in;
	struct fhandle *prev, *next;    /* fs->handles, fs->lock */
	char key[KEYBUF];
	pthread_mutex_t mu;             /* the read-ahead state */
	pthread_cond_t cv;
	uint64_t next_off;
	unsigned seq;
	unsigned waiters;               /* readers in cond_wait on cv */
	struct ra_chunk ra[RA_MAX];
};

struct dhandle {
	struct dirsnap *snap;
	struct dhandle *prev, *next;    /* fs->dirhandles, fs->lock */
};

struct objfs_fs {
	struct objfs_store *store;
	struct objfs_log *log;
	struct objfs_fs_opts o;
	char *spool_dir;
	struct fuse_session *se;
	struct objfs_pool *pool;
	struct objfs_dcache *dcache;    /* NULL: no on-disk data cache */
	struct objfs_budget mem;
	struct dhandle *dirhandles;     /* open directories (fs->lock), idem */
	struct fhandle *handles;        /* open files (fs->lock), freed at
					   destroy when the kernel went away
					   without releasing them */
	pthread_rwlock_t ns;
	pthread_mutex_t lock;

	/* fs->lock */
	struct inode *ino_tab[HASH_SIZE];
	struct inode *name_tab[HASH_SIZE];
	fuse_ino_t next_ino;
	struct inode *root;
	uint64_t n_inodes;

	/* capacity (fs->lock) */
	uint64_t capacity;              /* 0: unlimited */
	int64_t used;
	int64_t objects;
	int64_t scan_delta;
	int64_t scan_obj_delta;
	bool scan_done;
	double volrec_time;
	pthread_cond_t scan_cv;
	bool stopping;
	pthread_t scan_thread;
	bool scan_started;
	pthread_mutex_t volrec_mu;      /* one volume record refresh at a time */
	uint64_t spool_used;            /* fs->lock: disk bytes of all spools */
	uint64_t relieved_at;           /* fs->lock: spool_used after the last
					   look at other files' spools */
	pthread_mutex_t rabuf_mu;       /* read-ahead buffers kept for reuse */
	char *rabuf[RA_MAX];            /* ra_chunk bytes each, their budget
					   still taken (rabuf_mu) */
	unsigned n_rabuf;
};

static int store_attrs(struct objfs_fs *fs, struct inode *in);
static int snap_build(struct objfs_fs *fs, struct inode *dir,
		      struct dirsnap **out);
static void spool_account(struct objfs_fs *fs, struct inode *in);

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct timespec now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

static struct objfs_fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

void objfs_fs_opts_default(struct objfs_fs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->uid = getuid();
	o->gid = getgid();
	o->umask = 022;
	o->attr_ttl = 1.0;
	o->entry_ttl = 1.0;
	o->neg_ttl = 1.0;
	o->dir_ttl = 1.0;
	o->mem_limit = 12ULL << 20;
	o->ra_chunk = 4ULL << 20;
	o->ra_chunks = 3;
	o->part_size = 32ULL << 20;
	o->upload_parallel = 2;
	o->threads = 32;
	o->spool_dir = "/var/tmp";
	o->spool_limit = 2ULL << 30;
	o->read_only = false;
	o->cache_dir = NULL;
	o->cache_size = 1ULL << 30;
	o->volrec_ttl = 30.0;
	o->usage_refresh = 600.0;
}

/* ---- tables (fs->lock) ------------------------------------------------ */

static unsigned hash_ino(fuse_ino_t ino)
{
	uint64_t h = ino * 0x9E3779B97F4A7C15ULL;

	return (unsigned)(h >> (64 - HASH_BITS));
}

static unsigned hash_name(const struct inode *parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)parent;

	for (; *name != '\0'; name++) {
		h ^= (unsigned char)*name;
		h *= 1099511628211ULL;
	}
	return (unsigned)(h >> (64 - HASH_BITS)) ^ (unsigned)(h & (HASH_SIZE - 1));
}

static struct inode *find_ino(struct objfs_fs *fs, fuse_ino_t ino)
{
	struct inode *in;

	if (ino == FUSE_ROOT_ID)
		return fs->root;
	for (in = fs->ino_tab[hash_ino(ino)]; in != NULL; in = in->ino_next) {
		if (in->ino == ino)
			return in;
	}
	return NULL;
}

static struct inode *find_child(struct objfs_fs *fs, struct inode *parent,
				const char *name)
{
	struct inode *in;

	for (in = fs->name_tab[hash_name(parent, name) & (HASH_SIZE - 1)];
	     in != NULL; in = in->name_next) {
		if (in->parent == parent && in->linked &&
		    strcmp(in->name, name) == 0)
			return in;
	}
	return NULL;
}

static void name_unhash(struct objfs_fs *fs, struct inode *in)
{
	struct inode **pp;
	unsigned h = hash_name(in->parent, in->name) & (HASH_SIZE - 1);

	for (pp = &fs->name_tab[h]; *pp != NULL; pp = &(*pp)->name_next) {
		if (*pp == in) {
			*pp = in->name_next;
			break;
		}
	}
	in->name_next = NULL;
}

static void name_hash(struct objfs_fs *fs, struct inode *in)
{
	unsigned h = hash_name(in->parent, in->name) & (HASH_SIZE - 1);

	in->name_next = fs->name_tab[h];
	fs->name_tab[h] = in;
}

static void sib_unlink(struct inode *in)
{
	if (in->sib_prev != NULL)
		in->sib_prev->sib_next = in->sib_next;
	else if (in->parent != NULL)
		in->parent->child = in->sib_next;
	if (in->sib_next != NULL)
		in->sib_next->sib_prev = in->sib_prev;
	in->sib_prev = NULL;
	in->sib_next = NULL;
}

static void sib_link(struct inode *parent, struct inode *in)
{
	in->sib_prev = NULL;
	in->sib_next = parent->child;
	if (parent->child != NULL)
		parent->child->sib_prev = in;
	parent->child = in;
}

static void snap_put_locked(struct dirsnap *s)
{
	size_t i;

	if (s == NULL || --s->refs > 0)
		return;
	for (i = 0; i < s->n; i++)
		free(s->e[i].name);
	free(s->e);
	free(s);
}

static void snap_drop(struct inode *dir)
{
	if (dir != NULL && dir->snap != NULL) {
		snap_put_locked(dir->snap);
		dir->snap = NULL;
	}
}

/* Finds name in a snapshot: its index, or where it would go (*found). */
static size_t snap_find(const struct dirsnap *s, const char *name, bool *found)
{
	size_t lo = 0, hi = s->n;

	*found = false;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(s->e[mid].name, name);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Keeps dir's listing current after a local change (fs->lock): the name
 * is added (add) or removed.  A listing that readdir handles share is
 * dropped instead, so their offsets stay valid. */
static void snap_note(struct inode *dir, const char *name, bool add,
		      bool is_dir)
{
	struct dirsnap *s = dir != NULL ? dir->snap : NULL;
	bool found;
	size_t i;

	if (s == NULL)
		return;
	if (s->refs > 1) {
		snap_drop(dir);
		return;
	}
	i = snap_find(s, name, &found);
	if (add && !found) {
		struct dent *e = realloc(s->e, (s->n + 1) * sizeof(*e));
		char *nm = strdup(name);

		if (e == NULL || nm == NULL) {
			if (e != NULL)
				s->e = e;
			free(nm);
			snap_drop(dir);
			return;
		}
		s->e = e;
		memmove(&e[i + 1], &e[i], (s->n - i) * sizeof(*e));
		memset(&e[i], 0, sizeof(*e));
		e[i].name = nm;
		e[i].is_dir = is_dir;
		s->n++;
	} else if (add) {
		s->e[i].is_dir = is_dir;
		s->e[i].have_attr = false;
	} else if (found) {
		free(s->e[i].name);
		memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof(*s->e));
		s->n--;
	}
}

static void inode_free(struct objfs_fs *fs, struct inode *in)
{
	struct inode **pp;

	for (pp = &fs->ino_tab[hash_ino(in->ino)]; *pp != NULL;
	     pp = &(*pp)->ino_next) {
		if (*pp == in) {
			*pp = in->ino_next;
			break;
		}
	}
	fs->n_inodes--;
	snap_drop(in);
	fs->spool_used -= in->spool_disk;
	objfs_spool_destroy(in->spool);
	pthread_mutex_destroy(&in->mu);
	free(in->link);
	free(in->name);
	free(in);
}

/* Detaches in from its name and parent (fs->lock).  The parent loses the
 * pin the child held; the caller must run maybe_free(parent) after. */
static struct inode *detach(struct objfs_fs *fs, struct inode *in)
{
	struct inode *parent = in->parent;

	if (parent == NULL)
		return NULL;
	if (in->linked)
		name_unhash(fs, in);
	sib_unlink(in);
	in->linked = false;
	in->parent = NULL;
	parent->refs--;
	return parent;
}

/* Frees in (and parents left unused) when nothing holds it (fs->lock). */
static void maybe_free(struct objfs_fs *fs, struct inode *in)
{
	while (in != NULL && in != fs->root && in->nlookup == 0 &&
	       in->nopen == 0 && in->refs == 0 && !in->dirty &&
	       in->child == NULL) {
		struct inode *parent = detach(fs, in);

		inode_free(fs, in);
		in = parent;
	}
}

static struct inode *inode_new(struct objfs_fs *fs, struct inode *parent,
			       const char *name, mode_t mode)
{
	struct inode *in = calloc(1, sizeof(*in));

	if (in == NULL)
		return NULL;
	in->name = strdup(name);
	if (in->name == NULL) {
		free(in);
		return NULL;
	}
	pthread_mutex_init(&in->mu, NULL);
	in->ino = fs->next_ino++;
	in->mode = mode;
	in->uid = fs->o.uid;
	in->gid = fs->o.gid;
	in->ino_next = fs->ino_tab[hash_ino(in->ino)];
	fs->ino_tab[hash_ino(in->ino)] = in;
	fs->n_inodes++;
	if (parent != NULL) {
		in->parent = parent;
		in->linked = true;
		parent->refs++;
		name_hash(fs, in);
		sib_link(parent, in);
	}
	return in;
}

/* The key of in into buf: "" for the root, "a/b" for a file, "a/b/" for a
 * directory when dir_slash (fs->lock).  0 or ENAMETOOLONG/ENOENT. */
static int inode_key(struct objfs_fs *fs, struct inode *in, bool dir_slash,
		     char *buf, size_t cap)
{
	const struct inode *chain[OBJFS_KEY_MAX / 2 + 2];
	size_t n = 0, len = 0, i;
	const struct inode *p;

	(void)fs;
	for (p = in; p != NULL && p->parent != NULL; p = p->parent) {
		if (!p->linked || n >= sizeof(chain) / sizeof(chain[0]))
			return p->linked ? ENAMETOOLONG : ENOENT;
		chain[n++] = p;
	}
	if (p != fs->root)
		return ENOENT;
	for (i = n; i-- > 0;) {
		size_t nl = strlen(chain[i]->name);

		if (len + nl + 2 > cap || len + nl + 1 > OBJFS_KEY_MAX)
			return ENAMETOOLONG;
		memcpy(buf + len, chain[i]->name, nl);
		len += nl;
		if (i > 0 || (dir_slash && S_ISDIR(in->mode)))
			buf[len++] = '/';
	}
	buf[len] = '\0';
	return 0;
}

static bool is_root(struct objfs_fs *fs, struct inode *in)
{
	return in == fs->root;
}

static mode_t default_mode(struct objfs_fs *fs, mode_t type)
{
	if (type == S_IFDIR)
		return S_IFDIR | (0777 & ~fs->o.umask);
	if (type == S_IFLNK)
		return S_IFLNK | 0777;
	return S_IFREG | (0666 & ~fs->o.umask);
}

static void fill_stat(struct objfs_fs *fs, struct inode *in, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = in->ino;
	st->st_mode = in->mode;
	st->st_nlink = S_ISDIR(in->mode) ? 2 : (in->linked || in == fs->root ? 1 : 0);
	st->st_uid = in->uid;
	st->st_gid = in->gid;
	st->st_size = (off_t)(S_ISDIR(in->mode) ? 4096 : in->size);
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((in->size + 511) / 512);
	st->st_mtim = in->mtime;
	st->st_atim = in->mtime;
	st->st_ctim = in->ctime.tv_sec != 0 ? in->ctime : in->mtime;
}

static void fill_entry(struct objfs_fs *fs, struct inode *in,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = in->ino;
	e->generation = 1;
	e->attr_timeout = fs->o.attr_ttl;
	e->entry_timeout = fs->o.entry_ttl;
	fill_stat(fs, in, &e->attr);
}

/* ---- capacity (fs->lock) ---------------------------------------------- */

static void charge_force(struct objfs_fs *fs, struct inode *in, uint64_t size)
{
	int64_t d = (int64_t)size - (int64_t)in->charged;

	fs->used += d;
	fs->scan_delta += d;
	in->charged = size;
}

/* Charges in for size bytes; ENOSPC when that passes the capacity. */
static int charge_locked(struct objfs_fs *fs, struct inode *in, uint64_t size)
{
	int64_t d = (int64_t)size - (int64_t)in->charged;

	if (d > 0 && fs->capacity != 0) {
		while (!fs->scan_done && !fs->stopping)
			pthread_cond_wait(&fs->scan_cv, &fs->lock);
		if (fs->used + d > (int64_t)fs->capacity)
			return ENOSPC;
	}
	charge_force(fs, in, size);
	return 0;
}

static void volrec_refresh(struct objfs_fs *fs, double max_age)
{
	struct objfs_volrec v = OBJFS_VOLREC_INIT;
	double now = now_mono();
	int err;

	pthread_mutex_lock(&fs->volrec_mu);
	pthread_mutex_lock(&fs->lock);
	if (now - fs->volrec_time < max_age) {
		pthread_mutex_unlock(&fs->lock);
		goto out;
	}
	pthread_mutex_unlock(&fs->lock);
	err = objfs_volrec_load(fs->store, &v);
	pthread_mutex_lock(&fs->lock);
	if (err == 0 || err == ENOENT) {
		if (fs->capacity != v.capacity_bytes)
			objfs_info(fs->log, SUB, "capacity now %" PRIu64 " bytes",
				   v.capacity_bytes);
		fs->capacity = v.capacity_bytes;
		fs->volrec_time = now;
	} else {
		objfs_warn(fs->log, SUB, "reading the volume record: %s",
			   objfs_strerror(err));
	}
	pthread_mutex_unlock(&fs->lock);
out:
	pthread_mutex_unlock(&fs->volrec_mu);
	objfs_volrec_release(&v);
}

/* charge_locked() that re-reads a stale volume record before ENOSPC (the
 * capacity may have been raised).  Takes and releases fs->lock. */
static int charge(struct objfs_fs *fs, struct inode *in, uint64_t size)
{
	int err;

	pthread_mutex_lock(&fs->lock);
	err = charge_locked(fs, in, size);
	pthread_mutex_unlock(&fs->lock);
	if (err == ENOSPC) {
		volrec_refresh(fs, 5.0);
		pthread_mutex_lock(&fs->lock);
		err = charge_locked(fs, in, size);
		pthread_mutex_unlock(&fs->lock);
	}
	return err;
}

static int scan_usage(struct objfs_fs *fs, uint64_t *bytes, uint64_t *count)
{
	struct objfs_list_req rq = { NULL, NULL, NULL, NULL, 1000 };
	char *token = NULL;
	int err = 0;

	*bytes = 0;
	*count = 0;
	do {
		struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
		size_t i;

		rq.continuation = token;
		err = objfs_store_list(fs->store, &rq, &pg);
		free(token);
		token = NULL;
		if (err != 0)
			break;
		for (i = 0; i < pg.n_entries; i++) {
			if (strncmp(pg.entries[i].key, OBJFS_RESERVED_NAME "/",
				    sizeof(OBJFS_RESERVED_NAME)) == 0)
				continue;
			*bytes += pg.entries[i].size;
			(*count)++;
		}
		token = pg.next;
		pg.next = NULL;
		objfs_list_page_release(&pg);
		pthread_mutex_lock(&fs->lock);
		if (fs->stopping)
			err = ECANCELED;
		pthread_mutex_unlock(&fs->lock);
	} while (err == 0 && token != NULL);
	free(token);
	return err;
}

static void *scan_main(void *arg)
{
	struct objfs_fs *fs = arg;

	pthread_mutex_lock(&fs->lock);
	while (!fs->stopping) {
		uint64_t bytes, count;
		int64_t pending = 0;
		unsigned i;
		struct inode *in;
		struct timespec until;
		int err;

		for (i = 0; i < HASH_SIZE; i++) {
			for (in = fs->ino_tab[i]; in != NULL; in = in->ino_next) {
				if (in->dirty)
					pending += (int64_t)in->charged -
						   (int64_t)(in->in_store ?
							     in->stored_size : 0);
			}
		}
		fs->scan_delta = pending;
		fs->scan_obj_delta = 0;
		pthread_mutex_unlock(&fs->lock);
		err = scan_usage(fs, &bytes, &count);
		pthread_mutex_lock(&fs->lock);
		if (err == 0) {
			fs->used = (int64_t)bytes + fs->scan_delta;
			fs->objects = (int64_t)count + fs->scan_obj_delta;
			objfs_debug(fs->log, SUB, "usage: %" PRIu64 " bytes in %"
				    PRIu64 " objects", bytes, count);
		} else if (err != ECANCELED) {
			objfs_warn(fs->log, SUB, "usage scan: %s",
				   objfs_strerror(err));
		}
		if (!fs->scan_done) {
			/* even after an error: writes must not wait forever */
			fs->scan_done = true;
			pthread_cond_broadcast(&fs->scan_cv);
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += (time_t)(err == 0 ? fs->o.usage_refresh : 10);
		while (!fs->stopping &&
		       pthread_cond_timedwait(&fs->scan_cv, &fs->lock, &until) == 0)
			;
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

/* ---- finding names in the store --------------------------------------- */

/* What the store says about one name. */
struct probe {
	bool is_dir;
	bool marker;            /* directory with a marker object */
	uint64_t size;
	char etag[OBJFS_ETAG_MAX];
	struct objfs_fattr fa;
};

static void probe_from_info(struct objfs_fs *fs, const struct objfs_obj_info *info,
			    bool dir, struct probe *p)
{
	p->is_dir = dir;
	p->marker = dir;
	p->size = dir ? 0 : info->size;
	snprintf(p->etag, sizeof(p->etag), "%s", info->etag);
	p->fa.mode = default_mode(fs, dir ? S_IFDIR : S_IFREG);
	p->fa.uid = fs->o.uid;
	p->fa.gid = fs->o.gid;
	p->fa.mtime = info->mtime;
	objfs_fattr_from_meta(&info->meta, &p->fa);
	if (dir && !S_ISDIR(p->fa.mode))
		p->fa.mode = S_IFDIR | (p->fa.mode & 07777);
	if (!dir && S_ISDIR(p->fa.mode)) {
		/* an old s3fs-style "dir" object without the slash */
		p->is_dir = true;
		p->size = 0;
	}
}

static void probe_implied_dir(struct objfs_fs *fs, struct probe *p)
{
	memset(p, 0, sizeof(*p));
	p->is_dir = true;
	p->fa.mode = default_mode(fs, S_IFDIR);
	p->fa.uid = fs->o.uid;
	p->fa.gid = fs->o.gid;
	p->fa.mtime = now_real();
}

/* True when some key starts with prefix (which ends in "/").  0 or errno. */
static int prefix_used(struct objfs_fs *fs, const char *prefix, bool ignore_self,
		       bool *used)
{
	struct objfs_list_req rq = { prefix, NULL, NULL, NULL, 2 };
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
	size_t i;
	int err;

	*used = false;
	err = objfs_store_list(fs->store, &rq, &pg);
	if (err != 0)
		return err;
	for (i = 0; i < pg.n_entries; i++) {
		if (!ignore_self || strcmp(pg.entries[i].key, prefix) != 0)
			*used = true;
	}
	if (pg.n_prefixes > 0)
		*used = true;
	objfs_list_page_release(&pg);
	return 0;
}

struct list_task {
	struct objfs_fs *fs;
	const char *prefix;
	int err;
	bool used;
	bool marker;            /* the first key is the prefix itself */
};

static void list_run(void *arg)
{
	struct list_task *t = arg;
	struct objfs_list_req rq = { t->prefix, NULL, NULL, NULL, 1 };
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;

	t->err = objfs_store_list(t->fs->store, &rq, &pg);
	if (t->err == 0) {
		t->used = pg.n_entries > 0 || pg.n_prefixes > 0;
		t->marker = pg.n_entries > 0 &&
			    strcmp(pg.entries[0].key, t->prefix) == 0;
	}
	objfs_list_page_release(&pg);
}

/* Probes the name whose file key is key: object, marker, or implied
 * directory.  The HEAD of the object and the listing of "key/" run in
 * parallel, so a missing name costs one round trip.  want_dir skips the
 * object HEAD.  0, ENOENT or another errno. */
static int probe_key(struct objfs_fs *fs, const char *key, bool want_dir,
		     struct probe *p)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct list_task lt;
	struct objfs_group g;
	char dkey[KEYBUF];
	int err, herr = ENOENT;

	memset(p, 0, sizeof(*p));
	err = objfs_key_join(key, "", true, dkey, sizeof(dkey));
	if (err != 0)
		return err;
	memset(&lt, 0, sizeof(lt));
	lt.fs = fs;
	lt.prefix = dkey;
	objfs_group_init(&g);
	if (fs->pool == NULL || objfs_pool_submit(fs->pool, &g, list_run, &lt) != 0)
		list_run(&lt);
	if (!want_dir) {
		herr = objfs_store_head(fs->store, key, &info);
		if (herr == 0)
			probe_from_info(fs, &info, false, p);
	}
	objfs_group_wait(&g);
	if (herr == 0 || herr != ENOENT) {
		err = herr;
		goto out;
	}
	objfs_obj_info_release(&info);
	err = lt.err;
	if (err != 0)
		goto out;
	if (!lt.used) {
		err = ENOENT;
		goto out;
	}
	if (lt.marker) {
		err = objfs_store_head(fs->store, dkey, &info);
		if (err == 0) {
			probe_from_info(fs, &info, true, p);
			goto out;
		}
		if (err != ENOENT)
			goto out;
		err = 0;
	}
	probe_implied_dir(fs, p);
out:
	objfs_obj_info_release(&info);
	return err;
}

/* Copies probe results into an inode's attributes (fs->lock).  Local state
 * wins while the inode has unsaved data or a spool. */
static void apply_probe(struct objfs_fs *fs, struct inode *in,
			const struct probe *p)
{
	in->attr_time = now_mono();
	in->in_store = p->is_dir ? p->marker : true;
	if (in->dirty || in->spool != NULL)
		return;
	if (!S_ISDIR(in->mode) && strcmp(in->etag, p->etag) != 0) {
		free(in->link);
		in->link = NULL;
	}
	in->mode = p->fa.mode;
	in->uid = p->fa.uid;
	in->gid = p->fa.gid;
	in->mtime = p->fa.mtime;
	in->size = p->size;
	in->stored_size = p->size;
	snprintf(in->etag, sizeof(in->etag), "%s", p->etag);
	if (!S_ISDIR(in->mode) && in->charged != p->size)
		in->charged = p->size;  /* the scan counts other writers */
}

static bool same_type(mode_t a, mode_t b)
{
	return (a & S_IFMT) == (b & S_IFMT);
}

/* Looks up (parent, name) for the kernel (nlookup++) or for internal use
 * (pin: refs++).  *out is set with the reference taken.  0, ENOENT, ... */
static int do_lookup(struct objfs_fs *fs, struct inode *parent,
		     const char *name, bool pin, struct inode **out)
{
	char key[KEYBUF], dkey[KEYBUF];
	struct inode *in;
	struct probe p;
	bool want_dir = false, fresh;
	double now = now_mono();
	bool relisted = false;
	int err;

	err = objfs_name_check(name);
	if (err != 0)
		return err;
	if (objfs_name_reserved(is_root(fs, parent), name))
		return ENOENT;
	pthread_mutex_lock(&fs->lock);
again:
	if (!S_ISDIR(parent->mode)) {
		err = ENOTDIR;
		goto out_locked;
	}
	in = find_child(fs, parent, name);
	if (in != NULL) {
		fresh = in->dirty || in->spool != NULL ||
			(!in->in_store && !S_ISDIR(in->mode)) ||
			now - in->attr_time < fs->o.entry_ttl;
		if (fresh)
			goto found;
		want_dir = S_ISDIR(in->mode);
	} else if (parent->snap != NULL &&
		   now - parent->snap->time < fs->o.dir_ttl) {
		/* a fresh listing without the name: a quick ENOENT */
		bool seen;
		size_t i = snap_find(parent->snap, name, &seen);

		if (seen)
			want_dir = parent->snap->e[i].is_dir;
		else {
			err = ENOENT;
			goto out_locked;
		}
	} else if (!relisted && parent->snap != NULL &&
		   parent->snap->n < SNAP_RELIST_MAX) {
		/* a small directory listed before: one LIST answers this
		 * lookup and the next ones for dir_ttl (a HEAD and a LIST
		 * per name otherwise, when many files are created) */
		struct dirsnap *s = NULL;

		relisted = true;
		pthread_mutex_unlock(&fs->lock);
		err = snap_build(fs, parent, &s);
		pthread_mutex_lock(&fs->lock);
		if (s != NULL)
			snap_put_locked(s);
		now = now_mono();
		if (err == 0)
			goto again;
	}
	err = inode_key(fs, parent, true, dkey, sizeof(dkey));
	if (err == 0)
		err = objfs_key_join(dkey, name, false, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		return err;

	err = probe_key(fs, key, want_dir, &p);
	if (err == ENOENT && want_dir)
		err = probe_key(fs, key, false, &p);

	pthread_mutex_lock(&fs->lock);
	in = find_child(fs, parent, name);
	if (err != 0) {
		if (err == ENOENT && in != NULL && !in->dirty &&
		    in->spool == NULL && in->in_store) {
			/* gone from the store: forget the name */
			struct inode *par = detach(fs, in);

			maybe_free(fs, in);
			maybe_free(fs, par);
		} else if (err == ENOENT && in != NULL) {
			err = 0;        /* local data we still hold */
			goto found;
		}
		goto out_locked;
	}
	if (in != NULL && !same_type(in->mode, p.fa.mode) && !in->dirty &&
	    in->spool == NULL) {
		struct inode *par = detach(fs, in);

		maybe_free(fs, in);
		maybe_free(fs, par);
		in = NULL;
	}
	if (in == NULL) {
		in = inode_new(fs, parent, name, p.fa.mode);
		if (in == NULL) {
			err = ENOMEM;
			goto out_locked;
		}
	}
	apply_probe(fs, in, &p);
found:
	if (pin)
		in->refs++;
	else
		in->nlookup++;
	*out = in;
out_locked:
	pthread_mutex_unlock(&fs->lock);
	return err;
}

static void unpin(struct objfs_fs *fs, struct inode *in)
{
	if (in == NULL)
		return;
	pthread_mutex_lock(&fs->lock);
	in->refs--;
	maybe_free(fs, in);
	pthread_mutex_unlock(&fs->lock);
}

/* Pins the inode the kernel calls ino; NULL when unknown. */
static struct inode *pin_ino(struct objfs_fs *fs, fuse_ino_t ino)
{
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	in = find_ino(fs, ino);
	if (in != NULL)
		in->refs++;
	pthread_mutex_unlock(&fs->lock);
	return in;
}

/* ---- spool and upload (in->mu held) ----------------------------------- */

struct spool_sink {
	struct objfs_spool *sp;
	uint64_t base;
};

static int spool_sink_write(void *arg, uint64_t off, const void *data, size_t n)
{
	struct spool_sink *ss = arg;

	return objfs_spool_fill(ss->sp, ss->base + off, data, n);
}

/* Starts a spool for in if it has none (in->mu). */
static int spool_ensure(struct objfs_fs *fs, struct inode *in)
{
	struct objfs_spool *sp = NULL;
	uint64_t base = 0;
	char etag[OBJFS_ETAG_MAX] = "";
	int err;

	if (in->spool != NULL)
		return 0;
	pthread_mutex_lock(&fs->lock);
	if (in->in_store) {
		base = in->stored_size;
		snprintf(etag, sizeof(etag), "%s", in->etag);
	}
	pthread_mutex_unlock(&fs->lock);
	err = objfs_spool_create(fs->spool_dir, base, etag, &sp);
	if (err != 0) {
		objfs_error(fs->log, SUB, "creating a spool file in %s: %s",
			    fs->spool_dir, objfs_strerror(err));
		return err;
	}
	pthread_mutex_lock(&fs->lock);
	in->spool = sp;
	in->size = sp->size;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/* Fetches whatever of [off, end) the spool lacks (in->mu).  Fetches are
 * rounded to 1 MiB so small reads do not become many GETs. */
static int spool_fetch(struct objfs_fs *fs, struct inode *in, uint64_t off,
		       uint64_t end)
{
	struct objfs_spool *sp = in->spool;
	char key[KEYBUF];
	uint64_t gs, ge;
	int err = 0;

	if (end > sp->base_size)
		end = sp->base_size;
	if (off >= end || !objfs_spool_missing(sp, off, end, &gs, &ge))
		return 0;
	pthread_mutex_lock(&fs->lock);
	err = inode_key(fs, in, false, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		return EIO;     /* unlinked before its data was saved */
	while (off < end && objfs_spool_missing(sp, off, end, &gs, &ge)) {
		struct objfs_get_opts go = { 0, 0, NULL };
		struct spool_sink ss = { sp, 0 };
		struct objfs_sink sink = { spool_sink_write, &ss };

		gs &= ~((1ULL << 20) - 1);
		if (ge - gs < (1ULL << 20))
			ge = gs + (1ULL << 20);
		if (ge > sp->base_size)
			ge = sp->base_size;
		go.off = gs;
		go.len = ge - gs;
		go.if_match = sp->base_etag[0] != '\0' ? sp->base_etag : NULL;
		ss.base = gs;
		err = objfs_store_get(fs->store, key, &go, &sink, NULL);
		if (err != 0) {
			objfs_warn(fs->log, SUB, "fetching %s: %s", key,
				   objfs_strerror(err));
			err = err == ESTALE ? EIO : err;
			break;
		}
		off = ge;
	}
	spool_account(fs, in);  /* what was fetched, also before a failure */
	return err;
}


/* ---- streaming uploads of sequential writers (in->mu) ----------------- */

struct part_task {
	struct objfs_fs *fs;
	struct stream *st;
	int fd;
	unsigned number;
	uint64_t off;
	uint64_t len;
};

static void part_run(void *arg)
{
	struct part_task *t = arg;
	struct objfs_fd_source fdctx;
	struct objfs_source src;
	struct objfs_part part;
	int err;

	memset(&part, 0, sizeof(part));
	objfs_source_fd(&src, &fdctx, t->fd, t->off, t->len);
	err = objfs_store_mpu_part(t->fs->store, t->st->key, t->st->upload_id,
				   t->number, &src, &part);
	pthread_mutex_lock(&t->st->mu);
	if (err == 0)
		t->st->parts[t->number - 1] = part;
	else if (t->st->err == 0)
		t->st->err = err;
	t->st->inflight--;
	pthread_cond_broadcast(&t->st->cv);
	pthread_mutex_unlock(&t->st->mu);
	free(t);
}

/* Waits for the parts in flight; returns the first error. */
static int stream_wait(struct stream *st, unsigned max_inflight)
{
	int err;

	pthread_mutex_lock(&st->mu);
	while (st->inflight > max_inflight)
		pthread_cond_wait(&st->cv, &st->mu);
	err = st->err;
	pthread_mutex_unlock(&st->mu);
	return err;
}

/* Abandons the stream (its parts are aborted in the store). */
static void stream_abort(struct objfs_fs *fs, struct inode *in)
{
	struct stream *st = in->stream;

	if (st == NULL)
		return;
	stream_wait(st, 0);
	objfs_store_mpu_abort(fs->store, st->key, st->upload_id);
	in->stream = NULL;
	pthread_cond_destroy(&st->cv);
	pthread_mutex_destroy(&st->mu);
	free(st->upload_id);
	free(st->parts);
	free(st);
}

/* Sends every complete part of a sequentially written file (after a
 * write).  Errors only stop streaming: the close uploads the spool. */
static void stream_feed(struct objfs_fs *fs, struct inode *in)
{
	struct objfs_spool *sp = in->spool;
	struct stream *st = in->stream;
	uint64_t ps = fs->o.part_size;

	if (!in->seq || fs->pool == NULL || sp->size < (st ? st->off : 0) + ps)
		return;
	if (st == NULL) {
		struct objfs_meta meta = OBJFS_META_INIT;
		struct objfs_put_opts po = { &meta, NULL, false };
		int err;

		/* S3 allows 10,000 parts: stream files up to that many parts */
		st = calloc(1, sizeof(*st));
		if (st == NULL)
			return;
		st->parts = calloc(OBJFS_MPU_MAX_PARTS, sizeof(*st->parts));
		pthread_mutex_lock(&fs->lock);
		err = st->parts == NULL ? ENOMEM :
		      inode_key(fs, in, false, st->key, sizeof(st->key));
		st->fa.mode = in->mode;
		st->fa.uid = in->uid;
		st->fa.gid = in->gid;
		st->fa.mtime = in->mtime;
		pthread_mutex_unlock(&fs->lock);
		if (err == 0) {
			/* no mtime: the object's Last-Modified (its completion,
			 * about the close) stands for it, not the time the
			 * upload began */
			struct objfs_fattr fa = st->fa;

			fa.mtime.tv_nsec = -1;
			err = objfs_fattr_to_meta(&fa, &meta);
		}
		if (err == 0)
			err = objfs_store_mpu_create(fs->store, st->key, &po,
						     &st->upload_id);
		objfs_meta_release(&meta);
		if (err != 0) {
			free(st->parts);
			free(st);
			in->seq = false;
			return;
		}
		pthread_mutex_init(&st->mu, NULL);
		pthread_cond_init(&st->cv, NULL);
		in->stream = st;
		objfs_debug(fs->log, SUB, "streaming %s", st->key);
	}
	while (sp->size >= st->off + ps && st->n_parts + 1 < OBJFS_MPU_MAX_PARTS) {
		struct part_task *t;

		/* at most upload_parallel parts in flight: writers wait */
		if (stream_wait(st, fs->o.upload_parallel ? fs->o.upload_parallel - 1 : 0) != 0)
			return;
		t = calloc(1, sizeof(*t));
		if (t == NULL)
			return;
		t->fs = fs;
		t->st = st;
		t->fd = sp->fd;
		t->number = ++st->n_parts;
		t->off = st->off;
		t->len = ps;
		st->off += ps;
		pthread_mutex_lock(&st->mu);
		st->inflight++;
		pthread_mutex_unlock(&st->mu);
		if (objfs_pool_submit(fs->pool, NULL, part_run, t) != 0)
			part_run(t);
	}
}

/* Completes the stream with the tail of the spool.  0, or an errno after
 * which the caller uploads the whole spool instead. */
static int stream_finish(struct objfs_fs *fs, struct inode *in,
			 const struct objfs_fattr *fa,
			 struct objfs_obj_info *info)
{
	struct stream *st = in->stream;
	struct objfs_spool *sp = in->spool;
	int err;

	err = stream_wait(st, 0);
	if (err == 0 && sp->size > st->off) {
		struct part_task *t = calloc(1, sizeof(*t));

		if (t == NULL)
			return ENOMEM;
		t->fs = fs;
		t->st = st;
		t->fd = sp->fd;
		t->number = ++st->n_parts;
		t->off = st->off;
		t->len = sp->size - st->off;
		st->off = sp->size;
		pthread_mutex_lock(&st->mu);
		st->inflight++;
		pthread_mutex_unlock(&st->mu);
		part_run(t);
		err = stream_wait(st, 0);
	}
	if (err == 0)
		err = objfs_store_mpu_complete(fs->store, st->key, st->upload_id,
					       st->parts, st->n_parts, info);
	if (err != 0) {
		objfs_warn(fs->log, SUB, "streamed upload of %s: %s; sending "
			   "the file again", st->key, objfs_strerror(err));
		return err;
	}
	objfs_debug(fs->log, SUB, "streamed %s in %u parts", st->key, st->n_parts);
	free(st->upload_id);
	st->upload_id = NULL;
	pthread_cond_destroy(&st->cv);
	pthread_mutex_destroy(&st->mu);
	free(st->parts);
	free(st);
	in->stream = NULL;
	(void)fa;
	return 0;
}

/* Uploads a dirty inode: ns (read or write) and in->mu held. */
static int inode_sync(struct objfs_fs *fs, struct inode *in)
{
	struct objfs_meta meta = OBJFS_META_INIT;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_put_opts po = { NULL, NULL, false };
	struct objfs_fd_source fdctx;
	struct objfs_source src;
	struct objfs_fattr fa;
	char key[KEYBUF];
	bool linked, fix_attrs = false;
	int err;

	if (!in->dirty)
		return 0;
	pthread_mutex_lock(&fs->lock);
	linked = in->linked;
	err = linked ? inode_key(fs, in, false, key, sizeof(key)) : 0;
	fa.mode = in->mode;
	fa.uid = in->uid;
	fa.gid = in->gid;
	fa.mtime = in->mtime;
	pthread_mutex_unlock(&fs->lock);
	if (!linked) {
		/* unlinked: nobody can see the data again once closed */
		stream_abort(fs, in);
		in->dirty = false;
		return 0;
	}
	if (err != 0)
		return err;
	if (in->stream != NULL) {
		bool same_key = strcmp(in->stream->key, key) == 0, same;

		same = same_key && !in->stream->attrs_changed &&
		       in->stream->fa.mode == fa.mode &&
		       in->stream->fa.uid == fa.uid &&
		       in->stream->fa.gid == fa.gid;
		if (same_key) {
			/* attributes changed while streaming follow in a
			 * copy once the upload is complete */
			if (stream_finish(fs, in, &fa, &info) == 0) {
				fix_attrs = !same;
				goto done;
			}
			objfs_obj_info_release(&info);
		}
		if (in->stream != NULL && in->stream->punched > 0) {
			/* the parts hold bytes the spool gave up: the stream
			 * must complete (it stays for a retry if it fails) */
			if (!same_key) {
				objfs_error(fs->log, SUB, "streamed %s was renamed "
					    "to %s before it completed",
					    in->stream->key, key);
				return EIO;
			}
			objfs_error(fs->log, SUB, "completing %s failed; the "
				    "close reports it", key);
			return EIO;
		}
		stream_abort(fs, in);
	}
	if (in->spool == NULL) {
		err = spool_ensure(fs, in);
		if (err != 0)
			return err;
	}
	err = spool_fetch(fs, in, 0, in->spool->size);
	if (err != 0)
		return err;
	err = objfs_fattr_to_meta(&fa, &meta);
	if (err != 0)
		goto out;
	po.meta = &meta;
	objfs_source_fd(&src, &fdctx, in->spool->fd, 0, in->spool->size);
	err = objfs_store_upload(fs->store, key, &src, &po, fs->o.part_size,
				 fs->o.upload_parallel, &info);
	if (err != 0) {
		objfs_error(fs->log, SUB, "uploading %s (%" PRIu64 " bytes): %s",
			    key, in->spool->size, objfs_strerror(err));
		goto out;
	}
done:
	/* appends to an empty stored file may stream again */
	in->seq = in->spool->size == 0;
	pthread_mutex_lock(&fs->lock);
	if (!in->in_store && fs->scan_done) {
		fs->objects++;
		fs->scan_obj_delta++;
	}
	in->in_store = true;
	in->stored_size = in->spool->size;
	snprintf(in->etag, sizeof(in->etag), "%s", info.etag);
	snprintf(in->cache_etag, sizeof(in->cache_etag), "%s", info.etag);
	in->attr_time = now_mono();
	in->dirty = false;
	in->spool->base_size = in->spool->size;
	snprintf(in->spool->base_etag, sizeof(in->spool->base_etag), "%s",
		 info.etag);
	pthread_mutex_unlock(&fs->lock);
	objfs_debug(fs->log, SUB, "uploaded %s", key);
	if (fix_attrs) {
		err = store_attrs(fs, in);
		pthread_mutex_lock(&fs->lock);
		snprintf(in->spool->base_etag, sizeof(in->spool->base_etag),
			 "%s", in->etag);
		pthread_mutex_unlock(&fs->lock);
	}
out:
	objfs_meta_release(&meta);
	objfs_obj_info_release(&info);
	return err;
}

/* Takes ns (read) and in->mu, uploads, releases. */
static int inode_sync_locked_ns(struct objfs_fs *fs, struct inode *in)
{
	int err;

	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	err = inode_sync(fs, in);
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	return err;
}


/* ---- the spool bound (in->mu held) ----------------------------------- */

/* Recounts the disk blocks of in's spool into fs->spool_used. */
static void spool_account(struct objfs_fs *fs, struct inode *in)
{
	uint64_t disk = in->spool != NULL ? objfs_spool_disk(in->spool) : 0;

	pthread_mutex_lock(&fs->lock);
	fs->spool_used = fs->spool_used - in->spool_disk + disk;
	in->spool_disk = disk;
	pthread_mutex_unlock(&fs->lock);
}

/* Drops the spool of a clean file (in->mu), only when nobody has it open
 * if idle_only: reads go to the store, a later write starts a new spool
 * over the stored object. */
static void spool_drop(struct objfs_fs *fs, struct inode *in, bool idle_only)
{
	struct objfs_spool *sp = NULL;

	pthread_mutex_lock(&fs->lock);
	if (!in->dirty && in->spool != NULL && (!idle_only || in->nopen == 0)) {
		sp = in->spool;
		in->spool = NULL;
		fs->spool_used -= in->spool_disk;
		in->spool_disk = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	objfs_spool_destroy(sp);
}

/* The spools hold more than spool_limit (fs->lock). */
static bool spool_over_locked(const struct objfs_fs *fs)
{
	return fs->o.spool_limit > 0 && fs->spool_used > fs->o.spool_limit;
}

static bool spool_over(struct objfs_fs *fs)
{
	bool over;

	pthread_mutex_lock(&fs->lock);
	over = spool_over_locked(fs);
	if (!over)
		fs->relieved_at = 0;
	pthread_mutex_unlock(&fs->lock);
	return over;
}

/* Frees the spool bytes of a streaming file whose parts are all sent:
 * waits for the parts in flight, then punches what they cover. */
static void stream_punch(struct objfs_fs *fs, struct inode *in)
{
	struct stream *st = in->stream;
	int err;

	if (st == NULL || stream_wait(st, 0) != 0 || st->off <= st->punched)
		return;
	err = objfs_spool_punch(in->spool, st->punched, st->off);
	if (err == 0)
		st->punched = st->off;
	else
		objfs_warn(fs->log, SUB, "freeing spool space of %s: %s",
			   st->key, objfs_strerror(err));
	spool_account(fs, in);
}

/* Makes room in the other files' spools (ns read held; in->mu held, so
 * theirs are only tried): streams give up sent parts, dirty files are
 * uploaded early, clean spools are dropped; largest first. */
static void spool_relieve_others(struct objfs_fs *fs, struct inode *in)
{
	struct inode *cand[16], *x;
	size_t n = 0, i, j;
	unsigned b;

	/* the 16 largest spools, kept sorted largest first (pinned) */
	pthread_mutex_lock(&fs->lock);
	for (b = 0; b < HASH_SIZE; b++) {
		for (x = fs->ino_tab[b]; x != NULL; x = x->ino_next) {
			if (x == in || x->spool_disk == 0 ||
			    (n == 16 && x->spool_disk <= cand[15]->spool_disk))
				continue;
			if (n == 16) {
				cand[15]->refs--;
				maybe_free(fs, cand[15]);
				n--;
			}
			for (j = n; j > 0 && cand[j - 1]->spool_disk < x->spool_disk; j--)
				cand[j] = cand[j - 1];
			x->refs++;
			cand[j] = x;
			n++;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++) {
		x = cand[i];
		if (spool_over(fs) && pthread_mutex_trylock(&x->mu) == 0) {
			if (x->stream != NULL)
				stream_punch(fs, x);
			else if (inode_sync(fs, x) == 0)    /* 0 at once if clean */
				spool_drop(fs, x, false);
			pthread_mutex_unlock(&x->mu);
		}
		unpin(fs, x);
	}
}

/* After a write to in (ns read and in->mu held): while the spools hold
 * more than spool_limit, free what is safe to free.  A sequential writer
 * waits for its parts and drops them from its spool; other files are
 * relieved; last, this file is uploaded now and continues from the store.
 * The bound is soft by one write and the parts in flight. */
static void spool_relieve(struct objfs_fs *fs, struct inode *in)
{
	uint64_t step = fs->o.spool_limit / 16;
	bool others, own;

	if (!spool_over(fs))
		return;
	stream_punch(fs, in);
	/* the others are looked at again only after the spools grew by a
	 * sixteenth of the limit (they may be busy: small writes must not
	 * each scan the inode table) */
	pthread_mutex_lock(&fs->lock);
	others = spool_over_locked(fs) && fs->spool_used >= fs->relieved_at + step;
	pthread_mutex_unlock(&fs->lock);
	if (others) {
		spool_relieve_others(fs, in);
		pthread_mutex_lock(&fs->lock);
		fs->relieved_at = fs->spool_used;
		pthread_mutex_unlock(&fs->lock);
	}
	/* this file goes up early only when its spool is worth it: an
	 * upload per small write would send the file again and again */
	pthread_mutex_lock(&fs->lock);
	own = spool_over_locked(fs) && in->spool_disk >= fs->o.spool_limit / 8;
	pthread_mutex_unlock(&fs->lock);
	if (!own || in->stream != NULL)
		return;
	objfs_debug(fs->log, SUB, "spool over %" PRIu64 " bytes: uploading "
		    "inode %" PRIu64 " early", fs->o.spool_limit,
		    (uint64_t)in->ino);
	if (in->dirty && inode_sync(fs, in) == 0)
		spool_drop(fs, in, false);
}

/* Ends the stream of in before a change that is not an append (ns and
 * in->mu held): abandoned, or completed when its parts hold bytes the
 * spool no longer has. */
static int stream_stop(struct objfs_fs *fs, struct inode *in)
{
	if (in->stream != NULL && in->stream->punched > 0)
		return inode_sync(fs, in);
	stream_abort(fs, in);
	return 0;
}

/* The FUSE boundary: store errors a file system call cannot mean
 * (unreachable, throttled, a bad range) become EIO; errors are negated
 * here and nowhere else (libfuse's reply does it). */
static int fs_errno(int err)
{
	switch (err) {
	case 0: case ENOENT: case EACCES: case EPERM: case EIO: case ENOSPC:
	case EEXIST: case ENOTEMPTY: case ENOTDIR: case EISDIR: case EINVAL:
	case ENAMETOOLONG: case EROFS: case ENOMEM: case EFBIG: case EXDEV:
	case ENOSYS: case ENOTSUP: case EDQUOT: case EINTR:
		return err;
	default:
		return EIO;
	}
}

static void reply_err(fuse_req_t req, int err)
{
	fuse_reply_err(req, fs_errno(err));
}

/* ---- FUSE: init, lookup, forget, getattr ------------------------------ */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct objfs_fs *fs = userdata;

	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* we compare ETags ourselves on open */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	conn->max_readahead = 1U << 20;
	objfs_info(fs->log, SUB, "mounted (max_write %u, max_readahead %u)",
		   conn->max_write, conn->max_readahead);
}

static void op_destroy(void *userdata)
{
	struct objfs_fs *fs = userdata;

	objfs_fs_sync_all(fs);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct objfs_fs *fs = req_fs(req);
	struct fuse_entry_param e;
	struct inode *dir, *in = NULL;
	int err;

	dir = pin_ino(fs, parent);
	if (dir == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	err = do_lookup(fs, dir, name, false, &in);
	if (err == ENOENT) {
		memset(&e, 0, sizeof(e));
		e.ino = 0;
		e.entry_timeout = fs->o.neg_ttl;
		fuse_reply_entry(req, &e);
	} else if (err != 0) {
		reply_err(req, err);
	} else {
		pthread_mutex_lock(&fs->lock);
		fill_entry(fs, in, &e);
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_entry(req, &e);
	}
	unpin(fs, dir);
}

static void forget_one(struct objfs_fs *fs, fuse_ino_t ino, uint64_t n)
{
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	in = find_ino(fs, ino);
	if (in != NULL && in != fs->root) {
		in->nlookup = n > in->nlookup ? 0 : in->nlookup - n;
		maybe_free(fs, in);
	}
	pthread_mutex_unlock(&fs->lock);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(req_fs(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		forget_one(req_fs(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* Re-reads the attributes of a clean, stale inode from the store. */
static int revalidate(struct objfs_fs *fs, struct inode *in, bool force)
{
	char key[KEYBUF];
	struct probe p;
	bool need;
	int err;

	pthread_mutex_lock(&fs->lock);
	need = in != fs->root && !in->dirty && in->spool == NULL &&
	       in->linked && (in->in_store || S_ISDIR(in->mode)) &&
	       (force || now_mono() - in->attr_time >= fs->o.attr_ttl);
	err = need ? inode_key(fs, in, false, key, sizeof(key)) : 0;
	pthread_mutex_unlock(&fs->lock);
	if (!need || err != 0)
		return err;
	err = probe_key(fs, key, S_ISDIR(in->mode), &p);
	pthread_mutex_lock(&fs->lock);
	if (err == 0 && same_type(p.fa.mode, in->mode))
		apply_probe(fs, in, &p);
	else if (err == 0)
		err = ESTALE;
	pthread_mutex_unlock(&fs->lock);
	return err;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = pin_ino(fs, ino);
	struct stat st;
	int err;

	if (in == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	err = revalidate(fs, in, false);
	if (err == 0 || (fi != NULL && err == ENOENT)) {
		pthread_mutex_lock(&fs->lock);
		fill_stat(fs, in, &st);
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_attr(req, &st, fs->o.attr_ttl);
	} else {
		reply_err(req, err == ESTALE ? ENOENT : err);
	}
	unpin(fs, in);
}

/* ---- metadata changes ------------------------------------------------- */

/* Stores the attributes of a clean file, symlink or directory (ns read). */
static int store_attrs(struct objfs_fs *fs, struct inode *in)
{
	struct objfs_meta meta = OBJFS_META_INIT;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_fattr fa;
	char key[KEYBUF];
	bool dir, root, in_store;
	int err;

	pthread_mutex_lock(&fs->lock);
	root = in == fs->root;
	dir = S_ISDIR(in->mode);
	in_store = in->in_store;
	fa.mode = in->mode;
	fa.uid = in->uid;
	fa.gid = in->gid;
	fa.mtime = in->mtime;
	err = root ? 0 : inode_key(fs, in, true, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		return err;
	if (root)
		snprintf(key, sizeof(key), "%s", ROOT_ATTR_KEY);
	err = objfs_fattr_to_meta(&fa, &meta);
	if (err != 0)
		goto out;
	if (dir || !in_store) {
		struct objfs_put_opts po = { &meta, NULL, false };
		struct objfs_source src;

		objfs_source_mem(&src, "", 0);
		err = objfs_store_put(fs->store, key, &src, &po, &info);
	} else {
		struct objfs_copy_opts co = { OBJFS_META_REPLACE, &meta, NULL, NULL };

		err = objfs_store_copy(fs->store, key, key, &co, &info);
	}
	if (err != 0)
		goto out;
	pthread_mutex_lock(&fs->lock);
	if (!root)
		in->in_store = true;
	if (!dir && !root) {
		/* same bytes, new ETag: the page cache stays valid */
		if (strcmp(in->cache_etag, in->etag) == 0)
			snprintf(in->cache_etag, sizeof(in->cache_etag), "%s",
				 info.etag);
		snprintf(in->etag, sizeof(in->etag), "%s", info.etag);
	}
	in->attr_time = now_mono();
	pthread_mutex_unlock(&fs->lock);
out:
	objfs_meta_release(&meta);
	objfs_obj_info_release(&info);
	return err;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = pin_ino(fs, ino);
	struct stat st;
	bool has_data, meta_change;
	int err = 0;

	if (in == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	if (fs->o.read_only) {
		err = EROFS;
		goto out;
	}
	meta_change = to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
				FUSE_SET_ATTR_GID | FUSE_SET_ATTR_MTIME |
				FUSE_SET_ATTR_MTIME_NOW);
	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (!S_ISREG(in->mode)) {
			err = S_ISDIR(in->mode) ? EISDIR : EINVAL;
			goto out_unlock;
		}
		err = spool_ensure(fs, in);
		if (err == 0)
			err = charge(fs, in, (uint64_t)attr->st_size);
		if (err == 0 && attr->st_size == 0)
			stream_abort(fs, in);
		else if (err == 0)
			err = stream_stop(fs, in);
		if (err == 0) {
			err = objfs_spool_truncate(in->spool, (uint64_t)attr->st_size);
			in->seq = err == 0 && attr->st_size == 0;
			spool_account(fs, in);
		}
		if (err != 0)
			goto out_unlock;
		pthread_mutex_lock(&fs->lock);
		in->size = in->spool->size;
		in->dirty = true;
		in->mtime = now_real();
		pthread_mutex_unlock(&fs->lock);
	}
	pthread_mutex_lock(&fs->lock);
	if (to_set & FUSE_SET_ATTR_MODE)
		in->mode = (in->mode & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		in->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		in->gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		in->mtime = now_real();
	else if (to_set & FUSE_SET_ATTR_MTIME)
		in->mtime = attr->st_mtim;
	in->ctime = now_real();
	has_data = in->dirty || in->spool != NULL;
	if (meta_change && has_data)
		in->dirty = true;
	if (meta_change && in->stream != NULL)
		in->stream->attrs_changed = true;
	pthread_mutex_unlock(&fs->lock);
	if (in->dirty) {
		/* without a handle no close will follow: save now */
		if (fi == NULL)
			err = inode_sync(fs, in);
	} else if (meta_change) {
		err = store_attrs(fs, in);
	}
out_unlock:
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
out:
	if (err != 0) {
		reply_err(req, err);
	} else {
		pthread_mutex_lock(&fs->lock);
		fill_stat(fs, in, &st);
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_attr(req, &st, fs->o.attr_ttl);
	}
	unpin(fs, in);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = pin_ino(fs, ino);
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(LINK_MAX_LEN);
	struct objfs_get_opts go = OBJFS_GET_ALL;
	struct objfs_sink sink;
	char key[KEYBUF], *target = NULL;
	int err;

	if (in == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	if (!S_ISLNK(in->mode))
		err = EINVAL;
	else if (in->link != NULL)
		err = (target = strdup(in->link)) != NULL ? 0 : ENOMEM;
	else
		err = inode_key(fs, in, false, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0 || target != NULL)
		goto out;
	objfs_sink_membuf(&sink, &mb);
	err = objfs_store_get(fs->store, key, &go, &sink, NULL);
	if (err == ERANGE)
		err = 0;
	if (err != 0)
		goto out;
	target = strndup(mb.data != NULL ? mb.data : "", mb.len);
	if (target == NULL) {
		err = ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&fs->lock);
	if (in->link == NULL)
		in->link = strdup(target);
	pthread_mutex_unlock(&fs->lock);
out:
	if (err != 0)
		reply_err(req, err == EFBIG ? ENAMETOOLONG : err);
	else
		fuse_reply_readlink(req, target);
	free(target);
	objfs_membuf_release(&mb);
	unpin(fs, in);
}

/* ---- names: mkdir, symlink, create, unlink, rmdir --------------------- */

static int new_name_check(struct objfs_fs *fs, struct inode *parent,
			  const char *name)
{
	int err;

	if (fs->o.read_only)
		return EROFS;
	err = objfs_name_check(name);
	if (err != 0)
		return err;
	if (objfs_name_reserved(is_root(fs, parent), name))
		return EPERM;
	if (!S_ISDIR(parent->mode))
		return ENOTDIR;
	return 0;
}

/* Puts a zero-byte object (a marker or a symlink body) with attributes. */
static int put_with_attrs(struct objfs_fs *fs, const char *key,
			  const struct objfs_fattr *fa, const void *body,
			  size_t len, struct objfs_obj_info *info)
{
	struct objfs_meta meta = OBJFS_META_INIT;
	struct objfs_put_opts po = { NULL, NULL, false };
	struct objfs_source src;
	int err;

	err = objfs_fattr_to_meta(fa, &meta);
	if (err == 0) {
		po.meta = &meta;
		objfs_source_mem(&src, body, len);
		err = objfs_store_put(fs->store, key, &src, &po, info);
	}
	objfs_meta_release(&meta);
	return err;
}

/* Creates an object-backed name (mkdir, symlink) and replies the entry. */
static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, const char *link)
{
	struct objfs_fs *fs = req_fs(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct fuse_entry_param e;
	struct objfs_fattr fa;
	struct inode *dir, *in;
	char dkey[KEYBUF], key[KEYBUF];
	int err;

	dir = pin_ino(fs, parent);
	if (dir == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	err = new_name_check(fs, dir, name);
	if (err != 0)
		goto out;
	fa.mode = mode;
	fa.uid = ctx->uid;
	fa.gid = ctx->gid;
	fa.mtime = now_real();
	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&fs->lock);
	if (find_child(fs, dir, name) != NULL)
		err = EEXIST;
	else
		err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	pthread_mutex_unlock(&fs->lock);
	if (err == 0)
		err = objfs_key_join(dkey, name, S_ISDIR(mode), key, sizeof(key));
	if (err == 0)
		err = put_with_attrs(fs, key, &fa, link != NULL ? link : "",
				     link != NULL ? strlen(link) : 0, &info);
	if (err != 0) {
		pthread_rwlock_unlock(&fs->ns);
		goto out;
	}
	pthread_mutex_lock(&fs->lock);
	in = find_child(fs, dir, name);
	if (in != NULL) {
		/* raced with another creator; the object is ours now */
		struct inode *par = detach(fs, in);

		maybe_free(fs, in);
		maybe_free(fs, par);
	}
	in = inode_new(fs, dir, name, mode);
	if (in == NULL) {
		err = ENOMEM;
	} else {
		in->uid = fa.uid;
		in->gid = fa.gid;
		in->mtime = fa.mtime;
		in->ctime = fa.mtime;
		in->in_store = true;
		in->size = S_ISLNK(mode) ? strlen(link) : 0;
		in->stored_size = in->size;
		in->charged = in->size;
		fs->used += (int64_t)in->size;
		fs->objects++;
		fs->scan_obj_delta++;
		snprintf(in->etag, sizeof(in->etag), "%s", info.etag);
		in->attr_time = now_mono();
		if (link != NULL)
			in->link = strdup(link);
		in->nlookup++;
		fill_entry(fs, in, &e);
		if (S_ISDIR(mode)) {
			/* known empty: lookups in it need no request for
			 * dir_ttl (files created in it are noted) */
			struct dirsnap *s = calloc(1, sizeof(*s));

			if (s != NULL) {
				s->refs = 1;
				s->time = now_mono();
				in->snap = s;
			}
		}
	}
	snap_note(dir, name, true, S_ISDIR(mode));
	pthread_mutex_unlock(&fs->lock);
	pthread_rwlock_unlock(&fs->ns);
out:
	objfs_obj_info_release(&info);
	if (err != 0)
		reply_err(req, err);
	else
		fuse_reply_entry(req, &e);
	unpin(fs, dir);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | (mode & 07777), NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	if (strlen(link) >= LINK_MAX_LEN) {
		reply_err(req, ENAMETOOLONG);
		return;
	}
	make_node(req, parent, name, S_IFLNK | 0777, link);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	/* objects have one name: no hard links */
	reply_err(req, EPERM);
}

/* Keeps an implied directory alive when its last entry goes away, by
 * writing its marker (ns held). */
static void keep_dir(struct objfs_fs *fs, struct inode *dir)
{
	struct objfs_fattr fa;
	char dkey[KEYBUF];
	bool need, used = true;
	int err;

	pthread_mutex_lock(&fs->lock);
	need = dir != fs->root && dir->linked && !dir->in_store;
	err = need ? inode_key(fs, dir, true, dkey, sizeof(dkey)) : 0;
	fa.mode = dir->mode;
	fa.uid = dir->uid;
	fa.gid = dir->gid;
	fa.mtime = dir->mtime;
	pthread_mutex_unlock(&fs->lock);
	if (!need || err != 0)
		return;
	if (prefix_used(fs, dkey, false, &used) != 0 || used)
		return;
	if (put_with_attrs(fs, dkey, &fa, "", 0, NULL) == 0) {
		pthread_mutex_lock(&fs->lock);
		dir->in_store = true;
		pthread_mutex_unlock(&fs->lock);
	}
}

/* Makes an open file's data local before its object goes away, so open
 * handles can still read it (in->mu not held; takes it). */
static int keep_open_data(struct objfs_fs *fs, struct inode *in)
{
	bool open;
	int err = 0;

	pthread_mutex_lock(&in->mu);
	pthread_mutex_lock(&fs->lock);
	open = in->nopen > 0 && S_ISREG(in->mode);
	pthread_mutex_unlock(&fs->lock);
	if (open) {
		err = spool_ensure(fs, in);
		if (err == 0)
			err = spool_fetch(fs, in, 0, in->spool->size);
	}
	pthread_mutex_unlock(&in->mu);
	return err;
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *dir, *in = NULL, *par;
	char key[KEYBUF];
	bool in_store;
	int err;

	dir = pin_ino(fs, parent);
	if (dir == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	err = new_name_check(fs, dir, name);
	if (err == EPERM)
		err = ENOENT;
	if (err != 0)
		goto out;
	pthread_rwlock_rdlock(&fs->ns);
	err = do_lookup(fs, dir, name, true, &in);
	if (err == 0 && S_ISDIR(in->mode))
		err = EISDIR;
	if (err == 0)
		err = keep_open_data(fs, in);
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		in_store = in->in_store;
		err = inode_key(fs, in, false, key, sizeof(key));
		pthread_mutex_unlock(&fs->lock);
	}
	if (err == 0 && in_store)
		err = objfs_store_del(fs->store, key);
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		if (in_store) {
			fs->objects--;
			fs->scan_obj_delta--;
		}
		charge_force(fs, in, 0);
		par = detach(fs, in);
		in->ctime = now_real();
		snap_note(par, name, false, false);
		pthread_mutex_unlock(&fs->lock);
		keep_dir(fs, dir);
	}
	pthread_rwlock_unlock(&fs->ns);
out:
	reply_err(req, err);
	unpin(fs, in);
	unpin(fs, dir);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *dir, *in = NULL, *par;
	char dkey[KEYBUF];
	bool used = false, local_children;
	int err;

	dir = pin_ino(fs, parent);
	if (dir == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	err = new_name_check(fs, dir, name);
	if (err == EPERM)
		err = ENOENT;
	if (err != 0)
		goto out;
	pthread_rwlock_rdlock(&fs->ns);
	err = do_lookup(fs, dir, name, true, &in);
	if (err == 0 && !S_ISDIR(in->mode))
		err = ENOTDIR;
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		err = inode_key(fs, in, true, dkey, sizeof(dkey));
		local_children = false;
		for (par = in->child; par != NULL; par = par->sib_next) {
			if (par->linked && (par->dirty || !par->in_store))
				local_children = true;
		}
		pthread_mutex_unlock(&fs->lock);
		if (local_children)
			err = ENOTEMPTY;
	}
	if (err == 0)
		err = prefix_used(fs, dkey, true, &used);
	if (err == 0 && used)
		err = ENOTEMPTY;
	if (err == 0)
		err = objfs_store_del(fs->store, dkey);
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		if (in->in_store) {
			fs->objects--;
			fs->scan_obj_delta--;
		}
		par = detach(fs, in);
		snap_note(par, name, false, true);
		snap_drop(in);
		pthread_mutex_unlock(&fs->lock);
		keep_dir(fs, dir);
	}
	pthread_rwlock_unlock(&fs->ns);
out:
	reply_err(req, err);
	unpin(fs, in);
	unpin(fs, dir);
}

/* ---- rename ----------------------------------------------------------- */

struct copy_task {
	struct objfs_fs *fs;
	char *src;
	char *dst;
	int err;
};

static void copy_run(void *arg)
{
	struct copy_task *t = arg;
	struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };

	t->err = objfs_store_copy(t->fs->store, t->src, t->dst, &co, NULL);
}

struct del_task {
	struct objfs_fs *fs;
	const char **keys;
	size_t n;
	size_t failed;
	int err;
};

static void del_run(void *arg)
{
	struct del_task *t = arg;

	t->failed = 0;
	t->err = objfs_store_del_many(t->fs->store, t->keys, t->n, &t->failed);
	if (t->err != 0 && t->failed == 0)
		t->failed = t->n;
}

/* Deletes keys in parallel batches of DEL_BATCH: some servers (Swift)
 * take long enough over a 1,000-key request to hit transfer timeouts. */
#define DEL_BATCH 100
static int del_batches(struct objfs_fs *fs, const char **keys, size_t n,
		       size_t *failed)
{
	size_t nb = (n + DEL_BATCH - 1) / DEL_BATCH, i;
	struct del_task *t;
	struct objfs_group g;
	int err = 0;

	*failed = 0;
	if (n == 0)
		return 0;
	t = calloc(nb, sizeof(*t));
	if (t == NULL)
		return objfs_store_del_many(fs->store, keys, n, failed);
	objfs_group_init(&g);
	for (i = 0; i < nb; i++) {
		t[i].fs = fs;
		t[i].keys = keys + i * DEL_BATCH;
		t[i].n = n - i * DEL_BATCH < DEL_BATCH ? n - i * DEL_BATCH : DEL_BATCH;
		if (objfs_pool_submit(fs->pool, &g, del_run, &t[i]) != 0)
			del_run(&t[i]);
	}
	objfs_group_wait(&g);
	for (i = 0; i < nb; i++) {
		*failed += t[i].failed;
		if (err == 0)
			err = t[i].err;
	}
	free(t);
	return err;
}

/* Uploads every dirty inode at or under top (ns held for writing). */
static int sync_under(struct objfs_fs *fs, struct inode *top)
{
	struct inode **list = NULL, *in, *p;
	size_t n = 0, cap = 0, i;
	unsigned h;
	int err = 0, e;

	pthread_mutex_lock(&fs->lock);
	for (h = 0; h < HASH_SIZE; h++) {
		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next) {
			if (!in->dirty)
				continue;
			for (p = in; p != NULL && p != top; p = p->parent)
				;
			if (p == NULL)
				continue;
			if (n == cap) {
				struct inode **nl;

				cap = cap ? cap * 2 : 16;
				nl = realloc(list, cap * sizeof(*nl));
				if (nl == NULL) {
					err = ENOMEM;
					goto out_locked;
				}
				list = nl;
			}
			in->refs++;
			list[n++] = in;
		}
	}
out_locked:
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&list[i]->mu);
		e = inode_sync(fs, list[i]);
		pthread_mutex_unlock(&list[i]->mu);
		if (err == 0)
			err = e;
		unpin(fs, list[i]);
	}
	free(list);
	return err;
}

/* Copies every key under sp to dp (both ending in "/"), all or nothing:
 * on failure the copies made are deleted and the source is untouched; on
 * success the source keys are deleted.  (ns held for writing) */
static int rename_tree(struct objfs_fs *fs, const char *sp, const char *dp)
{
	struct objfs_list_req rq = { sp, NULL, NULL, NULL, 1000 };
	struct copy_task *tasks = NULL;
	size_t n = 0, cap = 0, i, spl = strlen(sp), failed = 0;
	char *token = NULL;
	struct objfs_group g;
	int err = 0;

	do {
		struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;

		rq.continuation = token;
		err = objfs_store_list(fs->store, &rq, &pg);
		free(token);
		token = NULL;
		if (err != 0)
			goto out;
		for (i = 0; i < pg.n_entries && err == 0; i++) {
			char dst[KEYBUF];
			struct copy_task *t;

			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				t = realloc(tasks, cap * sizeof(*t));
				if (t == NULL) {
					err = ENOMEM;
					break;
				}
				tasks = t;
			}
			err = objfs_key_join(dp, pg.entries[i].key + spl, false,
					     dst, sizeof(dst));
			if (err != 0)
				break;
			t = &tasks[n];
			t->fs = fs;
			t->err = 0;
			t->src = strdup(pg.entries[i].key);
			t->dst = strdup(dst);
			n++;
			if (t->src == NULL || t->dst == NULL)
				err = ENOMEM;
		}
		token = pg.next;
		pg.next = NULL;
		objfs_list_page_release(&pg);
	} while (err == 0 && token != NULL);
	if (err != 0)
		goto out;

	objfs_group_init(&g);
	for (i = 0; i < n; i++) {
		if (objfs_pool_submit(fs->pool, &g, copy_run, &tasks[i]) != 0)
			copy_run(&tasks[i]);
	}
	objfs_group_wait(&g);
	for (i = 0; i < n && err == 0; i++)
		err = tasks[i].err;
	if (err != 0) {
		const char **keys = calloc(n ? n : 1, sizeof(*keys));

		objfs_error(fs->log, SUB, "renaming %s to %s: %s; undoing",
			    sp, dp, objfs_strerror(err));
		if (keys != NULL) {
			size_t k = 0;

			for (i = 0; i < n; i++) {
				if (tasks[i].err == 0)
					keys[k++] = tasks[i].dst;
			}
			del_batches(fs, keys, k, &failed);
			free(keys);
		}
		goto out;
	}
	{
		const char **keys = calloc(n ? n : 1, sizeof(*keys));

		if (keys == NULL) {
			err = ENOMEM;
			goto out;
		}
		for (i = 0; i < n; i++)
			keys[i] = tasks[i].src;
		err = del_batches(fs, keys, n, &failed);
		free(keys);
		if (err != 0)
			objfs_error(fs->log, SUB, "renamed %s to %s but %zu old "
				    "keys remain: %s", sp, dp, failed,
				    objfs_strerror(err));
	}
out:
	for (i = 0; i < n; i++) {
		free(tasks[i].src);
		free(tasks[i].dst);
	}
	free(tasks);
	free(token);
	return err;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *sdir, *ddir, *src = NULL, *dst = NULL, *par;
	char skey[KEYBUF], dkey[KEYBUF], ddkey[KEYBUF];
	bool used, pending, is_dir;
	int err;

	sdir = pin_ino(fs, parent);
	ddir = pin_ino(fs, newparent);
	if (sdir == NULL || ddir == NULL) {
		err = ENOENT;
		goto out_nolock;
	}
	if (flags & ~RENAME_NOREPLACE) {
		err = EINVAL;
		goto out_nolock;
	}
	err = new_name_check(fs, ddir, newname);
	if (err == 0 && objfs_name_reserved(is_root(fs, sdir), name))
		err = ENOENT;
	if (err != 0)
		goto out_nolock;
	pthread_rwlock_wrlock(&fs->ns);
	err = do_lookup(fs, sdir, name, true, &src);
	if (err != 0)
		goto out;
	err = do_lookup(fs, ddir, newname, true, &dst);
	if (err == ENOENT) {
		dst = NULL;
		err = 0;
	}
	if (err != 0)
		goto out;
	if (dst == src)
		goto out;       /* same name: nothing to do */
	is_dir = S_ISDIR(src->mode);
	if (dst != NULL) {
		if (flags & RENAME_NOREPLACE)
			err = EEXIST;
		else if (is_dir && !S_ISDIR(dst->mode))
			err = ENOTDIR;
		else if (!is_dir && S_ISDIR(dst->mode))
			err = EISDIR;
		if (err != 0)
			goto out;
	}
	pthread_mutex_lock(&fs->lock);
	err = inode_key(fs, src, true, skey, sizeof(skey));
	if (err == 0)
		err = inode_key(fs, ddir, true, ddkey, sizeof(ddkey));
	if (err == 0)
		err = objfs_key_join(ddkey, newname, is_dir, dkey, sizeof(dkey));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		goto out;
	if (dst != NULL && S_ISDIR(dst->mode)) {
		err = prefix_used(fs, dkey, true, &used);
		if (err == 0 && used)
			err = ENOTEMPTY;
		pthread_mutex_lock(&fs->lock);
		if (err == 0 && dst->child != NULL) {
			for (par = dst->child; par != NULL; par = par->sib_next)
				if (par->linked && (par->dirty || !par->in_store))
					err = ENOTEMPTY;
		}
		pthread_mutex_unlock(&fs->lock);
		if (err == 0)
			err = objfs_store_del(fs->store, dkey);
		if (err != 0)
			goto out;
	} else if (dst != NULL) {
		err = keep_open_data(fs, dst);
		if (err != 0)
			goto out;
	}

	if (is_dir) {
		err = sync_under(fs, src);
		if (err == 0)
			err = rename_tree(fs, skey, dkey);
	} else {
		pthread_mutex_lock(&src->mu);
		pthread_mutex_lock(&fs->lock);
		pending = !src->in_store;
		pthread_mutex_unlock(&fs->lock);
		if (!pending) {
			struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };
			struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;

			err = inode_sync(fs, src);
			if (err == 0)
				err = objfs_store_copy(fs->store, skey, dkey, &co,
						       &info);
			if (err == 0)
				err = objfs_store_del(fs->store, skey);
			if (err == 0) {
				pthread_mutex_lock(&fs->lock);
				if (strcmp(src->cache_etag, src->etag) == 0)
					snprintf(src->cache_etag,
						 sizeof(src->cache_etag), "%s",
						 info.etag);
				snprintf(src->etag, sizeof(src->etag), "%s",
					 info.etag);
				if (src->spool != NULL)
					snprintf(src->spool->base_etag,
						 sizeof(src->spool->base_etag),
						 "%s", info.etag);
				pthread_mutex_unlock(&fs->lock);
			}
			objfs_obj_info_release(&info);
		} else if (dst != NULL && dst->in_store) {
			/* the pending file will be uploaded under the new name */
			err = objfs_store_del(fs->store, dkey);
		}
		pthread_mutex_unlock(&src->mu);
	}
	if (err != 0)
		goto out;

	pthread_mutex_lock(&fs->lock);
	if (dst != NULL) {
		if (dst->in_store && !S_ISDIR(dst->mode)) {
			fs->objects--;
			fs->scan_obj_delta--;
		}
		charge_force(fs, dst, 0);
		detach(fs, dst);
	}
	if (src->linked) {
		char *nn = strdup(newname);

		if (nn == NULL) {
			err = ENOMEM;
		} else {
			name_unhash(fs, src);
			sib_unlink(src);
			src->parent->refs--;
			free(src->name);
			src->name = nn;
			src->parent = ddir;
			ddir->refs++;
			sib_link(ddir, src);
			name_hash(fs, src);
			src->ctime = now_real();
		}
	}
	snap_note(sdir, name, false, is_dir);
	snap_note(ddir, newname, true, is_dir);
	pthread_mutex_unlock(&fs->lock);
	keep_dir(fs, sdir);
out:
	pthread_rwlock_unlock(&fs->ns);
out_nolock:
	reply_err(req, err);
	unpin(fs, dst);
	unpin(fs, src);
	unpin(fs, sdir);
	unpin(fs, ddir);
}

/* ---- open, create, release -------------------------------------------- */

static struct fhandle *fh_new(struct objfs_fs *fs, struct inode *in)
{
	struct fhandle *fh = calloc(1, sizeof(*fh));

	if (fh == NULL)
		return NULL;
	fh->fs = fs;
	fh->in = in;
	pthread_mutex_init(&fh->mu, NULL);
	pthread_cond_init(&fh->cv, NULL);
	return fh;
}

/* Adds fh to the open handles (fs->lock). */
static void fh_link(struct objfs_fs *fs, struct fhandle *fh)
{
	fh->prev = NULL;
	fh->next = fs->handles;
	if (fs->handles != NULL)
		fs->handles->prev = fh;
	fs->handles = fh;
}

static void fh_unlink(struct objfs_fs *fs, struct fhandle *fh)
{
	if (fh->prev != NULL)
		fh->prev->next = fh->next;
	else if (fs->handles == fh)
		fs->handles = fh->next;
	if (fh->next != NULL)
		fh->next->prev = fh->prev;
	fh->prev = fh->next = NULL;
}

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
static void ra_buf_drain(struct objfs_fs *fs)
{
	pthread_mutex_lock(&fs->rabuf_mu);
	while (fs->n_rabuf > 0) {
		munmap(fs->rabuf[--fs->n_rabuf], fs->o.ra_chunk);
		objfs_budget_give(&fs->mem, fs->o.ra_chunk);
	}
	pthread_mutex_unlock(&fs->rabuf_mu);
}

static void ra_free_chunk(struct objfs_fs *fs, struct ra_chunk *c)
{
	ra_buf_put(fs, c->buf, c->len);
	memset(c, 0, sizeof(*c));
}

static void fh_free(struct fhandle *fh)
{
	bool idle;
	unsigned i;

	pthread_mutex_lock(&fh->fs->lock);
	fh_unlink(fh->fs, fh);
	pthread_mutex_unlock(&fh->fs->lock);

	pthread_mutex_lock(&fh->mu);
	for (i = 0; i < RA_MAX; i++) {
		while (fh->ra[i].state == RA_LOADING)
			pthread_cond_wait(&fh->cv, &fh->mu);
		ra_free_chunk(fh->fs, &fh->ra[i]);
	}
	pthread_mutex_unlock(&fh->mu);
	pthread_mutex_lock(&fh->fs->lock);
	idle = fh->fs->handles == NULL;
	pthread_mutex_unlock(&fh->fs->lock);
	if (idle)
		ra_buf_drain(fh->fs);
	pthread_cond_destroy(&fh->cv);
	pthread_mutex_destroy(&fh->mu);
	free(fh);
}

/* Opens in for fi: revalidation, O_TRUNC, the handle (pinned in). */
static int do_open(struct objfs_fs *fs, struct inode *in,
		   struct fuse_file_info *fi)
{
	struct fhandle *fh = NULL;
	bool local, changed = false, writing;
	int err = 0;

	writing = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
	if (writing && fs->o.read_only)
		return EROFS;
	if (S_ISDIR(in->mode))
		return EISDIR;
	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	pthread_mutex_lock(&fs->lock);
	local = in->dirty || in->spool != NULL || !in->in_store;
	pthread_mutex_unlock(&fs->lock);
	if (!local) {
		/* close-to-open: a reopened file is revalidated */
		err = revalidate(fs, in, true);
		if (err == ESTALE)
			err = ENOENT;
		pthread_mutex_lock(&fs->lock);
		if (err == 0 && strcmp(in->cache_etag, in->etag) != 0) {
			changed = in->cache_etag[0] != '\0';
			snprintf(in->cache_etag, sizeof(in->cache_etag), "%s",
				 in->etag);
			fi->keep_cache = 0;
		} else {
			fi->keep_cache = 1;
		}
		pthread_mutex_unlock(&fs->lock);
	} else {
		fi->keep_cache = 1;
	}
	if (err == 0 && (fi->flags & O_TRUNC)) {
		err = spool_ensure(fs, in);
		if (err == 0)
			err = charge(fs, in, 0);
		if (err == 0) {
			stream_abort(fs, in);
			err = objfs_spool_truncate(in->spool, 0);
			spool_account(fs, in);
		}
		if (err == 0) {
			in->seq = true;
			pthread_mutex_lock(&fs->lock);
			in->size = 0;
			in->dirty = true;
			in->mtime = now_real();
			pthread_mutex_unlock(&fs->lock);
		}
	}
	if (err == 0) {
		fh = fh_new(fs, in);
		if (fh == NULL)
			err = ENOMEM;
	}
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		in->nopen++;
		fh_link(fs, fh);
		pthread_mutex_unlock(&fs->lock);
		fi->fh = (uint64_t)(uintptr_t)fh;
	}
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	if (changed && fs->se != NULL) {
		/* the size may have changed: drop cached attributes */
		fuse_lowlevel_notify_inval_inode(fs->se, in->ino, -1, 0);
	}
	return err;
}

/* Undoes do_open when the reply could not be sent. */
static void undo_open(struct objfs_fs *fs, struct fuse_file_info *fi)
{
	struct fhandle *fh = (struct fhandle *)(uintptr_t)fi->fh;
	struct inode *in = fh->in;

	pthread_mutex_lock(&fs->lock);
	in->nopen--;
	pthread_mutex_unlock(&fs->lock);
	fh_free(fh);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = pin_ino(fs, ino);
	int err;

	if (in == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	err = do_open(fs, in, fi);
	if (err != 0)
		reply_err(req, err);
	else if (fuse_reply_open(req, fi) == -ENOENT)
		undo_open(fs, fi);
	unpin(fs, in);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fuse_entry_param e;
	struct inode *dir, *in = NULL, *old;
	struct objfs_spool *sp = NULL;
	struct fhandle *fh = NULL;
	int err;

	dir = pin_ino(fs, parent);
	if (dir == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	err = new_name_check(fs, dir, name);
	if (err != 0)
		goto out;
	/* an existing name (stale negative entry) is opened, not replaced */
	err = do_lookup(fs, dir, name, true, &old);
	if (err == 0) {
		if (fi->flags & O_EXCL)
			err = EEXIST;
		else if (S_ISDIR(old->mode))
			err = EISDIR;
		else
			err = do_open(fs, old, fi);
		if (err == 0) {
			pthread_mutex_lock(&fs->lock);
			old->nlookup++;
			fill_entry(fs, old, &e);
			pthread_mutex_unlock(&fs->lock);
			if (fuse_reply_create(req, &e, fi) == -ENOENT)
				undo_open(fs, fi);
			unpin(fs, old);
			unpin(fs, dir);
			return;
		}
		unpin(fs, old);
		goto out;
	}
	if (err != ENOENT)
		goto out;
	err = objfs_spool_create(fs->spool_dir, 0, NULL, &sp);
	if (err != 0)
		goto out;
	pthread_mutex_lock(&fs->lock);
	in = inode_new(fs, dir, name, S_IFREG | (mode & 07777));
	fh = in != NULL ? fh_new(fs, in) : NULL;
	if (in == NULL || fh == NULL) {
		err = ENOMEM;
		if (in != NULL)
			maybe_free(fs, in);
		pthread_mutex_unlock(&fs->lock);
		goto out;
	}
	in->uid = ctx->uid;
	in->gid = ctx->gid;
	in->mtime = now_real();
	in->ctime = in->mtime;
	in->attr_time = now_mono();
	in->spool = sp;
	sp = NULL;
	in->dirty = true;
	in->seq = true;
	in->nopen++;
	fh_link(fs, fh);
	in->nlookup++;
	fill_entry(fs, in, &e);
	snap_note(dir, name, true, false);
	pthread_mutex_unlock(&fs->lock);
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->keep_cache = 1;
	fuse_reply_create(req, &e, fi);
	unpin(fs, dir);
	return;
out:
	objfs_spool_destroy(sp);
	reply_err(req, err);
	unpin(fs, dir);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fhandle *fh = (struct fhandle *)(uintptr_t)fi->fh;

	reply_err(req, inode_sync_locked_ns(req_fs(req), fh->in));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct fhandle *fh = (struct fhandle *)(uintptr_t)fi->fh;

	reply_err(req, inode_sync_locked_ns(req_fs(req), fh->in));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct fhandle *fh = (struct fhandle *)(uintptr_t)fi->fh;
	struct inode *in = fh->in;
	int err;

	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	err = inode_sync(fs, in);
	if (err != 0)
		objfs_error(fs->log, SUB, "inode %" PRIu64 " keeps unsaved data "
			    "after close: %s", (uint64_t)in->ino,
			    objfs_strerror(err));
	pthread_mutex_lock(&fs->lock);
	in->nopen--;
	pthread_mutex_unlock(&fs->lock);
	spool_drop(fs, in, true);
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	fh_free(fh);
	pthread_mutex_lock(&fs->lock);
	maybe_free(fs, in);
	pthread_mutex_unlock(&fs->lock);
	reply_err(req, err);
}

/* ---- read, write ------------------------------------------------------ */

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
static int read_store(struct fhandle *fh, fuse_req_t req, uint64_t off,
		      size_t size)
{
	struct objfs_fs *fs = fh->fs;
	struct inode *in = fh->in;
	char key[KEYBUF], etag[OBJFS_ETAG_MAX];
	uint64_t fsize, end, window;
	struct ra_chunk *whole;
	size_t done = 0;
	char *buf = NULL;
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
		return 0;
	}
	buf = malloc((size_t)(end - off));
	if (buf == NULL) {
		pthread_mutex_unlock(&fh->mu);
		return ENOMEM;
	}
	done = ra_copy(fh, off, end, buf);
	pthread_mutex_unlock(&fh->mu);

	if (off + done < end) {
		struct objfs_fixedbuf fb = { buf + done, (size_t)(end - off - done), 0 };
		struct objfs_get_opts go = { off + done, end - off - done, NULL };
		struct objfs_sink sink;

		objfs_sink_fixed(&sink, &fb);
		err = objfs_store_get(fs->store, key, &go, &sink, NULL);
		if (err == ERANGE)
			err = 0;        /* shrank meanwhile */
		done += fb.got;
	}
	if (err == 0)
		fuse_reply_buf(req, buf, done);
	free(buf);
	return err;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct fhandle *fh = (struct fhandle *)(uintptr_t)fi->fh;
	struct inode *in = fh->in;
	size_t got = 0;
	char *buf = NULL;
	int err;

	pthread_mutex_lock(&in->mu);
	if (in->stream != NULL && in->stream->punched > (uint64_t)off) {
		/* those bytes are only in the parts: complete the upload so
		 * they can be read back from the store (ns before in->mu) */
		pthread_mutex_unlock(&in->mu);
		pthread_rwlock_rdlock(&fs->ns);
		pthread_mutex_lock(&in->mu);
		err = 0;
		if (in->stream != NULL && in->stream->punched > (uint64_t)off)
			err = inode_sync(fs, in);
		pthread_rwlock_unlock(&fs->ns);
		if (err != 0) {
			pthread_mutex_unlock(&in->mu);
			reply_err(req, err);
			return;
		}
	}
	if (in->spool == NULL) {
		pthread_mutex_unlock(&in->mu);
		err = read_store(fh, req, (uint64_t)off, size);
		if (err != 0)
			reply_err(req, err);
		return;
	}
	buf = malloc(size ? size : 1);
	err = buf == NULL ? ENOMEM :
	      spool_fetch(fs, in, (uint64_t)off, (uint64_t)off + size);
	if (err == 0)
		err = objfs_spool_read(in->spool, (uint64_t)off, buf, size, &got);
	pthread_mutex_unlock(&in->mu);
	if (err != 0)
		reply_err(req, err);
	else
		fuse_reply_buf(req, buf, got);
	free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct fhandle *fh = (struct fhandle *)(uintptr_t)fi->fh;
	struct inode *in = fh->in;
	uint64_t end = (uint64_t)off + size;
	int err;

	if (fs->o.read_only) {
		reply_err(req, EROFS);
		return;
	}
	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	err = spool_ensure(fs, in);
	if (err == 0)
		err = charge(fs, in, end > in->spool->size ? end : in->spool->size);
	if (err == 0 && (uint64_t)off != in->spool->size) {
		/* not an append: the parts sent so far may change */
		in->seq = false;
		err = stream_stop(fs, in);
	}
	if (err == 0)
		err = objfs_spool_write(in->spool, (uint64_t)off, buf, size);
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		in->size = in->spool->size;
		in->dirty = true;
		in->mtime = now_real();
		pthread_mutex_unlock(&fs->lock);
		stream_feed(fs, in);
		spool_account(fs, in);
		spool_relieve(fs, in);
	}
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	if (err != 0)
		reply_err(req, err);
	else
		fuse_reply_write(req, size);
}

/* ---- directories ------------------------------------------------------ */

static int dent_cmp(const void *a, const void *b)
{
	const struct dent *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	/* a file sorts before a directory of the same name */
	return (int)x->is_dir - (int)y->is_dir;
}

static int snap_add(struct dirsnap *s, size_t *cap, const char *name,
		    bool is_dir, uint64_t size, const char *etag,
		    const struct timespec *mtime)
{
	struct dent *d;

	if (s->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;

		d = realloc(s->e, nc * sizeof(*d));
		if (d == NULL)
			return ENOMEM;
		s->e = d;
		*cap = nc;
	}
	d = &s->e[s->n];
	memset(d, 0, sizeof(*d));
	d->name = strdup(name);
	if (d->name == NULL)
		return ENOMEM;
	d->is_dir = is_dir;
	d->size = size;
	if (etag != NULL)
		snprintf(d->etag, sizeof(d->etag), "%s", etag);
	if (mtime != NULL)
		d->mtime = *mtime;
	s->n++;
	return 0;
}

/* Lists dir into a new snapshot installed in dir->snap; *out gets a
 * reference of its own. */
static int snap_build(struct objfs_fs *fs, struct inode *dir,
		      struct dirsnap **out)
{
	struct objfs_list_req rq = { NULL, "/", NULL, NULL, 1000 };
	struct dirsnap *s;
	char dkey[KEYBUF], name[OBJFS_NAME_MAX + 1];
	char *token = NULL;
	size_t cap = 0, i, j;
	struct inode *c;
	int err;

	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return ENOMEM;
	s->refs = 1;
	pthread_mutex_lock(&fs->lock);
	err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		goto out;
	rq.prefix = dkey;
	do {
		struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;

		rq.continuation = token;
		err = objfs_store_list(fs->store, &rq, &pg);
		free(token);
		token = NULL;
		if (err != 0)
			goto out;
		for (i = 0; i < pg.n_entries && err == 0; i++) {
			if (objfs_key_child(dkey, pg.entries[i].key, false, name,
					    sizeof(name)))
				err = snap_add(s, &cap, name, false,
					       pg.entries[i].size,
					       pg.entries[i].etag,
					       &pg.entries[i].mtime);
		}
		for (i = 0; i < pg.n_prefixes && err == 0; i++) {
			if (objfs_key_child(dkey, pg.prefixes[i], true, name,
					    sizeof(name)))
				err = snap_add(s, &cap, name, true, 0, NULL, NULL);
		}
		token = pg.next;
		pg.next = NULL;
		objfs_list_page_release(&pg);
	} while (err == 0 && token != NULL);
	if (err != 0)
		goto out;

	pthread_mutex_lock(&fs->lock);
	/* names created here and not yet uploaded */
	for (c = dir->child; c != NULL && err == 0; c = c->sib_next) {
		if (c->linked && !c->in_store && !S_ISDIR(c->mode))
			err = snap_add(s, &cap, c->name, false, c->size, NULL,
				       &c->mtime);
	}
	if (err == 0) {
		if (s->n > 1)
			qsort(s->e, s->n, sizeof(*s->e), dent_cmp);
		for (i = 0, j = 0; i < s->n; i++) {
			if (j > 0 && strcmp(s->e[j - 1].name, s->e[i].name) == 0) {
				free(s->e[i].name);
				continue;
			}
			s->e[j++] = s->e[i];
		}
		s->n = j;
		s->time = now_mono();
		snap_drop(dir);
		dir->snap = s;
		s->refs++;
		*out = s;
		s = NULL;
	}
	pthread_mutex_unlock(&fs->lock);
out:
	free(token);
	if (s != NULL) {
		pthread_mutex_lock(&fs->lock);
		snap_put_locked(s);
		pthread_mutex_unlock(&fs->lock);
	}
	return err;
}

struct head_task {
	struct objfs_fs *fs;
	struct dent *d;
	char key[];
};

static void head_run(void *arg)
{
	struct head_task *t = arg;
	struct objfs_fs *fs = t->fs;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct probe p;
	int err;

	err = objfs_store_head(fs->store, t->key, &info);
	if (err == 0)
		probe_from_info(fs, &info, t->d->is_dir, &p);
	else if (t->d->is_dir && err == ENOENT)
		probe_implied_dir(fs, &p);
	pthread_mutex_lock(&fs->lock);
	if (err == 0 || (t->d->is_dir && err == ENOENT)) {
		t->d->fa = p.fa;
		t->d->have_attr = true;
		t->d->marker = p.marker;
		if (!t->d->is_dir) {
			t->d->size = p.size;
			snprintf(t->d->etag, sizeof(t->d->etag), "%s", p.etag);
			if (p.is_dir)
				t->d->is_dir = true;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	objfs_obj_info_release(&info);
	free(t);
}

#define HEAD_BATCH 256          /* HEAD tasks queued at once */

/* Fetches the attributes of every entry the kernel will need (readdirplus):
 * parallel HEADs for names without fresh inode attributes, queued in
 * batches so a huge directory does not queue a task per name at once. */
static void snap_fetch_attrs(struct objfs_fs *fs, struct inode *dir,
			     struct dirsnap *s)
{
	struct objfs_group g;
	char dkey[KEYBUF];
	double now = now_mono();
	size_t i, queued;
	int err;

	pthread_mutex_lock(&fs->lock);
	if (s->attrs_done) {
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	s->attrs_done = true;
	err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		return;
	objfs_group_init(&g);
	for (i = 0, queued = 0; i < s->n; i++) {
		struct dent *d = &s->e[i];
		char key[KEYBUF];
		struct inode *c;
		struct head_task *t;
		bool skip;

		pthread_mutex_lock(&fs->lock);
		c = find_child(fs, dir, d->name);
		skip = d->have_attr ||
		       (c != NULL && (c->dirty || c->spool != NULL || !c->in_store ||
				      now - c->attr_time < fs->o.attr_ttl));
		pthread_mutex_unlock(&fs->lock);
		if (skip || objfs_key_join(dkey, d->name, d->is_dir, key,
					   sizeof(key)) != 0)
			continue;
		t = malloc(sizeof(*t) + strlen(key) + 1);
		if (t == NULL)
			break;
		t->fs = fs;
		t->d = d;
		strcpy(t->key, key);
		if (objfs_pool_submit(fs->pool, &g, head_run, t) != 0)
			head_run(t);
		if (++queued % HEAD_BATCH == 0) {
			objfs_group_wait(&g);
			objfs_group_init(&g);
		}
	}
	objfs_group_wait(&g);
}

/* Unlinks and frees a directory handle (takes fs->lock). */
static void dh_free(struct objfs_fs *fs, struct dhandle *dh)
{
	pthread_mutex_lock(&fs->lock);
	if (dh->prev != NULL)
		dh->prev->next = dh->next;
	else
		fs->dirhandles = dh->next;
	if (dh->next != NULL)
		dh->next->prev = dh->prev;
	snap_put_locked(dh->snap);
	pthread_mutex_unlock(&fs->lock);
	free(dh);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct dhandle *dh = calloc(1, sizeof(*dh));

	if (dh == NULL) {
		reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)dh;
	fi->cache_readdir = 0;
	pthread_mutex_lock(&fs->lock);
	dh->next = fs->dirhandles;
	if (fs->dirhandles != NULL)
		fs->dirhandles->prev = dh;
	fs->dirhandles = dh;
	pthread_mutex_unlock(&fs->lock);
	if (fuse_reply_open(req, fi) == -ENOENT)
		dh_free(fs, dh);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct dhandle *dh = (struct dhandle *)(uintptr_t)fi->fh;

	dh_free(fs, dh);
	reply_err(req, 0);
}

static uint64_t name_ino(const char *name)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *name != '\0'; name++) {
		h ^= (unsigned char)*name;
		h *= 1099511628211ULL;
	}
	return h | (1ULL << 63);
}

/* Finds or makes the inode for a listing entry (fs->lock); *created tells
 * whether it is new (nlookup 0). */
static struct inode *dent_inode(struct objfs_fs *fs, struct inode *dir,
				const struct dent *d, bool *created)
{
	struct inode *in = find_child(fs, dir, d->name);
	mode_t mode;

	*created = false;
	mode = d->have_attr ? d->fa.mode :
	       default_mode(fs, d->is_dir ? S_IFDIR : S_IFREG);
	if (in != NULL) {
		if (same_type(in->mode, mode) || in->dirty || in->spool != NULL) {
			if (d->have_attr && !in->dirty && in->spool == NULL &&
			    now_mono() - in->attr_time >= fs->o.attr_ttl) {
				struct probe p;

				memset(&p, 0, sizeof(p));
				p.is_dir = d->is_dir;
				p.marker = d->marker;
				p.size = d->size;
				snprintf(p.etag, sizeof(p.etag), "%s", d->etag);
				p.fa = d->fa;
				apply_probe(fs, in, &p);
			}
			return in;
		}
		if (in->nlookup == 0 && in->nopen == 0) {
			struct inode *par = detach(fs, in);

			maybe_free(fs, in);
			(void)par;      /* dir stays pinned by the caller */
		} else {
			return in;
		}
	}
	in = inode_new(fs, dir, d->name, mode);
	if (in == NULL)
		return NULL;
	*created = true;
	in->size = d->is_dir ? 0 : d->size;
	in->stored_size = in->size;
	in->charged = in->size;
	in->in_store = d->is_dir ? d->marker : true;
	snprintf(in->etag, sizeof(in->etag), "%s", d->etag);
	if (d->have_attr) {
		in->uid = d->fa.uid;
		in->gid = d->fa.gid;
		in->mtime = d->fa.mtime;
		in->attr_time = now_mono();
	} else {
		in->mtime = d->mtime.tv_sec != 0 ? d->mtime : now_real();
		in->attr_time = 0;
	}
	return in;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct objfs_fs *fs = req_fs(req);
	struct dhandle *dh = (struct dhandle *)(uintptr_t)fi->fh;
	struct inode *dir = pin_ino(fs, ino);
	struct dirsnap *s;
	char *buf = NULL;
	size_t pos = 0;
	uint64_t i;
	int err = 0;

	if (dir == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	if (off == 0 || dh->snap == NULL) {
		struct dirsnap *old = dh->snap;

		s = NULL;
		pthread_mutex_lock(&fs->lock);
		if (dir->snap != NULL &&
		    now_mono() - dir->snap->time < fs->o.dir_ttl) {
			s = dir->snap;
			s->refs++;
		}
		pthread_mutex_unlock(&fs->lock);
		if (s == NULL)
			err = snap_build(fs, dir, &s);
		if (err != 0)
			goto out;
		pthread_mutex_lock(&fs->lock);
		dh->snap = s;
		snap_put_locked(old);
		pthread_mutex_unlock(&fs->lock);
	}
	s = dh->snap;
	if (plus)
		snap_fetch_attrs(fs, dir, s);
	buf = malloc(size);
	if (buf == NULL) {
		err = ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&fs->lock);
	for (i = (uint64_t)off; i < s->n + 2; i++) {
		const char *name;
		struct fuse_entry_param e;
		struct inode *in = NULL;
		bool created = false;
		size_t need;

		memset(&e, 0, sizeof(e));
		if (i < 2) {
			name = i == 0 ? "." : "..";
			e.attr.st_ino = i == 0 ? dir->ino : FUSE_ROOT_ID;
			e.attr.st_mode = S_IFDIR;
		} else {
			const struct dent *d = &s->e[i - 2];

			name = d->name;
			if (plus) {
				in = dent_inode(fs, dir, d, &created);
				if (in == NULL) {
					err = ENOMEM;
					break;
				}
				fill_entry(fs, in, &e);
				if (!d->have_attr && in->attr_time == 0)
					e.attr_timeout = 0;
			} else {
				in = find_child(fs, dir, name);
				e.attr.st_ino = in != NULL ? in->ino : name_ino(name);
				e.attr.st_mode = d->is_dir ? S_IFDIR : S_IFREG;
				if (in != NULL)
					e.attr.st_mode = in->mode;
				in = NULL;
			}
		}
		if (plus)
			need = fuse_add_direntry_plus(req, buf + pos, size - pos,
						      name, &e, (off_t)(i + 1));
		else
			need = fuse_add_direntry(req, buf + pos, size - pos,
						 name, &e.attr, (off_t)(i + 1));
		if (need > size - pos) {
			if (created)
				maybe_free(fs, in);
			break;
		}
		if (in != NULL)
			in->nlookup++;
		pos += need;
	}
	pthread_mutex_unlock(&fs->lock);
out:
	if (err != 0 && pos == 0)
		reply_err(req, err);
	else
		fuse_reply_buf(req, buf, pos);
	free(buf);
	unpin(fs, dir);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct objfs_fs *fs = req_fs(req);
	struct statvfs st;
	const uint64_t bs = 4096;
	uint64_t cap, used, blocks, ublocks, objects;

	volrec_refresh(fs, fs->o.volrec_ttl);
	pthread_mutex_lock(&fs->lock);
	cap = fs->capacity != 0 ? fs->capacity : (1ULL << 50);
	used = fs->used > 0 ? (uint64_t)fs->used : 0;
	objects = fs->objects > 0 ? (uint64_t)fs->objects : 0;
	pthread_mutex_unlock(&fs->lock);
	memset(&st, 0, sizeof(st));
	blocks = cap / bs;
	ublocks = (used + bs - 1) / bs;
	st.f_bsize = bs;
	st.f_frsize = bs;
	st.f_blocks = blocks;
	st.f_bfree = blocks > ublocks ? blocks - ublocks : 0;
	st.f_bavail = st.f_bfree;
	st.f_ffree = 1ULL << 32;
	st.f_favail = st.f_ffree;
	st.f_files = objects + st.f_ffree;
	st.f_namemax = OBJFS_NAME_MAX;
	fuse_reply_statfs(req, &st);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	/* regular files only (an empty object); no devices, fifos, sockets */
	if (!S_ISREG(mode)) {
		reply_err(req, EPERM);
		return;
	}
	make_node(req, parent, name, S_IFREG | (mode & 07777), NULL);
}

static const struct fuse_lowlevel_ops objfs_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.create = op_create,
};

const struct fuse_lowlevel_ops *objfs_fs_ops(void)
{
	return &objfs_ops;
}

size_t objfs_fs_ops_size(void)
{
	return sizeof(objfs_ops);
}

void objfs_fs_set_session(struct objfs_fs *fs, struct fuse_session *se)
{
	fs->se = se;
}

/* ---- life cycle ------------------------------------------------------- */

/* Gives the spool of in, still dirty after a failed save, a name in the
 * spool directory and says where, once: what cannot be uploaded is not
 * dropped silently when the mount stops (in->mu held). */
static void spool_keep(struct objfs_fs *fs, struct inode *in)
{
	char key[KEYBUF], prefix[64];
	const char *path = NULL;
	uint64_t size, have;
	bool again;
	int err;

	if (!in->dirty || in->spool == NULL)
		return;
	pthread_mutex_lock(&fs->lock);
	if (inode_key(fs, in, false, key, sizeof(key)) != 0)
		snprintf(key, sizeof(key), "inode %" PRIu64, (uint64_t)in->ino);
	pthread_mutex_unlock(&fs->lock);
	snprintf(prefix, sizeof(prefix), "objfs-unsaved-%ld-%" PRIu64,
		 (long)getpid(), (uint64_t)in->ino);
	again = in->spool->kept != NULL;
	err = objfs_spool_keep(in->spool, fs->spool_dir, prefix, &path);
	if (err != 0) {
		objfs_error(fs->log, SUB, "unsaved data of %s is lost: keeping "
			    "its spool in %s failed: %s", key, fs->spool_dir,
			    objfs_strerror(err));
		return;
	}
	if (again)
		return;
	size = in->spool->size;
	have = objfs_rangeset_bytes(&in->spool->present);
	if (have >= size)
		objfs_error(fs->log, SUB, "unsaved data of %s (%" PRIu64
			    " bytes) kept in %s", key, size, path);
	else if (in->stream != NULL && in->stream->punched > 0)
		objfs_error(fs->log, SUB, "unsaved data of %s (%" PRIu64
			    " bytes) kept in %s, less its first %" PRIu64
			    " bytes (zeros there): they were in the parts of "
			    "an upload that did not complete", key, size, path,
			    in->stream->punched);
	else
		objfs_error(fs->log, SUB, "unsaved data of %s (%" PRIu64
			    " bytes) kept in %s; %" PRIu64 " bytes of it are "
			    "zeros there, unchanged from the stored object "
			    "(ETag %s)", key, size, path, size - have,
			    in->spool->base_etag);
}

/* After a failed sync_under() of the root (ns held for writing): the
 * spool of every file still dirty is kept (spool_keep). */
static void keep_unsaved(struct objfs_fs *fs)
{
	struct inode **dirty, *in;
	size_t n = 0, k = 0, i;
	unsigned h;

	pthread_mutex_lock(&fs->lock);
	for (h = 0; h < HASH_SIZE; h++)
		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next)
			n += in->dirty;
	dirty = calloc(n > 0 ? n : 1, sizeof(*dirty));
	for (h = 0; dirty != NULL && h < HASH_SIZE; h++)
		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next)
			if (in->dirty && k < n) {
				in->refs++;
				dirty[k++] = in;
			}
	pthread_mutex_unlock(&fs->lock);
	if (dirty == NULL)
		objfs_error(fs->log, SUB, "keeping unsaved data: %s",
			    objfs_strerror(ENOMEM));
	for (i = 0; i < k; i++) {
		pthread_mutex_lock(&dirty[i]->mu);
		spool_keep(fs, dirty[i]);
		pthread_mutex_unlock(&dirty[i]->mu);
		unpin(fs, dirty[i]);
	}
	free(dirty);
}

int objfs_fs_sync_all(struct objfs_fs *fs)
{
	int err;

	pthread_rwlock_wrlock(&fs->ns);
	err = sync_under(fs, fs->root);
	if (err != 0)
		keep_unsaved(fs);
	pthread_rwlock_unlock(&fs->ns);
	if (err != 0)
		objfs_error(fs->log, SUB, "saving dirty files: %s",
			    objfs_strerror(err));
	return err;
}

static int load_root(struct objfs_fs *fs)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_volrec v = OBJFS_VOLREC_INIT;
	struct probe p;
	int err;

	err = objfs_store_head(fs->store, ROOT_ATTR_KEY, &info);
	if (err == 0) {
		probe_from_info(fs, &info, true, &p);
		fs->root->mode = p.fa.mode;
		fs->root->uid = p.fa.uid;
		fs->root->gid = p.fa.gid;
		fs->root->mtime = p.fa.mtime;
	} else if (err != ENOENT) {
		objfs_error(fs->log, SUB, "reaching the store: %s",
			    objfs_strerror(err));
		goto out;
	}
	err = objfs_volrec_load(fs->store, &v);
	if (err == ENOENT) {
		objfs_info(fs->log, SUB, "no volume record: no capacity limit");
		err = 0;
	} else if (err != 0) {
		objfs_error(fs->log, SUB, "reading the volume record: %s",
			    objfs_strerror(err));
		goto out;
	}
	fs->capacity = v.capacity_bytes;
	fs->volrec_time = now_mono();
out:
	objfs_obj_info_release(&info);
	objfs_volrec_release(&v);
	return err;
}

int objfs_fs_create(struct objfs_store *store, const struct objfs_fs_opts *opts,
		    struct objfs_log *log, struct objfs_fs **out)
{
	struct objfs_fs *fs;
	int err;

	fs = calloc(1, sizeof(*fs));
	if (fs == NULL)
		return ENOMEM;
	fs->store = store;
	fs->log = log;
	fs->o = *opts;
	if (fs->o.ra_chunk == 0)
		fs->o.ra_chunk = 1ULL << 20;
	if (fs->o.ra_chunks > RA_MAX)
		fs->o.ra_chunks = RA_MAX;
	fs->spool_dir = strdup(opts->spool_dir != NULL ? opts->spool_dir : "/var/tmp");
	if (fs->spool_dir == NULL) {
		err = ENOMEM;
		goto err_free;
	}
	fs->o.spool_dir = fs->spool_dir;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->volrec_mu, NULL);
	pthread_mutex_init(&fs->rabuf_mu, NULL);
	pthread_rwlock_init(&fs->ns, NULL);
	pthread_cond_init(&fs->scan_cv, NULL);
	objfs_budget_init(&fs->mem, fs->o.mem_limit);
	fs->next_ino = FUSE_ROOT_ID + 1;
	fs->root = calloc(1, sizeof(*fs->root));
	if (fs->root == NULL || (fs->root->name = strdup("")) == NULL) {
		err = ENOMEM;
		goto err_sync;
	}
	pthread_mutex_init(&fs->root->mu, NULL);
	fs->root->ino = FUSE_ROOT_ID;
	fs->root->mode = default_mode(fs, S_IFDIR);
	fs->root->uid = fs->o.uid;
	fs->root->gid = fs->o.gid;
	fs->root->mtime = now_real();
	fs->root->in_store = true;
	fs->root->nlookup = 1;
	fs->root->attr_time = 1e300;
	err = load_root(fs);
	if (err != 0)
		goto err_root;
	if (fs->o.cache_dir != NULL && fs->o.cache_size > 0) {
		err = objfs_dcache_create(fs->o.cache_dir, fs->o.cache_size,
					  &fs->dcache);
		if (err != 0) {
			objfs_error(log, SUB, "data cache in %s: %s",
				    fs->o.cache_dir, objfs_strerror(err));
			goto err_root;
		}
	}
	fs->o.cache_dir = NULL;         /* not kept: the cache has its own copy */
	*out = fs;
	return 0;

err_root:
	if (fs->root != NULL) {
		pthread_mutex_destroy(&fs->root->mu);
		free(fs->root->name);
	}
err_sync:
	free(fs->root);
	objfs_budget_release(&fs->mem);
	pthread_cond_destroy(&fs->scan_cv);
	pthread_rwlock_destroy(&fs->ns);
	pthread_mutex_destroy(&fs->rabuf_mu);
	pthread_mutex_destroy(&fs->volrec_mu);
	pthread_mutex_destroy(&fs->lock);
	free(fs->spool_dir);
err_free:
	free(fs);
	return err;
}

int objfs_fs_start(struct objfs_fs *fs)
{
	int err;

	if (fs->pool != NULL)
		return 0;
	err = objfs_pool_create(fs->o.threads, &fs->pool);
	if (err != 0)
		return err;
	err = pthread_create(&fs->scan_thread, NULL, scan_main, fs);
	if (err != 0) {
		objfs_pool_destroy(fs->pool);
		fs->pool = NULL;
		return err;
	}
	fs->scan_started = true;
	return 0;
}

void objfs_fs_destroy(struct objfs_fs *fs)
{
	unsigned h;

	if (fs == NULL)
		return;
	if (fs->pool != NULL)
		objfs_fs_sync_all(fs);
	pthread_mutex_lock(&fs->lock);
	fs->stopping = true;
	pthread_cond_broadcast(&fs->scan_cv);
	pthread_mutex_unlock(&fs->lock);
	if (fs->scan_started)
		pthread_join(fs->scan_thread, NULL);
	objfs_pool_destroy(fs->pool);
	while (fs->handles != NULL)
		fh_free(fs->handles);   /* the kernel never released them */
	while (fs->dirhandles != NULL)
		dh_free(fs, fs->dirhandles);
	objfs_dcache_destroy(fs->dcache);
	for (h = 0; h < HASH_SIZE; h++) {
		while (fs->ino_tab[h] != NULL)
			inode_free(fs, fs->ino_tab[h]);
	}
	snap_drop(fs->root);
	pthread_mutex_destroy(&fs->root->mu);
	free(fs->root->name);
	free(fs->root->link);
	free(fs->root);
	ra_buf_drain(fs);
	objfs_budget_release(&fs->mem);
	pthread_cond_destroy(&fs->scan_cv);
	pthread_rwlock_destroy(&fs->ns);
	pthread_mutex_destroy(&fs->rabuf_mu);
	pthread_mutex_destroy(&fs->volrec_mu);
	pthread_mutex_destroy(&fs->lock);
	free(fs->spool_dir);
	free(fs);
}
