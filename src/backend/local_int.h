/*
 * local_int.h - what the files of the local store share (local.c: layout,
 * get/put/copy/delete, create; local_list.c: listing; local_mpu.c:
 * multipart uploads; local_obj.c, below them all: encoding, object and
 * temp files, directories).  Not for use outside them;
 * the store's interface is backend.h.  See local.c for the on-disk layout
 * and the invariants.
 */
#ifndef OBJFS_BACKEND_LOCAL_INT_H
#define OBJFS_BACKEND_LOCAL_INT_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "backend/backend.h"

#define MARKER_NAME OBJFS_LOCAL_STORE_MARKER
#define HIDDEN_DIR ".objfs"
#define TMP_DIR ".objfs/tmp"
#define MPU_DIR ".objfs/mpu"
#define NAME_CHUNK 200          /* encoded bytes per on-disk name */
#define FOOTER_LEN 16
#define TRAILER_MAX (64 * 1024)
#define IO_BUF (1024 * 1024)
#define INSTALL_TRIES 64
#define UPLOAD_ID_LEN 32
#define SECRET_LEN 32
#define MAC_LEN 8
#define MD5_LEN 16
#define PUT_MAX (5ULL << 30)
#define STALE_TMP_S (24 * 3600)

struct local {
	int rootfd;
	unsigned char secret[SECRET_LEN];
};

/* An object opened for reading.  info is owned (obj_close). */
struct robj {
	int fd;
	uint64_t size;
	struct objfs_obj_info info;
};

/* An object being written to a temp file. */
struct wobj {
	int fd;
	char tmp[64];           /* path relative to the root */
	EVP_MD_CTX *md5;
	uint64_t size;
};

/* How a finished temp file is renamed into place. */
enum install {
	INSTALL_REPLACE,        /* create parents, replace what is there */
	INSTALL_NOREPLACE,      /* create parents, EEXIST if path exists */
	INSTALL_IN_PLACE,       /* parents must exist (else ENOENT) */
};

/* Compares two byte strings the way S3 orders keys. */
int local_bytes_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* Opens the directory at path (relative to the root; "" is the root).
 * 0 or an errno; a missing directory is ENOENT. */
int local_dir_open(struct local *L, const char *path, DIR **out);

/* The on-disk directory for a key prefix ending in '/' (n > 0), or "" for
 * the root. */
int local_dir_path(const char *key, size_t n, char *out, size_t cap);

/* Compares ETags, ignoring surrounding quotes on either side. */
bool local_etag_equal(const char *a, const char *b);

bool local_has_prefix(const char *s, size_t slen, const char *p, size_t plen);

/* Decodes n hex chars (n even) into out; 0 or EINVAL. */
int local_hex_decode(const char *in, size_t n, unsigned char *out);

void local_hex_encode(const unsigned char *in, size_t n, char *out);

void local_info_set_etag(struct objfs_obj_info *info, const char *etag,
			  uint64_t size);

int local_list(struct objfs_store *s, const struct objfs_list_req *req,
		      struct objfs_list_page *page);

int local_mpu_abort(struct objfs_store *s, const char *key,
			   const char *upload_id);

int local_mpu_complete(struct objfs_store *s, const char *key,
			      const char *upload_id,
			      const struct objfs_part *parts, size_t n,
			      struct objfs_obj_info *info);

int local_mpu_create(struct objfs_store *s, const char *key,
			    const struct objfs_put_opts *opts, char **upload_id);

int local_mpu_part(struct objfs_store *s, const char *key,
			  const char *upload_id, unsigned number,
			  const struct objfs_source *src, struct objfs_part *part);

int local_mpu_part_copy(struct objfs_store *s, const char *key,
			const char *upload_id, unsigned number,
			const struct objfs_part_copy *pc,
			struct objfs_part *part);

struct local *local_of(struct objfs_store *s);

/* Decodes an on-disk name (without its suffix) into out; EINVAL when it is
 * not one of ours. */
int local_name_decode(const char *name, size_t n, char *out, size_t cap,
		       size_t *outlen);

void local_obj_close(struct robj *ro);

/* Opens the object file at path (relative to the root) and reads its
 * trailer. */
int local_obj_open(struct local *L, const char *path, struct robj *ro);

/* local_obj_open() that also checks the If-Match ETag (ESTALE). */
int local_obj_open_match(struct local *L, const char *path,
			 const char *if_match, struct robj *ro);

/* The on-disk path of an object key: 0 or EINVAL. */
int local_obj_path(const char *key, char *path, size_t cap);

/* Removes what writers that crashed left in the temp area: files and
 * half-made uploads older than STALE_TMP_S (younger ones may be in use by
 * another process sharing the store). */
void local_sweep_tmp(struct local *L);

/* Closes and (unless it was installed) removes the temp file. */
void local_tmp_discard(struct local *L, struct wobj *w);

/* Copies bytes [0, size) of the open object ro into w. */
int local_tmp_fill_obj(struct wobj *w, struct robj *ro, char *buf);

/* Appends trailer and footer and makes the file durable. */
int local_tmp_finish(struct wobj *w, const char *etag,
		      const char *content_type, const struct objfs_meta *meta);

/* Renames the temp file to path; the temp file is gone afterwards whatever
 * happens.  Parents pruned by a concurrent delete are made again. */
int local_tmp_install(struct local *L, struct wobj *w, const char *path,
		       enum install how);

int local_tmp_open(struct local *L, struct wobj *w);

/* Writes src as a new object file at path (via a temp file) with the
 * given type and metadata; etag receives its ETag. */
int local_write_object(struct local *L, const char *path,
			const struct objfs_source *src, const char *ctype,
			const struct objfs_meta *meta, enum install how,
			char *etag, size_t cap);

#endif
