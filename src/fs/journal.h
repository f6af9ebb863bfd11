/*
 * journal.h - the resume journal (journal.c writes it, journal_load.c
 * reads it back): its state, embedded in the filesystem as fs->journal,
 * and the functions the files of src/fs call to record what a successor
 * needs.  Included by fs_int.h; the log's format is journal_fmt.h.
 */
#ifndef OBJFS_FS_JOURNAL_H
#define OBJFS_FS_JOURNAL_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INTENTS_MAX 64
#define ST_DKEY_HASH 4096

struct objfs_fs;
struct objfs_part;
struct inode;
struct stream;
struct hid;

/* A resumable mount's journal (fs->journal). */
struct fs_resume {
	int fd;                         /* the state log (fs->lock); < 0:
					   not resumable */
	char *dir;                      /* the state directory */
	uint64_t bytes;                 /* the log's size (fs->lock) */
	uint64_t next_spool;            /* fs->lock */
	unsigned n_streams;             /* fs->lock: uploads streaming */
	struct intent {                 /* the last ones, loaded or run */
		uint64_t unique;
		int err;
		bool done;
		fuse_ino_t ino;         /* the entry it made, or 0 */
		uint64_t hid;           /* the handle it opened, or 0 */
	} intents[INTENTS_MAX];
	unsigned n_intents;             /* fs->lock */
	/* deferred deletes not yet done, by key (fs->lock; journal.c) */
	struct st_dkey *dkeys[ST_DKEY_HASH];
	bool delq;                      /* the store tells when one is done */
};

/* ---- journal.c: what a successor needs (resumable mounts) ---- */

/* Closes the log; when clean (everything uploaded, the mount ended), the
 * directory is removed.  No lock; after the session. */
void state_stop(struct objfs_fs *fs, bool clean);
/* Records a key deferred by del_later() (done false, before the reply) or
 * done with (the store's callback).  Takes fs->lock. */
void state_delq(struct objfs_fs *fs, const char *key, bool done);
/* Deletes key later (objfs_store_del_deferred), written to the state log
 * first for a successor.  0 or an errno.  No lock held. */
int del_later(struct objfs_fs *fs, const char *key);
/* Records what the kernel and a successor need of in (name, parent,
 * nlookup, mode, owner, size, spool, dirty, and the times when
 * in->times_set) / that in is gone.  Nothing when not resumable.
 * fs->lock held. */
void state_note(struct objfs_fs *fs, struct inode *in);
void state_gone(struct objfs_fs *fs, struct inode *in);
/* Where a new spool goes: "" when not resumable (an unlinked file in the
 * spool directory), else a path in the state directory; *id for
 * in->spool_id.  Takes fs->lock. */
void state_spool_path(struct objfs_fs *fs, char *buf, size_t cap,
		      uint64_t *id);
/* The multipart upload of a sequential writer (writeback.c): st begun
 * (NULL: ended, completed or aborted) / one of its parts done, of len
 * bytes / its bytes before off about to leave the spool (only the parts
 * hold them).  A successor goes on with the upload.  Nothing when not
 * resumable.  Take fs->lock. */
void state_stream(struct objfs_fs *fs, struct inode *in,
		  const struct stream *st);
void state_part(struct objfs_fs *fs, fuse_ino_t ino,
		const struct objfs_part *part, uint64_t len);
void state_punch(struct objfs_fs *fs, struct inode *in, uint64_t off);
/* Records the handle h opened (open) or closed (handles.c).  Nothing when
 * not resumable.  Takes fs->lock. */
void state_hid(struct objfs_fs *fs, const struct hid *h, bool open);

/* A request that must not run twice (rename, unlink, rmdir, mkdir,
 * symlink, mknod, link, create), this thread's (req_unique()).  intent_start()
 * records its start; true when the kernel sent it again and it had ended
 * before the server died: *err is the answer it got, ic->ino and ic->hid
 * the entry and handle it made (0: none).  intent_end() records the end
 * with *err and the caller's ic->ino and ic->hid; a re-sent request that
 * had begun and finds its object gone (*err == gone) had run, and *err
 * becomes 0.  Take fs->lock. */
struct intent_ctx {
	uint64_t unique;                /* without UNIQUE_RESEND */
	bool begun;                     /* re-sent, and it had started */
	fuse_ino_t ino;                 /* the entry made (mkdir, create...) */
	uint64_t hid;                   /* the handle opened (create) */
};
bool intent_start(struct objfs_fs *fs, struct intent_ctx *ic, int *err);
void intent_end(struct objfs_fs *fs, const struct intent_ctx *ic, int *err,
		int gone);

/* ---- journal_load.c: the journal read back ---- */

/* Opens the state directory dir (made if need be) and its log; when
 * resume, first loads the inode table, open handles and spools a dead
 * server left there (the store must work: open files are revalidated).
 * 0 or an errno.  No lock; before the session serves. */
int state_start(struct objfs_fs *fs, const char *dir, bool resume);

#endif
