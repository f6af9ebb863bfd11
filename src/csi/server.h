/*
 * server.h - the gRPC transport of objfs-csi (the only gRPC-aware code).
 *
 * Serves one routing table (rpc.h) on a unix socket.  N worker threads each
 * own a completion queue and handle one call at a time, so N calls run at
 * once and a slow call (a mount) never stalls a Probe as long as another
 * worker is free.  A lock file beside the socket keeps a second instance
 * from stealing a live socket.
 */
#ifndef OBJFS_CSI_SERVER_H
#define OBJFS_CSI_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "csi/rpc.h"

struct objfs_log;
struct objfs_grpc_server;

struct objfs_grpc_server_config {
	const char *endpoint;                 /* unix:///abs/path, unix:/abs/path or /abs/path */
	unsigned threads;                     /* worker threads; 0 means 16 */
	const struct objfs_rpc_method *methods;   /* not owned; must outlive the server */
	size_t n_methods;
	void *ctx;                            /* handed to every handler */
	struct objfs_log *log;                /* not owned; may be NULL */
	/* called when a call ended (its status sent): method path, code,
	 * nanoseconds since it arrived; NULL: none.  Thread-safe. */
	void (*observe)(void *arg, const char *method, enum objfs_rpc_code code,
			uint64_t ns);
	void *observe_arg;
};

/* Parses a CSI endpoint into an absolute socket path (malloc'ed, caller
 * frees).  0, or EINVAL for anything but a unix socket with an absolute
 * path. */
int objfs_grpc_endpoint_path(const char *endpoint, char **path);

/* Starts serving.  On failure *err_msg (a static-size buffer of errlen
 * bytes) says why in one line: socket in use by another instance, cannot
 * bind, bad endpoint.  Returns 0 or an errno (EADDRINUSE when another
 * instance holds the socket).  Call after blocking the signals the process
 * waits for: gRPC's threads inherit the signal mask. */
int objfs_grpc_server_start(const struct objfs_grpc_server_config *cfg,
			    struct objfs_grpc_server **out,
			    char *err_msg, size_t errlen);

/* Stops accepting calls, lets calls in flight finish for up to grace_ms,
 * cancels the rest, waits for every handler to return, removes the socket
 * and lock file, and frees the server.  NULL is fine. */
void objfs_grpc_server_stop(struct objfs_grpc_server *srv, unsigned grace_ms);

#endif
