/*
 * Unit tests of the CSI Node service: the handlers, called through the
 * dispatcher with packed requests, over a fake mounter that keeps a table
 * of mounts and processes in memory (no real mount, no root needed), and
 * the records of the state directory.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/creds.h"
#include "common/io.h"
#include "common/metrics_http.h"
#include "csi.pb-c.h"
#include "csi/driver.h"
#include "csi/mounter.h"
#include "csi/node.h"
#include "csi/noderec.h"
#include "csi/rpc.h"

#define PLUGIN_SECRET "PLUGINSECRETxyz/123"
#define STAGE_SECRET "STAGESECRET-abc+987"

/* ---- the fake mounter ----------------------------------------------------- */

struct fake_mount {
	char path[PATH_MAX];
	unsigned long dev;
	bool fuse;
	bool readonly;
};

struct fake {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fake_mount mounts[64];
	int n_mounts;
	bool alive[1000];
	pid_t next_pid;
	unsigned long next_dev;
	int starts, stops, binds, aborts;
	int start_err;
	char last_options[4096];
	char last_source[1024];
	char last_access_key[128];
	char last_secret[128];
	char last_role[128], last_token_file[256];
	int statfs_err;
	int probe_err;
	char probe_url[1024];
	bool block;             /* start() waits until block is cleared */
	bool in_start;
};

static struct fake_mount *top_mount(struct fake *f, const char *path)
{
	int i;

	for (i = f->n_mounts - 1; i >= 0; i--) {
		if (strcmp(f->mounts[i].path, path) == 0)
			return &f->mounts[i];
	}
	return NULL;
}

static void add_mount(struct fake *f, const char *path, unsigned long dev, bool ro)
{
	struct fake_mount *m;

	assert_true(f->n_mounts < 64);
	m = &f->mounts[f->n_mounts++];
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->dev = dev;
	m->fuse = true;
	m->readonly = ro;
}

static int fake_start(void *ctx, const struct objfs_csi_mount_spec *spec,
		      struct objfs_csi_proc *out, char *msg, size_t cap)
{
	struct fake *f = ctx;
	int err = 0;

	pthread_mutex_lock(&f->lock);
	f->in_start = true;
	pthread_cond_broadcast(&f->cond);
	while (f->block)
		pthread_cond_wait(&f->cond, &f->lock);
	f->in_start = false;
	f->starts++;
	snprintf(f->last_options, sizeof(f->last_options), "%s", spec->options);
	snprintf(f->last_source, sizeof(f->last_source), "%s", spec->source);
	snprintf(f->last_access_key, sizeof(f->last_access_key), "%s",
		 spec->creds != NULL && spec->creds->access_key != NULL ?
		 spec->creds->access_key : "");
	snprintf(f->last_secret, sizeof(f->last_secret), "%s",
		 spec->creds != NULL && spec->creds->secret_key != NULL ?
		 spec->creds->secret_key : "");
	snprintf(f->last_role, sizeof(f->last_role), "%s",
		 spec->creds != NULL && spec->creds->role_arn != NULL ?
		 spec->creds->role_arn : "");
	snprintf(f->last_token_file, sizeof(f->last_token_file), "%s",
		 spec->creds != NULL && spec->creds->web_identity_token_file != NULL ?
		 spec->creds->web_identity_token_file : "");
	if (f->start_err != 0) {
		err = f->start_err;
		snprintf(msg, cap, "fake start failure");
		goto out;
	}
	out->pid = f->next_pid++;
	out->start = 77;
	f->alive[out->pid] = true;
	add_mount(f, spec->mountpoint, f->next_dev++, false);
out:
	pthread_mutex_unlock(&f->lock);
	return err;
}

static bool fake_alive(void *ctx, const struct objfs_csi_proc *p)
{
	struct fake *f = ctx;
	bool a;

	pthread_mutex_lock(&f->lock);
	a = p->pid > 0 && p->pid < 1000 && f->alive[p->pid] && p->start == 77;
	pthread_mutex_unlock(&f->lock);
	return a;
}

static int fake_stop(void *ctx, const struct objfs_csi_proc *p, unsigned grace_ms)
{
	struct fake *f = ctx;

	(void)grace_ms;
	pthread_mutex_lock(&f->lock);
	if (p->pid > 0 && p->pid < 1000)
		f->alive[p->pid] = false;
	f->stops++;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static int fake_bind(void *ctx, const char *src, const char *dst, bool readonly)
{
	struct fake *f = ctx;
	struct fake_mount *m;
	struct stat sb;
	int err = 0;

	pthread_mutex_lock(&f->lock);
	m = top_mount(f, src);
	if (m == NULL) {
		err = ENOENT;
		goto out;
	}
	/* The target directory must exist, as for mount(2). */
	if (stat(dst, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		err = ENOENT;
		goto out;
	}
	add_mount(f, dst, m->dev, readonly);
	f->binds++;
out:
	pthread_mutex_unlock(&f->lock);
	return err;
}

static int fake_unmount(void *ctx, const char *path, bool lazy)
{
	struct fake *f = ctx;
	int i, err = EINVAL;

	(void)lazy;
	pthread_mutex_lock(&f->lock);
	for (i = f->n_mounts - 1; i >= 0; i--) {
		if (strcmp(f->mounts[i].path, path) == 0) {
			memmove(&f->mounts[i], &f->mounts[i + 1],
				(size_t)(f->n_mounts - i - 1) * sizeof(f->mounts[0]));
			f->n_mounts--;
			err = 0;
			break;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return err;
}

static void fake_abort(void *ctx, const char *path, unsigned long dev)
{
	struct fake *f = ctx;

	(void)path;
	(void)dev;
	pthread_mutex_lock(&f->lock);
	f->aborts++;
	pthread_mutex_unlock(&f->lock);
}

static int fake_mount_info(void *ctx, const char *path, struct objfs_csi_mount_info *out)
{
	struct fake *f = ctx;
	struct fake_mount *m;
	int err = ENOENT;

	pthread_mutex_lock(&f->lock);
	m = top_mount(f, path);
	if (m != NULL) {
		out->fuse = m->fuse;
		out->dev = m->dev;
		err = 0;
	}
	pthread_mutex_unlock(&f->lock);
	return err;
}

static int fake_statfs(void *ctx, const char *path, unsigned timeout_ms, struct statvfs *out)
{
	struct fake *f = ctx;

	(void)path;
	(void)timeout_ms;
	if (f->statfs_err != 0)
		return f->statfs_err;
	memset(out, 0, sizeof(*out));
	out->f_frsize = 4096;
	out->f_bsize = 4096;
	out->f_blocks = 1000;
	out->f_bfree = 600;
	out->f_bavail = 550;
	out->f_files = 200;
	out->f_ffree = 150;
	out->f_favail = 140;
	return 0;
}

/* The driver's store factory, as NodeGetVolumeStats' probe uses it:
 * records the url, fails with probe_err, else opens a local store. */
static struct fake *probe_fake;
static char probe_store[PATH_MAX];

static int fake_store_open(const struct objfs_store_config *sc, struct objfs_log *log,
			   struct objfs_store **out)
{
	struct objfs_store_config lc;
	struct fake *f = probe_fake;

	*out = NULL;
	snprintf(f->probe_url, sizeof(f->probe_url), "%s", sc->url);
	assert_int_equal(sc->retry.max_attempts, 1);
	if (f->probe_err != 0)
		return f->probe_err;
	memset(&lc, 0, sizeof(lc));
	lc.url = probe_store;
	return objfs_store_stack_create(&lc, log, out);
}

static const struct objfs_csi_mounter_ops fake_ops = {
	.start = fake_start,
	.alive = fake_alive,
	.stop = fake_stop,
	.bind = fake_bind,
	.unmount = fake_unmount,
	.abort_conn = fake_abort,
	.mount_info = fake_mount_info,
	.statfs = fake_statfs,
};

/* ---- fixture ---------------------------------------------------------------- */

struct fx {
	char root[64];
	char kubelet[128];
	char state[128];
	char staging[256];
	char target1[256];
	char target2[256];
	struct fake fake;
	struct objfs_csi_mounter mounter;
	struct objfs_csi *csi;
};

static struct objfs_csi *make_driver(struct fx *x)
{
	struct objfs_csi_config cfg;
	struct objfs_csi *csi = NULL;

	memset(&cfg, 0, sizeof(cfg));
	cfg.mode = OBJFS_CSI_MODE_NODE;
	cfg.node_id = "node-1";
	cfg.version = "9.9.9-test";
	cfg.state_dir = x->state;
	cfg.kubelet_dir = x->kubelet;
	cfg.mount_program = "/nonexistent/objfs-mount";
	cfg.mount_memory_mib = 64;
	cfg.store.url = "s3://bucket/vols";
	cfg.store.s3.endpoint = "http://127.0.0.1:9";
	cfg.store.s3.region = "us-east-1";
	cfg.store.s3.path_style = true;
	cfg.store.s3.access_key = "AKIDPLUGIN";
	cfg.store.s3.secret_key = PLUGIN_SECRET;
	cfg.mounter = &x->mounter;
	cfg.store_open = fake_store_open;
	probe_fake = &x->fake;
	snprintf(probe_store, sizeof(probe_store), "file://%s/store", x->root);
	assert_int_equal(objfs_csi_create(&cfg, NULL, NULL, &csi), 0);
	assert_non_null(csi->node);
	return csi;
}

static void mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	size_t i;

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (i = 1; tmp[i] != '\0'; i++) {
		if (tmp[i] == '/') {
			tmp[i] = '\0';
			mkdir(tmp, 0755);
			tmp[i] = '/';
		}
	}
	mkdir(tmp, 0755);
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	char *p;

	assert_non_null(x);
	snprintf(x->root, sizeof(x->root), "/tmp/objfs-node-test-XXXXXX");
	p = mkdtemp(x->root);
	assert_non_null(p);
	snprintf(x->kubelet, sizeof(x->kubelet), "%s/kubelet", x->root);
	snprintf(x->state, sizeof(x->state), "%s/state", x->root);
	snprintf(x->staging, sizeof(x->staging),
		 "%s/plugins/kubernetes.io/csi/objfs.csi.io/abc/globalmount", x->kubelet);
	snprintf(x->target1, sizeof(x->target1),
		 "%s/pods/p1/volumes/kubernetes.io~csi/pv/mount", x->kubelet);
	snprintf(x->target2, sizeof(x->target2),
		 "%s/pods/p2/volumes/kubernetes.io~csi/pv/mount", x->kubelet);
	mkdir_p(x->staging);
	mkdir_p(x->target1);
	rmdir(x->target1);
	mkdir_p(x->target2);
	rmdir(x->target2);
	pthread_mutex_init(&x->fake.lock, NULL);
	pthread_cond_init(&x->fake.cond, NULL);
	x->fake.next_pid = 100;
	x->fake.next_dev = 40;
	x->mounter.ops = &fake_ops;
	x->mounter.ctx = &x->fake;
	x->mounter.watchdog_ms = 0;
	x->mounter.ready_timeout_ms = 1000;
	x->mounter.stop_grace_ms = 10;
	x->mounter.stats_timeout_ms = 100;
	x->csi = make_driver(x);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	char cmd[PATH_MAX + 32];

	objfs_csi_destroy(x->csi);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->root);
	assert_int_equal(system(cmd), 0);
	pthread_mutex_destroy(&x->fake.lock);
	pthread_cond_destroy(&x->fake.cond);
	free(x);
	return 0;
}

/* ---- calling ---------------------------------------------------------------- */

static enum objfs_rpc_code call(struct objfs_csi *csi, const char *method,
				const ProtobufCMessage *msg,
				const ProtobufCMessageDescriptor *desc,
				ProtobufCMessage **resp, struct objfs_rpc_status *st)
{
	char path[128];
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf = malloc(len + 1);
	uint8_t *out = NULL;
	size_t out_len = 0;
	enum objfs_rpc_code code;

	assert_non_null(buf);
	protobuf_c_message_pack(msg, buf);
	snprintf(path, sizeof(path), "/csi.v1.Node/%s", method);
	code = objfs_rpc_dispatch(csi->methods, csi->n_methods, csi, path, buf, len,
				  &out, &out_len, st);
	if (resp != NULL)
		*resp = NULL;
	if (code == OBJFS_RPC_OK) {
		if (resp != NULL) {
			*resp = protobuf_c_message_unpack(desc, NULL, out_len, out);
			assert_non_null(*resp);
		}
	} else {
		assert_null(out);
		assert_true(st->msg[0] != '\0');
	}
	free(out);
	free(buf);
	return code;
}

/* Arguments of a stage or publish request. */
struct args {
	const char *volume_id;
	const char *staging;
	const char *target;
	int mode;                 /* access mode; 0: MULTI_NODE_MULTI_WRITER */
	bool block;
	bool no_cap;
	const char *group;
	const char *fs_type;
	const char *flag;         /* one mount flag */
	bool readonly;
	const char *source;       /* volume_context source */
	const char *mount_options;
	const char *secret_key;   /* stage secrets (with access key AKIDSTAGE) */
	const char *ca_bundle;    /* stage secret caBundle */
	const char *role_arn;     /* stage secret roleArn */
};

static enum objfs_rpc_code do_stage(struct objfs_csi *csi, const struct args *a,
				    struct objfs_rpc_status *st)
{
	Csi__V1__NodeStageVolumeRequest r = CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
	Csi__V1__VolumeCapability cap = CSI__V1__VOLUME_CAPABILITY__INIT;
	Csi__V1__VolumeCapability__AccessMode am = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__INIT;
	Csi__V1__VolumeCapability__MountVolume mv = CSI__V1__VOLUME_CAPABILITY__MOUNT_VOLUME__INIT;
	Csi__V1__VolumeCapability__BlockVolume bv = CSI__V1__VOLUME_CAPABILITY__BLOCK_VOLUME__INIT;
	Csi__V1__NodeStageVolumeRequest__VolumeContextEntry ctx[2] = {
		CSI__V1__NODE_STAGE_VOLUME_REQUEST__VOLUME_CONTEXT_ENTRY__INIT,
		CSI__V1__NODE_STAGE_VOLUME_REQUEST__VOLUME_CONTEXT_ENTRY__INIT,
	};
	Csi__V1__NodeStageVolumeRequest__VolumeContextEntry *ctxp[2];
	Csi__V1__NodeStageVolumeRequest__SecretsEntry sec[3] = {
		CSI__V1__NODE_STAGE_VOLUME_REQUEST__SECRETS_ENTRY__INIT,
		CSI__V1__NODE_STAGE_VOLUME_REQUEST__SECRETS_ENTRY__INIT,
		CSI__V1__NODE_STAGE_VOLUME_REQUEST__SECRETS_ENTRY__INIT,
	};
	Csi__V1__NodeStageVolumeRequest__SecretsEntry *secp[3] = { &sec[0], &sec[1], &sec[2] };
	char *flags[1];
	ProtobufCMessage *resp = NULL;
	enum objfs_rpc_code code;

	r.volume_id = (char *)(a->volume_id != NULL ? a->volume_id : "");
	r.staging_target_path = (char *)(a->staging != NULL ? a->staging : "");
	am.mode = a->mode != 0 ? a->mode :
		  CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER;
	cap.access_mode = &am;
	if (a->block) {
		cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
		cap.block = &bv;
	} else {
		cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
		cap.mount = &mv;
		if (a->group != NULL)
			mv.volume_mount_group = (char *)a->group;
		if (a->fs_type != NULL)
			mv.fs_type = (char *)a->fs_type;
		if (a->flag != NULL) {
			flags[0] = (char *)a->flag;
			mv.mount_flags = flags;
			mv.n_mount_flags = 1;
		}
	}
	if (!a->no_cap)
		r.volume_capability = &cap;
	if (a->source != NULL) {
		ctx[r.n_volume_context].key = (char *)"source";
		ctx[r.n_volume_context].value = (char *)a->source;
		ctxp[r.n_volume_context] = &ctx[r.n_volume_context];
		r.n_volume_context++;
	}
	if (a->mount_options != NULL) {
		ctx[r.n_volume_context].key = (char *)"mountOptions";
		ctx[r.n_volume_context].value = (char *)a->mount_options;
		ctxp[r.n_volume_context] = &ctx[r.n_volume_context];
		r.n_volume_context++;
	}
	r.volume_context = ctxp;
	if (a->secret_key != NULL) {
		sec[0].key = (char *)"accessKeyID";
		sec[0].value = (char *)"AKIDSTAGE";
		sec[1].key = (char *)"secretAccessKey";
		sec[1].value = (char *)a->secret_key;
		r.secrets = secp;
		r.n_secrets = 2;
	}
	if (a->role_arn != NULL) {
		sec[r.n_secrets].key = (char *)"roleArn";
		sec[r.n_secrets].value = (char *)a->role_arn;
		r.secrets = secp;
		r.n_secrets++;
	}
	if (a->ca_bundle != NULL) {
		sec[r.n_secrets].key = (char *)"caBundle";
		sec[r.n_secrets].value = (char *)a->ca_bundle;
		r.secrets = secp;
		r.n_secrets++;
	}
	code = call(csi, "NodeStageVolume", &r.base,
		    &csi__v1__node_stage_volume_response__descriptor, &resp, st);
	if (resp != NULL)
		protobuf_c_message_free_unpacked(resp, NULL);
	return code;
}

static enum objfs_rpc_code do_publish(struct objfs_csi *csi, const struct args *a,
				      struct objfs_rpc_status *st)
{
	Csi__V1__NodePublishVolumeRequest r = CSI__V1__NODE_PUBLISH_VOLUME_REQUEST__INIT;
	Csi__V1__VolumeCapability cap = CSI__V1__VOLUME_CAPABILITY__INIT;
	Csi__V1__VolumeCapability__AccessMode am = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__INIT;
	Csi__V1__VolumeCapability__MountVolume mv = CSI__V1__VOLUME_CAPABILITY__MOUNT_VOLUME__INIT;
	ProtobufCMessage *resp = NULL;
	enum objfs_rpc_code code;

	r.volume_id = (char *)(a->volume_id != NULL ? a->volume_id : "");
	r.staging_target_path = (char *)(a->staging != NULL ? a->staging : "");
	r.target_path = (char *)(a->target != NULL ? a->target : "");
	r.readonly = a->readonly;
	am.mode = a->mode != 0 ? a->mode :
		  CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER;
	cap.access_mode = &am;
	cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
	cap.mount = &mv;
	if (a->group != NULL)
		mv.volume_mount_group = (char *)a->group;
	if (!a->no_cap)
		r.volume_capability = &cap;
	code = call(csi, "NodePublishVolume", &r.base,
		    &csi__v1__node_publish_volume_response__descriptor, &resp, st);
	if (resp != NULL)
		protobuf_c_message_free_unpacked(resp, NULL);
	return code;
}

static enum objfs_rpc_code do_unpublish(struct objfs_csi *csi, const char *id,
					const char *target, struct objfs_rpc_status *st)
{
	Csi__V1__NodeUnpublishVolumeRequest r = CSI__V1__NODE_UNPUBLISH_VOLUME_REQUEST__INIT;
	ProtobufCMessage *resp = NULL;
	enum objfs_rpc_code code;

	r.volume_id = (char *)id;
	r.target_path = (char *)target;
	code = call(csi, "NodeUnpublishVolume", &r.base,
		    &csi__v1__node_unpublish_volume_response__descriptor, &resp, st);
	if (resp != NULL)
		protobuf_c_message_free_unpacked(resp, NULL);
	return code;
}

static enum objfs_rpc_code do_unstage(struct objfs_csi *csi, const char *id,
				      const char *staging, struct objfs_rpc_status *st)
{
	Csi__V1__NodeUnstageVolumeRequest r = CSI__V1__NODE_UNSTAGE_VOLUME_REQUEST__INIT;
	ProtobufCMessage *resp = NULL;
	enum objfs_rpc_code code;

	r.volume_id = (char *)id;
	r.staging_target_path = (char *)staging;
	code = call(csi, "NodeUnstageVolume", &r.base,
		    &csi__v1__node_unstage_volume_response__descriptor, &resp, st);
	if (resp != NULL)
		protobuf_c_message_free_unpacked(resp, NULL);
	return code;
}

static enum objfs_rpc_code do_stats(struct objfs_csi *csi, const char *id, const char *path,
				    Csi__V1__NodeGetVolumeStatsResponse **resp,
				    struct objfs_rpc_status *st)
{
	Csi__V1__NodeGetVolumeStatsRequest r = CSI__V1__NODE_GET_VOLUME_STATS_REQUEST__INIT;

	r.volume_id = (char *)id;
	r.volume_path = (char *)path;
	return call(csi, "NodeGetVolumeStats", &r.base,
		    &csi__v1__node_get_volume_stats_response__descriptor,
		    (ProtobufCMessage **)resp, st);
}

static bool is_dir(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool file_contains(const char *path, const char *needle)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/* ---- tests -------------------------------------------------------------------- */

static void test_capabilities_and_info(void **state)
{
	struct fx *x = *state;
	Csi__V1__NodeGetCapabilitiesRequest creq = CSI__V1__NODE_GET_CAPABILITIES_REQUEST__INIT;
	Csi__V1__NodeGetCapabilitiesResponse *cresp;
	Csi__V1__NodeGetInfoRequest ireq = CSI__V1__NODE_GET_INFO_REQUEST__INIT;
	Csi__V1__NodeGetInfoResponse *iresp;
	struct objfs_rpc_status st;
	unsigned seen = 0;
	size_t i;

	assert_int_equal(call(x->csi, "NodeGetCapabilities", &creq.base,
			      &csi__v1__node_get_capabilities_response__descriptor,
			      (ProtobufCMessage **)&cresp, &st), OBJFS_RPC_OK);
	assert_int_equal(cresp->n_capabilities, 5);
	for (i = 0; i < cresp->n_capabilities; i++) {
		assert_int_equal(cresp->capabilities[i]->type_case,
				 CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC);
		seen |= 1u << cresp->capabilities[i]->rpc->type;
	}
	assert_int_equal(seen, (1u << 1) | (1u << 2) | (1u << 4) | (1u << 5) | (1u << 6));
	protobuf_c_message_free_unpacked(&cresp->base, NULL);

	assert_int_equal(call(x->csi, "NodeGetInfo", &ireq.base,
			      &csi__v1__node_get_info_response__descriptor,
			      (ProtobufCMessage **)&iresp, &st), OBJFS_RPC_OK);
	assert_string_equal(iresp->node_id, "node-1");
	assert_int_equal(iresp->max_volumes_per_node, 0);
	assert_null(iresp->accessible_topology);
	protobuf_c_message_free_unpacked(&iresp->base, NULL);
	assert_false(objfs_csi_serves(x->csi, "/csi.v1.Node/NodeExpandVolume"));
}

static void test_missing_fields(void **state)
{
	struct fx *x = *state;
	struct objfs_rpc_status st;
	Csi__V1__NodeGetVolumeStatsResponse *sresp;
	struct args a;

	memset(&a, 0, sizeof(a));
	a.staging = x->staging;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_id"));

	a.volume_id = "vol1";
	a.staging = NULL;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "staging_target_path"));

	a.staging = x->staging;
	a.no_cap = true;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_capability"));
	a.no_cap = false;

	a.block = true;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_FAILED_PRECONDITION);
	assert_non_null(strstr(st.msg, "block"));
	a.block = false;

	a.fs_type = "ext4";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_FAILED_PRECONDITION);
	assert_non_null(strstr(st.msg, "ext4"));
	a.fs_type = NULL;

	a.group = "staff";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_mount_group"));
	a.group = NULL;

	a.mount_options = "ready_fd=7";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "mountOptions"));
	assert_non_null(strstr(st.msg, "ready_fd is set by the plugin"));
	/* objfs-mount's contract (common/mountopts.h) is checked here, not
	 * by a mount that fails */
	a.mount_options = "attr_ttl=1,mem_limit=lots";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "option mem_limit"));
	a.mount_options = "noatime,no_such_option";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "no_such_option"));
	a.mount_options = NULL;
	a.flag = "dir_ttl=1,bogus";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "mount_flags[0]"));
	a.flag = NULL;
	assert_int_equal(x->fake.starts, 0);

	a.source = "http://example.com/x";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "source"));
	a.source = NULL;
	/* A volume context may not open the node: a local directory
	 * outside the plugin's own store (this one's is on S3), an option
	 * naming a path or an address of the node, or one turning a
	 * protection off, in mountOptions or in a mount flag. */
	{
		static const char *const sources[] = {
			"file:///etc", "file:///", "file:///var/lib/objfs/store/../../../etc",
		};
		static const char *const opts[] = {
			"log_file=/any/path", "spool_dir=/any/dir", "cache_dir=/any/dir",
			"ca_file=/etc/ssl/x.pem", "metrics=0.0.0.0:9999",
			"insecure_skip_verify", "suid", "dev", "allow_root", "ro,blkdev",
		};
		size_t k;

		for (k = 0; k < sizeof(sources) / sizeof(sources[0]); k++) {
			a.source = sources[k];
			assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
			assert_non_null(strstr(st.msg, "is a directory of the node"));
		}
		a.source = NULL;
		for (k = 0; k < sizeof(opts) / sizeof(opts[0]); k++) {
			a.mount_options = opts[k];
			assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
			assert_non_null(strstr(st.msg, "mountOptions"));
			assert_true(strstr(st.msg, "names a path") != NULL ||
				    strstr(st.msg, "turns a protection of the node off") != NULL);
			a.mount_options = NULL;
			a.flag = opts[k];
			assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
			assert_non_null(strstr(st.msg, "mount_flags[0]"));
			a.flag = NULL;
		}
	}
	assert_int_equal(x->fake.starts, 0);

	/* Publish: the staging path is FAILED_PRECONDITION by the spec. */
	a.target = x->target1;
	a.staging = NULL;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_FAILED_PRECONDITION);
	assert_non_null(strstr(st.msg, "staging_target_path"));
	a.staging = x->staging;
	a.target = NULL;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "target_path"));
	a.target = x->target1;
	a.volume_id = NULL;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_id"));
	a.volume_id = "vol1";
	a.no_cap = true;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_capability"));

	assert_int_equal(do_unpublish(x->csi, "", x->target1, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_id"));
	assert_int_equal(do_unpublish(x->csi, "vol1", "", &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "target_path"));
	assert_int_equal(do_unstage(x->csi, "", x->staging, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_id"));
	assert_int_equal(do_unstage(x->csi, "vol1", "", &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "staging_target_path"));
	assert_int_equal(do_stats(x->csi, "", x->staging, &sresp, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_id"));
	assert_int_equal(do_stats(x->csi, "vol1", "", &sresp, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "volume_path"));
	assert_int_equal(x->fake.starts, 0);
	assert_int_equal(x->fake.binds, 0);
}

static void test_path_confinement(void **state)
{
	struct fx *x = *state;
	struct objfs_rpc_status st;
	Csi__V1__NodeGetVolumeStatsResponse *sresp;
	char path[PATH_MAX + 64], outside[256], link[256];
	struct args a;

	memset(&a, 0, sizeof(a));
	a.volume_id = "vol1";
	a.staging = "/etc/objfs-staging";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "outside the kubelet directory"));

	snprintf(path, sizeof(path), "%s/../outside", x->kubelet);
	a.staging = path;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, ".."));

	a.staging = "relative/path";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "absolute"));

	a.staging = x->kubelet;   /* the kubelet dir itself is no volume path */
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);

	/* A symlinked parent that leads out of the kubelet dir. */
	snprintf(outside, sizeof(outside), "%s/outside", x->root);
	mkdir_p(outside);
	snprintf(link, sizeof(link), "%s/pods/evil", x->kubelet);
	mkdir_p(x->kubelet);
	snprintf(path, sizeof(path), "%s/pods", x->kubelet);
	mkdir_p(path);
	assert_int_equal(symlink(outside, link), 0);
	snprintf(path, sizeof(path), "%s/mount", link);
	a.staging = path;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "outside"));
	assert_int_equal(do_unpublish(x->csi, "vol1", path, &st), OBJFS_RPC_INVALID_ARGUMENT);

	/* The last component a symlink (even one pointing inside). */
	assert_int_equal(do_unpublish(x->csi, "vol1", link, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "symbolic link"));

	/* A "." or doubled slashes are fine: the path is normalised. */
	snprintf(path, sizeof(path), "%s//plugins/./kubernetes.io/csi/objfs.csi.io/abc/globalmount",
		 x->kubelet);
	memset(&a, 0, sizeof(a));
	a.volume_id = "vol1";
	a.staging = path;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_non_null(top_mount(&x->fake, x->staging));

	/* Stats of paths outside are NOT_FOUND (not a volume of ours). */
	assert_int_equal(do_stats(x->csi, "vol1", "/etc", &sresp, &st), OBJFS_RPC_NOT_FOUND);
	assert_int_equal(x->fake.starts, 1);
}

static void test_lifecycle(void **state)
{
	struct fx *x = *state;
	struct objfs_rpc_status st;
	Csi__V1__NodeGetVolumeStatsResponse *sresp;
	char rec_path[PATH_MAX + 128], name[OBJFS_NODE_REC_NAME_MAX];
	struct fake_mount *m1, *m2, *ms;
	struct args a;
	size_t i;

	memset(&a, 0, sizeof(a));
	a.volume_id = "vol1";
	a.staging = x->staging;
	a.group = "1000";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_int_equal(x->fake.starts, 1);
	/* No source: the default store + "/" + volume id. */
	assert_string_equal(x->fake.last_source, "s3://bucket/vols/vol1");
	assert_non_null(strstr(x->fake.last_options, "allow_other"));
	assert_non_null(strstr(x->fake.last_options, "gid=1000"));
	assert_non_null(strstr(x->fake.last_options, "umask=0002"));
	assert_non_null(strstr(x->fake.last_options, "fsgroup=1000"));
	assert_non_null(strstr(x->fake.last_options, "mem_limit=32M"));
	assert_non_null(strstr(x->fake.last_options, "endpoint=http://127.0.0.1:9"));
	assert_non_null(strstr(x->fake.last_options, "addressing=path"));
	assert_null(strstr(x->fake.last_options, PLUGIN_SECRET));
	/* Spools on the host, in the state dir, not in the container. */
	{
		char want[PATH_MAX + 32];
		struct stat sst;

		snprintf(want, sizeof(want), "spool_dir=%s/node/spool", x->state);
		assert_non_null(strstr(x->fake.last_options, want));
		assert_int_equal(stat(want + strlen("spool_dir="), &sst), 0);
		assert_true(S_ISDIR(sst.st_mode) && (sst.st_mode & 077) == 0);
	}
	/* The plugin's own keys, handed over out of band. */
	assert_string_equal(x->fake.last_access_key, "AKIDPLUGIN");
	assert_string_equal(x->fake.last_secret, PLUGIN_SECRET);

	/* Idempotent; other arguments at the same path: ALREADY_EXISTS. */
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_int_equal(x->fake.starts, 1);
	a.group = "2000";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_ALREADY_EXISTS);
	a.group = "1000";
	a.mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_ALREADY_EXISTS);
	a.mode = 0;
	a.staging = x->target1;   /* another staging path for the same volume */
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_FAILED_PRECONDITION);
	a.staging = x->staging;
	assert_int_equal(x->fake.starts, 1);

	/* The record is on disk, without secrets. */
	assert_int_equal(objfs_node_rec_name("vol1", name), 0);
	snprintf(rec_path, sizeof(rec_path), "%s/node/volumes/%s", x->state, name);
	assert_true(file_contains(rec_path, "volume_id=vol1"));
	assert_false(file_contains(rec_path, PLUGIN_SECRET));

	/* Publish twice, one read-only; the targets are created. */
	a.target = x->target1;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);
	a.target = x->target2;
	a.readonly = true;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_true(is_dir(x->target1));
	assert_true(is_dir(x->target2));
	ms = top_mount(&x->fake, x->staging);
	m1 = top_mount(&x->fake, x->target1);
	m2 = top_mount(&x->fake, x->target2);
	assert_non_null(m1);
	assert_non_null(m2);
	assert_int_equal(m1->dev, ms->dev);
	assert_false(m1->readonly);
	assert_true(m2->readonly);
	assert_int_equal(x->fake.binds, 2);
	assert_true(file_contains(rec_path, x->target2));

	/* Same target, same arguments: OK; other arguments: ALREADY_EXISTS. */
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_int_equal(x->fake.binds, 2);
	a.readonly = false;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_ALREADY_EXISTS);
	assert_non_null(strstr(st.msg, x->target2));
	/* Another pod with another fsGroup cannot share the staged mount. */
	a.target = x->target1;
	a.group = "3000";
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_ALREADY_EXISTS);
	a.group = "1000";
	/* A volume not staged cannot be published. */
	a.volume_id = "vol-none";
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_FAILED_PRECONDITION);
	a.volume_id = "vol1";

	/* Stats on a target and on the staging path. */
	assert_int_equal(do_stats(x->csi, "vol1", x->target1, &sresp, &st), OBJFS_RPC_OK);
	assert_int_equal(sresp->n_usage, 2);
	for (i = 0; i < sresp->n_usage; i++) {
		const Csi__V1__VolumeUsage *u = sresp->usage[i];

		if (u->unit == CSI__V1__VOLUME_USAGE__UNIT__BYTES) {
			assert_int_equal(u->total, 1000 * 4096);
			assert_int_equal(u->used, 400 * 4096);
			assert_int_equal(u->available, 550 * 4096);
		} else {
			assert_int_equal(u->unit, CSI__V1__VOLUME_USAGE__UNIT__INODES);
			assert_int_equal(u->total, 200);
			assert_int_equal(u->used, 50);
			assert_int_equal(u->available, 140);
		}
	}
	assert_non_null(sresp->volume_condition);
	assert_false(sresp->volume_condition->abnormal);
	protobuf_c_message_free_unpacked(&sresp->base, NULL);
	assert_string_equal(x->fake.probe_url, "s3://bucket/vols/vol1");
	assert_int_equal(do_stats(x->csi, "vol1", x->staging, &sresp, &st), OBJFS_RPC_OK);
	protobuf_c_message_free_unpacked(&sresp->base, NULL);
	assert_int_equal(do_stats(x->csi, "vol2", x->target1, &sresp, &st), OBJFS_RPC_NOT_FOUND);
	snprintf(rec_path, sizeof(rec_path), "%s/pods/p1", x->kubelet);
	assert_int_equal(do_stats(x->csi, "vol1", rec_path, &sresp, &st), OBJFS_RPC_NOT_FOUND);

	/* Unpublish: unmounted, directory removed; again: OK. */
	assert_int_equal(do_unpublish(x->csi, "vol1", x->target1, &st), OBJFS_RPC_OK);
	assert_null(top_mount(&x->fake, x->target1));
	assert_false(is_dir(x->target1));
	assert_int_equal(do_unpublish(x->csi, "vol1", x->target1, &st), OBJFS_RPC_OK);
	assert_int_equal(do_stats(x->csi, "vol1", x->target1, &sresp, &st), OBJFS_RPC_NOT_FOUND);
	assert_int_equal(do_unpublish(x->csi, "vol1", x->target2, &st), OBJFS_RPC_OK);
	assert_null(top_mount(&x->fake, x->target2));

	/* Unstage: unmounted, process stopped, record gone; again: OK. */
	assert_int_equal(do_unstage(x->csi, "vol1", x->staging, &st), OBJFS_RPC_OK);
	assert_null(top_mount(&x->fake, x->staging));
	assert_false(x->fake.alive[100]);
	snprintf(rec_path, sizeof(rec_path), "%s/node/volumes/%s", x->state, name);
	assert_int_equal(access(rec_path, F_OK), -1);
	assert_int_equal(do_unstage(x->csi, "vol1", x->staging, &st), OBJFS_RPC_OK);
	assert_int_equal(do_stats(x->csi, "vol1", x->staging, &sresp, &st), OBJFS_RPC_NOT_FOUND);
	/* Stage again after unstage: a new process. */
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_int_equal(x->fake.starts, 2);
}

/* A node-stage secret's caBundle is trusted by the mount (as the
 * controller trusts a provisioner secret's); with no endpoint anywhere the
 * mount gets AWS's for the region, virtual-hosted. */
static void test_ca_bundle_and_aws(void **state)
{
	static const char pem[] = "-----BEGIN CERTIFICATE-----\nMIIBnode\n-----END CERTIFICATE-----\n";
	struct fx *x = *state;
	struct objfs_rpc_status st;
	const char *ep = x->csi->cfg.store.s3.endpoint;
	char *p, path[PATH_MAX], got[128] = "";
	FILE *f;
	struct args a;

	memset(&a, 0, sizeof(a));
	a.volume_id = "pvc-ca";
	a.staging = x->staging;
	a.source = "s3://aws-bucket/pvc-ca";
	a.secret_key = STAGE_SECRET;
	a.ca_bundle = "not a certificate";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "caBundle"));
	assert_null(strstr(st.msg, "not a certificate"));
	a.ca_bundle = pem;
	x->csi->cfg.store.s3.endpoint = NULL;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	x->csi->cfg.store.s3.endpoint = ep;
	assert_non_null(strstr(x->fake.last_options, "endpoint=https://s3."));
	assert_non_null(strstr(x->fake.last_options, ".amazonaws.com,"));
	assert_non_null(strstr(x->fake.last_options, "addressing=virtual"));
	p = strstr(x->fake.last_options, "ca_file=");
	assert_non_null(p);
	snprintf(path, sizeof(path), "%.*s", (int)strcspn(p + 8, ","), p + 8);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(got, sizeof(got), f));
	fclose(f);
	assert_string_equal(got, "-----BEGIN CERTIFICATE-----\n");
	/* The mount's log leaves the state directory with the volume. */
	{
		char name[OBJFS_NODE_REC_NAME_MAX];

		assert_int_equal(objfs_node_rec_name("pvc-ca", name), 0);
		snprintf(path, sizeof(path), "%s/node/logs/%s.log", x->state, name);
		f = fopen(path, "a");
		assert_non_null(f);
		fclose(f);
	}
	assert_int_equal(do_unstage(x->csi, "pvc-ca", x->staging, &st), OBJFS_RPC_OK);
	assert_int_equal(access(path, F_OK), -1);
}

/* A roleArn stage secret: the mount assumes that role with the plugin's
 * own web identity token (no keys in the secrets); without a token the
 * stage is refused, naming what is missing. */
/* The plugin's environment as test_role_secret sets it (the process's
 * own is never touched). */
static const char *fake_token_file;

static char *fake_getenv(const char *name)
{
	if (strcmp(name, "AWS_WEB_IDENTITY_TOKEN_FILE") == 0)
		return (char *)fake_token_file;
	return NULL;
}

static void test_role_secret(void **state)
{
	struct fx *x = *state;
	struct objfs_rpc_status st;
	struct args a;

	memset(&a, 0, sizeof(a));
	a.volume_id = "pvc-role";
	a.staging = x->staging;
	a.role_arn = "arn:aws:iam::111122223333:role/vol";
	x->csi->cfg.getenv = fake_getenv;
	fake_token_file = NULL;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_FAILED_PRECONDITION);
	assert_non_null(strstr(st.msg, "AWS_WEB_IDENTITY_TOKEN_FILE"));
	fake_token_file = "/var/run/token";
	a.role_arn = "not-an-arn";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	a.role_arn = "arn:aws:iam::111122223333:role/vol";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_string_equal(x->fake.last_role, "arn:aws:iam::111122223333:role/vol");
	assert_string_equal(x->fake.last_token_file, "/var/run/token");
	assert_string_equal(x->fake.last_access_key, "");
	fake_token_file = NULL;
}

static void test_secrets_and_context(void **state)
{
	struct fx *x = *state;
	struct objfs_rpc_status st;
	char path[PATH_MAX + 128], name[OBJFS_NODE_REC_NAME_MAX];
	struct stat sb;
	struct args a;

	memset(&a, 0, sizeof(a));
	a.volume_id = "pvc-1";
	a.staging = x->staging;
	a.source = "s3://other-bucket/prefix/pvc-1";
	a.mount_options = "attr_ttl=5,dir_ttl=2";
	a.flag = "negative_ttl=1,spool_dir=/srv/spool";
	a.secret_key = STAGE_SECRET;
	a.mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY;
	/* a directory of the node is not a volume's to name */
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.msg, "mount_flags[0]"));
	assert_non_null(strstr(st.msg, "option spool_dir names a path"));
	a.flag = "negative_ttl=1";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_string_equal(x->fake.last_source, "s3://other-bucket/prefix/pvc-1");
	assert_string_equal(x->fake.last_access_key, "AKIDSTAGE");
	assert_string_equal(x->fake.last_secret, STAGE_SECRET);
	assert_null(strstr(x->fake.last_options, STAGE_SECRET));
	assert_non_null(strstr(x->fake.last_options, "attr_ttl=5,dir_ttl=2"));
	/* the plugin's spool directory, the user's options after it */
	assert_non_null(strstr(x->fake.last_options, "negative_ttl=1"));
	assert_null(strstr(x->fake.last_options, "spool_dir=/srv/spool"));
	assert_non_null(strstr(x->fake.last_options, ",ro"));
	/* The record holds no secret; the secrets file is 0600. */
	assert_int_equal(objfs_node_rec_name("pvc-1", name), 0);
	snprintf(path, sizeof(path), "%s/node/volumes/%s", x->state, name);
	assert_true(file_contains(path, "source=s3://other-bucket/prefix/pvc-1"));
	assert_false(file_contains(path, STAGE_SECRET));
	snprintf(path, sizeof(path), "%s/node/volumes/%s.secrets", x->state, name);
	assert_true(file_contains(path, STAGE_SECRET));
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	/* A reader-only mode publishes read-only whatever readonly says. */
	a.target = x->target1;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_true(top_mount(&x->fake, x->target1)->readonly);
	/* Only one of the two keys: refused, naming them. */
	a.volume_id = "pvc-2";
	a.secret_key = NULL;
	{
		Csi__V1__NodeStageVolumeRequest r = CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
		Csi__V1__VolumeCapability cap = CSI__V1__VOLUME_CAPABILITY__INIT;
		Csi__V1__VolumeCapability__AccessMode am = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__INIT;
		Csi__V1__VolumeCapability__MountVolume mv = CSI__V1__VOLUME_CAPABILITY__MOUNT_VOLUME__INIT;
		Csi__V1__NodeStageVolumeRequest__SecretsEntry sec =
			CSI__V1__NODE_STAGE_VOLUME_REQUEST__SECRETS_ENTRY__INIT;
		Csi__V1__NodeStageVolumeRequest__SecretsEntry *secp = &sec;

		r.volume_id = (char *)"pvc-2";
		r.staging_target_path = x->target2;
		am.mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER;
		cap.access_mode = &am;
		cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
		cap.mount = &mv;
		r.volume_capability = &cap;
		sec.key = (char *)"secretAccessKey";
		sec.value = (char *)STAGE_SECRET;
		r.secrets = &secp;
		r.n_secrets = 1;
		assert_int_equal(call(x->csi, "NodeStageVolume", &r.base,
				      &csi__v1__node_stage_volume_response__descriptor, NULL, &st),
				 OBJFS_RPC_INVALID_ARGUMENT);
		assert_non_null(strstr(st.msg, "accessKeyID"));
		assert_null(strstr(st.msg, STAGE_SECRET));
	}
	/* A failed mount start answers an error and leaves no record. */
	x->fake.start_err = EIO;
	a.staging = x->target2;
	a.target = NULL;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_INTERNAL);
	assert_non_null(strstr(st.msg, "fake start failure"));
	assert_int_equal(objfs_node_rec_name("pvc-2", name), 0);
	snprintf(path, sizeof(path), "%s/node/volumes/%s", x->state, name);
	assert_int_equal(access(path, F_OK), -1);
	x->fake.start_err = ETIMEDOUT;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_DEADLINE_EXCEEDED);
	x->fake.start_err = 0;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	/* Two volumes cannot share one staging path. */
	a.volume_id = "pvc-3";
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_ALREADY_EXISTS);
}

struct stage_thread {
	struct fx *x;
	enum objfs_rpc_code code;
};

static void *stage_main(void *arg)
{
	struct stage_thread *t = arg;
	struct objfs_rpc_status st;
	struct args a;

	memset(&a, 0, sizeof(a));
	a.volume_id = "vol-slow";
	a.staging = t->x->staging;
	t->code = do_stage(t->x->csi, &a, &st);
	return NULL;
}

static void test_aborted(void **state)
{
	struct fx *x = *state;
	struct stage_thread t = { x, OBJFS_RPC_UNKNOWN };
	struct objfs_rpc_status st;
	pthread_t th;
	struct args a;

	x->fake.block = true;
	assert_int_equal(pthread_create(&th, NULL, stage_main, &t), 0);
	pthread_mutex_lock(&x->fake.lock);
	while (!x->fake.in_start)
		pthread_cond_wait(&x->fake.cond, &x->fake.lock);
	pthread_mutex_unlock(&x->fake.lock);

	memset(&a, 0, sizeof(a));
	a.volume_id = "vol-slow";
	a.staging = x->staging;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_ABORTED);
	assert_non_null(strstr(st.msg, "vol-slow"));
	a.target = x->target1;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_ABORTED);
	assert_int_equal(do_unpublish(x->csi, "vol-slow", x->target1, &st), OBJFS_RPC_ABORTED);
	assert_int_equal(do_unstage(x->csi, "vol-slow", x->staging, &st), OBJFS_RPC_ABORTED);
	/* Other volumes are not held up. */
	a.volume_id = "vol-other";
	a.staging = x->target2;
	a.target = NULL;
	pthread_mutex_lock(&x->fake.lock);
	x->fake.block = false;
	pthread_cond_broadcast(&x->fake.cond);
	pthread_mutex_unlock(&x->fake.lock);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(t.code, OBJFS_RPC_OK);
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	/* Once done, the same call goes through (idempotent). */
	a.volume_id = "vol-slow";
	a.staging = x->staging;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
}

static void test_access_modes(void **state)
{
	struct fx *x = *state;
	struct objfs_rpc_status st;
	struct args a;

	memset(&a, 0, sizeof(a));
	a.volume_id = "vol1";
	a.staging = x->staging;
	a.mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_SINGLE_WRITER;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	a.target = x->target1;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);
	a.target = x->target2;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_FAILED_PRECONDITION);
	assert_int_equal(do_unpublish(x->csi, "vol1", x->target1, &st), OBJFS_RPC_OK);
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_int_equal(do_unpublish(x->csi, "vol1", x->target2, &st), OBJFS_RPC_OK);
	assert_int_equal(do_unstage(x->csi, "vol1", x->staging, &st), OBJFS_RPC_OK);

	/* SINGLE_NODE_MULTI_WRITER: many targets. */
	a.mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_MULTI_WRITER;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	a.target = x->target1;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);
	a.target = x->target2;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);
	/* A target is not a staging path. */
	a.target = x->staging;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_INVALID_ARGUMENT);
}

static void test_stats_conditions(void **state)
{
	struct fx *x = *state;
	struct objfs_rpc_status st;
	Csi__V1__NodeGetVolumeStatsResponse *r;
	struct args a;

	memset(&a, 0, sizeof(a));
	a.volume_id = "vol1";
	a.staging = x->staging;
	a.target = x->target1;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);

	x->fake.probe_err = ECONNREFUSED;
	assert_int_equal(do_stats(x->csi, "vol1", x->target1, &r, &st), OBJFS_RPC_OK);
	assert_true(r->volume_condition->abnormal);
	assert_non_null(strstr(r->volume_condition->message, "unreachable"));
	protobuf_c_message_free_unpacked(&r->base, NULL);
	x->fake.probe_err = 0;

	x->fake.statfs_err = ENOTCONN;
	assert_int_equal(do_stats(x->csi, "vol1", x->target1, &r, &st), OBJFS_RPC_OK);
	assert_true(r->volume_condition->abnormal);
	assert_non_null(strstr(r->volume_condition->message, "not connected"));
	assert_int_equal(r->n_usage, 0);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	x->fake.statfs_err = ETIMEDOUT;
	assert_int_equal(do_stats(x->csi, "vol1", x->target1, &r, &st), OBJFS_RPC_OK);
	assert_true(r->volume_condition->abnormal);
	assert_non_null(strstr(r->volume_condition->message, "does not answer"));
	protobuf_c_message_free_unpacked(&r->base, NULL);
	x->fake.statfs_err = 0;

	x->fake.alive[100] = false;   /* the mount process died */
	assert_int_equal(do_stats(x->csi, "vol1", x->target1, &r, &st), OBJFS_RPC_OK);
	assert_true(r->volume_condition->abnormal);
	assert_non_null(strstr(r->volume_condition->message, "exited"));
	protobuf_c_message_free_unpacked(&r->base, NULL);

	/* The watchdog pass repairs it: new process, bind done again. */
	assert_int_equal(objfs_csi_node_check(x->csi->node), 1);
	assert_int_equal(x->fake.starts, 2);
	assert_true(x->fake.alive[101]);
	assert_int_equal(top_mount(&x->fake, x->target1)->dev,
			 top_mount(&x->fake, x->staging)->dev);
	assert_int_equal(do_stats(x->csi, "vol1", x->target1, &r, &st), OBJFS_RPC_OK);
	assert_false(r->volume_condition->abnormal);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	assert_int_equal(objfs_csi_node_check(x->csi->node), 0);

	/* A lost bind mount alone is bound again, same process. */
	assert_int_equal(fake_unmount(&x->fake, x->target1, true), 0);
	assert_int_equal(objfs_csi_node_check(x->csi->node), 1);
	assert_int_equal(x->fake.starts, 2);
	assert_non_null(top_mount(&x->fake, x->target1));

	/* A failing repair is reported in the condition and retried after
	 * a back-off (1 s first). */
	x->fake.alive[101] = false;
	x->fake.start_err = EIO;
	assert_int_equal(objfs_csi_node_check(x->csi->node), 0);
	assert_int_equal(x->fake.starts, 3);
	x->fake.start_err = 0;
	assert_int_equal(objfs_csi_node_check(x->csi->node), 0);
	assert_int_equal(x->fake.starts, 3);
	assert_int_equal(do_stats(x->csi, "vol1", x->staging, &r, &st), OBJFS_RPC_OK);
	assert_true(r->volume_condition->abnormal);
	assert_non_null(strstr(r->volume_condition->message, "repair failed: fake start failure"));
	protobuf_c_message_free_unpacked(&r->base, NULL);
	usleep(1100 * 1000);
	assert_int_equal(objfs_csi_node_check(x->csi->node), 1);
	assert_int_equal(do_stats(x->csi, "vol1", x->target1, &r, &st), OBJFS_RPC_OK);
	assert_false(r->volume_condition->abnormal);
	protobuf_c_message_free_unpacked(&r->base, NULL);
}

static void test_restart_adopts_and_repairs(void **state)
{
	struct fx *x = *state;
	struct objfs_rpc_status st;
	Csi__V1__NodeGetVolumeStatsResponse *r;
	struct args a;

	memset(&a, 0, sizeof(a));
	a.volume_id = "vol1";
	a.staging = x->staging;
	a.target = x->target1;
	a.secret_key = STAGE_SECRET;
	assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);
	a.target = x->target2;
	a.readonly = true;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);

	/* Restart: the mounts stay; the new plugin adopts them. */
	objfs_csi_destroy(x->csi);
	assert_true(x->fake.alive[100]);
	assert_non_null(top_mount(&x->fake, x->target1));
	x->csi = make_driver(x);
	assert_int_equal(objfs_csi_node_check(x->csi->node), 0);
	assert_int_equal(x->fake.starts, 1);
	assert_int_equal(do_stats(x->csi, "vol1", x->target2, &r, &st), OBJFS_RPC_OK);
	assert_false(r->volume_condition->abnormal);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	/* The adopted publication is idempotent and still guarded. */
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_OK);
	a.readonly = false;
	assert_int_equal(do_publish(x->csi, &a, &st), OBJFS_RPC_ALREADY_EXISTS);

	/* A mount broken while the plugin was down is repaired at start,
	 * with the stage secrets kept in the state dir. */
	objfs_csi_destroy(x->csi);
	x->fake.alive[100] = false;
	x->csi = make_driver(x);
	assert_int_equal(objfs_csi_node_check(x->csi->node), 1);
	assert_int_equal(x->fake.starts, 2);
	assert_string_equal(x->fake.last_access_key, "AKIDSTAGE");
	assert_string_equal(x->fake.last_secret, STAGE_SECRET);
	assert_int_equal(top_mount(&x->fake, x->target1)->dev,
			 top_mount(&x->fake, x->staging)->dev);
	assert_int_equal(top_mount(&x->fake, x->target2)->dev,
			 top_mount(&x->fake, x->staging)->dev);
	assert_true(top_mount(&x->fake, x->target2)->readonly);
	/* ... and the stale mounts underneath were detached first. */
	assert_int_equal(x->fake.n_mounts, 3);

	/* A pod directory kubelet removed meanwhile: that publication is
	 * dropped, the others are bound again. */
	{
		char cmd[512];
		Csi__V1__NodeGetVolumeStatsResponse *r2;

		snprintf(cmd, sizeof(cmd), "rm -rf '%s/pods/p2'", x->kubelet);
		assert_int_equal(system(cmd), 0);
		x->fake.alive[101] = false;
		assert_int_equal(objfs_csi_node_check(x->csi->node), 1);
		assert_non_null(top_mount(&x->fake, x->target1));
		assert_null(top_mount(&x->fake, x->target2));
		assert_int_equal(do_stats(x->csi, "vol1", x->target2, &r2, &st),
				 OBJFS_RPC_NOT_FOUND);
		assert_int_equal(do_stats(x->csi, "vol1", x->target1, &r2, &st), OBJFS_RPC_OK);
		assert_false(r2->volume_condition->abnormal);
		protobuf_c_message_free_unpacked(&r2->base, NULL);
		assert_int_equal(x->fake.n_mounts, 2);
	}
	assert_int_equal(do_unpublish(x->csi, "vol1", x->target1, &st), OBJFS_RPC_OK);
	assert_int_equal(do_unpublish(x->csi, "vol1", x->target2, &st), OBJFS_RPC_OK);
	assert_int_equal(do_unstage(x->csi, "vol1", x->staging, &st), OBJFS_RPC_OK);
	assert_int_equal(x->fake.n_mounts, 0);
	assert_int_equal(x->fake.starts, 3);
}

/* Reads text as the plugins before the metrics labels did (lines that
 * start with '#' skipped; a key they did not know refused the record) and
 * checks that it is r minus the labels. */
static void old_reader_check(const char *text, const struct objfs_node_rec *r)
{
	static const char *const known[] = {
		"volume_id", "staging", "source", "endpoint", "region",
		"addressing", "options", "fingerprint", "group", "unit", "pid",
		"start", "secrets", "publish",
	};
	struct objfs_node_rec o = OBJFS_NODE_REC_INIT;
	char *seen = strdup(text), *old = calloc(1, strlen(text) + 1);
	char *line, *save = NULL;
	size_t i;

	assert_non_null(seen);
	assert_non_null(old);
	for (line = strtok_r(seen, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t klen = strcspn(line, "=");
		bool ok = false;

		if (line[0] == '#')
			continue;
		for (i = 0; !ok && i < sizeof(known) / sizeof(known[0]); i++)
			ok = strlen(known[i]) == klen && strncmp(line, known[i], klen) == 0;
		if (!ok)
			fail_msg("an older plugin refuses the record: \"%s\"", line);
		strcat(old, line);
		strcat(old, "\n");
	}
	free(seen);
	assert_int_equal(objfs_node_rec_parse(old, strlen(old), &o), 0);
	free(old);
	assert_null(o.pv_name);
	assert_null(o.pvc_name);
	assert_null(o.pvc_namespace);
	assert_string_equal(o.volume_id, r->volume_id);
	assert_string_equal(o.staging, r->staging);
	assert_string_equal(o.source, r->source);
	assert_string_equal(o.options, r->options);
	assert_string_equal(o.fingerprint, r->fingerprint);
	assert_string_equal(o.group, r->group);
	assert_string_equal(o.unit, r->unit);
	assert_int_equal(o.pid, r->pid);
	assert_true(o.start == r->start);
	assert_true(o.secrets == r->secrets);
	assert_int_equal(o.n_pubs, r->n_pubs);
	for (i = 0; i < r->n_pubs; i++) {
		assert_string_equal(o.pubs[i].target, r->pubs[i].target);
		assert_string_equal(o.pubs[i].fingerprint, r->pubs[i].fingerprint);
		assert_true(o.pubs[i].readonly == r->pubs[i].readonly);
	}
	objfs_node_rec_release(&o);
}

static void test_records_roundtrip(void **state)
{
	struct fx *x = *state;
	struct objfs_node_rec r = OBJFS_NODE_REC_INIT, back = OBJFS_NODE_REC_INIT;
	struct objfs_node_rec *all = NULL;
	char dir[PATH_MAX + 16], path[PATH_MAX + 128];
	char *text = NULL;
	size_t len = 0, n = 0;
	unsigned bad = 0;
	FILE *f;

	r.volume_id = strdup("weird|id%with\nnewline and spaces");
	r.volume_id[13] = '\n';
	r.staging = strdup("/var/lib/kubelet/plugins/x/globalmount");
	r.source = strdup("s3://bucket/p|q%r");
	r.options = strdup("allow_other,gid=5");
	r.fingerprint = strdup("mode=5;ctx=00ff");
	r.group = strdup("5");
	r.unit = strdup("objfs-mount-0123456789abcdef.service");
	r.pv_name = strdup("pvc-1234");
	r.pvc_name = strdup("data");
	r.pvc_namespace = strdup("team-a");
	r.pid = 4242;
	r.start = 123456789012ULL;
	r.secrets = true;
	assert_int_equal(objfs_node_rec_add_pub(&r, "/var/lib/kubelet/pods/a|b/mount", "fp1", true), 0);
	assert_int_equal(objfs_node_rec_add_pub(&r, "/var/lib/kubelet/pods/c/mount", "", false), 0);
	assert_int_equal(objfs_node_rec_format(&r, &text, &len), 0);
	/* Escaped: one line per key, no raw '|' or newline in values. */
	assert_non_null(strstr(text, "volume_id=weird%7Cid%25with%0Anewline and spaces\n"));
	assert_int_equal(objfs_node_rec_parse(text, len, &back), 0);
	assert_string_equal(back.volume_id, r.volume_id);
	assert_string_equal(back.staging, r.staging);
	assert_string_equal(back.source, r.source);
	assert_string_equal(back.options, r.options);
	assert_string_equal(back.fingerprint, r.fingerprint);
	assert_string_equal(back.group, "5");
	assert_string_equal(back.unit, "objfs-mount-0123456789abcdef.service");
	assert_string_equal(back.pv_name, "pvc-1234");
	assert_string_equal(back.pvc_name, "data");
	assert_string_equal(back.pvc_namespace, "team-a");
	assert_int_equal(back.pid, 4242);
	assert_true(back.start == 123456789012ULL);
	assert_true(back.secrets);
	assert_int_equal(back.n_pubs, 2);
	assert_string_equal(back.pubs[0].target, "/var/lib/kubelet/pods/a|b/mount");
	assert_string_equal(back.pubs[0].fingerprint, "fp1");
	assert_true(back.pubs[0].readonly);
	assert_false(back.pubs[1].readonly);
	objfs_node_rec_release(&back);
	free(text);

	/* Malformed texts are refused. */
	static const char *const bad_texts[] = {
		"volume_id=x\n",                                  /* no staging */
		"staging=/a\n",                                   /* no volume id */
		"volume_id=x\nstaging=relative\n",
		"volume_id=x\nstaging=/a\npid=abc\n",
		"volume_id=x\nstaging=/a\nsecrets=2\n",
		"volume_id=x\nstaging=/a\npublish=2|f|/t\n",
		"volume_id=x\nstaging=/a\npublish=0|f\n",
		"volume_id=x\nstaging=/a\npublish=0|f|rel\n",
		"volume_id=x%zz\nstaging=/a\n",
		"volume_id=x%0\nstaging=/a\n",
		"volume_id=x\nvolume_id=y\nstaging=/a\n",
		"no equals sign\n",
	};
	size_t i;

	for (i = 0; i < sizeof(bad_texts) / sizeof(bad_texts[0]); i++) {
		assert_int_equal(objfs_node_rec_parse(bad_texts[i], strlen(bad_texts[i]), &back),
				 EINVAL);
		assert_null(back.volume_id);
	}
	assert_int_equal(objfs_node_rec_parse("# c\n\nvolume_id=x\nstaging=/a", 27, &back), 0);
	objfs_node_rec_release(&back);
	/* a later plugin's keys, plain or behind "#+", are ignored */
	{
		static const char later[] = "volume_id=x\nstaging=/a\nbogus=1\n#+later=2\n#+\n";

		assert_int_equal(objfs_node_rec_parse(later, strlen(later), &back), 0);
	}
	assert_string_equal(back.volume_id, "x");
	assert_string_equal(back.staging, "/a");
	objfs_node_rec_release(&back);

	/* Rolling back: what this plugin writes is, to the plugins before
	 * the metrics labels (comment lines skipped, every other key known
	 * or the record refused), the same record minus the labels. */
	assert_int_equal(objfs_node_rec_format(&r, &text, &len), 0);
	assert_null(strstr(text, "\npv_name="));
	assert_non_null(strstr(text, "\n#+pv_name=pvc-1234\n"));
	old_reader_check(text, &r);
	free(text);

	/* Save, load_all (skipping a corrupt file and temp files), remove. */
	snprintf(dir, sizeof(dir), "%s/recs", x->root);
	assert_int_equal(objfs_node_rec_save(dir, &r), 0);
	assert_int_equal(objfs_node_rec_save(dir, &r), 0);   /* replaced atomically */
	snprintf(path, sizeof(path), "%s/v-%064d", dir, 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("garbage\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/.v-abc.tmp", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(objfs_node_rec_load_all(dir, &all, &n, &bad), 0);
	assert_int_equal(n, 1);
	assert_int_equal(bad, 1);
	assert_string_equal(all[0].volume_id, r.volume_id);
	assert_int_equal(all[0].n_pubs, 2);
	objfs_node_rec_release(&all[0]);
	free(all);
	assert_int_equal(objfs_node_rec_remove(dir, r.volume_id), 0);
	assert_int_equal(objfs_node_rec_remove(dir, r.volume_id), 0);
	assert_int_equal(objfs_node_rec_load_all(dir, &all, &n, &bad), 0);
	assert_int_equal(n, 0);
	free(all);
	/* A missing directory holds no records. */
	snprintf(dir, sizeof(dir), "%s/none", x->root);
	assert_int_equal(objfs_node_rec_load_all(dir, &all, &n, NULL), 0);
	assert_int_equal(n, 0);

	/* Secrets round trip; a key with a line break is refused. */
	{
		struct objfs_creds c = OBJFS_CREDS_INIT, c2 = OBJFS_CREDS_INIT;

		assert_int_equal(objfs_creds_set(&c, "access_key_id", "AK"), 0);
		assert_int_equal(objfs_creds_set(&c, "secret_access_key", STAGE_SECRET), 0);
		assert_int_equal(objfs_node_secrets_save(dir, "v", &c), 0);
		assert_int_equal(objfs_node_secrets_load(dir, "v", &c2), 0);
		assert_string_equal(c2.secret_key, STAGE_SECRET);
		assert_null(c2.session_token);
		objfs_creds_release(&c2);
		assert_int_equal(objfs_creds_set(&c, "session_token", "a\nb"), 0);
		assert_int_equal(objfs_node_secrets_save(dir, "v", &c), EINVAL);
		objfs_creds_release(&c);
	}
	objfs_node_rec_release(&r);
}

static void test_mountinfo_parse(void **state)
{
	static const char text[] =
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		"90 22 0:52 / /var/lib/kubelet/plugins/x/globalmount rw,nosuid,nodev shared:50 - fuse.objfs-mount s3://b/p rw,user_id=0\n"
		"91 22 0:52 / /var/lib/kubelet/pods/a\\040b/mount rw - fuse.objfs-mount s3://b/p rw\n"
		"92 91 8:1 /tmp /var/lib/kubelet/pods/a\\040b/mount rw - ext4 /dev/sda1 rw\n"
		"93 22 0:60 / /mnt/plain rw - fuse /dev/fuse rw\n";
	struct objfs_csi_mount_info mi;

	(void)state;
	assert_int_equal(objfs_csi_mountinfo_find(text, "/var/lib/kubelet/plugins/x/globalmount", &mi), 0);
	assert_true(mi.fuse);
	assert_int_equal(mi.dev, 52);
	/* Escaped blanks; the top of a stack wins. */
	assert_int_equal(objfs_csi_mountinfo_find(text, "/var/lib/kubelet/pods/a b/mount", &mi), 0);
	assert_false(mi.fuse);
	assert_int_equal(mi.dev, (8ul << 20) | 1);
	assert_int_equal(objfs_csi_mountinfo_find(text, "/mnt/plain", &mi), 0);
	assert_true(mi.fuse);
	assert_int_equal(objfs_csi_mountinfo_find(text, "/var/lib/kubelet", &mi), ENOENT);
	assert_int_equal(objfs_csi_mountinfo_find("", "/", &mi), ENOENT);
	assert_int_equal(objfs_csi_mountinfo_find("garbage line\n", "/", &mi), ENOENT);
}

/* ---- metrics of the node's mounts ------------------------------------------ */

/* A mount that hangs: its socket takes connections (the kernel's backlog)
 * and never answers. */
static int hung_socket(const char *dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), fd;

	assert_true(dfd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/metrics.sock", dfd);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	close(dfd);
	return fd;
}

static int render_mount(void *arg, struct objfs_buf *out)
{
	objfs_buf_adds(out, arg);
	return objfs_buf_err(out);
}

/* One mount that hangs must not stall the node's /metrics for every
 * mount's timeout in turn: four hang, one answers; the scrape takes about
 * one mount timeout (2 s), not four (8 s serially), and says which
 * answered. */
static void test_metrics_hung_mounts(void **state)
{
	struct fx *x = *state;
	struct objfs_rpc_status st;
	struct objfs_metrics_server_config mc = { 0 };
	struct objfs_metrics_server *srv = NULL;
	struct objfs_buf out = OBJFS_BUF_INIT(1u << 20, EFBIG);
	char staging[5][PATH_MAX], dir[PATH_MAX + 128], sock[PATH_MAX + 160];
	char name[OBJFS_NODE_REC_NAME_MAX], vid[16], want[128];
	int hung[4];
	long long t0, took;
	struct args a;
	int i;

	for (i = 0; i < 5; i++) {
		snprintf(vid, sizeof(vid), "pvc-m%d", i);
		snprintf(staging[i], sizeof(staging[i]),
			 "%s/plugins/kubernetes.io/csi/objfs.csi.io/m%d/globalmount",
			 x->kubelet, i);
		mkdir_p(staging[i]);
		memset(&a, 0, sizeof(a));
		a.volume_id = vid;
		a.staging = staging[i];
		assert_int_equal(do_stage(x->csi, &a, &st), OBJFS_RPC_OK);
		assert_int_equal(objfs_node_rec_name(vid, name), 0);
		snprintf(dir, sizeof(dir), "%s/node/resume/%s", x->state, name);
		mkdir_p(dir);
		mkdir(dir, 0700);
		if (i < 4) {
			hung[i] = hung_socket(dir);
		} else {
			snprintf(sock, sizeof(sock), "%s/metrics.sock", dir);
			mc.unix_path = sock;
			mc.render = render_mount;
			mc.arg = (void *)"# TYPE objfs_fs_ops_total counter\nobjfs_fs_ops_total 7\n";
			assert_int_equal(objfs_metrics_server_start(&mc, &srv), 0);
		}
	}
	t0 = objfs_now_ms();
	assert_int_equal(objfs_csi_node_metrics_merge(x->csi->node, "", &out), 0);
	took = objfs_now_ms() - t0;
	assert_true(took < 4000);       /* serially: 4 x 2 s */
	assert_non_null(strstr(out.p, "objfs_mount_up{volume_id=\"pvc-m4\"} 1\n"));
	assert_non_null(strstr(out.p, "objfs_fs_ops_total{volume_id=\"pvc-m4\"} 7\n"));
	for (i = 0; i < 4; i++) {
		snprintf(want, sizeof(want), "objfs_mount_up{volume_id=\"pvc-m%d\"} 0\n", i);
		assert_non_null(strstr(out.p, want));
		close(hung[i]);
	}
	objfs_metrics_server_stop(srv);
	objfs_buf_release(&out);
	for (i = 0; i < 5; i++) {
		snprintf(vid, sizeof(vid), "pvc-m%d", i);
		assert_int_equal(do_unstage(x->csi, vid, staging[i], &st), OBJFS_RPC_OK);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_capabilities_and_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_path_confinement, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ca_bundle_and_aws, setup, teardown),
		cmocka_unit_test_setup_teardown(test_role_secret, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secrets_and_context, setup, teardown),
		cmocka_unit_test_setup_teardown(test_aborted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_access_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_conditions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_adopts_and_repairs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_hung_mounts, setup, teardown),
		cmocka_unit_test(test_mountinfo_parse),
	};
	return cmocka_run_group_tests_name("csi_node", tests, NULL, NULL);
}
