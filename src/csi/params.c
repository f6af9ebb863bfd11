/*
 * params.c - StorageClass parameters of the CSI controller (see params.h):
 * one pass that names every problem by its key, then the policy.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

static const char *const known_params[] = {
	"bucket", "basePrefix", "endpoint", "region", "addressingStyle",
	"onDelete", "archivePrefix", "mountOptions",
};

/* Reads and checks StorageClass parameters.  INVALID_ARGUMENT names the
 * offending key (values are not secret, but are cut short). */
enum objfs_rpc_code objfs_csi_params_parse(void *const *entries, size_t n,
					   struct objfs_csi_params *p,
					   struct objfs_rpc_status *st)
{
	char why[256];
	size_t i, j;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < n; i++) {
		const struct objfs_pb_map_entry *e = entries[i];
		bool known = false;

		if (strncmp(e->key, "csi.storage.k8s.io/", 19) == 0)
			continue;
		for (j = 0; j < sizeof(known_params) / sizeof(known_params[0]); j++)
			known = known || strcmp(e->key, known_params[j]) == 0;
		if (!known)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "unknown parameter \"%.64s\" (known: bucket, basePrefix, endpoint, region, addressingStyle, onDelete, archivePrefix, mountOptions)",
					      e->key);
		if (objfs_kv_value_valid(e->value) != 0 || strlen(e->value) > 1024)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "parameter %s: value too long or has a line break",
					      e->key);
	}
	p->bucket = objfs_csi_map_get(entries, n, "bucket");
	p->base_prefix = objfs_csi_map_get(entries, n, "basePrefix");
	p->endpoint = objfs_csi_map_get(entries, n, "endpoint");
	p->region = objfs_csi_map_get(entries, n, "region");
	p->addressing = objfs_csi_map_get(entries, n, "addressingStyle");
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
	if (p->bucket == NULL && (p->endpoint != NULL || p->region != NULL ||
				  p->addressing != NULL))
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
	if (p->endpoint != NULL && strncmp(p->endpoint, "http://", 7) != 0 &&
	    strncmp(p->endpoint, "https://", 8) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter endpoint must start with http:// or https://");
	if (p->endpoint != NULL && strlen(p->endpoint) >= OBJFS_CSI_ENDPOINT_MAX)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter endpoint is too long");
	if (p->region != NULL && strlen(p->region) >= OBJFS_CSI_REGION_MAX)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter region is too long");
	if (p->addressing != NULL && strcmp(p->addressing, "path") != 0 &&
	    strcmp(p->addressing, "virtual") != 0)
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
	char buf[8192];
	int n;

	n = snprintf(buf, sizeof(buf),
		     "bucket=%s\nbasePrefix=%s\nendpoint=%s\nregion=%s\naddressingStyle=%s\nonDelete=%s\narchivePrefix=%s\nmountOptions=%s\n",
		     p->bucket ? p->bucket : "", p->base_prefix ? p->base_prefix : "",
		     p->endpoint ? p->endpoint : "", p->region ? p->region : "",
		     p->addressing ? p->addressing : "",
		     p->on_delete ? p->on_delete : "",
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
