/*
 * tree.h - one walk, copy, move and delete of a prefix tree: every key
 * under a prefix, as the controller (clones, snapshots, restores, volume
 * deletion) and the filesystem (directory rename, rmdir of a tree) need.
 *
 * The work runs on the caller's thread pool (common/pool.h) when one is
 * given, in the caller's thread otherwise; the caller is blocked until it
 * is done either way.
 *
 *   walk     pages of the flat listing of a prefix, in key order;
 *   keys     every key under a prefix, all pages, in one array;
 *   size     count and bytes under a prefix;
 *   copy     every key under src to dst + the same relative key, page by
 *            page (memory bounded by one page): restartable, a rerun
 *            copies again what is there;
 *   move     copy, all or nothing: if any copy fails, the copies made are
 *            deleted again and the source is untouched; once every copy is
 *            made, the sources are deleted (a failure then leaves both,
 *            reported as the error);
 *   delete   every key under a prefix, in batches of OBJFS_TREE_DEL_BATCH
 *            keys sent in parallel: restartable.
 *
 * Every key a skip list names (relative to the prefix) is left out of
 * size, copy, move and delete.  src and dst end in '/' or are "", and dst
 * is never under src.  Every function returns 0 or a positive errno.
 */
#ifndef OBJFS_BACKEND_TREE_H
#define OBJFS_BACKEND_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

struct objfs_pool;

/* Keys per multi-delete request sent by this module: some servers (Swift)
 * take long enough over a 1,000-key request to hit transfer timeouts, so
 * smaller requests go in parallel instead. */
#define OBJFS_TREE_DEL_BATCH 100
/* Keys per listing page when the caller says 0. */
#define OBJFS_TREE_PAGE_KEYS 1000

struct objfs_tree_opts {
	struct objfs_pool *pool;        /* not owned; NULL: caller's thread */
	unsigned page_keys;             /* 0: OBJFS_TREE_PAGE_KEYS */
	const char *const *skip;        /* relative keys, NULL-ended; may be NULL */
	const struct objfs_copy_opts *copy;     /* NULL: the store's default */
	struct objfs_log *log;          /* not owned; may be NULL */
};

/* What an operation did (also when it failed part way). */
struct objfs_tree_stats {
	uint64_t count;                 /* keys sized, copied or deleted */
	uint64_t bytes;                 /* bytes of those keys (size, copy) */
	uint64_t left;                  /* move: keys left behind by a failure */
};

/* Called with each page of the listing (full keys); a non-zero return
 * stops the walk and is returned. */
typedef int (*objfs_tree_page_fn)(void *arg,
				  const struct objfs_list_page *page);

int objfs_tree_walk(struct objfs_store *s, const char *prefix,
		    unsigned page_keys, objfs_tree_page_fn fn, void *arg);
/* Every key under prefix (all pages, full keys) into *keys, *n of them:
 * owned by the caller (objfs_tree_keys_free), also what was listed when
 * an error is returned. */
int objfs_tree_keys(struct objfs_store *s, const char *prefix, char ***keys,
		    size_t *n);
void objfs_tree_keys_free(char **keys, size_t n);
int objfs_tree_size(struct objfs_store *s, const char *prefix,
		    const struct objfs_tree_opts *o,
		    struct objfs_tree_stats *st);
int objfs_tree_copy(struct objfs_store *s, const char *src, const char *dst,
		    const struct objfs_tree_opts *o,
		    struct objfs_tree_stats *st);
int objfs_tree_move(struct objfs_store *s, const char *src, const char *dst,
		    const struct objfs_tree_opts *o,
		    struct objfs_tree_stats *st);
int objfs_tree_delete(struct objfs_store *s, const char *prefix,
		      const struct objfs_tree_opts *o,
		      struct objfs_tree_stats *st);

/* Deletes keys[0..n) in parallel batches of OBJFS_TREE_DEL_BATCH on pool
 * (NULL: one after another).  *failed (may be NULL) counts keys not
 * deleted; the first error is returned. */
int objfs_tree_del_keys(struct objfs_store *s, struct objfs_pool *pool,
			const char *const *keys, size_t n, size_t *failed);

#endif
