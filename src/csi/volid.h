/*
 * volid.h - volume and snapshot ids of the objfs controller, and the safe
 * names and prefixes they are made of.  Pure functions: no store, no I/O.
 *
 * Grammar (every id is at most OBJFS_ID_MAX = 128 bytes, the CSI limit):
 *
 *   objfs1:vol:def:PREFIX           volume at PREFIX in the default store
 *   objfs1:vol:s3:BUCKET:PREFIX     volume at PREFIX in an S3 bucket named
 *                                   by StorageClass parameters
 *   objfs1:snap:def:SNAP            snapshot SNAP in the default store
 *   objfs1:snap:s3:BUCKET:SNAP      snapshot SNAP in BUCKET
 *
 * SNAP is BASE/NAME: its copy is BASE/.objfs-snapshots/NAME/, under the
 * base prefix of its source volume (PREFIX without its last segment); a
 * SNAP of one segment (every snapshot made before snapshots moved under
 * the base prefix) is .objfs-snapshots/NAME/ (volume/layout.h).
 *
 * "objfs1" is the version tag.  PREFIX and SNAP are one or more segments
 * joined by single '/'; a segment is 1..63 bytes of
 * [A-Za-z0-9._-] that do not start with '.' (so "", ".", "..", hidden
 * names, "//", absolute paths and control bytes are impossible).  BUCKET
 * is 3..63 bytes of [a-z0-9.-] (S3's rules, any case accepted) starting
 * and ending with a letter or digit.  An id is either well-formed or
 * refused as a whole: nothing in it is ever decoded or unescaped.
 */
#ifndef OBJFS_CSI_VOLID_H
#define OBJFS_CSI_VOLID_H

#include <stdbool.h>
#include <stddef.h>

#define OBJFS_ID_MAX 128
#define OBJFS_ID_TAG "objfs1:"
#define OBJFS_SEGMENT_MAX 63
#define OBJFS_BUCKET_MAX 63

enum objfs_id_type {
	OBJFS_ID_VOLUME = 0,
	OBJFS_ID_SNAPSHOT = 1,
};

enum objfs_id_store {
	OBJFS_ID_DEFAULT = 0,   /* the plugin's default store */
	OBJFS_ID_BUCKET = 1,    /* an S3 bucket named by parameters */
};

/* A parsed id.  bucket is "" for the default store; path is the volume
 * PREFIX or the snapshot NAME. */
struct objfs_id {
	enum objfs_id_type type;
	enum objfs_id_store store;
	char bucket[OBJFS_BUCKET_MAX + 1];
	char path[OBJFS_ID_MAX + 1];
};

/* Parses s.  0; ENOENT when s does not carry our tag (an id objfs did not
 * produce); EINVAL when it carries the tag but breaks the grammar (too
 * long, unknown kind, bad bucket, hostile or empty path). */
int objfs_id_parse(const char *s, struct objfs_id *out);

/* Formats id into buf (cap bytes).  0, EINVAL for fields that break the
 * grammar, ENAMETOOLONG when the id would exceed OBJFS_ID_MAX. */
int objfs_id_format(const struct objfs_id *id, char *buf, size_t cap);

/* Length of the id text before PREFIX/NAME for this type, store and
 * bucket (the room left for the path is OBJFS_ID_MAX minus this). */
size_t objfs_id_head_len(enum objfs_id_type type, enum objfs_id_store store,
			 const char *bucket);

/* 0 when s is a valid segment / prefix / bucket, else EINVAL. */
int objfs_id_segment_valid(const char *s, size_t len);
int objfs_id_prefix_valid(const char *s);
int objfs_id_bucket_valid(const char *s);

/* Turns a CO name into one segment of at most max bytes (max >= 24):
 * the name itself when it is already a valid segment that fits, else its
 * [A-Za-z0-9_-] characters cut short, '-' and 16 hex digits of the
 * SHA-256 of the whole name.  Deterministic.  0, EINVAL (empty name or
 * max too small) or ENOSPC (cap too small). */
int objfs_id_safe_name(const char *name, size_t max, char *out, size_t cap);

/* Lower-case hex SHA-256 of s, cut to hexlen (<= 64) digits, into out
 * (cap > hexlen). */
void objfs_id_hash(const char *s, size_t len, char *out, size_t hexlen);

/* True when name has a control character CSI bans in names (U+0000-U+0008,
 * U+000B, U+000C, U+000E-U+001F, U+007F-U+009F) or is not UTF-8. */
bool objfs_id_name_banned(const char *name);

#endif
