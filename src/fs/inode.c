/*
 * inode.c - the inode tables and the life of an inode.
 *
 * Every inode but the root is in the ino hash from inode_new() to
 * inode_free(); the root lives from create to destroy.  States:
 *   linked      also in the name hash under (parent, name) and among its
 *               parent's children, pinning the parent (parent->refs); its
 *               key is the names of its ancestors (inode_key())
 *   unlinked    detached (deleted, renamed over, gone from the store):
 *               only in the ino hash; open handles and unsaved data stay,
 *               inode_key() says ENOENT
 *   freed       by maybe_free() once nlookup, nopen and refs are 0, it is
 *               clean and has no children; parents left unused follow
 * Everything here runs under fs->lock, except pin_ino() and unpin(),
 * which take it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs_int.h"

/* ---- tables (fs->lock) ------------------------------------------------ */

static unsigned hash_ino(fuse_ino_t ino)
{
	uint64_t h = ino * 0x9E3779B97F4A7C15ULL;

	return (unsigned)(h >> (64 - HASH_BITS));
}

static unsigned hash_name(const struct inode *parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)parent;

	for (; *name != '\0'; name++) {
		h ^= (unsigned char)*name;
		h *= 1099511628211ULL;
	}
	return (unsigned)(h >> (64 - HASH_BITS)) ^ (unsigned)(h & (HASH_SIZE - 1));
}

struct inode *find_ino(struct objfs_fs *fs, fuse_ino_t ino)
{
	struct inode *in;

	fs_assert_locked(fs);
	if (ino == FUSE_ROOT_ID)
		return fs->root;
	for (in = fs->ino_tab[hash_ino(ino)]; in != NULL; in = in->ino_next) {
		if (in->ino == ino)
			return in;
	}
	return NULL;
}

struct inode *find_child(struct objfs_fs *fs, struct inode *parent,
			 const char *name)
{
	struct inode *in;

	fs_assert_locked(fs);
	for (in = fs->name_tab[hash_name(parent, name) & (HASH_SIZE - 1)];
	     in != NULL; in = in->name_next) {
		if (in->parent == parent && in->linked &&
		    strcmp(in->name, name) == 0)
			return in;
	}
	return NULL;
}

void name_unhash(struct objfs_fs *fs, struct inode *in)
{
	struct inode **pp;
	unsigned h = hash_name(in->parent, in->name) & (HASH_SIZE - 1);

	fs_assert_locked(fs);
	for (pp = &fs->name_tab[h]; *pp != NULL; pp = &(*pp)->name_next) {
		if (*pp == in) {
			*pp = in->name_next;
			break;
		}
	}
	in->name_next = NULL;
}

void name_hash(struct objfs_fs *fs, struct inode *in)
{
	unsigned h = hash_name(in->parent, in->name) & (HASH_SIZE - 1);

	fs_assert_locked(fs);
	in->name_next = fs->name_tab[h];
	fs->name_tab[h] = in;
}

void sib_unlink(struct inode *in)
{
	struct inode *parent = in->parent;

	if (in->sib_dir && parent != NULL && parent->last_dir == in)
		parent->last_dir = in->sib_prev;  /* a directory or NULL */
	if (in->sib_prev != NULL)
		in->sib_prev->sib_next = in->sib_next;
	else if (parent != NULL)
		parent->child = in->sib_next;
	if (in->sib_next != NULL)
		in->sib_next->sib_prev = in->sib_prev;
	in->sib_prev = NULL;
	in->sib_next = NULL;
	in->sib_dir = false;
}

/* Directories go first, files after the last directory: inode_nlink()
 * walks the directories only (a directory of a million files stays
 * O(subdirectories) per getattr). */
void sib_link(struct inode *parent, struct inode *in)
{
	struct inode *after = S_ISDIR(in->mode) ? NULL : parent->last_dir;

	in->sib_dir = S_ISDIR(in->mode);
	in->sib_prev = after;
	in->sib_next = after != NULL ? after->sib_next : parent->child;
	if (in->sib_next != NULL)
		in->sib_next->sib_prev = in;
	if (after != NULL)
		after->sib_next = in;
	else
		parent->child = in;
	if (in->sib_dir && parent->last_dir == NULL)
		parent->last_dir = in;
}

void inode_free(struct objfs_fs *fs, struct inode *in)
{
	struct inode **pp;

	fs_assert_locked(fs);
	/* a dirty inode is never freed, but at destroy */
	assert(!in->dirty || fs->stopping);
	assert(fs->n_inodes > 0 && fs->spool_used >= in->spool_disk);
	for (pp = &fs->ino_tab[hash_ino(in->ino)]; *pp != NULL;
	     pp = &(*pp)->ino_next) {
		if (*pp == in) {
			*pp = in->ino_next;
			break;
		}
	}
	fs->n_inodes--;
	hl_inode_free(fs, in);
	state_gone(fs, in);
	snap_drop(in);
	fs->spool_used -= in->spool_disk;
	/* at destroy: data of a named file neither uploaded nor kept stays
	 * in the state directory, whose log (closed before: no FREE record)
	 * names it for the next mount (recover.c) */
	if (in->dirty && (in->linked || in->hl.data || in->load_orphan) &&
	    fs->journal.fd < 0 &&
	    in->spool != NULL && in->spool->path != NULL &&
	    in->spool->kept == NULL)
		objfs_spool_leave(in->spool);
	else
		objfs_spool_destroy(in->spool);
	stream_free(in->stream);        /* a dirty one at destroy */
	pthread_mutex_destroy(&in->mu);
	free(in->link);
	free(in->xattr);
	free(in->name);
	free(in);
}

/* Detaches in from its name and parent (fs->lock).  The parent loses the
 * pin the child held; the caller must run maybe_free(parent) after. */
struct inode *detach(struct objfs_fs *fs, struct inode *in)
{
	struct inode *parent = in->parent;

	fs_assert_locked(fs);
	if (parent == NULL)
		return NULL;
	assert(parent->refs > 0);
	if (in->linked)
		name_unhash(fs, in);
	sib_unlink(in);
	in->linked = false;
	in->parent = NULL;
	parent->refs--;
	state_note(fs, in);
	return parent;
}

/* Frees in (and parents left unused) when nothing holds it (fs->lock). */
void maybe_free(struct objfs_fs *fs, struct inode *in)
{
	fs_assert_locked(fs);
	while (in != NULL && in != fs->root && in->nlookup == 0 &&
	       in->nopen == 0 && in->refs == 0 && !in->dirty &&
	       in->child == NULL) {
		struct inode *parent = detach(fs, in);

		inode_free(fs, in);
		in = parent;
	}
}

struct inode *inode_new(struct objfs_fs *fs, struct inode *parent,
			const char *name, mode_t mode)
{
	struct inode *in;

	fs_assert_locked(fs);
	in = calloc(1, sizeof(*in));
	if (in == NULL)
		return NULL;
	in->name = strdup(name);
	if (in->name == NULL) {
		free(in);
		return NULL;
	}
	pthread_mutex_init(&in->mu, NULL);
	in->ino = fs->next_ino++;
	in->mode = mode;
	in->uid = fs->o.uid;
	in->gid = fs->o.gid;
	in->ino_next = fs->ino_tab[hash_ino(in->ino)];
	fs->ino_tab[hash_ino(in->ino)] = in;
	fs->n_inodes++;
	if (parent != NULL) {
		in->parent = parent;
		in->linked = true;
		parent->refs++;
		name_hash(fs, in);
		sib_link(parent, in);
	}
	return in;
}

/* The key of in into buf: "" for the root, "a/b" for a file, "a/b/" for a
 * directory when dir_slash (fs->lock).  0 or ENAMETOOLONG/ENOENT. */
int inode_key(struct objfs_fs *fs, struct inode *in, bool dir_slash,
	      char *buf, size_t cap)
{
	const struct inode *chain[OBJFS_KEY_MAX / 2 + 2];
	size_t n = 0, len = 0, i;
	const struct inode *p;

	fs_assert_locked(fs);
	if (in->hl.data)
		return hl_data_key(in, buf, cap);
	for (p = in; p != NULL && p->parent != NULL; p = p->parent) {
		if (!p->linked || n >= sizeof(chain) / sizeof(chain[0]))
			return p->linked ? ENAMETOOLONG : ENOENT;
		chain[n++] = p;
	}
	if (p != fs->root)
		return ENOENT;
	for (i = n; i-- > 0;) {
		size_t nl = strlen(chain[i]->name);

		if (len + nl + 2 > cap ||
		    len + nl + (i > 0 || (dir_slash && S_ISDIR(in->mode)) ? 1 : 0) >
		    fs->key_room)
			return ENAMETOOLONG;
		memcpy(buf + len, chain[i]->name, nl);
		len += nl;
		if (i > 0 || (dir_slash && S_ISDIR(in->mode)))
			buf[len++] = '/';
	}
	buf[len] = '\0';
	return 0;
}

int key_room_check(struct objfs_fs *fs, struct inode *dir, const char *name)
{
	char key[KEYBUF];
	int err;

	pthread_mutex_lock(&fs->lock);
	err = inode_key(fs, dir, true, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	if (err == 0 && strlen(key) + strlen(name) > fs->key_room)
		err = ENAMETOOLONG;
	return err;
}

mode_t default_mode(struct objfs_fs *fs, mode_t type)
{
	if (type == S_IFDIR)
		return S_IFDIR | (0777 & ~fs->o.umask);
	if (type == S_IFLNK)
		return S_IFLNK | 0777;
	return S_IFREG | (0666 & ~fs->o.umask);
}

void fill_stat(struct objfs_fs *fs, struct inode *in, struct stat *st)
{
	fs_assert_locked(fs);
	memset(st, 0, sizeof(*st));
	st->st_ino = in->ino;
	st->st_mode = in->mode;
	st->st_nlink = inode_nlink(fs, in);
	st->st_rdev = in->rdev;
	st->st_uid = in->uid;
	st->st_gid = in->gid;
	st->st_size = (off_t)(S_ISDIR(in->mode) ? 4096 : in->size);
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((in->size + 511) / 512);
	st->st_mtim = in->mtime;
	st->st_atim = inode_atime(in);
	st->st_ctim = inode_ctime(in);
}

void fill_entry(struct objfs_fs *fs, struct inode *in,
		struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = in->ino;
	e->generation = 1;
	e->attr_timeout = fs->o.attr_ttl;
	e->entry_timeout = fs->o.entry_ttl;
	fill_stat(fs, in, &e->attr);
}

void unpin(struct objfs_fs *fs, struct inode *in)
{
	if (in == NULL)
		return;
	pthread_mutex_lock(&fs->lock);
	assert(in->refs > 0);
	in->refs--;
	maybe_free(fs, in);
	pthread_mutex_unlock(&fs->lock);
}

/* Pins the inode the kernel calls ino; NULL when unknown. */
struct inode *pin_ino(struct objfs_fs *fs, fuse_ino_t ino)
{
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	in = find_ino(fs, ino);
	if (in != NULL)
		in->refs++;
	pthread_mutex_unlock(&fs->lock);
	return in;
}
