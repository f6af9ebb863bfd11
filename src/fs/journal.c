/*
 * journal.c - the resume journal: what a successor needs to go on
 * serving a mount whose server died (issue 12), in the mount's state
 * directory:
 *
 *   log       append-only records, one write(2) each, made under
 *             fs->lock before the reply that tells the kernel: the inode
 *             table the kernel knows (number, parent, name, nlookup, mode,
 *             spool, dirty; times set on dirty files), inodes gone,
 *             handles opened and closed, the multipart uploads of
 *             sequential writers (begun, parts done, bytes punched from
 *             the spool, ended) so a successor goes on with them
 *   spool/N   the spools (named files with their journals, spool.c), so
 *             data write() accepted but not yet uploaded is uploaded by
 *             the successor
 *
 * No fsync: only the process dies, the page cache keeps the files (after
 * a crash of the machine the FUSE connection is gone as well).  The last
 * record of an inode wins.  A successor loads the log, links the inodes
 * under their parents, reopens spools and handles, and writes the
 * compacted table as a new log (rename: a successor that dies meanwhile
 * leaves the old one).  The log is compacted the same way when it grows
 * past LOG_COMPACT bytes and four times its live records.
 *
 * Deferred deletes (remove.c, backend/delq.c): a key an unlink queued is
 * recorded before the reply and again (SF_DONE) when the store's delq
 * layer is done with it; a successor queues again the keys not done.
 * fs->journal.dkeys counts them per key for compaction.
 *
 * Intents: rename, unlink, rmdir, mkdir, symlink, mknod, link and create are
 * not idempotent, and the kernel sends again a request the dead server ran
 * but did not answer.  Each is recorded when it starts and when it ends,
 * keyed by its unique, with its result (the errno, and the inode and
 * handle a create made); a successor answers a re-sent one that ended
 * with the recorded result (the same entry and handle: the kernel never
 * saw them), one that started and finds its source gone with success, and
 * one that started and finds the name it makes present with that name.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/delq.h"
#include "common/errors.h"
#include "common/log.h"
#include "fs/fs_int.h"
#include "fs/journal_fmt.h"

#define LOG_COMPACT (16u << 20)

static size_t rec_inode(struct objfs_fs *fs, struct inode *in,
			struct srec_buf *b)
{
	const char *name = in->hl.data ? in->hl.id : in->name;
	size_t nl = name != NULL ? strlen(name) : 0;

	if (nl > sizeof(b->name))
		nl = sizeof(b->name);
	memset(&b->r, 0, sizeof(b->r));
	b->r.type = SR_INODE;
	b->r.flags = (in->dirty ? SF_DIRTY : 0) | (in->in_store ? SF_IN_STORE : 0) |
		     (in->seq ? SF_SEQ : 0) | (in->hl.data ? SF_HLINK : 0);
	b->r.mode = in->mode;
	b->r.uid = in->uid;
	b->r.gid = in->gid;
	b->r.a = in->ino;
	b->r.b = in->linked && in->parent != NULL ? in->parent->ino : 0;
	b->r.c = in->nlookup;
	b->r.d = in->spool != NULL ? in->spool_id : 0;
	b->r.size = in->size;
	memcpy(b->name, name, nl);
	b->r.len = (uint32_t)(sizeof(b->r) + nl);
	(void)fs;
	return b->r.len;
}

static void log_write(struct objfs_fs *fs, const void *p, size_t len)
{
	ssize_t n = write(fs->journal.fd, p, len);

	if (n != (ssize_t)len)
		objfs_error(fs->log, SUB, "state log: %s",
			    n < 0 ? objfs_strerror(errno) : "short write");
	else
		fs->journal.bytes += len;
}

/* The times of in (utimens on a file with unsaved data), after its
 * INODE record (fs->lock). */
static void rec_times(struct objfs_fs *fs, struct inode *in)
{
	struct srec r;

	memset(&r, 0, sizeof(r));
	r.len = sizeof(r);
	r.type = SR_TIMES;
	r.a = in->ino;
	r.b = (uint64_t)in->mtime.tv_sec;
	r.c = (uint64_t)in->mtime.tv_nsec;
	r.d = (uint64_t)in->ctime.tv_sec;
	r.size = (uint64_t)in->ctime.tv_nsec;
	log_write(fs, &r, sizeof(r));
}

/* The records of a stream: begun (st) or ended (NULL) (fs->lock). */
static void rec_stream(struct objfs_fs *fs, fuse_ino_t ino,
		       const struct stream *st)
{
	struct srec_buf b;
	size_t kl = 0, ul = 0;

	memset(&b.r, 0, sizeof(b.r));
	b.r.type = SR_STREAM;
	b.r.a = ino;
	if (st == NULL) {
		b.r.flags = SF_DONE;
	} else {
		kl = strlen(st->key);
		ul = strlen(st->upload_id);
		if (kl + 1 + ul > sizeof(b.name))
			return;         /* not resumable: sent again */
		b.r.mode = st->fa.mode;
		b.r.uid = st->fa.uid;
		b.r.gid = st->fa.gid;
		memcpy(b.name, st->key, kl + 1);
		memcpy(b.name + kl + 1, st->upload_id, ul);
		kl += 1 + ul;
	}
	b.r.len = (uint32_t)(sizeof(b.r) + kl);
	log_write(fs, &b, b.r.len);
}

static void rec_part(struct objfs_fs *fs, fuse_ino_t ino,
		     const struct objfs_part *part, uint64_t len)
{
	struct srec_buf b;
	size_t el = strlen(part->etag);

	memset(&b.r, 0, sizeof(b.r));
	b.r.type = SR_PART;
	b.r.a = ino;
	b.r.b = part->number;
	b.r.c = len;
	memcpy(b.name, part->etag, el);
	b.r.len = (uint32_t)(sizeof(b.r) + el);
	log_write(fs, &b, b.r.len);
}

static void rec_punch(struct objfs_fs *fs, fuse_ino_t ino, uint64_t off)
{
	struct srec r;

	memset(&r, 0, sizeof(r));
	r.len = sizeof(r);
	r.type = SR_PUNCH;
	r.a = ino;
	r.b = off;
	log_write(fs, &r, sizeof(r));
}

/* Writes the whole table as a new log and puts it in place (fs->lock;
 * no stream runs: see maybe_compact()). */
/* ---- deferred deletes --------------------------------------------------- */

static unsigned dkey_hash(const char *k)
{
	unsigned h = 5381;

	for (; *k != '\0'; k++)
		h = h * 33 + (unsigned char)*k;
	return h % ST_DKEY_HASH;
}

/* Counts key deferred n times more, or done n times (fs->lock). */
int journal_dkey_count(struct objfs_fs *fs, const char *key, size_t kl,
		       uint64_t n, bool done)
{
	struct st_dkey **pp, *d;
	char k[OBJFS_KEY_MAX + 1];

	if (kl > OBJFS_KEY_MAX)
		return EPROTO;
	memcpy(k, key, kl);
	k[kl] = '\0';
	for (pp = &fs->journal.dkeys[dkey_hash(k)]; *pp != NULL; pp = &(*pp)->next)
		if (strcmp((*pp)->key, k) == 0)
			break;
	d = *pp;
	if (done) {
		if (d != NULL) {
			d->n = d->n > n ? d->n - n : 0;
			if (d->n == 0) {
				*pp = d->next;
				free(d);
			}
		}
		return 0;
	}
	if (d == NULL) {
		d = calloc(1, sizeof(*d) + kl + 1);
		if (d == NULL)
			return ENOMEM;
		memcpy(d->key, k, kl + 1);
		*pp = d;
	}
	d->n += n;
	return 0;
}

void journal_rec_delq(struct objfs_fs *fs, const char *key, uint64_t n,
		      bool done)
{
	struct srec_buf b;
	size_t kl = strlen(key);

	memset(&b.r, 0, sizeof(b.r));
	b.r.type = SR_DELQ;
	b.r.flags = done ? SF_DONE : 0;
	b.r.a = n;
	memcpy(b.name, key, kl);
	b.r.len = (uint32_t)(sizeof(b.r) + kl);
	log_write(fs, &b, b.r.len);
}

static void dkeys_free(struct objfs_fs *fs)
{
	unsigned h;

	for (h = 0; h < ST_DKEY_HASH; h++) {
		while (fs->journal.dkeys[h] != NULL) {
			struct st_dkey *d = fs->journal.dkeys[h];

			fs->journal.dkeys[h] = d->next;
			free(d);
		}
	}
}

int journal_compact(struct objfs_fs *fs)
{
	struct srec_buf b;
	char path[4200], tmp[4200];
	unsigned h;
	struct hid *x;
	int fd, err = 0, old = fs->journal.fd;
	uint64_t bytes = 0;

	snprintf(path, sizeof(path), "%s/log", fs->journal.dir);
	snprintf(tmp, sizeof(tmp), "%s/log.new", fs->journal.dir);
	fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	fs->journal.fd = fd;
	fs->journal.bytes = 0;
	memset(&b.r, 0, sizeof(b.r));
	b.r.len = sizeof(b.r);
	b.r.type = SR_NEXT;
	b.r.a = fs->next_ino;
	b.r.b = fs->next_hid;
	b.r.c = fs->journal.next_spool;
	log_write(fs, &b, b.r.len);
	for (h = 0; h < HASH_SIZE; h++) {
		struct inode *in;

		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next) {
			const struct stream *st = in->stream;
			unsigned i;

			log_write(fs, &b, rec_inode(fs, in, &b));
			if (in->times_set && in->dirty)
				rec_times(fs, in);
			if (st == NULL || st->upload_id == NULL)
				continue;
			rec_stream(fs, in->ino, st);
			for (i = 0; i < st->n_parts; i++)
				rec_part(fs, in->ino, &st->parts[i],
					 fs->o.part_size);
			if (st->punched > 0)
				rec_punch(fs, in->ino, st->punched);
		}
	}
	pthread_mutex_lock(&fs->hid_mu);
	for (h = 0; h < HID_HASH; h++) {
		for (x = fs->hid_tab[h]; x != NULL; x = x->next) {
			memset(&b.r, 0, sizeof(b.r));
			b.r.len = sizeof(b.r);
			b.r.type = SR_OPEN;
			b.r.flags = x->dir ? SF_DIR : 0;
			b.r.a = x->id;
			b.r.b = x->ino;
			log_write(fs, &b, b.r.len);
		}
	}
	pthread_mutex_unlock(&fs->hid_mu);
	for (h = 0; h < fs->journal.n_intents; h++) {
		memset(&b.r, 0, sizeof(b.r));
		b.r.len = sizeof(b.r);
		b.r.type = SR_INTENT;
		b.r.flags = fs->journal.intents[h].done ? SF_DONE : 0;
		b.r.a = fs->journal.intents[h].unique;
		b.r.b = (uint64_t)fs->journal.intents[h].err;
		b.r.c = fs->journal.intents[h].ino;
		b.r.d = fs->journal.intents[h].hid;
		log_write(fs, &b, b.r.len);
	}
	for (h = 0; h < ST_DKEY_HASH; h++) {
		const struct st_dkey *d;

		for (d = fs->journal.dkeys[h]; d != NULL; d = d->next)
			journal_rec_delq(fs, d->key, d->n, false);
	}
	bytes = fs->journal.bytes;
	if (rename(tmp, path) != 0) {
		err = errno;
		close(fd);
		fs->journal.fd = old;
		return err;
	}
	if (old >= 0)
		close(old);
	fs->journal.bytes = bytes;
	return 0;
}

/* Compacts a log grown past LOG_COMPACT (fs->lock), but not while a
 * stream runs: its parts are not under fs->lock (a compaction at start
 * writes the streams loaded). */
static void maybe_compact(struct objfs_fs *fs)
{
	if (fs->journal.bytes < LOG_COMPACT || fs->journal.n_streams > 0 ||
	    fs->journal.bytes < 4 * (fs->n_inodes + 1) * (sizeof(struct srec) + 16))
		return;
	if (journal_compact(fs) != 0)
		objfs_warn(fs->log, SUB, "compacting the state log failed");
}

void state_note(struct objfs_fs *fs, struct inode *in)
{
	struct srec_buf b;

	if (fs->journal.fd < 0)
		return;
	fs_assert_locked(fs);
	log_write(fs, &b, rec_inode(fs, in, &b));
	if (in->times_set && in->dirty)
		rec_times(fs, in);
	maybe_compact(fs);
}

void state_gone(struct objfs_fs *fs, struct inode *in)
{
	struct srec r;

	if (fs->journal.fd < 0)
		return;
	memset(&r, 0, sizeof(r));
	r.len = sizeof(r);
	r.type = SR_FREE;
	r.a = in->ino;
	log_write(fs, &r, sizeof(r));
}

void state_stream(struct objfs_fs *fs, struct inode *in,
		  const struct stream *st)
{
	if (fs->journal.fd < 0)
		return;
	pthread_mutex_lock(&fs->lock);
	rec_stream(fs, in->ino, st);
	if (st != NULL)
		fs->journal.n_streams++;
	else if (fs->journal.n_streams > 0)
		fs->journal.n_streams--;
	pthread_mutex_unlock(&fs->lock);
}

void state_part(struct objfs_fs *fs, fuse_ino_t ino,
		const struct objfs_part *part, uint64_t len)
{
	if (fs->journal.fd < 0)
		return;
	pthread_mutex_lock(&fs->lock);
	rec_part(fs, ino, part, len);
	pthread_mutex_unlock(&fs->lock);
}

void state_punch(struct objfs_fs *fs, struct inode *in, uint64_t off)
{
	if (fs->journal.fd < 0)
		return;
	pthread_mutex_lock(&fs->lock);
	rec_punch(fs, in->ino, off);
	pthread_mutex_unlock(&fs->lock);
}

void state_spool_path(struct objfs_fs *fs, char *buf, size_t cap,
		      uint64_t *id)
{
	*id = 0;
	buf[0] = '\0';
	if (fs->journal.fd < 0)
		return;
	pthread_mutex_lock(&fs->lock);
	/* never the number of a spool on disk: one a dead server made after
	 * its last record holds bytes recovery may still need */
	do {
		*id = ++fs->journal.next_spool;
		snprintf(buf, cap, "%s/spool/%" PRIu64, fs->journal.dir, *id);
	} while (access(buf, F_OK) == 0);
	pthread_mutex_unlock(&fs->lock);
}

void state_hid(struct objfs_fs *fs, const struct hid *h, bool open)
{
	struct srec r;

	if (fs->journal.fd < 0)
		return;
	memset(&r, 0, sizeof(r));
	r.len = sizeof(r);
	r.type = open ? SR_OPEN : SR_CLOSE;
	r.flags = h->dir ? SF_DIR : 0;
	r.a = h->id;
	r.b = h->ino;
	pthread_mutex_lock(&fs->lock);
	log_write(fs, &r, sizeof(r));
	pthread_mutex_unlock(&fs->lock);
}

/* ---- intents -------------------------------------------- */

/* Keeps an intent, loaded or recorded, in the table a compaction writes
 * (fs->lock): the last INTENTS_MAX. */
void journal_keep_intent(struct objfs_fs *fs, const struct srec *r)
{
	unsigned i;

	for (i = 0; i < fs->journal.n_intents; i++) {
		if (fs->journal.intents[i].unique == r->a)
			break;
	}
	if (i == fs->journal.n_intents) {
		if (fs->journal.n_intents == INTENTS_MAX) {
			memmove(fs->journal.intents, fs->journal.intents + 1,
				sizeof(fs->journal.intents[0]) * (INTENTS_MAX - 1));
			i = INTENTS_MAX - 1;
		} else {
			fs->journal.n_intents++;
		}
	}
	fs->journal.intents[i].unique = r->a;
	fs->journal.intents[i].err = (int)r->b;
	fs->journal.intents[i].done = (r->flags & SF_DONE) != 0;
	fs->journal.intents[i].ino = r->c;
	fs->journal.intents[i].hid = r->d;
}

static void state_intent(struct objfs_fs *fs, const struct intent_ctx *ic,
			 bool done, int err)
{
	struct srec r;

	if (fs->journal.fd < 0 || ic->unique == 0)
		return;
	memset(&r, 0, sizeof(r));
	r.len = sizeof(r);
	r.type = SR_INTENT;
	r.flags = done ? SF_DONE : 0;
	r.a = ic->unique;
	r.b = (uint64_t)err;
	r.c = done ? ic->ino : 0;
	r.d = done ? ic->hid : 0;
	pthread_mutex_lock(&fs->lock);
	log_write(fs, &r, sizeof(r));
	journal_keep_intent(fs, &r);    /* for a compaction */
	pthread_mutex_unlock(&fs->lock);
}

/* Sets ic from the loaded intent of ic->unique: true when it ended. */
static bool state_intent_done(struct objfs_fs *fs, struct intent_ctx *ic,
			      int *err)
{
	bool done = false;
	unsigned i;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < fs->journal.n_intents; i++) {
		if (fs->journal.intents[i].unique == ic->unique) {
			ic->begun = true;
			done = fs->journal.intents[i].done;
			*err = fs->journal.intents[i].err;
			ic->ino = fs->journal.intents[i].ino;
			ic->hid = fs->journal.intents[i].hid;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return done;
}

bool intent_start(struct objfs_fs *fs, struct intent_ctx *ic, int *err)
{
	uint64_t u = req_unique();

	ic->unique = u & ~UNIQUE_RESEND;
	ic->begun = false;
	ic->ino = 0;
	ic->hid = 0;
	if ((u & UNIQUE_RESEND) && state_intent_done(fs, ic, err))
		return true;
	ic->ino = 0;
	ic->hid = 0;
	state_intent(fs, ic, false, 0);
	return false;
}

void intent_end(struct objfs_fs *fs, const struct intent_ctx *ic, int *err,
		int gone)
{
	if (ic->begun && *err == gone)
		*err = 0;
	state_intent(fs, ic, true, *err);
}

void state_delq(struct objfs_fs *fs, const char *key, bool done)
{
	pthread_mutex_lock(&fs->lock);
	if (fs->journal.fd >= 0 && fs->journal.delq &&
	    journal_dkey_count(fs, key, strlen(key), 1, done) == 0) {
		journal_rec_delq(fs, key, 1, done);
		maybe_compact(fs);
	}
	pthread_mutex_unlock(&fs->lock);
}

int del_later(struct objfs_fs *fs, const char *key)
{
	int err;

	state_delq(fs, key, false);
	err = objfs_store_del_deferred(fs->store, key);
	if (err != 0)
		state_delq(fs, key, true);
	return err;
}

void state_stop(struct objfs_fs *fs, bool clean)
{
	char path[4200];

	(void)objfs_delq_set_done(fs->store, NULL, NULL);
	dkeys_free(fs);

	if (fs->journal.fd >= 0)
		close(fs->journal.fd);
	fs->journal.fd = -1;
	if (clean && fs->journal.dir != NULL) {
		snprintf(path, sizeof(path), "%s/log", fs->journal.dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/crashed", fs->journal.dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/spool", fs->journal.dir);
		rmdir(path);
		rmdir(fs->journal.dir);
	}
}
