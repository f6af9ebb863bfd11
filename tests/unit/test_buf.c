/* Unit tests of common/buf.c: heap and fixed buffers, sticky overflow. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"

static void test_heap(void **state)
{
	struct objfs_buf b = OBJFS_BUF_INIT(10, EFBIG);
	char *s;

	(void)state;
	assert_null(b.p);
	objfs_buf_adds(&b, "abc");
	objfs_buf_addc(&b, '-');
	objfs_buf_addf(&b, "%d", 42);
	assert_string_equal(b.p, "abc-42");
	assert_int_equal(b.len, 6);
	assert_int_equal(objfs_buf_err(&b), 0);
	/* Exactly at the cap fits; one more does not and changes nothing. */
	objfs_buf_adds(&b, "wxyz");
	assert_string_equal(b.p, "abc-42wxyz");
	objfs_buf_addc(&b, '!');
	assert_int_equal(objfs_buf_err(&b), EFBIG);
	assert_string_equal(b.p, "abc-42wxyz");
	objfs_buf_adds(&b, "");         /* sticky, even for nothing */
	assert_int_equal(objfs_buf_err(&b), EFBIG);
	assert_null(objfs_buf_detach(&b));
	objfs_buf_reset(&b);
	assert_int_equal(objfs_buf_err(&b), 0);
	assert_string_equal(b.p, "");
	objfs_buf_add(&b, "x\0y", 3);   /* bytes, NUL included */
	assert_int_equal(b.len, 3);
	s = objfs_buf_detach(&b);
	assert_non_null(s);
	assert_memory_equal(s, "x\0y", 4);
	free(s);
	assert_null(b.p);
	/* An untouched buffer detaches as "". */
	s = objfs_buf_detach(&b);
	assert_string_equal(s, "");
	free(s);
	objfs_buf_release(&b);
}

static void test_big_format(void **state)
{
	struct objfs_buf b = OBJFS_BUF_INIT(4096, E2BIG);
	char want[1001];

	(void)state;
	memset(want, 'q', 1000);
	want[1000] = '\0';
	objfs_buf_addf(&b, "%s", want);         /* past the stack buffer */
	assert_int_equal(b.len, 1000);
	assert_string_equal(b.p, want);
	objfs_buf_addf(&b, "%s%s%s", want, want, want);
	objfs_buf_addf(&b, "%s", want);         /* 5000 > 4096 */
	assert_int_equal(objfs_buf_err(&b), E2BIG);
	assert_int_equal(b.len, 4000);
	objfs_buf_release(&b);
}

static void test_fixed(void **state)
{
	char mem[6];
	struct objfs_buf b;

	(void)state;
	objfs_buf_fixed(&b, mem, sizeof(mem), ENAMETOOLONG);
	assert_string_equal(mem, "");
	objfs_buf_adds(&b, "hello");
	assert_int_equal(objfs_buf_err(&b), 0);
	assert_string_equal(mem, "hello");
	objfs_buf_addc(&b, '!');
	assert_int_equal(objfs_buf_err(&b), ENAMETOOLONG);
	assert_string_equal(mem, "hello");
	assert_null(objfs_buf_detach(&b));
	objfs_buf_release(&b);          /* never frees caller memory */
	assert_ptr_equal(b.p, mem);

	objfs_buf_fixed(&b, mem, 0, E2BIG);
	assert_int_equal(objfs_buf_err(&b), E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap),
		cmocka_unit_test(test_big_format),
		cmocka_unit_test(test_fixed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
