/* Unit tests of the CSI rules the controller and the node share: the
 * capability checker (caps.h) and the in-progress set (claims.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "csi.pb-c.h"
#include "csi/caps.h"
#include "csi/claims.h"
#include "csi/rpc.h"

struct cap {
	Csi__V1__VolumeCapability c;
	Csi__V1__VolumeCapability__AccessMode am;
	Csi__V1__VolumeCapability__MountVolume mv;
	Csi__V1__VolumeCapability__BlockVolume bv;
};

static void cap_init(struct cap *k, int mode)
{
	csi__v1__volume_capability__init(&k->c);
	csi__v1__volume_capability__access_mode__init(&k->am);
	csi__v1__volume_capability__mount_volume__init(&k->mv);
	csi__v1__volume_capability__block_volume__init(&k->bv);
	k->am.mode = mode;
	k->c.access_mode = &k->am;
	k->c.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
	k->c.mount = &k->mv;
}

static void test_caps(void **state)
{
	struct cap k;
	char msg[256];
	int mode;

	(void)state;
	for (mode = 1; mode <= 7; mode++) {
		cap_init(&k, mode);
		assert_int_equal(objfs_csi_cap_check(&k.c, "f", msg, sizeof(msg)),
				 OBJFS_RPC_OK);
	}
	for (mode = 0; mode <= 8; mode += 8) {
		cap_init(&k, mode);
		assert_int_equal(objfs_csi_cap_check(&k.c, "f", msg, sizeof(msg)),
				 OBJFS_RPC_INVALID_ARGUMENT);
		assert_non_null(strstr(msg, "f.access_mode"));
	}
	assert_int_equal(objfs_csi_cap_check(NULL, "volume_capability", msg,
					     sizeof(msg)), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(msg, "volume_capability"));

	cap_init(&k, 1);
	k.c.access_mode = NULL;
	assert_int_equal(objfs_csi_cap_check(&k.c, "f", msg, sizeof(msg)),
			 OBJFS_RPC_INVALID_ARGUMENT);

	cap_init(&k, 1);
	k.c.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE__NOT_SET;
	k.c.mount = NULL;
	assert_int_equal(objfs_csi_cap_check(&k.c, "f", msg, sizeof(msg)),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(msg, "access_type"));

	cap_init(&k, 1);
	k.c.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
	k.c.block = &k.bv;
	assert_int_equal(objfs_csi_cap_check(&k.c, "f", msg, sizeof(msg)),
			 OBJFS_RPC_FAILED_PRECONDITION);
	assert_non_null(strstr(msg, "block"));

	cap_init(&k, 1);
	k.mv.fs_type = "ext4";
	assert_int_equal(objfs_csi_cap_check(&k.c, "f", msg, sizeof(msg)),
			 OBJFS_RPC_FAILED_PRECONDITION);
	assert_non_null(strstr(msg, "ext4"));
	k.mv.fs_type = "fuse.objfs";
	assert_int_equal(objfs_csi_cap_check(&k.c, "f", msg, sizeof(msg)),
			 OBJFS_RPC_OK);

	assert_true(objfs_csi_mode_reader_only(
		CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY));
	assert_false(objfs_csi_mode_reader_only(
		CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER));
	assert_true(objfs_csi_mode_single_target(
		CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER));
	assert_false(objfs_csi_mode_single_target(
		CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_MULTI_WRITER));
}

static void test_caps_list(void **state)
{
	struct cap a, b;
	Csi__V1__VolumeCapability *list[2] = { &a.c, &b.c };
	char msg[256];

	(void)state;
	cap_init(&a, 1);
	cap_init(&b, 5);
	assert_int_equal(objfs_csi_caps_check(list, 2, "caps[]", msg, sizeof(msg)),
			 OBJFS_RPC_OK);
	assert_int_equal(objfs_csi_caps_check(list, 0, "caps[]", msg, sizeof(msg)),
			 OBJFS_RPC_OK);
	b.mv.fs_type = "xfs";
	assert_int_equal(objfs_csi_caps_check(list, 2, "caps[]", msg, sizeof(msg)),
			 OBJFS_RPC_FAILED_PRECONDITION);
	a.c.access_mode = NULL;
	assert_int_equal(objfs_csi_caps_check(list, 2, "caps[]", msg, sizeof(msg)),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(msg, "caps[].access_mode"));
}

static void test_claims(void **state)
{
	struct objfs_claims c;
	const char *ab[2] = { "a", "b" };
	const char *bc[3] = { "b", NULL, "c" };
	const char *c1[1] = { "c" };

	(void)state;
	assert_int_equal(objfs_claims_init(&c), 0);
	assert_int_equal(objfs_claims_take(&c, ab, 2), 0);
	/* all or none: b is taken, so c is not claimed either */
	assert_int_equal(objfs_claims_take(&c, bc, 3), EBUSY);
	assert_int_equal(objfs_claims_take(&c, c1, 1), 0);
	objfs_claims_drop(&c, c1, 1);
	objfs_claims_drop(&c, ab, 1);               /* drops a only */
	assert_int_equal(objfs_claims_take(&c, ab, 2), EBUSY);
	objfs_claims_drop(&c, ab + 1, 1);
	assert_int_equal(objfs_claims_take(&c, bc, 3), 0);
	objfs_claims_drop(&c, c1, 1);               /* not claimed twice */
	objfs_claims_drop(&c, c1, 1);
	assert_int_equal(c.n, 1);
	/* release frees what is still claimed */
	objfs_claims_release(&c);
}

struct race {
	struct objfs_claims *c;
	int won;
};

static void *racer(void *arg)
{
	struct race *r = arg;
	const char *k[1] = { "vol" };
	int i;

	for (i = 0; i < 1000; i++) {
		if (objfs_claims_take(r->c, k, 1) == 0) {
			r->won++;
			objfs_claims_drop(r->c, k, 1);
		}
	}
	return NULL;
}

static void test_claims_threads(void **state)
{
	struct objfs_claims c;
	struct race r[4];
	pthread_t t[4];
	int i, won = 0;

	(void)state;
	assert_int_equal(objfs_claims_init(&c), 0);
	for (i = 0; i < 4; i++) {
		r[i].c = &c;
		r[i].won = 0;
		assert_int_equal(pthread_create(&t[i], NULL, racer, &r[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		won += r[i].won;
	}
	assert_true(won > 0);
	assert_int_equal(c.n, 0);
	objfs_claims_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_caps_list),
		cmocka_unit_test(test_claims),
		cmocka_unit_test(test_claims_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
