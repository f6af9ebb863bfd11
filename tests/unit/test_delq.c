/*
 * Unit tests of the deferred-delete layer (delq.c) over the fault layer
 * on a local store: deletes go in DeleteObjects batches of at most 1,000;
 * a pending key is ENOENT to head/get/copy and left out of listings
 * without asking the store; a put to a pending key cancels its delete
 * (and waits for a batch in flight); a key whose delete fails is visible
 * again and the barrier says EIO; a full queue makes its callers wait
 * for room, not fail; the done callback hears of every deferred key.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/delq.h"
#include "backend/fault.h"
#include "store_testutil.h"

struct env {
	char dir[256];
	struct objfs_store *store;      /* delq -> fault -> local */
	struct objfs_store *below;      /* fault -> local: the store's view */
	struct objfs_fault *fault;
	pthread_mutex_t mu;
	unsigned told, told_failed;     /* mu */
	int last_err;                   /* mu */
};

static void done(void *arg, const char *key, int err)
{
	struct env *e = arg;

	(void)key;
	pthread_mutex_lock(&e->mu);
	e->told++;
	if (err != 0) {
		e->told_failed++;
		e->last_err = err;
	}
	pthread_mutex_unlock(&e->mu);
}

static struct env *env_new(unsigned delay_ms, size_t queue_max)
{
	struct objfs_delq_config dc = { .delay_ms = delay_ms,
					.queue_max = queue_max };
	struct objfs_store *local = NULL;
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	pthread_mutex_init(&e->mu, NULL);
	assert_int_equal(tu_tmpdir(e->dir, sizeof(e->dir), "delq"), 0);
	assert_int_equal(objfs_local_store_create(e->dir, NULL, &local), 0);
	assert_int_equal(objfs_fault_store_create(local, &e->below, &e->fault), 0);
	assert_int_equal(objfs_delq_store_create(e->below, &dc, NULL, &e->store), 0);
	assert_int_equal(objfs_delq_set_done(e->store, done, e), 0);
	return e;
}

static void env_free(struct env *e)
{
	objfs_store_destroy(e->store);
	tu_rm_tree(e->dir);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

static void put_str(struct objfs_store *s, const char *key, const char *v)
{
	tu_put(s, key, v, strlen(v), NULL);
}

/* 2,500 keys deferred: three DeleteObjects (1,000 at once each, the rest
 * at the barrier), no single DELETE, every key gone from the store. */
static void test_batches(void **state)
{
	struct env *e = env_new(60000, 0);
	char key[32];
	int i;

	(void)state;
	for (i = 0; i < 2500; i++) {
		snprintf(key, sizeof(key), "f%04d", i);
		put_str(e->below, key, "x");
	}
	for (i = 0; i < 2500; i++) {
		snprintf(key, sizeof(key), "f%04d", i);
		assert_int_equal(objfs_store_del_deferred(e->store, key), 0);
	}
	assert_int_equal(objfs_store_del_barrier(e->store), 0);
	assert_int_equal(objfs_fault_calls(e->fault, OBJFS_FOP_DEL_MANY), 3);
	assert_int_equal(objfs_fault_calls(e->fault, OBJFS_FOP_DEL), 0);
	assert_int_equal(objfs_delq_pending(e->store), 0);
	for (i = 0; i < 2500; i += 499) {
		snprintf(key, sizeof(key), "f%04d", i);
		assert_int_equal(objfs_store_head(e->below, key, NULL), ENOENT);
	}
	assert_int_equal(e->told, 2500);
	assert_int_equal(e->told_failed, 0);
	env_free(e);
}

/* While pending: ENOENT without a request, left out of listings (a
 * common prefix too when all under it is pending; a page left empty is
 * followed by the next); the store still has the keys until the barrier. */
static void test_pending_hidden(void **state)
{
	struct env *e = env_new(60000, 0);
	struct objfs_list_req lr = { "", "/", NULL, NULL, 0 };
	struct objfs_list_req flat = { "", NULL, NULL, NULL, 1 };
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_get_opts go = OBJFS_GET_ALL;
	struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };
	struct objfs_sink sink;
	uint64_t heads;

	(void)state;
	put_str(e->below, "a", "1");
	put_str(e->below, "b", "2");
	put_str(e->below, "d/x", "3");
	put_str(e->below, "d/y", "4");
	put_str(e->below, "e/z", "5");
	assert_int_equal(objfs_store_del_deferred(e->store, "a"), 0);
	assert_int_equal(objfs_store_del_deferred(e->store, "d/x"), 0);
	assert_int_equal(objfs_store_del_deferred(e->store, "d/y"), 0);
	heads = objfs_fault_calls(e->fault, OBJFS_FOP_HEAD);
	assert_int_equal(objfs_store_head(e->store, "a", NULL), ENOENT);
	assert_int_equal(objfs_fault_calls(e->fault, OBJFS_FOP_HEAD), heads);
	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(objfs_store_get(e->store, "a", &go, &sink, NULL), ENOENT);
	assert_int_equal(objfs_store_copy(e->store, "a", "c", &co, NULL), ENOENT);
	assert_int_equal(objfs_store_head(e->store, "b", NULL), 0);

	assert_int_equal(objfs_store_list(e->store, &lr, &pg), 0);
	assert_int_equal(pg.n_entries, 1);
	assert_string_equal(pg.entries[0].key, "b");
	assert_int_equal(pg.n_prefixes, 1);
	assert_string_equal(pg.prefixes[0], "e/");
	objfs_list_page_release(&pg);

	/* one key a page: "a" is pending, the next page answers */
	assert_int_equal(objfs_store_list(e->store, &flat, &pg), 0);
	assert_true(pg.n_entries >= 1);
	assert_string_equal(pg.entries[0].key, "b");
	objfs_list_page_release(&pg);

	assert_int_equal(objfs_store_head(e->below, "a", NULL), 0);
	assert_int_equal(objfs_store_del_barrier(e->store), 0);
	assert_int_equal(objfs_store_head(e->below, "a", NULL), ENOENT);
	assert_int_equal(objfs_store_head(e->below, "d/x", NULL), ENOENT);
	assert_int_equal(objfs_store_head(e->below, "b", NULL), 0);
	objfs_membuf_release(&mb);
	env_free(e);
}

/* A put to a queued key cancels its delete: nothing is sent, the new
 * bytes stay.  A put with if_none_match deletes the old object first. */
static void test_cancel_on_put(void **state)
{
	struct env *e = env_new(60000, 0);
	struct objfs_put_opts excl = { NULL, NULL, true };

	(void)state;
	put_str(e->below, "k", "old");
	assert_int_equal(objfs_store_del_deferred(e->store, "k"), 0);
	put_str(e->store, "k", "new");
	assert_int_equal(objfs_delq_pending(e->store), 0);
	assert_int_equal(objfs_store_del_barrier(e->store), 0);
	assert_int_equal(objfs_fault_calls(e->fault, OBJFS_FOP_DEL_MANY), 0);
	tu_check(e->below, "k", "new", 3);
	assert_int_equal(e->told, 1);

	put_str(e->below, "m", "old");
	assert_int_equal(objfs_store_del_deferred(e->store, "m"), 0);
	tu_put(e->store, "m", "excl", 4, &excl);
	tu_check(e->below, "m", "excl", 4);
	assert_int_equal(e->told, 2);
	env_free(e);
}

/* A put to a key whose batch is in flight waits for it: the delete never
 * lands after the put. */
static void test_put_waits_in_flight(void **state)
{
	struct env *e = env_new(1, 0);

	(void)state;
	put_str(e->below, "k", "old");
	objfs_fault_delay(e->fault, OBJFS_FOP_DEL_MANY, 300);
	assert_int_equal(objfs_store_del_deferred(e->store, "k"), 0);
	while (objfs_fault_calls(e->fault, OBJFS_FOP_DEL_MANY) == 0)
		usleep(1000);   /* in flight now, for 300 ms */
	put_str(e->store, "k", "new");
	assert_int_equal(objfs_store_del_barrier(e->store), 0);
	tu_check(e->below, "k", "new", 3);
	env_free(e);
}

/* A failed batch is sent again key by key; the key that still fails is
 * visible again, told with its errno, and the barrier says EIO once. */
static void test_failure_visible_again(void **state)
{
	struct env *e = env_new(60000, 0);

	(void)state;
	put_str(e->below, "k1", "1");
	put_str(e->below, "k2", "2");
	assert_int_equal(objfs_store_del_deferred(e->store, "k1"), 0);
	assert_int_equal(objfs_store_del_deferred(e->store, "k2"), 0);
	assert_int_equal(objfs_store_head(e->store, "k1", NULL), ENOENT);
	objfs_fault_fail_next(e->fault, OBJFS_FOP_DEL_MANY, 1, EIO);
	objfs_fault_fail_next(e->fault, OBJFS_FOP_DEL, 1, EACCES);
	assert_int_equal(objfs_store_del_barrier(e->store), EIO);
	assert_int_equal(objfs_store_head(e->store, "k1", NULL), 0);
	assert_int_equal(objfs_store_head(e->store, "k2", NULL), ENOENT);
	assert_int_equal(objfs_store_head(e->below, "k2", NULL), ENOENT);
	assert_int_equal(e->told, 2);
	assert_int_equal(e->told_failed, 1);
	assert_int_equal(e->last_err, EACCES);
	assert_int_equal(objfs_store_del_barrier(e->store), 0);
	env_free(e);
}

/* A full queue sends at once and its callers wait for room; a
 * synchronous delete of a queued key drops it from the queue. */
static void test_backpressure_and_sync_del(void **state)
{
	struct env *e = env_new(60000, 10);
	char key[32];
	int i;

	(void)state;
	for (i = 0; i < 25; i++) {
		snprintf(key, sizeof(key), "f%02d", i);
		put_str(e->below, key, "x");
		assert_int_equal(objfs_store_del_deferred(e->store, key), 0);
	}
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_DEL_MANY) >= 2);
	/* the queue, and a batch of it in flight */
	assert_true(objfs_delq_pending(e->store) <= 20);
	assert_int_equal(objfs_store_del_barrier(e->store), 0);
	assert_int_equal(objfs_store_head(e->below, "f24", NULL), ENOENT);

	put_str(e->below, "s", "x");
	assert_int_equal(objfs_store_del_deferred(e->store, "s"), 0);
	assert_int_equal(objfs_store_del(e->store, "s"), 0);
	assert_int_equal(objfs_delq_pending(e->store), 0);
	assert_int_equal(objfs_store_head(e->below, "s", NULL), ENOENT);
	assert_int_equal(e->told, 26);
	env_free(e);
}

/* Destroying the store sends what is still queued. */
static void test_destroy_drains(void **state)
{
	struct objfs_delq_config dc = { .delay_ms = 60000 };
	struct objfs_store *local = NULL, *s = NULL;
	char dir[256];

	(void)state;
	assert_int_equal(tu_tmpdir(dir, sizeof(dir), "delq"), 0);
	assert_int_equal(objfs_local_store_create(dir, NULL, &local), 0);
	put_str(local, "k", "x");
	assert_int_equal(objfs_delq_store_create(local, &dc, NULL, &s), 0);
	assert_int_equal(objfs_store_del_deferred(s, "k"), 0);
	objfs_store_destroy(s);
	assert_int_equal(objfs_local_store_create(dir, NULL, &local), 0);
	assert_int_equal(objfs_store_head(local, "k", NULL), ENOENT);
	objfs_store_destroy(local);
	tu_rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batches),
		cmocka_unit_test(test_pending_hidden),
		cmocka_unit_test(test_cancel_on_put),
		cmocka_unit_test(test_put_waits_in_flight),
		cmocka_unit_test(test_failure_visible_again),
		cmocka_unit_test(test_backpressure_and_sync_del),
		cmocka_unit_test(test_destroy_drains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
