/*
 * volid.c - volume and snapshot ids (see volid.h for the grammar).
 *
 * Parsing is a strict match of the grammar: the text is split at ':' into
 * the fixed fields and every field is checked with the same validators
 * the formatter uses, so parse(format(x)) == x and nothing hostile (a
 * "..", "//", leading '/', control byte, over-long id) survives parsing.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "csi/volid.h"
#include "volume/catalog.h"

static int is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

int objfs_id_segment_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > OBJFS_SEGMENT_MAX || s[0] == '.')
		return EINVAL;
	for (i = 0; i < len; i++) {
		if (!is_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return EINVAL;
	}
	return 0;
}

int objfs_id_prefix_valid(const char *s)
{
	const char *seg = s, *slash;
	size_t n = strnlen(s, OBJFS_ID_MAX + 1);

	if (n == 0 || n > OBJFS_ID_MAX)
		return EINVAL;
	for (;;) {
		slash = strchr(seg, '/');
		if (slash == NULL)
			return objfs_id_segment_valid(seg, strlen(seg));
		if (objfs_id_segment_valid(seg, (size_t)(slash - seg)) != 0)
			return EINVAL;
		seg = slash + 1;
	}
}

int objfs_id_bucket_valid(const char *s)
{
	size_t n = strnlen(s, OBJFS_BUCKET_MAX + 1);
	size_t i;

	if (n < 3 || n > OBJFS_BUCKET_MAX)
		return EINVAL;
	if (!is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return EINVAL;
	for (i = 0; i < n; i++) {
		if (!is_alnum(s[i]) && s[i] != '.' && s[i] != '-')
			return EINVAL;
	}
	return 0;
}

size_t objfs_id_head_len(enum objfs_id_type type, enum objfs_id_store store,
			 const char *bucket)
{
	size_t n = strlen(OBJFS_ID_TAG);

	n += type == OBJFS_ID_VOLUME ? strlen("vol:") : strlen("snap:");
	if (store == OBJFS_ID_DEFAULT)
		n += strlen("def:");
	else
		n += strlen("s3:") + strlen(bucket) + 1;
	return n;
}

int objfs_id_format(const struct objfs_id *id, char *buf, size_t cap)
{
	const char *type = id->type == OBJFS_ID_VOLUME ? "vol" : "snap";
	int n;

	if (id->type != OBJFS_ID_VOLUME && id->type != OBJFS_ID_SNAPSHOT)
		return EINVAL;
	if (objfs_id_prefix_valid(id->path) != 0)
		return EINVAL;
	if (id->store == OBJFS_ID_DEFAULT) {
		n = snprintf(buf, cap, "%s%s:def:%s", OBJFS_ID_TAG, type, id->path);
	} else if (id->store == OBJFS_ID_BUCKET) {
		if (objfs_id_bucket_valid(id->bucket) != 0)
			return EINVAL;
		n = snprintf(buf, cap, "%s%s:s3:%s:%s", OBJFS_ID_TAG, type,
			     id->bucket, id->path);
	} else {
		return EINVAL;
	}
	if (n < 0 || (size_t)n >= cap || n > OBJFS_ID_MAX)
		return ENAMETOOLONG;
	return 0;
}

int objfs_id_parse(const char *s, struct objfs_id *out)
{
	const char *p, *colon;
	size_t n, tag = strlen(OBJFS_ID_TAG);

	memset(out, 0, sizeof(*out));
	if (s == NULL || strncmp(s, OBJFS_ID_TAG, tag) != 0)
		return ENOENT;
	n = strnlen(s, OBJFS_ID_MAX + 1);
	if (n > OBJFS_ID_MAX)
		return EINVAL;
	p = s + tag;
	if (strncmp(p, "vol:", 4) == 0) {
		out->type = OBJFS_ID_VOLUME;
		p += 4;
	} else if (strncmp(p, "snap:", 5) == 0) {
		out->type = OBJFS_ID_SNAPSHOT;
		p += 5;
	} else {
		return EINVAL;
	}
	if (strncmp(p, "def:", 4) == 0) {
		out->store = OBJFS_ID_DEFAULT;
		p += 4;
	} else if (strncmp(p, "s3:", 3) == 0) {
		out->store = OBJFS_ID_BUCKET;
		p += 3;
		colon = strchr(p, ':');
		if (colon == NULL || (size_t)(colon - p) > OBJFS_BUCKET_MAX)
			return EINVAL;
		memcpy(out->bucket, p, (size_t)(colon - p));
		out->bucket[colon - p] = '\0';
		if (objfs_id_bucket_valid(out->bucket) != 0)
			return EINVAL;
		p = colon + 1;
	} else {
		return EINVAL;
	}
	if (strlen(p) > OBJFS_ID_MAX)
		return EINVAL;
	memcpy(out->path, p, strlen(p) + 1);
	if (objfs_id_prefix_valid(out->path) != 0)
		return EINVAL;
	return 0;
}

void objfs_id_hash(const char *s, size_t len, char *out, size_t hexlen)
{
	objfs_catalog_hash(s, len, out, hexlen);
}

int objfs_id_safe_name(const char *name, size_t max, char *out, size_t cap)
{
	size_t n, i, k = 0, keep;

	if (name == NULL || name[0] == '\0' || max < 24 || max > OBJFS_SEGMENT_MAX)
		return EINVAL;
	if (cap <= max)
		return ENOSPC;
	n = strlen(name);
	if (n <= max && objfs_id_segment_valid(name, n) == 0) {
		memcpy(out, name, n + 1);
		return 0;
	}
	keep = max - 17;
	for (i = 0; i < n && k < keep; i++) {
		char c = name[i];

		if (is_alnum(c) || c == '_' || c == '-')
			out[k++] = c;
	}
	if (k == 0)
		out[k++] = 'v';
	out[k++] = '-';
	objfs_id_hash(name, n, out + k, 16);
	return 0;
}

bool objfs_id_name_banned(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	unsigned cp;
	int more, i;

	while (*p != '\0') {
		if (*p < 0x80) {
			cp = *p++;
			more = 0;
		} else if ((*p & 0xe0) == 0xc0) {
			cp = *p++ & 0x1f;
			more = 1;
		} else if ((*p & 0xf0) == 0xe0) {
			cp = *p++ & 0x0f;
			more = 2;
		} else if ((*p & 0xf8) == 0xf0) {
			cp = *p++ & 0x07;
			more = 3;
		} else {
			return true;
		}
		for (i = 0; i < more; i++) {
			if ((*p & 0xc0) != 0x80)
				return true;
			cp = (cp << 6) | (*p++ & 0x3f);
		}
		if (cp <= 0x08 || cp == 0x0b || cp == 0x0c ||
		    (cp >= 0x0e && cp <= 0x1f) || (cp >= 0x7f && cp <= 0x9f))
			return true;
	}
	return false;
}
