/* Unit tests of the metadata encoding and the path/key mapping (attr.c). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

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
	struct objfs_fattr a = { S_IFLNK | 0777, 1000, 2000, { 5, 7 }, 0,
				 { 3, 1 }, { 4, 2 } }, b;
	struct objfs_fattr dev = { S_IFCHR | 0600, 0, 0, { 1, 0 },
				   makedev(1, 3), { 1, 0 }, { 1, -1 } };

	(void)state;
	assert_int_equal(objfs_fattr_to_meta(&a, &m), 0);
	assert_string_equal(objfs_meta_get(&m, "mode"), "41471");
	assert_string_equal(objfs_meta_get(&m, "uid"), "1000");
	assert_string_equal(objfs_meta_get(&m, "mtime"), "5.000000007");
	assert_string_equal(objfs_meta_get(&m, "atime"), "3.000000001");
	assert_string_equal(objfs_meta_get(&m, "ctime"), "4.000000002");
	assert_null(objfs_meta_get(&m, "rdev"));        /* not a device */
	memset(&b, 0, sizeof(b));
	assert_int_equal(objfs_fattr_from_meta(&m, &b),
			 OBJFS_FATTR_MODE | OBJFS_FATTR_UID | OBJFS_FATTR_GID |
			 OBJFS_FATTR_MTIME | OBJFS_FATTR_ATIME |
			 OBJFS_FATTR_CTIME);
	assert_int_equal(b.mode, a.mode);
	assert_int_equal(b.uid, 1000);
	assert_int_equal(b.gid, 2000);
	assert_int_equal(b.mtime.tv_sec, 5);
	assert_int_equal(b.mtime.tv_nsec, 7);
	assert_true(b.atime.tv_sec == 3 && b.atime.tv_nsec == 1);
	assert_true(b.ctime.tv_sec == 4 && b.ctime.tv_nsec == 2);
	objfs_meta_release(&m);

	/* a device: the type in mode, rdev as s3fs writes it (decimal
	 * dev_t); a time with tv_nsec < 0 is left out, and so is one
	 * equal to mtime (a reader takes mtime for it) */
	assert_int_equal(objfs_fattr_to_meta(&dev, &m), 0);
	assert_string_equal(objfs_meta_get(&m, "mode"), "8576");
	assert_string_equal(objfs_meta_get(&m, "rdev"), "259");
	assert_null(objfs_meta_get(&m, "ctime"));
	assert_null(objfs_meta_get(&m, "atime"));
	memset(&b, 0, sizeof(b));
	assert_int_equal(objfs_fattr_from_meta(&m, &b),
			 OBJFS_FATTR_MODE | OBJFS_FATTR_UID | OBJFS_FATTR_GID |
			 OBJFS_FATTR_MTIME | OBJFS_FATTR_RDEV);
	assert_int_equal(b.mode, S_IFCHR | 0600);
	assert_true(major(b.rdev) == 1 && minor(b.rdev) == 3);
	objfs_meta_release(&m);
}

static void test_meta_defaults(void **state)
{
	struct objfs_meta m = OBJFS_META_INIT;
	struct objfs_fattr b = { S_IFREG | 0644, 1, 2, { 9, 0 } };

	(void)state;
	/* nothing: defaults stay */
	assert_int_equal(objfs_fattr_from_meta(&m, &b), 0);
	/* garbage and unknown types are ignored */
	assert_int_equal(objfs_meta_set(&m, "mode", "61860"), 0);  /* 0170644 */
	assert_int_equal(objfs_meta_set(&m, "rdev", "-1"), 0);
	assert_int_equal(objfs_meta_set(&m, "atime", "y"), 0);
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
