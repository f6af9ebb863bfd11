/*
 * resume.c - the server's side of a resumable mount (see resume.h and
 * docs/design/mount-resume.md).
 *
 * INIT: no server reads it from the fd; the keeper does (kslot.h: the
 * exactly-once rule).  Every server, the first too, gets the request from
 * the keeper (KOP_PEEK) and puts it through fuse_session_process_buf()
 * from the main thread before any worker runs; the writev hook keeps
 * libfuse's reply instead of writing it.  Not answered yet: the reply
 * goes to the keeper (KOP_INIT), which writes it, once; answered: it is
 * compared with the reply the kernel got.
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
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "fs/fs.h"
#include "mount/holder.h"
#include "mount/keeper.h"
#include "mount/resume.h"

#define SUB "resume"
/* Linux 6.9 (protocol 7.40); older linux/fuse.h lack them */
#define NOTIFY_RESEND 7
#define UNIQUE_RESEND (1ULL << 63)
#define INIT_HALF OBJFS_KINIT_HALF
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

struct objfs_resume {
	struct objfs_log *log;
	struct objfs_fs *fs;
	int sock;                       /* the keeper's connection */
	bool successor;
	bool replace_keeper;            /* $OBJFS_KEEPER_REPLACE: start a new
					   keeper when this one dies */
	char *const *argv;              /* for it (borrowed), or NULL */
	/* $OBJFS_HOLDER_REJOIN: a holder's server rejoins the next holder */
	bool rejoin;
	uint64_t rejoin_serial;
	char rejoin_name[OBJFS_HNAME_MAX];
	char rejoin_path[256];
	int creds_fd;                   /* for it, or -1 */
	int fuse_fd;
	struct objfs_kinit ib;          /* the keeper's INIT (rep_len 0: not
					   answered yet) */
	uint64_t init_unique;           /* while INIT is processed, else 0 */
	uint8_t replay[INIT_HALF];      /* libfuse's reply to it */
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

/* Maps STATE_DIR/resend, made on tmpfs when missing (the first server,
 * or a successor of one that died before it made it).  0 or an errno. */
static int slots_map(struct objfs_resume *r)
{
	char link[4200], real[64];
	size_t size = (size_t)SLOTS * SLOT_SIZE;
	void *m;
	int fd;

	snprintf(link, sizeof(link), "%s/resend", r->state_dir);
	fd = open(link, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
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

/* Starts the userspace RESEND: the slots mapped. */
static void slots_start(struct objfs_resume *r)
{
	int err = slots_map(r);

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

	/* INIT never comes here: the keeper read it */
	if (n >= (ssize_t)sizeof(struct fuse_in_header)) {
		struct fuse_in_header *in = buf;
		uint8_t *base = __atomic_load_n(&r->slots, __ATOMIC_ACQUIRE);

		objfs_fs_set_unique(in->unique);
		if (in->unique & UNIQUE_RESEND)
			objfs_debug(r->log, SUB, "re-sent request: opcode %u",
				    in->opcode);
		if (base != NULL)
			slot_fill(r, base, buf, (size_t)n);
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
	/* INIT's reply (main thread, before the loop): kept, not written */
	r->replay_len = (uint32_t)flatten(iov, cnt, r->replay, sizeof(r->replay));
	return total;
}

static const struct fuse_custom_io resume_io = {
	.read = io_read,
	.writev = io_writev,
};

/* "SERIAL:NAME:SOCKET" (kslot.h, OBJFS_REJOIN_ENV) into r. */
static void rejoin_parse(struct objfs_resume *r, const char *v)
{
	const char *name, *path;
	char *end;
	unsigned long long serial;

	errno = 0;
	serial = strtoull(v, &end, 10);
	if (errno != 0 || end == v || *end != ':')
		return;
	name = end + 1;
	path = strchr(name, ':');
	if (path == NULL || path == name ||
	    (size_t)(path - name) >= sizeof(r->rejoin_name) ||
	    strlen(path + 1) >= sizeof(r->rejoin_path) || path[1] != '/')
		return;
	memcpy(r->rejoin_name, name, (size_t)(path - name));
	r->rejoin_name[path - name] = '\0';
	snprintf(r->rejoin_path, sizeof(r->rejoin_path), "%s", path + 1);
	r->rejoin_serial = serial;
	r->rejoin = true;
}

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
	r->fuse_fd = r->creds_fd = -1;
	r->successor = res != NULL && strcmp(res, "1") == 0;
	res = getenv(OBJFS_KEEPER_REPLACE_ENV);
	r->replace_keeper = res != NULL && strcmp(res, "1") == 0;
	unsetenv(OBJFS_KEEPER_REPLACE_ENV);
	res = getenv(OBJFS_REJOIN_ENV);
	if (res != NULL)
		rejoin_parse(r, res);
	unsetenv(OBJFS_REJOIN_ENV);
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
	if (r->creds_fd >= 0)
		close(r->creds_fd);
	if (r->slots != NULL)
		munmap(r->slots, (size_t)SLOTS * SLOT_SIZE);
	free(r);
}

int objfs_resume_slots(struct objfs_resume *r, const char *state_dir,
		       bool force)
{
	if (r == NULL)
		return 0;
	snprintf(r->state_dir, sizeof(r->state_dir), "%s", state_dir);
	r->force_user = force;
	/* every server knows the kernel from the INIT the keeper gave it,
	 * before a request comes; a successor's slots are the dead server's,
	 * replayed in objfs_resume_serving() */
	if (force || !kernel_resends(r->ib.req, r->ib.req_len))
		slots_start(r);
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

static void no_op(int sig)
{
	(void)sig;
}

/* Sends m (op, blob) and waits for the answer want, its blob a struct
 * objfs_kinit: 0 or an errno; *fd gets an attached fd or -1. */
static int ask(struct objfs_resume *r, struct objfs_kmsg *m, uint32_t want,
	       int *fd)
{
	int err;

	*fd = -1;
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

/* Sends a message without a blob (op) and waits for want. */
static int ask_op(struct objfs_resume *r, uint32_t op, uint32_t want,
		  struct objfs_kmsg *m, int *fd)
{
	memset(m, 0, sizeof(*m));
	m->op = op;
	return ask(r, m, want, fd);
}

/* Whether libfuse's INIT reply (r->replay) negotiates what rep does (the
 * headers aside: only the unique could differ). */
static bool same_reply(const struct objfs_resume *r, const uint8_t *rep,
		       uint32_t rep_len)
{
	struct fuse_out_header oh;

	memcpy(&oh, r->replay, sizeof(oh));     /* replay[] is bytes:
						   not aligned for it */
	return r->replay_len == rep_len && oh.error == 0 &&
	       memcmp(r->replay + sizeof(oh), rep + sizeof(oh),
		      rep_len - sizeof(oh)) == 0;
}

/* Asks the keeper for the kernel's INIT and puts it through libfuse
 * (main thread, before the loop): libfuse's reply is kept in r->replay;
 * an INIT answered already must get the same one.  0 or an errno
 * (EPROTO: this binary negotiates otherwise). */
static int process_init(struct objfs_resume *r, struct fuse_session *se)
{
	union {
		uint64_t align;
		uint8_t b[INIT_HALF];
	} req;
	struct fuse_in_header in;
	struct fuse_buf fb = { .mem = req.b };
	struct objfs_kmsg m;
	int fd, err;

	err = ask_op(r, KOP_PEEK, KOP_INIT, &m, &fd);
	if (fd >= 0)
		close(fd);
	if (err != 0)
		return err;
	memcpy(&r->ib, m.blob, sizeof(r->ib));
	if (r->ib.req_len < sizeof(in) || r->ib.req_len > sizeof(req.b) ||
	    r->ib.rep_len > sizeof(r->ib.rep) ||
	    (r->ib.rep_len != 0 && r->ib.rep_len < sizeof(struct fuse_out_header)))
		return EPROTO;
	memcpy(req.b, r->ib.req, r->ib.req_len);
	memcpy(&in, req.b, sizeof(in));
	fb.size = r->ib.req_len;
	/* the kernel's unique: a reply not yet answered goes to it */
	r->init_unique = in.unique;
	r->replay_len = 0;
	fuse_session_process_buf(se, &fb);
	r->init_unique = 0;
	if (r->replay_len < sizeof(struct fuse_out_header))
		return EPROTO;
	if (r->ib.rep_len != 0 && !same_reply(r, r->ib.rep, r->ib.rep_len)) {
		objfs_error(r->log, SUB, "this binary negotiates INIT otherwise "
			    "than the mount did: not taking it over");
		return EPROTO;
	}
	return 0;
}

int objfs_resume_attach(struct objfs_resume *r, struct fuse_session *se)
{
	struct objfs_kmsg m;
	int fd = fuse_session_fd(se), err;

	if (fuse_session_custom_io(se, &resume_io, fd) != 0)
		return EIO;
	/* the kernel's INIT is in the fd, unread: the keeper reads it */
	memset(&m, 0, sizeof(m));
	m.op = KOP_PUT;
	err = objfs_kmsg_send(r->sock, &m, fd);
	if (err != 0)
		return err;
	r->fuse_fd = fd;
	r->se = se;
	return process_init(r, se);
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
	err = process_init(r, se);
	if (err != 0)
		return err;
	/* the fd: once the previous server is gone; it takes the stand-in's
	 * number, which the session uses */
	err = ask_op(r, KOP_GET, KOP_FD, &m, &fd);
	if (err == 0 && fd < 0)
		err = EPROTO;
	if (err == 0 && dup3(fd, r->fuse_fd, O_CLOEXEC) < 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	/* the INIT may have been answered since (by the server that died) */
	if (err == 0)
		memcpy(&r->ib, m.blob, sizeof(r->ib));
	return err;
}

int objfs_resume_answer_init(struct objfs_resume *r)
{
	struct objfs_kmsg m;
	struct objfs_kinit *ki;
	int fd, err;

	if (r == NULL)
		return 0;
	if (r->ib.rep_len == 0) {
		/* test only: killed with the reply in hand, before the
		 * kernel has it */
		objfs_fs_crash_point(r->fs, "init");
		memset(&m, 0, sizeof(m));
		m.op = KOP_INIT;
		m.len = sizeof(*ki);
		ki = (struct objfs_kinit *)(void *)m.blob;
		*ki = r->ib;
		memcpy(ki->rep, r->replay, r->replay_len);
		ki->rep_len = r->replay_len;
		err = ask(r, &m, KOP_INIT, &fd);
		if (fd >= 0)
			close(fd);
		if (err == 0 && m.status != 0)
			err = m.status;
		if (err != 0) {
			objfs_error(r->log, SUB, "the keeper did not answer INIT: %s",
				    objfs_strerror(err));
			return err;
		}
		memcpy(&r->ib, m.blob, sizeof(r->ib));
	}
	/* someone else's reply reached the kernel (a successor's, the dead
	 * server's): it must negotiate what ours does */
	if (r->ib.rep_len < sizeof(struct fuse_out_header) ||
	    r->ib.rep_len > sizeof(r->ib.rep) ||
	    !same_reply(r, r->ib.rep, r->ib.rep_len)) {
		objfs_error(r->log, SUB, "INIT was answered otherwise than this "
			    "binary negotiates: not serving");
		return EPROTO;
	}
	return 0;
}

void objfs_resume_set_relaunch(struct objfs_resume *r, char *const *argv,
			       int creds_fd)
{
	if (r == NULL) {
		if (creds_fd >= 0)
			close(creds_fd);
		return;
	}
	r->argv = argv;
	if (r->creds_fd >= 0)
		close(r->creds_fd);
	r->creds_fd = creds_fd;
}

/* Whether env entry e is one of the keeper's variables (not passed on). */
static bool keeper_var(const char *e)
{
	static const char *const names[] = {
		OBJFS_KEEPER_ENV, OBJFS_RESUME_ENV, OBJFS_CREDS_FD_ENV,
		OBJFS_KEEPER_REPLACE_ENV, OBJFS_ADOPT_ENV, OBJFS_REJOIN_ENV,
	};
	size_t i, l;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		l = strlen(names[i]);
		if (strncmp(e, names[i], l) == 0 && e[l] == '=')
			return true;
	}
	return false;
}

/* The keeper died while this server serves: start a new one beside it
 * (see objfs_resume_set_relaunch) and hand it the mount.  The watcher
 * thread; the fork's children make only async-signal-safe calls (the
 * environment and the path are prepared before).  0 or an errno. */
static int new_keeper(struct objfs_resume *r)
{
	extern char **environ;
	char exe[4096], var[64], **envp;
	struct objfs_kmsg m;
	size_t n = 0, k = 0;
	int sv[2], fds[2], err, st;
	pid_t mid;
	sigset_t none;

	if (r->argv == NULL || r->fuse_fd < 0 || r->ib.rep_len == 0)
		return EINVAL;
	err = objfs_self_exe(exe, sizeof(exe));
	if (err != 0)
		return err;
	while (environ[n] != NULL)
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	if (envp == NULL)
		return ENOMEM;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		err = errno;
		free(envp);
		return err;
	}
	for (n = 0; environ[n] != NULL; n++) {
		if (!keeper_var(environ[n]))
			envp[k++] = environ[n];
	}
	snprintf(var, sizeof(var), "%s=%d", OBJFS_ADOPT_ENV, sv[1]);
	envp[k] = var;
	sigemptyset(&none);
	mid = fork();
	if (mid == 0) {
		/* nobody's child: the grandchild is reparented at once */
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (fork() != 0)
			_exit(0);
		if (fcntl(sv[1], F_SETFD, 0) == 0)
			execve(exe, r->argv, envp);
		_exit(127);
	}
	err = mid < 0 ? errno : 0;
	free(envp);
	close(sv[1]);
	if (mid > 0)
		while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
			;
	if (err == 0) {
		memset(&m, 0, sizeof(m));
		m.op = KOP_ADOPT;
		m.len = sizeof(r->ib);
		memcpy(m.blob, &r->ib, sizeof(r->ib));
		fds[0] = r->fuse_fd;
		fds[1] = r->creds_fd;
		err = objfs_kpkt_send(sv[0], &m, sizeof(m), fds, 2);
	}
	/* the new keeper's socket takes the dead one's number: the main
	 * thread's KOP_BYE goes to it */
	if (err == 0 && dup3(sv[0], r->sock, O_CLOEXEC) < 0)
		err = errno;
	close(sv[0]);
	return err;
}

/* The holder died while this server serves (mount/holder.h): hand the
 * mount to whichever holder serves its socket next (HOP_ADOPT), retrying
 * until one takes it, one refuses it (ESTALE: never ours again) or the
 * session ends.  Meanwhile the server serves on without a keeper.  The
 * watcher thread.  0 (the new holder's slot socket is r->sock) or an
 * errno. */
static int rejoin(struct objfs_resume *r)
{
	struct objfs_kmsg init;
	unsigned tries = 0;
	int sv[2], err = EAGAIN;

	memset(&init, 0, sizeof(init));
	init.op = KOP_INIT;
	init.len = sizeof(r->ib);
	memcpy(init.blob, &r->ib, sizeof(r->ib));
	while (err == EAGAIN && !r->closing && !fuse_session_exited(r->se)) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
			return errno;
		err = objfs_holder_adopt(r->rejoin_path, r->rejoin_name,
					 r->rejoin_serial, &init, r->fuse_fd,
					 sv[1], r->creds_fd, 5000);
		close(sv[1]);
		/* the new holder's socket takes the dead one's number: the
		 * main thread's KOP_BYE goes to it */
		if (err == 0 && dup3(sv[0], r->sock, O_CLOEXEC) < 0)
			err = errno;
		close(sv[0]);
		if (err == EAGAIN) {
			if (tries++ % 40 == 0)
				objfs_info(r->log, SUB, "waiting for a holder on %s "
					   "to take mount %s over", r->rejoin_path,
					   r->rejoin_name);
			usleep(250 * 1000);
		}
	}
	return err == EAGAIN ? ECANCELED : err;
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
		if (err != 0 && r->rejoin && !fuse_session_exited(r->se)) {
			int e;

			objfs_warn(r->log, SUB, "the holder is gone (%s): serving on; "
				   "mount %s goes to the next holder on %s",
				   objfs_strerror(err), r->rejoin_name, r->rejoin_path);
			e = rejoin(r);
			if (e == 0) {
				objfs_info(r->log, SUB, "a new holder keeps mount %s",
					   r->rejoin_name);
				continue;
			}
			if (r->closing)
				return NULL;
			objfs_error(r->log, SUB, "no holder takes mount %s over: %s: "
				    "serving on, but a crash now ends the mount",
				    r->rejoin_name, objfs_strerror(e));
			return NULL;
		}
		if (err != 0 && r->replace_keeper && !fuse_session_exited(r->se)) {
			int e = new_keeper(r);

			if (e == 0) {
				objfs_warn(r->log, SUB, "the keeper is gone (%s): a "
					   "new keeper holds the mount, serving on",
					   objfs_strerror(err));
				continue;
			}
			objfs_error(r->log, SUB, "the keeper is gone (%s) and "
				    "starting a new one failed: %s", objfs_strerror(err),
				    objfs_strerror(e));
		}
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
	err = objfs_kmsg_send(r->sock, &m, -1);
	/* a holder that died since it gave us the fd: the watcher sees the
	 * end of its socket and rejoins the next one */
	if (err != 0 && r->rejoin)
		err = 0;
	return err;
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
