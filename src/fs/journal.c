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
 * fs->st_dkeys counts them per key for compaction.
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/delq.h"
#include "common/errors.h"
#include "common/log.h"
#include "fs/fs_int.h"

#define LOG_COMPACT (16u << 20)

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

static size_t rec_inode(struct objfs_fs *fs, struct inode *in,
			struct srec_buf *b)
{
	const char *name = in->hl_data ? in->hl_id : in->name;
	size_t nl = name != NULL ? strlen(name) : 0;

	if (nl > sizeof(b->name))
		nl = sizeof(b->name);
	memset(&b->r, 0, sizeof(b->r));
	b->r.type = SR_INODE;
	b->r.flags = (in->dirty ? SF_DIRTY : 0) | (in->in_store ? SF_IN_STORE : 0) |
		     (in->seq ? SF_SEQ : 0) | (in->hl_data ? SF_HLINK : 0);
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
	ssize_t n = write(fs->st_fd, p, len);

	if (n != (ssize_t)len)
		objfs_error(fs->log, SUB, "state log: %s",
			    n < 0 ? objfs_strerror(errno) : "short write");
	else
		fs->st_bytes += len;
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

struct st_dkey {
	struct st_dkey *next;
	uint64_t n;             /* deferred, not yet done */
	char key[];
};

static unsigned dkey_hash(const char *k)
{
	unsigned h = 5381;

	for (; *k != '\0'; k++)
		h = h * 33 + (unsigned char)*k;
	return h % ST_DKEY_HASH;
}

/* Counts key deferred n times more, or done n times (fs->lock). */
static int dkey_count(struct objfs_fs *fs, const char *key, size_t kl,
		      uint64_t n, bool done)
{
	struct st_dkey **pp, *d;
	char k[OBJFS_KEY_MAX + 1];

	if (kl > OBJFS_KEY_MAX)
		return EPROTO;
	memcpy(k, key, kl);
	k[kl] = '\0';
	for (pp = &fs->st_dkeys[dkey_hash(k)]; *pp != NULL; pp = &(*pp)->next)
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

static void rec_delq(struct objfs_fs *fs, const char *key, uint64_t n,
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
		while (fs->st_dkeys[h] != NULL) {
			struct st_dkey *d = fs->st_dkeys[h];

			fs->st_dkeys[h] = d->next;
			free(d);
		}
	}
}

static int compact(struct objfs_fs *fs)
{
	struct srec_buf b;
	char path[4200], tmp[4200];
	unsigned h;
	struct hid *x;
	int fd, err = 0, old = fs->st_fd;
	uint64_t bytes = 0;

	snprintf(path, sizeof(path), "%s/log", fs->st_dir);
	snprintf(tmp, sizeof(tmp), "%s/log.new", fs->st_dir);
	fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	fs->st_fd = fd;
	fs->st_bytes = 0;
	memset(&b.r, 0, sizeof(b.r));
	b.r.len = sizeof(b.r);
	b.r.type = SR_NEXT;
	b.r.a = fs->next_ino;
	b.r.b = fs->next_hid;
	b.r.c = fs->next_spool;
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
	for (h = 0; h < fs->n_intents; h++) {
		memset(&b.r, 0, sizeof(b.r));
		b.r.len = sizeof(b.r);
		b.r.type = SR_INTENT;
		b.r.flags = fs->intents[h].done ? SF_DONE : 0;
		b.r.a = fs->intents[h].unique;
		b.r.b = (uint64_t)fs->intents[h].err;
		b.r.c = fs->intents[h].ino;
		b.r.d = fs->intents[h].hid;
		log_write(fs, &b, b.r.len);
	}
	for (h = 0; h < ST_DKEY_HASH; h++) {
		const struct st_dkey *d;

		for (d = fs->st_dkeys[h]; d != NULL; d = d->next)
			rec_delq(fs, d->key, d->n, false);
	}
	bytes = fs->st_bytes;
	if (rename(tmp, path) != 0) {
		err = errno;
		close(fd);
		fs->st_fd = old;
		return err;
	}
	if (old >= 0)
		close(old);
	fs->st_bytes = bytes;
	return 0;
}

/* Compacts a log grown past LOG_COMPACT (fs->lock), but not while a
 * stream runs: its parts are not under fs->lock (a compaction at start
 * writes the streams loaded). */
static void maybe_compact(struct objfs_fs *fs)
{
	if (fs->st_bytes < LOG_COMPACT || fs->n_streams > 0 ||
	    fs->st_bytes < 4 * (fs->n_inodes + 1) * (sizeof(struct srec) + 16))
		return;
	if (compact(fs) != 0)
		objfs_warn(fs->log, SUB, "compacting the state log failed");
}

void state_note(struct objfs_fs *fs, struct inode *in)
{
	struct srec_buf b;

	if (fs->st_fd < 0)
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

	if (fs->st_fd < 0)
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
	if (fs->st_fd < 0)
		return;
	pthread_mutex_lock(&fs->lock);
	rec_stream(fs, in->ino, st);
	if (st != NULL)
		fs->n_streams++;
	else if (fs->n_streams > 0)
		fs->n_streams--;
	pthread_mutex_unlock(&fs->lock);
}

void state_part(struct objfs_fs *fs, fuse_ino_t ino,
		const struct objfs_part *part, uint64_t len)
{
	if (fs->st_fd < 0)
		return;
	pthread_mutex_lock(&fs->lock);
	rec_part(fs, ino, part, len);
	pthread_mutex_unlock(&fs->lock);
}

void state_punch(struct objfs_fs *fs, struct inode *in, uint64_t off)
{
	if (fs->st_fd < 0)
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
	if (fs->st_fd < 0)
		return;
	pthread_mutex_lock(&fs->lock);
	*id = ++fs->next_spool;
	pthread_mutex_unlock(&fs->lock);
	snprintf(buf, cap, "%s/spool/%" PRIu64, fs->st_dir, *id);
}

void state_hid(struct objfs_fs *fs, const struct hid *h, bool open)
{
	struct srec r;

	if (fs->st_fd < 0)
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

/* ---- intents and test faults -------------------------------------------- */

/* Keeps an intent, loaded or recorded, in the table a compaction writes
 * (fs->lock): the last INTENTS_MAX. */
static void keep_intent(struct objfs_fs *fs, const struct srec *r)
{
	unsigned i;

	for (i = 0; i < fs->n_intents; i++) {
		if (fs->intents[i].unique == r->a)
			break;
	}
	if (i == fs->n_intents) {
		if (fs->n_intents == INTENTS_MAX) {
			memmove(fs->intents, fs->intents + 1,
				sizeof(fs->intents[0]) * (INTENTS_MAX - 1));
			i = INTENTS_MAX - 1;
		} else {
			fs->n_intents++;
		}
	}
	fs->intents[i].unique = r->a;
	fs->intents[i].err = (int)r->b;
	fs->intents[i].done = (r->flags & SF_DONE) != 0;
	fs->intents[i].ino = r->c;
	fs->intents[i].hid = r->d;
}

static void state_intent(struct objfs_fs *fs, const struct intent_ctx *ic,
			 bool done, int err)
{
	struct srec r;

	if (fs->st_fd < 0 || ic->unique == 0)
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
	keep_intent(fs, &r);    /* for a compaction */
	pthread_mutex_unlock(&fs->lock);
}

/* Sets ic from the loaded intent of ic->unique: true when it ended. */
static bool state_intent_done(struct objfs_fs *fs, struct intent_ctx *ic,
			      int *err)
{
	bool done = false;
	unsigned i;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < fs->n_intents; i++) {
		if (fs->intents[i].unique == ic->unique) {
			ic->begun = true;
			done = fs->intents[i].done;
			*err = fs->intents[i].err;
			ic->ino = fs->intents[i].ino;
			ic->hid = fs->intents[i].hid;
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

void state_crash_point(struct objfs_fs *fs, const char *op, const char *name)
{
	const char *c = fs->o.crash_at;
	char path[4200];
	size_t n = strlen(op);
	int fd;

	if (c == NULL || fs->st_dir == NULL || strncmp(c, op, n) != 0)
		return;
	if (name != NULL ? c[n] != ':' || strcmp(c + n + 1, name) != 0 :
	    c[n] != '\0')
		return;
	snprintf(path, sizeof(path), "%s/crashed", fs->st_dir);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return;         /* once: the successor runs the request */
	close(fd);
	objfs_warn(fs->log, SUB, "test fault: killed in the middle of %s%s%s",
		   op, name != NULL ? " of " : "", name != NULL ? name : "");
	kill(getpid(), SIGKILL);
}

/* ---- loading ------------------------------------------------------------ */

/* The inode numbered ino, made unlinked when unknown (fs->lock). */
static struct inode *load_inode(struct objfs_fs *fs, fuse_ino_t ino, mode_t mode,
				const char *name)
{
	struct inode *in = find_ino(fs, ino);
	fuse_ino_t next = fs->next_ino;

	if (in != NULL) {
		char *nn = strdup(name);

		if (nn == NULL)
			return NULL;
		free(in->name);
		in->name = nn;
		in->mode = mode;
		return in;
	}
	fs->next_ino = ino;
	in = inode_new(fs, NULL, name, mode);
	/* numbers of hard link sets are not the counter's (hardlink.c) */
	fs->next_ino = next > ino || ino >= HL_INO_BASE ? next : ino + 1;
	return in;
}

static void load_free(struct objfs_fs *fs, fuse_ino_t ino)
{
	struct inode *in = find_ino(fs, ino);

	if (in != NULL && in != fs->root) {
		in->dirty = false;
		inode_free(fs, in);
	}
}

static int load_spool(struct objfs_fs *fs, struct inode *in, uint64_t id)
{
	char path[4200];
	int err;

	snprintf(path, sizeof(path), "%s/spool/%" PRIu64, fs->st_dir, id);
	err = objfs_spool_open_named(path, &in->spool);
	if (err != 0) {
		objfs_error(fs->log, SUB, "state: spool %s of inode %" PRIu64
			    ": %s", path, (uint64_t)in->ino, objfs_strerror(err));
		in->dirty = false;
		return err;
	}
	in->spool_id = id;
	in->size = in->spool->size;
	in->spool_disk = objfs_spool_disk(in->spool);
	fs->spool_used += in->spool_disk;
	return 0;
}

/* Applies one record (fs->lock). */
static int load_rec(struct objfs_fs *fs, const struct srec *r, const char *name,
		    size_t nl, struct hid **opens, size_t *n_opens)
{
	char nm[LINK_MAX_LEN + 1];
	struct inode *in;
	struct hid *h;

	switch (r->type) {
	case SR_INODE:
		if (r->a == FUSE_ROOT_ID)
			return 0;
		memcpy(nm, name, nl);
		nm[nl] = '\0';
		in = load_inode(fs, r->a, r->mode, nm);
		if (in == NULL)
			return ENOMEM;
		in->uid = r->uid;
		in->gid = r->gid;
		in->load_parent = r->b;
		in->nlookup = r->c;
		in->dirty = (r->flags & SF_DIRTY) != 0;
		in->in_store = (r->flags & SF_IN_STORE) != 0;
		in->seq = (r->flags & SF_SEQ) != 0;
		in->spool_id = r->d;
		in->size = r->size;
		in->load_times = false;
		in->times_set = false;
		if (hl_load(fs, in, (r->flags & SF_HLINK) ? nm : NULL) != 0)
			return ENOMEM;
		break;
	case SR_TIMES:
		in = find_ino(fs, r->a);
		if (in == NULL)
			break;
		in->mtime.tv_sec = (time_t)r->b;
		in->mtime.tv_nsec = (long)r->c;
		in->ctime.tv_sec = (time_t)r->d;
		in->ctime.tv_nsec = (long)r->size;
		in->load_times = true;
		in->times_set = true;
		break;
	case SR_FREE:
		load_free(fs, r->a);
		break;
	case SR_NEXT:
		if (r->a > fs->next_ino)
			fs->next_ino = r->a;
		if (r->b > fs->next_hid)
			fs->next_hid = r->b;
		if (r->c > fs->next_spool)
			fs->next_spool = r->c;
		break;
	case SR_OPEN:
		h = calloc(1, sizeof(*h));
		if (h == NULL)
			return ENOMEM;
		h->id = r->a;
		h->ino = r->b;
		h->dir = (r->flags & SF_DIR) != 0;
		h->next = *opens;
		*opens = h;
		(*n_opens)++;
		if (r->a > fs->next_hid)
			fs->next_hid = r->a;
		break;
	case SR_INTENT:
		keep_intent(fs, r);
		break;
	case SR_STREAM:
		in = find_ino(fs, r->a);
		if (in == NULL)
			break;
		if (r->flags & SF_DONE) {
			stream_free(in->stream);
			in->stream = NULL;
		} else {
			struct objfs_fattr fa = { r->mode, r->uid, r->gid, { 0, 0 },
						  0, { 0, -1 }, { 0, -1 } };
			size_t kl;

			memcpy(nm, name, nl);
			nm[nl] = '\0';
			kl = strlen(nm);
			if (kl >= nl)
				return EPROTO;
			return stream_load(fs, in, nm, nm + kl + 1, &fa);
		}
		break;
	case SR_PART:
		in = find_ino(fs, r->a);
		/* whole parts only: a tail is sent again */
		if (in == NULL || in->stream == NULL || r->b == 0 ||
		    r->b > OBJFS_MPU_MAX_PARTS || r->c != fs->o.part_size ||
		    nl >= OBJFS_ETAG_MAX)
			break;
		in->stream->parts[r->b - 1].number = (unsigned)r->b;
		memcpy(in->stream->parts[r->b - 1].etag, name, nl);
		in->stream->parts[r->b - 1].etag[nl] = '\0';
		break;
	case SR_PUNCH:
		in = find_ino(fs, r->a);
		if (in != NULL && in->stream != NULL)
			in->stream->punched = r->b;
		break;
	case SR_DELQ:
		return dkey_count(fs, name, nl, r->a > 0 ? r->a : 1,
				  (r->flags & SF_DONE) != 0);
	case SR_CLOSE:
		for (struct hid **pp = opens; *pp != NULL;
		     pp = &(*pp)->next) {
			if ((*pp)->id == r->a) {
				h = *pp;
				*pp = h->next;
				free(h);
				(*n_opens)--;
				break;
			}
		}
		break;
	default:
		return EPROTO;
	}
	return 0;
}

/* Links the loaded inodes under their parents, opens their spools
 * (fs->lock). */
static void load_link(struct objfs_fs *fs)
{
	unsigned h;
	struct inode *in;

	for (h = 0; h < HASH_SIZE; h++) {
		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next) {
			struct inode *p;

			if (in->load_parent == 0)
				continue;
			p = find_ino(fs, in->load_parent);
			in->load_parent = 0;
			in->load_orphan = p == NULL || p == in;
			if (in->load_orphan)
				continue;
			in->parent = p;
			in->linked = true;
			p->refs++;
			name_hash(fs, in);
			sib_link(p, in);
		}
	}
	for (h = 0; h < HASH_SIZE; h++) {
		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next) {
			in->attr_time = 0;      /* revalidated when asked */
			if (!in->load_times)
				in->mtime = in->ctime = now_real();
			in->load_times = false;
			if (in->spool_id != 0 && load_spool(fs, in, in->spool_id) != 0)
				in->spool_id = 0;
			if (in->spool == NULL)
				in->dirty = false;
			if (in->in_store)
				in->stored_size = in->size;
			stream_load_done(fs, in);
			if (in->stream != NULL) {
				fs->n_streams++;
				objfs_info(fs->log, SUB, "state: inode %" PRIu64
					   " goes on with its upload after %u "
					   "parts", (uint64_t)in->ino,
					   in->stream->n_parts);
			}
		}
	}
}

/* Makes the handles the kernel has open (fs->lock not held). */
static void load_handles(struct objfs_fs *fs, struct hid *opens)
{
	while (opens != NULL) {
		struct hid *h = opens;
		struct inode *in;

		opens = h->next;
		in = pin_ino(fs, h->ino);
		if (in == NULL) {
			objfs_warn(fs->log, SUB, "state: handle %" PRIu64 " of an "
				   "unknown inode %" PRIu64, h->id, (uint64_t)h->ino);
		} else if (h->dir) {
			struct dhandle *dh = dh_new(fs);

			if (dh != NULL) {
				dh->hid = *h;
				pthread_mutex_lock(&fs->hid_mu);
				hid_insert(fs, &dh->hid);
				pthread_mutex_unlock(&fs->hid_mu);
			}
		} else {
			struct fhandle *fh = fh_new(fs, in);

			if (fh != NULL) {
				bool clean;

				fh->hid = *h;
				pthread_mutex_lock(&fs->lock);
				in->nopen++;
				fh_link(fs, fh);
				clean = in->spool == NULL;
				pthread_mutex_unlock(&fs->lock);
				pthread_mutex_lock(&fs->hid_mu);
				hid_insert(fs, &fh->hid);
				pthread_mutex_unlock(&fs->hid_mu);
				if (clean && revalidate(fs, in, true) == 0) {
					pthread_mutex_lock(&fs->lock);
					snprintf(in->cache_etag, sizeof(in->cache_etag),
						 "%s", in->etag);
					pthread_mutex_unlock(&fs->lock);
				}
			}
		}
		unpin(fs, in);
		free(h);
	}
}

static int load(struct objfs_fs *fs, const char *path)
{
	struct hid *opens = NULL;
	size_t n_opens = 0, off = 0, n_rec = 0;
	struct stat st;
	char *buf = NULL;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : errno;
	if (fstat(fd, &st) != 0) {
		err = errno;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		err = ENOMEM;
		goto out;
	}
	if (read(fd, buf, (size_t)st.st_size) != st.st_size) {
		err = EIO;
		goto out;
	}
	pthread_mutex_lock(&fs->lock);
	while (err == 0 && off + sizeof(struct srec) <= (size_t)st.st_size) {
		struct srec r;

		memcpy(&r, buf + off, sizeof(r));
		if (r.len < sizeof(r) || off + r.len > (size_t)st.st_size ||
		    r.len - sizeof(r) > LINK_MAX_LEN)
			break;  /* a torn last record */
		err = load_rec(fs, &r, buf + off + sizeof(r), r.len - sizeof(r),
			       &opens, &n_opens);
		off += r.len;
		n_rec++;
	}
	if (err == 0)
		load_link(fs);
	pthread_mutex_unlock(&fs->lock);
	if (err == 0) {
		objfs_info(fs->log, SUB, "state: %zu records, %" PRIu64 " inodes, "
			   "%zu open handles loaded", n_rec, fs->n_inodes, n_opens);
		load_handles(fs, opens);
		opens = NULL;
	}
out:
	while (opens != NULL) {
		struct hid *h = opens;

		opens = h->next;
		free(h);
	}
	free(buf);
	close(fd);
	return err;
}

void state_delq(struct objfs_fs *fs, const char *key, bool done)
{
	pthread_mutex_lock(&fs->lock);
	if (fs->st_fd >= 0 && fs->st_delq &&
	    dkey_count(fs, key, strlen(key), 1, done) == 0) {
		rec_delq(fs, key, 1, done);
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

static void delq_done(void *arg, const char *key, int err)
{
	(void)err;      /* a failed one is visible again: nothing to redo */
	state_delq(arg, key, true);
}

/* Queues again the deletes a dead server deferred and did not see done. */
static void requeue(struct objfs_fs *fs)
{
	size_t n = 0, i;
	char **keys = NULL;
	uint64_t *times = NULL;
	unsigned h;

	pthread_mutex_lock(&fs->lock);
	for (h = 0; h < ST_DKEY_HASH; h++)
		for (const struct st_dkey *d = fs->st_dkeys[h]; d != NULL; d = d->next)
			n++;
	keys = calloc(n + 1, sizeof(*keys));
	times = calloc(n + 1, sizeof(*times));
	n = 0;
	for (h = 0; h < ST_DKEY_HASH && keys != NULL && times != NULL; h++) {
		for (const struct st_dkey *d = fs->st_dkeys[h]; d != NULL; d = d->next) {
			keys[n] = strdup(d->key);
			times[n] = d->n;
			if (keys[n] != NULL)
				n++;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	if (n > 0)
		objfs_info(fs->log, SUB, "state: %zu deletes the last server "
			   "deferred queued again", n);
	for (i = 0; i < n; i++) {
		/* a key deleted again is deleted once, however many of its
		 * deletes were deferred (a count in the log is not a loop
		 * bound: a log is a file a successor trusts only so far) */
		int err = objfs_store_del_deferred(fs->store, keys[i]);
		uint64_t now_done = times[i];

		if (err != 0)
			objfs_warn(fs->log, SUB, "deleting \"%s\" again: %s",
				   keys[i], objfs_strerror(err));
		/* done already, but the one the store tells of */
		if (err == 0 && fs->st_delq)
			now_done--;
		pthread_mutex_lock(&fs->lock);
		if (now_done > 0) {
			dkey_count(fs, keys[i], strlen(keys[i]), now_done, true);
			rec_delq(fs, keys[i], now_done, true);
		}
		pthread_mutex_unlock(&fs->lock);
		free(keys[i]);
	}
	free(keys);
	free(times);
}

int state_start(struct objfs_fs *fs, const char *dir, bool resume)
{
	char path[4200];
	int err;

	fs->st_dir = strdup(dir);
	if (fs->st_dir == NULL)
		return ENOMEM;
	snprintf(path, sizeof(path), "%s/spool", dir);
	if ((mkdir(dir, 0700) != 0 && errno != EEXIST) ||
	    (mkdir(path, 0700) != 0 && errno != EEXIST)) {
		err = errno;
		objfs_error(fs->log, SUB, "state directory %s: %s", dir,
			    objfs_strerror(err));
		return err;
	}
	snprintf(path, sizeof(path), "%s/log", dir);
	if (resume) {
		err = load(fs, path);
		if (err != 0) {
			objfs_error(fs->log, SUB, "loading %s: %s", path,
				    objfs_strerror(err));
			return err;
		}
	}
	pthread_mutex_lock(&fs->lock);
	err = compact(fs);
	pthread_mutex_unlock(&fs->lock);
	if (err != 0) {
		objfs_error(fs->log, SUB, "writing %s: %s", path, objfs_strerror(err));
		return err;
	}
	/* with the store's word on each deferred delete, or none: deletes
	 * are synchronous there */
	if (objfs_delq_set_done(fs->store, delq_done, fs) == 0) {
		pthread_mutex_lock(&fs->lock);
		fs->st_delq = true;
		pthread_mutex_unlock(&fs->lock);
	}
	requeue(fs);
	return 0;
}

void state_stop(struct objfs_fs *fs, bool clean)
{
	char path[4200];

	(void)objfs_delq_set_done(fs->store, NULL, NULL);
	dkeys_free(fs);

	if (fs->st_fd >= 0)
		close(fs->st_fd);
	fs->st_fd = -1;
	if (clean && fs->st_dir != NULL) {
		snprintf(path, sizeof(path), "%s/log", fs->st_dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/crashed", fs->st_dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/spool", fs->st_dir);
		rmdir(path);
		rmdir(fs->st_dir);
	}
}
