/*
 * node_mount.c - the mount of a staged volume (see node_int.h): its
 * objfs-mount process, started, watched and stopped through the injected
 * mounter, and the bind mounts of its targets.  Never waits on a hung FUSE
 * daemon: connections are aborted and mounts detached.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "csi/node_int.h"
#include "csi/pb.h"

/* The credentials a volume's mount gets: its stage secrets, else the
 * plugin's own.  A view: nothing to free. */
struct objfs_creds node_creds_for(struct objfs_csi_node *n, const struct objfs_creds *vc)
{
	struct objfs_creds c = OBJFS_CREDS_INIT;

	const struct objfs_creds *own = n->csi->cfg.store.s3.keyless;

	if (objfs_creds_any(vc))
		return *vc;
	if (n->csi->cfg.store.s3.access_key == NULL && own != NULL)
		return *own;    /* the plugin's role or container endpoint */
	c.access_key = (char *)n->csi->cfg.store.s3.access_key;
	c.secret_key = (char *)n->csi->cfg.store.s3.secret_key;
	c.session_token = (char *)n->csi->cfg.store.s3.session_token;
	return c;
}

static void proc_of(const struct objfs_node_rec *rec, struct objfs_csi_proc *p)
{
	memset(p, 0, sizeof(*p));
	p->pid = rec->pid;
	p->start = rec->start;
	if (rec->unit != NULL)
		snprintf(p->unit, sizeof(p->unit), "%s", rec->unit);
}

/* The log file of volume_id's mount process into path: 0, or ENOENT
 * when the plugin keeps no logs (no state dir). */
int node_log_path(struct objfs_csi_node *n, const char *volume_id, char *path,
		  size_t cap)
{
	char name[OBJFS_NODE_REC_NAME_MAX];

	if (n->log_dir[0] == '\0' || objfs_node_rec_name(volume_id, name) != 0 ||
	    (size_t)snprintf(path, cap, "%s/%s.log", n->log_dir, name) >= cap)
		return ENOENT;
	return 0;
}

/* Starts the mount process of rec at rec->staging; sets rec->pid/start. */
int node_start_mount(struct objfs_csi_node *n, struct objfs_node_rec *rec,
		     const struct objfs_creds *vc, char *msg, size_t cap)
{
	struct objfs_creds c = node_creds_for(n, vc);
	struct objfs_csi_mount_spec spec;
	struct objfs_csi_proc proc;
	char log_path[PATH_MAX];
	int err;

	memset(&spec, 0, sizeof(spec));
	spec.program = n->csi->cfg.mount_program != NULL ? n->csi->cfg.mount_program
							  : "objfs-mount";
	spec.source = rec->source;
	spec.mountpoint = rec->staging;
	spec.options = rec->options != NULL ? rec->options : "";
	spec.creds = objfs_creds_any(&c) ? &c : NULL;
	spec.work_dir = n->tmp_dir;
	spec.timeout_ms = n->m.ready_timeout_ms;
	spec.memory_mib = n->csi->cfg.mount_memory_mib;
	if (node_log_path(n, rec->volume_id, log_path, sizeof(log_path)) == 0 &&
	    objfs_node_rec_mkdir(n->log_dir) == 0)
		spec.log_path = log_path;
	objfs_debug(n->log, "node", "starting %s -f -o %s %s %s", spec.program,
		    spec.options, spec.source, spec.mountpoint);
	err = n->m.ops->start(n->m.ctx, &spec, &proc, msg, cap);
	if (err != 0)
		return err;
	rec->pid = proc.pid;
	rec->start = proc.start;
	err = objfs_pb_set_str(&rec->unit, proc.unit);
	if (err != 0) {
		(void)n->m.ops->stop(n->m.ctx, &proc, 0);
		return err;
	}
	objfs_info(n->log, "node", "volume %s mounted at %s by process %ld",
		   rec->volume_id, rec->staging, (long)proc.pid);
	return 0;
}

bool node_proc_alive(struct objfs_csi_node *n, const struct objfs_node_rec *rec)
{
	struct objfs_csi_proc p;

	proc_of(rec, &p);
	return (p.pid > 0 || p.unit[0] != '\0') && n->m.ops->alive(n->m.ctx, &p);
}

/* Detaches every mount stacked at path (no waiting on the filesystem). */
void node_detach_all(struct objfs_csi_node *n, const char *path)
{
	struct objfs_csi_mount_info mi;
	int i;

	for (i = 0; i < DETACH_TRIES; i++) {
		if (n->m.ops->mount_info(n->m.ctx, path, &mi) != 0)
			break;
		if (n->m.ops->unmount(n->m.ctx, path, true) != 0)
			break;
	}
}

/* Stops rec's process and removes its staging mount, never waiting on a
 * hung daemon. */
void node_kill_mount(struct objfs_csi_node *n, const struct objfs_node_rec *rec)
{
	struct objfs_csi_mount_info mi;
	struct objfs_csi_proc p;

	proc_of(rec, &p);
	if (n->m.ops->mount_info(n->m.ctx, rec->staging, &mi) == 0 && mi.fuse)
		n->m.ops->abort_conn(n->m.ctx, rec->staging, mi.dev);
	if (p.pid > 0 || p.unit[0] != '\0')
		(void)n->m.ops->stop(n->m.ctx, &p, 0);
	node_detach_all(n, rec->staging);
}

/* Creates the directory path when missing.  Never stat()s a mount point
 * (a hung FUSE daemon would hold the call). */
int node_ensure_dir(struct objfs_csi_node *n, const char *path, bool *created)
{
	struct objfs_csi_mount_info mi;
	struct stat sb;

	*created = false;
	if (mkdir(path, 0750) == 0) {
		*created = true;
		return 0;
	}
	if (errno != EEXIST)
		return errno;
	if (n->m.ops->mount_info(n->m.ctx, path, &mi) == 0)
		return 0;
	if (lstat(path, &sb) == 0 && !S_ISDIR(sb.st_mode))
		return ENOTDIR;
	return 0;
}

/* Binds the staging path at target (creating it).  0 or an errno. */
int node_bind_target(struct objfs_csi_node *n, const char *staging,
		     const char *target, bool readonly)
{
	bool created = false;
	int err;

	err = node_ensure_dir(n, target, &created);
	if (err != 0)
		return err;
	err = n->m.ops->bind(n->m.ctx, staging, target, readonly);
	if (err != 0 && created)
		rmdir(target);
	return err;
}

/* Unmounts the staging mount, lets the process flush and exit, and makes
 * sure nothing is left (SIGTERM, SIGKILL, abort, detach). */
int node_unmount_staging(struct objfs_csi_node *n, const struct objfs_node_rec *rec)
{
	struct objfs_csi_proc p;
	struct objfs_csi_mount_info mi;
	bool alive = node_proc_alive(n, rec);
	int err;

	proc_of(rec, &p);
	if (!alive) {
		node_detach_all(n, rec->staging);
		return 0;
	}
	if (n->m.ops->mount_info(n->m.ctx, rec->staging, &mi) == 0) {
		err = n->m.ops->unmount(n->m.ctx, rec->staging, false);
		if (err != 0 && err != EINVAL)
			objfs_warn(n->log, "node", "volume %s: unmount %s: %s", rec->volume_id,
				   rec->staging, objfs_strerror(err));
	}
	err = n->m.ops->stop(n->m.ctx, &p, n->m.stop_grace_ms);
	if (err != 0)
		objfs_error(n->log, "node", "volume %s: process %ld does not stop",
			    rec->volume_id, (long)rec->pid);
	if (n->m.ops->mount_info(n->m.ctx, rec->staging, &mi) == 0) {
		if (mi.fuse)
			n->m.ops->abort_conn(n->m.ctx, rec->staging, mi.dev);
		node_detach_all(n, rec->staging);
	}
	return err;
}
