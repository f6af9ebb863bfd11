/*
 * ops.h - the files that answer the kernel's requests, above the data
 * model's core (fs_int.h): the operations fs.c's table holds, the open
 * files and directories (handles.c) with their read-ahead (readahead.c),
 * what every new name shares (names.c), and rename's and remove's
 * helpers.  Locks and conventions are fs_int.h's.
 */
#ifndef OBJFS_FS_OPS_H
#define OBJFS_FS_OPS_H

#include "fs/fs_int.h"

struct ra_chunk {
	uint64_t off;
	size_t len;
	char *buf;
	size_t got;
	int state;          /* RA_FREE, RA_LOADING, RA_READY, RA_ERROR */
	int err;
};

enum { RA_FREE = 0, RA_LOADING, RA_READY, RA_ERROR };


struct fhandle {
	struct hid hid;                 /* first: found by id */
	struct objfs_fs *fs;
	struct inode *in;
	struct objfs_list link;         /* in fs->handles, fs->lock */
	char key[KEYBUF];
	pthread_mutex_t mu;             /* the read-ahead state */
	pthread_cond_t cv;
	uint64_t next_off;
	unsigned seq;
	unsigned waiters;               /* readers in cond_wait on cv */
	bool ra_reader;                 /* counted in fs->ra_readers */
	unsigned ra_tasks;              /* read-ahead GETs running */
	struct ra_chunk ra[RA_MAX];
};

struct dhandle {
	struct hid hid;                 /* first: found by id */
	struct dirsnap *snap;
	struct objfs_list link;         /* in fs->dirhandles, fs->lock */
};

/* ---- readahead.c: reads of clean files ---- */

/* Frees a read-ahead chunk whose GET is not running to the buffer pool.
 * fh->mu held (or fh private to the caller). */
void ra_free_chunk(struct objfs_fs *fs, struct ra_chunk *c);
/* Ends fh's read-ahead before it is freed: waits for its GETs, frees its
 * chunks and leaves the readers sharing mem_limit.  Takes fh->mu. */
void ra_release(struct fhandle *fh);
/* GETs of several chunks while GETs are slow to start against their
 * transfer (ttfb and xfer: seconds to the first byte, of one chunk's
 * transfer after it): the chunks one read-ahead GET asks for, 1 to
 * RA_SPAN_MAX, at most RA_SPAN_BYTES. */
#define RA_SPAN_MAX (RA_MAX / 2)
#define RA_SPAN_BYTES (16ULL << 20)
unsigned ra_span_for(double ttfb, double xfer, uint64_t chunk);
/* Where a read's bytes go (ra_read): the FUSE reply, or a test's buffer. */
struct ra_reply {
	void (*bytes)(void *arg, const char *data, size_t n);
	void *arg;
};
/* read_store() with the reply given: 0 (rp->bytes called once), or an
 * errno (not called). */
int ra_read(struct fhandle *fh, uint64_t off, size_t size,
	    const struct ra_reply *rp);
/* Unmaps the read-ahead buffers kept for reuse.  Takes fs->rabuf_mu. */
void ra_buf_drain(struct objfs_fs *fs);
/* Reads [off, off+size) of fh's clean file and replies to req.  0, or an
 * errno not yet replied.  No lock held; takes fs->lock and fh->mu. */
int read_store(struct fhandle *fh, fuse_req_t req, uint64_t off, size_t size);
/* A small file read whole at its open (ra_open_revalidate), until it
 * becomes the handle's first read-ahead chunk (ra_open_install) or is
 * given back (ra_open_release).  Owned by the opener. */
struct ra_open {
	char *buf;          /* a read-ahead buffer of ra_chunk bytes, or NULL */
	size_t got;
};
/* The revalidation of an open (close-to-open): for reading a clean file
 * last known with at most ra_chunk bytes, one GET of its first ra_chunk
 * bytes brings both its attributes and its bytes (into ro) instead of a
 * HEAD now and a GET at the first read (a file grown since keeps them as
 * its first chunk); otherwise revalidate(force).  Same results as
 * revalidate().  Caller holds in->mu, not fs->lock. */
int ra_open_revalidate(struct objfs_fs *fs, struct inode *in, bool reading,
		       struct ra_open *ro);
/* Makes ro's bytes fh's first read-ahead chunk (fh new, not yet shared). */
void ra_open_install(struct fhandle *fh, struct ra_open *ro);
/* Gives back what ra_open_install did not take. */
void ra_open_release(struct objfs_fs *fs, struct ra_open *ro);

/* ---- rename.c: rename ---- */

/* Uploads every dirty inode at or under top.  0 or the first errno.
 * fs->ns held for writing. */
int sync_under(struct objfs_fs *fs, struct inode *top);
void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned int flags);

/* ---- special.c: FIFOs, sockets, devices ---- */

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode, dev_t rdev);

/* ---- handles.c: open files and directories, handle ids ---- */

/* Gives h an id (fi->fh) and records it open / drops and records it
 * closed.  Take fs->hid_mu and fs->lock. */
void hid_add(struct objfs_fs *fs, struct hid *h, fuse_ino_t ino, bool dir);
void hid_del(struct objfs_fs *fs, struct hid *h);
/* The handle called id, or NULL.  Takes fs->hid_mu. */
struct hid *hid_find(struct objfs_fs *fs, uint64_t id);
/* Adds h, whose id is set (a handle a dead server had open), to the
 * table.  fs->hid_mu held. */
void hid_insert(struct objfs_fs *fs, struct hid *h);
/* A new handle of in (not linked, no id).  NULL when out of memory.  No
 * lock. */
struct fhandle *fh_new(struct objfs_fs *fs, struct inode *in);
/* Adds fh to the open handles.  fs->lock held. */
void fh_link(struct objfs_fs *fs, struct fhandle *fh);

/* A new directory handle in fs->dirhandles (no id, no snapshot); NULL
 * when out of memory.  Takes fs->lock. */
struct dhandle *dh_new(struct objfs_fs *fs);
/* Unlinks dh from fs->dirhandles, drops its snapshot, frees it.  Takes
 * fs->lock. */
void dh_free(struct objfs_fs *fs, struct dhandle *dh);
/* The file / directory handle fi->fh names (an id), or NULL.  The kernel
 * only sends ids it was given, but it sends again a request a dead
 * server ran and did not answer (resume): a RELEASE or RELEASEDIR whose
 * handle the predecessor closed, and recorded closed, before it died.
 * Those are answered as done; any other request on an unknown handle is
 * EBADF (hid_unknown).  Take fs->hid_mu. */
struct fhandle *fh_of(struct objfs_fs *fs, struct fuse_file_info *fi);
struct dhandle *dh_of(struct objfs_fs *fs, struct fuse_file_info *fi);
/* Replies err to a request (op) naming handle id, which this server does
 * not have, and logs it. */
void hid_unknown(struct objfs_fs *fs, fuse_req_t req, const char *op,
		 uint64_t id, int err);
/* Frees the handles still open (destroy: the kernel never released
 * them).  No lock held; nothing else runs. */
void handles_drop(struct objfs_fs *fs);
/* The operations of handles.c in the ops table (fs.c). */
void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi);
void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi);
void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_releasedir(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi);

/* ---- names.c: what every new name shares ---- */

/* EROFS, EINVAL, ENAMETOOLONG (the name, or its key), EPERM (reserved) or
 * ENOTDIR when name may not be created under parent (pinned by the
 * caller), else 0.  Takes fs->lock. */
int new_name_check(struct objfs_fs *fs, struct inode *parent,
		   const char *name);
/* The directory a new name goes in (create, mkdir, symlink, mknod):
 * pinned into *dir (NULL when parent is unknown: ENOENT; the caller
 * unpins it whatever the result), the name checked (new_name_check) and
 * any prefetch under it dropped.  0 or an errno. */
int new_name_dir(struct objfs_fs *fs, fuse_ino_t parent, const char *name,
		 struct inode **dir);
/* ---- names.c: mkdir, symlink, mknod, link ---- */
/* Creates name under parent (mkdir, symlink with link, mknod with rdev)
 * and replies the entry; an intent.  No lock held. */
void make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, dev_t rdev, const char *link);
/* The operations of names.c in the ops table (fs.c). */
void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode);
void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		   const char *name);
void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		const char *newname);
struct intent_ctx;
/* The entry a re-sent request's intent recorded (its inode still known):
 * true with *e filled in.  Takes fs->lock. */
bool intent_entry(struct objfs_fs *fs, const struct intent_ctx *ic,
		  struct fuse_entry_param *e);
/* The group of a new file or directory made by ctx in dir, and its mode's
 * setgid and group bits (a setgid directory; fsGroup). */
gid_t new_group(const struct objfs_fs *fs, const struct fuse_ctx *ctx,
		const struct inode *dir, mode_t *mode);
/* Creates key (EEXIST when the store has it: a conditional PUT where the
 * store has one, backend/s3.c) with the attributes fa and body (a
 * symlink's target; empty for a marker or a special file).  No lock
 * held. */
int put_with_attrs(struct objfs_fs *fs, const char *key,
		   const struct objfs_fattr *fa, const void *body,
		   size_t len, struct objfs_obj_info *info);

/* ---- remove.c: unlink, rmdir, and the deferred deletes' barrier ---- */

/* Writes the marker of an implied directory that lost its last entry.
 * fs->ns held; takes fs->lock. */
void keep_dir(struct objfs_fs *fs, struct inode *dir);
/* Whether in's object may be deleted later (del_later) when its name goes
 * (unlink, or the old name of a rename: renamed): not a hard link's name
 * (its set is counted in the store); for an unlink, not open either (an
 * open file's unlink deletes at once, as before deletes were deferred).
 * A rename's source may be open: the kernel sends RELEASE after close()
 * returns, so the close-then-rename of rsync or an editor often still
 * finds its handle, and the inode's data goes on under the new key.
 * fs->lock held. */
bool del_may_defer(const struct inode *in, bool renamed);
void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
/* fsync of a directory: waits for the deletes deferred before it (EIO
 * when one failed). */
void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi);

/* ---- xattr.c: the operations ---- */

/* The operations of xattr.c in the ops table (fs.c). */
void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    size_t size);
void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    const char *value, size_t size, int flags);
void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

#endif
