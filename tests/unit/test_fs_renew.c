/*
 * Unit tests of the renewal of a large listing (src/fs/dirsnap.c,
 * snap_renew() through snap_build(); issues 31 and 33) without FUSE, over
 * the fault layer and a local store, counting the store's LISTs:
 *   - a listing of more than a page is renewed by a LIST of its tail and
 *     its index's segments, not listed whole: a name added after the last
 *     shows, one another client added between listed names does not (it
 *     waits for the next whole listing, as documented);
 *   - an index segment another mount wrote after the whole listing adds
 *     its names with their attributes; one older than the listing, or
 *     this mount's own, adds nothing, and a segment is read once;
 *   - a listing of fewer names, or one listed whole longer than
 *     SNAP_FULL_TTLS x dir_ttl ago, is listed whole.
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs_testutil.h"
#include "store_testutil.h"
#include "volume/attrseg.h"

#define NAMES 1500              /* two LIST pages */

static int setup(void **state)
{
	return fe_setup_state(state, NULL);
}

/* A short dir_ttl: a whole listing is due again SNAP_FULL_TTLS x 0.02 =
 * 1.2 s after the last. */
static void tune_short(struct objfs_fs_opts *o)
{
	o->dir_ttl = 0.02;
}

static int setup_short(void **state)
{
	return fe_setup_state(state, tune_short);
}

/* Puts NAMES files under "d/" and looks d up (pinned). */
static struct inode *big_dir(struct fs_env *e)
{
	struct inode *d = NULL;
	char key[32];
	size_t i;

	for (i = 0; i < NAMES; i++) {
		snprintf(key, sizeof(key), "d/f%04zu", i * 2);
		tu_put(e->store, key, "x", 1, NULL);
	}
	assert_int_equal(do_lookup(e->fs, e->fs->root, "d", true, &d), 0);
	return d;
}

static uint64_t lists(struct fs_env *e)
{
	return objfs_fault_calls(e->fault, OBJFS_FOP_LIST);
}

/* snap_build() of d: the snapshot it gives back (released here), its
 * number of names, and whether name is in it (*has). */
static size_t build(struct fs_env *e, struct inode *d, const char *name,
		    bool *has)
{
	struct objfs_fs *fs = e->fs;
	struct dirsnap *s = NULL;
	bool found = false;
	size_t n;

	assert_int_equal(snap_build(fs, d, NULL, NULL, &s), 0);
	pthread_mutex_lock(&fs->lock);
	assert_ptr_equal(d->snap, s);
	n = s->n;
	if (name != NULL)
		snap_find(s, name, &found);
	snap_put_locked(s);
	pthread_mutex_unlock(&fs->lock);
	if (has != NULL)
		*has = found;
	return n;
}

static void test_renew_tail(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *d = big_dir(e);
	uint64_t l0, renewed;
	bool has;

	l0 = lists(e);
	assert_int_equal(build(e, d, NULL, NULL), NAMES);
	assert_true(lists(e) - l0 >= 2);       /* whole: two pages */
	renewed = fs->listed_renewed;
	/* another client's names: after the last, and between two */
	tu_put(e->store, "d/zzz-new", "y", 1, NULL);
	tu_put(e->store, "d/f0001", "y", 1, NULL);
	l0 = lists(e);
	assert_int_equal(build(e, d, "zzz-new", &has), NAMES + 1);
	assert_true(has);
	/* renewed: the tail's LIST and the index's, not two pages more */
	assert_true(fs->listed_renewed == renewed + 1);
	assert_true(lists(e) - l0 <= 2);
	build(e, d, "f0001", &has);
	assert_false(has);              /* until the next whole listing */
	assert_true(fs->listed_renewed == renewed + 2);
	unpin(fs, d);
}

/* Writes a segment of directory "d/" as another mount (writer id w)
 * would: one entry for name, describing key's object as it is now, made
 * at ct (ns). */
static void put_segment(struct fs_env *e, const char *w, const char *name,
			const char *key, int64_t ct)
{
	struct objfs_attrseg seg = OBJFS_ATTRSEG_INIT;
	struct objfs_attrseg_entry en;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	char pfx[128], skey[256], *text = NULL;
	size_t len;

	assert_int_equal(objfs_store_head(e->store, key, &info), 0);
	memset(&en, 0, sizeof(en));
	en.name = (char *)name;
	snprintf(en.etag, sizeof(en.etag), "%s", info.etag);
	en.lm = (int64_t)info.mtime.tv_sec * 1000000000 + info.mtime.tv_nsec;
	en.ct = ct;
	en.have = OBJFS_ATTRSEG_MODE | OBJFS_ATTRSEG_UID | OBJFS_ATTRSEG_GID |
		  OBJFS_ATTRSEG_SIZE;
	en.mode = S_IFREG | 0640;
	en.uid = 4321;
	en.gid = 4322;
	en.size = info.size;
	objfs_obj_info_release(&info);
	seg.dir = strdup("d/");
	assert_non_null(seg.dir);
	assert_int_equal(objfs_attrseg_add(&seg, &en), 0);
	assert_int_equal(objfs_attrseg_format(&seg, &text, &len), 0);
	objfs_attrseg_prefix("d/", pfx, sizeof(pfx));
	snprintf(skey, sizeof(skey), "%s%s-00000001", pfx, w);
	tu_put(e->store, skey, text, len, NULL);
	free(text);
	objfs_attrseg_release(&seg);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void test_renew_index(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *d = big_dir(e);
	struct dirsnap *s;
	uint64_t gets;
	bool has, found;
	size_t i;

	assert_int_equal(build(e, d, NULL, NULL), NAMES);
	/* another objfs mount's new file between the listed names, indexed
	 * after the listing; an old entry (before it) of a name another
	 * client added; and one of this mount's own segments */
	tu_put(e->store, "d/f0003", "other mount", 11, NULL);
	put_segment(e, "00000000000000aa", "f0003", "d/f0003", now_ns());
	tu_put(e->store, "d/f0005", "old", 3, NULL);
	put_segment(e, "00000000000000bb", "f0005", "d/f0005",
		    now_ns() - (int64_t)3600 * 1000000000);
	tu_put(e->store, "d/f0007", "own", 3, NULL);
	put_segment(e, fs->writer, "f0007", "d/f0007", now_ns());
	assert_int_equal(build(e, d, "f0003", &has), NAMES + 1);
	assert_true(has);
	build(e, d, "f0005", &has);
	assert_false(has);              /* older than the whole listing */
	build(e, d, "f0007", &has);
	assert_false(has);              /* this mount's own: in it already */
	pthread_mutex_lock(&fs->lock);
	s = d->snap;
	i = snap_find(s, "f0003", &found);
	assert_true(found);
	assert_false(s->e[i].is_dir);
	assert_true(s->e[i].size == 11);
	assert_true(s->e[i].have_attr);         /* from the entry */
	assert_true(s->e[i].fa.uid == 4321 && s->e[i].fa.gid == 4322);
	assert_true((s->e[i].fa.mode & 07777) == 0640);
	pthread_mutex_unlock(&fs->lock);
	/* each segment is read once: a renewal without news GETs nothing */
	gets = objfs_fault_calls(e->fault, OBJFS_FOP_GET);
	build(e, d, NULL, NULL);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_GET) == gets);
	unpin(fs, d);
}

static void test_small_listed_whole(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *d = NULL;
	uint64_t renewed;
	bool has;

	tu_put(e->store, "s/a", "x", 1, NULL);
	tu_put(e->store, "s/c", "x", 1, NULL);
	assert_int_equal(do_lookup(fs, fs->root, "s", true, &d), 0);
	assert_int_equal(build(e, d, NULL, NULL), 2);
	renewed = fs->listed_renewed;
	tu_put(e->store, "s/b", "x", 1, NULL);
	assert_int_equal(build(e, d, "b", &has), 3);
	assert_true(has);               /* one page: listed whole */
	assert_true(fs->listed_renewed == renewed);
	unpin(fs, d);
}

static void test_full_after(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *d = big_dir(e);
	double t0;
	uint64_t renewed;
	bool has;

	assert_int_equal(build(e, d, NULL, NULL), NAMES);
	t0 = now_mono();
	tu_put(e->store, "d/f0001", "y", 1, NULL);
	/* renewed while the whole listing is younger than 60 x dir_ttl
	 * (however long this takes, the next step waits past it) */
	renewed = fs->listed_renewed;
	build(e, d, "f0001", &has);
	if (now_mono() - t0 < SNAP_FULL_TTLS * fs->o.dir_ttl) {
		assert_false(has);
		assert_true(fs->listed_renewed == renewed + 1);
	}
	while (now_mono() - t0 < SNAP_FULL_TTLS * fs->o.dir_ttl + 0.1)
		usleep(50000);
	renewed = fs->listed_renewed;
	assert_int_equal(build(e, d, "f0001", &has), NAMES + 1);
	assert_true(has);               /* listed whole again */
	assert_true(fs->listed_renewed == renewed);
	unpin(fs, d);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, fe_teardown_state)
	const struct CMUnitTest tests[] = {
		T(test_renew_tail), T(test_renew_index),
		T(test_small_listed_whole),
		cmocka_unit_test_setup_teardown(test_full_after, setup_short,
						fe_teardown_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
