/* store_testutil.c - helpers shared by the backend unit tests. */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "store_testutil.h"

int tu_tmpdir(char *buf, size_t cap, const char *tag)
{
	if (snprintf(buf, cap, "/tmp/objfs-%s-XXXXXX", tag) >= (int)cap)
		return ENAMETOOLONG;
	return mkdtemp(buf) != NULL ? 0 : errno;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void tu_rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tu_put(struct objfs_store *s, const char *key, const void *data,
	    size_t n, const struct objfs_put_opts *opts)
{
	struct objfs_source src;

	objfs_source_mem(&src, data, n);
	assert_int_equal(objfs_store_put(s, key, &src, opts, NULL), 0);
}

void tu_get(struct objfs_store *s, const char *key, struct objfs_membuf *mb,
	    struct objfs_obj_info *info)
{
	struct objfs_get_opts all = OBJFS_GET_ALL;
	struct objfs_sink sink;

	objfs_sink_membuf(&sink, mb);
	assert_int_equal(objfs_store_get(s, key, &all, &sink, info), 0);
}

void tu_check(struct objfs_store *s, const char *key, const void *want,
	      size_t n)
{
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);

	tu_get(s, key, &mb, NULL);
	assert_int_equal(mb.len, n);
	if (n > 0)
		assert_memory_equal(mb.data, want, n);
	objfs_membuf_release(&mb);
}
