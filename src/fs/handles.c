/*
 * handles.c - open files and directories: open, create, flush, fsync,
 * release, opendir and releasedir; the handles themselves (struct fhandle
 * in fs->handles, struct dhandle in fs->dirhandles) and their ids (struct
 * hid: fi->fh is a number, not a pointer, so a successor finds the handle
 * again; the table is fs->hid_tab under fs->hid_mu, each id recorded
 * opened and closed in the resume journal).
 *
 * A handle pins nothing by itself: an open file holds in->nopen, counted
 * here (do_open, op_create, op_release, and the loader for the handles a
 * dead server had open).  The reads and writes of a handle are fs.c's and
 * readahead.c's; readdir is fs.c's (dirsnap.c lists).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "fs/fs_int.h"
#include "fs/ops.h"

/* ---- handle ids -------------------------------------------------------- */

void hid_insert(struct objfs_fs *fs, struct hid *h)
{
	unsigned b = (unsigned)(h->id % HID_HASH);

	h->next = fs->hid_tab[b];
	fs->hid_tab[b] = h;
}

void hid_add(struct objfs_fs *fs, struct hid *h, fuse_ino_t ino, bool dir)
{
	pthread_mutex_lock(&fs->hid_mu);
	h->id = ++fs->next_hid;
	h->dir = dir;
	h->ino = ino;
	hid_insert(fs, h);
	pthread_mutex_unlock(&fs->hid_mu);
	state_hid(fs, h, true);
}

void hid_del(struct objfs_fs *fs, struct hid *h)
{
	struct hid **pp;

	pthread_mutex_lock(&fs->hid_mu);
	for (pp = &fs->hid_tab[h->id % HID_HASH]; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	}
	pthread_mutex_unlock(&fs->hid_mu);
	if (h->id != 0)
		state_hid(fs, h, false);
	h->id = 0;
}

struct hid *hid_find(struct objfs_fs *fs, uint64_t id)
{
	struct hid *h;

	pthread_mutex_lock(&fs->hid_mu);
	for (h = fs->hid_tab[id % HID_HASH]; h != NULL && h->id != id; h = h->next)
		;
	pthread_mutex_unlock(&fs->hid_mu);
	return h;
}

/* ---- file and directory handles ---------------------------------------- */

struct fhandle *fh_new(struct objfs_fs *fs, struct inode *in)
{
	struct fhandle *fh = calloc(1, sizeof(*fh));

	if (fh == NULL)
		return NULL;
	fh->fs = fs;
	fh->in = in;
	objfs_list_init(&fh->link);
	pthread_mutex_init(&fh->mu, NULL);
	pthread_cond_init(&fh->cv, NULL);
	return fh;
}

void fh_link(struct objfs_fs *fs, struct fhandle *fh)
{
	objfs_list_push_front(&fs->handles, &fh->link);
}

static void fh_free(struct fhandle *fh)
{
	bool idle;

	hid_del(fh->fs, &fh->hid);
	pthread_mutex_lock(&fh->fs->lock);
	objfs_list_remove(&fh->link);   /* linked or not */
	pthread_mutex_unlock(&fh->fs->lock);

	ra_release(fh);
	pthread_mutex_lock(&fh->fs->lock);
	idle = objfs_list_empty(&fh->fs->handles);
	pthread_mutex_unlock(&fh->fs->lock);
	if (idle)
		ra_buf_drain(fh->fs);
	pthread_cond_destroy(&fh->cv);
	pthread_mutex_destroy(&fh->mu);
	free(fh);
}

/* The handle fi->fh names (an id: see journal.c), or NULL.  The kernel
 * only sends ids it was given, but it sends again a request a dead
 * server ran and did not answer (resume): a RELEASE or RELEASEDIR whose
 * handle the predecessor closed, and recorded closed, before it died.
 * Those are answered as done; any other request on an unknown handle is
 * EBADF (hid_unknown). */
struct fhandle *fh_of(struct objfs_fs *fs, struct fuse_file_info *fi)
{
	struct hid *h = hid_find(fs, fi->fh);

	return h != NULL && !h->dir ? (struct fhandle *)h : NULL;
}

struct dhandle *dh_of(struct objfs_fs *fs, struct fuse_file_info *fi)
{
	struct hid *h = hid_find(fs, fi->fh);

	return h != NULL && h->dir ? (struct dhandle *)h : NULL;
}

/* Replies to a request naming a handle this server does not have. */
void hid_unknown(struct objfs_fs *fs, fuse_req_t req, const char *op,
		 uint64_t id, int err)
{
	objfs_warn(fs->log, SUB, "%s of handle %" PRIu64 ", which is not "
		   "open%s", op, id, err == 0 ? " (closed before a server died: "
		   "done)" : "");
	reply_err(req, err);
}

/* Unlinks and frees a directory handle (takes fs->lock). */
struct dhandle *dh_new(struct objfs_fs *fs)
{
	struct dhandle *dh = calloc(1, sizeof(*dh));

	if (dh == NULL)
		return NULL;
	pthread_mutex_lock(&fs->lock);
	objfs_list_push_front(&fs->dirhandles, &dh->link);
	pthread_mutex_unlock(&fs->lock);
	return dh;
}

void dh_free(struct objfs_fs *fs, struct dhandle *dh)
{
	hid_del(fs, &dh->hid);
	pthread_mutex_lock(&fs->lock);
	objfs_list_remove(&dh->link);
	snap_put_locked(dh->snap);
	pthread_mutex_unlock(&fs->lock);
	free(dh);
}

/* ---- open, create, flush, fsync, release ------------------------------- */

/* Opens in for fi: revalidation, O_TRUNC, the handle (pinned in). */
static int do_open(struct objfs_fs *fs, struct inode *in,
		   struct fuse_file_info *fi)
{
	struct fhandle *fh = NULL;
	struct ra_open ro = { NULL, 0 };
	bool local, changed = false, writing;
	int err = 0;

	writing = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
	if (writing && fs->o.read_only)
		return EROFS;
	if (S_ISDIR(in->mode))
		return EISDIR;
	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	pthread_mutex_lock(&fs->lock);
	local = in->dirty || in->spool != NULL || !in->in_store;
	pthread_mutex_unlock(&fs->lock);
	if (writing)
		pf_drop_inode(fs, in);
	else if (!local)
		pf_opened(fs, in);      /* a scan's next files, in parallel */
	if (!local) {
		/* close-to-open: a reopened file is revalidated */
		err = ra_open_revalidate(fs, in, !writing, &ro);
		if (err == ESTALE)
			err = ENOENT;
		pthread_mutex_lock(&fs->lock);
		if (err == 0 && strcmp(in->cache_etag, in->etag) != 0) {
			changed = in->cache_etag[0] != '\0';
			snprintf(in->cache_etag, sizeof(in->cache_etag), "%s",
				 in->etag);
			fi->keep_cache = 0;
		} else {
			fi->keep_cache = 1;
		}
		pthread_mutex_unlock(&fs->lock);
	} else {
		fi->keep_cache = 1;
	}
	if (err == 0)
		fs_metrics_open(fs, fi->keep_cache);
	if (err == 0 && (fi->flags & O_TRUNC))
		err = inode_truncate(fs, in, 0);
	if (err == 0) {
		fh = fh_new(fs, in);
		if (fh == NULL)
			err = ENOMEM;
	}
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		in->nopen++;
		fh_link(fs, fh);
		pthread_mutex_unlock(&fs->lock);
		ra_open_install(fh, &ro);
		hid_add(fs, &fh->hid, in->ino, false);
		fi->fh = fh->hid.id;
	}
	ra_open_release(fs, &ro);
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	if (changed && fs->se != NULL) {
		/* the size may have changed: drop cached attributes */
		fuse_lowlevel_notify_inval_inode(fs->se, in->ino, -1, 0);
	}
	return err;
}

/* Undoes do_open when the reply could not be sent. */
static void undo_open(struct objfs_fs *fs, struct fuse_file_info *fi)
{
	struct fhandle *fh = fh_of(fs, fi);
	struct inode *in;

	assert(fh != NULL);     /* made by do_open just before */
	in = fh->in;
	pthread_mutex_lock(&fs->lock);
	assert(in->nopen > 0);
	in->nopen--;
	pthread_mutex_unlock(&fs->lock);
	fh_free(fh);
}

void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = pin_ino(fs, ino);
	int err;

	if (in == NULL) {
		reply_err(req, ENOENT);
		return;
	}
	err = do_open(fs, in, fi);
	if (err != 0)
		reply_err(req, err);
	else if (fuse_reply_open(req, fi) == -ENOENT)
		undo_open(fs, fi);
	unpin(fs, in);
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fuse_entry_param e;
	struct inode *dir, *in = NULL, *old;
	struct objfs_spool *sp = NULL;
	struct fhandle *fh = NULL;
	struct intent_ctx ic;
	uint64_t spool_id = 0;
	gid_t gid;
	int err;

	if (intent_start(fs, &ic, &err)) {
		/* it ran before the server died: the same entry and handle
		 * (which the kernel never saw, so never released) */
		if (err != 0) {
			reply_err(req, err);
		} else if (intent_entry(fs, &ic, &e) &&
			   hid_find(fs, ic.hid) != NULL) {
			fi->fh = ic.hid;
			fi->keep_cache = 1;
			fuse_reply_create(req, &e, fi);
		} else {
			reply_err(req, EIO);
		}
		return;
	}
	err = new_name_dir(fs, parent, name, &dir);
	if (err != 0)
		goto out;
	/* an existing name (stale negative entry) is opened, not replaced;
	 * one the dead server made for this very request is not EEXIST */
	err = do_lookup(fs, dir, name, true, &old);
	if (err == 0)
		err = hl_file(fs, &old);        /* a hard link's name: its file */
	if (err == 0) {
		if ((fi->flags & O_EXCL) && !ic.begun)
			err = EEXIST;
		else if (S_ISDIR(old->mode))
			err = EISDIR;
		else
			err = do_open(fs, old, fi);
		if (err == 0) {
			pthread_mutex_lock(&fs->lock);
			old->nlookup++;
			state_note(fs, old);
			fill_entry(fs, old, &e);
			pthread_mutex_unlock(&fs->lock);
			ic.ino = old->ino;
			ic.hid = fi->fh;
			intent_end(fs, &ic, &err, 0);
			if (fuse_reply_create(req, &e, fi) == -ENOENT)
				undo_open(fs, fi);
			unpin(fs, old);
			unpin(fs, dir);
			return;
		}
		unpin(fs, old);
		goto out;
	}
	if (err != ENOENT)
		goto out;
	err = spool_start(fs, 0, NULL, &sp, &spool_id);
	if (err != 0)
		goto out;
	pthread_mutex_lock(&fs->lock);
	mode = S_IFREG | (mode & 07777);
	gid = new_group(fs, ctx, dir, &mode);
	in = inode_new(fs, dir, name, mode);
	fh = in != NULL ? fh_new(fs, in) : NULL;
	if (in == NULL || fh == NULL) {
		err = ENOMEM;
		if (in != NULL)
			maybe_free(fs, in);
		pthread_mutex_unlock(&fs->lock);
		goto out;
	}
	in->uid = ctx->uid;
	in->gid = gid;
	in->mtime = now_real();
	in->ctime = in->mtime;
	in->atime = in->mtime;
	in->attr_time = now_mono();
	in->spool = sp;
	sp = NULL;
	in->dirty = true;
	in->seq = true;
	in->nopen++;
	fh_link(fs, fh);
	in->nlookup++;
	in->spool_id = spool_id;
	state_note(fs, in);
	fill_entry(fs, in, &e);
	snap_note(fs, dir, name, true, false);
	pthread_mutex_unlock(&fs->lock);
	hid_add(fs, &fh->hid, in->ino, false);
	fi->fh = fh->hid.id;
	fi->keep_cache = 1;
	ic.ino = in->ino;
	ic.hid = fi->fh;
	intent_end(fs, &ic, &err, 0);
	state_crash_point(fs, "create", name);
	fuse_reply_create(req, &e, fi);
	unpin(fs, dir);
	return;
out:
	objfs_spool_destroy(sp);
	intent_end(fs, &ic, &err, 0);
	reply_err(req, err);
	unpin(fs, dir);
}

void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fhandle *fh = fh_of(req_fs(req), fi);

	if (fh == NULL) {
		hid_unknown(req_fs(req), req, "flush", fi->fh, EBADF);
		return;
	}
	reply_err(req, inode_sync_locked_ns(req_fs(req), fh->in));
}

void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct fhandle *fh = fh_of(fs, fi);
	int err;

	if (fh == NULL) {
		hid_unknown(fs, req, "fsync", fi->fh, EBADF);
		return;
	}
	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&fh->in->mu);
	err = inode_sync_told(fs, fh->in);
	if (err == 0)
		err = attrs_sync(fs, fh->in);
	pthread_mutex_unlock(&fh->in->mu);
	pthread_rwlock_unlock(&fs->ns);
	reply_err(req, err);
}

void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct fhandle *fh = fh_of(req_fs(req), fi);
	struct inode *in;
	int err;

	if (fh == NULL) {
		hid_unknown(fs, req, "release", fi->fh, 0);
		return;
	}
	in = fh->in;
	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	err = inode_release_sync(fs, in);
	if (err != 0)
		objfs_error(fs->log, SUB, "inode %" PRIu64 " keeps unsaved data "
			    "after close: %s", (uint64_t)in->ino,
			    objfs_strerror(err));
	pthread_mutex_lock(&fs->lock);
	assert(in->nopen > 0);
	in->nopen--;
	pthread_mutex_unlock(&fs->lock);
	spool_drop(fs, in, true);
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	fh_free(fh);
	crash_point(fs, "release", in);
	pthread_mutex_lock(&fs->lock);
	maybe_free(fs, in);
	pthread_mutex_unlock(&fs->lock);
	reply_err(req, err);
}

/* ---- directories ------------------------------------------------------- */

void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct dhandle *dh = dh_new(fs);

	if (dh == NULL) {
		reply_err(req, ENOMEM);
		return;
	}
	hid_add(fs, &dh->hid, ino, true);
	fi->fh = dh->hid.id;
	fi->cache_readdir = 0;
	if (fuse_reply_open(req, fi) == -ENOENT)
		dh_free(fs, dh);
}

void op_releasedir(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);
	struct dhandle *dh = dh_of(req_fs(req), fi);
	struct inode *dir;

	if (dh == NULL) {
		hid_unknown(fs, req, "releasedir", fi->fh, 0);
		return;
	}
	dh_free(fs, dh);
	dir = fs->o.crash_at != NULL ? pin_ino(fs, ino) : NULL;
	if (dir != NULL) {
		crash_point(fs, "releasedir", dir);
		unpin(fs, dir);
	}
	reply_err(req, 0);
}

/* ---- destroy ----------------------------------------------------------- */

void handles_drop(struct objfs_fs *fs)
{
	struct objfs_list *l;

	while ((l = objfs_list_first(&fs->handles)) != NULL)
		fh_free(objfs_list_entry(l, struct fhandle, link));
	while ((l = objfs_list_first(&fs->dirhandles)) != NULL)
		dh_free(fs, objfs_list_entry(l, struct dhandle, link));
}
