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
 *   PREFIX/.objfs/links/ID/names/T     one per name: T, the name's token
 *                                      (OBJFS_HLINK_TOKEN_LEN random hex
 *                                      digits), the body the key the name
 *                                      had when made.  st_nlink is their
 *                                      count.
 *   PREFIX/NAME                        each name: an object whose user
 *                                      metadata OBJFS_META_HLINK holds ID
 *                                      and OBJFS_META_HLINK_TOKEN its T
 *                                      (and mode/uid/gid/mtime as they were
 *                                      when the name was made, for other
 *                                      tools), its body
 *                                      "objfs-link ID T\n"
 *                                      (objfs_hlink_name_body())
 * The token travels with the name's metadata: a rename (of the name or of
 * a directory above it: a server-side copy) leaves its entry right.
 *
 * The metadata is what makes a name; the body only makes its ETag and
 * size differ from those of any file it replaced (the attribute index,
 * fs/attrindex.c, tells versions of an object apart by ETag and
 * Last-Modified only).  Names written before the body came are zero-byte
 * objects and stay valid.
 */
#ifndef OBJFS_VOLUME_HLINK_H
#define OBJFS_VOLUME_HLINK_H

#include <stdbool.h>
#include <stddef.h>

#include "volume/layout.h"

struct objfs_meta;

#define OBJFS_HLINK_ID_LEN 32
#define OBJFS_HLINK_TOKEN_LEN 16
/* The user metadata (x-amz-meta-...) of a name: its set's id, its token. */
#define OBJFS_META_HLINK "objfs-link"
#define OBJFS_META_HLINK_TOKEN "objfs-link-token"

/* True when id is OBJFS_HLINK_ID_LEN (a token: OBJFS_HLINK_TOKEN_LEN)
 * lowercase hex digits. */
bool objfs_hlink_id_valid(const char *id);
bool objfs_hlink_token_valid(const char *token);
/* A new random id into id (OBJFS_HLINK_ID_LEN + 1 bytes) / token
 * (OBJFS_HLINK_TOKEN_LEN + 1 bytes).  0 or an errno. */
int objfs_hlink_id_new(char *id);
int objfs_hlink_token_new(char *token);
/* The id and token a name's metadata holds into id and token: true, or
 * false when m holds none or a malformed one (a plain object). */
bool objfs_hlink_from_meta(const struct objfs_meta *m, char *id,
			   char *token);
/* Writes both into m.  0 or ENOMEM/EINVAL. */
int objfs_hlink_to_meta(const char *id, const char *token,
			struct objfs_meta *m);

/* The body of the name whose set is id and token token into buf
 * (OBJFS_HLINK_BODY_LEN + 1 bytes with its NUL).  0 or EINVAL. */
#define OBJFS_HLINK_BODY_LEN \
	(sizeof("objfs-link") + OBJFS_HLINK_ID_LEN + 1 + OBJFS_HLINK_TOKEN_LEN + 1)
int objfs_hlink_name_body(const char *id, const char *token, char *buf,
			  size_t cap);

/* Keys of the link set id, relative to the volume, into buf: its data,
 * the prefix of its names' entries, the entry of the name whose token is
 * token.  0, EINVAL (id or token malformed) or ENAMETOOLONG (cap). */
int objfs_hlink_data_key(const char *id, char *buf, size_t cap);
int objfs_hlink_names_prefix(const char *id, char *buf, size_t cap);
int objfs_hlink_name_key(const char *id, const char *token, char *buf,
			 size_t cap);

/* What key (relative to the volume) is: OBJFS_HLINK_DATA a set's data,
 * OBJFS_HLINK_ENTRY the entry of one of its names (id, OBJFS_HLINK_ID_LEN
 * + 1 bytes, gets the set's id), OBJFS_HLINK_OTHER anything else. */
enum objfs_hlink_kind {
	OBJFS_HLINK_OTHER,
	OBJFS_HLINK_DATA,
	OBJFS_HLINK_ENTRY,
};
enum objfs_hlink_kind objfs_hlink_key_kind(const char *key, char *id);

#endif
