/*
 * roots.h - the root store of a CSI volume or snapshot: the store its id
 * names (csi/volid.h), where the controller acts on full keys.
 *
 *   objfs1:...:def:...       the driver's default store, borrowed;
 *   objfs1:...:s3:BUCKET:... a bucket store, opened per call with the
 *                            driver's store_open and owned by the root.
 *
 * A bucket's connection (endpoint, region, addressing style: a struct
 * objfs_s3_conn, backend/s3conn.h) is resolved in this order: the hint
 * (StorageClass parameters on create, else the index entry of the id;
 * the node: the volume context), the request's secrets, the plugin's
 * defaults; objfs_csi_conn_resolve() is that order for controller and
 * node alike.
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

#include "backend/s3conn.h"
#include "csi/params.h"
#include "csi/rpc.h"
#include "volume/volrec.h"

struct objfs_creds;
struct objfs_csi;
struct objfs_id;
struct objfs_kv;
struct objfs_store;

/* volume_context keys (csi/controller.h): "source", "mountOptions" and
 * the connection's (OBJFS_S3_CONN_KEY_*), kept in the volume record and
 * the index entry as ctx.* fields (OBJFS_CSI_CTX_*; the connection's by
 * objfs_csi_kv_conn_get/_set). */
#define OBJFS_CSI_KEY_SOURCE "source"
#define OBJFS_CSI_KEY_MOUNT_OPTIONS "mountOptions"
#define OBJFS_CSI_CTX_SOURCE OBJFS_VOLREC_CTX OBJFS_CSI_KEY_SOURCE
#define OBJFS_CSI_CTX_MOUNT_OPTIONS OBJFS_VOLREC_CTX OBJFS_CSI_KEY_MOUNT_OPTIONS
/* What the external-provisioner adds to CreateVolume's parameters with
 * --extra-create-metadata; the controller keeps them in the volume context
 * (ctx.KEY), the node labels the mount's metrics with them. */
#define OBJFS_CSI_PV_NAME "csi.storage.k8s.io/pv/name"
#define OBJFS_CSI_PVC_NAME "csi.storage.k8s.io/pvc/name"
#define OBJFS_CSI_PVC_NAMESPACE "csi.storage.k8s.io/pvc/namespace"
/* The longest of those names (a Kubernetes name is at most 253). */
#define OBJFS_CSI_K8S_NAME_MAX 253

struct objfs_csi_root {
	struct objfs_store *store;      /* the default store (borrowed) or owned */
	bool owned;
	struct objfs_s3_conn conn;      /* for bucket stores */
};

/* Resolves a connection: the fields of *out still unset (start from
 * OBJFS_S3_CONN_INIT, or the parameters' conn on create) from the hint
 * (get over hint: an index entry, a volume context; get NULL: none), then
 * the secrets (a pb map; NULL, 0: none), then the plugin's defaults
 * (objfs_s3_conn_add_plugin).  Returns the problem bits of hint and
 * secrets (backend/s3conn.h). */
unsigned objfs_csi_conn_resolve(const struct objfs_csi *csi,
				objfs_s3_conn_get_fn *get, const void *hint,
				void *const *secrets, size_t n_secrets,
				struct objfs_s3_conn *out);
/* CreateVolume's connection of a bucket volume: the parameters' (p),
 * the secrets', the plugin's.  OK, or INVALID_ARGUMENT for a secret
 * addressingStyle that is neither path nor virtual (the node would
 * refuse the volume). */
enum objfs_rpc_code objfs_csi_conn_for_create(const struct objfs_csi *csi,
					      const struct objfs_csi_params *p,
					      void *const *secrets, size_t n_secrets,
					      struct objfs_s3_conn *out,
					      struct objfs_rpc_status *st);
/* Getters and a setter of a connection in a record's ctx.* fields: an
 * objfs_kv (index entry) or an objfs_volrec's params; values as stored
 * (an empty endpoint is given). */
const char *objfs_csi_kv_conn_get(const void *kv, const char *key);
const char *objfs_csi_volrec_conn_get(const void *volrec, const char *key);
int objfs_csi_kv_conn_set(void *kv, const char *key, const char *value);
/* The node's connection of an s3:// source (bucket: its bucket) from a
 * volume context: resolved as above without secrets, checked, AWS's
 * endpoint when none.  OK or INVALID_ARGUMENT naming the context key. */
enum objfs_rpc_code objfs_csi_conn_from_context(const struct objfs_csi *csi,
						void *const *ctx, size_t n_ctx,
						const char *bucket,
						const char *volume_id,
						struct objfs_s3_conn *out,
						struct objfs_rpc_status *st);
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
					const struct objfs_s3_conn *conn,
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
