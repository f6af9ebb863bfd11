/*
 * rename.c - rename.  A file is copied to its new key and the old key
 * deleted (deferred, as an unlink's is, unless it is a hard link's name:
 * del_may_defer() in remove.c); a directory's dirty files are uploaded
 * (sync_under()), then every key under it is moved by backend/tree.h:
 * copied in parallel on the mount's pool, all or nothing (the copies are
 * deleted on failure), then the old keys deleted in batches.
 * fs->ns is held for writing throughout, so no upload writes to an old
 * key meanwhile.  A hard link's name (hardlink.c) is moved as any file
 * (its object is small; its set's entry follows its token, in the
 * metadata the copy keeps); a link name renamed over is dropped from its
 * set; two names of one file: nothing to do.
 * A file not yet stored (open, or closed with its upload waiting:
 * upload_delay, writeback.c) is renamed here only and uploaded under its
 * new name; a name it replaces is deleted now, unless the upload waits
 * and the name is a plain object: that upload overwrites it (so rsync's
 * temporary costs one PUT in all).  Such a file renamed to a free name
 * in the same directory (rsync's, git's and editors' temporaries)
 * changes no key, so that rename holds fs->ns for reading only (the
 * waiting uploads of other files, which hold it too, go on meanwhile;
 * the directory, holding the file, cannot be removed): rename_light();
 * if the file's upload began meanwhile, the rename starts again holding
 * it for writing.
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
#include "fs/ops.h"

/* ---- rename ----------------------------------------------------------- */

/* Uploads every dirty inode at or under top (ns held for writing). */
int sync_under(struct objfs_fs *fs, struct inode *top)
{
	struct inode **list = NULL, *in, *p;
	size_t n = 0, cap = 0, i;
	unsigned h;
	int err = 0, e;

	pthread_mutex_lock(&fs->lock);
	for (h = 0; h < HASH_SIZE; h++) {
		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next) {
			if (!in->dirty)
				continue;
			for (p = in; p != NULL && p != top; p = p->parent)
				;
			if (p == NULL)
				continue;
			if (n == cap) {
				struct inode **nl;

				cap = cap ? cap * 2 : 16;
				nl = realloc(list, cap * sizeof(*nl));
				if (nl == NULL) {
					err = ENOMEM;
					goto out_locked;
				}
				list = nl;
			}
			in->refs++;
			list[n++] = in;
		}
	}
out_locked:
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&list[i]->mu);
		e = inode_sync(fs, list[i]);
		pthread_mutex_unlock(&list[i]->mu);
		if (err == 0)
			err = e;
		unpin(fs, list[i]);
	}
	free(list);
	return err;
}

/* Moves every key under sp to dp (both ending in "/"), all or nothing
 * (backend/tree.h): on failure the source is untouched.  (ns held for
 * writing) */
static int rename_tree(struct objfs_fs *fs, const char *sp, const char *dp)
{
	struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };
	struct objfs_tree_opts o = { .pool = fs->pool, .copy = &co,
				     .log = fs->log };

	return objfs_tree_move(fs->store, sp, dp, &o, NULL);
}

/* A rename of src to a free name in its own directory that touches no
 * key (fs->lock): src is a file closed with its upload waiting
 * (writeback.c: upload_delay). */
static bool rename_light(const struct inode *src, const struct inode *dst,
			 const struct inode *ddir)
{
	return dst == NULL && src->parent == ddir && src->linked &&
	       S_ISREG(src->mode) && src->upload_wait &&
	       src->dirty && src->nopen == 0 && !src->in_store &&
	       src->hl.id == NULL && !src->hl.data;
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname,
	       unsigned int flags)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *sdir, *ddir, *src = NULL, *dst = NULL, *par;
	char skey[KEYBUF], dkey[KEYBUF], ddkey[KEYBUF];
	char src_hl[33] = "", dst_hl[33] = "", dst_tok[17] = "";
	bool used, pending, is_dir, light = true;
	struct intent_ctx ic;
	int err;

	if (intent_start(fs, &ic, &err)) {
		reply_err(req, err);    /* it ran before the server died */
		return;
	}
	sdir = pin_ino(fs, parent);
	ddir = pin_ino(fs, newparent);
	if (sdir == NULL || ddir == NULL) {
		err = ENOENT;
		goto out_nolock;
	}
	if (flags & ~RENAME_NOREPLACE) {
		err = EINVAL;
		goto out_nolock;
	}
	err = new_name_check(fs, ddir, newname);
	if (err == 0 && objfs_name_reserved(is_root(fs, sdir), name))
		err = ENOENT;
	if (err != 0)
		goto out_nolock;
again:
	if (light)
		pthread_rwlock_rdlock(&fs->ns);
	else
		pthread_rwlock_wrlock(&fs->ns);
	/* no open (which takes fs->ns) starts a prefetch meanwhile */
	pf_drop_name(fs, sdir, name);
	pf_drop_name(fs, ddir, newname);
	err = do_lookup(fs, sdir, name, true, &src);
	if (err != 0)
		goto out;
	err = do_lookup(fs, ddir, newname, true, &dst);
	if (err == ENOENT) {
		dst = NULL;
		err = 0;
	}
	if (err != 0)
		goto out;
	if (light) {
		pthread_mutex_lock(&fs->lock);
		light = rename_light(src, dst, ddir);
		pthread_mutex_unlock(&fs->lock);
		if (!light) {
			pthread_rwlock_unlock(&fs->ns);
			unpin(fs, dst);
			unpin(fs, src);
			dst = src = NULL;
			goto again;
		}
	}
	if (dst == src)
		goto out;       /* same name: nothing to do */
	is_dir = S_ISDIR(src->mode);
	if (dst != NULL) {
		if (flags & RENAME_NOREPLACE)
			err = EEXIST;
		else if (is_dir && !S_ISDIR(dst->mode))
			err = ENOTDIR;
		else if (!is_dir && S_ISDIR(dst->mode))
			err = EISDIR;
		if (err != 0)
			goto out;
	}
	pthread_mutex_lock(&fs->lock);
	err = inode_key(fs, src, true, skey, sizeof(skey));
	if (err == 0)
		err = inode_key(fs, ddir, true, ddkey, sizeof(ddkey));
	if (err == 0)
		err = objfs_key_join(ddkey, newname, is_dir, dkey, sizeof(dkey));
	if (src->hl.id != NULL && !src->hl.pending)
		snprintf(src_hl, sizeof(src_hl), "%s", src->hl.id);
	if (dst != NULL && dst->hl.id != NULL && !dst->hl.pending) {
		snprintf(dst_hl, sizeof(dst_hl), "%s", dst->hl.id);
		snprintf(dst_tok, sizeof(dst_tok), "%s", dst->hl.tok);
	}
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		goto out;
	if (src_hl[0] != '\0' && strcmp(src_hl, dst_hl) == 0)
		goto out;       /* two names of one file: nothing to do */
	if (dst != NULL && S_ISDIR(dst->mode)) {
		err = prefix_used(fs, dkey, true, &used);
		if (err == 0 && used)
			err = ENOTEMPTY;
		pthread_mutex_lock(&fs->lock);
		if (err == 0 && dst->child != NULL) {
			for (par = dst->child; par != NULL; par = par->sib_next)
				if (par->linked && (par->dirty || !par->in_store))
					err = ENOTEMPTY;
		}
		pthread_mutex_unlock(&fs->lock);
		if (err == 0)
			err = objfs_store_del(fs->store, dkey);
		if (err != 0)
			goto out;
	} else if (dst != NULL) {
		err = keep_open_data(fs, dst);
		if (err != 0)
			goto out;
	}

	if (is_dir) {
		err = sync_under(fs, src);
		if (err == 0)
			err = rename_tree(fs, skey, dkey);
		/* the copies have a new Last-Modified: the old entries
		 * describe nothing any more */
		if (err == 0)
			aidx_drop_tree(fs, skey, dkey);
	} else {
		bool later, waits;

		pthread_mutex_lock(&src->mu);
		pthread_mutex_lock(&fs->lock);
		if (light && !rename_light(src, dst, ddir)) {
			/* its upload ran meanwhile: keys change after all */
			pthread_mutex_unlock(&fs->lock);
			pthread_mutex_unlock(&src->mu);
			pthread_rwlock_unlock(&fs->ns);
			unpin(fs, src);
			src = NULL;
			light = false;
			goto again;
		}
		pending = !src->in_store;
		later = del_may_defer(src, true);
		waits = src->upload_wait && src->dirty && src->nopen == 0;
		pthread_mutex_unlock(&fs->lock);
		if (!pending) {
			struct objfs_copy_opts co = { OBJFS_META_COPY, NULL, NULL, NULL };
			struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
			struct objfs_meta meta = OBJFS_META_INIT;
			bool with_attrs;

			err = inode_sync(fs, src);
			pthread_mutex_lock(&fs->lock);
			with_attrs = src->attr_dirty;
			pthread_mutex_unlock(&fs->lock);
			if (with_attrs && err == 0)
				err = xattr_load(fs, src, false);
			pthread_mutex_lock(&fs->lock);
			if (with_attrs) {
				/* the copy carries the attributes set late */
				struct objfs_fattr fa;

				inode_fattr(src, &fa);
				if (err == 0)
					err = objfs_fattr_to_meta(&fa, &meta);
				if (err == 0)
					err = xattr_meta(fs, src, &meta);
				co.directive = OBJFS_META_REPLACE;
				co.meta = &meta;
			}
			pthread_mutex_unlock(&fs->lock);
			if (err == 0)
				err = objfs_store_copy(fs->store, skey, dkey, &co,
						       &info);
			objfs_meta_release(&meta);
			if (err == 0 && with_attrs) {
				pthread_mutex_lock(&fs->lock);
				attrs_done(fs, src);
				src->meta_mask = FATTR_ALL;
				pthread_mutex_unlock(&fs->lock);
			}
			if (err == 0)
				err = later ? del_later(fs, skey) :
				      objfs_store_del(fs->store, skey);
			if (err == 0) {
				struct objfs_fattr fa;
				unsigned mask;
				char *link;

				/* the copy keeps the metadata: its entry says
				 * what the source's did */
				pthread_mutex_lock(&fs->lock);
				inode_fattr(src, &fa);
				mask = src->meta_mask;
				link = src->link != NULL ? strdup(src->link) : NULL;
				pthread_mutex_unlock(&fs->lock);
				if ((!S_ISLNK(fa.mode) || link != NULL) &&
				    src_hl[0] == '\0')
					aidx_note(fs, dkey, info.etag, &fa, mask, link);
				free(link);
				pthread_mutex_lock(&fs->lock);
				if (strcmp(src->cache_etag, src->etag) == 0)
					snprintf(src->cache_etag,
						 sizeof(src->cache_etag), "%s",
						 info.etag);
				snprintf(src->etag, sizeof(src->etag), "%s",
					 info.etag);
				if (src->spool != NULL)
					snprintf(src->spool->base_etag,
						 sizeof(src->spool->base_etag),
						 "%s", info.etag);
				pthread_mutex_unlock(&fs->lock);
			}
			objfs_obj_info_release(&info);
		} else if (dst != NULL && dst->in_store &&
			   !(waits && dst_hl[0] == '\0' && !S_ISDIR(dst->mode))) {
			/* the pending file will be uploaded under the new name */
			err = objfs_store_del(fs->store, dkey);
		}
		pthread_mutex_unlock(&src->mu);
	}
	if (err != 0)
		goto out;

	pthread_mutex_lock(&fs->lock);
	if (dst != NULL) {
		if (dst->in_store && !S_ISDIR(dst->mode)) {
			fs->cap.objects--;
			fs->cap.scan_obj_delta--;
		}
		charge_force(fs, dst, 0);
		detach(fs, dst);
	}
	if (src->linked) {
		char *nn = strdup(newname);

		if (nn == NULL) {
			err = ENOMEM;
		} else {
			name_unhash(fs, src);
			sib_unlink(src);
			src->parent->refs--;
			free(src->name);
			src->name = nn;
			src->parent = ddir;
			ddir->refs++;
			sib_link(ddir, src);
			name_hash(fs, src);
			inode_changed(src, false);
			state_note(fs, src);
		}
	}
	if (is_dir)     /* the tree's recent changes follow it (recent.c) */
		recent_rename_dir(&fs->recent, skey, dkey, now_mono());
	snap_note(fs, sdir, name, false, is_dir);
	snap_note(fs, ddir, newname, true, is_dir);
	pthread_mutex_unlock(&fs->lock);
	keep_dir(fs, sdir);
	if (dst_hl[0] != '\0')
		hl_name_gone(fs, dst_hl, dst_tok);
out:
	pthread_rwlock_unlock(&fs->ns);
out_nolock:
	intent_end(fs, &ic, &err, ENOENT);
	state_crash_point(fs, "rename", name);
	reply_err(req, err);
	unpin(fs, dst);
	unpin(fs, src);
	unpin(fs, sdir);
	unpin(fs, ddir);
}
