/*
 * Unit tests of write-back (src/fs/writeback.c) without FUSE, over the
 * fault layer and a local store: writes wait in the spool until
 * inode_sync() puts the object; a failed upload returns the store's errno
 * and keeps the data dirty for a retry; a large sequential write streams
 * its parts while it is written and completes one multipart upload, and
 * falls back to a whole upload when a part fails; past spool_limit other
 * files' spools are uploaded and freed, and last the written file itself;
 * a stored file changed in place or appended to is stored again by part
 * copies of its unchanged parts and the changed bytes (objfs_fault_sent()
 * counts what was sent), whole where the store refuses part copies or
 * another writer replaced the object.
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

#include "fs_testutil.h"
#include "store_testutil.h"

#define MIB (1024 * 1024)

static int setup(void **state)
{
	return fe_setup_state(state, NULL);
}

static void tune_stream(struct objfs_fs_opts *o)
{
	o->part_size = OBJFS_MPU_MIN_PART;      /* 5 MiB: the smallest */
	o->upload_parallel = 2;
}

static int setup_stream(void **state)
{
	return fe_setup_state(state, tune_stream);
}

static void tune_small_spool(struct objfs_fs_opts *o)
{
	o->spool_limit = MIB;
}

static int setup_small_spool(void **state)
{
	return fe_setup_state(state, tune_small_spool);
}

/* n bytes of a pattern that differs per offset. */
static char *pattern(size_t n)
{
	char *p = malloc(n);
	size_t i;

	assert_non_null(p);
	for (i = 0; i < n; i++)
		p[i] = (char)(i * 7 + i / 4096);
	return p;
}

/* Writes data sequentially in pieces of step bytes. */
static void write_all(struct fs_env *e, struct inode *in, const char *data,
		      size_t n, size_t step)
{
	size_t off;

	for (off = 0; off < n; off += step) {
		size_t len = n - off < step ? n - off : step;

		assert_int_equal(inode_write(e->fs, in, data + off, len, off), 0);
	}
}

/* Uploads in and checks that key holds the n bytes of data. */
static void sync_check(struct fs_env *e, struct inode *in, const char *key,
		       const char *data, size_t n)
{
	assert_int_equal(inode_sync_locked_ns(e->fs, in), 0);
	assert_false(in->dirty);
	assert_null(in->stream);
	tu_check(e->store, key, data, n);
}

static bool in_store(struct fs_env *e, const char *key)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	int err = objfs_store_head(e->store, key, &info);

	objfs_obj_info_release(&info);
	assert_true(err == 0 || err == ENOENT);
	return err == 0;
}

static void test_write_sync(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = fe_new_file(e, fs->root, "f");
	uint64_t puts;

	assert_int_equal(inode_write(fs, in, "hello ", 6, 0), 0);
	assert_int_equal(inode_write(fs, in, "world", 5, 6), 0);
	assert_true(in->dirty);
	assert_non_null(in->spool);
	assert_true(in->size == 11);
	assert_false(in_store(e, "f"));         /* nothing sent yet */
	assert_int_equal(inode_sync_locked_ns(fs, in), 0);
	tu_check(e->store, "f", "hello world", 11);
	assert_false(in->dirty);
	assert_true(in->in_store);
	assert_true(in->stored_size == 11);
	assert_true(in->etag[0] != '\0');
	/* clean: a second sync sends nothing (the attribute index entry
	 * of the upload written first, so that its flusher sends none) */
	aidx_flush(fs, true);
	puts = objfs_fault_calls(e->fault, OBJFS_FOP_PUT);
	assert_int_equal(inode_sync_locked_ns(fs, in), 0);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_PUT) == puts);
	/* an overwrite in place makes it dirty again */
	assert_int_equal(inode_write(fs, in, "W", 1, 6), 0);
	assert_true(in->dirty);
	assert_int_equal(inode_sync_locked_ns(fs, in), 0);
	tu_check(e->store, "f", "hello World", 11);
	unpin(fs, in);
}

static void test_put_fault(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = fe_new_file(e, fs->root, "g");

	assert_int_equal(inode_write(fs, in, "data", 4, 0), 0);
	objfs_fault_fail_next(e->fault, OBJFS_FOP_PUT, 1, ETIMEDOUT);
	/* the store's errno, positive; mapped only at the FUSE edge */
	assert_int_equal(inode_sync_locked_ns(fs, in), ETIMEDOUT);
	assert_true(in->dirty);
	assert_non_null(in->spool);
	assert_false(in->in_store);
	assert_false(in_store(e, "g"));
	/* the data is kept: the retry sends it */
	sync_check(e, in, "g", "data", 4);
	unpin(fs, in);
}

/* Counts the files named objfs-unsaved-* (not their notes) in dir. */
static unsigned kept_files(const char *dir)
{
	char cmd[512];
	unsigned n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls '%s' 2>/dev/null | grep '^objfs-unsaved-' | "
		 "grep -vc '\\.txt$'", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (fscanf(p, "%u", &n) != 1)
		n = 0;
	pclose(p);
	return n;
}

/* The last close after a flush that told the application its data is not
 * stored: nothing is sent behind its back; the bytes are kept aside. */
static void release_sync(struct fs_env *e, struct inode *in, int want)
{
	pthread_rwlock_rdlock(&e->fs->ns);
	pthread_mutex_lock(&in->mu);
	assert_int_equal(inode_release_sync(e->fs, in), want);
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&e->fs->ns);
}

static void test_close_after_told(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = fe_new_file(e, fs->root, "told");
	struct inode *in2 = fe_new_file(e, fs->root, "told2");
	uint64_t puts;

	/* close(2) got EACCES: the last close keeps the data aside, sends
	 * nothing, and the store keeps what it had (nothing) */
	assert_int_equal(inode_write(fs, in, "not stored", 10, 0), 0);
	objfs_fault_fail_next(e->fault, OBJFS_FOP_PUT, 1, EACCES);
	assert_int_equal(inode_sync_locked_ns(fs, in), EACCES);
	assert_true(in->told_unsaved);
	puts = objfs_fault_calls(e->fault, OBJFS_FOP_PUT);
	release_sync(e, in, EIO);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_PUT) == puts);
	assert_false(in_store(e, "told"));
	assert_false(in->dirty);
	assert_int_equal(kept_files(fs->spool_dir), 1);
	assert_true(__atomic_load_n(&fs->unsaved_kept, __ATOMIC_RELAXED) == 1);
	unpin(fs, in);

	/* a write after the failed flush is new data nobody was told
	 * about: the last close uploads it all */
	assert_int_equal(inode_write(fs, in2, "first ", 6, 0), 0);
	objfs_fault_fail_next(e->fault, OBJFS_FOP_PUT, 1, EACCES);
	assert_int_equal(inode_sync_locked_ns(fs, in2), EACCES);
	assert_int_equal(inode_write(fs, in2, "second", 6, 6), 0);
	assert_false(in2->told_unsaved);
	release_sync(e, in2, 0);
	tu_check(e->store, "told2", "first second", 12);
	assert_int_equal(kept_files(fs->spool_dir), 1);
	unpin(fs, in2);
}

static void test_stream(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = fe_new_file(e, fs->root, "big");
	size_t n = 2 * OBJFS_MPU_MIN_PART + MIB + 100;
	uint64_t puts, segs;
	char *data = pattern(n);

	write_all(e, in, data, n, MIB);
	/* two complete parts are on their way while the file is open */
	assert_non_null(in->stream);
	assert_int_equal(in->stream->n_parts, 2);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_CREATE) == 1);
	assert_false(in_store(e, "big"));
	sync_check(e, in, "big", data, n);
	/* the close sent only the tail, as a third part */
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_PART) == 3);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_COMPLETE) == 1);
	/* no whole-object PUT: the only PUTs are attribute index segments
	 * (numbered before they are sent) and the usage document the usage
	 * thread writes once after listing the new volume */
	puts = objfs_fault_calls(e->fault, OBJFS_FOP_PUT);
	pthread_mutex_lock(&fs->aidx_mu);
	segs = fs->aidx_seq;
	pthread_mutex_unlock(&fs->aidx_mu);
	assert_true(puts <= segs + 1);
	unpin(fs, in);
	free(data);
}

static void test_stream_part_fault(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = fe_new_file(e, fs->root, "big2");
	size_t n = 2 * OBJFS_MPU_MIN_PART + 100;
	char *data = pattern(n);

	objfs_fault_fail_next(e->fault, OBJFS_FOP_MPU_PART, 1, EIO);
	write_all(e, in, data, n, MIB);
	/* the failed stream is abandoned and the whole file sent again */
	sync_check(e, in, "big2", data, n);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_ABORT) == 1);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_COMPLETE) == 1);
	unpin(fs, in);
	free(data);
}

/* Past spool_limit a writer first frees other files' spools: a dirty one
 * is uploaded early. */
static void test_relieve_others(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *a = fe_new_file(e, fs->root, "a");
	struct inode *b = fe_new_file(e, fs->root, "b");
	size_t n = 700 * 1024;
	char *data = pattern(n);

	write_all(e, a, data, n, 64 * 1024);
	assert_true(a->dirty);
	assert_false(in_store(e, "a"));
	write_all(e, b, data, n, 64 * 1024);
	/* a went up and gave its spool back; b still waits */
	assert_false(a->dirty);
	assert_null(a->spool);
	tu_check(e->store, "a", data, n);
	assert_true(b->dirty);
	assert_non_null(b->spool);
	assert_false(in_store(e, "b"));
	assert_true(fs->spool_used <= fs->o.spool_limit);
	sync_check(e, b, "b", data, n);
	unpin(fs, b);
	unpin(fs, a);
	free(data);
}

/* With no other spool to free, the written file itself is uploaded early
 * and continues over its stored object. */
static void test_relieve_own(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = fe_new_file(e, fs->root, "own");
	size_t n = 3 * MIB + 5;
	char *data = pattern(n);

	write_all(e, in, data, 2 * MIB, 256 * 1024);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_PUT) >= 1);
	assert_true(in_store(e, "own"));
	write_all(e, in, data, n, 256 * 1024);   /* rewrites, then appends */
	sync_check(e, in, "own", data, n);
	unpin(fs, in);
	free(data);
}

/* A stored file of four 5 MiB parts, changed in its middle and appended
 * to: the sync sends one part around the change plus the append; the rest
 * is copied by the store (part copies). */
static void test_delta_sync(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = fe_new_file(e, fs->root, "d");
	size_t n = 4 * OBJFS_MPU_MIN_PART + 100, app = MIB, mid = 12 * MIB;
	char *data = pattern(n + 2 * app);
	uint64_t sent;

	write_all(e, in, data, n, MIB);
	sync_check(e, in, "d", data, n);
	objfs_fault_reset(e->fault);
	memset(data + mid, 'x', 1000);
	assert_int_equal(inode_write(fs, in, data + mid, 1000, mid), 0);
	assert_int_equal(inode_write(fs, in, data + n, app, n), 0);
	sync_check(e, in, "d", data, n + app);
	sent = objfs_fault_sent(e->fault);
	/* one part around the change, the append, attribute index segments */
	assert_true(sent >= OBJFS_MPU_MIN_PART + app);
	assert_true(sent <= OBJFS_MPU_MIN_PART + app + 256 * 1024);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_PART_COPY) == 2);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_PART) == 2);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_COMPLETE) == 1);
	assert_true(fs->delta_uploads == 1);
	/* appends alone: everything stored is copied, only they are sent */
	objfs_fault_reset(e->fault);
	assert_int_equal(inode_write(fs, in, data, app, n + app), 0);
	memcpy(data + n + app, data, app);
	sync_check(e, in, "d", data, n + 2 * app);
	assert_true(objfs_fault_sent(e->fault) <= app + 256 * 1024);
	unpin(fs, in);
	free(data);
}

/* A store that refuses part copies: the whole file goes up, and the
 * refusal is remembered (no part copy is tried again). */
static void test_delta_refused(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = fe_new_file(e, fs->root, "r");
	size_t n = 4 * OBJFS_MPU_MIN_PART;
	char *data = pattern(n + 20);

	write_all(e, in, data, n, MIB);
	sync_check(e, in, "r", data, n);
	objfs_fault_reset(e->fault);
	objfs_fault_fail_next(e->fault, OBJFS_FOP_MPU_PART_COPY, 1000,
			      EOPNOTSUPP);
	assert_int_equal(inode_write(fs, in, data + n, 10, n), 0);
	sync_check(e, in, "r", data, n + 10);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_PART_COPY) >= 1);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_ABORT) == 1);
	assert_true(objfs_fault_sent(e->fault) >= n + 10);
	assert_true(fs->no_part_copy);
	objfs_fault_reset(e->fault);
	assert_int_equal(inode_write(fs, in, data + n + 10, 10, n + 10), 0);
	sync_check(e, in, "r", data, n + 20);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_PART_COPY) == 0);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_CREATE) == 1);
	unpin(fs, in);
	free(data);
}

/* The stored object was replaced by another writer.  A spool holding every
 * byte: the part copies fail (ETag) and the whole file goes up from the
 * spool (last writer wins, as before).  A spool that lacks bytes of the
 * old object cannot be completed: the sync fails with EIO and the file
 * stays dirty. */
static void test_delta_stale(void **state)
{
	struct fs_env *e = *state;
	struct objfs_fs *fs = e->fs;
	struct inode *in = fe_new_file(e, fs->root, "s");
	size_t n = 4 * OBJFS_MPU_MIN_PART;
	char *data = pattern(n), *other = malloc(n);

	assert_non_null(other);
	memset(other, 'o', n);
	write_all(e, in, data, n, MIB);
	sync_check(e, in, "s", data, n);
	tu_put(e->store, "s", other, n, NULL);
	objfs_fault_reset(e->fault);
	memset(data + 3 * MIB, 'y', 100);
	assert_int_equal(inode_write(fs, in, data + 3 * MIB, 100, 3 * MIB), 0);
	sync_check(e, in, "s", data, n);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_PART_COPY) >= 1);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_MPU_ABORT) == 1);
	assert_false(fs->no_part_copy);
	/* now without the bytes: the spool is dropped, another writer
	 * replaces the object, a change is synced */
	pthread_mutex_lock(&in->mu);
	spool_drop(fs, in, false);
	pthread_mutex_unlock(&in->mu);
	assert_null(in->spool);
	tu_put(e->store, "s", other, n, NULL);
	assert_int_equal(inode_write(fs, in, "z", 1, 2 * MIB), 0);
	assert_int_equal(inode_sync_locked_ns(fs, in), EIO);
	assert_true(in->dirty);
	tu_check(e->store, "s", other, n);
	pthread_mutex_lock(&in->mu);
	stream_abort(fs, in);
	in->dirty = false;      /* nothing to store at teardown */
	pthread_mutex_unlock(&in->mu);
	unpin(fs, in);
	free(other);
	free(data);
}

/* Plans: what is copied and sent, and where it does not pay. */
static void test_delta_plan(void **state)
{
	const uint64_t m = OBJFS_MPU_MIN_PART;
	struct objfs_range mid = { 12 * MIB, 12 * MIB + 1000 };
	struct objfs_range edge = { 10 * MIB - 1, 10 * MIB + 1 };
	struct objfs_delta_seg *p = NULL;
	uint64_t sent, copied, off;
	size_t n, i;

	(void)state;
	/* too small to pay: base under 2 parts */
	assert_int_equal(objfs_store_delta_plan(12 * MIB, 9 * MIB, NULL, 0, m,
						&p, &n), EOPNOTSUPP);
	/* an append: one copy, the appended bytes sent */
	assert_int_equal(objfs_store_delta_plan(24 * MIB, 20 * MIB, NULL, 0, m,
						&p, &n), 0);
	assert_int_equal(n, 2);
	assert_true(p[0].copy && p[0].off == 0 && p[0].len == 20 * MIB);
	assert_true(!p[1].copy && p[1].len == 4 * MIB);
	free(p);
	/* every part but the last at least 5 MiB, contiguous, and the
	 * unchanged bytes sent less than 5 MiB per change */
	for (i = 0; i < 2; i++) {
		const struct objfs_range *c = i == 0 ? &mid : &edge;
		size_t k;

		assert_int_equal(objfs_store_delta_plan(21 * MIB, 20 * MIB,
							c, 1, m, &p, &n), 0);
		sent = copied = off = 0;
		for (k = 0; k < n; k++) {
			assert_true(p[k].off == off);
			assert_true(k + 1 == n || p[k].len >= m);
			off += p[k].len;
			if (p[k].copy)
				copied += p[k].len;
			else
				sent += p[k].len;
		}
		assert_true(off == 21 * MIB);
		assert_true(sent <= (c->end - c->start) + m + MIB);
		assert_true(copied >= 20 * MIB - m - (c->end - c->start));
		free(p);
	}
	/* everything changed: nothing to copy */
	{
		struct objfs_range all = { 0, 20 * MIB };

		assert_int_equal(objfs_store_delta_plan(20 * MIB, 20 * MIB,
							&all, 1, m, &p, &n),
				 EOPNOTSUPP);
	}
}

int main(void)
{
#define T(f, setup) cmocka_unit_test_setup_teardown(f, setup, fe_teardown_state)
	const struct CMUnitTest tests[] = {
		T(test_write_sync, setup),
		T(test_put_fault, setup),
		T(test_close_after_told, setup),
		T(test_stream, setup_stream),
		T(test_stream_part_fault, setup_stream),
		T(test_relieve_others, setup_small_spool),
		T(test_relieve_own, setup_small_spool),
		T(test_delta_sync, setup_stream),
		T(test_delta_refused, setup_stream),
		T(test_delta_stale, setup_stream),
		cmocka_unit_test(test_delta_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
