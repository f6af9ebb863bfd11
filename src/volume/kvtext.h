/*
 * kvtext.h - small key=value text documents kept as objects: the volume
 * record (volrec.h is its typed view), the snapshot record and the CSI
 * controller's index entries.  Pure text: docstore.h keeps documents as
 * objects.
 *
 * Format: one key=value per line; blank lines and lines starting with '#'
 * are ignored; a key is 1..127 bytes of [A-Za-z0-9._/-]; a value runs to
 * the end of the line and holds no CR, LF or NUL.  Order is kept.  A
 * document is at most OBJFS_KV_MAX bytes.
 */
#ifndef OBJFS_VOLUME_KVTEXT_H
#define OBJFS_VOLUME_KVTEXT_H

#include <stddef.h>

#define OBJFS_KV_MAX (64 * 1024)
#define OBJFS_KV_KEY_MAX 127

struct objfs_kv_item {
	char *key;
	char *value;
};

/* OBJFS_KV_INIT is empty; every string is owned: objfs_kv_release(). */
struct objfs_kv {
	struct objfs_kv_item *items;
	size_t n;
};
#define OBJFS_KV_INIT { NULL, 0 }

/* Sets (replaces or appends) key=value, copying both.  0, EINVAL (bad key
 * or value) or ENOMEM. */
int objfs_kv_set(struct objfs_kv *kv, const char *key, const char *value);
/* The value of key or NULL; owned by kv. */
const char *objfs_kv_get(const struct objfs_kv *kv, const char *key);
/* 0 when value may be stored (no CR, LF; at most OBJFS_KV_MAX / 4 bytes). */
int objfs_kv_value_valid(const char *value);
/* 0 when key may be stored (1..OBJFS_KV_KEY_MAX of [A-Za-z0-9._/-]). */
int objfs_kv_key_valid(const char *key);
void objfs_kv_release(struct objfs_kv *kv);

/* Parses len bytes into *out (empty).  0, EINVAL or ENOMEM. */
int objfs_kv_parse(const char *text, size_t len, struct objfs_kv *out);
/* Formats kv after a "# comment" line into *out (malloc'ed, NUL-ended,
 * caller frees); *len without the NUL.  0, EINVAL, EFBIG or ENOMEM. */
int objfs_kv_format(const struct objfs_kv *kv, const char *comment,
		    char **out, size_t *len);

#endif
