/*
 * Unit tests of the CSI Controller service, called through the dispatcher
 * (no socket) over real local stores in a temp dir: the default store is a
 * local store under a fault layer; "S3 buckets" named by parameters are
 * local stores too, opened by an injected factory that reads the test's
 * directory from the endpoint (http://test<DIR>) and checks the keys.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/fault.h"
#include "csi.pb-c.h"
#include "csi/controller.h"
#include "csi/driver.h"
#include "volume/kvtext.h"
#include "volume/layout.h"
#include "volume/volrec.h"
#include "csi/pb.h"
#include "csi/rpc.h"
#include "csi/volid.h"

#define GIB (1ULL << 30)
#define TEST_AK "AKIDTEST"
#define TEST_SK "sEcReT-never-in-messages-0123456789"

struct env {
	char dir[256];
	char url[420];
	char state[300];
	char endpoint[420];
	struct objfs_store *local;      /* the default store's leaf (owned by csi) */
	struct objfs_fault *fault;
	struct objfs_csi *csi;
};

/* The injected factory: s3://BUCKET -> local store DIR/buckets/BUCKET,
 * where DIR comes from the endpoint; wrong keys are EACCES. */
static int test_store_open(const struct objfs_store_config *cfg,
			   struct objfs_log *log, struct objfs_store **out)
{
	char path[600];
	const char *ep = cfg->s3.endpoint;

	if (ep == NULL || strncmp(ep, "http://test/", 12) != 0 ||
	    strncmp(cfg->url, "s3://", 5) != 0)
		return ECONNREFUSED;
	if (cfg->s3.access_key == NULL || strcmp(cfg->s3.access_key, TEST_AK) != 0 ||
	    cfg->s3.secret_key == NULL || strcmp(cfg->s3.secret_key, TEST_SK) != 0)
		return EACCES;
	if (cfg->s3.ca_file != NULL) {
		FILE *f = fopen(cfg->s3.ca_file, "r");
		char line[64] = "";

		if (f == NULL)
			return EINVAL;
		if (fgets(line, sizeof(line), f) == NULL)
			line[0] = '\0';
		fclose(f);
		if (strncmp(line, "-----BEGIN CERTIFICATE-----", 27) != 0)
			return EINVAL;
	}
	snprintf(path, sizeof(path), "%s/buckets/%s", ep + 11, cfg->url + 5);
	return objfs_local_store_create(path, log, out);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct objfs_csi_config cfg;
	struct objfs_store *fs = NULL;
	char path[400];

	assert_non_null(e);
	snprintf(e->dir, sizeof(e->dir), "/tmp/objfs-ctl-XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(path, sizeof(path), "%s/buckets", e->dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/default", e->dir);
	snprintf(e->url, sizeof(e->url), "file://%s", path);
	snprintf(e->endpoint, sizeof(e->endpoint), "http://test%s", e->dir);
	assert_int_equal(objfs_local_store_create(path, NULL, &e->local), 0);
	assert_int_equal(objfs_fault_store_create(e->local, &fs, &e->fault), 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.mode = OBJFS_CSI_MODE_CONTROLLER;
	cfg.version = "9.9.9-test";
	cfg.store.url = e->url;
	cfg.store_open = test_store_open;
	snprintf(e->state, sizeof(e->state), "%s/state", e->dir);
	assert_int_equal(mkdir(e->state, 0700), 0);
	cfg.state_dir = e->state;
	assert_int_equal(objfs_csi_create(&cfg, fs, NULL, &e->csi), 0);
	objfs_csi_controller_tune(e->csi->controller, 3, 4);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	char cmd[400];

	objfs_csi_destroy(e->csi);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	assert_int_equal(system(cmd), 0);
	free(e);
	return 0;
}

/* ---- calling ------------------------------------------------------------ */

static enum objfs_rpc_code call(struct env *e, const char *method,
				const ProtobufCMessage *msg,
				const ProtobufCMessageDescriptor *desc,
				void *resp, struct objfs_rpc_status *st)
{
	char path[128];
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf = malloc(len + 1);
	uint8_t *out = NULL;
	size_t out_len = 0;
	enum objfs_rpc_code code;

	assert_non_null(buf);
	protobuf_c_message_pack(msg, buf);
	snprintf(path, sizeof(path), "/csi.v1.Controller/%s", method);
	memset(st, 0, sizeof(*st));
	code = objfs_rpc_dispatch(e->csi->methods, e->csi->n_methods, e->csi, path,
				  buf, len, &out, &out_len, st);
	free(buf);
	if (resp != NULL)
		*(ProtobufCMessage **)resp = NULL;
	if (code == OBJFS_RPC_OK) {
		assert_non_null(out);
		if (resp != NULL) {
			*(ProtobufCMessage **)resp = protobuf_c_message_unpack(desc, NULL, out_len, out);
			assert_non_null(*(ProtobufCMessage **)resp);
		}
	} else {
		assert_null(out);
		assert_true(st->msg[0] != '\0');
		assert_null(strstr(st->msg, TEST_SK));
	}
	free(out);
	return code;
}

static void pbfree(void *m)
{
	if (m != NULL)
		protobuf_c_message_free_unpacked(m, NULL);
}

/* A request map built on the stack. */
struct kvs {
	struct objfs_pb_map_entry e[8];
	struct objfs_pb_map_entry *p[8];
	size_t n;
};

static void kvs_add(struct kvs *m, const ProtobufCMessageDescriptor *d,
		    const char *k, const char *v)
{
	protobuf_c_message_init(d, &m->e[m->n]);
	m->e[m->n].key = (char *)k;
	m->e[m->n].value = (char *)v;
	m->p[m->n] = &m->e[m->n];
	m->n++;
}

/* Capabilities: a mount (MULTI_NODE_MULTI_WRITER) and optionally a block. */
struct caps {
	Csi__V1__VolumeCapability cap[2];
	Csi__V1__VolumeCapability *p[2];
	Csi__V1__VolumeCapability__AccessMode mode[2];
	Csi__V1__VolumeCapability__MountVolume mount;
	Csi__V1__VolumeCapability__BlockVolume block;
	size_t n;
};

static void caps_init(struct caps *c, bool block)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	csi__v1__volume_capability__mount_volume__init(&c->mount);
	csi__v1__volume_capability__block_volume__init(&c->block);
	for (i = 0; i < 2; i++) {
		csi__v1__volume_capability__init(&c->cap[i]);
		csi__v1__volume_capability__access_mode__init(&c->mode[i]);
		c->mode[i].mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER;
		c->cap[i].access_mode = &c->mode[i];
		c->p[i] = &c->cap[i];
	}
	c->cap[0].access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
	c->cap[0].mount = &c->mount;
	c->cap[1].access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
	c->cap[1].block = &c->block;
	c->n = block ? 2 : 1;
}

struct create_args {
	const char *name;
	int64_t required, limit;
	bool block;
	struct kvs params, secrets;
	const char *snapshot_src, *volume_src;
};

static enum objfs_rpc_code create(struct env *e, struct create_args *a,
				  Csi__V1__CreateVolumeResponse **resp,
				  struct objfs_rpc_status *st)
{
	Csi__V1__CreateVolumeRequest rq = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__CapacityRange cr = CSI__V1__CAPACITY_RANGE__INIT;
	Csi__V1__VolumeContentSource cs = CSI__V1__VOLUME_CONTENT_SOURCE__INIT;
	Csi__V1__VolumeContentSource__SnapshotSource ss = CSI__V1__VOLUME_CONTENT_SOURCE__SNAPSHOT_SOURCE__INIT;
	Csi__V1__VolumeContentSource__VolumeSource vs = CSI__V1__VOLUME_CONTENT_SOURCE__VOLUME_SOURCE__INIT;
	struct caps c;

	caps_init(&c, a->block);
	rq.name = (char *)(a->name != NULL ? a->name : "");
	if (a->required != 0 || a->limit != 0) {
		cr.required_bytes = a->required;
		cr.limit_bytes = a->limit;
		rq.capacity_range = &cr;
	}
	rq.n_volume_capabilities = c.n;
	rq.volume_capabilities = c.p;
	rq.n_parameters = a->params.n;
	rq.parameters = (Csi__V1__CreateVolumeRequest__ParametersEntry **)a->params.p;
	rq.n_secrets = a->secrets.n;
	rq.secrets = (Csi__V1__CreateVolumeRequest__SecretsEntry **)a->secrets.p;
	if (a->snapshot_src != NULL) {
		ss.snapshot_id = (char *)a->snapshot_src;
		cs.type_case = CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT;
		cs.snapshot = &ss;
		rq.volume_content_source = &cs;
	} else if (a->volume_src != NULL) {
		vs.volume_id = (char *)a->volume_src;
		cs.type_case = CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_VOLUME;
		cs.volume = &vs;
		rq.volume_content_source = &cs;
	}
	return call(e, "CreateVolume", &rq.base, &csi__v1__create_volume_response__descriptor,
		    resp, st);
}

/* Creates a default-store volume, returns its id (malloc'ed). */
static char *create_simple(struct env *e, const char *name)
{
	struct create_args a = { .name = name };
	Csi__V1__CreateVolumeResponse *r;
	struct objfs_rpc_status st;
	char *id;

	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	id = strdup(r->volume->volume_id);
	pbfree(r);
	return id;
}

static enum objfs_rpc_code delete_vol(struct env *e, const char *id,
				      struct kvs *secrets, struct objfs_rpc_status *st)
{
	Csi__V1__DeleteVolumeRequest rq = CSI__V1__DELETE_VOLUME_REQUEST__INIT;

	rq.volume_id = (char *)id;
	if (secrets != NULL) {
		rq.n_secrets = secrets->n;
		rq.secrets = (Csi__V1__DeleteVolumeRequest__SecretsEntry **)secrets->p;
	}
	return call(e, "DeleteVolume", &rq.base, &csi__v1__delete_volume_response__descriptor,
		    NULL, st);
}

static enum objfs_rpc_code get_vol(struct env *e, const char *id,
				   Csi__V1__ControllerGetVolumeResponse **r,
				   struct objfs_rpc_status *st)
{
	Csi__V1__ControllerGetVolumeRequest rq = CSI__V1__CONTROLLER_GET_VOLUME_REQUEST__INIT;

	rq.volume_id = (char *)id;
	return call(e, "ControllerGetVolume", &rq.base,
		    &csi__v1__controller_get_volume_response__descriptor, r, st);
}

static enum objfs_rpc_code snap(struct env *e, const char *name, const char *src,
				Csi__V1__CreateSnapshotResponse **r,
				struct objfs_rpc_status *st)
{
	Csi__V1__CreateSnapshotRequest rq = CSI__V1__CREATE_SNAPSHOT_REQUEST__INIT;

	rq.name = (char *)name;
	rq.source_volume_id = (char *)src;
	return call(e, "CreateSnapshot", &rq.base,
		    &csi__v1__create_snapshot_response__descriptor, r, st);
}

/* ---- store helpers -------------------------------------------------------- */

static void put(struct objfs_store *s, const char *key, const char *data)
{
	struct objfs_source src;

	objfs_source_mem(&src, data, strlen(data));
	assert_int_equal(objfs_store_put(s, key, &src, NULL, NULL), 0);
}

/* The object's bytes (malloc'ed) or NULL when absent. */
static char *get(struct objfs_store *s, const char *key)
{
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(0);
	struct objfs_get_opts o = OBJFS_GET_ALL;
	struct objfs_sink sink;
	char *out;
	int err;

	objfs_sink_membuf(&sink, &mb);
	err = objfs_store_get(s, key, &o, &sink, NULL);
	if (err == ENOENT)
		return NULL;
	assert_true(err == 0 || err == ERANGE);
	out = malloc(mb.len + 1);
	assert_non_null(out);
	if (mb.len > 0)
		memcpy(out, mb.data, mb.len);
	out[mb.len] = '\0';
	objfs_membuf_release(&mb);
	return out;
}

static size_t count_keys(struct objfs_store *s, const char *prefix)
{
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_list_req rq = { prefix, NULL, NULL, NULL, 1000 };
	size_t n;

	assert_int_equal(objfs_store_list(s, &rq, &page), 0);
	n = page.n_entries;
	objfs_list_page_release(&page);
	return n;
}

static void assert_absent(struct objfs_store *s, const char *key)
{
	char *v = get(s, key);

	assert_null(v);
}

static void assert_present(struct objfs_store *s, const char *key)
{
	char *v = get(s, key);

	assert_non_null(v);
	free(v);
}

static void assert_content(struct objfs_store *s, const char *key, const char *want)
{
	char *v = get(s, key);

	assert_non_null(v);
	assert_string_equal(v, want);
	free(v);
}

/* Fills a volume at prefix with n objects "f/NNN" = "data-NNN". */
static void fill(struct objfs_store *s, const char *prefix, int n)
{
	char key[256], val[64];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s/f/%03d", prefix, i);
		snprintf(val, sizeof(val), "data-%03d", i);
		put(s, key, val);
	}
}

static void check_fill(struct objfs_store *s, const char *prefix, int n)
{
	char key[256], val[64];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s/f/%03d", prefix, i);
		snprintf(val, sizeof(val), "data-%03d", i);
		assert_content(s, key, val);
	}
}

static const char *ctx_get(const Csi__V1__Volume *v, const char *k)
{
	return objfs_pb_map_get((void *const *)v->volume_context, v->n_volume_context, k);
}

/* ---- ids and records ------------------------------------------------------ */

static void test_ids(void **state)
{
	struct objfs_id id;
	char buf[200], safe[64], longname[300];
	static const char *const hostile[] = {
		"objfs1:vol:def:../etc", "objfs1:vol:def:a/../b", "objfs1:vol:def:/abs",
		"objfs1:vol:def:a//b", "objfs1:vol:def:a/", "objfs1:vol:def:",
		"objfs1:vol:def:.objfs-csi/x", "objfs1:vol:def:a\nb", "objfs1:vol:def:a\x01",
		"objfs1:vol:s3:Bad_Bucket:x", "objfs1:vol:s3:bk:x", "objfs1:vol:s3:bucket",
		"objfs1:vol:nfs:x", "objfs1:volume:def:x", "objfs1:snap:def:a/.b",
		"objfs1:snap:def:a/../b", "objfs1:snap:def:/x",
		"objfs1:vol:def:a b", "objfs1:vol:def:a%2e%2e",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		assert_int_equal(objfs_id_parse(hostile[i], &id), EINVAL);
	}
	memset(longname, 'a', 200);
	snprintf(buf, sizeof(buf), "objfs1:vol:def:%.120s", longname);
	assert_int_equal(objfs_id_parse(buf, &id), EINVAL);   /* > 128 bytes */
	assert_int_equal(objfs_id_parse("pvc-123", &id), ENOENT);
	assert_int_equal(objfs_id_parse("", &id), ENOENT);
	assert_int_equal(objfs_id_parse("objfs1:vol:s3:my-bucket:base/pvc-1", &id), 0);
	assert_int_equal(id.type, OBJFS_ID_VOLUME);
	assert_int_equal(id.store, OBJFS_ID_BUCKET);
	assert_string_equal(id.bucket, "my-bucket");
	assert_string_equal(id.path, "base/pvc-1");
	assert_int_equal(objfs_id_format(&id, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "objfs1:vol:s3:my-bucket:base/pvc-1");
	assert_int_equal(objfs_id_parse("objfs1:snap:def:snapshot-1", &id), 0);
	assert_int_equal(id.type, OBJFS_ID_SNAPSHOT);
	/* A snapshot under a base prefix (BASE/NAME). */
	assert_int_equal(objfs_id_parse("objfs1:snap:s3:my-bucket:base/x/snap-1", &id), 0);
	assert_string_equal(id.path, "base/x/snap-1");
	assert_int_equal(objfs_id_format(&id, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "objfs1:snap:s3:my-bucket:base/x/snap-1");

	assert_int_equal(objfs_id_safe_name("pvc-0f3c", 63, safe, sizeof(safe)), 0);
	assert_string_equal(safe, "pvc-0f3c");
	assert_int_equal(objfs_id_safe_name("../../etc/passwd", 63, safe, sizeof(safe)), 0);
	assert_int_equal(objfs_id_segment_valid(safe, strlen(safe)), 0);
	assert_null(strchr(safe, '/'));
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(objfs_id_safe_name(longname, 40, safe, sizeof(safe)), 0);
	assert_int_equal(strlen(safe), 40);
	assert_int_equal(objfs_id_segment_valid(safe, strlen(safe)), 0);
	/* Deterministic, and distinct names stay distinct. */
	longname[5] = 'y';
	assert_int_equal(objfs_id_safe_name(longname, 40, buf, sizeof(buf)), 0);
	assert_string_not_equal(safe, buf);

	assert_false(objfs_id_name_banned("pvc-1 \t\xc3\xa9"));
	assert_true(objfs_id_name_banned("a\x01"));
	assert_true(objfs_id_name_banned("a\x7f"));
	assert_true(objfs_id_name_banned("a\xc2\x85"));   /* U+0085 */
	assert_true(objfs_id_name_banned("a\xff"));
}

static void test_kvtext(void **state)
{
	struct objfs_kv kv = OBJFS_KV_INIT, back = OBJFS_KV_INIT;
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(objfs_kv_set(&kv, "capacity_bytes", "1073741824"), 0);
	assert_int_equal(objfs_kv_set(&kv, "ctx.source", "s3://b/p"), 0);
	assert_int_equal(objfs_kv_set(&kv, "bad key", "x"), EINVAL);
	assert_int_equal(objfs_kv_set(&kv, "k", "a\nb"), EINVAL);
	assert_int_equal(objfs_kv_set(&kv, "capacity_bytes", "2"), 0);
	assert_int_equal(objfs_kv_format(&kv, "objfs volume record", &text, &len), 0);
	assert_string_equal(text, "# objfs volume record\ncapacity_bytes=2\nctx.source=s3://b/p\n");
	assert_int_equal(objfs_kv_parse(text, len, &back), 0);
	assert_string_equal(objfs_kv_get(&back, "ctx.source"), "s3://b/p");
	assert_int_equal(back.n, 2);
	free(text);
	objfs_kv_release(&back);
	assert_int_equal(objfs_kv_parse("noequals\n", 9, &back), EINVAL);
	assert_int_equal(back.n, 0);
	objfs_kv_release(&kv);
}

/* ---- capabilities ---------------------------------------------------------- */

static void test_capabilities(void **state)
{
	struct env *e = *state;
	Csi__V1__ControllerGetCapabilitiesRequest rq = CSI__V1__CONTROLLER_GET_CAPABILITIES_REQUEST__INIT;
	Csi__V1__ControllerGetCapabilitiesResponse *r;
	struct objfs_rpc_status st;
	unsigned seen = 0;
	size_t i;

	assert_int_equal(call(e, "ControllerGetCapabilities", &rq.base,
			      &csi__v1__controller_get_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_OK);
	/* GET_SNAPSHOT (15) only behind cfg.advertise_get_snapshot: csi-sanity
	 * v5.4.0 rejects it as unknown. */
	assert_int_equal(r->n_capabilities, 10);
	for (i = 0; i < r->n_capabilities; i++)
		seen |= 1u << r->capabilities[i]->rpc->type;
	assert_int_equal(seen, (1u << 1) | (1u << 3) | (1u << 4) | (1u << 5) | (1u << 6) |
			 (1u << 7) | (1u << 9) | (1u << 11) | (1u << 12) | (1u << 13));
	pbfree(r);
	e->csi->cfg.advertise_get_snapshot = true;
	assert_int_equal(call(e, "ControllerGetCapabilities", &rq.base,
			      &csi__v1__controller_get_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->n_capabilities, 11);
	assert_int_equal(r->capabilities[10]->rpc->type,
			 CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__GET_SNAPSHOT);
	pbfree(r);
	e->csi->cfg.advertise_get_snapshot = false;
	/* Only what the table answers: publish is not offered. */
	assert_false(objfs_csi_serves(e->csi, "/csi.v1.Controller/ControllerPublishVolume"));
	assert_false(objfs_csi_serves(e->csi, "/csi.v1.Controller/ControllerModifyVolume"));
	assert_true(objfs_csi_serves(e->csi, "/csi.v1.Controller/GetSnapshot"));
}

/* ---- CreateVolume ------------------------------------------------------------ */

static void test_create_default_store(void **state)
{
	struct env *e = *state;
	struct create_args a = { .name = "pvc-0001" };
	Csi__V1__CreateVolumeResponse *r, *r2;
	struct objfs_rpc_status st;
	char want[500], *rec;

	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	assert_string_equal(r->volume->volume_id, "objfs1:vol:def:pvc-0001");
	assert_int_equal(r->volume->capacity_bytes, (int64_t)GIB);
	snprintf(want, sizeof(want), "%s/pvc-0001", e->url);
	assert_string_equal(ctx_get(r->volume, "source"), want);
	assert_null(ctx_get(r->volume, "endpoint"));
	rec = get(e->local, "pvc-0001/.objfs/volume");
	assert_non_null(rec);
	assert_non_null(strstr(rec, "capacity_bytes=1073741824\n"));
	assert_non_null(strstr(rec, "name=pvc-0001\n"));
	free(rec);

	/* The same request again: the same volume. */
	assert_int_equal(create(e, &a, &r2, &st), OBJFS_RPC_OK);
	assert_string_equal(r2->volume->volume_id, r->volume->volume_id);
	assert_int_equal(r2->volume->capacity_bytes, r->volume->capacity_bytes);
	assert_string_equal(ctx_get(r2->volume, "source"), want);
	pbfree(r2);
	pbfree(r);

	/* Same name, incompatible capacity or parameters. */
	a.required = 2 * (int64_t)GIB;
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_ALREADY_EXISTS);
	a.required = 0;
	a.limit = 1024;
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_ALREADY_EXISTS);
	a.limit = 0;
	kvs_add(&a.params, &csi__v1__create_volume_request__parameters_entry__descriptor,
		"onDelete", "retain");
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_ALREADY_EXISTS);
	/* Another basePrefix gives another id: the name index still knows. */
	a.params.n = 0;
	kvs_add(&a.params, &csi__v1__create_volume_request__parameters_entry__descriptor,
		"basePrefix", "team-a");
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_ALREADY_EXISTS);
	assert_non_null(strstr(st.msg, "objfs1:vol:def:pvc-0001"));
	assert_int_equal(count_keys(e->local, "team-a/"), 0);
}

static void test_create_capacity(void **state)
{
	struct env *e = *state;
	struct create_args a = { .name = "cap-1", .required = 5000, .limit = 10000 };
	Csi__V1__CreateVolumeResponse *r;
	struct objfs_rpc_status st;

	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->volume->capacity_bytes, 5000);
	pbfree(r);
	/* Any range the volume fits is the same request. */
	a.required = 4000;
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->volume->capacity_bytes, 5000);
	pbfree(r);

	a.name = "cap-2";
	a.required = 0;
	a.limit = 4096;
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->volume->capacity_bytes, 4096);
	pbfree(r);

	a.name = "cap-3";
	a.required = 20000;
	a.limit = 10000;
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_OUT_OF_RANGE);
	a.required = -1;
	a.limit = 0;
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_int_equal(count_keys(e->local, "cap-3/"), 0);
}

static void test_create_invalid(void **state)
{
	struct env *e = *state;
	struct create_args a = { .name = "" };
	Csi__V1__CreateVolumeRequest rq = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__CreateVolumeResponse *r;
	struct objfs_rpc_status st;
	const ProtobufCMessageDescriptor *pd =
		&csi__v1__create_volume_request__parameters_entry__descriptor;

	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "name"));
	rq.name = "pvc-nocaps";
	assert_int_equal(call(e, "CreateVolume", &rq.base,
			      &csi__v1__create_volume_response__descriptor, NULL, &st),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_capabilities"));

	a.name = "pvc-block";
	a.block = true;
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "block"));
	a.block = false;

	a.name = "pvc-ctl\x01";
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);

	a.name = "pvc-params";
	kvs_add(&a.params, pd, "bukket", "x");
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "bukket"));
	a.params.n = 0;
	kvs_add(&a.params, pd, "basePrefix", "../escape");
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "basePrefix"));
	a.params.n = 0;
	kvs_add(&a.params, pd, "onDelete", "shred");
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	a.params.n = 0;
	kvs_add(&a.params, pd, "endpoint", "http://x");
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "bucket"));
	/* mountOptions NodeStageVolume would refuse: no volume is made
	 * that no pod can mount */
	{
		static const char *const refused[] = {
			"log_file=/any/path", "spool_dir=/any/dir", "cache_dir=/d",
			"ca_file=/c.pem", "metrics=0.0.0.0:9999", "insecure_skip_verify",
			"attr_ttl=1,suid", "dev", "allow_root", "blkdev",
			"state_dir=/x", "ready_fd=3", "no_such_option", "a b",
		};
		size_t k;

		a.name = "pvc-refused-opts";
		for (k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
			a.params.n = 0;
			kvs_add(&a.params, pd, "mountOptions", refused[k]);
			assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
			assert_non_null(strstr(st.msg, "parameter mountOptions"));
		}
		assert_int_equal(count_keys(e->local, "pvc-refused-opts/"), 0);
		a.name = "pvc-params";
	}
	a.params.n = 0;
	kvs_add(&a.params, pd, "csi.storage.k8s.io/pvc/name", "claim");
	kvs_add(&a.params, pd, "csi.storage.k8s.io/pvc/namespace", "team-a");
	kvs_add(&a.params, pd, "csi.storage.k8s.io/pv/name", "pvc-1234");
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	/* the CO's names stay in the volume context (the node's metrics
	 * labels), and come back with the volume */
	assert_string_equal(ctx_get(r->volume, "csi.storage.k8s.io/pvc/name"), "claim");
	assert_string_equal(ctx_get(r->volume, "csi.storage.k8s.io/pvc/namespace"), "team-a");
	assert_string_equal(ctx_get(r->volume, "csi.storage.k8s.io/pv/name"), "pvc-1234");
	pbfree(r);
	/* a name that is not a plain Kubernetes name is dropped, not fatal */
	a.name = "pvc-odd-names";
	a.params.n = 0;
	kvs_add(&a.params, pd, "csi.storage.k8s.io/pvc/name", "a\"b");
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	assert_null(ctx_get(r->volume, "csi.storage.k8s.io/pvc/name"));
	pbfree(r);
	/* Nothing of the refused requests reached the store. */
	assert_int_equal(count_keys(e->local, "pvc-block/"), 0);
	assert_int_equal(count_keys(e->local, "escape/"), 0);
}

static void test_create_long_name(void **state)
{
	struct env *e = *state;
	char name[300];
	struct create_args a = { .name = name };
	Csi__V1__CreateVolumeResponse *r;
	struct objfs_rpc_status st;
	struct objfs_id id;

	memset(name, 'N', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	name[10] = '/';
	name[11] = '.';
	kvs_add(&a.params, &csi__v1__create_volume_request__parameters_entry__descriptor,
		"basePrefix", "some/deep/base");
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	assert_true(strlen(r->volume->volume_id) <= 128);
	assert_int_equal(objfs_id_parse(r->volume->volume_id, &id), 0);
	assert_int_equal(strncmp(id.path, "some/deep/base/NNNNNNNNNN", 25), 0);
	assert_null(strchr(id.path + 15, '/'));
	pbfree(r);
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	pbfree(r);
}

static void test_create_bucket_with_secrets(void **state)
{
	struct env *e = *state;
	struct create_args a = { .name = "pvc-s3" };
	Csi__V1__CreateVolumeResponse *r;
	Csi__V1__ControllerGetVolumeResponse *g;
	struct objfs_rpc_status st;
	struct objfs_store *b;
	struct kvs sec = { .n = 0 };
	char path[400];
	size_t i;
	const ProtobufCMessageDescriptor *pd =
		&csi__v1__create_volume_request__parameters_entry__descriptor;
	const ProtobufCMessageDescriptor *sd =
		&csi__v1__create_volume_request__secrets_entry__descriptor;

	kvs_add(&a.params, pd, "bucket", "vols");
	kvs_add(&a.params, pd, "basePrefix", "k8s");
	kvs_add(&a.params, pd, "endpoint", e->endpoint);
	kvs_add(&a.params, pd, "region", "eu-west-3");
	kvs_add(&a.params, pd, "mountOptions", "attr_ttl=5");
	/* Wrong keys: the store refuses, and the secret is not in the message. */
	kvs_add(&a.secrets, sd, "accessKeyID", TEST_AK);
	kvs_add(&a.secrets, sd, "secretAccessKey", "wrong");
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_PERMISSION_DENIED);
	a.secrets.n = 0;
	kvs_add(&a.secrets, sd, "accessKeyID", TEST_AK);
	kvs_add(&a.secrets, sd, "secretAccessKey", TEST_SK);
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	assert_string_equal(r->volume->volume_id, "objfs1:vol:s3:vols:k8s/pvc-s3");
	assert_string_equal(ctx_get(r->volume, "source"), "s3://vols/k8s/pvc-s3");
	assert_string_equal(ctx_get(r->volume, "endpoint"), e->endpoint);
	assert_string_equal(ctx_get(r->volume, "region"), "eu-west-3");
	assert_string_equal(ctx_get(r->volume, "addressingStyle"), "path");
	assert_string_equal(ctx_get(r->volume, "mountOptions"), "attr_ttl=5");
	assert_int_equal(r->volume->n_volume_context, 5);
	for (i = 0; i < r->volume->n_volume_context; i++)
		assert_null(strstr(r->volume->volume_context[i]->value, TEST_SK));
	snprintf(path, sizeof(path), "%s/buckets/vols", e->dir);
	assert_int_equal(objfs_local_store_create(path, NULL, &b), 0);
	put(b, "k8s/pvc-s3/hello", "world");
	assert_present(b, "k8s/pvc-s3/.objfs/volume");

	/* ControllerGetVolume carries no secrets: with the plugin's keys
	 * (none here) the store refuses; the index still knows the volume,
	 * whose condition is not checked (which is not abnormal). */
	assert_int_equal(get_vol(e, r->volume->volume_id, &g, &st), OBJFS_RPC_OK);
	assert_false(g->status->volume_condition->abnormal);
	assert_non_null(strstr(g->status->volume_condition->message, "not checked"));
	assert_int_equal(g->volume->capacity_bytes, (int64_t)GIB);
	assert_string_equal(ctx_get(g->volume, "source"), "s3://vols/k8s/pvc-s3");
	pbfree(g);
	/* Expansion (with the keys) reaches the index too. */
	{
		Csi__V1__ControllerExpandVolumeRequest xq = CSI__V1__CONTROLLER_EXPAND_VOLUME_REQUEST__INIT;
		Csi__V1__CapacityRange cr = CSI__V1__CAPACITY_RANGE__INIT;
		struct kvs xs = { .n = 0 };

		kvs_add(&xs, &csi__v1__controller_expand_volume_request__secrets_entry__descriptor,
			"accessKeyID", TEST_AK);
		kvs_add(&xs, &csi__v1__controller_expand_volume_request__secrets_entry__descriptor,
			"secretAccessKey", TEST_SK);
		xq.volume_id = r->volume->volume_id;
		cr.required_bytes = 2 * (int64_t)GIB;
		xq.capacity_range = &cr;
		assert_int_equal(call(e, "ControllerExpandVolume", &xq.base,
				      &csi__v1__controller_expand_volume_response__descriptor,
				      NULL, &st), OBJFS_RPC_PERMISSION_DENIED);
		xq.n_secrets = xs.n;
		xq.secrets = (Csi__V1__ControllerExpandVolumeRequest__SecretsEntry **)xs.p;
		assert_int_equal(call(e, "ControllerExpandVolume", &xq.base,
				      &csi__v1__controller_expand_volume_response__descriptor,
				      NULL, &st), OBJFS_RPC_OK);
		assert_int_equal(get_vol(e, r->volume->volume_id, &g, &st), OBJFS_RPC_OK);
		assert_int_equal(g->volume->capacity_bytes, 2 * (int64_t)GIB);
		pbfree(g);
	}

	/* DeleteVolume gets only the id and secrets: the endpoint comes from
	 * the index. */
	kvs_add(&sec, &csi__v1__delete_volume_request__secrets_entry__descriptor,
		"accessKeyID", TEST_AK);
	kvs_add(&sec, &csi__v1__delete_volume_request__secrets_entry__descriptor,
		"secretAccessKey", TEST_SK);
	assert_int_equal(delete_vol(e, r->volume->volume_id, &sec, &st), OBJFS_RPC_OK);
	assert_int_equal(count_keys(b, "k8s/"), 0);
	assert_int_equal(count_keys(e->local, ".objfs-csi/"), 0);
	objfs_store_destroy(b);
	pbfree(r);
}

/* No keys in the secrets and none the plugin found: the answer says so
 * and names where the plugin looked (common/creds.h), never an HTTP
 * status of an unsigned request. */
static void test_create_bucket_no_credentials(void **state)
{
	struct env *e = *state;
	struct create_args a = { .name = "pvc-nokeys" };
	struct objfs_rpc_status st;
	const ProtobufCMessageDescriptor *pd =
		&csi__v1__create_volume_request__parameters_entry__descriptor;

	kvs_add(&a.params, pd, "bucket", "vols");
	kvs_add(&a.params, pd, "endpoint", e->endpoint);
	e->csi->cfg.store.s3.creds_looked = "environment (AWS_ACCESS_KEY_ID, "
		"AWS_SECRET_ACCESS_KEY): unset; EC2 instance metadata: disabled";
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_PERMISSION_DENIED);
	assert_non_null(strstr(st.msg, "no credentials for bucket vols"));
	assert_non_null(strstr(st.msg, "accessKeyID and secretAccessKey nor roleArn"));
	assert_non_null(strstr(st.msg, "looked at, in order: environment (AWS_ACCESS_KEY_ID"));
	assert_non_null(strstr(st.msg, "EC2 instance metadata: disabled"));
	e->csi->cfg.store.s3.creds_looked = NULL;
}

static void test_bucket_snapshot_secrets(void **state)
{
	struct env *e = *state;
	struct create_args a = { .name = "pvc-bs" };
	Csi__V1__CreateVolumeResponse *v;
	Csi__V1__CreateSnapshotRequest cq = CSI__V1__CREATE_SNAPSHOT_REQUEST__INIT;
	Csi__V1__CreateSnapshotResponse *c;
	Csi__V1__ListSnapshotsRequest lq = CSI__V1__LIST_SNAPSHOTS_REQUEST__INIT;
	Csi__V1__ListSnapshotsResponse *l;
	Csi__V1__DeleteSnapshotRequest dq = CSI__V1__DELETE_SNAPSHOT_REQUEST__INIT;
	struct objfs_rpc_status st;
	struct objfs_store *b;
	struct kvs sec = { .n = 0 };
	char path[400];
	const ProtobufCMessageDescriptor *pd =
		&csi__v1__create_volume_request__parameters_entry__descriptor;
	const ProtobufCMessageDescriptor *sd =
		&csi__v1__create_volume_request__secrets_entry__descriptor;

	kvs_add(&a.params, pd, "bucket", "vols");
	kvs_add(&a.params, pd, "endpoint", e->endpoint);
	kvs_add(&a.secrets, sd, "accessKeyID", TEST_AK);
	kvs_add(&a.secrets, sd, "secretAccessKey", TEST_SK);
	assert_int_equal(create(e, &a, &v, &st), OBJFS_RPC_OK);
	snprintf(path, sizeof(path), "%s/buckets/vols", e->dir);
	assert_int_equal(objfs_local_store_create(path, NULL, &b), 0);
	fill(b, "pvc-bs", 4);
	kvs_add(&sec, &csi__v1__create_snapshot_request__secrets_entry__descriptor,
		"accessKeyID", TEST_AK);
	kvs_add(&sec, &csi__v1__create_snapshot_request__secrets_entry__descriptor,
		"secretAccessKey", TEST_SK);
	cq.name = "snap-bs";
	cq.source_volume_id = v->volume->volume_id;
	/* Without the keys the bucket refuses. */
	assert_int_equal(call(e, "CreateSnapshot", &cq.base,
			      &csi__v1__create_snapshot_response__descriptor, &c, &st),
			 OBJFS_RPC_PERMISSION_DENIED);
	cq.n_secrets = sec.n;
	cq.secrets = (Csi__V1__CreateSnapshotRequest__SecretsEntry **)sec.p;
	assert_int_equal(call(e, "CreateSnapshot", &cq.base,
			      &csi__v1__create_snapshot_response__descriptor, &c, &st),
			 OBJFS_RPC_OK);
	assert_string_equal(c->snapshot->snapshot_id, "objfs1:snap:s3:vols:snap-bs");
	assert_int_equal(c->snapshot->size_bytes, 32);
	check_fill(b, ".objfs-snapshots/snap-bs", 4);
	/* Listed with no secrets: the index remembers the ready snapshot. */
	assert_int_equal(call(e, "ListSnapshots", &lq.base,
			      &csi__v1__list_snapshots_response__descriptor, &l, &st),
			 OBJFS_RPC_OK);
	assert_int_equal(l->n_entries, 1);
	assert_int_equal(l->entries[0]->snapshot->size_bytes, 32);
	assert_int_equal(l->entries[0]->snapshot->creation_time->seconds,
			 c->snapshot->creation_time->seconds);
	assert_true(l->entries[0]->snapshot->ready_to_use);
	pbfree(l);
	dq.snapshot_id = c->snapshot->snapshot_id;
	dq.n_secrets = sec.n;
	dq.secrets = (Csi__V1__DeleteSnapshotRequest__SecretsEntry **)sec.p;
	assert_int_equal(call(e, "DeleteSnapshot", &dq.base,
			      &csi__v1__delete_snapshot_response__descriptor, NULL, &st),
			 OBJFS_RPC_OK);
	assert_int_equal(count_keys(b, ".objfs-snapshots/"), 0);
	assert_int_equal(call(e, "ListSnapshots", &lq.base,
			      &csi__v1__list_snapshots_response__descriptor, &l, &st),
			 OBJFS_RPC_OK);
	assert_int_equal(l->n_entries, 0);
	pbfree(l);
	/* Deleted and unknown to the index, no endpoint to look: OK again. */
	assert_int_equal(call(e, "DeleteSnapshot", &dq.base,
			      &csi__v1__delete_snapshot_response__descriptor, NULL, &st),
			 OBJFS_RPC_OK);
	pbfree(c);
	pbfree(v);
	objfs_store_destroy(b);
}

static void test_ca_bundle_secret(void **state)
{
	struct env *e = *state;
	struct create_args a = { .name = "pvc-ca" };
	struct objfs_rpc_status st;
	Csi__V1__CreateVolumeResponse *r;
	const ProtobufCMessageDescriptor *pd =
		&csi__v1__create_volume_request__parameters_entry__descriptor;
	const ProtobufCMessageDescriptor *sd =
		&csi__v1__create_volume_request__secrets_entry__descriptor;
	static const char pem[] = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n";
	char path[600], hash[65];
	FILE *f;

	kvs_add(&a.params, pd, "bucket", "vols");
	kvs_add(&a.secrets, sd, "accessKeyID", TEST_AK);
	kvs_add(&a.secrets, sd, "secretAccessKey", TEST_SK);
	/* The endpoint may come from the secret too. */
	kvs_add(&a.secrets, sd, "endpoint", e->endpoint);
	kvs_add(&a.secrets, sd, "caBundle", "not a certificate");
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "caBundle"));
	assert_null(strstr(st.msg, "not a certificate"));
	a.secrets.e[3].value = (char *)pem;
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	assert_string_equal(ctx_get(r->volume, "endpoint"), e->endpoint);
	assert_null(ctx_get(r->volume, "caBundle"));
	pbfree(r);
	objfs_id_hash(pem, strlen(pem), hash, 64);
	snprintf(path, sizeof(path), "%s/ca/%s.pem", e->state, hash);
	f = fopen(path, "r");
	assert_non_null(f);
	fclose(f);
}

static void test_default_store_on_s3(void **state)
{
	struct objfs_csi_config cfg;
	struct objfs_csi *csi = NULL;
	struct objfs_store *local = NULL;
	struct env e2;
	struct create_args a = { .name = "pvc-1" };
	Csi__V1__CreateVolumeResponse *r;
	struct objfs_rpc_status st;
	char path[400];
	struct env *e = *state;

	/* objfs-csi --store s3://defbucket/base --s3-endpoint ...: the
	 * default store is S3 (a local store stands in for it here). */
	snprintf(path, sizeof(path), "%s/defs3", e->dir);
	assert_int_equal(objfs_local_store_create(path, NULL, &local), 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.mode = OBJFS_CSI_MODE_ALL;
	cfg.node_id = "n1";
	cfg.store.url = "s3://defbucket/base/";
	cfg.store.s3.endpoint = "https://s3.example:9000";
	cfg.store.s3.path_style = false;
	assert_int_equal(objfs_csi_create(&cfg, local, NULL, &csi), 0);
	e2 = *e;
	e2.csi = csi;
	assert_int_equal(create(&e2, &a, &r, &st), OBJFS_RPC_OK);
	assert_string_equal(r->volume->volume_id, "objfs1:vol:def:pvc-1");
	assert_string_equal(ctx_get(r->volume, "source"), "s3://defbucket/base/pvc-1");
	assert_string_equal(ctx_get(r->volume, "endpoint"), "https://s3.example:9000");
	assert_string_equal(ctx_get(r->volume, "region"), "us-east-1");
	assert_string_equal(ctx_get(r->volume, "addressingStyle"), "virtual");
	assert_int_equal(r->volume->n_volume_context, 4);
	pbfree(r);
	objfs_csi_destroy(csi);
}

/* ---- DeleteVolume ------------------------------------------------------------- */

static void test_delete(void **state)
{
	struct env *e = *state;
	struct objfs_rpc_status st;
	char *id = create_simple(e, "pvc-del");
	static const char *const bad[] = {
		"objfs1:vol:def:../pvc-keep", "objfs1:vol:def:pvc-keep/../x",
		"objfs1:vol:def:/pvc-keep", "objfs1:vol:def:pvc-keep//f",
		"objfs1:snap:def:pvc-keep", "pvc-keep",
	};
	char *keep = create_simple(e, "pvc-keep");
	size_t i;

	fill(e->local, "pvc-keep", 3);
	fill(e->local, "pvc-del", 7);
	objfs_fault_reset(e->fault);
	/* An id objfs did not make names no volume: deleted, says the spec
	 * (csi-sanity's "invalid volume id"), and nothing is touched. */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(delete_vol(e, bad[i], NULL, &st), OBJFS_RPC_OK);
	assert_int_equal(delete_vol(e, "", NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_id"));
	/* A control character is refused before DeleteVolume runs. */
	assert_int_equal(delete_vol(e, "objfs1:vol:def:pvc\x01keep", NULL, &st),
			 OBJFS_RPC_INVALID_ARGUMENT);
	assert_string_equal(st.msg, "volume_id holds a control character");
	/* Hostile ids touched nothing. */
	assert_int_equal(objfs_fault_calls(e->fault, OBJFS_FOP_ALL), 0);
	check_fill(e->local, "pvc-keep", 3);
	/* An id of objfs's grammar that objfs never made (no record, not in
	 * the index): reads only, even with objects under its prefix. */
	fill(e->local, "not-a-volume", 2);
	objfs_fault_reset(e->fault);
	assert_int_equal(delete_vol(e, "objfs1:vol:def:not-a-volume", NULL, &st), OBJFS_RPC_OK);
	assert_int_equal(objfs_fault_calls(e->fault, OBJFS_FOP_DEL) +
			 objfs_fault_calls(e->fault, OBJFS_FOP_DEL_MANY) +
			 objfs_fault_calls(e->fault, OBJFS_FOP_PUT) +
			 objfs_fault_calls(e->fault, OBJFS_FOP_COPY), 0);
	check_fill(e->local, "not-a-volume", 2);

	assert_int_equal(delete_vol(e, id, NULL, &st), OBJFS_RPC_OK);
	assert_int_equal(count_keys(e->local, "pvc-del/"), 0);
	assert_int_equal(get_vol(e, id, NULL, &st), OBJFS_RPC_NOT_FOUND);
	/* Again, and an unknown id of our format: OK. */
	assert_int_equal(delete_vol(e, id, NULL, &st), OBJFS_RPC_OK);
	assert_int_equal(delete_vol(e, "objfs1:vol:def:never-made", NULL, &st), OBJFS_RPC_OK);
	check_fill(e->local, "pvc-keep", 3);
	free(id);
	free(keep);
}

static void test_delete_fault_and_retry(void **state)
{
	struct env *e = *state;
	struct objfs_rpc_status st;
	char *id = create_simple(e, "pvc-fault");
	Csi__V1__ControllerGetVolumeResponse *g;

	fill(e->local, "pvc-fault", 10);
	/* Pages of 3 keys: every batch goes, then deleting the record (the
	 * last step) fails. */
	objfs_fault_reset(e->fault);
	objfs_fault_fail_next(e->fault, OBJFS_FOP_DEL, 1, EIO);
	assert_int_equal(delete_vol(e, id, NULL, &st), OBJFS_RPC_UNAVAILABLE);
	assert_true(objfs_fault_calls(e->fault, OBJFS_FOP_DEL_MANY) >= 3);
	/* The data went, the record stayed: the volume still answers. */
	assert_int_equal(count_keys(e->local, "pvc-fault/f/"), 0);
	assert_int_equal(get_vol(e, id, &g, &st), OBJFS_RPC_OK);
	pbfree(g);
	assert_int_equal(delete_vol(e, id, NULL, &st), OBJFS_RPC_OK);
	assert_int_equal(count_keys(e->local, "pvc-fault/"), 0);
	assert_int_equal(get_vol(e, id, NULL, &st), OBJFS_RPC_NOT_FOUND);

	/* A failure in the middle of the batch deletes. */
	free(id);
	id = create_simple(e, "pvc-fault2");
	fill(e->local, "pvc-fault2", 10);
	objfs_fault_reset(e->fault);
	objfs_fault_fail_prob(e->fault, OBJFS_FOP_DEL_MANY, 0.5, EIO, 7);
	while (delete_vol(e, id, NULL, &st) != OBJFS_RPC_OK) {
		assert_int_equal(st.code, OBJFS_RPC_UNAVAILABLE);
		/* Until it completes, the volume is whole enough to be found. */
		assert_int_equal(get_vol(e, id, &g, &st), OBJFS_RPC_OK);
		pbfree(g);
	}
	objfs_fault_reset(e->fault);
	assert_int_equal(count_keys(e->local, "pvc-fault2/"), 0);
	assert_int_equal(get_vol(e, id, NULL, &st), OBJFS_RPC_NOT_FOUND);
	free(id);
}

static void test_on_delete_retain_archive(void **state)
{
	struct env *e = *state;
	struct create_args a = { .name = "pvc-ret" };
	Csi__V1__CreateVolumeResponse *r;
	struct objfs_rpc_status st;
	const ProtobufCMessageDescriptor *pd =
		&csi__v1__create_volume_request__parameters_entry__descriptor;
	char *id;

	kvs_add(&a.params, pd, "onDelete", "retain");
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	id = strdup(r->volume->volume_id);
	pbfree(r);
	fill(e->local, "pvc-ret", 4);
	assert_int_equal(delete_vol(e, id, NULL, &st), OBJFS_RPC_OK);
	check_fill(e->local, "pvc-ret", 4);
	assert_int_equal(get_vol(e, id, NULL, &st), OBJFS_RPC_NOT_FOUND);
	assert_int_equal(delete_vol(e, id, NULL, &st), OBJFS_RPC_OK);
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_ALREADY_EXISTS);
	free(id);

	a.name = "pvc-arch";
	a.params.n = 0;
	kvs_add(&a.params, pd, "onDelete", "archive");
	kvs_add(&a.params, pd, "archivePrefix", "attic");
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	id = strdup(r->volume->volume_id);
	pbfree(r);
	fill(e->local, "pvc-arch", 5);
	/* Copies fail now and then: the retried delete completes the move. */
	objfs_fault_fail_prob(e->fault, OBJFS_FOP_COPY, 0.3, EIO, 3);
	while (delete_vol(e, id, NULL, &st) != OBJFS_RPC_OK)
		assert_int_equal(st.code, OBJFS_RPC_UNAVAILABLE);
	objfs_fault_reset(e->fault);
	assert_int_equal(count_keys(e->local, "pvc-arch/"), 0);
	check_fill(e->local, "attic/pvc-arch", 5);
	assert_present(e->local, "attic/pvc-arch/.objfs/volume");
	free(id);
}

/* Everything the controller writes for a volume with a basePrefix stays
 * under it (keys scoped to the prefix suffice): the volume, its
 * snapshots, its archive.  Snapshots and archives made before (at the
 * store's root) stay readable, restorable, deletable. */
static void test_base_prefix_holds_everything(void **state)
{
	struct env *e = *state;
	const ProtobufCMessageDescriptor *pd =
		&csi__v1__create_volume_request__parameters_entry__descriptor;
	Csi__V1__CreateVolumeResponse *v;
	Csi__V1__CreateSnapshotResponse *r;
	Csi__V1__DeleteSnapshotRequest dq = CSI__V1__DELETE_SNAPSHOT_REQUEST__INIT;
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_list_req lq = { "", NULL, NULL, NULL, 1000 };
	struct objfs_rpc_status st;
	struct create_args a = { 0 };
	char *vid, *sid;
	size_t i;

	a.name = "pvc-b";
	kvs_add(&a.params, pd, "basePrefix", "team/a");
	kvs_add(&a.params, pd, "onDelete", "archive");
	assert_int_equal(create(e, &a, &v, &st), OBJFS_RPC_OK);
	vid = strdup(v->volume->volume_id);
	pbfree(v);
	assert_string_equal(vid, "objfs1:vol:def:team/a/pvc-b");
	fill(e->local, "team/a/pvc-b", 3);
	assert_int_equal(snap(e, "snap-b", vid, &r, &st), OBJFS_RPC_OK);
	sid = strdup(r->snapshot->snapshot_id);
	pbfree(r);
	assert_string_equal(sid, "objfs1:snap:def:team/a/snap-b");
	check_fill(e->local, "team/a/.objfs-snapshots/snap-b", 3);
	assert_present(e->local, "team/a/.objfs-snapshots/snap-b/.objfs/snapshot");
	/* Restored under the new volume's own base prefix. */
	a.name = "pvc-b2";
	a.snapshot_src = sid;
	a.params.n = 1;
	assert_int_equal(create(e, &a, &v, &st), OBJFS_RPC_OK);
	pbfree(v);
	check_fill(e->local, "team/a/pvc-b2", 3);
	assert_int_equal(delete_vol(e, "objfs1:vol:def:team/a/pvc-b2", NULL, &st), OBJFS_RPC_OK);
	/* Archived under the base prefix, with its record. */
	assert_int_equal(delete_vol(e, vid, NULL, &st), OBJFS_RPC_OK);
	check_fill(e->local, "team/a/.objfs-archive/pvc-b", 3);
	assert_present(e->local, "team/a/.objfs-archive/pvc-b/.objfs/volume");
	assert_content(e->local, "team/a/.objfs-archive/pvc-b/f/000", "data-000");
	/* Nothing but the plugin's own index outside team/a/. */
	assert_int_equal(objfs_store_list(e->local, &lq, &page), 0);
	assert_true(page.n_entries > 0);
	for (i = 0; i < page.n_entries; i++) {
		const char *k = page.entries[i].key;

		if (strncmp(k, "team/a/", 7) != 0 && strncmp(k, OBJFS_INDEX_PREFIX,
							     strlen(OBJFS_INDEX_PREFIX)) != 0)
			fail_msg("written outside the base prefix: %s", k);
	}
	objfs_list_page_release(&page);
	dq.snapshot_id = sid;
	assert_int_equal(call(e, "DeleteSnapshot", &dq.base,
			      &csi__v1__delete_snapshot_response__descriptor, NULL, &st), OBJFS_RPC_OK);
	assert_int_equal(count_keys(e->local, "team/a/.objfs-snapshots/"), 0);
	free(sid);
	free(vid);
}

/* A snapshot made before snapshots moved under the base prefix: its id
 * (one segment) still names .objfs-snapshots/NAME/ at the store's root,
 * where it is read, restored and deleted.  A volume record from before
 * (no csi.archiveTo) archives where it always did. */
static void test_old_layout_still_read(void **state)
{
	struct env *e = *state;
	const ProtobufCMessageDescriptor *pd =
		&csi__v1__create_volume_request__parameters_entry__descriptor;
	Csi__V1__CreateVolumeResponse *v;
	Csi__V1__DeleteSnapshotRequest dq = CSI__V1__DELETE_SNAPSHOT_REQUEST__INIT;
	Csi__V1__GetSnapshotRequest gq = CSI__V1__GET_SNAPSHOT_REQUEST__INIT;
	Csi__V1__GetSnapshotResponse *g;
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_rpc_status st;
	struct create_args a = { 0 };
	struct objfs_id id;
	char *text, *line;

	/* The old layout, as an older controller wrote it. */
	fill(e->local, ".objfs-snapshots/snap-old", 4);
	put(e->local, ".objfs-snapshots/snap-old/.objfs/snapshot",
	    "name=snap-old\nsource_volume_id=objfs1:vol:def:team/pvc-gone\n"
	    "size_bytes=32\nsource_capacity_bytes=1073741824\n"
	    "csi.id=objfs1:snap:def:snap-old\ncsi.created_sec=1700000000\n"
	    "csi.created_nsec=0\n");
	gq.snapshot_id = "objfs1:snap:def:snap-old";
	assert_int_equal(call(e, "GetSnapshot", &gq.base, &csi__v1__get_snapshot_response__descriptor,
			      &g, &st), OBJFS_RPC_OK);
	assert_int_equal(g->snapshot->size_bytes, 32);
	pbfree(g);
	a.name = "pvc-new";
	a.snapshot_src = "objfs1:snap:def:snap-old";
	kvs_add(&a.params, pd, "basePrefix", "team");
	assert_int_equal(create(e, &a, &v, &st), OBJFS_RPC_OK);
	pbfree(v);
	check_fill(e->local, "team/pvc-new", 4);
	dq.snapshot_id = "objfs1:snap:def:snap-old";
	assert_int_equal(call(e, "DeleteSnapshot", &dq.base,
			      &csi__v1__delete_snapshot_response__descriptor, NULL, &st), OBJFS_RPC_OK);
	assert_int_equal(count_keys(e->local, ".objfs-snapshots/"), 0);

	/* An archiving volume whose record predates csi.archiveTo. */
	a.name = "pvc-oldarch";
	a.snapshot_src = NULL;
	kvs_add(&a.params, pd, "onDelete", "archive");
	assert_int_equal(create(e, &a, &v, &st), OBJFS_RPC_OK);
	pbfree(v);
	fill(e->local, "team/pvc-oldarch", 2);
	assert_int_equal(objfs_id_parse("objfs1:vol:def:team/pvc-oldarch", &id), 0);
	assert_int_equal(objfs_volrec_load_at(e->local, id.path, &rec), 0);
	assert_string_equal(objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ARCHIVE_TO),
			    "team/.objfs-archive/pvc-oldarch");
	objfs_volrec_release(&rec);
	text = get(e->local, "team/pvc-oldarch/" OBJFS_VOLREC_KEY);
	line = strstr(text, OBJFS_VOLREC_CSI_ARCHIVE_TO "=");
	assert_non_null(line);
	memmove(line, strchr(line, '\n') + 1, strlen(strchr(line, '\n') + 1) + 1);
	put(e->local, "team/pvc-oldarch/" OBJFS_VOLREC_KEY, text);
	free(text);
	assert_int_equal(delete_vol(e, "objfs1:vol:def:team/pvc-oldarch", NULL, &st),
			 OBJFS_RPC_OK);
	check_fill(e->local, ".objfs-archive/team/pvc-oldarch", 2);
	assert_int_equal(count_keys(e->local, "team/.objfs-archive/"), 0);
	assert_int_equal(objfs_volrec_load_at(e->local, id.path, &rec), ENOENT);
}

/* ---- Validate, Get, List, Expand, Capacity ------------------------------------ */

static void test_validate(void **state)
{
	struct env *e = *state;
	Csi__V1__ValidateVolumeCapabilitiesRequest rq =
		CSI__V1__VALIDATE_VOLUME_CAPABILITIES_REQUEST__INIT;
	Csi__V1__ValidateVolumeCapabilitiesResponse *r;
	struct objfs_rpc_status st;
	struct caps c;
	struct kvs ctx = { .n = 0 };
	char *id = create_simple(e, "pvc-val");
	char src[500];
	int m;

	caps_init(&c, false);
	rq.volume_id = id;
	rq.n_volume_capabilities = 1;
	rq.volume_capabilities = c.p;
	for (m = 1; m <= 7; m++) {
		c.mode[0].mode = m;
		assert_int_equal(call(e, "ValidateVolumeCapabilities", &rq.base,
				      &csi__v1__validate_volume_capabilities_response__descriptor,
				      &r, &st), OBJFS_RPC_OK);
		assert_non_null(r->confirmed);
		assert_int_equal(r->confirmed->n_volume_capabilities, 1);
		assert_int_equal(r->confirmed->volume_capabilities[0]->access_mode->mode, m);
		pbfree(r);
	}
	snprintf(src, sizeof(src), "%s/pvc-val", e->url);
	kvs_add(&ctx, &csi__v1__validate_volume_capabilities_request__volume_context_entry__descriptor,
		"source", src);
	rq.n_volume_context = ctx.n;
	rq.volume_context = (Csi__V1__ValidateVolumeCapabilitiesRequest__VolumeContextEntry **)ctx.p;
	assert_int_equal(call(e, "ValidateVolumeCapabilities", &rq.base,
			      &csi__v1__validate_volume_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_OK);
	assert_non_null(r->confirmed);
	pbfree(r);
	ctx.e[0].value = "s3://elsewhere/x";
	assert_int_equal(call(e, "ValidateVolumeCapabilities", &rq.base,
			      &csi__v1__validate_volume_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_OK);
	assert_null(r->confirmed);
	pbfree(r);
	rq.n_volume_context = 0;

	caps_init(&c, true);
	rq.n_volume_capabilities = 2;
	assert_int_equal(call(e, "ValidateVolumeCapabilities", &rq.base,
			      &csi__v1__validate_volume_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_OK);
	assert_null(r->confirmed);
	assert_non_null(strstr(r->message, "block"));
	pbfree(r);

	/* A capability without its access mode is malformed, not unsupported. */
	caps_init(&c, false);
	c.cap[0].access_mode = NULL;
	rq.n_volume_capabilities = 1;
	assert_int_equal(call(e, "ValidateVolumeCapabilities", &rq.base,
			      &csi__v1__validate_volume_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "access_mode"));
	caps_init(&c, false);

	rq.n_volume_capabilities = 0;
	assert_int_equal(call(e, "ValidateVolumeCapabilities", &rq.base,
			      &csi__v1__validate_volume_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_INVALID_ARGUMENT);
	rq.n_volume_capabilities = 1;
	rq.volume_id = "objfs1:vol:def:nope";
	assert_int_equal(call(e, "ValidateVolumeCapabilities", &rq.base,
			      &csi__v1__validate_volume_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_NOT_FOUND);
	rq.volume_id = "some-other-driver-volume";
	assert_int_equal(call(e, "ValidateVolumeCapabilities", &rq.base,
			      &csi__v1__validate_volume_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_NOT_FOUND);
	rq.volume_id = "objfs1:vol:def:../x";
	assert_int_equal(call(e, "ValidateVolumeCapabilities", &rq.base,
			      &csi__v1__validate_volume_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_INVALID_ARGUMENT);
	rq.volume_id = "";
	assert_int_equal(call(e, "ValidateVolumeCapabilities", &rq.base,
			      &csi__v1__validate_volume_capabilities_response__descriptor,
			      &r, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_id"));
	free(id);
}

static void test_get_volume(void **state)
{
	struct env *e = *state;
	Csi__V1__ControllerGetVolumeResponse *g;
	struct objfs_rpc_status st;
	char *id = create_simple(e, "pvc-get");

	assert_int_equal(get_vol(e, id, &g, &st), OBJFS_RPC_OK);
	assert_string_equal(g->volume->volume_id, id);
	assert_int_equal(g->volume->capacity_bytes, (int64_t)GIB);
	assert_non_null(g->status);
	assert_non_null(g->status->volume_condition);
	assert_false(g->status->volume_condition->abnormal);
	assert_true(g->status->volume_condition->message[0] != '\0');
	pbfree(g);
	assert_int_equal(get_vol(e, "objfs1:vol:def:pvc-none", NULL, &st), OBJFS_RPC_NOT_FOUND);
	assert_int_equal(get_vol(e, "foreign", NULL, &st), OBJFS_RPC_NOT_FOUND);
	assert_int_equal(get_vol(e, "", NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	/* A store that fails gives no answer to make up. */
	objfs_fault_fail_next(e->fault, OBJFS_FOP_GET, 2, EIO);
	assert_int_equal(get_vol(e, id, &g, &st), OBJFS_RPC_UNAVAILABLE);
	objfs_fault_reset(e->fault);
	free(id);
}

static enum objfs_rpc_code list_vols(struct env *e, int max, const char *tok,
				     Csi__V1__ListVolumesResponse **r,
				     struct objfs_rpc_status *st)
{
	Csi__V1__ListVolumesRequest rq = CSI__V1__LIST_VOLUMES_REQUEST__INIT;

	rq.max_entries = max;
	rq.starting_token = (char *)(tok != NULL ? tok : "");
	return call(e, "ListVolumes", &rq.base, &csi__v1__list_volumes_response__descriptor,
		    r, st);
}

static void test_list_volumes(void **state)
{
	struct env *e = *state;
	Csi__V1__ListVolumesResponse *r;
	struct objfs_rpc_status st;
	char name[32], *ids[7], *tok = NULL;
	int seen[7] = { 0 };
	size_t i, j, total = 0, pages = 0;

	for (i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "pvc-list-%zu", i);
		ids[i] = create_simple(e, name);
	}
	/* A half-made volume (index, no record) is not listed. */
	assert_int_equal(objfs_store_del(e->local, "pvc-list-6/.objfs/volume"), 0);

	assert_int_equal(list_vols(e, 0, NULL, &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->n_entries, 6);
	assert_true(r->next_token == NULL || r->next_token[0] == '\0');
	pbfree(r);
	do {
		assert_int_equal(list_vols(e, 2, tok, &r, &st), OBJFS_RPC_OK);
		assert_true(r->n_entries <= 2);
		for (i = 0; i < r->n_entries; i++) {
			assert_non_null(r->entries[i]->status);
			assert_non_null(r->entries[i]->status->volume_condition);
			assert_false(r->entries[i]->status->volume_condition->abnormal);
			for (j = 0; j < 7; j++) {
				if (strcmp(ids[j], r->entries[i]->volume->volume_id) == 0)
					seen[j]++;
			}
			total++;
		}
		free(tok);
		tok = r->next_token != NULL && r->next_token[0] != '\0' ?
		      strdup(r->next_token) : NULL;
		pbfree(r);
		pages++;
	} while (tok != NULL && pages < 10);
	assert_int_equal(total, 6);
	for (j = 0; j < 6; j++)
		assert_int_equal(seen[j], 1);
	assert_int_equal(seen[6], 0);
	assert_int_equal(pages, 3);

	assert_int_equal(list_vols(e, 2, "garbage", &r, &st), OBJFS_RPC_ABORTED);
	assert_int_equal(list_vols(e, 2, "0123456789012345678901234567890123456789.0123456789abcdef",
				   &r, &st), OBJFS_RPC_ABORTED);
	assert_int_equal(list_vols(e, -1, NULL, &r, &st), OBJFS_RPC_INVALID_ARGUMENT);
	for (i = 0; i < 7; i++)
		free(ids[i]);
}

static void test_expand(void **state)
{
	struct env *e = *state;
	Csi__V1__ControllerExpandVolumeRequest rq = CSI__V1__CONTROLLER_EXPAND_VOLUME_REQUEST__INIT;
	Csi__V1__CapacityRange cr = CSI__V1__CAPACITY_RANGE__INIT;
	Csi__V1__ControllerExpandVolumeResponse *r;
	Csi__V1__ControllerGetVolumeResponse *g;
	struct objfs_rpc_status st;
	struct caps c;
	char *id = create_simple(e, "pvc-exp");

	rq.volume_id = id;
	assert_int_equal(call(e, "ControllerExpandVolume", &rq.base,
			      &csi__v1__controller_expand_volume_response__descriptor,
			      &r, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "capacity_range"));
	rq.capacity_range = &cr;
	cr.required_bytes = 3 * (int64_t)GIB;
	assert_int_equal(call(e, "ControllerExpandVolume", &rq.base,
			      &csi__v1__controller_expand_volume_response__descriptor,
			      &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->capacity_bytes, 3 * (int64_t)GIB);
	assert_false(r->node_expansion_required);
	pbfree(r);
	assert_int_equal(get_vol(e, id, &g, &st), OBJFS_RPC_OK);
	assert_int_equal(g->volume->capacity_bytes, 3 * (int64_t)GIB);
	pbfree(g);
	/* Smaller: nothing shrinks, the current size is the answer. */
	cr.required_bytes = (int64_t)GIB;
	assert_int_equal(call(e, "ControllerExpandVolume", &rq.base,
			      &csi__v1__controller_expand_volume_response__descriptor,
			      &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->capacity_bytes, 3 * (int64_t)GIB);
	pbfree(r);
	cr.required_bytes = 5 * (int64_t)GIB;
	cr.limit_bytes = 4 * (int64_t)GIB;
	assert_int_equal(call(e, "ControllerExpandVolume", &rq.base,
			      &csi__v1__controller_expand_volume_response__descriptor,
			      &r, &st), OBJFS_RPC_OUT_OF_RANGE);
	cr.limit_bytes = 0;
	caps_init(&c, true);
	rq.volume_capability = &c.cap[1];
	assert_int_equal(call(e, "ControllerExpandVolume", &rq.base,
			      &csi__v1__controller_expand_volume_response__descriptor,
			      &r, &st), OBJFS_RPC_INVALID_ARGUMENT);
	rq.volume_capability = NULL;
	rq.volume_id = "objfs1:vol:def:pvc-nothere";
	assert_int_equal(call(e, "ControllerExpandVolume", &rq.base,
			      &csi__v1__controller_expand_volume_response__descriptor,
			      &r, &st), OBJFS_RPC_NOT_FOUND);
	free(id);
}

static void test_capacity(void **state)
{
	struct env *e = *state;
	Csi__V1__GetCapacityRequest rq = CSI__V1__GET_CAPACITY_REQUEST__INIT;
	Csi__V1__GetCapacityResponse *r;
	struct objfs_rpc_status st;
	struct kvs p = { .n = 0 };

	assert_int_equal(call(e, "GetCapacity", &rq.base,
			      &csi__v1__get_capacity_response__descriptor, &r, &st), OBJFS_RPC_OK);
	assert_true(r->available_capacity > 0);   /* the temp dir's file system */
	assert_null(r->maximum_volume_size);
	pbfree(r);
	kvs_add(&p, &csi__v1__get_capacity_request__parameters_entry__descriptor,
		"bucket", "vols");
	rq.n_parameters = p.n;
	rq.parameters = (Csi__V1__GetCapacityRequest__ParametersEntry **)p.p;
	assert_int_equal(call(e, "GetCapacity", &rq.base,
			      &csi__v1__get_capacity_response__descriptor, &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->available_capacity, 0);   /* S3 reports none */
	pbfree(r);
}

/* ---- snapshots and clones ------------------------------------------------------- */

static void test_snapshots_and_clones(void **state)
{
	struct env *e = *state;
	Csi__V1__CreateSnapshotResponse *r, *r2;
	Csi__V1__CreateVolumeResponse *v;
	Csi__V1__GetSnapshotRequest gq = CSI__V1__GET_SNAPSHOT_REQUEST__INIT;
	Csi__V1__GetSnapshotResponse *g;
	Csi__V1__DeleteSnapshotRequest dq = CSI__V1__DELETE_SNAPSHOT_REQUEST__INIT;
	struct objfs_rpc_status st;
	struct create_args a = { 0 };
	char *src = create_simple(e, "pvc-src");
	char *other = create_simple(e, "pvc-other");
	char *sid;

	fill(e->local, "pvc-src", 12);   /* 12 x 8 bytes */
	assert_int_equal(snap(e, "snap-1", src, &r, &st), OBJFS_RPC_OK);
	sid = strdup(r->snapshot->snapshot_id);
	assert_string_equal(sid, "objfs1:snap:def:snap-1");
	assert_true(r->snapshot->ready_to_use);
	assert_int_equal(r->snapshot->size_bytes, 96);
	assert_string_equal(r->snapshot->source_volume_id, src);
	assert_non_null(r->snapshot->creation_time);
	assert_true(r->snapshot->creation_time->seconds > 1600000000);
	check_fill(e->local, ".objfs-snapshots/snap-1", 12);
	/* Idempotent; same name, other source: ALREADY_EXISTS. */
	assert_int_equal(snap(e, "snap-1", src, &r2, &st), OBJFS_RPC_OK);
	assert_string_equal(r2->snapshot->snapshot_id, sid);
	assert_int_equal(r2->snapshot->creation_time->seconds, r->snapshot->creation_time->seconds);
	pbfree(r2);
	pbfree(r);
	assert_int_equal(snap(e, "snap-1", other, NULL, &st), OBJFS_RPC_ALREADY_EXISTS);
	assert_int_equal(snap(e, "snap-2", "objfs1:vol:def:pvc-missing", NULL, &st),
			 OBJFS_RPC_NOT_FOUND);
	assert_int_equal(snap(e, "snap-2", "", NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "source_volume_id"));
	assert_int_equal(snap(e, "", src, NULL, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_int_equal(count_keys(e->local, ".objfs-snapshots/snap-2/"), 0);

	/* The volume changes after the cut: the snapshot does not. */
	put(e->local, "pvc-src/f/000", "changed");
	gq.snapshot_id = sid;
	assert_int_equal(call(e, "GetSnapshot", &gq.base, &csi__v1__get_snapshot_response__descriptor,
			      &g, &st), OBJFS_RPC_OK);
	assert_int_equal(g->snapshot->size_bytes, 96);
	pbfree(g);
	gq.snapshot_id = "objfs1:snap:def:snap-none";
	assert_int_equal(call(e, "GetSnapshot", &gq.base, &csi__v1__get_snapshot_response__descriptor,
			      &g, &st), OBJFS_RPC_NOT_FOUND);

	/* Restore from the snapshot. */
	a.name = "pvc-restore";
	a.snapshot_src = sid;
	assert_int_equal(create(e, &a, &v, &st), OBJFS_RPC_OK);
	assert_non_null(v->volume->content_source);
	assert_string_equal(v->volume->content_source->snapshot->snapshot_id, sid);
	pbfree(v);
	check_fill(e->local, "pvc-restore", 12);
	assert_absent(e->local, "pvc-restore/.objfs/snapshot");
	/* Again: the same volume; with another source: ALREADY_EXISTS. */
	assert_int_equal(create(e, &a, &v, &st), OBJFS_RPC_OK);
	pbfree(v);
	a.snapshot_src = NULL;
	a.volume_src = other;
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_ALREADY_EXISTS);
	/* Too small for the content. */
	a.name = "pvc-small";
	a.volume_src = NULL;
	a.snapshot_src = sid;
	a.required = 50;
	a.limit = 50;
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_OUT_OF_RANGE);
	a.required = a.limit = 0;
	a.snapshot_src = "objfs1:snap:def:snap-none";
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_NOT_FOUND);

	/* Clone the (changed) volume. */
	a.name = "pvc-clone";
	a.snapshot_src = NULL;
	a.volume_src = src;
	assert_int_equal(create(e, &a, &v, &st), OBJFS_RPC_OK);
	assert_string_equal(v->volume->content_source->volume->volume_id, src);
	pbfree(v);
	assert_content(e->local, "pvc-clone/f/000", "changed");
	assert_content(e->local, "pvc-clone/f/011", "data-011");
	a.name = "pvc-clone2";
	a.volume_src = "objfs1:vol:def:pvc-missing";
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_NOT_FOUND);

	/* The snapshot outlives its volume; delete it twice. */
	assert_int_equal(delete_vol(e, src, NULL, &st), OBJFS_RPC_OK);
	gq.snapshot_id = sid;
	assert_int_equal(call(e, "GetSnapshot", &gq.base, &csi__v1__get_snapshot_response__descriptor,
			      &g, &st), OBJFS_RPC_OK);
	pbfree(g);
	dq.snapshot_id = sid;
	assert_int_equal(call(e, "DeleteSnapshot", &dq.base,
			      &csi__v1__delete_snapshot_response__descriptor, NULL, &st), OBJFS_RPC_OK);
	assert_int_equal(count_keys(e->local, ".objfs-snapshots/"), 0);
	assert_int_equal(call(e, "DeleteSnapshot", &dq.base,
			      &csi__v1__delete_snapshot_response__descriptor, NULL, &st), OBJFS_RPC_OK);
	/* Ids objfs did not make: OK, nothing touched; an empty one is
	 * INVALID_ARGUMENT. */
	objfs_fault_reset(e->fault);
	dq.snapshot_id = "objfs1:snap:def:../x";
	assert_int_equal(call(e, "DeleteSnapshot", &dq.base,
			      &csi__v1__delete_snapshot_response__descriptor, NULL, &st),
			 OBJFS_RPC_OK);
	dq.snapshot_id = "reallyfakesnapshotid";
	assert_int_equal(call(e, "DeleteSnapshot", &dq.base,
			      &csi__v1__delete_snapshot_response__descriptor, NULL, &st),
			 OBJFS_RPC_OK);
	assert_int_equal(objfs_fault_calls(e->fault, OBJFS_FOP_ALL), 0);
	dq.snapshot_id = "objfs1:snap:def:never-made";
	assert_int_equal(call(e, "DeleteSnapshot", &dq.base,
			      &csi__v1__delete_snapshot_response__descriptor, NULL, &st),
			 OBJFS_RPC_OK);
	assert_int_equal(objfs_fault_calls(e->fault, OBJFS_FOP_DEL) +
			 objfs_fault_calls(e->fault, OBJFS_FOP_DEL_MANY) +
			 objfs_fault_calls(e->fault, OBJFS_FOP_PUT), 0);
	dq.snapshot_id = "";
	assert_int_equal(call(e, "DeleteSnapshot", &dq.base,
			      &csi__v1__delete_snapshot_response__descriptor, NULL, &st),
			 OBJFS_RPC_INVALID_ARGUMENT);
	free(sid);
	free(src);
	free(other);
}

static enum objfs_rpc_code list_snaps(struct env *e, int max, const char *tok,
				      const char *sid, const char *src,
				      Csi__V1__ListSnapshotsResponse **r,
				      struct objfs_rpc_status *st)
{
	Csi__V1__ListSnapshotsRequest rq = CSI__V1__LIST_SNAPSHOTS_REQUEST__INIT;

	rq.max_entries = max;
	rq.starting_token = (char *)(tok != NULL ? tok : "");
	rq.snapshot_id = (char *)(sid != NULL ? sid : "");
	rq.source_volume_id = (char *)(src != NULL ? src : "");
	return call(e, "ListSnapshots", &rq.base, &csi__v1__list_snapshots_response__descriptor,
		    r, st);
}

static void test_list_snapshots(void **state)
{
	struct env *e = *state;
	Csi__V1__ListSnapshotsResponse *r;
	struct objfs_rpc_status st;
	char *va = create_simple(e, "pvc-a");
	char *vb = create_simple(e, "pvc-b");
	char name[32], *tok = NULL;
	size_t i, total = 0, pages = 0;

	fill(e->local, "pvc-a", 2);
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "snap-%zu", i);
		assert_int_equal(snap(e, name, i < 3 ? va : vb, NULL, &st), OBJFS_RPC_OK);
	}
	assert_int_equal(list_snaps(e, 0, NULL, NULL, NULL, &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->n_entries, 5);
	pbfree(r);
	assert_int_equal(list_snaps(e, 0, NULL, NULL, va, &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->n_entries, 3);
	for (i = 0; i < r->n_entries; i++)
		assert_string_equal(r->entries[i]->snapshot->source_volume_id, va);
	pbfree(r);
	assert_int_equal(list_snaps(e, 0, NULL, "objfs1:snap:def:snap-4", NULL, &r, &st),
			 OBJFS_RPC_OK);
	assert_int_equal(r->n_entries, 1);
	assert_string_equal(r->entries[0]->snapshot->source_volume_id, vb);
	pbfree(r);
	assert_int_equal(list_snaps(e, 0, NULL, "objfs1:snap:def:snap-4", va, &r, &st),
			 OBJFS_RPC_OK);
	assert_int_equal(r->n_entries, 0);
	pbfree(r);
	assert_int_equal(list_snaps(e, 0, NULL, "objfs1:snap:def:snap-9", NULL, &r, &st),
			 OBJFS_RPC_OK);
	assert_int_equal(r->n_entries, 0);
	pbfree(r);
	assert_int_equal(list_snaps(e, 0, NULL, "not-ours", NULL, &r, &st), OBJFS_RPC_OK);
	assert_int_equal(r->n_entries, 0);
	pbfree(r);
	do {
		assert_int_equal(list_snaps(e, 2, tok, NULL, NULL, &r, &st), OBJFS_RPC_OK);
		assert_true(r->n_entries <= 2);
		total += r->n_entries;
		free(tok);
		tok = r->next_token != NULL && r->next_token[0] != '\0' ?
		      strdup(r->next_token) : NULL;
		pbfree(r);
		pages++;
	} while (tok != NULL && pages < 10);
	assert_int_equal(total, 5);
	assert_int_equal(pages, 3);
	assert_int_equal(list_snaps(e, 2, "bogus-token", NULL, NULL, &r, &st), OBJFS_RPC_ABORTED);
	/* A volume token is not a snapshot token. */
	{
		Csi__V1__ListVolumesRequest lq = CSI__V1__LIST_VOLUMES_REQUEST__INIT;
		Csi__V1__ListVolumesResponse *lr;

		lq.max_entries = 1;
		assert_int_equal(call(e, "ListVolumes", &lq.base,
				      &csi__v1__list_volumes_response__descriptor, &lr, &st),
				 OBJFS_RPC_OK);
		assert_true(lr->next_token[0] != '\0');
		assert_int_equal(list_snaps(e, 2, lr->next_token, NULL, NULL, &r, &st),
				 OBJFS_RPC_ABORTED);
		pbfree(lr);
	}
	free(va);
	free(vb);
}

/* ---- concurrency and crash consistency ------------------------------------------- */

struct bg {
	struct env *e;
	const char *name;
	enum objfs_rpc_code code;
};

static void *bg_create(void *arg)
{
	struct bg *b = arg;
	struct create_args a = { .name = b->name };
	Csi__V1__CreateVolumeResponse *r = NULL;
	struct objfs_rpc_status st;

	b->code = create(b->e, &a, &r, &st);
	pbfree(r);
	return NULL;
}

static void test_concurrent_same_name(void **state)
{
	struct env *e = *state;
	struct bg b1 = { e, "pvc-race", OBJFS_RPC_UNKNOWN };
	struct bg b2 = { e, "pvc-other-race", OBJFS_RPC_UNKNOWN };
	struct create_args a = { .name = "pvc-race" };
	Csi__V1__ControllerGetVolumeResponse *g;
	struct objfs_rpc_status st;
	pthread_t t1, t2;

	objfs_fault_delay(e->fault, OBJFS_FOP_PUT, 150);
	assert_int_equal(pthread_create(&t1, NULL, bg_create, &b1), 0);
	usleep(100 * 1000);
	/* The same name while the first call runs: ABORTED, nothing made. */
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_ABORTED);
	/* Another name proceeds in parallel. */
	assert_int_equal(pthread_create(&t2, NULL, bg_create, &b2), 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	objfs_fault_reset(e->fault);
	assert_int_equal(b1.code, OBJFS_RPC_OK);
	assert_int_equal(b2.code, OBJFS_RPC_OK);
	assert_int_equal(get_vol(e, "objfs1:vol:def:pvc-race", &g, &st), OBJFS_RPC_OK);
	pbfree(g);
	/* Claims are released: the call works again. */
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_OK);
}

struct bg_snap {
	struct env *e;
	const char *src;
	enum objfs_rpc_code code;
};

static void *bg_snapshot(void *arg)
{
	struct bg_snap *b = arg;
	Csi__V1__CreateSnapshotResponse *r = NULL;
	struct objfs_rpc_status st;

	b->code = snap(b->e, "snap-busy", b->src, &r, &st);
	pbfree(r);
	return NULL;
}

static void test_snapshot_claims_source(void **state)
{
	struct env *e = *state;
	char *src = create_simple(e, "pvc-busy");
	struct bg_snap b = { e, src, OBJFS_RPC_UNKNOWN };
	struct objfs_rpc_status st;
	pthread_t t;

	fill(e->local, "pvc-busy", 4);
	objfs_fault_delay(e->fault, OBJFS_FOP_COPY, 100);
	assert_int_equal(pthread_create(&t, NULL, bg_snapshot, &b), 0);
	usleep(150 * 1000);
	/* While the volume is being copied it cannot be deleted. */
	assert_int_equal(delete_vol(e, src, NULL, &st), OBJFS_RPC_ABORTED);
	pthread_join(t, NULL);
	objfs_fault_reset(e->fault);
	assert_int_equal(b.code, OBJFS_RPC_OK);
	check_fill(e->local, ".objfs-snapshots/snap-busy", 4);
	assert_int_equal(delete_vol(e, src, NULL, &st), OBJFS_RPC_OK);
	free(src);
}

static void test_create_fault_and_retry(void **state)
{
	struct env *e = *state;
	struct create_args a = { .name = "pvc-crash" };
	Csi__V1__CreateVolumeResponse *r;
	Csi__V1__ListVolumesResponse *l;
	struct objfs_rpc_status st;
	char *src = create_simple(e, "pvc-crash-src");

	/* The store refuses the writes: no volume, nothing reported. */
	objfs_fault_fail_next(e->fault, OBJFS_FOP_PUT, 3, EIO);
	assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_UNAVAILABLE);
	objfs_fault_reset(e->fault);
	assert_int_equal(get_vol(e, "objfs1:vol:def:pvc-crash", NULL, &st), OBJFS_RPC_NOT_FOUND);
	assert_int_equal(create(e, &a, &r, &st), OBJFS_RPC_OK);
	pbfree(r);

	/* A clone whose copies all fail: nothing is left behind, neither
	 * index entries nor objects (issue: two index records outlived a
	 * failed create). */
	fill(e->local, "pvc-crash-src", 9);
	{
		size_t idx = count_keys(e->local, ".objfs-csi/");

		a.name = "pvc-undo";
		a.volume_src = src;
		objfs_fault_fail_prob(e->fault, OBJFS_FOP_COPY, 1.0, EIO, 3);
		assert_int_equal(create(e, &a, NULL, &st), OBJFS_RPC_UNAVAILABLE);
		objfs_fault_reset(e->fault);
		assert_int_equal(count_keys(e->local, ".objfs-csi/"), idx);
		assert_int_equal(count_keys(e->local, "pvc-undo/"), 0);
		assert_int_equal(get_vol(e, "objfs1:vol:def:pvc-undo", NULL, &st),
				 OBJFS_RPC_NOT_FOUND);
	}
	/* A clone whose copies fail half-way: never reported, then finished. */
	a.name = "pvc-crash-clone";
	a.volume_src = src;
	objfs_fault_fail_prob(e->fault, OBJFS_FOP_COPY, 0.4, EIO, 11);
	while (create(e, &a, &r, &st) != OBJFS_RPC_OK) {
		assert_int_equal(st.code, OBJFS_RPC_UNAVAILABLE);
		assert_int_equal(get_vol(e, "objfs1:vol:def:pvc-crash-clone", NULL, &st),
				 OBJFS_RPC_NOT_FOUND);
	}
	objfs_fault_reset(e->fault);
	pbfree(r);
	check_fill(e->local, "pvc-crash-clone", 9);
	assert_int_equal(list_vols(e, 0, NULL, &l, &st), OBJFS_RPC_OK);
	assert_int_equal(l->n_entries, 3);
	pbfree(l);
	/* A snapshot whose copies fail: not listed until it completes. */
	objfs_fault_fail_prob(e->fault, OBJFS_FOP_COPY, 0.4, EIO, 5);
	{
		Csi__V1__CreateSnapshotResponse *s = NULL;
		Csi__V1__ListSnapshotsResponse *ls;

		while (snap(e, "snap-crash", src, &s, &st) != OBJFS_RPC_OK) {
			assert_int_equal(list_snaps(e, 0, NULL, NULL, NULL, &ls, &st), OBJFS_RPC_OK);
			assert_int_equal(ls->n_entries, 0);
			pbfree(ls);
		}
		objfs_fault_reset(e->fault);
		assert_int_equal(s->snapshot->size_bytes, 72);
		pbfree(s);
	}
	check_fill(e->local, ".objfs-snapshots/snap-crash", 9);
	free(src);
}

static void test_node_mode_has_no_controller(void **state)
{
	struct objfs_csi_config cfg;
	struct objfs_csi *csi = NULL;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.mode = OBJFS_CSI_MODE_NODE;
	cfg.node_id = "n1";
	assert_int_equal(objfs_csi_create(&cfg, NULL, NULL, &csi), 0);
	assert_null(csi->controller);
	assert_false(objfs_csi_serves(csi, "/csi.v1.Controller/CreateVolume"));
	objfs_csi_destroy(csi);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_kvtext),
		cmocka_unit_test(test_node_mode_has_no_controller),
		T(test_capabilities),
		T(test_create_default_store),
		T(test_create_capacity),
		T(test_create_invalid),
		T(test_create_long_name),
		T(test_create_bucket_with_secrets),
		T(test_create_bucket_no_credentials),
		T(test_bucket_snapshot_secrets),
		T(test_ca_bundle_secret),
		T(test_default_store_on_s3),
		T(test_delete),
		T(test_delete_fault_and_retry),
		T(test_on_delete_retain_archive),
		T(test_base_prefix_holds_everything),
		T(test_old_layout_still_read),
		T(test_validate),
		T(test_get_volume),
		T(test_list_volumes),
		T(test_expand),
		T(test_capacity),
		T(test_snapshots_and_clones),
		T(test_list_snapshots),
		T(test_concurrent_same_name),
		T(test_snapshot_claims_source),
		T(test_create_fault_and_retry),
	};
	return cmocka_run_group_tests_name("csi_controller", tests, NULL, NULL);
}
