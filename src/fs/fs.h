/*
 * fs.h - the objfs filesystem: one volume (a store confined to the volume
 * prefix) served through the libfuse3 low-level API.
 *
 * Nothing here is global: a process may host several filesystems, each
 * with its own store, options and FUSE session.
 *
 * Use:
 *   objfs_fs_create(store, &opts, log, &fs);   (checks the store, no threads)
 *   se = fuse_session_new(args, objfs_fs_ops(), objfs_fs_ops_size(), fs);
 *   objfs_fs_set_session(fs, se);          (for cache invalidation)
 *   fuse_session_mount(se, dir); fuse_daemonize(fg);
 *   objfs_fs_start(fs);                    (threads: after any fork)
 *   fuse_session_loop_mt(se, cfg);
 *   objfs_fs_sync_all(fs);                 (upload whatever is still dirty)
 *   fuse_session_unmount(se); fuse_session_destroy(se);
 *   objfs_fs_destroy(fs); objfs_store_destroy(store);
 */
#ifndef OBJFS_FS_H
#define OBJFS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fuse_lowlevel_ops;
struct fuse_session;
struct objfs_fs;
struct objfs_log;
struct objfs_metrics;
struct objfs_store;

#define OBJFS_PREFETCH_MAX 64        /* prefetch's bound */
#define OBJFS_RA_CHUNKS_MAX 16       /* readahead_chunks' bound */

/* Options; objfs_fs_opts_default() fills the defaults noted here. */
struct objfs_fs_opts {
	uid_t uid;                  /* owner of objects without metadata: getuid() */
	gid_t gid;                  /* getgid() */
	mode_t umask;               /* applied to default modes: 022 */
	bool fsgroup_set;           /* new files and directories belong to
				       fsgroup, their group permission bits
				       those of the owner (as Kubernetes's
				       fsGroup promises): false */
	gid_t fsgroup;
	double attr_ttl;            /* seconds attributes are trusted: 1 */
	double entry_ttl;           /* seconds names are trusted: 1 */
	double neg_ttl;             /* seconds a missing name is trusted: 1 */
	double dir_ttl;             /* seconds a listing is trusted: 1 */
	uint64_t mem_limit;         /* bytes of read-ahead buffers of the
				       whole mount, shared by its readers
				       (each at most mem_limit / readers,
				       at least one ra_chunk; 0: no bound):
				       256 MiB */
	uint64_t ra_chunk;          /* read-ahead chunk, the size of a GET
				       on a quiet store: 4 MiB */
	unsigned ra_chunks;         /* chunks a reader keeps ahead: 3 (more,
				       and GETs of several chunks, while the
				       store is slow to start GETs) */
	unsigned prefetch;          /* a directory's next small files fetched
				       ahead of a reader going through it in
				       order (0: off): 16 */
	uint64_t part_size;         /* multipart part size: 32 MiB */
	unsigned upload_parallel;   /* parts in flight per upload: 2 */
	double upload_delay;        /* seconds a new file's upload may wait
				       after its last close (writeback.c:
				       "Upload window"); 0: close means
				       stored: 0 */
	unsigned threads;           /* worker threads (read-ahead, HEAD, copy): 32 */
	const char *spool_dir;      /* where dirty data waits: /var/tmp (copied) */
	uint64_t spool_limit;       /* bytes the spools may occupy before data
				       is uploaded early to free them: 2 GiB
				       (0: no bound but the disk's) */
	bool read_only;             /* EROFS for every change: false */
	bool xattrs;                /* user.* extended attributes (xattr.c):
				       false, and every xattr call answers
				       ENOSYS, so the kernel asks no more (it
				       asks getxattr(security.capability)
				       before each write of a filesystem
				       that has them) */
	const char *cache_dir;      /* on-disk data cache under this directory
				       (a private subdirectory): NULL = none */
	uint64_t cache_size;        /* its bound in bytes: 1 GiB */
	double volrec_ttl;          /* re-read the volume record after: 30 s */
	double usage_refresh;       /* re-list the volume for `used` after: 600 s */
	unsigned dir_window;        /* names a listing holds at once: 20000
				       (larger directories are listed in
				       windows, with names only) */
	const char *crash_at;       /* test only, "read:NAME", "write:NAME",
				       "rename:NAME", "unlink:NAME"...: the
				       process kills itself
				       in the middle of that request on a file
				       called NAME, or "init" (resumable
				       mounts: objfs_fs_crash_point()), once
				       per state directory: NULL */
};
void objfs_fs_opts_default(struct objfs_fs_opts *o);
/* Normalises o's read-ahead as objfs_fs_new() does (a ra_chunk of 0 is
 * 1 MiB, at most 16 ra_chunks) and returns the memory one sequential
 * reader's read-ahead takes out of mem_limit: ra_chunk x ra_chunks (0
 * when read-ahead is off).  For callers that size mem_limit from it. */
uint64_t objfs_fs_opts_ra(struct objfs_fs_opts *o);

/* Creates a filesystem over store (not owned: it must outlive the fs).
 * Reads the volume record (a missing record means no capacity limit) and
 * starts the usage scan in the background.  0 or an errno. */
int objfs_fs_create(struct objfs_store *store, const struct objfs_fs_opts *opts,
		    struct objfs_log *log, struct objfs_fs **out);
/* Starts the worker threads and the usage scan.  Separate from create so
 * a daemon starts them after fork(); must be called before the session
 * loop.  0 or an errno. */
int objfs_fs_start(struct objfs_fs *fs);
/* Uploads everything dirty, stops the workers, frees the fs. */
void objfs_fs_destroy(struct objfs_fs *fs);

/* The low-level operations; pass fs as userdata to fuse_session_new(). */
const struct fuse_lowlevel_ops *objfs_fs_ops(void);
size_t objfs_fs_ops_size(void);
/* Metrics (fsmetrics.c): counts FUSE requests, bytes, caches, spools and
 * capacity into reg (borrowed; it must outlive fs, and its exposition must
 * stop before objfs_fs_destroy: its collector reads fs).  Call before
 * the session starts, then give fuse_session_new() objfs_fs_metered_ops()
 * (same size), which times every request.  0, EINVAL (already attached)
 * or ENOMEM. */
int objfs_fs_metrics_attach(struct objfs_fs *fs, struct objfs_metrics *reg);
const struct fuse_lowlevel_ops *objfs_fs_metered_ops(void);
/* Lets the fs send invalidations through se (not owned). */
void objfs_fs_set_session(struct objfs_fs *fs, struct fuse_session *se);
/* Makes the mount resumable (issue 12): what a successor needs is kept in
 * the state directory dir from now on; when resume, the state a dead
 * server left there is loaded first (before objfs_fs_start() and the
 * session).  0 or an errno. */
int objfs_fs_state_start(struct objfs_fs *fs, const char *dir, bool resume);
/* For a mount that is not a successor, before objfs_fs_state_start(fs,
 * dir, false): when dir holds the log of a mount that died with its
 * keeper, saves the unsaved data it shows (src/fs/recover.c): each dirty
 * file is uploaded under its name, or, where that cannot be done (a store
 * error, its directory or object gone or changed meanwhile), its data is
 * kept in the spool directory as objfs-unsaved-PID-INO.N, logged as an
 * error naming the file and counted (objfs_fs_unsaved_files).  Uses the
 * store, no session and no workers; logs what it did.  0 (nothing in
 * dir, or every file saved or kept), or an errno: some data could be
 * neither, and stays in dir (do not start the state over it). */
int objfs_fs_recover(struct objfs_fs *fs, const char *dir);
/* Stops keeping state; when clean (everything saved, the mount ended)
 * the directory is removed. */
void objfs_fs_state_stop(struct objfs_fs *fs, bool clean);
/* A pointer the session's custom I/O hooks find again: libfuse gives them
 * the session's userdata, which is the fs (not owned). */
void objfs_fs_set_io_ctx(struct objfs_fs *fs, void *ctx);
void *objfs_fs_io_ctx(struct objfs_fs *fs);
/* The unique of the FUSE request this thread reads and then processes,
 * bit 63 set when the kernel sent it again (FUSE_NOTIFY_RESEND).  Set by
 * the session's custom read hook: libfuse 3.14 keeps a request's unique
 * private, so it goes through a thread-local variable (its worker thread
 * reads a request and processes it before reading the next). */
void objfs_fs_set_unique(uint64_t unique);
/* Test only: crash_at=OP (a point outside the FUSE operations, such as
 * the resumable mount's "init"): kills the process with SIGKILL, once per
 * state directory (after objfs_fs_state_start()). */
void objfs_fs_crash_point(struct objfs_fs *fs, const char *op);
/* Uploads every dirty file and waits for the deletes unlinks deferred
 * (remove.c).  The spool of a file that cannot be uploaded
 * is given a name in the spool directory (objfs-unsaved-PID-INO.N), which
 * is logged as an error, so that stopping the mount never drops unsaved
 * data silently.  0 or the first error. */
int objfs_fs_sync_all(struct objfs_fs *fs);
/* Files whose data this mount kept in the spool directory because it
 * could not be saved (at a close that had told the application so, or at
 * a stop; not those a dead mount left, logged when it started): a stop
 * with any is not clean. */
unsigned objfs_fs_unsaved_kept(struct objfs_fs *fs);

#endif
