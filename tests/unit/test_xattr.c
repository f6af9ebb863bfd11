/* Unit tests of the extended attributes' encoding in metadata (xattrenc.c). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "fs/xattr.h"

/* enc with name=value set (asserted to work), enc freed. */
static char *set(char *enc, const char *name, const void *v, size_t n)
{
	char *out = NULL;

	assert_int_equal(objfs_xattr_set(enc, name, v, n, 0, &out), 0);
	free(enc);
	return out;
}

static void test_round_trip(void **state)
{
	struct objfs_meta m = OBJFS_META_INIT;
	unsigned char bin[256], got[300];
	char *enc = NULL, *back = NULL, list[64];
	size_t len, i;

	(void)state;
	for (i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)i;
	enc = set(enc, "user.a", "hello", 5);
	enc = set(enc, "user.bin", bin, sizeof(bin));
	enc = set(enc, "user.empty", "", 0);
	enc = set(enc, "user.odd name,:%\xc3\xa9", "x", 1);
	/* ASCII only: a header value on every store */
	for (i = 0; enc[i] != '\0'; i++)
		assert_true(enc[i] > 32 && enc[i] < 127);
	assert_int_equal(objfs_xattr_to_meta(enc, &m), 0);
	assert_non_null(objfs_meta_get(&m, "xattr-0"));
	assert_non_null(objfs_meta_get(&m, "XATTR-1"));     /* case folded */
	for (i = 0; i < m.n; i++)
		assert_true(strlen(m.items[i].value) <= OBJFS_XATTR_CHUNK);
	assert_int_equal(objfs_xattr_from_meta(&m, &back), 0);
	assert_string_equal(back, enc);
	assert_int_equal(objfs_xattr_get(back, "user.bin", got, sizeof(got),
					 &len), 0);
	assert_int_equal(len, sizeof(bin));
	assert_memory_equal(got, bin, sizeof(bin));
	assert_int_equal(objfs_xattr_get(back, "user.a", NULL, 0, &len), 0);
	assert_int_equal(len, 5);
	assert_int_equal(objfs_xattr_get(back, "user.a", got, 4, &len), ERANGE);
	assert_int_equal(objfs_xattr_get(back, "user.empty", got, 10, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(objfs_xattr_get(back, "user.odd name,:%\xc3\xa9", got,
					 10, &len), 0);
	assert_int_equal(len, 1);
	assert_int_equal(objfs_xattr_get(back, "user.none", got, 10, &len),
			 ENODATA);
	/* replace keeps one entry; remove */
	enc = set(enc, "user.a", "bye", 3);
	assert_int_equal(objfs_xattr_list(enc, NULL, 0, &len), 0);
	assert_int_equal(len, strlen("user.bin") + strlen("user.empty") +
			 strlen("user.odd name,:%\xc3\xa9") + strlen("user.a") + 4);
	assert_int_equal(objfs_xattr_list(enc, list, 5, &len), ERANGE);
	free(back);
	assert_int_equal(objfs_xattr_remove(enc, "user.bin", &back), 0);
	free(enc);
	enc = back;
	assert_int_equal(objfs_xattr_remove(enc, "user.odd name,:%\xc3\xa9",
					    &back), 0);
	free(enc);
	enc = back;
	assert_int_equal(objfs_xattr_remove(enc, "user.bin", &back), ENODATA);
	assert_int_equal(objfs_xattr_list(enc, list, sizeof(list), &len), 0);
	assert_int_equal(len, strlen("user.empty") + strlen("user.a") + 2);
	assert_memory_equal(list, "user.empty\0user.a\0", len);
	assert_int_equal(objfs_xattr_remove(enc, "user.a", &back), 0);
	free(enc);
	enc = back;
	assert_int_equal(objfs_xattr_remove(enc, "user.empty", &back), 0);
	free(enc);
	assert_string_equal(back, "");
	objfs_meta_release(&m);
	assert_int_equal(objfs_xattr_to_meta(back, &m), 0);
	assert_int_equal(m.n, 0);
	assert_int_equal(objfs_xattr_from_meta(&m, &enc), 0);
	assert_null(enc);
	free(back);
}

static void test_flags(void **state)
{
	char *enc = NULL, *out = NULL;

	(void)state;
	assert_int_equal(objfs_xattr_set(NULL, "user.a", "1", 1, XATTR_REPLACE,
					 &out), ENODATA);
	enc = set(NULL, "user.a", "1", 1);
	assert_int_equal(objfs_xattr_set(enc, "user.a", "2", 1, XATTR_CREATE,
					 &out), EEXIST);
	assert_int_equal(objfs_xattr_set(enc, "user.a", "2", 1, XATTR_REPLACE,
					 &out), 0);
	free(out);
	free(enc);
}

static void test_limits(void **state)
{
	static char big[4096];
	char *enc = NULL, *out = NULL, name[32];
	struct objfs_meta m = OBJFS_META_INIT;
	size_t room, n = 0;
	int err, i;

	(void)state;
	memset(big, 'v', sizeof(big));
	/* one value past the limit on its own: E2BIG */
	assert_int_equal(objfs_xattr_set(NULL, "user.a", big, sizeof(big), 0,
					 &out), E2BIG);
	assert_int_equal(objfs_xattr_set(NULL, "user.a", big,
					 OBJFS_XATTR_ENC_MAX, 0, &out), E2BIG);
	/* the largest single value: 4/3 base64 + "a:" within the limit */
	room = (OBJFS_XATTR_ENC_MAX - 2) / 4 * 3;
	assert_int_equal(objfs_xattr_set(NULL, "user.a", big, room, 0, &out), 0);
	assert_true(strlen(out) <= OBJFS_XATTR_ENC_MAX);
	assert_int_equal(objfs_xattr_to_meta(out, &m), 0);
	assert_true(m.n <= (OBJFS_XATTR_ENC_MAX + OBJFS_XATTR_CHUNK - 1) /
			   OBJFS_XATTR_CHUNK);
	objfs_meta_release(&m);
	free(out);
	/* many that together pass it: ENOSPC, the others kept */
	for (i = 0;; i++) {
		snprintf(name, sizeof(name), "user.k%d", i);
		err = objfs_xattr_set(enc, name, big, 100, 0, &out);
		if (err != 0)
			break;
		free(enc);
		enc = out;
		n++;
	}
	assert_int_equal(err, ENOSPC);
	assert_true(n >= 10);
	assert_true(strlen(enc) <= OBJFS_XATTR_ENC_MAX);
	/* a too long string is refused whole */
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(objfs_xattr_to_meta(big, &m), E2BIG);
	free(enc);
}

static void test_bad_names(void **state)
{
	struct objfs_meta m = OBJFS_META_INIT;
	char *out = NULL, name[300];
	size_t len;

	(void)state;
	assert_int_equal(objfs_xattr_name_check("security.selinux"), ENOTSUP);
	assert_int_equal(objfs_xattr_name_check("trusted.x"), ENOTSUP);
	assert_int_equal(objfs_xattr_name_check("system.posix_acl_access"),
			 ENOTSUP);
	assert_int_equal(objfs_xattr_name_check("user"), ENOTSUP);
	assert_int_equal(objfs_xattr_name_check("user."), EINVAL);
	assert_int_equal(objfs_xattr_set(NULL, "trusted.x", "1", 1, 0, &out),
			 ENOTSUP);
	assert_int_equal(objfs_xattr_get(NULL, "security.x", NULL, 0, &len),
			 ENOTSUP);
	memset(name, 'n', sizeof(name));
	memcpy(name, "user.", 5);
	name[OBJFS_XATTR_NAME_MAX + 1] = '\0';
	assert_int_equal(objfs_xattr_name_check(name), ERANGE);
	name[OBJFS_XATTR_NAME_MAX] = '\0';
	assert_int_equal(objfs_xattr_name_check(name), 0);
	/* malformed metadata (another tool's, or cut) is refused */
	assert_int_equal(objfs_meta_set(&m, "xattr-0", "a:Zm9v,b"), 0);
	assert_int_equal(objfs_xattr_from_meta(&m, &out), EINVAL);
	assert_null(out);
	assert_int_equal(objfs_meta_set(&m, "xattr-0", "a:Zm9"), 0);
	assert_int_equal(objfs_xattr_from_meta(&m, &out), EINVAL);
	assert_int_equal(objfs_meta_set(&m, "xattr-0", "%zz:"), 0);
	assert_int_equal(objfs_xattr_from_meta(&m, &out), EINVAL);
	assert_int_equal(objfs_meta_set(&m, "xattr-0", "a b:"), 0);
	assert_int_equal(objfs_xattr_from_meta(&m, &out), EINVAL);
	assert_int_equal(objfs_meta_set(&m, "xattr-0", "ok:Zm9v,"), 0);
	assert_int_equal(objfs_xattr_from_meta(&m, &out), EINVAL);
	assert_int_equal(objfs_meta_set(&m, "xattr-0", "ok:Zm9v"), 0);
	assert_int_equal(objfs_xattr_from_meta(&m, &out), 0);
	assert_int_equal(objfs_xattr_get(out, "user.ok", name, sizeof(name),
					 &len), 0);
	assert_memory_equal(name, "foo", 3);
	free(out);
	/* the get of a malformed string says so */
	assert_int_equal(objfs_xattr_get("a:Zm9", "user.a", NULL, 0, &len),
			 EINVAL);
	objfs_meta_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_bad_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
