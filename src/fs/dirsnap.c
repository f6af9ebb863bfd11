/*
 * dirsnap.c - directory listings (snapshots) and readdir entries.
 *
 * A snapshot is a sorted, deduplicated listing of one directory: the
 * store's keys and prefixes plus names created here and not yet uploaded,
 * and (a whole listing) with the names created or removed here lately
 * that the store's listing does not show yet (recent.c: listings lag
 * behind writes on some stores).
 * dir->snap holds the directory's current one (a reference); each open
 * readdir handle holds the one it started with (its offsets index it).
 * Listings are trusted for dir_ttl; a local change is noted in place
 * (snap_note()) while only the directory holds its snapshot, and drops it
 * when handles share it.  A snapshot is freed with its last reference;
 * all of it under fs->lock.  For readdirplus, snap_reply_attrs() fills in
 * entry attributes from the attribute index (attrindex.c) once per
 * snapshot; the HEADs of subdirectories' markers (never in the index)
 * run while the index is read, and the index is not read when this mount
 * knows every file of the listing (it made them).  Files the index does
 * not describe (another client's) are HEADed on the pool only once the
 * reader looked up a name a reply gave without attributes (stat_ahead:
 * `ls -l`), HEAD_BATCH ahead of each reply; `ls -f` sends none (issue
 * 33).  snap_fetch_attrs() (a walk's prefetch) HEADs them all at once.
 *
 * Renewal (issues 31 and 33): a whole listing of SNAP_RELIST_MAX names or
 * more is not listed whole again each dir_ttl.  snap_build() renews it
 * (snap_renew()) while its last whole listing (full_time) is younger than
 * SNAP_FULL_TTLS x dir_ttl: one LIST of the keys after the last key the
 * store listed (tail; a full page of them: listed whole), and the entries
 * of the index segments it has not read (segs) that other mounts wrote
 * after the whole listing began (full_real); this mount's own changes are
 * in it already (snap_note()).  The renewed listing is fresh for dir_ttl
 * again; one listed whole longer ago is listed whole.  States of
 * dir->snap: none -> whole (snap_build) -> renewed (snap_renew, any
 * number of times) -> whole again past the period; a local change keeps
 * it in either state (snap_note()).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tree.h"
#include "common/log.h"
#include "fs/fs_int.h"
#include "volume/attrseg.h"
#include "volume/hlink.h"

void snap_put_locked(struct dirsnap *s)
{
	size_t i;

	assert(s == NULL || s->refs > 0);
	if (s == NULL || --s->refs > 0)
		return;
	for (i = 0; i < s->n; i++) {
		free(s->e[i].name);
		free(s->e[i].link);
	}
	free(s->e);
	free(s->after);
	free(s->tail);
	objfs_tree_keys_free(s->segs, s->nsegs);
	free(s);
}

void snap_drop(struct inode *dir)
{
	if (dir != NULL && dir->snap != NULL) {
		snap_put_locked(dir->snap);
		dir->snap = NULL;
	}
}

/* Finds name in a snapshot: its index, or where it would go (*found). */
size_t snap_find(const struct dirsnap *s, const char *name, bool *found)
{
	size_t lo = 0, hi = s->n;

	*found = false;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(s->e[mid].name, name);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A private copy of s (same time), or NULL when out of memory. */
static struct dirsnap *snap_clone(const struct dirsnap *s)
{
	struct dirsnap *c = calloc(1, sizeof(*c));
	size_t i;

	if (c == NULL)
		return NULL;
	*c = *s;
	c->refs = 1;
	c->after = NULL;        /* only whole listings are dir->snap */
	c->tail = NULL;
	c->segs = NULL;
	c->nsegs = 0;
	c->segs_known = false;
	c->e = malloc((s->n ? s->n : 1) * sizeof(*c->e));
	if (c->e == NULL) {
		free(c);
		return NULL;
	}
	c->tail = s->tail != NULL ? strdup(s->tail) : NULL;
	if (s->segs_known && s->nsegs > 0 &&
	    (c->segs = calloc(s->nsegs, sizeof(*c->segs))) != NULL) {
		for (i = 0; i < s->nsegs && c->segs != NULL; i++) {
			c->segs[i] = strdup(s->segs[i]);
			if (c->segs[i] == NULL) {
				objfs_tree_keys_free(c->segs, i);
				c->segs = NULL;
			}
		}
	}
	c->nsegs = c->segs != NULL ? s->nsegs : 0;
	c->segs_known = s->segs_known && (s->nsegs == 0 || c->segs != NULL);
	for (i = 0; i < s->n; i++) {
		c->e[i] = s->e[i];
		c->e[i].name = strdup(s->e[i].name);
		c->e[i].link = s->e[i].link ? strdup(s->e[i].link) : NULL;
		if (c->e[i].name == NULL ||
		    (s->e[i].link != NULL && c->e[i].link == NULL)) {
			c->n = i + 1;
			snap_put_locked(c);
			return NULL;
		}
	}
	return c;
}

static int64_t ts_ns_of(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool snap_empty_fresh(const struct objfs_fs *fs, const struct inode *dir)
{
	const struct dirsnap *s = dir->snap;

	return s != NULL && s->n == 0 && !s->more && s->base == 0 &&
	       now_mono() - s->time < fs->o.dir_ttl;
}

/* Notes a change of dir's names in fs->recent (fs->lock). */
static void recent_of(struct objfs_fs *fs, struct inode *dir,
		      const char *name, bool add, bool is_dir)
{
	char dkey[KEYBUF];

	if (inode_key(fs, dir, true, dkey, sizeof(dkey)) == 0)
		recent_note(&fs->recent, dkey, name, add, is_dir, now_mono(),
			    now_real());
}

void snap_note_stored(struct objfs_fs *fs, struct inode *in)
{
	fs_assert_locked(fs);
	if (in->linked && in->parent != NULL && !in->hl.data)
		recent_of(fs, in->parent, in->name, true, S_ISDIR(in->mode));
}

/* Keeps dir's listing current after a local change (fs->lock): the name
 * is added (add) or removed, here and in fs->recent.  A listing that
 * readdir handles share stays theirs (their offsets index it): the
 * directory gets a copy first. */
void snap_note(struct objfs_fs *fs, struct inode *dir, const char *name,
	       bool add, bool is_dir)
{
	struct dirsnap *s = dir != NULL ? dir->snap : NULL;
	bool found;
	size_t i;

	fs_assert_locked(fs);
	if (dir != NULL)
		recent_of(fs, dir, name, add, is_dir);
	if (s == NULL) {
		if (dir != NULL)
			dir_entry_changed(dir, is_dir, add ? 1 : -1);
		return;
	}
	snap_find(s, name, &found);
	dir_entry_changed(dir, is_dir, add == found ? 0 : add ? 1 : -1);
	if (s->refs > 1) {
		struct dirsnap *c = snap_clone(s);

		snap_drop(dir);
		if (c == NULL)
			return;
		dir->snap = s = c;
	}
	i = snap_find(s, name, &found);
	if (add && !found) {
		struct dent *e = realloc(s->e, (s->n + 1) * sizeof(*e));
		char *nm = strdup(name);

		if (e == NULL || nm == NULL) {
			if (e != NULL)
				s->e = e;
			free(nm);
			snap_drop(dir);
			return;
		}
		s->e = e;
		memmove(&e[i + 1], &e[i], (s->n - i) * sizeof(*e));
		memset(&e[i], 0, sizeof(*e));
		e[i].name = nm;
		e[i].is_dir = is_dir;
		s->n++;
		if (s->ndirs >= 0)
			s->ndirs += is_dir;
	} else if (add) {
		if (s->ndirs >= 0)
			s->ndirs += (long)is_dir - (long)s->e[i].is_dir;
		s->e[i].is_dir = is_dir;
		/* another object under the name now (a rename over it, a
		 * link name): what the entry says of the one it replaced
		 * (ETag, Last-Modified, size) must not match that one's
		 * attribute index entry (issue 34: a hard link's name taken
		 * for the plain file it replaced, a second inode of its set) */
		s->e[i].have_attr = false;
		s->e[i].hlink = false;
		s->e[i].etag[0] = '\0';
		s->e[i].size = 0;
		s->e[i].mtime.tv_sec = 0;
		s->e[i].mtime.tv_nsec = 0;
		s->e[i].ict = 0;
		free(s->e[i].link);
		s->e[i].link = NULL;
	} else if (found) {
		if (s->ndirs >= 0)
			s->ndirs -= s->e[i].is_dir;
		free(s->e[i].name);
		free(s->e[i].link);
		memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof(*s->e));
		s->n--;
	}
}

static int dent_cmp(const void *a, const void *b)
{
	const struct dent *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	/* a file sorts before a directory of the same name */
	return (int)x->is_dir - (int)y->is_dir;
}

static int snap_add(struct dirsnap *s, size_t *cap, const char *name,
		    bool is_dir, uint64_t size, const char *etag,
		    const struct timespec *mtime)
{
	struct dent *d;

	if (s->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;

		d = realloc(s->e, nc * sizeof(*d));
		if (d == NULL)
			return ENOMEM;
		s->e = d;
		*cap = nc;
	}
	d = &s->e[s->n];
	memset(d, 0, sizeof(*d));
	d->name = strdup(name);
	if (d->name == NULL)
		return ENOMEM;
	d->is_dir = is_dir;
	d->size = size;
	if (etag != NULL)
		snprintf(d->etag, sizeof(d->etag), "%s", etag);
	if (mtime != NULL)
		d->mtime = *mtime;
	s->n++;
	return 0;
}

/* The merge of fs->recent into a whole listing (merge_one() for each
 * change of its directory): the listing's own n0 entries are sorted;
 * names added go after them, names dropped are marked in gone. */
struct verified;
struct merge {
	struct dirsnap *s;
	size_t *cap;
	size_t n0;
	bool *gone;
	size_t added, dropped;
	const struct verified *ok;      /* the adds the store confirmed */
};

/* Whether a listing entry was written after a removal noted at when:
 * another writer's object (Last-Modified is in whole seconds on Swift,
 * and the store's clock is not ours: a second's margin). */
static bool written_after(const struct dent *d, const struct timespec *when)
{
	return !d->is_dir && d->mtime.tv_sec > when->tv_sec + 1;
}

/* The names made here lately that a whole listing lacks, each confirmed
 * by the store (snap_verify_recent()): a lagging listing and a removal by
 * another mount look alike, and only the second is gone from a HEAD. */
struct verified {
	char **names;           /* sorted: the ones the store has */
	size_t n, cap;
	const struct dirsnap *view;
	char **ask;             /* the ones to ask about, and their kind */
	bool *ask_dir;
	size_t n_ask, cap_ask;
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool verified_has(const struct verified *v, const char *name)
{
	return v != NULL && v->n > 0 &&
	       bsearch(&name, v->names, v->n, sizeof(*v->names), name_cmp) != NULL;
}

static void ask_one(void *arg, const struct recent_ent *c)
{
	struct verified *v = arg;
	bool found;

	if (!c->add)
		return;
	snap_find(v->view, c->name, &found);
	if (found)
		return;
	if (v->n_ask == v->cap_ask) {
		size_t nc = v->cap_ask ? 2 * v->cap_ask : 16;
		char **a = realloc(v->ask, nc * sizeof(*a));
		bool *d = a != NULL ? realloc(v->ask_dir, nc * sizeof(*d)) : NULL;

		if (a != NULL)
			v->ask = a;
		if (d == NULL)
			return;
		v->ask_dir = d;
		v->cap_ask = nc;
	}
	v->ask[v->n_ask] = strdup(c->name);
	if (v->ask[v->n_ask] != NULL)
		v->ask_dir[v->n_ask++] = c->is_dir;
}

/* Before the merge (fs->lock not held): asks the store, with a HEAD each,
 * about the names made here lately that s (a whole listing of dkey,
 * sorted here) lacks.  Those it has (or cannot say: an error) go into v;
 * those it answers ENOENT for were removed by another mount, and are
 * forgotten. */
static void snap_verify_recent(struct objfs_fs *fs, const char *dkey,
			       struct dirsnap *s, struct verified *v)
{
	char key[KEYBUF];
	size_t i;

	if (s->n > 1)
		qsort(s->e, s->n, sizeof(*s->e), dent_cmp);
	v->view = s;
	pthread_mutex_lock(&fs->lock);
	recent_each(&fs->recent, dkey, now_mono(), ask_one, v);
	pthread_mutex_unlock(&fs->lock);
	if (v->n_ask == 0)
		return;
	v->names = calloc(v->n_ask, sizeof(*v->names));
	for (i = 0; i < v->n_ask; i++) {
		struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
		int err = objfs_key_join(dkey, v->ask[i], v->ask_dir[i], key,
					 sizeof(key));

		if (err == 0)
			err = objfs_store_head(fs->store, key, &info);
		objfs_obj_info_release(&info);
		if (err == ENOENT) {
			pthread_mutex_lock(&fs->lock);
			recent_forget(&fs->recent, dkey, v->ask[i]);
			pthread_mutex_unlock(&fs->lock);
		} else if (v->names != NULL) {
			v->names[v->n++] = v->ask[i];
			v->ask[i] = NULL;
		}
		free(v->ask[i]);
	}
	if (v->n > 1)
		qsort(v->names, v->n, sizeof(*v->names), name_cmp);
}

static void verified_release(struct verified *v)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		free(v->names[i]);
	free(v->names);
	free(v->ask);
	free(v->ask_dir);
}

static void merge_one(void *arg, const struct recent_ent *c)
{
	struct merge *m = arg;
	struct dirsnap view = { .n = m->n0, .e = m->s->e };
	bool found;
	size_t i = snap_find(&view, c->name, &found);

	if (c->add && !found && verified_has(m->ok, c->name)) {
		/* no attributes: readdirplus and lookups fetch them as for
		 * any name listed without */
		if (snap_add(m->s, m->cap, c->name, c->is_dir, 0, NULL,
			     NULL) == 0)
			m->added++;
	} else if (!c->add && found && !m->gone[i] &&
		   m->s->e[i].is_dir == c->is_dir &&
		   !written_after(&m->s->e[i], &c->when)) {
		m->gone[i] = true;
		m->dropped++;
	}
}

/* Merges the names created or removed here lately (fs->recent) into s,
 * a whole listing of the directory whose key is dkey, sorted and
 * deduplicated: a name created here the listing lacks is added, one
 * removed here it still shows is dropped.  Out of memory: s stays the
 * store's listing.  fs->lock held. */
static void snap_merge_recent(struct objfs_fs *fs, const char *dkey,
			      struct dirsnap *s, size_t *cap,
			      const struct verified *ok)
{
	struct merge m = { s, cap, s->n, NULL, 0, 0, ok };
	size_t i, j;

	m.gone = calloc(s->n ? s->n : 1, sizeof(*m.gone));
	if (m.gone == NULL)
		return;
	recent_each(&fs->recent, dkey, now_mono(), merge_one, &m);
	if (m.dropped > 0) {
		for (i = 0, j = 0; i < s->n; i++) {
			if (i < m.n0 && m.gone[i]) {
				free(s->e[i].name);
				free(s->e[i].link);
				continue;
			}
			s->e[j++] = s->e[i];
		}
		s->n = j;
	}
	if (m.added > 0 && s->n > 1)
		qsort(s->e, s->n, sizeof(*s->e), dent_cmp);
	if (m.added > 0 || m.dropped > 0)
		objfs_debug(fs->log, SUB, "listing of \"%s\": %zu names made "
			    "here added, %zu removed here dropped (the store's "
			    "listing lags)", dkey, m.added, m.dropped);
	free(m.gone);
}

/* The last key or prefix of a page (NULL: an empty one). */
static const char *page_last(const struct objfs_list_page *pg)
{
	const char *last = pg->n_entries > 0 ?
			   pg->entries[pg->n_entries - 1].key : NULL;

	if (pg->n_prefixes > 0 &&
	    (last == NULL || strcmp(pg->prefixes[pg->n_prefixes - 1], last) > 0))
		last = pg->prefixes[pg->n_prefixes - 1];
	return last;
}

/* Adds the children of dkey a page lists to s, those up to the key to
 * only (NULL: all). */
static int page_add(struct dirsnap *s, size_t *cap, const char *dkey,
		    const struct objfs_list_page *pg, const char *to)
{
	char name[OBJFS_NAME_MAX + 1];
	const char *last;
	size_t i;
	int err = 0;

	for (i = 0; i < pg->n_entries && err == 0; i++) {
		const struct objfs_list_entry *e = &pg->entries[i];

		if ((to == NULL || strcmp(e->key, to) <= 0) &&
		    objfs_key_child(dkey, e->key, false, name, sizeof(name)))
			err = snap_add(s, cap, name, false, e->size, e->etag,
				       &e->mtime);
	}
	for (i = 0; i < pg->n_prefixes && err == 0; i++) {
		if ((to == NULL || strcmp(pg->prefixes[i], to) <= 0) &&
		    objfs_key_child(dkey, pg->prefixes[i], true, name,
				    sizeof(name)))
			err = snap_add(s, cap, name, true, 0, NULL, NULL);
	}
	last = page_last(pg);
	if (err == 0 && last != NULL && (to == NULL || strcmp(last, to) <= 0) &&
	    (s->tail == NULL || strcmp(last, s->tail) > 0)) {
		char *t = strdup(last);

		if (t == NULL)
			return ENOMEM;
		free(s->tail);
		s->tail = t;
	}
	return err;
}

/* One range of a listing in ranges: the keys after `from` up to `to`
 * (NULL: to the end), its pages kept for the caller. */
#define RANGE_STEP 1000         /* names the index gives a range: one
				   page (a name it does not know, a
				   second) */
#define RANGE_PAGES 3           /* more: the index was far off */
struct range_task {
	struct objfs_fs *fs;
	const char *dkey, *from, *to;
	struct objfs_list_page pages[RANGE_PAGES];
	unsigned np;
	bool overflow;
	int err;
};

static void range_run(void *arg)
{
	struct range_task *t = arg;
	struct objfs_list_req rq = { t->dkey, "/", NULL, t->from, 1000 };
	char *token = NULL;

	for (;;) {
		struct objfs_list_page *pg = &t->pages[t->np];
		const char *last;

		rq.continuation = token;
		t->err = objfs_store_list(t->fs->store, &rq, pg);
		free(token);
		token = NULL;
		if (t->err != 0) {
			objfs_list_page_release(pg);
			break;
		}
		t->np++;
		last = page_last(pg);
		if (pg->next == NULL ||
		    (t->to != NULL && last != NULL && strcmp(last, t->to) >= 0))
			break;
		if (t->np == RANGE_PAGES) {
			t->overflow = true;
			break;
		}
		token = pg->next;
		pg->next = NULL;
	}
}

/* Lists the rest of a directory, after s->after, in parallel ranges
 * split at names its attribute index holds (pre), when it holds enough:
 * true when it did (the names added to s; *err: ENOMEM), false when the
 * caller lists on page by page (nothing added: no index, too few names,
 * a range far off what the index said, a failure, or more names than a
 * whole listing holds). */
static bool snap_ranges(struct objfs_fs *fs, const char *dkey,
			struct dirsnap *s, size_t *cap, struct aidx_pre *pre,
			int *err)
{
	struct range_task *t = NULL;
	struct objfs_group g;
	char **b = NULL;
	size_t nb = 0, i, total = s->n;
	unsigned k;
	bool ok = false;

	if (fs->pool == NULL || fs->o.dir_window < 2 * RANGE_STEP ||
	    aidx_pre_split(pre, s->after, RANGE_STEP,
			   fs->o.dir_window / RANGE_STEP, &b, &nb) != 0 ||
	    nb == 0 || (t = calloc(nb + 1, sizeof(*t))) == NULL)
		goto out;
	objfs_group_init(&g);
	for (i = 0; i <= nb; i++) {
		t[i].fs = fs;
		t[i].dkey = dkey;
		t[i].from = i == 0 ? s->after : b[i - 1];
		t[i].to = i < nb ? b[i] : NULL;
		if (i == nb || objfs_pool_submit(fs->pool, &g, range_run,
						 &t[i]) != 0)
			range_run(&t[i]);
	}
	objfs_group_wait(&g);
	ok = true;
	for (i = 0; i <= nb; i++) {
		ok = ok && t[i].err == 0 && !t[i].overflow;
		for (k = 0; k < t[i].np; k++)
			total += t[i].pages[k].n_entries +
				 t[i].pages[k].n_prefixes;
	}
	if (total > fs->o.dir_window)
		ok = false;     /* in windows, by the caller */
	for (i = 0; ok && *err == 0 && i <= nb; i++) {
		for (k = 0; *err == 0 && k < t[i].np; k++)
			*err = page_add(s, cap, dkey, &t[i].pages[k], t[i].to);
	}
	if (ok)
		__atomic_add_fetch(&fs->listed_ranges, 1, __ATOMIC_RELAXED);
out:
	for (i = 0; t != NULL && i <= nb; i++) {
		for (k = 0; k < t[i].np; k++)
			objfs_list_page_release(&t[i].pages[k]);
	}
	free(t);
	objfs_tree_keys_free(b, nb);
	return ok;
}

/* ---- renewing a large listing ----------------------------------------- */

bool snap_renewable(const struct objfs_fs *fs, const struct inode *dir)
{
	const struct dirsnap *s = dir->snap;

	return s != NULL && s->base == 0 && !s->more && s->tail != NULL &&
	       s->n >= SNAP_RELIST_MAX && fs->o.dir_ttl > 0 &&
	       now_mono() - s->full_time < SNAP_FULL_TTLS * fs->o.dir_ttl;
}

/* Inserts a name without attributes at i of s (not there).  0 or ENOMEM.
 * fs->lock held. */
static int snap_insert(struct dirsnap *s, size_t i, const char *name,
		       bool is_dir)
{
	struct dent *e = realloc(s->e, (s->n + 1) * sizeof(*e));
	char *nm = strdup(name);

	if (e != NULL)
		s->e = e;
	if (e == NULL || nm == NULL) {
		free(nm);
		return ENOMEM;
	}
	memmove(&e[i + 1], &e[i], (s->n - i) * sizeof(*e));
	memset(&e[i], 0, sizeof(*e));
	e[i].name = nm;
	e[i].is_dir = is_dir;
	s->n++;
	return 0;
}

/* Whether this mount removed name of dir (dkey) after when_ns (real):
 * what another source says of it then is older (fs->lock). */
static bool removed_here(struct objfs_fs *fs, const char *dkey,
			 const char *name, const struct timespec *written)
{
	const struct recent_ent *c = recent_find(&fs->recent, dkey, name,
						 now_mono());

	return c != NULL && !c->add &&
	       (written == NULL || written->tv_sec <= c->when.tv_sec + 1);
}

/* The index entries a renewal applies: those made after its whole
 * listing began (since: 5 s before, for the writers' clocks), since
 * anything older that exists, that listing showed. */
struct news {
	struct objfs_attrseg seg;
	int64_t since;
};

static void news_add(void *arg, const struct objfs_attrseg_entry *e)
{
	struct news *nw = arg;

	if (e->ct > nw->since)
		(void)objfs_attrseg_add(&nw->seg, e);
}

/* Applies index entry e (another mount's write since the whole listing)
 * to s, the listing of dir (dkey); true when s changed.  fs->lock held. */
static bool renew_entry(struct objfs_fs *fs, const char *dkey,
			struct dirsnap *s, const struct objfs_attrseg_entry *e)
{
	struct timespec lm;
	struct dent *d;
	bool found;
	size_t i = snap_find(s, e->name, &found);

	lm.tv_sec = (time_t)(e->lm / 1000000000);
	lm.tv_nsec = (long)(e->lm % 1000000000);
	if (removed_here(fs, dkey, e->name, &lm))
		return false;
	if (!found) {
		if (snap_insert(s, i, e->name, false) != 0)
			return false;
	} else if (s->e[i].is_dir || s->e[i].ict >= e->ct ||
		   (strcmp(s->e[i].etag, e->etag) == 0 &&
		    s->e[i].mtime.tv_sec == lm.tv_sec &&
		    s->e[i].mtime.tv_nsec == lm.tv_nsec)) {
		return false;   /* a directory, or nothing new */
	}
	d = &s->e[i];
	/* the version the entry describes: its attributes when it says the
	 * size (aidx_apply()), else none (a lookup or readdirplus asks) */
	snprintf(d->etag, sizeof(d->etag), "%s", e->etag);
	d->mtime = lm;
	d->size = e->size;
	d->have_attr = false;
	d->ict = 0;
	free(d->link);
	d->link = NULL;
	if (!(e->have & OBJFS_ATTRSEG_SIZE) || !aidx_apply(fs, s, e))
		d->etag[0] = '\0';      /* unknown: never taken as current */
	return true;
}

/* Renews dir->snap, a large whole listing (snap_renewable()) past
 * dir_ttl, without listing it whole again: a LIST of the names after the
 * last one the store listed (one page: more, and it is listed whole), and
 * the entries of the directory's index segments it has not seen, written
 * by other mounts since it was listed whole; this mount's own changes are
 * in it already (snap_note()).  Its time is then the time it was asked.
 * 0 with *out (a reference of the caller's), or an errno (the caller
 * lists whole: not renewable, a store error, too many new names).  Takes
 * fs->lock (store I/O without it). */
static int snap_renew(struct objfs_fs *fs, struct inode *dir,
		      struct dirsnap **out)
{
	struct objfs_list_req rq = { NULL, "/", NULL, NULL, 1000 };
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
	struct news news;
	struct dirsnap *s, tmp;
	char dkey[KEYBUF], *tail = NULL, **old = NULL, **keys = NULL;
	size_t n_old = 0, nkeys = 0, cap = 0, i;
	double asked, full_time, old_time;
	bool changed = false, added = false;
	int err;

	memset(&tmp, 0, sizeof(tmp));
	memset(&news, 0, sizeof(news));
	pthread_mutex_lock(&fs->lock);
	s = dir->snap;
	if (!snap_renewable(fs, dir)) {
		pthread_mutex_unlock(&fs->lock);
		return EAGAIN;
	}
	err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	tail = strdup(s->tail);
	full_time = s->full_time;
	news.since = s->full_real - (int64_t)5 * 1000000000;
	if (err == 0 && tail == NULL)
		err = ENOMEM;
	if (err == 0 && s->segs_known && s->nsegs > 0) {
		old = calloc(s->nsegs, sizeof(*old));
		for (i = 0; old != NULL && i < s->nsegs; i++) {
			old[n_old] = strdup(s->segs[i]);
			if (old[n_old] != NULL)
				n_old++;
		}
		if (old == NULL || n_old < s->nsegs)
			err = ENOMEM;
	}
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		goto out;
	asked = now_mono();
	rq.prefix = dkey;
	rq.start_after = tail;
	err = objfs_store_list(fs->store, &rq, &pg);
	if (err == 0 && pg.next != NULL)
		err = EAGAIN;   /* more than a page of new names */
	if (err == 0)
		err = page_add(&tmp, &cap, dkey, &pg, NULL);
	if (err != 0)
		goto out;
	err = aidx_news(fs, dkey, old, n_old, &keys, &nkeys, news_add, &news);
	if (err != 0)
		goto out;

	pthread_mutex_lock(&fs->lock);
	s = dir->snap;
	if (s == NULL || s->full_time != full_time) {
		/* listed again meanwhile */
		pthread_mutex_unlock(&fs->lock);
		err = EAGAIN;
		goto out;
	}
	if (s->refs > 1) {
		/* readdir handles index theirs: the directory gets a copy */
		struct dirsnap *c = snap_clone(s);

		if (c == NULL) {
			pthread_mutex_unlock(&fs->lock);
			err = ENOMEM;
			goto out;
		}
		snap_drop(dir);
		dir->snap = s = c;
	}
	old_time = s->time;
	for (i = 0; i < tmp.n; i++) {
		bool found;
		size_t at = snap_find(s, tmp.e[i].name, &found);

		if (found || removed_here(fs, dkey, tmp.e[i].name,
					  tmp.e[i].is_dir ? NULL :
					  &tmp.e[i].mtime) ||
		    snap_insert(s, at, tmp.e[i].name, tmp.e[i].is_dir) != 0)
			continue;
		s->e[at].size = tmp.e[i].size;
		s->e[at].mtime = tmp.e[i].mtime;
		snprintf(s->e[at].etag, sizeof(s->e[at].etag), "%s",
			 tmp.e[i].etag);
		changed = added = true;
	}
	for (i = 0; i < news.seg.n; i++)
		changed |= renew_entry(fs, dkey, s, &news.seg.e[i]);
	if (tmp.tail != NULL) {
		free(s->tail);
		s->tail = tmp.tail;
		tmp.tail = NULL;
	}
	objfs_tree_keys_free(s->segs, s->nsegs);
	s->segs = keys;
	s->nsegs = nkeys;
	s->segs_known = true;
	keys = NULL;
	nkeys = 0;
	if (changed) {
		s->ndirs = -1;
		dir_listed(dir, s);
		if (added) {
			/* readdirplus: theirs too (the indexes moved) */
			s->attrs_done = false;
			s->index_done = false;
			s->heads_upto = s->lo_from = s->lo_to = 0;
			s->short_replies = 0;
		}
		objfs_debug(fs->log, SUB, "listing of \"%s\" renewed: %zu "
			    "names after the last, %zu index entries",
			    dkey, tmp.n, news.seg.n);
	}
	s->time = asked;
	s->misses = 0;
	if (dir->pf.time == old_time)
		dir->pf.time = asked;   /* the same names: prefetch goes on */
	s->refs++;
	*out = s;
	pthread_mutex_unlock(&fs->lock);
	__atomic_add_fetch(&fs->listed_renewed, 1, __ATOMIC_RELAXED);
out:
	objfs_list_page_release(&pg);
	for (i = 0; i < tmp.n; i++) {
		free(tmp.e[i].name);
		free(tmp.e[i].link);
	}
	free(tmp.e);
	free(tmp.tail);
	free(tail);
	objfs_tree_keys_free(old, n_old);
	objfs_tree_keys_free(keys, nkeys);
	objfs_attrseg_release(&news.seg);
	return err;
}

/* Lists dir into a new snapshot (a window after prev's when prev); a
 * whole listing is installed in dir->snap; *out gets a reference of its
 * own. */
int snap_build(struct objfs_fs *fs, struct inode *dir,
	       const struct dirsnap *prev, struct aidx_pre *pre,
	       struct dirsnap **out)
{
	struct objfs_list_req rq = { NULL, "/", NULL, NULL, 1000 };
	struct verified ok = { 0 };
	struct aidx_pre *own = NULL;    /* started here: cancelled at the end */
	struct dirsnap *s;
	char dkey[KEYBUF];
	char *token = NULL;
	size_t cap = 0, i, j;
	bool first = true;
	struct inode *c;
	int err;

	if (prev == NULL && snap_renew(fs, dir, out) == 0)
		return 0;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return ENOMEM;
	s->refs = 1;
	s->ndirs = -1;
	s->full_real = ts_ns_of(now_real());
	if (prev != NULL) {
		s->base = prev->base + prev->n;
		rq.start_after = prev->after;
	}
	pthread_mutex_lock(&fs->lock);
	err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		goto out;
	rq.prefix = dkey;
	if (fs->o.dir_window > 0 && fs->o.dir_window < 1000)
		rq.max_keys = fs->o.dir_window;
	do {
		struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;

		if (s->n >= fs->o.dir_window && token != NULL) {
			/* a window is full: the next one starts after the
			 * last key listed (a start, not a token: tokens may
			 * not last) */
			free(token);
			token = NULL;
			s->more = true;
			break;
		}
		rq.continuation = token;
		err = objfs_store_list(fs->store, &rq, &pg);
		free(token);
		token = NULL;
		if (err != 0)
			goto out;
		err = page_add(s, &cap, dkey, &pg, NULL);
		if (err == 0 && pg.next != NULL) {
			const char *last = page_last(&pg);

			free(s->after);
			s->after = last != NULL ? strdup(last) : NULL;
			if (last != NULL && s->after == NULL)
				err = ENOMEM;
		}
		token = pg.next;
		pg.next = NULL;
		objfs_list_page_release(&pg);
		if (err == 0 && token != NULL && pre == NULL && prev == NULL &&
		    first && fs->o.dir_window >= 2 * RANGE_STEP)
			/* more than a page (a lookup's or getattr's count,
			 * dir_count(), a readdir): its index splits the rest */
			pre = own = aidx_pre_start(fs, dkey);
		if (err == 0 && token != NULL && pre != NULL && prev == NULL &&
		    s->after != NULL && snap_ranges(fs, dkey, s, &cap, pre, &err)) {
			free(token);    /* the rest listed in ranges */
			token = NULL;
		}
		pre = NULL;             /* tried once */
		first = false;
	} while (err == 0 && token != NULL);
	if (err != 0)
		goto out;

	if (!s->more) {
		free(s->after);
		s->after = NULL;
	}
	if (prev == NULL && !s->more)
		snap_verify_recent(fs, dkey, s, &ok);
	pthread_mutex_lock(&fs->lock);
	/* names created here and not yet uploaded (a whole listing only) */
	for (c = prev == NULL && !s->more ? dir->child : NULL;
	     c != NULL && err == 0; c = c->sib_next) {
		if (c->linked && !c->in_store && !S_ISDIR(c->mode))
			err = snap_add(s, &cap, c->name, false, c->size, NULL,
				       &c->mtime);
	}
	if (err == 0) {
		if (s->n > 1)
			qsort(s->e, s->n, sizeof(*s->e), dent_cmp);
		for (i = 0, j = 0; i < s->n; i++) {
			if (j > 0 && strcmp(s->e[j - 1].name, s->e[i].name) == 0) {
				free(s->e[i].name);
				free(s->e[i].link);
				continue;
			}
			s->e[j++] = s->e[i];
		}
		s->n = j;
		if (prev == NULL && !s->more)
			snap_merge_recent(fs, dkey, s, &cap, &ok);
		s->time = now_mono();
		s->full_time = s->time;
		if (prev == NULL && !s->more) {
			snap_drop(dir);
			dir->snap = s;
			s->refs++;
			dir_listed(dir, s);
		}
		*out = s;
		s = NULL;
	}
	pthread_mutex_unlock(&fs->lock);
out:
	free(token);
	verified_release(&ok);
	aidx_pre_cancel(own);
	if (s != NULL) {
		pthread_mutex_lock(&fs->lock);
		snap_put_locked(s);
		pthread_mutex_unlock(&fs->lock);
	}
	return err;
}

int snap_count_dirs(struct objfs_fs *fs, const char *dkey, const char *after,
		    uint32_t *n)
{
	struct objfs_list_req rq = { dkey, "/", NULL, after, 1000 };
	char name[OBJFS_NAME_MAX + 1], *token = NULL;
	int err;

	*n = 0;
	do {
		struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
		size_t i;

		rq.continuation = token;
		err = objfs_store_list(fs->store, &rq, &pg);
		free(token);
		token = NULL;
		for (i = 0; err == 0 && i < pg.n_prefixes; i++)
			*n += objfs_key_child(dkey, pg.prefixes[i], true, name,
					      sizeof(name));
		if (err == 0) {
			token = pg.next;
			pg.next = NULL;
		}
		objfs_list_page_release(&pg);
	} while (err == 0 && token != NULL);
	free(token);
	return err;
}

struct head_task {
	struct objfs_fs *fs;
	struct dirsnap *s;      /* d's listing */
	struct dent *d;
	char key[];
};

static void head_run(void *arg)
{
	struct head_task *t = arg;
	struct objfs_fs *fs = t->fs;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct probe p;
	int err;

	err = objfs_store_head(fs->store, t->key, &info);
	if (err == 0)
		probe_from_info(fs, &info, t->d->is_dir, &p);
	else if (t->d->is_dir && err == ENOENT)
		probe_implied_dir(fs, &p);
	pthread_mutex_lock(&fs->lock);
	if (err == 0 || (t->d->is_dir && err == ENOENT)) {
		t->d->fa = p.fa;
		t->d->meta_mask = p.meta_mask;
		t->d->have_attr = true;
		t->d->hlink = p.hl_id[0] != '\0';
		t->d->marker = p.marker;
		if (!t->d->is_dir) {
			t->d->size = p.size;
			snprintf(t->d->etag, sizeof(t->d->etag), "%s", p.etag);
			if (p.is_dir) {
				t->d->is_dir = true;
				t->s->ndirs = -1;
			}
		}
	}
	pthread_mutex_unlock(&fs->lock);
	objfs_obj_info_release(&info);
	free(t);
}

#define HEAD_BATCH 256          /* HEAD tasks queued at once */

/* Queues HEADs (in g) for the entries [from, to) of s that are
 * directories (dirs) or not, and that have no attributes, fresh in their
 * inode or from the index; waits for each HEAD_BATCH of them (*queued
 * counts them). */
static void queue_heads(struct objfs_fs *fs, struct inode *dir,
			const char *dkey, struct dirsnap *s, bool dirs,
			size_t from, size_t to, double now,
			struct objfs_group *g, size_t *queued)
{
	size_t i;

	for (i = from; i < to && i < s->n; i++) {
		struct dent *d = &s->e[i];
		char key[KEYBUF];
		struct inode *c;
		struct head_task *t;
		bool skip;

		pthread_mutex_lock(&fs->lock);
		c = find_child(fs, dir, d->name);
		skip = d->is_dir != dirs || d->have_attr ||
		       (c != NULL && (c->dirty || c->spool != NULL || !c->in_store ||
				      now - c->attr_time < fs->o.attr_ttl));
		pthread_mutex_unlock(&fs->lock);
		if (skip || objfs_key_join(dkey, d->name, d->is_dir, key,
					   sizeof(key)) != 0)
			continue;
		t = malloc(sizeof(*t) + strlen(key) + 1);
		if (t == NULL)
			break;
		t->fs = fs;
		t->s = s;
		t->d = d;
		strcpy(t->key, key);
		if (objfs_pool_submit(fs->pool, g, head_run, t) != 0)
			head_run(t);
		if (++*queued % HEAD_BATCH == 0) {
			objfs_group_wait(g);
			objfs_group_init(g);
		}
	}
}

/* Whether some file entry of s has neither attributes nor a fresh inode
 * of this mount's (what queue_heads() would HEAD).  Takes fs->lock. */
static bool files_unknown(struct objfs_fs *fs, struct inode *dir,
			  const struct dirsnap *s, double now)
{
	bool unknown = false;
	size_t i;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < s->n && !unknown; i++) {
		const struct dent *d = &s->e[i];
		struct inode *c;

		if (d->is_dir || d->have_attr)
			continue;
		c = find_child(fs, dir, d->name);
		unknown = c == NULL || !(c->dirty || c->spool != NULL ||
					 !c->in_store ||
					 now - c->attr_time < fs->o.attr_ttl);
	}
	pthread_mutex_unlock(&fs->lock);
	return unknown;
}

struct aidx_pre *snap_index_start(struct objfs_fs *fs, struct inode *dir)
{
	char dkey[KEYBUF];
	struct dirsnap *prev;
	bool known;
	int err;

	pthread_mutex_lock(&fs->lock);
	err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	prev = dir->snap;
	if (prev != NULL)
		prev->refs++;
	pthread_mutex_unlock(&fs->lock);
	/* its last listing showed no file this mount does not know (it
	 * made them): snap_fetch_attrs() reads the index only if the new
	 * one does */
	known = prev != NULL && !files_unknown(fs, dir, prev, now_mono());
	if (prev != NULL) {
		pthread_mutex_lock(&fs->lock);
		snap_put_locked(prev);
		pthread_mutex_unlock(&fs->lock);
	}
	return err == 0 && !known ? aidx_pre_start(fs, dkey) : NULL;
}

/* Fetches the attributes of every entry the kernel will need (readdirplus):
 * parallel HEADs for names without fresh inode attributes, queued in
 * batches so a huge directory does not queue a task per name at once.
 * Subdirectories' markers (which the index never describes) are asked for
 * while the index is read; files the index did not describe after. */
void snap_fetch_attrs(struct objfs_fs *fs, struct inode *dir,
		      struct dirsnap *s, struct aidx_pre *pre)
{
	struct objfs_group g;
	char dkey[KEYBUF];
	double now = now_mono();
	size_t queued = 0;
	int err;

	pthread_mutex_lock(&fs->lock);
	if (s->attrs_done) {
		pthread_mutex_unlock(&fs->lock);
		aidx_pre_cancel(pre);
		return;
	}
	s->attrs_done = true;
	err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0) {
		aidx_pre_cancel(pre);
		return;
	}
	objfs_group_init(&g);
	queue_heads(fs, dir, dkey, s, true, 0, SIZE_MAX, now, &g, &queued);
	/* what the attribute index says needs no HEAD; nothing to read
	 * when this mount knows every file already (it made them) */
	if (files_unknown(fs, dir, s, now))
		aidx_fill(fs, dkey, s, pre);
	else
		aidx_pre_cancel(pre);
	queue_heads(fs, dir, dkey, s, false, 0, SIZE_MAX, now, &g, &queued);
	objfs_group_wait(&g);
}

/* The first reply that gives files without attributes holds REPLY_SHORT
 * entries, each next one twice as many, until the reader looks one up:
 * `ls -l` looks up so many names one by one before the HEADs ahead
 * begin; `ls -f` costs a few more replies, no request. */
#define REPLY_SHORT 16

size_t snap_reply_attrs(struct objfs_fs *fs, struct inode *dir,
			struct dirsnap *s, struct aidx_pre *pre, size_t pos,
			size_t count)
{
	struct objfs_group g;
	char dkey[KEYBUF];
	double now = now_mono();
	size_t queued = 0, i, from = 0, to = 0, limit = SIZE_MAX;
	bool index, bare = false;
	int err;

	pthread_mutex_lock(&fs->lock);
	if (s->attrs_done) {
		pthread_mutex_unlock(&fs->lock);
		aidx_pre_cancel(pre);
		return limit;
	}
	/* the last reply's names went without attributes and no inode:
	 * an inode of one now is the reader's lookup (it stats them) */
	for (i = s->lo_from; !s->stat_ahead && i < s->lo_to && i < s->n; i++)
		s->stat_ahead = !s->e[i].is_dir && !s->e[i].have_attr &&
				find_child(fs, dir, s->e[i].name) != NULL;
	s->lo_from = s->lo_to = 0;
	index = !s->index_done;
	s->index_done = true;
	if (s->stat_ahead && s->heads_upto < pos + count) {
		/* this reply's and the next ones' files, HEAD_BATCH at
		 * least (claimed here: another handle skips them) */
		from = s->heads_upto > pos ? s->heads_upto : pos;
		to = from + (count > HEAD_BATCH ? count : HEAD_BATCH);
		s->heads_upto = to;
	}
	err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0) {
		aidx_pre_cancel(pre);
		return limit;
	}
	objfs_group_init(&g);
	if (index) {
		queue_heads(fs, dir, dkey, s, true, 0, SIZE_MAX, now, &g,
			    &queued);
		if (files_unknown(fs, dir, s, now))
			aidx_fill(fs, dkey, s, pre);
		else
			aidx_pre_cancel(pre);
	} else {
		aidx_pre_cancel(pre);
	}
	if (from < to)
		queue_heads(fs, dir, dkey, s, false, from, to, now, &g,
			    &queued);
	objfs_group_wait(&g);
	pthread_mutex_lock(&fs->lock);
	for (i = pos; !s->stat_ahead && !bare && i < pos + count && i < s->n;
	     i++)
		bare = dent_lookup_only(fs, dir, &s->e[i]);
	if (bare) {
		/* names without attributes: a short reply, and whether the
		 * reader looks them up decides the next one */
		limit = s->short_replies < 8 ?
			(size_t)REPLY_SHORT << s->short_replies : SIZE_MAX;
		s->short_replies++;
		s->lo_from = pos;
		s->lo_to = pos + (limit < count ? limit : count);
	}
	pthread_mutex_unlock(&fs->lock);
	return limit;
}

uint64_t name_ino(const char *name)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *name != '\0'; name++) {
		h ^= (unsigned char)*name;
		h *= 1099511628211ULL;
	}
	return h | (1ULL << 63);
}

/* The least size of an object only a regular file can have: what objfs
 * (and s3fs) write for anything else is smaller: FIFOs, sockets and
 * devices are empty, a symlink holds its target (shorter than PATH_MAX:
 * symlink(2) refuses more), a hard link's name "objfs-link ID T"
 * (volume/hlink.h).  Issue 33: a listing of another client's files types
 * them without a HEAD each. */
#define DENT_REG_MIN PATH_MAX
_Static_assert(OBJFS_HLINK_BODY_LEN < DENT_REG_MIN,
	       "a hard link's name is smaller than any file typed by size");

void dent_ino_type(struct objfs_fs *fs, struct inode *dir,
		   const struct dent *d, uint64_t *ino, mode_t *type)
{
	const struct inode *c = find_child(fs, dir, d->name);
	fuse_ino_t had;

	fs_assert_locked(fs);
	/* the number a lookup will give it: the one it had here before
	 * (inode.c's memory of freed inodes), else one from its name */
	had = ino_mem_take(fs, dir->ino, d->name, true);
	*ino = had != 0 ? had : name_ino(d->name);
	*type = d->is_dir ? S_IFDIR : S_IFREG;
	if (c != NULL) {
		/* a hard link's name: its file (name inodes are never the
		 * kernel's) */
		c = hl_name_file(fs, c);
		if (c->hl.id == NULL || c->hl.data)
			*ino = c->ino;
		*type = c->mode & S_IFMT;
	} else if (d->have_attr) {
		*type = d->fa.mode & S_IFMT;    /* a link name's: its file's */
	} else if (!d->is_dir && d->size < DENT_REG_MIN) {
		/* a listed name whose attributes are not known (a name noted
		 * here without an inode, one the attribute index does not
		 * show yet, another S3 client's): a small object may be a
		 * FIFO, a device, a symlink or a hard link's name as well as
		 * a file, so DT_UNKNOWN, and the reader asks lstat (find,
		 * rsync and tar do); a larger one is a file (DT_REG) */
		*type = 0;
	}
}

bool dent_lookup_only(struct objfs_fs *fs, struct inode *dir,
		      const struct dent *d)
{
	fs_assert_locked(fs);
	if (hl_dent(fs, dir, d))
		return true;
	/* never an inode without attributes for a file: its name may be a
	 * hard link's (a name inode gone since the HEADs were skipped for
	 * it), which must not become a second inode of its file */
	return !d->have_attr && !d->is_dir &&
	       find_child(fs, dir, d->name) == NULL;
}

/* Finds or makes the inode for a listing entry (fs->lock); *created tells
 * whether it is new (nlookup 0). */
struct inode *dent_inode(struct objfs_fs *fs, struct inode *dir,
			 const struct dent *d, bool *created)
{
	struct inode *in = find_child(fs, dir, d->name);
	mode_t mode;

	fs_assert_locked(fs);
	*created = false;
	mode = d->have_attr ? d->fa.mode :
	       default_mode(fs, d->is_dir ? S_IFDIR : S_IFREG);
	if (in != NULL) {
		if (same_type(in->mode, mode) || in->dirty || in->spool != NULL) {
			if (d->have_attr && !in->dirty && in->spool == NULL &&
			    now_mono() - in->attr_time >= fs->o.attr_ttl) {
				struct probe p;

				memset(&p, 0, sizeof(p));
				p.is_dir = d->is_dir;
				p.marker = d->marker;
				p.size = d->size;
				snprintf(p.etag, sizeof(p.etag), "%s", d->etag);
				p.fa = d->fa;
				p.meta_mask = d->meta_mask;
				apply_probe(fs, in, &p);
				if (!d->is_dir && d->etag[0] != '\0')
					in->lm = d->mtime;
				if (in->link == NULL && d->link != NULL)
					in->link = strdup(d->link);
			}
			return in;
		}
		if (in->nlookup == 0 && in->nopen == 0) {
			struct inode *par = detach(fs, in);

			maybe_free(fs, in);
			(void)par;      /* dir stays pinned by the caller */
		} else {
			return in;
		}
	}
	in = inode_new(fs, dir, d->name, mode);
	if (in == NULL)
		return NULL;
	*created = true;
	in->size = d->is_dir ? 0 : d->size;
	in->stored_size = in->size;
	in->charged = in->size;
	in->in_store = d->is_dir ? d->marker : true;
	snprintf(in->etag, sizeof(in->etag), "%s", d->etag);
	if (d->link != NULL)
		in->link = strdup(d->link);
	if (!d->is_dir && d->etag[0] != '\0' && d->have_attr)
		in->lm = d->mtime;
	if (d->have_attr) {
		in->meta_mask = d->meta_mask;
		inode_set_fattr(in, &d->fa, d->meta_mask);
		in->attr_time = now_mono();
	} else {
		in->mtime = d->mtime.tv_sec != 0 ? d->mtime : now_real();
		in->attr_time = 0;
	}
	return in;
}
