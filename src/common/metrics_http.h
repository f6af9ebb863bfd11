/*
 * metrics_http.h - a tiny HTTP/1.0 responder for GET /metrics, and the
 * matching client over a unix socket (the node plugin scrapes its mounts).
 *
 * One thread serves a unix socket, a TCP address, or both, up to 16
 * clients at once in one poll loop: it reads each request head (at most
 * 8 KiB), answers GET /metrics with the text the render callback appends
 * (one render at a time), anything else with 404 or 405, and closes the
 * connection.  Each client has 5 s for its whole request and answer: a
 * slow one is cut off then, and delays no other meanwhile.
 *
 * The unix socket is bound under a temporary name and renamed into place,
 * so a successor (a resumed mount's next server) takes the name over at
 * once; stop removes it only when it is still this server's.  A path too
 * long for sockaddr_un is reached through /proc/self/fd of its directory.
 * A TCP port still held (a predecessor not yet gone) is tried again every
 * 200 ms until it is free.
 */
#ifndef OBJFS_COMMON_METRICS_HTTP_H
#define OBJFS_COMMON_METRICS_HTTP_H

#include <stddef.h>

#include "common/buf.h"

struct objfs_log;
struct objfs_metrics_server;

struct objfs_metrics_server_config {
	const char *unix_path;          /* NULL: no unix socket */
	const char *tcp;                /* "[ADDR:]PORT", NULL: none */
	/* appends the exposition to out; 0 or an errno (answered 500) */
	int (*render)(void *arg, struct objfs_buf *out);
	void *arg;
	struct objfs_log *log;          /* not owned; may be NULL */
};

/* Splits "[ADDR:]PORT" (ADDR an IPv4 address, a host name, or [IPv6];
 * no ADDR means 127.0.0.1) into host and port.  0 or EINVAL. */
int objfs_metrics_addr_parse(const char *s, char *host, size_t hostlen,
			     char *port, size_t portlen);

/* Binds what cfg names and starts the thread.  0 or an errno (the log says
 * which address failed); *out is freed by objfs_metrics_server_stop. */
int objfs_metrics_server_start(const struct objfs_metrics_server_config *cfg,
			       struct objfs_metrics_server **out);

/* Stops the thread, closes the sockets, removes the unix socket when it is
 * still this server's.  NULL is fine. */
void objfs_metrics_server_stop(struct objfs_metrics_server *srv);

/* GET /metrics over the unix socket at path, waiting at most timeout_ms in
 * all; the body is appended to out.  0, ECONNREFUSED/ENOENT (nobody
 * serves), ETIMEDOUT, EPROTO (not a 200 answer) or out's error. */
int objfs_metrics_fetch_unix(const char *path, int timeout_ms,
			     struct objfs_buf *out);

/* What the responder answers the request head (len bytes; NUL bytes are
 * bytes like others, nothing past len is read): 200 for GET /metrics or
 * /metrics?QUERY, 405 for anything but GET, 404 for any other target. */
int objfs_metrics_http_route(const char *head, size_t len);

/* Where the body of an answer (len bytes, nothing past them read) starts:
 * 0 with *body the offset just past the first blank line (CR LF CR LF)
 * for an "HTTP/1.D 200" status line, EPROTO for any other answer or one
 * with no end of head. */
int objfs_metrics_http_body(const char *ans, size_t len, size_t *body);

#endif
