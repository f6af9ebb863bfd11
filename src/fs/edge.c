/*
 * edge.c - what every file of src/fs that answers the kernel shares, kept
 * below them all: reply_err() (the one place an errno reaches the kernel:
 * the FUSE boundary), the unique of the request this thread runs (a
 * resumed mount's intents, journal.c) and the test-only crash points.
 * It calls nothing of src/fs but the metrics' errno hook, so the op
 * files (fs.c, handles.c, names.c, remove.c, rename.c, special.c,
 * xattr.c) do not call one another through fs.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/fs_int.h"

/* ---- the FUSE boundary ------------------------------------------------ */

/* The FUSE boundary: store errors a file system call cannot mean
 * (unreachable, throttled, a bad range) become EIO; errors are negated
 * here and nowhere else (libfuse's reply does it). */
static int fs_errno(int err)
{
	switch (err) {
	case 0: case ENOENT: case EACCES: case EPERM: case EIO: case ENOSPC:
	case EEXIST: case ENOTEMPTY: case ENOTDIR: case EISDIR: case EINVAL:
	case ENAMETOOLONG: case EROFS: case ENOMEM: case EFBIG: case EXDEV:
	case ENOSYS: case ENOTSUP: case EDQUOT: case EINTR:
	case ENODATA: case ERANGE: case E2BIG:
		return err;
	default:
		return EIO;
	}
}

void reply_err(fuse_req_t req, int err)
{
	fs_metrics_note_err(fs_errno(err));
	fuse_reply_err(req, fs_errno(err));
}

/* ---- the request's unique -------------------------------------------- */

static __thread uint64_t thread_unique;

void objfs_fs_set_unique(uint64_t unique)
{
	thread_unique = unique;
}

uint64_t req_unique(void)
{
	return thread_unique;
}

/* ---- test faults ------------------------------------------------------ */

/* Test only: -o crash_at=OP:NAME (journal.c). */
void crash_point(struct objfs_fs *fs, const char *op, struct inode *in)
{
	char name[256];

	if (fs->o.crash_at == NULL)
		return;
	pthread_mutex_lock(&fs->lock);
	snprintf(name, sizeof(name), "%s", in->name);
	pthread_mutex_unlock(&fs->lock);
	state_crash_point(fs, op, name);
}

void objfs_fs_crash_point(struct objfs_fs *fs, const char *op)
{
	state_crash_point(fs, op, NULL);
}

void state_crash_point(struct objfs_fs *fs, const char *op, const char *name)
{
	const char *c = fs->o.crash_at;
	char path[4200];
	size_t n = strlen(op);
	int fd;

	if (c == NULL || fs->journal.dir == NULL || strncmp(c, op, n) != 0)
		return;
	if (name != NULL ? c[n] != ':' || strcmp(c + n + 1, name) != 0 :
	    c[n] != '\0')
		return;
	snprintf(path, sizeof(path), "%s/crashed", fs->journal.dir);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return;         /* once: the successor runs the request */
	close(fd);
	objfs_warn(fs->log, SUB, "test fault: killed in the middle of %s%s%s",
		   op, name != NULL ? " of " : "", name != NULL ? name : "");
	kill(getpid(), SIGKILL);
}
