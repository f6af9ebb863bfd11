/*
 * catalog.h - what the CSI controller keeps about volumes and snapshots in
 * the bucket's format (layout.h), besides the volume record (volrec.h):
 * the index and the snapshot record.
 *
 * The index lives in one store (the controller's default store; NULL: no
 * index, every write is a no-op and every read ENOENT).  Per volume or
 * snapshot it holds two key=value documents (kvtext.h):
 *   .objfs-csi/{volumes,snapshots}/H(id)       the id entry
 *   .objfs-csi/{volume,snapshot}-names/H(name) the name entry
 * H is the first OBJFS_CATALOG_HASH_HEX hex digits of SHA-256.  Both hold
 * id=, name= and the extra fields of objfs_catalog_add(); the id entry
 * later learns the facts of the record (objfs_catalog_set_capacity(),
 * objfs_catalog_snapshot_ready()), so that a listing works when the
 * record's bucket does not answer.  A volume's entry holds what its record
 * holds under the same keys (capacity, csi.source, ctx.*); a snapshot's
 * holds the snapshot record's fields (objfs_snaprec_from_kv() reads them)
 * and ready=1 once the snapshot is cut.
 *
 * Invariants (the controller's crash consistency, see csi/controller.h):
 * entries are written before the record and removed after it; a name
 * entry is removed only while it names the id being removed; an entry
 * without id= is ignored by walks.
 *
 * The snapshot record lives at BASE/.objfs-snapshots/NAME/.objfs/snapshot
 * (layout.h) in the snapshot's own store; struct objfs_snaprec is its typed view.
 *
 * Every function returns 0 or a positive errno; store errors pass through.
 */
#ifndef OBJFS_VOLUME_CATALOG_H
#define OBJFS_VOLUME_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "volume/kvtext.h"
#include "volume/layout.h"

struct objfs_snaprec;
struct objfs_store;

#define OBJFS_CATALOG_HASH_HEX 40

enum objfs_catalog_kind {
	OBJFS_CATALOG_VOLUME,
	OBJFS_CATALOG_SNAPSHOT,
};

/* Fields of an index entry. */
#define OBJFS_CATALOG_ID "id"
#define OBJFS_CATALOG_NAME "name"
#define OBJFS_CATALOG_READY "ready"

/* The hash H of the layout: hexlen (at most 64) hex digits of SHA-256 of
 * len bytes of s, NUL-terminated, into out (hexlen + 1 bytes). */
void objfs_catalog_hash(const char *s, size_t len, char *out, size_t hexlen);

/* Loads the id entry of id into *out (empty; released by the caller). */
int objfs_catalog_load(struct objfs_store *idx, enum objfs_catalog_kind kind,
		       const char *id, struct objfs_kv *out);
/* Writes the name entry, then the id entry, of a new id named name, with
 * id=, name= and the fields of extra (may be NULL).  The name entry is
 * created, not replaced: EEXIST when it names another id (a concurrent
 * add won). */
int objfs_catalog_add(struct objfs_store *idx, enum objfs_catalog_kind kind,
		      const char *id, const char *name,
		      const struct objfs_kv *extra);
/* Records a volume's new capacity in its id entry (ENOENT: none). */
int objfs_catalog_set_capacity(struct objfs_store *idx, const char *id,
			       uint64_t capacity);
/* Marks a snapshot as cut and copies the facts of its record into its id
 * entry (ENOENT: none). */
int objfs_catalog_snapshot_ready(struct objfs_store *idx, const char *id,
				 const struct objfs_snaprec *rec);
/* Removes the entries of id: the name entry (of the entry's name, else of
 * name_hint, may be NULL) only while it names id, then the id entry. */
int objfs_catalog_remove(struct objfs_store *idx, enum objfs_catalog_kind kind,
			 const char *id, const char *name_hint);
/* 0 when name is free or names id; EEXIST when it names another id (then
 * copied to other, cap bytes). */
int objfs_catalog_name_check(struct objfs_store *idx,
			     enum objfs_catalog_kind kind, const char *name,
			     const char *id, char *other, size_t cap);

/* Called for each id entry of a walk: hash is its H(id), id its id=, entry
 * the document (both valid during the call only).  0 goes on; anything
 * else stops the walk, which returns it. */
typedef int (*objfs_catalog_fn)(void *arg, const char *hash, const char *id,
				const struct objfs_kv *entry);
/* Walks the id entries of kind in hash order, from the one after hash
 * after (NULL: the first), listing page_keys keys per request.  0, what fn
 * returned, or a store errno. */
int objfs_catalog_walk(struct objfs_store *idx, enum objfs_catalog_kind kind,
		       const char *after, unsigned page_keys,
		       objfs_catalog_fn fn, void *arg);
/* The capacity a volume's entry records (0 when none). */
uint64_t objfs_catalog_capacity(const struct objfs_kv *entry);

/* ---- the snapshot record -------------------------------------------- */

/* OBJFS_SNAPREC_INIT is empty; the strings are owned by the record:
 * objfs_snaprec_release(). */
struct objfs_snaprec {
	char *name;                     /* the CO's name */
	char *created;                  /* RFC 3339 UTC */
	char *source_volume_id;
	uint64_t size_bytes;            /* bytes copied */
	uint64_t source_capacity_bytes; /* the volume's capacity at the cut */
	char *id;                       /* the snapshot id */
	uint64_t created_sec;           /* the cut, as a CSI timestamp */
	uint64_t created_nsec;
};
#define OBJFS_SNAPREC_INIT { NULL, NULL, NULL, 0, 0, NULL, 0, 0 }

void objfs_snaprec_release(struct objfs_snaprec *r);
/* Copies s into *dst (NULL clears).  0, EINVAL (CR/LF) or ENOMEM. */
int objfs_snaprec_set(char **dst, const char *s);
/* Sets created, created_sec and created_nsec to the current time (the
 * cut).  0 or ENOMEM. */
int objfs_snaprec_set_cut_now(struct objfs_snaprec *r);
/* Sets in *out the fields of r that a new snapshot's index entry starts
 * with (its source volume).  0, EINVAL or ENOMEM. */
int objfs_snaprec_entry(const struct objfs_snaprec *r, struct objfs_kv *out);
/* Reads the fields of a snapshot record, or of a snapshot's index entry,
 * into *out (empty).  Missing or malformed numbers read as 0.  0 or
 * ENOMEM. */
int objfs_snaprec_from_kv(const struct objfs_kv *kv, struct objfs_snaprec *out);
/* Where the snapshot path (BASE/NAME, or NAME: a snapshot id's path,
 * csi/volid.h) keeps its copy: "BASE/.objfs-snapshots/NAME/", or
 * ".objfs-snapshots/NAME/" without BASE (layout.h), into buf.  0 or
 * ENAMETOOLONG. */
int objfs_snapshot_prefix(const char *path, char *buf, size_t cap);
/* The key of the record of snapshot path.  0 or ENAMETOOLONG. */
int objfs_snaprec_key(const char *path, char *buf, size_t cap);
/* Loads the record of snapshot path from s into *out (empty; released by
 * the caller).  0, ENOENT or an errno. */
int objfs_snaprec_load(struct objfs_store *s, const char *path,
		       struct objfs_snaprec *out);
/* Writes the record of a new snapshot path: 0, EEXIST when one exists
 * (a snapshot is immutable), or an errno. */
int objfs_snaprec_store(struct objfs_store *s, const char *path,
			const struct objfs_snaprec *rec);

#endif
