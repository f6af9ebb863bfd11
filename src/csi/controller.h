/*
 * controller.h - the CSI Controller service of objfs.
 *
 * A volume is a key prefix in an object store; a snapshot is a server-side
 * copy of a volume's objects under another prefix of the same store.
 *
 * Where volumes live
 *   - the default store (objfs-csi --store, or the embedded local store
 *     under the state dir): used when the StorageClass names no bucket;
 *   - a bucket named by the StorageClass parameter `bucket`, reached with
 *     the keys in the request's secrets (accessKeyID, secretAccessKey,
 *     optional sessionToken; else the plugin's own keys), at the endpoint
 *     from parameters, else the secret (key `endpoint`), else --s3-endpoint
 *     (region and addressingStyle likewise: the connection, one type and
 *     one order for controller and node, backend/s3conn.h; a secret
 *     addressingStyle that is neither path nor virtual is
 *     INVALID_ARGUMENT, as the node would refuse it).  A secret `caBundle` (PEM)
 *     is trusted for the endpoint (kept as STATE_DIR/ca/<sha256>.pem).
 *     Calls that get only an id find the endpoint again in the index
 *     (below); when the index does not know the id and no endpoint is
 *     configured, the volume is unknown: NOT_FOUND, or OK for deletes.
 *
 * StorageClass parameters (anything else, except csi.storage.k8s.io/...
 * keys, is INVALID_ARGUMENT):
 *   bucket           S3 bucket (else the default store)
 *   basePrefix       segments under which volumes are made (default: none)
 *   endpoint, region, addressingStyle (path|virtual)   with `bucket` only
 *                    (the connection's keys, OBJFS_S3_CONN_KEY_*)
 *   onDelete         delete (default) | retain | archive
 *   archivePrefix    where archive moves a volume, under basePrefix
 *                    (default .objfs-archive)
 *   mountOptions     objfs-mount options, passed to the node as is
 *
 * Volume id (see volid.h; at most 128 bytes):
 *   objfs1:vol:def:PREFIX           in the default store
 *   objfs1:vol:s3:BUCKET:PREFIX     in BUCKET
 * PREFIX is basePrefix/NAME where NAME is the CO's name when it is a
 * readable segment that fits, else its safe characters cut short plus 16
 * hex digits of its SHA-256.  Snapshot ids: objfs1:snap:def:BASE/NAME and
 * objfs1:snap:s3:BUCKET:BASE/NAME, data under BASE/.objfs-snapshots/NAME/
 * where BASE is the source volume's basePrefix: everything the controller
 * writes in a bucket stays under basePrefix, so keys scoped to it suffice
 * (ids of one segment, made before, name .objfs-snapshots/NAME/).
 *
 * volume_context (never secrets; identical in every answer for one id):
 *   source           objfs-mount SOURCE: s3://BUCKET/PREFIX or
 *                    file:///DIR/PREFIX
 *   endpoint, region, addressingStyle    for s3 sources
 *   mountOptions     when the StorageClass gives it
 *
 * Objects the controller writes (their keys: volume/layout.h; the index
 * and the snapshot record: volume/catalog.h)
 *   PREFIX/.objfs/volume              the volume record (volrec format):
 *                                     capacity_bytes, created, name,
 *                                     csi.* (id, params hash, source,
 *                                     onDelete, archivePrefix, archiveTo,
 *                                     state),
 *                                     ctx.* (the volume_context)
 *   BASE/.objfs-snapshots/NAME/...    the snapshot's copy of the objects
 *   BASE/.objfs-snapshots/NAME/.objfs/snapshot   the snapshot record
 *   BASE/ARCHIVE/NAME/...             a volume deleted with
 *                                     onDelete=archive
 *   in the default store, the index the list calls walk and the id-only
 *   calls use to find a bucket's endpoint again:
 *   .objfs-csi/volumes/H(id), .objfs-csi/volume-names/H(name),
 *   .objfs-csi/snapshots/H(id), .objfs-csi/snapshot-names/H(name)
 *
 * Crash consistency: a create writes the index first and the record LAST;
 * a delete removes the data, then the record, then the index LAST.  Any
 * call that fails half-way leaves a state the same call, retried,
 * completes; a volume or snapshot without its record is never listed or
 * reported as existing.
 *
 * Concurrency: calls on the same volume/snapshot name or id are
 * serialised by an in-progress set; the second concurrent call answers
 * ABORTED.  A snapshot or clone also claims its source while it copies
 * (a delete of the source, or a second snapshot of it at that moment,
 * answers ABORTED).  Different volumes proceed in parallel.
 */
#ifndef OBJFS_CSI_CONTROLLER_H
#define OBJFS_CSI_CONTROLLER_H

#include <stdint.h>

#include "csi/rpc.h"

struct objfs_csi;
struct objfs_csi_controller;

/* Default capacity of a volume created with no capacity_range. */
#define OBJFS_CSI_DEFAULT_CAPACITY (1ULL << 30)

/* Creates the controller state of csi (borrowed; must outlive it).
 * 0 or ENOMEM.  Free with objfs_csi_controller_destroy(). */
int objfs_csi_controller_create(struct objfs_csi *csi,
				struct objfs_csi_controller **out);
void objfs_csi_controller_destroy(struct objfs_csi_controller *c);
/* Tests: keys per listing page (1..1000, default 1000) and copy threads
 * (1..8, default 8); 0 keeps a value. */
void objfs_csi_controller_tune(struct objfs_csi_controller *c,
			       unsigned page_keys, unsigned copy_workers);

/* Handlers (ctx is the struct objfs_csi; see rpc.h): volumes, in
 * controller.c (their rules in volumes.c). */
enum objfs_rpc_code objfs_csi_create_volume(void *ctx, const ProtobufCMessage *req,
					    ProtobufCMessage **resp,
					    struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_delete_volume(void *ctx, const ProtobufCMessage *req,
					    ProtobufCMessage **resp,
					    struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_validate_volume_capabilities(void *ctx, const ProtobufCMessage *req,
							   ProtobufCMessage **resp,
							   struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_list_volumes(void *ctx, const ProtobufCMessage *req,
					   ProtobufCMessage **resp,
					   struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_controller_get_volume(void *ctx, const ProtobufCMessage *req,
						    ProtobufCMessage **resp,
						    struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_get_capacity(void *ctx, const ProtobufCMessage *req,
					   ProtobufCMessage **resp,
					   struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_controller_get_capabilities(void *ctx, const ProtobufCMessage *req,
							  ProtobufCMessage **resp,
							  struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_controller_expand_volume(void *ctx, const ProtobufCMessage *req,
						       ProtobufCMessage **resp,
						       struct objfs_rpc_status *st);
/* Snapshots, in snapshots.c. */
enum objfs_rpc_code objfs_csi_create_snapshot(void *ctx, const ProtobufCMessage *req,
					      ProtobufCMessage **resp,
					      struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_delete_snapshot(void *ctx, const ProtobufCMessage *req,
					      ProtobufCMessage **resp,
					      struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_list_snapshots(void *ctx, const ProtobufCMessage *req,
					     ProtobufCMessage **resp,
					     struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_get_snapshot(void *ctx, const ProtobufCMessage *req,
					   ProtobufCMessage **resp,
					   struct objfs_rpc_status *st);

#endif
