/*
 * params.c - StorageClass parameters of the CSI controller (see params.h):
 * one pass that names every problem by its key, then the policy.  The
 * connection's parameters (endpoint, region, addressingStyle) are read
 * and checked by backend/s3conn.h; this file words the messages.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "backend/s3conn.h"
#include "common/mountopts.h"
#include "csi/params.h"
#include "csi/pb.h"
#include "csi/roots.h"
#include "csi/volid.h"
#include "volume/kvtext.h"

const char *objfs_csi_map_get(void *const *entries, size_t n, const char *key)
{
	const char *v = objfs_pb_map_get(entries, n, key);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

const char *objfs_csi_k8s_name(void *const *entries, size_t n, const char *key)
{
	const char *v = objfs_csi_map_get(entries, n, key);
	size_t i;

	if (v == NULL || strlen(v) > OBJFS_CSI_K8S_NAME_MAX)
		return NULL;
	for (i = 0; v[i] != '\0'; i++)
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') ||
		      (v[i] >= '0' && v[i] <= '9') || v[i] == '-' || v[i] == '.' ||
		      v[i] == '_'))
			return NULL;
	return v;
}

/* The parameters besides the connection's (backend/s3conn.h), in the
 * order messages list them: these two, the connection's, the rest. */
static const char *const own_params[] = {
	"bucket", "basePrefix", "onDelete", "archivePrefix", "mountOptions",
};

static bool param_known(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(own_params) / sizeof(own_params[0]); i++)
		if (strcmp(key, own_params[i]) == 0)
			return true;
	for (i = 0; objfs_s3_conn_keys[i] != NULL; i++)
		if (strcmp(key, objfs_s3_conn_keys[i]) == 0)
			return true;
	return false;
}

/* "bucket, basePrefix, endpoint, ..., mountOptions" into buf. */
static void params_list(char *buf, size_t cap)
{
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; i < 2; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s, ", own_params[i]);
	for (i = 0; objfs_s3_conn_keys[i] != NULL && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s, ", objfs_s3_conn_keys[i]);
	for (i = 2; i < sizeof(own_params) / sizeof(own_params[0]) && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", own_params[i],
					i + 1 < sizeof(own_params) / sizeof(own_params[0]) ?
					", " : "");
}

/* The getter of a request's string map (struct objfs_csi_map). */
const char *objfs_csi_map_conn_get(const void *src, const char *key)
{
	const struct objfs_csi_map *m = src;

	return objfs_csi_map_get(m->entries, m->n, key);
}

/* Reads and checks StorageClass parameters.  INVALID_ARGUMENT names the
 * offending key (values are not secret, but are cut short). */
enum objfs_rpc_code objfs_csi_params_parse(void *const *entries, size_t n,
					   struct objfs_csi_params *p,
					   struct objfs_rpc_status *st)
{
	struct objfs_csi_map map = { entries, n };
	char why[256], known[256];
	unsigned bad;
	size_t i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < n; i++) {
		const struct objfs_pb_map_entry *e = entries[i];

		if (strncmp(e->key, "csi.storage.k8s.io/", 19) == 0)
			continue;
		if (!param_known(e->key)) {
			params_list(known, sizeof(known));
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "unknown parameter \"%.64s\" (known: %s)",
					      e->key, known);
		}
		if (objfs_kv_value_valid(e->value) != 0 || strlen(e->value) > 1024)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "parameter %s: value too long or has a line break",
					      e->key);
	}
	p->bucket = objfs_csi_map_get(entries, n, "bucket");
	p->base_prefix = objfs_csi_map_get(entries, n, "basePrefix");
	bad = objfs_s3_conn_add(&p->conn, objfs_csi_map_conn_get, &map);
	bad |= objfs_s3_conn_check(&p->conn);
	p->on_delete = objfs_csi_map_get(entries, n, "onDelete");
	p->archive_prefix = objfs_csi_map_get(entries, n, "archivePrefix");
	p->pv_name = objfs_csi_k8s_name(entries, n, OBJFS_CSI_PV_NAME);
	p->pvc_name = objfs_csi_k8s_name(entries, n, OBJFS_CSI_PVC_NAME);
	p->pvc_namespace = objfs_csi_k8s_name(entries, n, OBJFS_CSI_PVC_NAMESPACE);
	p->mount_options = objfs_csi_map_get(entries, n, "mountOptions");
	/* what NodeStageVolume would refuse is refused now: no volume is
	 * provisioned that no pod can mount */
	if (p->mount_options != NULL &&
	    objfs_mount_opts_check_user(p->mount_options, why, sizeof(why)) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter mountOptions is not a list of objfs-mount options: %s",
				      why);
	if (p->bucket != NULL && objfs_id_bucket_valid(p->bucket) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter bucket \"%.64s\" is not a valid S3 bucket name",
				      p->bucket);
	if (p->bucket == NULL && (p->conn.set != 0 || (bad & OBJFS_S3_CONN_BAD_STYLE) != 0))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameters endpoint, region and addressingStyle need parameter bucket");
	if (p->base_prefix != NULL && objfs_id_prefix_valid(p->base_prefix) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter basePrefix \"%.64s\" must be segments of [A-Za-z0-9._-] joined by '/', none starting with '.'",
				      p->base_prefix);
	if (p->archive_prefix != NULL && objfs_id_prefix_valid(p->archive_prefix) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter archivePrefix \"%.64s\" must be segments of [A-Za-z0-9._-] joined by '/', none starting with '.'",
				      p->archive_prefix);
	/* blanks and commas pass here as they always did (the node
	 * refuses them) */
	if ((bad & OBJFS_S3_CONN_BAD_SCHEME) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter endpoint must start with http:// or https://");
	if ((bad & OBJFS_S3_CONN_LONG_ENDPOINT) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter endpoint is too long");
	if ((bad & OBJFS_S3_CONN_LONG_REGION) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter region is too long");
	if ((bad & OBJFS_S3_CONN_BAD_STYLE) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter addressingStyle must be path or virtual");
	p->policy = OBJFS_CSI_ON_DELETE_DELETE;
	if (p->on_delete == NULL || strcmp(p->on_delete, "delete") == 0)
		p->policy = OBJFS_CSI_ON_DELETE_DELETE;
	else if (strcmp(p->on_delete, "retain") == 0)
		p->policy = OBJFS_CSI_ON_DELETE_RETAIN;
	else if (strcmp(p->on_delete, "archive") == 0)
		p->policy = OBJFS_CSI_ON_DELETE_ARCHIVE;
	else
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter onDelete must be delete, retain or archive");
	if (p->archive_prefix != NULL && p->policy != OBJFS_CSI_ON_DELETE_ARCHIVE)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter archivePrefix needs onDelete=archive");
	return OBJFS_RPC_OK;
}

/* A digest of the parameters that shape a volume, to tell a repeated
 * CreateVolume from a conflicting one. */
void objfs_csi_params_digest(const struct objfs_csi_params *p, char *out)
{
	char buf[8192], conn[2048];
	int n;

	/* the text of the first digests: parameters in this order */
	if (objfs_s3_conn_digest_text(&p->conn, conn, sizeof(conn)) != 0)
		conn[0] = '\0';
	n = snprintf(buf, sizeof(buf),
		     "bucket=%s\nbasePrefix=%s\n%sonDelete=%s\narchivePrefix=%s\nmountOptions=%s\n",
		     p->bucket ? p->bucket : "", p->base_prefix ? p->base_prefix : "",
		     conn, p->on_delete ? p->on_delete : "",
		     p->archive_prefix ? p->archive_prefix : "",
		     p->mount_options ? p->mount_options : "");
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	objfs_id_hash(buf, (size_t)n, out, OBJFS_CSI_PARAMS_DIGEST_HEX);
}

const char *objfs_csi_on_delete_name(enum objfs_csi_on_delete policy)
{
	return policy == OBJFS_CSI_ON_DELETE_RETAIN ? "retain" :
	       policy == OBJFS_CSI_ON_DELETE_ARCHIVE ? "archive" : "delete";
}
