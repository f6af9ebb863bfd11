/*
 * volumes.h - the rules of the Controller's volumes (volumes.c), apart
 * from the RPCs that carry them (controller.c): plain functions over the
 * index (volume/catalog.h), the root stores (roots.h) and the volume
 * record (volume/volrec.h).  No protobuf type appears here: a handler in
 * controller.c checks its request, calls these, and packs the answer.
 * Not for other users (controller_int.h says what the service's files
 * share; the service's interface is controller.h).
 *
 * A call on one volume goes through a struct objfs_ctl_vol:
 *
 *   objfs_ctl_vol_parse()    id text -> id (no store touched), or the id
 *                            is made by objfs_ctl_id_make() into v->id and
 *                            v->text (CreateVolume);
 *   objfs_ctl_vol_begin()    claims it in the in-progress set (when asked)
 *                            and opens its root store;
 *   the rules                objfs_ctl_vol_create(), _delete(), _expand(),
 *                            objfs_ctl_vol_matches() on its record;
 *   objfs_ctl_vol_end()      drops the claims and closes the root, on
 *                            every exit (also after a failed or no begin).
 *
 * Errors: the functions that answer a CO return an objfs_rpc_code with st
 * set (the messages are the ones the CO sees); the others 0 or a positive
 * errno.  Strings given in are borrowed for the call.
 */
#ifndef OBJFS_CSI_VOLUMES_H
#define OBJFS_CSI_VOLUMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "csi/controller_int.h"
#include "csi/params.h"
#include "csi/roots.h"
#include "csi/rpc.h"
#include "csi/volid.h"
#include "volume/layout.h"
#include "volume/volrec.h"

struct objfs_csi;
struct objfs_kv;
struct objfs_store;

/* The longest key one call claims ("vn:" and a CO name). */
#define OBJFS_CTL_VOL_LOCK_MAX (OBJFS_CTL_NAME_MAX + 8)

/* ---- the volume record and its prefix -------------------------------- */

/* What a copy of a volume leaves out: its record. */
extern const char *const objfs_ctl_vol_skip[];

/* The prefix of a volume ("PATH/") into buf. */
void objfs_ctl_vol_prefix(const struct objfs_id *id, char *buf, size_t cap);
/* The length of the base prefix of a volume or snapshot path BASE/NAME
 * (0 when the path is one segment): where the controller writes what
 * belongs to the volume besides its own prefix (volume/layout.h). */
size_t objfs_ctl_base_len(const char *path);
/* True when rec was deleted with onDelete=retain (csi.state=retained). */
bool objfs_ctl_volrec_retained(const struct objfs_volrec *rec);
/* Loads the record of a live volume into *rec (empty; released by the
 * caller): ENOENT when absent or retained. */
int objfs_ctl_volrec_load_live(struct objfs_store *s, const struct objfs_id *id,
			       struct objfs_volrec *rec);

/* ---- one call on one volume ------------------------------------------ */

/* Set to zero (or OBJFS_CTL_VOL_INIT) before parse or make; the claims
 * and the root are the call's until objfs_ctl_vol_end(). */
struct objfs_ctl_vol {
	struct objfs_id id;
	char text[OBJFS_ID_MAX + 1];    /* the id as the CO knows it */
	struct objfs_csi_root root;     /* open between begin and end */
	struct objfs_s3_conn conn;      /* a bucket's, when begin resolved it
					   from parameters (else zero) */
	char lk[3][OBJFS_CTL_VOL_LOCK_MAX];
	const char *locks[3];
	bool claimed;
};
#define OBJFS_CTL_VOL_INIT { 0 }

/* How objfs_ctl_vol_begin() claims and opens. */
struct objfs_ctl_vol_how {
	bool claim;                     /* claim the id (and name, source) */
	const char *name;               /* CreateVolume: the CO's name, claimed
					   too and named in ABORTED; NULL:
					   the id is named */
	const char *source;             /* a source ("snapshot:ID",
					   "volume:ID") claimed too, so no
					   delete empties it; NULL or "" */
	const struct objfs_csi_params *params;  /* CreateVolume: a bucket's
					   connection from these; NULL: from
					   the index (by id) */
	void *const *secrets;           /* the request's (pb map entries) */
	size_t n_secrets;
};

/* Parses text into v (lookup rules: foreign ids are NOT_FOUND, malformed
 * ones INVALID_ARGUMENT; for_delete: every id objfs did not make is
 * NOT_FOUND, which a delete answers OK); field names the request field.
 * Touches no store. */
enum objfs_rpc_code objfs_ctl_vol_parse(struct objfs_ctl_vol *v, const char *text,
					bool for_delete, const char *field,
					struct objfs_rpc_status *st);
/* Claims (how->claim: ABORTED when another call holds the volume) and
 * opens the root store of v's id (roots.h's codes; NOT_FOUND for a bucket
 * id the index does not know, with no endpoint configured). */
enum objfs_rpc_code objfs_ctl_vol_begin(struct objfs_csi *csi, struct objfs_ctl_vol *v,
					const struct objfs_ctl_vol_how *how,
					struct objfs_rpc_status *st);
/* Drops v's claims and closes its root; safe on any v set to zero. */
void objfs_ctl_vol_end(struct objfs_csi *csi, struct objfs_ctl_vol *v);

/* ---- capacity and content source ------------------------------------- */

/* Capacity for a new volume from a capacity range (0: not given) and the
 * size of its content (0 when empty).  OK, or INVALID_ARGUMENT (negative)
 * or OUT_OF_RANGE. */
enum objfs_rpc_code objfs_ctl_vol_capacity(int64_t required, int64_t limit,
					   uint64_t content, uint64_t *cap,
					   struct objfs_rpc_status *st);

/* The content source of a new volume: text is "" (none) or snapshot:ID /
 * volume:ID; the root id, the prefix to copy and what the copy skips;
 * bytes once measured. */
struct objfs_ctl_vol_source {
	char text[OBJFS_ID_MAX + 16];
	struct objfs_id id;
	char prefix[OBJFS_KEY_MAX];
	const char *const *skip;
	uint64_t bytes;
};

/* Sets src to the snapshot or volume idtext (type says which), parsed by
 * the lookup rules (NOT_FOUND or INVALID_ARGUMENT naming the request's
 * volume_content_source field).  Touches no store. */
enum objfs_rpc_code objfs_ctl_vol_source(enum objfs_id_type type, const char *idtext,
					 struct objfs_ctl_vol_source *src,
					 struct objfs_rpc_status *st);

/* ---- does a recorded volume match a request --------------------------- */

/* One volume_context entry of a request (borrowed strings). */
struct objfs_ctl_vol_ctx {
	const char *key;
	const char *value;
};

/* What a request asks of a volume; each part NULL (or 0, false) is not
 * compared. */
struct objfs_ctl_vol_want {
	const char *name;               /* the CO's name of the volume */
	const struct objfs_ctl_vol_ctx *context;  /* its volume_context: every
					   ctx.KEY of the record, no more */
	size_t n_context;
	const char *digest;             /* objfs_csi_params_digest() */
	const char *source;             /* "", snapshot:ID or volume:ID */
	bool capacity;                  /* the capacity within: */
	uint64_t required, limit;       /* 0: no bound */
};

/* The first way a record differs from a request, in this order. */
enum objfs_ctl_vol_diff {
	OBJFS_CTL_VOL_SAME = 0,
	OBJFS_CTL_VOL_RETAINED,         /* deleted with onDelete=retain */
	OBJFS_CTL_VOL_NAME,             /* another CO name */
	OBJFS_CTL_VOL_CONTEXT,          /* *key: a request key whose value
					   the record does not hold */
	OBJFS_CTL_VOL_CONTEXT_LACKS,    /* *key: a record key (without ctx.)
					   the request lacks */
	OBJFS_CTL_VOL_PARAMS,           /* other parameters */
	OBJFS_CTL_VOL_SOURCE,           /* another content source */
	OBJFS_CTL_VOL_CAPACITY,         /* capacity outside the range */
};

/* Compares the record rec with want (CreateVolume's idempotency check,
 * ValidateVolumeCapabilities' confirmation).  *key (may be NULL) gets the
 * key of a CONTEXT difference, owned by want or rec.  Pure: no store. */
enum objfs_ctl_vol_diff objfs_ctl_vol_matches(const struct objfs_volrec *rec,
					      const struct objfs_ctl_vol_want *want,
					      const char **key);

/* ---- the rules of the volume RPCs -------------------------------------- */

/* The record of a new volume: name, id text, capacity, parameters digest,
 * source ("" or snapshot:ID / volume:ID), onDelete (and archive) from p,
 * and the ctx.* fields of ctx, into *rec (empty: the caller releases it).
 * 0, ENAMETOOLONG or ENOMEM. */
int objfs_ctl_vol_record(struct objfs_volrec *rec, const struct objfs_id *id,
			 const char *idtext, const char *name, uint64_t cap,
			 const char *digest, const char *source,
			 const struct objfs_csi_params *p, const struct objfs_kv *ctx);

/* What CreateVolume asks, checked (objfs_ctl_vol_capacity() accepted the
 * range). */
struct objfs_ctl_vol_spec {
	const char *name;
	const struct objfs_csi_params *params;
	const char *digest;             /* of params */
	struct objfs_ctl_vol_source *src;  /* measured here */
	int64_t required, limit;        /* the capacity range (0: none) */
};

/* Creates the volume of begun v (claimed, root open) as spec says, or
 * finds it made by the same request before: *rec gets its record (empty
 * on entry; the caller releases it).  A failure after the index was
 * written takes back what the call wrote.  OK, ALREADY_EXISTS,
 * FAILED_PRECONDITION (no bucket), ABORTED (a concurrent create), or a
 * store's code. */
enum objfs_rpc_code objfs_ctl_vol_create(struct objfs_csi *csi, struct objfs_ctl_vol *v,
					 const struct objfs_ctl_vol_spec *spec,
					 struct objfs_volrec *rec,
					 struct objfs_rpc_status *st);
/* Deletes the volume of begun v by its onDelete policy (delete, retain,
 * archive) and its index entry; an absent volume is finished or skipped.
 * OK or a store's code. */
enum objfs_rpc_code objfs_ctl_vol_delete(struct objfs_csi *csi, struct objfs_ctl_vol *v,
					 struct objfs_rpc_status *st);
/* Grows the volume of begun v to want bytes (limit: 0 or its bound);
 * *have gets its capacity after.  OK, NOT_FOUND, OUT_OF_RANGE (would
 * shrink) or a store's code. */
enum objfs_rpc_code objfs_ctl_vol_expand(struct objfs_csi *csi, struct objfs_ctl_vol *v,
					 uint64_t want, uint64_t limit, uint64_t *have,
					 struct objfs_rpc_status *st);

/* Free bytes of the file system of the local default store: 0, ENOTSUP
 * (the default store is not local) or an errno. */
int objfs_ctl_local_free_bytes(struct objfs_csi *csi, uint64_t *out);

#endif
