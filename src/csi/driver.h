/*
 * driver.h - the objfs CSI driver: its configuration, its state and the
 * routing table of every CSI method.
 *
 * The driver is transport-free: objfs-csi.c hands objfs_csi_methods() to the
 * gRPC server (server.c), and cmocka tests call the same handlers directly.
 * Every method of every CSI v1.12 service (Identity, Controller,
 * GroupController, SnapshotMetadata, Node) appears in the table, built from
 * the protobuf-c service descriptors; a method objfs does not implement, or
 * that the driver's mode does not serve, answers UNIMPLEMENTED.
 */
#ifndef OBJFS_CSI_DRIVER_H
#define OBJFS_CSI_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "csi/rpc.h"

struct objfs_buf;
struct objfs_log;
struct objfs_metrics;
struct objfs_csi_controller;   /* controller.c: controller-side state */
struct objfs_csi_node;         /* node.c: node-side state */
struct objfs_csi_metrics;      /* metrics.c: the CSI call histogram */
struct objfs_csi_mounter;      /* mounter.h: what the node asks of the OS */

#define OBJFS_CSI_DRIVER_NAME "objfs.csi.io"

enum objfs_csi_mode {
	OBJFS_CSI_MODE_CONTROLLER = 1,
	OBJFS_CSI_MODE_NODE = 2,
	OBJFS_CSI_MODE_ALL = 3,
};

/* Parses "controller", "node" or "all": 0 or EINVAL. */
int objfs_csi_mode_parse(const char *s, enum objfs_csi_mode *out);

/* What objfs-csi was started with.  Strings are borrowed: they must
 * outlive the driver (objfs-csi keeps them in its option struct). */
struct objfs_csi_config {
	const char *driver_name;      /* OBJFS_CSI_DRIVER_NAME */
	const char *version;          /* PACKAGE_VERSION */
	enum objfs_csi_mode mode;
	const char *node_id;          /* required in node and all modes */
	const char *state_dir;        /* records, embedded local store */
	const char *kubelet_dir;      /* node targets must lie under it */
	const char *mount_program;    /* path of objfs-mount */
	unsigned mount_memory_mib;    /* memory bound of each mount */
	/* controller: advertise GET_SNAPSHOT (GetSnapshot is served either
	 * way; csi-sanity and sidecars that predate it reject the
	 * capability as unknown). */
	bool advertise_get_snapshot;
	/* node: mounts and timings; NULL for the real ones (tests inject
	 * a fake).  Borrowed. */
	const struct objfs_csi_mounter *mounter;
	/* The default store (url, S3 settings, credentials, retries). */
	struct objfs_store_config store;
	/* Opens the store of a bucket named by StorageClass parameters, and
	 * (node) the store a NodeGetVolumeStats probes (objfs-csi:
	 * objfs_store_stack_create; tests inject their own).  NULL: volumes
	 * can live only in the default store, and the node probes none. */
	int (*store_open)(const struct objfs_store_config *cfg,
			  struct objfs_log *log, struct objfs_store **out);
	/* Where the driver counts (CSI calls, the node's mounts); NULL:
	 * nothing counted.  Borrowed: it outlives the driver, and is not
	 * rendered after objfs_csi_destroy (the driver's families name its
	 * methods). */
	struct objfs_metrics *metrics;
	/* The plugin's environment (the web identity token file and STS
	 * endpoint a roleArn secret assumes with); NULL: getenv(3).  Tests
	 * inject their own, so none touches the process's environment. */
	char *(*getenv)(const char *name);
};

struct objfs_csi {
	struct objfs_csi_config cfg;
	struct objfs_log *log;          /* not owned */
	struct objfs_store *store;      /* the default store; owned; may be NULL */
	struct objfs_rpc_method *methods;   /* owned; every CSI method */
	size_t n_methods;
	struct objfs_csi_controller *controller;  /* owned; NULL unless served */
	struct objfs_csi_node *node;              /* owned; NULL unless served */
	struct objfs_csi_metrics *m;              /* owned; NULL without
						     cfg.metrics (metrics.c) */
};

/* Creates a driver.  store (may be NULL: Probe then reports not ready) is
 * taken over, also on failure.  0 or ENOMEM.  Free with objfs_csi_destroy. */
int objfs_csi_create(const struct objfs_csi_config *cfg,
		     struct objfs_store *store, struct objfs_log *log,
		     struct objfs_csi **out);
void objfs_csi_destroy(struct objfs_csi *csi);

/* True when the driver answers path (a handler exists and the mode serves
 * its service). */
bool objfs_csi_serves(const struct objfs_csi *csi, const char *path);

/* ---- metrics (metrics.c) ------------------------------------------------ */

/* Registers the call histogram into cfg.metrics (nothing without it).
 * 0 or an errno; objfs_csi_destroy frees it. */
int objfs_csi_metrics_create(struct objfs_csi *csi);
void objfs_csi_metrics_destroy(struct objfs_csi *csi);
/* The transport's hook (server.h): one call of method ended with code
 * after ns nanoseconds.  ctx is the driver. */
void objfs_csi_observe_call(void *ctx, const char *method,
			    enum objfs_rpc_code code, uint64_t ns);
/* Appends the exposition of cfg.metrics to out and, on a node, every
 * staged mount's under its volume's labels.  ctx is the driver.  0 or an
 * errno. */
int objfs_csi_metrics_render(void *ctx, struct objfs_buf *out);

/* ---- handlers (ctx is the struct objfs_csi) ----------------------------- */
/* Controller handlers are declared in controller.h, node handlers in
 * node.h; both are attached in driver.c's `handlers` table. */

/* identity.c */
enum objfs_rpc_code objfs_csi_get_plugin_info(void *ctx, const ProtobufCMessage *req,
					      ProtobufCMessage **resp,
					      struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_get_plugin_capabilities(void *ctx, const ProtobufCMessage *req,
						      ProtobufCMessage **resp,
						      struct objfs_rpc_status *st);
enum objfs_rpc_code objfs_csi_probe(void *ctx, const ProtobufCMessage *req,
				    ProtobufCMessage **resp,
				    struct objfs_rpc_status *st);

#endif
