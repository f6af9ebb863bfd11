/*
 * metrics_http.c - the /metrics responder and its unix-socket client (see
 * metrics_http.h).
 *
 * Thread: poll(listeners + wake pipe) -> accept -> read the head -> render
 * -> write -> close, until stop writes to the wake pipe.
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
#define IO_TIMEOUT_S 5
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

static void send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		p += k;
		n -= (size_t)k;
	}
}

static void answer(struct objfs_metrics_server *s, int fd, int status,
		   const char *reason, const char *body, size_t len)
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
	(void)s;
	send_all(fd, head, (size_t)n);
	send_all(fd, body, len);
}

static void serve_one(struct objfs_metrics_server *s, int fd)
{
	struct timeval tv = { IO_TIMEOUT_S, 0 };
	char head[HEAD_MAX + 1];
	size_t got = 0;
	char *sp;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (got < HEAD_MAX) {
		ssize_t k = recv(fd, head + got, HEAD_MAX - got, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
		head[got] = '\0';
		if (strstr(head, "\r\n\r\n") != NULL || strstr(head, "\n\n") != NULL)
			break;
	}
	head[got] = '\0';
	if (got == 0)
		return;
	if (strncmp(head, "GET ", 4) != 0) {
		answer(s, fd, 405, "Method Not Allowed", "only GET\n", 9);
		return;
	}
	sp = strchr(head + 4, ' ');
	if (sp == NULL)
		sp = head + strcspn(head, "\r\n");
	*sp = '\0';
	if (strcmp(head + 4, "/metrics") != 0 &&
	    strncmp(head + 4, "/metrics?", 9) != 0) {
		answer(s, fd, 404, "Not Found", "see /metrics\n", 13);
		return;
	}
	{
		struct objfs_buf b = OBJFS_BUF_INIT(BODY_MAX, EFBIG);
		int err = s->c.render(s->c.arg, &b);

		if (err == 0 && b.p != NULL)
			answer(s, fd, 200, "OK", b.p, b.len);
		else if (err == 0)
			answer(s, fd, 200, "OK", "", 0);
		else
			answer(s, fd, 500, "Internal Server Error", "render failed\n", 14);
		objfs_buf_release(&b);
	}
}

static void *serve_main(void *arg)
{
	struct objfs_metrics_server *s = arg;

	for (;;) {
		struct pollfd p[3];
		int n = 0, i, r;

		p[n].fd = s->wake[0];
		p[n++].events = POLLIN;
		if (s->unix_fd >= 0) {
			p[n].fd = s->unix_fd;
			p[n++].events = POLLIN;
		}
		if (s->tcp_fd >= 0) {
			p[n].fd = s->tcp_fd;
			p[n++].events = POLLIN;
		}
		r = poll(p, (nfds_t)n, s->tcp_waiting ? 200 : -1);
		if (r < 0 && errno != EINTR)
			break;
		if (p[0].revents != 0)
			break;
		if (s->tcp_waiting && bind_tcp(s) == 0) {
			s->tcp_waiting = false;
			objfs_info(s->c.log, SUB, "serving metrics on %s:%s", s->host, s->port);
		}
		for (i = 1; i < n && r > 0; i++) {
			int fd;

			if (!(p[i].revents & POLLIN))
				continue;
			fd = accept4(p[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			serve_one(s, fd);
			close(fd);
		}
	}
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

int objfs_metrics_fetch_unix(const char *path, int timeout_ms,
			     struct objfs_buf *out)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	struct objfs_buf b = OBJFS_BUF_INIT(BODY_MAX + HEAD_MAX, EFBIG);
	long long deadline = objfs_now_ms() + timeout_ms;
	struct sockaddr_un sa;
	char chunk[16384];
	const char *body;
	size_t sent = 0;
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
	if (b.p == NULL || strncmp(b.p, "HTTP/1.", 7) != 0 ||
	    strncmp(b.p + 8, " 200", 4) != 0) {
		err = EPROTO;
		goto out;
	}
	body = strstr(b.p, "\r\n\r\n");
	if (body == NULL) {
		err = EPROTO;
		goto out;
	}
	body += 4;
	objfs_buf_add(out, body, b.len - (size_t)(body - b.p));
	err = objfs_buf_err(out);
out:
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	objfs_buf_release(&b);
	return err;
}
