/*
 * local_mpu.c - multipart uploads of the local store (see local.c for the
 * layout): an upload is a directory under .objfs/mpu/ holding its key,
 * type and metadata and one file per part; completion concatenates the
 * parts into an object like any put.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "backend/backend.h"
#include "backend/local_int.h"
#include "common/buf.h"
#include "common/io.h"
#include "common/errors.h"
#include "common/hex.h"
#include "common/log.h"

/* ---- multipart uploads -------------------------------------------------- */

static bool upload_id_ok(const char *id)
{
	size_t i;

	for (i = 0; i < UPLOAD_ID_LEN; i++) {
		if (objfs_hexval(id[i]) < 0)
			return false;
	}
	return id[UPLOAD_ID_LEN] == '\0';
}

/* Opens the upload's record and checks it belongs to key. */
static int upload_open(struct local *L, const char *key, const char *id,
		       struct robj *rec)
{
	char path[PATH_MAX];
	char k[OBJFS_KEY_MAX + 1];
	size_t n = strlen(key);
	int err;

	if (id == NULL || !upload_id_ok(id))
		return ENOENT;
	snprintf(path, sizeof(path), "%s/%s/upload", MPU_DIR, id);
	err = local_obj_open(L, path, rec);
	if (err != 0)
		return err == ENOTDIR ? ENOENT : err;
	if (rec->size != n) {
		err = ENOENT;
		goto out;
	}
	err = objfs_pread_all(rec->fd, k, n, 0);
	if (err == 0 && memcmp(k, key, n) != 0)
		err = ENOENT;
out:
	if (err != 0)
		local_obj_close(rec);
	return err;
}

int local_mpu_create(struct objfs_store *s, const char *key,
			    const struct objfs_put_opts *opts, char **upload_id)
{
	struct local *L = local_of(s);
	struct objfs_source ks;
	unsigned char r[UPLOAD_ID_LEN / 2];
	char id[UPLOAD_ID_LEN + 1];
	char dir[128], final[128], rec[160];
	char etag[OBJFS_ETAG_MAX];
	bool made = false;
	int err;

	if (objfs_key_valid(key) != 0)
		return EINVAL;
	err = objfs_random_bytes(r, sizeof(r));
	if (err != 0)
		return err;
	local_hex_encode(r, sizeof(r), id);
	snprintf(dir, sizeof(dir), "%s/mpu-%s", TMP_DIR, id);
	snprintf(final, sizeof(final), "%s/%s", MPU_DIR, id);
	snprintf(rec, sizeof(rec), "%s/upload", dir);
	if (mkdirat(L->rootfd, dir, 0700) != 0) {
		err = errno;
		goto out;
	}
	made = true;
	objfs_source_mem(&ks, key, strlen(key));
	err = local_write_object(L, rec, &ks, opts != NULL ? opts->content_type : NULL,
			   opts != NULL ? opts->meta : NULL, INSTALL_IN_PLACE,
			   etag, sizeof(etag));
	if (err == 0 && renameat(L->rootfd, dir, L->rootfd, final) != 0)
		err = errno;
	if (err == 0) {
		*upload_id = strdup(id);
		if (*upload_id == NULL)
			err = ENOMEM;
	}
out:
	if (err != 0 && made) {
		unlinkat(L->rootfd, rec, 0);
		unlinkat(L->rootfd, dir, AT_REMOVEDIR);
		snprintf(rec, sizeof(rec), "%s/upload", final);
		unlinkat(L->rootfd, rec, 0);
		unlinkat(L->rootfd, final, AT_REMOVEDIR);
	}
	return err;
}

int local_mpu_part(struct objfs_store *s, const char *key,
			  const char *upload_id, unsigned number,
			  const struct objfs_source *src, struct objfs_part *part)
{
	struct local *L = local_of(s);
	struct robj rec = { .fd = -1 };
	char path[160];
	int err;

	if (objfs_key_valid(key) != 0 || number < 1 ||
	    number > OBJFS_MPU_MAX_PARTS)
		return EINVAL;
	if (src->size > OBJFS_MPU_MAX_PART)
		return EFBIG;
	err = upload_open(L, key, upload_id, &rec);
	if (err != 0)
		return err;
	local_obj_close(&rec);
	snprintf(path, sizeof(path), "%s/%s/%05u", MPU_DIR, upload_id, number);
	part->number = number;
	/* In place: a vanished (aborted) upload must not be recreated. */
	return local_write_object(L, path, src, NULL, NULL, INSTALL_IN_PLACE,
			    part->etag, sizeof(part->etag));
}

/* The part is written from the source object's file, as UploadPartCopy
 * does on the server: the caller sends nothing. */
int local_mpu_part_copy(struct objfs_store *s, const char *key,
			const char *upload_id, unsigned number,
			const struct objfs_part_copy *pc,
			struct objfs_part *part)
{
	struct local *L = local_of(s);
	struct robj rec = { .fd = -1 }, ro = { .fd = -1 };
	struct objfs_fd_source fdctx;
	struct objfs_source src;
	char path[PATH_MAX];
	int err;

	if (objfs_key_valid(key) != 0 || number < 1 ||
	    number > OBJFS_MPU_MAX_PARTS || pc == NULL || pc->len == 0)
		return EINVAL;
	if (pc->len > OBJFS_MPU_MAX_PART)
		return EFBIG;
	err = upload_open(L, key, upload_id, &rec);
	if (err != 0)
		return err;
	local_obj_close(&rec);
	err = local_obj_path(pc->src, path, sizeof(path));
	if (err == 0)
		err = local_obj_open_match(L, path, pc->if_match, &ro);
	if (err != 0)
		return err;
	if (pc->off >= ro.size || pc->len > ro.size - pc->off) {
		err = ERANGE;
		goto out;
	}
	objfs_source_fd(&src, &fdctx, ro.fd, pc->off, pc->len);
	snprintf(path, sizeof(path), "%s/%s/%05u", MPU_DIR, upload_id, number);
	part->number = number;
	err = local_write_object(L, path, &src, NULL, NULL, INSTALL_IN_PLACE,
				 part->etag, sizeof(part->etag));
out:
	local_obj_close(&ro);
	return err;
}

/* Removes the directory at path (relative to the root) and the files in
 * it (best effort). */
static void remove_flat_dir(struct local *L, const char *path)
{
	struct dirent *de;
	DIR *d;

	if (local_dir_open(L, path, &d) != 0)
		return;
	for (;;) {
		de = readdir(d);
		if (de == NULL)
			break;
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
	unlinkat(L->rootfd, path, AT_REMOVEDIR);
}

/* Removes an upload's directory and everything in it. */
static void upload_remove(struct local *L, const char *id)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", MPU_DIR, id);
	remove_flat_dir(L, path);
}

/* Removes what writers that crashed left in the temp area: files and
 * half-made uploads older than STALE_TMP_S (younger ones may be in use by
 * another process sharing the store). */
void local_sweep_tmp(struct local *L)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	time_t now = time(NULL);
	DIR *d;
	int fd;

	if (local_dir_open(L, TMP_DIR, &d) != 0)
		return;
	fd = dirfd(d);
	for (;;) {
		de = readdir(d);
		if (de == NULL)
			break;
		if (de->d_name[0] == '.' ||
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    now - st.st_mtime < STALE_TMP_S)
			continue;
		if (S_ISDIR(st.st_mode)) {
			snprintf(path, sizeof(path), "%s/%s", TMP_DIR, de->d_name);
			remove_flat_dir(L, path);
		} else {
			unlinkat(fd, de->d_name, 0);
		}
	}
	closedir(d);
}

int local_mpu_complete(struct objfs_store *s, const char *key,
			      const char *upload_id,
			      const struct objfs_part *parts, size_t n,
			      struct objfs_obj_info *info)
{
	struct local *L = local_of(s);
	struct wobj w = { .fd = -1 };
	struct robj rec = { .fd = -1 }, pr = { .fd = -1 };
	char path[PATH_MAX], ppath[160];
	char etag[OBJFS_ETAG_MAX];
	unsigned char md[EVP_MAX_MD_SIZE];
	char hex[2 * MD5_LEN + 1];
	unsigned int mdlen = 0;
	EVP_MD_CTX *all = NULL;
	unsigned char pmd[MD5_LEN];
	const char *pe;
	char *buf = NULL;
	size_t i;
	int err;

	if (local_obj_path(key, path, sizeof(path)) != 0)
		return EINVAL;
	err = upload_open(L, key, upload_id, &rec);
	if (err != 0)
		return err;
	if (n == 0 || n > OBJFS_MPU_MAX_PARTS) {
		err = EINVAL;
		goto out;
	}
	buf = malloc(IO_BUF);
	all = EVP_MD_CTX_new();
	if (buf == NULL || all == NULL) {
		err = ENOMEM;
		goto out;
	}
	if (EVP_DigestInit_ex(all, EVP_md5(), NULL) != 1) {
		err = EIO;
		goto out;
	}
	err = local_tmp_open(L, &w);
	for (i = 0; err == 0 && i < n; i++) {
		if (i > 0 && parts[i].number <= parts[i - 1].number) {
			err = EINVAL;
			break;
		}
		snprintf(ppath, sizeof(ppath), "%s/%s/%05u", MPU_DIR,
			 upload_id, parts[i].number);
		err = local_obj_open(L, ppath, &pr);
		if (err == ENOENT)
			err = EINVAL;   /* S3 InvalidPart */
		if (err != 0)
			break;
		pe = pr.info.etag[0] == '"' ? pr.info.etag + 1 : pr.info.etag;
		if (!local_etag_equal(parts[i].etag, pr.info.etag) ||
		    local_hex_decode(pe, 2 * MD5_LEN, pmd) != 0 ||
		    (i + 1 < n && pr.size < OBJFS_MPU_MIN_PART)) {
			err = EINVAL;
			local_obj_close(&pr);
			break;
		}
		if (EVP_DigestUpdate(all, pmd, sizeof(pmd)) != 1)
			err = EIO;
		if (err == 0)
			err = local_tmp_fill_obj(&w, &pr, buf);
		local_obj_close(&pr);
	}
	if (err != 0)
		goto out;
	if (w.size > PUT_MAX * 1024) {
		err = EFBIG;
		goto out;
	}
	if (EVP_DigestFinal_ex(all, md, &mdlen) != 1 || mdlen != MD5_LEN) {
		err = EIO;
		goto out;
	}
	local_hex_encode(md, MD5_LEN, hex);
	snprintf(etag, sizeof(etag), "\"%s-%zu\"", hex, n);
	err = local_tmp_finish(&w, etag, rec.info.content_type, &rec.info.meta);
	if (err == 0)
		err = local_tmp_install(L, &w, path, INSTALL_REPLACE);
	if (err != 0)
		goto out;
	local_info_set_etag(info, etag, w.size);
	upload_remove(L, upload_id);
out:
	local_tmp_discard(L, &w);
	EVP_MD_CTX_free(all);
	local_obj_close(&rec);
	free(buf);
	return err;
}

int local_mpu_abort(struct objfs_store *s, const char *key,
			   const char *upload_id)
{
	struct local *L = local_of(s);
	struct robj rec = { .fd = -1 };
	int err;

	if (objfs_key_valid(key) != 0)
		return EINVAL;
	err = upload_open(L, key, upload_id, &rec);
	if (err == ENOENT)
		return 0;
	if (err != 0)
		return err;
	local_obj_close(&rec);
	upload_remove(L, upload_id);
	return 0;
}
