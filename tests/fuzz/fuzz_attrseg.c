/*
 * fuzz_attrseg.c - segments of a volume's attribute index
 * (volume/attrseg.c), read from objects any user of the bucket can
 * overwrite, by every mount that lists a directory.
 *
 * Properties: parsing answers 0, EPROTO or EINVAL; a segment that parses
 * has a directory, and entries with a name and an ETag that fits; it
 * formats without error, and parse -> format -> parse gives the same
 * segment, field by field, and format again the same bytes (a fixed
 * point).  Fields and lines of kinds a reader does not know are ignored:
 * the formatted text with an unknown line after the header and unknown
 * fields after each entry's name and at its end parses to the same
 * segment.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "volume/attrseg.h"
#include "fuzz.h"

static void seg_equal(const struct objfs_attrseg *a, const struct objfs_attrseg *b)
{
	size_t i;

	FUZZ_CHECK(a->dir != NULL && b->dir != NULL && strcmp(a->dir, b->dir) == 0);
	FUZZ_CHECK(a->n == b->n);
	for (i = 0; i < a->n; i++) {
		const struct objfs_attrseg_entry *x = &a->e[i], *y = &b->e[i];

		FUZZ_CHECK(strcmp(x->name, y->name) == 0);
		FUZZ_CHECK(strcmp(x->etag, y->etag) == 0);
		FUZZ_CHECK(x->lm == y->lm && x->ct == y->ct && x->have == y->have);
		FUZZ_CHECK(!(x->have & OBJFS_ATTRSEG_MODE) || x->mode == y->mode);
		FUZZ_CHECK(!(x->have & OBJFS_ATTRSEG_UID) || x->uid == y->uid);
		FUZZ_CHECK(!(x->have & OBJFS_ATTRSEG_GID) || x->gid == y->gid);
		FUZZ_CHECK(!(x->have & OBJFS_ATTRSEG_MTIME) || x->mtime == y->mtime);
		FUZZ_CHECK(!(x->have & OBJFS_ATTRSEG_ATIME) || x->atime == y->atime);
		FUZZ_CHECK(!(x->have & OBJFS_ATTRSEG_CTIME) || x->ctime == y->ctime);
		FUZZ_CHECK(!(x->have & OBJFS_ATTRSEG_RDEV) || x->rdev == y->rdev);
		FUZZ_CHECK((x->link == NULL) == (y->link == NULL));
		FUZZ_CHECK(x->link == NULL || strcmp(x->link, y->link) == 0);
	}
}

/* text with an unknown line after the header and unknown fields in every
 * entry line (after the name, at the end); malloc'ed, *n its length. */
static char *with_unknowns(const char *text, size_t len, size_t *n)
{
	static const char line[] = "future-kind a=1 b\n";
	static const char mid[] = " zz-count=2 x-y=%25z";
	static const char tail[] = " zz-later=-5 =7 novalue";
	const char *p = text, *end = text + len;
	size_t lines = 0, i;
	bool header = true;
	char *out, *o;

	for (i = 0; i < len; i++)
		lines += text[i] == '\n';
	out = malloc(len + lines * (sizeof(mid) + sizeof(tail)) + sizeof(line));
	o = out;
	FUZZ_CHECK(out != NULL);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l;

		FUZZ_CHECK(nl != NULL);         /* format ends every line */
		l = (size_t)(nl - p);
		if (l > 2 && memcmp(p, "e ", 2) == 0) {
			const char *sp = memchr(p + 2, ' ', l - 2);
			size_t k = sp != NULL ? (size_t)(sp - p) : l;

			memcpy(o, p, k);
			o += k;
			memcpy(o, mid, sizeof(mid) - 1);
			o += sizeof(mid) - 1;
			memcpy(o, p + k, l - k);
			o += l - k;
			memcpy(o, tail, sizeof(tail) - 1);
			o += sizeof(tail) - 1;
			*o++ = '\n';
		} else {
			memcpy(o, p, l + 1);
			o += l + 1;
		}
		if (header) {
			memcpy(o, line, sizeof(line) - 1);
			o += sizeof(line) - 1;
			header = false;
		}
		p = nl + 1;
	}
	*n = (size_t)(o - out);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct objfs_attrseg a = OBJFS_ATTRSEG_INIT, b = OBJFS_ATTRSEG_INIT;
	struct objfs_attrseg c = OBJFS_ATTRSEG_INIT;
	char *t1 = NULL, *t2 = NULL, *t3;
	size_t l1, l2, l3, i;
	int rc;

	rc = objfs_attrseg_parse((const char *)data, size, &a);
	FUZZ_CHECK(rc == 0 || rc == EPROTO || rc == EINVAL);
	if (rc != 0)
		goto out;
	FUZZ_CHECK(a.dir != NULL);
	for (i = 0; i < a.n; i++) {
		FUZZ_CHECK(a.e[i].name != NULL && a.e[i].name[0] != '\0');
		FUZZ_CHECK(strlen(a.e[i].etag) < OBJFS_ATTRSEG_ETAG_MAX);
	}
	FUZZ_CHECK(objfs_attrseg_format(&a, &t1, &l1) == 0);
	FUZZ_CHECK(strlen(t1) == l1);
	FUZZ_CHECK(objfs_attrseg_parse(t1, l1, &b) == 0);
	seg_equal(&a, &b);
	FUZZ_CHECK(objfs_attrseg_format(&b, &t2, &l2) == 0);
	FUZZ_CHECK(l1 == l2 && memcmp(t1, t2, l1) == 0);
	t3 = with_unknowns(t1, l1, &l3);
	FUZZ_CHECK(objfs_attrseg_parse(t3, l3, &c) == 0);
	seg_equal(&a, &c);
	free(t3);
out:
	free(t1);
	free(t2);
	objfs_attrseg_release(&a);
	objfs_attrseg_release(&b);
	objfs_attrseg_release(&c);
	return 0;
}
