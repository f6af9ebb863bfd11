/*
 * controller.c - the CSI Controller service: its state and the volume
 * RPCs as handlers from a protobuf request to a protobuf answer (see
 * controller.h for the layout of volumes, snapshots, records and the
 * index).
 *
 * The service's files: controller.c (state, the volume handlers),
 * controller_base.c (the helpers the others share, below them all: claims,
 * store failures, ids, prefix trees), volumes.c (the volumes' rules: what a create, delete or
 * expand does in the index and the root store, the volume record, and
 * whether a recorded volume matches a request; no protobuf type there),
 * snapshots.c (snapshot RPCs), listing.c (paged index listings and their
 * tokens), sharing controller_int.h and volumes.h; prefix trees (clones,
 * snapshots, deletes, archives) are walked, copied and deleted by
 * backend/tree.h on the service's pool; and the rules it shares or owns
 * apart: caps.h (capabilities, shared with the node), claims.h (the
 * in-progress set, shared with the node), params.h (StorageClass
 * parameters), roots.h (root stores), volume/catalog.h (the index and
 * snapshot records) and volume/volrec.h (the volume record).
 *
 * Every handler follows the same shape: check the request (INVALID_ARGUMENT
 * naming the field), parse ids (volid.c: an id objfs did not produce is
 * NOT_FOUND for lookups and INVALID_ARGUMENT for deletes, a malformed one
 * INVALID_ARGUMENT, and neither touches a store), claim the names/ids in
 * the in-progress set (ABORTED when taken) and open the root store the id
 * names (objfs_ctl_vol_begin()), call the rules (volumes.h), then pack the
 * answer.  Store errnos become gRPC codes only through
 * objfs_ctl_store_fail().
 *
 * Root stores (roots.h): the default store is borrowed from the driver; a
 * bucket store is opened per call with cfg.store_open and destroyed at
 * the end.  The states of a volume (absent, live, retained) are
 * volumes.c's; a snapshot is absent or ready (record present;
 * snapshots.c).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

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
#include "csi/volumes.h"
#include "volume/catalog.h"
#include "volume/kvtext.h"
#include "volume/volrec.h"

#define SUB OBJFS_CTL_LOG
#define HASH_HEX OBJFS_CATALOG_HASH_HEX
#define NAME_MAX_LEN OBJFS_CTL_NAME_MAX

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

/* ---- building responses ----------------------------------------------- */

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

static bool same_root(const struct objfs_id *a, const struct objfs_id *b)
{
	return a->store == b->store && strcmp(a->bucket, b->bucket) == 0;
}

/* ---- CreateVolume ----------------------------------------------------- */

/* The content source of a request into *src (text "" when none). */
static enum objfs_rpc_code source_parse(const Csi__V1__VolumeContentSource *cs,
					struct objfs_ctl_vol_source *src,
					struct objfs_rpc_status *st)
{
	memset(src, 0, sizeof(*src));
	if (cs == NULL)
		return OBJFS_RPC_OK;
	if (cs->type_case == CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT &&
	    cs->snapshot != NULL)
		return objfs_ctl_vol_source(OBJFS_ID_SNAPSHOT, cs->snapshot->snapshot_id,
					    src, st);
	if (cs->type_case == CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_VOLUME &&
	    cs->volume != NULL)
		return objfs_ctl_vol_source(OBJFS_ID_VOLUME, cs->volume->volume_id,
					    src, st);
	return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
			      "volume_content_source: snapshot or volume is required");
}

enum objfs_rpc_code objfs_csi_create_volume(void *ctx, const ProtobufCMessage *req,
					    ProtobufCMessage **resp,
					    struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__CreateVolumeRequest *rq = (const Csi__V1__CreateVolumeRequest *)req;
	const Csi__V1__CapacityRange *range = rq->capacity_range;
	Csi__V1__CreateVolumeResponse *r;
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_ctl_vol v = OBJFS_CTL_VOL_INIT;
	struct objfs_ctl_vol_source src;
	struct objfs_csi_params p;
	char digest[HASH_HEX + 1], msg[400];
	enum objfs_rpc_code code;
	uint64_t cap = 0;

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
	code = objfs_ctl_vol_capacity(range != NULL ? range->required_bytes : 0,
				      range != NULL ? range->limit_bytes : 0, 0, &cap, st);
	if (code != OBJFS_RPC_OK)
		return code;
	code = objfs_ctl_id_make(OBJFS_ID_VOLUME, p.bucket, p.base_prefix, rq->name, &v.id,
				 v.text, sizeof(v.text), st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (src.text[0] != '\0' && !same_root(&src.id, &v.id))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_content_source: the source lives in another store than the new volume (bucket parameter differs)");
	objfs_csi_params_digest(&p, digest);

	/* The name, the id and the source (no delete may empty it while it
	 * is copied) are the call's; a bucket's connection from p. */
	code = objfs_ctl_vol_begin(csi, &v, &(struct objfs_ctl_vol_how){
			.claim = true, .name = rq->name, .source = src.text, .params = &p,
			.secrets = (void *const *)rq->secrets, .n_secrets = rq->n_secrets,
		}, st);
	if (code == OBJFS_RPC_OK)
		code = objfs_ctl_vol_create(csi, &v, &(struct objfs_ctl_vol_spec){
				.name = rq->name, .params = &p, .digest = digest, .src = &src,
				.required = range != NULL ? range->required_bytes : 0,
				.limit = range != NULL ? range->limit_bytes : 0,
			}, &rec, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	r = objfs_pb_new(&csi__v1__create_volume_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL || volume_new(v.text, rec.capacity_bytes, &rec.params,
				    &r->volume) != 0)
		code = objfs_ctl_oom(st);
out:
	objfs_ctl_vol_end(csi, &v);
	objfs_volrec_release(&rec);
	return code;
}

/* ---- DeleteVolume ----------------------------------------------------- */

enum objfs_rpc_code objfs_csi_delete_volume(void *ctx, const ProtobufCMessage *req,
					    ProtobufCMessage **resp,
					    struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__DeleteVolumeRequest *rq = (const Csi__V1__DeleteVolumeRequest *)req;
	struct objfs_ctl_vol v = OBJFS_CTL_VOL_INIT;
	enum objfs_rpc_code code;

	code = objfs_ctl_vol_parse(&v, rq->volume_id, true, "volume_id", st);
	if (code == OBJFS_RPC_NOT_FOUND) {
		objfs_info(csi->log, SUB, "delete volume: %s", st->msg);
		goto done;
	}
	if (code != OBJFS_RPC_OK)
		return code;
	code = objfs_ctl_vol_begin(csi, &v, &(struct objfs_ctl_vol_how){
			.claim = true, .secrets = (void *const *)rq->secrets,
			.n_secrets = rq->n_secrets,
		}, st);
	if (code == OBJFS_RPC_NOT_FOUND) {
		objfs_warn(csi->log, SUB, "delete volume: %s", st->msg);
		goto done;
	}
	if (code == OBJFS_RPC_OK)
		code = objfs_ctl_vol_delete(csi, &v, st);
	if (code != OBJFS_RPC_OK)
		goto out;
done:
	code = OBJFS_RPC_OK;    /* the empty reply: the dispatcher's */
out:
	objfs_ctl_vol_end(csi, &v);
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

/* Why rec does not confirm the request (msg, OK), or OK with msg "" when
 * it does; RESOURCE_EXHAUSTED. */
static enum objfs_rpc_code validate_match(const Csi__V1__ValidateVolumeCapabilitiesRequest *rq,
					  const struct objfs_volrec *rec, char *msg,
					  size_t cap, struct objfs_rpc_status *st)
{
	struct objfs_ctl_vol_want want = { .n_context = rq->n_volume_context };
	struct objfs_ctl_vol_ctx *ctxs = NULL;
	struct objfs_rpc_status pst = { 0 };
	char digest[HASH_HEX + 1];
	enum objfs_ctl_vol_diff diff;
	struct objfs_csi_params p;
	const char *key;
	size_t i;

	msg[0] = '\0';
	if (want.n_context > 0) {
		ctxs = calloc(want.n_context, sizeof(*ctxs));
		if (ctxs == NULL)
			return objfs_ctl_oom(st);
		for (i = 0; i < want.n_context; i++) {
			ctxs[i].key = rq->volume_context[i]->key;
			ctxs[i].value = rq->volume_context[i]->value;
		}
		want.context = ctxs;
	}
	/* The volume_context first, then the parameters (when given). */
	if (rq->n_parameters > 0 &&
	    objfs_csi_params_parse((void *const *)rq->parameters, rq->n_parameters, &p,
				   &pst) == OBJFS_RPC_OK) {
		objfs_csi_params_digest(&p, digest);
		want.digest = digest;
	}
	diff = objfs_ctl_vol_matches(rec, &want, &key);
	free(ctxs);
	if (diff == OBJFS_CTL_VOL_CONTEXT)
		snprintf(msg, cap, "volume_context key %.64s does not match the volume's", key);
	else if (diff == OBJFS_CTL_VOL_CONTEXT_LACKS)
		snprintf(msg, cap, "volume_context lacks key %.64s of the volume", key);
	else if (rq->n_parameters > 0 && want.digest == NULL)
		snprintf(msg, cap, "%s", pst.msg);
	else if (diff != OBJFS_CTL_VOL_SAME)
		snprintf(msg, cap, "parameters differ from the volume's");
	else if (rq->n_mutable_parameters > 0)
		snprintf(msg, cap, "mutable_parameters are not supported");
	return OBJFS_RPC_OK;
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
	struct objfs_ctl_vol v = OBJFS_CTL_VOL_INIT;
	char msg[OBJFS_RPC_MSG_MAX];
	ProtobufCMessage *copy;
	enum objfs_rpc_code code;
	size_t i;
	int err;

	code = objfs_ctl_vol_parse(&v, rq->volume_id, false, "volume_id", st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (rq->n_volume_capabilities == 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_capabilities is required");
	code = objfs_ctl_vol_begin(csi, &v, &(struct objfs_ctl_vol_how){
			.secrets = (void *const *)rq->secrets, .n_secrets = rq->n_secrets,
		}, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	err = objfs_ctl_volrec_load_live(v.root.store, &v.id, &rec);
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
	code = validate_match(rq, &rec, msg, sizeof(msg), st);
	if (code != OBJFS_RPC_OK)
		goto out;
	if (msg[0] != '\0')
		goto unconfirmed;
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
	objfs_ctl_vol_end(csi, &v);
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
	struct objfs_s3_conn conn = OBJFS_S3_CONN_INIT;
	char msg[OBJFS_RPC_MSG_MAX + 64];
	bool abnormal = true;
	int err;

	*vol = NULL;
	*cond = NULL;
	memset(&root, 0, sizeof(root));
	if (objfs_id_parse(idtext, &id) != 0 || id.type != OBJFS_ID_VOLUME)
		return ENOENT;
	if (id.store == OBJFS_ID_BUCKET)
		(void)objfs_csi_conn_resolve(csi, idx != NULL ? objfs_csi_kv_conn_get : NULL,
					     idx, NULL, 0, &conn);
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
		err = objfs_ctl_local_free_bytes(csi, &avail);
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
	struct objfs_ctl_vol v = OBJFS_CTL_VOL_INIT;
	char msg[256];
	enum objfs_rpc_code code;
	uint64_t have = 0, want, lim;

	code = objfs_ctl_vol_parse(&v, rq->volume_id, false, "volume_id", st);
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

	code = objfs_ctl_vol_begin(csi, &v, &(struct objfs_ctl_vol_how){
			.claim = true, .secrets = (void *const *)rq->secrets,
			.n_secrets = rq->n_secrets,
		}, st);
	if (code == OBJFS_RPC_OK)
		code = objfs_ctl_vol_expand(csi, &v, want, lim, &have, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	r = objfs_pb_new(&csi__v1__controller_expand_volume_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL) {
		code = objfs_ctl_oom(st);
		goto out;
	}
	r->capacity_bytes = have > INT64_MAX ? INT64_MAX : (int64_t)have;
	r->node_expansion_required = 0;
out:
	objfs_ctl_vol_end(csi, &v);
	return code;
}
