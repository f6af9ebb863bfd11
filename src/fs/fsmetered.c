/*
 * fsmetered.c - the metered ops table (objfs_fs_metered_ops): every slot
 * calls fs.c's (objfs_fs_ops()) between fs_metrics_op_begin() and
 * fs_metrics_op_end(), which count the request by op, time it, and count
 * it again by the errno reply_err() gave it (fsmetrics.c).  It sits above
 * fs.c, as the counters sit below every file that feeds them.  A mount
 * without metrics uses the plain table.
 */
#include "config.h"

#include "fs/fs_int.h"
#include "fs/ops.h"

/* A slot that times the real one; the request is gone once it replied,
 * so fs is taken before. */
#define METERED(slot, OP, params, args)                                   \
	static void m_##slot params                                        \
	{                                                                   \
		struct objfs_fs *fs = fuse_req_userdata(req);               \
		uint64_t t0 = fs_metrics_op_begin();                                   \
									    \
		objfs_fs_ops()->slot args;                                  \
		fs_metrics_op_end(fs, OP, t0);                              \
	}

METERED(lookup, OP_LOOKUP, (fuse_req_t req, fuse_ino_t parent, const char *name),
	(req, parent, name))
METERED(forget, OP_FORGET, (fuse_req_t req, fuse_ino_t ino, uint64_t nlookup),
	(req, ino, nlookup))
METERED(forget_multi, OP_FORGET_MULTI,
	(fuse_req_t req, size_t count, struct fuse_forget_data *forgets),
	(req, count, forgets))
METERED(getattr, OP_GETATTR, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
METERED(setattr, OP_SETATTR,
	(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
	 struct fuse_file_info *fi),
	(req, ino, attr, to_set, fi))
METERED(readlink, OP_READLINK, (fuse_req_t req, fuse_ino_t ino), (req, ino))
METERED(mknod, OP_MKNOD,
	(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev),
	(req, parent, name, mode, rdev))
METERED(mkdir, OP_MKDIR,
	(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode),
	(req, parent, name, mode))
METERED(unlink, OP_UNLINK, (fuse_req_t req, fuse_ino_t parent, const char *name),
	(req, parent, name))
METERED(rmdir, OP_RMDIR, (fuse_req_t req, fuse_ino_t parent, const char *name),
	(req, parent, name))
METERED(symlink, OP_SYMLINK,
	(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name),
	(req, link, parent, name))
METERED(rename, OP_RENAME,
	(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	 const char *newname, unsigned int flags),
	(req, parent, name, newparent, newname, flags))
METERED(link, OP_LINK,
	(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname),
	(req, ino, newparent, newname))
METERED(open, OP_OPEN, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
METERED(read, OP_READ,
	(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi),
	(req, ino, size, off, fi))
METERED(flush, OP_FLUSH, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
METERED(release, OP_RELEASE, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
METERED(fsync, OP_FSYNC,
	(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi),
	(req, ino, datasync, fi))
METERED(opendir, OP_OPENDIR, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
METERED(readdir, OP_READDIR,
	(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi),
	(req, ino, size, off, fi))
METERED(readdirplus, OP_READDIRPLUS,
	(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi),
	(req, ino, size, off, fi))
METERED(releasedir, OP_RELEASEDIR,
	(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
METERED(statfs, OP_STATFS, (fuse_req_t req, fuse_ino_t ino), (req, ino))
METERED(create, OP_CREATE,
	(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	 struct fuse_file_info *fi),
	(req, parent, name, mode, fi))
METERED(fsyncdir, OP_FSYNCDIR,
	(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi),
	(req, ino, datasync, fi))
METERED(setxattr, OP_SETXATTR,
	(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
	 size_t size, int flags),
	(req, ino, name, value, size, flags))
METERED(getxattr, OP_GETXATTR,
	(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size),
	(req, ino, name, size))
METERED(listxattr, OP_LISTXATTR, (fuse_req_t req, fuse_ino_t ino, size_t size),
	(req, ino, size))
METERED(removexattr, OP_REMOVEXATTR,
	(fuse_req_t req, fuse_ino_t ino, const char *name), (req, ino, name))
#undef METERED

/* Writes also count their bytes: an accepted write took all of them. */
static void m_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		    size_t size, off_t off, struct fuse_file_info *fi)
{
	struct objfs_fs *fs = fuse_req_userdata(req);
	uint64_t t0 = fs_metrics_op_begin();

	objfs_fs_ops()->write(req, ino, buf, size, off, fi);
	fs_metrics_written(fs, size);
	fs_metrics_op_end(fs, OP_WRITE, t0);
}

static void m_init(void *userdata, struct fuse_conn_info *conn)
{
	objfs_fs_ops()->init(userdata, conn);
}

static void m_destroy(void *userdata)
{
	objfs_fs_ops()->destroy(userdata);
}

static const struct fuse_lowlevel_ops metered_ops = {
	.init = m_init,
	.destroy = m_destroy,
	.lookup = m_lookup,
	.forget = m_forget,
	.forget_multi = m_forget_multi,
	.getattr = m_getattr,
	.setattr = m_setattr,
	.readlink = m_readlink,
	.mknod = m_mknod,
	.mkdir = m_mkdir,
	.unlink = m_unlink,
	.rmdir = m_rmdir,
	.symlink = m_symlink,
	.rename = m_rename,
	.link = m_link,
	.open = m_open,
	.read = m_read,
	.write = m_write,
	.flush = m_flush,
	.release = m_release,
	.fsync = m_fsync,
	.opendir = m_opendir,
	.readdir = m_readdir,
	.readdirplus = m_readdirplus,
	.releasedir = m_releasedir,
	.statfs = m_statfs,
	.create = m_create,
	.fsyncdir = m_fsyncdir,
	.setxattr = m_setxattr,
	.getxattr = m_getxattr,
	.listxattr = m_listxattr,
	.removexattr = m_removexattr,
};

const struct fuse_lowlevel_ops *objfs_fs_metered_ops(void)
{
	return &metered_ops;
}
