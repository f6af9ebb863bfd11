/*
 * fs_testutil.h - a filesystem without FUSE for the fs unit tests: an
 * objfs_fs over the fault layer over a local store in a fresh temporary
 * directory, its spools beside the store.  The tests call the internal
 * functions of fs_int.h directly.
 */
#ifndef OBJFS_FS_TESTUTIL_H
#define OBJFS_FS_TESTUTIL_H

#include "backend/backend.h"
#include "backend/fault.h"
#include "fs/fs_int.h"
#include "fs/ops.h"

struct fs_env {
	char dir[128];                  /* removed by fe_teardown() */
	struct objfs_store *store;      /* the fault layer (owns the local) */
	struct objfs_fault *fault;      /* owned by store */
	struct objfs_fs *fs;
};

/* Builds e (fails the running test on error) with the defaults, long
 * TTLs (nothing expires during a test), and what tune changes (may be
 * NULL); the workers are started. */
void fe_setup(struct fs_env *e, void (*tune)(struct objfs_fs_opts *o));
/* Destroys the fs (uploading what is dirty), the store and the directory. */
void fe_teardown(struct fs_env *e);
/* cmocka setup and teardown: *state becomes a new fs_env (fe_setup()). */
int fe_setup_state(void **state, void (*tune)(struct objfs_fs_opts *o));
int fe_teardown_state(void **state);

/* A new regular file name under dir, not yet in the store and written
 * only at its end (in->seq) as op_create makes it, but clean and without a
 * spool until the first write; pinned: unpin() it. */
struct inode *fe_new_file(struct fs_env *e, struct inode *dir,
			  const char *name);

#endif
