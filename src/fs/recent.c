/*
 * recent.c - the names this mount created or removed in the last
 * RECENT_WINDOW seconds, by directory key and name (recent.h).
 *
 * Why: a store's listing may lag behind its writes (Swift updates
 * container listings asynchronously: a listing right after 1,000 creates
 * once showed 998 names).  The snapshot of a listing (dirsnap.c) notes
 * local changes itself, but it lives dir_ttl, and the directory's inode
 * may be forgotten by the kernel; a new listing then comes from the store
 * alone.  This table outlives both: snap_note() (dirsnap.c), which every
 * local change of a directory's names passes through, notes each change
 * here, and snap_build() merges the changes of the directory it lists
 * into every whole listing: a name created here that the listing lacks is
 * added (without attributes: readdirplus and lookups fetch them as for
 * any listed name without), a name removed here that it still shows is
 * dropped, unless the listing shows it written after the removal (another
 * writer's new object).
 *
 * State (all under fs->lock, the caller's):
 *   dirs[]  hash of struct recent_dir by directory key: one chain walk
 *           finds the changes of the directory being listed, so a
 *           listing costs what its own directory holds, not the table;
 *   ents[]  hash of struct recent_ent by (dir, name): a change finds the
 *           earlier one of its name (the latest wins);
 *   age     every entry, oldest first: expiry pops its head while it is
 *           older than the window, and the bound (max) drops the oldest.
 * A directory entry lives while it holds changes.  Keys, not inode
 * numbers: the directory's inode may be forgotten and looked up again
 * meanwhile.
 *
 * Invariants: an entry is in exactly one dir's list, the hash chain of
 * (its dir, its name) and the age list; n counts them; no two entries
 * have the same dir and name; age is in order of time (a change moves
 * its entry to the tail).
 *
 * Lookups ask too (recent_find()): a directory made here that a lagging
 * listing does not show is asked for by its marker's HEAD.
 *
 * A directory renamed here moves the changes of its whole tree to the
 * new keys (recent_rename_dir()); the names the rename copied that were
 * not recent are not noted (see docs/objfs-mount.md).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs/recent.h"

static uint64_t str_hash(const char *s, uint64_t h)
{
	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

static unsigned dir_slot(const char *key)
{
	return (unsigned)(str_hash(key, 1469598103934665603ULL) %
			  RECENT_DIR_HASH);
}

static unsigned ent_slot(const struct recent_dir *d, const char *name)
{
	uint64_t h = (uint64_t)(uintptr_t)d * 0x9E3779B97F4A7C15ULL;

	return (unsigned)(str_hash(name, h ^ 1469598103934665603ULL) %
			  RECENT_ENT_HASH);
}

void recent_init(struct fs_recent *r)
{
	memset(r, 0, sizeof(*r));
	objfs_list_init(&r->age);
	r->max = RECENT_MAX;
	r->window = RECENT_WINDOW;
}

static struct recent_dir *dir_find(struct fs_recent *r, const char *key)
{
	struct recent_dir *d;

	for (d = r->dirs[dir_slot(key)]; d != NULL; d = d->hnext) {
		if (strcmp(d->key, key) == 0)
			return d;
	}
	return NULL;
}

/* The directory called key, made when absent; NULL when out of memory. */
static struct recent_dir *dir_get(struct fs_recent *r, const char *key)
{
	struct recent_dir *d = dir_find(r, key);
	size_t len = strlen(key);
	unsigned h;

	if (d != NULL)
		return d;
	d = malloc(sizeof(*d) + len + 1);
	if (d == NULL)
		return NULL;
	memcpy(d->key, key, len + 1);
	objfs_list_init(&d->ents);
	d->n = 0;
	h = dir_slot(key);
	d->hnext = r->dirs[h];
	r->dirs[h] = d;
	return d;
}

/* Unhashes and frees d (no entries left). */
static void dir_free(struct fs_recent *r, struct recent_dir *d)
{
	struct recent_dir **p = &r->dirs[dir_slot(d->key)];

	while (*p != d)
		p = &(*p)->hnext;
	*p = d->hnext;
	free(d);
}

static struct recent_ent *ent_find(struct fs_recent *r,
				   const struct recent_dir *d,
				   const char *name)
{
	struct recent_ent *e;

	for (e = r->ents[ent_slot(d, name)]; e != NULL; e = e->hnext) {
		if (e->dir == d && strcmp(e->name, name) == 0)
			return e;
	}
	return NULL;
}

/* Takes e out of its hash chain and its directory (freed when it holds
 * no more); the age list and r->n are the caller's. */
static void ent_unlink_dir(struct fs_recent *r, struct recent_ent *e)
{
	struct recent_ent **p = &r->ents[ent_slot(e->dir, e->name)];
	struct recent_dir *d = e->dir;

	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	objfs_list_remove(&e->in_dir);
	e->dir = NULL;
	if (--d->n == 0)
		dir_free(r, d);
}

/* Puts e (in no directory) into d. */
static void ent_link_dir(struct fs_recent *r, struct recent_ent *e,
			 struct recent_dir *d)
{
	unsigned h = ent_slot(d, e->name);

	e->dir = d;
	e->hnext = r->ents[h];
	r->ents[h] = e;
	objfs_list_push_back(&d->ents, &e->in_dir);
	d->n++;
}

static void ent_free(struct fs_recent *r, struct recent_ent *e)
{
	ent_unlink_dir(r, e);
	objfs_list_remove(&e->age);
	r->n--;
	free(e);
}

static void expire(struct fs_recent *r, double now)
{
	struct objfs_list *l;

	while ((l = objfs_list_first(&r->age)) != NULL) {
		struct recent_ent *e = objfs_list_entry(l, struct recent_ent, age);

		if (now - e->time < r->window)
			break;
		ent_free(r, e);
	}
}

void recent_release(struct fs_recent *r)
{
	struct objfs_list *l;

	while ((l = objfs_list_first(&r->age)) != NULL)
		ent_free(r, objfs_list_entry(l, struct recent_ent, age));
}

void recent_note(struct fs_recent *r, const char *dkey, const char *name,
		 bool add, bool is_dir, double now, struct timespec when)
{
	struct recent_dir *d;
	struct recent_ent *e;
	size_t len = strlen(name);

	expire(r, now);
	d = dir_get(r, dkey);
	if (d == NULL)
		return;
	e = ent_find(r, d, name);
	if (e == NULL) {
		struct objfs_list *l;

		if (r->n >= r->max && (l = objfs_list_first(&r->age)) != NULL) {
			struct recent_ent *old = objfs_list_entry(l, struct recent_ent,
								  age);

			if (old->dir == d && d->n == 1)
				d = NULL;       /* freed with it: looked up again */
			ent_free(r, old);
			r->dropped++;
			if (d == NULL && (d = dir_get(r, dkey)) == NULL)
				return;
		}
		e = malloc(sizeof(*e) + len + 1);
		if (e == NULL) {
			if (d->n == 0)
				dir_free(r, d);
			return;
		}
		memcpy(e->name, name, len + 1);
		ent_link_dir(r, e, d);
		objfs_list_init(&e->age);
		r->n++;
	}
	e->add = add;
	e->is_dir = is_dir;
	e->time = now;
	e->when = when;
	objfs_list_remove(&e->age);
	objfs_list_push_back(&r->age, &e->age);
}

/* Whether key is from or under it (from ends in '/'). */
static bool under(const char *key, const char *from, size_t flen)
{
	return strncmp(key, from, flen) == 0;
}

/* Frees every change of d, and d with the last. */
static void dir_clear(struct fs_recent *r, struct recent_dir *d)
{
	bool last;

	do {
		struct recent_ent *e = objfs_list_entry(d->ents.next,
							struct recent_ent,
							in_dir);

		last = d->n == 1;
		ent_free(r, e);
	} while (!last);
}

/* Frees the changes of every directory at or under key. */
static void tree_clear(struct fs_recent *r, const char *key)
{
	size_t len = strlen(key);
	struct recent_dir *d, *next;
	unsigned h;

	for (h = 0; h < RECENT_DIR_HASH; h++) {
		for (d = r->dirs[h]; d != NULL; d = next) {
			next = d->hnext;        /* d may go */
			if (under(d->key, key, len))
				dir_clear(r, d);
		}
	}
}

/* Moves the changes of d to the directory called key (none of its names
 * there: the caller cleared it); d is freed. */
static void dir_move(struct fs_recent *r, struct recent_dir *d,
		     const char *key)
{
	struct recent_dir *nd = dir_get(r, key);
	bool last;

	if (nd == NULL) {
		dir_clear(r, d);        /* out of memory: they name nothing */
		return;
	}
	do {
		struct recent_ent *e = objfs_list_entry(d->ents.next,
							struct recent_ent,
							in_dir);

		last = d->n == 1;
		ent_unlink_dir(r, e);   /* frees d with its last */
		ent_link_dir(r, e, nd);
	} while (!last);
}

void recent_rename_dir(struct fs_recent *r, const char *from, const char *to,
		       double now)
{
	size_t flen = strlen(from), tlen = strlen(to), n = 0, i;
	struct recent_dir **moved = NULL, *d;
	unsigned h;

	expire(r, now);
	if (flen == 0 || strcmp(from, to) == 0)
		return;         /* the root is never renamed */
	/* what was at or under to is replaced by the renamed tree (never
	 * under from, nor from under it: rename(2) refuses both) */
	tree_clear(r, to);
	/* the directories of the tree, collected first: moving rehashes */
	for (h = 0; h < RECENT_DIR_HASH; h++) {
		for (d = r->dirs[h]; d != NULL; d = d->hnext)
			n += under(d->key, from, flen);
	}
	if (n == 0)
		return;
	moved = malloc(n * sizeof(*moved));
	if (moved == NULL) {
		tree_clear(r, from);    /* they name nothing now */
		return;
	}
	for (h = 0, i = 0; h < RECENT_DIR_HASH; h++) {
		for (d = r->dirs[h]; d != NULL; d = d->hnext) {
			if (under(d->key, from, flen))
				moved[i++] = d;
		}
	}
	for (i = 0; i < n; i++) {
		size_t klen = strlen(moved[i]->key) - flen;
		char *key = malloc(tlen + klen + 1);

		if (key == NULL) {
			dir_clear(r, moved[i]);
			continue;
		}
		memcpy(key, to, tlen);
		memcpy(key + tlen, moved[i]->key + flen, klen + 1);
		dir_move(r, moved[i], key);
		free(key);
	}
	free(moved);
}

const struct recent_ent *recent_find(struct fs_recent *r, const char *dkey,
				     const char *name, double now)
{
	struct recent_dir *d;

	expire(r, now);
	d = dir_find(r, dkey);
	return d != NULL ? ent_find(r, d, name) : NULL;
}

void recent_each(struct fs_recent *r, const char *dkey, double now,
		 void (*fn)(void *arg, const struct recent_ent *e), void *arg)
{
	struct recent_dir *d;
	struct objfs_list *l;

	expire(r, now);
	d = dir_find(r, dkey);
	if (d == NULL)
		return;
	objfs_list_each(l, &d->ents)
		fn(arg, objfs_list_entry(l, struct recent_ent, in_dir));
}

void recent_forget(struct fs_recent *r, const char *dkey, const char *name)
{
	struct recent_dir *d = dir_find(r, dkey);
	struct recent_ent *e = d != NULL ? ent_find(r, d, name) : NULL;

	if (e != NULL)
		ent_free(r, e);
}
