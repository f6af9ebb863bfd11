/*
 * datacache.h - an optional on-disk cache of object data, bounded in bytes.
 *
 * Entries are chunks of objects named by (key, ETag, offset): a changed
 * object has a new ETag, so stale data is never served, and old entries
 * just age out.  Each entry is one file in a private directory created
 * under the configured one (removed at destroy); the file starts with the
 * entry's identity, checked on every hit.  Least recently used entries are
 * evicted to keep the total at most `limit` bytes.  Thread-safe.
 */
#ifndef OBJFS_FS_DCACHE_H
#define OBJFS_FS_DCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct objfs_dcache;

/* 0 or an errno; free with objfs_dcache_destroy(). */
int objfs_dcache_create(const char *dir, uint64_t limit,
			struct objfs_dcache **out);
void objfs_dcache_destroy(struct objfs_dcache *c);

/* Copies a cached chunk (at most cap bytes) into buf: true and *got, or
 * false on a miss. */
bool objfs_dcache_get(struct objfs_dcache *c, const char *key,
		      const char *etag, uint64_t off, void *buf, size_t cap,
		      size_t *got);
/* Stores a chunk (best effort: failures only skip caching).  A chunk
 * larger than the limit is not cached. */
void objfs_dcache_put(struct objfs_dcache *c, const char *key,
		      const char *etag, uint64_t off, const void *buf,
		      size_t len);
/* What the cache did since it was made (metrics). */
struct objfs_dcache_stats {
	uint64_t hits, misses, evictions;
	uint64_t bytes;                 /* cached now */
};
void objfs_dcache_stats(struct objfs_dcache *c, struct objfs_dcache_stats *out);
/* Bytes and entries currently cached. */
uint64_t objfs_dcache_used(struct objfs_dcache *c);
size_t objfs_dcache_count(struct objfs_dcache *c);

#endif
