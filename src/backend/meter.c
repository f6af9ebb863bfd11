/*
 * meter.c - the meter layer: counts and times every request to the store
 * below it, and changes nothing else.  The one home of "how many requests
 * did this stack send".
 *
 * stack.c puts it in every stack, right above the leaf (under the retry
 * layer), so each try is one request.  It always counts the requests of
 * its own stack per op (objfs_store_requests(): objfs-mount logs them at
 * unmount, bench/ reads that line); with a registry (metrics on) it also
 * exports, from the same place, the op, the result (the errno class), the
 * latency, the bytes successful requests moved and the requests in
 * flight; without one (-o metrics=off) it registers and exports nothing.
 * No key reaches a label.  Families are shared by every meter over one
 * registry (register returns the one already there), so the CSI
 * controller's stores for several buckets count together there, while
 * objfs_store_requests() stays per stack.
 *
 *   objfs_store_requests_total{op,result}       counter
 *   objfs_store_request_duration_seconds{op}    histogram
 *   objfs_store_bytes_total{direction}          counter (read, written)
 *   objfs_store_requests_in_flight{op}          gauge
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/metrics.h"

enum { M_GET, M_PUT, M_HEAD, M_LIST, M_COPY, M_DEL, M_DEL_MANY,
       M_MPU_CREATE, M_MPU_PART, M_MPU_COMPLETE, M_MPU_ABORT,
       M_MPU_PART_COPY, M_OPS };

_Static_assert(M_OPS == OBJFS_STORE_REQ_OPS,
	       "the ops of objfs_store_requests, in the same order");

static const char *const op_names[M_OPS] = {
	"get", "put", "head", "list", "copy", "del", "del_many",
	"mpu_create", "mpu_part", "mpu_complete", "mpu_abort",
	"mpu_part_copy",
};

enum { R_OK, R_NOT_FOUND, R_DENIED, R_PRECONDITION, R_INVALID, R_THROTTLED,
       R_SERVER_ERROR, R_TIMEOUT, R_UNREACHABLE, R_OTHER, R_COUNT };

static const char *const result_names[R_COUNT] = {
	"ok", "not_found", "denied", "precondition", "invalid", "throttled",
	"server_error", "timeout", "unreachable", "other",
};

static const char *const dir_names[] = { "read", "written" };

static const struct objfs_metric_def def_requests = {
	.name = "objfs_store_requests_total",
	.help = "Requests to the object store (each try), by operation and result.",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "op", op_names, M_OPS }, { "result", result_names, R_COUNT } },
	.n_labels = 2,
	.sparse = true,
};

static const struct objfs_metric_def def_duration = {
	.name = "objfs_store_request_duration_seconds",
	.help = "Latency of requests to the object store (each try), by operation.",
	.type = OBJFS_METRIC_HISTOGRAM,
	.labels = { { "op", op_names, M_OPS } },
	.n_labels = 1,
	.bounds = objfs_metric_latency_bounds,
	.n_bounds = OBJFS_METRIC_LATENCY_N,
	.scale = 1e9,
	.sparse = true,
};

static const struct objfs_metric_def def_bytes = {
	.name = "objfs_store_bytes_total",
	.help = "Object data moved by successful store requests: read (GETs) or written (PUTs, parts).",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "direction", dir_names, 2 } },
	.n_labels = 1,
};

static const struct objfs_metric_def def_inflight = {
	.name = "objfs_store_requests_in_flight",
	.help = "Requests to the object store under way, by operation.",
	.type = OBJFS_METRIC_GAUGE,
	.labels = { { "op", op_names, M_OPS } },
	.n_labels = 1,
	.sparse = true,
};

struct meter {
	uint64_t tries[M_OPS];          /* this stack's requests (atomic) */
	struct objfs_metric *requests, *duration, *bytes, *inflight;
					/* NULL without a registry */
};

static unsigned result_of(int err)
{
	switch (err) {
	case 0: return R_OK;
	case ENOENT: return R_NOT_FOUND;
	case EACCES: case EPERM: return R_DENIED;
	case ESTALE: case EEXIST: return R_PRECONDITION;
	case EINVAL: case ERANGE: return R_INVALID;
	case EAGAIN: return R_THROTTLED;
	case EIO: return R_SERVER_ERROR;
	case ETIMEDOUT: return R_TIMEOUT;
	case ECONNREFUSED: case EHOSTUNREACH: case ECONNRESET: case EPIPE:
	case ENETUNREACH:
		return R_UNREACHABLE;
	default: return R_OTHER;
	}
}

static uint64_t begin(struct objfs_store *s, unsigned op)
{
	struct meter *m = s->ctx;

	__atomic_add_fetch(&m->tries[op], 1, __ATOMIC_RELAXED);
	if (m->requests == NULL)
		return 0;
	objfs_metric_add(m->inflight, op, 1);
	return objfs_metrics_now_ns();
}

static int end(struct objfs_store *s, unsigned op, uint64_t t0, int err)
{
	struct meter *m = s->ctx;
	size_t idx[2] = { op, result_of(err) };

	if (m->requests == NULL)
		return err;
	objfs_metric_observe(m->duration, op, objfs_metrics_now_ns() - t0);
	objfs_metric_add(m->requests, objfs_metric_index(m->requests, idx), 1);
	objfs_metric_sub(m->inflight, op, 1);
	return err;
}

/* A sink that counts what passes to the caller's. */
struct counting_sink {
	const struct objfs_sink *to;
	uint64_t n;
};

static int count_write(void *arg, uint64_t off, const void *data, size_t n)
{
	struct counting_sink *c = arg;
	int err = c->to->write_at(c->to->arg, off, data, n);

	if (err == 0)
		c->n += n;
	return err;
}

static int meter_get(struct objfs_store *s, const char *key,
		     const struct objfs_get_opts *opts,
		     const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	struct meter *m = s->ctx;
	struct counting_sink cs = { sink, 0 };
	struct objfs_sink mine = { count_write, &cs };
	uint64_t t0 = begin(s, M_GET);
	int err;

	err = objfs_store_get(s->inner, key, opts, sink != NULL ? &mine : NULL, info);
	if (err == 0)
		objfs_metric_add(m->bytes, 0, cs.n);
	return end(s, M_GET, t0, err);
}

static int meter_put(struct objfs_store *s, const char *key,
		     const struct objfs_source *src,
		     const struct objfs_put_opts *opts,
		     struct objfs_obj_info *info)
{
	struct meter *m = s->ctx;
	uint64_t t0 = begin(s, M_PUT);
	int err = objfs_store_put(s->inner, key, src, opts, info);

	if (err == 0 && src != NULL)
		objfs_metric_add(m->bytes, 1, src->size);
	return end(s, M_PUT, t0, err);
}

static int meter_head(struct objfs_store *s, const char *key,
		      struct objfs_obj_info *info)
{
	uint64_t t0 = begin(s, M_HEAD);

	return end(s, M_HEAD, t0, objfs_store_head(s->inner, key, info));
}

static int meter_list(struct objfs_store *s, const struct objfs_list_req *req,
		      struct objfs_list_page *page)
{
	uint64_t t0 = begin(s, M_LIST);

	return end(s, M_LIST, t0, objfs_store_list(s->inner, req, page));
}

static int meter_copy(struct objfs_store *s, const char *src, const char *dst,
		      const struct objfs_copy_opts *opts,
		      struct objfs_obj_info *info)
{
	uint64_t t0 = begin(s, M_COPY);

	return end(s, M_COPY, t0, objfs_store_copy(s->inner, src, dst, opts, info));
}

static int meter_del(struct objfs_store *s, const char *key)
{
	uint64_t t0 = begin(s, M_DEL);

	return end(s, M_DEL, t0, objfs_store_del(s->inner, key));
}

static int meter_del_many(struct objfs_store *s, const char *const *keys,
			  size_t n, size_t *failed)
{
	uint64_t t0 = begin(s, M_DEL_MANY);

	return end(s, M_DEL_MANY, t0,
		   objfs_store_del_many(s->inner, keys, n, failed));
}

static int meter_mpu_create(struct objfs_store *s, const char *key,
			    const struct objfs_put_opts *opts, char **upload_id)
{
	uint64_t t0 = begin(s, M_MPU_CREATE);

	return end(s, M_MPU_CREATE, t0,
		   objfs_store_mpu_create(s->inner, key, opts, upload_id));
}

static int meter_mpu_part(struct objfs_store *s, const char *key,
			  const char *upload_id, unsigned number,
			  const struct objfs_source *src, struct objfs_part *part)
{
	struct meter *m = s->ctx;
	uint64_t t0 = begin(s, M_MPU_PART);
	int err = objfs_store_mpu_part(s->inner, key, upload_id, number, src, part);

	if (err == 0 && src != NULL)
		objfs_metric_add(m->bytes, 1, src->size);
	return end(s, M_MPU_PART, t0, err);
}

/* A part copy moves no byte through the client: not in the bytes. */
static int meter_mpu_part_copy(struct objfs_store *s, const char *key,
			       const char *upload_id, unsigned number,
			       const struct objfs_part_copy *pc,
			       struct objfs_part *part)
{
	uint64_t t0 = begin(s, M_MPU_PART_COPY);

	return end(s, M_MPU_PART_COPY, t0,
		   objfs_store_mpu_part_copy(s->inner, key, upload_id, number,
					     pc, part));
}

static int meter_mpu_complete(struct objfs_store *s, const char *key,
			      const char *upload_id,
			      const struct objfs_part *parts, size_t n,
			      struct objfs_obj_info *info)
{
	uint64_t t0 = begin(s, M_MPU_COMPLETE);

	return end(s, M_MPU_COMPLETE, t0,
		   objfs_store_mpu_complete(s->inner, key, upload_id, parts, n, info));
}

static int meter_mpu_abort(struct objfs_store *s, const char *key,
			   const char *upload_id)
{
	uint64_t t0 = begin(s, M_MPU_ABORT);

	return end(s, M_MPU_ABORT, t0,
		   objfs_store_mpu_abort(s->inner, key, upload_id));
}

static void meter_destroy(struct objfs_store *s)
{
	objfs_store_destroy(s->inner);
	free(s->ctx);
	free(s);
}

static const struct objfs_store_ops meter_ops = {
	.name = "meter",
	.get = meter_get,
	.put = meter_put,
	.head = meter_head,
	.list = meter_list,
	.copy = meter_copy,
	.del = meter_del,
	.del_many = meter_del_many,
	.mpu_create = meter_mpu_create,
	.mpu_part = meter_mpu_part,
	.mpu_complete = meter_mpu_complete,
	.mpu_part_copy = meter_mpu_part_copy,
	.mpu_abort = meter_mpu_abort,
	.destroy = meter_destroy,
};

int objfs_store_requests(struct objfs_store *s,
			 struct objfs_store_requests *out)
{
	struct meter *m;
	unsigned i;

	memset(out, 0, sizeof(*out));
	while (s != NULL && s->ops != &meter_ops)
		s = s->inner;
	if (s == NULL)
		return ENOENT;
	m = s->ctx;
	for (i = 0; i < OBJFS_STORE_REQ_OPS; i++) {
		out->n[i] = __atomic_load_n(&m->tries[i], __ATOMIC_RELAXED);
		out->total += out->n[i];
	}
	return 0;
}

int objfs_store_requests_format(const struct objfs_store_requests *r,
				char *buf, size_t cap)
{
	size_t len;
	unsigned i;
	int n;

	n = snprintf(buf, cap, "total=%llu", (unsigned long long)r->total);
	for (i = 0; i < OBJFS_STORE_REQ_OPS; i++) {
		if (n < 0 || (size_t)n >= cap)
			return ENOSPC;
		if (r->n[i] == 0)
			continue;
		len = (size_t)n;
		n = snprintf(buf + len, cap - len, " %s=%llu", op_names[i],
			     (unsigned long long)r->n[i]);
		n = n < 0 ? n : n + (int)len;
	}
	return n >= 0 && (size_t)n < cap ? 0 : ENOSPC;
}

int objfs_meter_store_create(struct objfs_store *inner,
			     struct objfs_metrics *reg,
			     struct objfs_store **out)
{
	struct objfs_store *s = NULL;
	struct meter *m = NULL;
	int err;

	*out = NULL;
	if (inner == NULL)
		return EINVAL;
	s = calloc(1, sizeof(*s));
	m = calloc(1, sizeof(*m));
	if (s == NULL || m == NULL) {
		err = ENOMEM;
		goto fail;
	}
	err = objfs_metrics_register(reg, &def_requests, &m->requests);
	if (err == 0)
		err = objfs_metrics_register(reg, &def_duration, &m->duration);
	if (err == 0)
		err = objfs_metrics_register(reg, &def_bytes, &m->bytes);
	if (err == 0)
		err = objfs_metrics_register(reg, &def_inflight, &m->inflight);
	if (err != 0)
		goto fail;
	s->ops = &meter_ops;
	s->inner = inner;
	s->ctx = m;
	s->log = inner->log;
	*out = s;
	return 0;
fail:
	free(s);
	free(m);
	objfs_store_destroy(inner);
	return err;
}
