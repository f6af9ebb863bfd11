/*
 * Unit tests of the intrusive list (src/common/list.h): order of pushes
 * at both ends, removal anywhere (also of a node in no list, and while
 * iterating), first/last of an empty list, and reaching the element from
 * its node.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/list.h"

struct item {
	int v;
	struct objfs_list link;
};

#define ITEM(l) objfs_list_entry(l, struct item, link)

/* Asserts the values of head in order are want[0..n). */
static void expect(const struct objfs_list *head, const int *want, size_t n)
{
	const struct objfs_list *l;
	size_t i = 0;

	objfs_list_each(l, head) {
		assert_true(i < n);
		assert_int_equal(ITEM(l)->v, want[i]);
		assert_ptr_equal(l->next->prev, l);
		i++;
	}
	assert_int_equal(i, n);
	assert_int_equal(objfs_list_empty(head), n == 0);
}

static void test_list(void **state)
{
	struct objfs_list head, *l, *tmp;
	struct item it[5];
	int i;

	(void)state;
	objfs_list_init(&head);
	assert_null(objfs_list_first(&head));
	assert_null(objfs_list_last(&head));
	expect(&head, NULL, 0);
	for (i = 0; i < 5; i++) {
		it[i].v = i;
		objfs_list_init(&it[i].link);
		assert_false(objfs_list_linked(&it[i].link));
	}
	objfs_list_push_back(&head, &it[1].link);
	objfs_list_push_back(&head, &it[2].link);
	objfs_list_push_front(&head, &it[0].link);
	objfs_list_insert_after(&it[2].link, &it[3].link);
	expect(&head, (const int[]){ 0, 1, 2, 3 }, 4);
	assert_ptr_equal(ITEM(objfs_list_first(&head)), &it[0]);
	assert_ptr_equal(ITEM(objfs_list_last(&head)), &it[3]);
	assert_true(objfs_list_linked(&it[2].link));
	/* in the middle, at either end, and a node in no list */
	objfs_list_remove(&it[2].link);
	assert_false(objfs_list_linked(&it[2].link));
	expect(&head, (const int[]){ 0, 1, 3 }, 3);
	objfs_list_remove(&it[4].link);
	expect(&head, (const int[]){ 0, 1, 3 }, 3);
	objfs_list_remove(&it[0].link);
	objfs_list_remove(&it[3].link);
	expect(&head, (const int[]){ 1 }, 1);
	/* removing while iterating */
	objfs_list_push_back(&head, &it[2].link);
	objfs_list_push_back(&head, &it[4].link);
	objfs_list_each_safe(l, tmp, &head) {
		if (ITEM(l)->v % 2 == 0)
			objfs_list_remove(l);
	}
	expect(&head, (const int[]){ 1 }, 1);
	objfs_list_each_safe(l, tmp, &head)
		objfs_list_remove(l);
	expect(&head, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
