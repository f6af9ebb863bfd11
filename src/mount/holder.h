/*
 * holder.h - objfs-holder, the node's mount authority (issue 12 item 4),
 * and its protocol.
 *
 * In Kubernetes a container runtime kills every process of a container,
 * so the processes that keep a node's FUSE connections must not live in
 * the node plugin's container.  The holder runs in a pod of its own (a
 * small, rarely changing DaemonSet): it is the keeper (mount/kslot.h) of
 * every mount of the node.  It starts each objfs-mount server as its
 * child, keeps each /dev/fuse fd and INIT exchange, starts a successor
 * when a server dies (FUSE_NOTIFY_RESEND makes it invisible) and ends a
 * mount when asked.  objfs-csi asks it over a unix socket
 * (/var/lib/objfs/holder.sock by default: root-only, SO_PEERCRED uid 0).
 *
 * A holder is replaced without loss (DaemonSet RollingUpdate maxSurge 1):
 * the new one connects to the socket of the running one and asks for
 * every mount (HOP_TAKEOVER: name, serial, spec, INIT, and the fuse fd,
 * the credentials fd and a pidfd of the server attached); it starts a
 * successor per mount in its own process tree, which takes the mount in a
 * planned handover (HOP_HANDOVER: the old holder stops its server, reaps
 * it and answers HOP_HANDED; a pidfd that ends does as well, should the
 * old holder be gone); then it binds the socket path (a temporary name
 * renamed over it), tells the old one (HOP_DONE: it closes everything and
 * idles until killed) and writes its ready file, which `objfs-holder
 * --check` compares with the instance answering on the socket (the
 * readiness probe).  While it leaves, the old holder answers every other
 * request EAGAIN (retry); a new holder that fails to take any mount stops
 * its successors and exits, and the old one serves on.
 *
 * Every message is one struct objfs_hmsg (fixed size) with up to three
 * fds attached (objfs_kpkt_send).  Requests and their answers:
 *   HOP_START  name, spec (+ credentials fd)  HOP_OK serial, pid once the
 *              server is live; HOP_ERR EEXIST (name taken: serial, pid of
 *              the existing mount), EIO (the server exited: arg = status),
 *              ENOSPC (no free slot), EAGAIN (a takeover is under way)
 *   HOP_STATUS name, serial (0: any)         HOP_OK pid, io (bytes the
 *                                            server read and wrote), arg 1
 *                                            when serving; HOP_ERR ENOENT
 *   HOP_STOP   name, serial, arg = signal    HOP_OK: the mount is ending
 *              (SIGTERM: upload, unmount;    (SIGKILL: ended, slot freed)
 *              SIGKILL: kill, drop the fd)
 *   HOP_PING                                 HOP_OK name = instance id,
 *                                            arg 1 when serving, spec
 *                                            "oom_score_adj=N" (the score
 *                                            it runs with; absent when
 *                                            unknown, and from holders
 *                                            before it was added)
 *   HOP_LIST                                 HOP_INFO per mount, HOP_END
 *   HOP_TAKEOVER (a new holder)              HOP_SLOT per mount, HOP_END;
 *                                            HOP_ERR EAGAIN while a mount
 *                                            is starting or stopping
 *   HOP_HANDOVER name (new holder)           HOP_HANDED name
 *   HOP_DONE   (new holder)                  -
 * A peer that is not root gets HOP_ERR EACCES and is disconnected.
 */
#ifndef OBJFS_MOUNT_HOLDER_H
#define OBJFS_MOUNT_HOLDER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mount/kslot.h"

struct objfs_log;

#define OBJFS_HOLDER_SOCKET "/var/lib/objfs/holder.sock"
#define OBJFS_HOLDER_READY_FILE "/run/objfs-holder/ready"

enum objfs_hop {
	HOP_OK = 1, HOP_ERR, HOP_START, HOP_STATUS, HOP_STOP, HOP_PING,
	HOP_LIST, HOP_INFO, HOP_END, HOP_TAKEOVER, HOP_SLOT, HOP_HANDOVER,
	HOP_HANDED, HOP_DONE,
};

#define OBJFS_HNAME_MAX 80
#define OBJFS_HSPEC_MAX 12288

/* The spec of a mount: NUL-terminated strings one after the other. */
enum { HSPEC_PROGRAM, HSPEC_OPTIONS, HSPEC_SOURCE, HSPEC_MOUNTPOINT,
       HSPEC_LOG, HSPEC_N };

struct objfs_hmsg {
	uint32_t op;                    /* enum objfs_hop */
	int32_t status;                 /* 0 or a positive errno */
	uint64_t serial;                /* a mount's number (never reused by
					   a holder and its successors) */
	int64_t pid;                    /* the server, in the holder's pid
					   namespace (for logs) */
	uint64_t io;                    /* the server's rchar + wchar */
	uint64_t arg;
	char name[OBJFS_HNAME_MAX];     /* NUL-terminated */
	uint32_t spec_len;
	uint32_t pad;
	char spec[OBJFS_HSPEC_MAX];
	struct objfs_kmsg init;         /* HOP_SLOT: the INIT exchange */
};

/* Clears m and sets op and name (may be NULL). */
void objfs_hmsg_init(struct objfs_hmsg *m, uint32_t op, const char *name);
/* Fills m->spec from the HSPEC_N strings.  0 or ENAMETOOLONG. */
int objfs_hmsg_set_spec(struct objfs_hmsg *m, const char *const str[HSPEC_N]);
/* Points str at the HSPEC_N strings of m->spec.  0 or EPROTO. */
int objfs_hmsg_get_spec(const struct objfs_hmsg *m, const char *str[HSPEC_N]);
/* The mount a received HOP_START or HOP_SLOT message names, checked
 * before anything of it is used (its bytes come from a peer): the name
 * NUL-terminated and not empty, spec_len within spec, HSPEC_N strings in
 * it, the program and the mount point absolute, a source.  Points str
 * into m->spec.  0, EPROTO (malformed) or EINVAL (a field that cannot
 * be). */
int objfs_hmsg_mount(const struct objfs_hmsg *m, const char *str[HSPEC_N]);

/* One request to the holder at path: sends req (with fd attached when
 * fd >= 0) and waits up to timeout_ms for one answer into rep.  0 (rep is
 * HOP_OK or HOP_ERR with its status), ENOENT or ECONNREFUSED (no holder
 * there), ETIMEDOUT or another errno. */
int objfs_holder_call(const char *path, const struct objfs_hmsg *req, int fd,
		      struct objfs_hmsg *rep, unsigned timeout_ms);

/* Prints the mounts the holder at path keeps, one a line: name, serial,
 * server pid, serving (1/0), mount point.  0 or an errno. */
int objfs_holder_list(const char *path, FILE *out);

/* No oom_score_adj known (objfs_holder_ping). */
#define OBJFS_HOLDER_OOM_UNKNOWN (-1001)

/* Asks the holder at path how it runs (HOP_PING) within timeout_ms:
 * *oom_score_adj is the score it runs with (-1000: shielded from the OOM
 * killer), or OBJFS_HOLDER_OOM_UNKNOWN when it does not say.  0 or an
 * errno (ENOENT, ECONNREFUSED: no holder there). */
int objfs_holder_ping(const char *path, unsigned timeout_ms, int *oom_score_adj);

/* The readiness check: 0 when the holder answering at path is the one
 * that wrote ready_file and it serves; else an errno (ENOENT: not ready
 * yet, ESTALE: another holder answers). */
int objfs_holder_check(const char *path, const char *ready_file);

struct objfs_holder_conf {
	const char *socket_path;
	const char *ready_file;         /* NULL: none */
	unsigned max_slots;             /* mounts at most */
	unsigned takeover_timeout_ms;   /* to take every mount over */
	struct objfs_log *log;
};

/* Runs the holder until SIGTERM/SIGINT (every mount is then ended
 * cleanly) or, after being taken over, until killed.  Exit status. */
int objfs_holder_run(const struct objfs_holder_conf *conf);

#endif
