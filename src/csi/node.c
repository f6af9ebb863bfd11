/*
 * node.c - the CSI Node service (see node.h).
 *
 * State of a volume on this node:
 *
 *   (none) --NodeStageVolume--> STAGED: one objfs-mount process serves the
 *       volume at staging_target_path; a record names it (noderec.h).
 *   STAGED --NodePublishVolume--> + a bind mount of the staging path at
 *       target_path (read-only when asked); one per pod, added to the record.
 *   NodeUnpublishVolume removes one bind mount; NodeUnstageVolume unmounts
 *       the staging path, waits for the process to flush and exit (then
 *       SIGTERM, SIGKILL, abort of the FUSE connection) and drops the record.
 *
 * Invariants:
 *  - Every record on disk names a volume this plugin staged and not yet
 *    unstaged; the in-memory list mirrors the records.
 *  - At most one call (or repair) works on a volume at a time: a call finds
 *    the volume id in `busy` and answers ABORTED.  The busy holder alone
 *    changes the volume's record; it swaps in a new record under `lock`, so
 *    NodeGetVolumeStats (which takes no busy mark) reads a consistent one.
 *  - Mount processes are not children of objfs-csi (mounter.c): stopping
 *    or restarting the plugin leaves them running; at start the records
 *    are loaded and the watchdog's first pass repairs what broke meanwhile.
 *  - A repair never waits on a dead or hung FUSE connection: it stops the
 *    process, aborts the connection, detaches (MNT_DETACH) every bind mount
 *    and the staging mount, starts a new process and binds every target
 *    again (bind mounts of a dead connection keep pointing at it).
 *  - Secrets never reach a log line, an error message, argv or environ.
 *
 * Paths are checked in node_paths.c, a volume's process and bind mounts
 * are node_mount.c, NodeGetVolumeStats is node_stats.c, repairs and the
 * watchdog thread are watchdog.c; node_int.h holds the state they share.
 * objfs-mount's -o options are built and checked by common/mountopts.h;
 * the S3 connection is read from the volume context, checked and turned
 * into -o options by backend/s3conn.h (through csi/roots.h).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/s3conn.h"
#include "common/creds.h"
#include "common/errors.h"
#include "common/io.h"
#include "common/log.h"
#include "common/mountopts.h"
#include "csi.pb-c.h"
#include "csi/caps.h"
#include "csi/claims.h"
#include "csi/node.h"
#include "csi/node_int.h"
#include "csi/params.h"
#include "csi/pb.h"
#include "csi/noderec.h"
#include "csi/roots.h"
#include "csi/volid.h"

/* Secret keys of NodeStageVolume. */
#define SECRET_ACCESS_KEY "accessKeyID"
#define SECRET_SECRET_KEY "secretAccessKey"
#define SECRET_SESSION_TOKEN "sessionToken"

/* ---- small helpers ---------------------------------------------------- */

/* Appends s to buf (cap), with a comma when buf is not empty.  ENOSPC. */
static int opt_add(char *buf, size_t cap, const char *s)
{
	size_t len = strlen(buf);
	int n;

	if (empty(s))
		return 0;
	n = snprintf(buf + len, cap - len, "%s%s", len > 0 ? "," : "", s);
	if (n < 0 || (size_t)n >= cap - len) {
		buf[len] = '\0';
		return ENOSPC;
	}
	return 0;
}

/* A value the plugin puts into the -o list: printable, no comma or blank. */
static bool opt_value_ok(const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s <= ' ' || *s == ',' || *s == 0x7f)
			return false;
	}
	return true;
}

/* Checks a user's option list (objfs_mount_opts_check_user) and adds it to buf (empty
 * items dropped).  EINVAL (err says why) or ENOSPC. */
static int user_opts_add(char *buf, size_t cap, const char *list, char *err, size_t errcap)
{
	char item[OPTS_MAX];
	const char *p = list;

	if (objfs_mount_opts_check_user(list, err, errcap) != 0)
		return EINVAL;
	while (*p != '\0') {
		const char *comma = strchr(p, ',');
		size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
		int e;

		if (n >= sizeof(item))
			return EINVAL;
		memcpy(item, p, n);
		item[n] = '\0';
		e = opt_add(buf, cap, item);
		if (e != 0)
			return e;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	return 0;
}

/* Adds a comma-separated list of user options to buf.  EINVAL or ENOSPC. */
static int opt_add_list(char *buf, size_t cap, const char *list)
{
	return user_opts_add(buf, cap, list, NULL, 0);
}

/* Whether the file:// source lies under the plugin's own local store
 * (--store file:///DIR, what the controller puts in a volume context):
 * any other directory of the node is no volume's to mount, nor created as
 * root by the mount.  Path components only, no ".", ".." or "//". */
static bool local_source_ok(const char *source, const char *base)
{
	const char *p = source + 7, *seg;
	size_t bl, l;

	if (base == NULL || strncmp(base, "file:///", 8) != 0)
		return false;
	base += 7;
	bl = strlen(base);
	while (bl > 1 && base[bl - 1] == '/')
		bl--;
	if (strncmp(p, base, bl) != 0 || (p[bl] != '/' && p[bl] != '\0' && bl > 1))
		return false;
	for (seg = p + 1;; seg += l + 1) {
		l = strcspn(seg, "/");
		if ((l == 0 && seg[0] == '/') || (l == 1 && seg[0] == '.') ||
		    (l == 2 && seg[0] == '.' && seg[1] == '.'))
			return false;
		if (seg[l] == '\0')
			return true;
	}
}

/* FNV-1a of the sorted key=value pairs of a map field. */
static uint64_t map_hash(void *const *entries, size_t n)
{
	const struct objfs_pb_map_entry *sorted[64];
	uint64_t h = 1469598103934665603ULL;
	size_t i, j, m = n < 64 ? n : 64;

	for (i = 0; i < m; i++)
		sorted[i] = entries[i];
	for (i = 1; i < m; i++) {
		const struct objfs_pb_map_entry *e = sorted[i];

		for (j = i; j > 0 && strcmp(sorted[j - 1]->key, e->key) > 0; j--)
			sorted[j] = sorted[j - 1];
		sorted[j] = e;
	}
	for (i = 0; i < m; i++) {
		const char *parts[2] = { sorted[i]->key, sorted[i]->value };
		size_t k;

		for (k = 0; k < 2; k++) {
			const unsigned char *p = (const unsigned char *)parts[k];

			for (; p != NULL && *p != '\0'; p++) {
				h ^= *p;
				h *= 1099511628211ULL;
			}
			h ^= 0xff;
			h *= 1099511628211ULL;
		}
	}
	return h;
}

/* ---- busy marks -------------------------------------------------------- */

/* Claims volume id for a call: false when another call holds it. */
static bool busy_acquire(struct objfs_csi_node *n, const char *id)
{
	return objfs_claims_take(&n->busy, &id, 1) == 0;
}

static void busy_release(struct objfs_csi_node *n, const char *id)
{
	objfs_claims_drop(&n->busy, &id, 1);
}

/* ---- volumes ------------------------------------------------------------ */

static void vol_free(struct vol *v)
{
	if (v == NULL)
		return;
	objfs_node_rec_release(&v->rec);
	objfs_creds_release(&v->creds);
	free(v);
}

int node_creds_copy(struct objfs_creds *dst, const struct objfs_creds *src)
{
	memset(dst, 0, sizeof(*dst));
	return objfs_creds_copy(src, dst);
}

/* A snapshot of a volume taken under lock by its busy holder. */
static int vol_snapshot(struct objfs_csi_node *n, const char *id,
			struct objfs_node_rec *rec, struct objfs_creds *creds)
{
	struct vol *v;
	int err = ENOENT;

	memset(rec, 0, sizeof(*rec));
	if (creds != NULL)
		memset(creds, 0, sizeof(*creds));
	pthread_mutex_lock(&n->lock);
	v = node_find_vol(n, id);
	if (v != NULL) {
		err = objfs_node_rec_copy(rec, &v->rec);
		if (err == 0 && creds != NULL) {
			err = node_creds_copy(creds, &v->creds);
			if (err != 0)
				objfs_node_rec_release(rec);
		}
	}
	pthread_mutex_unlock(&n->lock);
	return err;
}

/* Saves rec to disk, then swaps it into the volume (the busy holder's). */
static int vol_commit(struct objfs_csi_node *n, struct objfs_node_rec *rec)
{
	struct vol *v;
	int err = 0;

	if (n->rec_dir[0] != '\0')
		err = objfs_node_rec_save(n->rec_dir, rec);
	if (err != 0) {
		objfs_error(n->log, "node", "cannot save the record of volume %s: %s",
			    rec->volume_id, objfs_strerror(err));
		return err;
	}
	pthread_mutex_lock(&n->lock);
	v = node_find_vol(n, rec->volume_id);
	if (v != NULL) {
		struct objfs_node_rec old = v->rec;

		v->rec = *rec;
		memset(rec, 0, sizeof(*rec));
		objfs_node_rec_release(&old);
	}
	pthread_mutex_unlock(&n->lock);
	return 0;
}

/* ---- capabilities ------------------------------------------------------ */

static enum objfs_rpc_code check_capability(const Csi__V1__VolumeCapability *cap,
					    struct objfs_rpc_status *st)
{
	const Csi__V1__VolumeCapability__MountVolume *m;
	enum objfs_rpc_code code;
	char msg[COND_MAX];
	size_t i;

	/* What objfs offers (caps.h), then what objfs-mount accepts. */
	code = objfs_csi_cap_check(cap, "volume_capability", msg, sizeof(msg));
	if (code != OBJFS_RPC_OK)
		return objfs_rpc_fail(st, code, "%s", msg);
	m = cap->mount;
	if (!empty(m->volume_mount_group)) {
		const char *g = m->volume_mount_group;

		if (strspn(g, "0123456789") != strlen(g) || strlen(g) > 10 ||
		    strtoul(g, NULL, 10) > 0x7fffffffUL)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "volume_mount_group \"%s\" is not a numeric group id", g);
	}
	for (i = 0; i < m->n_mount_flags; i++) {
		char why[256] = "";

		if (objfs_mount_opts_check_user(m->mount_flags[i], why, sizeof(why)) != 0)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "volume_capability.mount.mount_flags[%zu] is not a list of objfs-mount options: %s",
					      i, why);
	}
	return OBJFS_RPC_OK;
}

static void flags_join(const Csi__V1__VolumeCapability__MountVolume *m, char *out, size_t cap)
{
	size_t i;

	out[0] = '\0';
	for (i = 0; i < m->n_mount_flags; i++)
		(void)opt_add(out, cap, m->mount_flags[i]);
}

/* What a repeated NodeStageVolume must match. */
static void stage_fingerprint(const Csi__V1__NodeStageVolumeRequest *r, char *out, size_t cap)
{
	const Csi__V1__VolumeCapability__MountVolume *m = r->volume_capability->mount;
	char flags[OPTS_MAX];

	flags_join(m, flags, sizeof(flags));
	snprintf(out, cap, "mode=%d;fs=%s;group=%s;flags=%s;ctx=%016llx",
		 (int)r->volume_capability->access_mode->mode, m->fs_type,
		 m->volume_mount_group, flags,
		 (unsigned long long)map_hash((void *const *)r->volume_context,
					      r->n_volume_context));
}

/* What a repeated NodePublishVolume at the same target must match. */
static void publish_fingerprint(const Csi__V1__NodePublishVolumeRequest *r,
				const char *staging, char *out, size_t cap)
{
	const Csi__V1__VolumeCapability__MountVolume *m = r->volume_capability->mount;
	char flags[OPTS_MAX];

	flags_join(m, flags, sizeof(flags));
	snprintf(out, cap, "mode=%d;fs=%s;group=%s;flags=%s;ro=%d;staging=%s;ctx=%016llx;pctx=%016llx",
		 (int)r->volume_capability->access_mode->mode, m->fs_type,
		 m->volume_mount_group, flags, r->readonly ? 1 : 0, staging,
		 (unsigned long long)map_hash((void *const *)r->volume_context,
					      r->n_volume_context),
		 (unsigned long long)map_hash((void *const *)r->publish_context,
					      r->n_publish_context));
}

/* ---- what a volume is mounted with -------------------------------------- */

static bool volume_id_is_path_safe(const char *id)
{
	size_t n = strlen(id);

	return n > 0 && n <= 253 && id[0] != '.' &&
	       strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* Fills rec's source, endpoint, region, addressing, options and group from
 * the stage request and the plugin's defaults. */
static enum objfs_rpc_code stage_spec(struct objfs_csi_node *n,
				      const Csi__V1__NodeStageVolumeRequest *r,
				      struct objfs_node_rec *rec,
				      struct objfs_rpc_status *st)
{
	const struct objfs_csi_config *cfg = &n->csi->cfg;
	const Csi__V1__VolumeCapability__MountVolume *m = r->volume_capability->mount;
	void *const *ctx = (void *const *)r->volume_context;
	const char *source = objfs_pb_map_get(ctx, r->n_volume_context, OBJFS_CSI_KEY_SOURCE);
	const char *extra = objfs_pb_map_get(ctx, r->n_volume_context,
					     OBJFS_CSI_KEY_MOUNT_OPTIONS);
	struct objfs_s3_conn conn;
	char src[PATH_MAX + 512], resume_state[PATH_MAX];
	char bucket[OBJFS_BUCKET_MAX + 1];
	enum objfs_rpc_code code;
	struct objfs_mount_opts mo = OBJFS_MOUNT_OPTS_INIT;   /* borrows */
	char opts[OPTS_MAX] = "";
	char why[160] = "";
	bool s3;
	size_t i;
	int err = 0;

	if (empty(source)) {
		const char *base = cfg->store.url;
		size_t blen;

		if (empty(base))
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "volume_context has no \"source\" and the plugin has no default store");
		if (!volume_id_is_path_safe(r->volume_id))
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "volume_context has no \"source\" and volume_id \"%s\" cannot name a prefix of the default store",
					      r->volume_id);
		blen = strlen(base);
		while (blen > 0 && base[blen - 1] == '/')
			blen--;
		if ((size_t)snprintf(src, sizeof(src), "%.*s/%s", (int)blen, base,
				     r->volume_id) >= sizeof(src))
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "source is too long");
		source = src;
	}
	if (strncmp(source, "s3://", 5) != 0 && strncmp(source, "file:///", 8) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_context source \"%s\" is not s3://BUCKET/PREFIX or file:///DIR",
				      source);
	for (i = 0; source[i] != '\0'; i++) {
		if ((unsigned char)source[i] < 0x20 || source[i] == 0x7f)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "volume_context source has a control character");
	}
	s3 = strncmp(source, "s3://", 5) == 0;
	if (!s3 && !local_source_ok(source, cfg->store.url))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_context source \"%s\" is a directory of the node: a local source must lie under the plugin's own store (--store file:///DIR), with no . or .. in its path",
				      source);
	if (s3) {
		size_t bl = strcspn(source + 5, "/");

		snprintf(bucket, sizeof(bucket), "%.*s",
			 (int)(bl < OBJFS_BUCKET_MAX ? bl : OBJFS_BUCKET_MAX), source + 5);
	}
	code = objfs_csi_conn_from_context(n->csi, ctx, r->n_volume_context,
					   s3 ? bucket : NULL, r->volume_id, &conn, st);
	if (code != OBJFS_RPC_OK)
		return code;

	mo.allow_other = true;
	objfs_mount_opts_mark(&mo, OBJFS_MOPT_ALLOW_OTHER);
	if (objfs_csi_mode_reader_only(r->volume_capability->access_mode->mode)) {
		mo.ro = true;
		objfs_mount_opts_mark(&mo, OBJFS_MOPT_RO);
	}
	if (!empty(m->volume_mount_group)) {
		/* the pod's group owns the files, group-writable: objects
		 * without attributes (gid, umask) and new ones (fsgroup) */
		mo.gid = strtoull(m->volume_mount_group, NULL, 10);
		objfs_mount_opts_mark(&mo, OBJFS_MOPT_GID);
		mo.umask = 02;
		objfs_mount_opts_mark(&mo, OBJFS_MOPT_UMASK);
		mo.fsgroup = mo.gid;
		objfs_mount_opts_mark(&mo, OBJFS_MOPT_FSGROUP);
	}
	if (cfg->mount_memory_mib != 0) {
		/* objfs-mount's mem_limit bounds its read-ahead buffers: half
		 * the process's budget, the rest is for threads, HTTP
		 * connections and metadata. */
		mo.mem_limit = (uint64_t)(cfg->mount_memory_mib / 2) << 20;
		objfs_mount_opts_mark(&mo, OBJFS_MOPT_MEM_LIMIT);
	}
	if (n->spool_dir[0] != '\0' && opt_value_ok(n->spool_dir)) {
		/* unsaved data waits on the host's disk beside the records,
		 * not in the plugin container's writable layer */
		int e = objfs_node_rec_mkdir(n->spool_dir);

		if (e != 0)
			return objfs_rpc_fail(st, OBJFS_RPC_INTERNAL,
					      "creating the spool directory %s: %s",
					      n->spool_dir, objfs_strerror(e));
		mo.spool_dir = n->spool_dir;
		objfs_mount_opts_mark(&mo, OBJFS_MOPT_SPOOL_DIR);
	}
	if (n->resume_dir[0] != '\0' && opt_value_ok(n->resume_dir)) {
		/* resumable: a keeper (the node's objfs-holder, or the mount
		 * process itself) holds the FUSE connection, so the death of
		 * the serving process is a pause, not ENOTCONN; its state lives
		 * on the host beside the spools */
		char name[OBJFS_NODE_REC_NAME_MAX];
		int e = objfs_node_rec_mkdir(n->resume_dir);

		if (e == 0)
			e = objfs_node_rec_name(r->volume_id, name);
		if (e == 0 && (size_t)snprintf(resume_state, sizeof(resume_state), "%s/%s",
					       n->resume_dir, name) >= sizeof(resume_state))
			e = ENAMETOOLONG;
		if (e != 0)
			return objfs_rpc_fail(st, OBJFS_RPC_INTERNAL,
					      "the state directory of volume %s under %s: %s",
					      r->volume_id, n->resume_dir, objfs_strerror(e));
		mo.resume = true;
		objfs_mount_opts_mark(&mo, OBJFS_MOPT_RESUME);
		mo.state_dir = resume_state;
		objfs_mount_opts_mark(&mo, OBJFS_MOPT_STATE_DIR);
	}
	if (s3) {
		const char *pem = objfs_pb_map_get((void *const *)r->secrets, r->n_secrets,
						   "caBundle");

		if (!empty(pem)) {
			/* A node-stage secret's CA bundle, as the controller
			 * trusts a provisioner secret's. */
			err = objfs_csi_ca_bundle_file(n->csi, pem, conn.ca_file,
						       sizeof(conn.ca_file));
			if (err != 0)
				return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
						      "node-stage secret caBundle: %s",
						      err == EINVAL ? "not a PEM bundle" : objfs_strerror(err));
			conn.set |= OBJFS_S3_CONN_HAS_CA;
		} else if (!opt_value_ok(conn.ca_file)) {
			/* the plugin's CA file, when -o can carry it */
			conn.set &= ~OBJFS_S3_CONN_HAS_CA;
		}
		objfs_s3_conn_to_mount_opts(&conn, &mo);
	}
	err = objfs_mount_opts_build(&mo, opts, sizeof(opts));
	if (err != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "mount options are too long");
	if (!empty(extra)) {
		err = user_opts_add(opts, sizeof(opts), extra, why, sizeof(why));
		if (err == EINVAL)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "volume_context mountOptions \"%s\" is not a list of objfs-mount options: %s",
					      extra, why);
	}
	for (i = 0; err == 0 && i < m->n_mount_flags; i++)
		err = opt_add_list(opts, sizeof(opts), m->mount_flags[i]);
	if (err != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "mount options are too long");

	if (objfs_pb_set_str(&rec->pv_name, objfs_csi_k8s_name(ctx, r->n_volume_context,
						     OBJFS_CSI_PV_NAME)) != 0 ||
	    objfs_pb_set_str(&rec->pvc_name, objfs_csi_k8s_name(ctx, r->n_volume_context,
						      OBJFS_CSI_PVC_NAME)) != 0 ||
	    objfs_pb_set_str(&rec->pvc_namespace, objfs_csi_k8s_name(ctx, r->n_volume_context,
							   OBJFS_CSI_PVC_NAMESPACE)) != 0 ||
	    objfs_pb_set_str(&rec->source, source) != 0 ||
	    objfs_pb_set_str(&rec->endpoint, s3 ? conn.endpoint : "") != 0 ||
	    objfs_pb_set_str(&rec->region, s3 ? conn.region : "") != 0 ||
	    objfs_pb_set_str(&rec->addressing, s3 ? objfs_s3_conn_style_name(conn.path_style) :
			     "") != 0 ||
	    objfs_pb_set_str(&rec->options, opts) != 0 ||
	    objfs_pb_set_str(&rec->group, m->volume_mount_group) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
	return OBJFS_RPC_OK;
}

/* ---- NodeStageVolume ---------------------------------------------------- */


static enum objfs_rpc_code read_secrets(struct objfs_csi_node *n,
					const Csi__V1__NodeStageVolumeRequest *r,
					struct objfs_creds *c, struct objfs_rpc_status *st)
{
	void *const *s = (void *const *)r->secrets;
	const char *ak = objfs_pb_map_get(s, r->n_secrets, SECRET_ACCESS_KEY);
	const char *sk = objfs_pb_map_get(s, r->n_secrets, SECRET_SECRET_KEY);
	const char *tok = objfs_pb_map_get(s, r->n_secrets, SECRET_SESSION_TOKEN);

	const char *role = objfs_pb_map_get(s, r->n_secrets, "roleArn");

	if (empty(ak) && empty(sk) && !empty(role)) {
		/* a per-volume role, assumed with the plugin's own web
		 * identity token (its service account's) */
		return objfs_csi_role_creds(n->csi, role, c, st);
	}
	if (empty(ak) && empty(sk))
		return OBJFS_RPC_OK;
	if (empty(ak) || empty(sk))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "node-stage secrets need both %s and %s",
				      SECRET_ACCESS_KEY, SECRET_SECRET_KEY);
	if (objfs_creds_set(c, "access_key_id", ak) != 0 ||
	    objfs_creds_set(c, "secret_access_key", sk) != 0 ||
	    (!empty(tok) && objfs_creds_set(c, "session_token", tok) != 0))
		return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
	return OBJFS_RPC_OK;
}

/* The error code of a failed mount start. */
static enum objfs_rpc_code mount_fail(struct objfs_rpc_status *st, const char *id,
				      int err, const char *msg)
{
	enum objfs_rpc_code code = objfs_rpc_code_from_errno(err);

	if (err == EIO)
		code = OBJFS_RPC_INTERNAL;
	return objfs_rpc_fail(st, code, "cannot mount volume %s: %s", id,
			      !empty(msg) ? msg : objfs_strerror(err));
}

static enum objfs_rpc_code stage_new(struct objfs_csi_node *n,
				     const Csi__V1__NodeStageVolumeRequest *r,
				     const char *staging, const char *fp,
				     struct objfs_creds *secrets,
				     struct objfs_rpc_status *st)
{
	struct objfs_node_rec rec = OBJFS_NODE_REC_INIT;
	struct objfs_csi_mount_info mi;
	struct vol *v = NULL;
	char msg[OBJFS_RPC_MSG_MAX - 64];
	enum objfs_rpc_code code;
	bool created = false;
	int err;

	code = stage_spec(n, r, &rec, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	if (objfs_pb_set_str(&rec.volume_id, r->volume_id) != 0 ||
	    objfs_pb_set_str(&rec.staging, staging) != 0 ||
	    objfs_pb_set_str(&rec.fingerprint, fp) != 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	rec.secrets = objfs_creds_any(secrets) && n->rec_dir[0] != '\0';
	err = node_ensure_dir(n, staging, &created);
	if (err != 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "staging_target_path %s is not a directory: %s",
				      staging, objfs_strerror(err));
		goto out;
	}
	/* A mount nobody recorded (a plugin that died mid-stage): replace. */
	if (n->m.ops->mount_info(n->m.ctx, staging, &mi) == 0) {
		if (!mi.fuse) {
			code = objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
					      "staging_target_path %s already holds another mount",
					      staging);
			goto out;
		}
		objfs_warn(n->log, "node", "removing an unrecorded FUSE mount at %s", staging);
		n->m.ops->abort_conn(n->m.ctx, staging, mi.dev);
		node_detach_all(n, staging);
	}
	v = calloc(1, sizeof(*v));
	if (v == NULL || node_creds_copy(&v->creds, secrets) != 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	if (rec.secrets) {
		err = objfs_node_secrets_save(n->rec_dir, r->volume_id, secrets);
		if (err != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_INTERNAL,
					      "cannot keep the volume's secrets: %s",
					      objfs_strerror(err));
			goto out;
		}
	}
	err = node_start_mount(n, &rec, secrets, msg, sizeof(msg));
	if (err != 0) {
		objfs_error(n->log, "node", "volume %s: cannot mount at %s: %s", r->volume_id,
			    staging, !empty(msg) ? msg : objfs_strerror(err));
		code = mount_fail(st, r->volume_id, err, msg);
		goto out;
	}
	if (n->rec_dir[0] != '\0') {
		err = objfs_node_rec_save(n->rec_dir, &rec);
		if (err != 0) {
			node_kill_mount(n, &rec);
			code = objfs_rpc_fail(st, OBJFS_RPC_INTERNAL,
					      "cannot record volume %s: %s", r->volume_id,
					      objfs_strerror(err));
			goto out;
		}
	}
	v->rec = rec;
	memset(&rec, 0, sizeof(rec));
	snprintf(v->cond, sizeof(v->cond), "mounted");
	pthread_mutex_lock(&n->lock);
	v->next = n->vols;
	n->vols = v;
	pthread_mutex_unlock(&n->lock);
	v = NULL;
	code = OBJFS_RPC_OK;
out:
	if (code != OBJFS_RPC_OK && n->rec_dir[0] != '\0' && rec.volume_id != NULL)
		objfs_node_rec_remove(n->rec_dir, rec.volume_id);
	objfs_node_rec_release(&rec);
	vol_free(v);
	return code;
}

enum objfs_rpc_code objfs_csi_node_stage_volume(void *ctx, const ProtobufCMessage *req,
						ProtobufCMessage **resp,
						struct objfs_rpc_status *st)
{
	const Csi__V1__NodeStageVolumeRequest *r = (const void *)req;
	struct objfs_csi_node *n = node_of(ctx);
	struct objfs_creds secrets = OBJFS_CREDS_INIT;
	struct objfs_node_rec cur = OBJFS_NODE_REC_INIT;
	struct objfs_creds cur_creds = OBJFS_CREDS_INIT;
	char staging[PATH_MAX];
	char fp[FP_MAX];
	char other[256] = "";
	char msg[OBJFS_RPC_MSG_MAX - 64];
	enum objfs_rpc_code code;
	bool have, busy = false;
	struct vol *v;

	if (empty(r->volume_id))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "volume_id is missing");
	if (empty(r->staging_target_path))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "staging_target_path is missing");
	code = check_capability(r->volume_capability, st);
	if (code != OBJFS_RPC_OK)
		return code;
	code = node_confine(n, "staging_target_path", r->staging_target_path, staging,
			    sizeof(staging), OBJFS_RPC_INVALID_ARGUMENT, st);
	if (code != OBJFS_RPC_OK)
		return code;
	code = read_secrets(n, r, &secrets, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	stage_fingerprint(r, fp, sizeof(fp));
	if (!busy_acquire(n, r->volume_id)) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "an operation on volume %s is in progress", r->volume_id);
		goto out;
	}
	busy = true;

	pthread_mutex_lock(&n->lock);
	for (v = n->vols; v != NULL; v = v->next) {
		if (strcmp(v->rec.staging, staging) == 0 &&
		    strcmp(v->rec.volume_id, r->volume_id) != 0)
			snprintf(other, sizeof(other), "%s", v->rec.volume_id);
	}
	pthread_mutex_unlock(&n->lock);
	have = vol_snapshot(n, r->volume_id, &cur, &cur_creds) == 0;
	if (!have && other[0] != '\0') {
		code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "staging_target_path %s is where volume %s is staged",
				      staging, other);
		goto out;
	}
	if (!have) {
		code = stage_new(n, r, staging, fp, &secrets, st);
		goto out;
	}
	if (strcmp(cur.staging, staging) != 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "volume %s is already staged at %s", r->volume_id,
				      cur.staging);
		goto out;
	}
	if (!streq(cur.fingerprint, fp)) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "volume %s is staged at %s with another volume_capability or volume_context",
				      r->volume_id, staging);
		goto out;
	}
	code = OBJFS_RPC_OK;
	if (node_needs_repair(n, &cur)) {
		int err = node_repair(n, &cur, &cur_creds, msg, sizeof(msg));
		int cerr = vol_commit(n, &cur);

		if (err == 0)
			err = cerr;
		if (err != 0)
			code = mount_fail(st, r->volume_id, err, msg);
		else
			node_vol_set_condition(n, r->volume_id, false, "mounted");
	}
out:
	if (busy)
		busy_release(n, r->volume_id);
	objfs_node_rec_release(&cur);
	objfs_creds_release(&cur_creds);
	objfs_creds_release(&secrets);
	return code;
}

/* ---- NodeUnstageVolume -------------------------------------------------- */

static void vol_remove(struct objfs_csi_node *n, const char *id)
{
	struct vol **pp, *v = NULL;

	pthread_mutex_lock(&n->lock);
	for (pp = &n->vols; *pp != NULL; pp = &(*pp)->next) {
		if (strcmp((*pp)->rec.volume_id, id) == 0) {
			v = *pp;
			*pp = v->next;
			break;
		}
	}
	pthread_mutex_unlock(&n->lock);
	vol_free(v);
}

enum objfs_rpc_code objfs_csi_node_unstage_volume(void *ctx, const ProtobufCMessage *req,
						  ProtobufCMessage **resp,
						  struct objfs_rpc_status *st)
{
	const Csi__V1__NodeUnstageVolumeRequest *r = (const void *)req;
	struct objfs_csi_node *n = node_of(ctx);
	struct objfs_node_rec cur = OBJFS_NODE_REC_INIT;
	struct objfs_csi_mount_info mi;
	char staging[PATH_MAX], logp[PATH_MAX];
	enum objfs_rpc_code code;
	size_t i;
	int err;

	if (empty(r->volume_id))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "volume_id is missing");
	if (empty(r->staging_target_path))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "staging_target_path is missing");
	code = node_confine(n, "staging_target_path", r->staging_target_path, staging,
			    sizeof(staging), OBJFS_RPC_INVALID_ARGUMENT, st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (!busy_acquire(n, r->volume_id))
		return objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "an operation on volume %s is in progress", r->volume_id);
	code = OBJFS_RPC_OK;
	if (vol_snapshot(n, r->volume_id, &cur, NULL) != 0) {
		/* Not ours (any more): remove a FUSE mount nobody recorded. */
		if (n->m.ops->mount_info(n->m.ctx, staging, &mi) == 0 && mi.fuse) {
			objfs_warn(n->log, "node", "unstage %s: removing an unrecorded FUSE mount at %s",
				   r->volume_id, staging);
			if (n->m.ops->unmount(n->m.ctx, staging, false) != 0)
				node_detach_all(n, staging);
		}
		goto out;
	}
	if (strcmp(cur.staging, staging) != 0)
		goto out;   /* not staged at this path: nothing to undo */
	for (i = 0; i < cur.n_pubs; i++) {
		objfs_warn(n->log, "node", "unstage %s: %s is still published; unmounting it",
			   r->volume_id, cur.pubs[i].target);
		node_detach_all(n, cur.pubs[i].target);
		rmdir(cur.pubs[i].target);
	}
	err = node_unmount_staging(n, &cur);
	if (err != 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_INTERNAL,
				      "the mount process of volume %s does not stop",
				      r->volume_id);
		goto out;
	}
	if (n->rec_dir[0] != '\0') {
		err = objfs_node_rec_remove(n->rec_dir, r->volume_id);
		if (err != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_INTERNAL,
					      "cannot remove the record of volume %s: %s",
					      r->volume_id, objfs_strerror(err));
			goto out;
		}
	}
	/* The mount's log goes with it: nothing of the volume stays in the
	 * state directory. */
	if (node_log_path(n, r->volume_id, logp, sizeof(logp)) == 0 &&
	    unlink(logp) != 0 && errno != ENOENT)
		objfs_warn(n->log, "node", "unstage %s: cannot remove %s: %s", r->volume_id,
			   logp, objfs_strerror(errno));
	vol_remove(n, r->volume_id);
	objfs_info(n->log, "node", "volume %s unstaged from %s", r->volume_id, staging);
out:
	busy_release(n, r->volume_id);
	objfs_node_rec_release(&cur);
	return code;
}

/* ---- NodePublishVolume -------------------------------------------------- */

enum objfs_rpc_code objfs_csi_node_publish_volume(void *ctx, const ProtobufCMessage *req,
						  ProtobufCMessage **resp,
						  struct objfs_rpc_status *st)
{
	const Csi__V1__NodePublishVolumeRequest *r = (const void *)req;
	struct objfs_csi_node *n = node_of(ctx);
	struct objfs_node_rec cur = OBJFS_NODE_REC_INIT;
	struct objfs_csi_mount_info mi, smi;
	char staging[PATH_MAX], target[PATH_MAX];
	char fp[FP_MAX];
	char other[256] = "";
	enum objfs_rpc_code code;
	const char *group;
	bool ro, busy = false;
	struct vol *v;
	long i;
	int err, mode;

	if (empty(r->volume_id))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "volume_id is missing");
	if (empty(r->target_path))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "target_path is missing");
	code = check_capability(r->volume_capability, st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (empty(r->staging_target_path))
		return objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "staging_target_path is missing: the plugin stages volumes (NodeStageVolume first)");
	code = node_confine(n, "staging_target_path", r->staging_target_path, staging,
			    sizeof(staging), OBJFS_RPC_INVALID_ARGUMENT, st);
	if (code == OBJFS_RPC_OK)
		code = node_confine(n, "target_path", r->target_path, target, sizeof(target),
				    OBJFS_RPC_INVALID_ARGUMENT, st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (strcmp(staging, target) == 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "target_path is the staging_target_path");
	mode = r->volume_capability->access_mode->mode;
	ro = r->readonly || objfs_csi_mode_reader_only(mode);
	group = r->volume_capability->mount->volume_mount_group;
	publish_fingerprint(r, staging, fp, sizeof(fp));
	if (!busy_acquire(n, r->volume_id))
		return objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "an operation on volume %s is in progress", r->volume_id);
	busy = true;

	pthread_mutex_lock(&n->lock);
	for (v = n->vols; v != NULL; v = v->next) {
		if (strcmp(v->rec.volume_id, r->volume_id) != 0 &&
		    objfs_node_rec_find_pub(&v->rec, target) >= 0)
			snprintf(other, sizeof(other), "%s", v->rec.volume_id);
	}
	pthread_mutex_unlock(&n->lock);
	if (vol_snapshot(n, r->volume_id, &cur, NULL) != 0 ||
	    strcmp(cur.staging, staging) != 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "volume %s is not staged at %s (NodeStageVolume first)",
				      r->volume_id, staging);
		goto out;
	}
	i = objfs_node_rec_find_pub(&cur, target);
	if (i >= 0) {
		if (!streq(cur.pubs[i].fingerprint, fp) || cur.pubs[i].readonly != ro) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "volume %s is published at %s with other arguments",
					      r->volume_id, target);
			goto out;
		}
		/* Idempotent; bind again when the mount went away. */
		if (!node_target_ok(n, staging, target)) {
			node_detach_all(n, target);
			err = node_bind_target(n, staging, target, ro);
			if (err != 0) {
				code = objfs_rpc_fail(st, objfs_rpc_code_from_errno(err),
						      "cannot bind %s at %s: %s", staging,
						      target, objfs_strerror(err));
				goto out;
			}
		}
		code = OBJFS_RPC_OK;
		goto out;
	}
	if (other[0] != '\0') {
		code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "target_path %s is where volume %s is published", target,
				      other);
		goto out;
	}
	if (!empty(group) && !streq(group, cur.group)) {
		code = objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "volume %s is staged for group %s, not %s: pods sharing a volume on a node need the same fsGroup",
				      r->volume_id, empty(cur.group) ? "(none)" : cur.group,
				      group);
		goto out;
	}
	if (objfs_csi_mode_single_target(mode) && cur.n_pubs > 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "volume %s is already published at %s and its access mode allows one target",
				      r->volume_id, cur.pubs[0].target);
		goto out;
	}
	if (n->m.ops->mount_info(n->m.ctx, staging, &smi) != 0 || !node_proc_alive(n, &cur)) {
		code = objfs_rpc_fail(st, OBJFS_RPC_UNAVAILABLE,
				      "the mount of volume %s at %s is down; it is being repaired",
				      r->volume_id, staging);
		goto out;
	}
	if (n->m.ops->mount_info(n->m.ctx, target, &mi) == 0) {
		if (mi.dev != smi.dev) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "target_path %s already holds another mount", target);
			goto out;
		}
		/* Already bound (a record lost mid-publish): adopt it. */
	} else {
		err = node_bind_target(n, staging, target, ro);
		if (err != 0) {
			code = objfs_rpc_fail(st, objfs_rpc_code_from_errno(err),
					      "cannot bind %s at %s: %s", staging, target,
					      objfs_strerror(err));
			goto out;
		}
	}
	if (objfs_node_rec_add_pub(&cur, target, fp, ro) != 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
		node_detach_all(n, target);
		goto out;
	}
	err = vol_commit(n, &cur);
	if (err != 0) {
		node_detach_all(n, target);
		rmdir(target);
		code = objfs_rpc_fail(st, OBJFS_RPC_INTERNAL, "cannot record the publication: %s",
				      objfs_strerror(err));
		goto out;
	}
	objfs_info(n->log, "node", "volume %s published at %s%s", r->volume_id, target,
		   ro ? " (read-only)" : "");
	code = OBJFS_RPC_OK;
out:
	if (busy)
		busy_release(n, r->volume_id);
	objfs_node_rec_release(&cur);
	return code;
}

/* ---- NodeUnpublishVolume ------------------------------------------------ */

enum objfs_rpc_code objfs_csi_node_unpublish_volume(void *ctx, const ProtobufCMessage *req,
						    ProtobufCMessage **resp,
						    struct objfs_rpc_status *st)
{
	const Csi__V1__NodeUnpublishVolumeRequest *r = (const void *)req;
	struct objfs_csi_node *n = node_of(ctx);
	struct objfs_node_rec cur = OBJFS_NODE_REC_INIT;
	struct objfs_csi_mount_info mi;
	char target[PATH_MAX];
	enum objfs_rpc_code code;
	long i = -1;
	int k, err;

	if (empty(r->volume_id))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "volume_id is missing");
	if (empty(r->target_path))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "target_path is missing");
	code = node_confine(n, "target_path", r->target_path, target, sizeof(target),
			    OBJFS_RPC_INVALID_ARGUMENT, st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (!busy_acquire(n, r->volume_id))
		return objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "an operation on volume %s is in progress", r->volume_id);
	code = OBJFS_RPC_OK;
	if (vol_snapshot(n, r->volume_id, &cur, NULL) == 0)
		i = objfs_node_rec_find_pub(&cur, target);
	/* Unmount whatever is there: a plain unmount first (a pod that
	 * still has files open gets a lazy one), a dead mount at once. */
	for (k = 0; k < DETACH_TRIES; k++) {
		if (n->m.ops->mount_info(n->m.ctx, target, &mi) != 0)
			break;
		err = n->m.ops->unmount(n->m.ctx, target, false);
		if (err != 0 && err != EINVAL) {
			objfs_warn(n->log, "node", "unpublish %s: unmount %s: %s; detaching",
				   r->volume_id, target, objfs_strerror(err));
			if (n->m.ops->unmount(n->m.ctx, target, true) != 0)
				break;
		}
	}
	if (n->m.ops->mount_info(n->m.ctx, target, &mi) == 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_INTERNAL, "cannot unmount %s", target);
		goto out;
	}
	if (rmdir(target) != 0 && errno != ENOENT) {
		err = errno;
		if (err != ENOTEMPTY && err != EEXIST) {
			code = objfs_rpc_fail(st, OBJFS_RPC_INTERNAL, "cannot remove %s: %s",
					      target, objfs_strerror(err));
			goto out;
		}
		/* Files written into the bare directory while nothing was
		 * mounted: not ours to delete, and no reason to keep the
		 * pod in Terminating. */
		objfs_warn(n->log, "node", "unpublish %s: %s is not empty; left in place",
			   r->volume_id, target);
	}
	if (i >= 0) {
		objfs_node_rec_del_pub(&cur, (size_t)i);
		err = vol_commit(n, &cur);
		if (err != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_INTERNAL,
					      "cannot record the unpublication: %s",
					      objfs_strerror(err));
			goto out;
		}
		objfs_info(n->log, "node", "volume %s unpublished from %s", r->volume_id, target);
	}
out:
	busy_release(n, r->volume_id);
	objfs_node_rec_release(&cur);
	return code;
}

/* ---- NodeGetCapabilities, NodeGetInfo ----------------------------------- */

enum objfs_rpc_code objfs_csi_node_get_capabilities(void *ctx, const ProtobufCMessage *req,
						    ProtobufCMessage **resp,
						    struct objfs_rpc_status *st)
{
	static const Csi__V1__NodeServiceCapability__RPC__Type types[] = {
		CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__STAGE_UNSTAGE_VOLUME,
		CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME_STATS,
		CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_CONDITION,
		CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_MOUNT_GROUP,
		CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__SINGLE_NODE_MULTI_WRITER,
	};
	Csi__V1__NodeGetCapabilitiesResponse *out;
	size_t i;

	(void)ctx;
	(void)req;
	out = objfs_pb_new(&csi__v1__node_get_capabilities_response__descriptor);
	*resp = (ProtobufCMessage *)out;
	if (out == NULL)
		return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		Csi__V1__NodeServiceCapability *c;

		c = objfs_pb_new(&csi__v1__node_service_capability__descriptor);
		if (c == NULL)
			return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
		c->type_case = CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC;
		c->rpc = objfs_pb_new(&csi__v1__node_service_capability__rpc__descriptor);
		if (c->rpc == NULL ||
		    objfs_pb_append((void ***)&out->capabilities, &out->n_capabilities, c) != 0) {
			protobuf_c_message_free_unpacked(&c->base, NULL);
			return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
		}
		c->rpc->type = types[i];
	}
	return OBJFS_RPC_OK;
}

enum objfs_rpc_code objfs_csi_node_get_info(void *ctx, const ProtobufCMessage *req,
					    ProtobufCMessage **resp,
					    struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	Csi__V1__NodeGetInfoResponse *out;

	(void)req;
	if (empty(csi->cfg.node_id))
		return objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "the plugin was started without --node-id");
	out = objfs_pb_new(&csi__v1__node_get_info_response__descriptor);
	*resp = (ProtobufCMessage *)out;
	if (out == NULL || objfs_pb_set_str(&out->node_id, csi->cfg.node_id) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
	out->max_volumes_per_node = 0;
	return OBJFS_RPC_OK;
}

/* ---- the watchdog -------------------------------------------------------- */

unsigned objfs_csi_node_check(struct objfs_csi_node *n)
{
	char **ids = NULL;
	size_t n_ids = 0, i;
	unsigned repaired = 0;
	struct vol *v;

	pthread_mutex_lock(&n->lock);
	for (v = n->vols; v != NULL; v = v->next)
		n_ids++;
	ids = calloc(n_ids + 1, sizeof(*ids));
	for (v = n->vols, i = 0; ids != NULL && v != NULL; v = v->next, i++)
		ids[i] = strdup(v->rec.volume_id);
	pthread_mutex_unlock(&n->lock);
	if (ids == NULL)
		return 0;
	for (i = 0; i < n_ids; i++) {
		struct objfs_node_rec rec = OBJFS_NODE_REC_INIT;
		struct objfs_creds creds = OBJFS_CREDS_INIT;
		char msg[COND_MAX / 2];
		char cond[COND_MAX];
		int err, cerr;

		if (ids[i] == NULL || !node_vol_repair_due(n, ids[i]) ||
		    !busy_acquire(n, ids[i]))
			continue;
		if (vol_snapshot(n, ids[i], &rec, &creds) == 0 && node_needs_repair(n, &rec)) {
			node_vol_set_condition(n, ids[i], true, "the mount is broken; repairing it");
			node_vol_set_repairing(n, ids[i], true);
			err = node_repair(n, &rec, &creds, msg, sizeof(msg));
			/* Recorded even when a bind failed: the process may
			 * be new. */
			cerr = vol_commit(n, &rec);
			if (err == 0)
				err = cerr;
			node_vol_set_repairing(n, ids[i], false);
			node_metrics_repaired(n, err == 0);
			if (err == 0) {
				repaired++;
				node_vol_set_condition(n, ids[i], false, "mounted");
			} else {
				snprintf(cond, sizeof(cond), "the mount is broken and its repair failed: %s",
					 msg[0] != '\0' ? msg : objfs_strerror(err));
				node_vol_set_condition(n, ids[i], true, cond);
				node_vol_repair_failed(n, ids[i]);
				objfs_error(n->log, "node", "volume %s: %s", ids[i], cond);
			}
		}
		objfs_node_rec_release(&rec);
		objfs_creds_release(&creds);
		busy_release(n, ids[i]);
	}
	for (i = 0; i < n_ids; i++)
		free(ids[i]);
	free(ids);
	return repaired;
}

/* The watchdog thread: objfs_csi_node_check() every m.watchdog_ms until
 * n->stopping. */
static void *watchdog_main(void *arg)
{
	struct objfs_csi_node *n = arg;
	struct timespec ts;

	for (;;) {
		pthread_mutex_lock(&n->lock);
		if (n->stopping) {
			pthread_mutex_unlock(&n->lock);
			break;
		}
		pthread_mutex_unlock(&n->lock);
		objfs_csi_node_check(n);
		objfs_deadline_ms(CLOCK_MONOTONIC, n->m.watchdog_ms, &ts);
		pthread_mutex_lock(&n->lock);
		while (!n->stopping &&
		       pthread_cond_timedwait(&n->wake, &n->lock, &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&n->lock);
	}
	return NULL;
}

/* ---- lifetime ------------------------------------------------------------ */

static int load_records(struct objfs_csi_node *n)
{
	struct objfs_node_rec *recs = NULL;
	size_t cnt = 0, i;
	unsigned bad = 0;
	int err;

	err = objfs_node_rec_load_all(n->rec_dir, &recs, &cnt, &bad);
	if (err != 0)
		return err;
	if (bad > 0)
		objfs_warn(n->log, "node", "%u unreadable records in %s were skipped", bad,
			   n->rec_dir);
	for (i = 0; i < cnt; i++) {
		struct vol *v = calloc(1, sizeof(*v));

		if (v == NULL) {
			err = ENOMEM;
			break;
		}
		v->rec = recs[i];
		memset(&recs[i], 0, sizeof(recs[i]));
		if (v->rec.secrets &&
		    objfs_node_secrets_load(n->rec_dir, v->rec.volume_id, &v->creds) != 0)
			objfs_warn(n->log, "node", "volume %s: its secrets file is unreadable; repairs use the plugin's credentials",
				   v->rec.volume_id);
		snprintf(v->cond, sizeof(v->cond), "adopted");
		v->next = n->vols;
		n->vols = v;
		objfs_info(n->log, "node", "volume %s: found its record (staged at %s, process %ld, %zu targets)",
			   v->rec.volume_id, v->rec.staging, (long)v->rec.pid, v->rec.n_pubs);
	}
	for (; i < cnt; i++)
		objfs_node_rec_release(&recs[i]);
	free(recs);
	return err;
}

int objfs_csi_node_create(struct objfs_csi *csi, const struct objfs_csi_mounter *mounter,
			  struct objfs_csi_node **out)
{
	struct objfs_csi_node *n;
	const char *kdir = csi->cfg.kubelet_dir != NULL ? csi->cfg.kubelet_dir
							 : "/var/lib/kubelet";
	char norm[PATH_MAX];
	pthread_condattr_t ca;
	int err;

	*out = NULL;
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		return ENOMEM;
	n->csi = csi;
	n->log = csi->log;
	n->m = mounter != NULL ? *mounter : *objfs_csi_mounter_real();
	err = node_normalise(kdir, norm, sizeof(norm));
	if (err != 0)
		goto fail_free;
	if (realpath(norm, n->kubelet) == NULL)
		snprintf(n->kubelet, sizeof(n->kubelet), "%s", norm);
	if (strcmp(n->kubelet, "/") == 0)
		n->kubelet[0] = '\0';
	if (csi->cfg.state_dir != NULL) {
		snprintf(n->rec_dir, sizeof(n->rec_dir), "%s/node/volumes", csi->cfg.state_dir);
		snprintf(n->tmp_dir, sizeof(n->tmp_dir), "%s/node/tmp", csi->cfg.state_dir);
		snprintf(n->log_dir, sizeof(n->log_dir), "%s/node/logs", csi->cfg.state_dir);
		snprintf(n->spool_dir, sizeof(n->spool_dir), "%s/node/spool", csi->cfg.state_dir);
		snprintf(n->resume_dir, sizeof(n->resume_dir), "%s/node/resume", csi->cfg.state_dir);
	} else {
		snprintf(n->tmp_dir, sizeof(n->tmp_dir), "/tmp");
	}
	err = objfs_claims_init(&n->busy);
	if (err != 0)
		goto fail_free;
	err = pthread_mutex_init(&n->lock, NULL);
	if (err != 0)
		goto fail_claims;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = pthread_cond_init(&n->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (err != 0)
		goto fail_mutex;
	if (n->rec_dir[0] != '\0') {
		err = objfs_node_rec_mkdir(n->rec_dir);
		if (err == 0)
			err = load_records(n);
		if (err != 0) {
			objfs_error(n->log, "node", "cannot read the records in %s: %s",
				    n->rec_dir, objfs_strerror(err));
			goto fail_vols;
		}
	}
	err = node_metrics_attach(n, csi->cfg.metrics);
	if (err != 0)
		goto fail_vols;
	if (n->m.watchdog_ms != 0) {
		err = pthread_create(&n->watchdog, NULL, watchdog_main, n);
		if (err != 0)
			goto fail_vols;
		n->watchdog_running = true;
	}
	*out = n;
	return 0;
fail_vols:
	while (n->vols != NULL) {
		struct vol *v = n->vols;

		n->vols = v->next;
		vol_free(v);
	}
	pthread_cond_destroy(&n->wake);
fail_mutex:
	pthread_mutex_destroy(&n->lock);
fail_claims:
	objfs_claims_release(&n->busy);
fail_free:
	free(n);
	return err;
}

void objfs_csi_node_destroy(struct objfs_csi_node *n)
{
	if (n == NULL)
		return;
	if (n->watchdog_running) {
		pthread_mutex_lock(&n->lock);
		n->stopping = true;
		pthread_cond_broadcast(&n->wake);
		pthread_mutex_unlock(&n->lock);
		pthread_join(n->watchdog, NULL);
	}
	while (n->vols != NULL) {
		struct vol *v = n->vols;

		n->vols = v->next;
		vol_free(v);
	}
	objfs_claims_release(&n->busy);
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->lock);
	free(n);
}
