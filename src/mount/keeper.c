/*
 * keeper.c - the keeper of a resumable mount (see keeper.h).
 *
 * One thread, one poll() loop, everything in one struct keeper made at
 * start: no allocation in the loop, no S3, no threads.  It never reads the
 * fuse fd: it polls it with events = 0, so POLLERR says the connection is
 * gone (unmounted or aborted).
 *
 * States of the server slot:
 *   none      -> spawn (first server, or a successor after a death)
 *   running   the server pid is alive; ssock is its socket
 *   stopping  KOP_STOP sent (planned handover): a successor waits
 * A successor (next) is started on a death, or on SIGUSR2 for a new
 * binary; it asks for the fd (KOP_GET) and gets it only once the current
 * server is reaped, so no request can run twice.  A server that said
 * KOP_BYE ended the mount: the keeper exits with its status.  Five deaths
 * (planned handovers do not count) within 30 s give up: the fd is closed, the mount fails (ENOTCONN) and
 * the node's watchdog remounts, as without a keeper.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "mount/keeper.h"

#define SUB "keeper"
#define DEATHS_MAX 5
#define DEATHS_WINDOW 30.0

int objfs_kmsg_send(int sock, const struct objfs_kmsg *m, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno;
	return n == (ssize_t)sizeof(*m) ? 0 : EPROTO;
}

int objfs_kmsg_recv(int sock, struct objfs_kmsg *m, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno;
	if (n == 0)
		return ECONNRESET;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	}
	if (n != (ssize_t)sizeof(*m) || (mh.msg_flags & MSG_TRUNC) ||
	    m->len > sizeof(m->blob)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return EPROTO;
	}
	return 0;
}

struct keeper {
	const struct objfs_keeper_conf *c;
	struct objfs_log *log;
	char exe[4096];                 /* the binary path, read at start */
	int sfd;                        /* signalfd */
	int fuse_fd;                    /* our reference, or -1 */
	bool have_init;
	struct objfs_kmsg init;         /* KOP_INIT as the server sent it */
	pid_t server;                   /* 0: none */
	int ssock;
	bool stop_sent;                 /* KOP_STOP sent to server */
	bool bye;                       /* the server ended the mount */
	int bye_status;
	pid_t next;                     /* a successor starting, or 0 */
	int nsock;
	bool next_wants;                /* it sent KOP_GET */
	int pending_sig;                /* to forward once a server is ready */
	bool ready;                     /* the current server said KOP_READY */
	bool conn_gone;                 /* POLLERR on the fuse fd */
	int detach_fd;                  /* background: the waiting parent */
	int term_fd;                    /* background: the caller's stderr,
					   the first server's until ready */
	double deaths[DEATHS_MAX];
	unsigned n_deaths;
	struct objfs_kmsg msg;
};

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void kmsg_init(struct objfs_kmsg *m, uint32_t op)
{
	memset(m, 0, offsetof(struct objfs_kmsg, blob));
	m->op = op;
}

/* Forks and execs a server on a new socket pair: *sock gets the keeper's
 * end.  The pid or 0. */
static pid_t spawn(struct keeper *k, bool resume, int *sock)
{
	char num[16];
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		objfs_error(k->log, SUB, "socketpair: %s", strerror(errno));
		return 0;
	}
	pid = fork();
	if (pid < 0) {
		objfs_error(k->log, SUB, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	if (pid == 0) {
		sigset_t none;
		int fd = fcntl(sv[1], F_DUPFD, 3);     /* without CLOEXEC */

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (fd < 0)
			_exit(127);
		/* its errors before it is ready reach the caller */
		if (k->term_fd >= 0)
			dup2(k->term_fd, STDERR_FILENO);
		snprintf(num, sizeof(num), "%d", fd);
		setenv(OBJFS_KEEPER_ENV, num, 1);
		if (resume)
			setenv(OBJFS_RESUME_ENV, "1", 1);
		else
			unsetenv(OBJFS_RESUME_ENV);
		execv(k->exe, k->c->argv);
		_exit(127);
	}
	close(sv[1]);
	*sock = sv[0];
	objfs_info(k->log, SUB, "%s pid %d started", resume ? "successor" : "server",
		   (int)pid);
	return pid;
}

static void give_fd(struct keeper *k)
{
	struct objfs_kmsg *m = &k->msg;
	int err;

	kmsg_init(m, KOP_FD);
	m->len = k->init.len;
	memcpy(m->blob, k->init.blob, k->init.len);
	err = objfs_kmsg_send(k->nsock, m, k->fuse_fd);
	if (err != 0)
		objfs_error(k->log, SUB, "handing the fd to pid %d: %s",
			    (int)k->next, strerror(err));
	else
		objfs_info(k->log, SUB, "mount handed to pid %d", (int)k->next);
	k->server = k->next;
	k->ssock = k->nsock;
	k->next = 0;
	k->nsock = -1;
	k->next_wants = false;
	k->stop_sent = false;
	k->ready = false;
}

/* A successor for a server that died (false: none can be started). */
static bool replace(struct keeper *k)
{
	double t = now_mono();
	unsigned i, recent = 0;

	if (k->fuse_fd < 0 || !k->have_init) {
		objfs_error(k->log, SUB, "the server died before the mount was "
			    "live: nothing to resume");
		return false;
	}
	if (k->conn_gone) {
		objfs_error(k->log, SUB, "the server died after the mount ended");
		return false;
	}
	for (i = 0; i < k->n_deaths; i++) {
		if (t - k->deaths[i] < DEATHS_WINDOW)
			recent++;
	}
	if (recent >= DEATHS_MAX) {
		objfs_error(k->log, SUB, "%u server deaths within %.0f s: giving "
			    "the mount up", recent, DEATHS_WINDOW);
		return false;
	}
	k->deaths[k->n_deaths++ % DEATHS_MAX] = t;
	if (k->n_deaths > DEATHS_MAX)
		k->n_deaths = DEATHS_MAX;
	if (k->next == 0)
		k->next = spawn(k, true, &k->nsock);
	return k->next != 0;
}

/* Reaps children; returns true when the keeper must exit (*status). */
static bool reap(struct keeper *k, int *status)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);

		if (pid == k->next) {
			objfs_error(k->log, SUB, "successor pid %d died (%d) "
				    "before taking the mount", (int)pid, code);
			close(k->nsock);
			k->nsock = -1;
			k->next = 0;
			k->next_wants = false;
			if (k->server == 0 && !replace(k)) {
				*status = 1;
				return true;
			}
			continue;
		}
		if (pid != k->server)
			continue;
		if (k->ssock >= 0)
			close(k->ssock);
		k->ssock = -1;
		k->server = 0;
		k->ready = false;
		if (k->bye) {
			*status = code == 0 ? k->bye_status : code;
			return true;
		}
		if (k->stop_sent && k->next != 0) {
			/* a planned handover, not a death */
			k->stop_sent = false;
			if (k->next_wants)
				give_fd(k);
			continue;
		}
		objfs_warn(k->log, SUB, "server pid %d died (%s %d): resuming "
			   "the mount", (int)pid, WIFEXITED(st) ? "status" : "signal",
			   WIFEXITED(st) ? code : WTERMSIG(st));
		k->stop_sent = false;
		if (!replace(k)) {
			*status = 1;
			return true;
		}
		if (k->next_wants)
			give_fd(k);
	}
	return false;
}

static void forward(struct keeper *k, int sig)
{
	if (k->server != 0 && k->ready) {
		kill(k->server, sig);
		k->pending_sig = 0;
	} else {
		k->pending_sig = sig;
	}
}

static void on_server_msg(struct keeper *k, int fd)
{
	struct objfs_kmsg *m = &k->msg;

	switch (m->op) {
	case KOP_PUT:
		if (fd < 0)
			break;
		if (k->fuse_fd >= 0)
			close(k->fuse_fd);
		k->fuse_fd = fd;
		fd = -1;
		break;
	case KOP_INIT:
		k->init = *m;
		k->have_init = true;
		break;
	case KOP_READY:
		k->ready = true;
		if (k->detach_fd >= 0) {
			(void)!write(k->detach_fd, "R", 1);
			close(k->detach_fd);
			k->detach_fd = -1;
			close(k->term_fd);
			k->term_fd = -1;
		}
		if (k->pending_sig != 0)
			forward(k, k->pending_sig);
		break;
	case KOP_BYE:
		k->bye = true;
		k->bye_status = m->status;
		break;
	default:
		break;
	}
	if (fd >= 0)
		close(fd);
}

static void on_next_msg(struct keeper *k)
{
	if (k->msg.op == KOP_PEEK) {
		(void)objfs_kmsg_send(k->nsock, &k->init, -1);
		return;
	}
	if (k->msg.op != KOP_GET)
		return;
	k->next_wants = true;
	if (k->server == 0) {
		give_fd(k);
	} else if (!k->stop_sent) {
		struct objfs_kmsg *m = &k->msg;

		kmsg_init(m, KOP_STOP);
		(void)objfs_kmsg_send(k->ssock, m, -1);
		k->stop_sent = true;
		objfs_info(k->log, SUB, "pid %d waits: stop sent to pid %d",
			   (int)k->next, (int)k->server);
	}
}

/* Background mode: the calling process waits until the first server is
 * ready, the keeper goes on detached.  Returns in the keeper only. */
static int detach(struct keeper *k)
{
	int p[2], fd;
	pid_t pid;
	char b = 0;

	if (pipe2(p, O_CLOEXEC) != 0)
		return errno;
	pid = fork();
	if (pid < 0)
		return errno;
	if (pid > 0) {
		close(p[1]);
		while (read(p[0], &b, 1) < 0 && errno == EINTR)
			;
		_exit(b == 'R' ? 0 : 1);
	}
	close(p[0]);
	setsid();
	if (chdir("/") != 0)
		return errno;
	k->term_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	/* as a detached objfs-mount without resume: log_file= or syslog */
	objfs_log_redirect(k->log, k->c->log_fd, "objfs-mount");
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	k->detach_fd = p[1];
	return 0;
}

static int keeper_setup(struct keeper *k)
{
	sigset_t set;
	ssize_t n;

	n = readlink("/proc/self/exe", k->exe, sizeof(k->exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(k->exe) - 1)
		return errno ? errno : ENAMETOOLONG;
	k->exe[n] = '\0';
	/* a binary replaced by an upgrade is the new one at the same path */
	if (n > 10 && strcmp(k->exe + n - 10, " (deleted)") == 0)
		k->exe[n - 10] = '\0';
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	k->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (k->sfd < 0)
		return errno;
	if (!k->c->foreground)
		return detach(k);
	return 0;
}

/* One signal; true when the keeper must exit (*status). */
static bool on_signal(struct keeper *k, const struct signalfd_siginfo *si,
		      int *status)
{
	int sig = (int)si->ssi_signo;

	if (sig == SIGCHLD)
		return reap(k, status);
	if (sig == SIGUSR2) {
		if (k->next == 0 && k->server != 0 && k->have_init) {
			objfs_info(k->log, SUB, "SIGUSR2: handing the mount to %s",
				   k->exe);
			k->next = spawn(k, true, &k->nsock);
		}
		return false;
	}
	forward(k, sig);
	return false;
}

int objfs_keeper_run(const struct objfs_keeper_conf *conf)
{
	struct keeper k;
	int status = 1, err;

	memset(&k, 0, sizeof(k));
	k.c = conf;
	k.log = conf->log;
	k.fuse_fd = k.ssock = k.nsock = k.detach_fd = k.sfd = k.term_fd = -1;
	err = keeper_setup(&k);
	if (err != 0) {
		objfs_error(k.log, SUB, "starting: %s", strerror(err));
		goto out;
	}
	k.server = spawn(&k, false, &k.ssock);
	if (conf->ready_fd >= 0)
		close(conf->ready_fd);  /* the first server has it */
	if (k.server == 0)
		goto out;
	for (;;) {
		struct pollfd pf[4];
		int n = 0, r, fd, i_s = -1, i_n = -1, i_f = -1;

		pf[n++] = (struct pollfd){ .fd = k.sfd, .events = POLLIN };
		if (k.ssock >= 0) {
			i_s = n;
			pf[n++] = (struct pollfd){ .fd = k.ssock, .events = POLLIN };
		}
		if (k.nsock >= 0) {
			i_n = n;
			pf[n++] = (struct pollfd){ .fd = k.nsock, .events = POLLIN };
		}
		if (k.fuse_fd >= 0 && !k.conn_gone) {
			i_f = n;
			pf[n++] = (struct pollfd){ .fd = k.fuse_fd, .events = 0 };
		}
		r = poll(pf, (nfds_t)n, -1);
		if (r < 0 && errno != EINTR) {
			objfs_error(k.log, SUB, "poll: %s", strerror(errno));
			goto out;
		}
		if (r <= 0)
			continue;
		if (i_s >= 0 && pf[i_s].revents) {
			err = objfs_kmsg_recv(k.ssock, &k.msg, &fd);
			if (err == 0) {
				on_server_msg(&k, fd);
			} else {
				/* EOF: its SIGCHLD follows */
				close(k.ssock);
				k.ssock = -1;
			}
		}
		if (i_n >= 0 && pf[i_n].revents && k.nsock == pf[i_n].fd) {
			err = objfs_kmsg_recv(k.nsock, &k.msg, &fd);
			if (fd >= 0)
				close(fd);
			if (err == 0)
				on_next_msg(&k);
		}
		if (i_f >= 0 && (pf[i_f].revents & (POLLERR | POLLHUP | POLLNVAL))) {
			objfs_info(k.log, SUB, "the FUSE connection ended");
			k.conn_gone = true;
		}
		if (pf[0].revents) {
			struct signalfd_siginfo si;

			while (read(k.sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (on_signal(&k, &si, &status))
					goto out;
			}
		}
	}
out:
	if (k.server != 0)
		kill(k.server, SIGTERM);
	if (k.next != 0)
		kill(k.next, SIGKILL);
	if (k.fuse_fd >= 0)
		close(k.fuse_fd);
	if (k.ssock >= 0)
		close(k.ssock);
	if (k.nsock >= 0)
		close(k.nsock);
	if (k.detach_fd >= 0)
		close(k.detach_fd);
	if (k.term_fd >= 0)
		close(k.term_fd);
	if (k.sfd >= 0)
		close(k.sfd);
	return status;
}
