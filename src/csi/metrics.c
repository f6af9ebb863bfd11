/*
 * metrics.c - what objfs-csi counts of its own calls, and the exposition
 * it serves (driver.h).
 *
 *   objfs_csi_call_duration_seconds{method,code}   histogram
 *
 * method is a path of the routing table ("/csi.v1.Node/NodeStageVolume")
 * or "unknown"; code a gRPC code name.  Both sets are fixed when the
 * driver is made: the family's label values point into the driver.  The
 * transport (server.c) times each call and reports it through
 * objfs_csi_observe_call; the node's families are node_metrics.c's.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/metrics.h"
#include "csi/driver.h"
#include "csi/node.h"

#define N_CODES 17

struct objfs_csi_metrics {
	struct objfs_metric_def def;
	const char **methods;           /* n_methods paths, then "unknown" */
	const char *codes[N_CODES];
	struct objfs_metric *calls;
};

int objfs_csi_metrics_create(struct objfs_csi *csi)
{
	struct objfs_csi_metrics *m;
	size_t i;
	int err;

	if (csi->cfg.metrics == NULL)
		return 0;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return ENOMEM;
	m->methods = calloc(csi->n_methods + 1, sizeof(*m->methods));
	if (m->methods == NULL) {
		free(m);
		return ENOMEM;
	}
	for (i = 0; i < csi->n_methods; i++)
		m->methods[i] = csi->methods[i].path;
	m->methods[csi->n_methods] = "unknown";
	for (i = 0; i < N_CODES; i++)
		m->codes[i] = objfs_rpc_code_name((enum objfs_rpc_code)i);
	m->def.name = "objfs_csi_call_duration_seconds";
	m->def.help = "CSI calls served, by method and gRPC code, and how long they took.";
	m->def.type = OBJFS_METRIC_HISTOGRAM;
	m->def.labels[0] = (struct objfs_metric_label){ "method", m->methods,
							csi->n_methods + 1 };
	m->def.labels[1] = (struct objfs_metric_label){ "code", m->codes, N_CODES };
	m->def.n_labels = 2;
	m->def.bounds = objfs_metric_latency_bounds;
	m->def.n_bounds = OBJFS_METRIC_LATENCY_N;
	m->def.scale = 1e9;
	m->def.sparse = true;
	err = objfs_metrics_register(csi->cfg.metrics, &m->def, &m->calls);
	if (err != 0) {
		free(m->methods);
		free(m);
		return err;
	}
	csi->m = m;
	return 0;
}

void objfs_csi_metrics_destroy(struct objfs_csi *csi)
{
	if (csi->m == NULL)
		return;
	free(csi->m->methods);
	free(csi->m);
	csi->m = NULL;
}

void objfs_csi_observe_call(void *ctx, const char *method,
			    enum objfs_rpc_code code, uint64_t ns)
{
	struct objfs_csi *csi = ctx;
	size_t idx[2], i;

	if (csi->m == NULL)
		return;
	for (i = 0; i < csi->n_methods && strcmp(csi->methods[i].path, method) != 0; i++)
		;
	idx[0] = i;
	idx[1] = (size_t)code < N_CODES ? (size_t)code : OBJFS_RPC_UNKNOWN;
	objfs_metric_observe(csi->m->calls, objfs_metric_index(csi->m->calls, idx), ns);
}

int objfs_csi_metrics_render(void *ctx, struct objfs_buf *out)
{
	struct objfs_csi *csi = ctx;
	struct objfs_buf own = OBJFS_BUF_INIT(16u << 20, EFBIG);
	int err;

	if (csi->cfg.metrics == NULL)
		return EINVAL;
	err = objfs_metrics_render(csi->cfg.metrics, &own);
	if (err == 0 && csi->node != NULL)
		err = objfs_csi_node_metrics_merge(csi->node, own.p != NULL ? own.p : "", out);
	else if (err == 0)
		objfs_buf_add(out, own.p != NULL ? own.p : "", own.len);
	objfs_buf_release(&own);
	return err != 0 ? err : objfs_buf_err(out);
}
