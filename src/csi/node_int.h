/*
 * node_int.h - inside the CSI Node service: its state and the functions its
 * files share.  Not for other modules (node.h is the interface).
 *
 *   node.c        the handlers of staging and publishing, the volume list,
 *                 records, the watchdog pass and thread, lifetime
 *   node_mount.c  a volume's objfs-mount process and bind mounts
 *   node_paths.c  staging and target path checks (confinement under the
 *                 kubelet directory)
 *   node_stats.c  NodeGetVolumeStats and its store probe
 *   watchdog.c    repair of broken mounts, the repair back-off
 *
 * The files call down only: node.c calls the others, none calls node.c
 * (node_find_vol, which they all use, is inline here).
 *
 * Lock: `lock` protects the volume list, each volume's fields and the busy
 * marks; functions say when they expect it held.  Nothing holds it across a
 * call into the mounter.  The state and invariants are described in node.c.
 */
#ifndef OBJFS_CSI_NODE_INT_H
#define OBJFS_CSI_NODE_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "common/creds.h"
#include "csi/claims.h"
#include "csi/driver.h"
#include "csi/mounter.h"
#include "csi/noderec.h"
#include "csi/rpc.h"

#define OPTS_MAX 4096
#define FP_MAX (OPTS_MAX + PATH_MAX + 512)
#define COND_MAX 512
#define DETACH_TRIES 8

struct objfs_metric;
struct objfs_metrics;

struct vol {
	struct vol *next;
	struct objfs_node_rec rec;      /* mirrors the record on disk */
	struct objfs_creds creds;       /* stage secrets; empty: the plugin's */
	bool abnormal;                  /* set by a failed repair */
	bool repairing;                 /* the watchdog is repairing it */
	char cond[COND_MAX];
	unsigned failed_repairs;        /* in a row; the watchdog backs off */
	long long next_repair_ms;       /* CLOCK_MONOTONIC; 0: at once */
};

struct objfs_csi_node {
	struct objfs_csi *csi;                  /* borrowed */
	struct objfs_log *log;                  /* borrowed */
	struct objfs_csi_mounter m;
	char kubelet[PATH_MAX];                 /* canonical kubelet dir */
	char rec_dir[PATH_MAX];                 /* "" when no state dir */
	char tmp_dir[PATH_MAX];
	char log_dir[PATH_MAX];                 /* "" when no state dir */
	char spool_dir[PATH_MAX];               /* mounts' spools: "" when no
						   state dir (objfs-mount's
						   default) */
	char resume_dir[PATH_MAX];              /* state dirs of resumable
						   mounts: "" when no state dir
						   (then no -o resume) */
	pthread_mutex_t lock;                   /* protects everything below */
	pthread_cond_t wake;
	struct vol *vols;
	struct objfs_claims busy;               /* volume ids; own mutex */
	bool stopping;
	bool watchdog_running;
	pthread_t watchdog;
	struct objfs_metric *m_mounts;          /* node_metrics.c; NULL: */
	struct objfs_metric *m_repairs;         /* nothing counted */
};

static inline struct objfs_csi_node *node_of(void *ctx)
{
	return ((struct objfs_csi *)ctx)->node;
}

static inline bool empty(const char *s)
{
	return s == NULL || s[0] == '\0';
}

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

/* ---- node.c: volumes ---------------------------------------------------- */

/* The volume of id, or NULL.  Under lock.  Here, below node.c,
 * node_stats.c and watchdog.c, which all look volumes up. */
static inline struct vol *node_find_vol(struct objfs_csi_node *n,
					const char *id)
{
	struct vol *v;

	for (v = n->vols; v != NULL; v = v->next) {
		if (strcmp(v->rec.volume_id, id) == 0)
			return v;
	}
	return NULL;
}
/* Deep copy of src into dst (overwritten).  0 or ENOMEM. */
int node_creds_copy(struct objfs_creds *dst, const struct objfs_creds *src);
/* ---- node_mount.c: mount processes and mounts -------------------------- */

/* The credentials a volume's mount gets: its stage secrets (vc), else the
 * plugin's own.  A view: nothing to free. */
struct objfs_creds node_creds_for(struct objfs_csi_node *n,
				  const struct objfs_creds *vc);
/* Starts the mount process of rec at rec->staging; sets rec->pid/start/
 * unit.  0 or an errno (msg, cap bytes, says why). */
/* The log file of volume_id's mount process: 0 or ENOENT (no logs kept). */
int node_log_path(struct objfs_csi_node *n, const char *volume_id, char *path,
		  size_t cap);
int node_start_mount(struct objfs_csi_node *n, struct objfs_node_rec *rec,
		     const struct objfs_creds *vc, char *msg, size_t cap);
/* True while rec's mount process runs. */
bool node_proc_alive(struct objfs_csi_node *n, const struct objfs_node_rec *rec);
/* Detaches every mount stacked at path (no waiting on the filesystem). */
void node_detach_all(struct objfs_csi_node *n, const char *path);
/* Stops rec's process and removes its staging mount, never waiting on a
 * hung daemon. */
void node_kill_mount(struct objfs_csi_node *n, const struct objfs_node_rec *rec);
/* Binds the staging path at target (creating it).  0 or an errno. */
int node_bind_target(struct objfs_csi_node *n, const char *staging,
		     const char *target, bool readonly);
/* Creates the directory path when missing (*created says so).  Never
 * stat()s a mount point.  0, ENOTDIR or an errno. */
int node_ensure_dir(struct objfs_csi_node *n, const char *path, bool *created);
/* Unmounts rec's staging mount, lets the process flush and exit, and makes
 * sure nothing is left (SIGTERM, SIGKILL, abort, detach).  0, or an errno
 * when the process does not stop. */
int node_unmount_staging(struct objfs_csi_node *n, const struct objfs_node_rec *rec);

/* ---- node_paths.c ------------------------------------------------------- */

/* Lexically normalises path (absolute, no ".."), into out.  0, EINVAL (not
 * absolute), EXDEV (a ".." component) or ENAMETOOLONG. */
int node_normalise(const char *path, char *out, size_t cap);
/* Checks the request's path field (named field in messages) and puts its
 * canonical form into out: absolute, no "..", under the kubelet directory
 * once symbolic links in its parents are resolved, and not itself a
 * symbolic link.  OBJFS_RPC_OK or code (st says why). */
enum objfs_rpc_code node_confine(struct objfs_csi_node *n, const char *field,
				 const char *path, char *out, size_t cap,
				 enum objfs_rpc_code code, struct objfs_rpc_status *st);

/* ---- node_metrics.c ---------------------------------------------------- */

/* Registers the node's families and its collector into reg (NULL: none).
 * 0 or an errno. */
int node_metrics_attach(struct objfs_csi_node *n, struct objfs_metrics *reg);
/* Counts a repair by the watchdog.  No lock needed. */
void node_metrics_repaired(struct objfs_csi_node *n, bool ok);

/* ---- watchdog.c --------------------------------------------------------- */

/* Marks id as being repaired (or not). */
void node_vol_set_repairing(struct objfs_csi_node *n, const char *id, bool on);

/* Sets the condition a volume reports besides its live checks; a normal
 * one also resets the repair back-off. */
void node_vol_set_condition(struct objfs_csi_node *n, const char *id,
			    bool abnormal, const char *msg);
/* Counts a failed repair of id and delays its next one (1 s, 2 s, 4 s ...
 * 60 s), so a store that is down is not hammered. */
void node_vol_repair_failed(struct objfs_csi_node *n, const char *id);
/* Whether id's back-off allows a repair now. */
bool node_vol_repair_due(struct objfs_csi_node *n, const char *id);
/* True when target holds a bind mount of the staging mount. */
bool node_target_ok(struct objfs_csi_node *n, const char *staging, const char *target);
/* True when rec's process is gone or one of its mounts is missing. */
bool node_needs_repair(struct objfs_csi_node *n, const struct objfs_node_rec *rec);
/* Brings rec's mounts back: a new process when the staging mount is
 * broken, and every missing or stale bind mount again.  Updates rec (new
 * pid, publications whose directory is gone dropped).  0 or an errno (msg
 * says why).  The caller holds id's busy mark and commits rec. */
int node_repair(struct objfs_csi_node *n, struct objfs_node_rec *rec,
		const struct objfs_creds *vc, char *msg, size_t cap);

#endif
