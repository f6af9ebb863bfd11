/*
 * Unit tests of the local store: hostile keys never escape the root, keys
 * that S3 lets coexist coexist, writes are atomic, empty directories are
 * pruned without breaking concurrent puts, tokens and upload ids are
 * checked, and the root carries its marker.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "store_testutil.h"

/* A temp parent directory holding the store root "root" and a sentinel. */
struct fixture {
	char parent[64];
	char root[96];
	struct objfs_store *s;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char sentinel[128];
	FILE *fp;

	if (f == NULL)
		return -1;
	if (tu_tmpdir(f->parent, sizeof(f->parent), "local") != 0)
		goto fail;
	snprintf(f->root, sizeof(f->root), "%s/root", f->parent);
	snprintf(sentinel, sizeof(sentinel), "%s/sentinel", f->parent);
	fp = fopen(sentinel, "w");
	if (fp == NULL)
		goto fail;
	fclose(fp);
	if (objfs_local_store_create(f->root, NULL, &f->s) != 0)
		goto fail;
	*state = f;
	return 0;
fail:
	free(f);
	return -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	objfs_store_destroy(f->s);
	tu_rm_tree(f->parent);
	free(f);
	return 0;
}

/* Names in dir (excluding . and ..), sorted, joined with ','. */
static void dir_names(const char *dir, char *out, size_t cap)
{
	struct dirent **v = NULL;
	int n, i;
	size_t o = 0;

	out[0] = '\0';
	n = scandir(dir, &v, NULL, alphasort);
	assert_true(n >= 0);
	for (i = 0; i < n; i++) {
		if (strcmp(v[i]->d_name, ".") != 0 &&
		    strcmp(v[i]->d_name, "..") != 0)
			o += (size_t)snprintf(out + o, cap - o, "%s%s",
					      o > 0 ? "," : "", v[i]->d_name);
		free(v[i]);
	}
	free(v);
}

static void put_str(struct objfs_store *s, const char *key, const char *val)
{
	tu_put(s, key, val, strlen(val), NULL);
}

static void check_str(struct objfs_store *s, const char *key, const char *val)
{
	tu_check(s, key, val, strlen(val));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_marker(void **state)
{
	struct fixture *f = *state;
	char path[160], names[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/.objfs-store", f->root);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	dir_names(f->root, names, sizeof(names));
	assert_string_equal(names, ".objfs,.objfs-store");
	/* Missing parents are made. */
	{
		struct objfs_store *deep = NULL;

		snprintf(path, sizeof(path), "%s/x/y/z", f->parent);
		assert_int_equal(objfs_local_store_create(path, NULL, &deep), 0);
		objfs_store_destroy(deep);
		snprintf(path, sizeof(path), "%s/x/y/z/.objfs-store", f->parent);
		assert_int_equal(stat(path, &st), 0);
		snprintf(path, sizeof(path), "%s/x", f->parent);
		tu_rm_tree(path);
	}
	/* Opening an existing store again works. */
	{
		struct objfs_store *again = NULL;

		assert_int_equal(objfs_local_store_create(f->root, NULL, &again), 0);
		put_str(again, "k", "v");
		check_str(f->s, "k", "v");
		objfs_store_destroy(again);
	}
}

static void test_hostile_keys(void **state)
{
	struct fixture *f = *state;
	struct objfs_store *s = f->s;
	struct objfs_list_req req = { 0 };
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_get_opts all = OBJFS_GET_ALL;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_sink sink;
	struct objfs_source src;
	char k1024[OBJFS_KEY_MAX + 1], u1024[OBJFS_KEY_MAX + 1];
	char s1024[OBJFS_KEY_MAX + 1], k1025[OBJFS_KEY_MAX + 2];
	char names[512];
	const char *keys[] = {
		"../x", "a/../../etc", "..", ".", "./x", "a//b", "/abs", "a/",
		"%2F", "%2e%2e/x", "\xc3\xbc/\xc3\x9f", "\x01\x7f\xff", "a\\b",
		".objfs-store", ".objfs/tmp/x", "../root/.objfs-store", "a+",
		"a@/b", "a#", "/", "//", "x/./y/../z",
		k1024, u1024, s1024,
	};
	const size_t n = sizeof(keys) / sizeof(keys[0]);
	const char **sorted = calloc(n, sizeof(*sorted));
	size_t i;

	assert_non_null(sorted);
	memset(k1024, 'k', OBJFS_KEY_MAX);
	k1024[OBJFS_KEY_MAX] = '\0';
	for (i = 0; i < OBJFS_KEY_MAX; i += 2)
		memcpy(u1024 + i, "\xc3\xa9", 2);
	u1024[OBJFS_KEY_MAX] = '\0';
	memset(s1024, '/', OBJFS_KEY_MAX);
	s1024[OBJFS_KEY_MAX] = '\0';
	memset(k1025, 'k', OBJFS_KEY_MAX + 1);
	k1025[OBJFS_KEY_MAX + 1] = '\0';

	for (i = 0; i < n; i++)
		put_str(s, keys[i], keys[i]);
	for (i = 0; i < n; i++)
		check_str(s, keys[i], keys[i]);

	/* Invalid keys. */
	objfs_source_mem(&src, "x", 1);
	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(objfs_store_put(s, k1025, &src, NULL, NULL), EINVAL);
	assert_int_equal(objfs_store_put(s, "", &src, NULL, NULL), EINVAL);
	assert_int_equal(objfs_store_get(s, k1025, &all, &sink, NULL), EINVAL);
	assert_int_equal(objfs_store_del(s, ""), EINVAL);

	/* The listing holds exactly these keys, in byte order. */
	memcpy(sorted, keys, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_str);
	req.max_keys = 1000;
	assert_int_equal(objfs_store_list(s, &req, &page), 0);
	assert_int_equal(page.n_entries, n);
	for (i = 0; i < n; i++)
		assert_string_equal(page.entries[i].key, sorted[i]);
	objfs_list_page_release(&page);

	/* Nothing was written outside the root, and the hidden area holds no
	 * object. */
	dir_names(f->parent, names, sizeof(names));
	assert_string_equal(names, "root,sentinel");
	{
		char tmp[160];

		snprintf(tmp, sizeof(tmp), "%s/.objfs/tmp", f->root);
		dir_names(tmp, names, sizeof(names));
		assert_string_equal(names, "");
		snprintf(tmp, sizeof(tmp), "%s/.objfs", f->root);
		dir_names(tmp, names, sizeof(names));
		assert_string_equal(names, "mpu,tmp");
	}

	/* Deleting everything prunes every directory. */
	for (i = 0; i < n; i++)
		assert_int_equal(objfs_store_del(s, keys[i]), 0);
	dir_names(f->root, names, sizeof(names));
	assert_string_equal(names, ".objfs,.objfs-store");
	dir_names(f->parent, names, sizeof(names));
	assert_string_equal(names, "root,sentinel");
	free(sorted);
}

static void test_coexist(void **state)
{
	struct fixture *f = *state;
	struct objfs_store *s = f->s;

	put_str(s, "a", "file a");
	put_str(s, "a/b", "file a/b");
	put_str(s, "a/", "marker a/");
	put_str(s, "a/b/", "marker a/b/");
	check_str(s, "a", "file a");
	check_str(s, "a/b", "file a/b");
	check_str(s, "a/", "marker a/");
	check_str(s, "a/b/", "marker a/b/");
	assert_int_equal(objfs_store_del(s, "a/b"), 0);
	check_str(s, "a/b/", "marker a/b/");
	check_str(s, "a", "file a");
}

/* Writers replace one key with whole objects of one repeated byte while
 * readers check they only ever see a whole object. */
#define ATOM_SIZE (256 * 1024)
#define ATOM_ROUNDS 60

struct atom {
	struct objfs_store *s;
	int err;
	pthread_mutex_t mu;
};

static void atom_fail(struct atom *a, int err)
{
	pthread_mutex_lock(&a->mu);
	if (a->err == 0)
		a->err = err;
	pthread_mutex_unlock(&a->mu);
}

static void *atom_writer(void *arg)
{
	struct atom *a = arg;
	char *buf = malloc(ATOM_SIZE);
	struct objfs_source src;
	int i, err;

	if (buf == NULL) {
		atom_fail(a, ENOMEM);
		return NULL;
	}
	for (i = 0; i < ATOM_ROUNDS; i++) {
		memset(buf, 'A' + i % 26, ATOM_SIZE);
		objfs_source_mem(&src, buf, ATOM_SIZE);
		err = objfs_store_put(a->s, "hot/key", &src, NULL, NULL);
		if (err != 0)
			atom_fail(a, err);
	}
	free(buf);
	return NULL;
}

static void *atom_reader(void *arg)
{
	struct atom *a = arg;
	struct objfs_get_opts all = OBJFS_GET_ALL;
	struct objfs_list_req req = { "hot/", NULL, NULL, NULL, 0 };
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_sink sink;
	size_t j;
	int i, err;

	objfs_sink_membuf(&sink, &mb);
	for (i = 0; i < ATOM_ROUNDS; i++) {
		mb.len = 0;
		err = objfs_store_get(a->s, "hot/key", &all, &sink, NULL);
		if (err == 0) {
			if (mb.len != ATOM_SIZE)
				atom_fail(a, EIO);
			for (j = 1; j < mb.len; j++) {
				if (mb.data[j] != mb.data[0]) {
					atom_fail(a, EIO);
					break;
				}
			}
		} else if (err != ENOENT) {
			atom_fail(a, err);
		}
		err = objfs_store_list(a->s, &req, &page);
		if (err != 0)
			atom_fail(a, err);
		else if (page.n_entries > 1 ||
			 (page.n_entries == 1 &&
			  strcmp(page.entries[0].key, "hot/key") != 0))
			atom_fail(a, EEXIST);
		objfs_list_page_release(&page);
	}
	objfs_membuf_release(&mb);
	return NULL;
}

static void test_atomic(void **state)
{
	struct fixture *f = *state;
	struct atom a = { f->s, 0, PTHREAD_MUTEX_INITIALIZER };
	pthread_t t[4];
	char tmp[160], names[64];
	int i;

	assert_int_equal(pthread_create(&t[0], NULL, atom_writer, &a), 0);
	assert_int_equal(pthread_create(&t[1], NULL, atom_writer, &a), 0);
	assert_int_equal(pthread_create(&t[2], NULL, atom_reader, &a), 0);
	assert_int_equal(pthread_create(&t[3], NULL, atom_reader, &a), 0);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(a.err, 0);
	snprintf(tmp, sizeof(tmp), "%s/.objfs/tmp", f->root);
	dir_names(tmp, names, sizeof(names));
	assert_string_equal(names, "");
}

/* One thread deletes the only key of a deep directory (pruning it) while
 * another keeps putting a sibling: no put may fail. */
#define PRUNE_ROUNDS 300

static void *pruner(void *arg)
{
	struct atom *a = arg;
	struct objfs_source src;
	int i, err;

	objfs_source_mem(&src, "p", 1);
	for (i = 0; i < PRUNE_ROUNDS; i++) {
		err = objfs_store_put(a->s, "p/q/r/mine", &src, NULL, NULL);
		if (err == 0)
			err = objfs_store_del(a->s, "p/q/r/mine");
		if (err != 0)
			atom_fail(a, err);
	}
	return NULL;
}

static void *sibling(void *arg)
{
	struct atom *a = arg;
	struct objfs_source src;
	int i, err;

	objfs_source_mem(&src, "s", 1);
	for (i = 0; i < PRUNE_ROUNDS; i++) {
		err = objfs_store_put(a->s, "p/q/r/other", &src, NULL, NULL);
		if (err == 0)
			err = objfs_store_del(a->s, "p/q/r/other");
		if (err != 0)
			atom_fail(a, err);
	}
	return NULL;
}

static void test_prune_race(void **state)
{
	struct fixture *f = *state;
	struct atom a = { f->s, 0, PTHREAD_MUTEX_INITIALIZER };
	pthread_t t[2];
	char names[128];

	assert_int_equal(pthread_create(&t[0], NULL, pruner, &a), 0);
	assert_int_equal(pthread_create(&t[1], NULL, sibling, &a), 0);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	assert_int_equal(a.err, 0);
	dir_names(f->root, names, sizeof(names));
	assert_string_equal(names, ".objfs,.objfs-store");
}

static void test_tokens_and_ids(void **state)
{
	struct fixture *f = *state;
	struct objfs_store *other = NULL;
	struct objfs_list_req req = { "", NULL, NULL, NULL, 1 };
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_source src;
	struct objfs_part part;
	char *tok;
	size_t n;

	put_str(f->s, "t1", "1");
	put_str(f->s, "t2", "2");
	assert_int_equal(objfs_store_list(f->s, &req, &page), 0);
	assert_non_null(page.next);
	tok = strdup(page.next);
	assert_non_null(tok);
	objfs_list_page_release(&page);

	req.continuation = tok;
	assert_int_equal(objfs_store_list(f->s, &req, &page), 0);
	assert_int_equal(page.n_entries, 1);
	assert_string_equal(page.entries[0].key, "t2");
	objfs_list_page_release(&page);

	/* Another instance did not issue it. */
	assert_int_equal(objfs_local_store_create(f->root, NULL, &other), 0);
	assert_int_equal(objfs_store_list(other, &req, &page), EINVAL);
	objfs_store_destroy(other);

	/* Tampered: a different position with the old MAC. */
	n = strlen(tok);
	tok[4] = tok[4] == '0' ? '1' : '0';
	assert_int_equal(objfs_store_list(f->s, &req, &page), EINVAL);
	tok[n - 1] = '\0';
	assert_int_equal(objfs_store_list(f->s, &req, &page), EINVAL);
	free(tok);

	/* Upload ids are never paths. */
	objfs_source_mem(&src, "x", 1);
	assert_int_equal(objfs_store_mpu_part(f->s, "k", "../../../tmp", 1,
					      &src, &part), ENOENT);
	assert_int_equal(objfs_store_mpu_part(f->s, "k",
					      "0123456789abcdef0123456789abcdef",
					      1, &src, &part), ENOENT);
	assert_int_equal(objfs_store_mpu_abort(f->s, "k", "../x"), 0);
}

static void test_if_none_match_and_sweep(void **state)
{
	struct fixture *f = *state;
	struct objfs_put_opts once = { NULL, NULL, true };
	struct objfs_store *again = NULL;
	struct objfs_source src;
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	char path[192], names[128];
	FILE *fp;

	objfs_source_mem(&src, "first", 5);
	assert_int_equal(objfs_store_put(f->s, "once", &src, &once, NULL), 0);
	objfs_source_mem(&src, "second", 6);
	assert_int_equal(objfs_store_put(f->s, "once", &src, &once, NULL), EEXIST);
	check_str(f->s, "once", "first");

	/* Temp files of crashed writers: old ones are swept at open. */
	snprintf(path, sizeof(path), "%s/.objfs/tmp/stale", f->root);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	snprintf(path, sizeof(path), "%s/.objfs/tmp/mpu-stale", f->root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.objfs/tmp/mpu-stale/upload", f->root);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/.objfs/tmp/mpu-stale", f->root);
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	snprintf(path, sizeof(path), "%s/.objfs/tmp/fresh", f->root);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(objfs_local_store_create(f->root, NULL, &again), 0);
	objfs_store_destroy(again);
	snprintf(path, sizeof(path), "%s/.objfs/tmp", f->root);
	dir_names(path, names, sizeof(names));
	assert_string_equal(names, "fresh");
	check_str(f->s, "once", "first");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_marker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_coexist, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prune_race, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tokens_and_ids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_if_none_match_and_sweep, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
