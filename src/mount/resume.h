/*
 * resume.h - the server's side of a resumable mount (-o resume): the
 * first server gives the keeper (mount/keeper.h) its /dev/fuse fd and the
 * INIT exchange; a successor takes them, replays INIT into libfuse and
 * asks the kernel to send again what the dead server had read
 * (FUSE_NOTIFY_RESEND, Linux 6.9 and later).
 *
 * libfuse 3.14 keeps the negotiated parameters (got_init, proto_minor,
 * want, bufsize) private and answers every request with EIO until it has
 * seen INIT; the kernel sends INIT once per connection.  So a successor
 * calls fuse_session_custom_io() on the inherited fd and feeds it the
 * saved INIT request: the custom writev hook swallows libfuse's reply and
 * compares it byte for byte with the reply the kernel got; a difference
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
/* A successor ($OBJFS_RESUME): it takes a live mount. */
bool objfs_resume_successor(const struct objfs_resume *r);
/* First server, after fuse_session_mount(): installs the hooks that
 * record INIT and gives the keeper a reference to the fd.  0 or an
 * errno. */
int objfs_resume_attach(struct objfs_resume *r, struct fuse_session *se);
/* Successor: waits for the fd (the keeper answers once the previous
 * server is dead) and replays INIT.  0, or an errno (EPROTO: the INIT
 * reply would differ).  Load the state after this, before serving. */
int objfs_resume_take(struct objfs_resume *r, struct fuse_session *se);
/* After the state directory is started (r NULL: nothing): where the
 * userspace RESEND keeps requests (STATE_DIR/resend), used when the
 * kernel does not re-send (before Linux 6.9) or force (test only); a
 * successor maps the dead server's.  0 or an errno. */
int objfs_resume_slots(struct objfs_resume *r, const char *state_dir,
		       bool force);
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
