/*
 * Unit tests of lookup (src/fs/lookup.c) without FUSE, over the fault
 * layer and a local store: files, directory markers, implied directories,
 * missing and reserved names, names and keys too long, store errors,
 * revalidation of names that vanish or change type in the store,
 * large directories listed in windows, and directory link counts.
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

static void test_file(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = NULL, *again = NULL;
	uint64_t heads;

	tu_put(e->store, "a.txt", "hello", 5, NULL);
	assert_int_equal(do_lookup(fs, fs->root, "a.txt", true, &in), 0);
	assert_true(S_ISREG(in->mode));
	assert_true(in->size == 5);
	assert_true(in->in_store);
	assert_true(in->linked && in->parent == fs->root);
	assert_true(in->refs == 1 && in->nlookup == 0);
	assert_true(in->etag[0] != '\0');
	/* fresh attributes: answered from the tables, no request */
	heads = objfs_fault_calls(e->fault, OBJFS_FOP_ALL);
	assert_int_equal(do_lookup(fs, fs->root, "a.txt", false, &again), 0);
	assert_ptr_equal(again, in);
	assert_true(in->nlookup == 1 && in->refs == 1);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_ALL) == heads);
	unpin(fs, in);
	pthread_mutex_lock(&fs->lock);
	assert_ptr_equal(find_child(fs, fs->root, "a.txt"), in);   /* nlookup */
	pthread_mutex_unlock(&fs->lock);
}

static void test_dirs(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *d = NULL, *x = NULL, *y = NULL, *z = NULL;

	tu_put(e->store, "d/", "", 0, NULL);            /* a marker */
	tu_put(e->store, "x/y/z", "zz", 2, NULL);       /* x and y implied */
	assert_int_equal(do_lookup(fs, fs->root, "d", true, &d), 0);
	assert_true(S_ISDIR(d->mode));
	assert_true(d->in_store);
	assert_int_equal(do_lookup(fs, fs->root, "x", true, &x), 0);
	assert_true(S_ISDIR(x->mode));
	assert_false(x->in_store);
	assert_int_equal(do_lookup(fs, x, "y", true, &y), 0);
	assert_true(S_ISDIR(y->mode));
	assert_int_equal(do_lookup(fs, y, "z", true, &z), 0);
	assert_true(S_ISREG(z->mode));
	assert_true(z->size == 2);
	/* a file is not a directory */
	assert_int_equal(do_lookup(fs, z, "w", true, &d), ENOTDIR);
	unpin(fs, z);
	unpin(fs, y);
	unpin(fs, x);
	unpin(fs, d);
}

static void test_missing(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = NULL;
	char longname[OBJFS_NAME_MAX + 2];

	assert_int_equal(do_lookup(fs, fs->root, "nope", true, &in), ENOENT);
	assert_null(in);
	/* the volume's own keys are not names */
	tu_put(e->store, OBJFS_RESERVED_NAME "/x", "", 0, NULL);
	assert_int_equal(do_lookup(fs, fs->root, OBJFS_RESERVED_NAME, true, &in),
			 ENOENT);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(do_lookup(fs, fs->root, longname, true, &in),
			 ENAMETOOLONG);
	longname[OBJFS_NAME_MAX] = '\0';        /* the longest name is fine */
	assert_int_equal(do_lookup(fs, fs->root, longname, true, &in), ENOENT);
	assert_null(in);
}

/* Names each fine, whose key passes OBJFS_KEY_MAX. */
static void test_key_too_long(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *chain[8], *in = NULL, *dir = fs->root;
	char name[OBJFS_NAME_MAX + 1];
	unsigned i, n = OBJFS_KEY_MAX / OBJFS_NAME_MAX + 1;

	memset(name, 'k', OBJFS_NAME_MAX);
	name[OBJFS_NAME_MAX] = '\0';
	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < n; i++) {
		chain[i] = inode_new(fs, dir, name, S_IFDIR | 0755);
		assert_non_null(chain[i]);
		chain[i]->refs++;
		dir = chain[i];
	}
	pthread_mutex_unlock(&fs->lock);
	assert_int_equal(do_lookup(fs, dir, "f", true, &in), ENAMETOOLONG);
	for (i = n; i-- > 0;)
		unpin(fs, chain[i]);
}

/* An object whose key is exactly OBJFS_KEY_MAX bytes is found (a
 * directory of that name could not exist: no listing of "key/"). */
static void test_key_at_limit(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *chain[4], *in = NULL, *dir = fs->root;
	char name[201], last[OBJFS_NAME_MAX + 1], key[OBJFS_KEY_MAX + 1];
	unsigned i;
	size_t n;

	memset(name, 'd', 200);
	name[200] = '\0';
	key[0] = '\0';
	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < 4; i++) {
		chain[i] = inode_new(fs, dir, name, S_IFDIR | 0755);
		assert_non_null(chain[i]);
		chain[i]->refs++;
		dir = chain[i];
		strcat(key, name);
		strcat(key, "/");
	}
	pthread_mutex_unlock(&fs->lock);
	n = OBJFS_KEY_MAX - strlen(key);        /* 1024 - 804 = 220 */
	memset(last, 'f', n);
	last[n] = '\0';
	strcat(key, last);
	assert_int_equal(strlen(key), OBJFS_KEY_MAX);
	tu_put(e->store, key, "x", 1, NULL);
	assert_int_equal(do_lookup(fs, dir, last, true, &in), 0);
	assert_non_null(in);
	assert_true(S_ISREG(in->mode) && in->size == 1);
	unpin(fs, in);
	last[n - 1] = '\0';                     /* absent: ENOENT */
	in = NULL;
	assert_int_equal(do_lookup(fs, dir, last, true, &in), ENOENT);
	for (i = 4; i-- > 0;)
		unpin(fs, chain[i]);
}

static void test_store_errors(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = NULL;

	tu_put(e->store, "b", "bb", 2, NULL);
	objfs_fault_fail_next(e->fault, OBJFS_FOP_HEAD, 1, EIO);
	assert_int_equal(do_lookup(fs, fs->root, "b", true, &in), EIO);
	assert_null(in);
	objfs_fault_fail_next(e->fault, OBJFS_FOP_LIST, 1, ETIMEDOUT);
	assert_int_equal(do_lookup(fs, fs->root, "missing", true, &in),
			 ETIMEDOUT);
	/* nothing was remembered: the next lookups ask again */
	assert_int_equal(do_lookup(fs, fs->root, "b", true, &in), 0);
	assert_true(in->size == 2);
	unpin(fs, in);
}

static void test_revalidate(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *a = NULL, *b = NULL;

	tu_put(e->store, "a", "1", 1, NULL);
	tu_put(e->store, "b", "2", 1, NULL);
	assert_int_equal(do_lookup(fs, fs->root, "a", true, &a), 0);
	assert_int_equal(do_lookup(fs, fs->root, "b", true, &b), 0);
	/* fresh: no request */
	assert_int_equal(revalidate(fs, a, false), 0);
	/* changed in the store: the new size is seen */
	tu_put(e->store, "a", "1234", 4, NULL);
	assert_int_equal(revalidate(fs, a, true), 0);
	assert_true(a->size == 4);
	/* gone */
	assert_int_equal(objfs_store_del(e->store, "a"), 0);
	assert_int_equal(revalidate(fs, a, true), ENOENT);
	/* now a directory: a stale inode */
	assert_int_equal(objfs_store_del(e->store, "b"), 0);
	tu_put(e->store, "b/c", "", 0, NULL);
	assert_int_equal(revalidate(fs, b, true), ESTALE);
	unpin(fs, b);
	unpin(fs, a);
}

static void tune_window(struct objfs_fs_opts *o)
{
	o->dir_window = 100;
}

static int setup_window(void **state)
{
	return fe_setup_state(state, tune_window);
}

/* A directory larger than dir_window is listed in windows that follow
 * one another (bounded memory), none of which becomes the directory's
 * listing; a small one is listed whole and kept. */
static void test_windows(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct dirsnap *s = NULL, *next = NULL;
	struct inode *d = NULL;
	char key[64], seen[251];
	size_t i, total = 0, windows = 0;

	for (i = 0; i < 250; i++) {
		snprintf(key, sizeof(key), "big/n%03zu", i);
		tu_put(e->store, key, "x", 1, NULL);
	}
	tu_put(e->store, "big/sub/x", "x", 1, NULL);
	memset(seen, 0, sizeof(seen));
	assert_int_equal(do_lookup(fs, fs->root, "big", true, &d), 0);
	assert_int_equal(snap_build(fs, d, NULL, NULL, &s), 0);
	for (;;) {
		windows++;
		assert_true(s->base == total);
		assert_true(s->n <= 100);
		for (i = 0; i < s->n; i++) {
			unsigned k;

			if (strcmp(s->e[i].name, "sub") == 0) {
				assert_true(s->e[i].is_dir);
				k = 250;
			} else {
				assert_int_equal(sscanf(s->e[i].name, "n%u", &k), 1);
				assert_true(k < 250);
			}
			assert_int_equal(seen[k], 0);
			seen[k] = 1;
			if (i > 0)
				assert_true(strcmp(s->e[i - 1].name, s->e[i].name) < 0);
		}
		total += s->n;
		pthread_mutex_lock(&fs->lock);
		assert_null(d->snap);   /* no window is the listing */
		pthread_mutex_unlock(&fs->lock);
		if (!s->more)
			break;
		assert_int_equal(snap_build(fs, d, s, NULL, &next), 0);
		pthread_mutex_lock(&fs->lock);
		snap_put_locked(s);
		pthread_mutex_unlock(&fs->lock);
		s = next;
	}
	assert_true(total == 251);
	assert_true(windows == 3);
	for (i = 0; i < 251; i++)
		assert_int_equal(seen[i], 1);
	pthread_mutex_lock(&fs->lock);
	snap_put_locked(s);
	pthread_mutex_unlock(&fs->lock);
	/* the root (two names) is listed whole and kept */
	assert_int_equal(snap_build(fs, fs->root, NULL, NULL, &s), 0);
	pthread_mutex_lock(&fs->lock);
	assert_false(s->more);
	assert_ptr_equal(fs->root->snap, s);
	snap_put_locked(s);
	pthread_mutex_unlock(&fs->lock);
	unpin(fs, d);
}

/* Children in the list: directories first (sib_link). */
static void check_dirs_first(const struct inode *dir)
{
	const struct inode *c;
	bool files = false;

	for (c = dir->child; c != NULL; c = c->sib_next) {
		if (c->sib_dir)
			assert_false(files);
		else
			files = true;
		assert_true(c->sib_dir == (S_ISDIR(c->mode) != 0));
		if (c->sib_dir && (c->sib_next == NULL || !c->sib_next->sib_dir))
			assert_ptr_equal(dir->last_dir, c);
	}
	if (dir->child == NULL || !dir->child->sib_dir)
		assert_null(dir->last_dir);
}

/* A directory's link count: 2, its listing's subdirectories, and those
 * made here that the listing does not show yet; kept as names come and
 * go without walking the files. */
static void test_dir_nlink(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *r = fs->root, *in[6];
	static const char *const names[6] = { "a", "L1", "b", "L2", "s1", "c" };
	struct dirsnap *s = NULL;
	unsigned i;

	tu_put(e->store, "s1/x", "x", 1, NULL);
	tu_put(e->store, "s2/", "", 0, NULL);
	tu_put(e->store, "f1", "1", 1, NULL);
	tu_put(e->store, "f2", "2", 1, NULL);
	assert_int_equal(snap_build(fs, r, NULL, NULL, &s), 0);
	pthread_mutex_lock(&fs->lock);
	snap_put_locked(s);
	assert_int_equal(inode_nlink(fs, r), 4);        /* s1, s2 */
	assert_true(inode_nlink_known(r));
	for (i = 0; i < 6; i++) {
		in[i] = inode_new(fs, r, names[i],
				  names[i][0] == 'a' || names[i][0] == 'b' ||
				  names[i][0] == 'c' ? S_IFREG | 0644 :
				  S_IFDIR | 0755);
		assert_non_null(in[i]);
		check_dirs_first(r);
	}
	/* the inode table never counts (issue 34 item 2): only the listing
	 * and the changes noted in it */
	assert_int_equal(inode_nlink(fs, r), 4);
	(void)detach(fs, in[1]);                        /* L1, not last */
	check_dirs_first(r);
	assert_int_equal(inode_nlink(fs, r), 4);
	(void)detach(fs, in[4]);                        /* s1: still listed */
	check_dirs_first(r);
	assert_int_equal(inode_nlink(fs, r), 4);
	snap_note(fs, r, "L2", true, true);             /* made here */
	assert_int_equal(inode_nlink(fs, r), 5);
	snap_note(fs, r, "s2", false, true);
	assert_int_equal(inode_nlink(fs, r), 4);
	snap_note(fs, r, "f1", true, true);             /* a file became a dir */
	assert_int_equal(inode_nlink(fs, r), 5);
	snap_note(fs, r, "f1", false, true);
	snap_note(fs, r, "s1", false, true);
	(void)detach(fs, in[3]);                        /* L2, the only one */
	check_dirs_first(r);
	assert_null(r->last_dir);
	assert_int_equal(inode_nlink(fs, r), 3);        /* still listed */
	snap_note(fs, r, "L2", false, true);
	assert_int_equal(inode_nlink(fs, r), 2);
	/* without the listing: the count it left, kept by changes */
	snap_drop(r);
	assert_int_equal(inode_nlink(fs, r), 2);
	snap_note(fs, r, "L3", true, true);
	assert_int_equal(inode_nlink(fs, r), 3);
	assert_true(inode_nlink_known(r));
	for (i = 0; i < 6; i++)
		if (i != 1 && i != 3 && i != 4)
			(void)detach(fs, in[i]);
	assert_null(r->child);
	pthread_mutex_unlock(&fs->lock);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, fe_teardown_state)
	const struct CMUnitTest tests[] = {
		T(test_file), T(test_dirs), T(test_missing),
		T(test_key_too_long), T(test_key_at_limit), T(test_store_errors), T(test_revalidate),
		T(test_dir_nlink),
		cmocka_unit_test_setup_teardown(test_windows, setup_window,
						fe_teardown_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
