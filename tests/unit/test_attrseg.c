/* Unit tests of attribute index segments (volume/attrseg.h): the text
 * round trip with names that need escaping, what readers ignore (unknown
 * fields and lines, malformed entries, other major versions), the newest
 * entry per name after sorting, and the key prefix per directory. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "volume/attrseg.h"

static struct objfs_attrseg_entry entry(const char *name, const char *etag,
					int64_t ct)
{
	struct objfs_attrseg_entry e;

	memset(&e, 0, sizeof(e));
	e.name = (char *)name;
	snprintf(e.etag, sizeof(e.etag), "%s", etag);
	e.lm = 1732440000123000000LL;
	e.ct = ct;
	e.have = OBJFS_ATTRSEG_MODE | OBJFS_ATTRSEG_UID | OBJFS_ATTRSEG_GID |
		 OBJFS_ATTRSEG_MTIME;
	e.mode = S_IFREG | 0640;
	e.uid = 1000;
	e.gid = 4294967294u;
	e.mtime = -1500000000LL;        /* before the epoch */
	return e;
}

static void test_round_trip(void **state)
{
	static const char *const names[] = {
		"plain", "with space", "tab\there", "new\nline", "pct%41",
		"eq=sign", "caf\xc3\xa9", "\x7f" "del", "-",
	};
	struct objfs_attrseg s = OBJFS_ATTRSEG_INIT, r = OBJFS_ATTRSEG_INIT;
	struct objfs_attrseg_entry e;
	char *text = NULL;
	size_t len, i;

	(void)state;
	s.dir = strdup("a dir/sub%dir/");
	assert_non_null(s.dir);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		e = entry(names[i], "\"0123abcd\"", (int64_t)i + 1);
		if (i == 3) {
			e.mode = S_IFLNK | 0777;
			e.link = (char *)"../target with space=x";
		}
		if (i == 4)
			e.have &= ~OBJFS_ATTRSEG_MTIME;
		if (i == 5) {           /* a block device, with its times */
			e.mode = S_IFBLK | 0660;
			e.rdev = 0x700c8;
			e.atime = 1700000000000000001LL;
			e.ctime = 1700000000000000002LL;
			e.have |= OBJFS_ATTRSEG_RDEV | OBJFS_ATTRSEG_ATIME |
				  OBJFS_ATTRSEG_CTIME;
		}
		if (i == 6) {           /* a size: zero counts */
			e.size = 0;
			e.have |= OBJFS_ATTRSEG_SIZE;
		}
		if (i == 7) {
			e.size = 5000000000ULL;
			e.have |= OBJFS_ATTRSEG_SIZE;
		}
		assert_int_equal(objfs_attrseg_add(&s, &e), 0);
	}
	assert_int_equal(objfs_attrseg_format(&s, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	assert_int_equal(objfs_attrseg_parse(text, len, &r), 0);
	assert_string_equal(r.dir, s.dir);
	assert_int_equal(r.n, s.n);
	for (i = 0; i < s.n; i++) {
		assert_string_equal(r.e[i].name, s.e[i].name);
		assert_string_equal(r.e[i].etag, s.e[i].etag);
		assert_true(r.e[i].lm == s.e[i].lm);
		assert_true(r.e[i].ct == s.e[i].ct);
		assert_int_equal(r.e[i].have, s.e[i].have);
		assert_int_equal(r.e[i].mode, s.e[i].mode);
		assert_int_equal(r.e[i].uid, s.e[i].uid);
		assert_int_equal(r.e[i].gid, s.e[i].gid);
		if (s.e[i].have & OBJFS_ATTRSEG_MTIME)
			assert_true(r.e[i].mtime == s.e[i].mtime);
		if (s.e[i].have & OBJFS_ATTRSEG_RDEV)
			assert_true(r.e[i].rdev == s.e[i].rdev);
		if (s.e[i].have & OBJFS_ATTRSEG_ATIME)
			assert_true(r.e[i].atime == s.e[i].atime);
		if (s.e[i].have & OBJFS_ATTRSEG_CTIME)
			assert_true(r.e[i].ctime == s.e[i].ctime);
		if (s.e[i].have & OBJFS_ATTRSEG_SIZE)
			assert_true(r.e[i].size == s.e[i].size);
		if (s.e[i].link != NULL)
			assert_string_equal(r.e[i].link, s.e[i].link);
		else
			assert_null(r.e[i].link);
	}
	free(text);
	objfs_attrseg_release(&r);
	objfs_attrseg_release(&s);
}

static void test_root_dir(void **state)
{
	struct objfs_attrseg s = OBJFS_ATTRSEG_INIT, r = OBJFS_ATTRSEG_INIT;
	struct objfs_attrseg_entry e = entry("f", "\"e\"", 1);
	char *text = NULL;
	size_t len;

	(void)state;
	s.dir = strdup("");
	assert_int_equal(objfs_attrseg_add(&s, &e), 0);
	assert_int_equal(objfs_attrseg_format(&s, &text, &len), 0);
	assert_int_equal(objfs_attrseg_parse(text, len, &r), 0);
	assert_string_equal(r.dir, "");
	assert_int_equal(r.n, 1);
	free(text);
	objfs_attrseg_release(&r);
	objfs_attrseg_release(&s);
	/* no directory: nothing to format */
	assert_int_equal(objfs_attrseg_format(&s, &text, &len), EINVAL);
}

/* What a later writer may add is ignored; malformed entries are skipped. */
static void test_extensible(void **state)
{
	const char *text =
		"objfs-attrs 1\n"
		"dir d/\n"
		"x some future line kind\n"
		"e a etag=\"1\" lm=5 mode=33188 uid=1 gid=2 mtime=7 ct=9 nlink=3 rdev=0 future\n"
		"e b etag=\"2\" mode=33188 ct=9\n"            /* no lm: skipped */
		"e c%zz etag=\"3\" lm=1 ct=1\n"                /* bad escape */
		"e d etag=\"4\" lm=1 ct=2 mode=notanumber\n"   /* bad mode: left out */
		"e cut etag=\"5\" lm=1 ct=2";                  /* no LF: cut */
	struct objfs_attrseg r = OBJFS_ATTRSEG_INIT;

	(void)state;
	assert_int_equal(objfs_attrseg_parse(text, strlen(text), &r), 0);
	assert_string_equal(r.dir, "d/");
	assert_int_equal(r.n, 2);
	assert_string_equal(r.e[0].name, "a");
	assert_true(r.e[0].lm == 5 && r.e[0].mtime == 7 && r.e[0].ct == 9);
	assert_int_equal(r.e[0].uid, 1);
	assert_string_equal(r.e[1].name, "d");
	assert_int_equal(r.e[1].have & OBJFS_ATTRSEG_MODE, 0);
	objfs_attrseg_release(&r);
}

static void test_versions(void **state)
{
	static const char *const bad[] = {
		"objfs-attrs 2\ndir d/\ne a etag=x lm=1 ct=1\n",
		"objfs-attrs\n",
		"something else 1\n",
		"",
		"objfs-attrs 1",        /* no line at all */
		"objfs-attrs  1\ndir \n",       /* the version is digits only */
		"objfs-attrs +1\ndir \n",
		"objfs-attrs \t\n",     /* white space to the end of the text */
	};
	struct objfs_attrseg r = OBJFS_ATTRSEG_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(objfs_attrseg_parse(bad[i], strlen(bad[i]), &r),
				 EPROTO);
		objfs_attrseg_release(&r);
	}
	/* right version, no dir line */
	assert_int_equal(objfs_attrseg_parse("objfs-attrs 1\n", 14, &r), EINVAL);
	objfs_attrseg_release(&r);
}

static void test_sort_keeps_last(void **state)
{
	struct objfs_attrseg s = OBJFS_ATTRSEG_INIT;
	struct objfs_attrseg_entry e;

	(void)state;
	e = entry("b", "\"1\"", 1);
	assert_int_equal(objfs_attrseg_add(&s, &e), 0);
	e = entry("a", "\"2\"", 2);
	assert_int_equal(objfs_attrseg_add(&s, &e), 0);
	e = entry("b", "\"3\"", 3);
	assert_int_equal(objfs_attrseg_add(&s, &e), 0);
	objfs_attrseg_sort(&s);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.e[0].name, "a");
	assert_string_equal(s.e[1].name, "b");
	assert_string_equal(s.e[1].etag, "\"3\"");
	objfs_attrseg_release(&s);
}

static void test_prefix(void **state)
{
	char a[128], b[128], c[128];

	(void)state;
	objfs_attrseg_prefix("", a, sizeof(a));
	objfs_attrseg_prefix("x/", b, sizeof(b));
	objfs_attrseg_prefix("x/", c, sizeof(c));
	assert_string_equal(b, c);
	assert_string_not_equal(a, b);
	assert_memory_equal(a, OBJFS_ATTR_INDEX_PREFIX,
			    strlen(OBJFS_ATTR_INDEX_PREFIX));
	assert_int_equal(strlen(a), strlen(OBJFS_ATTR_INDEX_PREFIX) + 40 + 1);
	assert_int_equal(a[strlen(a) - 1], '/');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_root_dir),
		cmocka_unit_test(test_extensible),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_sort_keeps_last),
		cmocka_unit_test(test_prefix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
