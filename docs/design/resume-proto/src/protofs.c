/*
 * protofs.c - a FUSE server that can take over a live FUSE connection.
 *
 * The file system is a flat pass-through to a backing directory with
 * stable inode numbers (backing st_ino + INO_OFF) and stateless file
 * handles, so that a successor needs no saved inode or handle table: what
 * objfs must persist is discussed in FINDINGS.md.  What this file proves is
 * the session side:
 *
 *   first server   (a) --mount MNT: fuse_session_mount(), then H_PUT of the
 *                      fd to the holder; or (b) the holder mounted (hctl
 *                      mount) and we H_GET an fd whose INIT is still queued.
 *                  The custom-io read hook records the kernel's INIT request,
 *                  the writev hook our INIT reply; both go to the holder
 *                  (H_SETBLOB) and stay there with the fd.
 *   successor      H_GET: fd + the saved INIT.  fuse_session_custom_io() on
 *                  the inherited fd, then the saved INIT request is fed to
 *                  fuse_session_process_buf() with a unique the kernel never
 *                  uses; the writev hook swallows libfuse's reply (the kernel
 *                  must not see a second INIT reply) and compares it with the
 *                  reply the kernel really got.  Then FUSE_NOTIFY_RESEND
 *                  (Linux >= 6.9) re-queues what the dead server had read but
 *                  not answered, and the loop starts.
 *
 * Loop: our own poll() over the fuse fd, the holder socket and a signalfd,
 * calling fuse_session_receive_buf()/fuse_session_process_buf() (planned
 * handover: the holder sends H_STOP, we finish the request in hand and exit
 * without unmounting), or --mt: libfuse's fuse_session_loop_mt().
 *
 * Test-only faults: --crash-read NAME / --crash-write NAME abort() in the
 * middle of a READ / WRITE of that file (before replying);
 * --crash-after-rename aborts after a RENAME was done but not answered.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <linux/fuse.h>

#include "hproto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Linux 6.9 (protocol 7.40); Debian 12's linux/fuse.h is 7.38 */
#define PFS_NOTIFY_RESEND 7
#define PFS_HAS_RESEND (1ULL << 39)
#define PFS_UNIQUE_RESEND (1ULL << 63)
/* a unique the kernel never hands out (it counts up in steps of 2 from 2) */
#define SYNTH_INIT_UNIQUE (1ULL << 62)
#define INO_OFF (1ULL << 32)
#define BLOB_MAGIC 0x70667331u	/* "pfs1" */

struct init_blob {
	uint32_t magic;
	uint32_t req_len;
	uint32_t rep_len;
	uint32_t pad;
	uint8_t req[256];		/* fuse_in_header + fuse_init_in */
	uint8_t rep[256];		/* fuse_out_header + fuse_init_out */
};

struct pfs {
	int backing;			/* dirfd of the backing directory */
	struct fuse_session *se;
	int fuse_fd;
	int hsock;			/* holder connection or -1 */
	const char *hpath, *name, *mnt;
	/* INIT capture and replay */
	struct init_blob ib;		/* what the kernel negotiated */
	int have_req, have_rep;
	uint64_t init_unique;
	int swallow;			/* replaying: keep the reply to ourselves */
	uint8_t replay_rep[256];
	uint32_t replay_rep_len;
	/* options */
	const char *crash_read, *crash_write;
	int crash_rename, no_resend, mt, clone_fd, direct_io, debug, delay_ms;
	int skip_replay, other_init;	/* experiments */
	double timeout;
	/* counters */
	unsigned long resent, requests;
	int stop;
};

static struct pfs P;			/* one per process (signals, hooks) */
static struct timespec t_start;

static double ms_since_start(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t_start.tv_sec) * 1e3 + (t.tv_nsec - t_start.tv_nsec) / 1e6;
}

static void logmsg(const char *fmt, ...)
{
	char buf[600];
	struct timespec ts;
	va_list ap;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(buf, sizeof(buf), "[protofs %d %ld.%06ld +%.1fms] ", (int)getpid(),
		     (long)ts.tv_sec % 1000, ts.tv_nsec / 1000, ms_since_start());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	(void)!write(STDERR_FILENO, buf, n);
}

/* ---- custom io: record INIT, swallow the replayed INIT's reply ---------- */

static ssize_t io_read(int fd, void *buf, size_t len, void *ud)
{
	struct pfs *p = &P;
	ssize_t n = read(fd, buf, len);

	(void)ud;
	if (n >= (ssize_t)sizeof(struct fuse_in_header)) {
		struct fuse_in_header *in = buf;

		p->requests++;
		if (in->unique & PFS_UNIQUE_RESEND) {
			p->resent++;
			logmsg("re-sent request: opcode %u unique %#llx nodeid %llu",
			       in->opcode, (unsigned long long)in->unique,
			       (unsigned long long)in->nodeid);
		}
		if (in->opcode == FUSE_INIT && !p->have_req &&
		    (size_t)n <= sizeof(p->ib.req)) {
			memcpy(p->ib.req, buf, n);
			p->ib.req_len = n;
			p->have_req = 1;
			p->init_unique = in->unique;
		}
	}
	return n;
}

static size_t flatten(const struct iovec *iov, int cnt, uint8_t *dst, size_t max)
{
	size_t off = 0;

	for (int i = 0; i < cnt; i++) {
		size_t l = iov[i].iov_len;

		if (off + l > max)
			l = max - off;
		memcpy(dst + off, iov[i].iov_base, l);
		off += l;
	}
	return off;
}

static void send_blob(struct pfs *p)
{
	struct hmsg m;

	if (p->hsock < 0)
		return;
	hmsg_init(&m, H_SETBLOB, p->name);
	m.bloblen = sizeof(p->ib);
	memcpy(m.blob, &p->ib, sizeof(p->ib));
	/* the H_OK answer is read (and ignored) by the main loop */
	(void)hmsg_send(p->hsock, &m, -1);
}

static ssize_t io_writev(int fd, struct iovec *iov, int cnt, void *ud)
{
	struct pfs *p = &P;
	struct fuse_out_header *out = iov[0].iov_base;
	ssize_t total = 0;

	(void)ud;
	for (int i = 0; i < cnt; i++)
		total += iov[i].iov_len;
	if (out->unique != 0 && out->unique == p->init_unique) {
		if (p->swallow) {
			p->replay_rep_len = flatten(iov, cnt, p->replay_rep,
						    sizeof(p->replay_rep));
			return total;	/* never reaches the kernel */
		}
		if (!p->have_rep) {
			p->ib.rep_len = flatten(iov, cnt, p->ib.rep, sizeof(p->ib.rep));
			p->ib.magic = BLOB_MAGIC;
			p->have_rep = 1;
			{
				ssize_t r = writev(fd, iov, cnt);
				struct fuse_init_in *ii = (void *)(p->ib.req +
						sizeof(struct fuse_in_header));
				struct fuse_init_out *io = (void *)(p->ib.rep +
						sizeof(struct fuse_out_header));
				uint64_t kflags = ii->flags |
					((ii->flags & FUSE_INIT_EXT) ? (uint64_t)ii->flags2 << 32 : 0);

				logmsg("INIT negotiated: kernel %u.%u flags %#llx (HAS_RESEND %s), "
				       "reply %u.%u flags %#x flags2 %#x max_write %u max_pages %u "
				       "max_readahead %u", ii->major, ii->minor,
				       (unsigned long long)kflags,
				       (kflags & PFS_HAS_RESEND) ? "yes" : "no",
				       io->major, io->minor, io->flags, io->flags2,
				       io->max_write, io->max_pages, io->max_readahead);
				send_blob(p);
				return r;
			}
		}
	}
	return writev(fd, iov, cnt);
}

static const struct fuse_custom_io pfs_io = {
	.read = io_read,
	.writev = io_writev,
};

/* ---- resume on an inherited connection ---------------------------------- */

static int replay_init(struct pfs *p)
{
	union {
		uint64_t align;
		uint8_t b[256];
	} req;
	struct fuse_in_header *in = (void *)req.b;
	struct fuse_buf fb = { .mem = req.b, .size = p->ib.req_len };
	struct fuse_init_out *saved, *now;

	memcpy(req.b, p->ib.req, p->ib.req_len);
	in->unique = SYNTH_INIT_UNIQUE;
	p->init_unique = SYNTH_INIT_UNIQUE;
	p->have_req = p->have_rep = 1;
	p->swallow = 1;
	fuse_session_process_buf(p->se, &fb);
	p->swallow = 0;
	p->init_unique = 0;
	if (p->replay_rep_len == 0) {
		logmsg("replayed INIT produced no reply");
		return -1;
	}
	saved = (void *)(p->ib.rep + sizeof(struct fuse_out_header));
	now = (void *)(p->replay_rep + sizeof(struct fuse_out_header));
	if (p->replay_rep_len != p->ib.rep_len ||
	    ((struct fuse_out_header *)p->replay_rep)->error != 0 ||
	    memcmp(saved, now, p->ib.rep_len - sizeof(struct fuse_out_header)) != 0) {
		logmsg("replayed INIT reply differs from the negotiated one: "
		       "flags %#x/%#x flags2 %#x/%#x max_write %u/%u max_readahead %u/%u",
		       now->flags, saved->flags, now->flags2, saved->flags2,
		       now->max_write, saved->max_write, now->max_readahead,
		       saved->max_readahead);
		return -1;
	}
	logmsg("INIT replayed into libfuse; reply identical to the negotiated one "
	       "(flags %#x flags2 %#x max_write %u), swallowed", saved->flags,
	       saved->flags2, saved->max_write);
	return 0;
}

static int notify_resend(int fd)
{
	struct fuse_out_header oh = { .len = sizeof(oh), .error = PFS_NOTIFY_RESEND,
				      .unique = 0 };

	if (write(fd, &oh, sizeof(oh)) != (ssize_t)sizeof(oh))
		return -errno;
	return 0;
}

/* ---- the test file system ------------------------------------------------ */

static int ino_name(struct pfs *p, fuse_ino_t ino, char *name, size_t max)
{
	DIR *d;
	struct dirent *de;
	int fd, found = 0;

	if (ino <= INO_OFF)
		return ENOENT;
	fd = openat(p->backing, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return ENOMEM;
	}
	while ((de = readdir(d)) != NULL)
		if (de->d_ino == ino - INO_OFF && strlen(de->d_name) < max) {
			strcpy(name, de->d_name);
			found = 1;
			break;
		}
	closedir(d);
	return found ? 0 : ENOENT;
}

static int do_stat(struct pfs *p, fuse_ino_t ino, const char *name, struct stat *st)
{
	if (ino == FUSE_ROOT_ID) {
		if (fstat(p->backing, st) != 0)
			return errno;
		st->st_ino = FUSE_ROOT_ID;
		return 0;
	}
	if (fstatat(p->backing, name, st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno;
	st->st_ino += INO_OFF;
	return 0;
}

static void pfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	if (parent != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (do_stat(&P, 0, name, &e.attr) != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	e.ino = e.attr.st_ino;
	e.attr_timeout = e.entry_timeout = P.timeout;
	fuse_reply_entry(req, &e);
}

static void pfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t n)
{
	(void)ino;
	(void)n;
	fuse_reply_none(req);
}

static void pfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char name[256] = "";
	struct stat st;
	int err = 0;

	(void)fi;
	if (ino != FUSE_ROOT_ID)
		err = ino_name(&P, ino, name, sizeof(name));
	if (err == 0)
		err = do_stat(&P, ino, name, &st);
	if (err != 0)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, P.timeout);
}

static void pfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			struct fuse_file_info *fi)
{
	char name[256];
	struct stat st;
	int err, fd;

	(void)fi;
	err = ino == FUSE_ROOT_ID ? EPERM : ino_name(&P, ino, name, sizeof(name));
	if (err == 0 && (to_set & FUSE_SET_ATTR_SIZE)) {
		fd = openat(P.backing, name, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || ftruncate(fd, attr->st_size) != 0)
			err = errno;
		if (fd >= 0)
			close(fd);
	}
	if (err == 0 && (to_set & FUSE_SET_ATTR_MODE) &&
	    fchmodat(P.backing, name, attr->st_mode & 07777, 0) != 0)
		err = errno;
	if (err == 0)
		err = do_stat(&P, ino, name, &st);
	if (err != 0)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, P.timeout);
}

static void pfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	char buf[16384];
	size_t used = 0;
	off_t idx = 0;
	struct dirent *de;
	DIR *d;
	int fd;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	fd = openat(P.backing, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		fuse_reply_err(req, EIO);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st = { 0 };
		size_t l;

		if (idx++ < off)
			continue;
		st.st_ino = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ?
			FUSE_ROOT_ID : de->d_ino + INO_OFF;
		st.st_mode = (unsigned)de->d_type << 12;
		l = fuse_add_direntry(req, buf + used, size - used, de->d_name, &st, idx);
		if (l > size - used)
			break;
		used += l;
	}
	closedir(d);
	fuse_reply_buf(req, buf, used);
}

static void pfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char name[256];
	int err = ino_name(&P, ino, name, sizeof(name));

	if (err != 0) {
		fuse_reply_err(req, err);
		return;
	}
	if (fi->flags & O_TRUNC) {
		int fd = openat(P.backing, name, O_WRONLY | O_TRUNC | O_CLOEXEC);

		if (fd >= 0)
			close(fd);
	}
	fi->fh = ino;		/* stateless: valid in any successor */
	fi->direct_io = P.direct_io;
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

static void maybe_delay(void)
{
	if (P.delay_ms > 0)
		usleep(P.delay_ms * 1000);
}

static void pfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	static char buf[1 << 20];
	char name[256];
	ssize_t n;
	int fd, err;

	(void)fi;
	err = ino_name(&P, ino, name, sizeof(name));
	if (err != 0) {
		fuse_reply_err(req, err);
		return;
	}
	if (P.crash_read != NULL && strcmp(name, P.crash_read) == 0) {
		logmsg("test fault: abort() in the middle of READ %s off %lld size %zu",
		       name, (long long)off, size);
		abort();
	}
	maybe_delay();
	if (size > sizeof(buf))
		size = sizeof(buf);
	fd = openat(P.backing, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	n = pread(fd, buf, size, off);
	err = errno;
	close(fd);
	if (n < 0)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, n);
}

static void pfs_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size,
		      off_t off, struct fuse_file_info *fi)
{
	char name[256];
	ssize_t n;
	int fd, err;

	(void)fi;
	err = ino_name(&P, ino, name, sizeof(name));
	if (err != 0) {
		fuse_reply_err(req, err);
		return;
	}
	if (P.crash_write != NULL && strcmp(name, P.crash_write) == 0) {
		logmsg("test fault: abort() in the middle of WRITE %s off %lld size %zu",
		       name, (long long)off, size);
		abort();
	}
	maybe_delay();
	fd = openat(P.backing, name, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	n = pwrite(fd, data, size, off);
	err = errno;
	close(fd);
	if (n < 0)
		fuse_reply_err(req, err);
	else
		fuse_reply_write(req, n);
}

static void pfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	int fd;

	memset(&e, 0, sizeof(e));
	if (parent != FUSE_ROOT_ID) {
		fuse_reply_err(req, EPERM);
		return;
	}
	fd = openat(P.backing, name, O_CREAT | O_WRONLY | O_CLOEXEC |
		    (fi->flags & (O_EXCL | O_TRUNC)), mode & 07777);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	close(fd);
	if (do_stat(&P, 0, name, &e.attr) != 0) {
		fuse_reply_err(req, EIO);
		return;
	}
	e.ino = e.attr.st_ino;
	e.attr_timeout = e.entry_timeout = P.timeout;
	fi->fh = e.ino;
	fi->direct_io = P.direct_io;
	fuse_reply_create(req, &e, fi);
}

static void pfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (parent != FUSE_ROOT_ID)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_err(req, unlinkat(P.backing, name, 0) == 0 ? 0 : errno);
}

static void pfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		       fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	int err;

	if (parent != FUSE_ROOT_ID || newparent != FUSE_ROOT_ID) {
		fuse_reply_err(req, EXDEV);
		return;
	}
	err = renameat2(P.backing, name, P.backing, newname, flags) == 0 ? 0 : errno;
	if (P.crash_rename) {
		logmsg("test fault: abort() after RENAME %s -> %s was done (%s), "
		       "before the reply", name, newname, strerror(err));
		abort();
	}
	fuse_reply_err(req, err);
}

static void pfs_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void pfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

static void pfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		      struct fuse_file_info *fi)
{
	(void)datasync;
	pfs_ok(req, ino, fi);
}

static void pfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	if (fstatvfs(P.backing, &sv) != 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

static void pfs_init(void *ud, struct fuse_conn_info *conn)
{
	(void)ud;
	/* deterministic wants: a successor must compute the same reply */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	conn->max_readahead = P.other_init ? 64 * 1024 : 128 * 1024;
}

static const struct fuse_lowlevel_ops pfs_ops = {
	.init = pfs_init,
	.lookup = pfs_lookup,
	.forget = pfs_forget,
	.getattr = pfs_getattr,
	.setattr = pfs_setattr,
	.readdir = pfs_readdir,
	.open = pfs_open,
	.read = pfs_read,
	.write = pfs_write,
	.create = pfs_create,
	.unlink = pfs_unlink,
	.rename = pfs_rename,
	.flush = pfs_ok,
	.release = pfs_ok,
	.fsync = pfs_fsync,
	.opendir = pfs_opendir,
	.releasedir = pfs_ok,
	.statfs = pfs_statfs,
};

/* ---- holder connection --------------------------------------------------- */

static int holder_connect(struct pfs *p, int tries)
{
	for (int i = 0; i < tries; i++) {
		int s = hsock_connect(p->hpath);

		if (s >= 0)
			return s;
		usleep(20000);
	}
	return -1;
}

static void holder_reclaim(struct pfs *p)
{
	struct hmsg m;

	p->hsock = holder_connect(p, 1);
	if (p->hsock < 0)
		return;
	hmsg_init(&m, H_OK, p->name);	/* claim: we serve this slot */
	(void)hmsg_send(p->hsock, &m, -1);
	logmsg("reconnected to the holder, slot %s claimed", p->name);
}

static void holder_event(struct pfs *p)
{
	struct hmsg m;
	int fd, err = hmsg_recv(p->hsock, &m, &fd);

	if (fd >= 0)
		close(fd);
	if (err != 0) {
		logmsg("holder connection lost (%s); serving on", strerror(-err));
		close(p->hsock);
		p->hsock = -1;
		return;
	}
	if (m.op == H_STOP) {
		logmsg("H_STOP: a successor waits; stopping after the request in hand");
		p->stop = 1;
	}
}

/* ---- loops ---------------------------------------------------------------- */

static int own_loop(struct pfs *p)
{
	struct fuse_buf fbuf = { .mem = NULL };
	sigset_t set;
	int sfd, ret = 0;
	double last_try = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	while (!p->stop && !fuse_session_exited(p->se)) {
		struct pollfd pf[3] = {
			{ .fd = p->fuse_fd, .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
			{ .fd = p->hsock, .events = POLLIN },
		};
		int r = poll(pf, p->hsock >= 0 ? 3 : 2, p->hsock >= 0 ? -1 : 100);

		if (r < 0 && errno != EINTR)
			break;
		if (p->hsock < 0 && ms_since_start() - last_try > 100) {
			last_try = ms_since_start();
			holder_reclaim(p);
		}
		if (r <= 0)
			continue;
		if (pf[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				logmsg("signal %u: leaving the mount to a successor", si.ssi_signo);
				p->stop = 1;
			}
		}
		if (p->hsock >= 0 && pf[2].revents)
			holder_event(p);
		if (pf[0].revents & (POLLERR | POLLHUP)) {
			logmsg("FUSE connection gone (unmounted or aborted)");
			break;
		}
		if (pf[0].revents & POLLIN) {
			int res = fuse_session_receive_buf(p->se, &fbuf);

			if (res == -EINTR || res == -EAGAIN)
				continue;
			if (res <= 0) {
				logmsg("receive: %s", strerror(-res));
				ret = res;
				break;
			}
			fuse_session_process_buf(p->se, &fbuf);
		}
	}
	free(fbuf.mem);
	close(sfd);
	return ret;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: protofs --holder SOCK --name NAME --backing DIR [--mount MNT]\n"
		"       [--mt] [--clone-fd] [--no-resend] [--direct-io] [--timeout SEC]\n"
		"       [--delay-ms N] [--crash-read FILE] [--crash-write FILE]\n"
		"       [--crash-after-rename] [-d]\n"
		"  experiments: --skip-init-replay (resume without the INIT replay),\n"
		"               --other-init (op.init asks for other parameters)\n");
}

int main(int argc, char **argv)
{
	struct pfs *p = &P;
	const char *backing = NULL;
	char *fargv[4] = { "protofs", NULL, NULL, NULL };
	int fargc = 1, fd = -1, err, ret = 1;
	struct hmsg m;

	clock_gettime(CLOCK_MONOTONIC, &t_start);
	p->hsock = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--holder") && v) { p->hpath = v; i++; }
		else if (!strcmp(a, "--name") && v) { p->name = v; i++; }
		else if (!strcmp(a, "--backing") && v) { backing = v; i++; }
		else if (!strcmp(a, "--mount") && v) { p->mnt = v; i++; }
		else if (!strcmp(a, "--crash-read") && v) { p->crash_read = v; i++; }
		else if (!strcmp(a, "--crash-write") && v) { p->crash_write = v; i++; }
		else if (!strcmp(a, "--delay-ms") && v) { p->delay_ms = atoi(v); i++; }
		else if (!strcmp(a, "--timeout") && v) { p->timeout = atof(v); i++; }
		else if (!strcmp(a, "--crash-after-rename")) p->crash_rename = 1;
		else if (!strcmp(a, "--no-resend")) p->no_resend = 1;
		else if (!strcmp(a, "--skip-init-replay")) p->skip_replay = 1;
		else if (!strcmp(a, "--other-init")) p->other_init = 1;
		else if (!strcmp(a, "--mt")) p->mt = 1;
		else if (!strcmp(a, "--clone-fd")) p->clone_fd = 1;
		else if (!strcmp(a, "--direct-io")) p->direct_io = 1;
		else if (!strcmp(a, "-d")) p->debug = 1;
		else { usage(); return 2; }
	}
	if (p->hpath == NULL || p->name == NULL || backing == NULL) {
		usage();
		return 2;
	}
	p->backing = open(backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->backing < 0) {
		perror(backing);
		return 1;
	}
	if (p->debug)
		fargv[fargc++] = "-d";
	fargv[fargc++] = "-oallow_other,default_permissions,fsname=protofs,subtype=protofs";
	{
		struct fuse_args args = FUSE_ARGS_INIT(fargc, fargv);

		p->se = fuse_session_new(&args, &pfs_ops, sizeof(pfs_ops), p);
	}
	if (p->se == NULL)
		return 1;
	p->hsock = holder_connect(p, 250);	/* up to 5 s: a holder may be rolling */
	if (p->hsock < 0) {
		logmsg("cannot reach the holder at %s", p->hpath);
		goto out;
	}
	if (p->mnt != NULL) {
		/* the server mounts, then gives the holder a reference */
		if (fuse_session_mount(p->se, p->mnt) != 0)
			goto out;
		fd = fuse_session_fd(p->se);
		err = fuse_session_custom_io(p->se, &pfs_io, fd);
		if (err != 0) {
			logmsg("fuse_session_custom_io after mount: %s", strerror(-err));
			goto out;
		}
		hmsg_init(&m, H_PUT, p->name);
		strncpy(m.arg, p->mnt, sizeof(m.arg) - 1);
		if (hmsg_send(p->hsock, &m, fd) != 0 || hmsg_recv(p->hsock, &m, &err) != 0 ||
		    m.op != H_OK) {
			logmsg("holder refused the fd");
			goto out;
		}
		logmsg("mounted %s and gave the fd to the holder", p->mnt);
	} else {
		hmsg_init(&m, H_GET, p->name);
		if (hmsg_send(p->hsock, &m, -1) != 0)
			goto out;
		logmsg("asking the holder for %s", p->name);
		err = hmsg_recv(p->hsock, &m, &fd);
		if (err != 0 || m.op != H_FD || fd < 0) {
			logmsg("holder: no fd for %s (%s)", p->name,
			       err ? strerror(-err) : strerror(m.status));
			goto out;
		}
		logmsg("received fd %d for %s (%s)", fd, p->name, m.arg);
		err = fuse_session_custom_io(p->se, &pfs_io, fd);
		if (err != 0) {
			logmsg("fuse_session_custom_io: %s", strerror(-err));
			goto out;
		}
		if (m.bloblen == sizeof(p->ib) &&
		    ((struct init_blob *)m.blob)->magic == BLOB_MAGIC) {
			memcpy(&p->ib, m.blob, sizeof(p->ib));
			if (p->skip_replay)
				logmsg("experiment: INIT NOT replayed (libfuse se->got_init stays 0)");
			else if (replay_init(p) != 0)
				goto out;
			if (!p->no_resend) {
				err = notify_resend(fd);
				logmsg("FUSE_NOTIFY_RESEND: %s", err ? strerror(-err) : "accepted");
			} else {
				logmsg("FUSE_NOTIFY_RESEND skipped (--no-resend: behaves "
				       "like a kernel older than 6.9)");
			}
		} else {
			logmsg("no saved INIT: fresh connection, INIT comes from the kernel");
		}
	}
	p->fuse_fd = fd;
	logmsg("serving");
	if (p->mt) {
		struct fuse_loop_config *lc = fuse_loop_cfg_create();

		fuse_loop_cfg_set_clone_fd(lc, p->clone_fd);
		fuse_loop_cfg_set_max_threads(lc, 8);
		ret = fuse_session_loop_mt(p->se, lc);
		fuse_loop_cfg_destroy(lc);
	} else {
		ret = own_loop(p);
	}
	logmsg("stopped after %lu requests (%lu re-sent); mount left in place",
	       p->requests, p->resent);
	ret = 0;
out:
	/* never fuse_session_unmount(): the mount outlives this process.
	 * fuse_session_destroy() closes our reference to the fd only. */
	fuse_session_destroy(p->se);
	if (p->hsock >= 0)
		close(p->hsock);
	return ret;
}
