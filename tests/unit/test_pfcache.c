/* Unit tests of the prefetch cache (src/fs/pfcache.c): reservation and
 * fill, the byte and entry bounds (oldest ready entries pushed out, never
 * loading ones), drops that throw away a fill still on its way, the age
 * rule, peeking versus taking, and a lookup that waits for a fill made by
 * another thread. */
#include "config.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs/pfcache.h"

struct attr {
	int v;
};

static char *dup_bytes(const char *s)
{
	char *p = malloc(strlen(s) + 1);

	assert_non_null(p);
	strcpy(p, s);
	return p;
}

/* Fills id with s (its bytes, without the NUL) and attribute v. */
static void fill(struct objfs_pfcache *c, uint64_t id, const char *s, int v)
{
	struct attr a = { v };

	objfs_pfcache_fill(c, id, 0, dup_bytes(s), strlen(s), &a);
}

static void test_fill_get_take(void **state)
{
	struct objfs_pfcache *c;
	struct objfs_pfcache_stats st;
	struct attr a = { 0 };
	uint64_t id;
	double when = 0;
	char *data;
	size_t len;

	(void)state;
	assert_int_equal(objfs_pfcache_create(100, 10, sizeof(a), &c), 0);
	id = objfs_pfcache_reserve(c, "d/a", 10, 5.0);
	assert_true(id > 0);
	/* the same key twice: no second fetch */
	assert_true(objfs_pfcache_reserve(c, "d/a", 10, 5.0) == 0);
	/* loading, not waited for: a miss */
	assert_false(objfs_pfcache_get(c, "d/a", false, false, 0, &a, &when,
				       &data, &len));
	fill(c, id, "hello", 7);
	/* peek: the attributes, the entry stays */
	assert_true(objfs_pfcache_get(c, "d/a", false, false, 0, &a, &when,
				      &data, &len));
	assert_int_equal(a.v, 7);
	assert_true(when == 5.0);
	assert_null(data);
	assert_int_equal(len, 5);
	/* take: the bytes change hands, the entry goes */
	assert_true(objfs_pfcache_get(c, "d/a", true, true, 0, &a, &when,
				      &data, &len));
	assert_int_equal(len, 5);
	assert_memory_equal(data, "hello", 5);
	free(data);
	assert_false(objfs_pfcache_get(c, "d/a", true, true, 0, &a, &when,
				       &data, &len));
	objfs_pfcache_stats(c, &st);
	assert_int_equal(st.hits, 2);
	assert_int_equal(st.taken, 1);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.bytes, 0);
	objfs_pfcache_destroy(c);
}

static void test_bounds(void **state)
{
	struct objfs_pfcache *c;
	struct objfs_pfcache_stats st;
	struct attr a;
	uint64_t id[4];
	double when;
	char *data;
	size_t len;

	(void)state;
	assert_int_equal(objfs_pfcache_create(100, 3, sizeof(a), &c), 0);
	/* larger than the whole bound: never */
	assert_true(objfs_pfcache_reserve(c, "big", 101, 1.0) == 0);
	id[0] = objfs_pfcache_reserve(c, "k0", 40, 1.0);
	id[1] = objfs_pfcache_reserve(c, "k1", 40, 2.0);
	assert_true(id[0] > 0 && id[1] > 0);
	/* both loading: nothing may be pushed out */
	assert_true(objfs_pfcache_reserve(c, "k2", 40, 3.0) == 0);
	fill(c, id[0], "zero", 0);
	fill(c, id[1], "one", 1);
	/* the oldest ready one goes to make room */
	id[2] = objfs_pfcache_reserve(c, "k2", 40, 3.0);
	assert_true(id[2] > 0);
	assert_false(objfs_pfcache_get(c, "k0", false, false, 0, &a, &when,
				       &data, &len));
	assert_true(objfs_pfcache_get(c, "k1", false, false, 0, &a, &when,
				      &data, &len));
	/* the entry bound: three at most */
	id[3] = objfs_pfcache_reserve(c, "k3", 1, 4.0);
	assert_true(id[3] > 0);
	objfs_pfcache_stats(c, &st);
	assert_true(st.bytes <= 100);
	assert_true(st.entries <= 3);
	assert_int_equal(st.evicted, 1);
	/* a fill larger than its reservation is refused */
	objfs_pfcache_fill(c, id[3], 0, dup_bytes("toolong"), 7, &a);
	assert_false(objfs_pfcache_get(c, "k3", true, false, 0, &a, &when,
				       &data, &len));
	/* a failed GET leaves nothing */
	objfs_pfcache_fill(c, id[2], 5, NULL, 0, NULL);
	assert_false(objfs_pfcache_get(c, "k2", true, false, 0, &a, &when,
				       &data, &len));
	objfs_pfcache_stats(c, &st);
	assert_int_equal(st.failed, 2);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.bytes, 40);
	objfs_pfcache_destroy(c);
}

static void test_drop_and_age(void **state)
{
	struct objfs_pfcache *c;
	struct objfs_pfcache_stats st;
	struct attr a;
	uint64_t id, id2;
	double when;
	char *data;
	size_t len;

	(void)state;
	assert_int_equal(objfs_pfcache_create(1000, 10, sizeof(a), &c), 0);
	/* dropped while loading: the late fill is thrown away */
	id = objfs_pfcache_reserve(c, "d/a", 10, 1.0);
	objfs_pfcache_drop(c, "d/a");
	fill(c, id, "stale", 1);
	assert_false(objfs_pfcache_get(c, "d/a", true, false, 0, &a, &when,
				       &data, &len));
	/* a new fetch after the drop lands; the old fill never replaces it */
	id2 = objfs_pfcache_reserve(c, "d/a", 10, 2.0);
	assert_true(id2 > id);
	fill(c, id, "stale", 1);
	fill(c, id2, "fresh", 2);
	assert_true(objfs_pfcache_get(c, "d/a", false, false, 0, &a, &when,
				      &data, &len));
	assert_int_equal(a.v, 2);
	/* a directory's drop takes its whole tree, not its neighbours */
	fill(c, objfs_pfcache_reserve(c, "d/s/x", 10, 2.0), "x", 3);
	fill(c, objfs_pfcache_reserve(c, "e/x", 10, 2.0), "x", 4);
	objfs_pfcache_drop_prefix(c, "d/");
	assert_false(objfs_pfcache_get(c, "d/a", false, false, 0, &a, &when,
				       &data, &len));
	assert_false(objfs_pfcache_get(c, "d/s/x", false, false, 0, &a, &when,
				       &data, &len));
	assert_true(objfs_pfcache_get(c, "e/x", false, false, 0, &a, &when,
				      &data, &len));
	/* too old: removed when looked up */
	assert_false(objfs_pfcache_get(c, "e/x", false, false, 2.5, &a, &when,
				       &data, &len));
	assert_false(objfs_pfcache_get(c, "e/x", false, false, 0, &a, &when,
				       &data, &len));
	objfs_pfcache_stats(c, &st);
	assert_int_equal(st.dropped, 3);
	assert_int_equal(st.expired, 1);
	assert_int_equal(st.entries, 0);
	objfs_pfcache_destroy(c);
}

struct filler {
	struct objfs_pfcache *c;
	uint64_t id;
};

static void *fill_later(void *arg)
{
	struct filler *f = arg;

	usleep(50 * 1000);
	fill(f->c, f->id, "late", 9);
	return NULL;
}

static void test_wait(void **state)
{
	struct objfs_pfcache *c;
	struct filler f;
	struct attr a = { 0 };
	pthread_t t;
	double when;
	char *data;
	size_t len;

	(void)state;
	assert_int_equal(objfs_pfcache_create(1000, 10, sizeof(a), &c), 0);
	f.c = c;
	f.id = objfs_pfcache_reserve(c, "w", 10, 1.0);
	assert_int_equal(pthread_create(&t, NULL, fill_later, &f), 0);
	assert_true(objfs_pfcache_get(c, "w", true, true, 0, &a, &when,
				      &data, &len));
	assert_int_equal(a.v, 9);
	assert_int_equal(len, 4);
	assert_memory_equal(data, "late", 4);
	free(data);
	pthread_join(t, NULL);
	/* a loading entry left behind is freed with the cache */
	assert_true(objfs_pfcache_reserve(c, "left", 10, 1.0) > 0);
	objfs_pfcache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill_get_take),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_drop_and_age),
		cmocka_unit_test(test_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
