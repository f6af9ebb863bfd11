/*
 * spool.h - the local, on-disk copy of a file being written.
 *
 * A spool is an unlinked sparse file in the spool directory plus a range
 * set of the bytes it holds ("present").  Invariant: every byte of
 * [0, size) that is not present lies in [0, base_size) and equals the
 * stored object the spool was started from (base_etag), so it can be
 * fetched on demand.  Writes past the end mark the hole between the old
 * end and the write as present (zeros); truncation cuts the ranges and, when
 * growing, marks the new tail present.  The owner (the inode, under its
 * data lock) serialises every call; spools are not thread-safe.
 */
#ifndef OBJFS_FS_SPOOL_H
#define OBJFS_FS_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* A sorted set of disjoint, non-adjacent half-open ranges [start, end)
 * (struct objfs_range: backend.h).
 * OBJFS_RANGESET_INIT is empty; free with objfs_rangeset_release(). */
struct objfs_rangeset {
	struct objfs_range *r;
	size_t n;
	size_t cap;
};
#define OBJFS_RANGESET_INIT { NULL, 0, 0 }

/* Adds [start, end), merging with neighbours.  0 or ENOMEM. */
int objfs_rangeset_add(struct objfs_rangeset *rs, uint64_t start, uint64_t end);
/* Removes [start, end) (may split a range).  0 or ENOMEM. */
int objfs_rangeset_remove(struct objfs_rangeset *rs, uint64_t start,
			  uint64_t end);
/* True when [start, end) is fully in the set (an empty range always is). */
bool objfs_rangeset_covers(const struct objfs_rangeset *rs, uint64_t start,
			   uint64_t end);
/* The first gap of the set inside [start, end): true with *gs and *ge set, or
 * false when the set covers [start, end). */
bool objfs_rangeset_first_gap(const struct objfs_rangeset *rs, uint64_t start,
			      uint64_t end, uint64_t *gs, uint64_t *ge);
/* Total bytes in the set. */
uint64_t objfs_rangeset_bytes(const struct objfs_rangeset *rs);
void objfs_rangeset_release(struct objfs_rangeset *rs);

struct objfs_spool {
	int fd;
	int jfd;                        /* a named spool's journal, or -1 */
	char *path;                     /* a named spool's file, or NULL */
	struct objfs_rangeset present;
	struct objfs_rangeset changed;  /* bytes written since the base (a
					   subset of present; bytes past
					   base_size count as changed
					   whether in it or not); a spool
					   reopened from its journal counts
					   every present byte */
	uint64_t size;                  /* the file's current size */
	uint64_t base_size;             /* size of the object it started from */
	char base_etag[OBJFS_ETAG_MAX]; /* "" when it started from nothing */
	char *kept;                     /* its name once kept (owned), or NULL */
};

/* Creates an empty spool file in dir for a file whose stored object has
 * base_size bytes and ETag base_etag ("" or NULL and 0 for a new file);
 * the spool's size starts at base_size with nothing present.  *out is
 * freed with objfs_spool_destroy().  0 or an errno. */
int objfs_spool_create(const char *dir, uint64_t base_size,
		       const char *base_etag, struct objfs_spool **out);
/* The same as a file at path (a resumable mount's state directory) that
 * outlives the process: every change of the bookkeeping is appended to
 * path.j (no fsync: the process may die, the machine is another story),
 * so objfs_spool_open_named() finds the spool as it was (a record cut
 * short at the journal's end, by a death while writing it, is dropped
 * from the file too, so what is appended next reads back).  0 or an
 * errno (EPROTO: no journal header). */
int objfs_spool_create_named(const char *path, uint64_t base_size,
			     const char *base_etag, struct objfs_spool **out);
int objfs_spool_open_named(const char *path, struct objfs_spool **out);
/* The stored object is now the spool's bytes (an upload completed):
 * base_size size, base ETag etag, nothing changed.  0 or an errno. */
int objfs_spool_rebase(struct objfs_spool *sp, uint64_t size, const char *etag);
/* Closes sp; a named spool's files are deleted. */
void objfs_spool_destroy(struct objfs_spool *sp);
/* Closes sp, leaving a named spool's files (and journal) where they are:
 * data no upload saved and no objfs_spool_keep() kept, for the next mount
 * of the state directory to find (fs/recover.c).  A spool without a
 * name is destroyed. */
void objfs_spool_leave(struct objfs_spool *sp);

/* Writes len bytes at off, growing size.  0 or an errno (ENOSPC, EIO). */
int objfs_spool_write(struct objfs_spool *sp, uint64_t off, const void *buf,
		      size_t len);
/* Stores fetched base bytes at off (only where not present).  0 or errno. */
int objfs_spool_fill(struct objfs_spool *sp, uint64_t off, const void *buf,
		     size_t len);
/* Sets the size.  0 or an errno. */
int objfs_spool_truncate(struct objfs_spool *sp, uint64_t size);
/* The first range in [off, end) (clipped to size) not present. */
bool objfs_spool_missing(const struct objfs_spool *sp, uint64_t off,
			 uint64_t end, uint64_t *gs, uint64_t *ge);
/* Reads up to len present bytes at off; *got gets the count (short at the
 * end of the file).  The range must be present.  0 or an errno. */
int objfs_spool_read(struct objfs_spool *sp, uint64_t off, void *buf,
		     size_t len, size_t *got);
/* Frees the disk blocks of [start, end) and marks them not present.  This
 * breaks the invariant above unless the bytes are kept elsewhere (the
 * parts of a multipart upload under way): the owner must complete that
 * upload and make it the base before those bytes are read.  0 or an errno
 * (EOPNOTSUPP when the spool's file system cannot punch holes). */
int objfs_spool_punch(struct objfs_spool *sp, uint64_t start, uint64_t end);
/* Bytes the spool file occupies on disk (its allocated blocks). */
uint64_t objfs_spool_disk(const struct objfs_spool *sp);
/* Gives the spool file a name in dir, "<prefix>.<n>" with the first n from
 * 0 that is free, so that its bytes outlive the process (unsaved data for an
 * operator to recover): a hard link where the kernel allows one (O_TMPFILE
 * spools), else a copy.  The file holds the spool's size; bytes not present
 * read as zeros.  Once kept, later calls only give the same name.  *path
 * belongs to sp (valid until objfs_spool_destroy).  0 or an errno. */
int objfs_spool_keep(struct objfs_spool *sp, const char *dir,
		     const char *prefix, const char **path);

/* Kept spools (objfs_spool_keep() with a prefix starting with
 * OBJFS_SPOOL_KEPT) are bounded in time: each has a note, PATH.txt, saying
 * what it holds (objfs_spool_note()), and objfs_spool_expire() deletes the
 * kept files and notes of dir last modified more than max_age seconds ago
 * (objfs-mount does at start; docs/objfs-mount.md, "Unsaved data"). */
#define OBJFS_SPOOL_KEPT "objfs-unsaved-"
/* Writes text and a newline to path + ".txt" (0600).  0 or an errno. */
int objfs_spool_note(const char *path, const char *text);
/* Deletes what is older than max_age seconds; *n (when not NULL) counts
 * the kept files deleted.  0 or the first errno (ENOENT: no dir is 0). */
int objfs_spool_expire(const char *dir, double max_age, unsigned *n);

#endif
