/*
 * controller.c - the CSI Controller service: its state and the volume
 * RPCs (see controller.h for the layout of volumes, snapshots, records
 * and the index).
 *
 * The service's files: controller.c (state, helpers, volumes),
 * snapshots.c (snapshot RPCs), listing.c (paged index listings and their
 * tokens), sharing controller_int.h; prefix trees (clones, snapshots,
 * deletes, archives) are walked, copied and deleted by backend/tree.h on
 * the service's pool; and the rules it shares or owns apart: caps.h
 * (capabilities, shared with the node), claims.h (the in-progress set,
 * shared with the node), params.h (StorageClass parameters), roots.h
 * (root stores), volume/catalog.h (the index and snapshot records) and
 * volume/volrec.h (the volume record).
 *
 * Every handler follows the same shape: check the request (INVALID_ARGUMENT
 * naming the field), parse ids (volid.c: an id objfs did not produce is
 * NOT_FOUND for lookups and INVALID_ARGUMENT for deletes, a malformed one
 * INVALID_ARGUMENT, and neither touches a store), claim the names/ids in
 * the in-progress set (ABORTED when taken), open the root store the id
 * names, then act on full keys in that store.
 *
 * Root stores (roots.h): the default store is borrowed from the driver; a
 * bucket store is opened per call with cfg.store_open and destroyed at
 * the end.
 *
 * States of a volume, as seen in its store:
 *   absent      no record, maybe index entries or objects of a failed
 *               create/delete: not reported, create and delete both finish
 *               the job when called again;
 *   live        record present;
 *   retained    record with csi.state=retained (deleted with onDelete=
 *               retain): NOT_FOUND for lookups, kept in the store.
 * A snapshot is absent or ready (record present; snapshots.c).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statvfs.h>

#include "backend/backend.h"
#include "backend/store_error.h"
#include "backend/tree.h"
#include "common/errors.h"
#include "common/pool.h"
#include "common/log.h"
#include "csi.pb-c.h"
#include "csi/caps.h"
#include "csi/controller.h"
#include "csi/controller_int.h"
#include "csi/driver.h"
#include "csi/params.h"
#include "csi/pb.h"
#include "csi/roots.h"
#include "csi/volid.h"
#include "volume/catalog.h"
#include "volume/kvtext.h"
#include "volume/volrec.h"

#define SUB OBJFS_CTL_LOG
#define HASH_HEX OBJFS_CATALOG_HASH_HEX
#define NAME_MAX_LEN OBJFS_CTL_NAME_MAX
#define READABLE_MAX 63
#define URL_MAX 2048

/* ---- state ------------------------------------------------------------ */

int objfs_csi_controller_create(struct objfs_csi *csi,
				struct objfs_csi_controller **out)
{
	struct objfs_csi_controller *c;
	size_t got = 0;
	ssize_t r;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return ENOMEM;
	c->csi = csi;
	c->copy_workers = OBJFS_CTL_COPY_WORKERS;
	c->page_keys = OBJFS_CTL_PAGE_KEYS;
	while (got < sizeof(c->token_key)) {
		r = getrandom(c->token_key + got, sizeof(c->token_key) - got, 0);
		if (r <= 0) {
			free(c);
			return EIO;
		}
		got += (size_t)r;
	}
	if (objfs_claims_init(&c->busy) != 0) {
		free(c);
		return ENOMEM;
	}
	if (objfs_pool_create(c->copy_workers, &c->pool) != 0) {
		objfs_claims_release(&c->busy);
		free(c);
		return ENOMEM;
	}
	*out = c;
	return 0;
}

void objfs_csi_controller_tune(struct objfs_csi_controller *c,
			       unsigned page_keys, unsigned copy_workers)
{
	if (page_keys >= 1 && page_keys <= OBJFS_CTL_PAGE_KEYS)
		c->page_keys = page_keys;
	if (copy_workers >= 1 && copy_workers <= OBJFS_CTL_COPY_WORKERS &&
	    copy_workers != c->copy_workers) {
		struct objfs_pool *p = NULL;

		/* Before serving: no tree operation runs on the old pool. */
		if (objfs_pool_create(copy_workers, &p) == 0) {
			objfs_pool_destroy(c->pool);
			c->pool = p;
			c->copy_workers = copy_workers;
		}
	}
}

void objfs_csi_controller_destroy(struct objfs_csi_controller *c)
{
	if (c == NULL)
		return;
	objfs_pool_destroy(c->pool);
	objfs_claims_release(&c->busy);
	free(c);
}

/* ---- small helpers ---------------------------------------------------- */

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

/* ---- building responses ----------------------------------------------- */

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
			  const struct objfs_csi_conn *conn, const struct objfs_csi_params *p,
			  struct objfs_kv *kv)
{
	char url[URL_MAX];
	const char *durl = csi->cfg.store.url;
	int err;

	err = source_url(csi, id, url, sizeof(url));
	if (err == 0)
		err = objfs_kv_set(kv, OBJFS_CSI_CTX_SOURCE, url);
	if (err == 0 && id->store == OBJFS_ID_BUCKET) {
		err = objfs_kv_set(kv, OBJFS_CSI_CTX_ENDPOINT, conn->endpoint);
		if (err == 0)
			err = objfs_kv_set(kv, OBJFS_CSI_CTX_REGION, conn->region);
		if (err == 0)
			err = objfs_kv_set(kv, OBJFS_CSI_CTX_ADDRESSING, conn->addressing);
	} else if (err == 0 && durl != NULL && strncmp(durl, "s3:", 3) == 0) {
		err = objfs_kv_set(kv, OBJFS_CSI_CTX_ENDPOINT,
				   csi->cfg.store.s3.endpoint ? csi->cfg.store.s3.endpoint : "");
		if (err == 0)
			err = objfs_kv_set(kv, OBJFS_CSI_CTX_REGION,
					   csi->cfg.store.s3.region ? csi->cfg.store.s3.region : "us-east-1");
		if (err == 0)
			err = objfs_kv_set(kv, OBJFS_CSI_CTX_ADDRESSING,
					   csi->cfg.store.s3.path_style ? "path" : "virtual");
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

static int content_source_new(const char *src, Csi__V1__VolumeContentSource **out)
{
	Csi__V1__VolumeContentSource *cs;
	int err = ENOMEM;

	*out = NULL;
	if (src == NULL || src[0] == '\0')
		return 0;
	cs = objfs_pb_new(&csi__v1__volume_content_source__descriptor);
	if (cs == NULL)
		return ENOMEM;
	if (strncmp(src, "snapshot:", 9) == 0) {
		cs->snapshot = objfs_pb_new(&csi__v1__volume_content_source__snapshot_source__descriptor);
		if (cs->snapshot != NULL) {
			cs->type_case = CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT;
			err = objfs_pb_set_str(&cs->snapshot->snapshot_id, src + 9);
		}
	} else if (strncmp(src, "volume:", 7) == 0) {
		cs->volume = objfs_pb_new(&csi__v1__volume_content_source__volume_source__descriptor);
		if (cs->volume != NULL) {
			cs->type_case = CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_VOLUME;
			err = objfs_pb_set_str(&cs->volume->volume_id, src + 7);
		}
	} else {
		err = 0;
	}
	if (err != 0) {
		protobuf_c_message_free_unpacked(&cs->base, NULL);
		return err;
	}
	*out = cs;
	return 0;
}

/* A Volume message of id: its capacity and, from fields (the record's
 * parameters or the index entry), its volume_context (ctx.*) and content
 * source (csi.source). */
static int volume_new(const char *id, uint64_t cap, const struct objfs_kv *fields,
		      Csi__V1__Volume **out)
{
	Csi__V1__Volume *v = objfs_pb_new(&csi__v1__volume__descriptor);
	size_t i, plen = strlen(OBJFS_VOLREC_CTX);
	int err;

	*out = NULL;
	if (v == NULL)
		return ENOMEM;
	if (cap <= INT64_MAX)
		v->capacity_bytes = (int64_t)cap;
	err = objfs_pb_set_str(&v->volume_id, id);
	for (i = 0; err == 0 && i < fields->n; i++) {
		if (strncmp(fields->items[i].key, OBJFS_VOLREC_CTX, plen) != 0)
			continue;
		err = objfs_pb_map_add((void ***)&v->volume_context, &v->n_volume_context,
				       &csi__v1__volume__volume_context_entry__descriptor,
				       fields->items[i].key + plen, fields->items[i].value);
	}
	if (err == 0)
		err = content_source_new(objfs_kv_get(fields, OBJFS_VOLREC_CSI_SOURCE),
					 &v->content_source);
	if (err != 0) {
		protobuf_c_message_free_unpacked(&v->base, NULL);
		return err;
	}
	*out = v;
	return 0;
}

static int condition_new(bool abnormal, const char *msg,
			 Csi__V1__VolumeCondition **out)
{
	Csi__V1__VolumeCondition *c = objfs_pb_new(&csi__v1__volume_condition__descriptor);

	*out = NULL;
	if (c == NULL)
		return ENOMEM;
	c->abnormal = abnormal;
	if (objfs_pb_set_str(&c->message, msg) != 0) {
		protobuf_c_message_free_unpacked(&c->base, NULL);
		return ENOMEM;
	}
	*out = c;
	return 0;
}

/* ---- records ---------------------------------------------------------- */

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

static bool volrec_retained(const struct objfs_volrec *rec)
{
	const char *state = objfs_volrec_get_param(rec, OBJFS_VOLREC_CSI_STATE);

	return state != NULL && strcmp(state, OBJFS_VOLREC_STATE_RETAINED) == 0;
}

/* Loads the record of a live volume: ENOENT when absent or retained. */
int objfs_ctl_volrec_load_live(struct objfs_store *s, const struct objfs_id *id,
			       struct objfs_volrec *rec)
{
	int err;

	err = objfs_volrec_load_at(s, id->path, rec);
	if (err != 0)
		return err;
	if (volrec_retained(rec)) {
		objfs_volrec_release(rec);
		return ENOENT;
	}
	return 0;
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

static bool same_root(const struct objfs_id *a, const struct objfs_id *b)
{
	return a->store == b->store && strcmp(a->bucket, b->bucket) == 0;
}

/* ---- CreateVolume ----------------------------------------------------- */

/* Capacity for a new volume from range (may be NULL) and the size of its
 * content (0 when empty).  OK or OUT_OF_RANGE/INVALID_ARGUMENT. */
static enum objfs_rpc_code capacity_pick(const Csi__V1__CapacityRange *range,
					 uint64_t content, uint64_t *cap,
					 struct objfs_rpc_status *st)
{
	uint64_t req = 0, lim = 0, c;

	if (range != NULL) {
		if (range->required_bytes < 0 || range->limit_bytes < 0)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "capacity_range: required_bytes and limit_bytes must not be negative");
		req = (uint64_t)range->required_bytes;
		lim = (uint64_t)range->limit_bytes;
	}
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

static bool capacity_fits(const Csi__V1__CapacityRange *range, uint64_t cap)
{
	if (range == NULL)
		return true;
	if (range->required_bytes > 0 && cap < (uint64_t)range->required_bytes)
		return false;
	if (range->limit_bytes > 0 && cap > (uint64_t)range->limit_bytes)
		return false;
	return true;
}

/* The source of a new volume: "" or snapshot:ID / volume:ID, its root id,
 * the prefix to copy and its size. */
struct vsource {
	char text[OBJFS_ID_MAX + 16];
	struct objfs_id id;
	char prefix[OBJFS_KEY_MAX];
	const char *const *skip;
	uint64_t bytes;
};

const char *const objfs_ctl_vol_skip[] = { OBJFS_VOLREC_KEY, NULL };

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
static const char *const snap_skip[] = { OBJFS_VOLREC_KEY, OBJFS_SNAPREC_KEY, NULL };

static enum objfs_rpc_code source_parse(const Csi__V1__VolumeContentSource *cs,
					struct vsource *src,
					struct objfs_rpc_status *st)
{
	enum objfs_rpc_code code;

	memset(src, 0, sizeof(*src));
	if (cs == NULL)
		return OBJFS_RPC_OK;
	if (cs->type_case == CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT &&
	    cs->snapshot != NULL) {
		code = objfs_ctl_id_for_lookup(cs->snapshot->snapshot_id, OBJFS_ID_SNAPSHOT,
					       "volume_content_source.snapshot.snapshot_id",
					       &src->id, st);
		if (code != OBJFS_RPC_OK)
			return code;
		snprintf(src->text, sizeof(src->text), "snapshot:%s",
			 cs->snapshot->snapshot_id);
		objfs_snapshot_prefix(src->id.path, src->prefix, sizeof(src->prefix));
		src->skip = snap_skip;
		return OBJFS_RPC_OK;
	}
	if (cs->type_case == CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_VOLUME &&
	    cs->volume != NULL) {
		code = objfs_ctl_id_for_lookup(cs->volume->volume_id, OBJFS_ID_VOLUME,
					       "volume_content_source.volume.volume_id",
					       &src->id, st);
		if (code != OBJFS_RPC_OK)
			return code;
		snprintf(src->text, sizeof(src->text), "volume:%s",
			 cs->volume->volume_id);
		objfs_ctl_vol_prefix(&src->id, src->prefix, sizeof(src->prefix));
		src->skip = objfs_ctl_vol_skip;
		return OBJFS_RPC_OK;
	}
	return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
			      "volume_content_source: snapshot or volume is required");
}

/* Checks that the source exists and measures it. */
static enum objfs_rpc_code source_measure(struct objfs_csi *csi, struct objfs_csi_root *r,
					  struct vsource *src,
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

enum objfs_rpc_code objfs_csi_create_volume(void *ctx, const ProtobufCMessage *req,
					    ProtobufCMessage **resp,
					    struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__CreateVolumeRequest *rq = (const Csi__V1__CreateVolumeRequest *)req;
	Csi__V1__CreateVolumeResponse *r = NULL;
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_kv ctxkv = OBJFS_KV_INIT, ixkv = OBJFS_KV_INIT;
	struct objfs_csi_params p;
	struct vsource src;
	struct objfs_id id;
	struct objfs_csi_root root;
	struct objfs_csi_conn conn;
	char idtext[OBJFS_ID_MAX + 1], dst[OBJFS_KEY_MAX];
	char digest[HASH_HEX + 1], other[OBJFS_ID_MAX + 1], msg[400];
	char num[32];
	char lk_name[NAME_MAX_LEN + 8], lk_id[OBJFS_ID_MAX + 8];
	char lk_src[OBJFS_ID_MAX + 8];
	const char *locks[3] = { lk_name, lk_id, NULL };
	const char *v;
	uint64_t cap = 0, have = 0;
	enum objfs_rpc_code code;
	bool locked = false, indexed = false;
	int err;

	memset(&root, 0, sizeof(root));
	if (rq->name == NULL || rq->name[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "name is required");
	if (strlen(rq->name) > NAME_MAX_LEN || objfs_id_name_banned(rq->name))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "name is too long or holds control characters");
	if (rq->n_volume_capabilities == 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_capabilities is required");
	code = objfs_csi_caps_check(rq->volume_capabilities, rq->n_volume_capabilities,
				    "volume_capabilities[]", msg, sizeof(msg));
	if (code != OBJFS_RPC_OK)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "%s", msg);
	if (rq->n_mutable_parameters > 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "mutable_parameters are not supported (no MODIFY_VOLUME)");
	code = objfs_csi_params_parse((void *const *)rq->parameters, rq->n_parameters, &p, st);
	if (code != OBJFS_RPC_OK)
		return code;
	code = source_parse(rq->volume_content_source, &src, st);
	if (code != OBJFS_RPC_OK)
		return code;
	code = capacity_pick(rq->capacity_range, 0, &cap, st);
	if (code != OBJFS_RPC_OK)
		return code;
	code = objfs_ctl_id_make(OBJFS_ID_VOLUME, p.bucket, p.base_prefix, rq->name, &id,
				 idtext, sizeof(idtext), st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (src.text[0] != '\0' && !same_root(&src.id, &id))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_content_source: the source lives in another store than the new volume (bucket parameter differs)");
	objfs_csi_params_digest(&p, digest);

	snprintf(lk_name, sizeof(lk_name), "vn:%s", rq->name);
	snprintf(lk_id, sizeof(lk_id), "v:%s", idtext);
	/* The source too: no delete may empty it while it is copied. */
	if (src.text[0] != '\0') {
		snprintf(lk_src, sizeof(lk_src), "%s:%s",
			 src.id.type == OBJFS_ID_SNAPSHOT ? "s" : "v",
			 strchr(src.text, ':') + 1);
		locks[2] = lk_src;
	}
	code = objfs_ctl_claim(csi, locks, 3, "volume", rq->name, st);
	if (code != OBJFS_RPC_OK)
		return code;
	locked = true;

	memset(&conn, 0, sizeof(conn));
	if (id.store == OBJFS_ID_BUCKET)
		objfs_csi_conn_resolve(csi, NULL, &p, (void *const *)rq->secrets,
				       rq->n_secrets, &conn);
	code = objfs_csi_root_open(csi, &id, &conn, (void *const *)rq->secrets,
				   rq->n_secrets, &root, st);
	if (code != OBJFS_RPC_OK)
		goto out;

	err = objfs_catalog_name_check(csi->store, OBJFS_CATALOG_VOLUME, rq->name,
				       idtext, other, sizeof(other));
	if (err == EEXIST) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "volume %.128s already exists as %s, with other parameters",
				      rq->name, other);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the index for", idtext);
		goto out;
	}

	err = objfs_volrec_load_at(root.store, id.path, &rec);
	if (err == 0) {
		/* It exists: the same request again, or a conflict. */
		if (volrec_retained(&rec)) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "volume %.128s was deleted and retained at %s",
					      rq->name, idtext);
			goto out;
		}
		if (rec.name == NULL || strcmp(rec.name, rq->name) != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "prefix of volume %.128s holds another volume", rq->name);
			goto out;
		}
		v = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_PARAMS);
		if (v == NULL || strcmp(v, digest) != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "volume %.128s already exists with other parameters",
					      rq->name);
			goto out;
		}
		v = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_SOURCE);
		if (strcmp(v != NULL ? v : "", src.text) != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "volume %.128s already exists with another content source",
					      rq->name);
			goto out;
		}
		have = rec.capacity_bytes;
		if (!capacity_fits(rq->capacity_range, have)) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "volume %.128s already exists with capacity %" PRIu64 " bytes, outside capacity_range",
					      rq->name, have);
			goto out;
		}
		goto answer;
	}
	if (err != ENOENT) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the record of", idtext);
		goto out;
	}
	/* The bucket must exist before anything is written (a missing one
	 * would surface half-way as a missing record). */
	err = 0;
	if (id.store == OBJFS_ID_BUCKET) {
		snprintf(dst, sizeof(dst), "%s/", id.path);
		err = objfs_store_probe(root.store, dst);
	}
	if (err == ENOENT) {
		objfs_store_error_text(err, msg, sizeof(msg));
		code = objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "cannot create volume %s: bucket %s does not exist (%s); create it or fix the bucket parameter of the StorageClass",
				      idtext, id.bucket, msg);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot create volume", idtext);
		goto out;
	}
	objfs_volrec_release(&rec);

	if (src.text[0] != '\0') {
		code = source_measure(csi, &root, &src, st);
		if (code != OBJFS_RPC_OK)
			goto out;
		code = capacity_pick(rq->capacity_range, src.bytes, &cap, st);
		if (code != OBJFS_RPC_OK)
			goto out;
	}

	/* The index first, so that ListVolumes-driven cleanup can find what a
	 * failed create left; the record last. */
	snprintf(num, sizeof(num), "%" PRIu64, cap);
	err = context_record(csi, &id, &conn, &p, &ctxkv);
	if (err == 0)
		err = objfs_kv_set(&ixkv, OBJFS_VOLREC_CAPACITY, num);
	if (err == 0 && src.text[0] != '\0')
		err = objfs_kv_set(&ixkv, OBJFS_VOLREC_CSI_SOURCE, src.text);
	for (size_t i = 0; err == 0 && i < ctxkv.n; i++)
		err = objfs_kv_set(&ixkv, ctxkv.items[i].key, ctxkv.items[i].value);
	if (err == 0)
		err = objfs_catalog_add(csi->store, OBJFS_CATALOG_VOLUME, idtext,
					rq->name, &ixkv);
	if (err == EEXIST) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "the name %.128s was taken concurrently by another call; retry",
				      rq->name);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot write the index for", idtext);
		goto out;
	}
	indexed = true;
	if (src.text[0] != '\0') {
		objfs_ctl_vol_prefix(&id, dst, sizeof(dst));
		err = objfs_ctl_tree_copy(csi->controller, root.store, src.prefix, dst,
					  src.skip, NULL);
		if (err != 0) {
			code = objfs_ctl_store_fail(csi, st, err, "cannot copy the content source into", idtext);
			goto out;
		}
	}
	rec.capacity_bytes = cap;
	err = objfs_volrec_set_created_now(&rec);
	if (err == 0)
		err = objfs_volrec_set_name(&rec, rq->name);
	if (err == 0)
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_ID, idtext);
	if (err == 0)
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_PARAMS, digest);
	if (err == 0)
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_SOURCE, src.text);
	if (err == 0)
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_ON_DELETE,
					     objfs_csi_on_delete_name(p.policy));
	if (err == 0 && p.policy == OBJFS_CSI_ON_DELETE_ARCHIVE) {
		v = p.archive_prefix != NULL ? p.archive_prefix : OBJFS_ARCHIVE_DEFAULT;
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_ARCHIVE, v);
		if (err == 0)
			err = archive_dest(id.path, v, dst, sizeof(dst));
		if (err == 0)
			err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_ARCHIVE_TO, dst);
	}
	for (size_t i = 0; err == 0 && i < ctxkv.n; i++)
		err = objfs_volrec_set_param(&rec, ctxkv.items[i].key,
					     ctxkv.items[i].value);
	if (err != 0) {
		code = objfs_ctl_oom(st);
		goto out;
	}
	/* Created, never replaced: a concurrent create (another controller)
	 * that wrote it first wins; the retry answers from its record. */
	err = objfs_volrec_create_at(root.store, id.path, &rec);
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
		   idtext, rq->name, cap, src.text[0] != '\0' ? ", from " : "", src.text);

answer:
	r = objfs_pb_new(&csi__v1__create_volume_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL || volume_new(idtext, rec.capacity_bytes, &rec.params,
				    &r->volume) != 0) {
		code = objfs_ctl_oom(st);
		goto out;
	}
	code = OBJFS_RPC_OK;
out:
	/* A create that failed after writing the index (its record is not
	 * written: that is the last step) takes back what it wrote, so a
	 * failed CreateVolume leaves nothing behind.  Should the undo fail
	 * too, the index entry stays and a retry or DeleteVolume finishes. */
	if (code != OBJFS_RPC_OK && indexed)
		create_undo(csi, &root, &id, idtext, rq->name, src.text[0] != '\0');
	if (locked)
		objfs_ctl_unclaim(csi, locks, 3);
	objfs_csi_root_close(&root);
	objfs_volrec_release(&rec);
	objfs_kv_release(&ctxkv);
	objfs_kv_release(&ixkv);
	return code;
}

/* ---- DeleteVolume ----------------------------------------------------- */

enum objfs_rpc_code objfs_csi_delete_volume(void *ctx, const ProtobufCMessage *req,
					    ProtobufCMessage **resp,
					    struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__DeleteVolumeRequest *rq = (const Csi__V1__DeleteVolumeRequest *)req;
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_id id;
	struct objfs_csi_root root;
	char key[OBJFS_KEY_MAX], prefix[OBJFS_KEY_MAX], dst[OBJFS_KEY_MAX];
	char lk_id[OBJFS_ID_MAX + 8];
	const char *locks[1] = { lk_id };
	const char *policy, *archive;
	enum objfs_rpc_code code;
	bool locked = false, skip;
	uint64_t n = 0;
	int err;

	memset(&root, 0, sizeof(root));
	code = objfs_ctl_id_for_delete(rq->volume_id, OBJFS_ID_VOLUME, "volume_id", &id, st);
	if (code == OBJFS_RPC_NOT_FOUND) {
		objfs_info(csi->log, SUB, "delete volume: %s", st->msg);
		goto done;
	}
	if (code != OBJFS_RPC_OK)
		return code;
	snprintf(lk_id, sizeof(lk_id), "v:%s", rq->volume_id);
	code = objfs_ctl_claim(csi, locks, 1, "volume", rq->volume_id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	locked = true;
	code = objfs_csi_root_open_by_id(csi, &id, rq->volume_id, (void *const *)rq->secrets,
					 rq->n_secrets, &root, st);
	if (code == OBJFS_RPC_NOT_FOUND) {
		objfs_warn(csi->log, SUB, "delete volume: %s", st->msg);
		goto done;
	}
	if (code != OBJFS_RPC_OK)
		goto out;

	objfs_volrec_key(id.path, key, sizeof(key));
	objfs_ctl_vol_prefix(&id, prefix, sizeof(prefix));
	err = objfs_volrec_load_at(root.store, id.path, &rec);
	if (err != 0 && err != ENOENT) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the record of", rq->volume_id);
		goto out;
	}
	if (err == ENOENT) {
		code = objfs_ctl_delete_unrecorded(csi, OBJFS_CATALOG_VOLUME, rq->volume_id,
						   &skip, st);
		if (code != OBJFS_RPC_OK)
			goto out;
		if (skip)
			goto done;
	}
	policy = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ON_DELETE);
	if (volrec_retained(&rec)) {
		/* Already deleted with retain: only the index may be left. */
	} else if (policy != NULL && strcmp(policy, "retain") == 0) {
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_STATE,
					     OBJFS_VOLREC_STATE_RETAINED);
		if (err == 0)
			err = objfs_volrec_store_at(root.store, id.path, &rec);
		if (err != 0) {
			code = objfs_ctl_store_fail(csi, st, err, "cannot retain", rq->volume_id);
			goto out;
		}
		objfs_info(csi->log, SUB, "deleted volume %s, data retained", rq->volume_id);
	} else {
		if (policy != NULL && strcmp(policy, "archive") == 0) {
			archive = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ARCHIVE);
			if (archive == NULL)
				archive = OBJFS_ARCHIVE_DEFAULT;
			/* Under the base prefix; a record without archiveTo
			 * (made before) archives where it always did.  The
			 * place is computed, never read from the record. */
			if (objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ARCHIVE_TO) != NULL)
				archive_dest(id.path, archive, dst, sizeof(dst) - 1);
			else
				snprintf(dst, sizeof(dst) - 1, "%s/%s", archive, id.path);
			strcat(dst, "/");
			/* The record too, so the archive says what it was. */
			err = objfs_ctl_tree_copy(csi->controller, root.store, prefix, dst,
						  NULL, NULL);
			if (err != 0) {
				code = objfs_ctl_store_fail(csi, st, err, "cannot archive", rq->volume_id);
				goto out;
			}
		}
		err = objfs_ctl_tree_delete(csi->controller, root.store, prefix, objfs_ctl_vol_skip, &n);
		if (err == 0)
			err = objfs_store_del(root.store, key);
		if (err != 0) {
			code = objfs_ctl_store_fail(csi, st, err, "cannot delete the objects of", rq->volume_id);
			goto out;
		}
		objfs_info(csi->log, SUB, "deleted volume %s (%" PRIu64 " objects%s)",
			   rq->volume_id, n,
			   policy != NULL && strcmp(policy, "archive") == 0 ? ", archived" : "");
	}
	err = objfs_catalog_remove(csi->store, OBJFS_CATALOG_VOLUME, rq->volume_id,
				   rec.name);
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot update the index for", rq->volume_id);
		goto out;
	}
done:
	*resp = objfs_pb_new(&csi__v1__delete_volume_response__descriptor);
	code = *resp != NULL ? OBJFS_RPC_OK : objfs_ctl_oom(st);
out:
	if (locked)
		objfs_ctl_unclaim(csi, locks, 1);
	objfs_csi_root_close(&root);
	objfs_volrec_release(&rec);
	return code;
}

/* ---- ValidateVolumeCapabilities --------------------------------------- */

static int copy_message(const ProtobufCMessage *m, ProtobufCMessage **out)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len > 0 ? len : 1);

	*out = NULL;
	if (buf == NULL)
		return ENOMEM;
	protobuf_c_message_pack(m, buf);
	*out = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	free(buf);
	return *out != NULL ? 0 : ENOMEM;
}

enum objfs_rpc_code objfs_csi_validate_volume_capabilities(void *ctx, const ProtobufCMessage *req,
							   ProtobufCMessage **resp,
							   struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__ValidateVolumeCapabilitiesRequest *rq =
		(const Csi__V1__ValidateVolumeCapabilitiesRequest *)req;
	Csi__V1__ValidateVolumeCapabilitiesResponse *r;
	Csi__V1__ValidateVolumeCapabilitiesResponse__Confirmed *cf;
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_id id;
	struct objfs_csi_root root;
	char msg[OBJFS_RPC_MSG_MAX], digest[HASH_HEX + 1];
	char ctxkey[OBJFS_KV_KEY_MAX + 8];
	ProtobufCMessage *copy;
	enum objfs_rpc_code code;
	struct objfs_csi_params p;
	const char *v;
	size_t i;
	int err;

	memset(&root, 0, sizeof(root));
	code = objfs_ctl_id_for_lookup(rq->volume_id, OBJFS_ID_VOLUME, "volume_id", &id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (rq->n_volume_capabilities == 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_capabilities is required");
	code = objfs_csi_root_open_by_id(csi, &id, rq->volume_id, (void *const *)rq->secrets,
					 rq->n_secrets, &root, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	err = objfs_ctl_volrec_load_live(root.store, &id, &rec);
	if (err == ENOENT) {
		code = objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "volume %s does not exist",
				      rq->volume_id);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the record of", rq->volume_id);
		goto out;
	}
	r = objfs_pb_new(&csi__v1__validate_volume_capabilities_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL) {
		code = objfs_ctl_oom(st);
		goto out;
	}
	msg[0] = '\0';
	code = objfs_csi_caps_check(rq->volume_capabilities, rq->n_volume_capabilities,
				    "volume_capabilities[]", msg, sizeof(msg));
	if (code == OBJFS_RPC_INVALID_ARGUMENT) {
		code = objfs_rpc_fail(st, code, "%s", msg);
		goto out;
	}
	if (code != OBJFS_RPC_OK) {
		code = OBJFS_RPC_OK;
		goto unconfirmed;
	}
	for (i = 0; i < rq->n_volume_context; i++) {
		snprintf(ctxkey, sizeof(ctxkey), "%s%s", OBJFS_VOLREC_CTX,
			 rq->volume_context[i]->key);
		v = objfs_volrec_get_param(&rec, ctxkey);
		if (v == NULL || strcmp(v, rq->volume_context[i]->value) != 0) {
			snprintf(msg, sizeof(msg), "volume_context key %.64s does not match the volume's",
				 rq->volume_context[i]->key);
			goto unconfirmed;
		}
	}
	for (i = 0; i < rec.params.n; i++) {
		const char *k = rec.params.items[i].key;
		size_t plen = strlen(OBJFS_VOLREC_CTX);

		if (strncmp(k, OBJFS_VOLREC_CTX, plen) == 0 && rq->n_volume_context > 0 &&
		    objfs_pb_map_get((void *const *)rq->volume_context,
				     rq->n_volume_context, k + plen) == NULL) {
			snprintf(msg, sizeof(msg), "volume_context lacks key %.64s of the volume",
				 k + plen);
			goto unconfirmed;
		}
	}
	if (rq->n_parameters > 0) {
		struct objfs_rpc_status pst;

		if (objfs_csi_params_parse((void *const *)rq->parameters, rq->n_parameters, &p,
					   &pst) != OBJFS_RPC_OK) {
			snprintf(msg, sizeof(msg), "%s", pst.msg);
			goto unconfirmed;
		}
		objfs_csi_params_digest(&p, digest);
		v = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_PARAMS);
		if (v == NULL || strcmp(v, digest) != 0) {
			snprintf(msg, sizeof(msg), "parameters differ from the volume's");
			goto unconfirmed;
		}
	}
	if (rq->n_mutable_parameters > 0) {
		snprintf(msg, sizeof(msg), "mutable_parameters are not supported");
		goto unconfirmed;
	}
	cf = objfs_pb_new(&csi__v1__validate_volume_capabilities_response__confirmed__descriptor);
	r->confirmed = cf;
	if (cf == NULL) {
		code = objfs_ctl_oom(st);
		goto out;
	}
	for (i = 0; i < rq->n_volume_capabilities; i++) {
		if (copy_message(&rq->volume_capabilities[i]->base, &copy) != 0 ||
		    objfs_pb_append((void ***)&cf->volume_capabilities,
				    &cf->n_volume_capabilities, copy) != 0) {
			if (copy != NULL)
				protobuf_c_message_free_unpacked(copy, NULL);
			code = objfs_ctl_oom(st);
			goto out;
		}
	}
	for (i = 0; i < rq->n_volume_context; i++) {
		if (objfs_pb_map_add((void ***)&cf->volume_context, &cf->n_volume_context,
				     &csi__v1__validate_volume_capabilities_response__confirmed__volume_context_entry__descriptor,
				     rq->volume_context[i]->key,
				     rq->volume_context[i]->value) != 0) {
			code = objfs_ctl_oom(st);
			goto out;
		}
	}
	for (i = 0; i < rq->n_parameters; i++) {
		if (objfs_pb_map_add((void ***)&cf->parameters, &cf->n_parameters,
				     &csi__v1__validate_volume_capabilities_response__confirmed__parameters_entry__descriptor,
				     rq->parameters[i]->key, rq->parameters[i]->value) != 0) {
			code = objfs_ctl_oom(st);
			goto out;
		}
	}
	goto out;
unconfirmed:
	if (objfs_pb_set_str(&r->message, msg) != 0)
		code = objfs_ctl_oom(st);
out:
	objfs_csi_root_close(&root);
	objfs_volrec_release(&rec);
	return code;
}

/* ---- volume status (ListVolumes, ControllerGetVolume) ----------------- */

/* Reads what is known of a volume from its index entry idx (may be NULL):
 * *vol and *cond are set on OK.  ENOENT when the volume is not live. */
static int volume_status(struct objfs_csi *csi, const char *idtext,
			 const struct objfs_kv *idx, Csi__V1__Volume **vol,
			 Csi__V1__VolumeCondition **cond)
{
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_rpc_status st;
	struct objfs_id id;
	struct objfs_csi_root root;
	struct objfs_csi_conn conn;
	char msg[OBJFS_RPC_MSG_MAX + 64];
	bool abnormal = true;
	int err;

	*vol = NULL;
	*cond = NULL;
	memset(&root, 0, sizeof(root));
	if (objfs_id_parse(idtext, &id) != 0 || id.type != OBJFS_ID_VOLUME)
		return ENOENT;
	memset(&conn, 0, sizeof(conn));
	if (id.store == OBJFS_ID_BUCKET)
		objfs_csi_conn_resolve(csi, idx, NULL, NULL, 0, &conn);
	if (id.store == OBJFS_ID_BUCKET && idx == NULL && conn.endpoint[0] == '\0')
		return ENOENT;   /* unknown, and nowhere to look */
	if (id.store == OBJFS_ID_BUCKET && (csi->cfg.store.s3.access_key == NULL ||
					    csi->cfg.store.s3.access_key[0] == '\0')) {
		/* Keys come with the secrets, which this call lacks. */
		err = EIO;
		abnormal = false;
		snprintf(msg, sizeof(msg), "condition not checked: the controller has no keys of its own for bucket %s and this call carries no secrets",
			 id.bucket);
	} else if (objfs_csi_root_open(csi, &id, &conn, NULL, 0, &root, &st) != OBJFS_RPC_OK) {
		err = EIO;
		snprintf(msg, sizeof(msg), "cannot reach the volume's store: %s", st.msg);
		if (st.code == OBJFS_RPC_PERMISSION_DENIED ||
		    st.code == OBJFS_RPC_UNAUTHENTICATED) {
			abnormal = false;
			snprintf(msg, sizeof(msg), "condition not checked: bucket %s refuses the controller's own keys and this call carries no secrets",
				 id.bucket);
		}
	} else {
		err = objfs_ctl_volrec_load_live(root.store, &id, &rec);
		if (err == 0) {
			abnormal = false;
			snprintf(msg, sizeof(msg), "volume record readable in its store");
		} else if (err == EACCES || err == EPERM) {
			/* The bucket takes keys from the secrets, which this
			 * call does not carry: unknown is not abnormal. */
			abnormal = false;
			snprintf(msg, sizeof(msg), "condition not checked: bucket %s refuses the controller's own keys and this call carries no secrets",
				 id.bucket);
		} else {
			snprintf(msg, sizeof(msg), "cannot read the volume record: %s",
				 objfs_strerror(err));
		}
	}
	objfs_csi_root_close(&root);
	if (err == ENOENT) {
		objfs_volrec_release(&rec);
		return ENOENT;
	}
	/* A store that does not answer: report the volume with what the
	 * index knows. */
	if (err != 0 && idx != NULL)
		err = volume_new(idtext, objfs_catalog_capacity(idx), idx, vol);
	else if (err != 0)
		err = EIO;
	else
		err = volume_new(idtext, rec.capacity_bytes, &rec.params, vol);
	objfs_volrec_release(&rec);
	if (err == 0)
		err = condition_new(abnormal, msg, cond);
	if (err != 0) {
		if (*vol != NULL)
			protobuf_c_message_free_unpacked(&(*vol)->base, NULL);
		*vol = NULL;
	}
	return err;
}

enum objfs_rpc_code objfs_csi_controller_get_volume(void *ctx, const ProtobufCMessage *req,
						    ProtobufCMessage **resp,
						    struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__ControllerGetVolumeRequest *rq =
		(const Csi__V1__ControllerGetVolumeRequest *)req;
	Csi__V1__ControllerGetVolumeResponse *r;
	struct objfs_kv idx = OBJFS_KV_INIT;
	struct objfs_id id;
	enum objfs_rpc_code code;
	int err;

	code = objfs_ctl_id_for_lookup(rq->volume_id, OBJFS_ID_VOLUME, "volume_id", &id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	r = objfs_pb_new(&csi__v1__controller_get_volume_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return objfs_ctl_oom(st);
	r->status = objfs_pb_new(&csi__v1__controller_get_volume_response__volume_status__descriptor);
	if (r->status == NULL)
		return objfs_ctl_oom(st);
	if (objfs_catalog_load(csi->store, OBJFS_CATALOG_VOLUME, rq->volume_id, &idx) != 0)
		objfs_kv_release(&idx);
	err = volume_status(csi, rq->volume_id, idx.n > 0 ? &idx : NULL, &r->volume,
			    &r->status->volume_condition);
	objfs_kv_release(&idx);
	if (err == ENOENT)
		return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "volume %s does not exist",
				      rq->volume_id);
	if (err == EIO)
		return objfs_rpc_fail(st, OBJFS_RPC_UNAVAILABLE,
				      "volume %s: its store does not answer", rq->volume_id);
	if (err != 0)
		return objfs_ctl_oom(st);
	return OBJFS_RPC_OK;
}

struct list_volumes_ctx {
	struct objfs_csi *csi;
	Csi__V1__ListVolumesResponse *r;
};

static int list_volume_one(void *arg, const char *id, const struct objfs_kv *entry,
			   bool *taken)
{
	struct list_volumes_ctx *lc = arg;
	Csi__V1__ListVolumesResponse__Entry *e;
	Csi__V1__Volume *vol;
	Csi__V1__VolumeCondition *cond;
	int err;

	err = volume_status(lc->csi, id, entry, &vol, &cond);
	if (err == ENOENT)
		return 0;
	if (err != 0)
		return err;
	e = objfs_pb_new(&csi__v1__list_volumes_response__entry__descriptor);
	if (e == NULL)
		goto nomem;
	e->volume = vol;
	vol = NULL;
	e->status = objfs_pb_new(&csi__v1__list_volumes_response__volume_status__descriptor);
	if (e->status == NULL)
		goto nomem;
	e->status->volume_condition = cond;
	cond = NULL;
	if (objfs_pb_append((void ***)&lc->r->entries, &lc->r->n_entries, e) != 0)
		goto nomem;
	*taken = true;
	return 0;
nomem:
	if (e != NULL)
		protobuf_c_message_free_unpacked(&e->base, NULL);
	if (vol != NULL)
		protobuf_c_message_free_unpacked(&vol->base, NULL);
	if (cond != NULL)
		protobuf_c_message_free_unpacked(&cond->base, NULL);
	return ENOMEM;
}

enum objfs_rpc_code objfs_csi_list_volumes(void *ctx, const ProtobufCMessage *req,
					   ProtobufCMessage **resp,
					   struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__ListVolumesRequest *rq = (const Csi__V1__ListVolumesRequest *)req;
	Csi__V1__ListVolumesResponse *r;
	struct list_volumes_ctx lc;
	enum objfs_rpc_code code;
	char *next = NULL;

	r = objfs_pb_new(&csi__v1__list_volumes_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return objfs_ctl_oom(st);
	lc.csi = csi;
	lc.r = r;
	code = objfs_ctl_index_walk(csi, OBJFS_CATALOG_VOLUME, rq->starting_token, rq->max_entries,
				    list_volume_one, &lc, &next, st);
	if (code == OBJFS_RPC_OK && next != NULL && objfs_pb_set_str(&r->next_token, next) != 0)
		code = objfs_ctl_oom(st);
	free(next);
	return code;
}

/* ---- GetCapacity ------------------------------------------------------ */

/* Free bytes of the file system holding the local default store, or 0
 * with ENOTSUP when the default store is not local. */
static int local_free_bytes(struct objfs_csi *csi, uint64_t *out)
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

enum objfs_rpc_code objfs_csi_get_capacity(void *ctx, const ProtobufCMessage *req,
					   ProtobufCMessage **resp,
					   struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__GetCapacityRequest *rq = (const Csi__V1__GetCapacityRequest *)req;
	Csi__V1__GetCapacityResponse *r;
	enum objfs_rpc_code code;
	struct objfs_csi_params p;
	char msg[256];
	uint64_t avail = 0;
	int err;

	code = objfs_csi_params_parse((void *const *)rq->parameters, rq->n_parameters, &p, st);
	if (code != OBJFS_RPC_OK)
		return code;
	r = objfs_pb_new(&csi__v1__get_capacity_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return objfs_ctl_oom(st);
	/* Capabilities objfs does not offer leave no capacity for them. */
	if (objfs_csi_caps_check(rq->volume_capabilities, rq->n_volume_capabilities,
				 "volume_capabilities[]", msg, sizeof(msg)) != OBJFS_RPC_OK)
		return OBJFS_RPC_OK;
	/* A local default store reports its file system's free space.  S3
	 * reports no capacity at all: available_capacity stays 0, the only
	 * value proto3 has for "not reported" (CSIDriver storageCapacity
	 * should stay false for S3-backed classes). */
	if (p.bucket == NULL) {
		err = local_free_bytes(csi, &avail);
		if (err == 0)
			r->available_capacity = avail > INT64_MAX ? INT64_MAX : (int64_t)avail;
		else if (err != ENOTSUP)
			objfs_warn(csi->log, SUB, "get capacity: %s", objfs_strerror(err));
	}
	return OBJFS_RPC_OK;
}

/* ---- ControllerGetCapabilities ---------------------------------------- */

enum objfs_rpc_code objfs_csi_controller_get_capabilities(void *ctx, const ProtobufCMessage *req,
							  ProtobufCMessage **resp,
							  struct objfs_rpc_status *st)
{
	static const Csi__V1__ControllerServiceCapability__RPC__Type types[] = {
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_VOLUME,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__LIST_VOLUMES,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__GET_CAPACITY,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__EXPAND_VOLUME,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_SNAPSHOT,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__LIST_SNAPSHOTS,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CLONE_VOLUME,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_CONDITION,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__SINGLE_NODE_MULTI_WRITER,
		/* last: only with cfg.advertise_get_snapshot */
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__GET_SNAPSHOT,
	};
	struct objfs_csi *csi = ctx;
	Csi__V1__ControllerGetCapabilitiesResponse *r;
	Csi__V1__ControllerServiceCapability *cap;
	size_t i, n = sizeof(types) / sizeof(types[0]);

	(void)req;
	if (!csi->cfg.advertise_get_snapshot)
		n--;
	r = objfs_pb_new(&csi__v1__controller_get_capabilities_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return objfs_ctl_oom(st);
	for (i = 0; i < n; i++) {
		cap = objfs_pb_new(&csi__v1__controller_service_capability__descriptor);
		if (cap == NULL)
			return objfs_ctl_oom(st);
		cap->type_case = CSI__V1__CONTROLLER_SERVICE_CAPABILITY__TYPE_RPC;
		cap->rpc = objfs_pb_new(&csi__v1__controller_service_capability__rpc__descriptor);
		if (cap->rpc == NULL ||
		    objfs_pb_append((void ***)&r->capabilities, &r->n_capabilities, cap) != 0) {
			protobuf_c_message_free_unpacked(&cap->base, NULL);
			return objfs_ctl_oom(st);
		}
		cap->rpc->type = types[i];
	}
	return OBJFS_RPC_OK;
}

/* ---- ControllerExpandVolume ------------------------------------------- */

enum objfs_rpc_code objfs_csi_controller_expand_volume(void *ctx, const ProtobufCMessage *req,
						       ProtobufCMessage **resp,
						       struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__ControllerExpandVolumeRequest *rq =
		(const Csi__V1__ControllerExpandVolumeRequest *)req;
	Csi__V1__ControllerExpandVolumeResponse *r;
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_id id;
	struct objfs_csi_root root;
	char msg[256];
	char lk_id[OBJFS_ID_MAX + 8];
	const char *locks[1] = { lk_id };
	enum objfs_rpc_code code;
	uint64_t have = 0, want, lim;
	bool locked = false;
	int err;

	memset(&root, 0, sizeof(root));
	code = objfs_ctl_id_for_lookup(rq->volume_id, OBJFS_ID_VOLUME, "volume_id", &id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (rq->capacity_range == NULL)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "capacity_range is required");
	if (rq->capacity_range->required_bytes < 0 || rq->capacity_range->limit_bytes < 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "capacity_range: required_bytes and limit_bytes must not be negative");
	if (rq->capacity_range->required_bytes == 0 && rq->capacity_range->limit_bytes == 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "capacity_range: required_bytes or limit_bytes is required");
	if (rq->volume_capability != NULL &&
	    objfs_csi_cap_check(rq->volume_capability, "volume_capability", msg,
				sizeof(msg)) != OBJFS_RPC_OK)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "volume_capability: %s", msg);
	want = (uint64_t)rq->capacity_range->required_bytes;
	lim = (uint64_t)rq->capacity_range->limit_bytes;
	if (want == 0)
		want = lim;
	if (lim != 0 && want > lim)
		return objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
				      "capacity_range: required_bytes exceeds limit_bytes");

	snprintf(lk_id, sizeof(lk_id), "v:%s", rq->volume_id);
	code = objfs_ctl_claim(csi, locks, 1, "volume", rq->volume_id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	locked = true;
	code = objfs_csi_root_open_by_id(csi, &id, rq->volume_id, (void *const *)rq->secrets,
					 rq->n_secrets, &root, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	err = objfs_ctl_volrec_load_live(root.store, &id, &rec);
	if (err == ENOENT) {
		code = objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "volume %s does not exist",
				      rq->volume_id);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the record of", rq->volume_id);
		goto out;
	}
	have = rec.capacity_bytes;
	if (have < want) {
		if (lim != 0 && have > lim) {
			code = objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
					      "volume %s is larger than limit_bytes: shrinking is not supported",
					      rq->volume_id);
			goto out;
		}
		rec.capacity_bytes = want;
		err = objfs_volrec_store_at(root.store, id.path, &rec);
		if (err != 0) {
			code = objfs_ctl_store_fail(csi, st, err, "cannot write the record of", rq->volume_id);
			goto out;
		}
		err = objfs_catalog_set_capacity(csi->store, rq->volume_id, want);
		if (err != 0)
			objfs_warn(csi->log, SUB, "volume %s: cannot update the index: %s",
				   rq->volume_id, objfs_strerror(err));
		objfs_info(csi->log, SUB, "expanded volume %s from %" PRIu64 " to %" PRIu64 " bytes",
			   rq->volume_id, have, want);
		have = want;
	}
	r = objfs_pb_new(&csi__v1__controller_expand_volume_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL) {
		code = objfs_ctl_oom(st);
		goto out;
	}
	r->capacity_bytes = have > INT64_MAX ? INT64_MAX : (int64_t)have;
	r->node_expansion_required = 0;
	code = OBJFS_RPC_OK;
out:
	if (locked)
		objfs_ctl_unclaim(csi, locks, 1);
	objfs_csi_root_close(&root);
	objfs_volrec_release(&rec);
	return code;
}

