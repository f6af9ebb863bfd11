/*
 * xattr.h - user extended attributes in object metadata: the encoding.
 *
 * Pure functions (no I/O), unit-tested in tests/unit/test_xattr.c; the
 * FUSE operations are in xattr.c (fs_int.h).
 *
 * Only the user namespace is stored ("user." names); security.*,
 * trusted.* and system.* answer ENOTSUP.  The attributes of an object are
 * one encoded string, "" when it has none:
 *
 *   entry[,entry...]      entry = NAME ":" VALUE
 *
 * NAME is the attribute name without its "user." prefix, each byte other
 * than A-Z a-z 0-9 . _ - written %XX (upper-case hex); VALUE is the value
 * in standard base64 with padding ("" for an empty value).  The string is
 * plain ASCII, so it is a valid header value on every store.  It is split
 * into chunks of at most OBJFS_XATTR_CHUNK bytes, stored as the metadata
 * xattr-0, xattr-1, ... (x-amz-meta-xattr-N: lower-case names, so a store
 * that folds the case of names reads them back), since Swift refuses a
 * metadata value longer than 256 bytes.  (s3fs keeps a JSON document in
 * x-amz-meta-xattr; objfs neither reads nor writes that name.)
 *
 * Limits: the encoded string is at most OBJFS_XATTR_ENC_MAX bytes (six
 * chunks), so with objfs's own metadata (mode, owner, times, hard-link
 * fields: under 300 bytes) an object stays within AWS's 2 KiB of user
 * metadata.  A set whose entry alone would pass that answers E2BIG, one
 * that only the others push past it ENOSPC.
 */
#ifndef OBJFS_FS_XATTR_H
#define OBJFS_FS_XATTR_H

#include <stddef.h>

struct objfs_meta;

#define OBJFS_XATTR_META "xattr-"       /* + chunk number */
#define OBJFS_XATTR_CHUNK 256
#define OBJFS_XATTR_ENC_MAX 1536
#define OBJFS_XATTR_PREFIX "user."
#define OBJFS_XATTR_NAME_MAX 255        /* XATTR_NAME_MAX, prefix included */

/* Checks a full attribute name: 0 for "user.X" (X not empty), ENOTSUP
 * for another namespace, EINVAL for "user." alone, ERANGE when longer than
 * OBJFS_XATTR_NAME_MAX. */
int objfs_xattr_name_check(const char *name);

/* The value of name in enc (NULL or "": none) copied into buf when cap >
 * 0; *len its size.  0, ENODATA, ERANGE (cap > 0 but too small), EINVAL
 * (enc malformed) or ENOTSUP/EINVAL/ERANGE (the name). */
int objfs_xattr_get(const char *enc, const char *name, void *buf,
		    size_t cap, size_t *len);

/* The names in enc, each "user.X\0", into buf when cap > 0; *len the
 * bytes needed.  0, ERANGE or EINVAL. */
int objfs_xattr_list(const char *enc, char *buf, size_t cap, size_t *len);

/* enc with name set to value (flags: XATTR_CREATE, XATTR_REPLACE) /
 * removed, as a new string in *out (caller frees; "" when nothing is
 * left).  0, EEXIST, ENODATA, E2BIG, ENOSPC, ENOMEM, EINVAL or the name's
 * errors (objfs_xattr_name_check()). */
int objfs_xattr_set(const char *enc, const char *name, const void *value,
		    size_t len, int flags, char **out);
int objfs_xattr_remove(const char *enc, const char *name, char **out);

/* Adds enc (NULL or "": nothing) to m as xattr-0, xattr-1, ...  0,
 * E2BIG (longer than OBJFS_XATTR_ENC_MAX) or ENOMEM. */
int objfs_xattr_to_meta(const char *enc, struct objfs_meta *m);
/* The encoded attributes m holds, in *out (caller frees; NULL when it
 * holds none).  0, EINVAL (malformed: *out NULL) or ENOMEM. */
int objfs_xattr_from_meta(const struct objfs_meta *m, char **out);

#endif
