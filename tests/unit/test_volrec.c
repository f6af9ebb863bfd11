/* Unit tests of the volume record: format, parse, round trip, load/store
 * over a real local store. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "volume/volrec.h"

static void test_parse(void **state)
{
	const char *text = "# objfs volume record\n"
			   "capacity_bytes=1073741824\r\n"
			   "\n"
			   "created=2026-11-22T10:41:19Z\n"
			   "name=pvc-123\n"
			   "storage.class=fast=yes\n";
	struct objfs_volrec v = OBJFS_VOLREC_INIT;

	(void)state;
	assert_int_equal(objfs_volrec_parse(text, strlen(text), &v), 0);
	assert_true(v.capacity_bytes == 1073741824ULL);
	assert_string_equal(v.created, "2026-11-22T10:41:19Z");
	assert_string_equal(v.name, "pvc-123");
	assert_int_equal(v.params.n, 1);
	assert_string_equal(objfs_volrec_get_param(&v, "storage.class"), "fast=yes");
	assert_null(objfs_volrec_get_param(&v, "nope"));
	objfs_volrec_release(&v);
}

static void test_parse_errors(void **state)
{
	struct objfs_volrec v = OBJFS_VOLREC_INIT;
	const char *bad[] = {
		"capacity_bytes=12x\n",
		"capacity_bytes=\n",
		"capacity_bytes=99999999999999999999999\n",
		"no equals sign\n",
		"=value\n",
		"bad key=1\n",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(objfs_volrec_parse(bad[i], strlen(bad[i]), &v), EINVAL);
		assert_null(v.name);
		assert_int_equal(v.params.n, 0);
	}
	/* a NUL inside the text */
	assert_int_equal(objfs_volrec_parse("name=a\0b\n", 9, &v), EINVAL);
	/* empty: no limit */
	assert_int_equal(objfs_volrec_parse("", 0, &v), 0);
	assert_true(v.capacity_bytes == 0);
	objfs_volrec_release(&v);
}

static void test_round_trip(void **state)
{
	struct objfs_volrec v = OBJFS_VOLREC_INIT, w = OBJFS_VOLREC_INIT;
	char buf[1024], small[40];
	size_t len = 0;

	(void)state;
	v.capacity_bytes = 5ULL << 30;
	assert_int_equal(objfs_volrec_set_created_now(&v), 0);
	assert_int_equal(strlen(v.created), 20);
	assert_int_equal(objfs_volrec_set_name(&v, "vol-1"), 0);
	assert_int_equal(objfs_volrec_set_param(&v, "a", "1"), 0);
	assert_int_equal(objfs_volrec_set_param(&v, "b/c", "x y"), 0);
	assert_int_equal(objfs_volrec_set_param(&v, "a", "2"), 0);
	assert_int_equal(objfs_volrec_set_param(&v, "name", "x"), EINVAL);
	assert_int_equal(objfs_volrec_set_param(&v, "k", "line\nbreak"), EINVAL);
	assert_int_equal(objfs_volrec_set_name(&v, "a\rb"), EINVAL);
	assert_int_equal(objfs_volrec_format(&v, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, strlen(buf));
	assert_non_null(strstr(buf, "capacity_bytes=5368709120\n"));
	assert_int_equal(objfs_volrec_format(&v, small, sizeof(small), NULL), ENOSPC);
	assert_int_equal(objfs_volrec_parse(buf, len, &w), 0);
	assert_true(w.capacity_bytes == v.capacity_bytes);
	assert_string_equal(w.created, v.created);
	assert_string_equal(w.name, "vol-1");
	assert_int_equal(w.params.n, 2);
	assert_string_equal(w.params.items[0].key, "a");
	assert_string_equal(w.params.items[0].value, "2");
	assert_string_equal(objfs_volrec_get_param(&w, "b/c"), "x y");
	objfs_volrec_release(&v);
	objfs_volrec_release(&w);
}

static void test_load_store(void **state)
{
	char dir[] = "/tmp/objfs-test-volrec-XXXXXX";
	struct objfs_store *local = NULL, *vol = NULL;
	struct objfs_volrec v = OBJFS_VOLREC_INIT, w = OBJFS_VOLREC_INIT;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	char cmd[128];

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(objfs_local_store_create(dir, NULL, &local), 0);
	assert_int_equal(objfs_prefix_store_create(local, "volumes/v1", &vol), 0);
	assert_int_equal(objfs_volrec_load(vol, &w), ENOENT);
	v.capacity_bytes = 12345;
	assert_int_equal(objfs_volrec_set_name(&v, "v1"), 0);
	assert_int_equal(objfs_volrec_store(vol, &v), 0);
	assert_int_equal(objfs_volrec_load(vol, &w), 0);
	assert_true(w.capacity_bytes == 12345);
	assert_string_equal(w.name, "v1");
	/* the key is relative to the volume prefix */
	assert_int_equal(objfs_store_head(vol, OBJFS_VOLREC_KEY, &info), 0);
	objfs_obj_info_release(&info);
	objfs_volrec_release(&v);
	objfs_volrec_release(&w);
	objfs_store_destroy(vol);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_load_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
