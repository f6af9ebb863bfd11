/*
 * volumes.c - the rules of the Controller's volumes, apart from the RPCs
 * that carry them (controller.c checks requests and packs answers; see
 * volumes.h for the shape of a call and controller.h for the layout).
 * As csi-driver-host-path keeps hostpath.go's rules apart from
 * controllerserver.go, nothing here knows a protobuf type.
 *
 * States of a volume, as seen in its store:
 *   absent      no record, maybe index entries or objects of a failed
 *               create/delete: not reported, create and delete both finish
 *               the job when called again;
 *   live        record present;
 *   retained    record with csi.state=retained (deleted with onDelete=
 *               retain): NOT_FOUND for lookups, kept in the store.
 *
 * Create writes in this order: the index entry (so ListVolumes-driven
 * cleanup finds what a failed create left), the copy of the content
 * source, the record LAST (created, never replaced: of two concurrent
 * creates the first wins).  A create that fails after the index takes back
 * what it wrote.  Delete removes the objects (after an archive copy) and
 * the record, then the index entry; retain only marks the record.
 *
 * "Does this recorded volume match the request" has one answer,
 * objfs_ctl_vol_matches(), for CreateVolume's idempotency check and
 * ValidateVolumeCapabilities alike.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "backend/backend.h"
#include "backend/store_error.h"
#include "common/errors.h"
#include "common/log.h"
#include "csi/controller.h"
#include "csi/controller_int.h"
#include "csi/driver.h"
#include "csi/params.h"
#include "csi/roots.h"
#include "csi/volid.h"
#include "csi/volumes.h"
#include "volume/catalog.h"
#include "volume/kvtext.h"
#include "volume/volrec.h"

#define SUB OBJFS_CTL_LOG
#define HASH_HEX OBJFS_CATALOG_HASH_HEX
#define URL_MAX 2048

/* ---- the volume record and its prefix -------------------------------- */

const char *const objfs_ctl_vol_skip[] = { OBJFS_VOLREC_KEY, NULL };
static const char *const snap_skip[] = { OBJFS_VOLREC_KEY, OBJFS_SNAPREC_KEY, NULL };

void objfs_ctl_vol_prefix(const struct objfs_id *id, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/", id->path);
}

size_t objfs_ctl_base_len(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? (size_t)(slash - path) : 0;
}

/* Where onDelete=archive moves the volume at path, archive being its
 * archivePrefix (or the default): BASE/ARCHIVE/NAME under the volume's
 * base prefix (layout.h), without a trailing '/'.  0 or ENAMETOOLONG. */
static int archive_dest(const char *path, const char *archive, char *buf, size_t cap)
{
	size_t base = objfs_ctl_base_len(path);
	int n;

	if (base == 0)
		n = snprintf(buf, cap, "%s/%s", archive, path);
	else
		n = snprintf(buf, cap, "%.*s/%s/%s", (int)base, path, archive,
			     path + base + 1);
	return n < 0 || (size_t)n >= cap ? ENAMETOOLONG : 0;
}

bool objfs_ctl_volrec_retained(const struct objfs_volrec *rec)
{
	const char *state = objfs_volrec_get_param(rec, OBJFS_VOLREC_CSI_STATE);

	return state != NULL && strcmp(state, OBJFS_VOLREC_STATE_RETAINED) == 0;
}

int objfs_ctl_volrec_load_live(struct objfs_store *s, const struct objfs_id *id,
			       struct objfs_volrec *rec)
{
	int err;

	err = objfs_volrec_load_at(s, id->path, rec);
	if (err != 0)
		return err;
	if (objfs_ctl_volrec_retained(rec)) {
		objfs_volrec_release(rec);
		return ENOENT;
	}
	return 0;
}

/* The objfs-mount source of a volume prefix. */
static int source_url(struct objfs_csi *csi, const struct objfs_id *id,
		      char *buf, size_t cap)
{
	const char *base;
	size_t n;
	int r;

	if (id->store == OBJFS_ID_BUCKET) {
		r = snprintf(buf, cap, "s3://%s/%s", id->bucket, id->path);
	} else {
		base = csi->cfg.store.url != NULL ? csi->cfg.store.url : "";
		n = strlen(base);
		while (n > 0 && base[n - 1] == '/')
			n--;
		if (n > 0 && strncmp(base, "file://", 7) == 0 && n <= 7)
			n = strlen(base);   /* "file:///": the root itself */
		r = snprintf(buf, cap, "%.*s/%s", (int)n, base, id->path);
	}
	return r < 0 || (size_t)r >= cap ? ENAMETOOLONG : 0;
}

/* Fills the ctx.* keys of a record or index entry. */
static int context_record(struct objfs_csi *csi, const struct objfs_id *id,
			  const struct objfs_s3_conn *conn, const struct objfs_csi_params *p,
			  struct objfs_kv *kv)
{
	struct objfs_s3_conn def = OBJFS_S3_CONN_INIT;
	char url[URL_MAX];
	const char *durl = csi->cfg.store.url;
	int err;

	err = source_url(csi, id, url, sizeof(url));
	if (err == 0)
		err = objfs_kv_set(kv, OBJFS_CSI_CTX_SOURCE, url);
	if (err == 0 && id->store == OBJFS_ID_BUCKET) {
		err = objfs_s3_conn_write(conn, objfs_csi_kv_conn_set, kv);
	} else if (err == 0 && durl != NULL && strncmp(durl, "s3:", 3) == 0) {
		/* the default store's own connection */
		objfs_s3_conn_add_plugin(&def, &csi->cfg.store);
		err = objfs_s3_conn_write(&def, objfs_csi_kv_conn_set, kv);
	}
	if (err == 0 && p != NULL && p->mount_options != NULL)
		err = objfs_kv_set(kv, OBJFS_CSI_CTX_MOUNT_OPTIONS, p->mount_options);
	/* the CO's names: labels of the node's metrics */
	if (err == 0 && p != NULL && p->pv_name != NULL)
		err = objfs_kv_set(kv, OBJFS_VOLREC_CTX OBJFS_CSI_PV_NAME, p->pv_name);
	if (err == 0 && p != NULL && p->pvc_name != NULL)
		err = objfs_kv_set(kv, OBJFS_VOLREC_CTX OBJFS_CSI_PVC_NAME, p->pvc_name);
	if (err == 0 && p != NULL && p->pvc_namespace != NULL)
		err = objfs_kv_set(kv, OBJFS_VOLREC_CTX OBJFS_CSI_PVC_NAMESPACE,
				   p->pvc_namespace);
	return err;
}

int objfs_ctl_vol_record(struct objfs_volrec *rec, const struct objfs_id *id,
			 const char *idtext, const char *name, uint64_t cap,
			 const char *digest, const char *source,
			 const struct objfs_csi_params *p, const struct objfs_kv *ctx)
{
	char dst[OBJFS_KEY_MAX];
	const char *v;
	int err;

	rec->capacity_bytes = cap;
	err = objfs_volrec_set_created_now(rec);
	if (err == 0)
		err = objfs_volrec_set_name(rec, name);
	if (err == 0)
		err = objfs_volrec_set_param(rec, OBJFS_VOLREC_CSI_ID, idtext);
	if (err == 0)
		err = objfs_volrec_set_param(rec, OBJFS_VOLREC_CSI_PARAMS, digest);
	if (err == 0)
		err = objfs_volrec_set_param(rec, OBJFS_VOLREC_CSI_SOURCE, source);
	if (err == 0)
		err = objfs_volrec_set_param(rec, OBJFS_VOLREC_CSI_ON_DELETE,
					     objfs_csi_on_delete_name(p->policy));
	if (err == 0 && p->policy == OBJFS_CSI_ON_DELETE_ARCHIVE) {
		v = p->archive_prefix != NULL ? p->archive_prefix : OBJFS_ARCHIVE_DEFAULT;
		err = objfs_volrec_set_param(rec, OBJFS_VOLREC_CSI_ARCHIVE, v);
		if (err == 0)
			err = archive_dest(id->path, v, dst, sizeof(dst));
		if (err == 0)
			err = objfs_volrec_set_param(rec, OBJFS_VOLREC_CSI_ARCHIVE_TO, dst);
	}
	for (size_t i = 0; err == 0 && i < ctx->n; i++)
		err = objfs_volrec_set_param(rec, ctx->items[i].key, ctx->items[i].value);
	return err;
}

/* The index entry of a new volume: capacity, source and ctx.* fields. */
static int index_entry(uint64_t cap, const char *source, const struct objfs_kv *ctx,
		       struct objfs_kv *ix)
{
	char num[32];
	int err;

	snprintf(num, sizeof(num), "%" PRIu64, cap);
	err = objfs_kv_set(ix, OBJFS_VOLREC_CAPACITY, num);
	if (err == 0 && source[0] != '\0')
		err = objfs_kv_set(ix, OBJFS_VOLREC_CSI_SOURCE, source);
	for (size_t i = 0; err == 0 && i < ctx->n; i++)
		err = objfs_kv_set(ix, ctx->items[i].key, ctx->items[i].value);
	return err;
}

/* ---- one call on one volume ------------------------------------------ */

enum objfs_rpc_code objfs_ctl_vol_parse(struct objfs_ctl_vol *v, const char *text,
					bool for_delete, const char *field,
					struct objfs_rpc_status *st)
{
	enum objfs_rpc_code code;

	if (for_delete)
		code = objfs_ctl_id_for_delete(text, OBJFS_ID_VOLUME, field, &v->id, st);
	else
		code = objfs_ctl_id_for_lookup(text, OBJFS_ID_VOLUME, field, &v->id, st);
	if (code == OBJFS_RPC_OK)
		snprintf(v->text, sizeof(v->text), "%s", text);
	return code;
}

enum objfs_rpc_code objfs_ctl_vol_begin(struct objfs_csi *csi, struct objfs_ctl_vol *v,
					const struct objfs_ctl_vol_how *how,
					struct objfs_rpc_status *st)
{
	enum objfs_rpc_code code;
	size_t n = 0;

	if (how->claim) {
		if (how->name != NULL) {
			snprintf(v->lk[n], sizeof(v->lk[n]), "vn:%s", how->name);
			v->locks[n] = v->lk[n];
			n++;
		}
		snprintf(v->lk[n], sizeof(v->lk[n]), "v:%s", v->text);
		v->locks[n] = v->lk[n];
		n++;
		/* "snapshot:ID" claims "s:ID", "volume:ID" "v:ID" */
		if (how->source != NULL && how->source[0] != '\0') {
			snprintf(v->lk[n], sizeof(v->lk[n]), "%s:%s",
				 how->source[0] == 's' ? "s" : "v",
				 strchr(how->source, ':') + 1);
			v->locks[n] = v->lk[n];
			n++;
		}
		code = objfs_ctl_claim(csi, v->locks, 3, "volume",
				       how->name != NULL ? how->name : v->text, st);
		if (code != OBJFS_RPC_OK) {
			memset(v->locks, 0, sizeof(v->locks));
			return code;
		}
		v->claimed = true;
	}
	if (how->params == NULL)
		return objfs_csi_root_open_by_id(csi, &v->id, v->text, how->secrets,
						 how->n_secrets, &v->root, st);
	memset(&v->conn, 0, sizeof(v->conn));
	if (v->id.store == OBJFS_ID_BUCKET) {
		code = objfs_csi_conn_for_create(csi, how->params, how->secrets,
						 how->n_secrets, &v->conn, st);
		if (code != OBJFS_RPC_OK)
			return code;
	}
	return objfs_csi_root_open(csi, &v->id, &v->conn, how->secrets, how->n_secrets,
				   &v->root, st);
}

void objfs_ctl_vol_end(struct objfs_csi *csi, struct objfs_ctl_vol *v)
{
	if (v->claimed)
		objfs_ctl_unclaim(csi, v->locks, 3);
	v->claimed = false;
	objfs_csi_root_close(&v->root);
}

/* ---- capacity and content source ------------------------------------- */

enum objfs_rpc_code objfs_ctl_vol_capacity(int64_t required, int64_t limit,
					   uint64_t content, uint64_t *cap,
					   struct objfs_rpc_status *st)
{
	uint64_t req, lim, c;

	if (required < 0 || limit < 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "capacity_range: required_bytes and limit_bytes must not be negative");
	req = (uint64_t)required;
	lim = (uint64_t)limit;
	if (lim != 0 && req > lim)
		return objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
				      "capacity_range: required_bytes %" PRIu64 " exceeds limit_bytes %" PRIu64,
				      req, lim);
	if (req != 0)
		c = req;
	else if (lim != 0)
		c = lim < OBJFS_CSI_DEFAULT_CAPACITY ? lim : OBJFS_CSI_DEFAULT_CAPACITY;
	else
		c = OBJFS_CSI_DEFAULT_CAPACITY;
	if (c < content) {
		if (lim != 0 && lim < content)
			return objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
					      "capacity_range: limit_bytes %" PRIu64 " is smaller than the source's %" PRIu64 " bytes",
					      lim, content);
		if (req != 0)
			return objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
					      "capacity_range: required_bytes %" PRIu64 " is smaller than the source's %" PRIu64 " bytes",
					      req, content);
		c = content;
	}
	*cap = c;
	return OBJFS_RPC_OK;
}

enum objfs_rpc_code objfs_ctl_vol_source(enum objfs_id_type type, const char *idtext,
					 struct objfs_ctl_vol_source *src,
					 struct objfs_rpc_status *st)
{
	enum objfs_rpc_code code;

	memset(src, 0, sizeof(*src));
	if (type == OBJFS_ID_SNAPSHOT) {
		code = objfs_ctl_id_for_lookup(idtext, OBJFS_ID_SNAPSHOT,
					       "volume_content_source.snapshot.snapshot_id",
					       &src->id, st);
		if (code != OBJFS_RPC_OK)
			return code;
		snprintf(src->text, sizeof(src->text), "snapshot:%s", idtext);
		objfs_snapshot_prefix(src->id.path, src->prefix, sizeof(src->prefix));
		src->skip = snap_skip;
		return OBJFS_RPC_OK;
	}
	code = objfs_ctl_id_for_lookup(idtext, OBJFS_ID_VOLUME,
				       "volume_content_source.volume.volume_id",
				       &src->id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	snprintf(src->text, sizeof(src->text), "volume:%s", idtext);
	objfs_ctl_vol_prefix(&src->id, src->prefix, sizeof(src->prefix));
	src->skip = objfs_ctl_vol_skip;
	return OBJFS_RPC_OK;
}

/* Checks that the source exists and measures it. */
static enum objfs_rpc_code source_measure(struct objfs_csi *csi, struct objfs_csi_root *r,
					  struct objfs_ctl_vol_source *src,
					  struct objfs_rpc_status *st)
{
	struct objfs_volrec vrec = OBJFS_VOLREC_INIT;
	struct objfs_snaprec srec = OBJFS_SNAPREC_INIT;
	const char *idtext = strchr(src->text, ':') + 1;
	int err;

	if (src->id.type == OBJFS_ID_SNAPSHOT)
		err = objfs_snaprec_load(r->store, src->id.path, &srec);
	else
		err = objfs_ctl_volrec_load_live(r->store, &src->id, &vrec);
	objfs_snaprec_release(&srec);
	objfs_volrec_release(&vrec);
	if (err == ENOENT)
		return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND,
				      "volume_content_source: %s %s does not exist",
				      src->id.type == OBJFS_ID_SNAPSHOT ? "snapshot" : "volume",
				      idtext);
	if (err != 0)
		return objfs_ctl_store_fail(csi, st, err, "cannot read the source", idtext);
	err = objfs_ctl_tree_size(csi->controller, r->store, src->prefix, src->skip, &src->bytes);
	if (err != 0)
		return objfs_ctl_store_fail(csi, st, err, "cannot measure the source", idtext);
	return OBJFS_RPC_OK;
}

/* ---- does a recorded volume match a request --------------------------- */

static bool capacity_fits(const struct objfs_ctl_vol_want *w, uint64_t cap)
{
	if (w->required > 0 && cap < w->required)
		return false;
	if (w->limit > 0 && cap > w->limit)
		return false;
	return true;
}

enum objfs_ctl_vol_diff objfs_ctl_vol_matches(const struct objfs_volrec *rec,
					      const struct objfs_ctl_vol_want *want,
					      const char **key)
{
	size_t plen = strlen(OBJFS_VOLREC_CTX);
	char ctxkey[OBJFS_KV_KEY_MAX + 8];
	const char *v;
	size_t i, j;

	if (key != NULL)
		*key = NULL;
	if (objfs_ctl_volrec_retained(rec))
		return OBJFS_CTL_VOL_RETAINED;
	if (want->name != NULL && (rec->name == NULL || strcmp(rec->name, want->name) != 0))
		return OBJFS_CTL_VOL_NAME;
	/* Every key the request gives, with the record's value ... */
	for (i = 0; i < want->n_context; i++) {
		snprintf(ctxkey, sizeof(ctxkey), "%s%s", OBJFS_VOLREC_CTX,
			 want->context[i].key);
		v = objfs_volrec_get_param(rec, ctxkey);
		if (v == NULL || strcmp(v, want->context[i].value) != 0) {
			if (key != NULL)
				*key = want->context[i].key;
			return OBJFS_CTL_VOL_CONTEXT;
		}
	}
	/* ... and every key of the record in the request. */
	for (i = 0; want->n_context > 0 && i < rec->params.n; i++) {
		const char *k = rec->params.items[i].key;

		if (strncmp(k, OBJFS_VOLREC_CTX, plen) != 0)
			continue;
		for (j = 0; j < want->n_context; j++)
			if (strcmp(want->context[j].key, k + plen) == 0 &&
			    want->context[j].value != NULL)
				break;
		if (j == want->n_context) {
			if (key != NULL)
				*key = k + plen;
			return OBJFS_CTL_VOL_CONTEXT_LACKS;
		}
	}
	if (want->digest != NULL) {
		v = objfs_volrec_get_param(rec, OBJFS_VOLREC_CSI_PARAMS);
		if (v == NULL || strcmp(v, want->digest) != 0)
			return OBJFS_CTL_VOL_PARAMS;
	}
	if (want->source != NULL) {
		v = objfs_volrec_get_param(rec, OBJFS_VOLREC_CSI_SOURCE);
		if (strcmp(v != NULL ? v : "", want->source) != 0)
			return OBJFS_CTL_VOL_SOURCE;
	}
	if (want->capacity && !capacity_fits(want, rec->capacity_bytes))
		return OBJFS_CTL_VOL_CAPACITY;
	return OBJFS_CTL_VOL_SAME;
}

/* ---- CreateVolume ----------------------------------------------------- */

/* Takes back what a failed create wrote: the objects it copied (when
 * copied), then the index entries.  Failures are logged only. */
static void create_undo(struct objfs_csi *csi, struct objfs_csi_root *root,
			const struct objfs_id *id, const char *idtext,
			const char *name, bool copied)
{
	char prefix[OBJFS_KEY_MAX];
	int err = 0;

	if (copied) {
		objfs_ctl_vol_prefix(id, prefix, sizeof(prefix));
		err = objfs_ctl_tree_delete(csi->controller, root->store, prefix,
					    NULL, NULL);
	}
	if (err == 0)
		err = objfs_catalog_remove(csi->store, OBJFS_CATALOG_VOLUME, idtext, name);
	if (err != 0)
		objfs_warn(csi->log, SUB, "failed create of %s: cannot take back its index entry: %s",
			   idtext, objfs_strerror(err));
}

/* The volume the same name already has in the store (*found) answers a
 * repeated request, or conflicts with it. */
static enum objfs_rpc_code create_existing(const struct objfs_volrec *rec,
					   const struct objfs_ctl_vol_spec *spec,
					   const char *idtext,
					   struct objfs_rpc_status *st)
{
	struct objfs_ctl_vol_want want = {
		.name = spec->name, .digest = spec->digest, .source = spec->src->text,
		.capacity = true, .required = (uint64_t)spec->required,
		.limit = (uint64_t)spec->limit,
	};

	switch (objfs_ctl_vol_matches(rec, &want, NULL)) {
	case OBJFS_CTL_VOL_SAME:
		return OBJFS_RPC_OK;
	case OBJFS_CTL_VOL_RETAINED:
		return objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "volume %.128s was deleted and retained at %s",
				      spec->name, idtext);
	case OBJFS_CTL_VOL_NAME:
		return objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "prefix of volume %.128s holds another volume", spec->name);
	case OBJFS_CTL_VOL_SOURCE:
		return objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "volume %.128s already exists with another content source",
				      spec->name);
	case OBJFS_CTL_VOL_CAPACITY:
		return objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "volume %.128s already exists with capacity %" PRIu64 " bytes, outside capacity_range",
				      spec->name, rec->capacity_bytes);
	default:   /* PARAMS (no context is compared) */
		return objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "volume %.128s already exists with other parameters",
				      spec->name);
	}
}

enum objfs_rpc_code objfs_ctl_vol_create(struct objfs_csi *csi, struct objfs_ctl_vol *v,
					 const struct objfs_ctl_vol_spec *spec,
					 struct objfs_volrec *rec,
					 struct objfs_rpc_status *st)
{
	struct objfs_ctl_vol_source *src = spec->src;
	struct objfs_kv ctxkv = OBJFS_KV_INIT, ixkv = OBJFS_KV_INIT;
	struct objfs_csi_root *root = &v->root;
	const char *idtext = v->text, *name = spec->name;
	char dst[OBJFS_KEY_MAX], other[OBJFS_ID_MAX + 1], msg[400];
	enum objfs_rpc_code code;
	bool indexed = false;
	uint64_t cap = 0;
	int err;

	err = objfs_catalog_name_check(csi->store, OBJFS_CATALOG_VOLUME, name,
				       idtext, other, sizeof(other));
	if (err == EEXIST) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "volume %.128s already exists as %s, with other parameters",
				      name, other);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the index for", idtext);
		goto out;
	}

	err = objfs_volrec_load_at(root->store, v->id.path, rec);
	if (err == 0) {
		/* It exists: the same request again, or a conflict. */
		code = create_existing(rec, spec, idtext, st);
		goto out;
	}
	if (err != ENOENT) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the record of", idtext);
		goto out;
	}
	/* The bucket must exist before anything is written (a missing one
	 * would surface half-way as a missing record). */
	err = 0;
	if (v->id.store == OBJFS_ID_BUCKET) {
		snprintf(dst, sizeof(dst), "%s/", v->id.path);
		err = objfs_store_probe(root->store, dst);
	}
	if (err == ENOENT) {
		objfs_store_error_text(err, msg, sizeof(msg));
		code = objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "cannot create volume %s: bucket %s does not exist (%s); create it or fix the bucket parameter of the StorageClass",
				      idtext, v->id.bucket, msg);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot create volume", idtext);
		goto out;
	}
	objfs_volrec_release(rec);

	code = objfs_ctl_vol_capacity(spec->required, spec->limit, 0, &cap, st);
	if (code == OBJFS_RPC_OK && src->text[0] != '\0') {
		code = source_measure(csi, root, src, st);
		if (code == OBJFS_RPC_OK)
			code = objfs_ctl_vol_capacity(spec->required, spec->limit,
						      src->bytes, &cap, st);
	}
	if (code != OBJFS_RPC_OK)
		goto out;

	/* The index first, so that ListVolumes-driven cleanup can find what a
	 * failed create left; the record last. */
	err = context_record(csi, &v->id, &v->conn, spec->params, &ctxkv);
	if (err == 0)
		err = index_entry(cap, src->text, &ctxkv, &ixkv);
	if (err == 0)
		err = objfs_catalog_add(csi->store, OBJFS_CATALOG_VOLUME, idtext,
					name, &ixkv);
	if (err == EEXIST) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "the name %.128s was taken concurrently by another call; retry",
				      name);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot write the index for", idtext);
		goto out;
	}
	indexed = true;
	if (src->text[0] != '\0') {
		objfs_ctl_vol_prefix(&v->id, dst, sizeof(dst));
		err = objfs_ctl_tree_copy(csi->controller, root->store, src->prefix, dst,
					  src->skip, NULL);
		if (err != 0) {
			code = objfs_ctl_store_fail(csi, st, err, "cannot copy the content source into", idtext);
			goto out;
		}
	}
	err = objfs_ctl_vol_record(rec, &v->id, idtext, name, cap, spec->digest,
				   src->text, spec->params, &ctxkv);
	if (err != 0) {
		code = objfs_ctl_oom(st);
		goto out;
	}
	/* Created, never replaced: a concurrent create (another controller)
	 * that wrote it first wins; the retry answers from its record. */
	err = objfs_volrec_create_at(root->store, v->id.path, rec);
	if (err == EEXIST) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "volume %s was created concurrently by another call; retry",
				      idtext);
		indexed = false;   /* the index is the other call's now */
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot write the record of", idtext);
		goto out;
	}
	objfs_info(csi->log, SUB, "created volume %s for %s (%" PRIu64 " bytes%s%s)",
		   idtext, name, cap, src->text[0] != '\0' ? ", from " : "", src->text);
	code = OBJFS_RPC_OK;
out:
	/* A create that failed after writing the index (its record is not
	 * written: that is the last step) takes back what it wrote, so a
	 * failed CreateVolume leaves nothing behind.  Should the undo fail
	 * too, the index entry stays and a retry or DeleteVolume finishes. */
	if (code != OBJFS_RPC_OK && indexed)
		create_undo(csi, root, &v->id, idtext, name, src->text[0] != '\0');
	objfs_kv_release(&ctxkv);
	objfs_kv_release(&ixkv);
	return code;
}

/* ---- DeleteVolume ----------------------------------------------------- */

/* Moves the objects of the volume at prefix (record included, so the
 * archive says what it was) where its record's archive says. */
static int delete_archive(struct objfs_csi *csi, struct objfs_ctl_vol *v,
			  const struct objfs_volrec *rec, const char *prefix)
{
	const char *archive = objfs_volrec_get_param(rec, OBJFS_VOLREC_CSI_ARCHIVE);
	char dst[OBJFS_KEY_MAX];

	if (archive == NULL)
		archive = OBJFS_ARCHIVE_DEFAULT;
	/* Under the base prefix; a record without archiveTo (made before)
	 * archives where it always did.  The place is computed, never read
	 * from the record. */
	if (objfs_volrec_get_param(rec, OBJFS_VOLREC_CSI_ARCHIVE_TO) != NULL)
		archive_dest(v->id.path, archive, dst, sizeof(dst) - 1);
	else
		snprintf(dst, sizeof(dst) - 1, "%s/%s", archive, v->id.path);
	strcat(dst, "/");
	return objfs_ctl_tree_copy(csi->controller, v->root.store, prefix, dst,
				   NULL, NULL);
}

enum objfs_rpc_code objfs_ctl_vol_delete(struct objfs_csi *csi, struct objfs_ctl_vol *v,
					 struct objfs_rpc_status *st)
{
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_store *s = v->root.store;
	const char *idtext = v->text, *policy;
	char key[OBJFS_KEY_MAX], prefix[OBJFS_KEY_MAX];
	enum objfs_rpc_code code = OBJFS_RPC_OK;
	bool skip;
	uint64_t n = 0;
	int err;

	objfs_volrec_key(v->id.path, key, sizeof(key));
	objfs_ctl_vol_prefix(&v->id, prefix, sizeof(prefix));
	err = objfs_volrec_load_at(s, v->id.path, &rec);
	if (err != 0 && err != ENOENT) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the record of", idtext);
		goto out;
	}
	if (err == ENOENT) {
		code = objfs_ctl_delete_unrecorded(csi, OBJFS_CATALOG_VOLUME, idtext,
						   &skip, st);
		if (code != OBJFS_RPC_OK || skip)
			goto out;
	}
	policy = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ON_DELETE);
	if (objfs_ctl_volrec_retained(&rec)) {
		/* Already deleted with retain: only the index may be left. */
	} else if (policy != NULL && strcmp(policy, "retain") == 0) {
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_STATE,
					     OBJFS_VOLREC_STATE_RETAINED);
		if (err == 0)
			err = objfs_volrec_store_at(s, v->id.path, &rec);
		if (err != 0) {
			code = objfs_ctl_store_fail(csi, st, err, "cannot retain", idtext);
			goto out;
		}
		objfs_info(csi->log, SUB, "deleted volume %s, data retained", idtext);
	} else {
		if (policy != NULL && strcmp(policy, "archive") == 0) {
			err = delete_archive(csi, v, &rec, prefix);
			if (err != 0) {
				code = objfs_ctl_store_fail(csi, st, err, "cannot archive", idtext);
				goto out;
			}
		}
		err = objfs_ctl_tree_delete(csi->controller, s, prefix, objfs_ctl_vol_skip, &n);
		if (err == 0)
			err = objfs_store_del(s, key);
		if (err != 0) {
			code = objfs_ctl_store_fail(csi, st, err, "cannot delete the objects of", idtext);
			goto out;
		}
		objfs_info(csi->log, SUB, "deleted volume %s (%" PRIu64 " objects%s)",
			   idtext, n,
			   policy != NULL && strcmp(policy, "archive") == 0 ? ", archived" : "");
	}
	err = objfs_catalog_remove(csi->store, OBJFS_CATALOG_VOLUME, idtext, rec.name);
	if (err != 0)
		code = objfs_ctl_store_fail(csi, st, err, "cannot update the index for", idtext);
out:
	objfs_volrec_release(&rec);
	return code;
}

/* ---- ControllerExpandVolume ------------------------------------------- */

enum objfs_rpc_code objfs_ctl_vol_expand(struct objfs_csi *csi, struct objfs_ctl_vol *v,
					 uint64_t want, uint64_t limit, uint64_t *have,
					 struct objfs_rpc_status *st)
{
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	enum objfs_rpc_code code = OBJFS_RPC_OK;
	int err;

	*have = 0;
	err = objfs_ctl_volrec_load_live(v->root.store, &v->id, &rec);
	if (err == ENOENT) {
		code = objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "volume %s does not exist",
				      v->text);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the record of", v->text);
		goto out;
	}
	*have = rec.capacity_bytes;
	if (*have >= want)
		goto out;
	if (limit != 0 && *have > limit) {
		code = objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
				      "volume %s is larger than limit_bytes: shrinking is not supported",
				      v->text);
		goto out;
	}
	rec.capacity_bytes = want;
	err = objfs_volrec_store_at(v->root.store, v->id.path, &rec);
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot write the record of", v->text);
		goto out;
	}
	err = objfs_catalog_set_capacity(csi->store, v->text, want);
	if (err != 0)
		objfs_warn(csi->log, SUB, "volume %s: cannot update the index: %s",
			   v->text, objfs_strerror(err));
	objfs_info(csi->log, SUB, "expanded volume %s from %" PRIu64 " to %" PRIu64 " bytes",
		   v->text, *have, want);
	*have = want;
out:
	objfs_volrec_release(&rec);
	return code;
}

/* ---- GetCapacity ------------------------------------------------------ */

int objfs_ctl_local_free_bytes(struct objfs_csi *csi, uint64_t *out)
{
	const char *url = csi->cfg.store.url;
	char path[PATH_MAX];
	struct statvfs sv;
	char *slash;

	*out = 0;
	if (url == NULL || strncmp(url, "file://", 7) != 0)
		return ENOTSUP;
	snprintf(path, sizeof(path), "%s", url + 7);
	while (statvfs(path, &sv) != 0) {
		if (errno != ENOENT)
			return errno;
		slash = strrchr(path, '/');
		if (slash == NULL || slash == path)
			return ENOENT;
		*slash = '\0';
	}
	*out = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
	return 0;
}
