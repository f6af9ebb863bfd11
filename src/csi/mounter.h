/*
 * mounter.h - what the node service asks of the operating system: starting
 * and watching objfs-mount processes, bind mounts, unmounts and statvfs.
 * (The node probes a volume's store through the driver's store factory,
 * objfs_csi_config.store_open, not through the mounter.)
 *
 * node.c reaches all of it through `struct objfs_csi_mounter` (an ops table
 * and a context), so cmocka tests inject a fake and call the handlers with
 * no real mount.  objfs_csi_mounter_real() (mounter.c) is the real one.
 *
 * Every op returns 0 or a positive errno and must be thread-safe.
 */
#ifndef OBJFS_CSI_MOUNTER_H
#define OBJFS_CSI_MOUNTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/statvfs.h>
#include <sys/types.h>

struct objfs_buf;
struct objfs_creds;

/* One objfs-mount to start: `PROGRAM -f -o OPTIONS[,ready_fd=3]
 * [,credentials_file=F] SOURCE MOUNTPOINT`.  All borrowed. */
struct objfs_csi_mount_spec {
	const char *program;
	const char *source;
	const char *mountpoint;
	const char *options;            /* the non-secret -o list; may be "" */
	const struct objfs_creds *creds;/* may be NULL: none passed */
	const char *work_dir;           /* 0700 dir for the transient
					   credentials file */
	const char *log_path;           /* the process's stdout/stderr
					   (appended); NULL: /dev/null */
	unsigned timeout_ms;            /* until the mount answers */
	unsigned memory_mib;            /* host-systemd runner: MemoryMax of
					   the unit; 0: none */
};

/* A process, identified beyond its pid by its start time (clock ticks
 * after boot, /proc/PID/stat field 22) so a reused pid is not mistaken. */
#define OBJFS_CSI_UNIT_MAX 64
struct objfs_csi_proc {
	pid_t pid;
	unsigned long long start;
	char unit[OBJFS_CSI_UNIT_MAX];  /* host-systemd runner: the transient
					   unit; holder runner: "holder:" and
					   the slot; "" otherwise */
};

/* The top mount at a path (from /proc/self/mountinfo). */
struct objfs_csi_mount_info {
	bool fuse;                /* fstype fuse or fuse.* */
	unsigned long dev;        /* the mount's device, major << 20 | minor
				     (the FUSE connection number) */
};

struct objfs_csi_mounter_ops {
	/* Starts the mount process in its own session, not a child of the
	 * caller (double fork: it outlives objfs-csi), and returns once the
	 * mount answers.  Credentials reach it through a 0600 file in
	 * work_dir, removed once the mount is up (never argv or environ).
	 * On failure nothing is left running or mounted and msg (cap bytes)
	 * says why (the tail of the process's log).  ETIMEDOUT, or the
	 * errno of the failure (EIO: the process exited). */
	int (*start)(void *ctx, const struct objfs_csi_mount_spec *spec,
		     struct objfs_csi_proc *out, char *msg, size_t cap);
	/* True while p runs (not a zombie, same start time). */
	bool (*alive)(void *ctx, const struct objfs_csi_proc *p);
	/* Waits for p to exit on its own (it flushes and exits once
	 * unmounted) as long as it makes progress (no progress for grace_ms:
	 * it is hung), then SIGTERM, then SIGKILL.  0 once gone. */
	int (*stop)(void *ctx, const struct objfs_csi_proc *p, unsigned grace_ms);
	/* Bind-mounts src at dst (an existing directory), then remounts it
	 * read-only when asked. */
	int (*bind)(void *ctx, const char *src, const char *dst, bool readonly);
	/* Unmounts the top mount at path.  lazy false: a plain unmount,
	 * falling back to a lazy one (MNT_DETACH) when busy or not
	 * connected.  lazy true: detach at once.  EINVAL when path is not a
	 * mount point. */
	int (*unmount)(void *ctx, const char *path, bool lazy);
	/* Aborts the FUSE connection of the mount at path, dev as
	 * mount_info gave it (/sys/fs/fuse/connections/DEV/abort): every
	 * waiter on a hung daemon gets ENOTCONN.  The abort file is opened
	 * first and written only while path's top mount still has dev: an
	 * unmount frees its number and the next FUSE mount anywhere takes
	 * it, so a number read a moment ago may name another mount's
	 * connection (an open file stays with the connection it named).
	 * Aborting a gone connection is fine. */
	void (*abort_conn)(void *ctx, const char *path, unsigned long dev);
	/* What is mounted at path: 0, or ENOENT when path is no mount point. */
	int (*mount_info)(void *ctx, const char *path, struct objfs_csi_mount_info *out);
	/* statvfs(path) bounded by timeout_ms (ETIMEDOUT: a hung mount). */
	int (*statfs)(void *ctx, const char *path, unsigned timeout_ms,
		      struct statvfs *out);
	/* Optional (NULL: nothing): appends the runner's own samples, in
	 * the Prometheus text format, to out for the node plugin's /metrics
	 * (the holder runner: objfs_holder_up, objfs_holder_oom_score_adj).
	 * Called at each scrape with no lock held; bounded in time. */
	void (*metrics)(void *ctx, struct objfs_buf *out);
};

/* The injected mounter and the timings of the node service. */
struct objfs_csi_mounter {
	const struct objfs_csi_mounter_ops *ops;
	void *ctx;
	unsigned watchdog_ms;       /* period of the repair thread; 0: none
				       (tests call objfs_csi_node_check) */
	unsigned ready_timeout_ms;  /* NodeStageVolume waits this long */
	unsigned stop_grace_ms;     /* NodeUnstageVolume waits for the flush
				       while the process makes progress;
				       this long without any: hung */
	unsigned stats_timeout_ms;  /* statvfs and the store probe */
};

/* The real mounter: real mounts, watchdog every 2 s, 30 s to mount, 10 s
 * without progress while flushing, 5 s for stats.  A static constant;
 * never freed. */
const struct objfs_csi_mounter *objfs_csi_mounter_real(void);

/* The host-systemd runner: like the real mounter, but every objfs-mount
 * runs as a transient unit of the host's systemd (`systemd-run --unit
 * objfs-mount-HASH --collect -p MemoryMax=...`), reached through
 * /run/systemd (systemctl/systemd-run in PATH).  The process then lives in
 * its own cgroup, outside the plugin's container: it survives restarts and
 * upgrades of the node pod, and its memory bound is enforced by the kernel.
 * Readiness comes from mountinfo (the mount propagates back through the
 * kubelet directory); liveness from `systemctl is-active`.  The program
 * and every path handed to it (mount point, credentials file) must be the
 * same on the host.  A static constant; never freed. */
const struct objfs_csi_mounter *objfs_csi_mounter_host_systemd(void);

/* The holder runner (mounter_holder.c): every objfs-mount is started,
 * kept and stopped by the node's objfs-holder (mount/holder.h) listening
 * on socket_path (borrowed: it must outlive the mounter), a pod of its
 * own, so mounts survive restarts, deletions and upgrades of the node
 * plugin's pod.  A mount is named by the holder's slot and serial
 * (objfs_csi_proc.unit "holder:NAME", .start the serial), not a pid: the
 * holder runs in another pid namespace.  The program and every path
 * handed to it (mount point, log, state and spool directories) must be
 * the same in the holder's container. */
void objfs_csi_mounter_holder(struct objfs_csi_mounter *out, const char *socket_path);

/* Parses one /proc/self/mountinfo text for path's top mount (exposed for
 * tests).  0 or ENOENT. */
int objfs_csi_mountinfo_find(const char *text, const char *path,
			     struct objfs_csi_mount_info *out);

#endif
