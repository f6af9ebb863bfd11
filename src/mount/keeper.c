/*
 * keeper.c - the keeper of a resumable mount (see keeper.h): one slot
 * (kslot.c), a signalfd, and in the background mode the pipe that tells
 * the waiting parent that the mount is live.
 *
 * One thread, one poll() loop, everything in one struct keeper made at
 * start: no allocation in the loop, no S3, no threads.  A server that said
 * KOP_BYE ended the mount: the keeper exits with its status.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/io.h"
#include "common/log.h"
#include "common/mountopts.h"
#include "mount/keeper.h"

#define SUB "keeper"

struct keeper {
	const struct objfs_keeper_conf *c;
	struct objfs_log *log;
	char exe[4096];                 /* the binary path, read at start */
	int sfd;                        /* signalfd */
	int detach_fd;                  /* background: the waiting parent */
	int ready_fd;                   /* the supervisor's, or -1 */
	struct objfs_kslot slot;
};

int objfs_self_exe(char *buf, size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", buf, cap - 1);

	if (n <= 0 || (size_t)n >= cap - 1)
		return n < 0 ? errno : ENAMETOOLONG;
	buf[n] = '\0';
	if (n > 10 && strcmp(buf + n - 10, " (deleted)") == 0)
		buf[n - 10] = '\0';
	return 0;
}

/* One unsigned number from dir/name; 0 when missing. */
static unsigned read_sysctl(const char *dir, const char *name)
{
	char path[4200], buf[32];
	unsigned long v;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (objfs_read_small(path, buf, sizeof(buf)) == 0)
		return 0;
	v = strtoul(buf, NULL, 10);
	return v > 0xffffffffUL ? 0xffffffffu : (unsigned)v;
}

unsigned objfs_fuse_request_timeout(const char *dir)
{
	unsigned def, max;

	if (dir == NULL)
		dir = "/proc/sys/fs/fuse";
	def = read_sysctl(dir, "default_request_timeout");
	max = read_sysctl(dir, "max_request_timeout");
	/* as fs/fuse/inode.c's init_server_timeout() with no timeout asked */
	if (max != 0 && (def == 0 || def > max))
		def = max;
	return def;
}

int objfs_default_state_dir(const char *source, const char *mountpoint,
			    const char *spool_dir, char *buf, size_t cap)
{
	uint64_t h = 14695981039346656037ULL;   /* FNV-1a, 64 bits */
	const char *p;
	int n;

	for (p = source; *p != '\0'; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	h = (h ^ 0) * 1099511628211ULL;
	for (p = mountpoint; *p != '\0'; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	if (spool_dir != NULL) {
		n = snprintf(buf, cap, "%s/objfs-state.%016llx", spool_dir,
			     (unsigned long long)h);
	} else {
		if ((mkdir("/var/lib/objfs", 0755) != 0 && errno != EEXIST) ||
		    (mkdir("/var/lib/objfs/state", 0700) != 0 && errno != EEXIST))
			return errno;
		n = snprintf(buf, cap, "/var/lib/objfs/state/%016llx",
			     (unsigned long long)h);
	}
	return n < 0 || (size_t)n >= cap ? ENAMETOOLONG : 0;
}

int objfs_detach_begin(int *ready)
{
	int p[2];
	pid_t pid;
	char b = 0;

	if (pipe2(p, O_CLOEXEC) != 0)
		return errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return errno;
	}
	if (pid > 0) {
		close(p[1]);
		while (read(p[0], &b, 1) < 0 && errno == EINTR)
			;
		_exit(b == 'R' ? 0 : 1);
	}
	close(p[0]);
	setsid();
	*ready = p[1];
	return 0;
}

/* Background mode: the calling process waits until the first server is
 * ready, the keeper goes on detached.  Returns in the keeper only. */
static int detach(struct keeper *k)
{
	int fd, err;

	err = objfs_detach_begin(&k->detach_fd);
	if (err != 0)
		return err;
	if (chdir("/") != 0)
		return errno;
	/* the first server's errors before it is ready reach the caller */
	k->slot.log_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
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
	return 0;
}

static int keeper_setup(struct keeper *k)
{
	sigset_t set;
	int err;

	err = objfs_self_exe(k->exe, sizeof(k->exe));
	if (err != 0)
		return err;
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
	/* PID 1 of a container never detaches: its exit would end the pid
	 * namespace, and every process of the mount with it */
	if (!k->c->foreground && k->c->adopt_sock < 0 && getpid() != 1)
		return detach(k);
	return 0;
}

/* A keeper started by a server whose keeper died: its KOP_ADOPT (fd,
 * credentials, INIT) and its pid, watched through a pidfd.  0 or an
 * errno. */
static int adopt(struct keeper *k)
{
	struct objfs_kslot *s = &k->slot;
	struct objfs_kmsg *m = &s->msg;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	int fds[2], sock = k->c->adopt_sock, pidfd, err;

	err = objfs_kpkt_recv(sock, m, sizeof(*m), fds, 2);
	if (err == 0 && (m->op != KOP_ADOPT || fds[0] < 0))
		err = EPROTO;
	if (err == 0 && getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0)
		err = errno;
	if (err != 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		if (fds[1] >= 0)
			close(fds[1]);
		close(sock);
		return err;
	}
	s->creds_fd = fds[1];
	/* gone already (ESRCH): a successor starts at once */
	pidfd = (int)syscall(SYS_pidfd_open, cr.pid, 0);
	return objfs_kslot_adopt_server(s, sock, fds[0], m, cr.pid, pidfd);
}

/* One signal; true when the keeper must exit (*status). */
static bool on_signal(struct keeper *k, const struct signalfd_siginfo *si)
{
	int sig = (int)si->ssi_signo;

	if (sig == SIGCHLD) {
		pid_t pid;
		int st;

		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			(void)objfs_kslot_child(&k->slot, pid, st);
		return false;
	}
	if (sig == SIGUSR2) {
		(void)objfs_kslot_upgrade(&k->slot);
		return false;
	}
	objfs_kslot_signal(&k->slot, sig);
	return false;
}

int objfs_keeper_run(const struct objfs_keeper_conf *conf)
{
	struct keeper k;
	struct objfs_kslot *s = &k.slot;
	int status = 1, err;

	memset(&k, 0, sizeof(k));
	k.c = conf;
	k.log = conf->log;
	k.detach_fd = k.sfd = -1;
	/* ours, not the servers': the first may die before it serves */
	k.ready_fd = conf->ready_fd;
	if (k.ready_fd >= 0)
		(void)fcntl(k.ready_fd, F_SETFD, FD_CLOEXEC);
	objfs_kslot_init(s);
	s->name = "mount";
	s->exe = k.exe;
	s->argv = conf->argv;
	s->log = conf->log;
	s->creds_fd = conf->creds_fd;
	/* Servers outlive the keeper: a server whose keeper dies starts a
	 * new one (issue 29), so the mount is lost only when both die at
	 * once.  Not under a supervisor that repairs (objfs-csi's runners
	 * set OBJFS_MOUNT_SUPERVISED_ENV): it watches the keeper's pid and
	 * mounts again when it dies, so there the servers die with the
	 * keeper, or the repair would race a server's new keeper for the
	 * mount point (two keepers of one staging path). */
	s->die_with_owner = getenv(OBJFS_MOUNT_SUPERVISED_ENV) != NULL;
	err = keeper_setup(&k);
	if (err == 0 && conf->adopt_sock >= 0)
		err = adopt(&k);
	else if (err == 0)
		err = objfs_kslot_start(s);
	if (err != 0) {
		objfs_error(k.log, SUB, "starting: %s", strerror(err));
		goto out;
	}
	for (;;) {
		struct pollfd pf[1 + KSLOT_POLLFDS];
		int n, r;

		pf[0] = (struct pollfd){ .fd = k.sfd, .events = POLLIN };
		n = objfs_kslot_pollfds(s, pf, 1);
		r = poll(pf, (nfds_t)n, -1);
		if (r < 0 && errno != EINTR) {
			objfs_error(k.log, SUB, "poll: %s", strerror(errno));
			goto out;
		}
		if (r <= 0)
			continue;
		objfs_kslot_poll(s, pf);
		if (pf[0].revents) {
			struct signalfd_siginfo si;

			while (read(k.sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				on_signal(&k, &si);
		}
		if ((s->events & KSLOT_EV_READY) && k.ready_fd >= 0) {
			(void)!write(k.ready_fd, "R", 1);
			close(k.ready_fd);
			k.ready_fd = -1;
		}
		if ((s->events & KSLOT_EV_READY) && k.detach_fd >= 0) {
			(void)!write(k.detach_fd, "R", 1);
			close(k.detach_fd);
			k.detach_fd = -1;
			/* successors log to log_file= or syslog themselves */
			if (s->log_fd >= 0)
				close(s->log_fd);
			s->log_fd = -1;
		}
		if (s->events & KSLOT_EV_ENDED) {
			status = s->status;
			goto out;
		}
		s->events = 0;
	}
out:
	objfs_kslot_close(s, SIGTERM);
	if (k.detach_fd >= 0)
		close(k.detach_fd);
	if (k.ready_fd >= 0)
		close(k.ready_fd);      /* never ready: the caller sees EOF */
	if (k.sfd >= 0)
		close(k.sfd);
	return status;
}
