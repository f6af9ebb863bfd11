/* kvtext.c - key=value text documents (see kvtext.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "volume/kvtext.h"

static int key_valid(const char *k, size_t n)
{
	size_t i;

	if (n == 0 || n > OBJFS_KV_KEY_MAX)
		return EINVAL;
	for (i = 0; i < n; i++) {
		char c = k[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '/' || c == '-'))
			return EINVAL;
	}
	return 0;
}

int objfs_kv_key_valid(const char *key)
{
	return key != NULL ? key_valid(key, strlen(key)) : EINVAL;
}

int objfs_kv_value_valid(const char *value)
{
	if (value == NULL || strnlen(value, OBJFS_KV_MAX / 4 + 1) > OBJFS_KV_MAX / 4)
		return EINVAL;
	if (strpbrk(value, "\r\n") != NULL)
		return EINVAL;
	return 0;
}

static struct objfs_kv_item *find(const struct objfs_kv *kv, const char *key)
{
	size_t i;

	for (i = 0; i < kv->n; i++) {
		if (strcmp(kv->items[i].key, key) == 0)
			return &kv->items[i];
	}
	return NULL;
}

static int set_n(struct objfs_kv *kv, const char *key, size_t klen,
		 const char *value, size_t vlen)
{
	struct objfs_kv_item *it, *items;
	char *k = NULL, *v = NULL;
	int err = 0;

	v = strndup(value, vlen);
	k = strndup(key, klen);
	if (v == NULL || k == NULL) {
		err = ENOMEM;
		goto out;
	}
	it = find(kv, k);
	if (it != NULL) {
		free(it->value);
		it->value = v;
		v = NULL;
		goto out;
	}
	items = realloc(kv->items, (kv->n + 1) * sizeof(*items));
	if (items == NULL) {
		err = ENOMEM;
		goto out;
	}
	kv->items = items;
	items[kv->n].key = k;
	items[kv->n].value = v;
	kv->n++;
	k = NULL;
	v = NULL;
out:
	free(k);
	free(v);
	return err;
}

int objfs_kv_set(struct objfs_kv *kv, const char *key, const char *value)
{
	if (key == NULL || key_valid(key, strlen(key)) != 0 ||
	    objfs_kv_value_valid(value) != 0)
		return EINVAL;
	return set_n(kv, key, strlen(key), value, strlen(value));
}

const char *objfs_kv_get(const struct objfs_kv *kv, const char *key)
{
	const struct objfs_kv_item *it = find(kv, key);

	return it != NULL ? it->value : NULL;
}

void objfs_kv_release(struct objfs_kv *kv)
{
	size_t i;

	if (kv == NULL)
		return;
	for (i = 0; i < kv->n; i++) {
		free(kv->items[i].key);
		free(kv->items[i].value);
	}
	free(kv->items);
	kv->items = NULL;
	kv->n = 0;
}

int objfs_kv_parse(const char *text, size_t len, struct objfs_kv *out)
{
	const char *p = text, *end = text + len, *nl, *eq;
	size_t llen;
	int err = 0;

	if (len > OBJFS_KV_MAX || memchr(text, '\0', len) != NULL)
		return EINVAL;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		llen = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		if (llen > 0 && p[llen - 1] == '\r')
			llen--;
		if (llen > 0 && p[0] != '#') {
			eq = memchr(p, '=', llen);
			if (eq == NULL || key_valid(p, (size_t)(eq - p)) != 0 ||
			    memchr(p, '\r', llen) != NULL) {
				err = EINVAL;
				break;
			}
			err = set_n(out, p, (size_t)(eq - p), eq + 1,
				    llen - (size_t)(eq - p) - 1);
			if (err != 0)
				break;
		}
		p = nl != NULL ? nl + 1 : end;
	}
	if (err != 0)
		objfs_kv_release(out);
	return err;
}

int objfs_kv_format(const struct objfs_kv *kv, const char *comment,
		    char **out, size_t *len)
{
	size_t cap = 0, at = 0, i, n;
	char *buf = NULL;
	int err = 0;

	*out = NULL;
	*len = 0;
	cap += comment != NULL ? strlen(comment) + 3 : 0;
	for (i = 0; i < kv->n; i++) {
		if (key_valid(kv->items[i].key, strlen(kv->items[i].key)) != 0 ||
		    objfs_kv_value_valid(kv->items[i].value) != 0)
			return EINVAL;
		cap += strlen(kv->items[i].key) + strlen(kv->items[i].value) + 2;
	}
	if (cap > OBJFS_KV_MAX)
		return EFBIG;
	buf = malloc(cap + 1);
	if (buf == NULL)
		return ENOMEM;
	if (comment != NULL) {
		n = strlen(comment);
		memcpy(buf + at, "# ", 2);
		memcpy(buf + at + 2, comment, n);
		buf[at + 2 + n] = '\n';
		at += n + 3;
	}
	for (i = 0; i < kv->n; i++) {
		n = strlen(kv->items[i].key);
		memcpy(buf + at, kv->items[i].key, n);
		at += n;
		buf[at++] = '=';
		n = strlen(kv->items[i].value);
		memcpy(buf + at, kv->items[i].value, n);
		at += n;
		buf[at++] = '\n';
	}
	buf[at] = '\0';
	*out = buf;
	*len = at;
	return err;
}
