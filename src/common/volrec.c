/*
 * volrec.c - the volume record (see volrec.h for the format).
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
#include "common/volrec.h"

void objfs_volrec_release(struct objfs_volrec *v)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < v->n_params; i++) {
		free(v->params[i].key);
		free(v->params[i].value);
	}
	free(v->params);
	free(v->created);
	free(v->name);
	v->params = NULL;
	v->n_params = 0;
	v->created = NULL;
	v->name = NULL;
	v->capacity_bytes = 0;
}

static bool key_ok(const char *k, size_t n)
{
	size_t i;

	if (n == 0 || n > OBJFS_VOLREC_KEY_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = k[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-' || c == '/'))
			return false;
	}
	return true;
}

static bool value_ok(const char *v)
{
	return strpbrk(v, "\r\n") == NULL;
}

static bool reserved(const char *k)
{
	return strcmp(k, "capacity_bytes") == 0 || strcmp(k, "created") == 0 ||
	       strcmp(k, "name") == 0;
}

static int set_str(char **dst, const char *val)
{
	char *c = NULL;

	if (val != NULL) {
		if (!value_ok(val))
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
	struct objfs_volrec_param *p;
	char *k = NULL, *val = NULL;
	size_t i;
	int err = 0;

	if (key == NULL || value == NULL || !key_ok(key, strlen(key)) ||
	    reserved(key) || !value_ok(value))
		return EINVAL;
	for (i = 0; i < v->n_params; i++) {
		if (strcmp(v->params[i].key, key) == 0)
			return set_str(&v->params[i].value, value);
	}
	k = strdup(key);
	val = strdup(value);
	p = realloc(v->params, (v->n_params + 1) * sizeof(*p));
	if (k == NULL || val == NULL || p == NULL) {
		if (p != NULL)
			v->params = p;
		err = ENOMEM;
		goto out;
	}
	v->params = p;
	p[v->n_params].key = k;
	p[v->n_params].value = val;
	v->n_params++;
	k = NULL;
	val = NULL;
out:
	free(k);
	free(val);
	return err;
}

const char *objfs_volrec_get_param(const struct objfs_volrec *v,
				   const char *key)
{
	size_t i;

	for (i = 0; i < v->n_params; i++) {
		if (strcmp(v->params[i].key, key) == 0)
			return v->params[i].value;
	}
	return NULL;
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

int objfs_volrec_parse(const char *text, size_t len, struct objfs_volrec *out)
{
	char *line = NULL;
	size_t pos = 0;
	int err = 0;

	if (len > OBJFS_VOLREC_MAX)
		return EINVAL;
	line = malloc(len + 1);
	if (line == NULL)
		return ENOMEM;
	while (pos < len) {
		size_t end = pos, n;
		char *eq;

		while (end < len && text[end] != '\n')
			end++;
		n = end - pos;
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos = end + 1;
		if (n > 0 && line[n - 1] == '\r')
			line[--n] = '\0';
		if (memchr(line, '\0', n) != NULL) {
			err = EINVAL;
			goto out;
		}
		if (n == 0 || line[0] == '#')
			continue;
		eq = strchr(line, '=');
		if (eq == NULL || !key_ok(line, (size_t)(eq - line))) {
			err = EINVAL;
			goto out;
		}
		*eq = '\0';
		if (strcmp(line, "capacity_bytes") == 0)
			err = parse_u64(eq + 1, &out->capacity_bytes);
		else if (strcmp(line, "created") == 0)
			err = set_str(&out->created, eq + 1);
		else if (strcmp(line, "name") == 0)
			err = set_str(&out->name, eq + 1);
		else
			err = objfs_volrec_set_param(out, line, eq + 1);
		if (err != 0)
			goto out;
	}
out:
	free(line);
	if (err != 0)
		objfs_volrec_release(out);
	return err;
}

struct outbuf {
	char *buf;
	size_t cap;
	size_t len;
	int err;
};

static void put_line(struct outbuf *o, const char *k, const char *v)
{
	int n;

	if (o->err != 0)
		return;
	n = snprintf(o->buf + o->len, o->cap - o->len, "%s=%s\n", k, v);
	if (n < 0 || (size_t)n >= o->cap - o->len) {
		o->err = ENOSPC;
		return;
	}
	o->len += (size_t)n;
}

int objfs_volrec_format(const struct objfs_volrec *v, char *buf, size_t cap,
			size_t *len)
{
	struct outbuf o = { buf, cap, 0, 0 };
	char num[32];
	size_t i;
	int n;

	if (cap == 0)
		return ENOSPC;
	buf[0] = '\0';
	n = snprintf(buf, cap, "# objfs volume record\n");
	if (n < 0 || (size_t)n >= cap)
		return ENOSPC;
	o.len = (size_t)n;
	snprintf(num, sizeof(num), "%" PRIu64, v->capacity_bytes);
	put_line(&o, "capacity_bytes", num);
	if (v->created != NULL) {
		if (!value_ok(v->created))
			return EINVAL;
		put_line(&o, "created", v->created);
	}
	if (v->name != NULL) {
		if (!value_ok(v->name))
			return EINVAL;
		put_line(&o, "name", v->name);
	}
	for (i = 0; i < v->n_params; i++) {
		const struct objfs_volrec_param *p = &v->params[i];

		if (!key_ok(p->key, strlen(p->key)) || !value_ok(p->value))
			return EINVAL;
		put_line(&o, p->key, p->value);
	}
	if (o.err != 0)
		return o.err;
	if (len != NULL)
		*len = o.len;
	return 0;
}

int objfs_volrec_load(struct objfs_store *s, struct objfs_volrec *out)
{
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(OBJFS_VOLREC_MAX);
	struct objfs_get_opts go = OBJFS_GET_ALL;
	struct objfs_sink sink;
	int err;

	objfs_sink_membuf(&sink, &mb);
	err = objfs_store_get(s, OBJFS_VOLREC_KEY, &go, &sink, NULL);
	if (err == ERANGE)      /* an empty object */
		err = 0;
	if (err == EFBIG)
		err = EINVAL;
	if (err != 0)
		goto out;
	err = objfs_volrec_parse(mb.data != NULL ? mb.data : "", mb.len, out);
out:
	objfs_membuf_release(&mb);
	return err;
}

int objfs_volrec_store(struct objfs_store *s, const struct objfs_volrec *v)
{
	struct objfs_put_opts po = { NULL, "text/plain", false };
	struct objfs_source src;
	char *buf;
	size_t len = 0;
	int err;

	buf = malloc(OBJFS_VOLREC_MAX);
	if (buf == NULL)
		return ENOMEM;
	err = objfs_volrec_format(v, buf, OBJFS_VOLREC_MAX, &len);
	if (err != 0)
		goto out;
	objfs_source_mem(&src, buf, len);
	err = objfs_store_put(s, OBJFS_VOLREC_KEY, &src, &po, NULL);
out:
	free(buf);
	return err;
}
