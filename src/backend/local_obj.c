/*
 * local_obj.c - the local store's files, below local.c, local_list.c and
 * local_mpu.c, which all call it and none of which it calls: key and name
 * encoding, object files (data, trailer, footer), temp files and their
 * installation, directories.  The on-disk layout and the invariants are
 * described in local.c; declared in local_int.h.
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

/* ---- objects: shared by get, put, copy and multipart uploads ----------- */

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

/* Opens the directory at path (relative to the root; "" is the root).
 * 0 or an errno; a missing directory is ENOENT. */
int local_dir_open(struct local *L, const char *path, DIR **out)
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
