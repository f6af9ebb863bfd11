/*
 * recover.c - the unsaved data a dead resumable mount left in its state
 * directory, saved by the next mount of that directory that is not its
 * successor (issue 29: "nothing unsaved dropped").
 *
 * A keeper killed with its servers (kill -9, OOM, a node plugin's
 * restart) leaves STATE_DIR/log and the spools STATE_DIR/spool/N with
 * their journals; nobody takes the mount over.  The next mount with that
 * state directory would start an empty table over them.  Before it does,
 * objfs_fs_recover() loads them into a second, temporary filesystem on
 * the same store, exactly as a successor does (state_start(resume): the
 * log, the spools, the inodes under their parents, the multipart uploads
 * under way, the deletes deferred), with no FUSE session and no workers,
 * and decides for each dirty file:
 *
 *   unlinked (open, no name)   nothing to save: its data is dropped
 *   its name is as it was      uploaded under it (a stream completed)
 *   cannot decide              kept in spool_dir as objfs-unsaved-*
 *                              (spool_keep(): an error line names the
 *                              file and the kept path), counted in
 *                              objfs_fs_unsaved_files
 *
 * "As it was": its directory (a marker or keys under it) is still in the
 * store, and the object under its name is the one its spool started from
 * (same ETag; none for a new file), so the upload overwrites nobody's
 * later change; the upload itself must succeed.  A file neither uploaded
 * nor kept (the spool directory unwritable) stays in the state directory
 * (the log is left and inode_free() leaves its spool) and the mount is
 * refused: it would start an empty table over it.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errors.h"
#include "common/log.h"
#include "fs/fs_int.h"

struct recover_count {
	unsigned uploaded;      /* saved under their names */
	unsigned dropped;       /* unlinked: nothing to save */
	unsigned failed;        /* neither uploaded nor kept */
};

/* Why in cannot be uploaded under key now, into why ("" when it can):
 * its directory gone, its object changed or gone, a store error.  No
 * lock but in->mu (held). */
static void check_name(struct objfs_fs *fs, struct inode *in, const char *key,
		       const char *dkey, const char *base, char *why,
		       size_t cap)
{
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	bool used = false;
	int err;

	why[0] = '\0';
	if (fs->o.read_only) {
		snprintf(why, cap, "the mount is read-only");
		return;
	}
	if (dkey[0] != '\0') {
		err = prefix_used(fs, dkey, false, &used);
		if (err != 0) {
			snprintf(why, cap, "looking for its directory %s: %s",
				 dkey, objfs_strerror(err));
			return;
		}
		if (!used) {
			snprintf(why, cap, "its directory %s is gone from the "
				 "store", dkey);
			return;
		}
	}
	if (in->hl.data)
		return;         /* a link set's data object: objfs's own */
	err = objfs_store_head(fs->store, key, &info);
	if (err == ENOENT && base[0] != '\0')
		snprintf(why, cap, "its object (ETag %s) was deleted from the "
			 "store meanwhile", base);
	else if (err == 0 && base[0] == '\0')
		snprintf(why, cap, "another object (ETag %s) was stored under "
			 "its name meanwhile", info.etag);
	else if (err == 0 && strcmp(info.etag, base) != 0)
		snprintf(why, cap, "its object changed in the store meanwhile "
			 "(ETag %s, the unsaved data was based on %s)",
			 info.etag, base);
	else if (err != 0 && err != ENOENT)
		snprintf(why, cap, "asking the store for it: %s",
			 objfs_strerror(err));
	objfs_obj_info_release(&info);
}

/* Keeps the spool of in (why: the reason it is not uploaded) and marks
 * in clean; a stream whose parts hold bytes the spool gave up is left in
 * the store, said so.  in->mu held. */
static void keep_one(struct objfs_fs *fs, struct inode *in, const char *what,
		     const char *why, struct recover_count *c)
{
	struct stream *st = in->stream;

	objfs_error(fs->log, SUB, "recovering %s a dead mount had not saved: "
		    "%s; keeping its data", what, why);
	if (spool_keep(fs, in) != 0) {
		c->failed++;
		return;
	}
	if (st != NULL && st->punched > 0) {
		/* its first bytes are in the parts only: never abort them */
		objfs_error(fs->log, SUB, "the multipart upload %s of %s holds "
			    "its first %" PRIu64 " bytes: left in the store",
			    st->upload_id, st->key, st->punched);
		in->stream = NULL;
		state_stream(fs, in, NULL);
		stream_free(st);
	} else {
		stream_abort(fs, in);
	}
	pthread_mutex_lock(&fs->lock);
	in->dirty = false;
	state_note(fs, in);
	pthread_mutex_unlock(&fs->lock);
}

/* Uploads or keeps one dirty inode of the loaded table (pinned). */
static void recover_one(struct objfs_fs *fs, struct inode *in,
			struct recover_count *c)
{
	char key[KEYBUF], dkey[KEYBUF], what[KEYBUF + 64], why[KEYBUF + 256];
	char base[OBJFS_ETAG_MAX];
	bool named, orphan;
	uint64_t size;
	int err;

	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	if (!in->dirty)
		goto out;
	pthread_mutex_lock(&fs->lock);
	named = in->linked || in->hl.data;
	orphan = in->load_orphan;
	key[0] = dkey[0] = '\0';
	err = named ? inode_key(fs, in, false, key, sizeof(key)) : 0;
	if (err == 0 && in->linked && in->parent != NULL &&
	    in->parent != fs->root)
		err = inode_key(fs, in->parent, true, dkey, sizeof(dkey));
	snprintf(base, sizeof(base), "%s",
		 in->spool != NULL ? in->spool->base_etag : "");
	size = in->size;
	if (named && err == 0)
		snprintf(what, sizeof(what), "%s (%" PRIu64 " bytes)", key, size);
	else
		snprintf(what, sizeof(what), "inode %" PRIu64 " \"%s\" (%"
			 PRIu64 " bytes)", (uint64_t)in->ino,
			 in->name != NULL ? in->name : "", size);
	pthread_mutex_unlock(&fs->lock);
	if (!named && !orphan) {
		/* unlinked and open: nobody can see it again */
		objfs_info(fs->log, SUB, "recovering: %s was unlinked: nothing "
			   "to save", what);
		(void)inode_sync(fs, in);
		c->dropped++;
		goto out;
	}
	if (orphan)
		snprintf(why, sizeof(why), "its directory is not in the state "
			 "log");
	else if (err != 0)
		snprintf(why, sizeof(why), "its name: %s", objfs_strerror(err));
	else
		check_name(fs, in, key, dkey, base, why, sizeof(why));
	if (why[0] == '\0') {
		err = inode_sync(fs, in);
		if (err == 0) {
			objfs_info(fs->log, SUB, "recovered %s: uploaded", what);
			c->uploaded++;
			goto out;
		}
		snprintf(why, sizeof(why), "uploading it failed: %s",
			 objfs_strerror(err));
	}
	keep_one(fs, in, what, why, c);
out:
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
}

/* The dirty inodes of fs, pinned, into *out (free the array, unpin
 * each).  0 or ENOMEM. */
static int dirty_list(struct objfs_fs *fs, struct inode ***out, size_t *n)
{
	struct inode **list = NULL, *in;
	size_t k = 0, cap = 0;
	unsigned h;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	for (h = 0; h < HASH_SIZE && err == 0; h++) {
		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next) {
			if (!in->dirty)
				continue;
			if (k == cap) {
				struct inode **nl;

				cap = cap ? cap * 2 : 16;
				nl = realloc(list, cap * sizeof(*nl));
				if (nl == NULL) {
					err = ENOMEM;
					break;
				}
				list = nl;
			}
			in->refs++;
			list[k++] = in;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	*out = list;
	*n = k;
	return err;
}

/* Dirty files of fs neither uploaded nor kept. */
static unsigned count_unsaved(struct objfs_fs *fs)
{
	struct inode *in;
	unsigned h, n = 0;

	pthread_mutex_lock(&fs->lock);
	for (h = 0; h < HASH_SIZE; h++)
		for (in = fs->ino_tab[h]; in != NULL; in = in->ino_next)
			if (in->dirty &&
			    (in->linked || in->hl.data || in->load_orphan) &&
			    (in->spool == NULL || in->spool->kept == NULL))
				n++;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

int objfs_fs_recover(struct objfs_fs *fs, const char *dir)
{
	struct recover_count c = { 0, 0, 0 };
	struct objfs_fs_opts o = fs->o;
	struct objfs_fs *tmp = NULL;
	struct inode **list = NULL;
	size_t n = 0, i;
	char path[4200];
	struct stat st;
	uint64_t kept;
	int err;

	snprintf(path, sizeof(path), "%s/log", dir);
	if (stat(path, &st) != 0)
		return errno == ENOENT ? 0 : errno;
	objfs_info(fs->log, SUB, "%s holds the state of a mount that died: "
		   "saving what it had not", dir);
	/* no cache, prefetch or test fault of its own; the same spool
	 * directory, store, options and log */
	o.cache_dir = NULL;
	o.prefetch = 0;
	o.crash_at = NULL;
	err = objfs_fs_create(fs->store, &o, fs->log, &tmp);
	if (err != 0)
		goto out;
	err = state_start(tmp, dir, true);
	if (err != 0)
		goto out;
	err = dirty_list(tmp, &list, &n);
	for (i = 0; i < n; i++) {
		if (err == 0)
			recover_one(tmp, list[i], &c);
		unpin(tmp, list[i]);
	}
	free(list);
	if (err != 0)
		goto out;
	/* attributes, the index and the deletes the log queued again; not
	 * objfs_fs_sync_all(): a file left dirty (neither uploaded nor
	 * kept) must not be uploaded after all */
	attrs_flush(tmp, true);
	aidx_flush(tmp, true);
	if (objfs_store_del_barrier(tmp->store) != 0)
		objfs_warn(fs->log, SUB, "some deletes the dead mount had "
			   "queued failed (logged above): those names are "
			   "visible again");
	c.failed = count_unsaved(tmp);
	kept = __atomic_load_n(&tmp->unsaved_kept, __ATOMIC_RELAXED);
	__atomic_add_fetch(&fs->unsaved_kept, kept, __ATOMIC_RELAXED);
	__atomic_add_fetch(&fs->unsaved_recovered, kept, __ATOMIC_RELAXED);
	objfs_info(fs->log, SUB, "recovered %u unsaved file(s) a dead mount "
		   "left in %s: %u uploaded, %" PRIu64 " kept in %s, %u "
		   "unlinked", c.uploaded + (unsigned)kept, dir, c.uploaded,
		   kept, fs->spool_dir, c.dropped);
	if (c.failed > 0) {
		objfs_error(fs->log, SUB, "%u file(s) a dead mount left in %s "
			    "could be neither uploaded nor kept (see above): "
			    "they stay there, and this mount does not start "
			    "over them", c.failed, dir);
		err = EIO;
	}
out:
	if (tmp != NULL) {
		/* before destroy: no record of the inodes it frees, and the
		 * log stays when something is left */
		state_stop(tmp, err == 0);
		objfs_fs_destroy(tmp);
	}
	if (err != 0 && c.failed == 0)
		objfs_error(fs->log, SUB, "recovering the state a dead mount "
			    "left in %s: %s", dir, objfs_strerror(err));
	return err;
}
