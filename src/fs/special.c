/*
 * special.c - FIFOs, unix sockets, character and block devices (mknod,
 * mkfifo, bind(2) of a unix socket).
 *
 * Each is a zero-byte object whose x-amz-meta-mode carries the whole
 * st_mode, type bits included, and whose x-amz-meta-rdev carries the
 * decimal dev_t of a device: what s3fs writes, so a bucket shared with
 * s3fs shows the same nodes on both (fs/attr.h).  Other S3 tools see an
 * empty object.  Their attributes are in the attribute index too
 * (rdev= in a segment entry), so `ls -l` needs no HEAD for them.
 *
 * The kernel serves their I/O itself (a FIFO's pipe, a socket's
 * connections, a device's driver): the filesystem only keeps the node.
 * Creating a device needs CAP_MKNOD, which the kernel checks before the
 * request arrives.  A resent mknod is an intent (make_node()).
 */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>

#include "fs/fs_int.h"
#include "fs/ops.h"

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode, dev_t rdev)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		rdev = 0;
		break;
	case S_IFCHR:
	case S_IFBLK:
		break;
	default:
		reply_err(req, EINVAL);     /* as mknod(2) for other types */
		return;
	}
	make_node(req, parent, name, mode & (S_IFMT | 07777), rdev, NULL);
}
