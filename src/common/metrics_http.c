/*
 * metrics_http.c - the /metrics responder and its unix-socket client (see
 * metrics_http.h).
 *
 * Thread: one poll loop over the listeners, the wake pipe and up to
 * CONN_MAX clients, each non-blocking:
 *   accepted -> reading its head -> (head complete or the client stopped)
 *   render -> sending the answer -> closed
 * and closed at any step once IO_TIMEOUT_S has passed since it was
 * accepted, so a client that sends a byte every few seconds delays nobody
 * else and holds its slot for IO_TIMEOUT_S at most.  Until stop writes to
 * the wake pipe.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/io.h"
#include "common/log.h"
#include "common/metrics_http.h"

#define HEAD_MAX 8192
#define BODY_MAX (64u << 20)
#define IO_TIMEOUT_S 5         /* a whole request, head and answer */
#define CONN_MAX 16             /* clients served at once */
#define SUB "metrics"

struct objfs_metrics_server {
	struct objfs_metrics_server_config c;
	char *unix_path;
	char *host, *port;              /* TCP, when asked */
	int unix_fd, tcp_fd;
	dev_t unix_dev;
	ino_t unix_ino;
	int wake[2];
	pthread_t thread;
	bool started;
	bool tcp_waiting;               /* the port is still held: retrying */
};

int objfs_metrics_addr_parse(const char *s, char *host, size_t hostlen,
			     char *port, size_t portlen)
{
	const char *colon, *p;
	size_t hl;

	if (s == NULL || s[0] == '\0')
		return EINVAL;
	if (s[0] == '[') {
		const char *e = strchr(s, ']');

		if (e == NULL || e[1] != ':')
			return EINVAL;
		hl = (size_t)(e - s - 1);
		if (hl == 0 || hl >= hostlen)
			return EINVAL;
		memcpy(host, s + 1, hl);
		host[hl] = '\0';
		p = e + 2;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL) {
			snprintf(host, hostlen, "127.0.0.1");
			p = s;
		} else {
			hl = (size_t)(colon - s);
			if (hl == 0 || hl >= hostlen || memchr(s, ':', hl) != NULL)
				return EINVAL;
			memcpy(host, s, hl);
			host[hl] = '\0';
			p = colon + 1;
		}
	}
	if (p[0] == '\0' || strspn(p, "0123456789") != strlen(p) ||
	    strlen(p) > 5 || atoi(p) < 1 || atoi(p) > 65535 || strlen(p) >= portlen)
		return EINVAL;
	snprintf(port, portlen, "%s", p);
	return 0;
}

/* sa for path; a path too long is reached through its directory's fd
 * (*dirfd, which the caller closes after bind or connect). */
static int unix_addr(const char *path, struct sockaddr_un *sa, int *dirfd)
{
	const char *slash;
	char dir[4096];

	*dirfd = -1;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) < sizeof(sa->sun_path)) {
		memcpy(sa->sun_path, path, strlen(path) + 1);
		return 0;
	}
	slash = strrchr(path, '/');
	if (slash == NULL || slash == path || (size_t)(slash - path) >= sizeof(dir))
		return ENAMETOOLONG;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	*dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd < 0)
		return errno;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s",
			     *dirfd, slash + 1) >= sizeof(sa->sun_path)) {
		close(*dirfd);
		*dirfd = -1;
		return ENAMETOOLONG;
	}
	return 0;
}

/* Binds a listening socket at path: under a temporary name first, then
 * renamed over whatever is there (a predecessor's socket). */
static int bind_unix(struct objfs_metrics_server *s)
{
	struct sockaddr_un sa;
	struct stat st;
	char tmp[4200];
	int fd = -1, dirfd = -1, err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%d.tmp", s->unix_path,
			     (int)getpid()) >= sizeof(tmp))
		return ENAMETOOLONG;
	err = unix_addr(tmp, &sa, &dirfd);
	if (err != 0)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = errno;
		goto out;
	}
	unlink(tmp);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(fd, 16) != 0 || chmod(tmp, 0600) != 0 ||
	    stat(tmp, &st) != 0 || rename(tmp, s->unix_path) != 0) {
		err = errno;
		unlink(tmp);
		goto out;
	}
	s->unix_dev = st.st_dev;
	s->unix_ino = st.st_ino;
	s->unix_fd = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	return err;
}

static int bind_tcp(struct objfs_metrics_server *s)
{
	struct addrinfo hints, *ai = NULL, *a;
	int fd = -1, err, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	err = getaddrinfo(s->host, s->port, &hints, &ai);
	if (err != 0)
		return EADDRNOTAVAIL;
	err = EADDRNOTAVAIL;
	for (a = ai; a != NULL; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 16) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return err;
	s->tcp_fd = fd;
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One client: its request head, then the answer being sent. */
struct conn {
	int fd;                         /* -1: a free slot */
	long long deadline_ms;          /* for the whole request */
	size_t got;
	char head[HEAD_MAX + 1];
	char *out;                      /* the answer (malloc'ed), or NULL */
	size_t out_len, out_off;
};

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
}

/* Makes c's answer: status line, head and body. */
static void answer(struct conn *c, int status, const char *reason,
		   const char *body, size_t len)
{
	char head[256];
	int n;

	n = snprintf(head, sizeof(head),
		     "HTTP/1.0 %d %s\r\n"
		     "Content-Type: %s\r\n"
		     "Content-Length: %zu\r\n"
		     "Connection: close\r\n\r\n", status, reason,
		     status == 200 ? "text/plain; version=0.0.4; charset=utf-8" :
		     "text/plain; charset=utf-8", len);
	c->out = malloc((size_t)n + len);
	if (c->out == NULL) {
		conn_close(c);
		return;
	}
	memcpy(c->out, head, (size_t)n);
	memcpy(c->out + n, body, len);
	c->out_len = (size_t)n + len;
	c->out_off = 0;
}

int objfs_metrics_http_route(const char *head, size_t len)
{
	static const char path[] = "/metrics";
	const size_t pl = sizeof(path) - 1;
	size_t i;

	if (len < 4 || memcmp(head, "GET ", 4) != 0)
		return 405;
	/* the target: up to a space, a line's end or the head's */
	for (i = 4; i < len && head[i] != ' ' && head[i] != '\r' &&
	     head[i] != '\n'; i++)
		;
	if (i - 4 < pl || memcmp(head + 4, path, pl) != 0 ||
	    (i - 4 > pl && head[4 + pl] != '?'))
		return 404;
	return 200;
}

/* The head is in (or the client stopped sending): the answer. */
static void respond(struct objfs_metrics_server *s, struct conn *c)
{
	int route;

	if (c->got == 0) {
		conn_close(c);
		return;
	}
	route = objfs_metrics_http_route(c->head, c->got);
	if (route == 405) {
		answer(c, 405, "Method Not Allowed", "only GET\n", 9);
		return;
	}
	if (route == 404) {
		answer(c, 404, "Not Found", "see /metrics\n", 13);
		return;
	}
	{
		struct objfs_buf b = OBJFS_BUF_INIT(BODY_MAX, EFBIG);
		int err = s->c.render(s->c.arg, &b);

		if (err == 0)
			answer(c, 200, "OK", b.p != NULL ? b.p : "", b.len);
		else
			answer(c, 500, "Internal Server Error", "render failed\n", 14);
		objfs_buf_release(&b);
	}
}

/* c is readable: more of its head. */
static void conn_read(struct objfs_metrics_server *s, struct conn *c)
{
	ssize_t k = recv(c->fd, c->head + c->got, HEAD_MAX - c->got, 0);

	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (k > 0) {
		c->got += (size_t)k;
		c->head[c->got] = '\0';
		if (memmem(c->head, c->got, "\r\n\r\n", 4) == NULL &&
		    memmem(c->head, c->got, "\n\n", 2) == NULL && c->got < HEAD_MAX)
			return;
	} else if (k < 0) {
		conn_close(c);
		return;
	}
	respond(s, c);
}

/* c is writable: more of its answer; closed once sent. */
static void conn_write(struct conn *c)
{
	ssize_t k = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
			 MSG_NOSIGNAL);

	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (k <= 0) {
		conn_close(c);
		return;
	}
	c->out_off += (size_t)k;
	if (c->out_off == c->out_len)
		conn_close(c);
}

static void *serve_main(void *arg)
{
	struct objfs_metrics_server *s = arg;
	struct conn *conns = calloc(CONN_MAX, sizeof(*conns));
	struct pollfd p[3 + CONN_MAX];
	int slot[3 + CONN_MAX];
	size_t i;

	if (conns == NULL) {
		objfs_error(s->c.log, SUB, "serving metrics: %s", objfs_strerror(ENOMEM));
		return NULL;
	}
	for (i = 0; i < CONN_MAX; i++)
		conns[i].fd = -1;
	for (;;) {
		long long now = now_ms(), wait = -1;
		int n = 0, nl, r, j, used = 0;

		for (i = 0; i < CONN_MAX; i++) {
			if (conns[i].fd >= 0 && conns[i].deadline_ms <= now)
				conn_close(&conns[i]);  /* too slow: cut off */
			if (conns[i].fd < 0)
				continue;
			used++;
			if (wait < 0 || conns[i].deadline_ms - now < wait)
				wait = conns[i].deadline_ms - now;
		}
		if (s->tcp_waiting && (wait < 0 || wait > 200))
			wait = 200;
		p[n].fd = s->wake[0];
		p[n++].events = POLLIN;
		/* a full table takes no new client until a slot is free (a
		 * deadline frees one within IO_TIMEOUT_S) */
		if (s->unix_fd >= 0 && used < CONN_MAX) {
			p[n].fd = s->unix_fd;
			p[n++].events = POLLIN;
		}
		if (s->tcp_fd >= 0 && used < CONN_MAX) {
			p[n].fd = s->tcp_fd;
			p[n++].events = POLLIN;
		}
		nl = n;
		for (i = 0; i < CONN_MAX; i++) {
			if (conns[i].fd < 0)
				continue;
			slot[n] = (int)i;
			p[n].fd = conns[i].fd;
			p[n++].events = conns[i].out != NULL ? POLLOUT : POLLIN;
		}
		r = poll(p, (nfds_t)n, (int)wait);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0 && p[0].revents != 0)
			break;
		if (s->tcp_waiting && bind_tcp(s) == 0) {
			s->tcp_waiting = false;
			objfs_info(s->c.log, SUB, "serving metrics on %s:%s", s->host, s->port);
		}
		for (j = nl; r > 0 && j < n; j++) {
			struct conn *c = &conns[slot[j]];

			if (p[j].revents == 0 || c->fd != p[j].fd)
				continue;
			if (c->out != NULL && (p[j].revents & (POLLOUT | POLLERR | POLLHUP)))
				conn_write(c);
			else if (c->out == NULL)
				conn_read(s, c);
		}
		for (j = 1; r > 0 && j < nl; j++) {
			int fd;

			if (!(p[j].revents & POLLIN))
				continue;
			for (i = 0; i < CONN_MAX && conns[i].fd >= 0; i++)
				;
			if (i == CONN_MAX)
				break;
			fd = accept4(p[j].fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (fd < 0)
				continue;
			conns[i].fd = fd;
			conns[i].got = 0;
			conns[i].head[0] = '\0';
			conns[i].deadline_ms = now_ms() + IO_TIMEOUT_S * 1000;
		}
	}
	for (i = 0; i < CONN_MAX; i++)
		conn_close(&conns[i]);
	free(conns);
	return NULL;
}

void objfs_metrics_server_stop(struct objfs_metrics_server *s)
{
	struct stat st;

	if (s == NULL)
		return;
	if (s->started) {
		ssize_t k = write(s->wake[1], "x", 1);

		(void)k;
		pthread_join(s->thread, NULL);
	}
	if (s->unix_fd >= 0) {
		close(s->unix_fd);
		/* a successor may have taken the name over */
		if (stat(s->unix_path, &st) == 0 && st.st_dev == s->unix_dev &&
		    st.st_ino == s->unix_ino)
			unlink(s->unix_path);
	}
	if (s->tcp_fd >= 0)
		close(s->tcp_fd);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	free(s->unix_path);
	free(s->host);
	free(s->port);
	free(s);
}

int objfs_metrics_server_start(const struct objfs_metrics_server_config *cfg,
			       struct objfs_metrics_server **out)
{
	struct objfs_metrics_server *s;
	char host[256], port[8];
	sigset_t all, old;
	int err = 0;

	*out = NULL;
	if (cfg->render == NULL || (cfg->unix_path == NULL && cfg->tcp == NULL))
		return EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return ENOMEM;
	s->c = *cfg;
	s->unix_fd = s->tcp_fd = -1;
	s->wake[0] = s->wake[1] = -1;
	if (pipe2(s->wake, O_CLOEXEC) != 0) {
		err = errno;
		goto fail;
	}
	if (cfg->unix_path != NULL) {
		s->unix_path = strdup(cfg->unix_path);
		if (s->unix_path == NULL) {
			err = ENOMEM;
			goto fail;
		}
		err = bind_unix(s);
		if (err != 0) {
			objfs_error(cfg->log, SUB, "metrics socket %s: %s", cfg->unix_path,
				    objfs_strerror(err));
			goto fail;
		}
	}
	if (cfg->tcp != NULL) {
		err = objfs_metrics_addr_parse(cfg->tcp, host, sizeof(host), port,
					       sizeof(port));
		if (err == 0) {
			s->host = strdup(host);
			s->port = strdup(port);
			if (s->host == NULL || s->port == NULL)
				err = ENOMEM;
		}
		if (err == 0)
			err = bind_tcp(s);
		if (err == EADDRINUSE) {
			/* a predecessor still holds it: the thread retries */
			objfs_warn(cfg->log, SUB, "metrics address %s is in use; "
				   "trying again until it is free", cfg->tcp);
			s->tcp_waiting = true;
			err = 0;
		}
		if (err != 0) {
			objfs_error(cfg->log, SUB, "metrics address %s: %s", cfg->tcp,
				    objfs_strerror(err));
			goto fail;
		}
	}
	/* the thread takes no signal the process waits for */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&s->thread, NULL, serve_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0)
		goto fail;
	s->started = true;
	*out = s;
	return 0;
fail:
	objfs_metrics_server_stop(s);
	return err;
}

/* ---- the client ------------------------------------------------------------ */

static int wait_fd(int fd, short ev, long long deadline)
{
	struct pollfd p = { fd, ev, 0 };
	long long left = deadline - objfs_now_ms();
	int r;

	if (left <= 0)
		return ETIMEDOUT;
	r = poll(&p, 1, (int)left);
	if (r < 0)
		return errno == EINTR ? 0 : errno;
	return r == 0 ? ETIMEDOUT : 0;
}

int objfs_metrics_http_body(const char *ans, size_t len, size_t *body)
{
	static const char ok[] = " 200";
	const char *e;

	/* "HTTP/1.D 200" and the status line's reason or end */
	if (len < 13 || memcmp(ans, "HTTP/1.", 7) != 0 ||
	    ans[7] < '0' || ans[7] > '9' || memcmp(ans + 8, ok, 4) != 0 ||
	    (ans[12] != ' ' && ans[12] != '\r' && ans[12] != '\n'))
		return EPROTO;
	e = memmem(ans, len, "\r\n\r\n", 4);
	if (e == NULL)
		return EPROTO;
	*body = (size_t)(e - ans) + 4;
	return 0;
}

int objfs_metrics_fetch_unix(const char *path, int timeout_ms,
			     struct objfs_buf *out)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	struct objfs_buf b = OBJFS_BUF_INIT(BODY_MAX + HEAD_MAX, EFBIG);
	long long deadline = objfs_now_ms() + timeout_ms;
	struct sockaddr_un sa;
	char chunk[16384];
	size_t sent = 0, body;
	int fd = -1, dirfd = -1, err;

	err = unix_addr(path, &sa, &dirfd);
	if (err != 0)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = errno;
		goto out;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = errno == EAGAIN ? ECONNREFUSED : errno;
		goto out;
	}
	while (sent < sizeof(req) - 1) {
		ssize_t k = send(fd, req + sent, sizeof(req) - 1 - sent, MSG_NOSIGNAL);

		if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			err = wait_fd(fd, POLLOUT, deadline);
			if (err != 0)
				goto out;
			continue;
		}
		if (k <= 0) {
			err = k < 0 ? errno : EPROTO;
			goto out;
		}
		sent += (size_t)k;
	}
	for (;;) {
		ssize_t k = recv(fd, chunk, sizeof(chunk), 0);

		if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			err = wait_fd(fd, POLLIN, deadline);
			if (err != 0)
				goto out;
			continue;
		}
		if (k < 0) {
			err = errno;
			goto out;
		}
		if (k == 0)
			break;
		objfs_buf_add(&b, chunk, (size_t)k);
		if (objfs_buf_err(&b) != 0) {
			err = objfs_buf_err(&b);
			goto out;
		}
	}
	err = objfs_metrics_http_body(b.p != NULL ? b.p : "", b.len, &body);
	if (err != 0)
		goto out;
	objfs_buf_add(out, b.p + body, b.len - body);
	err = objfs_buf_err(out);
out:
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	objfs_buf_release(&b);
	return err;
}
