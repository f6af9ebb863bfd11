/*
 * s3conn.h - the S3 connection of a store: endpoint, region, addressing
 * style and CA file, in one value type with one set of keys.
 *
 * Every side of objfs speaks of a bucket's connection through this type:
 * the CSI controller (StorageClass parameters, secrets, the index, the
 * volume context it writes), the node (the volume context it reads, the
 * -o options of objfs-mount), objfs-mount (its -o options and
 * environment) and the store stack (struct objfs_s3_config).
 *
 *   source --objfs_s3_conn_add()--> conn      (a getter: parameters,
 *                                              secrets, a context alike;
 *                                              fields already set stay)
 *   conn --objfs_s3_conn_add_plugin()-->       (the plugin's defaults last)
 *   conn --objfs_s3_conn_check()-->            (what a mount cannot take)
 *   conn --objfs_s3_conn_aws()-->              (no endpoint: AWS's for the
 *                                              region, style from bucket)
 *   conn --objfs_s3_conn_write()--> context   (the keys below)
 *   conn <-> struct objfs_mount_opts          (-o endpoint, region,
 *                                              addressing, ca_file)
 *   conn --> struct objfs_s3_config           (objfs_s3_conn_to_store)
 *
 * Resolution order is the caller's order of add() calls: the hint
 * (parameters on create, the index entry, the volume context), then the
 * secrets, then the plugin's defaults (objfs_s3_conn_add_plugin: its
 * --s3-endpoint, --s3-region else us-east-1, --s3-addressing when its own
 * store is S3 else path).
 *
 * The keys (OBJFS_S3_CONN_KEY_*) are the same in StorageClass parameters,
 * secrets and the volume context; records keep them as ctx.KEY.  The CA
 * file is never written to a context: each side takes it from its own
 * caBundle secret or its own configuration.
 *
 * Adding a connection setting: a field and a key here, a row in each
 * function of s3conn.c (add, write, the -o and store conversions).
 *
 * Ownership: a plain value (no pointers); objfs_s3_conn_to_mount_opts()
 * and objfs_s3_conn_to_store() lend its strings (it must outlive them).
 * OBJFS_S3_CONN_INIT is empty.
 */
#ifndef OBJFS_BACKEND_S3CONN_H
#define OBJFS_BACKEND_S3CONN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct objfs_mount_opts;
struct objfs_s3_config;
struct objfs_store_config;

/* The keys of a connection in parameters, secrets and volume contexts. */
#define OBJFS_S3_CONN_KEY_ENDPOINT "endpoint"
#define OBJFS_S3_CONN_KEY_REGION "region"
#define OBJFS_S3_CONN_KEY_STYLE "addressingStyle"

/* Longest endpoint and region, with the NUL. */
#define OBJFS_S3_ENDPOINT_MAX 512
#define OBJFS_S3_REGION_MAX 64
/* The region when nothing names one (AWS's default). */
#define OBJFS_S3_DEFAULT_REGION "us-east-1"

/* Which fields a source gave (struct objfs_s3_conn.set). */
#define OBJFS_S3_CONN_HAS_ENDPOINT 0x1u
#define OBJFS_S3_CONN_HAS_REGION 0x2u
#define OBJFS_S3_CONN_HAS_STYLE 0x4u
#define OBJFS_S3_CONN_HAS_CA 0x8u

/* What is wrong with a connection or a source of one: bits, 0 when
 * nothing.  Callers word their own messages, in their own order. */
#define OBJFS_S3_CONN_BAD_STYLE 0x1u            /* not path or virtual */
#define OBJFS_S3_CONN_BAD_SCHEME 0x2u           /* endpoint not http(s):// */
#define OBJFS_S3_CONN_BAD_ENDPOINT_CHAR 0x4u    /* blank, comma, control */
#define OBJFS_S3_CONN_LONG_ENDPOINT 0x8u        /* cut short */
#define OBJFS_S3_CONN_BAD_REGION_CHAR 0x10u
#define OBJFS_S3_CONN_LONG_REGION 0x20u
#define OBJFS_S3_CONN_LONG_CA 0x40u

struct objfs_s3_conn {
	unsigned set;                           /* OBJFS_S3_CONN_HAS_* */
	char endpoint[OBJFS_S3_ENDPOINT_MAX];   /* "" (set or not): AWS's */
	char region[OBJFS_S3_REGION_MAX];       /* "": the store's default */
	bool path_style;                        /* else virtual-hosted */
	char ca_file[PATH_MAX];                 /* PEM bundle; "": system's */
};
#define OBJFS_S3_CONN_INIT { 0 }

/* Where a connection's settings come from: the value of key (one of the
 * keys above) in src, or NULL when src does not give it.  Whether an
 * empty value counts as given is the getter's choice. */
typedef const char *objfs_s3_conn_get_fn(const void *src, const char *key);

/* Sets the fields of c that are still unset from what get finds in src.
 * Returns OBJFS_S3_CONN_BAD_STYLE (a style that is neither path nor
 * virtual: the field stays unset) and OBJFS_S3_CONN_LONG_* (the value is
 * kept cut short), else 0. */
unsigned objfs_s3_conn_add(struct objfs_s3_conn *c, objfs_s3_conn_get_fn *get,
			   const void *src);
/* Sets the unset fields of c from a plugin's store configuration (its
 * --s3-* options): endpoint as configured (none: ""), region else
 * us-east-1, style virtual only when its store is S3 and virtual-hosted,
 * CA file when configured. */
void objfs_s3_conn_add_plugin(struct objfs_s3_conn *c,
			      const struct objfs_store_config *sc);
/* What a mount could not take (OBJFS_S3_CONN_BAD_SCHEME,
 * _BAD_ENDPOINT_CHAR, _BAD_REGION_CHAR), else 0.  Empty values pass. */
unsigned objfs_s3_conn_check(const struct objfs_s3_conn *c);
/* With no endpoint: AWS's for the region (objfs_s3_aws_endpoint), and
 * the style it wants for bucket.  0, or EINVAL (a region that is not a
 * host label; c unchanged). */
int objfs_s3_conn_aws(struct objfs_s3_conn *c, const char *bucket);

/* Calls set(arg, KEY, value) for each set field but the CA file, in key
 * order.  Returns the first non-zero result of set. */
int objfs_s3_conn_write(const struct objfs_s3_conn *c,
			int (*set)(void *arg, const char *key, const char *value),
			void *arg);
/* "endpoint=E\nregion=R\naddressingStyle=S\n" (empty for unset fields)
 * into buf (cap bytes), the connection's part of a parameters digest;
 * settings added later appear only when set, so digests stay.  0 or
 * ENOSPC. */
int objfs_s3_conn_digest_text(const struct objfs_s3_conn *c, char *buf, size_t cap);
/* The name of a style: path or virtual. */
const char *objfs_s3_conn_style_name(bool path_style);
/* The keys a StorageClass may give, NULL-terminated. */
extern const char *const objfs_s3_conn_keys[];

/* Marks and fills mo's endpoint (always), region (when not empty),
 * addressing (always) and ca_file (when set); strings borrowed from c. */
void objfs_s3_conn_to_mount_opts(const struct objfs_s3_conn *c,
				 struct objfs_mount_opts *mo);
/* Sets the unset fields of c from the options mo gives.  Returns
 * OBJFS_S3_CONN_LONG_* as objfs_s3_conn_add() (_LONG_CA for a ca_file of
 * PATH_MAX bytes or more), else 0. */
unsigned objfs_s3_conn_from_mount_opts(struct objfs_s3_conn *c,
				       const struct objfs_mount_opts *mo);
/* Sets s3's endpoint, region (NULL when empty), path_style and, when c
 * has one, ca_file; strings borrowed from c. */
void objfs_s3_conn_to_store(const struct objfs_s3_conn *c,
			    struct objfs_s3_config *s3);

#endif
