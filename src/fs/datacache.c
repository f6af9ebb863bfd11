/*
 * datacache.c - bounded on-disk chunk cache (see datacache.h).
 *
 * State under c->mu: a hash table id -> entry and an LRU list (head = most
 * recent).  File I/O runs without the lock: a put writes a temp file and
 * renames it into place before publishing the entry; an eviction unlinks
 * the file (a reader that already opened it still reads it whole).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/list.h"
#include "fs/datacache.h"

#define DC_BUCKETS 4096
#define DC_HDR_MAX 1200

struct dc_entry {
	uint64_t id;
	uint64_t size;
	struct dc_entry *hnext;
	struct objfs_list lru;          /* in c->lru */
};

#define DC_ENTRY(l) objfs_list_entry(l, struct dc_entry, lru)

struct objfs_dcache {
	pthread_mutex_t mu;
	char *dir;
	uint64_t limit;
	uint64_t used;                  /* mu */
	size_t count;                   /* mu */
	uint64_t seq;                   /* mu: temp names */
	uint64_t hits, misses, evictions;       /* mu */
	struct dc_entry *tab[DC_BUCKETS];
	struct objfs_list lru;          /* most recent first */
};

static uint64_t dc_id(const char *key, const char *etag, uint64_t off)
{
	uint64_t h = 1469598103934665603ULL;
	const char *p;

	for (p = key; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL;
	for (p = etag; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	h = (h ^ off) * 1099511628211ULL;
	return h ^ (off >> 32);
}

static int dc_header(char *buf, size_t cap, const char *key, const char *etag,
		     uint64_t off)
{
	int n = snprintf(buf, cap, "%s\n%s\n%" PRIu64 "\n", key, etag, off);

	return n < 0 || (size_t)n >= cap ? -1 : n;
}

int objfs_dcache_create(const char *dir, uint64_t limit,
			struct objfs_dcache **out)
{
	struct objfs_dcache *c;
	char path[4096];
	int n;

	if (snprintf(path, sizeof(path), "%s/objfs-cache-XXXXXX", dir) >=
	    (int)sizeof(path))
		return ENAMETOOLONG;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return ENOMEM;
	if (mkdtemp(path) == NULL) {
		n = errno;
		free(c);
		return n;
	}
	c->dir = strdup(path);
	if (c->dir == NULL) {
		rmdir(path);
		free(c);
		return ENOMEM;
	}
	pthread_mutex_init(&c->mu, NULL);
	objfs_list_init(&c->lru);
	c->limit = limit;
	*out = c;
	return 0;
}

static void dc_path(struct objfs_dcache *c, uint64_t id, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%016" PRIx64, c->dir, id);
}

static struct dc_entry **dc_slot(struct objfs_dcache *c, uint64_t id)
{
	struct dc_entry **pp = &c->tab[id % DC_BUCKETS];

	while (*pp != NULL && (*pp)->id != id)
		pp = &(*pp)->hnext;
	return pp;
}

/* Removes e from the table and the list and deletes its file (mu held). */
static void dc_drop(struct objfs_dcache *c, struct dc_entry *e)
{
	struct dc_entry **pp = dc_slot(c, e->id);
	char path[4200];

	if (*pp == e)
		*pp = e->hnext;
	objfs_list_remove(&e->lru);
	c->used -= e->size;
	c->count--;
	dc_path(c, e->id, path, sizeof(path));
	unlink(path);
	free(e);
}

void objfs_dcache_destroy(struct objfs_dcache *c)
{
	struct objfs_list *l;

	if (c == NULL)
		return;
	while ((l = objfs_list_first(&c->lru)) != NULL)
		dc_drop(c, DC_ENTRY(l));
	rmdir(c->dir);
	pthread_mutex_destroy(&c->mu);
	free(c->dir);
	free(c);
}

bool objfs_dcache_get(struct objfs_dcache *c, const char *key,
		      const char *etag, uint64_t off, void *buf, size_t cap,
		      size_t *got)
{
	uint64_t id = dc_id(key, etag, off);
	char path[4200], want[DC_HDR_MAX], have[DC_HDR_MAX];
	struct dc_entry *e;
	ssize_t n;
	int fd, hl;
	bool hit = false;

	if (etag == NULL || etag[0] == '\0')
		return false;
	hl = dc_header(want, sizeof(want), key, etag, off);
	if (hl < 0)
		return false;
	pthread_mutex_lock(&c->mu);
	e = *dc_slot(c, id);
	if (e != NULL) {
		objfs_list_remove(&e->lru);
		objfs_list_push_front(&c->lru, &e->lru);
	}
	if (e == NULL)
		c->misses++;
	pthread_mutex_unlock(&c->mu);
	if (e == NULL)
		return false;
	dc_path(c, id, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = pread(fd, have, (size_t)hl, 0);
		if (n == hl && memcmp(have, want, (size_t)hl) == 0) {
			n = pread(fd, buf, cap, hl);
			if (n >= 0) {
				*got = (size_t)n;
				hit = true;
			}
		}
		close(fd);
	}
	pthread_mutex_lock(&c->mu);
	if (hit)
		c->hits++;
	else
		c->misses++;
	pthread_mutex_unlock(&c->mu);
	return hit;
}

void objfs_dcache_put(struct objfs_dcache *c, const char *key,
		      const char *etag, uint64_t off, const void *buf,
		      size_t len)
{
	uint64_t id = dc_id(key, etag, off);
	char path[4200], tmp[4200], hdr[DC_HDR_MAX];
	struct dc_entry *e, **pp;
	struct objfs_list *l;
	uint64_t seq;
	int fd, hl;
	bool ok;

	if (etag == NULL || etag[0] == '\0' || len > c->limit)
		return;
	hl = dc_header(hdr, sizeof(hdr), key, etag, off);
	if (hl < 0)
		return;
	pthread_mutex_lock(&c->mu);
	seq = c->seq++;
	ok = *dc_slot(c, id) == NULL;
	pthread_mutex_unlock(&c->mu);
	if (!ok)
		return;
	dc_path(c, id, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s/tmp.%" PRIu64, c->dir, seq);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	ok = write(fd, hdr, (size_t)hl) == hl &&
	     write(fd, buf, len) == (ssize_t)len;
	close(fd);
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return;
	}
	e = calloc(1, sizeof(*e));
	pthread_mutex_lock(&c->mu);
	pp = dc_slot(c, id);
	if (e == NULL || *pp != NULL) {
		/* raced with another put of the same chunk: same bytes */
		pthread_mutex_unlock(&c->mu);
		free(e);
		return;
	}
	e->id = id;
	e->size = len;
	*pp = e;
	objfs_list_push_front(&c->lru, &e->lru);
	c->used += len;
	c->count++;
	while (c->used > c->limit &&
	       (l = objfs_list_last(&c->lru)) != &e->lru) {
		dc_drop(c, DC_ENTRY(l));
		c->evictions++;
	}
	pthread_mutex_unlock(&c->mu);
}

void objfs_dcache_stats(struct objfs_dcache *c, struct objfs_dcache_stats *out)
{
	pthread_mutex_lock(&c->mu);
	out->hits = c->hits;
	out->misses = c->misses;
	out->evictions = c->evictions;
	out->bytes = c->used;
	pthread_mutex_unlock(&c->mu);
}

uint64_t objfs_dcache_used(struct objfs_dcache *c)
{
	uint64_t u;

	pthread_mutex_lock(&c->mu);
	u = c->used;
	pthread_mutex_unlock(&c->mu);
	return u;
}

size_t objfs_dcache_count(struct objfs_dcache *c)
{
	size_t n;

	pthread_mutex_lock(&c->mu);
	n = c->count;
	pthread_mutex_unlock(&c->mu);
	return n;
}
