/*
 * params.h - the StorageClass parameters of an objfs volume (the
 * Controller's CreateVolume, ValidateVolumeCapabilities and GetCapacity;
 * csi/controller.h lists them and what they mean).
 *
 * A parse is all or nothing: an unknown key (other than the
 * csi.storage.k8s.io/... keys the external provisioner adds), a value with
 * a line break or over 1024 bytes, or a value out of its grammar is
 * INVALID_ARGUMENT naming the key.  Parameter values are not secret but
 * are cut short in messages.
 *
 * Ownership: struct objfs_csi_params points into the request's map (the
 * strings are borrowed; it lives no longer than the request), but for
 * the connection's settings, which it holds (backend/s3conn.h).
 */
#ifndef OBJFS_CSI_PARAMS_H
#define OBJFS_CSI_PARAMS_H

#include <stddef.h>

#include "backend/s3conn.h"
#include "csi/rpc.h"

/* Hex digits of objfs_csi_params_digest(). */
#define OBJFS_CSI_PARAMS_DIGEST_HEX 40

/* What DeleteVolume does with the volume's objects. */
enum objfs_csi_on_delete {
	OBJFS_CSI_ON_DELETE_DELETE,     /* removes them (the default) */
	OBJFS_CSI_ON_DELETE_RETAIN,     /* keeps them, record marked retained */
	OBJFS_CSI_ON_DELETE_ARCHIVE,    /* copies them under archivePrefix */
};

/* The parameters; NULL when not given (or empty). */
struct objfs_csi_params {
	const char *bucket;
	const char *base_prefix;
	struct objfs_s3_conn conn;      /* endpoint, region, addressingStyle
					   as given (not resolved) */
	const char *on_delete;
	const char *archive_prefix;
	const char *mount_options;
	/* the CO's names of the volume (roots.h), when it passed them and
	 * they are plain names; not part of the digest */
	const char *pv_name;
	const char *pvc_name;
	const char *pvc_namespace;
	enum objfs_csi_on_delete policy;
};

/* Reads and checks entries[0..n) (struct objfs_pb_map_entry *) into *p.
 * OK or INVALID_ARGUMENT (st says which key). */
enum objfs_rpc_code objfs_csi_params_parse(void *const *entries, size_t n,
					   struct objfs_csi_params *p,
					   struct objfs_rpc_status *st);
/* A digest of the parameters that shape a volume, to tell a repeated
 * CreateVolume from a conflicting one: OBJFS_CSI_PARAMS_DIGEST_HEX hex
 * digits and a NUL into out. */
void objfs_csi_params_digest(const struct objfs_csi_params *p, char *out);
/* "delete", "retain" or "archive". */
const char *objfs_csi_on_delete_name(enum objfs_csi_on_delete policy);

/* The value of key in a request's string map (parameters or secrets), or
 * NULL when absent or empty; owned by the request. */
const char *objfs_csi_map_get(void *const *entries, size_t n, const char *key);
/* A request's string map, as a source of a connection's settings
 * (objfs_csi_map_conn_get: empty values are not given). */
struct objfs_csi_map {
	void *const *entries;
	size_t n;
};
const char *objfs_csi_map_conn_get(const void *src, const char *key);
/* The value of key in such a map when it is a plain Kubernetes name (at
 * most OBJFS_CSI_K8S_NAME_MAX of [A-Za-z0-9._-]), else NULL: the CO's
 * names of a volume are metric labels, not worth failing a call for. */
const char *objfs_csi_k8s_name(void *const *entries, size_t n, const char *key);

#endif
