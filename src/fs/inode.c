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
 *
 * Inode numbers come from a counter, so a file the kernel evicted (memory
 * pressure, drop_caches) and looks up again would get a new one, and a
 * renamed file one its old name never had: fs->ino_mem keeps the number
 * of each inode freed while linked, by (parent's number, name), and
 * inode_new() gives it again to that name (issue 34 item 3: a name keeps
 * its inode number across renames; find, tar and du compare them).  The
 * last INO_MEM_MAX are kept (about 64 bytes each); older names get a new
 * number.  A name deleted and made again elsewhere may get its old
 * file's number, as a local filesystem may reuse a freed one; a number a
 * live inode has is never given twice.
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
/* ---- numbers of freed inodes (fs->lock) --------------------------------- */

#define INO_MEM_BUCKETS 4096
#define INO_MEM_MAX 65536

struct ino_mem_ent {
	struct ino_mem_ent *next;       /* its bucket's chain */
	fuse_ino_t parent, ino;         /* ino 0: taken */
	char name[];
};

static unsigned ino_mem_hash(fuse_ino_t parent, const char *name)
{
	/* the name's hash readdir numbers by (dirsnap.c), mixed with the
	 * parent's number */
	uint64_t h = name_ino(name) ^ (parent * 0x9E3779B97F4A7C15ULL);

	return (unsigned)(h >> 32) % INO_MEM_BUCKETS;
}

static void ino_mem_unchain(struct ino_mem *m, struct ino_mem_ent *e)
{
	struct ino_mem_ent **pp;

	for (pp = &m->tab[ino_mem_hash(e->parent, e->name)]; *pp != NULL;
	     pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			return;
		}
	}
}

/* Remembers in's number under its parent and name (freed while linked;
 * a hard link set's numbers are hardlink.c's).  Without memory: nothing
 * (the number is new at the next lookup, as before). */
static void ino_mem_put(struct objfs_fs *fs, const struct inode *in)
{
	struct ino_mem *m = &fs->ino_mem;
	size_t len = strlen(in->name);
	struct ino_mem_ent *e;
	unsigned h;

	if (!in->linked || in->parent == NULL || in->hl.id != NULL ||
	    in->ino >= HL_INO_BASE)
		return;
	if (m->tab == NULL) {
		m->tab = calloc(INO_MEM_BUCKETS, sizeof(*m->tab));
		m->ring = calloc(INO_MEM_MAX, sizeof(*m->ring));
		if (m->tab == NULL || m->ring == NULL) {
			free(m->tab);
			free(m->ring);
			m->tab = NULL;
			m->ring = NULL;
			return;
		}
	}
	(void)ino_mem_take(fs, in->parent->ino, in->name, false);
	e = malloc(sizeof(*e) + len + 1);
	if (e == NULL)
		return;
	e->parent = in->parent->ino;
	e->ino = in->ino;
	memcpy(e->name, in->name, len + 1);
	if (m->ring[m->next] != NULL) {        /* the oldest goes */
		ino_mem_unchain(m, m->ring[m->next]);
		free(m->ring[m->next]);
	}
	m->ring[m->next] = e;
	m->next = (m->next + 1) % INO_MEM_MAX;
	h = ino_mem_hash(e->parent, e->name);
	e->next = m->tab[h];
	m->tab[h] = e;
}

fuse_ino_t ino_mem_take(struct objfs_fs *fs, fuse_ino_t parent,
			const char *name, bool peek)
{
	struct ino_mem_ent *e;
	fuse_ino_t ino;

	fs_assert_locked(fs);
	if (fs->ino_mem.tab == NULL)
		return 0;
	for (e = fs->ino_mem.tab[ino_mem_hash(parent, name)]; e != NULL;
	     e = e->next) {
		if (e->ino == 0 || e->parent != parent || strcmp(e->name, name) != 0)
			continue;
		ino = e->ino;
		if (!peek)
			e->ino = 0;     /* freed with its ring slot */
		return find_ino(fs, ino) == NULL ? ino : 0;
	}
	return 0;
}

void ino_mem_free(struct objfs_fs *fs)
{
	struct ino_mem *m = &fs->ino_mem;
	size_t i;

	fs_assert_locked(fs);
	if (m->ring != NULL)
		for (i = 0; i < INO_MEM_MAX; i++)
			free(m->ring[i]);
	free(m->ring);
	free(m->tab);
	memset(m, 0, sizeof(*m));
}

void maybe_free(struct objfs_fs *fs, struct inode *in)
{
	fs_assert_locked(fs);
	while (in != NULL && in != fs->root && in->nlookup == 0 &&
	       in->nopen == 0 && in->refs == 0 && !in->dirty &&
	       in->child == NULL) {
		struct inode *parent;

		ino_mem_put(fs, in);
		parent = detach(fs, in);

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
	in->ino = parent != NULL ? ino_mem_take(fs, parent->ino, name, false) : 0;
	if (in->ino == 0)
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
