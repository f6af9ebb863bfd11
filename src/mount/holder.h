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
 * A holder that dies (kill -9, OOM kill, a crash) is not the end of its
 * mounts.  Its servers do not die with it (no PDEATHSIG): they serve on,
 * and each one reconnects to whichever holder serves the socket next and
 * hands its mount over (HOP_ADOPT: the fuse fd, a new slot socket and the
 * credentials fd attached, the INIT exchange in init), as a takeover
 * does; the new holder then keeps it as its own (a successor when it dies
 * later).  In a container the holder is PID 1's child (objfs-holder as
 * PID 1 runs itself twice: an init that reaps and forwards signals, and
 * the holder, started again when it dies), so its servers, reparented to
 * that init, outlive it.
 *
 * Who owns a staging path.  The holder's slot of that name, and only one
 * process at a time may serve it.  A holder records every mount it serves
 * in SOCKET.slots/NAME (serial, spec, the pids that may hold the mount's
 * fd: the server and a successor, with their start times, and its pid
 * namespace), rewritten whenever those pids change, removed when the
 * mount ends.  A holder starting fresh (no holder answers the socket)
 * reads them: a mount whose pids are still alive in its own pid namespace
 * is an orphan: HOP_STATUS answers it (not serving: arg 0), HOP_START of
 * its name gets EAGAIN, and only its recorded pids may adopt it.  It is
 * forgotten only once every recorded pid is gone (its pidfd ended; after
 * orphan_timeout_ms (60 s) without HOP_ADOPT the holder kills them
 * first).  So "no such
 * mount" (ENOENT), the one answer that makes objfs-csi's watchdog mount
 * again, is never given while a process of the old mount can still serve
 * it: no two servers of one staging path, by construction.  Records of
 * another pid namespace (a holder pod re-created: its processes were all
 * killed) are dropped; that mount's unsaved data is in its state
 * directory, recovered by the next mount of it (fs/recover.c).
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
 *   HOP_ADOPT  name, serial, init (a server  HOP_OK: the slot socket is
 *              whose holder died; + fuse fd,  ours; HOP_ERR EAGAIN (not
 *              slot socket, credentials fd    serving yet: try again),
 *              when arg & 1)                 ESTALE (not an orphan of
 *                                            ours: give up)
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
	HOP_HANDED, HOP_DONE, HOP_ADOPT,
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

/* A server whose holder died: hands its mount (name, serial) to the
 * holder at path (HOP_ADOPT): fuse_fd, slot_sock (its end of the new slot
 * socket: the holder's, once answered) and creds_fd (-1: none) attached,
 * init the INIT exchange (answered), within timeout_ms.  0 (the holder
 * keeps the mount), EAGAIN (no holder serves yet, or not yet: try again),
 * ESTALE (the holder has no orphan of that name and serial: it never
 * will) or another errno. */
int objfs_holder_adopt(const char *path, const char *name, uint64_t serial,
		       const struct objfs_kmsg *init, int fuse_fd,
		       int slot_sock, int creds_fd, unsigned timeout_ms);

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
	unsigned orphan_timeout_ms;     /* for an orphan's server to rejoin
					   before it is killed (0: 60 s) */
	int retire_fd;                  /* -1, or (taken) where "R" is written
					   once taken over (objfs-holder's
					   init: a retired holder is not
					   started again) */
	struct objfs_log *log;
};

/* Runs the holder until SIGTERM/SIGINT (every mount is then ended
 * cleanly) or, after being taken over, until killed.  Exit status. */
int objfs_holder_run(const struct objfs_holder_conf *conf);

#endif
