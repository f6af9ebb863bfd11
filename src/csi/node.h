/*
 * node.h - the CSI Node service: one objfs-mount process per staged volume,
 * bind mounts for every pod, records that survive restarts, a watchdog
 * that repairs dead mounts.
 *
 * Volume context keys (set by the controller, or by hand in a static PV):
 *   source           objfs-mount SOURCE (s3://bucket/prefix, file:///dir)
 *   endpoint         S3 endpoint URL       (else the plugin's --s3-endpoint)
 *   region           S3 region             (else the plugin's --s3-region)
 *   addressingStyle  path or virtual       (else the plugin's)
 *                    (the connection: backend/s3conn.h's keys, resolved
 *                    as the controller resolves it, objfs_csi_conn_from_
 *                    context; no endpoint anywhere: AWS's for the region)
 *   mountOptions     extra objfs-mount -o options, comma-separated (checked
 *                    against objfs-mount's, common/mountopts.h)
 * Without "source" the volume lives at the plugin's default store + "/" +
 * volume_id (a simple static layout: volume id "data" with --store
 * s3://bucket/vols mounts s3://bucket/vols/data).
 *
 * Node-stage secrets (accessKeyID, secretAccessKey, optional sessionToken)
 * override the plugin's own credentials for that volume.
 */
#ifndef OBJFS_CSI_NODE_H
#define OBJFS_CSI_NODE_H

#include "csi/driver.h"
#include "csi/mounter.h"
#include "csi/rpc.h"

struct objfs_buf;
struct objfs_csi_node;

/* Creates the node state for csi (borrowed: csi->cfg, csi->log; it must
 * outlive the node), loads the records under STATE_DIR/node, adopts the
 * healthy mounts and (in the watchdog's first pass, at once) repairs the
 * broken ones.  mounter NULL means objfs_csi_mounter_real().  0 or an
 * errno.  Free with objfs_csi_node_destroy(), which stops the watchdog and
 * leaves every mount running. */
int objfs_csi_node_create(struct objfs_csi *csi, const struct objfs_csi_mounter *mounter,
			  struct objfs_csi_node **out);
void objfs_csi_node_destroy(struct objfs_csi_node *node);

/* Merges own (the plugin's exposition) with every staged mount's, each
 * under its volume's labels, into out (node_metrics.c).  0 or an errno. */
int objfs_csi_node_metrics_merge(struct objfs_csi_node *n, const char *own,
				 struct objfs_buf *out);

/* One watchdog pass: every staged volume whose mount process is gone or
 * whose mounts are missing is repaired (volumes with a call in flight are
 * skipped).  Returns the number of volumes repaired. */
unsigned objfs_csi_node_check(struct objfs_csi_node *node);

/* Handlers (ctx is the struct objfs_csi).  Stage, unstage, publish and
 * unpublish leave *resp NULL: their replies are empty, packed by the
 * dispatcher (rpc.h). */
enum objfs_rpc_code objfs_csi_node_stage_volume(void *ctx, const ProtobufCMessage *req,
						ProtobufCMessage **resp,
						struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_node_unstage_volume(void *ctx, const ProtobufCMessage *req,
						  ProtobufCMessage **resp,
						  struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_node_publish_volume(void *ctx, const ProtobufCMessage *req,
						  ProtobufCMessage **resp,
						  struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_node_unpublish_volume(void *ctx, const ProtobufCMessage *req,
						    ProtobufCMessage **resp,
						    struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_node_get_volume_stats(void *ctx, const ProtobufCMessage *req,
						    ProtobufCMessage **resp,
						    struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_node_get_capabilities(void *ctx, const ProtobufCMessage *req,
						    ProtobufCMessage **resp,
						    struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_node_get_info(void *ctx, const ProtobufCMessage *req,
					    ProtobufCMessage **resp,
					    struct objfs_rpc_status *st);

#endif
