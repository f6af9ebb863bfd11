/*
 * attr.h - file attributes in object metadata, and path/key mapping.
 *
 * Pure functions (no I/O), unit-tested in tests/unit/test_fsattr.c.
 *
 * Metadata names (x-amz-meta-*), chosen so a bucket can be shared with
 * s3fs and rclone:
 *   mode   decimal st_mode including the type bits (s3fs), e.g. 33188 for a
 *          0644 regular file; on input a value with a leading 0 is octal
 *          (rclone's metadata), e.g. 0100644.
 *   uid    decimal (s3fs, rclone)
 *   gid    decimal (s3fs, rclone)
 *   mtime  seconds since the epoch, "S" when the nanoseconds are 0 and
 *          "S.NNNNNNNNN" (nine digits) otherwise.  s3fs reads the integer
 *          part, rclone reads the value as fractional seconds; any number
 *          of fraction digits is accepted on input.
 *   atime, ctime  the same format (s3fs's names); written with every
 *          object objfs writes anyway (see fs/times.c) when they differ
 *          from mtime; absent, mtime stands for them (also on objects of
 *          other tools)
 *   rdev   decimal dev_t of a character or block device (s3fs)
 * A symlink is an object whose body is the target and whose mode has
 * S_IFLNK (as s3fs stores them); a FIFO, socket, character or block
 * device is a zero-byte object whose mode carries its type (as s3fs; see
 * fs/special.c).  Missing or malformed values fall back to the mount's
 * defaults.
 *
 * Keys: the file a/b.txt is the key "a/b.txt" relative to the volume; the
 * directory a/b is the common prefix "a/b/", with an optional zero-byte
 * marker object "a/b/" holding its attributes.  Names are 1..255 bytes, not
 * "." or "..", without '/'.  At the root, ".objfs" is reserved.
 */
#ifndef OBJFS_FS_ATTR_H
#define OBJFS_FS_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "volume/layout.h"

struct objfs_meta;

#define OBJFS_META_MODE "mode"
#define OBJFS_META_UID "uid"
#define OBJFS_META_GID "gid"
#define OBJFS_META_MTIME "mtime"
#define OBJFS_META_ATIME "atime"
#define OBJFS_META_CTIME "ctime"
#define OBJFS_META_RDEV "rdev"
#define OBJFS_RESERVED_NAME OBJFS_META_DIR
#define OBJFS_NAME_MAX 255

struct objfs_fattr {
	mode_t mode;                    /* type bits included */
	uid_t uid;
	gid_t gid;
	struct timespec mtime;
	dev_t rdev;                     /* character and block devices */
	struct timespec atime;          /* tv_nsec < 0: none */
	struct timespec ctime;          /* tv_nsec < 0: none */
};

/* Which fields objfs_fattr_from_meta() found. */
#define OBJFS_FATTR_MODE 0x1u
#define OBJFS_FATTR_UID 0x2u
#define OBJFS_FATTR_GID 0x4u
#define OBJFS_FATTR_MTIME 0x8u
#define OBJFS_FATTR_RDEV 0x10u
#define OBJFS_FATTR_ATIME 0x20u
#define OBJFS_FATTR_CTIME 0x40u

/* Writes mode/uid/gid/mtime into m (replacing old values), atime and
 * ctime when their tv_nsec is not negative and they differ from mtime
 * (a reader takes mtime for them), rdev for a device; a
 * negative mtime.tv_nsec leaves mtime out (Last-Modified stands for it).
 * 0 or ENOMEM. */
int objfs_fattr_to_meta(const struct objfs_fattr *a, struct objfs_meta *m);
/* Overwrites the fields of *a that m holds valid values for; returns the
 * OBJFS_FATTR_* mask of those fields.  A mode whose type bits are none of
 * regular file, directory, symlink, FIFO, socket, character or block
 * device is ignored. */
unsigned objfs_fattr_from_meta(const struct objfs_meta *m,
			       struct objfs_fattr *a);

/* "S" or "S.NNNNNNNNN" into buf (at least 32 bytes).  0 or ENOSPC. */
int objfs_mtime_format(const struct timespec *ts, char *buf, size_t cap);
/* Parses "S", "S.F..." (fraction of any length, cut to ns).  0 or EINVAL. */
int objfs_mtime_parse(const char *s, struct timespec *out);
/* Parses a decimal (or, with a leading 0, octal) mode.  0 or EINVAL. */
int objfs_mode_parse(const char *s, mode_t *out);

/* 0, EINVAL ("", ".", "..", contains '/') or ENAMETOOLONG. */
int objfs_name_check(const char *name);
/* True for names the filesystem never shows nor creates in the root. */
bool objfs_name_reserved(bool parent_is_root, const char *name);

/* Builds dir_key + name (+ "/" when dir) into buf.  dir_key is "" for the
 * root or ends in "/".  0 or ENAMETOOLONG (longer than OBJFS_KEY_MAX). */
int objfs_key_join(const char *dir_key, const char *name, bool dir,
		   char *buf, size_t cap);

/* Classifies a listing result under dir_key (a key when is_prefix is false,
 * a common prefix ending in "/" otherwise).  Copies the child name into
 * name (cap >= OBJFS_NAME_MAX + 1) and returns true, or returns false when
 * it names no child (the directory marker itself, an empty segment, a name
 * too long, or the reserved name at the root). */
bool objfs_key_child(const char *dir_key, const char *key, bool is_prefix,
		     char *name, size_t cap);

#endif
