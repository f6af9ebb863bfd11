/*
 * controller_int.h - what the Controller service's files share
 * (controller.c: state and the volume handlers; controller_base.c: the
 * helpers the others call, which calls none of them; volumes.c: the
 * volumes' rules, declared in volumes.h with the volume record's helpers;
 * snapshots.c: the snapshot RPCs; listing.c: index listings).  Not for
 * other users: the service's interface is controller.h.
 *
 * Conventions of every handler (controller.c's opening comment): ids are
 * parsed before any store is touched; names and ids are claimed in the
 * controller's in-progress set (claims.h) for the whole call and dropped
 * on every exit; a root store (roots.h) is opened per call and closed on
 * every exit (for a volume both go through objfs_ctl_vol_begin() and
 * objfs_ctl_vol_end(), volumes.h); a store errno becomes a gRPC code only through
 * objfs_ctl_store_fail().
 */
#ifndef OBJFS_CSI_CONTROLLER_INT_H
#define OBJFS_CSI_CONTROLLER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "csi/claims.h"
#include "csi/rpc.h"
#include "csi/volid.h"
#include "volume/catalog.h"
#include "volume/volrec.h"

struct objfs_csi;
struct objfs_kv;
struct objfs_store;

/* The log subsystem of the service. */
#define OBJFS_CTL_LOG "csi"
/* The longest volume or snapshot name a CO may give. */
#define OBJFS_CTL_NAME_MAX 1024

/* Threads of the copy and delete pool, and keys per listing page
 * (objfs_csi_controller_tune()). */
#define OBJFS_CTL_COPY_WORKERS 8
#define OBJFS_CTL_PAGE_KEYS 1000

/* The service's state (one per driver; controller.c creates it). */
struct objfs_csi_controller {
	struct objfs_csi *csi;                  /* not owned */
	struct objfs_claims busy;               /* the in-progress set */
	unsigned char token_key[32];            /* MAC key of list tokens */
	unsigned copy_workers;                  /* threads of pool */
	struct objfs_pool *pool;                /* owned: prefix-tree copies
						   and deletes (backend/tree.h) */
	unsigned page_keys;                     /* keys per listing page */
};

/* RESOURCE_EXHAUSTED "out of memory". */
enum objfs_rpc_code objfs_ctl_oom(struct objfs_rpc_status *st);
/* Claims keys[0..n) (NULL entries skipped) for a call: OK, or ABORTED
 * naming what ("volume" or "snapshot") and name when another call holds
 * one of them.  The caller drops them with objfs_ctl_unclaim(). */
enum objfs_rpc_code objfs_ctl_claim(struct objfs_csi *csi,
				    const char *const *keys, size_t n,
				    const char *what, const char *name,
				    struct objfs_rpc_status *st);
void objfs_ctl_unclaim(struct objfs_csi *csi, const char *const *keys, size_t n);
/* Fails with the code for a store errno (never NOT_FOUND, ALREADY_EXISTS
 * or ABORTED, which mean something else to a CO) and logs it; what names
 * the step, id its object. */
enum objfs_rpc_code objfs_ctl_store_fail(struct objfs_csi *csi,
					 struct objfs_rpc_status *st, int err,
					 const char *what, const char *id);

/* Parses an id of type want for a lookup (foreign ids are NOT_FOUND,
 * malformed ones INVALID_ARGUMENT) or for a delete (an id objfs did not
 * make is NOT_FOUND: answer OK, touch nothing); field names the request
 * field. */
enum objfs_rpc_code objfs_ctl_id_for_lookup(const char *text,
					    enum objfs_id_type want,
					    const char *field, struct objfs_id *id,
					    struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_ctl_id_for_delete(const char *text,
					    enum objfs_id_type want,
					    const char *field, struct objfs_id *id,
					    struct objfs_rpc_status *st);
/* For a delete that found no record of id: *skip when the index does not
 * know id either (nothing to touch), else finish the job.  OK or the
 * index's failure with st set. */
enum objfs_rpc_code objfs_ctl_delete_unrecorded(struct objfs_csi *csi,
						enum objfs_catalog_kind kind,
						const char *id, bool *skip,
						struct objfs_rpc_status *st);
/* Makes the id of a new volume or snapshot named name (in bucket, NULL:
 * the default store; under base, may be NULL) into *id and text. */
enum objfs_rpc_code objfs_ctl_id_make(enum objfs_id_type type,
				      const char *bucket, const char *base,
				      const char *name, struct objfs_id *id,
				      char *text, size_t cap,
				      struct objfs_rpc_status *st);

/* The prefix trees of a root store (backend/tree.h) on the controller's
 * pool and page size.  Copies every object under src to dst (skipping the
 * keys of skip, relative to src) in parallel; *bytes (may be NULL) gets the
 * bytes.  Each is restartable: the same call again finishes the job. */
int objfs_ctl_tree_copy(struct objfs_csi_controller *c, struct objfs_store *s,
			const char *src, const char *dst,
			const char *const *skip, uint64_t *bytes);
/* Sums the sizes of the objects under prefix but those of skip. */
int objfs_ctl_tree_size(struct objfs_csi_controller *c, struct objfs_store *s,
			const char *prefix, const char *const *skip,
			uint64_t *bytes);
/* Deletes every object under prefix but those of skip; *count (may be
 * NULL) gets how many. */
int objfs_ctl_tree_delete(struct objfs_csi_controller *c, struct objfs_store *s,
			  const char *prefix, const char *const *skip,
			  uint64_t *count);
/* Called for each id entry of a listing: sets *taken when it listed it.
 * 0 or an errno (ENOMEM, else a store's). */
typedef int (*objfs_ctl_index_fn)(void *arg, const char *id,
				  const struct objfs_kv *entry, bool *taken);
/* Walks the index of kind from the list token on; calls fn for each
 * entry until fn has taken max entries (0: no limit) and one more exists;
 * then *next gets the token of the next answer (the caller frees it). */
enum objfs_rpc_code objfs_ctl_index_walk(struct objfs_csi *csi,
					 enum objfs_catalog_kind kind,
					 const char *token, int32_t max,
					 objfs_ctl_index_fn fn, void *arg,
					 char **next, struct objfs_rpc_status *st);

#endif
