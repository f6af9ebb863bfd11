/*
 * holder.c - objfs-holder, the node's mount authority (see holder.h).
 *
 * One thread, one poll() loop; the slot, connection and pollfd tables are
 * allocated once at start (max_slots), nothing is allocated in the loop.
 * No S3, no TLS, no gRPC: it moves fds and fixed-size messages, starts
 * and reaps processes.  Each mount is a struct objfs_kslot (kslot.c), the
 * state machine objfs-mount's own keeper runs for one mount.
 *
 * Phases of a holder:
 *   taking   (started while another holder serves the socket) it adopted
 *            every mount and waits until each successor serves; it does
 *            not listen yet
 *   serving  it owns the socket path and answers requests
 *   leaving  it sent its mounts to a new holder: every request but the new
 *            holder's gets EAGAIN; when that connection closes before
 *            HOP_DONE it serves again (mounts it released get a successor)
 *   retired  taken over: it holds nothing and waits to be killed (exiting
 *            would make the kubelet restart the container, and a restarted
 *            holder would take the mounts back)
 *   stopping SIGTERM: every mount ends cleanly, then it exits
 *
 * A slot is one of:
 *   free     !used
 *   starting used, its first server not ready yet (live false)
 *   live     a server was ready once: k runs it (and its successors)
 *   orphan   loaded from a record (holder.h, "Who owns a staging path"):
 *            the pids opid[] of a dead holder may still hold the mount's
 *            fd; k holds nothing until one of them sends HOP_ADOPT
 * Records: a slot's record on disk names the pids rec_pid[] (written in
 * the serving and stopping phases only: while taking over or leaving,
 * the serving holder's records stand).  holder_check() asserts these
 * tables in debug builds.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <assert.h>
#include <dirent.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/io.h"
#include "common/log.h"
#include "common/mountopts.h"
#include "mount/holder.h"

#define SUB "holder"
#define CONNS_MIN 16
#define OOM_PROTECTED (-1000)
#define OOM_UNKNOWN INT_MIN
#define ORPHAN_MS 60000                 /* an orphan's pids get to rejoin
					   (default of orphan_timeout_ms) */
#define REC_MAGIC 0x6f626a6673726563ULL /* "objfsrec" */

struct hslot {
	bool used;
	bool live;                      /* a server was ready once */
	char name[OBJFS_HNAME_MAX];
	uint64_t serial;
	char spec[OBJFS_HSPEC_MAX];
	uint32_t spec_len;
	char *argv[8];
	const char *mountpoint;         /* in spec */
	int starter;                    /* connection waiting for HOP_OK */
	char rejoin[320];               /* k.rejoin: "SERIAL:NAME:SOCKET" */
	bool orphan;                    /* see "A slot is one of" above */
	bool orphan_ending;             /* asked to end before it rejoined */
	bool orphan_killed;             /* its deadline passed: SIGKILL sent */
	pid_t opid[2];                  /* orphan: the pids that may rejoin
					   (0: none or gone) */
	int opidfd[2];                  /* their pidfds, or -1 */
	long long orphan_deadline;
	bool rec_written;               /* the record names rec_pid[] */
	pid_t rec_pid[2];
	struct objfs_kslot k;
};

/* A mount's record, SOCKET.slots/NAME (holder.h): written whole, renamed
 * into place. */
struct hrec {
	uint64_t magic;                 /* REC_MAGIC */
	uint32_t size;                  /* sizeof(struct hrec) */
	uint32_t spec_len;
	uint64_t serial;
	uint64_t pidns;                 /* the writer's pid namespace (inode) */
	int64_t pid[2];                 /* server, successor (0: none) */
	uint64_t start[2];              /* their start times (/proc/PID/stat) */
	char name[OBJFS_HNAME_MAX];
	char spec[OBJFS_HSPEC_MAX];
};

enum phase { TAKING, SERVING, LEAVING, RETIRED, STOPPING };

struct holder {
	const struct objfs_holder_conf *c;
	struct objfs_log *log;
	enum phase phase;
	int sfd, lsock;
	int *conns;                     /* fds, -1 when free */
	unsigned n_conns;
	struct hslot *slots;
	unsigned n_slots;
	struct pollfd *pf;
	int *pmap;                      /* pf index -> connection or slot */
	uint64_t next_serial;
	char instance[OBJFS_HNAME_MAX];
	int peer;                       /* LEAVING: the new holder's conn;
					   TAKING: our connection to the old */
	bool failed;                    /* TAKING: a mount could not be taken */
	int oom_score_adj;              /* what we run with (HOP_PING);
					   OOM_UNKNOWN: /proc did not say */
	long long deadline;             /* TAKING */
	bool exiting;                   /* out: records stay as they are */
	uint64_t pidns;                 /* ours (0: unknown) */
	char rec_dir[4096];             /* SOCKET.slots */
	struct hrec rec;
	struct objfs_hmsg msg, reply;
};

/* ---- helpers -------------------------------------------------------------- */

static struct hslot *find(struct holder *h, const char *name)
{
	unsigned i;

	for (i = 0; i < h->n_slots; i++) {
		if (h->slots[i].used && strcmp(h->slots[i].name, name) == 0)
			return &h->slots[i];
	}
	return NULL;
}

/* ---- records (holder.h: "Who owns a staging path") ------------------------ */

/* The start time of pid (field 22 of /proc/PID/stat), 0 when it is gone
 * (or a zombie). */
static uint64_t proc_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	int i;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (objfs_read_small(path, buf, sizeof(buf)) == 0)
		return 0;
	p = strrchr(buf, ')');          /* the name may hold spaces */
	/* a zombie holds no fd any more: gone */
	if (p == NULL || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	/* after ")": state is field 3, starttime field 22 */
	for (i = 2; p != NULL && i < 22; i++) {
		p = strchr(p + 1, ' ');
	}
	if (p == NULL || sscanf(p + 1, "%llu", &v) != 1)
		return 0;
	return v;
}

/* Whether a name can be a file name in rec_dir. */
static bool rec_name_ok(const char *name)
{
	return name[0] != '\0' && name[0] != '.' && strchr(name, '/') == NULL &&
	       strlen(name) < OBJFS_HNAME_MAX;
}

static void rec_path(const struct holder *h, const char *name, const char *suffix,
		     char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s%s", h->rec_dir, name, suffix);
}

/* Writes s's record when the pids that may hold its fd changed. */
static void rec_write(struct holder *h, struct hslot *s)
{
	struct hrec *r = &h->rec;
	char tmp[4200], path[4200];
	pid_t pid[2] = { s->k.server, s->k.next };
	int fd, i;
	bool ok;

	if (s->orphan || !rec_name_ok(s->name) ||
	    (s->rec_written && pid[0] == s->rec_pid[0] && pid[1] == s->rec_pid[1]))
		return;
	memset(r, 0, sizeof(*r));
	r->magic = REC_MAGIC;
	r->size = sizeof(*r);
	r->serial = s->serial;
	r->pidns = h->pidns;
	for (i = 0; i < 2; i++) {
		r->pid[i] = pid[i];
		r->start[i] = proc_start(pid[i]);
	}
	snprintf(r->name, sizeof(r->name), "%s", s->name);
	memcpy(r->spec, s->spec, s->spec_len);
	r->spec_len = s->spec_len;
	rec_path(h, s->name, ".tmp", tmp, sizeof(tmp));
	rec_path(h, s->name, "", path, sizeof(path));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	ok = fd >= 0 && write(fd, r, sizeof(*r)) == (ssize_t)sizeof(*r);
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	if (ok && rename(tmp, path) != 0)
		ok = false;
	if (!ok) {
		objfs_error(h->log, SUB, "%s: record %s: %s: should this holder "
			    "die, its successor cannot tell whether the mount's "
			    "server lives", s->name, path, strerror(errno));
		unlink(tmp);
		return;
	}
	s->rec_written = true;
	s->rec_pid[0] = pid[0];
	s->rec_pid[1] = pid[1];
}

static void rec_remove(struct holder *h, const char *name)
{
	char path[4200];

	if (!rec_name_ok(name))
		return;
	rec_path(h, name, "", path, sizeof(path));
	if (unlink(path) != 0 && errno != ENOENT)
		objfs_warn(h->log, SUB, "%s: removing %s: %s", name, path,
			   strerror(errno));
}

/* Whether the holder writes and removes records now: it serves (a holder
 * taking over or leaving does not: the serving one's records stand). */
static bool rec_owner(const struct holder *h)
{
	return !h->exiting && (h->phase == SERVING || h->phase == STOPPING);
}

static int reply_to(struct holder *h, int c, uint32_t op, int status,
		    const struct hslot *s, const int *fds, int nfds)
{
	struct objfs_hmsg *m = &h->reply;

	objfs_hmsg_init(m, op, s != NULL ? s->name : NULL);
	m->status = status;
	if (s != NULL) {
		m->serial = s->serial;
		m->pid = s->orphan ? s->opid[0] ? s->opid[0] : s->opid[1] : s->k.server;
		m->io = objfs_proc_io(s->k.server);
		m->arg = s->k.ready ? 1 : 0;
		if (op == HOP_INFO) {
			memcpy(m->spec, s->spec, s->spec_len);
			m->spec_len = s->spec_len;
		}
	}
	if (c < 0 || h->conns[c] < 0)
		return EBADF;
	return objfs_kpkt_send(h->conns[c], m, sizeof(*m), fds, nfds);
}

/* Fills s's spec, argv and log from m: 0 or an errno. */
static int slot_setup(struct holder *h, struct hslot *s, const struct objfs_hmsg *m)
{
	const char *str[HSPEC_N];
	int err;

	memset(s, 0, offsetof(struct hslot, k));
	objfs_kslot_init(&s->k);
	s->used = true;
	s->starter = -1;
	s->opidfd[0] = s->opidfd[1] = -1;
	/* checked before use: spec_len past spec would overrun s->spec */
	err = objfs_hmsg_mount(m, str);
	if (err != 0)
		return err;
	snprintf(s->name, sizeof(s->name), "%s", m->name);
	memcpy(s->spec, m->spec, m->spec_len);
	s->spec_len = m->spec_len;
	/* point into our copy */
	for (int i = 0; i < HSPEC_N; i++)
		str[i] = s->spec + (str[i] - m->spec);
	(void)objfs_mount_argv(s->argv, str[HSPEC_PROGRAM], str[HSPEC_OPTIONS],
			       str[HSPEC_SOURCE], str[HSPEC_MOUNTPOINT]);
	s->mountpoint = str[HSPEC_MOUNTPOINT];
	s->k.name = s->name;
	s->k.exe = s->argv[0];
	s->k.argv = s->argv;
	s->k.log = h->log;
	/* servers outlive us and rejoin our successor (holder.h) */
	s->k.die_with_owner = false;
	if (str[HSPEC_LOG][0] != '\0') {
		s->k.log_fd = open(str[HSPEC_LOG], O_WRONLY | O_APPEND | O_CREAT |
				   O_CLOEXEC | O_NOFOLLOW, 0600);
		if (s->k.log_fd < 0)
			objfs_warn(h->log, SUB, "%s: log %s: %s", s->name,
				   str[HSPEC_LOG], strerror(errno));
	}
	return 0;
}

/* Once s->serial is set: where its servers rejoin. */
static void slot_rejoin(struct holder *h, struct hslot *s)
{
	snprintf(s->rejoin, sizeof(s->rejoin), "%" PRIu64 ":%s:%s", s->serial,
		 s->name, h->c->socket_path);
	s->k.rejoin = s->rejoin;
}

/* Frees s; its record goes when we own the records (the mount ended, or
 * was killed on request: nothing of it can serve any more). */
static void slot_free(struct holder *h, struct hslot *s, int sig)
{
	for (int i = 0; i < 2; i++) {
		if (s->opidfd[i] >= 0)
			close(s->opidfd[i]);
		s->opidfd[i] = -1;
	}
	objfs_kslot_close(&s->k, sig);
	if (rec_owner(h))
		rec_remove(h, s->name);
	s->used = false;
	s->orphan = false;
}

/* Sends sig to an orphan's pids that are alive. */
static void orphan_signal(struct hslot *s, int sig)
{
	for (int i = 0; i < 2; i++) {
		if (s->opidfd[i] >= 0)
			(void)syscall(SYS_pidfd_send_signal, s->opidfd[i], sig,
				      NULL, 0);
	}
}

/* ---- requests ------------------------------------------------------------- */

static void do_start(struct holder *h, int c, const struct objfs_hmsg *m, int creds_fd)
{
	struct hslot *s = find(h, m->name);
	unsigned i;
	int err;

	if (m->name[0] == '\0' || memchr(m->name, '\0', sizeof(m->name)) == NULL) {
		reply_to(h, c, HOP_ERR, EINVAL, NULL, NULL, 0);
		goto out;
	}
	if (s != NULL) {
		/* an orphan's name is taken until it rejoins or is gone */
		reply_to(h, c, HOP_ERR, s->orphan ? EAGAIN : EEXIST, s, NULL, 0);
		goto out;
	}
	for (i = 0; i < h->n_slots && h->slots[i].used; i++)
		;
	if (i == h->n_slots) {
		objfs_error(h->log, SUB, "%s: every one of %u slots is taken",
			    m->name, h->n_slots);
		reply_to(h, c, HOP_ERR, ENOSPC, NULL, NULL, 0);
		goto out;
	}
	s = &h->slots[i];
	err = slot_setup(h, s, m);
	if (err == 0) {
		s->serial = h->next_serial++;
		slot_rejoin(h, s);
		s->k.creds_fd = creds_fd;
		creds_fd = -1;
		err = objfs_kslot_start(&s->k);
	}
	if (err != 0) {
		reply_to(h, c, HOP_ERR, err, NULL, NULL, 0);
		slot_free(h, s, SIGKILL);
		goto out;
	}
	s->starter = c;
	objfs_info(h->log, SUB, "%s: mount %" PRIu64 " on %s: pid %d", s->name,
		   s->serial, s->mountpoint, (int)s->k.server);
out:
	if (creds_fd >= 0)
		close(creds_fd);
}

static void do_stop(struct holder *h, int c, const struct objfs_hmsg *m)
{
	struct hslot *s = find(h, m->name);

	if (s == NULL || (m->serial != 0 && m->serial != s->serial)) {
		reply_to(h, c, HOP_ERR, ENOENT, NULL, NULL, 0);
		return;
	}
	if (m->arg == SIGKILL) {
		objfs_warn(h->log, SUB, "%s: killed on request", s->name);
		reply_to(h, c, HOP_OK, 0, s, NULL, 0);
		if (s->orphan)
			orphan_signal(s, SIGKILL);
		slot_free(h, s, SIGKILL);
		return;
	}
	if (s->orphan) {
		/* it ends when its pids are gone (or, rejoined, as any) */
		objfs_info(h->log, SUB, "%s: ending the mount (signal %d) before "
			   "its server rejoined", s->name, (int)m->arg);
		orphan_signal(s, (int)m->arg);
		s->orphan_ending = true;
		reply_to(h, c, HOP_OK, 0, s, NULL, 0);
		return;
	}
	objfs_info(h->log, SUB, "%s: ending the mount (signal %d)", s->name,
		   (int)m->arg);
	objfs_kslot_end(&s->k, (int)m->arg);
	reply_to(h, c, HOP_OK, 0, s, NULL, 0);
}

/* HOP_ADOPT: a server of an orphan (one of its recorded pids, by
 * SO_PEERCRED) hands its mount over: fds are the fuse fd, its slot socket
 * and the credentials fd (taken when used: set to -1). */
static void do_adopt(struct holder *h, int c, const struct objfs_hmsg *m, int *fds)
{
	struct hslot *s = find(h, m->name);
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int i = -1, pidfd, err;

	if (getsockopt(h->conns[c], SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
		cr.pid = 0;
	if (s != NULL && s->orphan && s->serial == m->serial && cr.pid > 0)
		i = s->opid[0] == cr.pid ? 0 : s->opid[1] == cr.pid ? 1 : -1;
	if (i < 0 || s->opidfd[i] < 0 || fds[0] < 0 || fds[1] < 0) {
		objfs_warn(h->log, SUB, "%s: pid %ld asks to rejoin mount %" PRIu64
			   ", which is not an orphan of ours: refused", m->name,
			   (long)cr.pid, m->serial);
		reply_to(h, c, HOP_ERR, ESTALE, NULL, NULL, 0);
		return;
	}
	pidfd = s->opidfd[i];
	s->opidfd[i] = -1;
	if (s->opidfd[1 - i] >= 0)
		close(s->opidfd[1 - i]);        /* a successor that never got
						   the fd: it ends by itself */
	s->opidfd[1 - i] = -1;
	s->k.creds_fd = fds[2];
	fds[2] = -1;
	err = objfs_kslot_adopt_server(&s->k, fds[1], fds[0], &m->init, cr.pid,
				       pidfd);
	fds[0] = fds[1] = -1;
	s->orphan = false;
	if (err != 0) {
		objfs_error(h->log, SUB, "%s: adopting pid %ld: %s: the mount is "
			    "lost", s->name, (long)cr.pid, strerror(err));
		reply_to(h, c, HOP_ERR, err, NULL, NULL, 0);
		kill(cr.pid, SIGKILL);
		slot_free(h, s, 0);
		return;
	}
	s->k.events = 0;
	s->live = true;
	s->rec_written = false;         /* rewritten below: pid, no successor */
	rec_write(h, s);
	objfs_info(h->log, SUB, "%s: server pid %ld rejoined: mount %" PRIu64
		   " is ours", s->name, (long)cr.pid, s->serial);
	reply_to(h, c, HOP_OK, 0, s, NULL, 0);
	if (s->orphan_ending)
		objfs_kslot_end(&s->k, 0);
}

static void do_takeover(struct holder *h, int c)
{
	unsigned i;

	if (h->phase != SERVING) {
		reply_to(h, c, HOP_ERR, EAGAIN, NULL, NULL, 0);
		return;
	}
	for (i = 0; i < h->n_slots; i++) {
		struct hslot *s = &h->slots[i];

		if (s->used && (!s->live || s->k.ending || objfs_kslot_busy(&s->k))) {
			objfs_info(h->log, SUB, "takeover: %s is busy: try again",
				   s->name);
			reply_to(h, c, HOP_ERR, EAGAIN, NULL, NULL, 0);
			return;
		}
	}
	objfs_info(h->log, SUB, "a new holder takes the mounts over");
	for (i = 0; i < h->n_slots; i++) {
		struct hslot *s = &h->slots[i];
		struct objfs_hmsg *m = &h->reply;
		int fds[3] = { s->k.fuse_fd, s->k.creds_fd, -1 };

		if (!s->used)
			continue;
		fds[2] = (int)syscall(SYS_pidfd_open, s->k.server, 0);
		objfs_hmsg_init(m, HOP_SLOT, s->name);
		m->serial = s->serial;
		m->pid = s->k.server;
		memcpy(m->spec, s->spec, s->spec_len);
		m->spec_len = s->spec_len;
		m->init = s->k.init;
		/* only the fds present are attached, in this order */
		m->arg = (s->k.creds_fd >= 0 ? 1 : 0) | (fds[2] >= 0 ? 2 : 0);
		if (objfs_kpkt_send(h->conns[c], m, sizeof(*m), fds, 3) != 0)
			objfs_error(h->log, SUB, "takeover: sending %s failed", s->name);
		if (fds[2] >= 0)
			close(fds[2]);
	}
	objfs_hmsg_init(&h->reply, HOP_END, NULL);
	(void)objfs_kpkt_send(h->conns[c], &h->reply, sizeof(h->reply), NULL, 0);
	h->phase = LEAVING;
	h->peer = c;
}

static void retire(struct holder *h)
{
	unsigned i;

	for (i = 0; i < h->n_slots; i++) {
		if (h->slots[i].used)
			slot_free(h, &h->slots[i], 0);
	}
	if (h->lsock >= 0)
		close(h->lsock);        /* the path is the new holder's now */
	h->lsock = -1;
	if (h->c->ready_file != NULL)
		unlink(h->c->ready_file);
	h->phase = RETIRED;
	if (h->c->retire_fd >= 0)
		(void)!write(h->c->retire_fd, "R", 1);
	objfs_info(h->log, SUB, "taken over: holding nothing; waiting to be stopped");
}

/* The new holder left (its connection closed) before HOP_DONE. */
static void takeover_abandoned(struct holder *h)
{
	unsigned i;

	objfs_warn(h->log, SUB, "the new holder left before taking over: serving on");
	h->phase = SERVING;
	h->peer = -1;
	for (i = 0; i < h->n_slots; i++) {
		if (h->slots[i].used)
			objfs_kslot_unrelease(&h->slots[i].k);
	}
}

static void on_request(struct holder *h, int c, int *fds)
{
	struct objfs_hmsg *m = &h->msg;
	struct hslot *s;

	m->name[sizeof(m->name) - 1] = '\0';
	if (h->phase == LEAVING && c == h->peer) {
		if (m->op == HOP_HANDOVER && (s = find(h, m->name)) != NULL) {
			objfs_kslot_release(&s->k);
		} else if (m->op == HOP_HANDOVER) {
			reply_to(h, c, HOP_HANDED, 0, NULL, NULL, 0);
		} else if (m->op == HOP_DONE) {
			h->peer = -1;
			retire(h);
		}
		return;
	}
	if (h->phase != SERVING && m->op != HOP_PING && m->op != HOP_STATUS &&
	    m->op != HOP_LIST) {
		reply_to(h, c, HOP_ERR, h->phase == STOPPING ? ESHUTDOWN : EAGAIN,
			 NULL, NULL, 0);
		return;
	}
	switch (m->op) {
	case HOP_START:
		do_start(h, c, m, fds[0]);
		fds[0] = -1;
		break;
	case HOP_STATUS:
		s = find(h, m->name);
		if (h->phase == LEAVING || h->phase == RETIRED)
			reply_to(h, c, HOP_ERR, EAGAIN, NULL, NULL, 0);
		else if (s == NULL || (m->serial != 0 && m->serial != s->serial))
			reply_to(h, c, HOP_ERR, ENOENT, NULL, NULL, 0);
		else
			reply_to(h, c, HOP_OK, 0, s, NULL, 0);
		break;
	case HOP_STOP:
		do_stop(h, c, m);
		break;
	case HOP_PING:
		objfs_hmsg_init(&h->reply, HOP_OK, h->instance);
		h->reply.arg = h->phase == SERVING;
		if (h->oom_score_adj != OOM_UNKNOWN)
			h->reply.spec_len = (uint32_t)snprintf(h->reply.spec,
				sizeof(h->reply.spec), "oom_score_adj=%d",
				h->oom_score_adj) + 1;
		(void)objfs_kpkt_send(h->conns[c], &h->reply, sizeof(h->reply), NULL, 0);
		break;
	case HOP_LIST:
		for (unsigned i = 0; i < h->n_slots; i++) {
			if (h->slots[i].used)
				reply_to(h, c, HOP_INFO, 0, &h->slots[i], NULL, 0);
		}
		reply_to(h, c, HOP_END, 0, NULL, NULL, 0);
		break;
	case HOP_TAKEOVER:
		do_takeover(h, c);
		break;
	case HOP_ADOPT:
		do_adopt(h, c, m, fds);
		break;
	default:
		reply_to(h, c, HOP_ERR, EINVAL, NULL, NULL, 0);
		break;
	}
}

/* ---- connections ------------------------------------------------------------ */

static void conn_close(struct holder *h, int c)
{
	unsigned i;

	close(h->conns[c]);
	h->conns[c] = -1;
	for (i = 0; i < h->n_slots; i++) {
		if (h->slots[i].used && h->slots[i].starter == c)
			h->slots[i].starter = -1;
	}
	if (h->phase == LEAVING && h->peer == c)
		takeover_abandoned(h);
}

static void accept_one(struct holder *h)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	unsigned i;
	int fd = accept4(h->lsock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.uid != 0) {
		objfs_hmsg_init(&h->reply, HOP_ERR, NULL);
		h->reply.status = EACCES;
		(void)objfs_kpkt_send(fd, &h->reply, sizeof(h->reply), NULL, 0);
		objfs_warn(h->log, SUB, "refused a connection of uid %ld (pid %ld): "
			   "root only", (long)cr.uid, (long)cr.pid);
		close(fd);
		return;
	}
	for (i = 0; i < h->n_conns; i++) {
		if (h->conns[i] < 0) {
			h->conns[i] = fd;
			return;
		}
	}
	objfs_warn(h->log, SUB, "too many connections: one refused");
	close(fd);
}

/* ---- the socket path ---------------------------------------------------------- */

static int listen_on_path(struct holder *h)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = h->c->socket_path;
	char dir[sizeof(sa.sun_path)];
	mode_t um;
	int s, err = 0;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.%d.tmp", path,
			     (int)getpid()) >= sizeof(sa.sun_path))
		return ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%s", path);
	if (mkdir(dirname(dir), 0700) != 0 && errno != EEXIST)
		return errno;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return errno;
	unlink(sa.sun_path);
	um = umask(0177);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(s, 64) != 0 ||
	    chmod(sa.sun_path, 0600) != 0 || rename(sa.sun_path, path) != 0)
		err = errno;
	umask(um);
	if (err != 0) {
		unlink(sa.sun_path);
		close(s);
		return err;
	}
	h->lsock = s;
	return 0;
}

static void write_ready(struct holder *h)
{
	char tmp[4096], dir[4096];
	int fd;

	if (h->c->ready_file == NULL)
		return;
	snprintf(dir, sizeof(dir), "%s", h->c->ready_file);
	(void)mkdir(dirname(dir), 0755);
	snprintf(tmp, sizeof(tmp), "%s.tmp", h->c->ready_file);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || dprintf(fd, "%s\n", h->instance) < 0 ||
	    close(fd) != 0 || rename(tmp, h->c->ready_file) != 0)
		objfs_error(h->log, SUB, "ready file %s: %s", h->c->ready_file,
			    strerror(errno));
}

static int start_serving(struct holder *h)
{
	int err = listen_on_path(h);

	if (err != 0) {
		objfs_error(h->log, SUB, "listening on %s: %s", h->c->socket_path,
			    strerror(err));
		return err;
	}
	h->phase = SERVING;
	write_ready(h);
	objfs_info(h->log, SUB, "serving on %s (instance %s, %u slots)",
		   h->c->socket_path, h->instance, h->n_slots);
	return 0;
}

/* ---- orphans ---------------------------------------------------------------------- */

static unsigned orphan_ms(const struct holder *h)
{
	return h->c->orphan_timeout_ms ? h->c->orphan_timeout_ms : ORPHAN_MS;
}

/* One record read at a fresh start: an orphan slot when a pid it names
 * is alive in our pid namespace, else dropped.  r is h->rec. */
static void load_record(struct holder *h, const char *file)
{
	struct hrec *r = &h->rec;
	struct hslot *s = NULL;
	char path[4200];
	unsigned i, alive = 0;
	ssize_t n;
	int fd;

	rec_path(h, file, "", path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	n = read(fd, r, sizeof(*r));
	close(fd);
	r->name[sizeof(r->name) - 1] = '\0';
	if (n != (ssize_t)sizeof(*r) || r->magic != REC_MAGIC ||
	    r->size != sizeof(*r) || r->spec_len > sizeof(r->spec) ||
	    strcmp(r->name, file) != 0) {
		objfs_warn(h->log, SUB, "%s: not a mount record: removed", path);
		unlink(path);
		return;
	}
	if (r->pidns != h->pidns) {
		objfs_warn(h->log, SUB, "%s: mount %" PRIu64 " was kept in another "
			   "pid namespace (a holder pod before this one): its "
			   "servers ended with it; the next mount of it recovers "
			   "its unsaved data from its state directory", r->name,
			   r->serial);
		unlink(path);
		return;
	}
	for (i = 0; i < h->n_slots && s == NULL; i++) {
		if (!h->slots[i].used)
			s = &h->slots[i];
	}
	objfs_hmsg_init(&h->msg, HOP_SLOT, r->name);
	memcpy(h->msg.spec, r->spec, r->spec_len);
	h->msg.spec_len = r->spec_len;
	if (s == NULL || slot_setup(h, s, &h->msg) != 0) {
		objfs_error(h->log, SUB, "%s: cannot keep the record of mount %"
			    PRIu64 " (%s)", r->name, r->serial,
			    s == NULL ? "no free slot" : "malformed");
		if (s != NULL)
			slot_free(h, s, 0);
		unlink(path);
		return;
	}
	s->serial = r->serial;
	if (r->serial >= h->next_serial)
		h->next_serial = r->serial + 1;
	slot_rejoin(h, s);
	for (i = 0; i < 2; i++) {
		pid_t pid = (pid_t)r->pid[i];
		int pfd;

		if (pid <= 0 || r->start[i] == 0 || proc_start(pid) != r->start[i])
			continue;
		pfd = (int)syscall(SYS_pidfd_open, pid, 0);
		/* the same process still (its start time), now watched */
		if (pfd < 0 || proc_start(pid) != r->start[i]) {
			if (pfd >= 0)
				close(pfd);
			continue;
		}
		s->opid[i] = pid;
		s->opidfd[i] = pfd;
		alive++;
	}
	if (alive == 0) {
		objfs_warn(h->log, SUB, "%s: mount %" PRIu64 " on %s: its server "
			   "died with the holder before us; the next mount of it "
			   "recovers its unsaved data from its state directory",
			   s->name, s->serial, s->mountpoint);
		slot_free(h, s, 0);
		unlink(path);
		return;
	}
	s->orphan = true;
	s->orphan_deadline = objfs_now_ms() + orphan_ms(h);
	s->rec_written = true;
	s->rec_pid[0] = (pid_t)r->pid[0];
	s->rec_pid[1] = (pid_t)r->pid[1];
	objfs_info(h->log, SUB, "%s: mount %" PRIu64 " on %s outlived the holder "
		   "before us (pid %d%s): waiting for it to rejoin", s->name,
		   s->serial, s->mountpoint, (int)(s->opid[0] ? s->opid[0] : s->opid[1]),
		   s->opid[0] && s->opid[1] ? " and a successor" : "");
}

/* A fresh start (no holder answered): the mounts a dead holder kept. */
static void load_records(struct holder *h)
{
	DIR *d = opendir(h->rec_dir);
	struct dirent *e;
	size_t l;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".tmp") == 0) {
			char path[4200];

			rec_path(h, e->d_name, "", path, sizeof(path));
			unlink(path);
			continue;
		}
		if (rec_name_ok(e->d_name))
			load_record(h, e->d_name);
	}
	closedir(d);
}

/* An orphan's pid i ended (its pidfd said so). */
static void orphan_pid_gone(struct holder *h, struct hslot *s, int i)
{
	close(s->opidfd[i]);
	s->opidfd[i] = -1;
	s->opid[i] = 0;
	if (s->opidfd[1 - i] >= 0)
		return;
	if (s->orphan_ending)
		objfs_info(h->log, SUB, "%s: mount %" PRIu64 " ended before its "
			   "server rejoined", s->name, s->serial);
	else
		objfs_error(h->log, SUB, "%s: mount %" PRIu64 " on %s: its server "
			    "ended without rejoining: the mount is lost; the next "
			    "mount of it recovers its unsaved data from its state "
			    "directory", s->name, s->serial, s->mountpoint);
	slot_free(h, s, 0);
}

/* Orphans past their deadline are killed (then forgotten once gone). */
static void orphan_deadlines(struct holder *h)
{
	long long now = objfs_now_ms();

	for (unsigned i = 0; i < h->n_slots; i++) {
		struct hslot *s = &h->slots[i];

		if (!s->used || !s->orphan || s->orphan_killed ||
		    now < s->orphan_deadline)
			continue;
		objfs_error(h->log, SUB, "%s: mount %" PRIu64 ": its server did not "
			    "rejoin within %u s: killed", s->name, s->serial,
			    orphan_ms(h) / 1000);
		orphan_signal(s, SIGKILL);
		s->orphan_killed = true;
	}
}

/* ---- taking over ---------------------------------------------------------------- */

/* Connects to a running holder and asks for its mounts: 0 (TAKING, or no
 * holder there: h->peer -1) or an errno. */
static int take_over(struct holder *h)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct objfs_hmsg *m = &h->msg;
	unsigned n = 0;
	int s, err, fds[3];

	if (strlen(h->c->socket_path) >= sizeof(sa.sun_path))
		return ENAMETOOLONG;
	strcpy(sa.sun_path, h->c->socket_path);
	for (;;) {
		s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (s < 0)
			return errno;
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
			err = errno;
			close(s);
			if (err == ENOENT || err == ECONNREFUSED)
				return 0;       /* nobody serves: a fresh start */
			return err;
		}
		objfs_hmsg_init(m, HOP_TAKEOVER, NULL);
		err = objfs_kpkt_send(s, m, sizeof(*m), NULL, 0);
		if (err == 0)
			err = objfs_kpkt_recv(s, m, sizeof(*m), fds, 3);
		if (err == 0 && m->op == HOP_ERR && m->status == EAGAIN &&
		    objfs_now_ms() < h->deadline) {
			close(s);
			usleep(200 * 1000);
			continue;
		}
		break;
	}
	while (err == 0 && m->op == HOP_SLOT) {
		unsigned i;
		struct hslot *sl = NULL;

		for (i = 0; i < h->n_slots; i++) {
			if (!h->slots[i].used) {
				sl = &h->slots[i];
				break;
			}
		}
		if (!(m->arg & 1)) {            /* no credentials: fds shift */
			fds[2] = fds[1];
			fds[1] = -1;
		}
		if (sl == NULL || fds[0] < 0) {
			err = ENOSPC;
			break;
		}
		err = slot_setup(h, sl, m);
		if (err == 0) {
			sl->serial = m->serial;
			if (m->serial >= h->next_serial)
				h->next_serial = m->serial + 1;
			slot_rejoin(h, sl);
			sl->k.creds_fd = fds[1];
			fds[1] = -1;
			err = objfs_kslot_adopt(&sl->k, fds[0], &m->init, fds[2]);
			fds[2] = -1;
		}
		close(fds[0]);
		if (fds[1] >= 0)
			close(fds[1]);
		if (fds[2] >= 0)
			close(fds[2]);
		if (err != 0) {
			objfs_error(h->log, SUB, "takeover: %s: %s", m->name, strerror(err));
			break;
		}
		objfs_info(h->log, SUB, "takeover: %s (mount %" PRIu64 ", pid %" PRId64
			   " there) adopted", sl->name, sl->serial, m->pid);
		n++;
		err = objfs_kpkt_recv(s, m, sizeof(*m), fds, 3);
	}
	if (err == 0 && m->op != HOP_END)
		err = m->op == HOP_ERR && m->status ? m->status : EPROTO;
	if (err != 0) {
		close(s);
		return err;
	}
	objfs_info(h->log, SUB, "takeover: %u mount(s) received; successors started", n);
	h->peer = s;
	h->phase = TAKING;
	return 0;
}

/* TAKING: every adopted mount is served by our successor? */
static void taking_progress(struct holder *h)
{
	unsigned i, pending = 0;

	for (i = 0; i < h->n_slots; i++) {
		if (h->slots[i].used && !h->slots[i].live)
			pending++;
	}
	if (h->failed || objfs_now_ms() > h->deadline) {
		objfs_error(h->log, SUB, "takeover failed%s: stopping our successors; "
			    "the old holder serves on",
			    h->failed ? "" : " (timeout)");
		for (i = 0; i < h->n_slots; i++) {
			if (h->slots[i].used)
				slot_free(h, &h->slots[i], SIGKILL);
		}
		/* reaped before the old holder hears of it: it then resumes */
		while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
			;
		h->phase = STOPPING;
		return;
	}
	if (pending > 0)
		return;
	if (start_serving(h) != 0) {
		h->failed = true;
		return;
	}
	objfs_hmsg_init(&h->msg, HOP_DONE, NULL);
	(void)objfs_kpkt_send(h->peer, &h->msg, sizeof(h->msg), NULL, 0);
	close(h->peer);
	h->peer = -1;
	objfs_info(h->log, SUB, "takeover done");
}

static void on_peer_msg(struct holder *h)
{
	int fds[3], i, err;
	struct hslot *s;

	err = objfs_kpkt_recv(h->peer, &h->msg, sizeof(h->msg), fds, 3);
	for (i = 0; i < 3; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	if (err != 0) {
		/* the old holder is gone: its servers went with it (they die
		 * with their holder); a pidfd still says when */
		objfs_warn(h->log, SUB, "the old holder left during the takeover");
		close(h->peer);
		h->peer = -1;
		for (unsigned k = 0; k < h->n_slots; k++) {
			s = &h->slots[k];
			if (s->used && s->k.foreign && s->k.foreign_pidfd < 0)
				objfs_kslot_foreign_gone(&s->k);
		}
		return;
	}
	h->msg.name[sizeof(h->msg.name) - 1] = '\0';
	if (h->msg.op == HOP_HANDED && (s = find(h, h->msg.name)) != NULL)
		objfs_kslot_foreign_gone(&s->k);
}

/* ---- events ---------------------------------------------------------------------- */

static void slot_events(struct holder *h, struct hslot *s)
{
	unsigned ev = s->k.events;

	s->k.events = 0;
	if (ev & KSLOT_EV_FOREIGN && h->phase == TAKING && h->peer >= 0) {
		struct objfs_hmsg *m = &h->reply;

		objfs_hmsg_init(m, HOP_HANDOVER, s->name);
		if (objfs_kpkt_send(h->peer, m, sizeof(*m), NULL, 0) != 0 &&
		    s->k.foreign_pidfd < 0)
			objfs_kslot_foreign_gone(&s->k);
	} else if (ev & KSLOT_EV_FOREIGN && h->peer < 0 && s->k.foreign_pidfd < 0) {
		objfs_kslot_foreign_gone(&s->k);
	}
	if (ev & KSLOT_EV_RELEASED && h->phase == LEAVING && h->peer >= 0) {
		objfs_info(h->log, SUB, "%s: released to the new holder", s->name);
		reply_to(h, h->peer, HOP_HANDED, 0, s, NULL, 0);
	}
	if (ev & KSLOT_EV_READY) {
		if (!s->live)
			objfs_info(h->log, SUB, "%s: serving (pid %d)", s->name,
				   (int)s->k.server);
		s->live = true;
		if (s->starter >= 0)
			reply_to(h, s->starter, HOP_OK, 0, s, NULL, 0);
		s->starter = -1;
	}
	if (ev & KSLOT_EV_ENDED) {
		objfs_info(h->log, SUB, "%s: mount %" PRIu64 " ended (status %d)",
			   s->name, s->serial, s->k.status);
		if (s->starter >= 0 && h->conns[s->starter] >= 0) {
			objfs_hmsg_init(&h->reply, HOP_ERR, s->name);
			h->reply.status = EIO;
			h->reply.arg = (uint64_t)s->k.status;
			(void)objfs_kpkt_send(h->conns[s->starter], &h->reply,
					      sizeof(h->reply), NULL, 0);
		}
		if (h->phase == TAKING && !s->live)
			h->failed = true;
		slot_free(h, s, SIGTERM);
	}
}

static void reap(struct holder *h)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (unsigned i = 0; i < h->n_slots; i++) {
			if (h->slots[i].used && objfs_kslot_child(&h->slots[i].k, pid, st))
				break;
		}
	}
}

static bool any_orphan(const struct holder *h)
{
	for (unsigned i = 0; i < h->n_slots; i++) {
		if (h->slots[i].used && h->slots[i].orphan)
			return true;
	}
	return false;
}

static bool any_slot(const struct holder *h)
{
	for (unsigned i = 0; i < h->n_slots; i++) {
		if (h->slots[i].used)
			return true;
	}
	return false;
}

/* SIGTERM/SIGINT: true when the holder may exit now. */
static bool on_stop_signal(struct holder *h, int sig)
{
	unsigned i;

	if (h->phase == RETIRED || !any_slot(h))
		return true;
	if (h->phase == TAKING) {
		h->failed = true;
		return false;
	}
	if (h->phase != STOPPING)
		objfs_info(h->log, SUB, "signal %d: ending every mount (data is "
			   "uploaded, then unmounted)", sig);
	h->phase = STOPPING;
	for (i = 0; i < h->n_slots; i++) {
		struct hslot *s = &h->slots[i];

		if (s->used && s->orphan && !s->orphan_ending) {
			orphan_signal(s, SIGTERM);
			s->orphan_ending = true;
		} else if (s->used && !s->orphan) {
			objfs_kslot_end(&s->k, SIGTERM);
		}
	}
	return false;
}

/* ---- the loop --------------------------------------------------------------------- */

/* The node's mounts die with us: asks the kernel to let the OOM killer
 * pick others (oom_score_adj -1000), then reads back the score we got,
 * for the log and HOP_PING (the node plugin's metrics).  Lowering the
 * score needs CAP_SYS_RESOURCE in the host's user namespace: a runtime
 * that withholds it (a pod that is not privileged, user namespaces,
 * rootless containerd, whose restrict_oom_score_adj keeps containers at or
 * above its own score) leaves the score the kubelet gave the container.
 * The score, or OOM_UNKNOWN when /proc cannot tell. */
static int oom_protect(struct holder *h)
{
	char buf[32];
	int fd, err = 0, score = OOM_UNKNOWN;
	ssize_t n;
	char *end;
	long v;

	fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		objfs_warn(h->log, SUB, "cannot open /proc/self/oom_score_adj: %s: "
			   "an OOM kill of the holder would end every mount of "
			   "the node", strerror(errno));
		return OOM_UNKNOWN;
	}
	if (write(fd, "-1000", 5) != 5)
		err = errno;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		errno = 0;
		v = strtol(buf, &end, 10);
		if (errno == 0 && end != buf && (*end == '\n' || *end == '\0') &&
		    v >= -1000 && v <= 1000)
			score = (int)v;
	}
	if (score == OOM_PROTECTED)
		objfs_info(h->log, SUB, "oom_score_adj %d: shielded from the OOM "
			   "killer", score);
	else if (score == OOM_UNKNOWN)
		objfs_warn(h->log, SUB, "cannot read /proc/self/oom_score_adj back: "
			   "the holder may not be shielded from the OOM killer");
	else
		objfs_warn(h->log, SUB, "oom_score_adj is %d, not %d (%s): an OOM "
			   "kill of the holder leaves its mounts without a keeper "
			   "until the next holder (as PID 1's child: at once), one "
			   "of PID 1 ends every mount of the node; it needs "
			   "CAP_SYS_RESOURCE (a privileged pod without user "
			   "namespaces; containerd's restrict_oom_score_adj or a "
			   "rootless runtime withholds it): see docs/kubernetes.md, "
			   "\"The holder's protection\"", score, OOM_PROTECTED,
			   err != 0 ? strerror(err) : "the write did not take");
	return score;
}

static int setup(struct holder *h)
{
	uint64_t id = 0;
	struct stat st;
	sigset_t set;
	unsigned i;

	h->n_slots = h->c->max_slots ? h->c->max_slots : 128;
	h->n_conns = h->n_slots + CONNS_MIN;
	h->slots = calloc(h->n_slots, sizeof(*h->slots));
	h->conns = calloc(h->n_conns, sizeof(*h->conns));
	h->pf = calloc(2 + h->n_conns + (size_t)h->n_slots * KSLOT_POLLFDS,
		       sizeof(*h->pf));
	h->pmap = calloc(2 + h->n_conns + (size_t)h->n_slots * KSLOT_POLLFDS,
			 sizeof(*h->pmap));
	if (h->slots == NULL || h->conns == NULL || h->pf == NULL || h->pmap == NULL)
		return ENOMEM;
	for (i = 0; i < h->n_conns; i++)
		h->conns[i] = -1;
	if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
		id = (uint64_t)objfs_now_ms() ^ ((uint64_t)getpid() << 32);
	snprintf(h->instance, sizeof(h->instance), "%016" PRIx64, id);
	/* serials of different holders never meet: start from the clock */
	h->next_serial = (uint64_t)time(NULL) << 20;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	h->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (h->sfd < 0)
		return errno;
	h->oom_score_adj = oom_protect(h);
	if (stat("/proc/self/ns/pid", &st) == 0)
		h->pidns = (uint64_t)st.st_ino;
	if ((size_t)snprintf(h->rec_dir, sizeof(h->rec_dir), "%s.slots",
			     h->c->socket_path) >= sizeof(h->rec_dir))
		return ENAMETOOLONG;
	if (mkdir(h->rec_dir, 0700) != 0 && errno != EEXIST)
		objfs_warn(h->log, SUB, "%s: %s: a holder that dies loses its mounts",
			   h->rec_dir, strerror(errno));
	return 0;
}

#ifndef NDEBUG
/* The state tables agree (debug builds): see "A slot is one of" above. */
static void holder_check(const struct holder *h)
{
	unsigned i, j;

	assert(h->phase >= TAKING && h->phase <= STOPPING);
	assert(h->phase != SERVING || h->lsock >= 0);
	assert(h->phase != TAKING || h->lsock < 0);
	assert(h->phase != RETIRED || h->lsock < 0);
	for (i = 0; i < h->n_conns; i++)
		assert(h->conns[i] >= -1);
	for (i = 0; i < h->n_slots; i++) {
		const struct hslot *s = &h->slots[i];

		if (!s->used)
			continue;
		assert(h->phase != RETIRED);
		assert(s->name[0] != '\0' && s->serial < h->next_serial);
		assert(s->starter < (int)h->n_conns);
		assert(s->k.name == s->name && s->k.rejoin == s->rejoin &&
		       !s->k.die_with_owner);
		if (s->orphan) {
			/* holds nothing but the pidfds of the pids that may rejoin */
			assert(s->k.fuse_fd < 0 && s->k.server == 0 && s->k.next == 0 &&
			       s->k.ssock < 0 && !s->live && s->starter < 0);
			assert(s->opidfd[0] >= 0 || s->opidfd[1] >= 0);
			for (j = 0; j < 2; j++)
				assert((s->opidfd[j] >= 0) == (s->opid[j] > 0));
		} else {
			assert(s->opidfd[0] < 0 && s->opidfd[1] < 0);
			/* a live mount has its fd, or a successor takes it */
			assert(!s->live || s->k.fuse_fd >= 0 || s->k.ending ||
			       s->k.releasing || (s->k.events & KSLOT_EV_ENDED));
			/* the server we run is recorded, when records are ours */
			assert(!rec_owner(h) || !s->rec_written || !rec_name_ok(s->name) ||
			       (s->rec_pid[0] == s->k.server && s->rec_pid[1] == s->k.next));
		}
		for (j = i + 1; j < h->n_slots; j++)
			assert(!h->slots[j].used || strcmp(h->slots[j].name, s->name) != 0);
	}
}
#else
static void holder_check(const struct holder *h)
{
	(void)h;
}
#endif

int objfs_holder_run(const struct objfs_holder_conf *conf)
{
	struct holder *h = calloc(1, sizeof(*h));
	int status = 1, err;

	if (h == NULL)
		return 1;
	h->c = conf;
	h->log = conf->log;
	h->sfd = h->lsock = h->peer = -1;
	err = setup(h);
	if (err != 0) {
		objfs_error(h->log, SUB, "starting: %s", strerror(err));
		goto out;
	}
	h->deadline = objfs_now_ms() + (conf->takeover_timeout_ms ?
					 conf->takeover_timeout_ms : 120000);
	err = take_over(h);
	if (err != 0) {
		objfs_error(h->log, SUB, "taking over from the holder on %s: %s",
			    conf->socket_path, strerror(err));
		goto out;
	}
	if (h->peer < 0)
		load_records(h);
	if (h->peer < 0 && start_serving(h) != 0)
		goto out;
	for (;;) {
		struct pollfd *pf = h->pf;
		int *map = h->pmap;
		int n = 0, nc0, ns0, r;
		unsigned i;

		if (h->phase == TAKING)
			taking_progress(h);
		if (h->phase == STOPPING && !any_slot(h)) {
			status = h->failed ? 1 : 0;
			break;
		}
		pf[n] = (struct pollfd){ .fd = h->sfd, .events = POLLIN };
		map[n++] = -1;
		pf[n] = (struct pollfd){ .fd = h->lsock, .events = POLLIN };
		map[n++] = -1;
		if (h->phase == TAKING)
			pf[1].fd = h->peer;
		nc0 = n;
		for (i = 0; i < h->n_conns; i++) {
			if (h->conns[i] >= 0) {
				pf[n] = (struct pollfd){ .fd = h->conns[i], .events = POLLIN };
				map[n++] = (int)i;
			}
		}
		ns0 = n;
		for (i = 0; i < h->n_slots; i++) {
			struct hslot *s = &h->slots[i];

			if (s->used && !s->orphan) {
				int n0 = n;

				n = objfs_kslot_pollfds(&s->k, pf, n);
				while (n0 < n)
					map[n0++] = -1;
			}
			for (int j = 0; s->used && s->orphan && j < 2; j++) {
				if (s->opidfd[j] >= 0) {
					pf[n] = (struct pollfd){ .fd = s->opidfd[j],
								 .events = POLLIN };
					map[n++] = -(2 + (int)i * 2 + j);
				}
			}
		}
		r = poll(pf, (nfds_t)n, h->phase == TAKING ? 200 :
			 any_orphan(h) ? 1000 : -1);
		orphan_deadlines(h);
		if (r < 0 && errno != EINTR) {
			objfs_error(h->log, SUB, "poll: %s", strerror(errno));
			break;
		}
		if (r <= 0)
			continue;
		/* the slots first: a server's KOP_BYE must be read before its
		 * SIGCHLD is handled, or its clean end looks like a death */
		for (i = 0; i < h->n_slots; i++) {
			if (h->slots[i].used && !h->slots[i].orphan)
				objfs_kslot_poll(&h->slots[i].k, pf);
		}
		for (int k = ns0; k < n; k++) {
			int code = -map[k] - 2;
			struct hslot *s;

			if (map[k] > -2 || pf[k].revents == 0)
				continue;
			s = &h->slots[code / 2];
			if (s->used && s->orphan && s->opidfd[code % 2] == pf[k].fd)
				orphan_pid_gone(h, s, code % 2);
		}
		if (pf[0].revents) {
			struct signalfd_siginfo si;
			bool quit = false;

			while (read(h->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGCHLD)
					reap(h);
				else if (on_stop_signal(h, (int)si.ssi_signo))
					quit = true;
			}
			if (quit) {
				objfs_info(h->log, SUB, "stopped");
				status = 0;
				break;
			}
		}
		if (pf[1].fd >= 0 && pf[1].revents) {
			if (h->phase == TAKING && pf[1].fd == h->peer)
				on_peer_msg(h);
			else if (pf[1].fd == h->lsock && h->lsock >= 0)
				accept_one(h);
		}
		for (int k = nc0; k < ns0; k++) {
			int c = map[k], fds[3];

			if (pf[k].revents == 0 || h->conns[c] != pf[k].fd)
				continue;
			err = objfs_kpkt_recv(h->conns[c], &h->msg, sizeof(h->msg), fds, 3);
			if (err == 0) {
				on_request(h, c, fds);
				for (int j = 0; j < 3; j++) {
					if (fds[j] >= 0)
						close(fds[j]);
				}
			} else {
				conn_close(h, c);
			}
		}
		for (i = 0; i < h->n_slots; i++) {
			if (h->slots[i].used && h->slots[i].k.events)
				slot_events(h, &h->slots[i]);
		}
		for (i = 0; i < h->n_slots && rec_owner(h); i++) {
			if (h->slots[i].used)
				rec_write(h, &h->slots[i]);
		}
		holder_check(h);
	}
out:
	h->exiting = true;
	if (h->slots != NULL) {
		for (unsigned i = 0; i < h->n_slots; i++) {
			if (h->slots[i].used)
				slot_free(h, &h->slots[i], SIGTERM);
		}
	}
	if (h->conns != NULL) {
		for (unsigned i = 0; i < h->n_conns; i++) {
			if (h->conns[i] >= 0)
				close(h->conns[i]);
		}
	}
	if (h->lsock >= 0) {
		/* ours still: nobody else serves there */
		unlink(conf->socket_path);
		close(h->lsock);
		if (conf->ready_file != NULL)
			unlink(conf->ready_file);
	}
	if (h->peer >= 0)
		close(h->peer);
	if (h->sfd >= 0)
		close(h->sfd);
	free(h->slots);
	free(h->conns);
	free(h->pf);
	free(h->pmap);
	free(h);
	return status;
}
