/*
 * prefetch.h - prefetch.c's state and functions: a directory's next small
 * files fetched ahead of a reader going through them in listing order
 * (their bytes in pfcache.c), and the listings of a tree walk's next
 * directories read ahead.  Embedded in the filesystem as fs->pf.cache; included
 * by fs_int.h.
 */
#ifndef OBJFS_FS_PREFETCH_H
#define OBJFS_FS_PREFETCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"

#define PF_DIRQ 16              /* directories queued to list ahead */
#define PF_LISTERS 2            /* threads listing them */

struct objfs_fs;
struct objfs_pfcache;
struct inode;
struct dirsnap;
struct probe;

/* A directory's scan: where its readers and prefetches are in its listing
 * (the inode's pf; fs->lock). */
struct inode_prefetch {
	double time;                     /* a directory: the listing its scan
					    positions count in (its time) */
	size_t next, upto;               /* the position after the last file
					    opened / prefetched */
	size_t dnext, dupto;             /* the same for subdirectories read
					    / listed ahead */
	bool listing;                    /* being listed ahead */
	bool walk;                       /* read in a tree walk: its own
					    subdirectories are listed ahead */
	bool scanned;                    /* its listing (time) was read by
					    a readdir: its files may be
					    prefetched */
};

struct fs_prefetch {
	struct objfs_pfcache *cache;    /* NULL: prefetch=0 */
	/* listings read ahead (fs->lock) */
	pthread_cond_t cv;              /* one ended, or queued, or stop */
	struct inode *dirq[PF_DIRQ];    /* directories to list (pinned) */
	unsigned dirq_n;
	bool stop;
	unsigned nthreads;
	uint64_t listed;                /* directories listed ahead */
	uint64_t used_ms;               /* an open last used a prefetch (mono
					   ms; atomic, prefetch.c) */
	pthread_t threads[PF_LISTERS];
};

/* Makes / frees fs->pf.cache (prefetch > 0).  0 or ENOMEM.  No lock (create;
 * destroy after the pool). */
int pf_init(struct objfs_fs *fs);
void pf_destroy(struct objfs_fs *fs);
/* in (a clean file, pinned) is being opened for reading: when its
 * directory is being read in listing order, starts GETs of the next
 * o.prefetch small files on the pool.  Takes fs->lock. */
void pf_opened(struct objfs_fs *fs, struct inode *in);
/* What a prefetch of key brought, started at most attr_ttl ago and not
 * before attr_time: true with *p (its attributes) and *when (its GET's
 * start); with sink (an open) its bytes written to sink, waiting for a
 * prefetch still loading and taking the entry.  No lock held. */
bool pf_revalidate(struct objfs_fs *fs, const char *key, double attr_time,
		   const struct objfs_sink *sink, struct probe *p,
		   double *when);
/* Starts / stops the threads that list directories ahead (prefetch on).
 * 0 or an errno.  No lock (start; destroy, before the pool goes). */
int pf_start(struct objfs_fs *fs);
void pf_stop(struct objfs_fs *fs);
/* readdir (plus: readdirplus) served entries of dir from its whole
 * listing s (first: from its start): a reader of that listing's files in
 * order may get them prefetched; with plus, when dir is read in its
 * parent's order after a sibling (a tree walk), the next subdirectories
 * of its parent and its own first ones (with inodes so far) are queued to
 * be listed ahead.  fs->lock held.  Returns the GETs of dir's first
 * files when the walk reads files (or NULL): the caller passes them to
 * pf_submit() once fs->lock is released. */
struct pf_starts;
struct pf_starts *pf_dir_read(struct objfs_fs *fs, struct inode *dir,
			      const struct dirsnap *s, bool plus, bool first);
/* Starts the GETs of st and frees it (NULL: nothing).  No lock held. */
void pf_submit(struct objfs_fs *fs, struct pf_starts *st);
/* Waits while dir is being listed ahead (its listing is then fresh).
 * fs->lock held (released while waiting). */
void pf_dir_wait(struct objfs_fs *fs, struct inode *dir);
/* A name changes here (written, truncated, removed, renamed, linked,
 * created): its prefetched data goes, and, for a directory, that of
 * every name under it.  Take fs->lock (not held). */
void pf_drop_inode(struct objfs_fs *fs, struct inode *in);
void pf_drop_name(struct objfs_fs *fs, struct inode *dir, const char *name);

#endif
