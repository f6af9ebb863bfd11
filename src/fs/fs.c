/*
 * fs.c - the objfs filesystem over the libfuse3 low-level API: the FUSE
 * operations and the life cycle (the new names of mkdir, symlink, mknod
 * and link are names.c's, open, create, release and the handles
 * handles.c's; the other subsystems have files of their own, listed in
 * fs_int.h).
 *
 * State is reached through the request's userdata (req_fs()); every op_x
 * replies exactly once, errors through reply_err().  The structures, the
 * lock order and the functions the files of src/fs share are in fs_int.h.
 *
 * Consistency: attributes and names are trusted for attr_ttl/entry_ttl;
 * every open of a clean file revalidates it with a HEAD (a small file read
 * whole by a GET instead: readahead.c; or by a prefetch's GET sent at most
 * attr_ttl ago: prefetch.c); the kernel page
 * cache is kept (FOPEN_KEEP_CACHE) only while the ETag is the one whose
 * data it caches (cache_etag), and attributes are invalidated when it
 * changed.  Listings are cached for dir_ttl and dropped on local changes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "fs/fs_int.h"
#include "fs/ops.h"
#include "volume/volrec.h"

void objfs_fs_opts_default(struct objfs_fs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->uid = getuid();
	o->gid = getgid();
	o->umask = 022;
	o->attr_ttl = 1.0;
	o->entry_ttl = 1.0;
	o->neg_ttl = 1.0;
	o->dir_ttl = 1.0;
	o->mem_limit = 256ULL << 20;
	o->ra_chunk = 4ULL << 20;
	o->ra_chunks = 3;
	o->prefetch = 16;
	o->part_size = 32ULL << 20;
	o->upload_parallel = 2;
	o->threads = 32;
	o->spool_dir = "/var/tmp";
	o->spool_limit = 2ULL << 30;
	o->read_only = false;
	o->cache_dir = NULL;
	o->cache_size = 1ULL << 30;
	o->volrec_ttl = 30.0;
	o->usage_refresh = 600.0;
	o->dir_window = SNAP_WINDOW;
}

uint64_t objfs_fs_opts_ra(struct objfs_fs_opts *o)
{
	if (o->ra_chunk == 0)
		o->ra_chunk = 1ULL << 20;
	if (o->ra_chunks > RA_MAX)
		o->ra_chunks = RA_MAX;
	return o->ra_chunk * o->ra_chunks;
}

/* ---- FUSE: init, lookup, forget, getattr ------------------------------ */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct objfs_fs *fs = userdata;

	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* we compare ETags ourselves on open */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	conn->max_readahead = 1U << 20;
	objfs_info(fs->log, SUB, "mounted (max_write %u, max_readahead %u)",
		   conn->max_write, conn->max_readahead);
}

static void op_destroy(void *userdata)
{
	struct objfs_fs *fs = userdata;

	objfs_fs_sync_all(fs);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct objfs_fs *fs = req_fs(req);
	struct fuse_entry_param e;
	struct inode *dir, *in = NULL;
	int err;

	dir = pin_ino(fs, parent);
	if (dir == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	err = do_lookup(fs, dir, name, false, &in);
	if (err == ENOENT) {
		memset(&e, 0, sizeof(e));
		e.ino = 0;
		e.entry_timeout = fs->o.neg_ttl;
		fuse_reply_entry(req, &e);
	} else if (err != 0) {
		reply_err(req, err);
	} else {
		pthread_mutex_lock(&fs->lock);
		fill_entry(fs, in, &e);
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_entry(req, &e);
	}
	unpin(fs, dir);
}

static void forget_one(struct objfs_fs *fs, fuse_ino_t ino, uint64_t n)
{
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	in = find_ino(fs, ino);
	if (in != NULL && in != fs->root) {
		in->nlookup = n > in->nlookup ? 0 : in->nlookup - n;
		state_note(fs, in);
		maybe_free(fs, in);
	}
	pthread_mutex_unlock(&fs->lock);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(req_fs(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		forget_one(req_fs(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = pin_ino(fs, ino);
	struct stat st;
	int err;

	if (in == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	err = revalidate(fs, in, false);
	if (err == 0 || (fi != NULL && err == ENOENT)) {
		pthread_mutex_lock(&fs->lock);
		fill_stat(fs, in, &st);
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_attr(req, &st, fs->o.attr_ttl);
	} else {
		reply_err(req, err == ESTALE ? ENOENT : err);
	}
	unpin(fs, in);
}

/* ---- metadata changes ------------------------------------------------- */

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = pin_ino(fs, ino);
	struct stat st;
	bool has_data, meta_change, open;
	int err = 0;

	if (in == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	if (fs->o.read_only) {
		err = EROFS;
		goto out;
	}
	meta_change = to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
				FUSE_SET_ATTR_GID | FUSE_SET_ATTR_MTIME |
				FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_ATIME |
				FUSE_SET_ATTR_ATIME_NOW);
	pthread_rwlock_rdlock(&fs->ns);
	pf_drop_inode(fs, in);
	pthread_mutex_lock(&in->mu);
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (!S_ISREG(in->mode)) {
			err = S_ISDIR(in->mode) ? EISDIR : EINVAL;
			goto out_unlock;
		}
		err = inode_truncate(fs, in, (uint64_t)attr->st_size);
		if (err != 0)
			goto out_unlock;
	}
	pthread_mutex_lock(&fs->lock);
	if (meta_change &&
	    !(to_set & (FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_ATIME |
			FUSE_SET_ATTR_ATIME_NOW)) &&
	    (!(to_set & FUSE_SET_ATTR_MODE) ||
	     (in->mode & 07777) == (attr->st_mode & 07777)) &&
	    (!(to_set & FUSE_SET_ATTR_UID) || in->uid == attr->st_uid) &&
	    (!(to_set & FUSE_SET_ATTR_GID) || in->gid == attr->st_gid) &&
	    (!(to_set & FUSE_SET_ATTR_MTIME) ||
	     (in->mtime.tv_sec == attr->st_mtim.tv_sec &&
	      in->mtime.tv_nsec == attr->st_mtim.tv_nsec)))
		meta_change = false;    /* what is stored already (chown to
					   the owner, as tar and rsync do) */
	inode_changed(in, false);
	if (to_set & FUSE_SET_ATTR_MODE)
		in->mode = (in->mode & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		in->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		in->gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		in->mtime = in->ctime;  /* the same now (inode_changed()) */
	else if (to_set & FUSE_SET_ATTR_MTIME)
		in->mtime = attr->st_mtim;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		in->atime = in->ctime;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		in->atime = attr->st_atim;
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))
		in->atime_kept = true;
	has_data = in->dirty;
	if (meta_change && in->dirty) {
		if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
			in->times_set = true;
		state_note(fs, in);
	}
	if (meta_change && in->stream != NULL)
		in->stream->attrs_changed = true;
	open = in->nopen > 0 || in->upload_wait;
	pthread_mutex_unlock(&fs->lock);
	if (has_data) {
		/* the attributes go up with the data: now when no handle
		 * is open (no close will follow), else at the close (or
		 * with an upload that waits: upload_delay) */
		if (fi == NULL && !open)
			err = inode_sync(fs, in);
	} else if (meta_change && in != fs->root &&
		   in->in_store && !fs->o.read_only) {
		/* a copy in place (a directory: its marker again), soon
		 * (attrs_defer()): the next change or a rename joins it
		 * (rsync sets a new directory's times, mode, and times
		 * again at the end) */
		pthread_mutex_lock(&fs->lock);
		attrs_defer(fs, in);
		pthread_mutex_unlock(&fs->lock);
	} else if (meta_change) {
		err = store_attrs(fs, in);
	}
out_unlock:
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
out:
	if (err != 0) {
		reply_err(req, err);
	} else {
		pthread_mutex_lock(&fs->lock);
		fill_stat(fs, in, &st);
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_attr(req, &st, fs->o.attr_ttl);
	}
	unpin(fs, in);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = pin_ino(fs, ino);
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(LINK_MAX_LEN);
	struct objfs_get_opts go = OBJFS_GET_ALL;
	struct objfs_sink sink;
	char key[KEYBUF], *target = NULL;
	int err;

	if (in == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	if (!S_ISLNK(in->mode))
		err = EINVAL;
	else if (in->link != NULL)
		err = (target = strdup(in->link)) != NULL ? 0 : ENOMEM;
	else
		err = inode_key(fs, in, false, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0 || target != NULL)
		goto out;
	objfs_sink_membuf(&sink, &mb);
	err = objfs_store_get(fs->store, key, &go, &sink, NULL);
	if (err == ERANGE)
		err = 0;
	if (err != 0)
		goto out;
	target = strndup(mb.data != NULL ? mb.data : "", mb.len);
	if (target == NULL) {
		err = ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&fs->lock);
	if (in->link == NULL)
		in->link = strdup(target);
	pthread_mutex_unlock(&fs->lock);
out:
	if (err != 0)
		reply_err(req, err == EFBIG ? ENAMETOOLONG : err);
	else
		fuse_reply_readlink(req, target);
	free(target);
	objfs_membuf_release(&mb);
	unpin(fs, in);
}

/* ---- read, write ------------------------------------------------------ */

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct fhandle *fh = fh_of(req_fs(req), fi);
	struct inode *in;
	size_t got = 0;
	char *buf = NULL;
	int err;

	if (fh == NULL) {
		hid_unknown(fs, req, "read", fi->fh, EBADF);
		return;
	}
	in = fh->in;
	pthread_mutex_lock(&in->mu);
	if (in->stream != NULL && in->stream->punched > (uint64_t)off) {
		/* those bytes are only in the parts: complete the upload so
		 * they can be read back from the store (ns before in->mu) */
		pthread_mutex_unlock(&in->mu);
		pthread_rwlock_rdlock(&fs->ns);
		pthread_mutex_lock(&in->mu);
		err = 0;
		if (in->stream != NULL && in->stream->punched > (uint64_t)off)
			err = inode_sync(fs, in);
		pthread_rwlock_unlock(&fs->ns);
		if (err != 0) {
			pthread_mutex_unlock(&in->mu);
			reply_err(req, err);
			return;
		}
	}
	crash_point(fs, "read", in);
	if (in->spool == NULL) {
		pthread_mutex_unlock(&in->mu);
		err = read_store(fh, req, (uint64_t)off, size);
		if (err != 0)
			reply_err(req, err);
		return;
	}
	buf = malloc(size ? size : 1);
	err = buf == NULL ? ENOMEM :
	      spool_fetch(fs, in, (uint64_t)off, (uint64_t)off + size);
	if (err == 0)
		err = objfs_spool_read(in->spool, (uint64_t)off, buf, size, &got);
	pthread_mutex_unlock(&in->mu);
	if (err != 0)
		reply_err(req, err);
	else
		fuse_reply_buf(req, buf, got);
	if (err == 0)
		fs_metrics_read(fs, FS_READ_LOCAL, got);
	free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct fhandle *fh = fh_of(req_fs(req), fi);
	int err;

	if (fh == NULL) {
		hid_unknown(fs, req, "write", fi->fh, EBADF);
		return;
	}
	if (fs->o.read_only) {
		reply_err(req, EROFS);
		return;
	}
	err = inode_write(fs, fh->in, buf, size, (uint64_t)off);
	crash_point(fs, "write", fh->in);
	if (err != 0)
		reply_err(req, err);
	else
		fuse_reply_write(req, size);
}

/* ---- directories ------------------------------------------------------ */

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct objfs_fs *fs = req_fs(req);
	struct dhandle *dh = dh_of(req_fs(req), fi);
	struct inode *dir = dh != NULL ? pin_ino(fs, ino) : NULL;
	struct pf_starts *pfs = NULL;
	struct aidx_pre *pre = NULL;
	struct dirsnap *s;
	char *buf = NULL;
	size_t pos = 0;
	uint64_t i, limit = UINT64_MAX;
	bool windowed;
	int err = 0;

	if (dh == NULL) {
		hid_unknown(fs, req, plus ? "readdirplus" : "readdir", fi->fh,
			    EBADF);
		return;
	}
	if (dir == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	s = dh->snap;
	if (off == 0 || s == NULL || (off >= 2 && (uint64_t)off - 2 < s->base)) {
		/* from the start (or back before this window) */
		struct dirsnap *old = dh->snap;

		s = NULL;
		pthread_mutex_lock(&fs->lock);
		pf_dir_wait(fs, dir);   /* being listed ahead: that listing */
		if (dir->snap != NULL &&
		    now_mono() - dir->snap->time < fs->o.dir_ttl) {
			s = dir->snap;
			s->refs++;
		}
		pthread_mutex_unlock(&fs->lock);
		if (s == NULL) {
			/* readdirplus reads the index too: meanwhile */
			pre = plus ? snap_index_start(fs, dir) : NULL;
			err = snap_build(fs, dir, NULL, pre, &s);
		}
		if (err != 0)
			goto out;
		pthread_mutex_lock(&fs->lock);
		dh->snap = s;
		snap_put_locked(old);
		pthread_mutex_unlock(&fs->lock);
	}
	while (s->more && (uint64_t)off >= s->base + s->n + 2) {
		/* a large directory: its next window */
		struct dirsnap *next = NULL;

		err = snap_build(fs, dir, s, NULL, &next);
		if (err != 0)
			goto out;
		pthread_mutex_lock(&fs->lock);
		dh->snap = next;
		snap_put_locked(s);
		pthread_mutex_unlock(&fs->lock);
		s = next;
	}
	/* a window of a large directory gives names only: no attributes,
	 * no inodes (the kernel looks up what it needs), so listing it
	 * takes bounded memory */
	windowed = s->more || s->base > 0;
	if (plus && !windowed)
		/* the entries this reply can hold at most (an entry of
		 * readdirplus takes 152 bytes and its name) */
		limit = snap_reply_attrs(fs, dir, s, pre,
					 off > 2 ? (size_t)off - 2 : 0,
					 size / 152 + 1);
	else
		aidx_pre_cancel(pre);
	pre = NULL;
	buf = malloc(size);
	if (buf == NULL) {
		err = ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&fs->lock);
	for (i = (uint64_t)off; i < s->base + s->n + 2 &&
	     i - (uint64_t)off < limit; i++) {
		const char *name;
		struct fuse_entry_param e;
		struct inode *in = NULL;
		bool created = false;
		size_t need;

		memset(&e, 0, sizeof(e));
		if (i < 2) {
			name = i == 0 ? "." : "..";
			e.attr.st_ino = i == 0 ? dir->ino : FUSE_ROOT_ID;
			e.attr.st_mode = S_IFDIR;
		} else if (i - 2 < s->base) {
			continue;       /* not in this window (cannot happen) */
		} else {
			const struct dent *d = &s->e[i - 2 - s->base];

			name = d->name;
			if (plus && (windowed || dent_lookup_only(fs, dir, d))) {
				/* ino 0: the kernel makes no dentry of it */
				dent_ino_type(fs, dir, d, &e.attr.st_ino,
					      &e.attr.st_mode);
			} else if (plus) {
				in = dent_inode(fs, dir, d, &created);
				if (in == NULL) {
					err = ENOMEM;
					break;
				}
				fill_entry(fs, in, &e);
				if ((!d->have_attr && in->attr_time == 0) ||
				    !inode_nlink_known(in))
					e.attr_timeout = 0;     /* getattr asks */
			} else {
				dent_ino_type(fs, dir, d, &e.attr.st_ino,
					      &e.attr.st_mode);
			}
		}
		if (plus)
			need = fuse_add_direntry_plus(req, buf + pos, size - pos,
						      name, &e, (off_t)(i + 1));
		else
			need = fuse_add_direntry(req, buf + pos, size - pos,
						 name, &e.attr, (off_t)(i + 1));
		if (need > size - pos) {
			if (created)
				maybe_free(fs, in);
			break;
		}
		if (in != NULL) {
			in->nlookup++;
			state_note(fs, in);
		}
		pos += need;
	}
	if (!windowed && err == 0)
		pfs = pf_dir_read(fs, dir, s, plus, off == 0);
	pthread_mutex_unlock(&fs->lock);
	pf_submit(fs, pfs);
out:
	aidx_pre_cancel(pre);   /* a listing that failed */
	if (err != 0 && pos == 0)
		reply_err(req, err);
	else
		fuse_reply_buf(req, buf, pos);
	free(buf);
	unpin(fs, dir);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct objfs_fs *fs = req_fs(req);
	struct statvfs st;
	const uint64_t bs = 4096;
	uint64_t cap, used, blocks, ublocks, objects;

	/* the figures at hand, at once: a stale record is re-read on the
	 * pool, and the next statfs has it */
	volrec_refresh_async(fs);
	pthread_mutex_lock(&fs->lock);
	cap = fs->cap.capacity != 0 ? fs->cap.capacity : (1ULL << 50);
	used = fs->cap.used > 0 ? (uint64_t)fs->cap.used : 0;
	objects = fs->cap.objects > 0 ? (uint64_t)fs->cap.objects : 0;
	pthread_mutex_unlock(&fs->lock);
	memset(&st, 0, sizeof(st));
	blocks = cap / bs;
	ublocks = (used + bs - 1) / bs;
	st.f_bsize = bs;
	st.f_frsize = bs;
	st.f_blocks = blocks;
	st.f_bfree = blocks > ublocks ? blocks - ublocks : 0;
	st.f_bavail = st.f_bfree;
	st.f_ffree = 1ULL << 32;
	st.f_favail = st.f_ffree;
	st.f_files = objects + st.f_ffree;
	/* a name at the root is a key of its own */
	st.f_namemax = fs->key_room < OBJFS_NAME_MAX ? fs->key_room :
		       OBJFS_NAME_MAX;
	fuse_reply_statfs(req, &st);
}

static const struct fuse_lowlevel_ops objfs_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = fs_op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.fsyncdir = op_fsyncdir,
	.symlink = fs_op_symlink,
	.rename = op_rename,
	.link = fs_op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.create = op_create,
	.setxattr = fs_op_setxattr, .getxattr = fs_op_getxattr,
	.listxattr = fs_op_listxattr, .removexattr = fs_op_removexattr,
};

const struct fuse_lowlevel_ops *objfs_fs_ops(void)
{
	return &objfs_ops;
}

size_t objfs_fs_ops_size(void)
{
	return sizeof(objfs_ops);
}

void objfs_fs_set_session(struct objfs_fs *fs, struct fuse_session *se)
{
	fs->se = se;
}

/* ---- life cycle ------------------------------------------------------- */

/* After a failed sync_under() of the root (ns held for writing): the
 * spool of every file still dirty is kept (spool_keep). */
static void keep_unsaved(struct objfs_fs *fs)
{
	struct inode **dirty, *in;
	size_t n = 0, k = 0, i;
	unsigned h;

	pthread_mutex_lock(&fs->lock);
	for (h = 0; h < HASH_SIZE; h++)
		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next)
			n += in->dirty;
	dirty = calloc(n > 0 ? n : 1, sizeof(*dirty));
	for (h = 0; dirty != NULL && h < HASH_SIZE; h++)
		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next)
			if (in->dirty && k < n) {
				in->refs++;
				dirty[k++] = in;
			}
	pthread_mutex_unlock(&fs->lock);
	if (dirty == NULL)
		objfs_error(fs->log, SUB, "keeping unsaved data: %s",
			    objfs_strerror(ENOMEM));
	for (i = 0; i < k; i++) {
		pthread_mutex_lock(&dirty[i]->mu);
		(void)spool_keep(fs, dirty[i]);
		pthread_mutex_unlock(&dirty[i]->mu);
		unpin(fs, dirty[i]);
	}
	free(dirty);
}

unsigned objfs_fs_unsaved_kept(struct objfs_fs *fs)
{
	return (unsigned)(__atomic_load_n(&fs->unsaved_kept, __ATOMIC_RELAXED) -
			  __atomic_load_n(&fs->unsaved_recovered, __ATOMIC_RELAXED));
}

int objfs_fs_sync_all(struct objfs_fs *fs)
{
	int err;

	uploads_flush(fs, true);        /* in parallel, before the rest */
	pthread_rwlock_wrlock(&fs->ns);
	err = sync_under(fs, fs->root);
	if (err != 0)
		keep_unsaved(fs);
	pthread_rwlock_unlock(&fs->ns);
	attrs_flush(fs, true);
	aidx_flush(fs, true);
	if (err != 0)
		objfs_error(fs->log, SUB, "saving dirty files: %s",
			    objfs_strerror(err));
	/* the deletes unlinks deferred (remove.c): a failed one was logged
	 * and its name is visible again, nothing is lost */
	if (objfs_store_del_barrier(fs->store) != 0)
		objfs_warn(fs->log, SUB, "some deferred deletes failed (logged "
			   "above): those names are visible again");
	return err;
}

static int load_root(struct objfs_fs *fs)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_volrec v = OBJFS_VOLREC_INIT;
	struct probe p;
	int err;

	err = objfs_store_head(fs->store, OBJFS_ROOT_ATTR_KEY, &info);
	if (err == 0) {
		probe_from_info(fs, &info, true, &p);
		fs->root->mode = p.fa.mode;
		fs->root->uid = p.fa.uid;
		fs->root->gid = p.fa.gid;
		fs->root->mtime = p.fa.mtime;
	} else if (err != ENOENT) {
		objfs_error(fs->log, SUB, "reaching the store: %s",
			    objfs_strerror(err));
		goto out;
	}
	err = objfs_volrec_load(fs->store, &v);
	if (err == ENOENT) {
		objfs_info(fs->log, SUB, "no volume record: no capacity limit");
		err = 0;
	} else if (err != 0) {
		objfs_error(fs->log, SUB, "reading the volume record: %s",
			    objfs_strerror(err));
		goto out;
	}
	fs->cap.capacity = v.capacity_bytes;
	fs->cap.volrec_time = now_mono();
out:
	objfs_obj_info_release(&info);
	objfs_volrec_release(&v);
	return err;
}

int objfs_fs_create(struct objfs_store *store, const struct objfs_fs_opts *opts,
		    struct objfs_log *log, struct objfs_fs **out)
{
	struct objfs_fs *fs;
	int err;

	fs = calloc(1, sizeof(*fs));
	if (fs == NULL)
		return ENOMEM;
	fs->store = store;
	fs->log = log;
	fs->o = *opts;
	objfs_list_init(&fs->handles);
	objfs_list_init(&fs->dirhandles);
	recent_init(&fs->recent);       /* allocates nothing */
	if (fs->o.dir_window == 0)
		fs->o.dir_window = SNAP_WINDOW;
	(void)objfs_fs_opts_ra(&fs->o);
	fs->spool_dir = strdup(opts->spool_dir != NULL ? opts->spool_dir : "/var/tmp");
	if (fs->spool_dir == NULL) {
		err = ENOMEM;
		goto err_free;
	}
	fs->o.spool_dir = fs->spool_dir;
	fs->key_room = objfs_store_key_room(store);
	fs->journal.fd = -1;
	pthread_mutex_init(&fs->hid_mu, NULL);
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->cap.volrec_mu, NULL);
	pthread_mutex_init(&fs->rabuf_mu, NULL);
	pthread_cond_init(&fs->rabuf_cv, NULL);
	pthread_rwlock_init(&fs->ns, NULL);
	pthread_cond_init(&fs->cap.scan_cv, NULL);
	err = aidx_init(fs);
	if (err != 0)
		goto err_aidx;
	objfs_budget_init(&fs->mem, fs->o.mem_limit);
	fs->next_ino = FUSE_ROOT_ID + 1;
	fs->root = calloc(1, sizeof(*fs->root));
	if (fs->root == NULL || (fs->root->name = strdup("")) == NULL) {
		err = ENOMEM;
		goto err_sync;
	}
	pthread_mutex_init(&fs->root->mu, NULL);
	fs->root->ino = FUSE_ROOT_ID;
	fs->root->mode = default_mode(fs, S_IFDIR);
	fs->root->uid = fs->o.uid;
	fs->root->gid = fs->o.gid;
	fs->root->mtime = now_real();
	fs->root->in_store = true;
	fs->root->nlookup = 1;
	fs->root->attr_time = 1e300;
	err = load_root(fs);
	if (err != 0)
		goto err_root;
	if (fs->o.cache_dir != NULL && fs->o.cache_size > 0) {
		err = objfs_dcache_create(fs->o.cache_dir, fs->o.cache_size,
					  &fs->dcache);
		if (err != 0) {
			objfs_error(log, SUB, "data cache in %s: %s",
				    fs->o.cache_dir, objfs_strerror(err));
			goto err_root;
		}
	}
	fs->o.cache_dir = NULL;         /* not kept: the cache has its own copy */
	err = pf_init(fs);
	if (err != 0) {
		objfs_dcache_destroy(fs->dcache);
		goto err_root;
	}
	*out = fs;
	return 0;

err_root:
	if (fs->root != NULL) {
		pthread_mutex_destroy(&fs->root->mu);
		free(fs->root->name);
	}
err_sync:
	free(fs->root);
	objfs_budget_release(&fs->mem);
	aidx_destroy(fs);
err_aidx:
	pthread_cond_destroy(&fs->cap.scan_cv);
	pthread_rwlock_destroy(&fs->ns);
	pthread_mutex_destroy(&fs->rabuf_mu);
	pthread_cond_destroy(&fs->rabuf_cv);
	pthread_mutex_destroy(&fs->cap.volrec_mu);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->hid_mu);
	free(fs->spool_dir);
err_free:
	free(fs);
	return err;
}

int objfs_fs_start(struct objfs_fs *fs)
{
	int err;

	if (fs->pool != NULL)
		return 0;
	err = objfs_pool_create(fs->o.threads, &fs->pool);
	if (err != 0)
		return err;
	err = pthread_create(&fs->cap.scan_thread, NULL, scan_main, fs);
	if (err != 0) {
		objfs_pool_destroy(fs->pool);
		fs->pool = NULL;
		return err;
	}
	fs->cap.scan_started = true;
	err = pthread_create(&fs->aidx_thread, NULL, aidx_main, fs);
	if (err != 0)
		return err;     /* the scan and pool stop at destroy */
	fs->aidx_started = true;
	return pf_start(fs);    /* stopped at destroy */
}

void objfs_fs_destroy(struct objfs_fs *fs)
{
	unsigned h;

	if (fs == NULL)
		return;
	if (fs->pool != NULL)
		objfs_fs_sync_all(fs);
	pthread_mutex_lock(&fs->lock);
	fs->stopping = true;
	pthread_cond_broadcast(&fs->cap.scan_cv);
	pthread_mutex_unlock(&fs->lock);
	if (fs->cap.scan_started)
		pthread_join(fs->cap.scan_thread, NULL);
	pthread_mutex_lock(&fs->aidx_mu);
	fs->aidx_stop = true;
	pthread_cond_broadcast(&fs->aidx_cv);
	pthread_mutex_unlock(&fs->aidx_mu);
	if (fs->aidx_started)
		pthread_join(fs->aidx_thread, NULL);
	aidx_flush(fs, true);
	pf_stop(fs);            /* its listers use the pool */
	objfs_pool_destroy(fs->pool);
	pf_destroy(fs);         /* no prefetch runs any more */
	handles_drop(fs);       /* the kernel never released them */
	objfs_dcache_destroy(fs->dcache);
	pthread_mutex_lock(&fs->lock);  /* for the checks: nothing else runs */
	for (h = 0; h < HASH_SIZE; h++) {
		while (fs->ino_tab[h] != NULL)
			inode_free(fs, fs->ino_tab[h]);
	}
	snap_drop(fs->root);
	recent_release(&fs->recent);
	hl_inos_free(fs);
	ino_mem_free(fs);
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_destroy(&fs->root->mu);
	free(fs->root->name);
	free(fs->root->link);
	free(fs->root);
	ra_buf_drain(fs);
	objfs_budget_release(&fs->mem);
	aidx_destroy(fs);
	pthread_cond_destroy(&fs->cap.scan_cv);
	pthread_rwlock_destroy(&fs->ns);
	pthread_mutex_destroy(&fs->rabuf_mu);
	pthread_cond_destroy(&fs->rabuf_cv);
	pthread_mutex_destroy(&fs->cap.volrec_mu);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->hid_mu);
	state_stop(fs, false);
	fs_metrics_free(fs);
	free(fs->journal.dir);
	free(fs->spool_dir);
	free(fs);
}

void objfs_fs_set_io_ctx(struct objfs_fs *fs, void *ctx)
{
	fs->io_ctx = ctx;
}

void *objfs_fs_io_ctx(struct objfs_fs *fs)
{
	return fs->io_ctx;
}

int objfs_fs_state_start(struct objfs_fs *fs, const char *dir, bool resume)
{
	return state_start(fs, dir, resume);
}

void objfs_fs_state_stop(struct objfs_fs *fs, bool clean)
{
	state_stop(fs, clean);
}
