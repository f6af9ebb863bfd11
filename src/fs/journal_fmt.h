/*
 * journal_fmt.h - the resume journal's log format, shared by its writer
 * (journal.c) and its loader (journal_load.c); nothing else reads it.
 *
 * STATE_DIR/log holds records of struct srec, each followed by its name
 * (without its NUL); the last record of an inode wins.
 */
#ifndef OBJFS_FS_JOURNAL_FMT_H
#define OBJFS_FS_JOURNAL_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fs_int.h"

enum { SR_INODE = 1, SR_FREE, SR_OPEN, SR_CLOSE, SR_NEXT, SR_INTENT,
       SR_TIMES, SR_STREAM, SR_PART, SR_PUNCH, SR_DELQ };
enum { SF_DIRTY = 1, SF_IN_STORE = 2, SF_SEQ = 4, SF_DIR = 8, SF_DONE = 16,
       SF_HLINK = 32 };

struct srec {
	uint32_t len;           /* the whole record, name included */
	uint16_t type;
	uint16_t flags;
	uint32_t mode, uid, gid, pad;
	uint64_t size;          /* INODE: the size when recorded */
	uint64_t a, b, c, d;    /* INODE: ino, parent (0: unlinked),
				   nlookup, spool id; FREE: ino; OPEN: id,
				   ino; CLOSE: id; NEXT: next_ino, next_hid,
				   next_spool; INTENT: unique, errno, ino,
				   handle id; TIMES (after the INODE record
				   of an inode whose mtime utimens set;
				   SF_HLINK: the data inode of a hard
				   link set, the name its id):
				   ino, mtime s, ns, ctime s (size: ns);
				   STREAM: ino (mode, uid, gid: those sent
				   at its start; name: key, NUL, upload id;
				   SF_DONE: ended); PART: ino, number, bytes
				   (name: ETag); PUNCH: ino, bytes only the
				   parts hold; DELQ: times deferred, 0
				   meaning 1 (name: the key; SF_DONE:
				   once done with) */
	/* the name follows, without its NUL */
};

struct srec_buf {
	struct srec r;
	char name[LINK_MAX_LEN];
};

/* A key deferred (del_later()) and not yet done, counted for compaction
 * (fs->journal.dkeys, fs->lock). */
struct st_dkey {
	struct st_dkey *next;
	uint64_t n;             /* deferred, not yet done */
	char key[];
};

/* Keeps an intent, loaded or recorded, in the table a compaction writes:
 * the last INTENTS_MAX.  fs->lock held. */
void journal_keep_intent(struct objfs_fs *fs, const struct srec *r);
/* Counts key (kl bytes) deferred n times more, or done n times.  0,
 * EPROTO (too long) or ENOMEM.  fs->lock held. */
int journal_dkey_count(struct objfs_fs *fs, const char *key, size_t kl,
		       uint64_t n, bool done);
/* Appends a DELQ record: key deferred n times, or done.  fs->lock held. */
void journal_rec_delq(struct objfs_fs *fs, const char *key, uint64_t n,
		      bool done);
/* Writes the whole table as a new log and puts it in place.  0 or an
 * errno.  fs->lock held; no stream runs. */
int journal_compact(struct objfs_fs *fs);

#endif
