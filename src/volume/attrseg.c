/*
 * attrseg.c - the text of attribute index segments (see attrseg.h).  No
 * state, no I/O.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "volume/attrseg.h"
#include "volume/catalog.h"

#define MAGIC "objfs-attrs"

static void entry_release(struct objfs_attrseg_entry *e)
{
	free(e->name);
	free(e->link);
	e->name = NULL;
	e->link = NULL;
}

void objfs_attrseg_release(struct objfs_attrseg *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		entry_release(&s->e[i]);
	free(s->e);
	free(s->dir);
	memset(s, 0, sizeof(*s));
}

int objfs_attrseg_add(struct objfs_attrseg *s,
		      const struct objfs_attrseg_entry *e)
{
	struct objfs_attrseg_entry *d;

	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 16;

		d = realloc(s->e, nc * sizeof(*d));
		if (d == NULL)
			return ENOMEM;
		s->e = d;
		s->cap = nc;
	}
	d = &s->e[s->n];
	*d = *e;
	d->name = strdup(e->name);
	d->link = e->link != NULL ? strdup(e->link) : NULL;
	if (d->name == NULL || (e->link != NULL && d->link == NULL)) {
		entry_release(d);
		return ENOMEM;
	}
	s->n++;
	return 0;
}

/* Sorted by name, and by the order of adding within a name (stable). */
struct ord {
	struct objfs_attrseg_entry e;
	size_t i;
};

static int ord_cmp(const void *a, const void *b)
{
	const struct ord *x = a, *y = b;
	int c = strcmp(x->e.name, y->e.name);

	if (c != 0)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

void objfs_attrseg_sort(struct objfs_attrseg *s)
{
	struct ord *o;
	size_t i, j;

	if (s->n < 2)
		return;
	o = malloc(s->n * sizeof(*o));
	if (o == NULL)
		return;         /* unsorted: duplicates stay, readers cope */
	for (i = 0; i < s->n; i++) {
		o[i].e = s->e[i];
		o[i].i = i;
	}
	qsort(o, s->n, sizeof(*o), ord_cmp);
	for (i = 0, j = 0; i < s->n; i++) {
		if (i + 1 < s->n && strcmp(o[i].e.name, o[i + 1].e.name) == 0) {
			entry_release(&o[i].e);
			continue;
		}
		s->e[j++] = o[i].e;
	}
	s->n = j;
	free(o);
}

/* ---- text ------------------------------------------------------------- */

struct out {
	char *buf;
	size_t len, cap;
	int err;
};

static void put(struct out *o, const char *p, size_t n)
{
	if (o->err != 0)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t nc = o->cap ? o->cap : 4096;
		char *nb;

		while (nc < o->len + n + 1)
			nc *= 2;
		if (nc > OBJFS_ATTRSEG_MAX + 1) {
			o->err = EFBIG;
			return;
		}
		nb = realloc(o->buf, nc);
		if (nb == NULL) {
			o->err = ENOMEM;
			return;
		}
		o->buf = nb;
		o->cap = nc;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void puts_esc(struct out *o, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s;

	for (; *p != '\0'; p++) {
		char esc[3] = { (char)*p, 0, 0 };

		if (*p <= 0x20 || *p == '%' || *p == '=' || *p == 0x7f) {
			esc[0] = '%';
			esc[1] = hex[*p >> 4];
			esc[2] = hex[*p & 0xf];
			put(o, esc, 3);
		} else {
			put(o, esc, 1);
		}
	}
}

static void put_field(struct out *o, const char *name, int64_t v)
{
	char b[48];
	int n = snprintf(b, sizeof(b), " %s=%" PRId64, name, v);

	put(o, b, (size_t)n);
}

int objfs_attrseg_format(const struct objfs_attrseg *s, char **out,
			 size_t *len)
{
	struct out o = { NULL, 0, 0, 0 };
	char head[32];
	size_t i;

	*out = NULL;
	*len = 0;
	if (s->dir == NULL)
		return EINVAL;
	snprintf(head, sizeof(head), MAGIC " %d\ndir ", OBJFS_ATTRSEG_VERSION);
	put(&o, head, strlen(head));
	puts_esc(&o, s->dir);
	put(&o, "\n", 1);
	for (i = 0; i < s->n; i++) {
		const struct objfs_attrseg_entry *e = &s->e[i];

		put(&o, "e ", 2);
		puts_esc(&o, e->name);
		put(&o, " etag=", 6);
		puts_esc(&o, e->etag);
		put_field(&o, "lm", e->lm);
		if (e->have & OBJFS_ATTRSEG_MODE)
			put_field(&o, "mode", (int64_t)e->mode);
		if (e->have & OBJFS_ATTRSEG_UID)
			put_field(&o, "uid", (int64_t)e->uid);
		if (e->have & OBJFS_ATTRSEG_GID)
			put_field(&o, "gid", (int64_t)e->gid);
		if (e->have & OBJFS_ATTRSEG_MTIME)
			put_field(&o, "mtime", e->mtime);
		if (e->have & OBJFS_ATTRSEG_ATIME)
			put_field(&o, "atime", e->atime);
		if (e->have & OBJFS_ATTRSEG_CTIME)
			put_field(&o, "ctime", e->ctime);
		if (e->have & OBJFS_ATTRSEG_RDEV)
			put_field(&o, "rdev", (int64_t)e->rdev);
		if (e->have & OBJFS_ATTRSEG_SIZE)
			put_field(&o, "size", (int64_t)e->size);
		put_field(&o, "ct", e->ct);
		if (e->link != NULL) {
			put(&o, " link=", 6);
			puts_esc(&o, e->link);
		}
		put(&o, "\n", 1);
	}
	if (o.err != 0) {
		free(o.buf);
		return o.err;
	}
	*out = o.buf;
	*len = o.len;
	return 0;
}

/* Unescapes [p, p+n) into a new string; NULL when malformed or out of
 * memory (*err says which). */
static char *unesc(const char *p, size_t n, int *err)
{
	char *s = malloc(n + 1), *d = s;
	size_t i;

	if (s == NULL) {
		*err = ENOMEM;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (p[i] == '%') {
			int h, l;

			if (i + 2 >= n)
				goto bad;
			h = objfs_hexval(p[i + 1]);
			l = objfs_hexval(p[i + 2]);
			if (h < 0 || l < 0 || (h == 0 && l == 0))
				goto bad;
			*d++ = (char)(h << 4 | l);
			i += 2;
		} else {
			*d++ = p[i];
		}
	}
	*d = '\0';
	return s;
bad:
	free(s);
	*err = EINVAL;
	return NULL;
}

static bool parse_i64(const char *p, size_t n, int64_t *out)
{
	char b[32], *end;
	long long v;

	if (n == 0 || n >= sizeof(b))
		return false;
	memcpy(b, p, n);
	b[n] = '\0';
	errno = 0;
	v = strtoll(b, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

/* One "e ..." line (without "e " and LF); 0, EINVAL (skipped) or ENOMEM. */
static int parse_entry(const char *p, size_t n, struct objfs_attrseg *s)
{
	struct objfs_attrseg_entry e;
	const char *end = p + n, *tok;
	bool have_etag = false, have_lm = false, have_ct = false;
	int err = 0;

	memset(&e, 0, sizeof(e));
	tok = memchr(p, ' ', n);
	if (tok == NULL)
		tok = end;
	e.name = unesc(p, (size_t)(tok - p), &err);
	if (e.name == NULL || e.name[0] == '\0')
		goto bad;
	while (tok < end) {
		const char *f = tok + 1, *fe, *eq;
		size_t kl;
		int64_t v;

		fe = memchr(f, ' ', (size_t)(end - f));
		if (fe == NULL)
			fe = end;
		tok = fe;
		eq = memchr(f, '=', (size_t)(fe - f));
		if (eq == NULL)
			continue;
		kl = (size_t)(eq - f);
		eq++;
		if (kl == 4 && memcmp(f, "etag", 4) == 0) {
			char *t = unesc(eq, (size_t)(fe - eq), &err);

			if (t == NULL || strlen(t) >= sizeof(e.etag)) {
				free(t);
				goto bad;
			}
			strcpy(e.etag, t);
			free(t);
			have_etag = true;
		} else if (kl == 4 && memcmp(f, "link", 4) == 0) {
			free(e.link);
			e.link = unesc(eq, (size_t)(fe - eq), &err);
			if (e.link == NULL)
				goto bad;
		} else if (parse_i64(eq, (size_t)(fe - eq), &v)) {
			if (kl == 2 && memcmp(f, "lm", 2) == 0) {
				e.lm = v;
				have_lm = true;
			} else if (kl == 2 && memcmp(f, "ct", 2) == 0) {
				e.ct = v;
				have_ct = true;
			} else if (kl == 4 && memcmp(f, "mode", 4) == 0 &&
				   v >= 0 && v <= 0xffffff) {
				e.mode = (mode_t)v;
				e.have |= OBJFS_ATTRSEG_MODE;
			} else if (kl == 3 && memcmp(f, "uid", 3) == 0 &&
				   v >= 0 && v <= UINT32_MAX) {
				e.uid = (uid_t)v;
				e.have |= OBJFS_ATTRSEG_UID;
			} else if (kl == 3 && memcmp(f, "gid", 3) == 0 &&
				   v >= 0 && v <= UINT32_MAX) {
				e.gid = (gid_t)v;
				e.have |= OBJFS_ATTRSEG_GID;
			} else if (kl == 5 && memcmp(f, "mtime", 5) == 0) {
				e.mtime = v;
				e.have |= OBJFS_ATTRSEG_MTIME;
			} else if (kl == 5 && memcmp(f, "atime", 5) == 0) {
				e.atime = v;
				e.have |= OBJFS_ATTRSEG_ATIME;
			} else if (kl == 5 && memcmp(f, "ctime", 5) == 0) {
				e.ctime = v;
				e.have |= OBJFS_ATTRSEG_CTIME;
			} else if (kl == 4 && memcmp(f, "rdev", 4) == 0 &&
				   v >= 0) {
				e.rdev = (uint64_t)v;
				e.have |= OBJFS_ATTRSEG_RDEV;
			} else if (kl == 4 && memcmp(f, "size", 4) == 0 &&
				   v >= 0) {
				e.size = (uint64_t)v;
				e.have |= OBJFS_ATTRSEG_SIZE;
			}
		}
	}
	if (!have_etag || !have_lm || !have_ct)
		goto bad;
	err = objfs_attrseg_add(s, &e);
	entry_release(&e);
	return err;
bad:
	entry_release(&e);
	return err == ENOMEM ? ENOMEM : EINVAL;
}

int objfs_attrseg_parse(const char *text, size_t len,
			struct objfs_attrseg *out)
{
	const char *p = text, *end = text + len;
	bool first = true;
	int err = 0;

	if (len > OBJFS_ATTRSEG_MAX)
		return EINVAL;
	while (p < end && err != ENOMEM) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n;

		if (nl == NULL)
			break;          /* a cut last line is ignored */
		n = (size_t)(nl - p);
		if (first) {
			const char *d = p + sizeof(MAGIC), *q;
			long v = 0;

			if (n <= sizeof(MAGIC) || memcmp(p, MAGIC " ", sizeof(MAGIC)) != 0)
				return EPROTO;
			/* digits only, up to the line's end: strtol would skip
			 * white space (LF too) past the end of text */
			for (q = d; q < nl && *q >= '0' && *q <= '9' && v < 1000000; q++)
				v = v * 10 + (*q - '0');
			if (q == d || q != nl || v != OBJFS_ATTRSEG_VERSION)
				return EPROTO;
			first = false;
		} else if (n >= 4 && memcmp(p, "dir ", 4) == 0) {
			free(out->dir);
			out->dir = unesc(p + 4, n - 4, &err);
		} else if (n > 2 && memcmp(p, "e ", 2) == 0) {
			err = parse_entry(p + 2, n - 2, out);
			if (err == EINVAL)
				err = 0;        /* a malformed entry is skipped */
		}
		p = nl + 1;
	}
	if (first)
		return EPROTO;
	if (err == 0 && out->dir == NULL)
		err = EINVAL;
	return err;
}

void objfs_attrseg_prefix(const char *dir, char *buf, size_t cap)
{
	char h[OBJFS_CATALOG_HASH_HEX + 1];

	objfs_catalog_hash(dir, strlen(dir), h, OBJFS_CATALOG_HASH_HEX);
	snprintf(buf, cap, "%s%s/", OBJFS_ATTR_INDEX_PREFIX, h);
}
