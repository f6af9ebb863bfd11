/*
 * names.c - new names that are objects of their own: mkdir, symlink and
 * mknod (make_node()), and link(2) (the link set itself is hardlink.c's),
 * with what every new name shares: the checks of a name (new_name_check),
 * the upload of an object with its attributes (put_with_attrs), the group
 * a new name gets (new_group: a setgid directory, fsGroup), and the answer
 * to a request a dead server had run (intent_entry, intent_reply_entry).
 * Regular files are made by create (handles.c), which opens them too.
 *
 * Every new name is an intent (journal.c): not idempotent, EEXIST the second
 * time, so a successor answers a re-sent request as it was answered.
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

int new_name_check(struct objfs_fs *fs, struct inode *parent,
		   const char *name)
{
	int err;

	if (fs->o.read_only)
		return EROFS;
	err = objfs_name_check(name);
	if (err != 0)
		return err;
	if (objfs_name_reserved(is_root(fs, parent), name))
		return EPERM;
	if (!S_ISDIR(parent->mode))
		return ENOTDIR;
	return key_room_check(fs, parent, name);
}

int new_name_dir(struct objfs_fs *fs, fuse_ino_t parent, const char *name,
		 struct inode **dir)
{
	int err;

	*dir = pin_ino(fs, parent);
	if (*dir == NULL)
		return ENOENT;
	err = new_name_check(fs, *dir, name);
	if (err == 0)
		pf_drop_name(fs, *dir, name);
	return err;
}

int put_with_attrs(struct objfs_fs *fs, const char *key,
		   const struct objfs_fattr *fa, const void *body,
		   size_t len, struct objfs_obj_info *info)
{
	struct objfs_meta meta = OBJFS_META_INIT;
	struct objfs_put_opts po = { NULL, NULL, true };
	struct objfs_source src;
	int err;

	err = objfs_fattr_to_meta(fa, &meta);
	if (err == 0) {
		po.meta = &meta;
		objfs_source_mem(&src, body, len);
		err = objfs_store_put(fs->store, key, &src, &po, info);
	}
	objfs_meta_release(&meta);
	return err;
}

/* The entry a request the dead server ran made (ic from intent_start()),
 * into *e: false when that inode is gone.  The dead server counted the
 * lookup the kernel gets now.  Takes fs->lock. */
bool intent_entry(struct objfs_fs *fs, const struct intent_ctx *ic,
		  struct fuse_entry_param *e)
{
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	in = ic->ino != 0 ? find_ino(fs, ic->ino) : NULL;
	if (in != NULL)
		fill_entry(fs, in, e);
	pthread_mutex_unlock(&fs->lock);
	return in != NULL;
}

/* Answers a re-sent request that ran before the server died (ic, err from
 * intent_start()) as it was answered: its errno or the entry it made. */
static void intent_reply_entry(fuse_req_t req, struct objfs_fs *fs,
			       const struct intent_ctx *ic, int err)
{
	struct fuse_entry_param e;

	if (err != 0)
		reply_err(req, err);
	else if (intent_entry(fs, ic, &e))
		fuse_reply_entry(req, &e);
	else
		reply_err(req, EIO);
}

/* Test only: the name of the crash point of a make_node() of mode. */
static const char *node_op(mode_t mode)
{
	return S_ISDIR(mode) ? "mkdir" : S_ISLNK(mode) ? "symlink" : "mknod";
}

/* The group and mode of a new file or directory made by ctx in dir: in a
 * setgid directory its group (a directory also setgid); with an fsgroup
 * (Kubernetes's fsGroup), that group, group bits as the owner's (what a
 * setgid directory and umask 002 give); else the caller's. */
gid_t new_group(const struct objfs_fs *fs, const struct fuse_ctx *ctx,
		const struct inode *dir, mode_t *mode)
{
	if (dir->mode & S_ISGID) {
		if (S_ISDIR(*mode))
			*mode |= S_ISGID;
		return dir->gid;
	}
	if (!fs->o.fsgroup_set || S_ISLNK(*mode))
		return ctx->gid;
	*mode |= (*mode & 0700) >> 3;
	return fs->o.fsgroup;
}

/* Creates an object-backed name (mkdir, symlink, mknod) and replies the
 * entry.  Not idempotent (EEXIST the second time): an intent. */
void make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, dev_t rdev, const char *link)
{
	struct objfs_fs *fs = req_fs(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct fuse_entry_param e;
	struct objfs_fattr fa;
	struct intent_ctx ic;
	struct inode *dir, *in;
	char dkey[KEYBUF], key[KEYBUF];
	int err;

	if (intent_start(fs, &ic, &err)) {
		/* it ran before the server died: the same answer */
		intent_reply_entry(req, fs, &ic, err);
		return;
	}
	err = new_name_dir(fs, parent, name, &dir);
	if (err != 0)
		goto out;
	memset(&fa, 0, sizeof(fa));
	fa.gid = new_group(fs, ctx, dir, &mode);
	fa.mode = mode;
	fa.uid = ctx->uid;
	fa.rdev = rdev;
	fa.mtime = now_real();
	fa.atime = fa.mtime;
	fa.ctime = fa.mtime;
	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&fs->lock);
	in = find_child(fs, dir, name);
	if (in != NULL && ic.begun && same_type(in->mode, mode)) {
		/* the dead server made it and died before it said so */
		in->nlookup++;
		state_note(fs, in);
		fill_entry(fs, in, &e);
		ic.ino = in->ino;
		pthread_mutex_unlock(&fs->lock);
		pthread_rwlock_unlock(&fs->ns);
		goto out;
	}
	if (in != NULL)
		err = EEXIST;
	else
		err = inode_key(fs, dir, true, dkey, sizeof(dkey));
	pthread_mutex_unlock(&fs->lock);
	if (err == 0)
		err = objfs_key_join(dkey, name, S_ISDIR(mode), key, sizeof(key));
	if (err == 0)
		err = put_with_attrs(fs, key, &fa, link != NULL ? link : "",
				     link != NULL ? strlen(link) : 0, &info);
	if (err == 0 && !S_ISDIR(mode))
		aidx_note(fs, key, info.etag, &fa, FATTR_ALL, link);
	if (err != 0) {
		pthread_rwlock_unlock(&fs->ns);
		goto out;
	}
	pthread_mutex_lock(&fs->lock);
	in = find_child(fs, dir, name);
	if (in != NULL) {
		/* raced with another creator; the object is ours now */
		struct inode *par = detach(fs, in);

		maybe_free(fs, in);
		maybe_free(fs, par);
	}
	in = inode_new(fs, dir, name, mode);
	if (in == NULL) {
		err = ENOMEM;
	} else {
		inode_set_fattr(in, &fa, FATTR_ALL);
		in->in_store = true;
		in->meta_mask = FATTR_ALL;
		in->size = S_ISLNK(mode) ? strlen(link) : 0;
		in->stored_size = in->size;
		in->charged = in->size;
		fs->cap.used += (int64_t)in->size;
		fs->cap.objects++;
		fs->cap.scan_obj_delta++;
		snprintf(in->etag, sizeof(in->etag), "%s", info.etag);
		in->attr_time = now_mono();
		if (link != NULL)
			in->link = strdup(link);
		/* its object was written here without user.* attributes:
		 * none to read back before its next metadata write (a
		 * directory's times and mode, stored later: no HEAD) */
		free(in->xattr);
		in->xattr = NULL;
		in->xattr_known = true;
		in->xattr_time = in->attr_time;
		in->nlookup++;
		state_note(fs, in);
		fill_entry(fs, in, &e);
		ic.ino = in->ino;
		if (S_ISDIR(mode)) {
			/* known empty: lookups in it need no request for
			 * dir_ttl (files created in it are noted) */
			struct dirsnap *s = calloc(1, sizeof(*s));

			if (s != NULL) {
				s->refs = 1;
				s->time = now_mono();
				in->snap = s;
			}
			in->dir_times = in->nsub_known = true;
		}
	}
	snap_note(fs, dir, name, true, S_ISDIR(mode));
	pthread_mutex_unlock(&fs->lock);
	pthread_rwlock_unlock(&fs->ns);
out:
	objfs_obj_info_release(&info);
	intent_end(fs, &ic, &err, 0);
	state_crash_point(fs, node_op(mode), name);
	if (err != 0)
		reply_err(req, err);
	else
		fuse_reply_entry(req, &e);
	unpin(fs, dir);
}

void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL);
}

void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	if (strlen(link) >= LINK_MAX_LEN) {
		reply_err(req, ENAMETOOLONG);
		return;
	}
	make_node(req, parent, name, S_IFLNK | 0777, 0, link);
}

/* A new name of a file (hardlink.c).  Not idempotent (EEXIST the second
 * time): an intent, whose re-sent request that had begun takes EEXIST as
 * its own link. */
void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct objfs_fs *fs = req_fs(req);
	struct fuse_entry_param e;
	struct intent_ctx ic;
	struct inode *in, *dir;
	int err;

	if (intent_start(fs, &ic, &err)) {
		/* it ran before the server died: the same answer, with the
		 * link count as the store has it now */
		in = err == 0 ? pin_ino(fs, ino) : NULL;
		if (in != NULL)
			revalidate(fs, in, true);
		unpin(fs, in);
		intent_reply_entry(req, fs, &ic, err);
		return;
	}
	in = pin_ino(fs, ino);
	dir = pin_ino(fs, newparent);
	err = in == NULL || dir == NULL ? ENOENT :
	      new_name_check(fs, dir, newname);
	if (err == 0) {
		pthread_rwlock_rdlock(&fs->ns);
		pf_drop_inode(fs, in);
		pf_drop_name(fs, dir, newname);
		err = hl_link(fs, in, dir, newname);
		pthread_rwlock_unlock(&fs->ns);
	}
	ic.ino = ino;
	intent_end(fs, &ic, &err, EEXIST);
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		in->nlookup++;
		state_note(fs, in);
		fill_entry(fs, in, &e);
		pthread_mutex_unlock(&fs->lock);
	}
	state_crash_point(fs, "link", newname);
	if (err != 0)
		reply_err(req, err);
	else
		fuse_reply_entry(req, &e);
	unpin(fs, in);
	unpin(fs, dir);
}
