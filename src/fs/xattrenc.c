/*
 * xattrenc.c - the encoding of user extended attributes in object
 * metadata (see xattr.h).  No state.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "backend/backend.h"
#include "fs/xattr.h"

#define PREFIX_LEN (sizeof(OBJFS_XATTR_PREFIX) - 1)
#define SUFFIX_MAX (OBJFS_XATTR_NAME_MAX - PREFIX_LEN)

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_val(char c)
{
	const char *p = c != '\0' ? strchr(b64, c) : NULL;

	return p != NULL ? (int)(p - b64) : -1;
}

/* The decoded size of n base64 bytes, or -1 when they are not valid
 * padded base64; out (when not NULL) receives the bytes. */
static long b64_decode(const char *s, size_t n, unsigned char *out)
{
	size_t i, o = 0;

	if (n % 4 != 0)
		return -1;
	for (i = 0; i < n; i += 4) {
		int v[4], k, pad = 0;

		for (k = 0; k < 4; k++) {
			if (s[i + k] == '=' && i + 4 == n && k >= 2) {
				v[k] = 0;
				pad++;
			} else if (pad > 0 || (v[k] = b64_val(s[i + k])) < 0) {
				return -1;
			}
		}
		if (out != NULL) {
			out[o] = (unsigned char)(v[0] << 2 | v[1] >> 4);
			if (pad < 2)
				out[o + 1] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
			if (pad < 1)
				out[o + 2] = (unsigned char)((v[2] & 3) << 6 | v[3]);
		}
		o += 3 - (size_t)pad;
	}
	return (long)o;
}

static size_t b64_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

/* base64 of in (n bytes) at out (b64_len(n) bytes, no NUL). */
static void b64_encode(const unsigned char *in, size_t n, char *out)
{
	size_t i, o = 0;

	for (i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16;

		if (i + 1 < n)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
}

static bool name_plain(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes the %XX name s (n bytes) into out (SUFFIX_MAX + 1); its length
 * or -1 when malformed. */
static long name_decode(const char *s, size_t n, char *out)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		int hi, lo;

		if (o >= SUFFIX_MAX)
			return -1;
		if (s[i] != '%') {
			if (!name_plain((unsigned char)s[i]))
				return -1;
			out[o++] = s[i];
			continue;
		}
		if (i + 2 >= n)
			return -1;
		hi = hexval(s[i + 1]);
		lo = hexval(s[i + 2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return -1;
		out[o++] = (char)(hi << 4 | lo);
		i += 2;
	}
	out[o] = '\0';
	return o > 0 ? (long)o : -1;
}

/* One entry of an encoded string. */
struct entry {
	const char *start;      /* the entry in the string */
	size_t len;
	char name[SUFFIX_MAX + 1];
	size_t nlen;
	const char *val;        /* base64 */
	size_t vlen;
};

/* The entry at *p (moved past it and its comma).  1: one, 0: the end,
 * -1: malformed. */
static int next_entry(const char **p, struct entry *e)
{
	const char *s = *p, *end, *colon;
	long n;

	if (*s == '\0')
		return 0;
	end = strchr(s, ',');
	if (end == NULL)
		end = s + strlen(s);
	colon = memchr(s, ':', (size_t)(end - s));
	if (colon == NULL)
		return -1;
	n = name_decode(s, (size_t)(colon - s), e->name);
	if (n < 0)
		return -1;
	e->nlen = (size_t)n;
	e->start = s;
	e->len = (size_t)(end - s);
	e->val = colon + 1;
	e->vlen = (size_t)(end - colon - 1);
	if (b64_decode(e->val, e->vlen, NULL) < 0)
		return -1;
	if (*end == ',' && end[1] == '\0')
		return -1;
	*p = *end == ',' ? end + 1 : end;
	return 1;
}

/* Finds the entry called suffix: 1 (in *e), 0 (none) or -1 (enc
 * malformed). */
static int find(const char *enc, const char *suffix, struct entry *e)
{
	const char *p = enc != NULL ? enc : "";
	int r;

	while ((r = next_entry(&p, e)) == 1) {
		if (strcmp(e->name, suffix) == 0)
			return 1;
	}
	return r;
}

int objfs_xattr_name_check(const char *name)
{
	size_t n = strlen(name);

	if (strncmp(name, OBJFS_XATTR_PREFIX, PREFIX_LEN) != 0)
		return ENOTSUP;
	if (n == PREFIX_LEN)
		return EINVAL;
	if (n > OBJFS_XATTR_NAME_MAX)
		return ERANGE;
	return 0;
}

/* The entry of the attribute name (with its "user." prefix) in enc: 0,
 * the name's own error, EINVAL (enc is malformed) or ENODATA. */
static int find_named(const char *enc, const char *name, struct entry *e)
{
	int err = objfs_xattr_name_check(name), r;

	if (err != 0)
		return err;
	r = find(enc, name + PREFIX_LEN, e);
	return r < 0 ? EINVAL : r == 0 ? ENODATA : 0;
}

int objfs_xattr_get(const char *enc, const char *name, void *buf,
		    size_t cap, size_t *len)
{
	struct entry e;
	long n;
	int err = find_named(enc, name, &e);

	if (err != 0)
		return err;
	n = b64_decode(e.val, e.vlen, NULL);
	*len = (size_t)n;
	if (cap == 0)
		return 0;
	if ((size_t)n > cap)
		return ERANGE;
	b64_decode(e.val, e.vlen, buf);
	return 0;
}

int objfs_xattr_list(const char *enc, char *buf, size_t cap, size_t *len)
{
	const char *p = enc != NULL ? enc : "";
	struct entry e;
	size_t used = 0;
	int r;

	while ((r = next_entry(&p, &e)) == 1) {
		size_t need = PREFIX_LEN + e.nlen + 1;

		if (cap > 0 && used + need <= cap) {
			memcpy(buf + used, OBJFS_XATTR_PREFIX, PREFIX_LEN);
			memcpy(buf + used + PREFIX_LEN, e.name, e.nlen + 1);
		}
		used += need;
	}
	if (r < 0)
		return EINVAL;
	*len = used;
	return cap > 0 && used > cap ? ERANGE : 0;
}

/* enc without the entry e (NULL: none), with room for extra more bytes:
 * a new string (NULL when out of memory); *n its length. */
static char *without(const char *enc, const struct entry *e, size_t extra,
		     size_t *n)
{
	size_t el = enc != NULL ? strlen(enc) : 0, o = 0;
	char *s = malloc(el + extra + 2);

	if (s == NULL)
		return NULL;
	if (e == NULL) {
		memcpy(s, enc != NULL ? enc : "", el);
		o = el;
	} else {
		size_t before = (size_t)(e->start - enc);
		const char *after = e->start + e->len;

		memcpy(s, enc, before);
		o = before;
		if (*after == ',')
			after++;
		memcpy(s + o, after, strlen(after));
		o += strlen(after);
		if (o > 0 && s[o - 1] == ',')
			o--;
	}
	s[o] = '\0';
	*n = o;
	return s;
}

int objfs_xattr_set(const char *enc, const char *name, const void *value,
		    size_t len, int flags, char **out)
{
	const char *suffix = name + PREFIX_LEN;
	size_t i, nlen = 0, elen, n;
	struct entry e;
	char *s;
	int err = objfs_xattr_name_check(name), r;

	if (err != 0)
		return err;
	for (i = 0; suffix[i] != '\0'; i++)
		nlen += name_plain((unsigned char)suffix[i]) ? 1 : 3;
	r = find(enc, suffix, &e);
	if (r < 0)
		return EINVAL;
	if (r == 1 && (flags & XATTR_CREATE))
		return EEXIST;
	if (r == 0 && (flags & XATTR_REPLACE))
		return ENODATA;
	if (len > OBJFS_XATTR_ENC_MAX)
		return E2BIG;
	elen = nlen + 1 + b64_len(len);
	if (elen > OBJFS_XATTR_ENC_MAX)
		return E2BIG;
	s = without(enc, r == 1 ? &e : NULL, elen + 1, &n);
	if (s == NULL)
		return ENOMEM;
	if (n + (n > 0) + elen > OBJFS_XATTR_ENC_MAX) {
		free(s);
		return ENOSPC;
	}
	if (n > 0)
		s[n++] = ',';
	for (i = 0; suffix[i] != '\0'; i++) {
		unsigned char c = (unsigned char)suffix[i];

		if (name_plain(c)) {
			s[n++] = (char)c;
		} else {
			snprintf(s + n, 4, "%%%02X", c);
			n += 3;
		}
	}
	s[n++] = ':';
	b64_encode(value, len, s + n);
	n += b64_len(len);
	s[n] = '\0';
	*out = s;
	return 0;
}

int objfs_xattr_remove(const char *enc, const char *name, char **out)
{
	struct entry e;
	size_t n;
	int err = find_named(enc, name, &e);

	if (err != 0)
		return err;
	*out = without(enc, &e, 0, &n);
	return *out != NULL ? 0 : ENOMEM;
}

int objfs_xattr_to_meta(const char *enc, struct objfs_meta *m)
{
	char name[32], chunk[OBJFS_XATTR_CHUNK + 1];
	size_t n = enc != NULL ? strlen(enc) : 0, off, i;
	int err;

	if (n > OBJFS_XATTR_ENC_MAX)
		return E2BIG;
	for (off = 0, i = 0; off < n; off += OBJFS_XATTR_CHUNK, i++) {
		size_t k = n - off < OBJFS_XATTR_CHUNK ? n - off : OBJFS_XATTR_CHUNK;

		memcpy(chunk, enc + off, k);
		chunk[k] = '\0';
		snprintf(name, sizeof(name), OBJFS_XATTR_META "%zu", i);
		err = objfs_meta_set(m, name, chunk);
		if (err != 0)
			return err;
	}
	return 0;
}

int objfs_xattr_from_meta(const struct objfs_meta *m, char **out)
{
	char name[32], *s;
	const char *v, *p;
	size_t n = 0, i, k;
	struct entry e;
	int r;

	*out = NULL;
	for (i = 0;; i++) {
		snprintf(name, sizeof(name), OBJFS_XATTR_META "%zu", i);
		v = objfs_meta_get(m, name);
		if (v == NULL)
			break;
		n += strlen(v);
	}
	if (i == 0)
		return 0;
	if (n > OBJFS_XATTR_ENC_MAX)
		return EINVAL;
	s = malloc(n + 1);
	if (s == NULL)
		return ENOMEM;
	for (n = 0, k = 0; k < i; k++) {
		snprintf(name, sizeof(name), OBJFS_XATTR_META "%zu", k);
		v = objfs_meta_get(m, name);
		memcpy(s + n, v, strlen(v));
		n += strlen(v);
	}
	s[n] = '\0';
	p = s;
	while ((r = next_entry(&p, &e)) == 1)
		;
	if (r < 0) {
		free(s);
		return EINVAL;
	}
	*out = s;
	return 0;
}
