/*
 * resume.h - the server's side of a resumable mount (-o resume): the
 * first server gives the keeper (mount/kslot.h) its /dev/fuse fd, with
 * the kernel's INIT request unread in it; every server gets the INIT from
 * the keeper and puts it through libfuse, and a reply the kernel has not
 * had yet goes to the keeper, which writes it exactly once; a successor
 * takes the fd and asks the kernel to send again what the dead server had
 * read (FUSE_NOTIFY_RESEND, Linux 6.9 and later).
 *
 * libfuse 3.14 keeps the negotiated parameters (got_init, proto_minor,
 * want, bufsize) private and answers every request with EIO until it has
 * seen INIT; the kernel sends INIT once per connection.  So a server
 * calls fuse_session_custom_io() on the fd (a successor: on a stand-in
 * until it has the fd) and feeds it the INIT request: the custom writev
 * hook keeps libfuse's reply instead of writing it, and compares it byte
 * for byte with the reply the kernel got, if it got one; a difference
 * (another binary negotiating otherwise) refuses the takeover.
 * clone_fd must stay off: a cloned fd dies with its process and the
 * requests read on it end with ECONNABORTED.
 */
#ifndef OBJFS_MOUNT_RESUME_H
#define OBJFS_MOUNT_RESUME_H

#include <stdbool.h>

struct fuse_session;
struct objfs_fs;
struct objfs_log;
struct objfs_resume;

/* The keeper's connection from $OBJFS_KEEPER_FD: *out NULL when there is
 * none (not under a keeper).  0 or an errno.  Free with
 * objfs_resume_destroy(). */
int objfs_resume_create(struct objfs_log *log, struct objfs_fs *fs,
			struct objfs_resume **out);
void objfs_resume_destroy(struct objfs_resume *r);
/* For a server whose keeper may die (objfs-mount's own keeper, not the
 * holder: $OBJFS_KEEPER_REPLACE): the argv (borrowed: main's) and the
 * credentials fd (taken; -1: none) a new keeper is started with.  When the
 * keeper's socket ends while the mount serves, the server execs
 * objfs-mount again (the binary at the same path, double-forked: nobody's
 * child but init's or the nearest subreaper's, in this process group) with
 * $OBJFS_KEEPER_ADOPT_FD, sends it the fd, the credentials and the INIT
 * (KOP_ADOPT, mount/kslot.h) and serves on, the new keeper's socket in
 * place of the old one. */
void objfs_resume_set_relaunch(struct objfs_resume *r, char *const *argv,
			       int creds_fd);
/* A successor ($OBJFS_RESUME): it takes a live mount. */
bool objfs_resume_successor(const struct objfs_resume *r);
/* First server, after fuse_session_mount(): installs the hooks, gives
 * the keeper a reference to the fd (it reads INIT from it) and puts the
 * keeper's INIT through libfuse.  0 or an errno. */
int objfs_resume_attach(struct objfs_resume *r, struct fuse_session *se);
/* Successor: puts the keeper's INIT through libfuse, then waits for the
 * fd (the keeper answers once the previous server is dead).  0, or an
 * errno (EPROTO: the INIT reply would differ).  Load the state after
 * this, before serving. */
int objfs_resume_take(struct objfs_resume *r, struct fuse_session *se);
/* After the state directory is started (r NULL: nothing): where the
 * userspace RESEND keeps requests (STATE_DIR/resend), used when the
 * kernel does not re-send (before Linux 6.9) or force (test only); a
 * successor maps the dead server's.  0 or an errno. */
int objfs_resume_slots(struct objfs_resume *r, const char *state_dir,
		       bool force);
/* After objfs_resume_slots(), before serving (r NULL: nothing): an INIT
 * not answered yet is answered, through the keeper (its reply reaches the
 * kernel once, whoever sends it: kslot.h); either way the reply the
 * kernel got must be the one libfuse made.  Test only: crash_at=init
 * kills the process before it hands its reply over.  0 or an errno
 * (EPROTO: the kernel got another reply). */
int objfs_resume_answer_init(struct objfs_resume *r);
/* A clean end: the slot file goes (before the state directory). */
void objfs_resume_slots_drop(struct objfs_resume *r);
/* The state is loaded and the session is about to serve: a successor
 * sends FUSE_NOTIFY_RESEND, or processes the requests kept in the slots
 * (userspace RESEND); both tell the keeper, and watch it for a stop
 * (planned handover: the session loop exits, main_thread gets SIGUSR2
 * to leave libfuse's wait).  0 or an errno. */
int objfs_resume_serving(struct objfs_resume *r, struct fuse_session *se);
/* The session loop ended because a successor takes over. */
bool objfs_resume_handing_over(struct objfs_resume *r);
/* The mount ended (unmount, SIGTERM): the keeper must not resume it. */
void objfs_resume_bye(struct objfs_resume *r, int status);

#endif
