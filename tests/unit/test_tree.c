/*
 * Unit tests of tree.c: size, copy, move (all or nothing) and delete of a
 * prefix tree over the local store under the fault layer, in the caller's
 * thread and on a pool.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/fault.h"
#include "backend/tree.h"
#include "common/pool.h"
#include "store_testutil.h"

struct fixture {
	char dir[64];
	struct objfs_store *s;
	struct objfs_fault *fault;
	struct objfs_pool *pool;        /* NULL in the serial variant */
};

static int setup_common(void **state, bool pool)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct objfs_store *local = NULL;

	if (f == NULL)
		return -1;
	if (tu_tmpdir(f->dir, sizeof(f->dir), "tree") != 0 ||
	    objfs_local_store_create(f->dir, NULL, &local) != 0 ||
	    objfs_fault_store_create(local, &f->s, &f->fault) != 0 ||
	    (pool && objfs_pool_create(4, &f->pool) != 0)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int setup_serial(void **state)
{
	return setup_common(state, false);
}

static int setup_pool(void **state)
{
	return setup_common(state, true);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->pool != NULL)
		objfs_pool_destroy(f->pool);
	objfs_store_destroy(f->s);
	tu_rm_tree(f->dir);
	free(f);
	return 0;
}

/* Puts n keys PREFIX "d<i mod 7>/k<i>" holding "v<i>". */
static void put_keys(struct objfs_store *s, const char *prefix, unsigned n)
{
	char key[128], val[32];
	unsigned i;

	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%sd%u/k%05u", prefix, i % 7, i);
		snprintf(val, sizeof(val), "v%u", i);
		tu_put(s, key, val, strlen(val), NULL);
	}
}

static void check_keys(struct objfs_store *s, const char *prefix, unsigned n)
{
	char key[128], val[32];
	unsigned i;

	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%sd%u/k%05u", prefix, i % 7, i);
		snprintf(val, sizeof(val), "v%u", i);
		tu_check(s, key, val, strlen(val));
	}
}

static size_t count_keys(struct objfs_store *s, const char *prefix)
{
	struct objfs_tree_stats st;

	assert_int_equal(objfs_tree_size(s, prefix, NULL, &st), 0);
	return (size_t)st.count;
}

static void test_delete(void **state)
{
	struct fixture *f = *state;
	struct objfs_tree_opts o = { .pool = f->pool, .page_keys = 1000 };
	struct objfs_tree_stats st;

	put_keys(f->s, "x/", 2100);
	put_keys(f->s, "y/", 10);
	put_keys(f->s, "x", 3);         /* siblings of x/, not under it */

	/* A failed batch: an error, then a rerun finishes the job. */
	objfs_fault_fail_next(f->fault, OBJFS_FOP_DEL_MANY, 1, EIO);
	assert_int_equal(objfs_tree_delete(f->s, "x/", &o, &st), EIO);
	assert_true(st.count < 1000);
	objfs_fault_reset(f->fault);
	assert_int_equal(objfs_tree_delete(f->s, "x/", &o, &st), 0);
	assert_true(st.count >= 1100);
	/* 100 keys a request. */
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_DEL_MANY),
			 (st.count + OBJFS_TREE_DEL_BATCH - 1) / OBJFS_TREE_DEL_BATCH);
	assert_int_equal(count_keys(f->s, "x/"), 0);
	assert_int_equal(count_keys(f->s, "y/"), 10);
	assert_int_equal(count_keys(f->s, "x"), 3);

	/* Nothing to delete; skip keeps a key. */
	assert_int_equal(objfs_tree_delete(f->s, "x/", &o, &st), 0);
	assert_int_equal(st.count, 0);
	{
		const char *skip[] = { "d0/k00000", NULL };

		o.skip = skip;
		assert_int_equal(objfs_tree_delete(f->s, "y/", &o, &st), 0);
		assert_int_equal(st.count, 9);
		assert_int_equal(count_keys(f->s, "y/"), 1);
	}
}

static void test_size_copy(void **state)
{
	struct fixture *f = *state;
	const char *skip[] = { "d1/k00001", NULL };
	struct objfs_tree_opts o = { .pool = f->pool, .page_keys = 16,
				     .skip = skip };
	struct objfs_tree_stats st;
	char longdst[OBJFS_KEY_MAX];

	put_keys(f->s, "src/", 50);
	assert_int_equal(objfs_tree_size(f->s, "src/", &o, &st), 0);
	assert_int_equal(st.count, 49);
	assert_int_equal(st.bytes, 10 * 2 + 40 * 3 - 2);

	assert_int_equal(objfs_tree_copy(f->s, "src/", "dst/a/", &o, &st), 0);
	assert_int_equal(st.count, 49);
	check_keys(f->s, "src/", 50);   /* the source stays */
	assert_int_equal(count_keys(f->s, "dst/a/"), 49);
	tu_check(f->s, "dst/a/d6/k00048", "v48", 3);

	/* A failed copy is reported; a rerun completes the job. */
	objfs_fault_fail_next(f->fault, OBJFS_FOP_COPY, 3, EIO);
	assert_int_equal(objfs_tree_copy(f->s, "src/", "dst/b/", &o, &st), EIO);
	objfs_fault_reset(f->fault);
	assert_int_equal(objfs_tree_copy(f->s, "src/", "dst/b/", &o, &st), 0);
	assert_int_equal(count_keys(f->s, "dst/b/"), 49);

	/* A destination key over the limit: ENAMETOOLONG, nothing copied. */
	memset(longdst, 'l', sizeof(longdst) - 8);
	strcpy(longdst + sizeof(longdst) - 8, "/");
	assert_int_equal(objfs_tree_copy(f->s, "src/", longdst, &o, &st),
			 ENAMETOOLONG);
	assert_int_equal(st.count, 0);
}

static void test_move(void **state)
{
	struct fixture *f = *state;
	struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };
	struct objfs_tree_opts o = { .pool = f->pool, .page_keys = 10,
				     .copy = &co };
	struct objfs_tree_stats st;

	put_keys(f->s, "a/", 40);

	/* A copy fails half way: the copies made are gone, the source is
	 * whole. */
	objfs_fault_fail_prob(f->fault, OBJFS_FOP_COPY, 0.1, EIO, 7);
	assert_int_equal(objfs_tree_move(f->s, "a/", "b/", &o, &st), EIO);
	assert_int_equal(st.left, 0);
	objfs_fault_reset(f->fault);
	assert_int_equal(count_keys(f->s, "b/"), 0);
	check_keys(f->s, "a/", 40);

	/* The deletion of the sources fails: both are there, said so. */
	objfs_fault_fail_next(f->fault, OBJFS_FOP_DEL_MANY, 1, EIO);
	assert_int_equal(objfs_tree_move(f->s, "a/", "b/", &o, &st), EIO);
	assert_true(st.left > 0);
	objfs_fault_reset(f->fault);
	check_keys(f->s, "b/", 40);

	/* A clean move. */
	assert_int_equal(objfs_tree_move(f->s, "b/", "c/d/", &o, &st), 0);
	assert_int_equal(st.count, 40);
	assert_int_equal(st.left, 0);
	assert_int_equal(count_keys(f->s, "b/"), 0);
	check_keys(f->s, "c/d/", 40);

	/* An empty tree moves as nothing. */
	assert_int_equal(objfs_tree_move(f->s, "none/", "x/", &o, &st), 0);
	assert_int_equal(st.count, 0);
}

static int stop_page(void *arg, const struct objfs_list_page *page)
{
	unsigned *pages = arg;

	(void)page;
	return ++*pages == 2 ? ECANCELED : 0;
}

static void test_walk(void **state)
{
	struct fixture *f = *state;
	unsigned pages = 0;

	put_keys(f->s, "w/", 25);
	assert_int_equal(objfs_tree_walk(f->s, "w/", 10, stop_page, &pages),
			 ECANCELED);
	assert_int_equal(pages, 2);
	objfs_fault_fail_next(f->fault, OBJFS_FOP_LIST, 1, EACCES);
	assert_int_equal(objfs_tree_walk(f->s, "w/", 10, stop_page, &pages),
			 EACCES);
}

/* Every key of a prefix in one array, past one page (1,000 keys); a
 * failed listing is the error, with what came before it. */
static void test_keys(void **state)
{
	struct fixture *f = *state;
	char **keys = NULL, want[64];
	size_t n = 0, i, seen[7] = { 0 };

	put_keys(f->s, "ks/", 1003);
	put_keys(f->s, "other/", 3);
	assert_int_equal(objfs_tree_keys(f->s, "ks/", &keys, &n), 0);
	assert_int_equal(n, 1003);
	for (i = 0; i < n; i++) {
		assert_int_equal(strncmp(keys[i], "ks/d", 4), 0);
		assert_true(i == 0 || strcmp(keys[i - 1], keys[i]) < 0);
		seen[keys[i][4] - '0']++;
	}
	for (i = 0; i < 7; i++)
		assert_int_equal(seen[i], 1003 / 7 + (i < 1003 % 7));
	snprintf(want, sizeof(want), "ks/d0/k%05u", 0);
	assert_string_equal(keys[0], want);
	objfs_tree_keys_free(keys, n);
	assert_int_equal(objfs_tree_keys(f->s, "none/", &keys, &n), 0);
	assert_int_equal(n, 0);
	objfs_tree_keys_free(keys, n);
	objfs_fault_fail_next(f->fault, OBJFS_FOP_LIST, 1, EACCES);
	assert_int_equal(objfs_tree_keys(f->s, "ks/", &keys, &n), EACCES);
	assert_int_equal(n, 0);
	objfs_tree_keys_free(keys, n);
}

#define BOTH(t) \
	cmocka_unit_test_setup_teardown(t, setup_serial, teardown), \
	cmocka_unit_test_setup_teardown(t, setup_pool, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_delete),
		BOTH(test_size_copy),
		BOTH(test_move),
		BOTH(test_walk),
		cmocka_unit_test_setup_teardown(test_keys, setup_serial, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
