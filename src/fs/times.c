/*
 * times.c - timestamps as POSIX says them, and a directory's link count,
 * without a store request of their own (issue 13; issue 18's budgets: a
 * create costs about one request, an unlink one).
 *
 * Files (and symlinks, special files): mtime, atime and ctime are in the
 * object's metadata (fs/attr.h: mtime, atime, ctime, s3fs's names) and
 * travel with every write objfs makes of the object anyway: an upload,
 * the copy in place of a chmod/chown/utime, a rename's copy.  So they are
 * shared by every mount once the change is in the store.  In memory
 * (fs->lock): ctime changes with every change of data or attributes (a
 * write, a truncate and open(O_TRUNC), setattr, rename, unlink); atime
 * only when set explicitly (utimensat, touch -a) or at creation: reads
 * never change it (noatime: a read costs no write, and no mount's reads
 * rewrite objects other mounts read).  Only an atime set explicitly (or
 * read from the store) is stored (atime_kept): the creation time of a
 * file written since stays this mount's, so a create's PUT carries no
 * more headers than before.  An atime or ctime equal to mtime is not
 * written either (fs/attr.c).  An object written by another tool has no
 * atime or ctime: its mtime (or Last-Modified) stands for both.
 *
 * Directories: the marker holds the attributes mkdir, chmod, chown and
 * utime gave it.  A change of entries (create, unlink, rename in or out,
 * mkdir, rmdir, symlink, mknod) sets the directory's mtime and ctime in
 * this mount's memory only (dir_entry_changed(), called by snap_note(),
 * which every local change of entries calls): writing the marker each
 * time would double the requests of a create.  A mount that lists a
 * directory takes its mtime and ctime as the newest of the marker's mtime
 * and the Last-Modified of the objects its first listing shows
 * (dir_listed()), so a fresh mount sees entries created since; entries
 * removed elsewhere, and changes other mounts make after that first
 * listing or a change here, are not seen.  These are per-mount.
 *
 * Link counts: a directory has 2 + the subdirectories its listing shows
 * (its snapshot, which every local change is noted in), with those this
 * mount knows (linked inodes) that the listing does not show yet; without
 * a snapshot, the count of the last one (dir_listed()) kept by
 * dir_entry_changed(); a directory never listed here has 2.  Files have
 * one link per name (hard links: hardlink.c, the set's entry count).
 */
#include "config.h"

#include <string.h>

#include "fs/fs_int.h"

static bool ts_set(const struct timespec *ts)
{
	return ts->tv_sec != 0 || ts->tv_nsec != 0;
}

static bool ts_after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

struct timespec inode_atime(const struct inode *in)
{
	return ts_set(&in->atime) ? in->atime : in->mtime;
}

struct timespec inode_ctime(const struct inode *in)
{
	return ts_set(&in->ctime) ? in->ctime : in->mtime;
}

void inode_fattr(const struct inode *in, struct objfs_fattr *fa)
{
	memset(fa, 0, sizeof(*fa));
	fa->mode = in->mode;
	fa->uid = in->uid;
	fa->gid = in->gid;
	fa->mtime = in->mtime;
	fa->rdev = in->rdev;
	fa->atime = inode_atime(in);
	if (!in->atime_kept)
		fa->atime.tv_nsec = -1; /* a reader takes mtime */
	fa->ctime = inode_ctime(in);
}

void inode_set_fattr(struct inode *in, const struct objfs_fattr *fa,
		     unsigned mask)
{
	struct timespec mtime = fa->mtime, ctime;

	in->mode = fa->mode;
	in->uid = fa->uid;
	in->gid = fa->gid;
	in->rdev = (mask & OBJFS_FATTR_RDEV) ? fa->rdev : 0;
	if (S_ISDIR(fa->mode) && ts_after(&in->mtime, &mtime)) {
		/* entries changed here since (dir_entry_changed()) */
		return;
	}
	ctime = (mask & OBJFS_FATTR_CTIME) ? fa->ctime : mtime;
	in->mtime = mtime;
	if (mask & OBJFS_FATTR_ATIME) {
		in->atime = fa->atime;
		in->atime_kept = true;
	}       /* else this mount's (its creation) or, unset, mtime */
	/* ctime never goes back: a change this mount made and keeps in
	 * memory only (a plain rename's) outlives a revalidation that reads
	 * the stored, older one */
	if (!ts_after(&in->ctime, &ctime))
		in->ctime = ctime;
}

void inode_changed(struct inode *in, bool data)
{
	struct timespec now = now_real();

	if (!ts_set(&in->atime))
		in->atime = in->mtime;  /* stays what it was */
	if (data)
		in->mtime = now;
	in->ctime = now;
}

void dir_entry_changed(struct inode *dir, bool is_dir, int subdirs)
{
	inode_changed(dir, true);
	dir->dir_times = true;
	if (!is_dir || subdirs == 0)
		return;
	if (subdirs > 0)
		dir->nsubdirs++;
	else if (dir->nsubdirs > 0)
		dir->nsubdirs--;
}

void dir_listed(struct inode *dir, struct dirsnap *s)
{
	struct timespec newest = { 0, 0 };
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < s->n; i++) {
		if (s->e[i].is_dir)
			n++;
		else if (ts_after(&s->e[i].mtime, &newest))
			newest = s->e[i].mtime;
	}
	dir->nsubdirs = n;
	s->ndirs = n;           /* inode_nlink counts no more */
	if (dir->dir_times)
		return;         /* changes here since: dir_entry_changed() */
	dir->dir_times = true;
	if (ts_after(&newest, &dir->mtime)) {
		dir->mtime = newest;
		dir->ctime = newest;
	}
}

nlink_t inode_nlink(struct objfs_fs *fs, const struct inode *in)
{
	struct dirsnap *s = in->snap;
	const struct inode *c;
	uint32_t n;
	size_t i;
	bool found;

	if (!S_ISDIR(in->mode))
		return in->hl_data ? in->hl_nlink :
		       (in->linked || in == fs->root ? 1 : 0);
	if (s == NULL)
		return 2 + in->nsubdirs;
	/* the listing's subdirectories (counted once per listing: the
	 * kernel asks for a directory's attributes after every create in
	 * it), and those this mount knows that it does not show (yet:
	 * listings of some stores lag behind writes); the child list holds
	 * the directories first */
	if (s->ndirs < 0) {
		for (i = 0, s->ndirs = 0; i < s->n; i++)
			s->ndirs += s->e[i].is_dir;
	}
	n = (uint32_t)s->ndirs;
	for (c = in->child; c != NULL && c->sib_dir; c = c->sib_next) {
		if (!c->linked || !S_ISDIR(c->mode))
			continue;
		i = snap_find(s, c->name, &found);
		if (!found || !s->e[i].is_dir)
			n++;
	}
	return 2 + n;
}
