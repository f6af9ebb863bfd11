/*
 * watchdog.c - repairs of the node's mounts and the thread that looks for
 * broken ones (see node_int.h).
 *
 * A staged volume needs a repair when its mount process is gone, its
 * staging mount is not a FUSE mount, or a target lost its bind mount.  A
 * repair never waits on a dead or hung FUSE connection: it stops the
 * process, aborts the connection, detaches (MNT_DETACH) every bind mount
 * and the staging mount, starts a new process and binds every target again
 * (bind mounts of a dead connection keep pointing at it).  A failed repair
 * backs off (1 s, 2 s, 4 s ... 60 s); a successful one, or a stage that
 * finds the mount healthy, resets the back-off.
 *
 * Who owns a staging path: the mount process the record names, as its
 * runner judges it (n->m.ops->alive).  The watchdog replaces it only once
 * the runner says it is gone.  With the holder runner that is the holder's
 * word, which it gives only when no process of the mount can still serve
 * it (mount/holder.h, "Who owns a staging path": a server whose holder
 * died and that has not rejoined the next one yet counts as alive), so a
 * repair and a rejoining server never both mount one staging path.
 *
 * The watchdog thread (node.c) runs objfs_csi_node_check() (node.c, which
 * takes each volume's busy mark and calls the repairs here) every
 * m.watchdog_ms until the node stops; this file calls nothing of node.c.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/errors.h"
#include "common/io.h"
#include "common/log.h"
#include "csi/node.h"
#include "csi/node_int.h"

/* ---- repair back-off ----------------------------------------------------- */

void node_vol_set_condition(struct objfs_csi_node *n, const char *id,
			    bool abnormal, const char *msg)
{
	struct vol *v;

	pthread_mutex_lock(&n->lock);
	v = node_find_vol(n, id);
	if (v != NULL) {
		v->abnormal = abnormal;
		snprintf(v->cond, sizeof(v->cond), "%s", msg != NULL ? msg : "");
		if (!abnormal) {
			v->failed_repairs = 0;
			v->next_repair_ms = 0;
		}
	}
	pthread_mutex_unlock(&n->lock);
}

void node_vol_set_repairing(struct objfs_csi_node *n, const char *id, bool on)
{
	struct vol *v;

	pthread_mutex_lock(&n->lock);
	v = node_find_vol(n, id);
	if (v != NULL)
		v->repairing = on;
	pthread_mutex_unlock(&n->lock);
}

void node_vol_repair_failed(struct objfs_csi_node *n, const char *id)
{
	struct vol *v;
	long long delay;

	pthread_mutex_lock(&n->lock);
	v = node_find_vol(n, id);
	if (v != NULL) {
		if (v->failed_repairs < 16)
			v->failed_repairs++;
		delay = 1000LL << (v->failed_repairs - 1);
		v->next_repair_ms = objfs_now_ms() + (delay > 60000 ? 60000 : delay);
	}
	pthread_mutex_unlock(&n->lock);
}

bool node_vol_repair_due(struct objfs_csi_node *n, const char *id)
{
	struct vol *v;
	bool due = false;

	pthread_mutex_lock(&n->lock);
	v = node_find_vol(n, id);
	if (v != NULL)
		due = v->next_repair_ms == 0 || objfs_now_ms() >= v->next_repair_ms;
	pthread_mutex_unlock(&n->lock);
	return due;
}

/* ---- repairs -------------------------------------------------------------- */

bool node_target_ok(struct objfs_csi_node *n, const char *staging, const char *target)
{
	struct objfs_csi_mount_info a, b;

	return n->m.ops->mount_info(n->m.ctx, staging, &a) == 0 &&
	       n->m.ops->mount_info(n->m.ctx, target, &b) == 0 && a.dev == b.dev;
}

static bool staging_ok(struct objfs_csi_node *n, const struct objfs_node_rec *rec)
{
	struct objfs_csi_mount_info mi;

	return node_proc_alive(n, rec) &&
	       n->m.ops->mount_info(n->m.ctx, rec->staging, &mi) == 0 && mi.fuse;
}

int node_repair(struct objfs_csi_node *n, struct objfs_node_rec *rec,
		const struct objfs_creds *vc, char *msg, size_t cap)
{
	bool full = !staging_ok(n, rec);
	size_t i;
	int err = 0;

	msg[0] = '\0';
	if (full) {
		objfs_warn(n->log, "node", "volume %s: the mount at %s is broken (process %ld %s); restarting it",
			   rec->volume_id, rec->staging, (long)rec->pid,
			   node_proc_alive(n, rec) ? "runs" : "is gone");
		/* Bind mounts of a dead connection must go first. */
		for (i = 0; i < rec->n_pubs; i++)
			node_detach_all(n, rec->pubs[i].target);
		node_kill_mount(n, rec);
		err = node_start_mount(n, rec, vc, msg, cap);
		if (err != 0)
			return err;
	}
	for (i = 0; i < rec->n_pubs; i++) {
		const struct objfs_node_pub *p = &rec->pubs[i];
		int e;

		if (!full && node_target_ok(n, rec->staging, p->target))
			continue;
		node_detach_all(n, p->target);
		e = node_bind_target(n, rec->staging, p->target, p->readonly);
		if (e == ENOENT) {
			/* The pod's directory is gone: kubelet cleaned it up;
			 * nothing to bind any more. */
			objfs_warn(n->log, "node", "volume %s: %s no longer exists; dropping that publication",
				   rec->volume_id, p->target);
			objfs_node_rec_del_pub(rec, i);
			i--;
			continue;
		}
		if (e != 0) {
			objfs_error(n->log, "node", "volume %s: cannot bind %s again: %s",
				    rec->volume_id, p->target, objfs_strerror(e));
			if (err == 0) {
				err = e;
				snprintf(msg, cap, "cannot bind %s again: %s", p->target,
					 objfs_strerror(e));
			}
		} else {
			objfs_info(n->log, "node", "volume %s: %s bound again",
				   rec->volume_id, p->target);
		}
	}
	return err;
}

bool node_needs_repair(struct objfs_csi_node *n, const struct objfs_node_rec *rec)
{
	size_t i;

	if (!staging_ok(n, rec))
		return true;
	for (i = 0; i < rec->n_pubs; i++) {
		if (!node_target_ok(n, rec->staging, rec->pubs[i].target))
			return true;
	}
	return false;
}
