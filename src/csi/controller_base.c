/*
 * controller_base.c - what the Controller service's files share, below
 * all of them (controller.c, volumes.c, snapshots.c, listing.c call it;
 * it calls none of them): the in-progress claims, the one mapping of a
 * store errno to a gRPC code (objfs_ctl_store_fail), the parsing and
 * making of ids for lookups, deletes and creates, and prefix trees on
 * the service's pool (backend/tree.h).  Declared in controller_int.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/store_error.h"
#include "backend/tree.h"
#include "common/errors.h"
#include "common/log.h"
#include "csi/controller_int.h"
#include "csi/driver.h"
#include "csi/volid.h"
#include "volume/catalog.h"
#include "volume/kvtext.h"

#define SUB OBJFS_CTL_LOG
#define READABLE_MAX 63

/* ---- claims and failures ---------------------------------------------- */

enum objfs_rpc_code objfs_ctl_oom(struct objfs_rpc_status *st)
{
	return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
}

/* Claims keys for a handler: ABORTED naming what (a "volume" or a
 * "snapshot") and name when another call holds one of them. */
enum objfs_rpc_code objfs_ctl_claim(struct objfs_csi *csi,
				    const char *const *keys, size_t n,
				    const char *what, const char *name,
				    struct objfs_rpc_status *st)
{
	int err = objfs_claims_take(&csi->controller->busy, keys, n);

	if (err == EBUSY)
		return objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "an operation on %s %.128s is in progress",
				      what, name);
	if (err != 0)
		return objfs_ctl_oom(st);
	return OBJFS_RPC_OK;
}

void objfs_ctl_unclaim(struct objfs_csi *csi, const char *const *keys, size_t n)
{
	objfs_claims_drop(&csi->controller->busy, keys, n);
}

/* Fails with the code for a store errno; what names the step.  The
 * message carries the store's own account (its S3 error code and message,
 * with what to check: backend/store_error.h).  A configuration error
 * (missing bucket, wrong region or keys, TLS mismatch) gets a code the CO
 * does not retry as if in progress: FAILED_PRECONDITION for a missing
 * bucket, PERMISSION_DENIED for keys, INVALID_ARGUMENT for the rest. */
enum objfs_rpc_code objfs_ctl_store_fail(struct objfs_csi *csi,
					 struct objfs_rpc_status *st, int err,
					 const char *what, const char *id)
{
	enum objfs_rpc_code code = objfs_rpc_code_from_errno(err);
	struct objfs_store_error se;
	char text[512];

	objfs_store_error_text(err, text, sizeof(text));
	if (objfs_store_error_get(err, &se) && se.config) {
		if (strcmp(se.code, "NoSuchBucket") == 0)
			code = OBJFS_RPC_FAILED_PRECONDITION;
		else if (err == EACCES)
			code = OBJFS_RPC_PERMISSION_DENIED;
		else
			code = OBJFS_RPC_INVALID_ARGUMENT;
	} else {
		if (code == OBJFS_RPC_NOT_FOUND || code == OBJFS_RPC_ALREADY_EXISTS ||
		    code == OBJFS_RPC_INVALID_ARGUMENT || code == OBJFS_RPC_OK)
			code = OBJFS_RPC_INTERNAL;
		/* ABORTED means "another call on this volume" to a CO: a
		 * throttled or busy store is UNAVAILABLE (retry with backoff). */
		if (code == OBJFS_RPC_ABORTED)
			code = OBJFS_RPC_UNAVAILABLE;
	}
	objfs_warn(csi->log, SUB, "%s %s: %s", what, id, text);
	return objfs_rpc_fail(st, code, "%s %s: %s", what, id, text);
}

/* ---- id helpers ------------------------------------------------------- */

/* Parses an id of type want for a lookup: foreign ids are NOT_FOUND,
 * malformed ones INVALID_ARGUMENT.  field names the request field. */
enum objfs_rpc_code objfs_ctl_id_for_lookup(const char *text, enum objfs_id_type want,
					    const char *field, struct objfs_id *id,
					    struct objfs_rpc_status *st)
{
	const char *what = want == OBJFS_ID_VOLUME ? "volume" : "snapshot";
	int err;

	if (text == NULL || text[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "%s is required", field);
	err = objfs_id_parse(text, id);
	if (err == ENOENT || (err == 0 && id->type != want))
		return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND,
				      "%s: no %s %.128s (not an objfs %s id)", field,
				      what, text, what);
	if (err != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "%s: malformed objfs %s id", field, what);
	return OBJFS_RPC_OK;
}

/* Parses an id of type want for a delete.  An id objfs did not make
 * (foreign, malformed or of the other type) names nothing that exists:
 * NOT_FOUND, which the delete answers as OK (the CSI spec) touching
 * nothing. */
enum objfs_rpc_code objfs_ctl_id_for_delete(const char *text, enum objfs_id_type want,
					    const char *field, struct objfs_id *id,
					    struct objfs_rpc_status *st)
{
	const char *what = want == OBJFS_ID_VOLUME ? "volume" : "snapshot";
	int err;

	if (text == NULL || text[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "%s is required", field);
	err = objfs_id_parse(text, id);
	if (err != 0 || id->type != want)
		return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND,
				      "%s %.128s: not an objfs %s id (objfs1:%s:...), nothing to delete",
				      field, text, what, want == OBJFS_ID_VOLUME ? "vol" : "snap");
	return OBJFS_RPC_OK;
}

/* For a delete that found no record of id: *skip true when the index
 * does not know id either (objfs never made it: nothing to touch), false
 * when it does (a create or delete stopped half-way: finish it).  OK, or
 * the index's failure with st set. */
enum objfs_rpc_code objfs_ctl_delete_unrecorded(struct objfs_csi *csi,
						enum objfs_catalog_kind kind,
						const char *id, bool *skip,
						struct objfs_rpc_status *st)
{
	struct objfs_kv entry = OBJFS_KV_INIT;
	int err = objfs_catalog_load(csi->store, kind, id, &entry);

	objfs_kv_release(&entry);
	*skip = err == ENOENT;
	if (err != 0 && err != ENOENT)
		return objfs_ctl_store_fail(csi, st, err, "cannot read the index for", id);
	if (*skip)
		objfs_info(csi->log, SUB, "delete %s: no such %s, nothing to delete", id,
			   kind == OBJFS_CATALOG_VOLUME ? "volume" : "snapshot");
	return OBJFS_RPC_OK;
}

/* Makes the id of a new volume or snapshot named name. */
enum objfs_rpc_code objfs_ctl_id_make(enum objfs_id_type type, const char *bucket,
				      const char *base, const char *name,
				      struct objfs_id *id, char *text, size_t cap,
				      struct objfs_rpc_status *st)
{
	enum objfs_id_store store = bucket != NULL ? OBJFS_ID_BUCKET : OBJFS_ID_DEFAULT;
	size_t head = objfs_id_head_len(type, store, bucket != NULL ? bucket : "");
	size_t room = OBJFS_ID_MAX - head;
	char safe[OBJFS_SEGMENT_MAX + 1];
	int err;

	memset(id, 0, sizeof(*id));
	id->type = type;
	id->store = store;
	if (bucket != NULL)
		snprintf(id->bucket, sizeof(id->bucket), "%s", bucket);
	if (base != NULL) {
		if (strlen(base) + 1 >= room)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "parameter basePrefix is too long for a volume id of at most %d bytes",
					      OBJFS_ID_MAX);
		room -= strlen(base) + 1;
	}
	if (room > READABLE_MAX)
		room = READABLE_MAX;
	if (room < 24)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameters bucket and basePrefix leave no room for the volume name in a %d-byte volume id",
				      OBJFS_ID_MAX);
	err = objfs_id_safe_name(name, room, safe, sizeof(safe));
	if (err != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "name: %s",
				      objfs_strerror(err));
	snprintf(id->path, sizeof(id->path), "%s%s%s", base != NULL ? base : "",
		 base != NULL ? "/" : "", safe);
	err = objfs_id_format(id, text, cap);
	if (err != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INTERNAL, "cannot form an id: %s",
				      objfs_strerror(err));
	return OBJFS_RPC_OK;
}

/* ---- prefix trees on the service's pool ------------------------------- */

static struct objfs_tree_opts tree_opts(struct objfs_csi_controller *c,
					const char *const *skip)
{
	struct objfs_tree_opts o = { .pool = c->pool, .page_keys = c->page_keys,
				     .skip = skip, .log = c->csi->log };

	return o;
}

int objfs_ctl_tree_copy(struct objfs_csi_controller *c, struct objfs_store *s,
			const char *src, const char *dst,
			const char *const *skip, uint64_t *bytes)
{
	struct objfs_tree_opts o = tree_opts(c, skip);
	struct objfs_tree_stats st;
	int err = objfs_tree_copy(s, src, dst, &o, &st);

	if (bytes != NULL)
		*bytes = st.bytes;
	return err;
}

int objfs_ctl_tree_size(struct objfs_csi_controller *c, struct objfs_store *s,
			const char *prefix, const char *const *skip,
			uint64_t *bytes)
{
	struct objfs_tree_opts o = tree_opts(c, skip);
	struct objfs_tree_stats st;
	int err = objfs_tree_size(s, prefix, &o, &st);

	*bytes = st.bytes;
	return err;
}

int objfs_ctl_tree_delete(struct objfs_csi_controller *c, struct objfs_store *s,
			  const char *prefix, const char *const *skip,
			  uint64_t *count)
{
	struct objfs_tree_opts o = tree_opts(c, skip);
	struct objfs_tree_stats st;
	int err = objfs_tree_delete(s, prefix, &o, &st);

	if (count != NULL)
		*count = st.count;
	return err;
}
