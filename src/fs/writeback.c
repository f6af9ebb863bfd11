/*
 * writeback.c - unsaved data: spools, uploads, streaming parts, the spool
 * bound.
 *
 * File data states (in->mu):
 *   clean, no spool   reads are ranged GETs (readahead.c)
 *   spool, clean      the spool mirrors the stored object (present ranges
 *                     plus fetch on demand); kept while the file is open
 *   spool, dirty      local changes not yet uploaded; uploaded (whole
 *                     object, multipart when large) on flush, fsync,
 *                     release, setattr without a handle, rename, and at
 *                     unmount.  A dirty inode is never freed.
 * An acknowledged flush/fsync/close means the object is in the store; a
 * failed upload leaves the inode dirty for the next try.
 *
 * Changed files: a file stored before and then grown or changed in place
 * (the spool's `changed` ranges: bytes written since its base) is stored
 * again by objfs_store_upload_delta(): its unchanged stretches are part
 * copies of the stored object (the spool's base, its ETag checked), only
 * the changed ones (widened to S3's 5 MiB parts) are fetched where
 * missing and sent.  Where that does not pay (a base under 2 x
 * part_size, nothing long enough to copy) or the store refuses part
 * copies (remembered: fs->no_part_copy), or the stored object is no
 * longer the base (another writer: ESTALE), the whole file goes up as
 * before, after fetching what the spool lacks; if that fetch finds the
 * object changed, the sync fails with EIO as before, and a spool holding
 * every byte overwrites the other writer's object (last writer wins).
 *
 * Streaming: a file written only at its end since empty (in->seq) sends
 * every complete part_size bytes of its spool as a part of a multipart
 * upload while it is written, so its close sends only the tail.
 *
 * Upload window (upload_delay > 0; off by default): a new file (never
 * stored, a plain name, not streaming) is not uploaded at its flush or
 * last close but up to upload_delay later (in->upload_wait, uploaded by
 * uploads_flush() from the attribute flusher's tick, every 250 ms), so
 * the write-temp-then-rename of rsync, git and editors costs one PUT
 * under the final name (rename.c moves it in memory) and a temporary
 * unlinked meanwhile costs nothing.  What it relaxes: other mounts see
 * the file up to upload_delay (plus a tick) after the close, and a close
 * cannot report a failed upload (the file stays dirty and is tried
 * again; unmount stores it or keeps it as unsaved).  fsync, unmount, a
 * rename of its directory and the spool bound still store it at once.
 *
 * Spool bound: fs->spool_used counts the spools' disk blocks.  Past
 * spool_limit a streaming writer punches its sent parts out of its spool
 * (stream->punched: those bytes live only in the upload, which completes
 * before they are read or changed), other files' spools are freed (dirty
 * ones uploaded early), and last the written file is uploaded early.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "fs/fs_int.h"

/* ---- spool and upload (in->mu held) ----------------------------------- */

struct spool_sink {
	struct objfs_spool *sp;
	uint64_t base;
};

static int spool_sink_write(void *arg, uint64_t off, const void *data, size_t n)
{
	struct spool_sink *ss = arg;

	return objfs_spool_fill(ss->sp, ss->base + off, data, n);
}

int spool_start(struct objfs_fs *fs, uint64_t base, const char *etag,
		struct objfs_spool **out, uint64_t *id)
{
	char path[4200];
	int err;

	state_spool_path(fs, path, sizeof(path), id);
	if (path[0] != '\0')
		err = objfs_spool_create_named(path, base, etag, out);
	else
		err = objfs_spool_create(fs->spool_dir, base, etag, out);
	if (err != 0)
		objfs_error(fs->log, SUB, "creating a spool file in %s: %s",
			    path[0] != '\0' ? path : fs->spool_dir,
			    objfs_strerror(err));
	return err;
}

/* Starts a spool for in if it has none (in->mu). */
int spool_ensure(struct objfs_fs *fs, struct inode *in)
{
	struct objfs_spool *sp = NULL;
	uint64_t base = 0, id;
	char etag[OBJFS_ETAG_MAX] = "";
	int err;

	fs_assert_held(&in->mu);
	if (in->spool != NULL)
		return 0;
	pthread_mutex_lock(&fs->lock);
	if (in->in_store) {
		base = in->stored_size;
		snprintf(etag, sizeof(etag), "%s", in->etag);
	}
	pthread_mutex_unlock(&fs->lock);
	err = spool_start(fs, base, etag, &sp, &id);
	if (err != 0)
		return err;
	pthread_mutex_lock(&fs->lock);
	in->spool = sp;
	in->spool_id = id;
	in->size = sp->size;
	state_note(fs, in);
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/* Fetches whatever of [off, end) the spool lacks (in->mu).  Fetches are
 * rounded to 1 MiB so small reads do not become many GETs. */
int spool_fetch(struct objfs_fs *fs, struct inode *in, uint64_t off,
		uint64_t end)
{
	struct objfs_spool *sp = in->spool;
	char key[KEYBUF];
	uint64_t gs, ge;
	int err = 0;

	fs_assert_held(&in->mu);
	if (end > sp->base_size)
		end = sp->base_size;
	if (off >= end || !objfs_spool_missing(sp, off, end, &gs, &ge))
		return 0;
	pthread_mutex_lock(&fs->lock);
	err = inode_key(fs, in, false, key, sizeof(key));
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		return EIO;     /* unlinked before its data was saved */
	while (off < end && objfs_spool_missing(sp, off, end, &gs, &ge)) {
		struct objfs_get_opts go = { 0, 0, NULL };
		struct spool_sink ss = { sp, 0 };
		struct objfs_sink sink = { spool_sink_write, &ss };

		gs &= ~((1ULL << 20) - 1);
		if (ge - gs < (1ULL << 20))
			ge = gs + (1ULL << 20);
		if (ge > sp->base_size)
			ge = sp->base_size;
		go.off = gs;
		go.len = ge - gs;
		go.if_match = sp->base_etag[0] != '\0' ? sp->base_etag : NULL;
		ss.base = gs;
		err = objfs_store_get(fs->store, key, &go, &sink, NULL);
		if (err != 0) {
			objfs_warn(fs->log, SUB, "fetching %s: %s", key,
				   objfs_strerror(err));
			err = err == ESTALE ? EIO : err;
			break;
		}
		off = ge;
	}
	spool_account(fs, in);  /* what was fetched, also before a failure */
	return err;
}

/* Stores in's spool as key by part copies of its base and the changed
 * stretches (in->mu): see the top of this file.  EOPNOTSUPP (nothing sent)
 * when it does not pay or the store refuses or denies part copies
 * (remembered: the mount uploads whole from then on), ESTALE when the
 * stored object is no longer the base: the caller uploads the whole file
 * then.  0 or an errno. */
static int upload_changed(struct objfs_fs *fs, struct inode *in,
			  const char *key, const struct objfs_source *src,
			  const struct objfs_put_opts *po,
			  struct objfs_obj_info *info)
{
	struct objfs_spool *sp = in->spool;
	struct objfs_delta_seg *plan = NULL;
	uint64_t sent = 0;
	size_t n = 0, i;
	bool in_store;
	int err;

	pthread_mutex_lock(&fs->lock);
	in_store = in->in_store;
	pthread_mutex_unlock(&fs->lock);
	if (!in_store || sp->base_etag[0] == '\0' ||
	    __atomic_load_n(&fs->no_part_copy, __ATOMIC_RELAXED) != 0)
		return EOPNOTSUPP;
	err = objfs_store_delta_plan(sp->size, sp->base_size, sp->changed.r,
				     sp->changed.n, fs->o.part_size, &plan, &n);
	if (err != 0)
		return err;
	/* the sent stretches must be local; the copied ones need not be */
	for (i = 0; i < n && err == 0; i++) {
		if (!plan[i].copy)
			err = spool_fetch(fs, in, plan[i].off,
					  plan[i].off + plan[i].len);
	}
	free(plan);
	if (err != 0)
		return err;
	err = objfs_store_upload_delta(fs->store, key, src, po, sp->base_size,
				       sp->base_etag, sp->changed.r,
				       sp->changed.n, fs->o.part_size,
				       fs->o.upload_parallel, &sent, info);
	if (err == 0) {
		__atomic_add_fetch(&fs->delta_uploads, 1, __ATOMIC_RELAXED);
		objfs_debug(fs->log, SUB, "stored %s again: %" PRIu64 " of %"
			    PRIu64 " bytes sent, the rest copied", key, sent,
			    sp->size);
	} else if (err == EOPNOTSUPP || err == EACCES || err == EPERM) {
		/* refused, or denied: a part copy reads its source, which a
		 * write-only role or policy may not allow */
		__atomic_store_n(&fs->no_part_copy, 1, __ATOMIC_RELAXED);
		objfs_info(fs->log, SUB, "the store %s part copies (%s): "
			   "changed files are uploaded whole",
			   err == EOPNOTSUPP ? "refuses" : "denies",
			   objfs_strerror(err));
		err = EOPNOTSUPP;
	} else if (err == ESTALE) {
		objfs_warn(fs->log, SUB, "%s changed in the store since it was "
			   "read: uploading it whole", key);
	}
	return err;
}

/* ---- streaming uploads of sequential writers (in->mu) ----------------- */

struct part_task {
	struct objfs_fs *fs;
	struct stream *st;
	fuse_ino_t ino;
	int fd;
	unsigned number;
	uint64_t off;
	uint64_t len;
};

static void part_run(void *arg)
{
	struct part_task *t = arg;
	struct objfs_fd_source fdctx;
	struct objfs_source src;
	struct objfs_part part;
	int err;

	memset(&part, 0, sizeof(part));
	objfs_source_fd(&src, &fdctx, t->fd, t->off, t->len);
	err = objfs_store_mpu_part(t->fs->store, t->st->key, t->st->upload_id,
				   t->number, &src, &part);
	if (err == 0)   /* before the stream learns it: see stream_punch() */
		state_part(t->fs, t->ino, &part, t->len);
	pthread_mutex_lock(&t->st->mu);
	if (err == 0)
		t->st->parts[t->number - 1] = part;
	else if (t->st->err == 0)
		t->st->err = err;
	assert(t->st->inflight > 0);
	t->st->inflight--;
	pthread_cond_broadcast(&t->st->cv);
	pthread_mutex_unlock(&t->st->mu);
	free(t);
}

/* The next part of in's stream, len bytes of its spool from st->off,
 * counted in flight (part_run() frees it and counts it out); NULL when
 * out of memory, nothing changed then. */
static struct part_task *part_next(struct objfs_fs *fs, struct inode *in,
				   uint64_t len)
{
	struct stream *st = in->stream;
	struct part_task *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->fs = fs;
	t->st = st;
	t->ino = in->ino;
	t->fd = in->spool->fd;
	t->number = ++st->n_parts;
	t->off = st->off;
	t->len = len;
	st->off += len;
	pthread_mutex_lock(&st->mu);
	st->inflight++;
	pthread_mutex_unlock(&st->mu);
	return t;
}

/* Waits for the parts in flight; returns the first error. */
static int stream_wait(struct stream *st, unsigned max_inflight)
{
	int err;

	pthread_mutex_lock(&st->mu);
	while (st->inflight > max_inflight)
		pthread_cond_wait(&st->cv, &st->mu);
	err = st->err;
	pthread_mutex_unlock(&st->mu);
	return err;
}

/* A new stream of key (fs->lock or in->mu held, or in private): NULL
 * when out of memory.  Freed by stream_free(). */
static struct stream *stream_new(const char *key, const struct objfs_fattr *fa)
{
	struct stream *st = calloc(1, sizeof(*st));

	if (st == NULL)
		return NULL;
	/* S3 allows 10,000 parts: stream files up to that many parts */
	st->parts = calloc(OBJFS_MPU_MAX_PARTS, sizeof(*st->parts));
	if (st->parts == NULL) {
		free(st);
		return NULL;
	}
	snprintf(st->key, sizeof(st->key), "%s", key);
	st->fa = *fa;
	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->cv, NULL);
	return st;
}

void stream_free(struct stream *st)
{
	if (st == NULL)
		return;
	pthread_cond_destroy(&st->cv);
	pthread_mutex_destroy(&st->mu);
	free(st->upload_id);
	free(st->parts);
	free(st);
}

/* Abandons the stream (its parts are aborted in the store). */
void stream_abort(struct objfs_fs *fs, struct inode *in)
{
	struct stream *st = in->stream;

	fs_assert_held(&in->mu);
	if (st == NULL)
		return;
	stream_wait(st, 0);
	objfs_store_mpu_abort(fs->store, st->key, st->upload_id);
	in->stream = NULL;
	state_stream(fs, in, NULL);
	stream_free(st);
}

int stream_load(struct objfs_fs *fs, struct inode *in, const char *key,
		const char *upload_id, const struct objfs_fattr *fa)
{
	struct stream *st = stream_new(key, fa);

	fs_assert_locked(fs);
	if (st == NULL || (st->upload_id = strdup(upload_id)) == NULL) {
		stream_free(st);
		return ENOMEM;
	}
	stream_free(in->stream);
	in->stream = st;
	return 0;
}

void stream_load_done(struct objfs_fs *fs, struct inode *in)
{
	struct stream *st = in->stream;
	uint64_t ps = fs->o.part_size;
	unsigned k;

	fs_assert_locked(fs);
	if (st == NULL && upload_may_wait(fs, in) && !in->upload_wait) {
		/* a predecessor's new file: it waits again (one the kernel
		 * still has open is let go by the flusher: its close decides) */
		in->upload_wait = true;
		in->closed_at = now_mono();
		fs->n_upload_wait++;
	}
	if (st == NULL)
		return;
	if (!in->dirty || in->spool == NULL) {
		/* it completed (or the data is gone): nothing to go on with */
		stream_free(st);
		in->stream = NULL;
		return;
	}
	/* the parts that completed from the first on (journal.c loads only
	 * whole ones); the others, in flight at the death, are sent again */
	for (k = 0; k < OBJFS_MPU_MAX_PARTS && st->parts[k].number == k + 1; k++)
		;
	memset(st->parts + k, 0, (OBJFS_MPU_MAX_PARTS - k) * sizeof(*st->parts));
	st->n_parts = k;
	st->off = (uint64_t)k * ps;
	if (st->punched > st->off)
		st->punched = st->off;  /* never: a punch waits for its parts */
	if (in->times_set)
		st->attrs_changed = true;
}

/* Sends every complete part of a sequentially written file (after a
 * write).  Errors only stop streaming: the close uploads the spool. */
static void stream_feed(struct objfs_fs *fs, struct inode *in)
{
	struct objfs_spool *sp = in->spool;
	struct stream *st = in->stream;
	uint64_t ps = fs->o.part_size;

	fs_assert_ns_held(fs);
	fs_assert_held(&in->mu);
	if (!in->seq || fs->pool == NULL || sp->size < (st ? st->off : 0) + ps)
		return;
	if (st == NULL) {
		struct objfs_meta meta = OBJFS_META_INIT;
		struct objfs_put_opts po = { &meta, NULL, false };
		struct objfs_fattr fa;
		char key[KEYBUF];
		int err;

		err = xattr_load(fs, in, false);
		pthread_mutex_lock(&fs->lock);
		if (err == 0)
			err = inode_key(fs, in, false, key, sizeof(key));
		inode_fattr(in, &fa);
		if (err == 0)
			err = xattr_meta(fs, in, &meta);
		pthread_mutex_unlock(&fs->lock);
		st = err == 0 ? stream_new(key, &fa) : NULL;
		if (st != NULL) {
			/* no mtime: the object's Last-Modified (its completion,
			 * about the close) stands for it, not the time the
			 * upload began */
			fa.mtime.tv_nsec = -1;
			fa.atime.tv_nsec = -1;
			fa.ctime.tv_nsec = -1;
			err = objfs_fattr_to_meta(&fa, &meta);
		}
		if (st != NULL && err == 0)
			err = objfs_store_mpu_create(fs->store, st->key, &po,
						     &st->upload_id);
		objfs_meta_release(&meta);
		if (st == NULL || err != 0) {
			stream_free(st);
			in->seq = false;
			return;
		}
		in->stream = st;
		state_stream(fs, in, st);
		objfs_debug(fs->log, SUB, "streaming %s", st->key);
	}
	while (sp->size >= st->off + ps && st->n_parts + 1 < OBJFS_MPU_MAX_PARTS) {
		struct part_task *t;

		/* at most upload_parallel parts in flight: writers wait */
		if (stream_wait(st, fs->o.upload_parallel ? fs->o.upload_parallel - 1 : 0) != 0)
			return;
		t = part_next(fs, in, ps);
		if (t == NULL)
			return;
		fs_metrics_streamed_part(fs);
		if (objfs_pool_submit(fs->pool, NULL, part_run, t) != 0)
			part_run(t);
	}
}

/* Completes the stream with the tail of the spool.  0, or an errno after
 * which the caller uploads the whole spool instead. */
static int stream_finish(struct objfs_fs *fs, struct inode *in,
			 const struct objfs_fattr *fa,
			 struct objfs_obj_info *info)
{
	struct stream *st = in->stream;
	struct objfs_spool *sp = in->spool;
	struct part_task *t = NULL;
	int err, werr;

	/* the tail goes up beside the parts still in flight: a file of one
	 * and a bit parts waits for the longer of the two, not their sum */
	pthread_mutex_lock(&st->mu);
	err = st->err;
	pthread_mutex_unlock(&st->mu);
	if (err == 0 && sp->size > st->off &&
	    (t = part_next(fs, in, sp->size - st->off)) == NULL)
		err = ENOMEM;
	if (t != NULL)
		part_run(t);
	/* whatever happened, no part is in flight on return (the caller may
	 * upload the spool instead, or abort the stream) */
	werr = stream_wait(st, 0);
	if (err == 0)
		err = werr;
	if (err == 0)
		err = objfs_store_mpu_complete(fs->store, st->key, st->upload_id,
					       st->parts, st->n_parts, info);
	if (err != 0) {
		objfs_warn(fs->log, SUB, "streamed upload of %s: %s; sending "
			   "the file again", st->key, objfs_strerror(err));
		return err;
	}
	objfs_debug(fs->log, SUB, "streamed %s in %u parts", st->key, st->n_parts);
	in->stream = NULL;
	state_stream(fs, in, NULL);
	stream_free(st);
	(void)fa;
	return 0;
}

/* in no longer waits for its upload (fs->lock). */
static void upload_unwait(struct objfs_fs *fs, struct inode *in)
{
	fs_assert_locked(fs);
	if (!in->upload_wait)
		return;
	assert(fs->n_upload_wait > 0);
	in->upload_wait = false;
	fs->n_upload_wait--;
}

/* Uploads a dirty inode: ns (read or write) and in->mu held. */
int inode_sync(struct objfs_fs *fs, struct inode *in)
{
	struct objfs_meta meta = OBJFS_META_INIT;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_put_opts po = { NULL, NULL, false };
	struct objfs_fd_source fdctx;
	struct objfs_source src;
	struct objfs_fattr fa;
	char key[KEYBUF];
	bool linked, fix_attrs = false, streamed = false;
	unsigned mask;
	int err;

	fs_assert_ns_held(fs);
	fs_assert_held(&in->mu);
	if (!in->dirty)
		return 0;
	err = xattr_load(fs, in, false);        /* the upload carries them */
	if (err != 0 && err != ENOENT)
		return err;
	pthread_mutex_lock(&fs->lock);
	linked = in->linked || in->hl.data;     /* hardlink.c: its data key */
	err = linked ? inode_key(fs, in, false, key, sizeof(key)) : 0;
	inode_fattr(in, &fa);
	pthread_mutex_unlock(&fs->lock);
	if (!linked) {
		/* unlinked: nobody can see the data again once closed */
		stream_abort(fs, in);
		pthread_mutex_lock(&fs->lock);
		in->dirty = false;
		upload_unwait(fs, in);
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	if (err != 0)
		return err;
	if (in->stream != NULL) {
		bool same_key = strcmp(in->stream->key, key) == 0, same;

		same = same_key && !in->stream->attrs_changed &&
		       in->stream->fa.mode == fa.mode &&
		       in->stream->fa.uid == fa.uid &&
		       in->stream->fa.gid == fa.gid;
		if (same_key) {
			/* attributes changed while streaming follow in a
			 * copy once the upload is complete */
			if (stream_finish(fs, in, &fa, &info) == 0) {
				fix_attrs = !same;
				streamed = true;
				goto done;
			}
			objfs_obj_info_release(&info);
		}
		if (in->stream != NULL && in->stream->punched > 0) {
			/* the parts hold bytes the spool gave up: the stream
			 * must complete (it stays for a retry if it fails) */
			if (!same_key) {
				objfs_error(fs->log, SUB, "streamed %s was renamed "
					    "to %s before it completed",
					    in->stream->key, key);
				return EIO;
			}
			objfs_error(fs->log, SUB, "completing %s failed; the "
				    "close reports it", key);
			return EIO;
		}
		stream_abort(fs, in);
	}
	if (in->spool == NULL) {
		err = spool_ensure(fs, in);
		if (err != 0)
			return err;
	}
	pthread_mutex_lock(&fs->lock);
	err = xattr_meta(fs, in, &meta);
	pthread_mutex_unlock(&fs->lock);
	if (err == 0)
		err = objfs_fattr_to_meta(&fa, &meta);
	if (err != 0)
		goto out;
	po.meta = &meta;
	objfs_source_fd(&src, &fdctx, in->spool->fd, 0, in->spool->size);
	err = upload_changed(fs, in, key, &src, &po, &info);
	if (err == EOPNOTSUPP || err == ESTALE) {
		objfs_obj_info_release(&info);
		err = spool_fetch(fs, in, 0, in->spool->size);
		if (err != 0)
			goto out;
		err = objfs_store_upload(fs->store, key, &src, &po,
					 fs->o.part_size,
					 fs->o.upload_parallel, &info);
	}
	if (err != 0) {
		objfs_error(fs->log, SUB, "uploading %s (%" PRIu64 " bytes): %s",
			    key, in->spool->size, objfs_strerror(err));
		goto out;
	}
done:
	/* appends to an empty stored file may stream again */
	in->seq = in->spool->size == 0;
	pthread_mutex_lock(&fs->lock);
	if (!in->in_store && fs->cap.scan_done) {
		fs->cap.objects++;
		fs->cap.scan_obj_delta++;
	}
	if (!in->in_store)
		snap_note_stored(fs, in);       /* listable from now */
	in->in_store = true;
	mask = streamed ? FATTR_ALL & ~(OBJFS_FATTR_MTIME | OBJFS_FATTR_ATIME |
				   OBJFS_FATTR_CTIME) : FATTR_ALL;
	in->meta_mask = mask;
	in->stored_size = in->spool->size;
	snprintf(in->etag, sizeof(in->etag), "%s", info.etag);
	snprintf(in->cache_etag, sizeof(in->cache_etag), "%s", info.etag);
	in->attr_time = now_mono();
	in->put_time = in->attr_time;
	in->dirty = false;
	upload_unwait(fs, in);
	in->times_set = false;
	if (!fix_attrs)
		attrs_done(fs, in);     /* the upload carried them */
	if (objfs_spool_rebase(in->spool, in->spool->size, info.etag) != 0)
		objfs_warn(fs->log, SUB, "spool journal of %s", key);
	state_note(fs, in);
	pthread_mutex_unlock(&fs->lock);
	objfs_debug(fs->log, SUB, "uploaded %s", key);
	if (!fix_attrs)
		aidx_note(fs, key, info.etag, &fa, mask, NULL);
	if (fix_attrs) {
		err = store_attrs(fs, in);
		pthread_mutex_lock(&fs->lock);
		snprintf(in->spool->base_etag, sizeof(in->spool->base_etag),
			 "%s", in->etag);
		pthread_mutex_unlock(&fs->lock);
	}
out:
	objfs_meta_release(&meta);
	objfs_obj_info_release(&info);
	return err;
}

bool upload_may_wait(const struct objfs_fs *fs, const struct inode *in)
{
	return fs->o.upload_delay > 0 && in->dirty && !in->in_store &&
	       in->linked && in->stream == NULL && !in->told_unsaved &&
	       in->hl.id == NULL && !in->hl.data && S_ISREG(in->mode);
}

/* One waiting file's upload (a pool task, or run in place). */
struct wait_task {
	struct objfs_fs *fs;
	struct inode *in;               /* pinned; unpinned here */
};

static void wait_upload(void *arg)
{
	struct wait_task *t = arg;
	struct objfs_fs *fs = t->fs;
	struct inode *in = t->in;
	bool go;
	int err = 0;

	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	pthread_mutex_lock(&fs->lock);
	/* opened again: its next close decides */
	go = in->upload_wait && in->nopen == 0;
	if (!go)
		upload_unwait(fs, in);
	pthread_mutex_unlock(&fs->lock);
	if (go)
		err = inode_sync(fs, in);
	if (go && err == 0)
		spool_drop(fs, in, true);       /* as a close's upload is */
	if (err != 0) {
		objfs_error(fs->log, SUB, "uploading inode %" PRIu64 " after "
			    "its close: %s (tried again later)",
			    (uint64_t)in->ino, objfs_strerror(err));
		pthread_mutex_lock(&fs->lock);
		in->closed_at = now_mono();
		pthread_mutex_unlock(&fs->lock);
	}
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	unpin(fs, in);
}

/* Waiting uploads sent at once (as rclone's four transfers): the files
 * are small, and one at a time a tree's copy would outrun them. */
#define WAIT_PARALLEL 8

void uploads_flush(struct objfs_fs *fs, bool all)
{
	struct inode **list = NULL, *in;
	struct wait_task *tasks = NULL;
	double now = now_mono();
	size_t n = 0, cap, i, j;
	unsigned h;

	pthread_mutex_lock(&fs->lock);
	cap = fs->n_upload_wait;
	if (cap > 0)
		list = calloc(cap, sizeof(*list));
	for (h = 0; list != NULL && h < HASH_SIZE && n < cap; h++) {
		for (in = fs->ino_tab[h]; in != NULL && n < cap; in = in->ino_next) {
			if (in->upload_wait &&
			    (all || now - in->closed_at >= fs->o.upload_delay)) {
				in->refs++;
				list[n++] = in;
			}
		}
	}
	pthread_mutex_unlock(&fs->lock);
	if (n > 0)
		tasks = calloc(n, sizeof(*tasks));
	/* batches of WAIT_PARALLEL on the pool (an upload waits for no
	 * other task); in place without a pool or memory */
	for (i = 0; i < n; i += WAIT_PARALLEL) {
		struct objfs_group g;

		objfs_group_init(&g);
		for (j = i; j < n && j < i + WAIT_PARALLEL; j++) {
			struct wait_task one = { fs, list[j] };

			if (tasks == NULL) {
				wait_upload(&one);
				continue;
			}
			tasks[j] = one;
			if (fs->pool == NULL ||
			    objfs_pool_submit(fs->pool, &g, wait_upload,
					      &tasks[j]) != 0)
				wait_upload(&tasks[j]);
		}
		objfs_group_wait(&g);
	}
	free(tasks);
	free(list);
}

int inode_sync_told(struct objfs_fs *fs, struct inode *in)
{
	int err = inode_sync(fs, in);

	in->told_unsaved = err != 0 && in->dirty;
	return err;
}

int inode_release_sync(struct objfs_fs *fs, struct inode *in)
{
	fs_assert_ns_held(fs);
	fs_assert_held(&in->mu);
	pthread_mutex_lock(&fs->lock);
	if (upload_may_wait(fs, in)) {
		/* its upload waits from the last close (see the top) */
		if (in->nopen == 1 && !in->upload_wait) {
			in->upload_wait = true;
			fs->n_upload_wait++;
		}
		in->closed_at = now_mono();
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	pthread_mutex_unlock(&fs->lock);
	if (!in->told_unsaved || !in->dirty)
		return inode_sync(fs, in);
	/* close(2) or fsync(2) returned an error for this data: sending it
	 * now would store what the application was told is not stored */
	(void)spool_keep(fs, in);
	stream_abort(fs, in);
	pthread_mutex_lock(&fs->lock);
	in->dirty = false;
	in->told_unsaved = false;
	state_note(fs, in);
	pthread_mutex_unlock(&fs->lock);
	return EIO;
}

/* Takes ns (read) and in->mu, uploads as a flush, releases. */
int inode_sync_locked_ns(struct objfs_fs *fs, struct inode *in)
{
	bool wait;
	int err = 0;

	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	pthread_mutex_lock(&fs->lock);
	wait = upload_may_wait(fs, in);
	pthread_mutex_unlock(&fs->lock);
	if (!wait)
		err = inode_sync_told(fs, in);
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	return err;
}

/* ---- the spool bound (in->mu held) ----------------------------------- */

/* Recounts the disk blocks of in's spool into fs->spool_used. */
void spool_account(struct objfs_fs *fs, struct inode *in)
{
	uint64_t disk = in->spool != NULL ? objfs_spool_disk(in->spool) : 0;

	fs_assert_held(&in->mu);
	pthread_mutex_lock(&fs->lock);
	assert(fs->spool_used >= in->spool_disk);
	fs->spool_used = fs->spool_used - in->spool_disk + disk;
	in->spool_disk = disk;
	pthread_mutex_unlock(&fs->lock);
}

/* Drops the spool of a clean file (in->mu), only when nobody has it open
 * if idle_only: reads go to the store, a later write starts a new spool
 * over the stored object. */
void spool_drop(struct objfs_fs *fs, struct inode *in, bool idle_only)
{
	struct objfs_spool *sp = NULL;

	fs_assert_held(&in->mu);
	pthread_mutex_lock(&fs->lock);
	if (!in->dirty && in->spool != NULL && (!idle_only || in->nopen == 0)) {
		sp = in->spool;
		in->spool = NULL;
		assert(fs->spool_used >= in->spool_disk);
		fs->spool_used -= in->spool_disk;
		in->spool_disk = 0;
		state_note(fs, in);
	}
	pthread_mutex_unlock(&fs->lock);
	objfs_spool_destroy(sp);
}

/* The spools hold more than spool_limit (fs->lock). */
static bool spool_over_locked(const struct objfs_fs *fs)
{
	return fs->o.spool_limit > 0 && fs->spool_used > fs->o.spool_limit;
}

static bool spool_over(struct objfs_fs *fs)
{
	bool over;

	pthread_mutex_lock(&fs->lock);
	over = spool_over_locked(fs);
	if (!over)
		fs->relieved_at = 0;
	pthread_mutex_unlock(&fs->lock);
	return over;
}

/* Frees the spool bytes of a streaming file whose parts are all sent:
 * waits for the parts in flight, then punches what they cover. */
static void stream_punch(struct objfs_fs *fs, struct inode *in)
{
	struct stream *st = in->stream;
	int err;

	if (st == NULL || stream_wait(st, 0) != 0 || st->off <= st->punched)
		return;
	/* the parts are in the state log (part_run()): a successor goes on
	 * with the upload, knowing which bytes only the parts hold */
	state_punch(fs, in, st->off);
	err = objfs_spool_punch(in->spool, st->punched, st->off);
	if (err == 0)
		st->punched = st->off;
	else
		objfs_warn(fs->log, SUB, "freeing spool space of %s: %s",
			   st->key, objfs_strerror(err));
	spool_account(fs, in);
}

/* Makes room in the other files' spools (ns read held; in->mu held, so
 * theirs are only tried): streams give up sent parts, dirty files are
 * uploaded early, clean spools are dropped; largest first. */
static void spool_relieve_others(struct objfs_fs *fs, struct inode *in)
{
	struct inode *cand[16], *x;
	size_t n = 0, i, j;
	unsigned b;

	/* the 16 largest spools, kept sorted largest first (pinned) */
	pthread_mutex_lock(&fs->lock);
	for (b = 0; b < HASH_SIZE; b++) {
		for (x = fs->ino_tab[b]; x != NULL; x = x->ino_next) {
			if (x == in || x->spool_disk == 0 ||
			    (n == 16 && x->spool_disk <= cand[15]->spool_disk))
				continue;
			if (n == 16) {
				cand[15]->refs--;
				maybe_free(fs, cand[15]);
				n--;
			}
			for (j = n; j > 0 && cand[j - 1]->spool_disk < x->spool_disk; j--)
				cand[j] = cand[j - 1];
			x->refs++;
			cand[j] = x;
			n++;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++) {
		x = cand[i];
		if (spool_over(fs) && pthread_mutex_trylock(&x->mu) == 0) {
			if (x->stream != NULL)
				stream_punch(fs, x);
			else if (inode_sync(fs, x) == 0)    /* 0 at once if clean */
				spool_drop(fs, x, false);
			pthread_mutex_unlock(&x->mu);
		}
		unpin(fs, x);
	}
}

/* After a write to in (ns read and in->mu held): while the spools hold
 * more than spool_limit, free what is safe to free.  A sequential writer
 * waits for its parts and drops them from its spool; other files are
 * relieved; last, this file is uploaded now and continues from the store.
 * The bound is soft by one write and the parts in flight. */
static void spool_relieve(struct objfs_fs *fs, struct inode *in)
{
	uint64_t step = fs->o.spool_limit / 16;
	bool others, own;

	fs_assert_ns_held(fs);
	if (!spool_over(fs))
		return;
	stream_punch(fs, in);
	/* the others are looked at again only after the spools grew by a
	 * sixteenth of the limit (they may be busy: small writes must not
	 * each scan the inode table) */
	pthread_mutex_lock(&fs->lock);
	others = spool_over_locked(fs) && fs->spool_used >= fs->relieved_at + step;
	pthread_mutex_unlock(&fs->lock);
	if (others) {
		spool_relieve_others(fs, in);
		pthread_mutex_lock(&fs->lock);
		fs->relieved_at = fs->spool_used;
		pthread_mutex_unlock(&fs->lock);
	}
	/* this file goes up early only when its spool is worth it: an
	 * upload per small write would send the file again and again */
	pthread_mutex_lock(&fs->lock);
	own = spool_over_locked(fs) && in->spool_disk >= fs->o.spool_limit / 8;
	pthread_mutex_unlock(&fs->lock);
	if (!own || in->stream != NULL)
		return;
	objfs_debug(fs->log, SUB, "spool over %" PRIu64 " bytes: uploading "
		    "inode %" PRIu64 " early", fs->o.spool_limit,
		    (uint64_t)in->ino);
	if (in->dirty && inode_sync(fs, in) == 0)
		spool_drop(fs, in, false);
}

/* Ends the stream of in before a change that is not an append (ns and
 * in->mu held): abandoned, or completed when its parts hold bytes the
 * spool no longer has. */
int stream_stop(struct objfs_fs *fs, struct inode *in)
{
	if (in->stream != NULL && in->stream->punched > 0)
		return inode_sync(fs, in);
	stream_abort(fs, in);
	return 0;
}

/* Stores the attributes of a clean file, symlink or directory (ns read). */
int store_attrs(struct objfs_fs *fs, struct inode *in)
{
	struct objfs_meta meta = OBJFS_META_INIT;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_fattr fa;
	char key[KEYBUF], *link = NULL;
	bool dir, root, in_store;
	int err;

	fs_assert_ns_held(fs);
	err = xattr_load(fs, in, false);        /* the copy replaces them */
	if (err != 0)
		return err;
	pthread_mutex_lock(&fs->lock);
	if (in->link != NULL)
		link = strdup(in->link);
	root = in == fs->root;
	dir = S_ISDIR(in->mode);
	in_store = in->in_store;
	inode_fattr(in, &fa);
	err = root ? 0 : inode_key(fs, in, true, key, sizeof(key));
	if (err == 0)
		err = xattr_meta(fs, in, &meta);
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		goto out;
	if (root)
		snprintf(key, sizeof(key), "%s", OBJFS_ROOT_ATTR_KEY);
	err = objfs_fattr_to_meta(&fa, &meta);
	if (err != 0)
		goto out;
	if (dir || !in_store) {
		struct objfs_put_opts po = { &meta, NULL, false };
		struct objfs_source src;

		objfs_source_mem(&src, "", 0);
		err = objfs_store_put(fs->store, key, &src, &po, &info);
	} else {
		struct objfs_copy_opts co = { OBJFS_META_REPLACE, &meta, NULL, NULL };

		err = objfs_store_copy(fs->store, key, key, &co, &info);
	}
	if (err != 0)
		goto out;
	pthread_mutex_lock(&fs->lock);
	if (!root && !dir && !in_store)
		snap_note_stored(fs, in);       /* listable from now */
	if (!root)
		in->in_store = true;
	in->meta_mask = FATTR_ALL;
	if (!dir && !root) {
		/* same bytes, new ETag: the page cache stays valid */
		if (strcmp(in->cache_etag, in->etag) == 0)
			snprintf(in->cache_etag, sizeof(in->cache_etag), "%s",
				 info.etag);
		snprintf(in->etag, sizeof(in->etag), "%s", info.etag);
	}
	in->attr_time = now_mono();
	pthread_mutex_unlock(&fs->lock);
	/* a symlink whose target is not known here gets no entry */
	if (!dir && !root && (!S_ISLNK(fa.mode) || link != NULL))
		aidx_note(fs, key, info.etag, &fa, FATTR_ALL, link);
out:
	free(link);
	objfs_meta_release(&meta);
	objfs_obj_info_release(&info);
	return err;
}

void attrs_defer(struct objfs_fs *fs, struct inode *in)
{
	fs_assert_locked(fs);
	if (in->attr_dirty)
		return;
	in->attr_dirty = true;
	in->attr_since = now_mono();
	in->refs++;
	fs->n_attr_dirty++;
}

void attrs_done(struct objfs_fs *fs, struct inode *in)
{
	fs_assert_locked(fs);
	if (!in->attr_dirty)
		return;
	/* the caller keeps it: a pin, or an open handle (an upload at
	 * flush or release holds none) */
	assert(in->refs > 0 && fs->n_attr_dirty > 0);
	assert(in->refs > 1 || in->nopen > 0 || in->nlookup > 0);
	in->attr_dirty = false;
	in->refs--;
	fs->n_attr_dirty--;
}

int attrs_sync(struct objfs_fs *fs, struct inode *in)
{
	bool need;
	int err;

	fs_assert_ns_held(fs);
	fs_assert_held(&in->mu);
	pthread_mutex_lock(&fs->lock);
	need = in->attr_dirty;
	if (need && (in->dirty || !(in->linked || in->hl.data))) {
		/* the upload carries them / nothing left to store */
		attrs_done(fs, in);
		need = false;
	}
	pthread_mutex_unlock(&fs->lock);
	if (!need)
		return 0;
	err = store_attrs(fs, in);
	pthread_mutex_lock(&fs->lock);
	if (err == 0) {
		if (in->spool != NULL)
			snprintf(in->spool->base_etag,
				 sizeof(in->spool->base_etag), "%s", in->etag);
		attrs_done(fs, in);
	}
	pthread_mutex_unlock(&fs->lock);
	return err;
}

void attrs_flush(struct objfs_fs *fs, bool all)
{
	struct inode **list = NULL, *in;
	double now = now_mono();
	size_t n = 0, cap, i;
	unsigned h;

	uploads_flush(fs, all);         /* first: an upload carries attributes */
	pthread_mutex_lock(&fs->lock);
	cap = fs->n_attr_dirty;
	if (cap > 0)
		list = calloc(cap, sizeof(*list));
	for (h = 0; list != NULL && h < HASH_SIZE && n < cap; h++) {
		for (in = fs->ino_tab[h]; in != NULL && n < cap; in = in->ino_next) {
			if (in->attr_dirty &&
			    (all || now - in->attr_since >= ATTR_DELAY)) {
				in->refs++;
				list[n++] = in;
			}
		}
	}
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++) {
		int err;

		pthread_rwlock_rdlock(&fs->ns);
		pthread_mutex_lock(&list[i]->mu);
		err = attrs_sync(fs, list[i]);
		pthread_mutex_unlock(&list[i]->mu);
		pthread_rwlock_unlock(&fs->ns);
		if (err != 0)
			objfs_error(fs->log, SUB, "storing the attributes of "
				    "inode %" PRIu64 ": %s", (uint64_t)list[i]->ino,
				    objfs_strerror(err));
		unpin(fs, list[i]);
	}
	free(list);
}

/* Makes an open file's data local before its object goes away, so open
 * handles can still read it (in->mu not held; takes it). */
int keep_open_data(struct objfs_fs *fs, struct inode *in)
{
	bool open;
	int err = 0;

	pthread_mutex_lock(&in->mu);
	pthread_mutex_lock(&fs->lock);
	open = in->nopen > 0 && S_ISREG(in->mode);
	pthread_mutex_unlock(&fs->lock);
	if (open) {
		err = spool_ensure(fs, in);
		if (err == 0)
			err = spool_fetch(fs, in, 0, in->spool->size);
	}
	pthread_mutex_unlock(&in->mu);
	return err;
}

/* Writes size bytes of buf at off into in's spool: see fs_int.h. */
int inode_write(struct objfs_fs *fs, struct inode *in, const char *buf,
		size_t size, uint64_t off)
{
	uint64_t end = off + size;
	int err;

	pthread_rwlock_rdlock(&fs->ns);
	pthread_mutex_lock(&in->mu);
	err = spool_ensure(fs, in);
	if (err == 0)
		err = charge(fs, in, end > in->spool->size ? end : in->spool->size);
	if (err == 0 && off != in->spool->size) {
		/* not an append: the parts sent so far may change */
		in->seq = false;
		err = stream_stop(fs, in);
	}
	if (err == 0)
		err = objfs_spool_write(in->spool, off, buf, size);
	if (err == 0) {
		pthread_mutex_lock(&fs->lock);
		in->size = in->spool->size;
		inode_changed(in, true);
		in->told_unsaved = false;
		if (!in->dirty || in->times_set) {
			/* a successor dates a dirty file from its load unless
			 * utimens set its times (recorded) */
			in->dirty = true;
			in->times_set = false;
			state_note(fs, in);
		}
		pthread_mutex_unlock(&fs->lock);
		stream_feed(fs, in);
		spool_account(fs, in);
		spool_relieve(fs, in);
	}
	pthread_mutex_unlock(&in->mu);
	pthread_rwlock_unlock(&fs->ns);
	return err;
}

/* Gives the spool of in, still dirty after a failed save, a name in the
 * spool directory and says where, once: what cannot be uploaded is not
 * dropped silently when the mount stops (in->mu held; fs_int.h). */
int spool_keep(struct objfs_fs *fs, struct inode *in)
{
	char key[KEYBUF], prefix[64], msg[KEYBUF + 512];
	const char *path = NULL;
	uint64_t size, have;
	bool again;
	int err;

	if (!in->dirty || in->spool == NULL)
		return 0;
	pthread_mutex_lock(&fs->lock);
	if (inode_key(fs, in, false, key, sizeof(key)) != 0)
		snprintf(key, sizeof(key), "inode %" PRIu64, (uint64_t)in->ino);
	pthread_mutex_unlock(&fs->lock);
	snprintf(prefix, sizeof(prefix), OBJFS_SPOOL_KEPT "%ld-%" PRIu64,
		 (long)getpid(), (uint64_t)in->ino);
	again = in->spool->kept != NULL;
	err = objfs_spool_keep(in->spool, fs->spool_dir, prefix, &path);
	if (err != 0) {
		objfs_error(fs->log, SUB, "unsaved data of %s is lost: keeping "
			    "its spool in %s failed: %s", key, fs->spool_dir,
			    objfs_strerror(err));
		return err;
	}
	if (again)
		return 0;
	__atomic_add_fetch(&fs->unsaved_kept, 1, __ATOMIC_RELAXED);
	size = in->spool->size;
	have = objfs_rangeset_bytes(&in->spool->present);
	if (have >= size)
		snprintf(msg, sizeof(msg), "unsaved data of %s (%" PRIu64
			 " bytes) kept in %s", key, size, path);
	else if (in->stream != NULL && in->stream->punched > 0)
		snprintf(msg, sizeof(msg), "unsaved data of %s (%" PRIu64
			 " bytes) kept in %s, less its first %" PRIu64
			 " bytes (zeros there): they were in the parts of "
			 "an upload that did not complete", key, size, path,
			 in->stream->punched);
	else
		snprintf(msg, sizeof(msg), "unsaved data of %s (%" PRIu64
			 " bytes) kept in %s; %" PRIu64 " bytes of it are "
			 "zeros there, unchanged from the stored object "
			 "(ETag %s)", key, size, path, size - have,
			 in->spool->base_etag);
	objfs_error(fs->log, SUB, "%s", msg);
	/* what the file is, beside it, for whoever recovers it */
	err = objfs_spool_note(path, msg);
	if (err != 0)
		objfs_warn(fs->log, SUB, "cannot write %s.txt: %s", path,
			   objfs_strerror(err));
	return 0;
}

/* truncate(2), ftruncate(2), and an open with O_TRUNC: the spool (started
 * over the stored object if need be) cut or extended to size, the stream
 * of a sequential writer aborted (size 0) or ended before it (stream_stop:
 * completed when its parts hold bytes the spool gave up). */
int inode_truncate(struct objfs_fs *fs, struct inode *in, uint64_t size)
{
	int err;

	err = spool_ensure(fs, in);
	if (err == 0)
		err = charge(fs, in, size);
	if (err == 0 && size == 0)
		stream_abort(fs, in);
	else if (err == 0)
		err = stream_stop(fs, in);
	if (err == 0) {
		err = objfs_spool_truncate(in->spool, size);
		in->seq = err == 0 && size == 0;
		spool_account(fs, in);
	}
	if (err != 0)
		return err;
	in->told_unsaved = false;
	pthread_mutex_lock(&fs->lock);
	in->size = in->spool->size;
	in->dirty = true;
	inode_changed(in, true);
	state_note(fs, in);
	pthread_mutex_unlock(&fs->lock);
	return 0;
}
