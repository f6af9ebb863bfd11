/*
 * volrec.c - the volume record (see volrec.h for the format): a typed view
 * of a key=value document (kvtext.h), which does the parsing, formatting
 * and storing.
 *
 * Parsing is strict about structure (every non-comment line is key=value,
 * numbers are plain decimal) and lenient about content (unknown keys are
 * kept).  Formatting writes the known keys first, then the parameters in
 * the order they were set, so a parse/format round trip is stable.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "volume/docstore.h"
#include "volume/kvtext.h"
#include "volume/volrec.h"

#define VOLREC_COMMENT "objfs volume record"

void objfs_volrec_release(struct objfs_volrec *v)
{
	if (v == NULL)
		return;
	objfs_kv_release(&v->params);
	free(v->created);
	free(v->name);
	v->created = NULL;
	v->name = NULL;
	v->capacity_bytes = 0;
}

static bool reserved(const char *k)
{
	return strcmp(k, OBJFS_VOLREC_CAPACITY) == 0 ||
	       strcmp(k, OBJFS_VOLREC_CREATED) == 0 ||
	       strcmp(k, OBJFS_VOLREC_NAME) == 0;
}

static int set_str(char **dst, const char *val)
{
	char *c = NULL;

	if (val != NULL) {
		if (objfs_kv_value_valid(val) != 0)
			return EINVAL;
		c = strdup(val);
		if (c == NULL)
			return ENOMEM;
	}
	free(*dst);
	*dst = c;
	return 0;
}

int objfs_volrec_set_created_now(struct objfs_volrec *v)
{
	char buf[40];
	struct tm tm;
	time_t now = time(NULL);

	gmtime_r(&now, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return set_str(&v->created, buf);
}

int objfs_volrec_set_name(struct objfs_volrec *v, const char *name)
{
	return set_str(&v->name, name);
}

int objfs_volrec_set_param(struct objfs_volrec *v, const char *key,
			   const char *value)
{
	if (key == NULL || reserved(key))
		return EINVAL;
	return objfs_kv_set(&v->params, key, value);
}

const char *objfs_volrec_get_param(const struct objfs_volrec *v,
				   const char *key)
{
	return objfs_kv_get(&v->params, key);
}

static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t n = 0;

	if (*s == '\0')
		return EINVAL;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return EINVAL;
		if (n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return EINVAL;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*out = n;
	return 0;
}

/* Fills *out (empty) from a parsed document. */
static int from_kv(const struct objfs_kv *kv, struct objfs_volrec *out)
{
	size_t i;
	int err = 0;

	for (i = 0; i < kv->n && err == 0; i++) {
		const char *k = kv->items[i].key, *v = kv->items[i].value;

		if (strcmp(k, OBJFS_VOLREC_CAPACITY) == 0)
			err = parse_u64(v, &out->capacity_bytes);
		else if (strcmp(k, OBJFS_VOLREC_CREATED) == 0)
			err = set_str(&out->created, v);
		else if (strcmp(k, OBJFS_VOLREC_NAME) == 0)
			err = set_str(&out->name, v);
		else
			err = objfs_volrec_set_param(out, k, v);
	}
	if (err != 0)
		objfs_volrec_release(out);
	return err;
}

/* The document of v: known keys first, then the parameters in order. */
static int to_kv(const struct objfs_volrec *v, struct objfs_kv *kv)
{
	char num[32];
	size_t i;
	int err;

	snprintf(num, sizeof(num), "%" PRIu64, v->capacity_bytes);
	err = objfs_kv_set(kv, OBJFS_VOLREC_CAPACITY, num);
	if (err == 0 && v->created != NULL)
		err = objfs_kv_set(kv, OBJFS_VOLREC_CREATED, v->created);
	if (err == 0 && v->name != NULL)
		err = objfs_kv_set(kv, OBJFS_VOLREC_NAME, v->name);
	for (i = 0; err == 0 && i < v->params.n; i++)
		err = objfs_kv_set(kv, v->params.items[i].key,
				   v->params.items[i].value);
	return err;
}

int objfs_volrec_parse(const char *text, size_t len, struct objfs_volrec *out)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	int err;

	if (len > OBJFS_VOLREC_MAX)
		return EINVAL;
	err = objfs_kv_parse(text, len, &kv);
	if (err == 0)
		err = from_kv(&kv, out);
	objfs_kv_release(&kv);
	return err;
}

int objfs_volrec_format(const struct objfs_volrec *v, char *buf, size_t cap,
			size_t *len)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	char *text = NULL;
	size_t n = 0;
	int err;

	if (cap == 0)
		return ENOSPC;
	buf[0] = '\0';
	err = to_kv(v, &kv);
	if (err == 0)
		err = objfs_kv_format(&kv, VOLREC_COMMENT, &text, &n);
	if (err == EFBIG || (err == 0 && n >= cap))
		err = ENOSPC;
	if (err == 0) {
		memcpy(buf, text, n + 1);
		if (len != NULL)
			*len = n;
	}
	free(text);
	objfs_kv_release(&kv);
	return err;
}

int objfs_volrec_key(const char *prefix, char *buf, size_t cap)
{
	int n;

	if (prefix == NULL || prefix[0] == '\0')
		n = snprintf(buf, cap, "%s", OBJFS_VOLREC_KEY);
	else
		n = snprintf(buf, cap, "%s/%s", prefix, OBJFS_VOLREC_KEY);
	return n < 0 || (size_t)n >= cap ? ENAMETOOLONG : 0;
}

int objfs_volrec_load_at(struct objfs_store *s, const char *prefix,
			 struct objfs_volrec *out)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	char key[OBJFS_KEY_MAX];
	int err;

	err = objfs_volrec_key(prefix, key, sizeof(key));
	if (err == 0)
		err = objfs_doc_load(s, key, &kv);
	if (err == 0)
		err = from_kv(&kv, out);
	objfs_kv_release(&kv);
	return err;
}

static int volrec_put(struct objfs_store *s, const char *prefix,
		      const struct objfs_volrec *v, bool create)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	char key[OBJFS_KEY_MAX];
	int err;

	err = objfs_volrec_key(prefix, key, sizeof(key));
	if (err == 0)
		err = to_kv(v, &kv);
	if (err == 0)
		err = create ? objfs_doc_create(s, key, &kv, VOLREC_COMMENT) :
			objfs_doc_save(s, key, &kv, VOLREC_COMMENT);
	objfs_kv_release(&kv);
	return err;
}

int objfs_volrec_store_at(struct objfs_store *s, const char *prefix,
			  const struct objfs_volrec *v)
{
	return volrec_put(s, prefix, v, false);
}

int objfs_volrec_create_at(struct objfs_store *s, const char *prefix,
			   const struct objfs_volrec *v)
{
	return volrec_put(s, prefix, v, true);
}

int objfs_volrec_load(struct objfs_store *s, struct objfs_volrec *out)
{
	return objfs_volrec_load_at(s, NULL, out);
}

int objfs_volrec_store(struct objfs_store *s, const struct objfs_volrec *v)
{
	return objfs_volrec_store_at(s, NULL, v);
}
