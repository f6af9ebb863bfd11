/*
 * tree.c - walk, size, copy, move and delete a prefix tree (see tree.h).
 *
 * One page of the listing at a time: the page's copies (or delete
 * batches) are queued on the pool in one group and waited for before the
 * next page is listed, so memory stays bounded by a page, except for
 * move, which keeps the keys it copied (to undo them, or to delete the
 * sources once every copy is made).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tree.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/pool.h"

#define SUB "store"

static unsigned page_keys(const struct objfs_tree_opts *o)
{
	return o != NULL && o->page_keys != 0 ? o->page_keys
					      : OBJFS_TREE_PAGE_KEYS;
}

/* Runs fn(arg) on the pool in group g, or here when there is no pool or
 * the queue is full. */
static void run_task(struct objfs_pool *pool, struct objfs_group *g,
		     void (*fn)(void *), void *arg)
{
	if (pool == NULL || objfs_pool_submit(pool, g, fn, arg) != 0)
		fn(arg);
}

int objfs_tree_walk(struct objfs_store *s, const char *prefix,
		    unsigned keys, objfs_tree_page_fn fn, void *arg)
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
		req.max_keys = keys != 0 ? keys : OBJFS_TREE_PAGE_KEYS;
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

/* ---- every key of a prefix ------------------------------------------------ */

/* A growing list of owned keys (move: what to undo or delete). */
struct keylist {
	char **k;
	size_t n, cap;
};

static int keylist_add(struct keylist *l, const char *key)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char **nk = realloc(l->k, cap * sizeof(*nk));

		if (nk == NULL)
			return ENOMEM;
		l->k = nk;
		l->cap = cap;
	}
	l->k[l->n] = strdup(key);
	if (l->k[l->n] == NULL)
		return ENOMEM;
	l->n++;
	return 0;
}

static void keylist_release(struct keylist *l)
{
	objfs_tree_keys_free(l->k, l->n);
	memset(l, 0, sizeof(*l));
}

static int keys_page(void *arg, const struct objfs_list_page *page)
{
	size_t i;
	int err = 0;

	for (i = 0; err == 0 && i < page->n_entries; i++)
		err = keylist_add(arg, page->entries[i].key);
	return err;
}

int objfs_tree_keys(struct objfs_store *s, const char *prefix, char ***keys,
		    size_t *n)
{
	struct keylist l = { NULL, 0, 0 };
	int err = objfs_tree_walk(s, prefix, 0, keys_page, &l);

	*keys = l.k;
	*n = l.n;
	return err;
}

void objfs_tree_keys_free(char **keys, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

/* ---- deleting keys in parallel batches --------------------------------- */

struct del_task {
	struct objfs_store *s;
	const char *const *keys;
	size_t n;
	size_t failed;
	int err;
};

static void del_run(void *arg)
{
	struct del_task *t = arg;

	t->failed = 0;
	t->err = objfs_store_del_many(t->s, t->keys, t->n, &t->failed);
	if (t->err != 0 && t->failed == 0)
		t->failed = t->n;
}

int objfs_tree_del_keys(struct objfs_store *s, struct objfs_pool *pool,
			const char *const *keys, size_t n, size_t *failed)
{
	size_t nb = (n + OBJFS_TREE_DEL_BATCH - 1) / OBJFS_TREE_DEL_BATCH, i;
	size_t nfailed = 0;
	struct del_task *t;
	struct objfs_group g;
	int err = 0;

	if (n == 0)
		goto out;
	t = calloc(nb, sizeof(*t));
	if (t == NULL) {
		err = objfs_store_del_many(s, keys, n, &nfailed);
		goto out;
	}
	objfs_group_init(&g);
	for (i = 0; i < nb; i++) {
		size_t off = i * OBJFS_TREE_DEL_BATCH;

		t[i].s = s;
		t[i].keys = keys + off;
		t[i].n = n - off < OBJFS_TREE_DEL_BATCH ? n - off
							: OBJFS_TREE_DEL_BATCH;
		run_task(pool, &g, del_run, &t[i]);
	}
	objfs_group_wait(&g);
	for (i = 0; i < nb; i++) {
		nfailed += t[i].failed;
		if (err == 0)
			err = t[i].err;
	}
	free(t);
out:
	if (failed != NULL)
		*failed = nfailed;
	return err;
}

/* ---- one operation over the pages of a prefix ---------------------------- */

struct copy_task {
	struct objfs_store *s;
	const struct objfs_copy_opts *opts;
	const char *src;                /* borrowed from the page */
	char *dst;                      /* owned */
	uint64_t size;
	int err;
};

static void copy_run(void *arg)
{
	struct copy_task *t = arg;

	t->err = objfs_store_copy(t->s, t->src, t->dst, t->opts, NULL);
}

struct tree_run {
	struct objfs_store *s;
	const struct objfs_tree_opts *o;
	const char *src;
	const char *dst;                /* copy and move */
	struct objfs_tree_stats st;
	struct keylist done_src;        /* move: sources copied */
	struct keylist done_dst;        /* move: copies made */
	bool keep;                      /* move: fill the lists */
};

static bool skipped(const struct objfs_tree_opts *o, const char *rel)
{
	size_t i;

	for (i = 0; o != NULL && o->skip != NULL && o->skip[i] != NULL; i++) {
		if (strcmp(o->skip[i], rel) == 0)
			return true;
	}
	return false;
}

/* The keys of a page under r->src and not skipped: their indexes. */
static size_t page_pick(const struct tree_run *r,
			const struct objfs_list_page *page, size_t *idx)
{
	size_t plen = strlen(r->src), i, n = 0;

	for (i = 0; i < page->n_entries; i++) {
		const char *key = page->entries[i].key;

		if (strncmp(key, r->src, plen) != 0 ||
		    skipped(r->o, key + plen))
			continue;
		idx[n++] = i;
	}
	return n;
}

static int size_page(void *arg, const struct objfs_list_page *page)
{
	struct tree_run *r = arg;
	size_t *idx = calloc(page->n_entries, sizeof(*idx));
	size_t n, i;

	if (idx == NULL)
		return ENOMEM;
	n = page_pick(r, page, idx);
	for (i = 0; i < n; i++) {
		r->st.count++;
		r->st.bytes += page->entries[idx[i]].size;
	}
	free(idx);
	return 0;
}

static int copy_page(void *arg, const struct objfs_list_page *page)
{
	struct tree_run *r = arg;
	size_t plen = strlen(r->src), dlen = strlen(r->dst);
	size_t *idx = calloc(page->n_entries, sizeof(*idx));
	struct copy_task *t = calloc(page->n_entries, sizeof(*t));
	struct objfs_group g;
	size_t n = 0, i;
	int err = 0;

	if (idx == NULL || t == NULL) {
		err = ENOMEM;
		goto out;
	}
	n = page_pick(r, page, idx);
	for (i = 0; i < n; i++) {
		const struct objfs_list_entry *e = &page->entries[idx[i]];
		size_t rlen = strlen(e->key) - plen;

		if (dlen + rlen > OBJFS_KEY_MAX) {
			err = ENAMETOOLONG;
			n = i;
			goto out;
		}
		t[i].dst = malloc(dlen + rlen + 1);
		if (t[i].dst == NULL) {
			err = ENOMEM;
			n = i;
			goto out;
		}
		memcpy(t[i].dst, r->dst, dlen);
		memcpy(t[i].dst + dlen, e->key + plen, rlen + 1);
		t[i].s = r->s;
		t[i].opts = r->o != NULL ? r->o->copy : NULL;
		t[i].src = e->key;
		t[i].size = e->size;
	}
	objfs_group_init(&g);
	for (i = 0; i < n; i++)
		run_task(r->o != NULL ? r->o->pool : NULL, &g, copy_run, &t[i]);
	objfs_group_wait(&g);
	for (i = 0; i < n; i++) {
		if (t[i].err != 0) {
			if (err == 0)
				err = t[i].err;
			continue;
		}
		r->st.count++;
		r->st.bytes += t[i].size;
		if (!r->keep)
			continue;
		if (keylist_add(&r->done_dst, t[i].dst) != 0 ||
		    keylist_add(&r->done_src, t[i].src) != 0) {
			/* The copy is made but cannot be tracked: delete it
			 * now so an undo has nothing it does not know of. */
			const char *k = t[i].dst;

			objfs_store_del_many(r->s, &k, 1, NULL);
			if (r->done_dst.n > r->done_src.n)
				free(r->done_dst.k[--r->done_dst.n]);
			if (err == 0)
				err = ENOMEM;
		}
	}
out:
	if (t != NULL) {
		for (i = 0; i < n; i++)
			free(t[i].dst);
	}
	free(t);
	free(idx);
	return err;
}

static int delete_page(void *arg, const struct objfs_list_page *page)
{
	struct tree_run *r = arg;
	size_t *idx = calloc(page->n_entries, sizeof(*idx));
	const char **keys = calloc(page->n_entries, sizeof(*keys));
	size_t n, i, failed = 0;
	int err = ENOMEM;

	if (idx == NULL || keys == NULL)
		goto out;
	n = page_pick(r, page, idx);
	for (i = 0; i < n; i++)
		keys[i] = page->entries[idx[i]].key;
	err = objfs_tree_del_keys(r->s, r->o != NULL ? r->o->pool : NULL,
				  keys, n, &failed);
	r->st.count += n - failed;
out:
	free(keys);
	free(idx);
	return err;
}

static void run_init(struct tree_run *r, struct objfs_store *s,
		     const char *src, const char *dst,
		     const struct objfs_tree_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->s = s;
	r->o = o;
	r->src = src;
	r->dst = dst;
}

static int run_done(struct tree_run *r, int err, struct objfs_tree_stats *st)
{
	if (st != NULL)
		*st = r->st;
	keylist_release(&r->done_src);
	keylist_release(&r->done_dst);
	return err;
}

int objfs_tree_size(struct objfs_store *s, const char *prefix,
		    const struct objfs_tree_opts *o,
		    struct objfs_tree_stats *st)
{
	struct tree_run r;

	run_init(&r, s, prefix, NULL, o);
	return run_done(&r, objfs_tree_walk(s, prefix, page_keys(o),
					    size_page, &r), st);
}

int objfs_tree_copy(struct objfs_store *s, const char *src, const char *dst,
		    const struct objfs_tree_opts *o,
		    struct objfs_tree_stats *st)
{
	struct tree_run r;

	run_init(&r, s, src, dst, o);
	return run_done(&r, objfs_tree_walk(s, src, page_keys(o),
					    copy_page, &r), st);
}

int objfs_tree_delete(struct objfs_store *s, const char *prefix,
		      const struct objfs_tree_opts *o,
		      struct objfs_tree_stats *st)
{
	struct tree_run r;

	run_init(&r, s, prefix, NULL, o);
	return run_done(&r, objfs_tree_walk(s, prefix, page_keys(o),
					    delete_page, &r), st);
}

int objfs_tree_move(struct objfs_store *s, const char *src, const char *dst,
		    const struct objfs_tree_opts *o,
		    struct objfs_tree_stats *st)
{
	struct objfs_pool *pool = o != NULL ? o->pool : NULL;
	struct objfs_log *log = o != NULL ? o->log : NULL;
	struct tree_run r;
	size_t failed = 0;
	int err, derr;

	run_init(&r, s, src, dst, o);
	r.keep = true;
	err = objfs_tree_walk(s, src, page_keys(o), copy_page, &r);
	if (err != 0) {
		/* Undo: the source is untouched, the copies go. */
		objfs_error(log, SUB, "moving %s to %s: %s; undoing %zu copies",
			    src, dst, objfs_strerror(err), r.done_dst.n);
		derr = objfs_tree_del_keys(s, pool,
					   (const char *const *)r.done_dst.k,
					   r.done_dst.n, &failed);
		if (derr != 0)
			objfs_error(log, SUB, "undoing the move of %s to %s: "
				    "%zu copies left: %s", src, dst, failed,
				    objfs_strerror(derr));
		r.st.left = failed;
		r.st.count = 0;
		r.st.bytes = 0;
		return run_done(&r, err, st);
	}
	err = objfs_tree_del_keys(s, pool, (const char *const *)r.done_src.k,
				  r.done_src.n, &failed);
	if (err != 0) {
		objfs_error(log, SUB, "moved %s to %s but %zu old keys remain: "
			    "%s", src, dst, failed, objfs_strerror(err));
		r.st.left = failed;
	}
	return run_done(&r, err, st);
}
