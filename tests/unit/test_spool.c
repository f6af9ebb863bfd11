/* Unit tests of the spool: range bookkeeping, writes past the end,
 * truncation, fills that never overwrite local data, keeping a spool's
 * file under a name; of the pool's byte
 * budget (the read-ahead memory bound) and task groups; and of the data
 * cache's bound and identity checks. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs/datacache.h"
#include "common/pool.h"
#include "fs/spool.h"

static void expect_ranges(const struct objfs_rangeset *rs, const uint64_t *r,
			  size_t n)
{
	size_t i;

	assert_int_equal(rs->n, n);
	for (i = 0; i < n; i++) {
		assert_true(rs->r[i].start == r[2 * i]);
		assert_true(rs->r[i].end == r[2 * i + 1]);
	}
}

static void test_rangeset(void **state)
{
	struct objfs_rangeset rs = OBJFS_RANGESET_INIT;
	uint64_t gs, ge;

	(void)state;
	assert_int_equal(objfs_rangeset_add(&rs, 10, 20), 0);
	assert_int_equal(objfs_rangeset_add(&rs, 30, 40), 0);
	assert_int_equal(objfs_rangeset_add(&rs, 5, 5), 0);     /* empty */
	expect_ranges(&rs, (const uint64_t[]){ 10, 20, 30, 40 }, 2);
	assert_int_equal(objfs_rangeset_add(&rs, 20, 30), 0);   /* touching */
	expect_ranges(&rs, (const uint64_t[]){ 10, 40 }, 1);
	assert_int_equal(objfs_rangeset_add(&rs, 0, 5), 0);
	assert_int_equal(objfs_rangeset_add(&rs, 50, 60), 0);
	assert_int_equal(objfs_rangeset_add(&rs, 3, 55), 0);    /* swallows */
	expect_ranges(&rs, (const uint64_t[]){ 0, 60 }, 1);
	assert_int_equal(objfs_rangeset_remove(&rs, 10, 20), 0); /* split */
	expect_ranges(&rs, (const uint64_t[]){ 0, 10, 20, 60 }, 2);
	assert_int_equal(objfs_rangeset_remove(&rs, 5, 25), 0);
	expect_ranges(&rs, (const uint64_t[]){ 0, 5, 25, 60 }, 2);
	assert_true(objfs_rangeset_bytes(&rs) == 40);
	assert_true(objfs_rangeset_covers(&rs, 30, 60));
	assert_false(objfs_rangeset_covers(&rs, 0, 6));
	assert_true(objfs_rangeset_covers(&rs, 7, 7));
	assert_true(objfs_rangeset_first_gap(&rs, 0, 100, &gs, &ge));
	assert_true(gs == 5 && ge == 25);
	assert_true(objfs_rangeset_first_gap(&rs, 26, 100, &gs, &ge));
	assert_true(gs == 60 && ge == 100);
	assert_false(objfs_rangeset_first_gap(&rs, 25, 60, &gs, &ge));
	assert_int_equal(objfs_rangeset_remove(&rs, 0, UINT64_MAX), 0);
	assert_int_equal(rs.n, 0);
	objfs_rangeset_release(&rs);
}

static void test_rangeset_random(void **state)
{
	struct objfs_rangeset rs = OBJFS_RANGESET_INIT;
	unsigned char ref[1000];
	unsigned i, k;

	(void)state;
	memset(ref, 0, sizeof(ref));
	srand(7);
	for (k = 0; k < 2000; k++) {
		unsigned a = (unsigned)rand() % 1000, b = (unsigned)rand() % 1000;
		bool add = rand() % 3 != 0;

		if (a > b) {
			unsigned t = a;

			a = b;
			b = t;
		}
		if (add)
			assert_int_equal(objfs_rangeset_add(&rs, a, b), 0);
		else
			assert_int_equal(objfs_rangeset_remove(&rs, a, b), 0);
		for (i = a; i < b; i++)
			ref[i] = add;
		/* invariants: sorted, disjoint, non-adjacent, non-empty */
		for (i = 0; i < rs.n; i++) {
			assert_true(rs.r[i].start < rs.r[i].end);
			if (i > 0)
				assert_true(rs.r[i - 1].end < rs.r[i].start);
		}
		for (i = 0; i < 1000; i++)
			assert_int_equal(objfs_rangeset_covers(&rs, i, i + 1), ref[i]);
	}
	objfs_rangeset_release(&rs);
}

static void test_spool(void **state)
{
	struct objfs_spool *sp = NULL;
	char buf[64];
	size_t got;
	uint64_t gs, ge;

	(void)state;
	/* a stored object of 100 bytes, nothing local yet */
	assert_int_equal(objfs_spool_create("/tmp", 100, "\"etag\"", &sp), 0);
	assert_true(sp->size == 100);
	assert_true(objfs_spool_missing(sp, 0, 100, &gs, &ge));
	assert_true(gs == 0 && ge == 100);
	/* a local write, then a fill that must not overwrite it */
	assert_int_equal(objfs_spool_write(sp, 10, "LOCAL", 5), 0);
	memset(buf, 'B', sizeof(buf));
	assert_int_equal(objfs_spool_fill(sp, 0, buf, 20), 0);
	assert_int_equal(objfs_spool_read(sp, 0, buf, 20, &got), 0);
	assert_int_equal(got, 20);
	assert_memory_equal(buf, "BBBBBBBBBBLOCALBBBBB", 20);
	assert_true(objfs_spool_missing(sp, 0, 200, &gs, &ge));
	assert_true(gs == 20 && ge == 100);
	/* a write past the end: the hole is zeros and present */
	assert_int_equal(objfs_spool_write(sp, 150, "END", 3), 0);
	assert_true(sp->size == 153);
	assert_true(objfs_spool_missing(sp, 0, 200, &gs, &ge));
	assert_true(gs == 20 && ge == 100);
	assert_false(objfs_spool_missing(sp, 100, 200, &gs, &ge));
	assert_int_equal(objfs_spool_read(sp, 140, buf, 64, &got), 0);
	assert_int_equal(got, 13);
	assert_memory_equal(buf, "\0\0\0\0\0\0\0\0\0\0END", 13);
	/* truncate down below the base, then up: the tail is zeros */
	assert_int_equal(objfs_spool_truncate(sp, 12), 0);
	assert_true(sp->base_size == 12);
	assert_int_equal(objfs_spool_truncate(sp, 30), 0);
	assert_false(objfs_spool_missing(sp, 12, 30, &gs, &ge));
	assert_int_equal(objfs_spool_read(sp, 8, buf, 10, &got), 0);
	assert_memory_equal(buf, "BBLO\0\0\0\0\0\0", 10);
	objfs_spool_destroy(sp);
}

/* Punching frees disk blocks and marks the range missing; the disk count
 * follows the blocks actually written. */
static void test_spool_punch(void **state)
{
	struct objfs_spool *sp = NULL;
	char *blk = malloc(1 << 20);
	uint64_t gs, ge, before;
	size_t got;
	int i;

	(void)state;
	assert_non_null(blk);
	memset(blk, 'x', 1 << 20);
	assert_int_equal(objfs_spool_create("/var/tmp", 0, NULL, &sp), 0);
	assert_true(objfs_spool_disk(sp) == 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(objfs_spool_write(sp, (uint64_t)i << 20, blk,
						   1 << 20), 0);
	before = objfs_spool_disk(sp);
	assert_true(before >= 8ULL << 20);
	/* [0, 5 MiB) goes: 5 MiB fewer blocks, the range is missing */
	assert_int_equal(objfs_spool_punch(sp, 0, 5ULL << 20), 0);
	assert_true(objfs_spool_disk(sp) <= before - (5ULL << 20));
	assert_true(objfs_spool_missing(sp, 0, 8ULL << 20, &gs, &ge));
	assert_true(gs == 0 && ge == 5ULL << 20);
	assert_true(sp->size == 8ULL << 20);
	/* the rest reads back; punching past the end is clipped */
	assert_int_equal(objfs_spool_read(sp, 6ULL << 20, blk, 1 << 20, &got), 0);
	assert_int_equal(got, 1 << 20);
	assert_true(blk[0] == 'x' && blk[(1 << 20) - 1] == 'x');
	assert_int_equal(objfs_spool_punch(sp, 7ULL << 20, 100ULL << 20), 0);
	assert_true(sp->size == 8ULL << 20);
	assert_true(objfs_spool_missing(sp, 5ULL << 20, 8ULL << 20, &gs, &ge));
	assert_true(gs == 7ULL << 20 && ge == 8ULL << 20);
	assert_int_equal(objfs_spool_punch(sp, 9ULL << 20, 10ULL << 20), 0);
	objfs_spool_destroy(sp);
	free(blk);
}

static void read_file(const char *path, char *buf, size_t cap, size_t *got)
{
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	*got = fread(buf, 1, cap, f);
	fclose(f);
}

/* A kept spool gets a name in the directory ("<prefix>.<n>", the first
 * free n), once, and holds the file's bytes (zeros where none are
 * present): by a hard link, or a copy across file systems. */
static void test_spool_keep(void **state)
{
	static const char want[] = "head\0\0\0\0\0\0tail";
	char dir[] = "/var/tmp/objfs-keep-XXXXXX";
	struct objfs_spool *a = NULL, *b = NULL, *c = NULL;
	const char *pa = NULL, *pa2 = NULL, *pb = NULL, *pc = NULL;
	char path[4200], buf[64];
	struct stat st1, st2;
	size_t got;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(objfs_spool_create("/var/tmp", 0, NULL, &a), 0);
	assert_int_equal(objfs_spool_write(a, 0, "head", 4), 0);
	assert_int_equal(objfs_spool_write(a, 10, "tail", 4), 0);
	assert_int_equal(objfs_spool_keep(a, dir, "p", &pa), 0);
	snprintf(path, sizeof(path), "%s/p.0", dir);
	assert_string_equal(pa, path);
	assert_int_equal(objfs_spool_keep(a, dir, "p", &pa2), 0);
	assert_ptr_equal(pa, pa2);
	/* the next one with the same prefix takes the next number */
	assert_int_equal(objfs_spool_create("/var/tmp", 0, NULL, &b), 0);
	assert_int_equal(objfs_spool_write(b, 0, "b", 1), 0);
	assert_int_equal(objfs_spool_keep(b, dir, "p", &pb), 0);
	snprintf(path, sizeof(path), "%s/p.1", dir);
	assert_string_equal(pb, path);
	/* a spool on another file system (tmpfs) is copied */
	assert_int_equal(stat("/dev/shm", &st1), 0);
	assert_int_equal(stat(dir, &st2), 0);
	if (st1.st_dev != st2.st_dev) {
		assert_int_equal(objfs_spool_create("/dev/shm", 0, NULL, &c),
				 0);
		assert_int_equal(objfs_spool_write(c, 0, "head", 4), 0);
		assert_int_equal(objfs_spool_write(c, 10, "tail", 4), 0);
		assert_int_equal(objfs_spool_keep(c, dir, "c", &pc), 0);
		read_file(pc, buf, sizeof(buf), &got);
		assert_int_equal(got, 14);
		assert_memory_equal(buf, want, 14);
		assert_int_equal(unlink(pc), 0);
		objfs_spool_destroy(c);
	}
	/* the names outlive the spools */
	snprintf(path, sizeof(path), "%s/p.0", dir);
	objfs_spool_destroy(a);
	objfs_spool_destroy(b);
	read_file(path, buf, sizeof(buf), &got);
	assert_int_equal(got, 14);
	assert_memory_equal(buf, want, 14);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/p.1", dir);
	read_file(path, buf, sizeof(buf), &got);
	assert_int_equal(got, 1);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* Kept spools have a note beside them and a bounded life: expiry deletes
 * kept files and notes older than the bound, nothing else. */
static void test_spool_expire(void **state)
{
	char dir[] = "/var/tmp/objfs-expire-XXXXXX";
	struct timespec old[2] = { { 0, 0 }, { 0, 0 } };
	struct objfs_spool *a = NULL, *b = NULL;
	const char *pa = NULL, *pb = NULL;
	char path[4200], note[4300], other[4200], buf[256];
	unsigned n = 9;
	size_t got;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(objfs_spool_create("/var/tmp", 0, NULL, &a), 0);
	assert_int_equal(objfs_spool_write(a, 0, "old", 3), 0);
	assert_int_equal(objfs_spool_keep(a, dir, OBJFS_SPOOL_KEPT "1-2", &pa), 0);
	assert_int_equal(objfs_spool_note(pa, "unsaved data of k (3 bytes) kept"), 0);
	snprintf(note, sizeof(note), "%s.txt", pa);
	read_file(note, buf, sizeof(buf), &got);
	assert_int_equal(got, 33);
	assert_memory_equal(buf, "unsaved data of k (3 bytes) kept\n", 33);
	assert_int_equal(objfs_spool_create("/var/tmp", 0, NULL, &b), 0);
	assert_int_equal(objfs_spool_write(b, 0, "new", 3), 0);
	assert_int_equal(objfs_spool_keep(b, dir, OBJFS_SPOOL_KEPT "1-3", &pb), 0);
	snprintf(path, sizeof(path), "%s", pa);
	snprintf(other, sizeof(other), "%s/not-a-kept-file", dir);
	f = fopen(other, "w");
	assert_non_null(f);
	fclose(f);
	/* Fresh: nothing goes. */
	assert_int_equal(objfs_spool_expire(dir, 3600, &n), 0);
	assert_int_equal(n, 0);
	/* The first kept file and its note are 8 days old; the other file
	 * is too, but is not a kept spool. */
	old[0].tv_sec = old[1].tv_sec = time(NULL) - 8 * 86400;
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	assert_int_equal(utimensat(AT_FDCWD, note, old, 0), 0);
	assert_int_equal(utimensat(AT_FDCWD, other, old, 0), 0);
	assert_int_equal(objfs_spool_expire(dir, 7 * 86400, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(note, F_OK), -1);
	assert_int_equal(access(pb, F_OK), 0);
	assert_int_equal(access(other, F_OK), 0);
	assert_int_equal(objfs_spool_expire("/nonexistent-objfs-dir", 1, &n), 0);
	assert_int_equal(unlink(pb), 0);
	assert_int_equal(unlink(other), 0);
	objfs_spool_destroy(a);
	objfs_spool_destroy(b);
	assert_int_equal(rmdir(dir), 0);
}

static void test_budget(void **state)
{
	struct objfs_budget b;

	(void)state;
	objfs_budget_init(&b, 100);
	assert_true(objfs_budget_take(&b, 60));
	assert_false(objfs_budget_take(&b, 41));
	assert_true(objfs_budget_take(&b, 40));
	assert_false(objfs_budget_take(&b, 1));
	assert_true(objfs_budget_used(&b) == 100);
	objfs_budget_give(&b, 60);
	assert_true(objfs_budget_take(&b, 50));
	assert_true(b.peak == 100);
	objfs_budget_give(&b, 1000);            /* never below zero */
	assert_true(objfs_budget_used(&b) == 0);
	objfs_budget_release(&b);
	objfs_budget_init(&b, 0);               /* 0: unlimited */
	assert_true(objfs_budget_take(&b, 1ULL << 40));
	objfs_budget_release(&b);
}

struct counter {
	pthread_mutex_t mu;
	unsigned n;
};

static void bump(void *arg)
{
	struct counter *c = arg;

	usleep(1000);
	pthread_mutex_lock(&c->mu);
	c->n++;
	pthread_mutex_unlock(&c->mu);
}

static void test_pool(void **state)
{
	struct objfs_pool *p = NULL;
	struct objfs_group g;
	struct counter c = { PTHREAD_MUTEX_INITIALIZER, 0 };
	unsigned i;

	(void)state;
	assert_int_equal(objfs_pool_create(4, &p), 0);
	objfs_group_init(&g);
	for (i = 0; i < 100; i++)
		assert_int_equal(objfs_pool_submit(p, &g, bump, &c), 0);
	objfs_group_wait(&g);
	assert_int_equal(c.n, 100);
	/* tasks still queued at destroy run before it returns */
	for (i = 0; i < 20; i++)
		assert_int_equal(objfs_pool_submit(p, NULL, bump, &c), 0);
	objfs_pool_destroy(p);
	assert_int_equal(c.n, 120);
}

static void test_dcache(void **state)
{
	struct objfs_dcache *c = NULL;
	char a[1000], b[1000], out[2000];
	size_t got = 0;

	(void)state;
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	assert_int_equal(objfs_dcache_create("/tmp", 2500, &c), 0);
	assert_false(objfs_dcache_get(c, "k", "\"e1\"", 0, out, sizeof(out), &got));
	objfs_dcache_put(c, "k", "\"e1\"", 0, a, sizeof(a));
	objfs_dcache_put(c, "k", "\"e1\"", 1000, b, sizeof(b));
	assert_true(objfs_dcache_get(c, "k", "\"e1\"", 0, out, sizeof(out), &got));
	assert_int_equal(got, 1000);
	assert_memory_equal(out, a, 1000);
	/* another ETag or offset is another entry */
	assert_false(objfs_dcache_get(c, "k", "\"e2\"", 0, out, sizeof(out), &got));
	assert_false(objfs_dcache_get(c, "k", "\"e1\"", 5, out, sizeof(out), &got));
	assert_false(objfs_dcache_get(c, "k", "", 0, out, sizeof(out), &got));
	/* the bound: the least recently used entry (offset 1000) goes */
	objfs_dcache_put(c, "other", "\"x\"", 0, b, sizeof(b));
	assert_true(objfs_dcache_used(c) <= 2500);
	assert_int_equal(objfs_dcache_count(c), 2);
	assert_true(objfs_dcache_get(c, "k", "\"e1\"", 0, out, sizeof(out), &got));
	assert_false(objfs_dcache_get(c, "k", "\"e1\"", 1000, out, sizeof(out), &got));
	assert_true(objfs_dcache_get(c, "other", "\"x\"", 0, out, sizeof(out), &got));
	/* larger than the whole cache: not cached */
	{
		char *big = calloc(1, 3000);

		assert_non_null(big);
		objfs_dcache_put(c, "big", "\"y\"", 0, big, 3000);
		free(big);
	}
	assert_false(objfs_dcache_get(c, "big", "\"y\"", 0, out, sizeof(out), &got));
	assert_true(objfs_dcache_used(c) <= 2500);
	objfs_dcache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rangeset),
		cmocka_unit_test(test_rangeset_random),
		cmocka_unit_test(test_spool),
		cmocka_unit_test(test_spool_punch),
		cmocka_unit_test(test_spool_keep),
		cmocka_unit_test(test_spool_expire),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_dcache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
