/*
 * local.c - a local directory that behaves like an S3 bucket: the
 * layout (below), get/head/put/copy/delete and the store's life cycle
 * here; listing in local_list.c, multipart uploads in local_mpu.c, and
 * below the three, what they share (name encoding, object and temp
 * files, directories) in local_obj.c, declared in local_int.h.
 *
 * The embedded default store and the test double of every layer above.
 *
 * On-disk layout (all paths relative to the root, reached with *at() calls
 * on one directory fd, so the root path length never matters):
 *
 *   .objfs-store              marker: this directory is a store root
 *   .objfs/tmp/               temp files (objects being written)
 *   .objfs/mpu/<id>/upload    a multipart upload: its key, type and metadata
 *   .objfs/mpu/<id>/NNNNN     its parts (same file format as objects)
 *   <name>/<name>/.../<name>  the objects
 *
 * A key is split at '/' into components.  Every component is percent-encoded
 * (only [A-Za-z0-9_.-] pass, and '.' never as the first byte of a name) and
 * given a type suffix: '+' an object, '@' a directory of deeper keys.  So
 * key "a" is "a+", key "a/b" is "a@/b+" and the marker "a/" is "a@/+": all
 * three coexist, ".." and "" become inert names, and no name starts with '.'
 * (the hidden area and the marker can never be addressed by a key).  An
 * encoded component longer than NAME_CHUNK bytes is cut into a chain of
 * continuation directories ('#' suffix) holding the rest of the name.
 *
 * Object file: data || trailer || footer.  The trailer is text lines
 * ("etag", "type", "meta" with percent-encoded values); the footer is 16
 * bytes "OBJFS1 %08x\n" giving the trailer length.
 *
 * Invariants:
 *   - an object file is written once, to a temp file (fsync'ed), and only
 *     then renamed into place: readers see a whole old or a whole new
 *     object, never a partial one; temp files live under .objfs/ and never
 *     appear in listings;
 *   - directories exist only while they hold something: a delete removes
 *     the now-empty parents (rmdir is atomic on an empty directory); a put
 *     that loses its parent to such a prune recreates it and renames again;
 *   - listing walks the tree in byte-wise key order (each directory is read
 *     and sorted by component, a directory sorting as component + "/"),
 *     starting at the deepest directory the prefix names; with a delimiter,
 *     a directory whose keys all roll up into one common prefix is reported
 *     without being walked (after checking it holds a key at all);
 *   - continuation tokens carry the last key or common prefix returned and
 *     a MAC keyed by a per-instance random secret: foreign tokens are EINVAL.
 * No state is kept in memory besides the root fd and the secret, so every
 * op is thread-safe.
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

/* ---- objects ------------------------------------------------------------ */

/* Moves ro's info into *info (when not NULL). */
static void obj_give_info(struct robj *ro, struct objfs_obj_info *info)
{
	if (info == NULL)
		return;
	objfs_obj_info_release(info);
	*info = ro->info;
	ro->info = (struct objfs_obj_info)OBJFS_OBJ_INFO_INIT;
}

/* Removes the now-empty directories above path, deepest first. */
static void prune_parents(struct local *L, const char *path)
{
	char buf[PATH_MAX];
	char *slash;
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return;
	memcpy(buf, path, n + 1);
	for (;;) {
		slash = strrchr(buf, '/');
		if (slash == NULL)
			break;
		*slash = '\0';
		if (unlinkat(L->rootfd, buf, AT_REMOVEDIR) != 0)
			break;
	}
}

/* ---- get / head / put / copy / del -------------------------------------- */

static int local_get(struct objfs_store *s, const char *key,
		     const struct objfs_get_opts *opts,
		     const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	struct local *L = local_of(s);
	struct objfs_get_opts all = OBJFS_GET_ALL;
	struct robj ro = { .fd = -1 };
	char path[PATH_MAX];
	char *buf = NULL;
	uint64_t end, pos;
	size_t n;
	int err;

	if (opts == NULL)
		opts = &all;
	err = local_obj_path(key, path, sizeof(path));
	if (err == 0)
		err = local_obj_open_match(L, path, opts->if_match, &ro);
	if (err != 0)
		return err;
	if (ro.size > 0 && opts->off >= ro.size) {
		err = ERANGE;
		goto out;
	}
	end = ro.size;
	if (opts->off < end && opts->len < end - opts->off)
		end = opts->off + opts->len;
	if (opts->off < end) {
		buf = malloc(IO_BUF);
		if (buf == NULL) {
			err = ENOMEM;
			goto out;
		}
	}
	for (pos = opts->off; pos < end; pos += n) {
		n = end - pos > IO_BUF ? IO_BUF : (size_t)(end - pos);
		err = objfs_pread_all(ro.fd, buf, n, pos);
		if (err == 0)
			err = sink->write_at(sink->arg, pos - opts->off, buf, n);
		if (err != 0)
			goto out;
	}
	obj_give_info(&ro, info);
out:
	free(buf);
	local_obj_close(&ro);
	return err;
}

static int local_head(struct objfs_store *s, const char *key,
		      struct objfs_obj_info *info)
{
	struct robj ro;
	char path[PATH_MAX];
	int err;

	err = local_obj_path(key, path, sizeof(path));
	if (err != 0)
		return err;
	err = local_obj_open(local_of(s), path, &ro);
	if (err != 0)
		return err;
	obj_give_info(&ro, info);
	local_obj_close(&ro);
	return 0;
}

static int local_put(struct objfs_store *s, const char *key,
		     const struct objfs_source *src,
		     const struct objfs_put_opts *opts,
		     struct objfs_obj_info *info)
{
	struct objfs_put_opts none = { NULL, NULL, false };
	char path[PATH_MAX];
	char etag[OBJFS_ETAG_MAX];
	int err;

	if (opts == NULL)
		opts = &none;
	err = local_obj_path(key, path, sizeof(path));
	if (err != 0)
		return err;
	if (src->size > PUT_MAX)
		return EFBIG;
	err = local_write_object(local_of(s), path, src, opts->content_type,
			   opts->meta, opts->if_none_match ? INSTALL_NOREPLACE :
			   INSTALL_REPLACE, etag, sizeof(etag));
	if (err == 0)
		local_info_set_etag(info, etag, src->size);
	return err;
}

static int local_copy(struct objfs_store *s, const char *src, const char *dst,
		      const struct objfs_copy_opts *opts,
		      struct objfs_obj_info *info)
{
	struct local *L = local_of(s);
	struct objfs_copy_opts def = { OBJFS_META_COPY, NULL, NULL, NULL };
	struct wobj w = { .fd = -1 };
	struct robj ro = { .fd = -1 };
	char spath[PATH_MAX], dpath[PATH_MAX];
	const struct objfs_meta *meta;
	const char *ctype;
	char *buf = NULL;
	int err;

	if (opts == NULL)
		opts = &def;
	err = local_obj_path(src, spath, sizeof(spath));
	if (err == 0)
		err = local_obj_path(dst, dpath, sizeof(dpath));
	if (err == 0)
		err = local_obj_open_match(L, spath, opts->if_match, &ro);
	if (err != 0)
		return err;
	if (opts->directive == OBJFS_META_REPLACE) {
		meta = opts->meta;
		ctype = opts->content_type;
	} else {
		meta = &ro.info.meta;
		ctype = ro.info.content_type;
	}
	buf = malloc(IO_BUF);
	if (buf == NULL) {
		err = ENOMEM;
		goto out;
	}
	err = local_tmp_open(L, &w);
	if (err == 0)
		err = local_tmp_fill_obj(&w, &ro, buf);
	if (err == 0)
		err = local_tmp_finish(&w, ro.info.etag, ctype, meta);
	if (err == 0)
		err = local_tmp_install(L, &w, dpath, INSTALL_REPLACE);
	if (err == 0)
		local_info_set_etag(info, ro.info.etag, ro.size);
out:
	local_tmp_discard(L, &w);
	local_obj_close(&ro);
	free(buf);
	return err;
}

static int local_del(struct objfs_store *s, const char *key)
{
	struct local *L = local_of(s);
	char path[PATH_MAX];

	if (local_obj_path(key, path, sizeof(path)) != 0)
		return EINVAL;
	if (unlinkat(L->rootfd, path, 0) != 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return errno;
	}
	prune_parents(L, path);
	return 0;
}

static int local_del_many(struct objfs_store *s, const char *const *keys,
			  size_t n, size_t *failed)
{
	size_t i, bad = 0;
	int err, first = 0;

	for (i = 0; i < n; i++) {
		err = local_del(s, keys[i]);
		if (err != 0) {
			bad++;
			if (first == 0)
				first = err;
		}
	}
	if (failed != NULL)
		*failed = bad;
	return first;
}

/* ---- create / destroy --------------------------------------------------- */

static void local_destroy(struct objfs_store *s)
{
	struct local *L = local_of(s);

	if (L != NULL) {
		close(L->rootfd);
		free(L);
	}
	free(s);
}

static const struct objfs_store_ops local_ops = {
	.name = "local",
	.get = local_get,
	.put = local_put,
	.head = local_head,
	.list = local_list,
	.copy = local_copy,
	.del = local_del,
	.del_many = local_del_many,
	.mpu_create = local_mpu_create,
	.mpu_part = local_mpu_part,
	.mpu_complete = local_mpu_complete,
	.mpu_part_copy = local_mpu_part_copy,
	.mpu_abort = local_mpu_abort,
	.destroy = local_destroy,
};

static int mkdir_ok(int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, 0700) != 0 && errno != EEXIST)
		return errno;
	return 0;
}

/* Creates dir and its missing parents (mode 0700). */
static int mkdir_p(const char *dir)
{
	char buf[PATH_MAX];
	size_t i, n = strlen(dir);

	if (n >= sizeof(buf))
		return ENAMETOOLONG;
	memcpy(buf, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return errno;
		buf[i] = dir[i];
	}
	return 0;
}

int objfs_local_store_create(const char *dir, struct objfs_log *log,
			     struct objfs_store **out)
{
	struct objfs_store *s = NULL;
	struct local *L = NULL;
	int fd, err;

	*out = NULL;
	if (dir == NULL || dir[0] == '\0')
		return EINVAL;
	err = mkdir_p(dir);
	if (err != 0)
		return err;
	s = calloc(1, sizeof(*s));
	L = calloc(1, sizeof(*L));
	if (s == NULL || L == NULL) {
		err = ENOMEM;
		goto fail_alloc;
	}
	L->rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (L->rootfd < 0) {
		err = errno;
		goto fail_alloc;
	}
	err = objfs_random_bytes(L->secret, sizeof(L->secret));
	if (err != 0)
		goto fail_root;
	err = mkdir_ok(L->rootfd, HIDDEN_DIR);
	if (err == 0)
		err = mkdir_ok(L->rootfd, TMP_DIR);
	if (err == 0)
		err = mkdir_ok(L->rootfd, MPU_DIR);
	if (err != 0)
		goto fail_root;
	fd = openat(L->rootfd, MARKER_NAME, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = errno;
		goto fail_root;
	}
	close(fd);
	local_sweep_tmp(L);
	s->ops = &local_ops;
	s->ctx = L;
	s->log = log;
	*out = s;
	objfs_debug(log, "local", "store at %s", dir);
	return 0;

fail_root:
	close(L->rootfd);
fail_alloc:
	free(L);
	free(s);
	objfs_error(log, "local", "cannot open store at %s: %s", dir,
		    objfs_strerror(err));
	return err;
}
