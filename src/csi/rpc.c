/*
 * rpc.c - method routing, request unpacking and response packing (rpc.h).
 *
 * Invariant: every call that enters objfs_rpc_dispatch() leaves with a code
 * and, for OK, a packed response (an empty one made here when the handler
 * gave none and the method's reply has no fields); the unpacked request
 * and the handler's response are freed here on every path.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csi/pb.h"
#include "csi/rpc.h"

enum objfs_rpc_code objfs_rpc_fail(struct objfs_rpc_status *st,
				   enum objfs_rpc_code code,
				   const char *fmt, ...)
{
	va_list ap;

	st->code = code;
	va_start(ap, fmt);
	vsnprintf(st->msg, sizeof(st->msg), fmt, ap);
	va_end(ap);
	return code;
}

enum objfs_rpc_code objfs_rpc_code_from_errno(int err)
{
	switch (err) {
	case 0:
		return OBJFS_RPC_OK;
	case EINVAL:
	case ENAMETOOLONG:
		return OBJFS_RPC_INVALID_ARGUMENT;
	case ENOENT:
		return OBJFS_RPC_NOT_FOUND;
	case EEXIST:
		return OBJFS_RPC_ALREADY_EXISTS;
	case EACCES:
	case EPERM:
		return OBJFS_RPC_PERMISSION_DENIED;
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return OBJFS_RPC_RESOURCE_EXHAUSTED;
	case EBUSY:
	case EAGAIN:
		return OBJFS_RPC_ABORTED;
	case ETIMEDOUT:
		return OBJFS_RPC_DEADLINE_EXCEEDED;
	case ECONNREFUSED:
	case ECONNRESET:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EPIPE:
	case ENOTCONN:
	case EIO:
		return OBJFS_RPC_UNAVAILABLE;
	case ENOSYS:
	case ENOTSUP:
		return OBJFS_RPC_UNIMPLEMENTED;
	case ERANGE:
		return OBJFS_RPC_OUT_OF_RANGE;
	default:
		return OBJFS_RPC_INTERNAL;
	}
}

const char *objfs_rpc_code_name(enum objfs_rpc_code code)
{
	static const char *const names[] = {
		"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
		"DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
		"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
		"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
		"UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
	};

	if ((unsigned)code < sizeof(names) / sizeof(names[0]))
		return names[code];
	return "UNKNOWN";
}

const struct objfs_rpc_method *objfs_rpc_find(const struct objfs_rpc_method *table,
					      size_t n, const char *path)
{
	size_t i;

	if (path == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		if (strcmp(table[i].path, path) == 0)
			return &table[i];
	}
	return NULL;
}

bool objfs_rpc_serves(const struct objfs_rpc_method *table, size_t n,
		      const char *path)
{
	const struct objfs_rpc_method *m = objfs_rpc_find(table, n, path);

	return m != NULL && m->fn != NULL;
}

enum objfs_rpc_code objfs_rpc_dispatch(const struct objfs_rpc_method *table,
				       size_t n, void *ctx, const char *path,
				       const uint8_t *body, size_t len,
				       uint8_t **out, size_t *out_len,
				       struct objfs_rpc_status *st)
{
	const struct objfs_rpc_method *m;
	ProtobufCMessage *req = NULL;
	ProtobufCMessage *resp = NULL;
	enum objfs_rpc_code code;
	char why[OBJFS_RPC_MSG_MAX];
	size_t size;

	*out = NULL;
	*out_len = 0;
	st->code = OBJFS_RPC_OK;
	st->msg[0] = '\0';

	m = objfs_rpc_find(table, n, path);
	if (m == NULL) {
		code = objfs_rpc_fail(st, OBJFS_RPC_UNIMPLEMENTED,
				      "unknown method %s", path ? path : "(none)");
		goto out;
	}
	if (m->fn == NULL) {
		code = objfs_rpc_fail(st, OBJFS_RPC_UNIMPLEMENTED,
				      "%s is not implemented by objfs", path);
		goto out;
	}
	req = protobuf_c_message_unpack(m->req, NULL, len,
					len > 0 ? body : (const uint8_t *)"");
	if (req == NULL) {
		code = objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "request body is not a valid %s",
				      m->req->name);
		goto out;
	}
	/* one place for every method: no handler sees a cut string */
	if (objfs_pb_check_strings(m->req, body, len, why, sizeof(why)) != 0) {
		code = objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "%s", why);
		goto out;
	}
	code = m->fn(ctx, req, &resp, st);
	st->code = code;
	if (code != OBJFS_RPC_OK)
		goto out;
	/* an empty reply (NodeStageVolumeResponse...) is packed here, not
	 * by each handler */
	if (resp == NULL && m->resp != NULL && m->resp->n_fields == 0) {
		resp = objfs_pb_new(m->resp);
		if (resp == NULL) {
			code = objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED,
					      "out of memory packing the response");
			goto out;
		}
	}
	if (resp == NULL) {
		code = objfs_rpc_fail(st, OBJFS_RPC_INTERNAL,
				      "handler for %s returned no response", path);
		goto out;
	}
	size = protobuf_c_message_get_packed_size(resp);
	*out = malloc(size > 0 ? size : 1);
	if (*out == NULL) {
		code = objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED,
				      "out of memory packing the response");
		goto out;
	}
	*out_len = protobuf_c_message_pack(resp, *out);
out:
	if (resp != NULL)
		protobuf_c_message_free_unpacked(resp, NULL);
	if (req != NULL)
		protobuf_c_message_free_unpacked(req, NULL);
	return code;
}
