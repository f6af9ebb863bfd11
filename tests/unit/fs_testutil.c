/* fs_testutil.c - a filesystem without FUSE for the fs unit tests. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fs_testutil.h"
#include "store_testutil.h"

void fe_setup(struct fs_env *e, void (*tune)(struct objfs_fs_opts *o))
{
	struct objfs_store *local = NULL;
	struct objfs_fs_opts o;
	char path[256], spool[256];

	memset(e, 0, sizeof(*e));
	assert_int_equal(tu_tmpdir(e->dir, sizeof(e->dir), "fs"), 0);
	snprintf(path, sizeof(path), "%s/store", e->dir);
	snprintf(spool, sizeof(spool), "%s/spool", e->dir);
	assert_int_equal(mkdir(spool, 0700), 0);
	assert_int_equal(objfs_local_store_create(path, NULL, &local), 0);
	assert_int_equal(objfs_fault_store_create(local, &e->store, &e->fault), 0);
	objfs_fs_opts_default(&o);
	o.spool_dir = spool;
	o.attr_ttl = o.entry_ttl = o.neg_ttl = o.dir_ttl = 3600;
	o.threads = 4;
	if (tune != NULL)
		tune(&o);
	assert_int_equal(objfs_fs_create(e->store, &o, NULL, &e->fs), 0);
	assert_int_equal(objfs_fs_start(e->fs), 0);
	/* the usage thread's first listing (and its usage document) is
	 * done before a test counts requests */
	pthread_mutex_lock(&e->fs->lock);
	while (!e->fs->cap.scan_done)
		pthread_cond_wait(&e->fs->cap.scan_cv, &e->fs->lock);
	pthread_mutex_unlock(&e->fs->lock);
}

void fe_teardown(struct fs_env *e)
{
	objfs_fs_destroy(e->fs);
	objfs_store_destroy(e->store);
	tu_rm_tree(e->dir);
}

int fe_setup_state(void **state, void (*tune)(struct objfs_fs_opts *o))
{
	struct fs_env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	fe_setup(e, tune);
	*state = e;
	return 0;
}

int fe_teardown_state(void **state)
{
	fe_teardown(*state);
	free(*state);
	return 0;
}

struct inode *fe_new_file(struct fs_env *e, struct inode *dir,
			  const char *name)
{
	struct objfs_fs *fs = e->fs;
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	in = inode_new(fs, dir, name, S_IFREG | 0644);
	assert_non_null(in);
	in->refs++;
	in->mtime = now_real();
	in->ctime = in->mtime;
	in->attr_time = now_mono();
	in->seq = true;
	pthread_mutex_unlock(&fs->lock);
	return in;
}
