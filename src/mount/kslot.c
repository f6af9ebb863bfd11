/*
 * kslot.c - the messages of a resumable mount and the state machine of a
 * mount slot (see kslot.h).
 *
 * A slot reads one request from the fuse fd, the kernel's INIT (at once
 * when the first server hands the fd over, polling POLLIN should it not
 * be there yet), and writes one reply, INIT's (the exactly-once rule is
 * in kslot.h).  Otherwise it polls the fd with events = 0, so POLLERR
 * says the connection is gone (unmounted or aborted).  A successor (next)
 * is started on a death, for a planned handover (upgrade) or a takeover;
 * it asks for the fd (KOP_GET) and gets it only once the current server is
 * reaped (and, after a takeover, once the other holder's server is gone),
 * so no request can run twice.
 *
 * Invariants, asserted by kslot_check() in debug builds (without NDEBUG)
 * on entry to and exit from each call that changes the tables:
 *   a successor has its socket and nothing else does (next != 0 <=>
 *   nsock >= 0); no server, no server socket (server == 0 => ssock < 0);
 *   server and successor are two processes; an adopted server's pidfd
 *   belongs to a server, the foreign pidfd to a takeover (foreign); an
 *   answered INIT was read, and a read INIT is a whole objfs_kinit (an
 *   answered one with its reply); at most KSLOT_DEATHS_MAX deaths kept,
 *   at most KSLOT_POLLFDS descriptors polled, only KSLOT_EV_* events.
 */
#define _GNU_SOURCE
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "mount/kslot.h"

#define SUB "keeper"
#define DEATHS_WINDOW 30.0

enum { PK_SSOCK = 1, PK_NSOCK, PK_FUSE, PK_FOREIGN, PK_SPIDFD };

static bool server_died(struct objfs_kslot *s, pid_t pid, int st, bool known);
static void close_slot(struct objfs_kslot *s, int sig);

#define KSLOT_EV_ALL (KSLOT_EV_READY | KSLOT_EV_ENDED | KSLOT_EV_FOREIGN | \
		      KSLOT_EV_RELEASED)

/* The invariants of the head comment (no-op with NDEBUG). */
static void kslot_check(const struct objfs_kslot *s)
{
	const struct objfs_kinit *ki = (const void *)s->init.blob;

	assert((s->next != 0) == (s->nsock >= 0));
	assert(s->server != 0 || s->ssock < 0);
	assert(s->server == 0 || s->server != s->next);
	assert(s->server_pidfd < 0 || s->server != 0);
	assert(s->foreign_pidfd < 0 || s->foreign);
	assert(!s->init_answered || s->have_init);
	assert(!s->have_init || s->init.len == sizeof(struct objfs_kinit));
	assert(!s->init_answered || ki->rep_len > 0);
	assert(s->n_deaths <= KSLOT_DEATHS_MAX);
	assert(s->poll_n >= 0 && s->poll_n <= KSLOT_POLLFDS);
	assert((s->events & ~(unsigned)KSLOT_EV_ALL) == 0);
	(void)s;
	(void)ki;
}

int objfs_kpkt_send(int sock, const void *m, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * OBJFS_KFDS_MAX)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)m, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int attach[OBJFS_KFDS_MAX], n = 0, i;
	ssize_t r;

	for (i = 0; i < nfds && n < OBJFS_KFDS_MAX; i++) {
		if (fds[i] >= 0)
			attach[n++] = fds[i];
	}
	if (n > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
		memcpy(CMSG_DATA(c), attach, sizeof(int) * (size_t)n);
	}
	do
		r = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno;
	return r == (ssize_t)len ? 0 : EPROTO;
}

int objfs_kpkt_recv(int sock, void *m, size_t len, int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * OBJFS_KFDS_MAX)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = m, .iov_len = len };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c;
	int got = 0, i;
	ssize_t n;

	for (i = 0; i < nfds; i++)
		fds[i] = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < cnt; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (got < nfds)
				fds[got++] = fd;
			else
				close(fd);
		}
	}
	if (n == 0 && got == 0)
		return ECONNRESET;
	if (n != (ssize_t)len || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (i = 0; i < nfds; i++) {
			if (fds[i] >= 0)
				close(fds[i]);
			fds[i] = -1;
		}
		return n == 0 ? ECONNRESET : EPROTO;
	}
	return 0;
}

int objfs_kmsg_send(int sock, const struct objfs_kmsg *m, int fd)
{
	return objfs_kpkt_send(sock, m, sizeof(*m), &fd, 1);
}

int objfs_kmsg_recv(int sock, struct objfs_kmsg *m, int *fd)
{
	int err = objfs_kpkt_recv(sock, m, sizeof(*m), fd, 1);

	if (err == 0 && m->len > sizeof(m->blob)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return EPROTO;
	}
	return err;
}

static void kmsg_init(struct objfs_kmsg *m, uint32_t op)
{
	memset(m, 0, offsetof(struct objfs_kmsg, blob));
	m->op = op;
}

static struct objfs_kinit *kinit_of(struct objfs_kmsg *m)
{
	return (struct objfs_kinit *)(void *)m->blob;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void objfs_kslot_init(struct objfs_kslot *s)
{
	memset(s, 0, offsetof(struct objfs_kslot, msg));
	s->creds_fd = s->log_fd = s->fuse_fd = s->ssock = s->nsock = -1;
	s->foreign_pidfd = s->server_pidfd = -1;
}

/* In the child, between fork and exec (the owner is single-threaded). */
static void exec_server(struct objfs_kslot *s, int sock, bool resume, pid_t owner)
{
	char num[16];
	sigset_t none;
	int fd;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (s->die_with_owner &&
	    (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != owner))
		_exit(127);
	fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		char v[8] = "";

		/* an owner that protects itself (the holder: -1000) does not
		 * protect its servers */
		if (read(fd, v, sizeof(v) - 1) > 0 && v[0] == '-' &&
		    lseek(fd, 0, SEEK_SET) == 0)
			(void)!write(fd, "0", 1);
		close(fd);
	}
	if (s->log_fd >= 0) {
		dup2(s->log_fd, STDOUT_FILENO);
		dup2(s->log_fd, STDERR_FILENO);
	}
	fd = fcntl(sock, F_DUPFD, 3);     /* without CLOEXEC */
	if (fd < 0)
		_exit(127);
	snprintf(num, sizeof(num), "%d", fd);
	setenv(OBJFS_KEEPER_ENV, num, 1);
	if (resume)
		setenv(OBJFS_RESUME_ENV, "1", 1);
	else
		unsetenv(OBJFS_RESUME_ENV);
	if (s->die_with_owner || s->rejoin != NULL)
		unsetenv(OBJFS_KEEPER_REPLACE_ENV);
	else
		setenv(OBJFS_KEEPER_REPLACE_ENV, "1", 1);
	if (s->rejoin != NULL)
		setenv(OBJFS_REJOIN_ENV, s->rejoin, 1);
	else
		unsetenv(OBJFS_REJOIN_ENV);
	unsetenv(OBJFS_ADOPT_ENV);
	unsetenv(OBJFS_CREDS_FD_ENV);
	if (s->creds_fd >= 0) {
		fd = fcntl(s->creds_fd, F_DUPFD, 3);
		if (fd < 0)
			_exit(127);
		snprintf(num, sizeof(num), "%d", fd);
		setenv(OBJFS_CREDS_FD_ENV, num, 1);
	}
	execv(s->exe, s->argv);
	_exit(127);
}

/* Forks and execs a server on a new socket pair: *sock gets our end.  The
 * pid or 0. */
static pid_t spawn(struct objfs_kslot *s, bool resume, int *sock)
{
	pid_t pid, owner = getpid();
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		objfs_error(s->log, SUB, "%s: socketpair: %s", s->name, strerror(errno));
		return 0;
	}
	pid = fork();
	if (pid < 0) {
		objfs_error(s->log, SUB, "%s: fork: %s", s->name, strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	if (pid == 0)
		exec_server(s, sv[1], resume, owner);
	close(sv[1]);
	*sock = sv[0];
	objfs_info(s->log, SUB, "%s: %s pid %d started", s->name,
		   resume ? "successor" : "server", (int)pid);
	return pid;
}

static void ended(struct objfs_kslot *s, int status)
{
	s->events |= KSLOT_EV_ENDED;
	s->status = status;
	if (s->next != 0)
		kill(s->next, SIGKILL);
	close_fd(&s->fuse_fd);
}

static void give_fd(struct objfs_kslot *s)
{
	struct objfs_kmsg *m = &s->msg;
	int err;

	kmsg_init(m, KOP_FD);
	m->len = s->init.len;
	memcpy(m->blob, s->init.blob, s->init.len);
	err = objfs_kmsg_send(s->nsock, m, s->fuse_fd);
	if (err != 0)
		objfs_error(s->log, SUB, "%s: handing the fd to pid %d: %s", s->name,
			    (int)s->next, strerror(err));
	else
		objfs_info(s->log, SUB, "%s: mount handed to pid %d", s->name,
			   (int)s->next);
	s->server = s->next;
	s->ssock = s->nsock;
	s->next = 0;
	s->nsock = -1;
	s->next_wants = false;
	s->stop_sent = false;
	s->ready = false;
	s->peek_server = s->peek_next;
	s->peek_next = false;
}

/* The successor asked and nothing stands in the way: give it the fd. */
static void try_give(struct objfs_kslot *s)
{
	if (s->next == 0 || !s->next_wants || s->server != 0 || s->releasing)
		return;
	if (s->foreign) {
		if (!s->foreign_asked) {
			s->foreign_asked = true;
			s->events |= KSLOT_EV_FOREIGN;
		}
		return;
	}
	give_fd(s);
}

/* Releasing, and nothing of ours runs any more: tell the owner. */
static void check_released(struct objfs_kslot *s)
{
	if (s->releasing && s->server == 0 && s->next == 0)
		s->events |= KSLOT_EV_RELEASED;
}

/* Sends the INIT as the keeper has it (a KOP_PEEK's answer). */
static void send_init(struct objfs_kslot *s, int sock)
{
	(void)objfs_kmsg_send(sock, &s->init, -1);
}

/* Reads the kernel's INIT request, queued in the fd since mount(2), when
 * it is there (never blocks), and answers the KOP_PEEKs that wait. */
static void read_init(struct objfs_kslot *s)
{
	union {
		uint64_t align;
		uint8_t b[FUSE_MIN_READ_BUFFER];
	} buf;
	struct objfs_kinit *ki = kinit_of(&s->init);
	struct fuse_in_header in;
	struct pollfd p = { .fd = s->fuse_fd, .events = POLLIN };
	ssize_t n;

	if (s->have_init || s->fuse_fd < 0 || poll(&p, 1, 0) <= 0 ||
	    !(p.revents & POLLIN))
		return;
	/* buf: what the kernel takes for a read before INIT (8 KiB) */
	n = read(s->fuse_fd, buf.b, sizeof(buf.b));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	memset(&in, 0, sizeof(in));
	if (n >= (ssize_t)sizeof(in))
		memcpy(&in, buf.b, sizeof(in));
	if (n < (ssize_t)sizeof(in) || in.opcode != FUSE_INIT ||
	    (size_t)n > sizeof(ki->req)) {
		objfs_error(s->log, SUB, "%s: the kernel's first request is not INIT "
			    "(%s, opcode %u, %zd bytes): the mount cannot be served",
			    s->name, n < 0 ? strerror(errno) : "read", in.opcode, n);
		ended(s, 1);
		return;
	}
	memset(&s->init, 0, sizeof(s->init));
	s->init.op = KOP_INIT;
	s->init.len = sizeof(*ki);
	memcpy(ki->req, buf.b, (size_t)n);
	ki->req_len = (uint32_t)n;
	s->have_init = true;
	objfs_debug(s->log, SUB, "%s: the kernel's INIT read (%zd bytes)",
		    s->name, n);
	if (s->peek_server && s->ssock >= 0)
		send_init(s, s->ssock);
	if (s->peek_next && s->nsock >= 0)
		send_init(s, s->nsock);
	s->peek_server = s->peek_next = false;
}

/* Whether got is a reply to the INIT the keeper read. */
static bool init_reply_ok(struct objfs_kslot *s, const struct objfs_kinit *got)
{
	struct objfs_kinit *ki = kinit_of(&s->init);
	struct fuse_in_header in;
	struct fuse_out_header out;

	if (!s->have_init || s->msg.len != sizeof(*got) ||
	    got->req_len != ki->req_len ||
	    memcmp(got->req, ki->req, ki->req_len) != 0 ||
	    got->rep_len < sizeof(out) || got->rep_len > sizeof(got->rep))
		return false;
	memcpy(&in, ki->req, sizeof(in));
	memcpy(&out, got->rep, sizeof(out));
	return out.len == got->rep_len && out.unique == in.unique && out.error == 0;
}

/* Writes a server's INIT reply to the kernel, then records it: 0 or an
 * errno. */
static int write_init_reply(struct objfs_kslot *s, const struct objfs_kinit *got)
{
	struct objfs_kinit *ki = kinit_of(&s->init);
	ssize_t n;

	do
		n = write(s->fuse_fd, got->rep, got->rep_len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno;
	if (n != (ssize_t)got->rep_len)
		return EIO;
	/* written, then recorded: nobody writes it again */
	memcpy(ki->rep, got->rep, got->rep_len);
	ki->rep_len = got->rep_len;
	s->init_answered = true;
	return 0;
}

/* KOP_INIT from a server (sock; the current one, maybe dead by now, or a
 * successor): its INIT reply, written if INIT is not answered yet; the
 * answer is the exchange recorded and the status. */
static void on_init_reply(struct objfs_kslot *s, int sock)
{
	struct objfs_kinit got;
	int status = 0;

	memcpy(&got, s->msg.blob, sizeof(got));
	if (!init_reply_ok(s, &got)) {
		status = EPROTO;
		objfs_error(s->log, SUB, "%s: a malformed INIT reply: not written",
			    s->name);
	} else if (!s->init_answered) {
		status = write_init_reply(s, &got);
		if (status != 0)
			objfs_error(s->log, SUB, "%s: writing the INIT reply: %s",
				    s->name, strerror(status));
		else
			objfs_info(s->log, SUB, "%s: INIT answered", s->name);
	}
	s->msg = s->init;
	s->msg.status = status;
	(void)objfs_kmsg_send(sock, &s->msg, -1);
}

/* A KOP_PEEK on sock: the INIT now, or once it is read. */
static void on_peek(struct objfs_kslot *s, int sock, bool *waits)
{
	if (s->have_init)
		send_init(s, sock);
	else
		*waits = true;
}

/* A successor for a server that died (false: none can be started). */
static bool replace(struct objfs_kslot *s)
{
	double t = objfs_now_mono();
	unsigned i, recent = 0;

	if (s->fuse_fd >= 0 && !s->have_init)
		read_init(s);
	if (s->fuse_fd < 0 || !s->have_init) {
		/* a first server that could not mount said why (its "cause"
		 * error line above): a warning here, so that its line is the
		 * one error a reader or a supervisor finds */
		objfs_warn(s->log, SUB, "%s: the server ended before the mount "
			   "was live: nothing to resume", s->name);
		return false;
	}
	if (s->conn_gone) {
		objfs_error(s->log, SUB, "%s: the server died after the mount ended",
			    s->name);
		return false;
	}
	for (i = 0; i < s->n_deaths; i++) {
		if (t - s->deaths[i] < DEATHS_WINDOW)
			recent++;
	}
	if (recent >= KSLOT_DEATHS_MAX) {
		objfs_error(s->log, SUB, "%s: %u server deaths within %.0f s: giving "
			    "the mount up", s->name, recent, DEATHS_WINDOW);
		return false;
	}
	s->deaths[s->n_deaths++ % KSLOT_DEATHS_MAX] = t;
	if (s->n_deaths > KSLOT_DEATHS_MAX)
		s->n_deaths = KSLOT_DEATHS_MAX;
	if (s->next == 0)
		s->next = spawn(s, true, &s->nsock);
	return s->next != 0;
}

int objfs_kslot_start(struct objfs_kslot *s)
{
	kslot_check(s);
	s->server = spawn(s, false, &s->ssock);
	kslot_check(s);
	return s->server != 0 ? 0 : EAGAIN;
}

static int adopt(struct objfs_kslot *s, int fuse_fd,
		 const struct objfs_kmsg *init, int foreign_pidfd)
{
	s->fuse_fd = fcntl(fuse_fd, F_DUPFD_CLOEXEC, 3);
	if (s->fuse_fd < 0) {
		if (foreign_pidfd >= 0)
			close(foreign_pidfd);
		return errno;
	}
	s->init = *init;
	if (init->len != sizeof(struct objfs_kinit) ||
	    kinit_of(&s->init)->rep_len == 0) {
		close_fd(&s->fuse_fd);
		if (foreign_pidfd >= 0)
			close(foreign_pidfd);
		return EPROTO;
	}
	s->have_init = s->init_answered = true;
	s->foreign = true;
	s->foreign_pidfd = foreign_pidfd;
	s->next = spawn(s, true, &s->nsock);
	return s->next != 0 ? 0 : EAGAIN;
}

int objfs_kslot_adopt(struct objfs_kslot *s, int fuse_fd,
		      const struct objfs_kmsg *init, int foreign_pidfd)
{
	int err;

	kslot_check(s);
	err = adopt(s, fuse_fd, init, foreign_pidfd);
	kslot_check(s);
	return err;
}

static int adopt_server(struct objfs_kslot *s, int sock, int fuse_fd,
			const struct objfs_kmsg *init, pid_t pid, int pidfd)
{
	s->ssock = sock;
	s->fuse_fd = fuse_fd;
	s->init = *init;
	s->init.op = KOP_INIT;
	s->init.status = 0;
	if (init->len != sizeof(struct objfs_kinit) ||
	    kinit_of(&s->init)->rep_len == 0) {
		if (pidfd >= 0)
			close(pidfd);
		close_slot(s, 0);
		return EPROTO;
	}
	s->have_init = s->init_answered = true;
	s->server = pid;
	s->server_pidfd = pidfd;
	s->ready = true;
	objfs_info(s->log, SUB, "%s: keeping the mount of server pid %d, whose "
		   "keeper died", s->name, (int)pid);
	if (pidfd < 0)
		(void)server_died(s, pid, 0, false);
	return (s->events & KSLOT_EV_ENDED) ? EIO : 0;
}

int objfs_kslot_adopt_server(struct objfs_kslot *s, int sock, int fuse_fd,
			     const struct objfs_kmsg *init, pid_t pid,
			     int pidfd)
{
	int err;

	kslot_check(s);
	err = adopt_server(s, sock, fuse_fd, init, pid, pidfd);
	kslot_check(s);
	return err;
}

void objfs_kslot_foreign_gone(struct objfs_kslot *s)
{
	kslot_check(s);
	if (!s->foreign)
		return;
	s->foreign = false;
	close_fd(&s->foreign_pidfd);
	try_give(s);
	kslot_check(s);
}

static void on_server_msg(struct objfs_kslot *s, int fd);

/* What a dead server sent before it died (its FUSE fd, the INIT reply,
 * ready, bye) counts: the messages still queued on its socket are taken
 * before the death is handled (the reaping can come first). */
static void drain_server(struct objfs_kslot *s)
{
	struct pollfd p;
	int fd;

	while (s->ssock >= 0) {
		p = (struct pollfd){ .fd = s->ssock, .events = POLLIN };
		if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
			return;
		if (objfs_kmsg_recv(s->ssock, &s->msg, &fd) != 0)
			return;
		on_server_msg(s, fd);
	}
}

/* The server pid is gone: reaped (known: st is its wait status), or an
 * adopted server whose pidfd said so (its status unknown). */
static bool server_died(struct objfs_kslot *s, pid_t pid, int st, bool known)
{
	int code = !known ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) :
		   128 + WTERMSIG(st);

	drain_server(s);
	close_fd(&s->ssock);
	close_fd(&s->server_pidfd);
	s->peek_server = false;
	s->server = 0;
	s->ready = false;
	if (s->bye) {
		ended(s, !known || code == 0 ? s->bye_status : code);
		return true;
	}
	if (s->releasing) {
		s->stop_sent = false;
		check_released(s);
		return true;
	}
	if (s->stop_sent && s->next != 0) {
		/* a planned handover, not a death */
		s->stop_sent = false;
		try_give(s);
		return true;
	}
	s->stop_sent = false;
	if (s->ending) {
		objfs_warn(s->log, SUB, "%s: server pid %d ended (%s %d) while the "
			   "mount was being ended", s->name, (int)pid,
			   !known ? "status unknown" :
			   WIFEXITED(st) ? "status" : "signal",
			   !known ? 0 : WIFEXITED(st) ? code : WTERMSIG(st));
		ended(s, code ? code : 1);
		return true;
	}
	if (known)
		objfs_warn(s->log, SUB, "%s: server pid %d died (%s %d)", s->name,
			   (int)pid, WIFEXITED(st) ? "status" : "signal",
			   WIFEXITED(st) ? code : WTERMSIG(st));
	else
		objfs_warn(s->log, SUB, "%s: server pid %d died (not our child: "
			   "its status is unknown)", s->name, (int)pid);
	if (!replace(s)) {
		ended(s, 1);
		return true;
	}
	objfs_info(s->log, SUB, "%s: resuming the mount", s->name);
	try_give(s);
	return true;
}

/* Reaping: handles a death of the server or the successor. */
static bool child(struct objfs_kslot *s, pid_t pid, int st)
{
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);

	if (pid <= 0 || (pid != s->next && pid != s->server))
		return false;
	/* every death by a signal, in one form, whatever follows: tests fail
	 * on any signal but the SIGKILL they (or crash_at) send */
	if (WIFSIGNALED(st))
		objfs_warn(s->log, SUB, "%s: pid %d killed by signal %d (%s)",
			   s->name, (int)pid, WTERMSIG(st),
			   strsignal(WTERMSIG(st)));
	if (pid == s->next) {
		objfs_error(s->log, SUB, "%s: successor pid %d died (%d) before "
			    "taking the mount", s->name, (int)pid, code);
		close_fd(&s->nsock);
		s->next = 0;
		s->next_wants = false;
		s->peek_next = false;
		if (s->releasing) {
			check_released(s);
		} else if (s->foreign) {
			/* a takeover that failed: the other holder serves on */
			ended(s, code ? code : 1);
		} else if (s->server == 0 && !s->releasing && (s->ending || !replace(s))) {
			ended(s, 1);
		}
		return true;
	}
	return server_died(s, pid, st, true);
}

bool objfs_kslot_child(struct objfs_kslot *s, pid_t pid, int st)
{
	bool ours;

	kslot_check(s);
	ours = child(s, pid, st);
	kslot_check(s);
	return ours;
}

void objfs_kslot_signal(struct objfs_kslot *s, int sig)
{
	kslot_check(s);
	if (s->server != 0 && s->ready) {
		kill(s->server, sig);
		s->pending_sig = 0;
	} else {
		s->pending_sig = sig;
	}
}

void objfs_kslot_end(struct objfs_kslot *s, int sig)
{
	kslot_check(s);
	s->ending = true;
	if (s->server == 0 && s->next == 0) {
		ended(s, 0);
		return;
	}
	if (sig != 0)
		objfs_kslot_signal(s, sig);
}

int objfs_kslot_upgrade(struct objfs_kslot *s)
{
	kslot_check(s);
	if (s->next != 0 || s->server == 0 || !s->init_answered || s->ending ||
	    s->releasing)
		return EBUSY;
	objfs_info(s->log, SUB, "%s: handing the mount to %s", s->name, s->exe);
	s->next = spawn(s, true, &s->nsock);
	return s->next != 0 ? 0 : EAGAIN;
}

static void send_stop(struct objfs_kslot *s)
{
	struct objfs_kmsg *m = &s->msg;

	kmsg_init(m, KOP_STOP);
	(void)objfs_kmsg_send(s->ssock, m, -1);
	s->stop_sent = true;
}

void objfs_kslot_release(struct objfs_kslot *s)
{
	kslot_check(s);
	s->releasing = true;
	if (s->next != 0)
		kill(s->next, SIGKILL);         /* ours would take the fd */
	check_released(s);
	if (s->server != 0 && !s->stop_sent && s->ssock >= 0) {
		objfs_info(s->log, SUB, "%s: stop sent to pid %d: another holder "
			   "takes the mount", s->name, (int)s->server);
		send_stop(s);
	}
	kslot_check(s);
}

void objfs_kslot_unrelease(struct objfs_kslot *s)
{
	kslot_check(s);
	if (!s->releasing)
		return;
	s->releasing = false;
	if (s->server == 0 && s->next == 0 && !replace(s))
		ended(s, 1);
	try_give(s);
	kslot_check(s);
}

bool objfs_kslot_busy(const struct objfs_kslot *s)
{
	return s->next != 0 || s->stop_sent || (s->server != 0 && !s->ready) ||
	       (s->server == 0 && !s->releasing);
}

static void on_server_msg(struct objfs_kslot *s, int fd)
{
	struct objfs_kmsg *m = &s->msg;

	switch (m->op) {
	case KOP_PUT:
		if (fd < 0)
			break;
		close_fd(&s->fuse_fd);
		s->fuse_fd = fd;
		fd = -1;
		s->have_init = s->init_answered = false;
		read_init(s);
		break;
	case KOP_PEEK:
		on_peek(s, s->ssock, &s->peek_server);
		break;
	case KOP_INIT:
		on_init_reply(s, s->ssock);
		break;
	case KOP_READY:
		s->ready = true;
		s->events |= KSLOT_EV_READY;
		if (s->pending_sig != 0)
			objfs_kslot_signal(s, s->pending_sig);
		break;
	case KOP_BYE:
		s->bye = true;
		s->bye_status = m->status;
		break;
	default:
		break;
	}
	if (fd >= 0)
		close(fd);
}

static void on_next_msg(struct objfs_kslot *s)
{
	if (s->msg.op == KOP_PEEK) {
		on_peek(s, s->nsock, &s->peek_next);
		return;
	}
	if (s->msg.op == KOP_INIT) {
		on_init_reply(s, s->nsock);
		return;
	}
	if (s->msg.op != KOP_GET)
		return;
	s->next_wants = true;
	if (s->server != 0) {
		if (!s->stop_sent) {
			send_stop(s);
			objfs_info(s->log, SUB, "%s: pid %d waits: stop sent to pid %d",
				   s->name, (int)s->next, (int)s->server);
		}
		return;
	}
	try_give(s);
}

int objfs_kslot_pollfds(struct objfs_kslot *s, struct pollfd *pf, int n)
{
	kslot_check(s);
	s->poll_first = n;
	s->poll_n = 0;
#define ADD(fd_, ev_, kind_) do { \
		pf[n] = (struct pollfd){ .fd = (fd_), .events = (ev_) }; \
		s->poll_kind[s->poll_n++] = (kind_); \
		n++; \
	} while (0)
	if (s->ssock >= 0)
		ADD(s->ssock, POLLIN, PK_SSOCK);
	if (s->nsock >= 0)
		ADD(s->nsock, POLLIN, PK_NSOCK);
	if (s->fuse_fd >= 0 && !s->conn_gone)
		ADD(s->fuse_fd, s->have_init ? 0 : POLLIN, PK_FUSE);
	if (s->foreign && s->foreign_pidfd >= 0)
		ADD(s->foreign_pidfd, POLLIN, PK_FOREIGN);
	if (s->server_pidfd >= 0)
		ADD(s->server_pidfd, POLLIN, PK_SPIDFD);
#undef ADD
	kslot_check(s);
	return n;
}

void objfs_kslot_poll(struct objfs_kslot *s, const struct pollfd *pf)
{
	int i, fd, err;

	kslot_check(s);
	for (i = 0; i < s->poll_n; i++) {
		const struct pollfd *p = &pf[s->poll_first + i];

		if (p->revents == 0)
			continue;
		switch (s->poll_kind[i]) {
		case PK_SSOCK:
			if (s->ssock != p->fd)
				break;
			err = objfs_kmsg_recv(s->ssock, &s->msg, &fd);
			if (err == 0)
				on_server_msg(s, fd);
			else
				close_fd(&s->ssock);    /* its SIGCHLD follows */
			break;
		case PK_NSOCK:
			if (s->nsock != p->fd)
				break;
			err = objfs_kmsg_recv(s->nsock, &s->msg, &fd);
			if (fd >= 0)
				close(fd);
			if (err == 0)
				on_next_msg(s);
			break;
		case PK_FUSE:
			if (s->fuse_fd == p->fd &&
			    (p->revents & (POLLERR | POLLHUP | POLLNVAL))) {
				objfs_info(s->log, SUB, "%s: the FUSE connection ended",
					   s->name);
				s->conn_gone = true;
			} else if (s->fuse_fd == p->fd && (p->revents & POLLIN)) {
				read_init(s);
			}
			break;
		case PK_SPIDFD:
			if (s->server_pidfd == p->fd && s->server != 0)
				(void)server_died(s, s->server, 0, false);
			break;
		case PK_FOREIGN:
			if (s->foreign_pidfd == p->fd) {
				objfs_info(s->log, SUB, "%s: the other holder's server "
					   "is gone", s->name);
				objfs_kslot_foreign_gone(s);
			}
			break;
		default:
			break;
		}
	}
	s->poll_n = 0;
	kslot_check(s);
}

/* objfs_kslot_close() without the checks (a slot half adopted). */
static void close_slot(struct objfs_kslot *s, int sig)
{
	if (s->server != 0 && sig != 0)
		kill(s->server, sig);
	if (s->next != 0)
		kill(s->next, SIGKILL);
	close_fd(&s->fuse_fd);
	close_fd(&s->ssock);
	close_fd(&s->nsock);
	close_fd(&s->creds_fd);
	close_fd(&s->log_fd);
	close_fd(&s->foreign_pidfd);
	close_fd(&s->server_pidfd);
	s->server = s->next = 0;
}

void objfs_kslot_close(struct objfs_kslot *s, int sig)
{
	kslot_check(s);
	close_slot(s, sig);
	kslot_check(s);
}
