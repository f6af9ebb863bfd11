/*
 * snapshots.c - the snapshot RPCs of the CSI Controller service
 * (CreateSnapshot, DeleteSnapshot, GetSnapshot, ListSnapshots; see
 * controller.h for where snapshots live).
 *
 * A snapshot is absent or ready: its record (catalog.h) is written LAST,
 * after the copy of the volume's objects, and removed after them.  A
 * snapshot is immutable, so once its index entry is marked ready, what
 * the entry says still holds when the snapshot's bucket does not answer.
 * CreateSnapshot claims the snapshot's name and id and its source volume
 * (no delete or second copy of the volume while it is cut).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/errors.h"
#include "common/log.h"
#include "csi.pb-c.h"
#include "csi/controller.h"
#include "csi/controller_int.h"
#include "csi/driver.h"
#include "csi/pb.h"
#include "csi/roots.h"
#include "csi/volid.h"
#include "csi/volumes.h"
#include "volume/catalog.h"
#include "volume/kvtext.h"
#include "volume/layout.h"
#include "volume/volrec.h"

#define SUB OBJFS_CTL_LOG
#define NAME_MAX_LEN OBJFS_CTL_NAME_MAX

static int snapshot_new(const char *id, const struct objfs_snaprec *rec,
			Csi__V1__Snapshot **out)
{
	Csi__V1__Snapshot *s = objfs_pb_new(&csi__v1__snapshot__descriptor);
	uint64_t sec = rec->created_sec, ns = rec->created_nsec;
	int err;

	*out = NULL;
	if (s == NULL)
		return ENOMEM;
	if (rec->size_bytes <= INT64_MAX)
		s->size_bytes = (int64_t)rec->size_bytes;
	err = objfs_pb_set_str(&s->snapshot_id, id);
	if (err == 0)
		err = objfs_pb_set_str(&s->source_volume_id, rec->source_volume_id);
	s->creation_time = objfs_pb_new(&google__protobuf__timestamp__descriptor);
	if (s->creation_time == NULL)
		err = ENOMEM;
	if (err == 0) {
		s->creation_time->seconds = (int64_t)(sec <= INT64_MAX ? sec : 0);
		s->creation_time->nanos = (int32_t)(ns < 1000000000ULL ? ns : 0);
		s->ready_to_use = 1;
	}
	if (err != 0) {
		protobuf_c_message_free_unpacked(&s->base, NULL);
		return err;
	}
	*out = s;
	return 0;
}

enum objfs_rpc_code objfs_csi_create_snapshot(void *ctx, const ProtobufCMessage *req,
					      ProtobufCMessage **resp,
					      struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__CreateSnapshotRequest *rq = (const Csi__V1__CreateSnapshotRequest *)req;
	Csi__V1__CreateSnapshotResponse *r;
	struct objfs_snaprec rec = OBJFS_SNAPREC_INIT;
	struct objfs_volrec vrec = OBJFS_VOLREC_INIT;
	struct objfs_kv extra = OBJFS_KV_INIT;
	struct objfs_s3_conn conn = OBJFS_S3_CONN_INIT;     /* the source's */
	struct objfs_id vid, sid;
	struct objfs_csi_root root;
	char sidtext[OBJFS_ID_MAX + 1];
	char src[OBJFS_KEY_MAX], dst[OBJFS_KEY_MAX], other[OBJFS_ID_MAX + 1];
	char lk_name[NAME_MAX_LEN + 8], lk_id[OBJFS_ID_MAX + 8];
	char lk_src[OBJFS_ID_MAX + 8], base[OBJFS_ID_MAX + 1];
	const char *locks[3] = { lk_name, lk_id, lk_src };
	size_t base_len;
	const char *v;
	enum objfs_rpc_code code;
	uint64_t bytes = 0;
	bool locked = false;
	int err;

	memset(&root, 0, sizeof(root));
	if (rq->name == NULL || rq->name[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "name is required");
	if (strlen(rq->name) > NAME_MAX_LEN || objfs_id_name_banned(rq->name))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "name is too long or holds control characters");
	if (rq->source_volume_id == NULL || rq->source_volume_id[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "source_volume_id is required");
	code = objfs_ctl_id_for_lookup(rq->source_volume_id, OBJFS_ID_VOLUME, "source_volume_id",
				       &vid, st);
	if (code != OBJFS_RPC_OK)
		return code;
	/* Under the source volume's base prefix (layout.h). */
	base_len = objfs_ctl_base_len(vid.path);
	snprintf(base, sizeof(base), "%.*s", (int)base_len, vid.path);
	code = objfs_ctl_id_make(OBJFS_ID_SNAPSHOT, vid.store == OBJFS_ID_BUCKET ? vid.bucket : NULL,
				 base_len > 0 ? base : NULL, rq->name, &sid, sidtext,
				 sizeof(sidtext), st);
	if (code != OBJFS_RPC_OK)
		return code;

	snprintf(lk_name, sizeof(lk_name), "sn:%s", rq->name);
	snprintf(lk_id, sizeof(lk_id), "s:%s", sidtext);
	/* The source volume too: no delete or second copy while cutting. */
	snprintf(lk_src, sizeof(lk_src), "v:%s", rq->source_volume_id);
	code = objfs_ctl_claim(csi, locks, 3, "snapshot", rq->name, st);
	if (code != OBJFS_RPC_OK)
		return code;
	locked = true;

	code = objfs_csi_root_open_by_id(csi, &vid, rq->source_volume_id,
					 (void *const *)rq->secrets, rq->n_secrets, &root, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	err = objfs_catalog_name_check(csi->store, OBJFS_CATALOG_SNAPSHOT, rq->name,
				       sidtext, other, sizeof(other));
	if (err == EEXIST) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "snapshot %.128s already exists as %s, of another volume",
				      rq->name, other);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the index for", sidtext);
		goto out;
	}
	err = objfs_snaprec_load(root.store, sid.path, &rec);
	if (err == 0) {
		v = rec.source_volume_id;
		if (v == NULL || strcmp(v, rq->source_volume_id) != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "snapshot %.128s already exists, of another volume",
					      rq->name);
			goto out;
		}
		v = rec.name;
		if (v == NULL || strcmp(v, rq->name) != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "the prefix of snapshot %.128s holds another snapshot",
					      rq->name);
			goto out;
		}
		goto answer;
	}
	if (err != ENOENT) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the record of", sidtext);
		goto out;
	}
	objfs_snaprec_release(&rec);
	err = objfs_ctl_volrec_load_live(root.store, &vid, &vrec);
	if (err == ENOENT) {
		code = objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "source volume %s does not exist",
				      rq->source_volume_id);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the record of", rq->source_volume_id);
		goto out;
	}
	/* The snapshot's entry names the source (for listings by volume) and
	 * a bucket's connection (for id-only calls). */
	err = objfs_snaprec_set(&rec.source_volume_id, rq->source_volume_id);
	if (err == 0)
		err = objfs_snaprec_entry(&rec, &extra);
	if (err == 0 && vid.store == OBJFS_ID_BUCKET) {
		(void)objfs_s3_conn_add(&conn, objfs_csi_volrec_conn_get, &vrec);
		err = objfs_s3_conn_write(&conn, objfs_csi_kv_conn_set, &extra);
	}
	if (err == 0)
		err = objfs_catalog_add(csi->store, OBJFS_CATALOG_SNAPSHOT, sidtext,
					rq->name, &extra);
	if (err == EEXIST) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "the name %.128s was taken concurrently by another call; retry",
				      rq->name);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot write the index for", sidtext);
		goto out;
	}
	/* The cut: the moment the copy starts. */
	err = objfs_snaprec_set_cut_now(&rec);
	if (err != 0) {
		code = objfs_ctl_oom(st);
		goto out;
	}
	objfs_ctl_vol_prefix(&vid, src, sizeof(src));
	objfs_snapshot_prefix(sid.path, dst, sizeof(dst));
	err = objfs_ctl_tree_copy(csi->controller, root.store, src, dst, objfs_ctl_vol_skip, &bytes);
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot copy the volume into snapshot", sidtext);
		goto out;
	}
	err = objfs_snaprec_set(&rec.name, rq->name);
	if (err == 0)
		err = objfs_snaprec_set(&rec.id, sidtext);
	rec.size_bytes = bytes;
	rec.source_capacity_bytes = vrec.capacity_bytes;
	if (err != 0) {
		code = objfs_ctl_oom(st);
		goto out;
	}
	err = objfs_snaprec_store(root.store, sid.path, &rec);
	if (err == EEXIST) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "snapshot %s was cut concurrently by another call; retry",
				      sidtext);
		goto out;
	}
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot write the record of", sidtext);
		goto out;
	}
	/* The index learns what the record says, so that listing works
	 * when the bucket refuses the plugin's own keys.  Best effort. */
	err = objfs_catalog_snapshot_ready(csi->store, sidtext, &rec);
	if (err != 0)
		objfs_warn(csi->log, SUB, "snapshot %s: cannot update the index: %s",
			   sidtext, objfs_strerror(err));
	objfs_info(csi->log, SUB, "created snapshot %s of %s (%" PRIu64 " bytes)",
		   sidtext, rq->source_volume_id, bytes);
answer:
	r = objfs_pb_new(&csi__v1__create_snapshot_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL || snapshot_new(sidtext, &rec, &r->snapshot) != 0) {
		code = objfs_ctl_oom(st);
		goto out;
	}
	code = OBJFS_RPC_OK;
out:
	if (locked)
		objfs_ctl_unclaim(csi, locks, 3);
	objfs_csi_root_close(&root);
	objfs_snaprec_release(&rec);
	objfs_volrec_release(&vrec);
	objfs_kv_release(&extra);
	return code;
}

enum objfs_rpc_code objfs_csi_delete_snapshot(void *ctx, const ProtobufCMessage *req,
					      ProtobufCMessage **resp,
					      struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__DeleteSnapshotRequest *rq = (const Csi__V1__DeleteSnapshotRequest *)req;
	struct objfs_snaprec rec = OBJFS_SNAPREC_INIT;
	struct objfs_id sid;
	struct objfs_csi_root root;
	char key[OBJFS_KEY_MAX], prefix[OBJFS_KEY_MAX];
	char lk_id[OBJFS_ID_MAX + 8];
	const char *locks[1] = { lk_id };
	enum objfs_rpc_code code;
	bool locked = false, skip;
	int err;

	memset(&root, 0, sizeof(root));
	code = objfs_ctl_id_for_delete(rq->snapshot_id, OBJFS_ID_SNAPSHOT, "snapshot_id", &sid, st);
	if (code == OBJFS_RPC_NOT_FOUND) {
		objfs_info(csi->log, SUB, "delete snapshot: %s", st->msg);
		goto done;
	}
	if (code != OBJFS_RPC_OK)
		return code;
	snprintf(lk_id, sizeof(lk_id), "s:%s", rq->snapshot_id);
	code = objfs_ctl_claim(csi, locks, 1, "snapshot", rq->snapshot_id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	locked = true;
	code = objfs_csi_root_open_by_id(csi, &sid, rq->snapshot_id, (void *const *)rq->secrets,
					 rq->n_secrets, &root, st);
	if (code == OBJFS_RPC_NOT_FOUND) {
		objfs_warn(csi->log, SUB, "delete snapshot: %s", st->msg);
		goto done;
	}
	if (code != OBJFS_RPC_OK)
		goto out;
	objfs_snaprec_key(sid.path, key, sizeof(key));
	objfs_snapshot_prefix(sid.path, prefix, sizeof(prefix));
	err = objfs_snaprec_load(root.store, sid.path, &rec);
	if (err != 0 && err != ENOENT) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot read the record of", rq->snapshot_id);
		goto out;
	}
	if (err == ENOENT) {
		code = objfs_ctl_delete_unrecorded(csi, OBJFS_CATALOG_SNAPSHOT, rq->snapshot_id,
						   &skip, st);
		if (code != OBJFS_RPC_OK)
			goto out;
		if (skip)
			goto done;
	}
	{
		static const char *const keep[] = { OBJFS_SNAPREC_KEY, NULL };

		err = objfs_ctl_tree_delete(csi->controller, root.store, prefix, keep, NULL);
	}
	if (err == 0)
		err = objfs_store_del(root.store, key);
	if (err == 0)
		err = objfs_catalog_remove(csi->store, OBJFS_CATALOG_SNAPSHOT,
					   rq->snapshot_id, rec.name);
	if (err != 0) {
		code = objfs_ctl_store_fail(csi, st, err, "cannot delete snapshot", rq->snapshot_id);
		goto out;
	}
	objfs_info(csi->log, SUB, "deleted snapshot %s", rq->snapshot_id);
done:
	code = OBJFS_RPC_OK;    /* the empty reply: the dispatcher's */
out:
	if (locked)
		objfs_ctl_unclaim(csi, locks, 1);
	objfs_csi_root_close(&root);
	objfs_snaprec_release(&rec);
	return code;
}

/* Reads a snapshot's record: 0 with *snap set, ENOENT, or a store errno. */
static int snapshot_read(struct objfs_csi *csi, const char *idtext,
			 const struct objfs_kv *idx, void *const *secrets,
			 size_t n_secrets, Csi__V1__Snapshot **snap)
{
	struct objfs_snaprec rec = OBJFS_SNAPREC_INIT;
	struct objfs_rpc_status st;
	struct objfs_id sid;
	struct objfs_csi_root root;
	struct objfs_s3_conn conn = OBJFS_S3_CONN_INIT;
	int err;

	*snap = NULL;
	if (objfs_id_parse(idtext, &sid) != 0 || sid.type != OBJFS_ID_SNAPSHOT)
		return ENOENT;
	if (sid.store == OBJFS_ID_BUCKET)
		(void)objfs_csi_conn_resolve(csi, idx != NULL ? objfs_csi_kv_conn_get : NULL,
					     idx, secrets, n_secrets, &conn);
	if (sid.store == OBJFS_ID_BUCKET && idx == NULL && conn.endpoint[0] == '\0')
		return ENOENT;   /* unknown, and nowhere to look */
	if (objfs_csi_root_open(csi, &sid, &conn, secrets, n_secrets, &root, &st) != OBJFS_RPC_OK) {
		err = ECONNREFUSED;
	} else {
		err = objfs_snaprec_load(root.store, sid.path, &rec);
		if (err == 0)
			err = snapshot_new(idtext, &rec, snap);
		objfs_csi_root_close(&root);
	}
	/* The store does not answer (or refuses): a snapshot is immutable,
	 * so what the index recorded once it was ready still holds. */
	if (err != 0 && err != ENOENT && err != ENOMEM && idx != NULL &&
	    objfs_kv_get(idx, OBJFS_CATALOG_READY) != NULL) {
		objfs_debug(csi->log, SUB, "snapshot %s from the index: %s", idtext,
			    objfs_strerror(err));
		objfs_snaprec_release(&rec);
		err = objfs_snaprec_from_kv(idx, &rec);
		if (err == 0)
			err = snapshot_new(idtext, &rec, snap);
	}
	objfs_snaprec_release(&rec);
	return err;
}

enum objfs_rpc_code objfs_csi_get_snapshot(void *ctx, const ProtobufCMessage *req,
					   ProtobufCMessage **resp,
					   struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__GetSnapshotRequest *rq = (const Csi__V1__GetSnapshotRequest *)req;
	Csi__V1__GetSnapshotResponse *r;
	struct objfs_kv idx = OBJFS_KV_INIT;
	enum objfs_rpc_code code;
	struct objfs_id sid;
	int err;

	code = objfs_ctl_id_for_lookup(rq->snapshot_id, OBJFS_ID_SNAPSHOT, "snapshot_id", &sid, st);
	if (code != OBJFS_RPC_OK)
		return code;
	r = objfs_pb_new(&csi__v1__get_snapshot_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return objfs_ctl_oom(st);
	if (objfs_catalog_load(csi->store, OBJFS_CATALOG_SNAPSHOT, rq->snapshot_id,
			       &idx) != 0)
		objfs_kv_release(&idx);
	err = snapshot_read(csi, rq->snapshot_id, idx.n > 0 ? &idx : NULL,
			    (void *const *)rq->secrets, rq->n_secrets, &r->snapshot);
	objfs_kv_release(&idx);
	if (err == ENOENT)
		return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "snapshot %s does not exist",
				      rq->snapshot_id);
	if (err != 0)
		return objfs_ctl_store_fail(csi, st, err, "cannot read snapshot", rq->snapshot_id);
	return OBJFS_RPC_OK;
}

struct list_snapshots_ctx {
	struct objfs_csi *csi;
	const Csi__V1__ListSnapshotsRequest *rq;
	Csi__V1__ListSnapshotsResponse *r;
};

static int list_snapshot_add(Csi__V1__ListSnapshotsResponse *r, Csi__V1__Snapshot *snap)
{
	Csi__V1__ListSnapshotsResponse__Entry *e;

	e = objfs_pb_new(&csi__v1__list_snapshots_response__entry__descriptor);
	if (e == NULL) {
		protobuf_c_message_free_unpacked(&snap->base, NULL);
		return ENOMEM;
	}
	e->snapshot = snap;
	if (objfs_pb_append((void ***)&r->entries, &r->n_entries, e) != 0) {
		protobuf_c_message_free_unpacked(&e->base, NULL);
		return ENOMEM;
	}
	return 0;
}

static int list_snapshot_one(void *arg, const char *id, const struct objfs_kv *entry,
			     bool *taken)
{
	struct list_snapshots_ctx lc = *(struct list_snapshots_ctx *)arg;
	const char *srcv = lc.rq->source_volume_id;
	struct objfs_snaprec facts = OBJFS_SNAPREC_INIT;
	Csi__V1__Snapshot *snap;
	bool other;
	int err;

	err = objfs_snaprec_from_kv(entry, &facts);
	if (err != 0)
		return err;
	other = srcv != NULL && srcv[0] != '\0' &&
		(facts.source_volume_id == NULL ||
		 strcmp(facts.source_volume_id, srcv) != 0);
	objfs_snaprec_release(&facts);
	if (other)
		return 0;
	err = snapshot_read(lc.csi, id, entry, (void *const *)lc.rq->secrets,
			    lc.rq->n_secrets, &snap);
	if (err == ENOENT)
		return 0;
	if (err != 0)
		return err;
	err = list_snapshot_add(lc.r, snap);
	*taken = err == 0;
	return err;
}

enum objfs_rpc_code objfs_csi_list_snapshots(void *ctx, const ProtobufCMessage *req,
					     ProtobufCMessage **resp,
					     struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__ListSnapshotsRequest *rq = (const Csi__V1__ListSnapshotsRequest *)req;
	Csi__V1__ListSnapshotsResponse *r;
	struct objfs_kv idx = OBJFS_KV_INIT;
	struct list_snapshots_ctx lc;
	Csi__V1__Snapshot *snap = NULL;
	enum objfs_rpc_code code;
	struct objfs_id sid;
	char *next = NULL;
	int err;

	r = objfs_pb_new(&csi__v1__list_snapshots_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return objfs_ctl_oom(st);
	if (rq->max_entries < 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "max_entries must not be negative");
	if (rq->snapshot_id != NULL && rq->snapshot_id[0] != '\0') {
		/* One snapshot: an unknown or foreign id lists nothing. */
		if (objfs_id_parse(rq->snapshot_id, &sid) != 0 || sid.type != OBJFS_ID_SNAPSHOT)
			return OBJFS_RPC_OK;
		if (objfs_catalog_load(csi->store, OBJFS_CATALOG_SNAPSHOT,
				       rq->snapshot_id, &idx) != 0)
			objfs_kv_release(&idx);
		err = snapshot_read(csi, rq->snapshot_id, idx.n > 0 ? &idx : NULL,
				    (void *const *)rq->secrets, rq->n_secrets, &snap);
		objfs_kv_release(&idx);
		if (err == ENOENT)
			return OBJFS_RPC_OK;
		if (err != 0)
			return objfs_ctl_store_fail(csi, st, err, "cannot read snapshot", rq->snapshot_id);
		if (rq->source_volume_id != NULL && rq->source_volume_id[0] != '\0' &&
		    strcmp(snap->source_volume_id, rq->source_volume_id) != 0) {
			protobuf_c_message_free_unpacked(&snap->base, NULL);
			return OBJFS_RPC_OK;
		}
		return list_snapshot_add(r, snap) == 0 ? OBJFS_RPC_OK : objfs_ctl_oom(st);
	}
	lc.csi = csi;
	lc.rq = rq;
	lc.r = r;
	code = objfs_ctl_index_walk(csi, OBJFS_CATALOG_SNAPSHOT, rq->starting_token, rq->max_entries,
				    list_snapshot_one, &lc, &next, st);
	if (code == OBJFS_RPC_OK && next != NULL && objfs_pb_set_str(&r->next_token, next) != 0)
		code = objfs_ctl_oom(st);
	free(next);
	return code;
}
