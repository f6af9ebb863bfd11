/* Unit tests of the metadata encoding and the path/key mapping (attr.c). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "fs/attr.h"

static void test_mtime(void **state)
{
	struct timespec ts = { 1700000000, 123456789 }, out;
	char buf[48];

	(void)state;
	assert_int_equal(objfs_mtime_format(&ts, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1700000000.123456789");
	ts.tv_nsec = 0;
	assert_int_equal(objfs_mtime_format(&ts, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1700000000");     /* s3fs style */
	assert_int_equal(objfs_mtime_format(&ts, buf, 5), ENOSPC);
	assert_int_equal(objfs_mtime_parse("1700000000", &out), 0);
	assert_int_equal(out.tv_sec, 1700000000);
	assert_int_equal(out.tv_nsec, 0);
	/* rclone writes fractional seconds of any length */
	assert_int_equal(objfs_mtime_parse("1700000000.5", &out), 0);
	assert_int_equal(out.tv_nsec, 500000000);
	assert_int_equal(objfs_mtime_parse("1700000000.1234567891234", &out), 0);
	assert_int_equal(out.tv_nsec, 123456789);
	assert_int_equal(objfs_mtime_parse("-1.5", &out), 0);
	assert_int_equal(out.tv_sec, -2);
	assert_int_equal(out.tv_nsec, 500000000);
	assert_int_equal(objfs_mtime_parse("", &out), EINVAL);
	assert_int_equal(objfs_mtime_parse("12a", &out), EINVAL);
	assert_int_equal(objfs_mtime_parse(".5", &out), EINVAL);
}

static void test_mode(void **state)
{
	mode_t m;

	(void)state;
	assert_int_equal(objfs_mode_parse("33188", &m), 0);   /* s3fs */
	assert_int_equal(m, S_IFREG | 0644);
	assert_int_equal(objfs_mode_parse("0100644", &m), 0); /* octal */
	assert_int_equal(m, S_IFREG | 0644);
	assert_int_equal(objfs_mode_parse("0", &m), 0);
	assert_int_equal(m, 0);
	assert_int_equal(objfs_mode_parse("08", &m), EINVAL);
	assert_int_equal(objfs_mode_parse("-1", &m), EINVAL);
	assert_int_equal(objfs_mode_parse("99999999999", &m), EINVAL);
}

static void test_meta_round_trip(void **state)
{
	struct objfs_meta m = OBJFS_META_INIT;
	struct objfs_fattr a = { S_IFLNK | 0777, 1000, 2000, { 5, 7 } }, b;

	(void)state;
	assert_int_equal(objfs_fattr_to_meta(&a, &m), 0);
	assert_string_equal(objfs_meta_get(&m, "mode"), "41471");
	assert_string_equal(objfs_meta_get(&m, "uid"), "1000");
	assert_string_equal(objfs_meta_get(&m, "mtime"), "5.000000007");
	memset(&b, 0, sizeof(b));
	assert_int_equal(objfs_fattr_from_meta(&m, &b),
			 OBJFS_FATTR_MODE | OBJFS_FATTR_UID | OBJFS_FATTR_GID |
			 OBJFS_FATTR_MTIME);
	assert_int_equal(b.mode, a.mode);
	assert_int_equal(b.uid, 1000);
	assert_int_equal(b.gid, 2000);
	assert_int_equal(b.mtime.tv_sec, 5);
	assert_int_equal(b.mtime.tv_nsec, 7);
	objfs_meta_release(&m);
}

static void test_meta_defaults(void **state)
{
	struct objfs_meta m = OBJFS_META_INIT;
	struct objfs_fattr b = { S_IFREG | 0644, 1, 2, { 9, 0 } };

	(void)state;
	/* nothing: defaults stay */
	assert_int_equal(objfs_fattr_from_meta(&m, &b), 0);
	/* garbage and device types are ignored */
	assert_int_equal(objfs_meta_set(&m, "mode", "8630"), 0);  /* S_IFCHR */
	assert_int_equal(objfs_meta_set(&m, "uid", "abc"), 0);
	assert_int_equal(objfs_meta_set(&m, "gid", "4294967296"), 0);
	assert_int_equal(objfs_meta_set(&m, "mtime", "x"), 0);
	assert_int_equal(objfs_fattr_from_meta(&m, &b), 0);
	assert_int_equal(b.mode, S_IFREG | 0644);
	assert_int_equal(b.uid, 1);
	assert_int_equal(b.gid, 2);
	assert_int_equal(b.mtime.tv_sec, 9);
	objfs_meta_release(&m);
}

static void test_names(void **state)
{
	char longname[300];

	(void)state;
	assert_int_equal(objfs_name_check("a.txt"), 0);
	assert_int_equal(objfs_name_check(""), EINVAL);
	assert_int_equal(objfs_name_check("."), EINVAL);
	assert_int_equal(objfs_name_check(".."), EINVAL);
	assert_int_equal(objfs_name_check("a/b"), EINVAL);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(objfs_name_check(longname), ENAMETOOLONG);
	assert_true(objfs_name_reserved(true, ".objfs"));
	assert_false(objfs_name_reserved(false, ".objfs"));
	assert_false(objfs_name_reserved(true, ".objfsx"));
}

static void test_keys(void **state)
{
	char buf[OBJFS_KEY_MAX + 2], name[OBJFS_NAME_MAX + 1];
	char big[OBJFS_KEY_MAX];

	(void)state;
	assert_int_equal(objfs_key_join("", "a", false, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a");
	assert_int_equal(objfs_key_join("a/", "b.txt", false, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a/b.txt");
	assert_int_equal(objfs_key_join("a/", "d", true, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a/d/");
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(objfs_key_join(big, "zz", false, buf, sizeof(buf)), ENAMETOOLONG);

	assert_true(objfs_key_child("a/", "a/b.txt", false, name, sizeof(name)));
	assert_string_equal(name, "b.txt");
	assert_true(objfs_key_child("a/", "a/sub/", true, name, sizeof(name)));
	assert_string_equal(name, "sub");
	assert_true(objfs_key_child("", "top", false, name, sizeof(name)));
	assert_string_equal(name, "top");
	/* the marker itself, empty segments, dot names, other dirs */
	assert_false(objfs_key_child("a/", "a/", false, name, sizeof(name)));
	assert_false(objfs_key_child("a/", "a//", true, name, sizeof(name)));
	assert_false(objfs_key_child("a/", "a/..", false, name, sizeof(name)));
	assert_false(objfs_key_child("a/", "b/c", false, name, sizeof(name)));
	/* the reserved area at the root only */
	assert_false(objfs_key_child("", ".objfs/", true, name, sizeof(name)));
	assert_true(objfs_key_child("d/", "d/.objfs/", true, name, sizeof(name)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mtime),
		cmocka_unit_test(test_mode),
		cmocka_unit_test(test_meta_round_trip),
		cmocka_unit_test(test_meta_defaults),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
