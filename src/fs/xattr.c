/*
 * xattr.c - extended attributes: getxattr, setxattr, listxattr and
 * removexattr (the encoding in object metadata: xattr.h).
 *
 * Only user.* attributes of regular files and directories are kept (the
 * kernel refuses user.* on other types before asking); every other
 * namespace answers ENOTSUP at once, without store I/O, so tools behave
 * as on a filesystem without them.
 *
 * An inode's attributes (in->xattr, the encoded string; fs->lock) are
 * known (in->xattr_known) once read from its object by a HEAD, or when it
 * has no object yet.  Every write of its metadata (an upload, the copy in
 * place of a chmod, a rename's copy with attributes, a link's copy)
 * carries them (xattr_meta()), so each of those first makes them known
 * (xattr_load()): at most one HEAD per inode, only for an object this
 * mount did not read with a HEAD or whose HEAD showed attributes (a HEAD
 * without them makes them known: lookup.c's apply_probe()).  A
 * revalidation that finds another ETag forgets them.  getxattr and listxattr read them again
 * once attr_ttl has passed, unless changes made here are not stored yet.
 * A change is stored as chmod's is: with the upload of a dirty file, by a
 * copy of the object onto itself soon after (attrs_defer()) for a clean
 * one, by a PUT of the marker for a directory.
 *
 * The attribute index does not carry them: a getxattr may HEAD.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "common/log.h"
#include "fs/fs_int.h"
#include "fs/ops.h"
#include "fs/xattr.h"

int xattr_meta(struct objfs_fs *fs, struct inode *in, struct objfs_meta *m)
{
	fs_assert_locked(fs);
	return objfs_xattr_to_meta(in->xattr, m);
}

int xattr_load(struct objfs_fs *fs, struct inode *in, bool fresh)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	char key[KEYBUF], *enc = NULL;
	bool root;
	int err = 0;

	fs_assert_held(&in->mu);
	pthread_mutex_lock(&fs->lock);
	root = in == fs->root;
	if (in->xattr_known &&
	    (!fresh || in->dirty || in->attr_dirty ||
	     now_mono() - in->xattr_time < fs->o.attr_ttl)) {
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	if (!root && (!in->in_store ||
		      !(S_ISREG(in->mode) || S_ISDIR(in->mode)))) {
		/* no object, or a type without user.* (the kernel's rule):
		 * nothing stored */
		free(in->xattr);
		in->xattr = NULL;
		in->xattr_known = true;
		in->xattr_time = now_mono();
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	if (root)
		snprintf(key, sizeof(key), "%s", OBJFS_ROOT_ATTR_KEY);
	else
		err = inode_key(fs, in, true, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		return err;
	err = objfs_store_head(fs->store, key, &info);
	if (err == ENOENT) {
		err = 0;
	} else if (err == 0) {
		err = objfs_xattr_from_meta(&info.meta, &enc);
		if (err == EINVAL) {
			objfs_warn(fs->log, SUB, "%s: malformed extended "
				   "attributes ignored", key);
			err = 0;
		}
	}
	if (err != 0)
		goto out;
	pthread_mutex_lock(&fs->lock);
	if (!in->xattr_known || !(in->dirty || in->attr_dirty)) {
		free(in->xattr);
		in->xattr = enc;
		enc = NULL;
		in->xattr_known = true;
		in->xattr_time = now_mono();
	}
	pthread_mutex_unlock(&fs->lock);
out:
	free(enc);
	objfs_obj_info_release(&info);
	return err;
}

/* Pins ino for an xattr call on a file or directory: NULL after replying
 * (ENOENT, or the name's errno from objfs_xattr_name_check()). */
static struct inode *xattr_begin(fuse_req_t req, fuse_ino_t ino,
				 const char *name)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in;
	int err = !fs->o.xattrs ? ENOSYS :
		  name != NULL ? objfs_xattr_name_check(name) : 0;

	if (err != 0) {
		reply_err(req, err);
		return NULL;
	}
	in = pin_ino(fs, ino);
	if (in == NULL) {
		reply_err(req, ENOENT);
		return NULL;
	}
	return in;
}

/* xattr_load(), taking ns (read) and in->mu around it. */
static int xattr_load_ns(struct objfs_fs *fs, struct inode *in)
{
	int err;

	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	err = xattr_load(fs, in, true);
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	return err;
}

void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    size_t size)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = xattr_begin(req, ino, name);
	char val[OBJFS_XATTR_ENC_MAX];
	size_t len = 0;
	int err;

	if (in == NULL)
		return;
	err = xattr_load_ns(fs, in);
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		err = objfs_xattr_get(in->xattr, name, val,
				      size < sizeof(val) ? size : sizeof(val),
				      &len);
		pthread_mutex_unlock(&fs->lock);
	}
	if (err == ERANGE && len <= size)
		err = EIO;      /* cannot be: val holds any value */
	if (err != 0)
		reply_err(req, err);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else
		fuse_reply_buf(req, val, len);
	unpin(fs, in);
}

void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = xattr_begin(req, ino, NULL);
	char *buf = NULL;
	size_t len = 0;
	int err;

	if (in == NULL)
		return;
	err = xattr_load_ns(fs, in);
	if (err == 0 && size > 0) {
		buf = malloc(size);
		if (buf == NULL)
			err = ENOMEM;
	}
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		err = objfs_xattr_list(in->xattr, buf, size, &len);
		pthread_mutex_unlock(&fs->lock);
	}
	if (err != 0)
		reply_err(req, err);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
	unpin(fs, in);
}

/* Sets (value != NULL) or removes name of in, and stores the change as
 * chmod does (fs.c's op_setattr).  0 or an errno.  Takes ns, in->mu. */
static int xattr_change(struct objfs_fs *fs, struct inode *in,
			const char *name, const char *value, size_t size,
			int flags)
{
	char *enc = NULL, *old = NULL;
	bool has_data, open, dir;
	int err;

	if (fs->o.read_only)
		return EROFS;
	pthread_rwlock_rdlock(&fs->ns);
	pf_drop_inode(fs, in);
	pthread_mutex_lock(&in->mu);
	err = xattr_load(fs, in, true);
	if (err != 0)
		goto out;
	pthread_mutex_lock(&fs->lock);
	dir = S_ISDIR(in->mode);
	if (!S_ISREG(in->mode) && !dir)
		err = EPERM;
	else if (value != NULL)
		err = objfs_xattr_set(in->xattr, name, value, size, flags, &enc);
	else
		err = objfs_xattr_remove(in->xattr, name, &enc);
	if (err == 0) {
		old = in->xattr;
		in->xattr = enc;
		inode_changed(in, false);
		if (in->dirty)
			state_note(fs, in);
		if (in->stream != NULL)
			in->stream->attrs_changed = true;
	}
	has_data = in->dirty;
	open = in->nopen > 0;
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		goto out;
	if (has_data) {
		/* with the data: now when no handle is open, else at the
		 * close */
		if (!open)
			err = inode_sync(fs, in);
	} else if (!dir && in->in_store) {
		pthread_mutex_lock(&fs->lock);
		attrs_defer(fs, in);
		pthread_mutex_unlock(&fs->lock);
	} else {
		err = store_attrs(fs, in);
		if (err != 0) {
			/* not stored: what the store has stays */
			pthread_mutex_lock(&fs->lock);
			enc = in->xattr;
			in->xattr = old;
			old = enc;
			pthread_mutex_unlock(&fs->lock);
		}
	}
out:
	free(old);
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	return err;
}

void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    const char *value, size_t size, int flags)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = xattr_begin(req, ino, name);

	if (in == NULL)
		return;
	reply_err(req, xattr_change(fs, in, name, value != NULL ? value : "",
				    size, flags));
	unpin(fs, in);
}

void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct objfs_fs *fs = req_fs(req);
	struct inode *in = xattr_begin(req, ino, name);

	if (in == NULL)
		return;
	reply_err(req, xattr_change(fs, in, name, NULL, 0, 0));
	unpin(fs, in);
}
