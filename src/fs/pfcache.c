/*
 * pfcache.c - the prefetch cache (see pfcache.h).
 *
 * Entries are few (a reader's next files, a few dozen at most), so they
 * sit in one list, oldest first, searched linearly by key or by id; a
 * loading entry's bytes are counted from its reservation.  Lookups that
 * wait for a loading entry sleep on cv, which every fill and drop wakes.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "fs/pfcache.h"

struct pfent {
	struct objfs_list link;         /* in lru, oldest first */
	uint64_t id;
	bool loading;
	double when;                    /* its GET started */
	size_t charge;                  /* bytes counted */
	char *data;
	size_t len;
	char *key;
	unsigned char attr[];
};

#define PFENT(l) objfs_list_entry(l, struct pfent, link)

struct objfs_pfcache {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t limit;
	unsigned max_entries;
	size_t attr_size;
	uint64_t next_id;
	struct objfs_list lru;          /* struct pfent, oldest first */
	struct objfs_pfcache_stats st;
};

int objfs_pfcache_create(uint64_t limit, unsigned max_entries,
			 size_t attr_size, struct objfs_pfcache **out)
{
	struct objfs_pfcache *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (c == NULL)
		return ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->limit = limit ? limit : 1;
	c->max_entries = max_entries ? max_entries : 1;
	c->attr_size = attr_size;
	c->next_id = 1;
	objfs_list_init(&c->lru);
	*out = c;
	return 0;
}

/* Unlinks and frees e (mu held). */
static void ent_free(struct objfs_pfcache *c, struct pfent *e)
{
	objfs_list_remove(&e->link);
	c->st.bytes -= e->charge;
	c->st.entries--;
	free(e->data);
	free(e->key);
	free(e);
}

void objfs_pfcache_destroy(struct objfs_pfcache *c)
{
	struct objfs_list *l;

	if (c == NULL)
		return;
	while ((l = objfs_list_first(&c->lru)) != NULL)
		ent_free(c, PFENT(l));
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static struct pfent *find_key(struct objfs_pfcache *c, const char *key)
{
	struct objfs_list *l;

	objfs_list_each(l, &c->lru)
		if (strcmp(PFENT(l)->key, key) == 0)
			return PFENT(l);
	return NULL;
}

uint64_t objfs_pfcache_reserve(struct objfs_pfcache *c, const char *key,
			       size_t len, double now)
{
	struct objfs_list *l, *tmp;
	struct pfent *e;
	uint64_t id = 0;

	if (len > c->limit)
		return 0;
	e = calloc(1, sizeof(*e) + c->attr_size);
	if (e == NULL)
		return 0;
	e->key = strdup(key);
	if (e->key == NULL) {
		free(e);
		return 0;
	}
	pthread_mutex_lock(&c->mu);
	if (find_key(c, key) != NULL)
		goto out;
	/* push out the oldest ready entries until it fits */
	objfs_list_each_safe(l, tmp, &c->lru) {
		if (c->st.bytes + len <= c->limit &&
		    c->st.entries + 1 <= c->max_entries)
			break;
		if (!PFENT(l)->loading) {
			c->st.evicted++;
			ent_free(c, PFENT(l));
		}
	}
	if (c->st.bytes + len > c->limit ||
	    c->st.entries + 1 > c->max_entries)
		goto out;
	e->id = id = c->next_id++;
	e->loading = true;
	e->when = now;
	e->charge = len;
	objfs_list_push_back(&c->lru, &e->link);
	c->st.bytes += len;
	c->st.entries++;
	c->st.reserved++;
	e = NULL;
out:
	pthread_mutex_unlock(&c->mu);
	if (e != NULL) {
		free(e->key);
		free(e);
	}
	return id;
}

void objfs_pfcache_fill(struct objfs_pfcache *c, uint64_t id, int err,
			char *data, size_t len, const void *attr)
{
	struct objfs_list *l;
	struct pfent *e = NULL;

	pthread_mutex_lock(&c->mu);
	objfs_list_each(l, &c->lru) {
		if (PFENT(l)->id == id && PFENT(l)->loading) {
			e = PFENT(l);
			break;
		}
	}
	if (e != NULL && (err != 0 || len > e->charge)) {
		c->st.failed++;
		ent_free(c, e);
	} else if (e != NULL) {
		e->loading = false;
		e->data = data;
		e->len = len;
		data = NULL;
		memcpy(e->attr, attr, c->attr_size);
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	free(data);
}

bool objfs_pfcache_get(struct objfs_pfcache *c, const char *key, bool wait,
		       bool take, double not_before, void *attr, double *when,
		       char **data, size_t *len)
{
	struct pfent *e;
	bool hit = false;

	*data = NULL;
	*len = 0;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		e = find_key(c, key);
		if (e == NULL || !e->loading || !wait)
			break;
		pthread_cond_wait(&c->cv, &c->mu);
	}
	if (e != NULL && !e->loading && e->when < not_before) {
		c->st.expired++;
		ent_free(c, e);
	} else if (e != NULL && !e->loading) {
		hit = true;
		c->st.hits++;
		memcpy(attr, e->attr, c->attr_size);
		*when = e->when;
		*len = e->len;
		if (take) {
			c->st.taken++;
			*data = e->data;
			e->data = NULL;
			ent_free(c, e);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

void objfs_pfcache_drop(struct objfs_pfcache *c, const char *key)
{
	struct pfent *e;

	pthread_mutex_lock(&c->mu);
	e = find_key(c, key);
	if (e != NULL) {
		c->st.dropped++;
		ent_free(c, e);
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
}

void objfs_pfcache_drop_prefix(struct objfs_pfcache *c, const char *prefix)
{
	size_t n = strlen(prefix);
	struct objfs_list *l, *tmp;

	pthread_mutex_lock(&c->mu);
	objfs_list_each_safe(l, tmp, &c->lru) {
		if (strncmp(PFENT(l)->key, prefix, n) == 0) {
			c->st.dropped++;
			ent_free(c, PFENT(l));
		}
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

void objfs_pfcache_stats(struct objfs_pfcache *c,
			 struct objfs_pfcache_stats *out)
{
	pthread_mutex_lock(&c->mu);
	*out = c->st;
	pthread_mutex_unlock(&c->mu);
}
