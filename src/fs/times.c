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
 * Link counts (issue 34): a directory has 2 + the subdirectories a whole
 * listing of it shows (its snapshot: the store's names merged with those
 * this mount created or removed lately, recent.c), kept current by every
 * local change (snap_note(), dir_entry_changed()); without a snapshot,
 * the count of the last one (dir_listed()), kept the same way.  Never the
 * subdirectories that happen to be in the inode table.  A directory no
 * listing counted yet (nsub_known false: a fresh mount, a lookup) is
 * listed before its attributes are shown (dir_count(): from getattr,
 * revalidate and lookup for the kernel; one LIST per directory, kept as
 * its snapshot for the readdir that usually follows), and readdirplus
 * gives such a directory's entry a zero attribute timeout, so the kernel
 * asks getattr when someone stats it rather than listing every
 * subdirectory of a directory read (`ls` costs nothing more, `ls -l` a
 * LIST per subdirectory).  A directory made here is known empty.  Files
 * have one link per name (hard links: hardlink.c, the set's entry count).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
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
	in->changed_at = now_mono();
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
	dir->nsub_known = true;
	dir->listed_n = s->n > UINT32_MAX ? UINT32_MAX : (uint32_t)s->n;
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
	size_t i;

	if (!S_ISDIR(in->mode))
		return in->hl.data ? in->hl.nlink :
		       (in->linked || in == fs->root ? 1 : 0);
	if (s == NULL)
		return 2 + in->nsubdirs;
	/* the listing's subdirectories, counted once per listing (the
	 * kernel asks for a directory's attributes after every create in
	 * it); names this mount made that a lagging listing lacks are in it
	 * already (recent.c) */
	if (s->ndirs < 0) {
		for (i = 0, s->ndirs = 0; i < s->n; i++)
			s->ndirs += s->e[i].is_dir;
	}
	return 2 + (nlink_t)s->ndirs;
}

bool inode_nlink_known(const struct inode *in)
{
	return !S_ISDIR(in->mode) || in->nsub_known;
}

int dir_count(struct objfs_fs *fs, struct inode *dir)
{
	struct dirsnap *s = NULL;
	char dkey[KEYBUF], *after = NULL;
	uint32_t n = 0, rest = 0;
	bool need;
	size_t i;
	int err;

	pthread_mutex_lock(&fs->lock);
	need = S_ISDIR(dir->mode) && !dir->nsub_known &&
	       (dir->linked || dir == fs->root);
	pthread_mutex_unlock(&fs->lock);
	if (!need)
		return 0;
	err = snap_build(fs, dir, NULL, NULL, &s);      /* dir_listed() */
	pthread_mutex_lock(&fs->lock);
	if (err == 0 && s->more) {
		/* listed in windows: the rest counted, the names not kept */
		for (i = 0; i < s->n; i++)
			n += s->e[i].is_dir;
		after = s->after != NULL ? strdup(s->after) : NULL;
		err = after == NULL ? ENOMEM :
		      inode_key(fs, dir, true, dkey, sizeof(dkey));
	}
	if (s != NULL)
		snap_put_locked(s);
	pthread_mutex_unlock(&fs->lock);
	if (err == 0 && after != NULL) {
		err = snap_count_dirs(fs, dkey, after, &rest);
		pthread_mutex_lock(&fs->lock);
		if (err == 0 && !dir->nsub_known) {
			dir->nsubdirs = n + rest;
			dir->nsub_known = true;
		}
		pthread_mutex_unlock(&fs->lock);
	}
	free(after);
	return err;
}
