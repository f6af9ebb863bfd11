/* Unit tests of the hard-link keys and metadata (volume/hlink.h): ids and
 * tokens drawn and checked, the id and token a name's metadata holds
 * (malformed or missing ones mean a plain object), and the keys of a link
 * set, which never leave .objfs/links/ID/; a name's body, never empty. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "volume/hlink.h"

#define ID "0123456789abcdef0123456789abcdef"
#define TOK "fedcba9876543210"

static void test_id(void **state)
{
	char a[OBJFS_HLINK_ID_LEN + 1], b[OBJFS_HLINK_ID_LEN + 1];

	(void)state;
	assert_int_equal(objfs_hlink_id_new(a), 0);
	assert_int_equal(objfs_hlink_id_new(b), 0);
	assert_true(objfs_hlink_id_valid(a));
	assert_true(objfs_hlink_id_valid(b));
	assert_string_not_equal(a, b);
	assert_true(objfs_hlink_id_valid(ID));
	assert_false(objfs_hlink_id_valid(NULL));
	assert_false(objfs_hlink_id_valid(""));
	assert_false(objfs_hlink_id_valid(ID "0"));              /* long */
	assert_false(objfs_hlink_id_valid("0123456789abcdef"));  /* short */
	assert_false(objfs_hlink_id_valid("0123456789ABCDEF0123456789abcdef"));
	assert_false(objfs_hlink_id_valid("../../../../../../x/0123456789ab"));
	assert_int_equal(objfs_hlink_token_new(a), 0);
	assert_int_equal(strlen(a), OBJFS_HLINK_TOKEN_LEN);
	assert_true(objfs_hlink_token_valid(a));
	assert_true(objfs_hlink_token_valid(TOK));
	assert_false(objfs_hlink_token_valid(ID));
	assert_false(objfs_hlink_token_valid("fedcba987654321/"));
}

static void test_meta(void **state)
{
	struct objfs_meta m = OBJFS_META_INIT;
	char id[OBJFS_HLINK_ID_LEN + 1] = "";
	char tok[OBJFS_HLINK_TOKEN_LEN + 1] = "";

	(void)state;
	assert_false(objfs_hlink_from_meta(&m, id, tok));
	assert_int_equal(objfs_meta_set(&m, OBJFS_META_HLINK, "../volume"), 0);
	assert_int_equal(objfs_meta_set(&m, OBJFS_META_HLINK_TOKEN, TOK), 0);
	assert_false(objfs_hlink_from_meta(&m, id, tok));
	assert_int_equal(objfs_meta_set(&m, OBJFS_META_HLINK, ID), 0);
	assert_true(objfs_hlink_from_meta(&m, id, tok));
	assert_string_equal(id, ID);
	assert_string_equal(tok, TOK);
	objfs_meta_release(&m);
	/* an id without a token is no link (another tool's half copy) */
	assert_int_equal(objfs_meta_set(&m, OBJFS_META_HLINK, ID), 0);
	assert_false(objfs_hlink_from_meta(&m, id, tok));
	objfs_meta_release(&m);
	/* the round trip, and what it refuses to write */
	assert_int_equal(objfs_hlink_to_meta(ID, TOK, &m), 0);
	assert_string_equal(objfs_meta_get(&m, "objfs-link"), ID);
	assert_string_equal(objfs_meta_get(&m, "objfs-link-token"), TOK);
	assert_true(objfs_hlink_from_meta(&m, id, tok));
	objfs_meta_release(&m);
	assert_int_equal(objfs_hlink_to_meta(ID, "x", &m), EINVAL);
	objfs_meta_release(&m);
}

static void test_keys(void **state)
{
	char buf[256], other[256];

	(void)state;
	assert_int_equal(objfs_hlink_data_key(ID, buf, sizeof(buf)), 0);
	assert_string_equal(buf, ".objfs/links/" ID "/data");
	assert_int_equal(objfs_hlink_names_prefix(ID, buf, sizeof(buf)), 0);
	assert_string_equal(buf, ".objfs/links/" ID "/names/");
	assert_int_equal(objfs_hlink_name_key(ID, TOK, buf, sizeof(buf)), 0);
	assert_string_equal(buf, ".objfs/links/" ID "/names/" TOK);
	assert_int_equal(objfs_hlink_name_key(ID, "../../a", other,
					      sizeof(other)), EINVAL);
	assert_int_equal(objfs_hlink_name_key(ID, "", other, sizeof(other)),
			 EINVAL);
	assert_int_equal(objfs_hlink_name_key("x", TOK, other, sizeof(other)),
			 EINVAL);
	assert_int_equal(objfs_hlink_data_key("../x", buf, sizeof(buf)), EINVAL);
	assert_int_equal(objfs_hlink_data_key(ID, buf, 20), ENAMETOOLONG);
}

static void test_body(void **state)
{
	char buf[OBJFS_HLINK_BODY_LEN + 1];

	(void)state;
	assert_int_equal(objfs_hlink_name_body(ID, TOK, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "objfs-link " ID " " TOK "\n");
	assert_int_equal(strlen(buf), OBJFS_HLINK_BODY_LEN);
	assert_int_equal(objfs_hlink_name_body(ID, TOK, buf, sizeof(buf) - 1),
			 EINVAL);
	assert_int_equal(objfs_hlink_name_body("x", TOK, buf, sizeof(buf)),
			 EINVAL);
	assert_int_equal(objfs_hlink_name_body(ID, "", buf, sizeof(buf)),
			 EINVAL);
}

static void test_key_kind(void **state)
{
	char id[OBJFS_HLINK_ID_LEN + 1];

	(void)state;
	assert_int_equal(objfs_hlink_key_kind(".objfs/links/" ID "/data", id),
			 OBJFS_HLINK_DATA);
	assert_string_equal(id, ID);
	assert_int_equal(objfs_hlink_key_kind(".objfs/links/" ID "/names/" TOK,
					      id), OBJFS_HLINK_ENTRY);
	assert_string_equal(id, ID);
	assert_int_equal(objfs_hlink_key_kind(".objfs/links/" ID "/names/x", id),
			 OBJFS_HLINK_OTHER);
	assert_int_equal(objfs_hlink_key_kind(".objfs/links/" ID "/data2", id),
			 OBJFS_HLINK_OTHER);
	assert_int_equal(objfs_hlink_key_kind(".objfs/links/XYZ/data", id),
			 OBJFS_HLINK_OTHER);
	assert_int_equal(objfs_hlink_key_kind(".objfs/links/", id),
			 OBJFS_HLINK_OTHER);
	assert_int_equal(objfs_hlink_key_kind("a/" ID "/data", id),
			 OBJFS_HLINK_OTHER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id),
		cmocka_unit_test(test_meta),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_key_kind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
