/*
 * store_testutil.h - helpers shared by the backend unit tests (linked into
 * each of them).  The put/get helpers fail the running cmocka test on any
 * error.
 */
#ifndef OBJFS_STORE_TESTUTIL_H
#define OBJFS_STORE_TESTUTIL_H

#include <stddef.h>

#include "backend/backend.h"

/* Makes a fresh directory "/tmp/objfs-<tag>-XXXXXX" in buf.  0 or errno. */
int tu_tmpdir(char *buf, size_t cap, const char *tag);
/* Removes dir and everything below it (best effort). */
void tu_rm_tree(const char *dir);

/* Puts n bytes of data under key. */
void tu_put(struct objfs_store *s, const char *key, const void *data,
	    size_t n, const struct objfs_put_opts *opts);
/* Gets all of key into mb (a sink); info may be NULL. */
void tu_get(struct objfs_store *s, const char *key, struct objfs_membuf *mb,
	    struct objfs_obj_info *info);
/* Asserts key holds exactly the n bytes of want. */
void tu_check(struct objfs_store *s, const char *key, const void *want,
	      size_t n);

#endif
