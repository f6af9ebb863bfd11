/*
 * Unit tests of the CSI routing table, the dispatcher and the Identity
 * handlers, called directly (no socket), over a stub store whose list()
 * answers what the test chooses.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/metrics.h"
#include "csi.pb-c.h"
#include "csi/driver.h"
#include "csi/pb.h"
#include "csi/rpc.h"

/* ---- a stub leaf store: list() returns stub_list_err -------------------- */

struct stub {
	int list_err;
	int list_calls;
};

static int stub_list(struct objfs_store *s, const struct objfs_list_req *req,
		     struct objfs_list_page *page)
{
	struct stub *st = s->ctx;

	st->list_calls++;
	assert_int_equal(req->max_keys, 1);
	return st->list_err;
}

static void stub_destroy(struct objfs_store *s)
{
	free(s);
}

static const struct objfs_store_ops stub_ops = {
	.name = "stub",
	.list = stub_list,
	.destroy = stub_destroy,
};

static struct objfs_store *stub_store(struct stub *st)
{
	struct objfs_store *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->ops = &stub_ops;
	s->ctx = st;
	return s;
}

static struct objfs_csi *make_driver(enum objfs_csi_mode mode, struct stub *st)
{
	struct objfs_csi_config cfg;
	struct objfs_csi *csi = NULL;

	memset(&cfg, 0, sizeof(cfg));
	cfg.mode = mode;
	cfg.node_id = "node-1";
	cfg.version = "9.9.9-test";
	assert_int_equal(objfs_csi_create(&cfg, st != NULL ? stub_store(st) : NULL,
					  NULL, &csi), 0);
	return csi;
}

/* Packs msg, dispatches it to path, unpacks the answer as desc. */
static enum objfs_rpc_code call(struct objfs_csi *csi, const char *path,
				const ProtobufCMessage *msg,
				const ProtobufCMessageDescriptor *desc,
				ProtobufCMessage **resp, struct objfs_rpc_status *st)
{
	uint8_t buf[4096];
	uint8_t *out = NULL;
	size_t len = protobuf_c_message_pack(msg, buf);
	size_t out_len = 0;
	enum objfs_rpc_code code;

	code = objfs_rpc_dispatch(csi->methods, csi->n_methods, csi, path, buf,
				  len, &out, &out_len, st);
	*resp = NULL;
	if (code == OBJFS_RPC_OK) {
		*resp = protobuf_c_message_unpack(desc, NULL, out_len, out);
		assert_non_null(*resp);
	} else {
		assert_null(out);
	}
	free(out);
	return code;
}

static void test_table_has_every_csi_method(void **state)
{
	struct objfs_csi *csi = make_driver(OBJFS_CSI_MODE_ALL, NULL);
	const ProtobufCServiceDescriptor *svcs[] = {
		&csi__v1__identity__descriptor, &csi__v1__controller__descriptor,
		&csi__v1__group_controller__descriptor,
		&csi__v1__snapshot_metadata__descriptor, &csi__v1__node__descriptor,
	};
	size_t i, j, total = 0;
	char path[256];

	(void)state;
	for (i = 0; i < sizeof(svcs) / sizeof(svcs[0]); i++) {
		for (j = 0; j < svcs[i]->n_methods; j++) {
			snprintf(path, sizeof(path), "/%s/%s", svcs[i]->name,
				 svcs[i]->methods[j].name);
			assert_non_null(objfs_rpc_find(csi->methods, csi->n_methods, path));
			total++;
		}
	}
	assert_int_equal(total, csi->n_methods);
	assert_int_equal(total, 32); /* 3 + 15 + 4 + 2 + 8 in CSI v1.12 */
	assert_true(objfs_csi_serves(csi, "/csi.v1.Identity/Probe"));
	assert_false(objfs_csi_serves(csi, "/csi.v1.Controller/ControllerPublishVolume"));
	objfs_csi_destroy(csi);
}

static void test_dispatch_errors(void **state)
{
	struct objfs_csi *csi = make_driver(OBJFS_CSI_MODE_ALL, NULL);
	struct objfs_rpc_status st;
	uint8_t *out = (uint8_t *)1;
	size_t out_len = 7;
	static const uint8_t garbage[] = { 0xff, 0xff, 0xff };

	(void)state;
	assert_int_equal(objfs_rpc_dispatch(csi->methods, csi->n_methods, csi,
					    "/csi.v1.Identity/Nope", NULL, 0,
					    &out, &out_len, &st),
			 OBJFS_RPC_UNIMPLEMENTED);
	assert_null(out);
	assert_int_equal(out_len, 0);
	assert_non_null(strstr(st.msg, "unknown method"));

	assert_int_equal(objfs_rpc_dispatch(csi->methods, csi->n_methods, csi,
					    "/csi.v1.Controller/ControllerPublishVolume",
					    NULL, 0, &out, &out_len, &st),
			 OBJFS_RPC_UNIMPLEMENTED);
	assert_non_null(strstr(st.msg, "not implemented"));

	assert_int_equal(objfs_rpc_dispatch(csi->methods, csi->n_methods, csi,
					    "/csi.v1.Identity/GetPluginInfo",
					    garbage, sizeof(garbage), &out, &out_len, &st),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "csi.v1.GetPluginInfoRequest"));
	assert_int_equal(st.code, OBJFS_RPC_INVALID_ARGUMENT);
	objfs_csi_destroy(csi);
}

/* A handler that answers OK and gives no reply. */
static enum objfs_rpc_code no_reply(void *ctx, const ProtobufCMessage *req,
				    ProtobufCMessage **resp,
				    struct objfs_rpc_status *st)
{
	(void)ctx;
	(void)req;
	(void)resp;
	(void)st;
	return OBJFS_RPC_OK;
}

/* The dispatcher packs the empty reply of a method whose reply has no
 * fields; a reply with fields must come from the handler. */
static void test_dispatch_packs_empty_reply(void **state)
{
	static const struct objfs_rpc_method table[] = {
		{ "/csi.v1.Node/NodeUnpublishVolume",
		  &csi__v1__node_unpublish_volume_request__descriptor,
		  &csi__v1__node_unpublish_volume_response__descriptor,
		  no_reply },
		{ "/csi.v1.Identity/GetPluginInfo",
		  &csi__v1__get_plugin_info_request__descriptor,
		  &csi__v1__get_plugin_info_response__descriptor, no_reply },
		{ "/csi.v1.Identity/Probe",
		  &csi__v1__probe_request__descriptor, NULL, no_reply },
	};
	struct objfs_rpc_status st;
	uint8_t *out = NULL;
	size_t out_len = 7;
	ProtobufCMessage *m;

	(void)state;
	assert_int_equal(objfs_rpc_dispatch(table, 3, NULL,
					    "/csi.v1.Node/NodeUnpublishVolume",
					    NULL, 0, &out, &out_len, &st),
			 OBJFS_RPC_OK);
	assert_non_null(out);
	assert_int_equal(out_len, 0);
	m = protobuf_c_message_unpack(
		&csi__v1__node_unpublish_volume_response__descriptor, NULL,
		out_len, out);
	assert_non_null(m);
	protobuf_c_message_free_unpacked(m, NULL);
	free(out);
	out = NULL;
	assert_int_equal(objfs_rpc_dispatch(table, 3, NULL,
					    "/csi.v1.Identity/GetPluginInfo",
					    NULL, 0, &out, &out_len, &st),
			 OBJFS_RPC_INTERNAL);
	assert_null(out);
	assert_non_null(strstr(st.msg, "returned no response"));
	assert_int_equal(objfs_rpc_dispatch(table, 3, NULL,
					    "/csi.v1.Identity/Probe",
					    NULL, 0, &out, &out_len, &st),
			 OBJFS_RPC_INTERNAL);
	assert_null(out);
}

/* Packs m into buf, then writes the byte `with` over the '#' of every
 * occurrence of mark: protobuf-c packs strings with strlen(), so a NUL
 * inside one is made on the wire, as a hostile client sends it. */
static size_t pack_poisoned(const ProtobufCMessage *m, uint8_t *buf, size_t cap,
			    const char *mark, char with)
{
	size_t len = protobuf_c_message_get_packed_size(m), i, ml = strlen(mark);
	size_t at = (size_t)(strchr(mark, '#') - mark);

	assert_true(len <= cap);
	protobuf_c_message_pack(m, buf);
	for (i = 0; i + ml <= len; i++)
		if (memcmp(buf + i, mark, ml) == 0)
			buf[i + at] = (uint8_t)with;
	return len;
}

static void test_strings_checked_on_the_wire(void **state)
{
	Csi__V1__CreateVolumeRequest rq = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__VolumeCapability cap = CSI__V1__VOLUME_CAPABILITY__INIT;
	Csi__V1__VolumeCapability cap2 = CSI__V1__VOLUME_CAPABILITY__INIT;
	Csi__V1__VolumeCapability__MountVolume mnt =
		CSI__V1__VOLUME_CAPABILITY__MOUNT_VOLUME__INIT;
	Csi__V1__VolumeCapability *caps[] = { &cap, &cap2 };
	char *flags[] = { "ro", "x#y" };
	Csi__V1__CreateVolumeRequest__ParametersEntry pe =
		CSI__V1__CREATE_VOLUME_REQUEST__PARAMETERS_ENTRY__INIT;
	Csi__V1__CreateVolumeRequest__SecretsEntry se =
		CSI__V1__CREATE_VOLUME_REQUEST__SECRETS_ENTRY__INIT;
	Csi__V1__CreateVolumeRequest__ParametersEntry *pes[] = { &pe };
	Csi__V1__CreateVolumeRequest__SecretsEntry *ses[] = { &se };
	const ProtobufCMessageDescriptor *d = &csi__v1__create_volume_request__descriptor;
	static uint8_t buf[80000];
	char why[512], *big;
	size_t len;

	(void)state;
	rq.name = "vol";
	cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
	cap.mount = &mnt;
	cap2.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
	cap2.mount = &mnt;
	mnt.n_mount_flags = 2;
	mnt.mount_flags = flags;
	rq.n_volume_capabilities = 2;
	rq.volume_capabilities = caps;
	pe.key = "bucket";
	pe.value = "b#c";
	rq.n_parameters = 1;
	rq.parameters = pes;
	se.key = "caBundle";
	se.value = "-----BEGIN\n\tAAAA\r\n-----END\n";
	rq.n_secrets = 1;
	rq.secrets = ses;

	/* all plain: a secret may span lines */
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "#", '#');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), 0);

	/* a NUL in a repeated field of a sub-message of a repeated field */
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "x#y", '\0');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), EINVAL);
	assert_string_equal(why, "volume_capabilities[0].mount.mount_flags[1] holds a NUL byte");
	/* the unpacked request would have held "x": the cut the check stops */
	flags[1] = "ok";

	len = pack_poisoned(&rq.base, buf, sizeof(buf), "b#c", '\n');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), EINVAL);
	assert_string_equal(why, "parameters[\"bucket\"] holds a control character");
	pe.value = "bc";

	pe.key = "bu#cket";
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "u#c", '\x7f');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), EINVAL);
	assert_string_equal(why, "parameters: a key holds a control character");
	pe.key = "bucket";

	/* a secret's value holds no other control character */
	se.value = "a#b";
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "a#b", '\x01');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), EINVAL);
	assert_string_equal(why, "secrets[\"caBundle\"] holds a control character");
	se.value = "ok";

	/* UTF-8: a plain accent passes, a lone continuation byte or an
	 * overlong slash does not */
	rq.name = "caf\xc3\xa9";
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "#", '#');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), 0);
	rq.name = "a\x80";
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "#", '#');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), EINVAL);
	assert_string_equal(why, "name is not valid UTF-8");
	rq.name = "a\xc0\xaf";
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "#", '#');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), EINVAL);

	/* sizes: 4096 bytes pass, one more does not; a secret may be longer */
	big = malloc(OBJFS_PB_SECRET_MAX + 2);
	assert_non_null(big);
	memset(big, 'x', OBJFS_PB_SECRET_MAX + 1);
	big[OBJFS_PB_STRING_MAX] = '\0';
	rq.name = big;
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "#", '#');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), 0);
	big[OBJFS_PB_STRING_MAX] = 'x';
	big[OBJFS_PB_STRING_MAX + 1] = '\0';
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "#", '#');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), EINVAL);
	assert_string_equal(why, "name is longer than 4096 bytes");
	rq.name = "vol";
	big[OBJFS_PB_STRING_MAX + 1] = 'x';
	big[OBJFS_PB_SECRET_MAX] = '\0';
	se.value = big;
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "#", '#');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), 0);
	big[OBJFS_PB_SECRET_MAX] = 'x';
	big[OBJFS_PB_SECRET_MAX + 1] = '\0';
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "#", '#');
	assert_int_equal(objfs_pb_check_strings(d, buf, len, why, sizeof(why)), EINVAL);
	assert_string_equal(why, "secrets[\"caBundle\"] is longer than 65536 bytes");
	free(big);

	/* cut short inside a string: refused, nothing read past the end */
	se.value = "ok";
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "#", '#');
	assert_int_equal(objfs_pb_check_strings(d, buf, len - 1, why, sizeof(why)), EINVAL);
}

/* The dispatcher refuses a cut string before the handler: DeleteVolume of
 * "id\0x" never reaches DeleteVolume (which would act on "id"). */
static void test_dispatch_refuses_nul(void **state)
{
	struct objfs_csi *csi = make_driver(OBJFS_CSI_MODE_ALL, NULL);
	Csi__V1__DeleteVolumeRequest rq = CSI__V1__DELETE_VOLUME_REQUEST__INIT;
	struct objfs_rpc_status st;
	uint8_t buf[128], *out = NULL;
	size_t len, out_len = 0;

	(void)state;
	rq.volume_id = "objfs1:vol:def:a#b";
	len = pack_poisoned(&rq.base, buf, sizeof(buf), "a#b", '\0');
	assert_int_equal(objfs_rpc_dispatch(csi->methods, csi->n_methods, csi,
					    "/csi.v1.Controller/DeleteVolume",
					    buf, len, &out, &out_len, &st),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_null(out);
	assert_string_equal(st.msg, "volume_id holds a NUL byte");
	objfs_csi_destroy(csi);
}

static void test_mode_filters_services(void **state)
{
	struct objfs_csi *ctrl = make_driver(OBJFS_CSI_MODE_CONTROLLER, NULL);
	struct objfs_csi *node = make_driver(OBJFS_CSI_MODE_NODE, NULL);
	const struct objfs_rpc_method *m;
	size_t i;

	(void)state;
	for (i = 0; i < node->n_methods; i++) {
		m = &node->methods[i];
		if (strncmp(m->path, "/csi.v1.Controller/", 19) == 0)
			assert_null(m->fn);
	}
	for (i = 0; i < ctrl->n_methods; i++) {
		m = &ctrl->methods[i];
		if (strncmp(m->path, "/csi.v1.Node/", 13) == 0)
			assert_null(m->fn);
	}
	assert_true(objfs_csi_serves(ctrl, "/csi.v1.Identity/GetPluginInfo"));
	assert_true(objfs_csi_serves(node, "/csi.v1.Identity/GetPluginInfo"));
	objfs_csi_destroy(ctrl);
	objfs_csi_destroy(node);
}

static void test_plugin_info(void **state)
{
	struct objfs_csi *csi = make_driver(OBJFS_CSI_MODE_ALL, NULL);
	Csi__V1__GetPluginInfoRequest req = CSI__V1__GET_PLUGIN_INFO_REQUEST__INIT;
	Csi__V1__GetPluginInfoResponse *resp;
	struct objfs_rpc_status st;

	(void)state;
	assert_int_equal(call(csi, "/csi.v1.Identity/GetPluginInfo", &req.base,
			      &csi__v1__get_plugin_info_response__descriptor,
			      (ProtobufCMessage **)&resp, &st), OBJFS_RPC_OK);
	assert_string_equal(resp->name, "objfs.csi.io");
	assert_string_equal(resp->vendor_version, "9.9.9-test");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	objfs_csi_destroy(csi);
}

static void test_capabilities_follow_table(void **state)
{
	struct objfs_csi *csi = make_driver(OBJFS_CSI_MODE_NODE, NULL);
	Csi__V1__GetPluginCapabilitiesRequest req = CSI__V1__GET_PLUGIN_CAPABILITIES_REQUEST__INIT;
	Csi__V1__GetPluginCapabilitiesResponse *resp;
	struct objfs_rpc_status st;
	size_t i;

	(void)state;
	assert_int_equal(call(csi, "/csi.v1.Identity/GetPluginCapabilities", &req.base,
			      &csi__v1__get_plugin_capabilities_response__descriptor,
			      (ProtobufCMessage **)&resp, &st), OBJFS_RPC_OK);
	/* A node-only plugin never claims the controller service. */
	for (i = 0; i < resp->n_capabilities; i++) {
		if (resp->capabilities[i]->type_case == CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE)
			assert_int_not_equal(resp->capabilities[i]->service->type,
					     CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__CONTROLLER_SERVICE);
	}
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	objfs_csi_destroy(csi);
}

static void test_probe(void **state)
{
	struct stub stub = { 0, 0 };
	struct objfs_csi *csi = make_driver(OBJFS_CSI_MODE_ALL, &stub);
	struct objfs_csi *none = make_driver(OBJFS_CSI_MODE_ALL, NULL);
	Csi__V1__ProbeRequest req = CSI__V1__PROBE_REQUEST__INIT;
	Csi__V1__ProbeResponse *resp;
	struct objfs_rpc_status st;

	(void)state;
	assert_int_equal(call(csi, "/csi.v1.Identity/Probe", &req.base,
			      &csi__v1__probe_response__descriptor,
			      (ProtobufCMessage **)&resp, &st), OBJFS_RPC_OK);
	assert_non_null(resp->ready);
	assert_true(resp->ready->value);
	assert_int_equal(stub.list_calls, 1);
	protobuf_c_message_free_unpacked(&resp->base, NULL);

	/* The store does not answer: not ready, with the reason. */
	stub.list_err = ECONNREFUSED;
	assert_int_equal(call(csi, "/csi.v1.Identity/Probe", &req.base,
			      &csi__v1__probe_response__descriptor,
			      (ProtobufCMessage **)&resp, &st),
			 OBJFS_RPC_FAILED_PRECONDITION);
	assert_non_null(strstr(st.msg, "Connection refused"));

	assert_int_equal(call(none, "/csi.v1.Identity/Probe", &req.base,
			      &csi__v1__probe_response__descriptor,
			      (ProtobufCMessage **)&resp, &st),
			 OBJFS_RPC_FAILED_PRECONDITION);
	assert_non_null(strstr(st.msg, "no object store"));
	objfs_csi_destroy(csi);
	objfs_csi_destroy(none);
}

static void test_errno_mapping(void **state)
{
	(void)state;
	assert_int_equal(objfs_rpc_code_from_errno(0), OBJFS_RPC_OK);
	assert_int_equal(objfs_rpc_code_from_errno(ENOENT), OBJFS_RPC_NOT_FOUND);
	assert_int_equal(objfs_rpc_code_from_errno(EINVAL), OBJFS_RPC_INVALID_ARGUMENT);
	assert_int_equal(objfs_rpc_code_from_errno(EEXIST), OBJFS_RPC_ALREADY_EXISTS);
	assert_int_equal(objfs_rpc_code_from_errno(EACCES), OBJFS_RPC_PERMISSION_DENIED);
	assert_int_equal(objfs_rpc_code_from_errno(ENOSPC), OBJFS_RPC_RESOURCE_EXHAUSTED);
	assert_int_equal(objfs_rpc_code_from_errno(ECONNREFUSED), OBJFS_RPC_UNAVAILABLE);
	assert_int_equal(objfs_rpc_code_from_errno(ETIMEDOUT), OBJFS_RPC_DEADLINE_EXCEEDED);
	assert_int_equal(objfs_rpc_code_from_errno(EBUSY), OBJFS_RPC_ABORTED);
	assert_int_equal(objfs_rpc_code_from_errno(ENOMEM), OBJFS_RPC_INTERNAL);
	assert_string_equal(objfs_rpc_code_name(OBJFS_RPC_ABORTED), "ABORTED");
	assert_string_equal(objfs_rpc_code_name((enum objfs_rpc_code)99), "UNKNOWN");
}

static void test_mode_parse(void **state)
{
	enum objfs_csi_mode m;

	(void)state;
	assert_int_equal(objfs_csi_mode_parse("controller", &m), 0);
	assert_int_equal(m, OBJFS_CSI_MODE_CONTROLLER);
	assert_int_equal(objfs_csi_mode_parse("node", &m), 0);
	assert_int_equal(m, OBJFS_CSI_MODE_NODE);
	assert_int_equal(objfs_csi_mode_parse("all", &m), 0);
	assert_int_equal(m, OBJFS_CSI_MODE_ALL);
	assert_int_equal(objfs_csi_mode_parse("both", &m), EINVAL);
	assert_int_equal(objfs_csi_mode_parse(NULL, &m), EINVAL);
}

/* The transport reports each call; the driver counts it by method and
 * code, an unknown path as "unknown", and renders the histogram. */
static void test_call_metrics(void **state)
{
	struct objfs_metrics *reg = NULL;
	struct objfs_csi_config cfg;
	struct objfs_csi *csi = NULL;
	struct objfs_buf out = OBJFS_BUF_INIT(1 << 20, EFBIG);

	(void)state;
	assert_int_equal(objfs_metrics_create(&reg), 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.mode = OBJFS_CSI_MODE_CONTROLLER;
	cfg.metrics = reg;
	assert_int_equal(objfs_csi_create(&cfg, NULL, NULL, &csi), 0);
	objfs_csi_observe_call(csi, "/csi.v1.Identity/Probe", OBJFS_RPC_OK, 2000000);
	objfs_csi_observe_call(csi, "/csi.v1.Identity/Probe", OBJFS_RPC_OK, 3000000);
	objfs_csi_observe_call(csi, "/csi.v1.Controller/CreateVolume",
			       OBJFS_RPC_INVALID_ARGUMENT, 100000);
	objfs_csi_observe_call(csi, "/no.such/Method", OBJFS_RPC_UNIMPLEMENTED, 1000);
	assert_int_equal(objfs_csi_metrics_render(csi, &out), 0);
	assert_non_null(strstr(out.p, "# TYPE objfs_csi_call_duration_seconds histogram\n"));
	assert_non_null(strstr(out.p,
		"objfs_csi_call_duration_seconds_count{method=\"/csi.v1.Identity/Probe\",code=\"OK\"} 2\n"));
	assert_non_null(strstr(out.p,
		"objfs_csi_call_duration_seconds_sum{method=\"/csi.v1.Identity/Probe\",code=\"OK\"} 0.005\n"));
	assert_non_null(strstr(out.p,
		"objfs_csi_call_duration_seconds_count{method=\"/csi.v1.Controller/CreateVolume\",code=\"INVALID_ARGUMENT\"} 1\n"));
	assert_non_null(strstr(out.p,
		"objfs_csi_call_duration_seconds_count{method=\"unknown\",code=\"UNIMPLEMENTED\"} 1\n"));
	/* sparse: a method never called is not there */
	assert_null(strstr(out.p, "NodeStageVolume"));
	objfs_buf_release(&out);
	objfs_csi_destroy(csi);
	objfs_metrics_destroy(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_has_every_csi_method),
		cmocka_unit_test(test_dispatch_errors),
		cmocka_unit_test(test_dispatch_packs_empty_reply),
		cmocka_unit_test(test_strings_checked_on_the_wire),
		cmocka_unit_test(test_dispatch_refuses_nul),
		cmocka_unit_test(test_mode_filters_services),
		cmocka_unit_test(test_plugin_info),
		cmocka_unit_test(test_capabilities_follow_table),
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_errno_mapping),
		cmocka_unit_test(test_mode_parse),
		cmocka_unit_test(test_call_metrics),
	};
	return cmocka_run_group_tests_name("csi_identity", tests, NULL, NULL);
}
