/*
 * s3_meter.c - what only the S3 leaf sees of its requests, counted into
 * the registry the store was made with (objfs_s3_config.metrics): HTTP
 * answers by method and status, transport failures by kind (stalls and
 * timeouts among them), and whether a request found a pooled connection
 * or opened a new one.  s3_req.c calls s3_meter_note() once per request;
 * without a registry every family is NULL and nothing is counted.
 *
 *   objfs_s3_http_requests_total{method,code}    counter
 *   objfs_s3_transport_errors_total{kind}        counter
 *   objfs_s3_connections_total{reused}           counter
 *   objfs_s3_slow_server_waits_total             counter
 */
#include "config.h"

#include <string.h>

#include "backend/s3_int.h"
#include "common/metrics.h"

static const char *const methods[] = { "GET", "HEAD", "PUT", "POST", "DELETE", "other" };
#define N_METHODS (sizeof(methods) / sizeof(methods[0]))

/* The statuses S3 answers with; others are counted by class. */
static const char *const codes[] = {
	"200", "204", "206", "304", "400", "403", "404", "405", "409", "412",
	"416", "429", "500", "501", "502", "503", "504",
	"1xx", "2xx", "3xx", "4xx", "5xx",
};
#define N_CODES (sizeof(codes) / sizeof(codes[0]))
#define FIRST_CLASS 17

static const char *const kinds[] = { "stall", "timeout", "connect", "other" };
static const char *const reused[] = { "false", "true" };

static const struct objfs_metric_def def_http = {
	.name = "objfs_s3_http_requests_total",
	.help = "HTTP requests answered by the S3 server, by method and status code.",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "method", methods, N_METHODS }, { "code", codes, N_CODES } },
	.n_labels = 2,
	.sparse = true,
};

static const struct objfs_metric_def def_transport = {
	.name = "objfs_s3_transport_errors_total",
	.help = "S3 requests that got no HTTP answer: stall (silent past the stall threshold while other transfers moved), timeout (curl's limits, among them the low-speed limit), connect (refused or unreachable), other.",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "kind", kinds, 4 } },
	.n_labels = 1,
};

static const struct objfs_metric_def def_conns = {
	.name = "objfs_s3_connections_total",
	.help = "S3 requests by whether they reused a pooled connection (true) or opened a new one (false).",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "reused", reused, 2 } },
	.n_labels = 1,
};

static const struct objfs_metric_def def_slow_waits = {
	.name = "objfs_s3_slow_server_waits_total",
	.help = "S3 transfers silent past the stall threshold that were not abandoned, because no transfer of the store moved a byte since their last (the server was slow for everyone).",
	.type = OBJFS_METRIC_COUNTER,
};

int s3_meter_init(struct s3_meter *m, struct objfs_metrics *reg)
{
	int err;

	memset(m, 0, sizeof(*m));
	err = objfs_metrics_register(reg, &def_http, &m->http);
	if (err == 0)
		err = objfs_metrics_register(reg, &def_transport, &m->transport);
	if (err == 0)
		err = objfs_metrics_register(reg, &def_conns, &m->conns);
	if (err == 0)
		err = objfs_metrics_register(reg, &def_slow_waits,
					     &m->slow_waits);
	return err;
}

static size_t code_index(long st)
{
	static const long known[FIRST_CLASS] = {
		200, 204, 206, 304, 400, 403, 404, 405, 409, 412, 416, 429,
		500, 501, 502, 503, 504,
	};
	size_t i;

	for (i = 0; i < FIRST_CLASS; i++)
		if (known[i] == st)
			return i;
	if (st >= 100 && st < 600)
		return FIRST_CLASS + (size_t)(st / 100 - 1);
	return N_CODES;         /* clamped to the last: 5xx */
}

void s3_meter_note(const struct s3_meter *m, const struct s3_req *r,
		   CURL *h, CURLcode cc)
{
	size_t idx[2], mi;
	long conns = 0;

	if (m->http == NULL)
		return;
	if (cc != CURLE_OK && r->sink_err == 0 && r->src_err == 0) {
		size_t kind = r->stalled ? 0 :
			      cc == CURLE_OPERATION_TIMEDOUT ? 1 :
			      cc == CURLE_COULDNT_CONNECT ||
			      cc == CURLE_COULDNT_RESOLVE_HOST ? 2 : 3;

		objfs_metric_add(m->transport, kind, 1);
	}
	if (r->status <= 0)
		return;
	for (mi = 0; mi < N_METHODS - 1 && strcmp(methods[mi], r->method) != 0; mi++)
		;
	idx[0] = mi;
	idx[1] = code_index(r->status);
	objfs_metric_add(m->http, objfs_metric_index(m->http, idx), 1);
	if (curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns) == CURLE_OK)
		objfs_metric_add(m->conns, conns == 0 ? 1 : 0, 1);
}
