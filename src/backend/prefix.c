/*
 * prefix.c - the prefix layer: confines a store to the keys under a prefix.
 *
 * This is how a volume (a key prefix in a bucket) is confined.  State: the
 * prefix P, fixed at create time ("" or ending in "/").  Invariants:
 *   - every key this layer sends down is P + a valid relative key, so no
 *     caller can reach a key outside P; a relative key that is invalid (or
 *     too long once prefixed) is EINVAL;
 *   - listings are asked for P + prefix and P + start_after, and every key
 *     and common prefix coming back has P removed (one that does not start
 *     with P fails the listing with EPROTO); continuation tokens are
 *     opaque and pass through unchanged (the inner store only ever issues
 *     tokens for positions under P).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

struct prefix_ctx {
	char *prefix;   /* "" or ending in '/' */
	size_t plen;
};

/* A prefixed key: a buffer big enough for any valid key. */
struct full_key {
	char k[OBJFS_KEY_MAX + 1];
};

static struct prefix_ctx *ctx_of(struct objfs_store *s)
{
	return s->ctx;
}

static int full(struct objfs_store *s, const char *rel, struct full_key *out)
{
	struct prefix_ctx *c = ctx_of(s);
	size_t n;

	if (objfs_key_valid(rel) != 0)
		return EINVAL;
	n = strlen(rel);
	if (c->plen + n > OBJFS_KEY_MAX)
		return ENAMETOOLONG;    /* a valid name, too long for a key */
	memcpy(out->k, c->prefix, c->plen);
	memcpy(out->k + c->plen, rel, n + 1);
	return 0;
}

/* Like full() for strings that need not be valid keys ("" allowed);
 * malloc'ed, NULL stays NULL.  0 or ENOMEM. */
static int full_any(struct objfs_store *s, const char *rel, char **out)
{
	struct prefix_ctx *c = ctx_of(s);
	size_t n;

	*out = NULL;
	if (rel == NULL)
		return 0;
	n = strlen(rel);
	*out = malloc(c->plen + n + 1);
	if (*out == NULL)
		return ENOMEM;
	memcpy(*out, c->prefix, c->plen);
	memcpy(*out + c->plen, rel, n + 1);
	return 0;
}

static int prefix_get(struct objfs_store *s, const char *key,
		      const struct objfs_get_opts *opts,
		      const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	struct full_key f;
	int err = full(s, key, &f);

	return err != 0 ? err : objfs_store_get(s->inner, f.k, opts, sink, info);
}

static int prefix_put(struct objfs_store *s, const char *key,
		      const struct objfs_source *src,
		      const struct objfs_put_opts *opts,
		      struct objfs_obj_info *info)
{
	struct full_key f;
	int err = full(s, key, &f);

	return err != 0 ? err : objfs_store_put(s->inner, f.k, src, opts, info);
}

static int prefix_head(struct objfs_store *s, const char *key,
		       struct objfs_obj_info *info)
{
	struct full_key f;
	int err = full(s, key, &f);

	return err != 0 ? err : objfs_store_head(s->inner, f.k, info);
}

/* Removes the prefix from a string the inner store returned under it;
 * EPROTO when it is not under it (a server answering outside the
 * request's prefix). */
static int strip(struct prefix_ctx *c, char *s)
{
	size_t n = strlen(s);

	if (n < c->plen || memcmp(s, c->prefix, c->plen) != 0)
		return EPROTO;
	memmove(s, s + c->plen, n - c->plen + 1);
	return 0;
}

static int prefix_list(struct objfs_store *s, const struct objfs_list_req *req,
		       struct objfs_list_page *page)
{
	struct prefix_ctx *c = ctx_of(s);
	struct objfs_list_req r = *req;
	char *p = NULL, *after = NULL;
	size_t i;
	int err;

	err = full_any(s, req->prefix != NULL ? req->prefix : "", &p);
	if (err == 0 && req->start_after != NULL && req->start_after[0] != '\0')
		err = full_any(s, req->start_after, &after);
	if (err != 0)
		goto out;
	r.prefix = p;
	r.start_after = after;
	err = objfs_store_list(s->inner, &r, page);
	if (err != 0)
		goto out;
	for (i = 0; err == 0 && i < page->n_entries; i++)
		err = strip(c, page->entries[i].key);
	for (i = 0; err == 0 && i < page->n_prefixes; i++)
		err = strip(c, page->prefixes[i]);
	if (err != 0)
		objfs_list_page_release(page);
out:
	free(p);
	free(after);
	return err;
}

static int prefix_copy(struct objfs_store *s, const char *src, const char *dst,
		       const struct objfs_copy_opts *opts,
		       struct objfs_obj_info *info)
{
	struct full_key fs, fd;
	int err = full(s, src, &fs);

	if (err == 0)
		err = full(s, dst, &fd);
	return err != 0 ? err : objfs_store_copy(s->inner, fs.k, fd.k, opts, info);
}

static int prefix_del(struct objfs_store *s, const char *key)
{
	struct full_key f;
	int err = full(s, key, &f);

	return err != 0 ? err : objfs_store_del(s->inner, f.k);
}

static int prefix_del_many(struct objfs_store *s, const char *const *keys,
			   size_t n, size_t *failed)
{
	struct full_key *f = NULL;
	const char **v = NULL;
	size_t i;
	int err = 0;

	if (failed != NULL)
		*failed = n;
	if (n == 0) {
		if (failed != NULL)
			*failed = 0;
		return 0;
	}
	f = malloc(n * sizeof(*f));
	v = malloc(n * sizeof(*v));
	if (f == NULL || v == NULL) {
		err = ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		err = full(s, keys[i], &f[i]);
		if (err != 0)
			goto out;
		v[i] = f[i].k;
	}
	err = objfs_store_del_many(s->inner, v, n, failed);
out:
	free(f);
	free(v);
	return err;
}

static int prefix_mpu_create(struct objfs_store *s, const char *key,
			     const struct objfs_put_opts *opts, char **upload_id)
{
	struct full_key f;
	int err = full(s, key, &f);

	return err != 0 ? err :
		objfs_store_mpu_create(s->inner, f.k, opts, upload_id);
}

static int prefix_mpu_part(struct objfs_store *s, const char *key,
			   const char *upload_id, unsigned number,
			   const struct objfs_source *src, struct objfs_part *part)
{
	struct full_key f;
	int err = full(s, key, &f);

	return err != 0 ? err :
		objfs_store_mpu_part(s->inner, f.k, upload_id, number, src, part);
}

static int prefix_mpu_part_copy(struct objfs_store *s, const char *key,
				const char *upload_id, unsigned number,
				const struct objfs_part_copy *pc,
				struct objfs_part *part)
{
	struct objfs_part_copy fpc = *pc;
	struct full_key f, fs;
	int err = full(s, key, &f);

	if (err == 0)
		err = full(s, pc->src, &fs);
	if (err != 0)
		return err;
	fpc.src = fs.k;
	return objfs_store_mpu_part_copy(s->inner, f.k, upload_id, number,
					 &fpc, part);
}

static int prefix_mpu_complete(struct objfs_store *s, const char *key,
			       const char *upload_id,
			       const struct objfs_part *parts, size_t n,
			       struct objfs_obj_info *info)
{
	struct full_key f;
	int err = full(s, key, &f);

	return err != 0 ? err :
		objfs_store_mpu_complete(s->inner, f.k, upload_id, parts, n,
					 info);
}

static int prefix_mpu_abort(struct objfs_store *s, const char *key,
			    const char *upload_id)
{
	struct full_key f;
	int err = full(s, key, &f);

	return err != 0 ? err : objfs_store_mpu_abort(s->inner, f.k, upload_id);
}

static void prefix_destroy(struct objfs_store *s)
{
	struct prefix_ctx *c = ctx_of(s);

	objfs_store_destroy(s->inner);
	if (c != NULL)
		free(c->prefix);
	free(c);
	free(s);
}

static const struct objfs_store_ops prefix_ops = {
	.name = "prefix",
	.get = prefix_get,
	.put = prefix_put,
	.head = prefix_head,
	.list = prefix_list,
	.copy = prefix_copy,
	.del = prefix_del,
	.del_many = prefix_del_many,
	.mpu_create = prefix_mpu_create,
	.mpu_part = prefix_mpu_part,
	.mpu_complete = prefix_mpu_complete,
	.mpu_part_copy = prefix_mpu_part_copy,
	.mpu_abort = prefix_mpu_abort,
	.destroy = prefix_destroy,
};

size_t objfs_store_key_room(struct objfs_store *s)
{
	size_t used = 0;

	for (; s != NULL; s = s->inner) {
		if (s->ops == &prefix_ops)
			used += ctx_of(s)->plen;
	}
	return used < OBJFS_KEY_MAX ? OBJFS_KEY_MAX - used : 0;
}

int objfs_prefix_store_create(struct objfs_store *inner, const char *prefix,
			      struct objfs_store **out)
{
	struct objfs_store *s = NULL;
	struct prefix_ctx *c = NULL;
	size_t n;
	int err;

	*out = NULL;
	if (inner == NULL || prefix == NULL) {
		err = EINVAL;
		goto fail;
	}
	n = strlen(prefix);
	if (n >= OBJFS_KEY_MAX) {
		err = EINVAL;
		goto fail;
	}
	s = calloc(1, sizeof(*s));
	c = calloc(1, sizeof(*c));
	if (s == NULL || c == NULL) {
		err = ENOMEM;
		goto fail_alloc;
	}
	c->prefix = malloc(n + 2);
	if (c->prefix == NULL) {
		err = ENOMEM;
		goto fail_alloc;
	}
	memcpy(c->prefix, prefix, n + 1);
	if (n > 0 && prefix[n - 1] != '/') {
		c->prefix[n++] = '/';
		c->prefix[n] = '\0';
	}
	c->plen = n;
	s->ops = &prefix_ops;
	s->inner = inner;
	s->ctx = c;
	s->log = inner->log;
	*out = s;
	return 0;

fail_alloc:
	free(c);
	free(s);
fail:
	objfs_store_destroy(inner);
	return err;
}
