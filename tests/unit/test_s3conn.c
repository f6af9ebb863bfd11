/* Unit tests of the S3 connection (backend/s3conn.h) across the CSI
 * boundary: for each case, the connection the controller resolves and
 * writes into a volume context (what CreateVolume does) equals, field by
 * field, the one the node reads back from that context, turns into
 * objfs-mount's -o options, and objfs-mount parses back; the controller's
 * side completed with AWS's endpoint as its store stack completes it. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/s3conn.h"
#include "common/mountopts.h"
#include "csi.pb-c.h"
#include "csi/driver.h"
#include "csi/params.h"
#include "csi/roots.h"
#include "volume/kvtext.h"
#include "volume/volrec.h"

#define MAXKV 8

/* A pb string map built in place. */
struct map {
	Csi__V1__CreateVolumeRequest__ParametersEntry e[MAXKV];
	void *p[MAXKV];
	size_t n;
};

static void map_add(struct map *m, const char *k, const char *v)
{
	assert_true(m->n < MAXKV);
	csi__v1__create_volume_request__parameters_entry__init(&m->e[m->n]);
	m->e[m->n].key = (char *)k;
	m->e[m->n].value = (char *)v;
	m->p[m->n] = &m->e[m->n];
	m->n++;
}

/* k=v pairs, NULL-terminated, into m. */
static void map_fill(struct map *m, const char *const *kv)
{
	memset(m, 0, sizeof(*m));
	for (; kv != NULL && kv[0] != NULL; kv += 2)
		map_add(m, kv[0], kv[1]);
}

struct conn_case {
	const char *name;
	/* the plugin's configuration (controller and node alike) */
	const char *store_url;
	const char *plugin_endpoint, *plugin_region;
	bool plugin_path_style;
	const char *params[12];         /* StorageClass parameters */
	const char *secrets[8];         /* provisioner secrets */
	enum objfs_rpc_code controller; /* CreateVolume's code */
	const char *controller_msg;     /* a part of its message */
	/* expected, field by field */
	const char *endpoint, *region;
	bool path_style;
	const char *ctx_endpoint;       /* what the context holds */
};

static const struct conn_case cases[] = {
	{ .name = "parameters only", .store_url = "file:///nonexistent/objfs",
	  .params = { "bucket", "vols", "endpoint", "http://params:9000",
		      "region", "eu-west-3", "addressingStyle", "virtual", NULL },
	  .endpoint = "http://params:9000", .region = "eu-west-3", .path_style = false,
	  .ctx_endpoint = "http://params:9000" },
	{ .name = "secrets only", .store_url = "file:///nonexistent/objfs",
	  .plugin_endpoint = "http://plugin:1", .plugin_region = "plugin-1",
	  .plugin_path_style = true,
	  .params = { "bucket", "vols", NULL },
	  .secrets = { "endpoint", "https://secret:443", "region", "ap-south-2",
		       "addressingStyle", "virtual", NULL },
	  .endpoint = "https://secret:443", .region = "ap-south-2", .path_style = false,
	  .ctx_endpoint = "https://secret:443" },
	{ .name = "plugin defaults", .store_url = "s3://defbucket/base",
	  .plugin_endpoint = "http://plugin:8080", .plugin_region = "us-west-2",
	  .plugin_path_style = false,
	  .params = { "bucket", "vols", NULL },
	  .endpoint = "http://plugin:8080", .region = "us-west-2", .path_style = false,
	  .ctx_endpoint = "http://plugin:8080" },
	{ .name = "plugin defaults, local store", .store_url = "file:///nonexistent/objfs",
	  .plugin_endpoint = "http://plugin:8080",
	  .params = { "bucket", "vols", NULL },
	  .endpoint = "http://plugin:8080", .region = "us-east-1", .path_style = true,
	  .ctx_endpoint = "http://plugin:8080" },
	{ .name = "AWS region without endpoint", .store_url = "file:///nonexistent/objfs",
	  .params = { "bucket", "awsvols", "region", "eu-central-1", NULL },
	  .endpoint = "https://s3.eu-central-1.amazonaws.com", .region = "eu-central-1",
	  .path_style = false, .ctx_endpoint = "" },
	{ .name = "AWS, a bucket with a dot", .store_url = "file:///nonexistent/objfs",
	  .params = { "bucket", "my.vols", NULL },
	  .endpoint = "https://s3.us-east-1.amazonaws.com", .region = "us-east-1",
	  .path_style = true, .ctx_endpoint = "" },
	{ .name = "a bad style in the parameters", .store_url = "file:///nonexistent/objfs",
	  .params = { "bucket", "vols", "endpoint", "http://params:9000",
		      "addressingStyle", "sideways", NULL },
	  .controller = OBJFS_RPC_INVALID_ARGUMENT,
	  .controller_msg = "parameter addressingStyle must be path or virtual" },
	{ .name = "a bad style in the secrets", .store_url = "file:///nonexistent/objfs",
	  .params = { "bucket", "vols", "endpoint", "http://params:9000", NULL },
	  .secrets = { "addressingStyle", "Path", NULL },
	  .controller = OBJFS_RPC_INVALID_ARGUMENT,
	  .controller_msg = "secret addressingStyle must be path or virtual" },
};

static void plugin(struct objfs_csi *csi, const struct conn_case *c)
{
	memset(csi, 0, sizeof(*csi));
	csi->cfg.store.url = c->store_url;
	csi->cfg.store.s3.endpoint = c->plugin_endpoint;
	csi->cfg.store.s3.region = c->plugin_region;
	csi->cfg.store.s3.path_style = c->plugin_path_style;
}

/* CreateVolume's part: parameters, secrets, plugin; the context it writes
 * (kv, ctx.* keys as in the volume record); OK or the refusal. */
static enum objfs_rpc_code controller_side(const struct objfs_csi *csi,
					   const struct conn_case *c,
					   struct objfs_s3_conn *conn, struct objfs_kv *kv,
					   struct objfs_rpc_status *st)
{
	struct objfs_csi_params p;
	struct map params, secrets;
	enum objfs_rpc_code code;

	map_fill(&params, c->params);
	map_fill(&secrets, c->secrets);
	code = objfs_csi_params_parse(params.p, params.n, &p, st);
	if (code != OBJFS_RPC_OK)
		return code;
	/* objfs_ctl_vol_begin */
	code = objfs_csi_conn_for_create(csi, &p, secrets.p, secrets.n, conn, st);
	if (code != OBJFS_RPC_OK)
		return code;
	/* context_record */
	assert_int_equal(objfs_s3_conn_write(conn, objfs_csi_kv_conn_set, kv), 0);
	return OBJFS_RPC_OK;
}

static void test_conn_table(void **state)
{
	size_t i, k;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct conn_case *c = &cases[i];
		struct objfs_kv kv = OBJFS_KV_INIT;
		struct objfs_s3_conn ctl = OBJFS_S3_CONN_INIT, node, back = OBJFS_S3_CONN_INIT;
		struct objfs_mount_opts mo = OBJFS_MOUNT_OPTS_INIT, parsed;
		struct objfs_s3_config s3;
		struct objfs_rpc_status st;
		struct objfs_csi csi;
		struct map ctx;
		char opts[2048] = "", why[160] = "";
		const char *bucket = c->params[1];
		enum objfs_rpc_code code;

		print_message("case: %s\n", c->name);
		plugin(&csi, c);
		code = controller_side(&csi, c, &ctl, &kv, &st);
		assert_int_equal(code, c->controller);
		if (code != OBJFS_RPC_OK) {
			assert_non_null(strstr(st.msg, c->controller_msg));
			objfs_kv_release(&kv);
			continue;
		}
		/* the three keys, always, under the one set of names */
		assert_int_equal(kv.n, 3);
		assert_string_equal(objfs_kv_get(&kv, OBJFS_VOLREC_CTX OBJFS_S3_CONN_KEY_ENDPOINT),
				    c->ctx_endpoint);
		/* the CO's volume context: ctx.KEY as KEY */
		memset(&ctx, 0, sizeof(ctx));
		for (k = 0; k < kv.n; k++)
			map_add(&ctx, kv.items[k].key + strlen(OBJFS_VOLREC_CTX),
				kv.items[k].value);
		/* the controller's store: AWS's endpoint when none */
		assert_int_equal(objfs_s3_conn_aws(&ctl, bucket), 0);
		memset(&s3, 0, sizeof(s3));
		objfs_s3_conn_to_store(&ctl, &s3);

		/* NodeStageVolume: the context, the -o options, objfs-mount */
		assert_int_equal(objfs_csi_conn_from_context(&csi, ctx.p, ctx.n, bucket,
							     "vol-1", &node, &st),
				 OBJFS_RPC_OK);
		objfs_s3_conn_to_mount_opts(&node, &mo);
		assert_int_equal(objfs_mount_opts_build(&mo, opts, sizeof(opts)), 0);
		assert_int_equal(objfs_mount_opts_parse(opts, 0, &parsed, why, sizeof(why)), 0);
		assert_int_equal(objfs_s3_conn_from_mount_opts(&back, &parsed), 0);

		/* field by field */
		assert_string_equal(ctl.endpoint, c->endpoint);
		assert_string_equal(back.endpoint, ctl.endpoint);
		assert_string_equal(s3.endpoint, back.endpoint);
		assert_string_equal(ctl.region, c->region);
		assert_string_equal(back.region, ctl.region);
		assert_int_equal(ctl.path_style, c->path_style);
		assert_int_equal(back.path_style, ctl.path_style);
		assert_int_equal(s3.path_style, back.path_style);
		objfs_mount_opts_release(&parsed);
		objfs_kv_release(&kv);
	}
}

/* A context the node cannot take (written by hand): named, refused. */
static void test_node_refuses(void **state)
{
	static const char *const bad_style[] = { "source", "s3://vols/v",
		"addressingStyle", "sideways", NULL };
	static const char *const bad_endpoint[] = { "source", "s3://vols/v",
		"endpoint", "http://a b", NULL };
	static const char *const bad_region[] = { "source", "s3://vols/v",
		"region", "eu,west", NULL };
	static const char *const bad_aws[] = { "source", "s3://vols/v",
		"region", "EU_WEST", NULL };
	struct objfs_s3_conn conn;
	struct objfs_rpc_status st;
	struct objfs_csi csi;
	struct map ctx;

	(void)state;
	plugin(&csi, &cases[0]);
	map_fill(&ctx, bad_style);
	assert_int_equal(objfs_csi_conn_from_context(&csi, ctx.p, ctx.n, "vols", "v", &conn, &st),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_string_equal(st.msg, "volume_context addressingStyle must be path or virtual, not \"sideways\"");
	map_fill(&ctx, bad_endpoint);
	assert_int_equal(objfs_csi_conn_from_context(&csi, ctx.p, ctx.n, "vols", "v", &conn, &st),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_string_equal(st.msg, "volume_context endpoint \"http://a b\" is not an http(s) URL");
	map_fill(&ctx, bad_region);
	assert_int_equal(objfs_csi_conn_from_context(&csi, ctx.p, ctx.n, "vols", "v", &conn, &st),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_string_equal(st.msg, "volume_context region \"eu,west\" is not valid");
	map_fill(&ctx, bad_aws);
	assert_int_equal(objfs_csi_conn_from_context(&csi, ctx.p, ctx.n, "vols", "v", &conn, &st),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_string_equal(st.msg, "volume v: region \"EU_WEST\" cannot name an AWS endpoint");
}

/* The parameters' digest text is the one the first volumes were made
 * with: a repeated CreateVolume of an old volume still matches. */
static void test_digest_text(void **state)
{
	struct objfs_s3_conn c = OBJFS_S3_CONN_INIT;
	char buf[256];

	(void)state;
	assert_int_equal(objfs_s3_conn_digest_text(&c, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "endpoint=\nregion=\naddressingStyle=\n");
	snprintf(c.endpoint, sizeof(c.endpoint), "http://e");
	c.path_style = false;
	c.set = OBJFS_S3_CONN_HAS_ENDPOINT | OBJFS_S3_CONN_HAS_STYLE;
	assert_int_equal(objfs_s3_conn_digest_text(&c, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "endpoint=http://e\nregion=\naddressingStyle=virtual\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_table),
		cmocka_unit_test(test_node_refuses),
		cmocka_unit_test(test_digest_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
