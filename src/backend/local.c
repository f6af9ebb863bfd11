/*
 * local.c - a local directory that behaves like an S3 bucket: layout,
 * name encoding, object files, get/head/put/copy/delete and the store's
 * life cycle here; listing in local_list.c, multipart uploads in
 * local_mpu.c, what they share in local_int.h.
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



/* ---- small helpers ----------------------------------------------------- */

static const char hexd[] = "0123456789abcdef";

void local_hex_encode(const unsigned char *in, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hexd[in[i] >> 4];
		out[2 * i + 1] = hexd[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Decodes n hex chars (n even) into out; 0 or EINVAL. */
int local_hex_decode(const char *in, size_t n, unsigned char *out)
{
	size_t i;
	int hi, lo;

	if (n % 2 != 0)
		return EINVAL;
	for (i = 0; i < n; i += 2) {
		hi = objfs_hexval(in[i]);
		lo = objfs_hexval(in[i + 1]);
		if (hi < 0 || lo < 0)
			return EINVAL;
		out[i / 2] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* Compares two byte strings the way S3 orders keys. */
int local_bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

bool local_has_prefix(const char *s, size_t slen, const char *p, size_t plen)
{
	return slen >= plen && memcmp(s, p, plen) == 0;
}

/* Compares ETags, ignoring surrounding quotes on either side. */
bool local_etag_equal(const char *a, const char *b)
{
	size_t al, bl;

	if (*a == '"')
		a++;
	if (*b == '"')
		b++;
	al = strlen(a);
	bl = strlen(b);
	if (al > 0 && a[al - 1] == '"')
		al--;
	if (bl > 0 && b[bl - 1] == '"')
		bl--;
	return al == bl && memcmp(a, b, al) == 0;
}

/* ---- name and value encoding ------------------------------------------- */

static bool name_safe(unsigned char c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '-')
		return true;
	return c == '.' && !first;
}

static void sb_pct(struct objfs_buf *b, unsigned char c)
{
	char e[3] = { '%', hexd[c >> 4], hexd[c & 15] };

	objfs_buf_add(b, e, 3);
}

/* Appends the on-disk name chain of one key component with type suffix
 * ('+' object, '@' directory). */
static void path_put_comp(struct objfs_buf *b, const char *comp, size_t n,
			  char suffix)
{
	size_t i, chunk = 0;
	unsigned char c;
	bool safe;

	for (i = 0; i < n; i++) {
		c = (unsigned char)comp[i];
		safe = name_safe(c, chunk == 0);
		if (chunk + (safe ? 1 : 3) > NAME_CHUNK) {
			objfs_buf_add(b, "#/", 2);
			chunk = 0;
			safe = name_safe(c, true);
		}
		if (safe)
			objfs_buf_addc(b, (char)c);
		else
			sb_pct(b, c);
		chunk += safe ? 1 : 3;
	}
	objfs_buf_addc(b, suffix);
}

/* The on-disk path of key[0..n): every component but the last is a
 * directory; the last is an object (obj) or a directory. */
static int key_path(const char *key, size_t n, bool obj, char *out,
		    size_t cap)
{
	struct objfs_buf b;
	const char *p = key, *end = key + n, *slash;

	objfs_buf_fixed(&b, out, cap, ENAMETOOLONG);
	for (;;) {
		slash = memchr(p, '/', (size_t)(end - p));
		if (slash == NULL) {
			path_put_comp(&b, p, (size_t)(end - p), obj ? '+' : '@');
			break;
		}
		path_put_comp(&b, p, (size_t)(slash - p), '@');
		objfs_buf_addc(&b, '/');
		p = slash + 1;
	}
	return b.err;
}

/* The on-disk directory for a key prefix ending in '/' (n > 0), or "" for
 * the root. */
int local_dir_path(const char *key, size_t n, char *out, size_t cap)
{
	if (n == 0) {
		out[0] = '\0';
		return 0;
	}
	return key_path(key, n - 1, false, out, cap);
}

/* Decodes an on-disk name (without its suffix) into out; EINVAL when it is
 * not one of ours. */
int local_name_decode(const char *name, size_t n, char *out, size_t cap,
		       size_t *outlen)
{
	size_t i, o = 0;
	unsigned char c;
	int hi, lo;

	for (i = 0; i < n; i++) {
		if (o >= cap)
			return EINVAL;
		if (name[i] == '%') {
			if (i + 2 >= n)
				return EINVAL;
			hi = objfs_hexval(name[i + 1]);
			lo = objfs_hexval(name[i + 2]);
			if (hi < 0 || lo < 0)
				return EINVAL;
			c = (unsigned char)(hi << 4 | lo);
			/* only what path_put_comp() writes: lower-case hex,
			 * never a byte it writes as is, never NUL or '/' */
			if (name[i + 1] != hexd[hi] ||
			    name[i + 2] != hexd[lo] || name_safe(c, i == 0) ||
			    c == '\0' || c == '/')
				return EINVAL;
			out[o++] = (char)c;
			i += 2;
		} else if (name_safe((unsigned char)name[i], i == 0)) {
			out[o++] = name[i];
		} else {
			return EINVAL;
		}
	}
	*outlen = o;
	return 0;
}

/* Percent-encodes a metadata value for the trailer (no spaces, no
 * newlines, nothing outside printable ASCII). */
static void sb_value(struct objfs_buf *b, const char *s)
{
	unsigned char c;

	for (; *s != '\0'; s++) {
		c = (unsigned char)*s;
		if (c > 0x20 && c < 0x7f && c != '%')
			objfs_buf_addc(b, (char)c);
		else
			sb_pct(b, c);
	}
}

/* Decodes a trailer value in place. */
static int value_decode(char *s)
{
	char *o = s;
	int hi, lo;

	for (; *s != '\0'; s++) {
		if (*s != '%') {
			*o++ = *s;
			continue;
		}
		hi = s[1] != '\0' ? objfs_hexval(s[1]) : -1;
		lo = hi >= 0 && s[2] != '\0' ? objfs_hexval(s[2]) : -1;
		if (hi < 0 || lo < 0)
			return EIO;
		*o++ = (char)(hi << 4 | lo);
		s += 2;
	}
	*o = '\0';
	return 0;
}

/* ---- object files ------------------------------------------------------ */


void local_obj_close(struct robj *ro)
{
	if (ro->fd >= 0)
		close(ro->fd);
	ro->fd = -1;
	objfs_obj_info_release(&ro->info);
}

static int trailer_parse(char *t, struct objfs_obj_info *info)
{
	char *line, *nl, *sp, *val;
	int err = 0;

	for (line = t; *line != '\0'; line = nl + 1) {
		nl = strchr(line, '\n');
		if (nl == NULL)
			return EIO;
		*nl = '\0';
		sp = strchr(line, ' ');
		if (sp == NULL)
			return EIO;
		*sp = '\0';
		val = sp + 1;
		if (strcmp(line, "etag") == 0) {
			if (strlen(val) >= sizeof(info->etag))
				return EIO;
			snprintf(info->etag, sizeof(info->etag), "%s", val);
		} else if (strcmp(line, "type") == 0) {
			err = value_decode(val);
			if (err != 0)
				return err;
			free(info->content_type);
			info->content_type = strdup(val);
			if (info->content_type == NULL)
				return ENOMEM;
		} else if (strcmp(line, "meta") == 0) {
			sp = strchr(val, ' ');
			if (sp == NULL)
				return EIO;
			*sp = '\0';
			err = value_decode(val);
			if (err == 0)
				err = value_decode(sp + 1);
			if (err == 0)
				err = objfs_meta_set(&info->meta, val, sp + 1);
			if (err != 0)
				return err;
		}
	}
	return 0;
}

/* Opens the object file at path (relative to the root) and reads its
 * trailer. */
int local_obj_open(struct local *L, const char *path, struct robj *ro)
{
	char footer[FOOTER_LEN + 1];
	char *trailer = NULL;
	unsigned long tlen;
	struct stat st;
	char *end;
	int err = 0;

	ro->fd = -1;
	ro->info = (struct objfs_obj_info)OBJFS_OBJ_INFO_INIT;
	ro->fd = openat(L->rootfd, path, O_RDONLY | O_CLOEXEC);
	if (ro->fd < 0) {
		err = errno == ENOTDIR ? ENOENT : errno;
		if (err == ENAMETOOLONG)
			err = EINVAL;
		goto out;
	}
	if (fstat(ro->fd, &st) != 0) {
		err = errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < FOOTER_LEN) {
		err = EIO;
		goto out;
	}
	err = objfs_pread_all(ro->fd, footer, FOOTER_LEN,
			(uint64_t)st.st_size - FOOTER_LEN);
	if (err != 0)
		goto out;
	footer[FOOTER_LEN] = '\0';
	if (memcmp(footer, "OBJFS1 ", 7) != 0 || footer[15] != '\n') {
		err = EIO;
		goto out;
	}
	tlen = strtoul(footer + 7, &end, 16);
	if (end != footer + 15 || tlen > TRAILER_MAX ||
	    tlen + FOOTER_LEN > (uint64_t)st.st_size) {
		err = EIO;
		goto out;
	}
	trailer = malloc(tlen + 1);
	if (trailer == NULL) {
		err = ENOMEM;
		goto out;
	}
	ro->size = (uint64_t)st.st_size - tlen - FOOTER_LEN;
	err = objfs_pread_all(ro->fd, trailer, tlen, ro->size);
	if (err != 0)
		goto out;
	trailer[tlen] = '\0';
	err = trailer_parse(trailer, &ro->info);
	if (err != 0)
		goto out;
	ro->info.size = ro->size;
	ro->info.mtime = st.st_mtim;
out:
	free(trailer);
	if (err != 0)
		local_obj_close(ro);
	return err;
}

/* Moves ro's info into *info (when not NULL). */
static void obj_give_info(struct robj *ro, struct objfs_obj_info *info)
{
	if (info == NULL)
		return;
	objfs_obj_info_release(info);
	*info = ro->info;
	ro->info = (struct objfs_obj_info)OBJFS_OBJ_INFO_INIT;
}


int local_tmp_open(struct local *L, struct wobj *w)
{
	unsigned char r[12];
	char hex[25];
	int err;

	w->fd = -1;
	w->size = 0;
	w->md5 = EVP_MD_CTX_new();
	if (w->md5 == NULL)
		return ENOMEM;
	if (EVP_DigestInit_ex(w->md5, EVP_md5(), NULL) != 1)
		return EIO;
	err = objfs_random_bytes(r, sizeof(r));
	if (err != 0)
		return err;
	local_hex_encode(r, sizeof(r), hex);
	snprintf(w->tmp, sizeof(w->tmp), "%s/%s", TMP_DIR, hex);
	w->fd = openat(L->rootfd, w->tmp,
		       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w->fd < 0)
		return errno;
	return 0;
}

/* Closes and (unless it was installed) removes the temp file. */
void local_tmp_discard(struct local *L, struct wobj *w)
{
	if (w->fd >= 0) {
		close(w->fd);
		unlinkat(L->rootfd, w->tmp, 0);
	}
	w->fd = -1;
	EVP_MD_CTX_free(w->md5);
	w->md5 = NULL;
}

static int tmp_write(struct wobj *w, const void *data, size_t n)
{
	int err = objfs_write_all(w->fd, data, n);

	if (err != 0)
		return err;
	if (EVP_DigestUpdate(w->md5, data, n) != 1)
		return EIO;
	w->size += n;
	return 0;
}

/* "\"<hex md5>\"" of what was written. */
static int tmp_etag(struct wobj *w, char *etag, size_t cap)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	char hex[2 * MD5_LEN + 1];
	unsigned int mdlen = 0;

	if (EVP_DigestFinal_ex(w->md5, md, &mdlen) != 1 || mdlen != MD5_LEN)
		return EIO;
	local_hex_encode(md, MD5_LEN, hex);
	snprintf(etag, cap, "\"%s\"", hex);
	return 0;
}

/* Appends trailer and footer and makes the file durable. */
int local_tmp_finish(struct wobj *w, const char *etag,
		      const char *content_type, const struct objfs_meta *meta)
{
	char *t;
	struct objfs_buf b;
	char footer[FOOTER_LEN + 1];
	size_t i;
	int err = 0;

	t = malloc(TRAILER_MAX);
	if (t == NULL)
		return ENOMEM;
	objfs_buf_fixed(&b, t, TRAILER_MAX, EINVAL);
	objfs_buf_add(&b, "etag ", 5);
	objfs_buf_add(&b, etag, strlen(etag));
	objfs_buf_addc(&b, '\n');
	if (content_type != NULL) {
		objfs_buf_add(&b, "type ", 5);
		sb_value(&b, content_type);
		objfs_buf_addc(&b, '\n');
	}
	for (i = 0; meta != NULL && i < meta->n; i++) {
		objfs_buf_add(&b, "meta ", 5);
		sb_value(&b, meta->items[i].name);
		objfs_buf_addc(&b, ' ');
		sb_value(&b, meta->items[i].value);
		objfs_buf_addc(&b, '\n');
	}
	if (b.err != 0) {
		err = EINVAL;
		goto out;
	}
	snprintf(footer, sizeof(footer), "OBJFS1 %08zx\n", b.len);
	err = objfs_write_all(w->fd, t, b.len);
	if (err == 0)
		err = objfs_write_all(w->fd, footer, FOOTER_LEN);
	if (err == 0 && fsync(w->fd) != 0)
		err = errno;
out:
	free(t);
	return err;
}

/* Creates every directory of path (relative to the root) but its last
 * name.  A concurrent prune may remove one we made: the caller retries. */
static int make_parents(struct local *L, const char *path)
{
	char buf[PATH_MAX];
	size_t i, n = strlen(path);

	if (n >= sizeof(buf))
		return EINVAL;
	memcpy(buf, path, n + 1);
	for (i = 0; i < n; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		if (mkdirat(L->rootfd, buf, 0700) != 0 && errno != EEXIST)
			return errno;
		buf[i] = '/';
	}
	return 0;
}

static int rename_once(struct local *L, struct wobj *w, const char *path,
		       enum install how)
{
	int r;

	if (how == INSTALL_NOREPLACE) {
		r = renameat2(L->rootfd, w->tmp, L->rootfd, path,
			      RENAME_NOREPLACE);
		if (r != 0 && errno == EINVAL) {
			/* no RENAME_NOREPLACE here: best effort */
			if (faccessat(L->rootfd, path, F_OK, 0) == 0)
				return EEXIST;
			r = renameat(L->rootfd, w->tmp, L->rootfd, path);
		}
	} else {
		r = renameat(L->rootfd, w->tmp, L->rootfd, path);
	}
	if (r == 0)
		return 0;
	return errno == ENOTDIR ? ENOENT : errno;
}

/* Renames the temp file to path; the temp file is gone afterwards whatever
 * happens.  Parents pruned by a concurrent delete are made again. */
int local_tmp_install(struct local *L, struct wobj *w, const char *path,
		       enum install how)
{
	int tries, err = 0;

	close(w->fd);
	w->fd = -1;
	for (tries = 0; tries < INSTALL_TRIES; tries++) {
		err = how == INSTALL_IN_PLACE ? 0 : make_parents(L, path);
		if (err == 0)
			err = rename_once(L, w, path, how);
		if (err != ENOENT || how == INSTALL_IN_PLACE)
			break;
	}
	if (err != 0)
		unlinkat(L->rootfd, w->tmp, 0);
	if (err == ENAMETOOLONG)
		err = EINVAL;
	return err;
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

/* Copies src bytes [0, size) into w. */
static int tmp_fill_source(struct wobj *w, const struct objfs_source *src,
			   char *buf)
{
	uint64_t off;
	size_t n;
	int err = 0;

	for (off = 0; off < src->size; off += n) {
		n = src->size - off > IO_BUF ? IO_BUF : (size_t)(src->size - off);
		err = src->read_at(src->arg, off, buf, n);
		if (err == 0)
			err = tmp_write(w, buf, n);
		if (err != 0)
			break;
	}
	return err;
}

/* Copies bytes [0, size) of the open object ro into w. */
int local_tmp_fill_obj(struct wobj *w, struct robj *ro, char *buf)
{
	uint64_t off;
	size_t n;
	int err = 0;

	for (off = 0; off < ro->size; off += n) {
		n = ro->size - off > IO_BUF ? IO_BUF : (size_t)(ro->size - off);
		err = objfs_pread_all(ro->fd, buf, n, off);
		if (err == 0)
			err = tmp_write(w, buf, n);
		if (err != 0)
			break;
	}
	return err;
}

struct local *local_of(struct objfs_store *s)
{
	return s->ctx;
}

/* ---- get / head / put / copy / del -------------------------------------- */

/* Writes src as a new object file at path (via a temp file) with the
 * given type and metadata; etag receives its ETag. */
int local_write_object(struct local *L, const char *path,
			const struct objfs_source *src, const char *ctype,
			const struct objfs_meta *meta, enum install how,
			char *etag, size_t cap)
{
	struct wobj w = { .fd = -1 };
	char *buf = malloc(IO_BUF);
	int err;

	if (buf == NULL)
		return ENOMEM;
	err = local_tmp_open(L, &w);
	if (err == 0)
		err = tmp_fill_source(&w, src, buf);
	if (err == 0)
		err = tmp_etag(&w, etag, cap);
	if (err == 0)
		err = local_tmp_finish(&w, etag, ctype, meta);
	if (err == 0)
		err = local_tmp_install(L, &w, path, how);
	local_tmp_discard(L, &w);
	free(buf);
	return err;
}

/* The on-disk path of an object key: 0 or EINVAL. */
int local_obj_path(const char *key, char *path, size_t cap)
{
	if (objfs_key_valid(key) != 0 ||
	    key_path(key, strlen(key), true, path, cap) != 0)
		return EINVAL;
	return 0;
}

int local_obj_open_match(struct local *L, const char *path,
			 const char *if_match, struct robj *ro)
{
	int err = local_obj_open(L, path, ro);

	if (err == 0 && if_match != NULL && !local_etag_equal(if_match, ro->info.etag)) {
		local_obj_close(ro);
		err = ESTALE;
	}
	return err;
}

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

void local_info_set_etag(struct objfs_obj_info *info, const char *etag,
			  uint64_t size)
{
	if (info == NULL)
		return;
	objfs_obj_info_release(info);
	info->size = size;
	snprintf(info->etag, sizeof(info->etag), "%s", etag);
	clock_gettime(CLOCK_REALTIME, &info->mtime);
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
