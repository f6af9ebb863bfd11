/*
 * fuselog.h - libfuse's own log lines into objfs's logger.
 *
 * libfuse takes one process-wide log function with no user data
 * (fuse_set_log_func), so this module keeps the one logger it writes to in
 * a static pointer: the only process state of objfs-mount, set once before
 * the session is created and cleared after it is destroyed.
 */
#ifndef OBJFS_FS_FUSELOG_H
#define OBJFS_FS_FUSELOG_H

struct objfs_log;

/* Routes libfuse's log lines to log (subsystem "fuse"); NULL restores
 * libfuse's default (stderr).  log must outlive every libfuse call. */
void objfs_fuselog_route(struct objfs_log *log);

#endif
