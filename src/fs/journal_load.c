/*
 * journal_load.c - the resume journal read back: a successor (or
 * recover.c's temporary filesystem, through objfs_fs_state_start(resume))
 * loads the log a dead server left in the state directory (journal.h's
 * records, journal.c writes them), links the inodes under their parents,
 * reopens their spools, the handles the kernel has open and the
 * multipart uploads, queues again the deletes it had deferred, and starts
 * a compacted log of its own (state_start()).
 *
 * A log is a file a successor trusts only so far: a torn last record
 * ends it, a record that does not parse fails the load (EPROTO), and no
 * count read from it bounds a loop.
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
#include "fs/ops.h"
#include "fs/journal_fmt.h"

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

	snprintf(path, sizeof(path), "%s/spool/%" PRIu64, fs->journal.dir, id);
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
		/* a spool made since the last compaction is in no NEXT
		 * record: a new spool must not take its number */
		if (r->d > fs->journal.next_spool)
			fs->journal.next_spool = r->d;
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
		if (r->c > fs->journal.next_spool)
			fs->journal.next_spool = r->c;
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
		journal_keep_intent(fs, r);
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
		return journal_dkey_count(fs, name, nl, r->a > 0 ? r->a : 1,
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
				fs->journal.n_streams++;
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

/* ---- start ------------------------------------------------------------- */

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
		for (const struct st_dkey *d = fs->journal.dkeys[h]; d != NULL; d = d->next)
			n++;
	keys = calloc(n + 1, sizeof(*keys));
	times = calloc(n + 1, sizeof(*times));
	n = 0;
	for (h = 0; h < ST_DKEY_HASH && keys != NULL && times != NULL; h++) {
		for (const struct st_dkey *d = fs->journal.dkeys[h]; d != NULL; d = d->next) {
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
		if (err == 0 && fs->journal.delq)
			now_done--;
		pthread_mutex_lock(&fs->lock);
		if (now_done > 0) {
			journal_dkey_count(fs, keys[i], strlen(keys[i]),
					   now_done, true);
			journal_rec_delq(fs, keys[i], now_done, true);
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

	fs->journal.dir = strdup(dir);
	if (fs->journal.dir == NULL)
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
	err = journal_compact(fs);
	pthread_mutex_unlock(&fs->lock);
	if (err != 0) {
		objfs_error(fs->log, SUB, "writing %s: %s", path, objfs_strerror(err));
		return err;
	}
	/* with the store's word on each deferred delete, or none: deletes
	 * are synchronous there */
	if (objfs_delq_set_done(fs->store, delq_done, fs) == 0) {
		pthread_mutex_lock(&fs->lock);
		fs->journal.delq = true;
		pthread_mutex_unlock(&fs->lock);
	}
	requeue(fs);
	return 0;
}
