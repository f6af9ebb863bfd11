/*
 * metrics_http.h - a tiny HTTP/1.0 responder for GET /metrics, and the
 * matching client over a unix socket (the node plugin scrapes its mounts).
 *
 * One thread serves one request at a time on a unix socket, a TCP
 * address, or both: it reads the request head (at most 8 KiB, 5 s),
 * answers GET /metrics with the text the render callback appends, anything
 * else with 404 or 405, and closes the connection.  Scrapes are rare
 * (every 15 s or so), so one thread is enough, and a slow client is cut
 * off by the timeouts.
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

#endif
