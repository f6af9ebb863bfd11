/* pb.c - protobuf-c message building helpers (see pb.h). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csi/pb.h"

void *objfs_pb_new(const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = malloc(d->sizeof_message);

	if (m != NULL)
		protobuf_c_message_init(d, m);
	return m;
}

int objfs_pb_set_str(char **field, const char *s)
{
	char *copy = strdup(s != NULL ? s : "");

	if (copy == NULL)
		return ENOMEM;
	if (*field != NULL && *field != protobuf_c_empty_string)
		free(*field);
	*field = copy;
	return 0;
}

int objfs_pb_append(void ***array, size_t *n, void *item)
{
	void **grown = realloc(*array, (*n + 1) * sizeof(**array));

	if (grown == NULL)
		return ENOMEM;
	grown[*n] = item;
	*array = grown;
	(*n)++;
	return 0;
}

const char *objfs_pb_map_get(void *const *entries, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct objfs_pb_map_entry *e = entries[i];

		if (e->key != NULL && strcmp(e->key, key) == 0)
			return e->value;
	}
	return NULL;
}

int objfs_pb_map_add(void ***entries, size_t *n,
		     const ProtobufCMessageDescriptor *d,
		     const char *key, const char *value)
{
	struct objfs_pb_map_entry *e = objfs_pb_new(d);
	int err;

	if (e == NULL)
		return ENOMEM;
	err = objfs_pb_set_str(&e->key, key);
	if (err == 0)
		err = objfs_pb_set_str(&e->value, value);
	if (err == 0)
		err = objfs_pb_append(entries, n, e);
	if (err != 0)
		protobuf_c_message_free_unpacked(&e->base, NULL);
	return err;
}

/* ---- the strings of a request, on the wire ------------------------------ */

/*
 * protobuf-c hands a string field over as a C string: a NUL inside it cuts
 * it short, and a handler would act on the shorter name (a DeleteVolume of
 * "id\0x" deleted the volume "id").  So the packed request is walked once,
 * field by field along its descriptor, before any handler sees it, and
 * every string is checked whole, with its length from the wire.
 */

#define PB_DEPTH_MAX 32

/* The next varint at *p (below end): 0, or EINVAL when cut short. */
static int pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift;

	*v = 0;
	for (shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0)
			return 0;
	}
	return EINVAL;
}

/* The next field at *p: its tag, and for a length-delimited one (wire
 * type 2) its length in *n with *p left at its bytes; any other field is
 * skipped.  0, or EINVAL when the bytes are not protobuf (groups
 * included: CSI has none). */
static int pb_field(const uint8_t **p, const uint8_t *end, uint64_t *tag,
		    uint64_t *n)
{
	if (pb_varint(p, end, tag) != 0)
		return EINVAL;
	switch (*tag & 7) {
	case 0:
		return pb_varint(p, end, n);
	case 1:
	case 5:
		*n = (*tag & 7) == 1 ? 8 : 4;
		if (*n > (uint64_t)(end - *p))
			return EINVAL;
		*p += *n;
		return 0;
	case 2:
		if (pb_varint(p, end, n) != 0 || *n > (uint64_t)(end - *p))
			return EINVAL;
		return 0;
	default:
		return EINVAL;
	}
}

/* Length of the UTF-8 sequence at s (n bytes left), or 0 when it is not
 * one (overlong forms, surrogates and values past U+10FFFF included). */
static size_t pb_utf8_len(const uint8_t *s, size_t n)
{
	uint32_t c;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return len;
}

/* What is wrong with the string s of n bytes, or NULL.  A secret's value
 * may span lines (a PEM CA bundle) and be longer. */
static const char *pb_bad_string(const uint8_t *s, size_t n, bool secret)
{
	size_t i, l;

	if (n > (secret ? OBJFS_PB_SECRET_MAX : OBJFS_PB_STRING_MAX))
		return secret ? "is longer than " OBJFS_PB_STR(OBJFS_PB_SECRET_MAX) " bytes" :
				"is longer than " OBJFS_PB_STR(OBJFS_PB_STRING_MAX) " bytes";
	if (memchr(s, '\0', n) != NULL)
		return "holds a NUL byte";
	for (i = 0; i < n; i += l) {
		if (s[i] < 0x20 || s[i] == 0x7f) {
			if (!(secret && (s[i] == '\t' || s[i] == '\n' || s[i] == '\r')))
				return "holds a control character";
		}
		l = pb_utf8_len(s + i, n - i);
		if (l == 0)
			return "is not valid UTF-8";
	}
	return NULL;
}

/* A map<string,string> field's entry type (key = 1, value = 2). */
static bool pb_is_string_map(const ProtobufCFieldDescriptor *f)
{
	const ProtobufCMessageDescriptor *e = f->descriptor;

	return f->type == PROTOBUF_C_TYPE_MESSAGE &&
	       f->label == PROTOBUF_C_LABEL_REPEATED && e != NULL &&
	       e->n_fields == 2 &&
	       e->fields[0].id == 1 && e->fields[0].type == PROTOBUF_C_TYPE_STRING &&
	       e->fields[1].id == 2 && e->fields[1].type == PROTOBUF_C_TYPE_STRING &&
	       strcmp(e->fields[0].name, "key") == 0 &&
	       strcmp(e->fields[1].name, "value") == 0;
}

struct pb_walk {
	char path[512];         /* the field being looked at */
	char *why;
	size_t why_cap;
};

/* Writes to w->path from its byte at (cut short when it is full). */
static void pb_path_set(struct pb_walk *w, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void pb_path_set(struct pb_walk *w, size_t at, const char *fmt, ...)
{
	va_list ap;

	if (at >= sizeof(w->path))
		return;
	va_start(ap, fmt);
	vsnprintf(w->path + at, sizeof(w->path) - at, fmt, ap);
	va_end(ap);
}

static int pb_fail(struct pb_walk *w, const char *what)
{
	snprintf(w->why, w->why_cap, "%s %s", w->path[0] != '\0' ? w->path :
		 "the request", what);
	return EINVAL;
}

static int pb_walk_msg(struct pb_walk *w, const ProtobufCMessageDescriptor *d,
		       const uint8_t *p, size_t len, int depth);

/* One entry of a string map (the field is in w->path). */
static int pb_walk_map_entry(struct pb_walk *w, const uint8_t *p, size_t len,
			     bool secret)
{
	const uint8_t *end = p + len, *key = NULL, *val = NULL;
	size_t klen = 0, vlen = 0, at = strlen(w->path);
	const char *bad;
	uint64_t tag, n;

	while (p < end) {
		if (pb_field(&p, end, &tag, &n) != 0)
			return pb_fail(w, "is not valid protobuf");
		if ((tag & 7) != 2)
			continue;       /* not a string */
		if (tag >> 3 == 1)
			key = p, klen = (size_t)n;
		else if (tag >> 3 == 2)
			val = p, vlen = (size_t)n;
		p += n;
	}
	if (key != NULL && (bad = pb_bad_string(key, klen, false)) != NULL) {
		pb_path_set(w, at, ": a key");
		return pb_fail(w, bad);
	}
	pb_path_set(w, at, "[\"%.*s\"]", (int)(klen > 64 ? 64 : klen),
		     key != NULL ? (const char *)key : "");
	if (val != NULL && (bad = pb_bad_string(val, vlen, secret)) != NULL)
		return pb_fail(w, bad);
	w->path[at] = '\0';
	return 0;
}

static int pb_walk_msg(struct pb_walk *w, const ProtobufCMessageDescriptor *d,
		       const uint8_t *p, size_t len, int depth)
{
	const uint8_t *end = p + len;
	unsigned seen[64] = { 0 };
	size_t at = strlen(w->path);
	const ProtobufCFieldDescriptor *f;
	const char *bad;
	uint64_t tag, n;
	int err;

	if (depth > PB_DEPTH_MAX)
		return pb_fail(w, "nests too deep");
	while (p < end) {
		if (pb_field(&p, end, &tag, &n) != 0)
			return pb_fail(w, "is not valid protobuf");
		if ((tag & 7) != 2)
			continue;       /* a number: nothing to check */
		f = tag >> 3 <= UINT32_MAX ?
		    protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3)) : NULL;
		if (f == NULL || (f->type != PROTOBUF_C_TYPE_STRING &&
				  f->type != PROTOBUF_C_TYPE_MESSAGE)) {
			p += n;         /* unknown, bytes or packed numbers */
			continue;
		}
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			unsigned i = (unsigned)(f - d->fields);

			pb_path_set(w, at, "%s%s", at > 0 ? "." : "", f->name);
			if (!pb_is_string_map(f))
				pb_path_set(w, strlen(w->path), "[%u]",
					     i < 64 ? seen[i] : 0);
			if (i < 64)
				seen[i]++;
		} else {
			pb_path_set(w, at, "%s%s", at > 0 ? "." : "", f->name);
		}
		if (f->type == PROTOBUF_C_TYPE_STRING) {
			bad = pb_bad_string(p, (size_t)n, false);
			if (bad != NULL)
				return pb_fail(w, bad);
		} else if (pb_is_string_map(f)) {
			err = pb_walk_map_entry(w, p, (size_t)n,
						strstr(f->name, "secrets") != NULL);
			if (err != 0)
				return err;
		} else {
			err = pb_walk_msg(w, f->descriptor, p, (size_t)n, depth + 1);
			if (err != 0)
				return err;
		}
		w->path[at] = '\0';
		p += n;
	}
	return 0;
}

int objfs_pb_check_strings(const ProtobufCMessageDescriptor *d,
			   const uint8_t *buf, size_t len,
			   char *why, size_t why_cap)
{
	struct pb_walk w = { .why = why, .why_cap = why_cap };

	if (why_cap > 0)
		why[0] = '\0';
	return pb_walk_msg(&w, d, buf, len, 0);
}
