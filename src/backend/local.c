/*
 * local.c - a local directory that behaves like an S3 bucket.
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
#include "common/buf.h"
#include "common/io.h"
#include "common/errors.h"
#include "common/log.h"

#define MARKER_NAME ".objfs-store"
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

/* ---- small helpers ----------------------------------------------------- */

static const char hexd[] = "0123456789abcdef";

static void hex_encode(const unsigned char *in, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hexd[in[i] >> 4];
		out[2 * i + 1] = hexd[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes n hex chars (n even) into out; 0 or EINVAL. */
static int hex_decode(const char *in, size_t n, unsigned char *out)
{
	size_t i;
	int hi, lo;

	if (n % 2 != 0)
		return EINVAL;
	for (i = 0; i < n; i += 2) {
		hi = hexval(in[i]);
		lo = hexval(in[i + 1]);
		if (hi < 0 || lo < 0)
			return EINVAL;
		out[i / 2] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* Compares two byte strings the way S3 orders keys. */
static int bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static bool has_prefix(const char *s, size_t slen, const char *p, size_t plen)
{
	return slen >= plen && memcmp(s, p, plen) == 0;
}

/* Compares ETags, ignoring surrounding quotes on either side. */
static bool etag_equal(const char *a, const char *b)
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
static int dir_path(const char *key, size_t n, char *out, size_t cap)
{
	if (n == 0) {
		out[0] = '\0';
		return 0;
	}
	return key_path(key, n - 1, false, out, cap);
}

/* Decodes an on-disk name (without its suffix) into out; EINVAL when it is
 * not one of ours. */
static int name_decode(const char *name, size_t n, char *out, size_t cap,
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
			hi = hexval(name[i + 1]);
			lo = hexval(name[i + 2]);
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
		} else if (name_safe((unsigned char)name[i], false)) {
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
		hi = s[1] != '\0' ? hexval(s[1]) : -1;
		lo = hi >= 0 && s[2] != '\0' ? hexval(s[2]) : -1;
		if (hi < 0 || lo < 0)
			return EIO;
		*o++ = (char)(hi << 4 | lo);
		s += 2;
	}
	*o = '\0';
	return 0;
}

/* ---- object files ------------------------------------------------------ */

/* An object opened for reading.  info is owned (obj_close). */
struct robj {
	int fd;
	uint64_t size;
	struct objfs_obj_info info;
};

static void obj_close(struct robj *ro)
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
static int obj_open(struct local *L, const char *path, struct robj *ro)
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
		obj_close(ro);
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

/* An object being written to a temp file. */
struct wobj {
	int fd;
	char tmp[64];           /* path relative to the root */
	EVP_MD_CTX *md5;
	uint64_t size;
};

static int tmp_open(struct local *L, struct wobj *w)
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
	hex_encode(r, sizeof(r), hex);
	snprintf(w->tmp, sizeof(w->tmp), "%s/%s", TMP_DIR, hex);
	w->fd = openat(L->rootfd, w->tmp,
		       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w->fd < 0)
		return errno;
	return 0;
}

/* Closes and (unless it was installed) removes the temp file. */
static void tmp_discard(struct local *L, struct wobj *w)
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
	hex_encode(md, MD5_LEN, hex);
	snprintf(etag, cap, "\"%s\"", hex);
	return 0;
}

/* Appends trailer and footer and makes the file durable. */
static int tmp_finish(struct wobj *w, const char *etag,
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

/* How a finished temp file is renamed into place. */
enum install {
	INSTALL_REPLACE,        /* create parents, replace what is there */
	INSTALL_NOREPLACE,      /* create parents, EEXIST if path exists */
	INSTALL_IN_PLACE,       /* parents must exist (else ENOENT) */
};

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
static int tmp_install(struct local *L, struct wobj *w, const char *path,
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
static int tmp_fill_obj(struct wobj *w, struct robj *ro, char *buf)
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

static struct local *local_of(struct objfs_store *s)
{
	return s->ctx;
}

/* ---- get / head / put / copy / del -------------------------------------- */

/* Writes src as a new object file at path (via a temp file) with the
 * given type and metadata; etag receives its ETag. */
static int write_object(struct local *L, const char *path,
			const struct objfs_source *src, const char *ctype,
			const struct objfs_meta *meta, enum install how,
			char *etag, size_t cap)
{
	struct wobj w = { .fd = -1 };
	char *buf = malloc(IO_BUF);
	int err;

	if (buf == NULL)
		return ENOMEM;
	err = tmp_open(L, &w);
	if (err == 0)
		err = tmp_fill_source(&w, src, buf);
	if (err == 0)
		err = tmp_etag(&w, etag, cap);
	if (err == 0)
		err = tmp_finish(&w, etag, ctype, meta);
	if (err == 0)
		err = tmp_install(L, &w, path, how);
	tmp_discard(L, &w);
	free(buf);
	return err;
}

/* The on-disk path of an object key: 0 or EINVAL. */
static int obj_path(const char *key, char *path, size_t cap)
{
	if (objfs_key_valid(key) != 0 ||
	    key_path(key, strlen(key), true, path, cap) != 0)
		return EINVAL;
	return 0;
}

/* obj_open() that also checks the If-Match ETag (ESTALE). */
static int obj_open_match(struct local *L, const char *path,
			  const char *if_match, struct robj *ro)
{
	int err = obj_open(L, path, ro);

	if (err == 0 && if_match != NULL && !etag_equal(if_match, ro->info.etag)) {
		obj_close(ro);
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
	err = obj_path(key, path, sizeof(path));
	if (err == 0)
		err = obj_open_match(L, path, opts->if_match, &ro);
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
	obj_close(&ro);
	return err;
}

static int local_head(struct objfs_store *s, const char *key,
		      struct objfs_obj_info *info)
{
	struct robj ro;
	char path[PATH_MAX];
	int err;

	err = obj_path(key, path, sizeof(path));
	if (err != 0)
		return err;
	err = obj_open(local_of(s), path, &ro);
	if (err != 0)
		return err;
	obj_give_info(&ro, info);
	obj_close(&ro);
	return 0;
}

static void info_set_etag(struct objfs_obj_info *info, const char *etag,
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
	err = obj_path(key, path, sizeof(path));
	if (err != 0)
		return err;
	if (src->size > PUT_MAX)
		return EFBIG;
	err = write_object(local_of(s), path, src, opts->content_type,
			   opts->meta, opts->if_none_match ? INSTALL_NOREPLACE :
			   INSTALL_REPLACE, etag, sizeof(etag));
	if (err == 0)
		info_set_etag(info, etag, src->size);
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
	err = obj_path(src, spath, sizeof(spath));
	if (err == 0)
		err = obj_path(dst, dpath, sizeof(dpath));
	if (err == 0)
		err = obj_open_match(L, spath, opts->if_match, &ro);
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
	err = tmp_open(L, &w);
	if (err == 0)
		err = tmp_fill_obj(&w, &ro, buf);
	if (err == 0)
		err = tmp_finish(&w, ro.info.etag, ctype, meta);
	if (err == 0)
		err = tmp_install(L, &w, dpath, INSTALL_REPLACE);
	if (err == 0)
		info_set_etag(info, ro.info.etag, ro.size);
out:
	tmp_discard(L, &w);
	obj_close(&ro);
	free(buf);
	return err;
}

static int local_del(struct objfs_store *s, const char *key)
{
	struct local *L = local_of(s);
	char path[PATH_MAX];

	if (obj_path(key, path, sizeof(path)) != 0)
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

/* ---- listing ------------------------------------------------------------ */

/* One entry of a logical directory: a component (sorting as comp + "/" for
 * directories) and its on-disk path relative to the directory. */
struct item {
	char *skey;             /* comp, plus '/' for a directory */
	size_t sklen;
	bool dir;
	char *rel;              /* on-disk path below the directory */
};

struct items {
	struct item *v;
	size_t n, cap;
};

static void items_free(struct items *it)
{
	size_t i;

	for (i = 0; i < it->n; i++) {
		free(it->v[i].skey);
		free(it->v[i].rel);
	}
	free(it->v);
	it->v = NULL;
	it->n = it->cap = 0;
}

static int items_add(struct items *it, const char *comp, size_t clen,
		     bool dir, const char *rel)
{
	struct item *v;
	struct item x;

	if (it->n == it->cap) {
		it->cap = it->cap != 0 ? it->cap * 2 : 32;
		v = realloc(it->v, it->cap * sizeof(*v));
		if (v == NULL)
			return ENOMEM;
		it->v = v;
	}
	x.dir = dir;
	x.sklen = clen + (dir ? 1 : 0);
	x.skey = malloc(x.sklen + 1);
	x.rel = strdup(rel);
	if (x.skey == NULL || x.rel == NULL) {
		free(x.skey);
		free(x.rel);
		return ENOMEM;
	}
	memcpy(x.skey, comp, clen);
	if (dir)
		x.skey[clen] = '/';
	x.skey[x.sklen] = '\0';
	it->v[it->n++] = x;
	return 0;
}

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return bytes_cmp(x->skey, x->sklen, y->skey, y->sklen);
}

/* Opens the directory at path (relative to the root; "" is the root).
 * 0 or an errno; a missing directory is ENOENT. */
static int dir_open(struct local *L, const char *path, DIR **out)
{
	int fd, err;

	*out = NULL;
	fd = openat(L->rootfd, path[0] != '\0' ? path : ".",
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOTDIR ? ENOENT : errno;
	*out = fdopendir(fd);
	if (*out == NULL) {
		err = errno;
		close(fd);
		return err;
	}
	return 0;
}

/* Reads the on-disk directory `path` (continuation directories included)
 * into it.  comp is the component prefix carried by continuations and rel
 * the on-disk path from the logical directory.  A directory that vanished
 * (pruned) reads as empty. */
static int read_logical(struct local *L, const char *path, const char *comp,
			size_t clen, const char *rel, struct items *it)
{
	char cbuf[OBJFS_KEY_MAX + 1];
	char sub[PATH_MAX], subrel[PATH_MAX];
	struct dirent *de;
	DIR *d = NULL;
	size_t nlen, dlen;
	char suffix;
	int err = 0;

	err = dir_open(L, path, &d);
	if (err != 0)
		return err == ENOENT ? 0 : err;
	memcpy(cbuf, comp, clen);
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			err = errno;
			break;
		}
		if (de->d_name[0] == '.')
			continue;
		nlen = strlen(de->d_name);
		suffix = de->d_name[nlen - 1];
		if (suffix != '+' && suffix != '@' && suffix != '#')
			continue;
		if (name_decode(de->d_name, nlen - 1, cbuf + clen,
				sizeof(cbuf) - clen, &dlen) != 0)
			continue;
		if (snprintf(subrel, sizeof(subrel), "%s%s%s", rel,
			     rel[0] != '\0' ? "/" : "", de->d_name) >=
		    (int)sizeof(subrel))
			continue;
		if (suffix == '#') {
			if (snprintf(sub, sizeof(sub), "%s%s%s", path,
				     path[0] != '\0' ? "/" : "", de->d_name) >=
			    (int)sizeof(sub))
				continue;
			err = read_logical(L, sub, cbuf, clen + dlen, subrel, it);
		} else {
			err = items_add(it, cbuf, clen + dlen, suffix == '@',
					subrel);
		}
		if (err != 0)
			break;
	}
	closedir(d);
	return err;
}

/* The state of one list call. */
struct lister {
	struct local *L;
	const char *prefix;
	size_t plen;
	const char *delim;      /* NULL or non-empty */
	size_t dlen;
	const char *marker;     /* skip keys <= marker */
	size_t mlen;
	bool marker_cp;         /* also skip keys starting with marker */
	unsigned max;
	struct objfs_list_page *page;
	size_t cap_e, cap_p;
	unsigned count;
	bool truncated;
	char last_kind;         /* 'k' key, 'p' prefix, 0 nothing yet */
	const char *last;       /* the last thing returned (owned by page) */
	char key[OBJFS_KEY_MAX + 2];
	size_t klen;
};

static bool past_marker(const struct lister *ls, const char *k, size_t n)
{
	if (ls->marker == NULL)
		return true;
	if (bytes_cmp(k, n, ls->marker, ls->mlen) <= 0)
		return false;
	return !(ls->marker_cp && has_prefix(k, n, ls->marker, ls->mlen));
}

/* Whether cp[0..n) is the common prefix returned last. */
static bool is_last_prefix(const struct lister *ls, const char *cp, size_t n)
{
	return ls->last_kind == 'p' && strlen(ls->last) == n &&
	       memcmp(ls->last, cp, n) == 0;
}

/* Room for one more result; false (and truncated) when the page is full. */
static bool room(struct lister *ls)
{
	if (ls->count < ls->max)
		return true;
	ls->truncated = true;
	return false;
}

static int emit_prefix(struct lister *ls, const char *cp, size_t n)
{
	struct objfs_list_page *pg = ls->page;
	char **v;
	char *d;

	if (is_last_prefix(ls, cp, n))
		return 0;
	if (!room(ls))
		return 0;
	if (pg->n_prefixes == ls->cap_p) {
		ls->cap_p = ls->cap_p != 0 ? ls->cap_p * 2 : 16;
		v = realloc(pg->prefixes, ls->cap_p * sizeof(*v));
		if (v == NULL)
			return ENOMEM;
		pg->prefixes = v;
	}
	d = strndup(cp, n);
	if (d == NULL)
		return ENOMEM;
	pg->prefixes[pg->n_prefixes++] = d;
	ls->count++;
	ls->last_kind = 'p';
	ls->last = d;
	return 0;
}

static int emit_key(struct lister *ls, const char *relpath)
{
	struct objfs_list_page *pg = ls->page;
	struct objfs_list_entry *v, *e;
	struct robj ro;
	int err;

	if (!room(ls))
		return 0;
	err = obj_open(ls->L, relpath, &ro);
	if (err == ENOENT)
		return 0;       /* deleted while we listed */
	if (err != 0)
		return err;
	if (pg->n_entries == ls->cap_e) {
		ls->cap_e = ls->cap_e != 0 ? ls->cap_e * 2 : 64;
		v = realloc(pg->entries, ls->cap_e * sizeof(*v));
		if (v == NULL) {
			err = ENOMEM;
			goto out;
		}
		pg->entries = v;
	}
	e = &pg->entries[pg->n_entries];
	e->key = strndup(ls->key, ls->klen);
	if (e->key == NULL) {
		err = ENOMEM;
		goto out;
	}
	e->size = ro.size;
	e->mtime = ro.info.mtime;
	snprintf(e->etag, sizeof(e->etag), "%s", ro.info.etag);
	pg->n_entries++;
	ls->count++;
	ls->last_kind = 'k';
	ls->last = e->key;
out:
	obj_close(&ro);
	return err;
}

/* The common prefix of key[0..n) when the delimiter occurs after the
 * prefix within it: its length, else 0. */
static size_t rollup(const struct lister *ls, const char *k, size_t n)
{
	const char *d;

	if (ls->delim == NULL || n < ls->plen)
		return 0;
	d = memmem(k + ls->plen, n - ls->plen, ls->delim, ls->dlen);
	if (d == NULL)
		return 0;
	return (size_t)(d - k) + ls->dlen;
}

/* Reads the logical directory at path, sorted in key order. */
static int read_sorted(struct local *L, const char *path, struct items *it)
{
	int err = read_logical(L, path, "", 0, "", it);

	if (err == 0 && it->n > 1)
		qsort(it->v, it->n, sizeof(*it->v), item_cmp);
	return err;
}

/* Makes ls->key the key (or directory prefix) of item x of the directory
 * at path whose keys start with ls->key[0..klen), and sub its on-disk
 * path.  False when either would be too long (no such key can exist). */
static bool item_enter(struct lister *ls, size_t klen, const char *path,
		       const struct item *x, char *sub, size_t cap)
{
	if (klen + x->sklen > OBJFS_KEY_MAX + 1)
		return false;
	memcpy(ls->key + klen, x->skey, x->sklen);
	ls->klen = klen + x->sklen;
	return snprintf(sub, cap, "%s%s%s", path, path[0] != '\0' ? "/" : "",
			x->rel) < (int)cap;
}

/* Whether the on-disk directory at path holds any object at all.  Stops
 * at the first one found (directories hold something unless a delete is
 * pruning them, so this rarely reads more than a few names). */
static int any_key(struct local *L, const char *path, bool *found)
{
	char *sub = NULL;
	struct dirent *de;
	DIR *d = NULL;
	size_t n;
	int err = 0;

	*found = false;
	err = dir_open(L, path, &d);
	if (err != 0)
		return err == ENOENT ? 0 : err;
	/* on the heap: this recurses once per key component */
	sub = malloc(PATH_MAX);
	if (sub == NULL) {
		err = ENOMEM;
		goto out;
	}
	while (!*found && err == 0) {
		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			err = errno;
			break;
		}
		n = strlen(de->d_name);
		if (de->d_name[0] == '.')
			continue;
		if (de->d_name[n - 1] == '+')
			*found = true;
		else if ((de->d_name[n - 1] == '@' || de->d_name[n - 1] == '#') &&
			 snprintf(sub, PATH_MAX, "%s/%s", path, de->d_name) <
			 PATH_MAX)
			err = any_key(L, sub, found);
	}
out:
	if (d != NULL)
		closedir(d);
	free(sub);
	return err;
}

/* Whether the directory at path (keys starting with ls->key) holds a key
 * past the marker.  Tries the greatest keys first. */
static int has_key(struct lister *ls, const char *path, bool *found)
{
	struct items it = { 0 };
	char *sub;
	size_t i, klen = ls->klen;
	int err;

	*found = false;
	/* The whole directory is past the marker: any key will do. */
	if (past_marker(ls, ls->key, ls->klen) &&
	    (ls->marker == NULL ||
	     !has_prefix(ls->marker, ls->mlen, ls->key, ls->klen)))
		return any_key(ls->L, path, found);
	sub = malloc(PATH_MAX);         /* recursion: not on the stack */
	if (sub == NULL)
		return ENOMEM;
	err = read_sorted(ls->L, path, &it);
	for (i = it.n; err == 0 && i-- > 0 && !*found;) {
		if (!item_enter(ls, klen, path, &it.v[i], sub, PATH_MAX))
			continue;
		if (it.v[i].dir)
			err = has_key(ls, sub, found);
		else
			*found = past_marker(ls, ls->key, ls->klen);
	}
	ls->klen = klen;
	items_free(&it);
	free(sub);
	return err;
}

/* Lists one object, ls->key, stored at path. */
static int walk_key(struct lister *ls, const char *path)
{
	const char *k = ls->key;
	size_t cpl;

	if (!has_prefix(k, ls->klen, ls->prefix, ls->plen) ||
	    !past_marker(ls, k, ls->klen))
		return 0;
	cpl = rollup(ls, k, ls->klen);
	return cpl > 0 ? emit_prefix(ls, k, cpl) : emit_key(ls, path);
}

static int walk(struct lister *ls, const char *path);

/* Lists the directory at path holding the keys ls->key + "...": skips it
 * when the prefix or the marker rule it out, reports it as one common
 * prefix when all its keys roll up into one, else walks it. */
static int walk_dir(struct lister *ls, const char *path)
{
	const char *k = ls->key;
	size_t cpl;
	bool found;
	int err;

	if (!has_prefix(k, ls->klen, ls->prefix, ls->plen) &&
	    !has_prefix(ls->prefix, ls->plen, k, ls->klen))
		return 0;
	if (ls->marker != NULL &&
	    !has_prefix(ls->marker, ls->mlen, k, ls->klen) &&
	    bytes_cmp(k, ls->klen, ls->marker, ls->mlen) < 0)
		return 0;
	if (ls->marker_cp && has_prefix(k, ls->klen, ls->marker, ls->mlen))
		return 0;
	cpl = rollup(ls, k, ls->klen);
	if (cpl == 0)
		return walk(ls, path);
	if (is_last_prefix(ls, k, cpl))
		return 0;
	err = has_key(ls, path, &found);
	if (err == 0 && found)
		err = emit_prefix(ls, k, cpl);
	return err;
}

/* Walks the directory at path (keys starting with ls->key[0..klen)) in
 * key order. */
static int walk(struct lister *ls, const char *path)
{
	struct items it = { 0 };
	char *sub = malloc(PATH_MAX);   /* recursion: not on the stack */
	size_t i, klen = ls->klen;
	int err;

	if (sub == NULL)
		return ENOMEM;
	err = read_sorted(ls->L, path, &it);
	for (i = 0; err == 0 && i < it.n && !ls->truncated; i++) {
		if (!item_enter(ls, klen, path, &it.v[i], sub, PATH_MAX))
			continue;
		err = it.v[i].dir ? walk_dir(ls, sub) : walk_key(ls, sub);
	}
	ls->klen = klen;
	items_free(&it);
	free(sub);
	return err;
}

static int token_mac(struct local *L, char kind, const char *pos, size_t n,
		     char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int err = 0;

	if (c == NULL)
		return ENOMEM;
	if (EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(c, L->secret, sizeof(L->secret)) != 1 ||
	    EVP_DigestUpdate(c, &kind, 1) != 1 ||
	    EVP_DigestUpdate(c, pos, n) != 1 ||
	    EVP_DigestFinal_ex(c, md, &mdlen) != 1)
		err = EIO;
	else
		hex_encode(md, MAC_LEN, out);
	EVP_MD_CTX_free(c);
	return err;
}

/* Token: "1" kind ":" hex(position) ":" hex(mac). */
static int token_make(struct local *L, char kind, const char *pos, char **out)
{
	size_t n = strlen(pos);
	char mac[2 * MAC_LEN + 1];
	char *t;
	int err;

	err = token_mac(L, kind, pos, n, mac);
	if (err != 0)
		return err;
	t = malloc(2 * n + 2 * MAC_LEN + 5);
	if (t == NULL)
		return ENOMEM;
	t[0] = '1';
	t[1] = kind;
	t[2] = ':';
	hex_encode((const unsigned char *)pos, n, t + 3);
	t[3 + 2 * n] = ':';
	memcpy(t + 4 + 2 * n, mac, 2 * MAC_LEN + 1);
	*out = t;
	return 0;
}

/* Parses a token into pos (caller buffer of OBJFS_KEY_MAX + 2). */
static int token_parse(struct local *L, const char *t, char *kind, char *pos,
		       size_t *plen)
{
	char mac[2 * MAC_LEN + 1];
	const char *c2;
	size_t hlen;

	if (t[0] != '1' || (t[1] != 'k' && t[1] != 'p') || t[2] != ':')
		return EINVAL;
	c2 = strchr(t + 3, ':');
	if (c2 == NULL)
		return EINVAL;
	hlen = (size_t)(c2 - (t + 3));
	if (hlen == 0 || hlen / 2 > OBJFS_KEY_MAX + 1 ||
	    hex_decode(t + 3, hlen, (unsigned char *)pos) != 0)
		return EINVAL;
	*plen = hlen / 2;
	pos[*plen] = '\0';
	if (memchr(pos, '\0', *plen) != NULL)
		return EINVAL;
	if (token_mac(L, t[1], pos, *plen, mac) != 0)
		return EINVAL;
	if (strlen(c2 + 1) != 2 * MAC_LEN || memcmp(c2 + 1, mac, 2 * MAC_LEN) != 0)
		return EINVAL;
	*kind = t[1];
	return 0;
}

static int local_list(struct objfs_store *s, const struct objfs_list_req *req,
		      struct objfs_list_page *page)
{
	struct local *L = local_of(s);
	struct lister *ls;
	char pos[OBJFS_KEY_MAX + 2];
	char path[PATH_MAX];
	const char *slash;
	char kind = 0;
	size_t i;
	int err = 0;

	*page = (struct objfs_list_page)OBJFS_LIST_PAGE_INIT;
	ls = calloc(1, sizeof(*ls));
	if (ls == NULL)
		return ENOMEM;
	ls->L = L;
	ls->page = page;
	ls->prefix = req->prefix != NULL ? req->prefix : "";
	ls->plen = strlen(ls->prefix);
	if (req->delimiter != NULL && req->delimiter[0] != '\0') {
		ls->delim = req->delimiter;
		ls->dlen = strlen(ls->delim);
	}
	ls->max = req->max_keys == 0 || req->max_keys > 1000 ? 1000 : req->max_keys;
	if (req->continuation != NULL) {
		err = token_parse(L, req->continuation, &kind, pos, &ls->mlen);
		if (err != 0)
			goto out;
		ls->marker = pos;
		ls->marker_cp = kind == 'p';
	} else if (req->start_after != NULL && req->start_after[0] != '\0') {
		ls->marker = req->start_after;
		ls->mlen = strlen(req->start_after);
	}
	if (ls->plen > OBJFS_KEY_MAX)
		goto out;       /* no key can match */
	/* Start at the deepest directory the prefix names. */
	slash = memrchr(ls->prefix, '/', ls->plen);
	i = slash != NULL ? (size_t)(slash - ls->prefix) + 1 : 0;
	err = dir_path(ls->prefix, i, path, sizeof(path));
	if (err != 0) {
		err = 0;        /* too long to exist */
		goto out;
	}
	memcpy(ls->key, ls->prefix, i);
	ls->klen = i;
	err = walk(ls, path);
	if (err == 0 && ls->truncated)
		err = token_make(L, ls->last_kind, ls->last, &page->next);
out:
	if (err != 0)
		objfs_list_page_release(page);
	free(ls);
	return err;
}

/* ---- multipart uploads -------------------------------------------------- */

static bool upload_id_ok(const char *id)
{
	size_t i;

	for (i = 0; i < UPLOAD_ID_LEN; i++) {
		if (hexval(id[i]) < 0)
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
	err = obj_open(L, path, rec);
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
		obj_close(rec);
	return err;
}

static int local_mpu_create(struct objfs_store *s, const char *key,
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
	hex_encode(r, sizeof(r), id);
	snprintf(dir, sizeof(dir), "%s/mpu-%s", TMP_DIR, id);
	snprintf(final, sizeof(final), "%s/%s", MPU_DIR, id);
	snprintf(rec, sizeof(rec), "%s/upload", dir);
	if (mkdirat(L->rootfd, dir, 0700) != 0) {
		err = errno;
		goto out;
	}
	made = true;
	objfs_source_mem(&ks, key, strlen(key));
	err = write_object(L, rec, &ks, opts != NULL ? opts->content_type : NULL,
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

static int local_mpu_part(struct objfs_store *s, const char *key,
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
	obj_close(&rec);
	snprintf(path, sizeof(path), "%s/%s/%05u", MPU_DIR, upload_id, number);
	part->number = number;
	/* In place: a vanished (aborted) upload must not be recreated. */
	return write_object(L, path, src, NULL, NULL, INSTALL_IN_PLACE,
			    part->etag, sizeof(part->etag));
}

/* Removes the directory at path (relative to the root) and the files in
 * it (best effort). */
static void remove_flat_dir(struct local *L, const char *path)
{
	struct dirent *de;
	DIR *d;

	if (dir_open(L, path, &d) != 0)
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
static void sweep_tmp(struct local *L)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	time_t now = time(NULL);
	DIR *d;
	int fd;

	if (dir_open(L, TMP_DIR, &d) != 0)
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

static int local_mpu_complete(struct objfs_store *s, const char *key,
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

	if (obj_path(key, path, sizeof(path)) != 0)
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
	err = tmp_open(L, &w);
	for (i = 0; err == 0 && i < n; i++) {
		if (i > 0 && parts[i].number <= parts[i - 1].number) {
			err = EINVAL;
			break;
		}
		snprintf(ppath, sizeof(ppath), "%s/%s/%05u", MPU_DIR,
			 upload_id, parts[i].number);
		err = obj_open(L, ppath, &pr);
		if (err == ENOENT)
			err = EINVAL;   /* S3 InvalidPart */
		if (err != 0)
			break;
		pe = pr.info.etag[0] == '"' ? pr.info.etag + 1 : pr.info.etag;
		if (!etag_equal(parts[i].etag, pr.info.etag) ||
		    hex_decode(pe, 2 * MD5_LEN, pmd) != 0 ||
		    (i + 1 < n && pr.size < OBJFS_MPU_MIN_PART)) {
			err = EINVAL;
			obj_close(&pr);
			break;
		}
		if (EVP_DigestUpdate(all, pmd, sizeof(pmd)) != 1)
			err = EIO;
		if (err == 0)
			err = tmp_fill_obj(&w, &pr, buf);
		obj_close(&pr);
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
	hex_encode(md, MD5_LEN, hex);
	snprintf(etag, sizeof(etag), "\"%s-%zu\"", hex, n);
	err = tmp_finish(&w, etag, rec.info.content_type, &rec.info.meta);
	if (err == 0)
		err = tmp_install(L, &w, path, INSTALL_REPLACE);
	if (err != 0)
		goto out;
	info_set_etag(info, etag, w.size);
	upload_remove(L, upload_id);
out:
	tmp_discard(L, &w);
	EVP_MD_CTX_free(all);
	obj_close(&rec);
	free(buf);
	return err;
}

static int local_mpu_abort(struct objfs_store *s, const char *key,
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
	obj_close(&rec);
	upload_remove(L, upload_id);
	return 0;
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
	sweep_tmp(L);
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
