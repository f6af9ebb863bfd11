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
 *
 * Userspace RESEND (kernels before 6.9, without FUSE_HAS_RESEND in INIT's
 * flags2, or forced by the test-only user_resend): each request that
 * wants a reply is copied, as read, into a free slot of a MAP_SHARED
 * file (on tmpfs: /dev/shm, linked as STATE_DIR/resend) before it is
 * processed, and its slot is freed after its reply went to the kernel.
 * The pages outlive the process.  A successor processes every full slot
 * from its main thread before serving (instead of FUSE_NOTIFY_RESEND),
 * its unique marked re-sent for the fs (intents) while libfuse replies
 * with the kernel's.  A slot is FREE -> BUSY (being filled) -> FULL ->
 * FREE; a death between the read and FULL loses that request (it waits
 * until unmount, as without RESEND), one between the reply and FREE runs
 * it again (its reply finds no request: ENOENT, ignored; a non-idempotent
 * one is answered from its intent).
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
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
/* FUSE_HAS_RESEND: bit 39 of the INIT flags, bit 7 of flags2 */
#define HAS_RESEND2 (1u << 7)
#define INIT_EXT (1u << 30)
/* userspace RESEND: slots of a header page and the largest request (1 MiB
 * of data, FUSE_MAX_MAX_PAGES, and the headers) */
#define SLOTS 64
#define SLOT_DATA ((1u << 20) + 8192)
#define SLOT_SIZE (4096 + SLOT_DATA)
enum { SLOT_FREE = 0, SLOT_BUSY, SLOT_FULL };

struct slot {
	uint32_t state;                 /* atomic */
	uint32_t len;
	uint64_t unique;
	/* the request from byte 4096 of the slot */
};

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
	/* userspace RESEND */
	char state_dir[4096];           /* "" until objfs_resume_slots() */
	bool force_user;
	uint8_t *slots;                 /* mapped (atomic pointer), or NULL */
	bool slots_warned;
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

static struct slot *slot_at(uint8_t *base, unsigned i)
{
	return (struct slot *)(void *)(base + (size_t)i * SLOT_SIZE);
}

/* Whether the kernel that sent INIT req re-sends by itself. */
static bool kernel_resends(const uint8_t *req, size_t len)
{
	struct fuse_init_in in;

	if (len < sizeof(struct fuse_in_header) + sizeof(in))
		return false;
	memcpy(&in, req + sizeof(struct fuse_in_header), sizeof(in));
	return (in.flags & INIT_EXT) && (in.flags2 & HAS_RESEND2);
}

/* Maps STATE_DIR/resend, made on tmpfs when create (first server).
 * 0 or an errno. */
static int slots_map(struct objfs_resume *r, bool create)
{
	char link[4200], real[64];
	size_t size = (size_t)SLOTS * SLOT_SIZE;
	void *m;
	int fd;

	snprintf(link, sizeof(link), "%s/resend", r->state_dir);
	fd = open(link, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		snprintf(real, sizeof(real), "/dev/shm/objfs-resend.XXXXXX");
		fd = mkostemp(real, O_CLOEXEC);
		if (fd >= 0 && symlink(real, link) != 0) {
			close(fd);
			unlink(real);
			fd = -1;
		}
		if (fd < 0)     /* no /dev/shm: in the state directory */
			fd = open(link, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
				  0600);
		if (fd >= 0 && ftruncate(fd, (off_t)size) != 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return errno;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return errno;
	__atomic_store_n(&r->slots, (uint8_t *)m, __ATOMIC_RELEASE);
	return 0;
}

/* Starts the userspace RESEND: the slots mapped (made when create). */
static void slots_start(struct objfs_resume *r, bool create)
{
	int err = slots_map(r, create);

	if (err != 0)
		objfs_error(r->log, SUB, "userspace RESEND: %s/resend: %s; "
			    "requests a dead server had read will wait until "
			    "unmount", r->state_dir, objfs_strerror(err));
	else
		objfs_info(r->log, SUB, "the kernel does not re-send %s: "
			   "requests are kept in %s/resend until answered",
			   r->force_user ? "(user_resend)" : "(before Linux 6.9)",
			   r->state_dir);
}

/* Copies a request that wants a reply into a free slot. */
static void slot_fill(struct objfs_resume *r, uint8_t *base, const void *buf,
		      size_t n)
{
	const struct fuse_in_header *in = buf;
	unsigned i;

	if (in->opcode == FUSE_FORGET || in->opcode == FUSE_BATCH_FORGET ||
	    in->opcode == FUSE_INTERRUPT || in->opcode == FUSE_INIT)
		return;                 /* no reply: nothing waits */
	for (i = 0; i < SLOTS && n <= SLOT_DATA; i++) {
		struct slot *sl = slot_at(base, i);
		uint32_t want = SLOT_FREE;

		if (!__atomic_compare_exchange_n(&sl->state, &want, SLOT_BUSY,
						 false, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		memcpy((uint8_t *)sl + 4096, buf, n);
		sl->len = (uint32_t)n;
		sl->unique = in->unique;
		__atomic_store_n(&sl->state, SLOT_FULL, __ATOMIC_RELEASE);
		return;
	}
	if (!r->slots_warned) {
		r->slots_warned = true;
		objfs_warn(r->log, SUB, "no free slot for a request (opcode %u, "
			   "%zu bytes): it is not replayed should this server "
			   "die while it runs", in->opcode, n);
	}
}

/* Frees the slot of unique, answered. */
static void slot_clear(uint8_t *base, uint64_t unique)
{
	unsigned i;

	for (i = 0; i < SLOTS; i++) {
		struct slot *sl = slot_at(base, i);

		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == SLOT_FULL &&
		    sl->unique == unique) {
			__atomic_store_n(&sl->state, SLOT_FREE, __ATOMIC_RELEASE);
			return;
		}
	}
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
				/* the kernel sends nothing else before our
				 * answer: the slots are ready for what follows */
				if (r->state_dir[0] != '\0' &&
				    (r->force_user || !kernel_resends(buf, (size_t)n)))
					slots_start(r, true);
			}
			pthread_mutex_unlock(&r->mu);
		} else {
			uint8_t *base = __atomic_load_n(&r->slots, __ATOMIC_ACQUIRE);

			if (in->unique & UNIQUE_RESEND)
				objfs_debug(r->log, SUB, "re-sent request: "
					    "opcode %u", in->opcode);
			if (base != NULL)
				slot_fill(r, base, buf, (size_t)n);
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
	if (out->unique == 0 || out->unique != r->init_unique) {
		uint8_t *base = __atomic_load_n(&r->slots, __ATOMIC_ACQUIRE);
		ssize_t w = writev(fd, iov, cnt);

		/* after the reply: a death before it replays the request */
		if (base != NULL && out->unique != 0)
			slot_clear(base, out->unique);
		return w;
	}
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
	if (r->slots != NULL)
		munmap(r->slots, (size_t)SLOTS * SLOT_SIZE);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

int objfs_resume_slots(struct objfs_resume *r, const char *state_dir,
		       bool force)
{
	if (r == NULL)
		return 0;
	snprintf(r->state_dir, sizeof(r->state_dir), "%s", state_dir);
	r->force_user = force;
	/* a successor knows the kernel from the INIT it replayed; the slots
	 * are the dead server's, replayed in objfs_resume_serving() */
	if (r->successor &&
	    (force || !kernel_resends(r->ib.req, r->ib.req_len)))
		slots_start(r, false);
	return 0;
}

void objfs_resume_slots_drop(struct objfs_resume *r)
{
	char link[4200], real[4200];
	ssize_t n;

	if (r == NULL || r->state_dir[0] == '\0')
		return;
	snprintf(link, sizeof(link), "%s/resend", r->state_dir);
	n = readlink(link, real, sizeof(real) - 1);
	if (n > 0) {
		real[n] = '\0';
		unlink(real);
	}
	unlink(link);
}

/* Successor, userspace RESEND: processes what the dead server had read
 * and not answered (main thread, before the loop).  The count. */
static unsigned slots_replay(struct objfs_resume *r, struct fuse_session *se)
{
	uint8_t *base = r->slots, *copy;
	unsigned i, n = 0;

	copy = malloc(SLOT_DATA);
	if (base == NULL || copy == NULL) {
		free(copy);
		return 0;
	}
	for (i = 0; i < SLOTS; i++) {
		struct slot *sl = slot_at(base, i);
		struct fuse_buf fb = { .mem = copy };

		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != SLOT_FULL ||
		    sl->len < sizeof(struct fuse_in_header) || sl->len > SLOT_DATA)
			continue;
		memcpy(copy, (uint8_t *)sl + 4096, sl->len);
		fb.size = sl->len;
		objfs_debug(r->log, SUB, "replaying a request the dead server "
			    "had read: opcode %u", ((struct fuse_in_header *)
						    (void *)copy)->opcode);
		/* re-sent, for the intents; libfuse answers the kernel's
		 * unique (the reply frees the slot) */
		objfs_fs_set_unique(sl->unique | UNIQUE_RESEND);
		fuse_session_process_buf(se, &fb);
		n++;
	}
	objfs_fs_set_unique(0);
	free(copy);
	return n;
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

	if (r->successor && r->slots != NULL) {
		unsigned n = slots_replay(r, se);

		objfs_info(r->log, SUB, "userspace RESEND: %u request%s the "
			   "dead server had read processed again", n,
			   n == 1 ? "" : "s");
	} else if (r->successor) {
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
