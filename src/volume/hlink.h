/*
 * hlink.h - the keys and metadata of hard links (the bucket's format; the
 * filesystem's side is fs/hardlink.c).  Pure functions, no I/O,
 * unit-tested in tests/unit/test_hlink.c.
 *
 * A file with one name is a plain object.  A file with two names or more
 * is a link set, named by an id of OBJFS_HLINK_ID_LEN lowercase hex digits
 * (random, drawn when the second name is made):
 *
 *   PREFIX/.objfs/links/ID/data        the file's data and attributes
 *                                      (mode, uid, gid, mtime: fs/attr.h)
 *   PREFIX/.objfs/links/ID/names/H     one per name: H = 40 hex digits of
 *                                      SHA-256 of the name's key, the body
 *                                      that key (a scan can check that the
 *                                      name still points here).  st_nlink
 *                                      is their count.
 *   PREFIX/NAME                        each name: a zero-byte object whose
 *                                      user metadata OBJFS_META_HLINK holds
 *                                      ID (and mode/uid/gid/mtime as they
 *                                      were when the name was made, for
 *                                      other tools)
 */
#ifndef OBJFS_VOLUME_HLINK_H
#define OBJFS_VOLUME_HLINK_H

#include <stdbool.h>
#include <stddef.h>

#include "volume/layout.h"

struct objfs_meta;

#define OBJFS_HLINK_ID_LEN 32
/* The user metadata (x-amz-meta-...) of a name that holds the id. */
#define OBJFS_META_HLINK "objfs-link"

/* True when id is OBJFS_HLINK_ID_LEN lowercase hex digits. */
bool objfs_hlink_id_valid(const char *id);
/* A new random id into id (OBJFS_HLINK_ID_LEN + 1 bytes).  0 or an errno. */
int objfs_hlink_id_new(char *id);
/* The id a name's metadata holds into id (OBJFS_HLINK_ID_LEN + 1 bytes):
 * true, or false when m holds none or a malformed one (a plain object). */
bool objfs_hlink_id_from_meta(const struct objfs_meta *m, char *id);

/* Keys of the link set id, relative to the volume, into buf: its data,
 * the prefix of its names, the entry of the name whose key is name_key.
 * 0, EINVAL (id malformed, name_key empty) or ENAMETOOLONG (cap). */
int objfs_hlink_data_key(const char *id, char *buf, size_t cap);
int objfs_hlink_names_prefix(const char *id, char *buf, size_t cap);
int objfs_hlink_name_key(const char *id, const char *name_key, char *buf,
			 size_t cap);

#endif
