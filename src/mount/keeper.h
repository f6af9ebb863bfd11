/*
 * keeper.h - the keeper of a resumable mount (-o resume, issue 12) and the
 * messages it exchanges with the servers it starts.
 *
 * The keeper is objfs-mount's first process (the pid the node plugin
 * starts and watches).  It never serves FUSE: it starts the server
 * (objfs-mount again, exec'd from the same binary path with the same
 * arguments), keeps a reference to the mount's /dev/fuse fd and the INIT
 * exchange the kernel negotiated, and when the server dies without saying
 * goodbye it starts a successor and hands both over.  While the keeper
 * holds the fd the kernel keeps the connection: applications block, they
 * do not fail.
 *
 * One SOCK_SEQPACKET socket pair per server; every message is one struct
 * objfs_kmsg (fixed size: neither side allocates), with at most one fd
 * attached (SCM_RIGHTS).  The server finds its end in $OBJFS_KEEPER_FD; a
 * successor also sees $OBJFS_RESUME=1.
 *
 *   server -> keeper                       keeper -> server
 *   KOP_PUT   + the /dev/fuse fd (mounted)
 *   KOP_INIT  blob: INIT request + reply   (sent before the reply reaches
 *                                           the kernel)
 *   KOP_READY serving (the mount is live)
 *   KOP_BYE   status: the mount ended cleanly, do not resume
 *   KOP_PEEK  (successor) the INIT first   KOP_INIT blob (at once: a binary
 *                                          that would negotiate otherwise
 *                                          gives up before anything stops)
 *   KOP_GET   (successor) give me the fd   KOP_FD + fd, blob: the INIT
 *                                          (only once the previous server
 *                                          is dead: sending RESEND is then
 *                                          safe)
 *                                          KOP_STOP: leave the mount to a
 *                                          successor (planned handover)
 *
 * Anything that can hold an fd and speak these messages can replace the
 * keeper (a node-wide holder, issue 12 item 4): the server side only
 * needs a connected socket.
 */
#ifndef OBJFS_MOUNT_KEEPER_H
#define OBJFS_MOUNT_KEEPER_H

#include <stdbool.h>
#include <stdint.h>

struct objfs_log;

#define OBJFS_KEEPER_ENV "OBJFS_KEEPER_FD"
#define OBJFS_RESUME_ENV "OBJFS_RESUME"

enum objfs_kop {
	KOP_PUT = 1, KOP_INIT, KOP_READY, KOP_BYE, KOP_GET, KOP_FD, KOP_STOP,
	KOP_PEEK,
};

#define OBJFS_KBLOB_MAX 1024

struct objfs_kmsg {
	uint32_t op;                    /* enum objfs_kop */
	int32_t status;                 /* 0 or a positive errno / exit code */
	uint32_t len;                   /* bytes of blob used */
	uint32_t pad;
	uint8_t blob[OBJFS_KBLOB_MAX];
};

/* Sends m with fd attached when fd >= 0.  0 or an errno. */
int objfs_kmsg_send(int sock, const struct objfs_kmsg *m, int fd);
/* Receives one message; *fd gets an attached fd (close-on-exec) or -1.
 * 0, an errno, ECONNRESET at end of file, EPROTO when malformed. */
int objfs_kmsg_recv(int sock, struct objfs_kmsg *m, int *fd);

struct objfs_keeper_conf {
	char *const *argv;              /* objfs-mount's own argv, reused as is
					   for every server */
	int ready_fd;                   /* the supervisor's, or -1: the first
					   server writes it; the keeper only
					   closes its copy */
	bool foreground;                /* else detach once the first server
					   is ready (exit 1 if it never is):
					   the caller's stderr is the first
					   server's until then, the keeper
					   logs to log_fd */
	int log_fd;                     /* log_file=, or -1: syslog */
	struct objfs_log *log;
};

/* Runs the keeper until the mount ends: forks and execs the first server
 * and its successors.  SIGTERM, SIGINT and SIGHUP go to the server (a
 * clean stop); SIGUSR2 starts a new binary from the same path and hands
 * the mount over to it.  Returns the exit status for main(). */
int objfs_keeper_run(const struct objfs_keeper_conf *conf);

#endif
