/*
 * remove.c - unlink and rmdir, and the barrier of the deletes they defer.
 *
 * An unlink of a plain file (not a hard link's name, not open) defers its
 * delete: objfs_store_del_deferred() queues the key in the store's delq
 * layer (backend/delq.c), which answers for it as gone at once and sends
 * it in a DeleteObjects batch after delete_delay; the unlink itself costs
 * no request.  A hard link's name (its set is counted in the store,
 * hardlink.c) and an open file (its data kept for its readers by
 * keep_open_data()) are deleted before the reply, as before.  An rmdir
 * defers its marker and attribute index the same way once the directory
 * is known empty (a listing within dir_ttl that names nothing, or a LIST
 * of its prefix, which the delq layer answers without the pending keys).
 *
 * Barriers: fsyncdir and the unmount (objfs_fs_sync_all) wait until every
 * delete deferred before them is answered; a delete that failed makes the
 * name visible again and the barrier EIO.
 *
 * Resume: a deferred key is written to the state log (state_delq) before
 * the reply, and marked done when the layer is done with it; a successor
 * queues again the keys not marked done (journal.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "fs/fs_int.h"
#include "fs/ops.h"

bool del_may_defer(const struct inode *in, bool renamed)
{
	return in->hl.id == NULL && (renamed || in->nopen == 0);
}

void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi)
{
	struct objfs_fs *fs = req_fs(req);

	(void)ino;
	(void)datasync;
	(void)fi;
	reply_err(req, objfs_store_del_barrier(fs->store));
}

/* Keeps an implied directory alive when an entry goes away, by writing
 * its marker once (ns held): cheaper than asking the store, at every
 * unlink, whether the entry was the last one. */
void keep_dir(struct objfs_fs *fs, struct inode *dir)
{
	struct objfs_fattr fa;
	char dkey[KEYBUF];
	bool need;
	int err;

	fs_assert_ns_held(fs);
	pthread_mutex_lock(&fs->lock);
	need = dir != fs->root && dir->linked && !dir->in_store;
	err = need ? inode_key(fs, dir, true, dkey, sizeof(dkey)) : 0;
	inode_fattr(dir, &fa);
	pthread_mutex_unlock(&fs->lock);
	if (!need || err != 0)
		return;
	err = put_with_attrs(fs, dkey, &fa, "", 0, NULL);
	if (err == 0 || err == EEXIST) {   /* another client's marker will do */
		pthread_mutex_lock(&fs->lock);
		dir->in_store = true;
		pthread_mutex_unlock(&fs->lock);
	}
}

/* The start of unlink and rmdir: false when it replied (a request the
 * dead server ran, a parent gone); else *dir pinned and *err the name's
 * check (0: go on). */
static bool remove_start(fuse_req_t req, fuse_ino_t parent, const char *name,
			 struct intent_ctx *ic, struct inode **dir, int *err)
{
	struct objfs_fs *fs = req_fs(req);

	if (intent_start(fs, ic, err)) {
		reply_err(req, *err);   /* it ran before the server died */
		return false;
	}
	*dir = pin_ino(fs, parent);
	if (*dir == NULL) {
		*err = ENOENT;
		intent_end(fs, ic, err, ENOENT);
		reply_err(req, *err);
		return false;
	}
	*err = new_name_check(fs, *dir, name);
	if (*err == EPERM)
		*err = ENOENT;
	return true;
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *dir, *in = NULL, *par;
	char key[KEYBUF], hl_id[33] = "", hl_tok[17] = "";
	bool in_store, later = false;
	struct intent_ctx ic;
	int err;

	if (!remove_start(req, parent, name, &ic, &dir, &err))
		return;
	if (err != 0)
		goto out;
	pthread_rwlock_rdlock(&fs->ns);
	err = do_lookup(fs, dir, name, true, &in);
	if (err == 0 && S_ISDIR(in->mode))
		err = EISDIR;
	if (err == 0)
		err = keep_open_data(fs, in);
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		in_store = in->in_store;
		err = inode_key(fs, in, false, key, sizeof(key));
		if (in->hl.id != NULL && !in->hl.pending) {
			snprintf(hl_id, sizeof(hl_id), "%s", in->hl.id);
			snprintf(hl_tok, sizeof(hl_tok), "%s", in->hl.tok);
		}
		later = del_may_defer(in, false);
		pthread_mutex_unlock(&fs->lock);
	}
	if (err == 0 && in_store)
		err = later ? del_later(fs, key) : objfs_store_del(fs->store, key);
	if (err == 0)
		pf_drop_name(fs, dir, name);
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		if (in_store) {
			fs->cap.objects--;
			fs->cap.scan_obj_delta--;
		}
		charge_force(fs, in, 0);
		attrs_done(fs, in);
		par = detach(fs, in);
		inode_changed(in, false);
		snap_note(fs, par, name, false, false);
		pthread_mutex_unlock(&fs->lock);
		keep_dir(fs, dir);
		if (hl_id[0] != '\0')  /* a hard link's name */
			hl_name_gone(fs, hl_id, hl_tok);
	}
	pthread_rwlock_unlock(&fs->ns);
out:
	intent_end(fs, &ic, &err, ENOENT);
	state_crash_point(fs, "unlink", name);
	reply_err(req, err);
	unpin(fs, in);
	unpin(fs, dir);
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *dir, *in = NULL, *par;
	char dkey[KEYBUF];
	bool used = false, local_children, listed_empty = false;
	struct intent_ctx ic;
	int err;

	if (!remove_start(req, parent, name, &ic, &dir, &err))
		return;
	if (err != 0)
		goto out;
	pthread_rwlock_rdlock(&fs->ns);
	err = do_lookup(fs, dir, name, true, &in);
	if (err == 0 && !S_ISDIR(in->mode))
		err = ENOTDIR;
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		err = inode_key(fs, in, true, dkey, sizeof(dkey));
		local_children = false;
		for (par = in->child; par != NULL; par = par->sib_next) {
			if (par->linked && (par->dirty || !par->in_store))
				local_children = true;
		}
		/* a listing within dir_ttl that names nothing is trusted,
		 * as lookups trust it (rm -rf listed it just before) */
		listed_empty = snap_empty_fresh(fs, in);
		pthread_mutex_unlock(&fs->lock);
		if (local_children)
			err = ENOTEMPTY;
	}
	if (err == 0 && !listed_empty)
		err = prefix_used(fs, dkey, true, &used);
	if (err == 0 && used)
		err = ENOTEMPTY;
	if (err == 0)   /* empty: the marker and the index, deferred */
		err = aidx_drop(fs, dkey, dkey, true);
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		if (in->in_store) {
			fs->cap.objects--;
			fs->cap.scan_obj_delta--;
		}
		par = detach(fs, in);
		snap_note(fs, par, name, false, true);
		snap_drop(in);
		pthread_mutex_unlock(&fs->lock);
		keep_dir(fs, dir);
	}
	pthread_rwlock_unlock(&fs->ns);
out:
	intent_end(fs, &ic, &err, ENOENT);
	reply_err(req, err);
	unpin(fs, in);
	unpin(fs, dir);
}

