/*
 * node_stats.c - NodeGetVolumeStats (see node_int.h): the usage of a staged
 * or published volume and its condition.
 *
 * A volume is abnormal when its mount process has exited, its mount does
 * not answer statvfs within stats_timeout_ms (or is disconnected), its
 * store does not answer a one-key listing within the same time (opened
 * with the driver's store factory, never through the mounter), or the
 * watchdog's last repair failed.  Takes no busy mark: it reads a copy of
 * the volume's record made under the lock.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/backend.h"
#include "backend/s3conn.h"
#include "common/errors.h"
#include "common/mountopts.h"
#include "csi.pb-c.h"
#include "csi/node.h"
#include "csi/node_int.h"
#include "csi/pb.h"

static int add_usage(Csi__V1__NodeGetVolumeStatsResponse *resp,
		     Csi__V1__VolumeUsage__Unit unit, uint64_t total,
		     uint64_t used, uint64_t avail)
{
	Csi__V1__VolumeUsage *u = objfs_pb_new(&csi__v1__volume_usage__descriptor);

	if (u == NULL)
		return ENOMEM;
	u->unit = unit;
	u->total = total > INT64_MAX ? INT64_MAX : (int64_t)total;
	u->used = used > INT64_MAX ? INT64_MAX : (int64_t)used;
	u->available = avail > INT64_MAX ? INT64_MAX : (int64_t)avail;
	if (objfs_pb_append((void ***)&resp->usage, &resp->n_usage, u) != 0) {
		free(u);
		return ENOMEM;
	}
	return 0;
}

/* Whether the store sc describes answers a one-key listing within the
 * stats timeout, opened with the driver's store factory (cfg.store_open;
 * none: nothing to probe, 0).  A local store's directory is only looked
 * at: opening one would create it.  0 or the errno of the failure. */
static int store_probe(struct objfs_csi_node *n, const struct objfs_store_config *sc)
{
	const struct objfs_csi_config *cfg = &n->csi->cfg;
	unsigned timeout_ms = n->m.stats_timeout_ms;
	struct objfs_store_config c = *sc;
	struct objfs_list_req lreq = { "", NULL, NULL, NULL, 1 };
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_store *store = NULL;
	char *scheme = NULL, *bucket = NULL, *prefix = NULL;
	struct stat st;
	int err;

	if (cfg->store_open == NULL)
		return 0;
	err = objfs_store_url_parse(sc->url, &scheme, &bucket, &prefix);
	if (err != 0)
		goto out;
	if (strcmp(scheme, "file") == 0 && stat(bucket, &st) == 0 && !S_ISDIR(st.st_mode)) {
		err = ENOTDIR;
		goto out;
	}
	/* a file:// store is opened too: the URL's path is the store's
	 * root (found by its marker) and a prefix in its own layout, not a
	 * directory that stat() could check */
	c.retry.max_attempts = 1;
	c.retry.max_total_ms = timeout_ms;
	c.s3.connect_timeout_ms = timeout_ms;
	c.s3.low_speed_timeout_s = (long)(timeout_ms / 1000) + 1;
	c.s3.max_connections = 1;
	err = cfg->store_open(&c, NULL, &store);
	if (err != 0)
		goto out;
	err = objfs_store_list(store, &lreq, &page);
	objfs_list_page_release(&page);
out:
	objfs_store_destroy(store);
	free(scheme);
	free(bucket);
	free(prefix);
	return err;
}

enum objfs_rpc_code objfs_csi_node_get_volume_stats(void *ctx, const ProtobufCMessage *req,
						    ProtobufCMessage **resp,
						    struct objfs_rpc_status *st)
{
	const Csi__V1__NodeGetVolumeStatsRequest *r = (const void *)req;
	struct objfs_csi_node *n = node_of(ctx);
	struct objfs_node_rec cur = OBJFS_NODE_REC_INIT;
	struct objfs_creds cur_creds = OBJFS_CREDS_INIT;
	Csi__V1__NodeGetVolumeStatsResponse *out;
	char path[PATH_MAX];
	char cond[COND_MAX] = "";
	char msg[COND_MAX + 160] = "";
	bool abnormal = false, watchdog_abnormal = false, hung = false;
	enum objfs_rpc_code code;
	struct statvfs sv;
	struct vol *v;
	int err;

	if (empty(r->volume_id))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "volume_id is missing");
	if (empty(r->volume_path))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "volume_path is missing");
	code = node_confine(n, "volume_path", r->volume_path, path, sizeof(path),
			    OBJFS_RPC_NOT_FOUND, st);
	if (code != OBJFS_RPC_OK)
		return code;
	pthread_mutex_lock(&n->lock);
	v = node_find_vol(n, r->volume_id);
	if (v != NULL && (strcmp(v->rec.staging, path) == 0 ||
			  objfs_node_rec_find_pub(&v->rec, path) >= 0)) {
		if (objfs_node_rec_copy(&cur, &v->rec) != 0 ||
		    node_creds_copy(&cur_creds, &v->creds) != 0)
			code = OBJFS_RPC_RESOURCE_EXHAUSTED;
		watchdog_abnormal = v->abnormal;
		snprintf(cond, sizeof(cond), "%s", v->cond);
	} else {
		code = OBJFS_RPC_NOT_FOUND;
	}
	pthread_mutex_unlock(&n->lock);
	if (code == OBJFS_RPC_NOT_FOUND) {
		code = objfs_rpc_fail(st, code, "volume %s is not staged or published at %s",
				      r->volume_id, r->volume_path);
		goto out;
	}
	if (code != OBJFS_RPC_OK) {
		code = objfs_rpc_fail(st, code, "out of memory");
		goto out;
	}
	out = objfs_pb_new(&csi__v1__node_get_volume_stats_response__descriptor);
	*resp = (ProtobufCMessage *)out;
	if (out == NULL) {
		code = objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	if (!node_proc_alive(n, &cur)) {
		abnormal = true;
		if (watchdog_abnormal)
			snprintf(msg, sizeof(msg), "the mount process (pid %ld) has exited; %s",
				 (long)cur.pid, cond);
		else
			snprintf(msg, sizeof(msg), "the mount process (pid %ld) has exited; the plugin is restarting it",
				 (long)cur.pid);
	} else {
		err = n->m.ops->statfs(n->m.ctx, path, n->m.stats_timeout_ms, &sv);
		if (err == 0) {
			uint64_t f = sv.f_frsize != 0 ? sv.f_frsize : sv.f_bsize;

			if (add_usage(out, CSI__V1__VOLUME_USAGE__UNIT__BYTES,
				      (uint64_t)sv.f_blocks * f,
				      (uint64_t)(sv.f_blocks - sv.f_bfree) * f,
				      (uint64_t)sv.f_bavail * f) != 0 ||
			    add_usage(out, CSI__V1__VOLUME_USAGE__UNIT__INODES,
				      sv.f_files, sv.f_files - sv.f_ffree, sv.f_favail) != 0) {
				code = objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
				goto out;
			}
		} else if (err == ENOTCONN) {
			abnormal = true;
			snprintf(msg, sizeof(msg), "%s: transport endpoint is not connected (the mount is dead)",
				 r->volume_path);
		} else if (err == ETIMEDOUT) {
			abnormal = true;
			hung = true;
			snprintf(msg, sizeof(msg), "%s does not answer within %u ms", r->volume_path,
				 n->m.stats_timeout_ms);
		} else {
			abnormal = true;
			snprintf(msg, sizeof(msg), "statfs %s: %s", r->volume_path,
				 objfs_strerror(err));
		}
	}
	/* A mount that does not answer is most often waiting for its store
	 * (objfs-mount rides through outages): name that cause if it is. */
	if (!abnormal || hung) {
		struct objfs_store_config sc;
		struct objfs_creds c = node_creds_for(n, &cur_creds);
		struct objfs_mount_opts mo = OBJFS_MOUNT_OPTS_INIT;
		struct objfs_s3_conn conn = OBJFS_S3_CONN_INIT;
		char why[160];

		/* the connection the mount was started with: its -o back */
		if (!empty(cur.options) &&
		    objfs_mount_opts_parse(cur.options, 0, &mo, why, sizeof(why)) == 0)
			(void)objfs_s3_conn_from_mount_opts(&conn, &mo);
		objfs_mount_opts_release(&mo);
		memset(&sc, 0, sizeof(sc));
		sc.url = cur.source;
		sc.s3.ca_file = n->csi->cfg.store.s3.ca_file;
		objfs_s3_conn_to_store(&conn, &sc.s3);
		sc.s3.access_key = c.access_key;
		sc.s3.secret_key = c.secret_key;
		sc.s3.session_token = c.session_token;
		err = store_probe(n, &sc);
		if (err != 0) {
			abnormal = true;
			snprintf(msg, sizeof(msg), "the object store of %s is unreachable: %s%s",
				 cur.source, objfs_strerror(err),
				 hung ? "; the mount's calls wait for it (retry_timeout)" : "");
		}
	}
	if (!abnormal && watchdog_abnormal) {
		abnormal = true;
		snprintf(msg, sizeof(msg), "%s", cond);
	}
	out->volume_condition = objfs_pb_new(&csi__v1__volume_condition__descriptor);
	if (out->volume_condition == NULL ||
	    objfs_pb_set_str(&out->volume_condition->message,
			     abnormal ? msg : "the mount is healthy") != 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	out->volume_condition->abnormal = abnormal;
	code = OBJFS_RPC_OK;
out:
	objfs_node_rec_release(&cur);
	objfs_creds_release(&cur_creds);
	return code;
}
