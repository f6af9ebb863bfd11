/*
 * attrseg.h - segments of a volume's attribute index: what `ls -l` needs
 * of the files of one directory, so a listing answers it without a HEAD
 * per name.  Pure text (no I/O), unit-tested in tests/unit/test_attrseg.c;
 * fs/attrindex.c writes and reads them.
 *
 * The truth stays in each object's metadata (fs/attr.h).  An index entry
 * is a hint about one version of one object: it carries the object's ETag
 * and Last-Modified as a listing shows them, and a reader uses it only
 * while the listing still shows both; any other entry is ignored and that
 * name falls back to a HEAD.
 *
 * Keys (layout.h): a directory whose key is D ("" for the root, else
 * "a/b/") has its segments under OBJFS_ATTR_INDEX_PREFIX H(D) "/", H as
 * the CSI index's (objfs_catalog_hash(): 40 hex digits of SHA-256(D)).  A segment is
 * immutable once written: each writer (one mount) names its segments
 * W-SEQ (W: 16 hex digits drawn at mount, SEQ: 8 hex digits counted by the
 * writer), so two writers never touch the same object.  Readers merge all
 * segments of a directory: among the entries of a name that match the
 * listing, the one with the latest ct wins.  A reader finding many
 * segments writes one merged segment and then deletes those it merged.
 *
 * Text (UTF-8 lines, LF-terminated; at most OBJFS_ATTRSEG_MAX bytes):
 *
 *   objfs-attrs 1
 *   dir <D>
 *   e <name> etag=<ETag> lm=<ns> mode=<st_mode> uid=<n> gid=<n> mtime=<ns> [atime=<ns>] [ctime=<ns>] [rdev=<n>] [size=<n>] ct=<ns> [link=<target>]
 *
 * <ns> is signed nanoseconds since the epoch.  Names and values are
 * percent-escaped: bytes <= 0x20, '%', '=' and 0x7f as %XX.  mtime, atime
 * and ctime are absent when the object has none (its Last-Modified stands
 * for it); rdev only for character and block devices (decimal dev_t);
 * link only for symlinks.  size is the object's size as the listing
 * that gave lm showed it (bytes).  atime, ctime, rdev and size came later
 * in version 1: older readers ignore them (and take the entry of a FIFO,
 * socket or device for no entry at all).  An entry without size is not
 * used for a zero-byte object (fs/attrindex.c: such entries were written
 * before hard-link names had a body of their own).  Extensible: readers ignore lines of other
 * kinds and fields they do not know (a later writer may add `nlink=`...);
 * a segment whose first line names another major version is ignored as a
 * whole (EPROTO).
 */
#ifndef OBJFS_VOLUME_ATTRSEG_H
#define OBJFS_VOLUME_ATTRSEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "volume/layout.h"

#define OBJFS_ATTRSEG_VERSION 1
#define OBJFS_ATTRSEG_MAX (64u << 20)
/* The ETag bound of backend.h (OBJFS_ETAG_MAX) */
#define OBJFS_ATTRSEG_ETAG_MAX 80

/* Fields an entry holds besides name, etag, lm and ct. */
#define OBJFS_ATTRSEG_MODE 0x1u
#define OBJFS_ATTRSEG_UID 0x2u
#define OBJFS_ATTRSEG_GID 0x4u
#define OBJFS_ATTRSEG_MTIME 0x8u
#define OBJFS_ATTRSEG_RDEV 0x10u
#define OBJFS_ATTRSEG_ATIME 0x20u
#define OBJFS_ATTRSEG_CTIME 0x40u
#define OBJFS_ATTRSEG_SIZE 0x80u

struct objfs_attrseg_entry {
	char *name;                     /* owned */
	char etag[OBJFS_ATTRSEG_ETAG_MAX];
	int64_t lm;                     /* Last-Modified as listed, ns */
	int64_t ct;                     /* when its writer made it, ns */
	unsigned have;                  /* OBJFS_ATTRSEG_* */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	int64_t mtime;                  /* ns */
	int64_t atime;                  /* ns */
	int64_t ctime;                  /* ns */
	uint64_t rdev;
	uint64_t size;                  /* bytes, as listed with lm */
	char *link;                     /* owned; NULL but for symlinks */
};

/* One segment.  OBJFS_ATTRSEG_INIT is empty; everything is owned by it:
 * objfs_attrseg_release(). */
struct objfs_attrseg {
	char *dir;                      /* the directory key D */
	struct objfs_attrseg_entry *e;
	size_t n, cap;
};
#define OBJFS_ATTRSEG_INIT { NULL, NULL, 0, 0 }

void objfs_attrseg_release(struct objfs_attrseg *s);
/* Appends a copy of e (name and link copied).  0 or ENOMEM. */
int objfs_attrseg_add(struct objfs_attrseg *s,
		      const struct objfs_attrseg_entry *e);
/* Sorts the entries by name (byte order) and keeps, of entries with the
 * same name, the last one added. */
void objfs_attrseg_sort(struct objfs_attrseg *s);
/* The text of s (dir set) into *out (malloc'ed, caller frees), *len its
 * length.  0, EINVAL (no dir), EFBIG or ENOMEM. */
int objfs_attrseg_format(const struct objfs_attrseg *s, char **out,
			 size_t *len);
/* Parses len bytes into *out (empty; released by the caller also on
 * error).  0, EPROTO (not a segment of this major version), EINVAL
 * (malformed) or ENOMEM.  Malformed entry lines are skipped. */
int objfs_attrseg_parse(const char *text, size_t len,
			struct objfs_attrseg *out);
/* The prefix of the segments of directory key dir ("" or ending in '/'):
 * OBJFS_ATTR_INDEX_PREFIX H(dir) "/" into buf (at least 64 bytes). */
void objfs_attrseg_prefix(const char *dir, char *buf, size_t cap);

#endif
