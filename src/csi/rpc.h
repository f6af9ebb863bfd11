/*
 * rpc.h - transport-independent RPC dispatch for the CSI services.
 *
 * A CSI method is a plain C function from an unpacked protobuf-c request to a
 * protobuf-c response plus a status code and message.  Handlers know nothing
 * of gRPC: the transport (server.c, the only file that includes gRPC headers)
 * hands objfs_rpc_dispatch() the method path and the raw request bytes and
 * sends back whatever it returns.  cmocka tests call handlers or the
 * dispatcher directly, with no socket.
 *
 * Status codes are gRPC's numbers (the wire contract), named here so that no
 * file outside server.c needs gRPC headers.  Positive errno values are mapped
 * to them only in src/csi (objfs_rpc_code_from_errno).
 */
#ifndef OBJFS_CSI_RPC_H
#define OBJFS_CSI_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

enum objfs_rpc_code {
	OBJFS_RPC_OK = 0,
	OBJFS_RPC_CANCELLED = 1,
	OBJFS_RPC_UNKNOWN = 2,
	OBJFS_RPC_INVALID_ARGUMENT = 3,
	OBJFS_RPC_DEADLINE_EXCEEDED = 4,
	OBJFS_RPC_NOT_FOUND = 5,
	OBJFS_RPC_ALREADY_EXISTS = 6,
	OBJFS_RPC_PERMISSION_DENIED = 7,
	OBJFS_RPC_RESOURCE_EXHAUSTED = 8,
	OBJFS_RPC_FAILED_PRECONDITION = 9,
	OBJFS_RPC_ABORTED = 10,
	OBJFS_RPC_OUT_OF_RANGE = 11,
	OBJFS_RPC_UNIMPLEMENTED = 12,
	OBJFS_RPC_INTERNAL = 13,
	OBJFS_RPC_UNAVAILABLE = 14,
	OBJFS_RPC_DATA_LOSS = 15,
	OBJFS_RPC_UNAUTHENTICATED = 16,
};

#define OBJFS_RPC_MSG_MAX 512

/* The outcome of one call: a code and a human-readable message (never a
 * secret).  Zero-initialised means OK with no message. */
struct objfs_rpc_status {
	enum objfs_rpc_code code;
	char msg[OBJFS_RPC_MSG_MAX];
};

/* Sets st to code with a printf-style message and returns code, so handlers
 * can `return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "...")`. */
enum objfs_rpc_code objfs_rpc_fail(struct objfs_rpc_status *st,
				   enum objfs_rpc_code code,
				   const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Maps a positive errno from the layers below to the closest code. */
enum objfs_rpc_code objfs_rpc_code_from_errno(int err);
const char *objfs_rpc_code_name(enum objfs_rpc_code code);

/* A handler.  ctx is the service context given to the dispatcher.  On
 * OBJFS_RPC_OK the handler sets *resp to a response allocated with malloc
 * in every part (strings, repeated arrays, sub-messages), so that
 * protobuf_c_message_free_unpacked(*resp, NULL) frees it; a method whose
 * reply has no fields (NodeStageVolumeResponse...) may leave *resp NULL,
 * and the dispatcher packs the empty reply.  Whatever the
 * code, a non-NULL *resp belongs to the dispatcher, which frees it (so a
 * handler that fails half-way needs no cleanup of its response).  Handlers
 * must be thread-safe. */
typedef enum objfs_rpc_code (*objfs_rpc_handler)(void *ctx,
						 const ProtobufCMessage *req,
						 ProtobufCMessage **resp,
						 struct objfs_rpc_status *st);

/* One row of a routing table.  fn NULL means "not implemented". */
struct objfs_rpc_method {
	const char *path;                        /* "/csi.v1.Identity/Probe" */
	const ProtobufCMessageDescriptor *req;   /* request type */
	const ProtobufCMessageDescriptor *resp;  /* reply type; NULL: unknown
						    (the handler must give
						    every reply) */
	objfs_rpc_handler fn;
};

/* Finds path in table, unpacks body as its request type, calls the handler
 * and packs its response into *out (malloc'ed; caller frees; NULL on error).
 *   unknown path or NULL fn  -> UNIMPLEMENTED
 *   body that does not parse -> INVALID_ARGUMENT
 *   a string field with a NUL, a control character, bad UTF-8 or too
 *   many bytes (objfs_pb_check_strings) -> INVALID_ARGUMENT naming it,
 *   before the handler runs
 *   OK with no response: the empty reply when m->resp has no fields,
 *   else INTERNAL
 * Returns the call's code; st holds it with its message. */
enum objfs_rpc_code objfs_rpc_dispatch(const struct objfs_rpc_method *table,
				       size_t n, void *ctx, const char *path,
				       const uint8_t *body, size_t len,
				       uint8_t **out, size_t *out_len,
				       struct objfs_rpc_status *st);

/* Looks path up; NULL when absent. */
const struct objfs_rpc_method *objfs_rpc_find(const struct objfs_rpc_method *table,
					      size_t n, const char *path);
/* Whether table routes path to a handler (not UNIMPLEMENTED). */
bool objfs_rpc_serves(const struct objfs_rpc_method *table, size_t n,
		      const char *path);

#endif
