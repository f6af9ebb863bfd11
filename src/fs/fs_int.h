/*
 * fs_int.h - the filesystem's internal header: the data model's core
 * (the structures shared by the files of src/fs, the lock order, and the
 * functions of the core and the files below it); the subsystems' own
 * state is in capacity.h, prefetch.h and journal.h, included here, and
 * what the files answering the kernel share above the core is ops.h.
 * Not for use outside src/fs (fs.h is the interface); the unit tests
 * include it to drive write-back and lookup without FUSE.
 *
 * Files, top down: each calls only files listed after it, but the files
 * of the core call one another (tools: the call graph of the .o files).
 *   fsmetered.c  the metered ops table (each slot calls fs.c's)
 *   recover.c    a dead mount's unsaved data, saved or kept aside
 *   fs.c         the ops table, the FUSE operations on names and data not
 *                listed below (op_*: each replies exactly once), the life
 *                cycle (create, start, sync_all, destroy)
 *   journal_load.c  the resume journal read back (a successor, recover.c)
 *   rename.c     rename, and the directory rename's copy and delete of a
 *                key tree
 *   remove.c     unlink and rmdir: deletes deferred and batched (the store's
 *                delq layer), the barrier at fsyncdir and unmount
 *   special.c    FIFOs, sockets, character and block devices (mknod)
 *   handles.c    open files and directories (open, create, flush, fsync,
 *                release, opendir, releasedir), their handles and ids
 *   names.c      mkdir, symlink, mknod, link: new names and what they share
 *   readahead.c  read-ahead chunks and reads of clean files from the store
 * The data model's core:
 *   inode.c      inode tables, tree links, inode lifetime, keys, stat
 *   lookup.c     finding names in the store, do_lookup, revalidate
 *   dirsnap.c    directory listings (snapshots), HEAD batches, readdir
 *                entries
 *   writeback.c  spools, uploads, streaming parts, inode_sync, truncate,
 *                the spool bound and its relief, spools kept aside
 *   hardlink.c   hard links: names pointing at a link set's data object
 *   times.c      timestamps (which are stored, which per mount) and a
 *                directory's link count
 *   xattr.c      extended attributes (user.* in object metadata)
 *   attrindex.c  the attribute index: segments written for what this
 *                mount writes, read to answer listings without HEADs
 *   prefetch.c   a directory's next small files fetched ahead of a reader
 *                going through them in order (pfcache.c holds them)
 * Below the core:
 *   journal.c    the resume journal: the log a successor loads, written
 *                (journal.h: its format)
 *   edge.c       reply_err() (the FUSE boundary), the request's unique,
 *                test crash points
 *   fsmetrics.c  counters, errnos by op, scrape-time gauges
 *   capacity.c   charges against the volume capacity, the volume record,
 *                the usage scan
 *   recent.c     the names this mount created or removed lately, merged
 *                into listings that lag behind (recent.h)
 *   attr.c, xattrenc.c, spool.c, dcache.c, pfcache.c, fuselog.c: leaves
 *                with headers of their own
 *
 * Objects: an inode per name the kernel knows (inode number = a counter,
 * never reused), found by number (ino hash) and by (parent, name) (name
 * hash).  An inode lives while the kernel holds lookups on it (nlookup),
 * files are open on it (nopen), children or running operations pin it
 * (refs), or it holds unsaved data (dirty).  None of the counts ever goes
 * below zero, and a dirty inode is never freed (until destroy).
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
 * Leaf locks, taken under any of these and never around them:
 * fs->cap.volrec_mu (one volume record refresh; taken before fs->lock),
 * stream->mu, fhandle->mu, fs->rabuf_mu.
 *
 * Errors: functions return 0 or a positive errno; edge.c's reply_err() is
 * the one place they reach the kernel (libfuse negates them).
 *
 * Each prototype below says which locks the caller must hold ("fs->lock
 * held") or must not hold ("takes fs->lock"), and who owns what it
 * returns.  In debug builds (without NDEBUG) fs_assert_locked(),
 * fs_assert_held() and fs_assert_ns_held() check the held ones, and
 * asserts check the counts.
 */
#ifndef OBJFS_FS_INT_H
#define OBJFS_FS_INT_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif

#include <assert.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "backend/backend.h"
#include "common/clock.h"
#include "common/list.h"
#include "common/pool.h"
#include "fs/attr.h"
#include "fs/capacity.h"
#include "fs/datacache.h"
#include "fs/fs.h"
#include "fs/journal.h"
#include "fs/pfcache.h"
#include "fs/prefetch.h"
#include "fs/recent.h"
#include "fs/spool.h"
#include "volume/layout.h"

#define HASH_BITS 16
#define HASH_SIZE (1u << HASH_BITS)
#define KEYBUF (OBJFS_KEY_MAX + 2)
#define RA_MAX OBJFS_RA_CHUNKS_MAX
#define SNAP_RELIST_MAX 1000    /* entries: one LIST page */
#define LINK_MAX_LEN 4096
#define SUB "fs"

struct dent {
	char *name;
	bool is_dir;
	bool have_attr;         /* fa/size/etag from a HEAD or the index */
	bool marker;            /* a directory with a marker object */
	uint64_t size;
	char etag[OBJFS_ETAG_MAX];
	struct timespec mtime;  /* Last-Modified from the listing */
	struct objfs_fattr fa;
	int64_t ict;            /* ct of the index entry applied, or 0 */
	unsigned meta_mask;     /* OBJFS_FATTR_* its metadata holds (have_attr) */
	char *link;             /* a symlink's target from the index, or NULL */
	bool hlink;             /* a HEAD showed a hard link's name */
};

/* A directory listing; shared by readdir handles (refs, fs->lock).  A
 * directory of more than o.dir_window (SNAP_WINDOW) names is listed in
 * windows of about that many (bounded memory): e[0] is the name at offset base of the whole
 * listing, and `after` the key the next window starts after (more).  Only
 * a whole listing (base 0, !more) becomes dir->snap. */
#define SNAP_WINDOW 20000
struct dirsnap {
	unsigned refs;
	size_t n;
	struct dent *e;
	double time;
	bool attrs_done;        /* every entry's attributes fetched */
	/* readdirplus reply by reply (snap_reply_attrs()) */
	bool index_done;        /* markers HEADed, attribute index read */
	bool stat_ahead;        /* the reader looked up names given without
				   attributes: HEAD the next ones */
	size_t heads_upto;      /* files before it HEADed (stat_ahead) */
	size_t lo_from, lo_to;  /* the last reply's entries without
				   attributes (those before stat_ahead) */
	unsigned short_replies; /* replies cut short before stat_ahead */
	uint64_t base;
	bool more;
	char *after;
	size_t misses;          /* lookups it could not answer (stale) */
	long ndirs;             /* entries that are directories; -1: not
				   counted since the last change of kind
				   (inode_nlink counts them, fs->lock) */
	/* renewal of a large whole listing (dirsnap.c, snap_renew()) */
	double full_time;       /* when the store listed it whole (mono);
				   renewals keep it */
	int64_t full_real;      /* the same, real ns, before its first LIST */
	char *tail;             /* the last key the store listed, or NULL */
	char **segs;            /* index segments seen (sorted), when
				   segs_known */
	size_t nsegs;
	bool segs_known;
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

/* An inode's part in hard links (hardlink.c; fs->lock).  A name inode (in
 * the tree, never told to the kernel) has id and !data; the file it names
 * is a data inode (data: not in the tree, its key the link set's data
 * object, on fs->hl_list). */
struct inode_hlink {
	char *id;
	char tok[17];                    /* name inode: its token */
	bool data;
	bool pending;                    /* a plain file being made a link
					    set (on fs->hl_list, still in
					    the tree): what the store says of
					    its name is not applied */
	unsigned nlink;                  /* data inode: names counted */
	struct inode *next;              /* fs->hl_list */
};

struct inode {
	fuse_ino_t ino;
	struct inode *ino_next;         /* ino hash chain */
	struct inode *name_next;        /* name hash chain (when linked) */
	struct inode *parent;           /* pinned (refs); NULL for root/unlinked */
	struct inode *child;            /* first child (linked ones): the
					   directories first, so counting
					   them never walks the files */
	struct inode *last_dir;         /* the last directory child, or NULL */
	struct inode *sib_prev, *sib_next;
	bool sib_dir;                   /* linked among the directories */
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
	struct timespec ctime;           /* 0: mtime (times.c) */
	struct timespec atime;           /* 0: mtime (times.c) */
	bool atime_kept;                 /* atime set by utimensat or read
					    from the store: stored (times.c) */
	dev_t rdev;                      /* character and block devices */
	struct inode_prefetch pf;        /* a directory's scan (prefetch.h;
					    fs->lock) */
	uint32_t nsubdirs;               /* a directory's subdirectories, as
					    far as its listing shows (times.c) */
	uint32_t listed_n;               /* a directory: the names its last
					    whole listing held (dir_listed();
					    0 for one made here): lookups
					    relist a small one whose listing
					    was dropped (lookup.c) */
	bool nsub_known;                 /* nsubdirs was counted from a
					    listing (and kept since by this
					    mount's changes): st_nlink may be
					    shown (times.c) */
	bool dir_times;                  /* a directory's mtime and ctime
					    are this mount's own: changed or
					    derived here (times.c) */
	char etag[OBJFS_ETAG_MAX];       /* of the stored object */
	unsigned meta_mask;              /* OBJFS_FATTR_* its metadata holds */
	struct timespec lm;              /* its Last-Modified as listed, when
					    its attributes came with a listing
					    (else 0): a fresh listing showing
					    the same ETag and this renews them */
	char cache_etag[OBJFS_ETAG_MAX]; /* whose data the page cache holds */
	double attr_time;                /* when attributes were fetched */
	double changed_at;               /* when this mount last changed its
					    data or attributes (mono; times.c):
					    a revalidation asked before then
					    is not applied */
	double put_time;                 /* when this mount's own upload of
					  * it was answered (0: never) */
	bool in_store;                   /* the object (or marker) exists */
	bool attr_dirty;                 /* attributes set here, not yet in
					    the store's copy (a clean file
					    or symlink; pins the inode) */
	double attr_since;               /* when attr_dirty was set */
	uint64_t stored_size;
	uint64_t charged;                /* bytes counted in fs->cap.used */
	struct dirsnap *snap;
	char *link;
	char *xattr;                     /* user.* attributes encoded
					    (xattr.h), NULL: none */
	bool xattr_known;                /* xattr is the object's, or its
					    change not yet stored (xattr.c) */
	double xattr_time;               /* when it was read (mono) */

	/* data (mu) */
	pthread_mutex_t mu;
	struct objfs_spool *spool;
	bool dirty;                      /* also read under fs->lock */
	bool seq;                        /* written only at its end since empty */
	bool told_unsaved;               /* the last flush or fsync told the
					    application its data is not
					    stored, and nothing was written
					    since: the last close keeps the
					    data aside (inode_release_sync) */
	struct stream *stream;           /* parts already on their way */
	bool upload_wait;                /* fs->lock: closed, its upload
					    waiting for upload_delay
					    (writeback.c: "Upload window") */
	double closed_at;                /* fs->lock: its last close then */
	uint64_t spool_disk;             /* fs->lock: the spool's blocks, as
					    counted in fs->spool_used */
	uint64_t spool_id;               /* fs->lock: its named file, or 0 */
	bool times_set;                  /* fs->lock: mtime set by utimens
					    since the data changed (recorded
					    in the state log) */
	struct inode_hlink hl;           /* hard links (hardlink.c; fs->lock) */
	fuse_ino_t load_parent;          /* journal_load.c, while loading */
	bool load_times;                 /* journal_load.c: times loaded */
	bool load_orphan;                /* journal_load.c: its parent in the
					    log was not found (recover.c
					    keeps its data: its name is
					    unknown) */
};

/* The id of an open file or directory as the kernel knows it (fi->fh):
 * a number, not a pointer, so a successor finds the handle again
 * (journal.c; the table is under fs->hid_mu). */
struct hid {
	uint64_t id;
	bool dir;
	fuse_ino_t ino;
	struct hid *next;
};
#define HID_HASH 1024


struct objfs_fs {
	struct objfs_store *store;
	struct objfs_log *log;
	struct objfs_fs_opts o;
	size_t key_room;                /* bytes a key may have (the prefix
					   of the volume taken off) */
	int no_part_copy;               /* the store refused a part copy:
					   changed files go up whole from
					   now on (atomic; writeback.c) */
	uint64_t delta_uploads;         /* files stored again by part copies
					   and changed bytes (atomic) */
	char *spool_dir;
	struct fuse_session *se;
	struct objfs_pool *pool;
	struct objfs_dcache *dcache;    /* NULL: no on-disk data cache */
	struct fs_prefetch pf;          /* prefetch.c (prefetch.h) */
	uint64_t listed_renewed;        /* large listings renewed instead
					   of listed whole (atomic,
					   dirsnap.c) */
	uint64_t listed_ranges;         /* listings in ranges (atomic,
					   dirsnap.c) */
	struct objfs_budget mem;
	struct objfs_list dirhandles;   /* open directories (struct dhandle;
					   fs->lock), idem */
	struct objfs_list handles;      /* open files (struct fhandle;
					   fs->lock), freed at
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

	struct fs_capacity cap;         /* capacity.c (capacity.h) */
	bool stopping;                  /* fs->lock: destroy began (the
					   usage scan ends) */
	unsigned n_attr_dirty;          /* fs->lock: inodes with attr_dirty */
	unsigned n_upload_wait;         /* fs->lock: inodes with upload_wait */
	uint64_t spool_used;            /* fs->lock: disk bytes of all spools */
	uint64_t relieved_at;           /* fs->lock: spool_used after the last
					   look at other files' spools */
	pthread_mutex_t rabuf_mu;       /* read-ahead buffers kept for reuse */
	char *rabuf[RA_MAX];            /* ra_chunk bytes each, their budget
					   still taken (rabuf_mu) */
	unsigned n_rabuf;
	pthread_cond_t rabuf_cv;        /* a buffer given back (rabuf_mu) */
	uint64_t ra_given;              /* buffers given back (rabuf_mu) */
	unsigned ra_readers;            /* handles reading ahead, sharing
					   mem_limit (rabuf_mu) */
	double ra_ttfb, ra_xfer;        /* averages of read-ahead GETs: wait
					   for the first byte, transfer of a
					   chunk after it, s (rabuf_mu) */
	uint64_t ra_gets;               /* read-ahead GETs sent (atomic) */
	uint64_t ra_bytes;              /* bytes they asked for (atomic) */
	uint64_t ra_direct;             /* reads that sent a GET of their own,
					   no read-ahead buffer (atomic) */

	/* resumable mounts (journal.c, journal.h) */
	struct fs_resume journal;
	pthread_mutex_t hid_mu;         /* leaf */
	struct hid *hid_tab[HID_HASH];  /* open handles by id (hid_mu) */
	uint64_t next_hid;              /* hid_mu */
	uint64_t unsaved_kept;          /* files kept as objfs-unsaved-*
					   (spool_keep(), recover.c); atomic */
	uint64_t unsaved_recovered;     /* of those, what a dead mount left
					   (recover.c); atomic */
	void *io_ctx;                   /* objfs_fs_io_ctx() */
	struct fs_metrics *metrics;     /* NULL: nothing counted (fsmetrics.c) */

	/* the attribute index (attrindex.c) */
	pthread_mutex_t aidx_mu;        /* leaf */
	pthread_cond_t aidx_cv;         /* wakes the flusher (aidx_mu) */
	struct aidx_dir *aidx;          /* pending entries (aidx_mu) */
	struct aidx_known *aidx_known;  /* segment keys known per directory
					   (aidx_mu; attrindex.c) */
	struct aidx_cat *aidx_cat;      /* the volume's index in one listing
					   (aidx_mu; attrindex.c) */
	uint64_t aidx_seq;              /* segments written (aidx_mu) */
	bool aidx_stop;                 /* aidx_mu */
	bool aidx_started;
	pthread_t aidx_thread;
	char writer[17];                /* this mount's id in segment names */

	/* the numbers of inodes freed lately, by (parent's number, name),
	 * given again at the next lookup of that name (inode.c; fs->lock) */
	struct ino_mem {
		struct ino_mem_ent **tab;       /* INO_MEM_BUCKETS chains */
		struct ino_mem_ent **ring;      /* INO_MEM_MAX, oldest first */
		size_t next;                    /* ring's next slot */
	} ino_mem;

	struct inode *hl_list;          /* data inodes (fs->lock) */
	struct hl_ino *hl_inos;         /* link sets' inode numbers given
					   here (hardlink.c; fs->lock) */

	/* the names created or removed here lately, merged into listings
	 * until the store's show them (recent.c; fs->lock) */
	struct fs_recent recent;
};

/* What the store says about one name. */
struct probe {
	bool is_dir;
	bool marker;            /* directory with a marker object */
	uint64_t size;
	char etag[OBJFS_ETAG_MAX];
	struct objfs_fattr fa;
	unsigned meta_mask;     /* OBJFS_FATTR_* the metadata holds */
	char hl_id[33];         /* a hard link's name: its link set, else "" */
	char hl_tok[17];        /* and its token (volume/hlink.h) */
	bool headed;            /* from a HEAD (probe_from_info()) */
	bool xattrs;            /* and its metadata holds extended
				   attributes (xattr.h): unless it does, they
				   are known without another HEAD */
};

/* Every attribute in the metadata (what objfs writes). */
#define FATTR_ALL (OBJFS_FATTR_MODE | OBJFS_FATTR_UID | OBJFS_FATTR_GID | \
		   OBJFS_FATTR_MTIME | OBJFS_FATTR_RDEV | OBJFS_FATTR_ATIME | \
		   OBJFS_FATTR_CTIME)

/* ---- debug-build checks ------------------------------------------------ */

/* True when m is locked (by this thread or, which a check cannot tell
 * apart, another one). */
static inline bool fs_mutex_held(pthread_mutex_t *m)
{
	if (pthread_mutex_trylock(m) != 0)
		return true;
	pthread_mutex_unlock(m);
	return false;
}

/* True when l is held for reading or writing (by some thread). */
static inline bool fs_rwlock_held(pthread_rwlock_t *l)
{
	if (pthread_rwlock_trywrlock(l) != 0)
		return true;
	pthread_rwlock_unlock(l);
	return false;
}

#ifdef NDEBUG
#define fs_assert_held(m) ((void)0)
#define fs_assert_ns_held(fs) ((void)0)
#else
#define fs_assert_held(m) assert(fs_mutex_held(m))
/* The caller holds fs->ns (either side). */
#define fs_assert_ns_held(fs) assert(fs_rwlock_held(&(fs)->ns))
#endif
/* The caller holds fs->lock. */
#define fs_assert_locked(fs) fs_assert_held(&(fs)->lock)

/* ---- small helpers ------------------------------------------------------ */

/* fs's short name for objfs_now_mono() (common/clock.h). */
static inline double now_mono(void)
{
	return objfs_now_mono();
}

static inline struct timespec now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

static inline struct objfs_fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline bool is_root(struct objfs_fs *fs, struct inode *in)
{
	return in == fs->root;
}

static inline bool same_type(mode_t a, mode_t b)
{
	return (a & S_IFMT) == (b & S_IFMT);
}

/* ---- edge.c: the FUSE edge (below every op file) ---- */

#define UNIQUE_RESEND (1ULL << 63)
/* The unique of the request this thread processes (objfs_fs_set_unique(),
 * 0 when not resumable). */
uint64_t req_unique(void);
/* Test only (-o crash_at=OP:NAME, or OP when name is NULL): kills the
 * process with SIGKILL when op runs on a file named name, once per state
 * directory.  No lock. */
void state_crash_point(struct objfs_fs *fs, const char *op, const char *name);
/* Test only (-o crash_at=OP:NAME): state_crash_point() with the name of
 * in.  Takes fs->lock. */
void crash_point(struct objfs_fs *fs, const char *op, struct inode *in);
/* Replies err to req: store errors a file system call cannot mean become
 * EIO; the one place an errno is negated (by libfuse). */
void reply_err(fuse_req_t req, int err);

/* ---- inode.c: tables, tree links, inode lifetime ---- */

/* The inode the kernel calls ino (the root for FUSE_ROOT_ID), or NULL; no
 * reference taken.  fs->lock held. */
struct inode *find_ino(struct objfs_fs *fs, fuse_ino_t ino);
/* parent's linked child called name, or NULL; no reference taken.
 * fs->lock held. */
struct inode *find_child(struct objfs_fs *fs, struct inode *parent,
			 const char *name);
/* Adds in to / removes it from the name hash under (in->parent,
 * in->name).  fs->lock held. */
void name_hash(struct objfs_fs *fs, struct inode *in);
void name_unhash(struct objfs_fs *fs, struct inode *in);
/* Links in first among parent's children / unlinks it from its parent's
 * children (in->parent and the refs are the caller's).  fs->lock held. */
void sib_link(struct inode *parent, struct inode *in);
void sib_unlink(struct inode *in);
/* A new inode named name under parent (linked, pinning parent), or an
 * unlinked one when parent is NULL; every count 0, so the caller takes a
 * reference (nlookup, nopen or refs) or calls maybe_free().  Owned by the
 * tables.  NULL when out of memory.  fs->lock held. */
struct inode *inode_new(struct objfs_fs *fs, struct inode *parent,
			const char *name, mode_t mode);
/* Frees in at once: out of the ino table, with its snapshot, spool and
 * memory.  It must be detached and unused (maybe_free() decides), or the
 * whole fs going (objfs_fs_destroy()).  fs->lock held. */
void inode_free(struct objfs_fs *fs, struct inode *in);
/* Detaches in from its name and parent; returns the parent, whose pin
 * the child held: the caller runs maybe_free() on it after.  fs->lock
 * held. */
struct inode *detach(struct objfs_fs *fs, struct inode *in);
/* Frees in, and parents left unused, when nothing holds it and it is
 * clean.  fs->lock held. */
void maybe_free(struct objfs_fs *fs, struct inode *in);
/* The key of in into buf: "" for the root, "a/b" for a file, "a/b/" for
 * a directory when dir_slash.  0, ENAMETOOLONG or ENOENT (unlinked).
 * fs->lock held. */
int inode_key(struct objfs_fs *fs, struct inode *in, bool dir_slash,
	      char *buf, size_t cap);
/* ENAMETOOLONG when the key of name under dir (pinned by the caller)
 * passes fs->key_room, else 0.  Takes fs->lock. */
int key_room_check(struct objfs_fs *fs, struct inode *dir, const char *name);
/* The mode of a name without stored attributes, of type S_IFDIR, S_IFLNK
 * or S_IFREG.  No lock. */
mode_t default_mode(struct objfs_fs *fs, mode_t type);
/* in's attributes as stat / as a FUSE entry.  fs->lock held. */
void fill_stat(struct objfs_fs *fs, struct inode *in, struct stat *st);
void fill_entry(struct objfs_fs *fs, struct inode *in,
		struct fuse_entry_param *e);
/* Pins the inode the kernel calls ino (refs++): NULL when unknown.
 * unpin() drops the pin (in may be NULL) and frees what is unused.  Both
 * take fs->lock. */
struct inode *pin_ino(struct objfs_fs *fs, fuse_ino_t ino);
void unpin(struct objfs_fs *fs, struct inode *in);

/* ---- lookup.c: finding names in the store ---- */

/* The attributes of an object (dir: a directory marker) as a probe.  No
 * lock. */
void probe_from_info(struct objfs_fs *fs, const struct objfs_obj_info *info,
		     bool dir, struct probe *p);
/* The attributes of a directory implied by the keys under it.  No lock. */
void probe_implied_dir(struct objfs_fs *fs, struct probe *p);
/* *used: some key starts with prefix (which ends in "/"), not counting
 * prefix itself when ignore_self.  0 or an errno.  No lock (store I/O). */
int prefix_used(struct objfs_fs *fs, const char *prefix, bool ignore_self,
		bool *used);
/* Copies probe results into in's attributes; local state wins while in
 * has unsaved data or a spool.  fs->lock held. */
void apply_probe(struct objfs_fs *fs, struct inode *in, const struct probe *p);
/* Looks up (parent, name) (parent pinned by the caller) and sets *out with
 * a reference taken: nlookup for the kernel, refs (drop with unpin()) when
 * pin.  0, ENOENT, ENOTDIR, ENAMETOOLONG, EINVAL or a store errno.  Takes
 * fs->lock (store I/O without it). */
int do_lookup(struct objfs_fs *fs, struct inode *parent, const char *name,
	      bool pin, struct inode **out);
/* Re-reads the attributes of a clean inode (pinned by the caller) from the
 * store when older than attr_ttl, or always when force.  0, ESTALE (its
 * type changed), ENOENT or a store errno.  Takes fs->lock. */
int revalidate(struct objfs_fs *fs, struct inode *in, bool force);
/* revalidate(force) of a file by a GET of its first len bytes (a known
 * range: hedged) into sink instead of a HEAD: *fetched when sink then
 * holds them, of the ETag the inode has (a store answering with more
 * than asked, EFBIG, is asked by a HEAD instead: not fetched). */
int revalidate_get(struct objfs_fs *fs, struct inode *in, uint64_t len,
		   const struct objfs_sink *sink, bool *fetched);

/* ---- dirsnap.c: listings and readdir entries ---- */

/* Drops a reference to s (NULL: nothing) and frees it with the last one.
 * fs->lock held. */
void snap_put_locked(struct dirsnap *s);
/* Drops dir's own listing (dir may be NULL).  fs->lock held. */
void snap_drop(struct inode *dir);
/* The index of name in s, or where it would go (*found false).  fs->lock
 * held. */
size_t snap_find(const struct dirsnap *s, const char *name, bool *found);
/* Keeps dir's listing current after a local change: name added (add) or
 * removed.  Every change of a directory's names here passes through it:
 * it also notes the change in fs->recent, which later listings merge
 * until the store's listing shows it (recent.c).  fs->lock held. */
void snap_note(struct objfs_fs *fs, struct inode *dir, const char *name,
	       bool add, bool is_dir);
/* in (a linked file, symlink or special file) reached the store for the
 * first time now (its upload, after a create that noted it): its
 * change's window in fs->recent starts again, from when a listing can
 * first show it.  fs->lock held. */
void snap_note_stored(struct objfs_fs *fs, struct inode *in);
/* Whether dir's own listing is fresh (dir_ttl) and, with local changes
 * noted, names nothing: an rmdir need not list it again.  fs->lock held. */
bool snap_empty_fresh(const struct objfs_fs *fs, const struct inode *dir);
struct aidx_pre;                /* attrindex.c */
/* Lists dir (pinned by the caller) into a new snapshot; *out gets a
 * reference of its own (snap_put_locked()).  prev: NULL for the first
 * window (a whole listing is installed as dir->snap), else the window
 * this one follows.  pre (NULL, or snap_index_start()'s for dir; still
 * the caller's after): a directory of more than one page is listed in
 * parallel ranges split at the names of its index, when it has one.  0
 * or an errno.  Takes fs->lock (store I/O without it). */
int snap_build(struct objfs_fs *fs, struct inode *dir,
	       const struct dirsnap *prev, struct aidx_pre *pre,
	       struct dirsnap **out);
/* Whether dir's listing is one snap_build() renews rather than lists
 * whole: a whole listing of SNAP_RELIST_MAX names or more, listed whole
 * less than SNAP_FULL_TTLS x dir_ttl ago.  fs->lock held. */
#define SNAP_FULL_TTLS 60
bool snap_renewable(const struct objfs_fs *fs, const struct inode *dir);
/* Fills the attributes of s's entries (readdirplus) with parallel HEADs,
 * once per snapshot; s is referenced by the caller; pre (NULL, or
 * snap_index_start()'s before s was listed) is consumed.  Takes
 * fs->lock. */
void snap_fetch_attrs(struct objfs_fs *fs, struct inode *dir,
		      struct dirsnap *s, struct aidx_pre *pre);
/* The attributes readdirplus gives entries [pos, pos + count) of s
 * (issue 33): subdirectories' markers and the attribute index once per
 * snapshot; files the index does not describe (another S3 client's) are
 * HEADed only once the reader looked up a name of an earlier reply (it
 * stats them: `ls -l`), HEAD_BATCH ahead; before that they go without
 * attributes (dent_lookup_only()), so `ls -f` costs no HEAD per name,
 * and in short replies (16 entries, then 32...): returns how many
 * entries this reply may give (SIZE_MAX: all that fit).  s is
 * referenced by the caller; pre as for snap_fetch_attrs().  Takes
 * fs->lock. */
size_t snap_reply_attrs(struct objfs_fs *fs, struct inode *dir,
			struct dirsnap *s, struct aidx_pre *pre, size_t pos,
			size_t count);
/* The subdirectories of the directory whose key is dkey after the key
 * after (a listing in windows: the rest after its first one), counted
 * page by page without keeping names, into *n.  0 or an errno.  No lock
 * held (store I/O). */
int snap_count_dirs(struct objfs_fs *fs, const char *dkey, const char *after,
		    uint32_t *n);
/* Starts reading dir's attribute index while the caller lists it (for
 * snap_fetch_attrs); NULL when it cannot.  Takes fs->lock. */
struct aidx_pre *snap_index_start(struct objfs_fs *fs, struct inode *dir);
/* The inode number readdir reports for a name without an inode. */
uint64_t name_ino(const char *name);
/* The inode number and type (S_IFMT bits) readdir gives listing entry d
 * of dir without an inode for the kernel: lstat's as far as this mount
 * knows (its inode, a hard link's file, or the attributes the listing
 * holds), else name_ino() and a directory as listed, a regular file for
 * a file of PATH_MAX bytes or more (nothing else objfs writes is that
 * large), 0 (DT_UNKNOWN) for a smaller one.  fs->lock held. */
void dent_ino_type(struct objfs_fs *fs, struct inode *dir,
		   const struct dent *d, uint64_t *ino, mode_t *type);
/* Whether readdirplus gives entry d of dir without an inode (the
 * kernel's lookup finds it): a hard link's name (hl_dent()), or a file
 * without an inode whose attributes no index entry or HEAD gave (a name
 * noted here after the listing, a name inode gone since, another
 * client's file snap_reply_attrs() did not HEAD).  fs->lock held. */
bool dent_lookup_only(struct objfs_fs *fs, struct inode *dir,
		      const struct dent *d);
/* The inode for a listing entry, found or made (*created: new, all counts
 * 0, owned by the tables).  NULL when out of memory.  fs->lock held. */
struct inode *dent_inode(struct objfs_fs *fs, struct inode *dir,
			 const struct dent *d, bool *created);

/* ---- writeback.c: spools, uploads, the spool bound ---- */

/* Writes size bytes of buf at off into in's spool (started over the
 * stored object if need be), charged against the capacity first; marks
 * in dirty, streams complete parts of a sequential writer and relieves
 * the spool bound.  0 or an errno (ENOSPC past the capacity).  Takes
 * fs->ns (read), in->mu and fs->lock: none held. */
int inode_write(struct objfs_fs *fs, struct inode *in, const char *buf,
		size_t size, uint64_t off);
/* Sets the size of in (a regular file) to size: its spool cut or
 * extended, charged against the capacity first, in marked dirty; a
 * sequential writer's stream aborted (size 0) or ended (stream_stop).
 * truncate and an open with O_TRUNC.  0 or an errno (ENOSPC past the
 * capacity).  fs->ns (read) and in->mu held; takes fs->lock. */
int inode_truncate(struct objfs_fs *fs, struct inode *in, uint64_t size);
/* A new spool over base bytes of ETag etag (0, "": a new file), named in
 * the state directory of a resumable mount (*id, else 0).  0 or an errno
 * (logged).  Takes fs->lock. */
int spool_start(struct objfs_fs *fs, uint64_t base, const char *etag,
		struct objfs_spool **out, uint64_t *id);
/* Starts a spool for in (over its stored object) if it has none.  0 or an
 * errno.  in->mu held; takes fs->lock. */
int spool_ensure(struct objfs_fs *fs, struct inode *in);
/* Fetches whatever of [off, end) in's spool (present) lacks.  0 or an
 * errno.  in->mu held; takes fs->lock. */
int spool_fetch(struct objfs_fs *fs, struct inode *in, uint64_t off,
		uint64_t end);
/* Recounts the disk blocks of in's spool into fs->spool_used.  in->mu
 * held; takes fs->lock. */
void spool_account(struct objfs_fs *fs, struct inode *in);
/* Drops the spool of a clean in (only when nobody has it open if
 * idle_only).  in->mu held; takes fs->lock. */
void spool_drop(struct objfs_fs *fs, struct inode *in, bool idle_only);
/* Abandons in's stream (its parts are aborted in the store).  in->mu
 * held. */
void stream_abort(struct objfs_fs *fs, struct inode *in);
/* Frees st (NULL: nothing) without a word to the store.  No lock. */
void stream_free(struct stream *st);
/* Loading a dead server's state (journal_load.c): in goes on with the
 * upload upload_id of key, begun with the attributes fa; its parts are then
 * set in in->stream->parts, the punched bytes in ->punched, and
 * stream_load_done() derives the rest (or drops a stream that has
 * nothing to go on with).  0 or ENOMEM.  fs->lock held. */
int stream_load(struct objfs_fs *fs, struct inode *in, const char *key,
		const char *upload_id, const struct objfs_fattr *fa);
void stream_load_done(struct objfs_fs *fs, struct inode *in);
/* Ends in's stream before a change that is not an append (completed when
 * its parts hold bytes the spool gave up).  0 or an errno.  fs->ns and
 * in->mu held. */
int stream_stop(struct objfs_fs *fs, struct inode *in);
/* Uploads a dirty inode (whole object, or completes its stream); on
 * failure it stays dirty.  0 or an errno.  fs->ns (read or write) and
 * in->mu held; takes fs->lock. */
int inode_sync(struct objfs_fs *fs, struct inode *in);
/* A flush: inode_sync_told() taking fs->ns (read) and in->mu itself,
 * or nothing when the upload may wait (upload_delay: see
 * upload_may_wait()). */
int inode_sync_locked_ns(struct objfs_fs *fs, struct inode *in);
/* The upload of in may wait after its close (upload_delay set, a new
 * plain file, not streaming): fs->lock held. */
bool upload_may_wait(const struct objfs_fs *fs, const struct inode *in);
/* Uploads the closed files whose upload waited upload_delay, or all (no
 * lock held; attrs_flush() calls it). */
void uploads_flush(struct objfs_fs *fs, bool all);
/* Stores the attributes of a clean file, symlink or directory (a copy in
 * place, or a marker).  0 or an errno.  fs->ns (read) held; takes
 * fs->lock. */
int store_attrs(struct objfs_fs *fs, struct inode *in);
/* Attributes of a clean file or symlink are stored late (attr_dirty), so
 * that what follows a close (utime, chmod, rename: rsync, cp -p, tar)
 * costs one copy, not one each: attrs_defer() marks in (pinned by the
 * caller; fs->lock held); attrs_done() clears the mark after its
 * attributes reached the store some other way (an upload, a rename's
 * copy) or the object went (fs->lock held, in kept by the caller: a
 * pin, or an open handle for an upload at flush or release);
 * attrs_sync() stores them now when marked (fs->ns held, in->mu held;
 * takes fs->lock); attrs_flush() stores those marked longer than
 * ATTR_DELAY, or all (no lock held). */
#define ATTR_DELAY 0.5
void attrs_defer(struct objfs_fs *fs, struct inode *in);
void attrs_done(struct objfs_fs *fs, struct inode *in);
int attrs_sync(struct objfs_fs *fs, struct inode *in);
void attrs_flush(struct objfs_fs *fs, bool all);
/* Makes an open file's data local before its object goes away.  0 or an
 * errno.  fs->ns held; takes in->mu and fs->lock. */
int keep_open_data(struct objfs_fs *fs, struct inode *in);
/* Gives the spool of in, dirty after a failed save, a name in the spool
 * directory (objfs-unsaved-PID-INO.N) and logs it as an error naming the
 * file, once; counted in fs->unsaved_kept.  0 (kept, or nothing to keep)
 * or an errno (logged: the data stays in the spool only).  in->mu held. */
int spool_keep(struct objfs_fs *fs, struct inode *in);

/* ---- attrindex.c: the attribute index ---- */

/* Draws the writer id, makes the locks / frees what is pending.  No lock
 * (create, destroy). */
int aidx_init(struct objfs_fs *fs);
void aidx_destroy(struct objfs_fs *fs);
/* Notes that object key (a file or symlink) now has ETag etag and, in its
 * metadata, the fields mask (OBJFS_FATTR_*) of fa (link: a symlink's
 * target, else NULL): an entry of this mount's next segment of its
 * directory.  Takes fs->aidx_mu (a leaf: any lock may be held). */
void aidx_note(struct objfs_fs *fs, const char *key, const char *etag,
	       const struct objfs_fattr *fa, unsigned mask,
	       const char *link);
/* Writes the pending entries of every directory (all), or of those whose
 * entries waited long enough.  Takes fs->aidx_mu; store I/O without it;
 * no lock held. */
void aidx_flush(struct objfs_fs *fs, bool all);
/* The flusher thread (arg: the fs) until fs->aidx_stop. */
void *aidx_main(void *arg);
/* The keys of the segments of the directory whose key is dir into *keys,
 * *n (objfs_tree_keys_free them, also after an error), from the
 * catalogue while it is fresh, else by a LIST; *listed: when the answer
 * was listed (now_mono()).  0 or an errno.  No lock held. */
int aidx_seg_keys(struct objfs_fs *fs, const char *dir, char ***keys,
		  size_t *n, double *listed);
/* Starts reading the index of the directory whose key is dir on the pool
 * (its LIST, and the GETs of its segments) while the caller lists the
 * directory; NULL when it cannot (then aidx_fill reads it).  The result
 * goes to aidx_fill or aidx_pre_cancel.  No lock held. */
struct aidx_pre *aidx_pre_start(struct objfs_fs *fs, const char *dir);
/* Waits for pre (NULL: nothing) and frees it. */
void aidx_pre_cancel(struct aidx_pre *pre);
/* Split points for listing the directory pre reads in parallel ranges:
 * waits for pre's read, then gives in *out (*n of them, owned: free with
 * objfs_tree_keys_free) the full keys of every step-th name its index
 * holds after the key after, in order; none when pre read nothing or
 * after is not under its directory.  0, EFBIG (more than max split
 * points: list it in windows), ENAMETOOLONG (a name no key can hold) or
 * ENOMEM.  pre stays the caller's (for
 * aidx_fill).  No lock held. */
int aidx_pre_split(struct aidx_pre *pre, const char *after, size_t step,
		   size_t max, char ***out, size_t *n);
struct objfs_attrseg_entry;
/* The renewal of a large listing (dirsnap.c): the segment keys of the
 * directory whose key is dir now (*keys, *n, sorted: objfs_tree_keys_free
 * them, also after an error), and fn(arg, e) for every entry of each
 * segment that is neither in old (n_old keys, sorted) nor this mount's
 * own (its changes are in the listing already).  0 or an errno.  No lock
 * held; fn is called without one. */
int aidx_news(struct objfs_fs *fs, const char *dir, char *const *old,
	      size_t n_old, char ***keys, size_t *n,
	      void (*fn)(void *arg, const struct objfs_attrseg_entry *e),
	      void *arg);
/* Fills listing entry e's name in s with e's attributes when s shows the
 * version e describes (ETag, Last-Modified, size); true when it does.
 * fs->lock held. */
bool aidx_apply(struct objfs_fs *fs, struct dirsnap *s,
		const struct objfs_attrseg_entry *e);
/* Fills the entries of snapshot s (referenced by the caller) of the
 * directory whose key is dir from the index (what pre read of it, when
 * not NULL; pre is consumed); compacts it when it has many segments.  No
 * lock held; takes fs->lock. */
void aidx_fill(struct objfs_fs *fs, const char *dir, struct dirsnap *s,
	       struct aidx_pre *pre);
/* Deletes the index of the directory whose key is dir and, with marker
 * (not NULL), that key too, in one request when the segments are known
 * from a recent listing (else the index is listed first).  0, or the
 * errno of deleting marker (a failed index delete is only logged).  later:
 * every key through the store's deferred deletes (objfs_store_del_deferred).
 * No lock held. */
int aidx_drop(struct objfs_fs *fs, const char *dir, const char *marker,
	      bool later);
/* After a directory rename moved every key under from to to (both
 * ending in "/"): deletes the index of every directory of the old tree,
 * found by listing to.  No lock held (fs->ns may be). */
void aidx_drop_tree(struct objfs_fs *fs, const char *from, const char *to);

/* ---- times.c: timestamps, a directory's link count ---- */

/* in's atime / ctime as stat shows them.  fs->lock held. */
struct timespec inode_atime(const struct inode *in);
struct timespec inode_ctime(const struct inode *in);
/* Every attribute of in to store (mode, owner, times, rdev) into *fa.
 * fs->lock held. */
void inode_fattr(const struct inode *in, struct objfs_fattr *fa);
/* Sets in's attributes from stored ones (mask: the OBJFS_FATTR_* fields
 * the metadata holds; atime and ctime fall back to mtime); a directory
 * keeps times newer than the stored ones (its entries changed here).
 * fs->lock held. */
void inode_set_fattr(struct inode *in, const struct objfs_fattr *fa,
		     unsigned mask);
/* in's data (data: mtime and ctime) or attributes (ctime) changed now;
 * atime stays.  fs->lock held. */
void inode_changed(struct inode *in, bool data);
/* An entry of dir was added or removed here (snap_note()): its mtime and
 * ctime are now; subdirs +1 / -1 when the entry is a directory that
 * appeared / went (0: the same number).  fs->lock held. */
void dir_entry_changed(struct inode *dir, bool is_dir, int subdirs);
/* dir was listed whole into s: its subdirectories counted (into
 * dir->nsubdirs and s->ndirs) and, unless its times are this mount's own
 * already, taken from the newest entry.  fs->lock held. */
void dir_listed(struct inode *dir, struct dirsnap *s);
/* st_nlink of in.  fs->lock held. */
nlink_t inode_nlink(struct objfs_fs *fs, const struct inode *in);
/* Whether st_nlink of in may be shown: not a directory, or one whose
 * subdirectories were counted from a listing.  fs->lock held. */
bool inode_nlink_known(const struct inode *in);
/* Makes the subdirectory count of dir (pinned by the caller; anything
 * else: nothing to do) known before its attributes are shown: lists it
 * when no listing counted it yet (a whole listing is kept as dir->snap,
 * so a readdir that follows reuses it; a directory listed in windows is
 * counted page by page, its names not kept).  0 or an errno (the count
 * then stays unknown).  Takes fs->lock (store I/O without it). */
int dir_count(struct objfs_fs *fs, struct inode *dir);

/* ---- hardlink.c: hard links ---- */

/* Inode numbers from HL_INO_BASE up are link sets' (from their id), the
 * counter's are below. */
#define HL_INO_BASE (1ULL << 62)

/* link(2): gives in (a regular file, pinned by the caller) the name
 * newname in dir (pinned).  A plain file becomes a link set first.  0,
 * EEXIST, EPERM or a store errno.  fs->ns held (read); takes in->mu and
 * fs->lock. */
int hl_link(struct objfs_fs *fs, struct inode *in, struct inode *dir,
	    const char *newname);
/* The name inode name_in (pinned by the caller) resolved to the file it
 * names, with a reference taken on it (refs when pin, else a kernel
 * lookup: nlookup): *out.  ENOENT
 * when its data is gone (the dangling name is removed).  Takes fs->lock
 * (store I/O without it). */
int hl_resolve(struct objfs_fs *fs, struct inode *name_in, bool pin,
	       struct inode **out);
/* *in (pinned by the caller, from do_lookup() with pin) replaced, when a
 * hard link's name, by the file it names (pinned; the name unpinned; NULL
 * on failure).  0 or an errno of hl_resolve().  Takes fs->lock. */
int hl_file(struct objfs_fs *fs, struct inode **in);
/* The name of link set id whose token is tok is gone (unlink, renamed
 * over): its entry is dropped, and the data freed when no name is left
 * (kept local first while open).  The name is gone whatever happens
 * next: a store failure leaves an orphan (logged).  fs->ns held; takes
 * fs->lock. */
void hl_name_gone(struct objfs_fs *fs, const char *id, const char *tok);
/* Re-reads a data inode's attributes and link count (revalidate()).  0,
 * ENOENT or a store errno.  Takes fs->lock. */
int hl_revalidate(struct objfs_fs *fs, struct inode *in, bool force);
/* in (pinned by the caller), a file the kernel knows by its name, turned
 * out to be a hard link's name (another mount linked it, or renamed a
 * link name over it): it becomes the data inode of the set, so the
 * kernel's inode goes on with the file, unless this mount has one
 * (hl_replaced()).  0 or an errno.  Takes fs->lock. */
int hl_adopt(struct objfs_fs *fs, struct inode *in);
/* Before p (a probe of in's name) is applied to in (revalidate()): when
 * p names a link set this mount has another data inode of (another
 * mount renamed a link name over in's name), in leaves the tree as the
 * file replaced, keeping what it holds, and true is returned (p is not
 * applied: in never becomes a second inode of the set).  fs->lock held. */
bool hl_replaced(struct objfs_fs *fs, struct inode *in,
		 const struct probe *p);
/* The data key of data inode in into buf.  fs->lock held. */
int hl_data_key(const struct inode *in, char *buf, size_t cap);
/* True when listing entry d of dir names a hard link (readdirplus gives
 * it without attributes: the kernel's lookup finds the file).  fs->lock
 * held. */
bool hl_dent(struct objfs_fs *fs, struct inode *dir, const struct dent *d);
/* What a listing shows of the name inode name_in (a hard link's name):
 * its file's data inode while this mount has it (its type and inode
 * number are lstat's), else name_in itself (its type is the file's: the
 * name's metadata holds it).  Any other inode: itself.  fs->lock held. */
const struct inode *hl_name_file(struct objfs_fs *fs,
				 const struct inode *name_in);
/* Loading a dead server's state (journal_load.c): in is the data inode
 * of set id (NULL: it is none).  0 or ENOMEM.  fs->lock held. */
int hl_load(struct objfs_fs *fs, struct inode *in, const char *id);
/* Takes in off fs->hl_list and frees its id (inode_free()).  fs->lock
 * held. */
void hl_inode_free(struct objfs_fs *fs, struct inode *in);
/* The number an inode freed lately had under (parent, name), taken (so
 * given once), or 0; peek: looked at only.  A number some live inode has
 * is never given (fs->lock). */
fuse_ino_t ino_mem_take(struct objfs_fs *fs, fuse_ino_t parent,
			const char *name, bool peek);
/* Frees fs->ino_mem (destroy; fs->lock). */
void ino_mem_free(struct objfs_fs *fs);
/* Frees fs->hl_inos (destroy).  fs->lock held. */
void hl_inos_free(struct objfs_fs *fs);

/* A flush or fsync: uploads in (ns read and in->mu held) and remembers a
 * failure the application is told (in->told_unsaved). */
int inode_sync_told(struct objfs_fs *fs, struct inode *in);
/* The last close of in (ns read and in->mu held): uploads it, unless the
 * application was told its data is not stored (in->told_unsaved): then
 * the upload stops, the object stays as it was, and the bytes are kept in
 * spool_dir (spool_keep()).  So what the application was told and what
 * the store holds agree.  0 or the errno of the upload. */
int inode_release_sync(struct objfs_fs *fs, struct inode *in);

/* ---- fsmetrics.c: hooks, each a no-op while fs->metrics is NULL ---- */

enum fs_read_source { FS_READ_READAHEAD, FS_READ_STORE, FS_READ_LOCAL };
/* reply_err(): the errno this thread's request is answered with. */
void fs_metrics_note_err(int err);
/* A read answered with n bytes from src.  No lock needed. */
void fs_metrics_read(struct objfs_fs *fs, enum fs_read_source src, size_t n);
/* An open kept (or invalidated) the kernel's page cache.  No lock needed. */
void fs_metrics_open(struct objfs_fs *fs, bool kept);
/* A streamed part was started.  No lock needed. */
void fs_metrics_streamed_part(struct objfs_fs *fs);
/* Frees fs->metrics (destroy). */
void fs_metrics_free(struct objfs_fs *fs);
/* The operations the metered table counts (fsmetered.c), in the order of
 * fsmetrics.c's op label. */
enum {
	OP_LOOKUP, OP_FORGET, OP_FORGET_MULTI, OP_GETATTR, OP_SETATTR,
	OP_READLINK, OP_MKNOD, OP_MKDIR, OP_UNLINK, OP_RMDIR, OP_SYMLINK,
	OP_RENAME, OP_LINK, OP_OPEN, OP_READ, OP_WRITE, OP_FLUSH, OP_RELEASE,
	OP_FSYNC, OP_OPENDIR, OP_READDIR, OP_READDIRPLUS, OP_RELEASEDIR,
	OP_STATFS, OP_CREATE, OP_FSYNCDIR, OP_SETXATTR, OP_GETXATTR,
	OP_LISTXATTR, OP_REMOVEXATTR, OP_COUNT
};
/* A request of the metered table: begun (its start, ns) / ended (counted
 * by op, timed, counted by errno when reply_err() answered it on this
 * thread).  No lock needed. */
uint64_t fs_metrics_op_begin(void);
void fs_metrics_op_end(struct objfs_fs *fs, unsigned op, uint64_t t0);
/* A write of n bytes ended: counted when it was accepted.  No lock
 * needed. */
void fs_metrics_written(struct objfs_fs *fs, size_t n);

/* ---- xattr.c: extended attributes (user.* in object metadata) ---- */

/* Makes in's attributes known (in->xattr_known): a HEAD of its object
 * when they are not, or, when fresh, were read more than attr_ttl ago
 * and no change made here awaits storing.  0 or a store errno.  in->mu
 * held (and ns, so its key stays); takes fs->lock. */
int xattr_load(struct objfs_fs *fs, struct inode *in, bool fresh);
/* Adds in's attributes to m (metadata about to be written for it).  0,
 * E2BIG or ENOMEM.  fs->lock held; xattr_load() done first. */
int xattr_meta(struct objfs_fs *fs, struct inode *in, struct objfs_meta *m);
#endif
