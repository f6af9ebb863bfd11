/*
 * attrindex.c - the attribute index: listings answer `ls -l` without a
 * HEAD per name (the format and the rules are in volume/attrseg.h).
 *
 * Writing: every object this mount writes with its attributes (an upload,
 * a chmod/chown/utime, a symlink) is noted (aidx_note()) as a pending
 * entry of its directory, in memory.  The flusher thread (aidx_main())
 * writes a directory's pending entries as one new segment once the first
 * waited AIDX_DELAY seconds or AIDX_BATCH entries wait, and
 * objfs_fs_sync_all() writes them all.  Before writing, one listing of
 * the range of names the entries cover gives each object's Last-Modified
 * (a PUT's answer does not carry it); an entry whose object is gone or
 * has another ETag by then is dropped.  A crash before the flush loses
 * only hints: those names cost a HEAD later.
 *
 * Reading: snap_fetch_attrs() calls aidx_fill() before its HEADs of files
 * (those of subdirectories' markers run meanwhile): the
 * directory's segments are listed and fetched in parallel, and each entry
 * whose ETag and Last-Modified match the listing fills that name (the
 * latest ct wins).  A directory with AIDX_COMPACT segments or more is
 * compacted by the reader: one segment with the entries in use (and the
 * recent ones the listing does not show yet) is written, then the ones it
 * merged are deleted; segments are immutable, so nothing another writer
 * adds meanwhile is lost.  rmdir deletes the directory's index
 * (aidx_drop()); a directory rename deletes the index of every directory
 * of the tree it moved (aidx_drop_tree(): the copies have a new
 * Last-Modified, so no entry of theirs could match again).
 *
 * Renewal (dirsnap.c): aidx_news() gives a large listing being renewed
 * the entries of the segments it has not read yet, other mounts' only
 * (this mount's changes are in the listing already), so names another
 * mount wrote show without listing the directory whole.
 *
 * Known segments: the keys a reader listed (and the segments this mount
 * wrote since) are kept per directory for AIDX_KNOWN_TTL seconds
 * (fs->aidx_known, at most AIDX_KNOWN_MAX directories), so rmdir deletes
 * the marker and the index in one DeleteObjects without listing the
 * index again, and nothing when the directory never had one.  A segment
 * another mount wrote in that window is left behind: it costs storage
 * only (its entries match no object of a later directory of that name
 * unless ETag and Last-Modified both do, that is, the very object).
 *
 * The catalogue: a walk reads one directory's index after another, each
 * costing a LIST of its segments.  When a second directory's segments
 * are needed within dir_ttl of the first, the whole index of the volume
 * is listed once instead (one page, AIDX_CAT_KEYS keys: the segments of
 * most volumes) and answers every directory's LIST while it is fresh
 * (dir_ttl, like a listing), with the segments this mount wrote since and
 * without those it deleted.  A segment another mount wrote meanwhile is
 * missed for that long: its names cost a HEAD, as after a crash, and an
 * rmdir leaves it behind, as with known segments.  A volume whose index
 * outgrows one page lists it per directory again for AIDX_CAT_RETRY
 * seconds.  aidx_seg_keys() is the one way to a directory's segments.
 *
 * Locks: fs->aidx_mu (a leaf) guards the pending entries, the known
 * segments, the catalogue and the sequence; no lock is held across store I/O; entries of a snapshot are
 * filled under fs->lock.
 *
 * Zero-byte objects (empty files, symlinks, FIFOs, sockets, devices)
 * have entries like any other, but an entry is used only when the
 * listing shows the size it was resolved with (size=, written since
 * hard-link names have a body), and for a zero-byte object an entry
 * without size is never used.  Why: every zero-byte object has the ETag
 * of the empty body, and a hard link's name (hardlink.c) replaces a
 * file's object in place, possibly in the second the file was made
 * (touch f; ln f g), which a whole-second Last-Modified cannot tell
 * apart.  Names used to be zero-byte objects themselves, so an entry of
 * the empty file matched the name and showed it as a plain file of one
 * link.  Now a name's body is "objfs-link ID TOKEN" (volume/hlink.h):
 * its ETag and size differ from those of any file it replaces, so the
 * replaced file's entries match nothing, whatever the timing, whichever
 * mount wrote them, and with nothing to write or order in the index (a
 * crash between the name and anything else changes nothing).  Entries
 * without size come from segments written while names were zero-byte
 * objects (possibly stamped with a name's Last-Modified: the old bug):
 * those names still exist, so such entries are never used for a
 * zero-byte object.  Left (docs/objfs-mount.md, Limits): a zero-byte
 * object replaced by another zero-byte object in the same second by a
 * writer that leaves no newer entry (another tool, a mount that crashed
 * before its flush, an older objfs making a zero-byte name) shows the
 * first one's attributes, as does any object rewritten with the same
 * bytes in the same second; only the "same bytes" is common here.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tree.h"
#include "common/errors.h"
#include "common/io.h"
#include "common/log.h"
#include "backend/tree.h"
#include "fs/fs_int.h"
#include "volume/attrseg.h"

#define AIDX_DELAY 1.0          /* seconds an entry waits for company */
#define AIDX_BATCH 1000         /* entries that are written at once */
#define AIDX_COMPACT 8          /* segments a reader merges into one */
#define AIDX_RECENT 120         /* seconds an entry no listing shows yet
				   survives a compaction */
#define AIDX_KNOWN_TTL 60.0     /* seconds a listing of segments is used */
#define AIDX_KNOWN_MAX 256      /* directories whose segments are known */
#define AIDX_CAT_KEYS 1000      /* segment keys of the volume's one-page
				   catalogue */
#define AIDX_CAT_RETRY 60.0     /* seconds without a catalogue once the
				   index outgrew one page */

/* The segment keys of one directory as last listed, with the ones this
 * mount wrote since (fs->aidx_mu). */
struct aidx_known {
	struct aidx_known *next;
	char *dir;
	double time;                    /* when listed */
	char **keys;
	size_t n, cap;
};

/* The volume's whole index as one LIST showed it (fs->aidx_mu; see the
 * top of this file). */
struct aidx_cat {
	double time;                    /* when its LIST was sent; 0: none */
	double last_list;               /* when a directory's LIST was sent */
	double retry;                   /* no catalogue before this */
	bool loading;                   /* a thread lists it: wait on cv */
	pthread_cond_t cv;
	char **keys;                    /* sorted */
	size_t n, cap;
};

/* The pending entries of one directory (fs->aidx_mu). */
struct aidx_dir {
	struct aidx_dir *next;
	double first;                   /* when the oldest entry came */
	struct objfs_attrseg seg;       /* seg.dir: the directory key */
};

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static struct timespec ns_ts(int64_t ns)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	if (ts.tv_nsec < 0) {
		ts.tv_sec--;
		ts.tv_nsec += 1000000000;
	}
	return ts;
}

/* Appends str (owned from then on, or freed on failure) to the growing
 * array *v of *n strings with room for *cap.  0 or ENOMEM. */
static int strs_push(char ***v, size_t *n, size_t *cap, char *str)
{
	if (str == NULL)
		return ENOMEM;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		char **nv = realloc(*v, nc * sizeof(*nv));

		if (nv == NULL) {
			free(str);
			return ENOMEM;
		}
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = str;
	return 0;
}

/* ---- known segments (fs->aidx_mu) ------------------------------------- */

static void known_free(struct aidx_known *k)
{
	size_t i;

	if (k == NULL)
		return;
	for (i = 0; i < k->n; i++)
		free(k->keys[i]);
	free(k->keys);
	free(k->dir);
	free(k);
}

/* Unlinks and returns dir's record, or NULL (aidx_mu). */
static struct aidx_known *known_take(struct objfs_fs *fs, const char *dir)
{
	struct aidx_known **pp;

	for (pp = &fs->aidx_known; *pp != NULL; pp = &(*pp)->next) {
		if (strcmp((*pp)->dir, dir) == 0) {
			struct aidx_known *k = *pp;

			*pp = k->next;
			return k;
		}
	}
	return NULL;
}

static int known_add(struct aidx_known *k, const char *key)
{
	return strs_push(&k->keys, &k->n, &k->cap, strdup(key));
}

/* Records the n segment keys just listed for dir (forgets it when out of
 * memory); the oldest record goes past AIDX_KNOWN_MAX. */
static void known_set(struct objfs_fs *fs, const char *dir, char **keys,
		      size_t n, double listed)
{
	struct aidx_known *k = calloc(1, sizeof(*k)), **pp;
	size_t i, count = 0;
	int err = 0;

	if (k != NULL && (k->dir = strdup(dir)) == NULL)
		err = ENOMEM;
	for (i = 0; k != NULL && err == 0 && i < n; i++)
		err = known_add(k, keys[i]);
	pthread_mutex_lock(&fs->aidx_mu);
	known_free(known_take(fs, dir));
	if (k != NULL && err == 0) {
		k->time = listed;
		k->next = fs->aidx_known;
		fs->aidx_known = k;
		k = NULL;
		for (pp = &fs->aidx_known; *pp != NULL; pp = &(*pp)->next) {
			if (++count > AIDX_KNOWN_MAX) {
				known_free(*pp);
				*pp = NULL;
				break;
			}
		}
	}
	pthread_mutex_unlock(&fs->aidx_mu);
	known_free(k);
}

/* A segment this mount wrote: added to dir's known keys, if known. */
static void known_note(struct objfs_fs *fs, const char *dir, const char *key)
{
	struct aidx_known *k;

	pthread_mutex_lock(&fs->aidx_mu);
	k = known_take(fs, dir);
	if (k != NULL && known_add(k, key) != 0) {
		known_free(k);
		k = NULL;
	}
	if (k != NULL) {
		k->next = fs->aidx_known;
		fs->aidx_known = k;
	}
	pthread_mutex_unlock(&fs->aidx_mu);
}

/* ---- the catalogue (fs->aidx_mu) -------------------------------------- */

static void cat_clear(struct aidx_cat *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->keys[i]);
	free(c->keys);
	c->keys = NULL;
	c->n = c->cap = 0;
	c->time = 0;
}

/* The index of the first key not below key. */
static size_t cat_find(const struct aidx_cat *c, const char *key)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(c->keys[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool cat_fresh(const struct objfs_fs *fs, const struct aidx_cat *c,
		      double now)
{
	return c->time > 0 && now - c->time < fs->o.dir_ttl;
}

/* Copies the catalogue's keys under pfx into *keys, *n (aidx_mu). */
static int cat_copy(const struct aidx_cat *c, const char *pfx, char ***keys,
		    size_t *n)
{
	size_t i, cap = 0, pl = strlen(pfx);
	int err = 0;

	*keys = NULL;
	*n = 0;
	for (i = cat_find(c, pfx); i < c->n && err == 0 &&
	     strncmp(c->keys[i], pfx, pl) == 0; i++)
		err = strs_push(keys, n, &cap, strdup(c->keys[i]));
	return err;
}

/* A segment this mount wrote: into the catalogue, if there is one. */
static void cat_note(struct objfs_fs *fs, const char *key)
{
	struct aidx_cat *c = fs->aidx_cat;
	size_t i;
	char *dup;

	pthread_mutex_lock(&fs->aidx_mu);
	i = cat_find(c, key);
	if (c->time > 0 && (i == c->n || strcmp(c->keys[i], key) != 0)) {
		dup = strdup(key);
		if (dup == NULL || strs_push(&c->keys, &c->n, &c->cap, dup) != 0) {
			cat_clear(c);   /* strs_push freed dup */
		} else {
			memmove(c->keys + i + 1, c->keys + i,
				(c->n - 1 - i) * sizeof(*c->keys));
			c->keys[i] = dup;
		}
	}
	pthread_mutex_unlock(&fs->aidx_mu);
}

/* The segments of a directory (its prefix pfx) this mount deletes: out of
 * the catalogue. */
static void cat_forget(struct objfs_fs *fs, const char *pfx)
{
	struct aidx_cat *c = fs->aidx_cat;
	size_t i, j, pl = strlen(pfx);

	pthread_mutex_lock(&fs->aidx_mu);
	i = cat_find(c, pfx);
	for (j = i; j < c->n && strncmp(c->keys[j], pfx, pl) == 0; j++)
		free(c->keys[j]);
	if (j > i) {
		memmove(c->keys + i, c->keys + j,
			(c->n - j) * sizeof(*c->keys));
		c->n -= j - i;
	}
	pthread_mutex_unlock(&fs->aidx_mu);
}

/* Lists the whole index into the catalogue (c->loading set by the
 * caller, who holds no lock). */
static void cat_load(struct objfs_fs *fs)
{
	struct aidx_cat *c = fs->aidx_cat;
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_list_req req;
	double sent = now_mono();
	char **keys = NULL;
	size_t n = 0, cap = 0, i;
	int err;

	memset(&req, 0, sizeof(req));
	req.prefix = OBJFS_ATTR_INDEX_PREFIX;
	req.max_keys = AIDX_CAT_KEYS;
	err = objfs_store_list(fs->store, &req, &page);
	if (err == 0 && (page.next != NULL || page.n_entries > AIDX_CAT_KEYS))
		err = EFBIG;
	for (i = 0; err == 0 && i < page.n_entries; i++)
		err = strs_push(&keys, &n, &cap, strdup(page.entries[i].key));
	objfs_list_page_release(&page);
	pthread_mutex_lock(&fs->aidx_mu);
	cat_clear(c);
	if (err == 0) {
		c->keys = keys;
		c->n = n;
		c->cap = cap;
		c->time = sent;
		keys = NULL;
		n = 0;
	} else {
		/* too big: per directory for a while; else at the next walk */
		c->retry = sent + (err == EFBIG ? AIDX_CAT_RETRY :
				   fs->o.dir_ttl);
	}
	c->loading = false;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&fs->aidx_mu);
	objfs_debug(fs->log, SUB, "attribute index catalogue: %s",
		    err == 0 ? "listed" : objfs_strerror(err));
	objfs_tree_keys_free(keys, n);
}

/* Copies dir's segments (prefix pfx) from a fresh catalogue, loading it
 * when a walk reads indexes; true when it answered (*err, ENOMEM only). */
static bool cat_keys(struct objfs_fs *fs, const char *pfx, char ***keys,
		     size_t *n, double *listed, int *err)
{
	struct aidx_cat *c = fs->aidx_cat;
	bool load = false, tried = false;
	double now;

	pthread_mutex_lock(&fs->aidx_mu);
	for (;;) {
		now = now_mono();
		if (cat_fresh(fs, c, now)) {
			*err = cat_copy(c, pfx, keys, n);
			*listed = c->time;
			pthread_mutex_unlock(&fs->aidx_mu);
			return true;
		}
		if (c->loading) {
			pthread_cond_wait(&c->cv, &fs->aidx_mu);
			continue;
		}
		if (tried)
			break;
		/* a second directory's index within dir_ttl: a walk */
		load = fs->o.dir_ttl > 0 && now >= c->retry &&
		       c->last_list > 0 && now - c->last_list < fs->o.dir_ttl;
		if (!load)
			break;
		c->loading = true;
		pthread_mutex_unlock(&fs->aidx_mu);
		cat_load(fs);
		pthread_mutex_lock(&fs->aidx_mu);
		tried = true;
	}
	c->last_list = now;
	pthread_mutex_unlock(&fs->aidx_mu);
	return false;
}

int aidx_seg_keys(struct objfs_fs *fs, const char *dir, char ***keys,
		  size_t *n, double *listed)
{
	char pfx[128];
	int err;

	objfs_attrseg_prefix(dir, pfx, sizeof(pfx));
	if (cat_keys(fs, pfx, keys, n, listed, &err))
		return err;
	*listed = now_mono();
	return objfs_tree_keys(fs->store, pfx, keys, n);
}

int aidx_init(struct objfs_fs *fs)
{
	uint64_t w;
	int err;

	err = objfs_random_bytes(&w, sizeof(w));
	if (err != 0)
		return err;
	snprintf(fs->writer, sizeof(fs->writer), "%016" PRIx64, w);
	fs->aidx_cat = calloc(1, sizeof(*fs->aidx_cat));
	if (fs->aidx_cat == NULL)
		return ENOMEM;
	pthread_cond_init(&fs->aidx_cat->cv, NULL);
	pthread_mutex_init(&fs->aidx_mu, NULL);
	pthread_cond_init(&fs->aidx_cv, NULL);
	return 0;
}

void aidx_destroy(struct objfs_fs *fs)
{
	while (fs->aidx != NULL) {
		struct aidx_dir *d = fs->aidx;

		fs->aidx = d->next;
		objfs_attrseg_release(&d->seg);
		free(d);
	}
	while (fs->aidx_known != NULL) {
		struct aidx_known *k = fs->aidx_known;

		fs->aidx_known = k->next;
		known_free(k);
	}
	if (fs->aidx_cat != NULL) {
		cat_clear(fs->aidx_cat);
		pthread_cond_destroy(&fs->aidx_cat->cv);
		free(fs->aidx_cat);
		fs->aidx_cat = NULL;
	}
	pthread_cond_destroy(&fs->aidx_cv);
	pthread_mutex_destroy(&fs->aidx_mu);
}

/* The OBJFS_FATTR_* fields and the OBJFS_ATTRSEG_* ones they become. */
static const unsigned field_map[][2] = {
	{ OBJFS_FATTR_MODE, OBJFS_ATTRSEG_MODE },
	{ OBJFS_FATTR_UID, OBJFS_ATTRSEG_UID },
	{ OBJFS_FATTR_GID, OBJFS_ATTRSEG_GID },
	{ OBJFS_FATTR_MTIME, OBJFS_ATTRSEG_MTIME },
	{ OBJFS_FATTR_RDEV, OBJFS_ATTRSEG_RDEV },
	{ OBJFS_FATTR_ATIME, OBJFS_ATTRSEG_ATIME },
	{ OBJFS_FATTR_CTIME, OBJFS_ATTRSEG_CTIME },
};

/* The attributes of fa its metadata holds (mask) into entry e. */
static void entry_from_fattr(struct objfs_attrseg_entry *e,
			     const struct objfs_fattr *fa, unsigned mask)
{
	size_t i;

	if (!S_ISCHR(fa->mode) && !S_ISBLK(fa->mode))
		mask &= ~OBJFS_FATTR_RDEV;
	if (fa->atime.tv_nsec < 0)
		mask &= ~OBJFS_FATTR_ATIME;
	if (fa->ctime.tv_nsec < 0)
		mask &= ~OBJFS_FATTR_CTIME;
	e->have = 0;
	for (i = 0; i < sizeof(field_map) / sizeof(field_map[0]); i++) {
		if (mask & field_map[i][0])
			e->have |= field_map[i][1];
	}
	e->mode = fa->mode;
	e->uid = fa->uid;
	e->gid = fa->gid;
	e->mtime = ts_ns(&fa->mtime);
	e->atime = ts_ns(&fa->atime);
	e->ctime = ts_ns(&fa->ctime);
	e->rdev = (uint64_t)fa->rdev;
}

/* The OBJFS_FATTR_* mask of the fields entry e holds. */
static unsigned entry_mask(const struct objfs_attrseg_entry *e)
{
	unsigned mask = 0;
	size_t i;

	for (i = 0; i < sizeof(field_map) / sizeof(field_map[0]); i++) {
		if (e->have & field_map[i][1])
			mask |= field_map[i][0];
	}
	return mask;
}

void aidx_note(struct objfs_fs *fs, const char *key, const char *etag,
	       const struct objfs_fattr *fa, unsigned mask,
	       const char *link)
{
	struct objfs_attrseg_entry e;
	const char *slash = strrchr(key, '/');
	size_t dl = slash != NULL ? (size_t)(slash - key) + 1 : 0;
	struct aidx_dir *d;
	struct timespec now = now_real();

	if (etag == NULL || etag[0] == '\0' || strlen(etag) >= sizeof(e.etag) ||
	    key[dl] == '\0' ||
	    strncmp(key, OBJFS_META_DIR "/", strlen(OBJFS_META_DIR "/")) == 0)
		return;         /* nor for a hard link's data (hardlink.c) */
	memset(&e, 0, sizeof(e));
	e.name = (char *)(key + dl);
	snprintf(e.etag, sizeof(e.etag), "%s", etag);
	e.ct = ts_ns(&now);
	entry_from_fattr(&e, fa, mask);
	e.link = (char *)link;
	pthread_mutex_lock(&fs->aidx_mu);
	for (d = fs->aidx; d != NULL; d = d->next) {
		if (strlen(d->seg.dir) == dl && memcmp(d->seg.dir, key, dl) == 0)
			break;
	}
	if (d == NULL) {
		d = calloc(1, sizeof(*d));
		if (d != NULL && (d->seg.dir = strndup(key, dl)) == NULL) {
			free(d);
			d = NULL;
		}
		if (d != NULL) {
			d->first = now_mono();
			d->next = fs->aidx;
			fs->aidx = d;
		}
	}
	if (d != NULL && objfs_attrseg_add(&d->seg, &e) == 0 &&
	    d->seg.n >= AIDX_BATCH)
		pthread_cond_broadcast(&fs->aidx_cv);
	pthread_mutex_unlock(&fs->aidx_mu);
}

/* ---- writing a segment ------------------------------------------------ */

/* The key of this mount's next segment of directory dir into buf. */
static void next_seg_key(struct objfs_fs *fs, const char *dir, char *buf,
			 size_t cap)
{
	char pfx[128];
	uint64_t seq;

	objfs_attrseg_prefix(dir, pfx, sizeof(pfx));
	pthread_mutex_lock(&fs->aidx_mu);
	seq = ++fs->aidx_seq;
	pthread_mutex_unlock(&fs->aidx_mu);
	snprintf(buf, cap, "%s%s-%08" PRIx64, pfx, fs->writer, seq);
}

static int put_seg(struct objfs_fs *fs, const struct objfs_attrseg *seg)
{
	struct objfs_put_opts po = { NULL, "text/plain", false };
	struct objfs_source src;
	char key[KEYBUF], *text = NULL;
	size_t len;
	int err;

	err = objfs_attrseg_format(seg, &text, &len);
	if (err != 0)
		return err;
	next_seg_key(fs, seg->dir, key, sizeof(key));
	objfs_source_mem(&src, text, len);
	err = objfs_store_put(fs->store, key, &src, &po, NULL);
	free(text);
	if (err == 0) {
		known_note(fs, seg->dir, key);
		cat_note(fs, key);
	}
	return err;
}

/* Sets the lm of every entry of seg (sorted) whose object the listing
 * shows with the same ETag; ok[i] says which.  One LIST per page of the
 * range the names cover (a new one where the next name lies past it). */
static int resolve_lm(struct objfs_fs *fs, struct objfs_attrseg *seg,
		      bool *ok)
{
	const char *dir = seg->dir;
	size_t i = 0;
	int err = 0;

	while (i < seg->n && err == 0) {
		struct objfs_list_req rq = { dir, "/", NULL, NULL, 1000 };
		struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
		char sa[KEYBUF], name[OBJFS_NAME_MAX + 1];
		const char *last = NULL;
		size_t k;

		/* start just before the first name not yet seen */
		if (objfs_key_join(dir, seg->e[i].name, false, sa, sizeof(sa)) != 0) {
			i++;
			continue;
		}
		sa[strlen(sa) - 1] = '\0';
		rq.start_after = sa[0] != '\0' ? sa : NULL;
		err = objfs_store_list(fs->store, &rq, &pg);
		if (err != 0)
			break;
		for (k = 0; k < pg.n_entries && i < seg->n; k++) {
			const struct objfs_list_entry *le = &pg.entries[k];
			int c;

			if (!objfs_key_child(dir, le->key, false, name, sizeof(name)))
				continue;
			while (i < seg->n && (c = strcmp(seg->e[i].name, name)) <= 0) {
				if (c == 0 &&
				    strcmp(seg->e[i].etag, le->etag) == 0) {
					seg->e[i].lm = ts_ns(&le->mtime);
					seg->e[i].size = (uint64_t)le->size;
					seg->e[i].have |= OBJFS_ATTRSEG_SIZE;
					ok[i] = true;
				}
				i++;
			}
		}
		if (pg.n_entries > 0)
			last = pg.entries[pg.n_entries - 1].key;
		if (pg.n_prefixes > 0 &&
		    (last == NULL || strcmp(pg.prefixes[pg.n_prefixes - 1], last) > 0))
			last = pg.prefixes[pg.n_prefixes - 1];
		if (pg.next == NULL || last == NULL) {
			i = seg->n;     /* the rest is not in the store */
		} else {
			/* names up to the page's end that it did not show */
			while (i < seg->n) {
				char full[KEYBUF];

				if (objfs_key_join(dir, seg->e[i].name, false, full,
						   sizeof(full)) == 0 &&
				    strcmp(full, last) > 0)
					break;
				i++;
			}
		}
		objfs_list_page_release(&pg);
	}
	return err;
}

/* Writes the pending entries of one directory (taken off the list). */
static void flush_dir(struct objfs_fs *fs, struct aidx_dir *d)
{
	struct objfs_attrseg out = OBJFS_ATTRSEG_INIT;
	bool *ok;
	size_t i;
	int err;

	objfs_attrseg_sort(&d->seg);
	ok = calloc(d->seg.n ? d->seg.n : 1, sizeof(*ok));
	err = ok == NULL ? ENOMEM : resolve_lm(fs, &d->seg, ok);
	if (err == 0 && (out.dir = strdup(d->seg.dir)) == NULL)
		err = ENOMEM;
	for (i = 0; i < d->seg.n && err == 0; i++) {
		if (ok[i])
			err = objfs_attrseg_add(&out, &d->seg.e[i]);
	}
	if (err == 0 && out.n > 0)
		err = put_seg(fs, &out);
	if (err != 0)
		objfs_warn(fs->log, SUB, "attribute index of \"%s\": %s (its "
			   "files cost a HEAD when listed)", d->seg.dir,
			   objfs_strerror(err));
	free(ok);
	objfs_attrseg_release(&out);
	objfs_attrseg_release(&d->seg);
	free(d);
}

void aidx_flush(struct objfs_fs *fs, bool all)
{
	double now = now_mono();

	for (;;) {
		struct aidx_dir **pp, *d = NULL;

		pthread_mutex_lock(&fs->aidx_mu);
		for (pp = &fs->aidx; *pp != NULL; pp = &(*pp)->next) {
			if (all || (*pp)->seg.n >= AIDX_BATCH ||
			    now - (*pp)->first >= AIDX_DELAY) {
				d = *pp;
				*pp = d->next;
				break;
			}
		}
		pthread_mutex_unlock(&fs->aidx_mu);
		if (d == NULL)
			return;
		flush_dir(fs, d);
	}
}

void *aidx_main(void *arg)
{
	struct objfs_fs *fs = arg;

	pthread_mutex_lock(&fs->aidx_mu);
	while (!fs->aidx_stop) {
		struct timespec until;

		objfs_deadline_ms(CLOCK_REALTIME, 250, &until);
		pthread_cond_timedwait(&fs->aidx_cv, &fs->aidx_mu, &until);
		if (fs->aidx_stop)
			continue;
		pthread_mutex_unlock(&fs->aidx_mu);
		attrs_flush(fs, false);         /* deferred attributes too */
		aidx_flush(fs, false);
		pthread_mutex_lock(&fs->aidx_mu);
	}
	pthread_mutex_unlock(&fs->aidx_mu);
	return NULL;
}

/* ---- reading ---------------------------------------------------------- */

/* What the segment readers of one directory share. */
struct fill {
	struct objfs_fs *fs;
	const char *dir;
	struct dirsnap *s;
	int64_t recent;                 /* entries made after this, ns... */
	struct objfs_attrseg keep;      /* ...that match no listed name yet
					   (fs->lock) */
	bool compact;
};

struct seg_task {
	struct objfs_fs *fs;
	const char *dir;
	const char *key;
	int err;
	struct objfs_attrseg seg;       /* parsed (err 0) */
};

/* The index read of one directory: the segments' LIST and their GETs,
 * in parallel (pre_run).  aidx_pre_start runs
 * it on the pool while the caller lists the directory; aidx_fill runs it
 * itself when given none, and takes the rest from there. */
struct aidx_pre {
	struct objfs_fs *fs;
	struct objfs_group g;
	char dir[KEYBUF];
	int err;                        /* of the LIST */
	char **keys;
	size_t n;
	double listed;                  /* when the LIST was sent */
	struct seg_task *tasks;         /* n of them, fetched (NULL: out of
					   memory) */
	bool done;                      /* g waited for (pre_wait) */
};

/* Applies entry e to the snapshot when it matches (fs->lock). */
bool aidx_apply(struct objfs_fs *fs, struct dirsnap *s,
		const struct objfs_attrseg_entry *e)
{
	struct dent *d;
	bool found;
	size_t i = snap_find(s, e->name, &found);
	mode_t mode;

	if (!found)
		return false;
	d = &s->e[i];
	if (d->is_dir || strcmp(d->etag, e->etag) != 0 ||
	    ts_ns(&d->mtime) != e->lm)
		return false;
	if ((e->have & OBJFS_ATTRSEG_SIZE) ? e->size != (uint64_t)d->size :
	    d->size == 0)
		return false;   /* zero bytes: see the top of this file */
	if (d->ict >= e->ct)
		return true;    /* a later entry was applied already */
	mode = (e->have & OBJFS_ATTRSEG_MODE) ? e->mode :
	       default_mode(fs, S_IFREG);
	if (S_ISDIR(mode))
		return false;   /* a directory object: the HEAD decides */
	d->fa.mode = mode;
	d->fa.uid = (e->have & OBJFS_ATTRSEG_UID) ? e->uid : fs->o.uid;
	d->fa.gid = (e->have & OBJFS_ATTRSEG_GID) ? e->gid : fs->o.gid;
	if (e->have & OBJFS_ATTRSEG_MTIME) {
		d->fa.mtime = ns_ts(e->mtime);
	} else {
		/* as a HEAD gives it: Last-Modified, whole seconds */
		d->fa.mtime = d->mtime;
		d->fa.mtime.tv_nsec = 0;
	}
	d->fa.atime = ns_ts(e->atime);
	d->fa.ctime = ns_ts(e->ctime);
	d->fa.rdev = (dev_t)e->rdev;
	free(d->link);
	d->link = e->link != NULL ? strdup(e->link) : NULL;
	d->meta_mask = entry_mask(e);
	d->ict = e->ct;
	d->have_attr = true;
	return true;
}

/* Fetches and parses one segment (no lock). */
static void seg_run(void *arg)
{
	struct seg_task *t = arg;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(OBJFS_ATTRSEG_MAX);
	struct objfs_get_opts go = OBJFS_GET_ALL;
	struct objfs_sink sink;

	objfs_sink_membuf(&sink, &mb);
	t->err = objfs_store_get(t->fs->store, t->key, &go, &sink, NULL);
	if (t->err == ERANGE)
		t->err = 0;     /* empty */
	if (t->err == 0)
		t->err = objfs_attrseg_parse(mb.data != NULL ? mb.data : "",
					     mb.len, &t->seg);
	if (t->err == 0 && strcmp(t->seg.dir, t->dir) != 0)
		t->err = EPROTO;        /* another directory's (a collision) */
	objfs_membuf_release(&mb);
}

/* Applies a fetched segment's entries to f->s (takes fs->lock). */
static void seg_apply(struct fill *f, struct seg_task *t)
{
	struct objfs_fs *fs = f->fs;
	size_t i;

	if (t->err != 0)
		return;
	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < t->seg.n; i++) {
		if (!aidx_apply(fs, f->s, &t->seg.e[i]) && f->compact &&
		    t->seg.e[i].ct > f->recent)
			objfs_attrseg_add(&f->keep, &t->seg.e[i]);
	}
	pthread_mutex_unlock(&fs->lock);
}

/* A compaction's store work, done on the pool once the reader has its
 * answer: the merged segment and the keys of the segments it replaces,
 * both owned. */
struct compact_job {
	struct objfs_fs *fs;
	struct objfs_attrseg out;       /* out.dir: the directory key */
	char **del;
	size_t n;
};

static void compact_job_free(struct compact_job *j)
{
	objfs_attrseg_release(&j->out);
	objfs_tree_keys_free(j->del, j->n);
	free(j);
}

/* Writes the merged segment, then deletes the ones it replaces. */
static void compact_run(void *arg)
{
	struct compact_job *j = arg;
	struct objfs_fs *fs = j->fs;
	char pfx[128];
	int err = 0;

	pthread_mutex_lock(&fs->aidx_mu);
	known_free(known_take(fs, j->out.dir)); /* listed again when needed */
	pthread_mutex_unlock(&fs->aidx_mu);
	objfs_attrseg_prefix(j->out.dir, pfx, sizeof(pfx));
	cat_forget(fs, pfx);    /* the merged one is noted as it is written */
	if (j->out.n > 0)
		err = put_seg(fs, &j->out);
	if (err == 0 && j->n > 0)
		err = objfs_store_del_many(fs->store, (const char *const *)j->del,
					   j->n, NULL);
	if (err != 0)
		objfs_warn(fs->log, SUB, "compacting the attribute index of "
			   "\"%s\": %s", j->out.dir, objfs_strerror(err));
	else
		objfs_debug(fs->log, SUB, "attribute index of \"%s\": %zu "
			    "segments merged into one", j->out.dir, j->n);
	compact_job_free(j);
}

/* Merges every entry in use (and the recent ones kept) into one segment
 * and replaces the segments read with it, on the pool (the reader does
 * not wait for those writes). */
static void compact(struct objfs_fs *fs, struct fill *f, char **keys,
		    struct seg_task *tasks, size_t n)
{
	struct compact_job *j = calloc(1, sizeof(*j));
	size_t i, cap = 0;
	int err = j != NULL ? 0 : ENOMEM;

	if (j != NULL) {
		j->fs = fs;
		j->out = f->keep;       /* taken over */
		memset(&f->keep, 0, sizeof(f->keep));
	}
	pthread_mutex_lock(&fs->lock);
	for (i = 0; err == 0 && i < f->s->n; i++) {
		const struct dent *d = &f->s->e[i];
		struct objfs_attrseg_entry e;

		if (d->ict == 0)
			continue;
		memset(&e, 0, sizeof(e));
		e.name = d->name;
		snprintf(e.etag, sizeof(e.etag), "%s", d->etag);
		e.lm = ts_ns(&d->mtime);
		e.ct = d->ict;
		e.size = d->size;       /* as listed: zero bytes need it */
		entry_from_fattr(&e, &d->fa, d->meta_mask);
		e.have |= OBJFS_ATTRSEG_SIZE;
		e.link = d->link;
		err = objfs_attrseg_add(&j->out, &e);
	}
	pthread_mutex_unlock(&fs->lock);
	if (err == 0 && (j->out.dir = strdup(f->dir)) == NULL)
		err = ENOMEM;
	for (i = 0; err == 0 && i < n; i++) {
		/* a segment that could not be read is left alone */
		if (tasks[i].err == 0 || tasks[i].err == ENOENT)
			err = strs_push(&j->del, &j->n, &cap, strdup(keys[i]));
	}
	if (err != 0) {
		objfs_warn(fs->log, SUB, "compacting the attribute index of "
			   "\"%s\": %s", f->dir, objfs_strerror(err));
		if (j != NULL)
			compact_job_free(j);
		return;
	}
	if (fs->pool == NULL ||
	    objfs_pool_submit(fs->pool, NULL, compact_run, j) != 0)
		compact_run(j);
}

static struct aidx_pre *pre_new(struct objfs_fs *fs, const char *dir)
{
	struct aidx_pre *pre;

	if (strlen(dir) >= KEYBUF)
		return NULL;
	pre = calloc(1, sizeof(*pre));
	if (pre == NULL)
		return NULL;
	pre->fs = fs;
	strcpy(pre->dir, dir);
	objfs_group_init(&pre->g);
	return pre;
}

/* Lists the segments of pre->dir, makes their tasks (none when out of
 * memory) and fetches them, in parallel on the pool (counted in pre->g,
 * which aidx_fill waits for): itself on the pool for aidx_pre_start, in
 * the caller for aidx_fill without one. */
static void pre_run(void *arg)
{
	struct aidx_pre *pre = arg;
	size_t i;

	pre->err = aidx_seg_keys(pre->fs, pre->dir, &pre->keys, &pre->n,
				 &pre->listed);
	if (pre->err != 0 || pre->n == 0)
		return;
	pre->tasks = calloc(pre->n, sizeof(*pre->tasks));
	for (i = 0; pre->tasks != NULL && i < pre->n; i++) {
		pre->tasks[i].fs = pre->fs;
		pre->tasks[i].dir = pre->dir;
		pre->tasks[i].key = pre->keys[i];
	}
	/* the GETs in parallel, the last one here; the group counts them */
	for (i = 0; pre->tasks != NULL && i < pre->n; i++) {
		if (i + 1 == pre->n || pre->fs->pool == NULL ||
		    objfs_pool_submit(pre->fs->pool, &pre->g, seg_run,
				      &pre->tasks[i]) != 0)
			seg_run(&pre->tasks[i]);
	}
}

/* Waits for the read (once: a group is released by its wait). */
static void pre_wait(struct aidx_pre *pre)
{
	if (!pre->done) {
		objfs_group_wait(&pre->g);
		pre->done = true;
	}
}

struct aidx_pre *aidx_pre_start(struct objfs_fs *fs, const char *dir)
{
	struct aidx_pre *pre = fs->pool != NULL ? pre_new(fs, dir) : NULL;

	if (pre != NULL &&
	    objfs_pool_submit(fs->pool, &pre->g, pre_run, pre) != 0) {
		free(pre);
		pre = NULL;
	}
	return pre;
}

static void pre_free(struct aidx_pre *pre)
{
	size_t i;

	for (i = 0; pre->tasks != NULL && i < pre->n; i++)
		objfs_attrseg_release(&pre->tasks[i].seg);
	free(pre->tasks);
	objfs_tree_keys_free(pre->keys, pre->n);
	free(pre);
}

void aidx_pre_cancel(struct aidx_pre *pre)
{
	if (pre == NULL)
		return;
	pre_wait(pre);
	pre_free(pre);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int aidx_pre_split(struct aidx_pre *pre, const char *after, size_t step,
		   size_t max, char ***out, size_t *nout)
{
	const char **names = NULL;
	size_t dl = strlen(pre->dir), nn = 0, cap = 0, i, j, ocap = 0;
	int err = 0;

	*out = NULL;
	*nout = 0;
	pre_wait(pre);
	if (pre->err != 0 || pre->tasks == NULL || step == 0 ||
	    strncmp(after, pre->dir, dl) != 0)
		return 0;
	for (i = 0; err == 0 && i < pre->n; i++) {
		const struct seg_task *t = &pre->tasks[i];

		for (j = 0; t->err == 0 && err == 0 && j < t->seg.n; j++) {
			const char *nm = t->seg.e[j].name;

			if (strcmp(nm, after + dl) <= 0)
				continue;
			if (nn == cap) {
				size_t nc = cap ? cap * 2 : 1024;
				const char **nv = realloc(names,
							  nc * sizeof(*nv));

				if (nv == NULL) {
					err = ENOMEM;
					break;
				}
				names = nv;
				cap = nc;
			}
			names[nn++] = nm;
		}
	}
	if (err == 0 && nn > 1) {
		qsort(names, nn, sizeof(*names), name_cmp);
		for (i = 1, j = 1; i < nn; i++) {
			if (strcmp(names[i], names[j - 1]) != 0)
				names[j++] = names[i];
		}
		nn = j;
	}
	if (err == 0 && nn / step > max)
		err = EFBIG;
	/* none at the last name: the range after it would hold nothing */
	for (i = step - 1; err == 0 && i + 1 < nn; i += step) {
		char key[KEYBUF];

		err = objfs_key_join(pre->dir, names[i], false, key,
				     sizeof(key));
		if (err == 0)
			err = strs_push(out, nout, &ocap, strdup(key));
	}
	free(names);
	if (err != 0) {
		objfs_tree_keys_free(*out, *nout);
		*out = NULL;
		*nout = 0;
	}
	return err;
}

void aidx_fill(struct objfs_fs *fs, const char *dir, struct dirsnap *s,
	       struct aidx_pre *pre)
{
	struct fill f;
	struct seg_task *tasks;
	char **keys;
	struct timespec now = now_real();
	size_t n, i;
	int err;

	if (pre != NULL && strcmp(pre->dir, dir) != 0) {
		aidx_pre_cancel(pre);   /* renamed meanwhile: read it again */
		pre = NULL;
	}
	if (pre == NULL) {
		pre = pre_new(fs, dir);
		if (pre == NULL)
			return;
		pre_run(pre);
	}
	pre_wait(pre);
	err = pre->err;
	keys = pre->keys;
	n = pre->n;
	tasks = pre->tasks;
	if (err == 0)
		known_set(fs, dir, keys, n, pre->listed);
	if (err != 0 || n == 0 || tasks == NULL)
		goto out;
	memset(&f, 0, sizeof(f));
	f.fs = fs;
	f.dir = dir;
	f.s = s;
	f.recent = ts_ns(&now) - (int64_t)AIDX_RECENT * 1000000000;
	f.compact = n >= AIDX_COMPACT && !fs->o.read_only;
	for (i = 0; i < n; i++) {
		seg_apply(&f, &tasks[i]);
		if (tasks[i].err != 0 && tasks[i].err != ENOENT)
			objfs_debug(fs->log, SUB, "attribute index segment %s: "
				    "%s (ignored)", keys[i],
				    objfs_strerror(tasks[i].err));
	}
	if (f.compact)
		compact(fs, &f, keys, tasks, n);
	objfs_attrseg_release(&f.keep);
out:
	if (err != 0)
		objfs_debug(fs->log, SUB, "listing the attribute index of "
			    "\"%s\": %s", dir, objfs_strerror(err));
	pre_free(pre);
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int aidx_news(struct objfs_fs *fs, const char *dir, char *const *old,
	      size_t n_old, char ***keys, size_t *n,
	      void (*fn)(void *arg, const struct objfs_attrseg_entry *e),
	      void *arg)
{
	char pfx[128];
	double listed;
	size_t i, j, plen;
	int err;

	*keys = NULL;
	*n = 0;
	objfs_attrseg_prefix(dir, pfx, sizeof(pfx));
	plen = strlen(pfx);
	err = aidx_seg_keys(fs, dir, keys, n, &listed);
	if (err != 0)
		return err;
	if (*n > 1)
		qsort(*keys, *n, sizeof(**keys), key_cmp);
	for (i = 0; i < *n; i++) {
		const char *k = (*keys)[i];
		struct seg_task t;

		if ((n_old > 0 && bsearch(&k, old, n_old, sizeof(*old),
					  key_cmp) != NULL) ||
		    (strncmp(k, pfx, plen) == 0 &&
		     strncmp(k + plen, fs->writer, strlen(fs->writer)) == 0))
			continue;       /* seen, or this mount's own */
		memset(&t, 0, sizeof(t));
		t.fs = fs;
		t.dir = dir;
		t.key = k;
		seg_run(&t);
		if (t.err == 0) {
			for (j = 0; j < t.seg.n; j++)
				fn(arg, &t.seg.e[j]);
		} else if (t.err != ENOENT) {
			objfs_debug(fs->log, SUB, "attribute index segment %s: "
				    "%s (ignored)", k, objfs_strerror(t.err));
		}
		objfs_attrseg_release(&t.seg);
	}
	return 0;
}

int aidx_drop(struct objfs_fs *fs, const char *dir, const char *marker,
	      bool later)
{
	struct aidx_known *k;
	char pfx[128], **keys = NULL;
	bool batched = false;
	double listed;
	size_t n = 0;
	int err = 0, derr = 0;

	pthread_mutex_lock(&fs->aidx_mu);
	k = known_take(fs, dir);
	pthread_mutex_unlock(&fs->aidx_mu);
	if (k != NULL && now_mono() - k->time < AIDX_KNOWN_TTL) {
		keys = k->keys;
		n = k->n;
		k->keys = NULL;
		k->n = 0;
	} else {
		err = aidx_seg_keys(fs, dir, &keys, &n, &listed);
	}
	known_free(k);
	objfs_attrseg_prefix(dir, pfx, sizeof(pfx));
	cat_forget(fs, pfx);
	if (err == 0 && marker != NULL) {
		char **nk = realloc(keys, (n + 1) * sizeof(*nk));

		if (nk != NULL)
			keys = nk;
		if (nk != NULL && (nk[n] = strdup(marker)) != NULL) {
			n++;
			batched = true;
		}
	}
	if (err == 0 && n > 0 && later) {
		size_t i;

		/* queued: gone to this mount now, sent in a batch */
		for (i = 0; i < n; i++) {
			int e = del_later(fs, keys[i]);

			if (e != 0 && batched && i == n - 1)
				batched = false;        /* at once, below */
			else if (e != 0 && err == 0)
				err = e;
		}
	} else if (err == 0 && n > 0) {
		err = objfs_store_del_many(fs->store, (const char *const *)keys,
					   n, NULL);
	}
	/* not in the batch, or the batch failed (which key is not told) */
	if (marker != NULL && (!batched || err != 0))
		derr = objfs_store_del(fs->store, marker);
	if (err != 0)
		objfs_warn(fs->log, SUB, "deleting the attribute index of "
			   "\"%s\": %s", dir, objfs_strerror(err));
	objfs_tree_keys_free(keys, n);
	return derr;
}

/* The directories of a moved tree: old keys, each once. */
struct tree_dirs {
	const char *from, *to;          /* the old and the new prefix */
	char **dirs;
	size_t n, cap;
};

static int tree_dirs_add(struct tree_dirs *t, const char *rel, size_t len)
{
	size_t fl = strlen(t->from), i;
	char *d;

	for (i = t->n; i > 0; i--) {    /* keys come in order: look back */
		if (strlen(t->dirs[i - 1]) == fl + len &&
		    memcmp(t->dirs[i - 1] + fl, rel, len) == 0)
			return 0;
		if (i + 8 <= t->n)
			break;
	}
	d = malloc(fl + len + 1);
	if (d != NULL) {
		memcpy(d, t->from, fl);
		memcpy(d + fl, rel, len);
		d[fl + len] = '\0';
	}
	return strs_push(&t->dirs, &t->n, &t->cap, d);
}

static int tree_dirs_page(void *arg, const struct objfs_list_page *pg)
{
	struct tree_dirs *t = arg;
	size_t tl = strlen(t->to), i;
	int err = 0;

	for (i = 0; i < pg->n_entries && err == 0; i++) {
		const char *rel = pg->entries[i].key + tl;
		const char *slash = strrchr(rel, '/');

		if (strncmp(pg->entries[i].key, t->to, tl) != 0)
			continue;
		err = tree_dirs_add(t, rel, slash != NULL ?
				    (size_t)(slash - rel) + 1 : 0);
	}
	return err;
}

struct drop_task {
	struct objfs_fs *fs;
	const char *dir;
};

static void drop_run(void *arg)
{
	struct drop_task *t = arg;

	(void)aidx_drop(t->fs, t->dir, NULL, false);
}

void aidx_drop_tree(struct objfs_fs *fs, const char *from, const char *to)
{
	struct tree_dirs t = { from, to, NULL, 0, 0 };
	struct drop_task *tasks = NULL;
	struct objfs_group g;
	size_t i;
	int err;

	err = tree_dirs_add(&t, "", 0);         /* the top, however empty */
	if (err == 0)
		err = objfs_tree_walk(fs->store, to, 0, tree_dirs_page, &t);
	if (err == 0 && (tasks = calloc(t.n, sizeof(*tasks))) == NULL)
		err = ENOMEM;
	if (err != 0) {
		/* the top's index at least; the others cost storage only */
		objfs_warn(fs->log, SUB, "finding the directories moved to "
			   "\"%s\": %s (their old attribute index stays)", to,
			   objfs_strerror(err));
		(void)aidx_drop(fs, from, NULL, false);
	}
	objfs_group_init(&g);
	for (i = 0; tasks != NULL && i < t.n; i++) {
		tasks[i].fs = fs;
		tasks[i].dir = t.dirs[i];
		if (fs->pool == NULL ||
		    objfs_pool_submit(fs->pool, &g, drop_run, &tasks[i]) != 0)
			drop_run(&tasks[i]);
	}
	objfs_group_wait(&g);
	for (i = 0; i < t.n; i++)
		free(t.dirs[i]);
	free(t.dirs);
	free(tasks);
}
