/*
 * fuzz_metrics_http.c - the two sides of the /metrics exchange
 * (common/metrics_http.c): the request head the responder reads from any
 * client of its socket or port (objfs_metrics_http_route), and the answer
 * the node plugin's client reads from a mount's socket
 * (objfs_metrics_http_body).  Both get the input as it came, in memory of
 * exactly its size with no NUL after it (ASan: nothing past it is read).
 *
 * Properties: the route is that of a model (405 unless the head starts
 * "GET ", 200 when the target, up to a space or a line's end, is /metrics
 * or /metrics?..., else 404; a NUL byte is an ordinary byte).  A body is
 * found only in a 200 answer ("HTTP/1.D 200" then a space or the line's
 * end), starts just past the first CR LF CR LF, and lies within the input;
 * any other answer is EPROTO.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/metrics_http.h"
#include "fuzz.h"

static int model_route(const uint8_t *d, size_t n)
{
	char *s = fuzz_dup(d, n), *t;
	size_t i;
	int r = 405;

	for (i = 0; i < n; i++)
		if (s[i] == '\0')
			s[i] = '\001';
	if (strncmp(s, "GET ", 4) == 0) {
		t = s + 4;
		t[strcspn(t, " \r\n")] = '\0';
		r = strcmp(t, "/metrics") == 0 || strncmp(t, "/metrics?", 9) == 0 ?
		    200 : 404;
	}
	free(s);
	return r;
}

static bool model_ok(const uint8_t *d, size_t n)
{
	return n >= 13 && memcmp(d, "HTTP/1.", 7) == 0 &&
	       d[7] >= '0' && d[7] <= '9' && memcmp(d + 8, " 200", 4) == 0 &&
	       strchr(" \r\n", d[12]) != NULL && d[12] != '\0';
}

/* The offset past the first CR LF CR LF, or 0. */
static size_t model_head_end(const uint8_t *d, size_t n)
{
	size_t i;

	for (i = 0; i + 4 <= n; i++)
		if (d[i] == '\r' && d[i + 1] == '\n' && d[i + 2] == '\r' &&
		    d[i + 3] == '\n')
			return i + 4;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = calloc(size > 0 ? size : 1, 1);
	size_t body = (size_t)-1;
	int rc;

	FUZZ_CHECK(in != NULL);
	if (size > 0)
		memcpy(in, data, size);
	FUZZ_CHECK(objfs_metrics_http_route(in, size) == model_route(data, size));

	rc = objfs_metrics_http_body(in, size, &body);
	FUZZ_CHECK(rc == 0 || rc == EPROTO);
	if (rc == 0) {
		FUZZ_CHECK(model_ok(data, size));
		FUZZ_CHECK(body >= 4 && body <= size);
		FUZZ_CHECK(body == model_head_end(data, size));
	} else {
		FUZZ_CHECK(!model_ok(data, size) || model_head_end(data, size) == 0);
	}
	free(in);
	return 0;
}
