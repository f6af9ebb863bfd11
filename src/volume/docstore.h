/*
 * docstore.h - key=value documents (kvtext.h) kept as objects of a store.
 *
 * kvtext is pure text; this is its one bridge to the store interface.  A
 * document object is written whole (create or replace, text/plain) and
 * read whole (at most OBJFS_KV_MAX bytes; a larger one is malformed).
 */
#ifndef OBJFS_VOLUME_DOCSTORE_H
#define OBJFS_VOLUME_DOCSTORE_H

#include "volume/kvtext.h"

struct objfs_store;

/* Reads object key of s into *out (empty; the caller releases it, also on
 * error).  0, ENOENT when absent, EINVAL when malformed or too large, else
 * the store's errno. */
int objfs_doc_load(struct objfs_store *s, const char *key, struct objfs_kv *out);
/* Writes (creates or replaces) object key with kv after a "# comment"
 * line (comment may be NULL).  0 or an errno. */
int objfs_doc_save(struct objfs_store *s, const char *key,
		   const struct objfs_kv *kv, const char *comment);
/* The same, but only creates: EEXIST when key exists (a conditional PUT,
 * If-None-Match: *, where the store has it; see backend/s3.c). */
int objfs_doc_create(struct objfs_store *s, const char *key,
		     const struct objfs_kv *kv, const char *comment);

#endif
