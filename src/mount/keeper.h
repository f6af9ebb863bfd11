/*
 * keeper.h - the keeper of a resumable mount (-o resume, issue 12): one
 * mount slot (mount/kslot.h, which also defines the messages) run by
 * objfs-mount's first process.
 *
 * The keeper is the pid the node plugin starts and watches, so the
 * mounter's contract (-f, ready_fd, SIGTERM at unstage) is unchanged.  It
 * never serves FUSE: it starts the server (objfs-mount again, exec'd from
 * the same binary path with the same arguments) and its successors.  The
 * node-wide holder (mount/holder.h) runs the same slot for N mounts.
 */
#ifndef OBJFS_MOUNT_KEEPER_H
#define OBJFS_MOUNT_KEEPER_H

#include <stdbool.h>

#include "mount/kslot.h"

struct objfs_log;

struct objfs_keeper_conf {
	char *const *argv;              /* objfs-mount's own argv, reused as is
					   for every server */
	int ready_fd;                   /* the supervisor's, or -1 (taken):
					   the keeper writes it once a server
					   serves, the first or a successor of
					   one that died before; servers do
					   not inherit it */
	int creds_fd;                   /* the credentials file, open (taken;
					   -1: none): every server reads it, so
					   a successor still can after the file
					   is removed */
	bool foreground;                /* else detach once the first server
					   is ready (exit 1 if it never is):
					   the caller's stderr is the first
					   server's until then, the keeper
					   logs to log_fd */
	int log_fd;                     /* log_file=, or -1: syslog */
	int adopt_sock;                 /* -1, or (taken) the socket of a server
					   whose keeper died: this keeper takes
					   its place (KOP_ADOPT; foreground
					   false means "log to log_fd", never
					   detach) */
	struct objfs_log *log;
};

/* Runs the keeper until the mount ends: forks and execs the first server
 * and its successors (or, adopting, keeps a running server's mount).
 * Servers outlive their keeper: one whose keeper dies starts a new keeper
 * (objfs_resume.h) and serves on.  SIGTERM, SIGINT and SIGHUP go to the server (a
 * clean stop); SIGUSR2 starts a new binary from the same path and hands
 * the mount over to it.  Returns the exit status for main(). */
int objfs_keeper_run(const struct objfs_keeper_conf *conf);

/* The longest takeover (a server's death to its successor serving)
 * measured, with margin, under load: docs/design/mount-resume.md,
 * "Any one process may die".  A kernel request timeout shorter than this
 * could abort the connection during a takeover. */
#define OBJFS_TAKEOVER_MAX_S 15

/* The request timeout the kernel gives a new FUSE connection of a server
 * that asks for none (libfuse 3.14 never does), in seconds, 0 for none:
 * default_request_timeout capped by max_request_timeout (Linux 6.14; files
 * missing: 0), read from dir (NULL: /proc/sys/fs/fuse). */
unsigned objfs_fuse_request_timeout(const char *dir);

/* The state directory of a resumable mount given no state_dir=: named by
 * a hash of the source and the absolute mount point, so a new mount of the
 * same source on the same mount point finds what a dead one left there
 * (fs/recover.c): SPOOL_DIR/objfs-state.HASH when spool_dir is given (NULL:
 * not), else /var/lib/objfs/state/HASH.  Its parents are made (0700).
 * 0 or an errno. */
int objfs_default_state_dir(const char *source, const char *mountpoint,
			    const char *spool_dir, char *buf, size_t cap);

/* Detaching without a thread made before the fork (a thread does not
 * survive fork(), and joining it in the child crashes): forks; the
 * calling process waits until the child writes "R" to *ready (and closes
 * it), then exits 0, or 1 when the child ends without it.  Returns in the
 * child only, in a new session, stdio and cwd untouched (the caller's
 * stderr gets the child's errors until it is ready).  0 or an errno (in
 * the calling process: nothing forked). */
int objfs_detach_begin(int *ready);

/* The binary this process runs, for servers exec'd later: a binary
 * replaced by an upgrade is the new one at the same path.  0 or an errno. */
int objfs_self_exe(char *buf, size_t cap);

#endif
