/*
 * Unit tests of the state a successor loads (src/fs/journal_load.c) without FUSE:
 * a filesystem records its inode table, handles, spools and renames in a
 * state directory; a second filesystem over the same store loads them as
 * a successor would after the first one's process died.
 */
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

static int setup(void **state)
{
	return fe_setup_state(state, NULL);
}

/* A second fs over e's store that loads the state in dir. */
static struct objfs_fs *successor(struct fs_env *e, const char *dir)
{
	struct objfs_fs *fs2 = NULL;

	assert_int_equal(objfs_fs_create(e->store, &e->fs->o, NULL, &fs2), 0);
	assert_int_equal(objfs_fs_state_start(fs2, dir, true), 0);
	assert_int_equal(objfs_fs_start(fs2), 0);
	return fs2;
}

static void test_table_handles_spools(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs, *fs2;
	struct inode *d = NULL, *x = NULL, *n, *in;
	struct fhandle *fh;
	char dir[256], buf[16];
	size_t got = 0;
	uint64_t id;

	snprintf(dir, sizeof(dir), "%s/state", e->dir);
	assert_int_equal(objfs_fs_state_start(fs, dir, false), 0);
	tu_put(e->store, "d/x.txt", "hello", 5, NULL);
	assert_int_equal(do_lookup(fs, fs->root, "d", false, &d), 0);
	assert_int_equal(do_lookup(fs, d, "x.txt", false, &x), 0);
	assert_int_equal(do_lookup(fs, d, "x.txt", false, &x), 0);
	n = fe_new_file(e, fs->root, "new");
	assert_int_equal(inode_write(fs, n, "unsaved", 7, 0), 0);
	fh = fh_new(fs, n);
	assert_non_null(fh);
	pthread_mutex_lock(&fs->lock);
	n->nlookup++;
	n->nopen++;
	fh_link(fs, fh);
	state_note(fs, n);
	pthread_mutex_unlock(&fs->lock);
	hid_add(fs, &fh->hid, n->ino, false);
	id = fh->hid.id;
	unpin(fs, n);

	fs2 = successor(e, dir);
	pthread_mutex_lock(&fs2->lock);
	in = find_ino(fs2, d->ino);
	assert_non_null(in);
	assert_true(S_ISDIR(in->mode) && in->nlookup == 1 && in->linked);
	assert_ptr_equal(in->parent, fs2->root);
	assert_string_equal(in->name, "d");
	in = find_ino(fs2, x->ino);
	assert_non_null(in);
	assert_true(in->nlookup == 2 && in->parent == find_ino(fs2, d->ino));
	assert_ptr_equal(find_child(fs2, find_ino(fs2, d->ino), "x.txt"), in);
	in = find_ino(fs2, n->ino);
	assert_non_null(in);
	assert_true(in->dirty && in->spool != NULL && in->size == 7);
	assert_true(in->nopen == 1 && !in->in_store);
	assert_true(fs2->next_ino > n->ino);
	pthread_mutex_unlock(&fs2->lock);
	assert_int_equal(objfs_spool_read(in->spool, 0, buf, 7, &got), 0);
	assert_true(got == 7 && memcmp(buf, "unsaved", 7) == 0);
	fh = (struct fhandle *)hid_find(fs2, id);
	assert_non_null(fh);
	assert_ptr_equal(fh->in, in);
	/* the successor uploads what the dead server accepted */
	assert_int_equal(objfs_fs_sync_all(fs2), 0);
	tu_check(e->store, "new", "unsaved", 7);
	objfs_fs_destroy(fs2);
}

static void test_intents(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs, *fs2;
	struct intent_ctx a, b, c;
	char dir[256];
	int err = EEXIST;

	snprintf(dir, sizeof(dir), "%s/state", e->dir);
	assert_int_equal(objfs_fs_state_start(fs, dir, false), 0);
	objfs_fs_set_unique(10);
	assert_false(intent_start(fs, &a, &err));
	intent_end(fs, &a, &err, ENOENT);       /* ended: EEXIST */
	objfs_fs_set_unique(12);
	assert_false(intent_start(fs, &b, &err)); /* started only */
	objfs_fs_set_unique(16);
	assert_false(intent_start(fs, &c, &err)); /* a create that ended */
	c.ino = 77;
	c.hid = 5;
	err = 0;
	intent_end(fs, &c, &err, 0);
	fs2 = successor(e, dir);
	/* the entry and handle it made come back with it */
	objfs_fs_set_unique(16 | UNIQUE_RESEND);
	err = EIO;
	assert_true(intent_start(fs2, &c, &err));
	assert_int_equal(err, 0);
	assert_int_equal(c.ino, 77);
	assert_int_equal(c.hid, 5);
	err = EEXIST;
	/* sent again: the ended one gets its answer, the started one runs
	 * and its source being gone means it had run */
	objfs_fs_set_unique(10 | UNIQUE_RESEND);
	err = 0;
	assert_true(intent_start(fs2, &a, &err));
	assert_int_equal(err, EEXIST);
	objfs_fs_set_unique(12 | UNIQUE_RESEND);
	assert_false(intent_start(fs2, &b, &err));
	err = ENOENT;
	intent_end(fs2, &b, &err, ENOENT);
	assert_int_equal(err, 0);
	/* not re-sent: runs as any request */
	objfs_fs_set_unique(14);
	assert_false(intent_start(fs2, &c, &err));
	err = ENOENT;
	intent_end(fs2, &c, &err, ENOENT);
	assert_int_equal(err, ENOENT);
	objfs_fs_set_unique(0);
	objfs_fs_destroy(fs2);
}

/* chmod, chown, utimens and truncate of a file with unsaved data: the
 * successor has them, and uploads the data with them. */
static void test_dirty_attrs(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs, *fs2;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_fattr fa = { 0 };
	struct inode *n, *in;
	char dir[256];

	snprintf(dir, sizeof(dir), "%s/state", e->dir);
	assert_int_equal(objfs_fs_state_start(fs, dir, false), 0);
	n = fe_new_file(e, fs->root, "attrs");
	assert_int_equal(inode_write(fs, n, "0123456789", 10, 0), 0);
	pthread_mutex_lock(&n->mu);
	assert_int_equal(objfs_spool_truncate(n->spool, 4), 0);
	pthread_mutex_unlock(&n->mu);
	pthread_mutex_lock(&fs->lock);
	n->nlookup++;
	n->size = 4;
	n->mode = S_IFREG | 0600;
	n->uid = 1234;
	n->gid = 5678;
	n->mtime.tv_sec = 1000000000;
	n->mtime.tv_nsec = 5;
	n->times_set = true;                    /* what setattr does */
	state_note(fs, n);
	pthread_mutex_unlock(&fs->lock);
	unpin(fs, n);

	fs2 = successor(e, dir);
	pthread_mutex_lock(&fs2->lock);
	in = find_ino(fs2, n->ino);
	assert_non_null(in);
	assert_true(in->dirty && in->size == 4);
	assert_int_equal(in->mode, S_IFREG | 0600);
	assert_int_equal(in->uid, 1234);
	assert_int_equal(in->gid, 5678);
	assert_int_equal(in->mtime.tv_sec, 1000000000);
	assert_int_equal(in->mtime.tv_nsec, 5);
	pthread_mutex_unlock(&fs2->lock);
	assert_int_equal(objfs_fs_sync_all(fs2), 0);
	tu_check(e->store, "attrs", "0123", 4);
	assert_int_equal(objfs_store_head(e->store, "attrs", &info), 0);
	/* and ctime (atime, not in the state log, is mtime again: not
	 * written) */
	assert_int_equal(objfs_fattr_from_meta(&info.meta, &fa),
			 OBJFS_FATTR_MODE | OBJFS_FATTR_UID | OBJFS_FATTR_GID |
			 OBJFS_FATTR_MTIME | OBJFS_FATTR_CTIME);
	assert_int_equal(fa.mode, S_IFREG | 0600);
	assert_true(fa.uid == 1234 && fa.gid == 5678);
	assert_int_equal(fa.mtime.tv_sec, 1000000000);
	objfs_obj_info_release(&info);
	objfs_fs_destroy(fs2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_table_handles_spools, setup,
						fe_teardown_state),
		cmocka_unit_test_setup_teardown(test_intents, setup,
						fe_teardown_state),
		cmocka_unit_test_setup_teardown(test_dirty_attrs, setup,
						fe_teardown_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
