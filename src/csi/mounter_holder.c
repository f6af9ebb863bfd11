/*
 * mounter_holder.c - the holder runner of the mounter (see mounter.h):
 * objfs-mount processes are started, watched and stopped by the node's
 * objfs-holder (mount/holder.h), a pod of its own, so they and the FUSE
 * connections they serve outlive the node plugin's container.  Bind
 * mounts, unmounts and statvfs are the real mounter's.
 *
 * Identity: a mount is the holder's slot (named after the mount point)
 * and its serial, never a pid: the holder runs in another pid namespace.
 * struct objfs_csi_proc keeps "holder:NAME" in unit, the serial in start
 * and the server's pid in the holder's namespace (logs only) in pid.
 *
 * Credentials go through a 0600 file in work_dir, opened, removed and
 * passed to the holder as an fd (SCM_RIGHTS): never argv, environment or
 * a message body.  The holder keeps the fd for every successor.
 *
 * A holder that does not answer (restarting, or a takeover under way)
 * leaves a mount alive: only a holder that answers "no such mount" makes
 * it dead, and the watchdog then mounts again.  The holder owns the
 * staging path (its slot of that name): it never answers "no such mount"
 * while a process of the old mount may still serve it, a server that
 * outlived a dead holder and has not rejoined the new one included (an
 * orphan: "not serving", and a start of its name is told to retry; see
 * mount/holder.h, "Who owns a staging path").  So a repair never races a
 * rejoining server.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/creds.h"
#include "common/errors.h"
#include "common/io.h"
#include "csi/mounter.h"
#include "csi/mounter_int.h"
#include "csi/noderec.h"
#include "mount/holder.h"

#define UNIT_PREFIX "holder:"
#define OPTS_MAX 8192
#define CALL_MS 5000
#define STOP_MAX_MS (15 * 60 * 1000)
#define PING_MS 1000

static const struct objfs_csi_mounter_ops *real_ops(void)
{
	return objfs_csi_mounter_real()->ops;
}

static bool is_slot(const struct objfs_csi_proc *p)
{
	return strncmp(p->unit, UNIT_PREFIX, strlen(UNIT_PREFIX)) == 0;
}

/* One request; retried while the holder answers EAGAIN (a takeover) or
 * is briefly absent, until timeout_ms.  0 (rep is the answer) or an
 * errno of the transport. */
static int ask(const char *sock, const struct objfs_hmsg *req, int fd,
	       struct objfs_hmsg *rep, unsigned timeout_ms)
{
	long long deadline = objfs_now_ms() + timeout_ms;
	int err;

	for (;;) {
		long long left = deadline - objfs_now_ms();

		err = objfs_holder_call(sock, req, fd, rep, left > 0 ? (unsigned)left : 1);
		if (err == 0 && !(rep->op == HOP_ERR && rep->status == EAGAIN))
			return 0;
		if (err != 0 && err != ECONNREFUSED && err != ENOENT && err != ECONNRESET)
			return err;
		if (objfs_now_ms() + 200 >= deadline)
			return err != 0 ? err : EAGAIN;
		objfs_sleep_ms(200);
	}
}

static struct objfs_hmsg *msg_pair(void)
{
	return calloc(2, sizeof(struct objfs_hmsg));
}

static int stop_slot(const char *sock, const char *name, uint64_t serial, int sig)
{
	struct objfs_hmsg *m = msg_pair();
	int err;

	if (m == NULL)
		return ENOMEM;
	objfs_hmsg_init(m, HOP_STOP, name);
	m->serial = serial;
	m->arg = (uint64_t)sig;
	err = ask(sock, m, -1, &m[1], CALL_MS);
	if (err == 0 && m[1].op == HOP_ERR)
		err = m[1].status;
	free(m);
	return err;
}

static int holder_start(void *ctx, const struct objfs_csi_mount_spec *spec,
			struct objfs_csi_proc *out, char *msg, size_t cap)
{
	const char *sock = ctx;
	struct objfs_hmsg *m = msg_pair();
	char creds_path[PATH_MAX] = "", opts[OPTS_MAX], rec[OBJFS_NODE_REC_NAME_MAX];
	char name[48];
	const char *str[HSPEC_N];
	int creds_fd = -1, err, tries = 0;

	msg[0] = '\0';
	memset(out, 0, sizeof(*out));
	if (m == NULL)
		return ENOMEM;
	err = objfs_node_rec_name(spec->mountpoint, rec);
	if (err != 0)
		goto out;
	snprintf(name, sizeof(name), "m-%.40s", rec + 2);
	if (objfs_creds_any(spec->creds)) {
		err = objfs_csi_write_creds(spec->work_dir, spec->creds, creds_path,
					    sizeof(creds_path));
		if (err == 0) {
			creds_fd = open(creds_path, O_RDONLY | O_CLOEXEC);
			if (creds_fd < 0)
				err = errno;
		}
		if (creds_path[0] != '\0')
			unlink(creds_path);
		if (err != 0) {
			snprintf(msg, cap, "cannot write the credentials file: %s",
				 objfs_strerror(err));
			goto out;
		}
	}
	if (objfs_csi_mount_opts(spec->options, -1, "", opts, sizeof(opts)) != 0) {
		err = E2BIG;
		snprintf(msg, cap, "mount options too long");
		goto out;
	}
	str[HSPEC_PROGRAM] = spec->program;
	str[HSPEC_OPTIONS] = opts;
	str[HSPEC_SOURCE] = spec->source;
	str[HSPEC_MOUNTPOINT] = spec->mountpoint;
	str[HSPEC_LOG] = spec->log_path != NULL ? spec->log_path : "";
again:
	objfs_hmsg_init(m, HOP_START, name);
	err = objfs_hmsg_set_spec(m, str);
	if (err == 0)
		err = ask(sock, m, creds_fd, &m[1], spec->timeout_ms);
	if (err == 0 && m[1].op == HOP_ERR && m[1].status == EEXIST && tries++ == 0) {
		struct objfs_csi_mount_info mi;

		if (m[1].arg == 1 &&
		    real_ops()->mount_info(NULL, spec->mountpoint, &mi) == 0 && mi.fuse) {
			/* ours from before a restart of the plugin: keep it */
			m[1].op = HOP_OK;
		} else {
			(void)stop_slot(sock, name, m[1].serial, SIGKILL);
			goto again;
		}
	}
	if (err == ENOENT || err == ECONNREFUSED) {
		snprintf(msg, cap, "no objfs-holder answers on %s (is the holder "
			 "DaemonSet running on this node?)", sock);
		err = ECONNREFUSED;
		goto out;
	}
	if (err == ETIMEDOUT || err == EAGAIN) {
		struct objfs_csi_mount_info mi;

		snprintf(msg, cap, "the mount did not come up within %u ms",
			 spec->timeout_ms);
		(void)stop_slot(sock, name, 0, SIGKILL);
		if (real_ops()->mount_info(NULL, spec->mountpoint, &mi) == 0 && mi.fuse) {
			real_ops()->abort_conn(NULL, spec->mountpoint, mi.dev);
			real_ops()->unmount(NULL, spec->mountpoint, true);
		}
		err = ETIMEDOUT;
		goto out;
	}
	if (err != 0) {
		snprintf(msg, cap, "asking objfs-holder on %s: %s", sock, objfs_strerror(err));
		goto out;
	}
	if (m[1].op != HOP_OK) {
		err = m[1].status ? m[1].status : EIO;
		if (err == EIO) {
			snprintf(msg, cap, "%s exited before the mount was ready",
				 spec->program);
			err = objfs_csi_log_cause(spec->log_path, msg + strlen(msg),
						  cap - strlen(msg));
		} else {
			snprintf(msg, cap, "objfs-holder refused the mount: %s",
				 objfs_strerror(err));
		}
		goto out;
	}
	out->pid = (pid_t)m[1].pid;
	out->start = m[1].serial;
	snprintf(out->unit, sizeof(out->unit), UNIT_PREFIX "%s", name);
out:
	if (creds_fd >= 0)
		close(creds_fd);
	free(m);
	return err;
}

/* The holder's view of p: 0 (rep filled), ENOENT (no such mount) or
 * another errno (no answer). */
static int status_of(const char *sock, const struct objfs_csi_proc *p,
		     struct objfs_hmsg *m)
{
	int err;

	objfs_hmsg_init(m, HOP_STATUS, p->unit + strlen(UNIT_PREFIX));
	m->serial = p->start;
	err = ask(sock, m, -1, &m[1], CALL_MS);
	if (err == 0 && m[1].op == HOP_ERR)
		err = m[1].status == ENOENT ? ENOENT : EAGAIN;
	return err;
}

static bool holder_alive(void *ctx, const struct objfs_csi_proc *p)
{
	struct objfs_hmsg *m;
	int err;

	if (!is_slot(p))
		return real_ops()->alive(NULL, p);
	m = msg_pair();
	if (m == NULL)
		return true;
	err = status_of(ctx, p, m);
	free(m);
	/* no answer is not "dead": the watchdog would remount a live mount */
	return err != ENOENT;
}

static int holder_stop(void *ctx, const struct objfs_csi_proc *p, unsigned grace_ms)
{
	const char *name = p->unit + strlen(UNIT_PREFIX);
	long long start = objfs_now_ms(), progress = start;
	unsigned long long io = 0;
	struct objfs_hmsg *m;
	int err;

	if (!is_slot(p))
		return real_ops()->stop(NULL, p, grace_ms);
	if (grace_ms == 0) {
		err = stop_slot(ctx, name, p->start, SIGKILL);
		return err == 0 || err == ENOENT || err == ECONNREFUSED ? 0 : EBUSY;
	}
	m = msg_pair();
	if (m == NULL)
		return ENOMEM;
	/* SIGTERM: the server uploads what is unsaved, unmounts, ends */
	err = stop_slot(ctx, name, p->start, SIGTERM);
	while (err == 0 || err == EAGAIN) {
		err = status_of(ctx, p, m);
		if (err == ENOENT)
			break;
		if (err == 0 && m[1].io != io) {
			io = m[1].io;
			progress = objfs_now_ms();
		}
		if (objfs_now_ms() - progress > grace_ms ||
		    objfs_now_ms() - start > STOP_MAX_MS) {
			err = stop_slot(ctx, name, p->start, SIGKILL);
			break;
		}
		objfs_sleep_ms(100);
	}
	free(m);
	/* gone, or no holder left to hold it */
	return err == 0 || err == ENOENT || err == ECONNREFUSED ? 0 : EBUSY;
}

static int holder_bind(void *ctx, const char *src, const char *dst, bool readonly)
{
	(void)ctx;
	return real_ops()->bind(NULL, src, dst, readonly);
}

static int holder_unmount(void *ctx, const char *path, bool lazy)
{
	(void)ctx;
	return real_ops()->unmount(NULL, path, lazy);
}

static void holder_abort_conn(void *ctx, const char *path, unsigned long dev)
{
	(void)ctx;
	real_ops()->abort_conn(NULL, path, dev);
}

static int holder_mount_info(void *ctx, const char *path,
			     struct objfs_csi_mount_info *out)
{
	(void)ctx;
	return real_ops()->mount_info(NULL, path, out);
}

static int holder_statfs(void *ctx, const char *path, unsigned timeout_ms,
			 struct statvfs *out)
{
	(void)ctx;
	return real_ops()->statfs(NULL, path, timeout_ms, out);
}

/* The holder's own samples for the node plugin's /metrics: whether it
 * answers, and the OOM score it runs with (absent when it does not say:
 * a holder before the score was reported). */
static void holder_metrics(void *ctx, struct objfs_buf *out)
{
	int score, err = objfs_holder_ping(ctx, PING_MS, &score);

	objfs_buf_adds(out,
		"# HELP objfs_holder_up Whether the node's objfs-holder answered the node plugin's scrape (1) or not (0).\n"
		"# TYPE objfs_holder_up gauge\n");
	objfs_buf_addf(out, "objfs_holder_up %d\n", err == 0 ? 1 : 0);
	if (score == OBJFS_HOLDER_OOM_UNKNOWN)
		return;
	objfs_buf_adds(out,
		"# HELP objfs_holder_oom_score_adj The oom_score_adj the node's objfs-holder runs with: -1000 shields it, and with it every mount of the node, from the OOM killer.\n"
		"# TYPE objfs_holder_oom_score_adj gauge\n");
	objfs_buf_addf(out, "objfs_holder_oom_score_adj %d\n", score);
}

static const struct objfs_csi_mounter_ops holder_ops = {
	.start = holder_start,
	.alive = holder_alive,
	.stop = holder_stop,
	.bind = holder_bind,
	.unmount = holder_unmount,
	.abort_conn = holder_abort_conn,
	.mount_info = holder_mount_info,
	.statfs = holder_statfs,
	.metrics = holder_metrics,
};

void objfs_csi_mounter_holder(struct objfs_csi_mounter *out, const char *socket_path)
{
	*out = *objfs_csi_mounter_real();
	out->ops = &holder_ops;
	out->ctx = (void *)socket_path;
	/* the holder waits for the upload; the plugin asks while it makes
	 * progress */
	out->stop_grace_ms = 30000;
}
