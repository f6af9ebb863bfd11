/*
 * volrec.h - the volume record, shared by objfs-mount and the CSI controller.
 *
 * A volume is a key prefix in a bucket.  Its record lives at the key
 * OBJFS_VOLREC_KEY relative to that prefix (the filesystem never shows it)
 * and is a small text document of key=value lines:
 *
 *   # objfs volume record
 *   capacity_bytes=1073741824
 *   created=2026-11-22T10:41:19Z
 *   name=pvc-0f3c...
 *   <anything>=<anything>        free-form creation parameters, kept in order
 *
 * Blank lines and lines starting with '#' are ignored; a key is 1..127 bytes
 * of [A-Za-z0-9._/-], a value runs to the end of the line (no CR/LF/NUL).
 * capacity_bytes=0 (or a missing line) means "no limit".  Unknown keys are
 * kept as parameters, so older readers round-trip newer records.
 */
#ifndef OBJFS_VOLREC_H
#define OBJFS_VOLREC_H

#include <stddef.h>
#include <stdint.h>

#include "volume/kvtext.h"
#include "volume/layout.h"

struct objfs_store;

/* The record's key relative to the volume prefix is OBJFS_VOLREC_KEY
 * (layout.h).  Its fields, as document keys: */
#define OBJFS_VOLREC_CAPACITY "capacity_bytes"
#define OBJFS_VOLREC_CREATED "created"
#define OBJFS_VOLREC_NAME "name"
/* Parameters the CSI controller keeps in the record (csi/controller.h):
 * csi.* describe the volume to the controller, ctx.KEY is its
 * volume_context entry KEY. */
#define OBJFS_VOLREC_CSI_ID "csi.id"
#define OBJFS_VOLREC_CSI_PARAMS "csi.params"
#define OBJFS_VOLREC_CSI_SOURCE "csi.source"
#define OBJFS_VOLREC_CSI_ON_DELETE "csi.onDelete"
#define OBJFS_VOLREC_CSI_ARCHIVE "csi.archivePrefix"
/* Where onDelete=archive moves the volume (BASE/ARCHIVE/NAME, layout.h);
 * a record without it (older) archives to ARCHIVE/PREFIX. */
#define OBJFS_VOLREC_CSI_ARCHIVE_TO "csi.archiveTo"
#define OBJFS_VOLREC_CSI_STATE "csi.state"
#define OBJFS_VOLREC_STATE_RETAINED "retained"
#define OBJFS_VOLREC_CTX "ctx."
/* The largest record load() accepts and format() produces. */
#define OBJFS_VOLREC_MAX (64 * 1024)
#define OBJFS_VOLREC_KEY_MAX 127

/* OBJFS_VOLREC_INIT is the empty record; everything it points to is owned
 * by the record: objfs_volrec_release(). */
struct objfs_volrec {
	uint64_t capacity_bytes;        /* 0: unlimited */
	char *created;                  /* RFC 3339 UTC, or NULL */
	char *name;                     /* or NULL */
	struct objfs_kv params;         /* the other keys, in order */
};
#define OBJFS_VOLREC_INIT { 0, NULL, NULL, OBJFS_KV_INIT }

void objfs_volrec_release(struct objfs_volrec *v);

/* Sets created to the current time (RFC 3339, seconds, "Z").  0 or ENOMEM. */
int objfs_volrec_set_created_now(struct objfs_volrec *v);
/* Copies name (NULL clears it).  0, EINVAL (CR/LF) or ENOMEM. */
int objfs_volrec_set_name(struct objfs_volrec *v, const char *name);
/* Sets (replaces or appends) a free-form parameter, copying both strings.
 * The reserved keys capacity_bytes, created and name are EINVAL. */
int objfs_volrec_set_param(struct objfs_volrec *v, const char *key,
			   const char *value);
/* The value of a parameter or NULL; owned by v. */
const char *objfs_volrec_get_param(const struct objfs_volrec *v,
				   const char *key);

/* Parses len bytes of text into *out (which must be empty).  0, EINVAL for
 * a malformed line or number, ENOMEM. */
int objfs_volrec_parse(const char *text, size_t len, struct objfs_volrec *out);
/* Formats v into buf (cap bytes, NUL-terminated); *len gets the length
 * without the NUL.  0, EINVAL (invalid key/value) or ENOSPC (too small). */
int objfs_volrec_format(const struct objfs_volrec *v, char *buf, size_t cap,
			size_t *len);

/* Reads the record of the volume store s (a store confined to the volume
 * prefix) into *out (which must be empty).  ENOENT when there is none;
 * otherwise the store's errno or the parser's. */
int objfs_volrec_load(struct objfs_store *s, struct objfs_volrec *out);
/* Writes (creates or replaces) the record.  0 or an errno. */
int objfs_volrec_store(struct objfs_store *s, const struct objfs_volrec *v);

/* The same for the volume at prefix (no trailing '/'; NULL or "": s is
 * the volume's store) of a store holding many volumes. */
int objfs_volrec_load_at(struct objfs_store *s, const char *prefix,
			 struct objfs_volrec *out);
int objfs_volrec_store_at(struct objfs_store *s, const char *prefix,
			  const struct objfs_volrec *v);
/* Writes a new record: EEXIST when one exists (docstore.h). */
int objfs_volrec_create_at(struct objfs_store *s, const char *prefix,
			   const struct objfs_volrec *v);
/* The key of the record of the volume at prefix into buf.  0 or
 * ENAMETOOLONG. */
int objfs_volrec_key(const char *prefix, char *buf, size_t cap);

#endif
