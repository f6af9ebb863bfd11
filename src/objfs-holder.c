/*
 * objfs-holder - the node's mount authority (see src/mount/holder.h):
 * the command line, and the init it runs as when it is PID 1.
 *
 * PID 1 of a container (its own pid namespace) takes every process of the
 * namespace with it when it dies.  So objfs-holder as PID 1 is an init:
 * it forks the holder, reaps every process reparented to it (the servers
 * of a holder that died), forwards SIGTERM and SIGINT to the holder, and
 * starts a new holder when the holder is killed by a signal (kill -9, an
 * OOM kill, a crash): the servers serve on and rejoin it (HOP_ADOPT).  A
 * holder that exits, or one that was taken over (it says so on a pipe),
 * is not started again: the init exits with its status.
 *
 *   running   the holder (pid) runs
 *   stopping  SIGTERM/SIGINT forwarded: its exit is the init's
 *   retired   taken over: never started again
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "mount/holder.h"

static const char usage_text[] =
"Usage: objfs-holder [options]\n"
"\n"
"Keeps the FUSE connections of the node's objfs mounts: starts every\n"
"objfs-mount server as its child, holds each /dev/fuse fd, starts a\n"
"successor when a server dies, and ends a mount when objfs-csi asks.\n"
"Started while another holder serves the socket, it takes every mount\n"
"over without loss (a DaemonSet roll with maxSurge 1), then serves.\n"
"\n"
"Options:\n"
"  --socket PATH           the socket objfs-csi asks on (default\n"
"                          " OBJFS_HOLDER_SOCKET "; root only)\n"
"  --ready-file PATH       written once serving, for --check (default\n"
"                          " OBJFS_HOLDER_READY_FILE ")\n"
"  --max-slots N           mounts at most (default 128)\n"
"  --takeover-timeout S    to take every mount over (default 120)\n""  --orphan-timeout S      for a server that outlived a dead holder to\n"
"                          rejoin before it is killed (default 60)\n"
"  --log-level LEVEL       debug, info, warn or error (default info)\n"
"  --check                 exit 0 when the holder that wrote --ready-file\n"
"                          serves the socket (a readiness probe)\n"
"  --list                  print the mounts the holder keeps\n"
"  --help, --version\n"
"\n"
"SIGTERM/SIGINT end every mount cleanly (upload, unmount) and exit; a\n"
"holder taken over holds nothing and exits at once.  Servers outlive a\n"
"holder that dies and rejoin the next one.  As PID 1 (a container) it is\n"
"also the init: it reaps, forwards SIGTERM/SIGINT, and starts the holder\n"
"again when a signal kills it.\n";

enum { OPT_SOCKET = 256, OPT_READY, OPT_SLOTS, OPT_TAKEOVER, OPT_LEVEL, OPT_CHECK,
       OPT_LIST, OPT_HELP, OPT_VERSION, OPT_ORPHAN };

static const struct option opts[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "ready-file", required_argument, NULL, OPT_READY },
	{ "max-slots", required_argument, NULL, OPT_SLOTS },
	{ "takeover-timeout", required_argument, NULL, OPT_TAKEOVER },
	{ "orphan-timeout", required_argument, NULL, OPT_ORPHAN },
	{ "log-level", required_argument, NULL, OPT_LEVEL },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static int number(const char *name, const char *v, unsigned min, unsigned max,
		  unsigned *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno != 0 || *end != '\0' || end == v || n < min || n > max) {
		fprintf(stderr, "objfs-holder: --%s must be a number from %u to %u, "
			"not \"%s\"\n", name, min, max, v);
		return 2;
	}
	*out = (unsigned)n;
	return 0;
}

#define INIT_SUB "holder-init"
#define RESTART_MIN_MS 1000

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* PID 1: runs the holder as a child (see the top of this file).  Returns
 * in the child with *worker true (it runs the holder, c->retire_fd set),
 * else the exit status. */
static int run_init(struct objfs_holder_conf *c, bool *worker)
{
	struct signalfd_siginfo si;
	sigset_t set, old;
	bool stopping = false, retired = false;
	long long started = 0;
	int sfd, p[2], status = 1;
	pid_t pid = 0;

	*worker = false;
	/* our death ends the namespace, every mount of the node with it: the
	 * same shield as the holder's (it logs what it got) */
	sfd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (sfd >= 0) {
		(void)!write(sfd, "-1000", 5);
		close(sfd);
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, &old);
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
		objfs_error(c->log, INIT_SUB, "starting: %s", strerror(errno));
		return 1;
	}
	for (;;) {
		struct pollfd pf[2] = { { .fd = sfd, .events = POLLIN },
					{ .fd = p[0], .events = POLLIN } };
		char b;

		if (pid == 0 && !stopping && !retired) {
			long long wait = started + RESTART_MIN_MS - mono_ms();

			/* no faster than once a second: a holder that dies at
			 * once would spin */
			if (started != 0 && wait > 0)
				usleep((useconds_t)wait * 1000);
			started = mono_ms();
			pid = fork();
			if (pid == 0) {
				close(sfd);
				close(p[0]);
				sigprocmask(SIG_SETMASK, &old, NULL);
				c->retire_fd = p[1];
				*worker = true;
				return 0;
			}
			if (pid < 0) {
				objfs_error(c->log, INIT_SUB, "fork: %s", strerror(errno));
				pid = 0;
				continue;
			}
		}
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents & POLLIN) {
			while (read(p[0], &b, 1) == 1)
				retired = true;
		}
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			int st;
			pid_t w;

			if (si.ssi_signo != SIGCHLD) {
				stopping = true;
				if (pid > 0)
					kill(pid, (int)si.ssi_signo);
				continue;
			}
			/* the holder, and whatever was reparented to us */
			while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
				if (w != pid)
					continue;
				pid = 0;
				while (read(p[0], &b, 1) == 1)
					retired = true;
				if (WIFSIGNALED(st) && !stopping && !retired) {
					objfs_warn(c->log, INIT_SUB, "the holder (pid %d) "
						   "was killed by signal %d: starting a "
						   "new one; its servers serve on and "
						   "rejoin it", (int)w, WTERMSIG(st));
					continue;
				}
				status = WIFEXITED(st) ? WEXITSTATUS(st) :
					 stopping ? 0 : 128 + WTERMSIG(st);
				goto out;
			}
		}
	}
out:
	close(sfd);
	close(p[0]);
	close(p[1]);
	return status;
}

static int list(const char *path)
{
	int err = objfs_holder_list(path, stdout);

	if (err != 0) {
		fprintf(stderr, "objfs-holder: %s: %s\n", path, objfs_strerror(err));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct objfs_holder_conf c;
	enum objfs_log_level level = OBJFS_LOG_INFO;
	bool check = false, do_list = false;
	unsigned takeover_s = 120, orphan_s = 60;
	int o, rc;

	memset(&c, 0, sizeof(c));
	c.socket_path = OBJFS_HOLDER_SOCKET;
	c.ready_file = OBJFS_HOLDER_READY_FILE;
	c.max_slots = 128;
	c.retire_fd = -1;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case OPT_SOCKET:
			c.socket_path = optarg;
			break;
		case OPT_READY:
			c.ready_file = optarg;
			break;
		case OPT_SLOTS:
			if (number("max-slots", optarg, 1, 4096, &c.max_slots) != 0)
				return 2;
			break;
		case OPT_TAKEOVER:
			if (number("takeover-timeout", optarg, 1, 3600, &takeover_s) != 0)
				return 2;
			break;
		case OPT_ORPHAN:
			if (number("orphan-timeout", optarg, 1, 3600, &orphan_s) != 0)
				return 2;
			break;
		case OPT_LEVEL:
			if (objfs_log_parse_level(optarg, &level) != 0) {
				fprintf(stderr, "objfs-holder: --log-level must be debug, "
					"info, warn or error, not \"%s\"\n", optarg);
				return 2;
			}
			break;
		case OPT_CHECK:
			check = true;
			break;
		case OPT_LIST:
			do_list = true;
			break;
		case OPT_HELP:
			fputs(usage_text, stdout);
			return 0;
		case OPT_VERSION:
			printf("objfs-holder %s\n", PACKAGE_VERSION);
			return 0;
		default:
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "objfs-holder: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (c.socket_path[0] != '/') {
		fprintf(stderr, "objfs-holder: --socket must be an absolute path\n");
		return 2;
	}
	if (check) {
		int err = objfs_holder_check(c.socket_path, c.ready_file);

		if (err != 0)
			fprintf(stderr, "objfs-holder: not ready: %s\n",
				err == ESTALE ? "another holder serves the socket" :
				objfs_strerror(err));
		return err == 0 ? 0 : 1;
	}
	if (do_list)
		return list(c.socket_path);
	c.takeover_timeout_ms = takeover_s * 1000;
	c.orphan_timeout_ms = orphan_s * 1000;
	c.log = objfs_log_create(STDERR_FILENO, level);
	if (c.log == NULL)
		return 1;
	if (getpid() == 1) {
		bool worker;

		rc = run_init(&c, &worker);
		if (!worker) {
			objfs_log_destroy(c.log);
			return rc;
		}
	}
	rc = objfs_holder_run(&c);
	objfs_log_destroy(c.log);
	return rc;
}
