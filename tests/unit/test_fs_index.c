/*
 * Unit tests of the attribute index's catalogue (src/fs/attrindex.c)
 * without FUSE, over the fault layer and a local store: a walk's second
 * directory lists the volume's whole index once, which then answers the
 * following directories without a LIST of their own while it is fresh
 * (dir_ttl), with the segments this mount writes and without those it
 * deletes; an index too big for one page is listed per directory.  A
 * directory of several pages is listed in parallel ranges split at the
 * names of its index, and the listing is the same whatever the index
 * says (names it lacks, names gone, an index far off).  Readdirplus of
 * another client's files HEADs them only once the reader looks names up.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/tree.h"
#include "fs_testutil.h"
#include "store_testutil.h"
#include "volume/attrseg.h"

#define TTL 2.0                 /* dir_ttl of these tests, seconds */

static void tune(struct objfs_fs_opts *o)
{
	o->dir_ttl = TTL;
}

static int setup(void **state)
{
	return fe_setup_state(state, tune);
}

/* Puts a segment named name of directory dir (its body is not read). */
static void put_seg(struct fs_env *e, const char *dir, const char *name)
{
	char pfx[128], key[256];

	objfs_attrseg_prefix(dir, pfx, sizeof(pfx));
	snprintf(key, sizeof(key), "%s%s", pfx, name);
	tu_put(e->store, key, "objfs-attrs 1\n", 14, NULL);
}

static uint64_t lists(struct fs_env *e)
{
	return objfs_fault_calls(e->fault, OBJFS_FOP_LIST);
}

/* Asserts that dir's segments are n, each named in names (NULL-ended)
 * or, with mine, written by this mount; returns the LISTs it cost. */
static uint64_t expect(struct fs_env *e, const char *dir, size_t n,
		       const char *const *names, bool mine)
{
	uint64_t before = lists(e);
	char **keys = NULL, pfx[128];
	size_t got = 0, i, j;
	double listed;

	assert_int_equal(aidx_seg_keys(e->fs, dir, &keys, &got, &listed), 0);
	assert_int_equal(got, n);
	objfs_attrseg_prefix(dir, pfx, sizeof(pfx));
	for (i = 0; i < got; i++) {
		const char *name = keys[i] + strlen(pfx);
		bool found = false;

		assert_true(strncmp(keys[i], pfx, strlen(pfx)) == 0);
		for (j = 0; names != NULL && names[j] != NULL; j++)
			found = found || strcmp(name, names[j]) == 0;
		if (mine)
			found = found || strncmp(name, e->fs->writer,
						 strlen(e->fs->writer)) == 0;
		assert_true(found);
	}
	objfs_tree_keys_free(keys, got);
	return lists(e) - before;
}

static void test_catalogue(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	static const char *const a[] = { "w1-1", NULL };
	static const char *const b[] = { "w1-2", "w2-1", NULL };
	static const char *const c[] = { "w2-2", NULL };
	static const char *const c2[] = { "w2-2", "w3-1", NULL };
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_fattr fa;
	uint64_t before;

	put_seg(e, "a/", "w1-1");
	put_seg(e, "b/", "w1-2");
	put_seg(e, "b/", "w2-1");
	put_seg(e, "c/", "w2-2");
	/* the first directory lists its own; the second lists the whole
	 * index, which answers the rest, a directory without one too */
	assert_true(expect(e, "a/", 1, a, false) == 1);
	assert_true(expect(e, "b/", 2, b, false) == 1);
	assert_true(expect(e, "c/", 1, c, false) == 0);
	assert_true(expect(e, "d/", 0, NULL, false) == 0);
	assert_true(expect(e, "a/", 1, a, false) == 0);
	/* another writer's new segment: missed while the catalogue is fresh
	 * (its names cost a HEAD), seen once dir_ttl has passed */
	put_seg(e, "c/", "w3-1");
	assert_true(expect(e, "c/", 1, c, false) == 0);
	usleep((useconds_t)(TTL * 1e6) + 100000);
	assert_true(expect(e, "c/", 2, c2, false) == 1);
	assert_true(expect(e, "b/", 2, b, false) == 1);
	assert_true(expect(e, "a/", 1, a, false) == 0);
	/* a segment this mount writes is in it at once (the flush's one
	 * LIST is of the directory, for Last-Modified) */
	tu_put(e->store, "c/f", "x", 1, NULL);
	assert_int_equal(objfs_store_head(e->store, "c/f", &info), 0);
	memset(&fa, 0, sizeof(fa));
	fa.mode = S_IFREG | 0640;
	aidx_note(fs, "c/f", info.etag, &fa, OBJFS_FATTR_MODE, NULL);
	objfs_obj_info_release(&info);
	before = lists(e);
	aidx_flush(fs, true);
	assert_true(lists(e) - before == 1);
	assert_true(expect(e, "c/", 3, c2, true) == 0);
	/* one it deletes is not */
	assert_int_equal(aidx_drop(fs, "b/", NULL, false), 0);
	assert_true(expect(e, "b/", 0, NULL, false) == 0);
	assert_true(expect(e, "c/", 3, c2, true) == 0);
}

/* Puts segment name of directory dir naming "fNNNN" for n in [from, to). */
static void put_names(struct fs_env *e, const char *dir, const char *seg,
		      int from, int to)
{
	struct objfs_attrseg sg;
	struct objfs_attrseg_entry en;
	char pfx[128], key[256], nm[32], *text = NULL;
	size_t len;
	int i;

	memset(&sg, 0, sizeof(sg));
	assert_non_null(sg.dir = strdup(dir));
	for (i = from; i < to; i++) {
		memset(&en, 0, sizeof(en));
		snprintf(nm, sizeof(nm), "f%04d", i);
		en.name = nm;
		snprintf(en.etag, sizeof(en.etag), "\"e%d\"", i);
		en.lm = 1000000000;
		en.ct = 1000000000;
		assert_int_equal(objfs_attrseg_add(&sg, &en), 0);
	}
	assert_int_equal(objfs_attrseg_format(&sg, &text, &len), 0);
	objfs_attrseg_prefix(dir, pfx, sizeof(pfx));
	snprintf(key, sizeof(key), "%s%s", pfx, seg);
	tu_put(e->store, key, text, len, NULL);
	free(text);
	objfs_attrseg_release(&sg);
}

/* Lists directory name (with its index read beside, as readdirplus does)
 * and checks the listing is exactly want[0..n) (sorted; a trailing '/'
 * marks a directory); returns the LISTs it cost, its index's included. */
static uint64_t list_dir(struct fs_env *e, const char *name,
			 char **want, size_t n, bool ranges)
{
	struct objfs_fs *fs = e->fs;
	struct dirsnap *s = NULL;
	struct inode *d = NULL;
	struct aidx_pre *pre;
	uint64_t before, was = fs->listed_ranges;
	size_t i;

	assert_int_equal(do_lookup(fs, fs->root, name, true, &d), 0);
	pthread_mutex_lock(&fs->lock);
	snap_drop(d);
	pthread_mutex_unlock(&fs->lock);
	before = lists(e);
	pre = snap_index_start(fs, d);
	assert_non_null(pre);
	assert_int_equal(snap_build(fs, d, NULL, pre, &s), 0);
	before = lists(e) - before;
	aidx_pre_cancel(pre);
	assert_int_equal(fs->listed_ranges, was + (ranges ? 1 : 0));
	assert_false(s->more);
	assert_int_equal(s->n, n);
	for (i = 0; i < n; i++) {
		size_t l = strlen(want[i]);
		bool dir = want[i][l - 1] == '/';

		assert_int_equal(strncmp(s->e[i].name, want[i], l - dir), 0);
		assert_int_equal(strlen(s->e[i].name), l - dir);
		assert_int_equal(s->e[i].is_dir, dir);
	}
	pthread_mutex_lock(&fs->lock);
	snap_put_locked(s);
	pthread_mutex_unlock(&fs->lock);
	unpin(fs, d);
	return before;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_ranges(void **state)
{
	struct fs_env *e = *state;
	char *want[12000], key[64];
	size_t n = 0, i;
	int k;

	/* 3,500 files the index knows: page one, then three ranges (and
	 * the index's LIST) */
	for (k = 0; k < 3500; k++) {
		snprintf(key, sizeof(key), "d/f%04d", k);
		tu_put(e->store, key, "x", 1, NULL);
		assert_non_null(want[n++] = strdup(key + 2));
	}
	put_names(e, "d/", "w1-1", 0, 2000);
	put_names(e, "d/", "w2-1", 1500, 3500);
	assert_true(list_dir(e, "d", want, n, true) == 1 + 4);
	/* what the index does not know (a subdirectory, names between and
	 * after its own) and names it holds that are gone: the same listing
	 * as the store's */
	tu_put(e->store, "d/e/x", "x", 1, NULL);
	assert_non_null(want[n++] = strdup("e/"));
	for (k = 0; k < 300; k++) {
		snprintf(key, sizeof(key), "d/f%04dx", k * 10);
		tu_put(e->store, key, "x", 1, NULL);
		assert_non_null(want[n++] = strdup(key + 2));
		snprintf(key, sizeof(key), "d/g%04d", k);
		tu_put(e->store, key, "x", 1, NULL);
		assert_non_null(want[n++] = strdup(key + 2));
	}
	for (k = 2000; k < 2100; k++) {
		snprintf(key, sizeof(key), "d/f%04d", k);
		assert_int_equal(objfs_store_del(e->store, key), 0);
		for (i = 0; i < n; i++) {
			if (strcmp(want[i], key + 2) == 0) {
				free(want[i]);
				want[i] = want[--n];
				break;
			}
		}
	}
	qsort(want, n, sizeof(*want), str_cmp);
	(void)list_dir(e, "d", want, n, true);
	/* an index far off (thousands of names after its last one): page by
	 * page, the same listing */
	for (k = 0; k < 4000; k++) {
		snprintf(key, sizeof(key), "d/h%04d", k);
		tu_put(e->store, key, "x", 1, NULL);
		assert_non_null(want[n++] = strdup(key + 2));
	}
	qsort(want, n, sizeof(*want), str_cmp);
	(void)list_dir(e, "d", want, n, false);
	for (i = 0; i < n; i++)
		free(want[i]);
}

/* A volume whose index holds more than one page of segments: a LIST per
 * directory, and the whole index is not listed again for a while. */
static void test_catalogue_too_big(void **state)
{
	struct fs_env *e = *state;
	static const char *const a[] = { "w1-1", NULL };
	char name[32];
	int i;

	put_seg(e, "a/", "w1-1");
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "w9-%d", i);
		put_seg(e, "many/", name);
	}
	assert_true(expect(e, "a/", 1, a, false) == 1);
	/* its own LIST after the catalogue's */
	assert_true(expect(e, "a/", 1, a, false) == 2);
	assert_true(expect(e, "a/", 1, a, false) == 1);
	assert_true(expect(e, "b/", 0, NULL, false) == 1);
}

static uint64_t heads(struct fs_env *e)
{
	return objfs_fault_calls(e->fault, OBJFS_FOP_HEAD);
}

/* Issue 33: readdirplus of another client's files (no index entry)
 * sends no HEAD, in short replies, until the reader looks up a name a
 * reply gave without attributes; then each reply's files and more
 * (HEAD_BATCH, 256) are HEADed ahead.  Without attributes, a file of PATH_MAX bytes or more is
 * typed a regular file, a smaller one (it may be a symlink or a FIFO)
 * DT_UNKNOWN. */
static void test_reply_attrs(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	static char big[5000];
	struct dirsnap *s = NULL;
	struct inode *d = NULL, *c = NULL;
	struct aidx_pre *pre;
	uint64_t h;
	char key[64];
	size_t i;
	int k;

	memset(big, 'x', sizeof(big));
	for (k = 0; k < 600; k++) {
		snprintf(key, sizeof(key), "d/f%04d", k);
		tu_put(e->store, key, big, k % 2 ? sizeof(big) : 1, NULL);
	}
	assert_int_equal(do_lookup(fs, fs->root, "d", true, &d), 0);
	pre = snap_index_start(fs, d);
	assert_int_equal(snap_build(fs, d, NULL, pre, &s), 0);
	assert_int_equal(s->n, 600);
	h = heads(e);
	/* `ls -f`: short replies (16, 32 entries), no HEAD */
	assert_int_equal(snap_reply_attrs(fs, d, s, pre, 0, 200), 16);
	assert_int_equal(snap_reply_attrs(fs, d, s, NULL, 16, 200), 32);
	assert_int_equal(heads(e), h);
	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < s->n; i++) {
		uint64_t ino;
		mode_t type;

		assert_false(s->e[i].have_attr);
		assert_true(dent_lookup_only(fs, d, &s->e[i]));
		dent_ino_type(fs, d, &s->e[i], &ino, &type);
		assert_int_equal(type, i % 2 ? S_IFREG : 0);
	}
	pthread_mutex_unlock(&fs->lock);
	/* `ls -l`: a name of the last reply looked up, then the next
	 * replies HEAD their files and more ahead (HEAD_BATCH, 256) */
	assert_int_equal(do_lookup(fs, d, s->e[20].name, false, &c), 0);
	h = heads(e);
	assert_int_equal(snap_reply_attrs(fs, d, s, NULL, 48, 200), SIZE_MAX);
	assert_int_equal(heads(e) - h, 256);            /* [48, 304) */
	assert_int_equal(snap_reply_attrs(fs, d, s, NULL, 248, 200), SIZE_MAX);
	assert_int_equal(heads(e) - h, 512);            /* [304, 560) */
	assert_int_equal(snap_reply_attrs(fs, d, s, NULL, 448, 200), SIZE_MAX);
	assert_int_equal(heads(e) - h, 552);            /* [560, 600) */
	for (i = 0; i < s->n; i++)
		assert_true(s->e[i].have_attr == (i >= 48));
	pthread_mutex_lock(&fs->lock);
	snap_put_locked(s);
	pthread_mutex_unlock(&fs->lock);
	unpin(fs, d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_catalogue, setup,
						fe_teardown_state),
		cmocka_unit_test_setup_teardown(test_catalogue_too_big, setup,
						fe_teardown_state),
		cmocka_unit_test_setup_teardown(test_ranges, setup,
						fe_teardown_state),
		cmocka_unit_test_setup_teardown(test_reply_attrs, setup,
						fe_teardown_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
