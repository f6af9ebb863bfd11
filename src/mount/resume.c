/*
 * resume.c - the server's side of a resumable mount (see resume.h and
 * docs/design/mount-resume.md).
 *
 * INIT capture: the custom read hook keeps the kernel's INIT request, the
 * writev hook sends request and reply to the keeper (KOP_INIT) before the
 * reply reaches the kernel, so a keeper that has the fd of a live mount
 * always has its INIT.  Replay: the saved request, with a unique the
 * kernel never uses, goes through fuse_session_process_buf() from the
 * main thread before any worker runs; its reply is swallowed.
 */
#define _GNU_SOURCE
#include "config.h"

#define FUSE_USE_VERSION 312
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "fs/fs.h"
#include "mount/keeper.h"
#include "mount/resume.h"

#define SUB "resume"
/* Linux 6.9 (protocol 7.40); older linux/fuse.h lack them */
#define NOTIFY_RESEND 7
#define UNIQUE_RESEND (1ULL << 63)
/* a unique the kernel never hands out */
#define SYNTH_UNIQUE (1ULL << 62)
#define INIT_HALF 256

struct init_blob {
	uint32_t req_len, rep_len;
	uint8_t req[INIT_HALF];         /* fuse_in_header + fuse_init_in */
	uint8_t rep[INIT_HALF];         /* fuse_out_header + fuse_init_out */
};

struct objfs_resume {
	struct objfs_log *log;
	struct objfs_fs *fs;
	int sock;                       /* the keeper's connection */
	bool successor;
	int fuse_fd;
	pthread_mutex_t mu;             /* the INIT fields */
	struct init_blob ib;
	bool have_req, sent;
	uint64_t init_unique;
	bool swallow;                   /* replaying: the reply is ours */
	uint8_t replay[INIT_HALF];
	uint32_t replay_len;
	struct fuse_session *se;
	pthread_t main_thread, watcher;
	bool watching;
	volatile int handover;          /* KOP_STOP received */
	atomic_int closing;             /* destroy: the watcher's EOF is ours */
};

static size_t flatten(const struct iovec *iov, int cnt, uint8_t *dst,
		      size_t max)
{
	size_t off = 0;
	int i;

	for (i = 0; i < cnt && off < max; i++) {
		size_t l = iov[i].iov_len;

		if (off + l > max)
			l = max - off;
		memcpy(dst + off, iov[i].iov_base, l);
		off += l;
	}
	return off;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *ud)
{
	struct objfs_resume *r = objfs_fs_io_ctx(ud);
	ssize_t n = read(fd, buf, len);

	if (n >= (ssize_t)sizeof(struct fuse_in_header)) {
		struct fuse_in_header *in = buf;

		objfs_fs_set_unique(in->unique);
		if (in->opcode == FUSE_INIT && (size_t)n <= sizeof(r->ib.req)) {
			pthread_mutex_lock(&r->mu);
			if (!r->have_req) {
				memcpy(r->ib.req, buf, (size_t)n);
				r->ib.req_len = (uint32_t)n;
				r->init_unique = in->unique;
				r->have_req = true;
			}
			pthread_mutex_unlock(&r->mu);
		} else if (in->unique & UNIQUE_RESEND) {
			objfs_debug(r->log, SUB, "re-sent request: opcode %u",
				    in->opcode);
		}
	}
	return n;
}

static ssize_t io_writev(int fd, struct iovec *iov, int cnt, void *ud)
{
	struct objfs_resume *r = objfs_fs_io_ctx(ud);
	struct fuse_out_header *out = iov[0].iov_base;
	ssize_t total = 0;
	int i;

	for (i = 0; i < cnt; i++)
		total += (ssize_t)iov[i].iov_len;
	if (out->unique == 0 || out->unique != r->init_unique)
		return writev(fd, iov, cnt);
	pthread_mutex_lock(&r->mu);
	if (r->swallow) {
		r->replay_len = (uint32_t)flatten(iov, cnt, r->replay,
						  sizeof(r->replay));
		pthread_mutex_unlock(&r->mu);
		return total;   /* never reaches the kernel */
	}
	if (!r->sent) {
		struct objfs_kmsg m;

		r->ib.rep_len = (uint32_t)flatten(iov, cnt, r->ib.rep,
						  sizeof(r->ib.rep));
		memset(&m, 0, sizeof(m));
		m.op = KOP_INIT;
		m.len = sizeof(r->ib);
		memcpy(m.blob, &r->ib, sizeof(r->ib));
		if (objfs_kmsg_send(r->sock, &m, -1) != 0)
			objfs_error(r->log, SUB, "the keeper did not take INIT: "
				    "this mount cannot be resumed");
		r->sent = true;
	}
	pthread_mutex_unlock(&r->mu);
	return writev(fd, iov, cnt);
}

static const struct fuse_custom_io resume_io = {
	.read = io_read,
	.writev = io_writev,
};

int objfs_resume_create(struct objfs_log *log, struct objfs_fs *fs,
			struct objfs_resume **out)
{
	const char *env = getenv(OBJFS_KEEPER_ENV);
	const char *res = getenv(OBJFS_RESUME_ENV);
	struct objfs_resume *r;
	char *end;
	long fd;

	*out = NULL;
	if (env == NULL)
		return 0;
	fd = strtol(env, &end, 10);
	if (*end != '\0' || fd < 0 || fd > 65535)
		return EINVAL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return ENOMEM;
	r->log = log;
	r->fs = fs;
	r->sock = (int)fd;
	r->fuse_fd = -1;
	r->successor = res != NULL && strcmp(res, "1") == 0;
	pthread_mutex_init(&r->mu, NULL);
	/* the servers after us must not inherit them */
	unsetenv(OBJFS_KEEPER_ENV);
	unsetenv(OBJFS_RESUME_ENV);
	objfs_fs_set_io_ctx(fs, r);
	*out = r;
	return 0;
}

void objfs_resume_destroy(struct objfs_resume *r)
{
	if (r == NULL)
		return;
	if (r->watching) {
		/* Wake the watcher with end of file rather than cancel it: a
		 * cancelled thread unwinds without unpoisoning its stack, and
		 * AddressSanitizer then reports its own teardown of it. */
		r->closing = 1;
		shutdown(r->sock, SHUT_RD);
		pthread_join(r->watcher, NULL);
	}
	close(r->sock);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

bool objfs_resume_successor(const struct objfs_resume *r)
{
	return r != NULL && r->successor;
}

int objfs_resume_attach(struct objfs_resume *r, struct fuse_session *se)
{
	struct objfs_kmsg m;
	int fd = fuse_session_fd(se), err;

	if (fuse_session_custom_io(se, &resume_io, fd) != 0)
		return EIO;
	memset(&m, 0, sizeof(m));
	m.op = KOP_PUT;
	err = objfs_kmsg_send(r->sock, &m, fd);
	if (err != 0)
		return err;
	r->fuse_fd = fd;
	r->se = se;
	return 0;
}

static void no_op(int sig)
{
	(void)sig;
}

/* Replays the saved INIT into libfuse (main thread, before the loop). */
static int replay_init(struct objfs_resume *r, struct fuse_session *se)
{
	union {
		uint64_t align;
		uint8_t b[INIT_HALF];
	} req;
	struct fuse_in_header *in = (void *)req.b;
	struct fuse_buf fb = { .mem = req.b, .size = r->ib.req_len };
	struct fuse_out_header oh;

	if (r->ib.req_len < sizeof(*in) || r->ib.req_len > sizeof(req.b) ||
	    r->ib.rep_len < sizeof(struct fuse_out_header) ||
	    r->ib.rep_len > sizeof(r->ib.rep))
		return EPROTO;
	memcpy(req.b, r->ib.req, r->ib.req_len);
	in->unique = SYNTH_UNIQUE;
	r->init_unique = SYNTH_UNIQUE;
	r->have_req = r->sent = true;
	r->swallow = true;
	fuse_session_process_buf(se, &fb);
	r->swallow = false;
	r->init_unique = 0;
	memcpy(&oh, r->replay, sizeof(oh));     /* replay[] is bytes:
						   not aligned for it */
	if (r->replay_len != r->ib.rep_len || oh.error != 0 ||
	    memcmp(r->replay + sizeof(struct fuse_out_header),
		   r->ib.rep + sizeof(struct fuse_out_header),
		   r->ib.rep_len - sizeof(struct fuse_out_header)) != 0) {
		objfs_error(r->log, SUB, "this binary negotiates INIT otherwise "
			    "than the mount did: not taking it over");
		return EPROTO;
	}
	return 0;
}

/* Sends op and waits for the answer want: 0 or an errno; *fd gets an
 * attached fd or -1. */
static int ask(struct objfs_resume *r, uint32_t op, uint32_t want,
	       struct objfs_kmsg *m, int *fd)
{
	int err;

	memset(m, 0, sizeof(*m));
	m->op = op;
	err = objfs_kmsg_send(r->sock, m, -1);
	while (err == 0) {
		err = objfs_kmsg_recv(r->sock, m, fd);
		if (err == 0 && m->op == want)
			return m->len == sizeof(r->ib) ? 0 : EPROTO;
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
	}
	return err;
}

int objfs_resume_take(struct objfs_resume *r, struct fuse_session *se)
{
	struct objfs_kmsg m;
	int fd = -1, err;

	/* INIT first, on a stand-in fd: a binary that would negotiate
	 * otherwise gives up while the running server still serves */
	r->fuse_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (r->fuse_fd < 0)
		return errno;
	if (fuse_session_custom_io(se, &resume_io, r->fuse_fd) != 0)
		return EIO;
	r->se = se;
	err = ask(r, KOP_PEEK, KOP_INIT, &m, &fd);
	if (err != 0)
		return err;
	memcpy(&r->ib, m.blob, sizeof(r->ib));
	err = replay_init(r, se);
	if (err != 0)
		return err;
	/* the fd: once the previous server is gone; it takes the stand-in's
	 * number, which the session uses */
	err = ask(r, KOP_GET, KOP_FD, &m, &fd);
	if (err == 0 && fd < 0)
		err = EPROTO;
	if (err == 0 && dup3(fd, r->fuse_fd, O_CLOEXEC) < 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	return err;
}

static void *watch_main(void *arg)
{
	struct objfs_resume *r = arg;
	struct objfs_kmsg m;
	int fd, err;

	for (;;) {
		err = objfs_kmsg_recv(r->sock, &m, &fd);
		if (fd >= 0)
			close(fd);
		if (err != 0 && r->closing)
			return NULL;
		if (err != 0) {
			objfs_warn(r->log, SUB, "the keeper is gone (%s): serving "
				   "on, but a crash now ends the mount",
				   objfs_strerror(err));
			return NULL;
		}
		if (m.op == KOP_STOP) {
			objfs_info(r->log, SUB, "a successor takes the mount over: "
				   "stopping after the requests in hand");
			r->handover = 1;
			fuse_session_exit(r->se);
			pthread_kill(r->main_thread, SIGUSR2);
			return NULL;
		}
	}
}

int objfs_resume_serving(struct objfs_resume *r, struct fuse_session *se)
{
	struct sigaction sa;
	struct objfs_kmsg m;
	int err;

	if (r->successor) {
		struct fuse_out_header oh = { .len = sizeof(oh),
					      .error = NOTIFY_RESEND };

		/* the previous server is dead (the keeper gave us the fd only
		 * then) and the state is loaded: what it had read comes back */
		if (write(r->fuse_fd, &oh, sizeof(oh)) != (ssize_t)sizeof(oh))
			objfs_warn(r->log, SUB, "FUSE_NOTIFY_RESEND: %s (a kernel "
				   "before 6.9: requests the dead server had read "
				   "wait until unmount)", objfs_strerror(errno));
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = no_op;          /* only to interrupt libfuse's wait */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	r->main_thread = pthread_self();
	r->se = se;
	err = pthread_create(&r->watcher, NULL, watch_main, r);
	if (err != 0)
		return err;
	r->watching = true;
	memset(&m, 0, sizeof(m));
	m.op = KOP_READY;
	return objfs_kmsg_send(r->sock, &m, -1);
}

bool objfs_resume_handing_over(struct objfs_resume *r)
{
	return r != NULL && r->handover;
}

void objfs_resume_bye(struct objfs_resume *r, int status)
{
	struct objfs_kmsg m;

	if (r == NULL)
		return;
	memset(&m, 0, sizeof(m));
	m.op = KOP_BYE;
	m.status = status;
	(void)objfs_kmsg_send(r->sock, &m, -1);
}
