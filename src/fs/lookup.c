/*
 * lookup.c - finding names in the store.
 *
 * A name is an object ("a/b"), a directory marker ("a/b/"), or a directory
 * implied by keys under "a/b/"; probe_key() asks for all three at once (a
 * HEAD and a one-key LIST in parallel), so a missing name costs one round
 * trip.  do_lookup() answers from the inode tables while attributes are
 * fresh (entry_ttl), from a fresh listing of the parent (dir_ttl: a quick
 * ENOENT), and relists a small parent before probing.  An inode with
 * local state (dirty, spooled, or created and not yet uploaded) is never
 * replaced by what the store says; a clean one gone from the store or of
 * another type is detached.  revalidate() re-reads a clean inode's
 * attributes after attr_ttl (and at every open: close-to-open), from a
 * prefetch's GET (prefetch.c) when one was sent within attr_ttl.  No lock
 * is held across store I/O; fs->lock is taken around table work.
 *
 * A mount's own names (issue 34 item 7): a name this mount made or stored
 * itself (own_name(): a file whose attributes came from its own upload, a
 * directory in fs->recent as made here), whose attributes were read or
 * set here less than OWN_TTLS x attr_ttl ago, is confirmed by the fresh
 * listing of its directory (listed_same()) instead of a HEAD: a lookup or
 * getattr past attr_ttl renews the listing (one LIST for every name of a
 * small directory) and answers from the inode while the listing shows it
 * as left.  A known file is asked for by its HEAD alone, a directory with
 * a marker by the marker's HEAD alone.
 *
 * Directories this mount made (issue 33 item 2: rsync's and git's absent
 * names): a directory made here (mkdir, or a rename's target: fs->recent
 * has it as added here) starts with an empty listing, and every name
 * this mount adds or removes in it is noted in that listing; what it
 * cannot know of is another writer's name.  Its listing answers a lookup
 * of a name it lacks with ENOENT for dir_ttl + OWN_DIR_SLACK (the window
 * in which another objfs mount's new name shows in a renewed listing:
 * its index segment is written 1-2 s after the change), not dir_ttl;
 * past that one LIST renews it, as for any small directory.  rsync's
 * receiver looks up each file's final name and temporary name seconds
 * after its generator made the directory: one LIST per directory and
 * window, not per name.  A subdirectory made here whose inode the kernel
 * forgot (a dentry past entry_ttl is dropped at its last use) is asked
 * for by its marker's HEAD alone, as a known directory is.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs_int.h"
#include "fs/xattr.h"
#include "volume/hlink.h"

/* ---- finding names in the store --------------------------------------- */

void probe_from_info(struct objfs_fs *fs, const struct objfs_obj_info *info,
		     bool dir, struct probe *p)
{
	memset(p, 0, sizeof(*p));
	p->is_dir = dir;
	p->marker = dir;
	p->size = dir ? 0 : info->size;
	snprintf(p->etag, sizeof(p->etag), "%s", info->etag);
	p->fa.mode = default_mode(fs, dir ? S_IFDIR : S_IFREG);
	p->fa.uid = fs->o.uid;
	p->fa.gid = fs->o.gid;
	p->fa.mtime = info->mtime;
	p->meta_mask = objfs_fattr_from_meta(&info->meta, &p->fa);
	p->headed = true;
	p->xattrs = objfs_meta_get(&info->meta, OBJFS_XATTR_META "0") != NULL;
	if (dir || !objfs_hlink_from_meta(&info->meta, p->hl_id, p->hl_tok))
		p->hl_id[0] = p->hl_tok[0] = '\0';
	if (dir && !S_ISDIR(p->fa.mode))
		p->fa.mode = S_IFDIR | (p->fa.mode & 07777);
	if (!dir && S_ISDIR(p->fa.mode)) {
		/* an old s3fs-style "dir" object without the slash */
		p->is_dir = true;
		p->size = 0;
	}
}

void probe_implied_dir(struct objfs_fs *fs, struct probe *p)
{
	memset(p, 0, sizeof(*p));
	p->is_dir = true;
	p->fa.mode = default_mode(fs, S_IFDIR);
	p->fa.uid = fs->o.uid;
	p->fa.gid = fs->o.gid;
	p->fa.mtime = now_real();
}

/* True when some key starts with prefix (which ends in "/").  0 or errno. */
int prefix_used(struct objfs_fs *fs, const char *prefix, bool ignore_self,
		bool *used)
{
	struct objfs_list_req rq = { prefix, NULL, NULL, NULL, 2 };
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
	size_t i;
	int err;

	*used = false;
	err = objfs_store_list(fs->store, &rq, &pg);
	if (err != 0)
		return err;
	for (i = 0; i < pg.n_entries; i++) {
		if (!ignore_self || strcmp(pg.entries[i].key, prefix) != 0)
			*used = true;
	}
	if (pg.n_prefixes > 0)
		*used = true;
	objfs_list_page_release(&pg);
	return 0;
}

struct list_task {
	struct objfs_fs *fs;
	const char *prefix;
	int err;
	bool used;
	bool marker;            /* the first key is the prefix itself */
};

static void list_run(void *arg)
{
	struct list_task *t = arg;
	struct objfs_list_req rq = { t->prefix, NULL, NULL, NULL, 1 };
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;

	t->err = objfs_store_list(t->fs->store, &rq, &pg);
	if (t->err == 0) {
		t->used = pg.n_entries > 0 || pg.n_prefixes > 0;
		t->marker = pg.n_entries > 0 &&
			    strcmp(pg.entries[0].key, t->prefix) == 0;
	}
	objfs_list_page_release(&pg);
}

/* Probes the name whose file key is key: object, marker, or implied
 * directory.  The HEAD of the object and the listing of "key/" run in
 * parallel, so a missing name costs one round trip.  want_dir skips the
 * object HEAD.  0, ENOENT or another errno. */
static int probe_key_both(struct objfs_fs *fs, const char *key, bool want_dir,
			  struct probe *p);

/* probe_key_both(), but a name known as a file (want_file) is asked for
 * with its HEAD alone, and the listing only when it is gone (the
 * revalidation of every open: one request instead of two); a directory
 * known to have a marker (want_dir and want_file) with its marker's HEAD
 * alone, both probes only when the marker is gone. */
static int probe_key(struct objfs_fs *fs, const char *key, bool want_dir,
		     bool want_file, struct probe *p)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	int err;

	char dkey[KEYBUF];

	if (!want_file)
		return probe_key_both(fs, key, want_dir, p);
	memset(p, 0, sizeof(*p));
	if (want_dir) {
		/* a directory with a marker: the marker's HEAD (gone, or
		 * implied only now: both probes) */
		err = objfs_key_join(key, "", true, dkey, sizeof(dkey));
		if (err == 0 && strlen(dkey) <= fs->key_room)
			err = objfs_store_head(fs->store, dkey, &info);
		else if (err == 0)
			err = ENOENT;
		if (err == 0)
			probe_from_info(fs, &info, true, p);
		objfs_obj_info_release(&info);
		return err == ENOENT ? probe_key_both(fs, key, true, p) : err;
	}
	err = objfs_store_head(fs->store, key, &info);
	if (err == 0)
		probe_from_info(fs, &info, false, p);
	objfs_obj_info_release(&info);
	if (err == ENOENT)
		err = probe_key_both(fs, key, true, p);
	return err;
}

static int probe_key_both(struct objfs_fs *fs, const char *key, bool want_dir,
			  struct probe *p)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct list_task lt;
	struct objfs_group g;
	char dkey[KEYBUF];
	int err, herr = ENOENT;

	memset(p, 0, sizeof(*p));
	err = objfs_key_join(key, "", true, dkey, sizeof(dkey));
	if (err == 0 && strlen(dkey) > fs->key_room)
		err = ENAMETOOLONG;
	if (err == ENAMETOOLONG) {
		/* a key at the limit: no directory can have this name, but
		 * the object may exist (its HEAD alone says) */
		if (want_dir)
			return ENOENT;
		err = objfs_store_head(fs->store, key, &info);
		if (err == 0)
			probe_from_info(fs, &info, false, p);
		objfs_obj_info_release(&info);
		return err;
	}
	if (err != 0)
		return err;
	memset(&lt, 0, sizeof(lt));
	lt.fs = fs;
	lt.prefix = dkey;
	objfs_group_init(&g);
	if (fs->pool == NULL || objfs_pool_submit(fs->pool, &g, list_run, &lt) != 0)
		list_run(&lt);
	if (!want_dir) {
		herr = objfs_store_head(fs->store, key, &info);
		if (herr == 0)
			probe_from_info(fs, &info, false, p);
	}
	objfs_group_wait(&g);
	if (herr == 0 || herr != ENOENT) {
		err = herr;
		goto out;
	}
	objfs_obj_info_release(&info);
	err = lt.err;
	if (err != 0)
		goto out;
	if (!lt.used && want_dir) {
		/* a directory the listing does not show: some stores' (Swift's)
		 * listings lag behind writes, its marker's HEAD does not */
		err = objfs_store_head(fs->store, dkey, &info);
		if (err == 0)
			probe_from_info(fs, &info, true, p);
		goto out;
	}
	if (!lt.used) {
		err = ENOENT;
		goto out;
	}
	if (lt.marker) {
		err = objfs_store_head(fs->store, dkey, &info);
		if (err == 0) {
			probe_from_info(fs, &info, true, p);
			goto out;
		}
		if (err != ENOENT)
			goto out;
		err = 0;
	}
	probe_implied_dir(fs, p);
out:
	objfs_obj_info_release(&info);
	return err;
}

/* Copies probe results into an inode's attributes (fs->lock).  Local state
 * wins while the inode has unsaved data or a spool. */
void apply_probe(struct objfs_fs *fs, struct inode *in,
		 const struct probe *p)
{
	fs_assert_locked(fs);
	if (in->hl.pending)
		return;         /* becoming a link set (hardlink.c) */
	in->attr_time = now_mono();
	in->in_store = p->is_dir ? p->marker : true;
	if (in->dirty || in->spool != NULL || in->attr_dirty)
		return;
	if (!in->hl.data && (p->hl_id[0] != '\0' ?
	    in->hl.id == NULL || strcmp(in->hl.id, p->hl_id) != 0 ||
	    strcmp(in->hl.tok, p->hl_tok) != 0 : in->hl.id != NULL)) {
		/* a name that became or stopped being a hard link's */
		free(in->hl.id);
		in->hl.id = p->hl_id[0] != '\0' ? strdup(p->hl_id) : NULL;
		snprintf(in->hl.tok, sizeof(in->hl.tok), "%s", p->hl_tok);
	}
	if (p->headed && !p->xattrs) {
		/* none: no HEAD needed before a write of its metadata */
		free(in->xattr);
		in->xattr = NULL;
		in->xattr_known = true;
		in->xattr_time = in->attr_time;
	} else if (strcmp(in->etag, p->etag) != 0) {
		in->xattr_known = false;        /* changed elsewhere */
	}
	if (!S_ISDIR(in->mode) && strcmp(in->etag, p->etag) != 0) {
		free(in->link);
		in->link = NULL;
	}
	inode_set_fattr(in, &p->fa, p->meta_mask);
	in->size = p->size;
	in->stored_size = p->size;
	in->meta_mask = p->meta_mask;
	in->lm.tv_sec = 0;      /* not known from a HEAD (dent_inode() sets it) */
	in->lm.tv_nsec = 0;
	snprintf(in->etag, sizeof(in->etag), "%s", p->etag);
	if (!S_ISDIR(in->mode) && in->charged != p->size)
		in->charged = p->size;  /* the scan counts other writers */
}

/* Whether in (not fresh) is a name this mount made or stored itself
 * lately: a file whose attributes came from its own upload or change
 * here (put_time), or a directory it made (fs->recent), whose attributes
 * were read or set here less than OWN_TTLS x attr_ttl ago.  Its state is
 * this mount's own: a listing that still shows it as it was left (the
 * ETag of the upload; a directory) confirms it without a request of its
 * own.  fs->lock held. */
#define OWN_TTLS 10
static bool own_name(struct objfs_fs *fs, struct inode *parent,
		     const struct inode *in, double now)
{
	const struct recent_ent *c;
	char dkey[KEYBUF];

	if (!in->in_store || in->hl.id != NULL || in->hl.pending ||
	    now - in->attr_time >= OWN_TTLS * fs->o.attr_ttl)
		return false;
	if (!S_ISDIR(in->mode))
		return in->put_time > 0 && in->etag[0] != '\0';
	if (inode_key(fs, parent, true, dkey, sizeof(dkey)) != 0)
		return false;
	c = recent_find(&fs->recent, dkey, in->name, now);
	return c != NULL && c->add && c->is_dir;
}

/* Whether a listing of in's parent could confirm in (not fresh): a file
 * whose Last-Modified is known from a listing, or a name of this mount's
 * own (own_name()).  fs->lock held. */
static bool may_confirm(struct objfs_fs *fs, struct inode *parent,
			const struct inode *in, double now)
{
	return (!S_ISDIR(in->mode) && in->lm.tv_sec != 0 && in->hl.id == NULL) ||
	       own_name(fs, parent, in, now);
}

/* Whether the fresh listing of in's parent shows in as this mount holds
 * it: the version whose attributes it has (ETag and Last-Modified; the
 * attributes then date from the listing), or, for a name of this
 * mount's own, the ETag of its upload (Last-Modified learnt then) or a
 * directory.  fs->lock held. */
static bool listed_same(struct objfs_fs *fs, struct inode *parent,
			struct inode *in, double now)
{
	struct dirsnap *s = parent->snap;
	const struct dent *d;
	bool seen;
	size_t i = snap_find(s, in->name, &seen);

	if (!seen)
		return false;
	d = &s->e[i];
	if (d->is_dir != S_ISDIR(in->mode))
		return false;
	if (!d->is_dir && in->lm.tv_sec != 0 && in->hl.id == NULL &&
	    strcmp(d->etag, in->etag) == 0 &&
	    d->mtime.tv_sec == in->lm.tv_sec &&
	    d->mtime.tv_nsec == in->lm.tv_nsec) {
		/* as of the listing: a prefetch's GET sent since is newer
		 * (prefetch.c) */
		if (in->attr_time < s->time)
			in->attr_time = s->time;
		return true;
	}
	if (!own_name(fs, parent, in, now))
		return false;
	if (d->is_dir)
		return true;
	if (d->etag[0] == '\0' || strcmp(d->etag, in->etag) != 0 ||
	    (in->lm.tv_sec != 0 && (d->mtime.tv_sec != in->lm.tv_sec ||
				    d->mtime.tv_nsec != in->lm.tv_nsec)))
		return false;
	if (in->lm.tv_sec == 0 && s->time > in->put_time)
		in->lm = d->mtime;      /* its upload's, listed after it */
	return true;
}

/* Seconds past dir_ttl the listing of a directory this mount made
 * answers lookups of names it lacks (docs/objfs-mount.md, "Listings and
 * a mount's own names"). */
#define OWN_DIR_SLACK 2.0

/* Whether fs->recent has name of the directory whose key is dkey as a
 * directory made here (mkdir, a rename's target) within its window.
 * fs->lock held. */
static bool dir_made_here(struct objfs_fs *fs, const char *dkey,
			  const char *name, double now)
{
	const struct recent_ent *c = recent_find(&fs->recent, dkey, name, now);

	return c != NULL && c->add && c->is_dir;
}

/* Whether dir's listing answers a lookup of a name it may lack: younger
 * than dir_ttl, or than dir_ttl + OWN_DIR_SLACK when this mount made dir
 * (see the top of this file).  fs->lock held. */
static bool snap_answers(struct objfs_fs *fs, struct inode *dir, double now)
{
	char pkey[KEYBUF];
	double age;

	if (dir->snap == NULL)
		return false;
	age = now - dir->snap->time;
	if (age < fs->o.dir_ttl)
		return true;
	if (age >= fs->o.dir_ttl + OWN_DIR_SLACK || fs->o.dir_ttl <= 0 ||
	    dir == fs->root || dir->parent == NULL || !dir->linked ||
	    dir->snap->more || dir->snap->base != 0)
		return false;
	return inode_key(fs, dir->parent, true, pkey, sizeof(pkey)) == 0 &&
	       dir_made_here(fs, pkey, dir->name, now);
}

/* Looks up (parent, name) for the kernel (nlookup++) or for internal use
 * (pin: refs++).  *out is set with the reference taken.  0, ENOENT, ... */
int do_lookup(struct objfs_fs *fs, struct inode *parent,
	      const char *name, bool pin, struct inode **out)
{
	char key[KEYBUF], dkey[KEYBUF];
	struct inode *in;
	struct probe p;
	bool want_dir = false, want_file = false, fresh;
	double now = now_mono();
	bool relisted = false;
	int err;

	err = objfs_name_check(name);
	if (err != 0)
		return err;
	if (objfs_name_reserved(is_root(fs, parent), name))
		return ENOENT;
	err = key_room_check(fs, parent, name);
	if (err != 0)
		return err;     /* no such key can exist: as at creation */
	pthread_mutex_lock(&fs->lock);
again:
	if (!S_ISDIR(parent->mode)) {
		err = ENOTDIR;
		goto out_locked;
	}
	in = find_child(fs, parent, name);
	if (in != NULL) {
		fresh = in->dirty || in->spool != NULL || in->attr_dirty ||
			(!in->in_store && !S_ISDIR(in->mode)) ||
			now - in->attr_time < fs->o.entry_ttl;
		if (fresh)
			goto found;
		want_dir = S_ISDIR(in->mode);
		/* a name this mount knows stored: its HEAD alone (a file)
		 * or its marker's (a directory) says it is still there */
		want_file = in->in_store && !in->hl.pending;
		if (parent->snap != NULL &&
		    now - parent->snap->time < fs->o.dir_ttl) {
			/* a fresh listing shows the version whose attributes
			 * we hold: still good */
			if (listed_same(fs, parent, in, now))
				goto found;
		} else if (!relisted && may_confirm(fs, parent, in, now) &&
			   (parent->snap != NULL ?
			    parent->snap->n < SNAP_RELIST_MAX ||
			    snap_renewable(fs, parent) ||
			    ++parent->snap->misses * 2 >=
			    parent->snap->n / SNAP_RELIST_MAX :
			    parent->nsub_known &&
			    parent->listed_n < SNAP_RELIST_MAX)) {
			/* one LIST confirms every such name of the
			 * directory for dir_ttl */
			goto relist;
		}
	} else if (snap_answers(fs, parent, now)) {
		/* a fresh listing without the name: a quick ENOENT */
		const struct dent *d;
		bool seen;
		size_t i = snap_find(parent->snap, name, &seen);

		if (!seen) {
			err = ENOENT;
			goto out_locked;
		}
		d = &parent->snap->e[i];
		want_dir = d->is_dir;
		/* a file as listed: its HEAD alone (not its listing's
		 * attributes: the name may be a hard link's, and this mount
		 * may have changed the file since) */
		want_file = !d->is_dir && d->etag[0] != '\0';
	} else if (!relisted && (parent->snap != NULL ?
		   (parent->snap->n < SNAP_RELIST_MAX ||
		    snap_renewable(fs, parent) ||
		    ++parent->snap->misses * 2 >= parent->snap->n / SNAP_RELIST_MAX) :
		   parent->nsub_known && parent->listed_n < SNAP_RELIST_MAX)) {
		/* a directory listed before: one LIST (a page per 1,000
		 * names) answers this lookup and the next ones for dir_ttl;
		 * a large one listed whole lately is renewed (snap_build():
		 * a LIST of its tail and its index's new segments), one
		 * listed whole longer ago is listed again once the lookups
		 * it missed since cost as much as that (a HEAD and a LIST
		 * each: many files created, or looked up, in it); a small
		 * one whose listing was dropped (a hard link made in it) is
		 * listed again rather than probed name by name */
		struct dirsnap *s;

relist:
		s = NULL;
		relisted = true;
		pthread_mutex_unlock(&fs->lock);
		err = snap_build(fs, parent, NULL, NULL, &s);
		pthread_mutex_lock(&fs->lock);
		if (s != NULL)
			snap_put_locked(s);
		now = now_mono();
		if (err == 0)
			goto again;
	}
	err = inode_key(fs, parent, true, dkey, sizeof(dkey));
	if (err == 0 && !want_file && dir_made_here(fs, dkey, name, now_mono())) {
		/* a directory made here lately (recent.c): its marker's HEAD
		 * alone (a lagging listing may not show it; one that shows it
		 * without attributes: the kernel forgot its inode); both
		 * probes only when the marker is gone */
		want_dir = true;
		want_file = true;
	}
	if (err == 0)
		err = objfs_key_join(dkey, name, false, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		return err;

	/* a name a fresh listing shows as a file, or known stored here:
	 * its HEAD alone (a directory: its marker's) */
	err = probe_key(fs, key, want_dir, want_file, &p);
	if (err == ENOENT && want_dir)
		err = probe_key(fs, key, false, false, &p);

	pthread_mutex_lock(&fs->lock);
	in = find_child(fs, parent, name);
	if (err != 0) {
		if (err == ENOENT && in != NULL && !in->dirty &&
		    in->spool == NULL && in->in_store) {
			/* gone from the store: forget the name */
			struct inode *par = detach(fs, in);

			maybe_free(fs, in);
			maybe_free(fs, par);
		} else if (err == ENOENT && in != NULL) {
			err = 0;        /* local data we still hold */
			goto found;
		}
		goto out_locked;
	}
	if (in != NULL && !same_type(in->mode, p.fa.mode) && !in->dirty &&
	    in->spool == NULL) {
		struct inode *par = detach(fs, in);

		maybe_free(fs, in);
		maybe_free(fs, par);
		in = NULL;
	}
	if (in == NULL) {
		in = inode_new(fs, parent, name, p.fa.mode);
		if (in == NULL) {
			err = ENOMEM;
			goto out_locked;
		}
	}
	apply_probe(fs, in, &p);
found:
	if (!pin && in->hl.id != NULL && !in->hl.data) {
		/* a hard link's name: the kernel gets the file it names */
		in->refs++;
		pthread_mutex_unlock(&fs->lock);
		err = hl_resolve(fs, in, false, out);
		unpin(fs, in);
		return err;
	}
	if (pin)
		in->refs++;
	else
		in->nlookup++;
	if (!pin)
		state_note(fs, in);
	*out = in;
out_locked:
	pthread_mutex_unlock(&fs->lock);
	if (err == 0 && !pin)
		dir_count(fs, *out);    /* the kernel sees its st_nlink: a
					   failure leaves the count unknown */
	return err;
}

/* Re-reads the attributes of a clean, stale inode from the store: by a
 * HEAD, or with sink by a GET of its first len bytes (*fetched: sink holds
 * them, of the ETag the inode now has; a store that answers with more
 * than asked, EFBIG, is asked by a HEAD after all). */
static int revalidate_with(struct objfs_fs *fs, struct inode *in, bool force,
			   uint64_t len, const struct objfs_sink *sink,
			   bool *fetched)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	char key[KEYBUF];
	struct probe p;
	double attr_time, asked, pf_when = 0;
	bool need, reg, in_store;
	int err;

	pthread_mutex_lock(&fs->lock);
	if (in->hl.data || in->hl.pending) {
		/* as for a plain file below: an open trusts this mount's
		 * own upload of the link set's data answered less than
		 * attr_ttl ago (its HEAD and the LIST of its names) */
		need = !(force && in->hl.data && fs->o.prefetch > 0 &&
			 in->put_time > 0 &&
			 now_mono() - in->put_time < fs->o.attr_ttl);
		pthread_mutex_unlock(&fs->lock);
		return need ? hl_revalidate(fs, in, force) : 0;
	}
	/* an open (force) trusts this mount's own upload answered less than
	 * attr_ttl ago as it trusts a prefetch's GET (rsync reopens the
	 * file it just wrote): prefetch=0 keeps strict close-to-open */
	need = in != fs->root && !in->dirty && in->spool == NULL &&
	       in->linked && (in->in_store || S_ISDIR(in->mode)) &&
	       (force || now_mono() - in->attr_time >= fs->o.attr_ttl) &&
	       !(force && fs->o.prefetch > 0 && in->put_time > 0 &&
		 now_mono() - in->put_time < fs->o.attr_ttl);
	if (need && !force && in->parent != NULL && in->parent->snap != NULL &&
	    now_mono() - in->parent->snap->time < fs->o.dir_ttl &&
	    listed_same(fs, in->parent, in, now_mono()))
		need = false;   /* the directory's fresh listing confirms it */
	err = need ? inode_key(fs, in, false, key, sizeof(key)) : 0;
	attr_time = in->attr_time;
	reg = S_ISREG(in->mode) && !in->attr_dirty && in->hl.id == NULL;
	in_store = in->in_store;
	pthread_mutex_unlock(&fs->lock);
	if (!need || err != 0)
		return err;
	asked = now_mono();
	if (reg && pf_revalidate(fs, key, attr_time, sink, &p, &pf_when)) {
		/* a prefetch's GET (prefetch.c) */
		*fetched = sink != NULL;
	} else if (sink != NULL && !S_ISDIR(in->mode)) {
		struct objfs_get_opts go = { 0, len, NULL, NULL };

		memset(&p, 0, sizeof(p));
		err = objfs_store_get(fs->store, key, &go, sink, &info);
		if (err == 0)
			probe_from_info(fs, &info, false, &p);
		objfs_obj_info_release(&info);
		if (err == ENOENT)
			err = probe_key_both(fs, key, true, &p);
		else if (err == EFBIG)
			err = probe_key(fs, key, false, true, &p);
		else if (err == 0)
			*fetched = !p.is_dir;
	} else {
		err = probe_key(fs, key, S_ISDIR(in->mode),
				!S_ISDIR(in->mode) || in_store, &p);
	}
	pthread_mutex_lock(&fs->lock);
	if (err == 0 && in->changed_at >= asked) {
		/* changed here meanwhile: the answer is older than that */
		*fetched = false;
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	if (err == 0 && hl_replaced(fs, in, &p)) {
		/* a link name another mount renamed over in's name, its set
		 * an inode here already: in is the file replaced */
		*fetched = false;
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	if (err == 0 && same_type(p.fa.mode, in->mode)) {
		apply_probe(fs, in, &p);
		if (pf_when > 0 && in->attr_time > pf_when)
			in->attr_time = pf_when;        /* as of its GET */
	} else if (err == 0)
		err = ESTALE;
	if (err != 0 || strcmp(in->etag, p.etag) != 0)
		*fetched = false;
	if (p.hl_id[0] != '\0')
		*fetched = false;       /* the name's body, not the file's */
	pthread_mutex_unlock(&fs->lock);
	if (err == 0 && p.hl_id[0] != '\0')
		err = hl_adopt(fs, in);         /* linked by another mount */
	return err;
}

int revalidate(struct objfs_fs *fs, struct inode *in, bool force)
{
	bool fetched = false;
	int err = revalidate_with(fs, in, force, 0, NULL, &fetched);

	/* a directory's st_nlink, from a listing (times.c) */
	return err == 0 ? dir_count(fs, in) : err;
}

int revalidate_get(struct objfs_fs *fs, struct inode *in, uint64_t len,
		   const struct objfs_sink *sink, bool *fetched)
{
	*fetched = false;
	return revalidate_with(fs, in, true, len, sink, fetched);
}
