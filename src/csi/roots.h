/*
 * roots.h - the root store of a CSI volume or snapshot: the store its id
 * names (csi/volid.h), where the controller acts on full keys.
 *
 *   objfs1:...:def:...       the driver's default store, borrowed;
 *   objfs1:...:s3:BUCKET:... a bucket store, opened per call with the
 *                            driver's store_open and owned by the root.
 *
 * A bucket's connection (endpoint, region, addressing style) is resolved
 * in this order: the hint (StorageClass parameters on create, else the
 * index entry of the id), the request's secrets, the plugin's defaults.
 * Keys come from the secrets (accessKeyID and secretAccessKey, both or
 * neither; sessionToken) else the plugin's own; a caBundle secret (PEM)
 * is trusted for the endpoint.  Secrets never reach a message or a log.
 *
 * Lifecycle: a root is opened by objfs_csi_root_open() or
 * objfs_csi_root_open_by_id() (on failure it holds nothing) and closed by
 * objfs_csi_root_close(), also after a failed open or on a zeroed root.
 */
#ifndef OBJFS_CSI_ROOTS_H
#define OBJFS_CSI_ROOTS_H

#include <stdbool.h>
#include <stddef.h>

#include "csi/params.h"
#include "csi/rpc.h"
#include "volume/volrec.h"

struct objfs_creds;
struct objfs_csi;
struct objfs_id;
struct objfs_kv;
struct objfs_store;

/* volume_context keys (csi/controller.h), kept in the volume record and
 * the index entry as ctx.* fields. */
#define OBJFS_CSI_CTX_SOURCE OBJFS_VOLREC_CTX "source"
#define OBJFS_CSI_CTX_ENDPOINT OBJFS_VOLREC_CTX "endpoint"
#define OBJFS_CSI_CTX_REGION OBJFS_VOLREC_CTX "region"
#define OBJFS_CSI_CTX_ADDRESSING OBJFS_VOLREC_CTX "addressingStyle"
#define OBJFS_CSI_CTX_MOUNT_OPTIONS OBJFS_VOLREC_CTX "mountOptions"
/* What the external-provisioner adds to CreateVolume's parameters with
 * --extra-create-metadata; the controller keeps them in the volume context
 * (ctx.KEY), the node labels the mount's metrics with them. */
#define OBJFS_CSI_PV_NAME "csi.storage.k8s.io/pv/name"
#define OBJFS_CSI_PVC_NAME "csi.storage.k8s.io/pvc/name"
#define OBJFS_CSI_PVC_NAMESPACE "csi.storage.k8s.io/pvc/namespace"
/* The longest of those names (a Kubernetes name is at most 253). */
#define OBJFS_CSI_K8S_NAME_MAX 253

/* Where a bucket lives (not secret). */
struct objfs_csi_conn {
	char endpoint[OBJFS_CSI_ENDPOINT_MAX];
	char region[OBJFS_CSI_REGION_MAX];
	char addressing[16];
};

struct objfs_csi_root {
	struct objfs_store *store;      /* the default store (borrowed) or owned */
	bool owned;
	struct objfs_csi_conn conn;     /* for bucket stores */
};

/* Resolves the connection of a bucket volume into *out from p (may be
 * NULL), else hint (an index entry, may be NULL), then the secrets, then
 * the plugin's defaults. */
void objfs_csi_conn_resolve(struct objfs_csi *csi, const struct objfs_kv *hint,
			    const struct objfs_csi_params *p,
			    void *const *secrets, size_t n_secrets,
			    struct objfs_csi_conn *out);
/* Writes a PEM bundle (a caBundle secret) to STATE_DIR/ca/<sha256>.pem,
 * once (content-addressed), and puts its path in path (cap bytes): 0,
 * EINVAL (not PEM, empty or over 1 MiB), ENOTSUP (no state dir) or an
 * errno.  Used by the controller and the node alike. */
int objfs_csi_ca_bundle_file(struct objfs_csi *csi, const char *pem, char *path,
			     size_t cap);
/* The keys of a per-volume role (a roleArn secret): role assumed with the
 * plugin's own web identity token (its keyless credentials', else
 * AWS_WEB_IDENTITY_TOKEN_FILE), through its STS endpoint, into *c (empty).
 * OK, INVALID_ARGUMENT (not an ARN) or FAILED_PRECONDITION (the plugin
 * has no token). */
enum objfs_rpc_code objfs_csi_role_creds(struct objfs_csi *csi, const char *role,
					 struct objfs_creds *c,
					 struct objfs_rpc_status *st);
/* Opens the root store of id into *r.  For a bucket, conn must be
 * resolved.  OK, or FAILED_PRECONDITION / INVALID_ARGUMENT / the code of
 * the store's errno with st set. */
enum objfs_rpc_code objfs_csi_root_open(struct objfs_csi *csi,
					const struct objfs_id *id,
					const struct objfs_csi_conn *conn,
					void *const *secrets, size_t n_secrets,
					struct objfs_csi_root *r,
					struct objfs_rpc_status *st);
/* The same for the calls that get only an id (id_text): the connection
 * comes from the index.  NOT_FOUND when a bucket id is not in the index
 * and no endpoint is configured. */
enum objfs_rpc_code objfs_csi_root_open_by_id(struct objfs_csi *csi,
					      const struct objfs_id *id,
					      const char *id_text,
					      void *const *secrets,
					      size_t n_secrets,
					      struct objfs_csi_root *r,
					      struct objfs_rpc_status *st);
void objfs_csi_root_close(struct objfs_csi_root *r);

#endif
