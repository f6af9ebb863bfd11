/*
 * capacity.c - the volume's capacity and usage.
 *
 * `used` is one listing of the volume plus local deltas.  The listing is
 * shared by the mounts of the volume through the usage document
 * (OBJFS_USAGE_KEY: bytes, objects, when): scan_main() reads it at start
 * and every usage_refresh seconds, and lists the volume (then writes the
 * document) only when it is missing or older than usage_refresh; so a
 * volume is listed about once per usage_refresh whatever the number of
 * mounts, and a mount starts without listing it.  A mount that changed
 * the usage writes its own view back when it stops (the figures, with the
 * time of the listing they started from), so the next mount starts from
 * them; changes of mounts that run at once show at the next listing.  Each
 * inode carries what it is
 * charged (in->charged, counted in fs->cap.used).  Every size change is
 * charged before it is made (charge(): ENOSPC past the capacity of the
 * volume record), so nothing past the capacity is ever uploaded; shrinks
 * and deletes use charge_force().  Until the first scan ends (scan_done)
 * growing charges wait on scan_cv when the volume has a capacity.  The
 * capacity is re-read from the volume record when older than volrec_ttl
 * (started by statfs on the pool: statfs answers from the figures it has
 * at once, also while the store is down), or 5 s before an ENOSPC.  Counters are under fs->lock;
 * fs->cap.volrec_mu makes one record read at a time.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tree.h"
#include "common/errors.h"
#include "common/io.h"
#include "common/log.h"
#include "fs/fs_int.h"
#include "volume/docstore.h"
#include "volume/hlink.h"
#include "volume/volrec.h"

/* ---- capacity (fs->lock) ---------------------------------------------- */

void charge_force(struct objfs_fs *fs, struct inode *in, uint64_t size)
{
	int64_t d = (int64_t)size - (int64_t)in->charged;

	fs_assert_locked(fs);
	fs->cap.used += d;
	fs->cap.scan_delta += d;
	in->charged = size;
}

/* Charges in for size bytes; ENOSPC when that passes the capacity. */
static int charge_locked(struct objfs_fs *fs, struct inode *in, uint64_t size)
{
	int64_t d = (int64_t)size - (int64_t)in->charged;

	fs_assert_locked(fs);
	if (d > 0 && fs->cap.capacity != 0) {
		while (!fs->cap.scan_done && !fs->stopping)
			pthread_cond_wait(&fs->cap.scan_cv, &fs->lock);
		if (fs->cap.used + d > (int64_t)fs->cap.capacity)
			return ENOSPC;
	}
	charge_force(fs, in, size);
	return 0;
}

void volrec_refresh(struct objfs_fs *fs, double max_age)
{
	struct objfs_volrec v = OBJFS_VOLREC_INIT;
	double now = now_mono();
	int err;

	pthread_mutex_lock(&fs->cap.volrec_mu);
	pthread_mutex_lock(&fs->lock);
	if (now - fs->cap.volrec_time < max_age) {
		pthread_mutex_unlock(&fs->lock);
		goto out;
	}
	pthread_mutex_unlock(&fs->lock);
	err = objfs_volrec_load(fs->store, &v);
	pthread_mutex_lock(&fs->lock);
	if (err == 0 || err == ENOENT) {
		if (fs->cap.capacity != v.capacity_bytes)
			objfs_info(fs->log, SUB, "capacity now %" PRIu64 " bytes",
				   v.capacity_bytes);
		fs->cap.capacity = v.capacity_bytes;
		fs->cap.volrec_time = now;
	} else {
		objfs_warn(fs->log, SUB, "reading the volume record: %s",
			   objfs_strerror(err));
	}
	pthread_mutex_unlock(&fs->lock);
out:
	pthread_mutex_unlock(&fs->cap.volrec_mu);
	objfs_volrec_release(&v);
}

static void volrec_task(void *arg)
{
	struct objfs_fs *fs = arg;

	volrec_refresh(fs, fs->o.volrec_ttl);
	pthread_mutex_lock(&fs->lock);
	fs->cap.volrec_busy = false;
	pthread_mutex_unlock(&fs->lock);
}

void volrec_refresh_async(struct objfs_fs *fs)
{
	bool start;

	pthread_mutex_lock(&fs->lock);
	start = fs->pool != NULL && !fs->cap.volrec_busy && !fs->stopping &&
		now_mono() - fs->cap.volrec_time >= fs->o.volrec_ttl;
	if (start)
		fs->cap.volrec_busy = true;
	pthread_mutex_unlock(&fs->lock);
	if (start && objfs_pool_submit(fs->pool, NULL, volrec_task, fs) != 0) {
		pthread_mutex_lock(&fs->lock);
		fs->cap.volrec_busy = false;
		pthread_mutex_unlock(&fs->lock);
	}
}

/* charge_locked() that re-reads a stale volume record before ENOSPC (the
 * capacity may have been raised).  Takes and releases fs->lock. */
int charge(struct objfs_fs *fs, struct inode *in, uint64_t size)
{
	int err;

	pthread_mutex_lock(&fs->lock);
	err = charge_locked(fs, in, size);
	pthread_mutex_unlock(&fs->lock);
	if (err == ENOSPC) {
		volrec_refresh(fs, 5.0);
		pthread_mutex_lock(&fs->lock);
		err = charge_locked(fs, in, size);
		pthread_mutex_unlock(&fs->lock);
	}
	return err;
}

/* A listing of the volume.  Link sets (volume/hlink.h) are user data
 * under the reserved prefix: counted like files (the mount counts them
 * so, hardlink.c), and checked on the way: the keys of a set come
 * together, its data before its entries, so a set whose data has no
 * entry (the last unlink's DELETE of the data failed, or raced a link)
 * is an orphan: counted and logged, not deleted (a link on another mount
 * may be adding its entry right then: docs/objfs-mount.md). */
struct usage_scan {
	struct objfs_fs *fs;
	uint64_t bytes, count;
	char set[OBJFS_HLINK_ID_LEN + 1];       /* the set being listed */
	bool set_data, set_names;
	uint64_t set_bytes;
	uint64_t sets, orphans, orphan_bytes, no_data;
};

/* The set u->set ends (a key of another one, or the end). */
static void set_end(struct usage_scan *u)
{
	if (u->set[0] == '\0')
		return;
	u->sets++;
	if (u->set_data && !u->set_names) {
		u->orphans++;
		u->orphan_bytes += u->set_bytes;
	}
	if (!u->set_data)
		u->no_data++;   /* a first link under way, or a stale entry */
	u->set[0] = '\0';
}

static void set_key(struct usage_scan *u, const struct objfs_list_entry *e)
{
	char id[OBJFS_HLINK_ID_LEN + 1];
	enum objfs_hlink_kind k = objfs_hlink_key_kind(e->key, id);

	if (k == OBJFS_HLINK_OTHER)
		return;
	if (strcmp(id, u->set) != 0) {
		set_end(u);
		memcpy(u->set, id, sizeof(id));
		u->set_data = u->set_names = false;
		u->set_bytes = 0;
	}
	if (k == OBJFS_HLINK_DATA) {
		u->set_data = true;
		u->set_bytes = e->size;
	} else {
		u->set_names = true;
	}
}

static int usage_page(void *arg, const struct objfs_list_page *pg)
{
	struct usage_scan *u = arg;
	bool stopping;
	size_t i;

	for (i = 0; i < pg->n_entries; i++) {
		if (strncmp(pg->entries[i].key, OBJFS_HLINK_PREFIX,
			    strlen(OBJFS_HLINK_PREFIX)) == 0)
			set_key(u, &pg->entries[i]);
		else if (strncmp(pg->entries[i].key, OBJFS_RESERVED_NAME "/",
				 sizeof(OBJFS_RESERVED_NAME)) == 0)
			continue;
		u->bytes += pg->entries[i].size;
		u->count++;
	}
	pthread_mutex_lock(&u->fs->lock);
	stopping = u->fs->stopping;
	pthread_mutex_unlock(&u->fs->lock);
	return stopping ? ECANCELED : 0;
}

static int scan_usage(struct objfs_fs *fs, uint64_t *bytes, uint64_t *count)
{
	struct usage_scan u;
	int err;

	memset(&u, 0, sizeof(u));
	u.fs = fs;
	err = objfs_tree_walk(fs->store, NULL, 0, usage_page, &u);
	set_end(&u);
	*bytes = u.bytes;
	*count = u.count;
	if (err == 0 && u.orphans > 0)
		objfs_warn(fs->log, SUB, "hard links: %" PRIu64 " of %" PRIu64
			   " link sets have data but no name (%" PRIu64
			   " bytes): orphans, kept (docs/objfs-mount.md)",
			   u.orphans, u.sets, u.orphan_bytes);
	else if (err == 0 && u.sets > 0)
		objfs_debug(fs->log, SUB, "hard links: %" PRIu64 " link sets, "
			    "%" PRIu64 " without data", u.sets, u.no_data);
	return err;
}

/* The usage document: 0 with its figures when it is younger than
 * max_age seconds (*age: how old), else ENOENT or an errno. */
static int usage_load(struct objfs_fs *fs, double max_age, uint64_t *bytes,
		      uint64_t *count, double *age)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	const char *b, *c, *t;
	char *end;
	int err;

	err = objfs_doc_load(fs->store, OBJFS_USAGE_KEY, &kv);
	if (err == 0) {
		b = objfs_kv_get(&kv, "bytes");
		c = objfs_kv_get(&kv, "objects");
		t = objfs_kv_get(&kv, "scanned");
		err = b == NULL || c == NULL || t == NULL ? EINVAL : 0;
	}
	if (err == 0) {
		*bytes = strtoull(b, &end, 10);
		err = *end != '\0' ? EINVAL : 0;
	}
	if (err == 0) {
		*count = strtoull(c, &end, 10);
		err = *end != '\0' ? EINVAL : 0;
	}
	if (err == 0) {
		*age = (double)time(NULL) - strtod(t, &end);
		err = *end != '\0' ? EINVAL :
		      *age > max_age || *age < -max_age ? ENOENT : 0;
	}
	objfs_kv_release(&kv);
	return err;
}

static void usage_save(struct objfs_fs *fs, uint64_t bytes, uint64_t count,
		       time_t scanned)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	char b[32], c[32], t[32];
	int err;

	if (fs->o.read_only)
		return;
	snprintf(b, sizeof(b), "%" PRIu64, bytes);
	snprintf(c, sizeof(c), "%" PRIu64, count);
	snprintf(t, sizeof(t), "%lld", (long long)scanned);
	err = objfs_kv_set(&kv, "bytes", b);
	if (err == 0)
		err = objfs_kv_set(&kv, "objects", c);
	if (err == 0)
		err = objfs_kv_set(&kv, "scanned", t);
	if (err == 0)
		err = objfs_kv_set(&kv, "writer", fs->writer);
	if (err == 0)
		err = objfs_doc_save(fs->store, OBJFS_USAGE_KEY, &kv,
				     "objfs volume usage");
	if (err != 0)
		objfs_warn(fs->log, SUB, "writing the usage document: %s",
			   objfs_strerror(err));
	objfs_kv_release(&kv);
}

void *scan_main(void *arg)
{
	struct objfs_fs *fs = arg;

	pthread_mutex_lock(&fs->lock);
	while (!fs->stopping) {
		uint64_t bytes, count;
		double age = 0, wait;
		bool listed = false;
		int64_t pending = 0;
		unsigned i;
		struct inode *in;
		struct timespec until;
		int err;

		for (i = 0; i < HASH_SIZE; i++) {
			for (in = fs->ino_tab[i]; in != NULL; in = in->ino_next) {
				if (in->dirty)
					pending += (int64_t)in->charged -
						   (int64_t)(in->in_store ?
							     in->stored_size : 0);
			}
		}
		fs->cap.scan_delta = pending;
		fs->cap.scan_obj_delta = 0;
		pthread_mutex_unlock(&fs->lock);
		err = usage_load(fs, fs->o.usage_refresh, &bytes, &count, &age);
		if (err != 0) {
			age = 0;
			listed = true;
			err = scan_usage(fs, &bytes, &count);
			if (err == 0)
				usage_save(fs, bytes, count, time(NULL));
		}
		pthread_mutex_lock(&fs->lock);
		if (err == 0) {
			fs->cap.usage_time = time(NULL) - (time_t)age;
			fs->cap.used = (int64_t)bytes + fs->cap.scan_delta;
			fs->cap.objects = (int64_t)count + fs->cap.scan_obj_delta;
			objfs_debug(fs->log, SUB, "usage: %" PRIu64 " bytes in %"
				    PRIu64 " objects (%s)", bytes, count,
				    listed ? "listed" : "the usage document");
		} else if (err != ECANCELED) {
			objfs_warn(fs->log, SUB, "usage scan: %s",
				   objfs_strerror(err));
		}
		if (!fs->cap.scan_done) {
			/* even after an error: writes must not wait forever */
			fs->cap.scan_done = true;
			pthread_cond_broadcast(&fs->cap.scan_cv);
		}
		/* next when the document gets stale (another mount may have
		 * listed meanwhile) */
		wait = err == 0 ? fs->o.usage_refresh - age : 10;
		if (wait < 1)
			wait = 1;
		objfs_deadline_ms(CLOCK_REALTIME, (long long)wait * 1000, &until);
		while (!fs->stopping &&
		       pthread_cond_timedwait(&fs->cap.scan_cv, &fs->lock, &until) == 0)
			;
	}
	/* this mount's view for the next one (everything is uploaded) */
	if (fs->cap.usage_time != 0 && (fs->cap.scan_delta != 0 || fs->cap.scan_obj_delta != 0)) {
		uint64_t b = fs->cap.used > 0 ? (uint64_t)fs->cap.used : 0;
		uint64_t c = fs->cap.objects > 0 ? (uint64_t)fs->cap.objects : 0;
		time_t t = fs->cap.usage_time;

		pthread_mutex_unlock(&fs->lock);
		usage_save(fs, b, c, t);
		return NULL;
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}
