/*
 * pfcache.h - the prefetch cache: small whole objects fetched ahead of a
 * reader that goes through a directory's files in order (prefetch.c), kept
 * by key until taken, dropped or pushed out.
 *
 * An entry is reserved before its GET starts (LOADING, its bytes already
 * counted against the bound), then filled with the bytes and an opaque
 * attribute record of fixed size (the caller's: what the GET's reply said
 * of the object).  Dropping a key (the name was written, removed or
 * renamed here) removes its entry, a loading one too: the fill that
 * arrives after is thrown away, so a GET that started before a change
 * never lands after it.  Bounded in bytes and in entries; a reservation
 * that does not fit pushes out the oldest ready entries first, and fails
 * when only loading ones are left.  Every entry carries the time its GET
 * started; a lookup names the oldest start it accepts.
 *
 * Thread-safe: one mutex of its own (a leaf lock) and a condition
 * variable for lookups that wait for a loading entry.
 */
#ifndef OBJFS_FS_PFCACHE_H
#define OBJFS_FS_PFCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct objfs_pfcache;

/* What happened to entries, for metrics and tests. */
struct objfs_pfcache_stats {
	uint64_t reserved;      /* fetches started */
	uint64_t hits;          /* lookups answered */
	uint64_t taken;         /* of which handed the bytes over */
	uint64_t dropped;       /* removed by a change of their name */
	uint64_t evicted;       /* pushed out by newer ones, never used */
	uint64_t expired;       /* too old when looked up */
	uint64_t failed;        /* their GET failed */
	uint64_t bytes;         /* bytes held now (reserved) */
	uint64_t entries;       /* entries now */
};

/* A cache of at most limit bytes and max_entries entries (both >= 1),
 * attribute records of attr_size bytes.  0 or ENOMEM. */
int objfs_pfcache_create(uint64_t limit, unsigned max_entries,
			 size_t attr_size, struct objfs_pfcache **out);
/* Frees every entry; no fetch may be running (their fills would find
 * nothing).  NULL is ignored. */
void objfs_pfcache_destroy(struct objfs_pfcache *c);

/* Reserves key for a fetch of at most len bytes started at time now: its
 * id (> 0), or 0 when key already has an entry or it does not fit. */
uint64_t objfs_pfcache_reserve(struct objfs_pfcache *c, const char *key,
			       size_t len, double now);
/* Ends fetch id: err 0 with len bytes of data (owned by the cache from
 * here, freed with free(); len at most what was reserved) and attr (the
 * record, copied); else the entry goes (data, if any, freed).  A fill of
 * a dropped entry only frees data. */
void objfs_pfcache_fill(struct objfs_pfcache *c, uint64_t id, int err,
			char *data, size_t len, const void *attr);

/* Looks key up.  A loading entry is waited for when wait, else missed.  An
 * entry whose GET started before not_before is removed (expired) and
 * missed.  On a hit: true, the record copied into attr, *when its GET's
 * start; with take the entry leaves the cache and its bytes go to the
 * caller (*data, *len; free() them), else it stays (data may be NULL). */
bool objfs_pfcache_get(struct objfs_pfcache *c, const char *key, bool wait,
		       bool take, double not_before, void *attr, double *when,
		       char **data, size_t *len);

/* Removes the entry of key / of every key starting with prefix (a
 * directory's, ending in '/'), loading ones too. */
void objfs_pfcache_drop(struct objfs_pfcache *c, const char *key);
void objfs_pfcache_drop_prefix(struct objfs_pfcache *c, const char *prefix);

void objfs_pfcache_stats(struct objfs_pfcache *c,
			 struct objfs_pfcache_stats *out);

#endif
