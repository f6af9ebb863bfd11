/*
 * trees.c - walking, copying and deleting key prefixes of a root store for
 * the CSI controller (volume clones, snapshots, deletes, archives).
 *
 * A walk lists the prefix page by page (the controller's page_keys) and
 * hands each page to an action: copy (server-side, on copy_workers
 * threads), size, or delete (batched).  Keys of a skip list, relative to
 * the prefix, are left alone, so a copy or delete can leave records for
 * last.  Errors stop the walk; what was done stays done, and the same call
 * repeated finishes the job.
 *
 * To be replaced by the shared prefix-tree module (backend/tree.c).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "csi/controller_int.h"

typedef int (*page_fn)(void *arg, const struct objfs_list_page *page);

/* Calls fn on every page of the flat listing of prefix (full keys). */
static int walk_prefix(struct objfs_store *s, const char *prefix,
		       unsigned page_keys, page_fn fn, void *arg)
{
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_list_req req;
	char *after = NULL;
	bool more;
	int err = 0;

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.prefix = prefix;
		req.start_after = after;
		req.max_keys = page_keys;
		err = objfs_store_list(s, &req, &page);
		if (err != 0)
			break;
		if (page.n_entries == 0) {
			objfs_list_page_release(&page);
			break;
		}
		err = fn(arg, &page);
		free(after);
		after = strdup(page.entries[page.n_entries - 1].key);
		more = page.next != NULL;
		objfs_list_page_release(&page);
		if (err == 0 && after == NULL)
			err = ENOMEM;
		if (err != 0 || !more)
			break;
	}
	free(after);
	return err;
}

struct copy_batch {
	struct objfs_store *s;
	char **src;
	char **dst;
	size_t n;
	size_t next;            /* protected by mu */
	int err;                /* protected by mu: the first failure */
	pthread_mutex_t mu;
};

static void *copy_worker(void *arg)
{
	struct copy_batch *b = arg;
	size_t i;
	int err;

	for (;;) {
		pthread_mutex_lock(&b->mu);
		if (b->err != 0 || b->next >= b->n) {
			pthread_mutex_unlock(&b->mu);
			break;
		}
		i = b->next++;
		pthread_mutex_unlock(&b->mu);
		err = objfs_store_copy(b->s, b->src[i], b->dst[i], NULL, NULL);
		if (err != 0) {
			pthread_mutex_lock(&b->mu);
			if (b->err == 0)
				b->err = err;
			pthread_mutex_unlock(&b->mu);
		}
	}
	return NULL;
}

/* Copies src[i] to dst[i] for every i with up to workers threads. */
static int copy_parallel(struct objfs_store *s, char **src, char **dst,
			 size_t n, unsigned workers)
{
	struct copy_batch b;
	pthread_t th[OBJFS_CTL_COPY_WORKERS];
	size_t i, started = 0;

	memset(&b, 0, sizeof(b));
	b.s = s;
	b.src = src;
	b.dst = dst;
	b.n = n;
	if (pthread_mutex_init(&b.mu, NULL) != 0)
		return ENOMEM;
	if (workers > OBJFS_CTL_COPY_WORKERS)
		workers = OBJFS_CTL_COPY_WORKERS;
	for (i = 1; i < workers && i < n; i++) {
		if (pthread_create(&th[started], NULL, copy_worker, &b) != 0)
			break;
		started++;
	}
	copy_worker(&b);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&b.mu);
	return b.err;
}

/* Keys relative to a prefix that a copy leaves out. */
struct tree_op {
	struct objfs_store *s;
	unsigned page_keys;
	const char *src;        /* "a/b/" */
	const char *dst;        /* "c/" (copy) */
	const char *const *skip;        /* relative keys left out, NULL-ended */
	unsigned workers;
	uint64_t bytes;
	uint64_t count;
};

static bool skipped(const struct tree_op *op, const char *rel)
{
	size_t i;

	for (i = 0; op->skip != NULL && op->skip[i] != NULL; i++) {
		if (strcmp(op->skip[i], rel) == 0)
			return true;
	}
	return false;
}

static int copy_page(void *arg, const struct objfs_list_page *page)
{
	struct tree_op *op = arg;
	size_t plen = strlen(op->src), dlen = strlen(op->dst);
	char **src = calloc(page->n_entries, sizeof(*src));
	char **dst = calloc(page->n_entries, sizeof(*dst));
	size_t i, n = 0;
	int err = 0;

	if (src == NULL || dst == NULL) {
		err = ENOMEM;
		goto out;
	}
	for (i = 0; i < page->n_entries; i++) {
		const char *key = page->entries[i].key;
		const char *rel = key + plen;

		if (strncmp(key, op->src, plen) != 0 || skipped(op, rel))
			continue;
		if (dlen + strlen(rel) > OBJFS_KEY_MAX) {
			err = ENAMETOOLONG;
			goto out;
		}
		dst[n] = malloc(dlen + strlen(rel) + 1);
		if (dst[n] == NULL) {
			err = ENOMEM;
			goto out;
		}
		memcpy(dst[n], op->dst, dlen);
		memcpy(dst[n] + dlen, rel, strlen(rel) + 1);
		src[n] = (char *)key;
		n++;
		op->bytes += page->entries[i].size;
		op->count++;
	}
	err = copy_parallel(op->s, src, dst, n, op->workers);
out:
	if (dst != NULL) {
		for (i = 0; i < n; i++)
			free(dst[i]);
	}
	free(src);
	free(dst);
	return err;
}

static int size_page(void *arg, const struct objfs_list_page *page)
{
	struct tree_op *op = arg;
	size_t plen = strlen(op->src), i;

	for (i = 0; i < page->n_entries; i++) {
		if (skipped(op, page->entries[i].key + plen))
			continue;
		op->bytes += page->entries[i].size;
		op->count++;
	}
	return 0;
}

static int delete_page(void *arg, const struct objfs_list_page *page)
{
	struct tree_op *op = arg;
	size_t plen = strlen(op->src);
	const char **keys = calloc(page->n_entries, sizeof(*keys));
	size_t i, n = 0;
	int err;

	if (keys == NULL)
		return ENOMEM;
	for (i = 0; i < page->n_entries; i++) {
		if (skipped(op, page->entries[i].key + plen))
			continue;
		keys[n++] = page->entries[i].key;
	}
	err = n > 0 ? objfs_store_del_many(op->s, keys, n, NULL) : 0;
	if (err == 0)
		op->count += n;
	free(keys);
	return err;
}

/* Copies every key under src (ending in '/') to dst + the same relative
 * key, skipping skip[].  *bytes gets the bytes copied. */
int objfs_ctl_tree_copy(struct objfs_csi_controller *c, struct objfs_store *s,
			const char *src, const char *dst, const char *const *skip,
			uint64_t *bytes)
{
	struct tree_op op = { s, c->page_keys, src, dst, skip, c->copy_workers, 0, 0 };
	int err = walk_prefix(s, src, op.page_keys, copy_page, &op);

	if (bytes != NULL)
		*bytes = op.bytes;
	return err;
}

int objfs_ctl_tree_size(struct objfs_csi_controller *c, struct objfs_store *s,
			const char *prefix, const char *const *skip, uint64_t *bytes)
{
	struct tree_op op = { s, c->page_keys, prefix, NULL, skip, 0, 0, 0 };
	int err = walk_prefix(s, prefix, op.page_keys, size_page, &op);

	*bytes = op.bytes;
	return err;
}

/* Deletes every key under prefix but skip[] (which the caller deletes
 * last).  Restartable. */
int objfs_ctl_tree_delete(struct objfs_csi_controller *c, struct objfs_store *s,
			  const char *prefix, const char *const *skip, uint64_t *count)
{
	struct tree_op op = { s, c->page_keys, prefix, NULL, skip, 0, 0, 0 };
	int err = walk_prefix(s, prefix, op.page_keys, delete_page, &op);

	if (count != NULL)
		*count = op.count;
	return err;
}

