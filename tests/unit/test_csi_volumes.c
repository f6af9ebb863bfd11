/* Unit tests of the Controller's volume rules that need no protobuf and no
 * store (volumes.h): objfs_ctl_vol_matches(), the one answer to "does this
 * recorded volume match the request" of CreateVolume and
 * ValidateVolumeCapabilities; the record built from parameters; the
 * capacity of a new volume. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "csi/params.h"
#include "csi/rpc.h"
#include "csi/volid.h"
#include "csi/volumes.h"
#include "volume/kvtext.h"
#include "volume/volrec.h"

#define GIB (1ULL << 30)
#define DIGEST "0123456789abcdef0123456789abcdef01234567"

/* A record as CreateVolume writes it: name pvc-1, 1 GiB, DIGEST, no
 * source, two volume_context entries. */
static void make_rec(struct objfs_volrec *rec, const char *source)
{
	struct objfs_csi_params p;
	struct objfs_kv ctx = OBJFS_KV_INIT;
	struct objfs_id id;

	memset(&p, 0, sizeof(p));
	memset(&id, 0, sizeof(id));
	snprintf(id.path, sizeof(id.path), "base/pvc-1");
	assert_int_equal(objfs_kv_set(&ctx, OBJFS_VOLREC_CTX "source", "file:///x/base/pvc-1"), 0);
	assert_int_equal(objfs_kv_set(&ctx, OBJFS_VOLREC_CTX "mountOptions", "ro"), 0);
	assert_int_equal(objfs_ctl_vol_record(rec, &id, "objfs1:vol:def:base/pvc-1", "pvc-1",
					      GIB, DIGEST, source, &p, &ctx), 0);
	objfs_kv_release(&ctx);
}

/* CreateVolume's check: name, parameters, source, capacity. */
static void test_matches_create(void **state)
{
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_ctl_vol_want w = { .name = "pvc-1", .digest = DIGEST, .source = "",
					.capacity = true };
	const char *key = "x";

	(void)state;
	make_rec(&rec, "");
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, &key), OBJFS_CTL_VOL_SAME);
	assert_null(key);
	w.required = GIB;
	w.limit = GIB;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_SAME);
	w.required = GIB + 1;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_CAPACITY);
	w.required = 0;
	w.limit = GIB - 1;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_CAPACITY);
	w.capacity = false;   /* not compared */
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_SAME);
	w.capacity = true;
	w.limit = 0;

	w.source = "volume:objfs1:vol:def:base/other";
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_SOURCE);
	w.source = "";
	w.digest = "ffff";
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_PARAMS);
	/* the first difference wins: the name before the parameters */
	w.name = "pvc-2";
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_NAME);
	w.name = "pvc-1";
	w.digest = DIGEST;

	/* deleted with onDelete=retain: matches nothing */
	assert_int_equal(objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_STATE,
						OBJFS_VOLREC_STATE_RETAINED), 0);
	assert_true(objfs_ctl_volrec_retained(&rec));
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_RETAINED);
	objfs_volrec_release(&rec);

	/* a record of a clone; a record without name, parameters or source */
	make_rec(&rec, "snapshot:objfs1:snap:def:base/s1");
	w.source = "snapshot:objfs1:snap:def:base/s1";
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_SAME);
	w.source = "";
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_SOURCE);
	objfs_volrec_release(&rec);
	rec.capacity_bytes = GIB;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_NAME);
	w.name = NULL;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_PARAMS);
	w.digest = NULL;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, NULL), OBJFS_CTL_VOL_SAME);
	objfs_volrec_release(&rec);
}

/* ValidateVolumeCapabilities' check: volume_context both ways, then the
 * parameters; name, source and capacity are not asked. */
static void test_matches_validate(void **state)
{
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_ctl_vol_ctx ctx[3] = {
		{ "source", "file:///x/base/pvc-1" },
		{ "mountOptions", "ro" },
		{ "extra", "1" },
	};
	struct objfs_ctl_vol_want w = { .context = ctx, .n_context = 2 };
	const char *key = NULL;

	(void)state;
	make_rec(&rec, "");
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, &key), OBJFS_CTL_VOL_SAME);
	w.digest = DIGEST;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, &key), OBJFS_CTL_VOL_SAME);

	/* a key the record does not hold, or holds with another value */
	w.n_context = 3;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, &key), OBJFS_CTL_VOL_CONTEXT);
	assert_string_equal(key, "extra");
	w.n_context = 2;
	ctx[1].value = "rw";
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, &key), OBJFS_CTL_VOL_CONTEXT);
	assert_string_equal(key, "mountOptions");
	ctx[1].value = "ro";

	/* a key of the record the request lacks (named without ctx.) */
	w.n_context = 1;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, &key), OBJFS_CTL_VOL_CONTEXT_LACKS);
	assert_string_equal(key, "mountOptions");
	/* no volume_context: not compared */
	w.n_context = 0;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, &key), OBJFS_CTL_VOL_SAME);
	assert_null(key);

	/* the context before the parameters */
	w.digest = "ffff";
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, &key), OBJFS_CTL_VOL_PARAMS);
	w.n_context = 3;
	assert_int_equal(objfs_ctl_vol_matches(&rec, &w, &key), OBJFS_CTL_VOL_CONTEXT);
	objfs_volrec_release(&rec);
}

/* The record CreateVolume writes from the parameters. */
static void test_record(void **state)
{
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_kv ctx = OBJFS_KV_INIT;
	struct objfs_csi_params p;
	struct objfs_id id;

	(void)state;
	memset(&p, 0, sizeof(p));
	memset(&id, 0, sizeof(id));
	snprintf(id.path, sizeof(id.path), "base/pvc-1");
	p.policy = OBJFS_CSI_ON_DELETE_ARCHIVE;
	assert_int_equal(objfs_ctl_vol_record(&rec, &id, "objfs1:vol:def:base/pvc-1", "pvc-1",
					      5 * GIB, DIGEST, "", &p, &ctx), 0);
	assert_int_equal(rec.capacity_bytes, 5 * GIB);
	assert_string_equal(rec.name, "pvc-1");
	assert_non_null(rec.created);
	assert_string_equal(objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ID),
			    "objfs1:vol:def:base/pvc-1");
	assert_string_equal(objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_PARAMS), DIGEST);
	assert_string_equal(objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_SOURCE), "");
	assert_string_equal(objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ON_DELETE), "archive");
	assert_string_equal(objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ARCHIVE),
			    OBJFS_ARCHIVE_DEFAULT);
	/* under the base prefix */
	assert_string_equal(objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ARCHIVE_TO),
			    "base/" OBJFS_ARCHIVE_DEFAULT "/pvc-1");
	assert_false(objfs_ctl_volrec_retained(&rec));
	objfs_volrec_release(&rec);

	p.policy = OBJFS_CSI_ON_DELETE_DELETE;
	assert_int_equal(objfs_ctl_vol_record(&rec, &id, "i", "n", 0, DIGEST, "", &p, &ctx), 0);
	assert_string_equal(objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ON_DELETE), "delete");
	assert_null(objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ARCHIVE));
	objfs_volrec_release(&rec);
}

/* The capacity of a new volume from its range and its content. */
static void test_capacity(void **state)
{
	struct objfs_rpc_status st;
	uint64_t cap = 0;

	(void)state;
	assert_int_equal(objfs_ctl_vol_capacity(0, 0, 0, &cap, &st), OBJFS_RPC_OK);
	assert_int_equal(cap, GIB);   /* OBJFS_CSI_DEFAULT_CAPACITY */
	assert_int_equal(objfs_ctl_vol_capacity(0, 1000, 0, &cap, &st), OBJFS_RPC_OK);
	assert_int_equal(cap, 1000);
	assert_int_equal(objfs_ctl_vol_capacity(3000, 0, 0, &cap, &st), OBJFS_RPC_OK);
	assert_int_equal(cap, 3000);
	/* grown to the content when the range leaves room */
	assert_int_equal(objfs_ctl_vol_capacity(0, 0, 2 * GIB, &cap, &st), OBJFS_RPC_OK);
	assert_int_equal(cap, 2 * GIB);
	assert_int_equal(objfs_ctl_vol_capacity(-1, 0, 0, &cap, &st),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_int_equal(objfs_ctl_vol_capacity(2000, 1000, 0, &cap, &st),
			 OBJFS_RPC_OUT_OF_RANGE);
	assert_non_null(strstr(st.msg, "exceeds limit_bytes"));
	assert_int_equal(objfs_ctl_vol_capacity(0, 1000, 2000, &cap, &st),
			 OBJFS_RPC_OUT_OF_RANGE);
	assert_non_null(strstr(st.msg, "limit_bytes 1000 is smaller than the source's 2000 bytes"));
	assert_int_equal(objfs_ctl_vol_capacity(1000, 0, 2000, &cap, &st),
			 OBJFS_RPC_OUT_OF_RANGE);
	assert_non_null(strstr(st.msg, "required_bytes 1000 is smaller"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_create),
		cmocka_unit_test(test_matches_validate),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_capacity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
