/*
 * fsmetrics.c - what the filesystem counts (common/metrics.h), kept apart
 * from the operations it counts.
 *
 * FUSE operations are timed by a second ops table (objfs_fs_metered_ops,
 * fsmetered.c) whose every slot calls the real one between a start and
 * an end (fs_metrics_op_begin, fs_metrics_op_end): a
 * request is counted by op, timed, and, when reply_err() answered it on
 * this thread (every objfs operation replies on the thread it runs on),
 * counted again by errno.  The errno travels in a thread-local, set by
 * fs_metrics_note_err() and read at the end of the same request.  A mount
 * without metrics uses the plain table: no cost at all.
 *
 * The rest are a few counters fed by one-line hooks (reads by source and
 * bytes, page-cache keeps and invalidations at open, streamed parts), and
 * gauges a collector reads at scrape time from the state the filesystem
 * keeps anyway (inodes, handles, dirty files and bytes, spools, parts in
 * flight, read-ahead memory, capacity and usage, the on-disk cache).
 * Label values come from the tables below only: never a name or a key.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "common/metrics.h"
#include "fs/fs_int.h"

static const char *const op_names[OP_COUNT] = {
	"lookup", "forget", "forget_multi", "getattr", "setattr", "readlink",
	"mknod", "mkdir", "unlink", "rmdir", "symlink", "rename", "link",
	"open", "read", "write", "flush", "release", "fsync", "opendir",
	"readdir", "readdirplus", "releasedir", "statfs", "create", "fsyncdir",
	"setxattr", "getxattr", "listxattr", "removexattr",
};

/* edge.c's fs_errno() set, then everything else. */
static const int errnos[] = {
	ENOENT, EACCES, EPERM, EIO, ENOSPC, EEXIST, ENOTEMPTY, ENOTDIR,
	EISDIR, EINVAL, ENAMETOOLONG, EROFS, ENOMEM, EFBIG, EXDEV, ENOSYS,
	ENOTSUP, EDQUOT, EINTR, ENODATA, ERANGE, E2BIG,
};
#define N_ERRNOS (sizeof(errnos) / sizeof(errnos[0]))
static const char *const errno_names[N_ERRNOS + 1] = {
	"ENOENT", "EACCES", "EPERM", "EIO", "ENOSPC", "EEXIST", "ENOTEMPTY",
	"ENOTDIR", "EISDIR", "EINVAL", "ENAMETOOLONG", "EROFS", "ENOMEM",
	"EFBIG", "EXDEV", "ENOSYS", "ENOTSUP", "EDQUOT", "EINTR", "ENODATA",
	"ERANGE", "E2BIG", "other",
};

static const char *const read_sources[] = { "readahead", "store", "local" };
static const char *const open_results[] = { "kept", "invalidated" };
static const char *const pf_results[] = {
	"started", "used", "evicted", "expired", "dropped", "failed",
};

#define OPS_LABEL { { "op", op_names, OP_COUNT } }

static const struct objfs_metric_def defs[] = {
#define D_REQUESTS 0
	{ .name = "objfs_fuse_requests_total",
	  .help = "FUSE requests served, by operation.",
	  .type = OBJFS_METRIC_COUNTER, .labels = OPS_LABEL, .n_labels = 1,
	  .sparse = true },
#define D_ERRORS 1
	{ .name = "objfs_fuse_request_errors_total",
	  .help = "FUSE requests answered with an error, by operation and errno.",
	  .type = OBJFS_METRIC_COUNTER,
	  .labels = { { "op", op_names, OP_COUNT },
		      { "errno", errno_names, N_ERRNOS + 1 } },
	  .n_labels = 2, .sparse = true },
#define D_DURATION 2
	{ .name = "objfs_fuse_request_duration_seconds",
	  .help = "Time from a FUSE request's arrival to its answer, by operation.",
	  .type = OBJFS_METRIC_HISTOGRAM, .labels = OPS_LABEL, .n_labels = 1,
	  .bounds = objfs_metric_latency_bounds,
	  .n_bounds = OBJFS_METRIC_LATENCY_N, .scale = 1e9, .sparse = true },
#define D_READ_BYTES 3
	{ .name = "objfs_fs_read_bytes_total",
	  .help = "Bytes applications read from the mount.",
	  .type = OBJFS_METRIC_COUNTER },
#define D_WRITTEN_BYTES 4
	{ .name = "objfs_fs_written_bytes_total",
	  .help = "Bytes applications wrote to the mount (accepted writes).",
	  .type = OBJFS_METRIC_COUNTER },
#define D_READS 5
	{ .name = "objfs_fs_reads_total",
	  .help = "Reads by where their bytes came from: readahead (chunks already fetched), store (a GET while the application waited), local (unsaved data in a spool).",
	  .type = OBJFS_METRIC_COUNTER,
	  .labels = { { "source", read_sources, 3 } }, .n_labels = 1 },
#define D_OPEN_CACHE 6
	{ .name = "objfs_fs_open_page_cache_total",
	  .help = "Opens by what happened to the kernel's page cache of the file: kept (unchanged in the store) or invalidated (changed).",
	  .type = OBJFS_METRIC_COUNTER,
	  .labels = { { "result", open_results, 2 } }, .n_labels = 1 },
#define D_STREAMED 7
	{ .name = "objfs_fs_streamed_parts_total",
	  .help = "Multipart upload parts sent while files were still being written.",
	  .type = OBJFS_METRIC_COUNTER },
#define D_INODES 8
	{ .name = "objfs_fs_inodes",
	  .help = "Inodes the filesystem knows (names the kernel holds, open or unsaved files).",
	  .type = OBJFS_METRIC_GAUGE },
#define D_HANDLES 9
	{ .name = "objfs_fs_open_handles",
	  .help = "Open file and directory handles.",
	  .type = OBJFS_METRIC_GAUGE },
#define D_DIRTY_FILES 10
	{ .name = "objfs_fs_dirty_files",
	  .help = "Files with data not yet in the store.",
	  .type = OBJFS_METRIC_GAUGE },
#define D_DIRTY_BYTES 11
	{ .name = "objfs_fs_dirty_bytes",
	  .help = "Size of the files with data not yet in the store.",
	  .type = OBJFS_METRIC_GAUGE },
#define D_SPOOL 12
	{ .name = "objfs_fs_spool_bytes",
	  .help = "Disk the spools take (unsaved data and files being read back).",
	  .type = OBJFS_METRIC_GAUGE },
#define D_PARTS_INFLIGHT 13
	{ .name = "objfs_fs_upload_parts_in_flight",
	  .help = "Streamed multipart parts being uploaded.",
	  .type = OBJFS_METRIC_GAUGE },
#define D_RA_MEM 14
	{ .name = "objfs_fs_readahead_memory_bytes",
	  .help = "Memory read-ahead buffers hold (bounded by mem_limit).",
	  .type = OBJFS_METRIC_GAUGE },
#define D_CAPACITY 15
	{ .name = "objfs_fs_capacity_bytes",
	  .help = "The volume's capacity (0: unlimited).",
	  .type = OBJFS_METRIC_GAUGE },
#define D_USED 16
	{ .name = "objfs_fs_used_bytes",
	  .help = "Bytes the volume's objects take, as this mount knows it.",
	  .type = OBJFS_METRIC_GAUGE },
#define D_OBJECTS 17
	{ .name = "objfs_fs_objects",
	  .help = "Objects in the volume, as this mount knows it.",
	  .type = OBJFS_METRIC_GAUGE },
#define D_DC_HITS 18
	{ .name = "objfs_fs_disk_cache_hits_total",
	  .help = "Chunks read from the on-disk cache (cache_dir).",
	  .type = OBJFS_METRIC_COUNTER },
#define D_DC_MISSES 19
	{ .name = "objfs_fs_disk_cache_misses_total",
	  .help = "Chunks looked for in the on-disk cache and not found.",
	  .type = OBJFS_METRIC_COUNTER },
#define D_DC_EVICTIONS 20
	{ .name = "objfs_fs_disk_cache_evictions_total",
	  .help = "Chunks evicted from the on-disk cache to stay within cache_size.",
	  .type = OBJFS_METRIC_COUNTER },
#define D_DC_BYTES 21
	{ .name = "objfs_fs_disk_cache_bytes",
	  .help = "Bytes the on-disk cache holds.",
	  .type = OBJFS_METRIC_GAUGE },
#define D_PF 22
	{ .name = "objfs_fs_prefetch_total",
	  .help = "Small files fetched ahead of a reader going through a directory in order (prefetch=N), by what became of them: started, used (by an open or a getattr instead of a request), evicted (pushed out unused), expired (older than attr_ttl when looked up), dropped (the name changed here), failed (the GET failed).",
	  .type = OBJFS_METRIC_COUNTER,
	  .labels = { { "result", pf_results, 6 } }, .n_labels = 1 },
#define D_PF_BYTES 23
	{ .name = "objfs_fs_prefetch_bytes",
	  .help = "Bytes prefetched files hold (at most 8 MiB).",
	  .type = OBJFS_METRIC_GAUGE },
#define D_PF_LISTED 24
	{ .name = "objfs_fs_prefetch_listings_total",
	  .help = "Directories listed ahead of a tree walk (prefetch=N).",
	  .type = OBJFS_METRIC_COUNTER },
#define D_RANGES 25
	{ .name = "objfs_fs_listings_in_ranges_total",
	  .help = "Directories of more than one page listed in parallel ranges split at the names of their attribute index.",
	  .type = OBJFS_METRIC_COUNTER },
#define D_UNSAVED 26
	{ .name = "objfs_fs_unsaved_files",
	  .help = "Files whose unsaved data this mount could not upload and kept in spool_dir as objfs-unsaved-* (those a dead mount left in the state directory, at start; its own, at stop).",
	  .type = OBJFS_METRIC_GAUGE },
#define D_RENEWED 27
	{ .name = "objfs_fs_listings_renewed_total",
	  .help = "Listings of more than one page renewed by a LIST of their tail and their index's new segments instead of listed whole.",
	  .type = OBJFS_METRIC_COUNTER },
};
#define N_DEFS (sizeof(defs) / sizeof(defs[0]))

struct fs_metrics {
	struct objfs_metric *m[N_DEFS];
};

/* The errno reply_err() gave the request running on this thread. */
static __thread int reply_errno;

void fs_metrics_note_err(int err)
{
	reply_errno = err;
}

void fs_metrics_read(struct objfs_fs *fs, enum fs_read_source src, size_t n)
{
	if (fs->metrics == NULL)
		return;
	objfs_metric_add(fs->metrics->m[D_READS], src, 1);
	objfs_metric_add(fs->metrics->m[D_READ_BYTES], 0, n);
}

void fs_metrics_open(struct objfs_fs *fs, bool kept)
{
	if (fs->metrics != NULL)
		objfs_metric_add(fs->metrics->m[D_OPEN_CACHE], kept ? 0 : 1, 1);
}

void fs_metrics_streamed_part(struct objfs_fs *fs)
{
	if (fs->metrics != NULL)
		objfs_metric_add(fs->metrics->m[D_STREAMED], 0, 1);
}

/* ---- a request of the metered ops table (fsmetered.c) -------------------- */

uint64_t fs_metrics_op_begin(void)
{
	reply_errno = 0;
	return objfs_metrics_now_ns();
}

void fs_metrics_op_end(struct objfs_fs *fs, unsigned op, uint64_t t0)
{
	struct fs_metrics *m = fs->metrics;
	size_t idx[2], e;

	if (m == NULL)
		return;
	objfs_metric_observe(m->m[D_DURATION], op, objfs_metrics_now_ns() - t0);
	objfs_metric_add(m->m[D_REQUESTS], op, 1);
	if (reply_errno != 0) {
		for (e = 0; e < N_ERRNOS && errnos[e] != reply_errno; e++)
			;
		idx[0] = op;
		idx[1] = e;
		objfs_metric_add(m->m[D_ERRORS],
				 objfs_metric_index(m->m[D_ERRORS], idx), 1);
	}
}

void fs_metrics_written(struct objfs_fs *fs, size_t n)
{
	if (reply_errno == 0 && fs->metrics != NULL)
		objfs_metric_add(fs->metrics->m[D_WRITTEN_BYTES], 0, n);
}

/* ---- gauges at scrape time ------------------------------------------------ */

static void collect(void *arg)
{
	struct objfs_fs *fs = arg;
	struct fs_metrics *m = fs->metrics;
	int64_t dirty = 0, dirty_bytes = 0, handles = 0, parts = 0;
	const struct objfs_list *l;
	size_t b;

	pthread_mutex_lock(&fs->lock);
	for (b = 0; b < HASH_SIZE; b++) {
		const struct inode *in;

		for (in = fs->ino_tab[b]; in != NULL; in = in->ino_next) {
			if (in->dirty) {
				dirty++;
				dirty_bytes += (int64_t)in->size;
			}
			if (in->stream != NULL) {
				pthread_mutex_lock(&in->stream->mu);
				parts += in->stream->inflight;
				pthread_mutex_unlock(&in->stream->mu);
			}
		}
	}
	objfs_list_each(l, &fs->handles)
		handles++;
	objfs_list_each(l, &fs->dirhandles)
		handles++;
	objfs_metric_set(m->m[D_INODES], 0, (int64_t)fs->n_inodes);
	objfs_metric_set(m->m[D_SPOOL], 0, (int64_t)fs->spool_used);
	objfs_metric_set(m->m[D_CAPACITY], 0, (int64_t)fs->cap.capacity);
	objfs_metric_set(m->m[D_USED], 0, fs->cap.used);
	objfs_metric_set(m->m[D_OBJECTS], 0, fs->cap.objects);
	pthread_mutex_unlock(&fs->lock);
	objfs_metric_set(m->m[D_DIRTY_FILES], 0, dirty);
	objfs_metric_set(m->m[D_DIRTY_BYTES], 0, dirty_bytes);
	objfs_metric_set(m->m[D_HANDLES], 0, handles);
	objfs_metric_set(m->m[D_PARTS_INFLIGHT], 0, parts);
	pthread_mutex_lock(&fs->mem.mu);
	objfs_metric_set(m->m[D_RA_MEM], 0, (int64_t)fs->mem.used);
	pthread_mutex_unlock(&fs->mem.mu);
	if (fs->dcache != NULL) {
		struct objfs_dcache_stats st;

		objfs_dcache_stats(fs->dcache, &st);
		objfs_metric_set(m->m[D_DC_HITS], 0, (int64_t)st.hits);
		objfs_metric_set(m->m[D_DC_MISSES], 0, (int64_t)st.misses);
		objfs_metric_set(m->m[D_DC_EVICTIONS], 0, (int64_t)st.evictions);
		objfs_metric_set(m->m[D_DC_BYTES], 0, (int64_t)st.bytes);
	}
	if (fs->pf.cache != NULL) {
		struct objfs_pfcache_stats st;
		uint64_t v[6];
		size_t i;

		objfs_pfcache_stats(fs->pf.cache, &st);
		v[0] = st.reserved;
		v[1] = st.hits;
		v[2] = st.evicted;
		v[3] = st.expired;
		v[4] = st.dropped;
		v[5] = st.failed;
		for (i = 0; i < 6; i++)
			objfs_metric_set(m->m[D_PF], i, (int64_t)v[i]);
		objfs_metric_set(m->m[D_PF_BYTES], 0, (int64_t)st.bytes);
		pthread_mutex_lock(&fs->lock);
		objfs_metric_set(m->m[D_PF_LISTED], 0, (int64_t)fs->pf.listed);
		pthread_mutex_unlock(&fs->lock);
	}
	objfs_metric_set(m->m[D_RANGES], 0,
			 (int64_t)__atomic_load_n(&fs->listed_ranges,
						  __ATOMIC_RELAXED));
	objfs_metric_set(m->m[D_UNSAVED], 0,
			 (int64_t)__atomic_load_n(&fs->unsaved_kept,
						  __ATOMIC_RELAXED));
	objfs_metric_set(m->m[D_RENEWED], 0,
			 (int64_t)__atomic_load_n(&fs->listed_renewed,
						  __ATOMIC_RELAXED));
}

int objfs_fs_metrics_attach(struct objfs_fs *fs, struct objfs_metrics *reg)
{
	struct fs_metrics *m;
	size_t i;
	int err = 0;

	if (reg == NULL || fs->metrics != NULL)
		return EINVAL;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return ENOMEM;
	for (i = 0; i < N_DEFS && err == 0; i++) {
		/* the on-disk cache's only when there is one */
		if (fs->dcache == NULL && i >= D_DC_HITS && i <= D_DC_BYTES)
			continue;
		/* prefetch's only when it is on */
		if (fs->pf.cache == NULL && i >= D_PF && i <= D_PF_LISTED)
			continue;
		err = objfs_metrics_register(reg, &defs[i], &m->m[i]);
	}
	if (err == 0)
		err = objfs_metrics_add_collector(reg, collect, fs);
	if (err != 0) {
		free(m);
		return err;
	}
	fs->metrics = m;
	return 0;
}

void fs_metrics_free(struct objfs_fs *fs)
{
	free(fs->metrics);
	fs->metrics = NULL;
}
