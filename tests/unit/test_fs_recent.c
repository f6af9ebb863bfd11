/*
 * Unit tests of the names this mount created or removed lately
 * (src/fs/recent.c) merged into listings (src/fs/dirsnap.c), without
 * FUSE, over the fault layer's lagging listings (objfs_fault_list_lag())
 * and a local store: 1,000 files created and their inodes forgotten are
 * listed, all of them, while the store's listing shows none; 100 removed
 * are not while it still shows them; mkdir, rmdir, and the rename of a
 * file and of a directory too.  The table alone: the latest change wins,
 * changes expire (a fake clock), the bound drops the oldest, a directory
 * rename moves its tree's changes.
 *
 * The namespace steps of the FUSE operations (create, unlink, mkdir,
 * rmdir, rename) are replayed here as those operations run them, with
 * snap_note(), the one place each passes through.
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

#include "backend/tree.h"
#include "fs_testutil.h"
#include "store_testutil.h"

#define LAG_MS 600000           /* nothing a test writes is listed */
#define NFILES 1000

/* ---- the table alone ---------------------------------------------------- */

struct seen {
	char names[16][32];
	bool add[16];
	unsigned n;
};

static void collect(void *arg, const struct recent_ent *c)
{
	struct seen *s = arg;

	assert_true(s->n < 16);
	snprintf(s->names[s->n], sizeof(s->names[0]), "%s", c->name);
	s->add[s->n++] = c->add;
}

static bool has(const struct seen *s, const char *name, bool add)
{
	unsigned i;

	for (i = 0; i < s->n; i++) {
		if (strcmp(s->names[i], name) == 0)
			return s->add[i] == add;
	}
	return false;
}

static void test_table(void **state)
{
	struct fs_recent *r = malloc(sizeof(*r));
	struct timespec ts = { 1000, 0 };
	struct seen s;

	(void)state;
	assert_non_null(r);
	recent_init(r);
	recent_note(r, "d/", "a", true, false, 10.0, ts);
	recent_note(r, "d/", "b", true, false, 11.0, ts);
	recent_note(r, "e/", "a", false, false, 12.0, ts);
	recent_note(r, "d/", "a", false, false, 13.0, ts);     /* latest wins */
	memset(&s, 0, sizeof(s));
	recent_each(r, "d/", 14.0, collect, &s);
	assert_int_equal(s.n, 2);
	assert_true(has(&s, "a", false) && has(&s, "b", true));
	assert_int_equal(r->n, 3);
	/* the window counts from the last change: b (11) goes, a (13) stays */
	memset(&s, 0, sizeof(s));
	recent_each(r, "d/", 11.0 + RECENT_WINDOW, collect, &s);
	assert_int_equal(s.n, 1);
	assert_true(has(&s, "a", false));
	assert_int_equal(r->n, 2);             /* e/'s a (12) too */
	memset(&s, 0, sizeof(s));
	recent_each(r, "d/", 13.0 + RECENT_WINDOW, collect, &s);
	assert_int_equal(s.n, 0);
	assert_int_equal(r->n, 0);

	/* the bound drops the oldest first */
	r->max = 3;
	recent_note(r, "d/", "1", true, false, 20.0, ts);
	recent_note(r, "d/", "2", true, false, 21.0, ts);
	recent_note(r, "x/", "3", true, false, 22.0, ts);
	recent_note(r, "d/", "4", true, false, 23.0, ts);
	assert_int_equal(r->n, 3);
	assert_int_equal(r->dropped, 1);
	memset(&s, 0, sizeof(s));
	recent_each(r, "d/", 24.0, collect, &s);
	assert_int_equal(s.n, 2);
	assert_true(has(&s, "2", true) && has(&s, "4", true));
	recent_note(r, "y/", "5", true, false, 25.0, ts);      /* drops 2 */
	recent_note(r, "y/", "6", true, false, 26.0, ts);      /* drops x's 3 */
	memset(&s, 0, sizeof(s));
	recent_each(r, "x/", 27.0, collect, &s);
	assert_int_equal(s.n, 0);
	recent_release(r);
	assert_int_equal(r->n, 0);

	/* a directory rename moves its tree's changes; the target's go */
	recent_init(r);
	recent_note(r, "a/", "f", true, false, 30.0, ts);
	recent_note(r, "a/s/", "g", true, false, 30.0, ts);
	recent_note(r, "ab/", "h", true, false, 30.0, ts);     /* not under a/ */
	recent_note(r, "b/", "f", false, false, 31.0, ts);     /* b's, before */
	recent_note(r, "b/t/", "k", false, false, 31.0, ts);
	recent_rename_dir(r, "a/", "b/", 32.0);
	memset(&s, 0, sizeof(s));
	recent_each(r, "b/", 33.0, collect, &s);
	assert_int_equal(s.n, 1);
	assert_true(has(&s, "f", true));
	memset(&s, 0, sizeof(s));
	recent_each(r, "b/s/", 33.0, collect, &s);
	assert_true(s.n == 1 && has(&s, "g", true));
	memset(&s, 0, sizeof(s));
	recent_each(r, "b/t/", 33.0, collect, &s);
	assert_int_equal(s.n, 0);
	memset(&s, 0, sizeof(s));
	recent_each(r, "a/", 33.0, collect, &s);
	assert_int_equal(s.n, 0);
	memset(&s, 0, sizeof(s));
	recent_each(r, "ab/", 33.0, collect, &s);
	assert_true(s.n == 1 && has(&s, "h", true));
	assert_int_equal(r->n, 3);
	/* moved changes keep their time */
	memset(&s, 0, sizeof(s));
	recent_each(r, "b/", 30.0 + RECENT_WINDOW, collect, &s);
	assert_int_equal(s.n, 0);
	recent_release(r);
	free(r);
}

/* ---- listings of a lagging store ---------------------------------------- */

static int setup(void **state)
{
	return fe_setup_state(state, NULL);
}

/* Entries and prefixes the store's own listing of prefix shows (the
 * volume's own keys left out). */
static size_t store_names(struct fs_env *e, const char *prefix)
{
	struct objfs_list_req rq = { prefix, "/", NULL, NULL, 1000 };
	size_t n = 0, i, rl = strlen(prefix) + strlen(OBJFS_RESERVED_NAME);
	char *token = NULL, rsv[64];

	snprintf(rsv, sizeof(rsv), "%s%s", prefix, OBJFS_RESERVED_NAME);
	do {
		struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;

		rq.continuation = token;
		assert_int_equal(objfs_store_list(e->store, &rq, &pg), 0);
		free(token);
		for (i = 0; i < pg.n_entries; i++)
			n += strncmp(pg.entries[i].key, rsv, rl) != 0;
		for (i = 0; i < pg.n_prefixes; i++)
			n += strncmp(pg.prefixes[i], rsv, rl) != 0;
		token = pg.next;
		pg.next = NULL;
		objfs_list_page_release(&pg);
	} while (token != NULL);
	return n;
}

/* The store catches up: what it lists is what it holds (then it lags
 * again for what comes next). */
static void catch_up(struct fs_env *e)
{
	objfs_fault_list_lag(e->fault, 0);
	objfs_fault_list_lag(e->fault, LAG_MS);
}

/* Lists dir as a readdir does after its cached listing is gone (dir_ttl
 * passed): a new snapshot, checked against the names want[0..n) (sorted)
 * exactly. */
static void expect_listing(struct fs_env *e, struct inode *dir,
			   char **want, size_t n)
{
	struct objfs_fs *fs = e->fs;
	struct dirsnap *s = NULL;
	size_t i;

	pthread_mutex_lock(&fs->lock);
	snap_drop(dir);
	pthread_mutex_unlock(&fs->lock);
	assert_int_equal(snap_build(fs, dir, NULL, NULL, &s), 0);
	if (s->n != n)
		print_error("listed %zu names, want %zu\n", s->n, n);
	assert_int_equal(s->n, n);
	for (i = 0; i < n; i++)
		assert_string_equal(s->e[i].name, want[i]);
	pthread_mutex_lock(&fs->lock);
	snap_put_locked(s);
	pthread_mutex_unlock(&fs->lock);
}

/* The directory name under dir, looked up again (its inode may have been
 * forgotten): pinned. */
static struct inode *lookup_pin(struct fs_env *e, struct inode *dir,
				const char *name)
{
	struct inode *in = NULL;

	assert_int_equal(do_lookup(e->fs, dir, name, true, &in), 0);
	return in;
}

/* The kernel forgets in (a pin of the caller's, no lookups): freed when
 * clean. */
static void forget(struct fs_env *e, struct inode *in)
{
	unpin(e->fs, in);
}

/* create + write + close: op_create's namespace step, then the upload. */
static void do_create(struct fs_env *e, struct inode *dir, const char *name)
{
	struct objfs_fs *fs = e->fs;
	struct inode *in = fe_new_file(e, dir, name);

	pthread_mutex_lock(&fs->lock);
	snap_note(fs, dir, name, true, false);
	pthread_mutex_unlock(&fs->lock);
	assert_int_equal(inode_write(fs, in, name, strlen(name), 0), 0);
	assert_int_equal(inode_sync_locked_ns(fs, in), 0);
	assert_true(in->in_store && !in->dirty);
	forget(e, in);
}

/* mkdir: its marker, then op_mkdir's namespace step. */
static void do_mkdir(struct fs_env *e, struct inode *dir, const char *name)
{
	struct objfs_fs *fs = e->fs;
	char dkey[KEYBUF], key[KEYBUF];
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	assert_int_equal(inode_key(fs, dir, true, dkey, sizeof(dkey)), 0);
	pthread_mutex_unlock(&fs->lock);
	assert_int_equal(objfs_key_join(dkey, name, true, key, sizeof(key)), 0);
	tu_put(e->store, key, "", 0, NULL);
	pthread_mutex_lock(&fs->lock);
	in = inode_new(fs, dir, name, S_IFDIR | 0755);
	assert_non_null(in);
	in->in_store = true;
	in->attr_time = now_mono();
	snap_note(fs, dir, name, true, true);
	maybe_free(fs, in);     /* forgotten at once */
	pthread_mutex_unlock(&fs->lock);
}

/* unlink / rmdir: the key deleted, then op_unlink's or op_rmdir's
 * namespace step. */
static void do_remove(struct fs_env *e, struct inode *dir, const char *name)
{
	struct objfs_fs *fs = e->fs;
	struct inode *in = lookup_pin(e, dir, name), *par;
	char key[KEYBUF];
	bool is_dir;

	pthread_mutex_lock(&fs->lock);
	is_dir = S_ISDIR(in->mode);
	assert_int_equal(inode_key(fs, in, true, key, sizeof(key)), 0);
	pthread_mutex_unlock(&fs->lock);
	assert_int_equal(objfs_store_del(e->store, key), 0);
	pthread_mutex_lock(&fs->lock);
	par = detach(fs, in);
	snap_note(fs, par, name, false, is_dir);
	maybe_free(fs, par);
	pthread_mutex_unlock(&fs->lock);
	forget(e, in);
}

/* rename within dir: a file's copy and delete, or a directory's tree
 * moved, then op_rename's namespace step. */
static void do_rename(struct fs_env *e, struct inode *dir, const char *from,
		      const char *to)
{
	struct objfs_fs *fs = e->fs;
	struct inode *in = lookup_pin(e, dir, from), *par;
	char skey[KEYBUF], dkey[KEYBUF], ddkey[KEYBUF];
	bool is_dir;

	pthread_mutex_lock(&fs->lock);
	is_dir = S_ISDIR(in->mode);
	assert_int_equal(inode_key(fs, in, true, skey, sizeof(skey)), 0);
	assert_int_equal(inode_key(fs, dir, true, ddkey, sizeof(ddkey)), 0);
	pthread_mutex_unlock(&fs->lock);
	assert_int_equal(objfs_key_join(ddkey, to, is_dir, dkey, sizeof(dkey)), 0);
	if (is_dir) {
		assert_int_equal(objfs_tree_move(e->store, skey, dkey, NULL,
						 NULL), 0);
	} else {
		assert_int_equal(objfs_store_copy(e->store, skey, dkey, NULL,
						  NULL), 0);
		assert_int_equal(objfs_store_del(e->store, skey), 0);
	}
	pthread_mutex_lock(&fs->lock);
	par = detach(fs, in);   /* forgotten: the new name is looked up */
	if (is_dir)
		recent_rename_dir(&fs->recent, skey, dkey, now_mono());
	snap_note(fs, dir, from, false, is_dir);
	snap_note(fs, dir, to, true, is_dir);
	maybe_free(fs, par);
	pthread_mutex_unlock(&fs->lock);
	forget(e, in);
}

/* The expected names of a directory, kept sorted. */
struct names {
	char **v;
	size_t n;
};

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_add(struct names *ns, const char *name)
{
	ns->v = realloc(ns->v, (ns->n + 1) * sizeof(*ns->v));
	assert_non_null(ns->v);
	ns->v[ns->n] = strdup(name);
	assert_non_null(ns->v[ns->n]);
	ns->n++;
	qsort(ns->v, ns->n, sizeof(*ns->v), str_cmp);
}

static void names_del(struct names *ns, const char *name)
{
	size_t i;

	for (i = 0; i < ns->n; i++) {
		if (strcmp(ns->v[i], name) == 0) {
			free(ns->v[i]);
			memmove(&ns->v[i], &ns->v[i + 1],
				(ns->n - i - 1) * sizeof(*ns->v));
			ns->n--;
			return;
		}
	}
	fail_msg("%s not expected", name);
}

static void names_free(struct names *ns)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

static void test_lagging_store(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct names want = { NULL, 0 }, rootw = { NULL, 0 }, sub = { NULL, 0 };
	struct inode *d, *nd;
	char name[32];
	int i;

	objfs_fault_list_lag(e->fault, LAG_MS);
	do_mkdir(e, fs->root, "d");
	names_add(&rootw, "d");
	d = lookup_pin(e, fs->root, "d");
	for (i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%04d", i);
		do_create(e, d, name);
		names_add(&want, name);
	}
	do_mkdir(e, d, "olddir");
	names_add(&want, "olddir");
	do_mkdir(e, d, "tree");
	names_add(&want, "tree");
	nd = lookup_pin(e, d, "tree");
	do_create(e, nd, "inner");
	names_add(&sub, "inner");
	forget(e, nd);
	/* the store lists none of it; its children's inodes are gone */
	assert_int_equal(store_names(e, "d/"), 0);
	assert_int_equal(store_names(e, ""), 0);
	pthread_mutex_lock(&fs->lock);
	assert_null(find_child(fs, d, "f0000"));
	pthread_mutex_unlock(&fs->lock);
	expect_listing(e, d, want.v, want.n);
	expect_listing(e, fs->root, rootw.v, rootw.n);
	/* the directory's inode forgotten too, then looked up again */
	forget(e, d);
	pthread_mutex_lock(&fs->lock);
	snap_drop(fs->root);
	assert_null(find_child(fs, fs->root, "d"));
	pthread_mutex_unlock(&fs->lock);
	d = lookup_pin(e, fs->root, "d");
	expect_listing(e, d, want.v, want.n);

	/* the store catches up, then lags again: 100 removed are still in
	 * its listing, not in the mount's */
	catch_up(e);
	assert_int_equal(store_names(e, "d/"), NFILES + 3);    /* d/ too */
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "f%04d", i * 10);
		do_remove(e, d, name);
		names_del(&want, name);
	}
	assert_int_equal(store_names(e, "d/"), NFILES + 3);
	assert_int_equal(want.n, NFILES - 100 + 2);
	expect_listing(e, d, want.v, want.n);

	/* mkdir, rmdir, the rename of a file and of a directory */
	do_mkdir(e, d, "new1");
	names_add(&want, "new1");
	do_remove(e, d, "olddir");
	names_del(&want, "olddir");
	do_rename(e, d, "f0001", "moved");
	names_del(&want, "f0001");
	names_add(&want, "moved");
	do_rename(e, d, "tree", "tree2");
	names_del(&want, "tree");
	names_add(&want, "tree2");
	assert_int_equal(store_names(e, "d/"), NFILES + 3);
	expect_listing(e, d, want.v, want.n);
	nd = lookup_pin(e, d, "tree2");
	expect_listing(e, nd, sub.v, sub.n);
	forget(e, nd);

	/* once the store shows it all, the changes' window may end: the
	 * same listings from the store alone */
	objfs_fault_list_lag(e->fault, 0);
	pthread_mutex_lock(&fs->lock);
	fs->recent.window = 0;
	pthread_mutex_unlock(&fs->lock);
	expect_listing(e, d, want.v, want.n);
	assert_int_equal(fs->recent.n, 0);
	nd = lookup_pin(e, d, "tree2");
	expect_listing(e, nd, sub.v, sub.n);
	forget(e, nd);
	forget(e, d);
	names_free(&want);
	names_free(&rootw);
	names_free(&sub);
}

/* A name another writer put after this mount removed it is listed. */
static void test_rewritten_elsewhere(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct dirsnap *s = NULL;
	struct timespec old = now_real();
	bool found;

	tu_put(e->store, "g", "1", 1, NULL);
	objfs_fault_list_lag(e->fault, LAG_MS);
	do_remove(e, fs->root, "g");
	/* the store lists the new object of someone else (its Last-Modified
	 * later than the removal) */
	objfs_fault_list_lag(e->fault, 0);
	tu_put(e->store, "g", "2", 1, NULL);
	assert_int_equal(store_names(e, ""), 1);
	pthread_mutex_lock(&fs->lock);
	/* as if removed a while before that object was written */
	old.tv_sec -= 10;
	recent_note(&fs->recent, "", "g", false, false, now_mono(), old);
	snap_drop(fs->root);
	pthread_mutex_unlock(&fs->lock);
	assert_int_equal(snap_build(fs, fs->root, NULL, NULL, &s), 0);
	snap_find(s, "g", &found);
	assert_true(found);
	pthread_mutex_lock(&fs->lock);
	snap_put_locked(s);
	pthread_mutex_unlock(&fs->lock);
}

/* A file and a directory the kernel forgot (freed here) get their numbers
 * again at their next lookup, and readdir shows those numbers; a number is
 * given to one name only (issue 34 item 3). */
static void test_number_kept_after_forget(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in, *d;
	fuse_ino_t f_ino, d_ino;

	do_create(e, fs->root, "f");
	do_mkdir(e, fs->root, "d");
	in = lookup_pin(e, fs->root, "f");
	d = lookup_pin(e, fs->root, "d");
	f_ino = in->ino;
	d_ino = d->ino;
	forget(e, in);
	forget(e, d);
	pthread_mutex_lock(&fs->lock);
	assert_null(find_ino(fs, f_ino));               /* freed */
	assert_int_equal(ino_mem_take(fs, FUSE_ROOT_ID, "f", true), f_ino);
	pthread_mutex_unlock(&fs->lock);
	do_create(e, fs->root, "g");                    /* a new name */
	in = lookup_pin(e, fs->root, "g");
	assert_true(in->ino != f_ino && in->ino != d_ino);
	forget(e, in);
	in = lookup_pin(e, fs->root, "f");
	d = lookup_pin(e, fs->root, "d");
	assert_int_equal(in->ino, f_ino);
	assert_int_equal(d->ino, d_ino);
	pthread_mutex_lock(&fs->lock);
	/* given once: the live inode has it */
	assert_int_equal(ino_mem_take(fs, FUSE_ROOT_ID, "f", true), 0);
	pthread_mutex_unlock(&fs->lock);
	forget(e, in);
	forget(e, d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test_setup_teardown(test_lagging_store, setup,
						fe_teardown_state),
		cmocka_unit_test_setup_teardown(test_rewritten_elsewhere, setup,
						fe_teardown_state),
		cmocka_unit_test_setup_teardown(test_number_kept_after_forget,
						setup, fe_teardown_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
