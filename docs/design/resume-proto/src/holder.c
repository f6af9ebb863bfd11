/*
 * holder.c - keeps the /dev/fuse fds of FUSE mounts open and hands them to
 * whichever server process currently serves each mount.
 *
 * Design: one thread, one poll() loop, fixed tables, no malloc after
 * start-up.  It knows nothing about FUSE requests: it never reads the fuse
 * fds, it only polls them with events = 0 so that POLLERR tells it the
 * connection is gone (unmounted, or aborted through fusectl) and the slot
 * can be freed.  While it holds an fd the kernel keeps the connection, the
 * requests queued on it and the requests a dead server had read (its
 * "processing" list, which FUSE_NOTIFY_RESEND re-queues).
 *
 * Slot states:  free -> held (owner = none) -> owned (owner = a connection)
 *   owner's connection closes: -> held; a waiting GET gets the fd (planned
 *   handover); else, with --respawn, a successor is started.
 *   fuse fd POLLERR: -> free.
 * A holder is replaced by starting the new one with --takeover: it asks the
 * running holder for every slot (H_DUMP), the old one exits, the new one
 * binds the socket path.  Servers reconnect and re-claim their slot.
 */
#define _GNU_SOURCE
#include "hproto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SLOTS 64
#define MAX_CONNS 64

struct slot {
	int used;
	char name[H_NAME_MAX];
	char mnt[H_ARG_MAX];
	int fd;				/* the /dev/fuse fd we keep open */
	int owner;			/* index in conns[] or -1 */
	int waiter;			/* conn waiting for H_GET, or -1 */
	uint32_t bloblen;
	uint8_t blob[H_BLOB_MAX];
};

struct conn {
	int fd;				/* -1 when unused */
};

static struct slot slots[MAX_SLOTS];
static struct conn conns[MAX_CONNS];
static const char *sock_path;
static const char *respawn_cmd;
static struct hmsg msg, reply;		/* static: no big stack frames */

static void logmsg(const char *fmt, ...)
{
	char buf[512];
	struct timespec ts;
	va_list ap;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(buf, sizeof(buf), "[holder %d %ld.%06ld] ", (int)getpid(),
		     (long)ts.tv_sec % 1000, ts.tv_nsec / 1000);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	(void)!write(STDERR_FILENO, buf, n);
}

static struct slot *slot_find(const char *name)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].used && strcmp(slots[i].name, name) == 0)
			return &slots[i];
	return NULL;
}

static struct slot *slot_new(const char *name)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (!slots[i].used) {
			struct slot *s = &slots[i];

			memset(s, 0, sizeof(*s));
			s->used = 1;
			s->fd = -1;
			s->owner = -1;
			s->waiter = -1;
			strncpy(s->name, name, sizeof(s->name) - 1);
			return s;
		}
	return NULL;
}

static void slot_free(struct slot *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->used = 0;
	s->fd = -1;
}

static void send_status(int c, uint32_t op, int status)
{
	hmsg_init(&reply, op, NULL);
	reply.status = status;
	(void)hmsg_send(conns[c].fd, &reply, -1);
}

static void give_fd(struct slot *s, int c)
{
	hmsg_init(&reply, H_FD, s->name);
	reply.bloblen = s->bloblen;
	memcpy(reply.blob, s->blob, s->bloblen);
	strncpy(reply.arg, s->mnt, sizeof(reply.arg) - 1);
	if (hmsg_send(conns[c].fd, &reply, s->fd) == 0) {
		s->owner = c;
		logmsg("slot %s: fd given to connection %d", s->name, c);
	}
}

static void respawn(struct slot *s)
{
	pid_t pid;

	if (respawn_cmd == NULL)
		return;
	pid = fork();
	if (pid < 0) {
		logmsg("respawn: fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setsid();
		setenv("HOLDER_SLOT", s->name, 1);
		execl("/bin/sh", "sh", "-c", respawn_cmd, (char *)NULL);
		_exit(127);
	}
	logmsg("slot %s: owner gone, respawned successor pid %d", s->name, (int)pid);
}

static void conn_close(int c)
{
	close(conns[c].fd);
	conns[c].fd = -1;
	for (int i = 0; i < MAX_SLOTS; i++) {
		struct slot *s = &slots[i];

		if (!s->used)
			continue;
		if (s->waiter == c)
			s->waiter = -1;
		if (s->owner != c)
			continue;
		s->owner = -1;
		if (s->waiter >= 0) {
			logmsg("slot %s: owner left, handing over", s->name);
			give_fd(s, s->waiter);
			s->waiter = -1;
		} else {
			logmsg("slot %s: owner connection lost", s->name);
			respawn(s);
		}
	}
}

static int do_mount(struct slot *s, const char *mnt, const char *extra)
{
	char opts[H_ARG_MAX + 128];
	int fd;

	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other%s%s", fd,
		 extra[0] ? "," : "", extra);
	if (mount(s->name, mnt, "fuse.protofs", MS_NOSUID | MS_NODEV, opts) != 0) {
		int e = errno;

		close(fd);
		return e;
	}
	s->fd = fd;
	strncpy(s->mnt, mnt, sizeof(s->mnt) - 1);
	return 0;
}

/* returns 1 when the holder must exit (after H_DUMP) */
static int handle(int c, struct hmsg *m, int fd)
{
	struct slot *s = m->name[0] ? slot_find(m->name) : NULL;
	int err;

	switch (m->op) {
	case H_MOUNT:
		if (s != NULL) {
			send_status(c, H_ERR, EEXIST);
			break;
		}
		s = slot_new(m->name);
		if (s == NULL) {
			send_status(c, H_ERR, ENOSPC);
			break;
		}
		m->blob[sizeof(m->blob) - 1] = '\0';
		err = do_mount(s, m->arg, (const char *)m->blob);
		if (err != 0)
			slot_free(s);
		logmsg("slot %s: mount on %s: %s", m->name, m->arg, strerror(err));
		send_status(c, err ? H_ERR : H_OK, err);
		break;
	case H_PUT:
		if (fd < 0) {
			send_status(c, H_ERR, EBADF);
			break;
		}
		if (s == NULL)
			s = slot_new(m->name);
		if (s == NULL) {
			close(fd);
			send_status(c, H_ERR, ENOSPC);
			break;
		}
		if (s->fd >= 0)
			close(s->fd);
		s->fd = fd;
		fd = -1;
		s->owner = c;
		s->bloblen = m->bloblen;
		memcpy(s->blob, m->blob, m->bloblen);
		strncpy(s->mnt, m->arg, sizeof(s->mnt) - 1);
		logmsg("slot %s: fd received from its server (%s)", s->name, s->mnt);
		send_status(c, H_OK, 0);
		break;
	case H_GET:
		if (s == NULL) {
			send_status(c, H_ERR, ENOENT);
			break;
		}
		if (s->owner >= 0 && s->owner != c) {
			/* planned handover: ask the owner to stop, answer when
			 * its connection closes */
			if (s->waiter >= 0) {
				send_status(c, H_ERR, EBUSY);
				break;
			}
			s->waiter = c;
			hmsg_init(&reply, H_STOP, s->name);
			(void)hmsg_send(conns[s->owner].fd, &reply, -1);
			logmsg("slot %s: successor waiting, STOP sent to owner", s->name);
			break;
		}
		give_fd(s, c);
		break;
	case H_SETBLOB:
		if (s == NULL) {
			send_status(c, H_ERR, ENOENT);
			break;
		}
		s->bloblen = m->bloblen;
		memcpy(s->blob, m->blob, m->bloblen);
		s->owner = c;		/* also a claim */
		logmsg("slot %s: INIT parameters stored (%u bytes)", s->name, s->bloblen);
		send_status(c, H_OK, 0);
		break;
	case H_RELEASE:
		if (s == NULL) {
			send_status(c, H_ERR, ENOENT);
			break;
		}
		logmsg("slot %s: released", s->name);
		slot_free(s);
		send_status(c, H_OK, 0);
		break;
	case H_LIST:
		for (int i = 0; i < MAX_SLOTS; i++) {
			if (!slots[i].used)
				continue;
			hmsg_init(&reply, H_INFO, slots[i].name);
			snprintf(reply.arg, sizeof(reply.arg), "mnt=%s fd=%d owner=%d init=%u",
				 slots[i].mnt, slots[i].fd, slots[i].owner, slots[i].bloblen);
			(void)hmsg_send(conns[c].fd, &reply, -1);
		}
		send_status(c, H_END, 0);
		break;
	case H_DUMP:
		for (int i = 0; i < MAX_SLOTS; i++) {
			if (!slots[i].used)
				continue;
			hmsg_init(&reply, H_SLOT, slots[i].name);
			strncpy(reply.arg, slots[i].mnt, sizeof(reply.arg) - 1);
			reply.bloblen = slots[i].bloblen;
			memcpy(reply.blob, slots[i].blob, slots[i].bloblen);
			(void)hmsg_send(conns[c].fd, &reply, slots[i].fd);
		}
		send_status(c, H_END, 0);
		logmsg("all slots handed to a new holder; exiting");
		return 1;
	default:
		/* H_OK etc. from a server: a claim with no fd */
		if (s != NULL && m->op == H_OK) {
			s->owner = c;
			logmsg("slot %s: claimed by connection %d", s->name, c);
		}
		break;
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

static int takeover(void)
{
	int s, fd, err, n = 0;

	s = hsock_connect(sock_path);
	if (s < 0) {
		logmsg("takeover: connect %s: %s", sock_path, strerror(-s));
		return -1;
	}
	hmsg_init(&msg, H_DUMP, NULL);
	if (hmsg_send(s, &msg, -1) != 0)
		return -1;
	for (;;) {
		struct slot *sl;

		err = hmsg_recv(s, &msg, &fd);
		if (err != 0 || msg.op == H_END)
			break;
		sl = slot_new(msg.name);
		if (sl == NULL || fd < 0) {
			logmsg("takeover: cannot keep slot %s", msg.name);
			continue;
		}
		sl->fd = fd;
		strncpy(sl->mnt, msg.arg, sizeof(sl->mnt) - 1);
		sl->bloblen = msg.bloblen;
		memcpy(sl->blob, msg.blob, msg.bloblen);
		n++;
	}
	close(s);
	logmsg("takeover: %d slot(s) received from the old holder", n);
	return 0;
}

int main(int argc, char **argv)
{
	struct pollfd pf[2 + MAX_CONNS + MAX_SLOTS];
	int map[2 + MAX_CONNS + MAX_SLOTS];	/* pf index -> conn or slot */
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int do_takeover = 0, lsock, sfd;
	sigset_t set;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
			sock_path = argv[++i];
		else if (strcmp(argv[i], "--respawn") == 0 && i + 1 < argc)
			respawn_cmd = argv[++i];
		else if (strcmp(argv[i], "--takeover") == 0)
			do_takeover = 1;
		else {
			fprintf(stderr, "usage: holder -s SOCKET [--respawn CMD] [--takeover]\n");
			return 2;
		}
	}
	if (sock_path == NULL || strlen(sock_path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "holder: -s SOCKET required\n");
		return 2;
	}
	for (int i = 0; i < MAX_CONNS; i++)
		conns[i].fd = -1;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (do_takeover && takeover() != 0)
		return 1;
	strcpy(sa.sun_path, sock_path);
	lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	unlink(sock_path);
	if (lsock < 0 || bind(lsock, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(lsock, 16) != 0) {
		logmsg("listen on %s: %s", sock_path, strerror(errno));
		return 1;
	}
	chmod(sock_path, 0600);
	logmsg("listening on %s", sock_path);

	for (;;) {
		int n = 0, nc, r;

		pf[n] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		map[n++] = -1;
		pf[n] = (struct pollfd){ .fd = lsock, .events = POLLIN };
		map[n++] = -1;
		nc = n;
		for (int i = 0; i < MAX_CONNS; i++)
			if (conns[i].fd >= 0) {
				pf[n] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN };
				map[n++] = i;
			}
		int ns = n;
		for (int i = 0; i < MAX_SLOTS; i++)
			if (slots[i].used && slots[i].fd >= 0) {
				/* events 0: only POLLERR (connection gone) */
				pf[n] = (struct pollfd){ .fd = slots[i].fd, .events = 0 };
				map[n++] = i;
			}
		r = poll(pf, n, -1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			logmsg("poll: %s", strerror(errno));
			return 1;
		}
		if (pf[0].revents) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGCHLD) {
					while (waitpid(-1, NULL, WNOHANG) > 0)
						;
				} else {
					logmsg("signal %d: exiting, fds closed "
					       "(mounts without another holder die)",
					       (int)si.ssi_signo);
					return 0;
				}
			}
		}
		if (pf[1].revents & POLLIN) {
			int c = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
			int placed = 0;

			for (int i = 0; c >= 0 && i < MAX_CONNS; i++)
				if (conns[i].fd < 0) {
					conns[i].fd = c;
					placed = 1;
					break;
				}
			if (c >= 0 && !placed)
				close(c);
		}
		for (int k = nc; k < ns; k++) {
			int c = map[k], fd, err;

			if (!pf[k].revents || conns[c].fd != pf[k].fd)
				continue;
			err = hmsg_recv(conns[c].fd, &msg, &fd);
			if (err != 0) {
				conn_close(c);
				continue;
			}
			if (handle(c, &msg, fd))
				return 0;
		}
		for (int k = ns; k < n; k++) {
			struct slot *s = &slots[map[k]];

			if (!(pf[k].revents & (POLLERR | POLLHUP | POLLNVAL)) ||
			    !s->used || s->fd != pf[k].fd)
				continue;
			logmsg("slot %s: FUSE connection gone (unmounted or aborted)",
			       s->name);
			slot_free(s);
		}
	}
}
