/*
 * hardlink.c - hard links: several names of one file, on plain objects.
 *
 * The format (volume/hlink.h): a file with one name is a plain object.
 * link(2) makes it (anything but a directory: a regular file, symlink,
 * FIFO, socket or device) a link set with a random id: its data and
 * attributes move to .objfs/links/ID/data, every name becomes a small
 * object whose metadata holds ID and a token T of its own (its body
 * "objfs-link ID T": never the ETag or size of a file it replaces),
 * and each name has an entry .objfs/links/ID/names/T (body: the key it
 * was made at).  st_nlink is the number of entries.  No counter is
 * read, changed and written back: two mounts linking and unlinking one
 * file at once only add and delete their own entries, which cannot lose
 * an update; a rename (of a name, or of a directory above names) copies
 * the metadata, so the token and its entry stay right.
 *
 * In a mount: a name of a link set is a name inode (in the tree, hl_id
 * set, never told to the kernel); do_lookup() hands the kernel the data
 * inode instead (hl_resolve(): one per link set, hl_data, not in the
 * tree, on fs->hl_list, its key the data object's), so every name is one
 * kernel inode, and reads, writes, truncate and chmod through any name go
 * to the data object.  Readdirplus gives link names without attributes
 * (hl_dent()), so the kernel looks them up; the attribute index holds no
 * entry for them (attrindex.c skips keys under .objfs/, rename.c link
 * names): `ls -l` costs a HEAD of the name, a HEAD of the data and a LIST
 * of its entries per link name.
 *
 * Inode numbers (issue 34 item 3: a name keeps its number across
 * renames, links and forgets): the plain file linked first keeps its
 * number, and fs->hl_inos remembers the number this mount gave each set
 * (until its last name goes), so a data inode made again after the
 * kernel forgot it has the same one; a set this mount never numbered is
 * numbered from its id (HL_INO_BASE and up), the same in every mount.  While it becomes a set
 * (hl_pending) it is already on fs->hl_list, so a lookup of either name
 * finds it and not a second inode.  A file the kernel holds (looked up
 * or open, clean) whose name another mount linked, or renamed a link name
 * over, becomes the set's inode, with its number, at its revalidation
 * (hl_adopt()) or the lookup of that name (hl_resolve()), when this mount
 * has no inode of the set yet; when it has one, the held file is the
 * file the rename replaced (hl_replaced(): out of the tree, nlink 0, what
 * it holds stays local, nothing of it goes up): no two inodes of a mount
 * ever hold one set's data.  create(2) of an existing link name opens the set's file
 * (hl_file()).  The state log of a resumable mount keeps a data inode's
 * id (journal.c SF_HLINK), and link is an intent (names.c).
 *
 * Attributes (issue 34 item 4): the data object holds them; every
 * change of them here is a copy in place of it through the set's one data
 * inode, under its in->mu, so this mount's updates reach the store one
 * after the other, each carrying all of them (the last call wins); a
 * revalidation whose HEAD was sent before a change here is not applied
 * (in->changed_at), so an answer older than the change never replaces
 * it in memory.  link(2) changes the file's ctime: the first link's copy
 * to the data key carries it (a next link's stays in memory, as a
 * rename's does: times.c).
 *
 * Order of the requests, so that a crash or a race leaves at most an
 * orphan (an entry or data no name points at, which a later unlink of
 * the set or a scan of .objfs/links/ finds), never a name whose data is
 * gone while its set has entries:
 *   first link    entries of both names; copy of the object to the data
 *                 key (If-Match its ETag: a file changed meanwhile is not
 *                 half-linked); the new name (If-None-Match: EEXIST);
 *                 the old name overwritten by a link object.
 *   next link     its entry; a HEAD of the data (ENOENT: the set was
 *                 freed); the new name (If-None-Match).
 *   unlink        the name (remove.c); its entry; a LIST of the entries: none
 *                 left, the data is deleted.
 *   rename        the copy and delete of the name (rename.c): no entry
 *                 changes; a link name renamed over loses its entry.
 * Races (documented in docs/objfs-mount.md): a link racing the unlink of
 * the set's last other name may find the data deleted after its HEAD:
 * the new name then points at nothing; a lookup finds it so and removes
 * it (ENOENT), as if the unlink had come after.  A write to the old name
 * by another mount between the copy and its overwrite is replaced by the
 * link (last writer wins, as for any two writers of one file).
 *
 * A name's body (with the set's random id) gives it an ETag and a size
 * other than those of the file it replaces (names made before were
 * zero-byte objects, as empty files are): an attribute index entry of
 * that file never matches the name in a listing (attrindex.c), so a name
 * is never taken for the plain file it replaced, whatever the timing.
 * No write goes to a name once its file is a data inode: link_first()
 * stores a pending upload or deferred attribute copy under in->mu before
 * the names are written, and inode_key() of a data inode is the data key.
 *
 * Locks: the entry points are called with fs->ns held (read: link,
 * unlink; write: rename) but hl_resolve() and hl_revalidate(); in->mu of
 * the file being linked is held across its upload and copy; fs->lock for
 * tables and attributes, never across store I/O.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tree.h"
#include "common/errors.h"
#include "common/log.h"
#include "fs/fs_int.h"
#include "volume/hlink.h"

#define IDBUF (OBJFS_HLINK_ID_LEN + 1)

/* ---- the link set in the store ---------------------------------------- */

static int count_page(void *arg, const struct objfs_list_page *page)
{
	*(unsigned *)arg += (unsigned)page->n_entries;
	return 0;
}

/* *n: the entries (names) of set id.  0 or an errno. */
static int count_names(struct objfs_fs *fs, const char *id, unsigned *n)
{
	char prefix[KEYBUF];
	int err;

	*n = 0;
	err = objfs_hlink_names_prefix(id, prefix, sizeof(prefix));
	if (err == 0)
		err = objfs_tree_walk(fs->store, prefix, 0, count_page, n);
	return err;
}

/* Writes (add: key, the name's key) or deletes the entry of token tok in
 * set id.  0 or an errno; a missing entry is no error. */
static int entry_set(struct objfs_fs *fs, const char *id, const char *tok,
		     const char *key, bool add)
{
	struct objfs_put_opts po = { NULL, "text/plain", false };
	char ekey[KEYBUF];
	struct objfs_source src;
	int err;

	err = objfs_hlink_name_key(id, tok, ekey, sizeof(ekey));
	if (err != 0)
		return err;
	if (!add) {
		err = objfs_store_del(fs->store, ekey);
		return err == ENOENT ? 0 : err;
	}
	objfs_source_mem(&src, key, strlen(key));
	return objfs_store_put(fs->store, ekey, &src, &po, NULL);
}

/* Writes the name key of set id with token tok (its body
 * objfs_hlink_name_body(); fa for other tools), failing with EEXIST when
 * the key exists and excl.  0 or an errno. */
static int name_put(struct objfs_fs *fs, const char *key, const char *id,
		    const char *tok, const struct objfs_fattr *fa, bool excl,
		    struct objfs_obj_info *info)
{
	struct objfs_meta meta = OBJFS_META_INIT;
	struct objfs_put_opts po = { NULL, NULL, excl };
	struct objfs_source src;
	char body[OBJFS_HLINK_BODY_LEN + 1];
	int err;

	err = objfs_hlink_name_body(id, tok, body, sizeof(body));
	if (err == 0)
		err = objfs_fattr_to_meta(fa, &meta);
	if (err == 0)
		err = objfs_hlink_to_meta(id, tok, &meta);
	if (err == 0) {
		po.meta = &meta;
		objfs_source_mem(&src, body, strlen(body));
		err = objfs_store_put(fs->store, key, &src, &po, info);
	}
	objfs_meta_release(&meta);
	return err;
}

/* The data object of set id and its count of names.  0, ENOENT or an
 * errno. */
static int probe_data(struct objfs_fs *fs, const char *id, struct probe *p,
		      unsigned *nlink)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	char dkey[KEYBUF];
	int err;

	memset(p, 0, sizeof(*p));
	err = objfs_hlink_data_key(id, dkey, sizeof(dkey));
	if (err == 0)
		err = objfs_store_head(fs->store, dkey, &info);
	if (err == 0) {
		probe_from_info(fs, &info, false, p);
		p->hl_id[0] = '\0';
		err = count_names(fs, id, nlink);
	}
	objfs_obj_info_release(&info);
	if (err == 0 && *nlink == 0)
		*nlink = 1;     /* names being made or renamed: at least this */
	return err;
}

/* ---- inodes (fs->lock) ------------------------------------------------ */

/* The inode number this mount gave a link set (fs->hl_inos). */
struct hl_ino {
	char id[IDBUF];
	fuse_ino_t ino;
	struct hl_ino *next;
};

static struct hl_ino **ino_find(struct objfs_fs *fs, const char *id)
{
	struct hl_ino **pp;

	for (pp = &fs->hl_inos; *pp != NULL; pp = &(*pp)->next) {
		if (strcmp((*pp)->id, id) == 0)
			break;
	}
	return pp;
}

/* Remembers ino as set id's number (out of memory: not remembered). */
static void ino_remember(struct objfs_fs *fs, const char *id, fuse_ino_t ino)
{
	struct hl_ino **pp = ino_find(fs, id), *h = *pp;

	fs_assert_locked(fs);
	if (h == NULL) {
		h = calloc(1, sizeof(*h));
		if (h == NULL)
			return;
		snprintf(h->id, sizeof(h->id), "%s", id);
		h->next = fs->hl_inos;
		fs->hl_inos = h;
	}
	h->ino = ino;
}

static void ino_forget(struct objfs_fs *fs, const char *id)
{
	struct hl_ino **pp = ino_find(fs, id), *h = *pp;

	fs_assert_locked(fs);
	if (h != NULL) {
		*pp = h->next;
		free(h);
	}
}

void hl_inos_free(struct objfs_fs *fs)
{
	struct hl_ino *h;

	while ((h = fs->hl_inos) != NULL) {
		fs->hl_inos = h->next;
		free(h);
	}
}

static struct inode *find_data(struct objfs_fs *fs, const char *id)
{
	struct inode *in;

	fs_assert_locked(fs);
	for (in = fs->hl_list; in != NULL; in = in->hl.next) {
		if (strcmp(in->hl.id, id) == 0)
			return in;
	}
	return NULL;
}

/* Puts in on fs->hl_list as the file of set id: its data inode (not in
 * the tree), or a plain file becoming it (pending).  0 or ENOMEM. */
static int enlist(struct objfs_fs *fs, struct inode *in, const char *id,
		  bool pending)
{
	char *c = strdup(id);

	fs_assert_locked(fs);
	if (c == NULL)
		return ENOMEM;
	free(in->hl.id);
	in->hl.id = c;
	in->hl.data = !pending;
	in->hl.pending = pending;
	in->hl.next = fs->hl_list;
	fs->hl_list = in;
	return 0;
}

static int make_data(struct objfs_fs *fs, struct inode *in, const char *id)
{
	return enlist(fs, in, id, false);
}

/* Takes in off fs->hl_list (it stops being a data inode). */
static void unlist(struct objfs_fs *fs, struct inode *in)
{
	struct inode **pp;

	fs_assert_locked(fs);
	for (pp = &fs->hl_list; *pp != NULL; pp = &(*pp)->hl.next) {
		if (*pp == in) {
			*pp = in->hl.next;
			break;
		}
	}
	in->hl.next = NULL;
	in->hl.data = false;
	in->hl.pending = false;
}

void hl_inode_free(struct objfs_fs *fs, struct inode *in)
{
	if (in->hl.data || in->hl.pending)
		unlist(fs, in);
	free(in->hl.id);
	in->hl.id = NULL;
}

int hl_load(struct objfs_fs *fs, struct inode *in, const char *id)
{
	fs_assert_locked(fs);
	if (in->hl.data && (id == NULL || strcmp(in->hl.id, id) != 0))
		unlist(fs, in);
	if (id == NULL || in->hl.data)
		return 0;
	if (!objfs_hlink_id_valid(id))
		return 0;       /* not ours: an unlinked inode */
	in->hl.nlink = 1;       /* counted at its revalidation */
	return make_data(fs, in, id);
}

int hl_data_key(const struct inode *in, char *buf, size_t cap)
{
	return objfs_hlink_data_key(in->hl.id, buf, cap);
}

bool hl_dent(struct objfs_fs *fs, struct inode *dir, const struct dent *d)
{
	struct inode *c;

	fs_assert_locked(fs);
	if (d->hlink)
		return true;
	c = find_child(fs, dir, d->name);
	return c != NULL && c->hl.id != NULL;
}

const struct inode *hl_name_file(struct objfs_fs *fs,
				 const struct inode *name_in)
{
	const struct inode *data;

	fs_assert_locked(fs);
	if (name_in->hl.id == NULL || name_in->hl.data)
		return name_in;
	data = find_data(fs, name_in->hl.id);
	return data != NULL ? data : name_in;
}

/* The name inode of (dir, name) for set id, its object of ETag etag just
 * written here (fresh for entry_ttl). */
static void name_inode(struct objfs_fs *fs, struct inode *dir,
		       const char *name, const char *id, const char *tok,
		       mode_t mode, const char *etag)
{
	struct inode *in = find_child(fs, dir, name);

	fs_assert_locked(fs);
	if (in != NULL && !in->dirty && in->spool == NULL) {
		struct inode *par = detach(fs, in);

		maybe_free(fs, in);
		maybe_free(fs, par);
		in = NULL;
	}
	if (in != NULL)
		return;         /* local data of another file: its upload wins */
	in = inode_new(fs, dir, name, mode);
	if (in == NULL)
		return;         /* a lookup makes it */
	in->hl.id = strdup(id);
	snprintf(in->hl.tok, sizeof(in->hl.tok), "%s", tok);
	in->in_store = true;
	in->attr_time = now_mono();
	snprintf(in->etag, sizeof(in->etag), "%s", etag);
	if (in->hl.id == NULL)
		in->attr_time = 0;
}

/* A new data inode of set id: the number this mount gave the set before
 * (fs->hl_inos: the file linked first keeps its own after the kernel
 * forgot it), else one from the id (bit 62 set, so never a number of the
 * counter), so every mount gives the set one inode number (rsync -H,
 * find -samefile); the counter's next number when that one is taken. */
static struct inode *data_inode_new(struct objfs_fs *fs, const char *id,
				    mode_t mode)
{
	uint64_t h = 1469598103934665603ULL;
	fuse_ino_t next = fs->next_ino, ino;
	struct hl_ino *known = *ino_find(fs, id);
	struct inode *in;
	const char *p;

	fs_assert_locked(fs);
	for (p = id; *p != '\0'; p++) {
		h ^= (unsigned char)*p;
		h *= 1099511628211ULL;
	}
	ino = (fuse_ino_t)((h & (HL_INO_BASE - 1)) | HL_INO_BASE);
	if (known != NULL)
		ino = known->ino;
	if (find_ino(fs, ino) != NULL) {
		in = inode_new(fs, NULL, id, mode);
	} else {
		fs->next_ino = ino;
		in = inode_new(fs, NULL, id, mode);
		fs->next_ino = next;
	}
	if (in != NULL)
		ino_remember(fs, id, in->ino);
	return in;
}

/* ---- lookup ------------------------------------------------------------ */

/* Whether the kernel holds in (a lookup or an open of its own), clean:
 * a file whose name became a link set's may become its data inode. */
static bool held(const struct inode *in)
{
	return (in->nlookup > 0 || in->nopen > 0) && !in->hl.data &&
	       !in->hl.pending && !in->dirty && in->spool == NULL;
}

/* Makes in, a file the kernel holds whose name is now one of set id (no
 * data inode of the set in this mount), the set's data inode: out of the
 * tree, its number kept for the set (fs->lock).  On failure (ENOMEM) in
 * stays as it was, out of the tree. */
static void join(struct objfs_fs *fs, struct inode *in, const char *id)
{
	struct inode *par;

	fs_assert_locked(fs);
	par = detach(fs, in);
	if (par != NULL)
		snap_drop(par);
	if (make_data(fs, in, id) == 0)
		ino_remember(fs, id, in->ino);
	in->attr_time = 0;
	state_note(fs, in);
	maybe_free(fs, par);
}

/* Counts the reference hl_resolve() hands out (fs->lock). */
static void take(struct objfs_fs *fs, struct inode *in, bool pin)
{
	if (pin) {
		in->refs++;
	} else {
		in->nlookup++;
		state_note(fs, in);
	}
}

int hl_resolve(struct objfs_fs *fs, struct inode *name_in, bool pin,
	       struct inode **out)
{
	char id[IDBUF], tok[sizeof(name_in->hl.tok)], key[KEYBUF];
	struct inode *in;
	struct probe p;
	unsigned nlink = 0;
	int err;

	pthread_mutex_lock(&fs->lock);
	snprintf(id, sizeof(id), "%s", name_in->hl.id);
	snprintf(tok, sizeof(tok), "%s", name_in->hl.tok);
	in = find_data(fs, id);
	if (in != NULL && (in->dirty || in->spool != NULL || in->hl.pending ||
			   now_mono() - in->attr_time < fs->o.attr_ttl)) {
		take(fs, in, pin);
		*out = in;
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	pthread_mutex_unlock(&fs->lock);

	err = probe_data(fs, id, &p, &nlink);
	pthread_mutex_lock(&fs->lock);
	if (err == ENOENT) {
		/* a name whose set was freed (a link raced the unlink of the
		 * last other name): it goes, as if the unlink came after */
		struct inode *par;

		err = inode_key(fs, name_in, false, key, sizeof(key));
		par = detach(fs, name_in);
		if (par != NULL)
			snap_drop(par);
		maybe_free(fs, par);
		pthread_mutex_unlock(&fs->lock);
		if (err == 0) {
			objfs_warn(fs->log, SUB, "%s: a hard link whose data "
				   "is gone: removed", key);
			objfs_store_del(fs->store, key);
			entry_set(fs, id, tok, NULL, false);
		}
		return ENOENT;
	}
	if (err != 0) {
		pthread_mutex_unlock(&fs->lock);
		return err;
	}
	in = find_data(fs, id);
	if (in == NULL && held(name_in) && name_in->linked &&
	    name_in->hl.id != NULL && strcmp(name_in->hl.id, id) == 0) {
		/* the kernel's inode of a name that became the set's (linked,
		 * or renamed over, by another mount): the set's one inode */
		join(fs, name_in, id);
		in = name_in->hl.data ? name_in : NULL;
	}
	if (in == NULL) {
		in = data_inode_new(fs, id, p.fa.mode);
		if (in == NULL || make_data(fs, in, id) != 0) {
			if (in != NULL)
				maybe_free(fs, in);
			pthread_mutex_unlock(&fs->lock);
			return ENOMEM;
		}
	}
	apply_probe(fs, in, &p);
	in->hl.nlink = nlink;
	take(fs, in, pin);
	*out = in;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int hl_file(struct objfs_fs *fs, struct inode **in)
{
	struct inode *data;
	bool name;
	int err;

	pthread_mutex_lock(&fs->lock);
	name = (*in)->hl.id != NULL && !(*in)->hl.data;
	pthread_mutex_unlock(&fs->lock);
	if (!name)
		return 0;
	err = hl_resolve(fs, *in, true, &data);
	unpin(fs, *in);
	*in = err == 0 ? data : NULL;
	return err;
}

int hl_revalidate(struct objfs_fs *fs, struct inode *in, bool force)
{
	char id[IDBUF];
	double asked;
	struct probe p;
	unsigned nlink = 0;
	bool need;
	int err;

	pthread_mutex_lock(&fs->lock);
	need = in->hl.data && !in->dirty && in->spool == NULL &&
	       in->in_store &&
	       (force || now_mono() - in->attr_time >= fs->o.attr_ttl);
	if (need)
		snprintf(id, sizeof(id), "%s", in->hl.id);
	pthread_mutex_unlock(&fs->lock);
	if (!need)
		return 0;
	asked = now_mono();
	err = probe_data(fs, id, &p, &nlink);
	pthread_mutex_lock(&fs->lock);
	if (err == 0 && in->hl.data && strcmp(in->hl.id, id) == 0 &&
	    in->changed_at < asked) {   /* else changed here meanwhile */
		apply_probe(fs, in, &p);
		in->hl.nlink = nlink;
	}
	pthread_mutex_unlock(&fs->lock);
	return err;
}

/* in, the kernel's inode of a name this mount's inode of its link set
 * now answers for, is the file a rename replaced (POSIX: unlinked, open
 * until closed): out of the tree, its data gone from the store, nothing
 * of it goes up (fs->lock). */
static void replaced(struct objfs_fs *fs, struct inode *in)
{
	struct inode *par;

	fs_assert_locked(fs);
	par = detach(fs, in);
	if (par != NULL)
		snap_drop(par);
	free(in->hl.id);
	in->hl.id = NULL;
	in->hl.tok[0] = '\0';
	in->in_store = false;
	in->attr_time = now_mono();
	inode_changed(in, false);
	state_note(fs, in);
	maybe_free(fs, par);
}

bool hl_replaced(struct objfs_fs *fs, struct inode *in,
		 const struct probe *p)
{
	struct inode *data;

	fs_assert_locked(fs);
	if (p->hl_id[0] == '\0' || in->hl.data || in->hl.pending ||
	    in->dirty || in->spool != NULL || in->attr_dirty)
		return false;   /* local state wins (apply_probe()) */
	data = find_data(fs, p->hl_id);
	if (data == NULL || data == in)
		return false;   /* in may become the set's (hl_adopt()) */
	replaced(fs, in);       /* its attributes as they were */
	return true;
}

int hl_adopt(struct objfs_fs *fs, struct inode *in)
{
	char id[IDBUF];
	bool adopt;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	adopt = in->hl.id != NULL && !in->hl.data && !in->hl.pending &&
		!in->dirty && in->spool == NULL;
	if (adopt) {
		snprintf(id, sizeof(id), "%s", in->hl.id);
		if (find_data(fs, id) != NULL) {
			/* made since hl_replaced() (a lookup of another
			 * name): never a second data inode */
			replaced(fs, in);
			adopt = false;
		}
	}
	if (adopt) {
		join(fs, in, id);
		if (!in->hl.data)
			err = ENOMEM;
	}
	pthread_mutex_unlock(&fs->lock);
	if (adopt && err == 0)
		err = hl_revalidate(fs, in, true);
	return err;
}

/* ---- link, unlink, rename -------------------------------------------- */

/* The first link of the plain file in (linked at key1, in->mu held):
 * makes set id of it with a second name key2 (dir, newname). */
static int link_first(struct objfs_fs *fs, struct inode *in,
		      struct inode *dir, const char *newname,
		      const char *key2)
{
	struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };
	struct objfs_obj_info cinfo = OBJFS_OBJ_INFO_INIT;
	struct objfs_obj_info n1 = OBJFS_OBJ_INFO_INIT;
	struct objfs_obj_info n2 = OBJFS_OBJ_INFO_INIT;
	struct objfs_meta meta = OBJFS_META_INIT;
	char id[IDBUF], key1[KEYBUF], dkey[KEYBUF], etag[OBJFS_ETAG_MAX];
	char tok1[OBJFS_HLINK_TOKEN_LEN + 1], tok2[OBJFS_HLINK_TOKEN_LEN + 1];
	struct objfs_fattr fa;
	struct inode *par;
	bool in_store;
	int err;

	err = inode_sync(fs, in);
	if (err == 0)
		err = attrs_sync(fs, in);
	if (err == 0)
		err = xattr_load(fs, in, false);        /* the copy carries them */
	if (err != 0)
		return err;
	pthread_mutex_lock(&fs->lock);
	err = in->linked ? inode_key(fs, in, false, key1, sizeof(key1)) : ENOENT;
	in_store = in->in_store;
	snprintf(etag, sizeof(etag), "%s", in->etag);
	inode_fattr(in, &fa);
	pthread_mutex_unlock(&fs->lock);
	if (err == 0 && !in_store)
		err = EIO;      /* not uploaded (cannot be once synced) */
	if (err == 0)
		err = objfs_hlink_id_new(id);
	if (err == 0)
		err = objfs_hlink_token_new(tok1);
	if (err == 0)
		err = objfs_hlink_token_new(tok2);
	if (err == 0)
		err = objfs_hlink_data_key(id, dkey, sizeof(dkey));
	if (err == 0) {
		/* lookups of either name meanwhile find in (hl_resolve()) */
		pthread_mutex_lock(&fs->lock);
		err = enlist(fs, in, id, true);
		pthread_mutex_unlock(&fs->lock);
	}
	if (err != 0)
		return err;
	err = entry_set(fs, id, tok1, key1, true);
	if (err == 0)
		err = entry_set(fs, id, tok2, key2, true);
	if (err == 0) {
		/* the link changes its ctime: the data object holds it */
		fa.ctime = now_real();
		pthread_mutex_lock(&fs->lock);
		err = xattr_meta(fs, in, &meta);
		pthread_mutex_unlock(&fs->lock);
		if (err == 0)
			err = objfs_fattr_to_meta(&fa, &meta);
		co.directive = OBJFS_META_REPLACE;
		co.meta = &meta;
		co.if_match = etag[0] != '\0' ? etag : NULL;
	}
	if (err == 0)
		err = objfs_store_copy(fs->store, key1, dkey, &co, &cinfo);
	if (err == 0)
		err = name_put(fs, key2, id, tok2, &fa, true, &n2);
	if (err == 0) {
		err = name_put(fs, key1, id, tok1, &fa, false, &n1);
		if (err != 0)
			objfs_store_del(fs->store, key2);
	}
	if (err != 0) {
		/* undone: the file stays plain (an orphan entry at worst) */
		objfs_store_del(fs->store, dkey);
		entry_set(fs, id, tok2, NULL, false);
		entry_set(fs, id, tok1, NULL, false);
		pthread_mutex_lock(&fs->lock);
		unlist(fs, in);
		free(in->hl.id);
		in->hl.id = NULL;
		pthread_mutex_unlock(&fs->lock);
		goto out;
	}
	pthread_mutex_lock(&fs->lock);
	par = in->parent;
	if (par != NULL)
		par->refs++;
	detach(fs, in);
	in->hl.pending = false;
	in->hl.data = true;
	if (strcmp(in->cache_etag, in->etag) == 0)
		snprintf(in->cache_etag, sizeof(in->cache_etag), "%s",
			 cinfo.etag);
	snprintf(in->etag, sizeof(in->etag), "%s", cinfo.etag);
	if (in->spool != NULL)
		snprintf(in->spool->base_etag,
			 sizeof(in->spool->base_etag), "%s", cinfo.etag);
	in->hl.nlink = 2;
	inode_changed(in, false);
	in->ctime = fa.ctime;           /* as stored */
	in->meta_mask = FATTR_ALL;
	in->attr_time = now_mono();
	ino_remember(fs, id, in->ino);  /* its number after a forget too */
	/* the data, two entries and the new name */
	fs->cap.objects += 4;
	fs->cap.scan_obj_delta += 4;
	if (par != NULL) {
		name_inode(fs, par, in->name, id, tok1, fa.mode, n1.etag);
		snap_drop(par);
	}
	name_inode(fs, dir, newname, id, tok2, fa.mode, n2.etag);
	snap_drop(dir);
	/* its mtime and ctime, and the name in fs->recent */
	snap_note(fs, dir, newname, true, false);
	state_note(fs, in);
	if (par != NULL) {
		par->refs--;
		maybe_free(fs, par);
	}
	pthread_mutex_unlock(&fs->lock);
out:
	objfs_meta_release(&meta);
	objfs_obj_info_release(&cinfo);
	objfs_obj_info_release(&n1);
	objfs_obj_info_release(&n2);
	return err;
}

/* One more name key2 (dir, newname) of the data inode in (in->mu held). */
static int link_next(struct objfs_fs *fs, struct inode *in,
		     struct inode *dir, const char *newname,
		     const char *key2)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_obj_info n2 = OBJFS_OBJ_INFO_INIT;
	char id[IDBUF], dkey[KEYBUF], tok2[OBJFS_HLINK_TOKEN_LEN + 1];
	struct objfs_fattr fa;
	unsigned nlink = 0;
	int err;

	pthread_mutex_lock(&fs->lock);
	snprintf(id, sizeof(id), "%s", in->hl.id);
	err = hl_data_key(in, dkey, sizeof(dkey));
	inode_fattr(in, &fa);
	pthread_mutex_unlock(&fs->lock);
	if (err == 0)
		err = objfs_hlink_token_new(tok2);
	if (err != 0)
		return err;
	err = entry_set(fs, id, tok2, key2, true);
	if (err != 0)
		return err;
	err = objfs_store_head(fs->store, dkey, &info);
	if (err == 0)
		err = name_put(fs, key2, id, tok2, &fa, true, &n2);
	if (err != 0) {
		entry_set(fs, id, tok2, NULL, false);
		goto out;
	}
	if (count_names(fs, id, &nlink) != 0 || nlink < 2)
		nlink = 0;      /* what this mount knows then */
	pthread_mutex_lock(&fs->lock);
	in->hl.nlink = nlink != 0 ? nlink : in->hl.nlink + 1;
	inode_changed(in, false);
	fs->cap.objects += 2;
	fs->cap.scan_obj_delta += 2;
	name_inode(fs, dir, newname, id, tok2, fa.mode, n2.etag);
	snap_drop(dir);
	/* its mtime and ctime, and the name in fs->recent */
	snap_note(fs, dir, newname, true, false);
	state_note(fs, in);
	pthread_mutex_unlock(&fs->lock);
out:
	objfs_obj_info_release(&info);
	objfs_obj_info_release(&n2);
	return err;
}

int hl_link(struct objfs_fs *fs, struct inode *in, struct inode *dir,
	    const char *newname)
{
	char dkey[KEYBUF], key2[KEYBUF];
	bool data;
	int err;

	fs_assert_ns_held(fs);
	pthread_mutex_lock(&in->mu);
	pthread_mutex_lock(&fs->lock);
	if (S_ISDIR(in->mode))
		err = EPERM;            /* POSIX: no links to directories */
	else if (!in->linked && !in->hl.data)
		err = ENOENT;           /* unlinked while open */
	else if (find_child(fs, dir, newname) != NULL)
		err = EEXIST;
	else
		err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	data = in->hl.data;
	pthread_mutex_unlock(&fs->lock);
	if (err == 0)
		err = objfs_key_join(dkey, newname, false, key2, sizeof(key2));
	if (err == 0)
		err = data ? link_next(fs, in, dir, newname, key2) :
		      link_first(fs, in, dir, newname, key2);
	pthread_mutex_unlock(&in->mu);
	return err;
}

void hl_name_gone(struct objfs_fs *fs, const char *id, const char *tok)
{
	char dkey[KEYBUF];
	struct inode *in;
	unsigned nlink = 0;
	int err;

	fs_assert_ns_held(fs);
	err = entry_set(fs, id, tok, NULL, false);
	if (err == 0)
		err = count_names(fs, id, &nlink);
	if (err != 0) {
		objfs_warn(fs->log, SUB, "hard link set %s: the entry of a "
			   "name gone: %s (an orphan: the data stays)", id,
			   objfs_strerror(err));
		return;
	}
	pthread_mutex_lock(&fs->lock);
	fs->cap.objects--;
	fs->cap.scan_obj_delta--;
	in = find_data(fs, id);
	if (in != NULL) {
		in->refs++;
		inode_changed(in, false);
		in->hl.nlink = nlink;
	}
	pthread_mutex_unlock(&fs->lock);
	if (nlink == 0) {
		/* the last name: the data goes (kept local while open) */
		if (in != NULL)
			err = keep_open_data(fs, in);
		if (err == 0)
			err = objfs_hlink_data_key(id, dkey, sizeof(dkey));
		if (err == 0)
			err = objfs_store_del(fs->store, dkey);
		if (err == ENOENT)
			err = 0;        /* another mount freed it */
		pthread_mutex_lock(&fs->lock);
		if (err == 0) {
			fs->cap.objects--;
			fs->cap.scan_obj_delta--;
		}
		if (err == 0)
			ino_forget(fs, id);
		if (err == 0 && in != NULL && in->hl.data) {
			unlist(fs, in);
			in->in_store = false;
			charge_force(fs, in, 0);
			state_note(fs, in);
		}
		pthread_mutex_unlock(&fs->lock);
		if (err != 0)
			objfs_warn(fs->log, SUB, "hard link set %s: freeing its "
				   "data: %s (an orphan)", id, objfs_strerror(err));
	}
	unpin(fs, in);
}
