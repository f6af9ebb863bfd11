/*
 * mounter.c - the real mounter (see mounter.h): objfs-mount processes, bind
 * mounts, unmounts and bounded statvfs.  Operating system calls only: it
 * opens no store.
 *
 * Mount processes are started with a double fork: the intermediate child
 * calls setsid(), forks the mount process, reports its pid through a pipe
 * and exits at once, so the mount process belongs to no objfs-csi process
 * group or session and is reparented to init (or the nearest subreaper): a
 * restart of objfs-csi, even a SIGKILL of its process group, leaves it
 * running.  objfs-csi is multi-threaded, so between fork and exec the
 * children only make async-signal-safe calls; everything (argv, environment,
 * descriptors) is prepared before the fork.
 *
 * Readiness: the process gets the write end of a pipe as fd 3 and
 * `-o ready_fd=3` (built with the options by common/mountopts.h); one byte on it means the mount is live.  As a fallback
 * the mount also counts as ready once /proc/self/mountinfo shows a FUSE
 * mount at the mount point.  EOF on the pipe without either means the
 * process died.
 *
 * Hung mounts: a statvfs runs in a helper thread and is abandoned after its
 * timeout (the thread ends when the kernel call returns, at the latest when
 * the connection is aborted).  A forced unmount writes to
 * /sys/fs/fuse/connections/N/abort before detaching, so nothing waits for a
 * daemon that does not answer.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/creds.h"
#include "common/errors.h"
#include "common/io.h"
#include "common/mountopts.h"
#include "csi/mounter.h"
#include "csi/mounter_int.h"
#include "csi/noderec.h"

#define READY_FD 3
#define OPTS_MAX 8192
#define LOG_ROTATE_BYTES (1024 * 1024)

/* ---- /proc ------------------------------------------------------------ */

/* Reads /proc/PID/stat: the state letter and the start time. */
static int proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024];
	const char *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return ESRCH;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return EIO;
	p += 2;
	*state = *p;
	/* p is at field 3; the start time is field 22. */
	for (field = 3; field < 22 && p != NULL; field++) {
		p = strchr(p, ' ');
		if (p != NULL)
			p++;
	}
	if (p == NULL)
		return EIO;
	*start = strtoull(p, NULL, 10);
	return 0;
}

static bool real_alive(void *ctx, const struct objfs_csi_proc *p)
{
	unsigned long long start = 0;
	char state = 0;

	(void)ctx;
	if (p->pid <= 0)
		return false;
	/* When objfs-csi is pid 1 (or a subreaper) orphans are its own
	 * children: reap, harmless (ECHILD) otherwise. */
	(void)waitpid(p->pid, NULL, WNOHANG);
	if (proc_stat(p->pid, &state, &start) != 0)
		return false;
	if (state == 'Z' || state == 'X')
		return false;
	return p->start == 0 || start == p->start;
}

/* Signals a mount process; SIGKILL goes to its whole process group (its
 * own, made by the double fork): a resumable mount's server outlives its
 * keeper (it starts a new one), so a hung mount ends only when both die. */
static void kill_mount(pid_t pid, int sig)
{
	pid_t g = getpgid(pid);

	if (sig == SIGKILL && g > 1 && g != getpgrp())
		kill(-g, sig);
	else
		kill(pid, sig);
}

/* Waiting for the exit on its own: a process still uploading what it had
 * not saved (its I/O counters move) gets all the time it needs, up to
 * STOP_MAX_MS; one that makes no progress for grace_ms is signalled. */
#define STOP_MAX_MS (15 * 60 * 1000)

static int real_stop(void *ctx, const struct objfs_csi_proc *p, unsigned grace_ms)
{
	static const int sigs[] = { SIGTERM, SIGKILL };
	static const unsigned waits[] = { 5000, 3000 };
	long long start = objfs_now_ms(), progress = start;
	unsigned long long io = objfs_proc_io(p->pid);
	size_t i;

	while (real_alive(ctx, p) && objfs_now_ms() - progress < grace_ms &&
	       objfs_now_ms() - start < STOP_MAX_MS) {
		unsigned long long io2;

		objfs_sleep_ms(50);
		io2 = objfs_proc_io(p->pid);
		if (io2 != io) {
			io = io2;
			progress = objfs_now_ms();
		}
	}
	for (i = 0; i < 2; i++) {
		long long deadline;

		if (!real_alive(ctx, p))
			return 0;
		kill_mount(p->pid, sigs[i]);
		deadline = objfs_now_ms() + waits[i];
		while (real_alive(ctx, p) && objfs_now_ms() < deadline)
			objfs_sleep_ms(20);
	}
	return real_alive(ctx, p) ? EBUSY : 0;
}

/* ---- mountinfo -------------------------------------------------------- */

/* Unescapes mountinfo's \ooo sequences of s[0..n) into out (cap): false
 * when it does not fit or holds a NUL (no path does). */
static bool unescape_field(const char *s, size_t n, char *out, size_t cap)
{
	size_t i, j = 0;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && i + 3 < n &&
		    s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' &&
		    s[i + 3] >= '0' && s[i + 3] <= '7') {
			c = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		}
		if (c == '\0' || j + 1 >= cap)
			return false;
		out[j++] = c;
	}
	out[j] = '\0';
	return true;
}

/* A device number "MAJ:MIN" of s[0..n) (as the kernel has them: 12 and
 * 20 bits) into *dev.  False when malformed. */
static bool parse_dev(const char *s, size_t n, unsigned long *dev)
{
	unsigned long v[2] = { 0, 0 };
	const unsigned long lim[2] = { 0xfff, 0xfffff };
	size_t i = 0, k, d;

	for (k = 0; k < 2; k++) {
		for (d = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++, d++) {
			v[k] = v[k] * 10 + (unsigned long)(s[i] - '0');
			if (v[k] > lim[k])
				return false;
		}
		if (d == 0 || (k == 0 && (i == n || s[i++] != ':')))
			return false;
	}
	if (i != n)
		return false;
	*dev = (v[0] << 20) | v[1];
	return true;
}

/* One line l..end: whether it is path's mount (mp, cap bytes, the
 * scratch of its unescaped mount point), and what it is in *mi.  Fields:
 * id parent maj:min root mountpoint options [optional...] - fstype ... */
static bool mountinfo_line(const char *l, const char *end, const char *path,
			   char *mp, size_t cap, struct objfs_csi_mount_info *mi)
{
	const char *f[6], *p = l, *e;
	size_t k;

	/* the first six fields, each followed by more */
	for (k = 0; k < 6; k++) {
		f[k] = p;
		e = memchr(p, ' ', (size_t)(end - p));
		if (e == NULL)
			return false;
		p = e + 1;
	}
	if (!unescape_field(f[4], (size_t)(f[5] - f[4] - 1), mp, cap) ||
	    strcmp(mp, path) != 0 ||
	    !parse_dev(f[2], (size_t)(f[3] - f[2] - 1), &mi->dev))
		return false;
	/* the separator: a field "-" before the fstype */
	for (;;) {
		e = memchr(p, ' ', (size_t)(end - p));
		if (e == NULL)
			return false;
		if (e - p == 1 && p[0] == '-')
			break;
		p = e + 1;
	}
	p = e + 1;
	e = memchr(p, ' ', (size_t)(end - p));
	k = e != NULL ? (size_t)(e - p) : (size_t)(end - p);
	mi->fuse = (k == 4 && memcmp(p, "fuse", 4) == 0) ||
		   (k >= 5 && memcmp(p, "fuse.", 5) == 0);
	return true;
}

int objfs_csi_mountinfo_find(const char *text, const char *path,
			     struct objfs_csi_mount_info *out)
{
	struct objfs_csi_mount_info mi;
	const char *line = text;
	char mp[PATH_MAX];
	int found = ENOENT;

	while (*line != '\0') {
		const char *nl = strchr(line, '\n');
		const char *end = nl != NULL ? nl : line + strlen(line);

		/* the last one is the top mount */
		if (mountinfo_line(line, end, path, mp, sizeof(mp), &mi)) {
			*out = mi;
			found = 0;
		}
		line = nl != NULL ? nl + 1 : end;
	}
	return found;
}

static int read_mountinfo(char **out)
{
	size_t cap = 64 * 1024, len = 0;
	char *buf = malloc(cap);
	int fd, err = 0;

	*out = NULL;
	if (buf == NULL)
		return ENOMEM;
	fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return errno;
	}
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *grown;

			if (cap >= 64 * 1024 * 1024) {
				err = EFBIG;
				break;
			}
			grown = realloc(buf, cap * 2);
			if (grown == NULL) {
				err = ENOMEM;
				break;
			}
			buf = grown;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (err != 0) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

static int real_mount_info(void *ctx, const char *path, struct objfs_csi_mount_info *out)
{
	char *text = NULL;
	int err;

	(void)ctx;
	err = read_mountinfo(&text);
	if (err == 0)
		err = objfs_csi_mountinfo_find(text, path, out);
	free(text);
	return err;
}

/* ---- mounts ----------------------------------------------------------- */

static void real_abort_conn(void *ctx, const char *mnt, unsigned long dev)
{
	struct objfs_csi_mount_info mi;
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%lu/abort", dev);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* The open file is bound to the connection that had the number
	 * when it was opened; if mnt's mount has it still, that is ours. */
	if (real_mount_info(ctx, mnt, &mi) == 0 && mi.fuse && mi.dev == dev) {
		if (write(fd, "1", 1) < 0) {
			/* The connection is gone already: nothing to abort. */
		}
	}
	close(fd);
}

static int real_unmount(void *ctx, const char *path, bool lazy)
{
	struct objfs_csi_mount_info mi;
	int err;

	err = real_mount_info(ctx, path, &mi);
	if (err == ENOENT)
		return EINVAL;
	if (err != 0)
		return err;
	if (lazy) {
		if (umount2(path, MNT_DETACH) != 0)
			return errno;
		return 0;
	}
	if (umount2(path, 0) == 0)
		return 0;
	err = errno;
	if (err == EBUSY || err == ENOTCONN || err == EIO || err == ETIMEDOUT) {
		if (umount2(path, MNT_DETACH) == 0)
			return 0;
		err = errno;
	}
	return err;
}

static int real_bind(void *ctx, const char *src, const char *dst, bool readonly)
{
	int err;

	(void)ctx;
	if (mount(src, dst, NULL, MS_BIND, NULL) != 0)
		return errno;
	if (!readonly)
		return 0;
	if (mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL) != 0) {
		err = errno;
		umount2(dst, MNT_DETACH);
		return err;
	}
	return 0;
}

/* ---- bounded statvfs -------------------------------------------------- */

/* Shared by the caller and the helper thread; the last one frees it. */
struct statfs_job {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs;
	bool done;
	int err;
	struct statvfs sv;
	char path[];
};

static void job_put(struct statfs_job *j)
{
	bool last;

	pthread_mutex_lock(&j->lock);
	last = --j->refs == 0;
	pthread_mutex_unlock(&j->lock);
	if (last) {
		pthread_mutex_destroy(&j->lock);
		pthread_cond_destroy(&j->cond);
		free(j);
	}
}

static void *statfs_thread(void *arg)
{
	struct statfs_job *j = arg;
	struct statvfs sv;
	int err = 0;

	if (statvfs(j->path, &sv) != 0)
		err = errno;
	pthread_mutex_lock(&j->lock);
	j->err = err;
	j->sv = sv;
	j->done = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	job_put(j);
	return NULL;
}

static int real_statfs(void *ctx, const char *path, unsigned timeout_ms,
		       struct statvfs *out)
{
	size_t n = strlen(path) + 1;
	struct statfs_job *j = calloc(1, sizeof(*j) + n);
	pthread_attr_t attr;
	pthread_t t;
	struct timespec deadline;
	int err = 0;

	(void)ctx;
	if (j == NULL)
		return ENOMEM;
	memcpy(j->path, path, n);
	pthread_mutex_init(&j->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&j->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	j->refs = 2;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	err = pthread_create(&t, &attr, statfs_thread, j);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		j->refs = 1;
		job_put(j);
		return err;
	}
	objfs_deadline_ms(CLOCK_MONOTONIC, timeout_ms, &deadline);
	pthread_mutex_lock(&j->lock);
	while (!j->done && err == 0)
		err = pthread_cond_timedwait(&j->cond, &j->lock, &deadline);
	if (j->done) {
		err = j->err;
		*out = j->sv;
	} else {
		err = ETIMEDOUT;
	}
	pthread_mutex_unlock(&j->lock);
	job_put(j);
	return err;
}

/* ---- starting a mount process ------------------------------------------ */

/* The JSON string value of "key" in the log line l (n bytes), unescaped
 * into out; false when absent. */
static bool json_field(const char *l, size_t n, const char *key, char *out,
		       size_t cap)
{
	char pat[32];
	const char *p, *end = l + n;
	size_t o = 0;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = memmem(l, n, pat, strlen(pat));
	if (p == NULL || cap == 0)
		return false;
	for (p += strlen(pat); p < end && *p != '"' && o + 1 < cap; p++) {
		if (*p == '\\' && p + 1 < end) {
			p++;
			if (*p == 'n' || *p == 't')
				out[o++] = ' ';
			else if (*p == 'u')
				p += end - p > 4 ? 4 : 0;       /* a control character */
			else
				out[o++] = *p;
			continue;
		}
		out[o++] = *p;
	}
	out[o] = '\0';
	return true;
}

int objfs_csi_log_cause_text(const char *buf, size_t n, char *msg, size_t cap)
{
	const char *line, *last = NULL, *cause = NULL, *e, *end = buf + n;
	size_t last_n = 0, cause_n = 0;
	int err = EIO;
	char text[512];

	if (cap == 0)
		return EIO;
	/* the last line that names a cause, else the last line */
	for (line = buf; line < end; line = e + 1) {
		e = memchr(line, '\n', (size_t)(end - line));
		if (e == NULL)
			e = end;
		if (e == line)
			continue;
		last = line;
		last_n = (size_t)(e - line);
		if (memmem(line, last_n, "\"errno\":", 8) != NULL) {
			cause = line;
			cause_n = last_n;
		}
	}
	if (cause != NULL) {
		const char *num = (const char *)memmem(cause, cause_n, "\"errno\":", 8) + 8;
		const char *ce = cause + cause_n;
		long v = 0;

		/* digits within the line: nothing past it is read */
		while (num < ce && *num == ' ')
			num++;
		while (num < ce && *num >= '0' && *num <= '9' && v < 4096)
			v = v * 10 + (*num++ - '0');
		if (v > 0 && v < 4096 && (num == ce || *num < '0' || *num > '9'))
			err = (int)v;
		last = cause;
		last_n = cause_n;
	}
	if (last != NULL && last[0] == '{' &&
	    json_field(last, last_n, "msg", text, sizeof(text)))
		snprintf(msg, cap, ": %s", text);
	else if (last != NULL)
		snprintf(msg, cap, ": %.*s", (int)(last_n < 400 ? last_n : 400), last);
	return err;
}

int objfs_csi_log_cause(const char *path, char *msg, size_t cap)
{
	const size_t bufsz = 16384;
	char *buf;
	ssize_t n;
	off_t size;
	int fd, err;

	if (path == NULL || cap == 0)
		return EIO;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return EIO;
	buf = malloc(bufsz);
	if (buf == NULL) {
		close(fd);
		return EIO;
	}
	size = lseek(fd, 0, SEEK_END);
	lseek(fd, size > (off_t)bufsz ? size - (off_t)bufsz : 0, SEEK_SET);
	n = read(fd, buf, bufsz);
	close(fd);
	err = objfs_csi_log_cause_text(buf, n > 0 ? (size_t)n : 0, msg, cap);
	free(buf);
	return err;
}

/* Writes the transient credentials file; *path gets its name. */
int objfs_csi_write_creds(const char *dir, const struct objfs_creds *c,
		       char *path, size_t cap)
{
	int err = objfs_node_rec_mkdir(dir);

	if (err != 0) {
		path[0] = '\0';
		return err;
	}
	return objfs_creds_write_temp(dir, c, path, cap);
}

/* The -o list of a mount process: the node's options, then ready_fd
 * (unless negative) and credentials_file (unless "").  0 or ENOSPC. */
int objfs_csi_mount_opts(const char *options, int ready_fd, const char *creds_path,
			   char *out, size_t cap)
{
	struct objfs_mount_opts mo = OBJFS_MOUNT_OPTS_INIT;   /* borrows */

	if ((size_t)snprintf(out, cap, "%s", options) >= cap)
		return ENOSPC;
	if (ready_fd >= 0) {
		mo.ready_fd = (uint64_t)ready_fd;
		objfs_mount_opts_mark(&mo, OBJFS_MOPT_READY_FD);
	}
	if (creds_path[0] != '\0') {
		mo.credentials_file = creds_path;
		objfs_mount_opts_mark(&mo, OBJFS_MOPT_CREDENTIALS_FILE);
	}
	return objfs_mount_opts_build(&mo, out, cap);
}

static int open_log(const char *path)
{
	struct stat st;
	int fd;

	if (path == NULL)
		return open("/dev/null", O_WRONLY | O_CLOEXEC);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fstat(fd, &st) == 0 && st.st_size > LOG_ROTATE_BYTES)
		(void)ftruncate(fd, 0);
	return fd;
}

/* In the grandchild, between fork and exec: async-signal-safe calls only. */
static void exec_child(int devnull, int logfd, int ready, char *const argv[],
		       char *const envp[])
{
	struct sigaction sa;
	sigset_t none;
	int hi_null, hi_log, hi_ready;

	hi_null = fcntl(devnull, F_DUPFD, 10);
	hi_log = fcntl(logfd, F_DUPFD, 10);
	hi_ready = fcntl(ready, F_DUPFD, 10);
	if (hi_null < 0 || hi_log < 0 || hi_ready < 0)
		_exit(126);
	if (dup2(hi_null, 0) < 0 || dup2(hi_log, 1) < 0 || dup2(hi_log, 2) < 0 ||
	    dup2(hi_ready, READY_FD) < 0)
		_exit(126);
	close_range(READY_FD + 1, ~0U, 0);
	/* objfs-csi blocks SIGTERM/SIGINT and ignores SIGPIPE; the mount
	 * process must not inherit either. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(argv[0], argv, envp);
	_exit(127);
}

/* Forks the double-forked process; *pid gets the grandchild. */
static int spawn(char *const argv[], char *const envp[], int logfd, int ready_w,
		 pid_t *pid)
{
	int pp[2] = { -1, -1 };
	int devnull = -1;
	pid_t child, got = -1;
	ssize_t n;
	int status, err = 0;

	*pid = -1;
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0)
		return errno;
	if (pipe2(pp, O_CLOEXEC) != 0) {
		err = errno;
		goto out;
	}
	child = fork();
	if (child < 0) {
		err = errno;
		goto out;
	}
	if (child == 0) {
		pid_t gc;

		close(pp[0]);
		setsid();
		gc = fork();
		if (gc == 0)
			exec_child(devnull, logfd, ready_w, argv, envp);
		if (write(pp[1], &gc, sizeof(gc)) != (ssize_t)sizeof(gc))
			_exit(1);
		_exit(gc > 0 ? 0 : 1);
	}
	close(pp[1]);
	pp[1] = -1;
	do {
		n = read(pp[0], &got, sizeof(got));
	} while (n < 0 && errno == EINTR);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(got) || got <= 0) {
		err = EAGAIN;
		goto out;
	}
	*pid = got;
out:
	if (pp[0] >= 0)
		close(pp[0]);
	if (pp[1] >= 0)
		close(pp[1]);
	close(devnull);
	return err;
}

/* The instance metadata settings a mount inherits from the plugin (its
 * environment is otherwise clean): a mount without credentials of its
 * own ends its chain at instance metadata, which the plugin's
 * AWS_EC2_METADATA_DISABLED and AWS_EC2_METADATA_SERVICE_ENDPOINT must
 * govern too (common/creds.h).  Never secrets. */
static const char *const imds_vars[] = {
	"AWS_EC2_METADATA_DISABLED", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
	"AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
};
#define N_IMDS_VARS (sizeof(imds_vars) / sizeof(imds_vars[0]))
#define IMDS_VAR_MAX 1100

/* "NAME=VALUE" of each set variable into vars (prefix before each, for
 * systemd-run's --setenv=); the number set. */
static size_t imds_env(char vars[][IMDS_VAR_MAX], const char *prefix)
{
	size_t i, n = 0;

	for (i = 0; i < N_IMDS_VARS; i++) {
		const char *v = getenv(imds_vars[i]);

		if (v == NULL || strlen(v) > 1000)
			continue;
		snprintf(vars[n++], IMDS_VAR_MAX, "%s%s=%s", prefix, imds_vars[i], v);
	}
	return n;
}

static int real_start(void *ctx, const struct objfs_csi_mount_spec *spec,
		      struct objfs_csi_proc *out, char *msg, size_t cap)
{
	char creds_path[PATH_MAX] = "";
	char opts[OPTS_MAX];
	char *argv[OBJFS_MOUNT_ARGV_MAX];
	char *envp[3 + N_IMDS_VARS];
	char pathenv[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	char supervised[] = OBJFS_MOUNT_SUPERVISED_ENV "=1";
	char imds[N_IMDS_VARS][IMDS_VAR_MAX];
	size_t k, nv;
	int ready[2] = { -1, -1 };
	int logfd = -1;
	struct objfs_csi_proc proc = { -1, 0 };
	long long deadline;
	bool up = false;
	long long mounted_since = 0;
	char state;
	int err = 0;

	msg[0] = '\0';
	memset(out, 0, sizeof(*out));
	if (objfs_creds_any(spec->creds)) {
		err = objfs_csi_write_creds(spec->work_dir, spec->creds, creds_path,
				  sizeof(creds_path));
		if (err != 0) {
			snprintf(msg, cap, "cannot write the credentials file: %s",
				 err == EINVAL ? "a key has a line break or surrounding blanks"
					       : objfs_strerror(err));
			goto out;
		}
	}
	if (objfs_csi_mount_opts(spec->options, READY_FD, creds_path, opts, sizeof(opts)) != 0) {
		err = E2BIG;
		snprintf(msg, cap, "mount options too long");
		goto out;
	}
	(void)objfs_mount_argv(argv, spec->program, opts, spec->source,
			       spec->mountpoint);
	envp[0] = pathenv;
	envp[1] = supervised;   /* its servers die with the keeper */
	nv = imds_env(imds, "");
	for (k = 0; k < nv; k++)
		envp[2 + k] = imds[k];
	envp[2 + nv] = NULL;
	if (pipe2(ready, O_CLOEXEC) != 0) {
		err = errno;
		goto out;
	}
	logfd = open_log(spec->log_path);
	if (logfd < 0) {
		err = errno;
		goto out;
	}
	err = spawn(argv, envp, logfd, ready[1], &proc.pid);
	close(ready[1]);
	ready[1] = -1;
	if (err != 0) {
		snprintf(msg, cap, "cannot start %s", spec->program);
		goto out;
	}
	if (proc_stat(proc.pid, &state, &proc.start) != 0)
		proc.start = 0;
	deadline = objfs_now_ms() + spec->timeout_ms;
	while (!up) {
		struct pollfd pfd = { ready[0], POLLIN, 0 };
		struct objfs_csi_mount_info mi;
		long long left = deadline - objfs_now_ms();
		int r;

		if (left <= 0) {
			err = ETIMEDOUT;
			snprintf(msg, cap, "the mount did not come up within %u ms",
				 spec->timeout_ms);
			break;
		}
		r = poll(&pfd, 1, left < 100 ? (int)left : 100);
		if (r > 0) {
			char b;
			ssize_t n = read(ready[0], &b, 1);

			if (n == 1) {
				up = true;
				break;
			}
			if (n == 0) {
				/* The process exited (or closed fd 3) without
				 * saying it is ready: trust mountinfo. */
				if (real_mount_info(ctx, spec->mountpoint, &mi) == 0 &&
				    mi.fuse && real_alive(ctx, &proc)) {
					up = true;
					break;
				}
				snprintf(msg, cap, "%s exited before the mount was ready",
					 spec->program);
				err = objfs_csi_log_cause(spec->log_path, msg + strlen(msg),
							  cap - strlen(msg));
				break;
			}
		}
		/* Mounted but no byte yet (an objfs-mount that does not
		 * write one): accept the mount after a second. */
		if (real_mount_info(ctx, spec->mountpoint, &mi) == 0 && mi.fuse &&
		    real_alive(ctx, &proc)) {
			if (mounted_since == 0)
				mounted_since = objfs_now_ms();
			else if (objfs_now_ms() - mounted_since > 1000)
				up = true;
		}
	}
	if (err != 0 && proc.pid > 0) {
		struct objfs_csi_mount_info mi;

		kill_mount(proc.pid, SIGKILL);
		if (real_mount_info(ctx, spec->mountpoint, &mi) == 0 && mi.fuse) {
			real_abort_conn(ctx, spec->mountpoint, mi.dev);
			real_unmount(ctx, spec->mountpoint, true);
		}
		real_stop(ctx, &proc, 0);
	}
out:
	if (creds_path[0] != '\0')
		unlink(creds_path);
	if (ready[0] >= 0)
		close(ready[0]);
	if (ready[1] >= 0)
		close(ready[1]);
	if (logfd >= 0)
		close(logfd);
	if (err == 0)
		*out = proc;
	return err;
}

static const struct objfs_csi_mounter_ops real_ops = {
	.start = real_start,
	.alive = real_alive,
	.stop = real_stop,
	.bind = real_bind,
	.unmount = real_unmount,
	.abort_conn = real_abort_conn,
	.mount_info = real_mount_info,
	.statfs = real_statfs,
};

static const struct objfs_csi_mounter real_mounter = {
	.ops = &real_ops,
	.ctx = NULL,
	.watchdog_ms = 2000,
	.ready_timeout_ms = 30000,
	.stop_grace_ms = 10000,
	.stats_timeout_ms = 5000,
};

const struct objfs_csi_mounter *objfs_csi_mounter_real(void)
{
	return &real_mounter;
}

/* ---- the host-systemd runner ------------------------------------------- */

/* Runs argv (PATH lookup) with a clean environment, its stdout into out
 * (cap bytes, NUL-terminated; may be NULL), killed after timeout_ms.
 * *status gets the exit code (-1 when killed).  0 or an errno. */
static int run_cmd(char *const argv[], char *out, size_t cap, unsigned timeout_ms,
		   int *status)
{
	char pathenv[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	char *envp[2] = { pathenv, NULL };
	const char *path = getenv("PATH");
	char pathbuf[4096];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, def;
	int pp[2] = { -1, -1 };
	size_t len = 0;
	long long deadline = objfs_now_ms() + timeout_ms;
	pid_t pid = -1;
	int err, ws = 0;

	*status = -1;
	if (out != NULL && cap > 0)
		out[0] = '\0';
	/* Tests put fake systemctl/systemd-run first in PATH. */
	if (path != NULL && (size_t)snprintf(pathbuf, sizeof(pathbuf), "PATH=%s", path) <
	    sizeof(pathbuf))
		envp[0] = pathbuf;
	if (pipe2(pp, O_CLOEXEC) != 0)
		return errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pp[1], 1);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGINT);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &def);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	/* posix_spawnp searches the caller's PATH. */
	err = posix_spawnp(&pid, argv[0], &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(pp[1]);
	if (err != 0) {
		close(pp[0]);
		return err;
	}
	for (;;) {
		struct pollfd pfd = { pp[0], POLLIN, 0 };
		long long left = deadline - objfs_now_ms();
		char buf[256];
		ssize_t n;

		if (left <= 0) {
			kill(pid, SIGKILL);
			err = ETIMEDOUT;
			break;
		}
		if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
			continue;
		n = read(pp[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (out != NULL && len + 1 < cap) {
			size_t k = (size_t)n < cap - 1 - len ? (size_t)n : cap - 1 - len;

			memcpy(out + len, buf, k);
			len += k;
			out[len] = '\0';
		}
	}
	close(pp[0]);
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	if (err == 0 && WIFEXITED(ws))
		*status = WEXITSTATUS(ws);
	return err;
}

/* systemctl VERB [ARG] UNIT; the exit status, or -1. */
static int systemctl(const char *verb, const char *arg, const char *unit, char *out,
		     size_t cap)
{
	char *argv[6];
	int i = 0, status = -1;

	argv[i++] = (char *)"systemctl";
	argv[i++] = (char *)verb;
	if (arg != NULL)
		argv[i++] = (char *)arg;
	argv[i++] = (char *)unit;
	argv[i] = NULL;
	if (run_cmd(argv, out, cap, 20000, &status) != 0)
		return -1;
	return status;
}

static bool sd_alive(void *ctx, const struct objfs_csi_proc *p)
{
	char state[64];

	if (p->unit[0] == '\0')
		return real_alive(ctx, p);
	if (systemctl("is-active", NULL, p->unit, state, sizeof(state)) == 0)
		return true;
	/* "active", "activating", "deactivating" and a systemctl that did
	 * not answer all count as alive: only a unit known to be gone is. */
	return strncmp(state, "inactive", 8) != 0 && strncmp(state, "failed", 6) != 0 &&
	       state[0] != '\0';
}

static void sd_wait_gone(void *ctx, const struct objfs_csi_proc *p, unsigned ms)
{
	long long deadline = objfs_now_ms() + ms;

	while (sd_alive(ctx, p) && objfs_now_ms() < deadline)
		objfs_sleep_ms(200);
}

static int sd_stop(void *ctx, const struct objfs_csi_proc *p, unsigned grace_ms)
{
	if (p->unit[0] == '\0')
		return real_stop(ctx, p, grace_ms);
	/* No view of the process's I/O from here: a longer wait, then
	 * SIGTERM (objfs-mount uploads what is unsaved and exits). */
	sd_wait_gone(ctx, p, grace_ms);
	if (sd_alive(ctx, p)) {
		systemctl("kill", "--signal=SIGTERM", p->unit, NULL, 0);
		sd_wait_gone(ctx, p, 60000);
	}
	if (sd_alive(ctx, p)) {
		systemctl("kill", "--signal=SIGKILL", p->unit, NULL, 0);
		sd_wait_gone(ctx, p, 5000);
	}
	systemctl("reset-failed", NULL, p->unit, NULL, 0);
	return sd_alive(ctx, p) ? EBUSY : 0;
}

static int sd_start(void *ctx, const struct objfs_csi_mount_spec *spec,
		    struct objfs_csi_proc *out, char *msg, size_t cap)
{
	char creds_path[PATH_MAX] = "";
	char opts[OPTS_MAX];
	char unit_arg[OBJFS_CSI_UNIT_MAX + 8];
	char mem[48];
	char name[OBJFS_NODE_REC_NAME_MAX];
	char pidbuf[32];
	char imds[N_IMDS_VARS][IMDS_VAR_MAX];
	size_t k, nv;
	char *argv[15 + N_IMDS_VARS + OBJFS_MOUNT_ARGV_MAX];
	struct objfs_csi_proc proc;
	long long deadline, next_check = 0;
	bool up = false;
	int i = 0, status = -1, err;

	msg[0] = '\0';
	memset(out, 0, sizeof(*out));
	memset(&proc, 0, sizeof(proc));
	err = objfs_node_rec_name(spec->mountpoint, name);
	if (err != 0)
		return err;
	snprintf(proc.unit, sizeof(proc.unit), "objfs-mount-%.16s.service", name + 2);
	if (objfs_creds_any(spec->creds)) {
		err = objfs_csi_write_creds(spec->work_dir, spec->creds, creds_path, sizeof(creds_path));
		if (err != 0) {
			snprintf(msg, cap, "cannot write the credentials file: %s",
				 objfs_strerror(err));
			goto out;
		}
	}
	if (objfs_csi_mount_opts(spec->options, -1, creds_path, opts, sizeof(opts)) != 0) {
		err = E2BIG;
		snprintf(msg, cap, "mount options too long");
		goto out;
	}
	/* A unit of that name left failed by an earlier run. */
	systemctl("reset-failed", NULL, proc.unit, NULL, 0);
	snprintf(unit_arg, sizeof(unit_arg), "--unit=%s", proc.unit);
	argv[i++] = (char *)"systemd-run";
	argv[i++] = unit_arg;
	argv[i++] = (char *)"--collect";
	argv[i++] = (char *)"--quiet";
	argv[i++] = (char *)"--property=KillMode=mixed";
	argv[i++] = (char *)"--property=TimeoutStopSec=900";
	if (spec->memory_mib != 0) {
		snprintf(mem, sizeof(mem), "--property=MemoryMax=%uM", spec->memory_mib);
		argv[i++] = mem;
	}
	nv = imds_env(imds, "--setenv=");
	for (k = 0; k < nv; k++)
		argv[i++] = imds[k];
	argv[i++] = (char *)"--setenv=" OBJFS_MOUNT_SUPERVISED_ENV "=1";
	argv[i++] = (char *)"--";
	(void)objfs_mount_argv(argv + i, spec->program, opts, spec->source,
			       spec->mountpoint);
	err = run_cmd(argv, NULL, 0, 30000, &status);
	if (err == 0 && status != 0)
		err = EIO;
	if (err != 0) {
		snprintf(msg, cap, "systemd-run %s failed (is /run/systemd of the host mounted?)",
			 proc.unit);
		goto out;
	}
	deadline = objfs_now_ms() + spec->timeout_ms;
	while (!up) {
		struct objfs_csi_mount_info mi;

		if (real_mount_info(ctx, spec->mountpoint, &mi) == 0 && mi.fuse) {
			up = true;
			break;
		}
		if (objfs_now_ms() >= deadline) {
			err = ETIMEDOUT;
			snprintf(msg, cap, "the mount did not come up within %u ms (journalctl -u %s)",
				 spec->timeout_ms, proc.unit);
			break;
		}
		if (objfs_now_ms() >= next_check) {
			if (!sd_alive(ctx, &proc)) {
				err = EIO;
				snprintf(msg, cap, "%s exited before the mount was ready (journalctl -u %s on the node)",
					 spec->program, proc.unit);
				break;
			}
			next_check = objfs_now_ms() + 500;
		}
		objfs_sleep_ms(50);
	}
	if (err != 0) {
		struct objfs_csi_mount_info mi;

		systemctl("kill", "--signal=SIGKILL", proc.unit, NULL, 0);
		if (real_mount_info(ctx, spec->mountpoint, &mi) == 0 && mi.fuse) {
			real_abort_conn(ctx, spec->mountpoint, mi.dev);
			real_unmount(ctx, spec->mountpoint, true);
		}
		sd_wait_gone(ctx, &proc, 5000);
		systemctl("reset-failed", NULL, proc.unit, NULL, 0);
		goto out;
	}
	/* The host's pid, for the logs only (not visible without hostPID). */
	if (systemctl("show", "--property=MainPID", proc.unit, pidbuf, sizeof(pidbuf)) == 0) {
		const char *eq = strchr(pidbuf, '=');

		proc.pid = (pid_t)strtol(eq != NULL ? eq + 1 : pidbuf, NULL, 10);
	}
	*out = proc;
out:
	if (creds_path[0] != '\0')
		unlink(creds_path);
	return err;
}

static const struct objfs_csi_mounter_ops sd_ops = {
	.start = sd_start,
	.alive = sd_alive,
	.stop = sd_stop,
	.bind = real_bind,
	.unmount = real_unmount,
	.abort_conn = real_abort_conn,
	.mount_info = real_mount_info,
	.statfs = real_statfs,
};

static const struct objfs_csi_mounter sd_mounter = {
	.ops = &sd_ops,
	.ctx = NULL,
	.watchdog_ms = 2000,
	.ready_timeout_ms = 30000,
	.stop_grace_ms = 30000,
	.stats_timeout_ms = 5000,
};

const struct objfs_csi_mounter *objfs_csi_mounter_host_systemd(void)
{
	return &sd_mounter;
}
