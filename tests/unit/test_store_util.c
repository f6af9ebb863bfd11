/*
 * Unit tests of store.c: metadata lists, sinks and sources, key checks,
 * objfs_store_upload (splitting, parallel parts, abort on failure), the
 * prefix layer (prefix trees: test_tree.c) and a layer's unset slots
 * forwarded to the store below.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/fault.h"
#include "backend/tree.h"
#include "store_testutil.h"

/* ---- fixture: fault -> local -------------------------------------------- */

struct fixture {
	char dir[64];
	struct objfs_store *s;
	struct objfs_fault *fault;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct objfs_store *local = NULL;

	if (f == NULL)
		return -1;
	if (tu_tmpdir(f->dir, sizeof(f->dir), "util") != 0 ||
	    objfs_local_store_create(f->dir, NULL, &local) != 0 ||
	    objfs_fault_store_create(local, &f->s, &f->fault) != 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	objfs_store_destroy(f->s);
	tu_rm_tree(f->dir);
	free(f);
	return 0;
}

/* Entries in the local store's multipart area. */
static int uploads_left(struct fixture *f)
{
	char path[128];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/.objfs/mpu", f->dir);
	d = opendir(path);
	assert_non_null(d);
	for (;;) {
		de = readdir(d);
		if (de == NULL)
			break;
		if (de->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return n;
}

/* ---- metadata -------------------------------------------------------------- */

static void test_meta(void **state)
{
	struct objfs_meta m = OBJFS_META_INIT, c = OBJFS_META_INIT;

	(void)state;
	assert_null(objfs_meta_get(&m, "x"));
	assert_int_equal(objfs_meta_set(&m, "Mode", "0644"), 0);
	assert_int_equal(objfs_meta_set(&m, "uid", "1000"), 0);
	assert_int_equal(m.n, 2);
	assert_string_equal(m.items[0].name, "mode");
	assert_string_equal(objfs_meta_get(&m, "MODE"), "0644");
	/* Replacing keeps one item. */
	assert_int_equal(objfs_meta_set(&m, "MODE", "0600"), 0);
	assert_int_equal(m.n, 2);
	assert_string_equal(objfs_meta_get(&m, "mode"), "0600");
	assert_int_equal(objfs_meta_set(&m, "", "v"), EINVAL);
	assert_int_equal(objfs_meta_set(&m, NULL, "v"), EINVAL);
	assert_int_equal(objfs_meta_set(&m, "k", NULL), EINVAL);

	/* A deep copy. */
	assert_int_equal(objfs_meta_copy(&c, &m), 0);
	assert_int_equal(objfs_meta_set(&m, "uid", "0"), 0);
	assert_string_equal(objfs_meta_get(&c, "uid"), "1000");
	assert_true(c.items[0].name != m.items[0].name);
	objfs_meta_release(&m);
	assert_int_equal(m.n, 0);
	assert_null(m.items);
	assert_string_equal(objfs_meta_get(&c, "mode"), "0600");
	objfs_meta_release(&c);
	/* Released lists are reusable. */
	assert_int_equal(objfs_meta_set(&c, "a", "b"), 0);
	objfs_meta_release(&c);
}

/* ---- sinks and sources ----------------------------------------------------- */

static void test_sinks(void **state)
{
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(10);
	struct objfs_fixedbuf fb;
	struct objfs_sink sink;
	char fixed[8];

	(void)state;
	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(sink.write_at(sink.arg, 0, "hello", 5), 0);
	assert_int_equal(mb.len, 5);
	/* A rewrite of the same offsets (a retried get). */
	assert_int_equal(sink.write_at(sink.arg, 0, "HE", 2), 0);
	assert_int_equal(mb.len, 5);
	assert_memory_equal(mb.data, "HEllo", 5);
	/* A gap reads as zeros. */
	assert_int_equal(sink.write_at(sink.arg, 7, "x", 1), 0);
	assert_int_equal(mb.len, 8);
	assert_memory_equal(mb.data + 5, "\0\0x", 3);
	/* The limit. */
	assert_int_equal(sink.write_at(sink.arg, 8, "abc", 3), EFBIG);
	assert_int_equal(sink.write_at(sink.arg, 8, "ab", 2), 0);
	assert_int_equal(mb.len, 10);
	objfs_membuf_release(&mb);
	assert_null(mb.data);
	assert_int_equal(mb.len, 0);

	fb.data = fixed;
	fb.cap = sizeof(fixed);
	fb.got = 0;
	objfs_sink_fixed(&sink, &fb);
	assert_int_equal(sink.write_at(sink.arg, 0, "1234", 4), 0);
	assert_int_equal(sink.write_at(sink.arg, 4, "5678", 4), 0);
	assert_int_equal(fb.got, 8);
	assert_memory_equal(fixed, "12345678", 8);
	assert_int_equal(sink.write_at(sink.arg, 6, "xyz", 3), EFBIG);
}

static void test_sources(void **state)
{
	struct objfs_source mem, fd, slice, slice2;
	struct objfs_fd_source fctx;
	struct objfs_slice_source sctx, sctx2;
	char tmpl[] = "/tmp/objfs-src-XXXXXX";
	char buf[16];
	int tfd;

	(void)state;
	objfs_source_mem(&mem, "0123456789", 10);
	assert_int_equal(mem.size, 10);
	assert_int_equal(mem.read_at(mem.arg, 3, buf, 4), 0);
	assert_memory_equal(buf, "3456", 4);

	objfs_source_slice(&slice, &sctx, &mem, 2, 6);
	assert_int_equal(slice.size, 6);
	assert_int_equal(slice.read_at(slice.arg, 1, buf, 3), 0);
	assert_memory_equal(buf, "345", 3);
	objfs_source_slice(&slice2, &sctx2, &slice, 2, 3);
	assert_int_equal(slice2.read_at(slice2.arg, 0, buf, 3), 0);
	assert_memory_equal(buf, "456", 3);

	tfd = mkstemp(tmpl);
	assert_true(tfd >= 0);
	unlink(tmpl);
	assert_int_equal(write(tfd, "abcdefghij", 10), 10);
	objfs_source_fd(&fd, &fctx, tfd, 4, 5);
	assert_int_equal(fd.size, 5);
	assert_int_equal(fd.read_at(fd.arg, 1, buf, 4), 0);
	assert_memory_equal(buf, "fghi", 4);
	/* Past the end of the file: a short source. */
	assert_int_equal(fd.read_at(fd.arg, 4, buf, 4), EIO);
	close(tfd);
}

static void test_key_valid(void **state)
{
	char k[OBJFS_KEY_MAX + 2];

	(void)state;
	assert_int_equal(objfs_key_valid(NULL), EINVAL);
	assert_int_equal(objfs_key_valid(""), EINVAL);
	assert_int_equal(objfs_key_valid("a"), 0);
	assert_int_equal(objfs_key_valid("../../etc/passwd"), 0);
	memset(k, 'x', sizeof(k) - 1);
	k[OBJFS_KEY_MAX] = '\0';
	assert_int_equal(objfs_key_valid(k), 0);
	k[OBJFS_KEY_MAX] = 'x';
	k[OBJFS_KEY_MAX + 1] = '\0';
	assert_int_equal(objfs_key_valid(k), EINVAL);
}

/* ---- upload ------------------------------------------------------------ */

static char *pattern(size_t n)
{
	char *p = malloc(n);
	size_t i;

	assert_non_null(p);
	for (i = 0; i < n; i++)
		p[i] = (char)((i * 2654435761u) >> 13);
	return p;
}

static void test_upload_single(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_source src;
	char *data = pattern(1 << 20);

	objfs_source_mem(&src, data, 1 << 20);
	/* part_size 0 is raised to the 5 MiB minimum: one put. */
	assert_int_equal(objfs_store_upload(f->s, "one", &src, NULL, 0, 4,
					    &info), 0);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_PUT), 1);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_CREATE), 0);
	assert_null(strchr(info.etag, '-'));
	objfs_obj_info_release(&info);
	tu_check(f->s, "one", data, 1 << 20);
	free(data);
}

static void test_upload_multipart(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_source src;
	const size_t size = (17u << 20) + 5;  /* 5+5+5+2 MiB and 5 bytes */
	char *data = pattern(size);

	objfs_source_mem(&src, data, size);
	assert_int_equal(objfs_store_upload(f->s, "multi", &src, NULL,
					    5u << 20, 3, &info), 0);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_PUT), 0);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_CREATE), 1);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_PART), 4);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_COMPLETE), 1);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_ABORT), 0);
	assert_non_null(strstr(info.etag, "-4\""));
	objfs_obj_info_release(&info);
	tu_check(f->s, "multi", data, size);
	assert_int_equal(uploads_left(f), 0);
	free(data);
}

static void test_upload_failure_aborts(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_source src;
	const size_t size = 16u << 20;
	char *data = pattern(size);

	objfs_source_mem(&src, data, size);
	/* A part fails: the upload is aborted, nothing appears. */
	objfs_fault_fail_next(f->fault, OBJFS_FOP_MPU_PART, 1, EIO);
	assert_int_equal(objfs_store_upload(f->s, "fail", &src, NULL,
					    5u << 20, 2, NULL), EIO);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_ABORT), 1);
	assert_int_equal(objfs_store_head(f->s, "fail", &info), ENOENT);
	assert_int_equal(uploads_left(f), 0);

	/* The completion fails: aborted too. */
	objfs_fault_reset(f->fault);
	objfs_fault_fail_next(f->fault, OBJFS_FOP_MPU_COMPLETE, 1, EACCES);
	assert_int_equal(objfs_store_upload(f->s, "fail", &src, NULL,
					    5u << 20, 4, NULL), EACCES);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_PART), 4);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_ABORT), 1);
	assert_int_equal(objfs_store_head(f->s, "fail", &info), ENOENT);
	assert_int_equal(uploads_left(f), 0);

	/* The create fails: nothing to abort. */
	objfs_fault_reset(f->fault);
	objfs_fault_fail_next(f->fault, OBJFS_FOP_MPU_CREATE, 1, ECONNREFUSED);
	assert_int_equal(objfs_store_upload(f->s, "fail", &src, NULL,
					    5u << 20, 4, NULL), ECONNREFUSED);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_PART), 0);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_ABORT), 0);

	/* Every part fails (many threads): still one abort, no upload left. */
	objfs_fault_reset(f->fault);
	objfs_fault_fail_next(f->fault, OBJFS_FOP_MPU_PART, 100, EIO);
	assert_int_equal(objfs_store_upload(f->s, "fail", &src, NULL,
					    5u << 20, 4, NULL), EIO);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_ABORT), 1);
	assert_int_equal(uploads_left(f), 0);
	free(data);
}

/* ---- counting keys ------------------------------------------------------ */

static size_t count_keys(struct objfs_store *s, const char *prefix)
{
	struct objfs_list_req req = { prefix, NULL, NULL, NULL, 0 };
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	char *tok = NULL;
	size_t n = 0;

	do {
		req.continuation = tok;
		assert_int_equal(objfs_store_list(s, &req, &page), 0);
		n += page.n_entries;
		free(tok);
		tok = page.next != NULL ? strdup(page.next) : NULL;
		objfs_list_page_release(&page);
	} while (tok != NULL);
	return n;
}

/* ---- the prefix layer ---------------------------------------------------- */

static void test_prefix_layer(void **state)
{
	struct fixture *f = *state;
	struct objfs_store *vol = NULL;
	struct objfs_list_req req = { NULL, "/", NULL, NULL, 0 };
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };
	char *id = NULL;
	const char *dels[2] = { "d/two", "one" };
	char k1024[OBJFS_KEY_MAX + 1];
	size_t failed;

	/* vol has its own store stack over a second local store instance
	 * rooted at the same directory (the prefix layer owns its inner). */
	{
		struct objfs_store *local = NULL;

		assert_int_equal(objfs_local_store_create(f->dir, NULL, &local), 0);
		assert_int_equal(objfs_prefix_store_create(local, "vols/v1", &vol), 0);
	}
	tu_put(f->s, "outside", "o", 1, NULL);
	tu_put(f->s, "vols/v10/near", "n", 1, NULL);
	tu_put(vol, "one", "1", 1, NULL);
	tu_put(vol, "d/two", "2", 1, NULL);
	tu_check(f->s, "vols/v1/one", "1", 1);
	tu_check(f->s, "vols/v1/d/two", "2", 1);
	tu_check(vol, "d/two", "2", 1);

	/* Relative listings: nothing from outside, not even vols/v10/. */
	assert_int_equal(objfs_store_list(vol, &req, &page), 0);
	assert_int_equal(page.n_entries, 1);
	assert_string_equal(page.entries[0].key, "one");
	assert_int_equal(page.n_prefixes, 1);
	assert_string_equal(page.prefixes[0], "d/");
	objfs_list_page_release(&page);
	req.prefix = "d/";
	req.start_after = "d/a";
	assert_int_equal(objfs_store_list(vol, &req, &page), 0);
	assert_int_equal(page.n_entries, 1);
	assert_string_equal(page.entries[0].key, "d/two");
	objfs_list_page_release(&page);

	/* Pagination: tokens pass through. */
	req.prefix = NULL;
	req.delimiter = NULL;
	req.start_after = NULL;
	req.max_keys = 1;
	assert_int_equal(objfs_store_list(vol, &req, &page), 0);
	assert_string_equal(page.entries[0].key, "d/two");
	assert_non_null(page.next);
	req.continuation = page.next;
	{
		struct objfs_list_page p2 = OBJFS_LIST_PAGE_INIT;

		assert_int_equal(objfs_store_list(vol, &req, &p2), 0);
		assert_int_equal(p2.n_entries, 1);
		assert_string_equal(p2.entries[0].key, "one");
		assert_null(p2.next);
		objfs_list_page_release(&p2);
	}
	objfs_list_page_release(&page);

	/* Invalid relative keys, and keys too long once prefixed. */
	memset(k1024, 'k', OBJFS_KEY_MAX);
	k1024[OBJFS_KEY_MAX] = '\0';
	assert_int_equal(objfs_store_head(vol, "", &info), EINVAL);
	assert_int_equal(objfs_store_head(vol, k1024, &info), ENAMETOOLONG);
	/* the room a key has under "vols/v1/" */
	assert_int_equal(objfs_store_key_room(vol), OBJFS_KEY_MAX - 8);
	k1024[OBJFS_KEY_MAX - 8] = '\0';
	assert_int_equal(objfs_store_head(vol, k1024, &info), ENOENT);
	k1024[OBJFS_KEY_MAX - 8] = 'k';
	assert_int_equal(objfs_store_del(vol, ""), EINVAL);
	/* "../outside" is just a key under the prefix. */
	assert_int_equal(objfs_store_head(vol, "../outside", &info), ENOENT);

	/* copy, multipart and del_many stay inside. */
	assert_int_equal(objfs_store_copy(vol, "one", "copy", &co, NULL), 0);
	tu_check(f->s, "vols/v1/copy", "1", 1);
	assert_int_equal(objfs_store_mpu_create(vol, "mp", NULL, &id), 0);
	assert_int_equal(objfs_store_mpu_abort(vol, "mp", id), 0);
	free(id);
	assert_int_equal(objfs_store_del_many(vol, dels, 2, &failed), 0);
	assert_int_equal(failed, 0);
	assert_int_equal(objfs_store_head(f->s, "vols/v1/one", &info), ENOENT);
	assert_int_equal(objfs_store_head(f->s, "outside", &info), 0);
	objfs_obj_info_release(&info);
	assert_int_equal(objfs_tree_delete(vol, "", NULL, NULL), 0);
	assert_int_equal(count_keys(f->s, ""), 2);
	objfs_store_destroy(vol);
}

/* ---- the fault layer ----------------------------------------------------- */

/* Which of 64 heads fail, as bits. */
static uint64_t fail_pattern(struct objfs_store *s)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	uint64_t bits = 0;
	unsigned i;
	int err;

	for (i = 0; i < 64; i++) {
		err = objfs_store_head(s, "k", &info);
		objfs_obj_info_release(&info);
		if (err == EAGAIN)
			bits |= 1ULL << i;
		else
			assert_int_equal(err, 0);
	}
	return bits;
}

static void test_fault_layer(void **state)
{
	struct fixture *f = *state;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_get_opts all = OBJFS_GET_ALL;
	struct objfs_sink sink;
	uint64_t a, b, c;
	int n;

	tu_put(f->s, "k", "0123456789", 10, NULL);

	/* fail_next, per op and for all ops */
	objfs_fault_fail_next(f->fault, OBJFS_FOP_HEAD, 2, EACCES);
	assert_int_equal(objfs_store_head(f->s, "k", &info), EACCES);
	assert_int_equal(objfs_store_head(f->s, "k", &info), EACCES);
	assert_int_equal(objfs_store_head(f->s, "k", &info), 0);
	objfs_obj_info_release(&info);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_HEAD), 3);
	objfs_fault_fail_next(f->fault, OBJFS_FOP_ALL, 1, EIO);
	assert_int_equal(objfs_store_del(f->s, "x"), EIO);
	assert_int_equal(objfs_store_head(f->s, "k", &info), EIO);
	assert_int_equal(objfs_store_del(f->s, "x"), 0);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_ALL), 7);

	/* Probability: the same seed gives the same failures. */
	objfs_fault_reset(f->fault);
	objfs_fault_fail_prob(f->fault, OBJFS_FOP_HEAD, 0.5, EAGAIN, 1234);
	a = fail_pattern(f->s);
	objfs_fault_fail_prob(f->fault, OBJFS_FOP_HEAD, 0.5, EAGAIN, 1234);
	b = fail_pattern(f->s);
	objfs_fault_fail_prob(f->fault, OBJFS_FOP_HEAD, 0.5, EAGAIN, 99);
	c = fail_pattern(f->s);
	assert_true(a == b);
	assert_true(a != c);
	n = __builtin_popcountll(a);
	assert_true(n > 16 && n < 48);
	objfs_fault_fail_prob(f->fault, OBJFS_FOP_HEAD, 0, 0, 0);
	assert_true(fail_pattern(f->s) == 0);

	/* Short reads: the first K bytes arrive, then EIO. */
	objfs_fault_short_read(f->fault, 4, 1);
	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(objfs_store_get(f->s, "k", &all, &sink, NULL), EIO);
	assert_int_equal(mb.len, 4);
	assert_memory_equal(mb.data, "0123", 4);
	mb.len = 0;
	assert_int_equal(objfs_store_get(f->s, "k", &all, &sink, NULL), 0);
	assert_int_equal(mb.len, 10);
	objfs_fault_short_read(f->fault, 20, 0);
	assert_int_equal(objfs_store_get(f->s, "k", &all, &sink, NULL), 0);
	objfs_fault_short_read(f->fault, 9, 0);
	assert_int_equal(objfs_store_get(f->s, "k", &all, &sink, NULL), EIO);
	assert_int_equal(objfs_store_get(f->s, "k", &all, &sink, NULL), EIO);
	objfs_fault_short_read(f->fault, UINT64_MAX, 0);
	assert_int_equal(objfs_store_get(f->s, "k", &all, &sink, NULL), 0);
	objfs_membuf_release(&mb);

	/* A delayed call still goes through. */
	objfs_fault_delay(f->fault, OBJFS_FOP_HEAD, 5);
	assert_int_equal(objfs_store_head(f->s, "k", &info), 0);
	objfs_obj_info_release(&info);
}

/* ---- unset slots forward ---------------------------------------------- */

/* A layer that sets nothing but its name and destroy. */
static void bare_destroy(struct objfs_store *s)
{
	objfs_store_destroy(s->inner);
	free(s);
}

static const struct objfs_store_ops bare_ops = {
	.name = "bare",
	.destroy = bare_destroy,
};

/* Every op on a layer that left its slot unset reaches the store below
 * (here the fault layer, which counts it). */
static void test_unset_slots_forward(void **state)
{
	struct fixture *f = *state;
	struct objfs_store *bare = calloc(1, sizeof(*bare));
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_list_req req = { NULL, NULL, NULL, NULL, 0 };
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };
	struct objfs_part_copy pc = { "k", 0, 10, NULL };
	struct objfs_source src;
	struct objfs_part part;
	const char *dels[1] = { "k2" };
	char *id = NULL;
	size_t failed = 0;

	assert_non_null(bare);
	bare->ops = &bare_ops;
	bare->inner = f->s;
	tu_put(bare, "k", "0123456789", 10, NULL);
	tu_check(bare, "k", "0123456789", 10);
	assert_int_equal(objfs_store_head(bare, "k", &info), 0);
	assert_int_equal(info.size, 10);
	objfs_obj_info_release(&info);
	assert_int_equal(objfs_store_list(bare, &req, &page), 0);
	assert_int_equal(page.n_entries, 1);
	objfs_list_page_release(&page);
	assert_int_equal(objfs_store_copy(bare, "k", "k2", &co, NULL), 0);
	assert_int_equal(objfs_store_del_many(bare, dels, 1, &failed), 0);
	assert_int_equal(objfs_store_mpu_create(bare, "m", NULL, &id), 0);
	objfs_source_mem(&src, "abc", 3);
	assert_int_equal(objfs_store_mpu_part_copy(bare, "m", id, 1, &pc,
						   &part), 0);
	assert_int_equal(objfs_store_mpu_complete(bare, "m", id, &part, 1,
						  NULL), 0);
	tu_check(bare, "m", "0123456789", 10);
	free(id);
	id = NULL;
	assert_int_equal(objfs_store_mpu_create(bare, "n", NULL, &id), 0);
	assert_int_equal(objfs_store_mpu_part(bare, "n", id, 1, &src, &part),
			 0);
	assert_int_equal(objfs_store_mpu_abort(bare, "n", id), 0);
	free(id);
	assert_int_equal(objfs_store_del(bare, "m"), 0);
	/* not forwarded: a deferred delete is this store's own del */
	assert_int_equal(objfs_store_del_deferred(bare, "k"), 0);
	assert_int_equal(objfs_store_del_barrier(bare), 0);
	assert_int_equal(objfs_store_head(bare, "k", &info), ENOENT);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_PUT), 1);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_COPY), 1);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_DEL_MANY), 1);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_CREATE), 2);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_PART), 1);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_PART_COPY),
			 1);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_COMPLETE),
			 1);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_MPU_ABORT), 1);
	assert_int_equal(objfs_fault_calls(f->fault, OBJFS_FOP_DEL), 2);
	/* bare's destroy frees the fault layer too */
	objfs_store_destroy(bare);
	f->s = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meta),
		cmocka_unit_test(test_sinks),
		cmocka_unit_test(test_sources),
		cmocka_unit_test(test_key_valid),
		cmocka_unit_test_setup_teardown(test_upload_single, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upload_multipart, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_upload_failure_aborts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_prefix_layer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fault_layer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unset_slots_forward, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
