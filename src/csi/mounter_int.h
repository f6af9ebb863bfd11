/*
 * mounter_int.h - what the runners of the mounter (mounter.c: fork and
 * host-systemd; mounter_holder.c: the node's objfs-holder) share.
 */
#ifndef OBJFS_CSI_MOUNTER_INT_H
#define OBJFS_CSI_MOUNTER_INT_H

#include <stddef.h>

struct objfs_creds;

/* Why a mount process ended before its mount was live, from its log file
 * at path (its last 16 KiB): the last line that names a cause (an errno
 * field: objfs_log_cause(), objfs-mount's reason not to mount), else the
 * last line.  ": " and that line's message go into msg (nothing when the
 * log is empty or path NULL).  Returns the cause's errno, or EIO when no
 * line names one.  objfs-mount never logs secrets. */
int objfs_csi_log_cause(const char *path, char *msg, size_t cap);
/* The same over the log's text buf (n bytes, not NUL-terminated; nothing
 * past them is read), as objfs_csi_log_cause reads it. */
int objfs_csi_log_cause_text(const char *buf, size_t n, char *msg, size_t cap);
/* Writes c to a new 0600 file in dir (created 0700 when missing); path
 * gets its name.  The caller unlinks it.  0 or an errno. */
int objfs_csi_write_creds(const char *dir, const struct objfs_creds *c,
			  char *path, size_t cap);
/* The -o list of a mount process: options, then ready_fd (unless
 * negative) and credentials_file (unless "").  0 or ENOSPC. */
int objfs_csi_mount_opts(const char *options, int ready_fd, const char *creds_path,
			 char *out, size_t cap);

#endif
