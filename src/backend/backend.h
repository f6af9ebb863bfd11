/*
 * backend.h - the object store interface of objfs.
 *
 * Everything objfs stores goes through a `struct objfs_store`: a const ops
 * table shared by all instances of one kind, plus per-instance private data
 * and, for layers, the `inner` store they wrap (as in s3backer and curl's
 * connection filters).
 *
 *   leaves:  s3     (libcurl + OpenSSL, src/backend/s3.c)
 *            local  (a directory that behaves like a bucket, src/backend/local.c)
 *   layers:  retry  (capped exponential backoff with jitter, retry.c)
 *            hedge  (races a second GET against a slow one, hedge.c)
 *            limit  (an adaptive bound on requests in flight, limit.c)
 *            meter  (counts and times every request, meter.c)
 *            fault  (injects errors, delays and short reads, fault.c)
 *            prefix (confines every key to a prefix, prefix.c)
 *            delq   (deferred deletes sent in batches, delq.c)
 *
 * Built on the ops: objfs_store_upload (store.c) and the prefix-tree walk,
 * copy, move and delete (tree.h).
 *
 * objfs_store_stack_create() (stack.c) assembles a stack from a config, e.g.
 * prefix -> retry -> limit -> meter -> s3.  Tests build small stacks directly.
 *
 * Conventions for every op:
 *   - returns 0 or a positive errno; never aborts, never prints secrets;
 *   - is thread-safe: any op may be called from many threads at once on the
 *     same store (the FUSE layer uploads parts in parallel);
 *   - keys are raw bytes (UTF-8 in practice), never URL-encoded by callers;
 *     a key is 1..1024 bytes with no NUL; an invalid key is EINVAL;
 *   - a missing object or upload is ENOENT, an unreachable store is
 *     ECONNREFUSED/EHOSTUNREACH/ETIMEDOUT, access denied is EACCES, a failed
 *     precondition (If-Match) is ESTALE, an unsatisfiable range is ERANGE,
 *     a 5xx is EIO, throttling (429, 503 SlowDown) is EAGAIN.
 *
 * Errno table (one place: s3_errors.c maps HTTP status, S3 error code and
 * CURLcode to these).
 */
#ifndef OBJFS_BACKEND_H
#define OBJFS_BACKEND_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct objfs_creds;
struct objfs_log;
struct objfs_metrics;
struct objfs_store;

#define OBJFS_KEY_MAX 1024
/* ETags are kept as the store returns them, quotes included. */
#define OBJFS_ETAG_MAX 80
/* Length meaning "to the end of the object". */
#define OBJFS_LEN_ALL UINT64_MAX
/* S3 limits. */
#define OBJFS_MPU_MIN_PART (5ULL << 20)
#define OBJFS_MPU_MAX_PART (5ULL << 30)
#define OBJFS_MPU_MAX_PARTS 10000
#define OBJFS_DELETE_BATCH 1000

/* ---- user metadata ---------------------------------------------------- */

/* One x-amz-meta-* pair; name is lower-case and has no "x-amz-meta-" prefix.
 * Both strings are owned by the containing objfs_meta. */
struct objfs_meta_item {
	char *name;
	char *value;
};

/* A list of user metadata pairs.  OBJFS_META_INIT is the empty list.
 * Owned by whoever holds the struct; free with objfs_meta_release(). */
struct objfs_meta {
	struct objfs_meta_item *items;
	size_t n;
};
#define OBJFS_META_INIT { NULL, 0 }

/* Sets (replaces or appends) name=value, copying both.  0 or ENOMEM/EINVAL. */
int objfs_meta_set(struct objfs_meta *m, const char *name, const char *value);
/* Returns the value for name (case-insensitive) or NULL; owned by m. */
const char *objfs_meta_get(const struct objfs_meta *m, const char *name);
/* Deep copy into *dst (which must be empty).  0 or ENOMEM. */
int objfs_meta_copy(struct objfs_meta *dst, const struct objfs_meta *src);
/* Frees every item; leaves m empty (OBJFS_META_INIT) and reusable. */
void objfs_meta_release(struct objfs_meta *m);

/* ---- object information ---------------------------------------------- */

/* What head/get/put report about an object.  OBJFS_OBJ_INFO_INIT is empty.
 * content_type and meta are owned by the struct: objfs_obj_info_release(). */
struct objfs_obj_info {
	uint64_t size;
	char etag[OBJFS_ETAG_MAX];     /* "" when unknown */
	struct timespec mtime;         /* Last-Modified; {0,0} when unknown */
	char *content_type;            /* NULL when unknown */
	struct objfs_meta meta;
};
#define OBJFS_OBJ_INFO_INIT { 0, "", { 0, 0 }, NULL, OBJFS_META_INIT }
void objfs_obj_info_release(struct objfs_obj_info *info);

/* ---- data sources and sinks ------------------------------------------ */

/* Where put/part uploads read bytes from.  read_at() may be called several
 * times for the same range (a retried upload resends the same bytes) and
 * from several threads at once for different ranges.  It fills buf with n
 * bytes at offset off (relative to the source) and returns 0 or an errno;
 * a short source is EIO. */
struct objfs_source {
	uint64_t size;
	int (*read_at)(void *arg, uint64_t off, void *buf, size_t n);
	void *arg;
};

/* Where get writes bytes to.  write_at() receives data at offsets relative
 * to the start of the requested range, in increasing order within one
 * attempt; a retried get rewrites the same offsets, so a sink must accept
 * rewrites.  Returns 0 or an errno (which aborts the transfer). */
struct objfs_sink {
	int (*write_at)(void *arg, uint64_t off, const void *data, size_t n);
	void *arg;
};

/* A source over caller memory (not copied; must outlive the op). */
void objfs_source_mem(struct objfs_source *src, const void *data, size_t size);

/* A source over fd bytes [off, off+size) read with pread.  ctx is caller
 * storage that must outlive the op; the fd is not owned. */
struct objfs_fd_source {
	int fd;
	uint64_t off;
};
void objfs_source_fd(struct objfs_source *src, struct objfs_fd_source *ctx,
		     int fd, uint64_t off, uint64_t size);

/* A source over bytes [off, off+size) of another source (for multipart
 * parts).  ctx is caller storage that must outlive the op. */
struct objfs_slice_source {
	const struct objfs_source *parent;
	uint64_t off;
};
void objfs_source_slice(struct objfs_source *src,
			struct objfs_slice_source *ctx,
			const struct objfs_source *parent, uint64_t off,
			uint64_t size);

/* A growable memory buffer sink.  OBJFS_MEMBUF_INIT(limit) is empty; limit
 * caps its size (writes past it fail with EFBIG); 0 means no cap.
 * data is owned by the struct: objfs_membuf_release(). */
struct objfs_membuf {
	char *data;
	size_t len;   /* highest offset written + 1 */
	size_t cap;
	size_t limit;
};
#define OBJFS_MEMBUF_INIT(limit) { NULL, 0, 0, (limit) }
void objfs_sink_membuf(struct objfs_sink *sink, struct objfs_membuf *mb);
void objfs_membuf_release(struct objfs_membuf *mb);

/* A sink into a fixed caller buffer of cap bytes; bytes past cap fail with
 * EFBIG.  *got (caller-owned) ends as the highest offset written + 1. */
struct objfs_fixedbuf {
	char *data;
	size_t cap;
	size_t got;
};
void objfs_sink_fixed(struct objfs_sink *sink, struct objfs_fixedbuf *fb);

/* ---- requests and results -------------------------------------------- */

/* A get abandoned from another thread (the hedge layer's loser).
 * objfs_cancel_init() before use, objfs_cancel_release() after; fire may
 * be called from any thread at any time, once or more: a get carrying it
 * ends with ECANCELED at the leaf's next look (the S3 leaf's progress
 * callback: within a second), and is not retried. */
struct objfs_cancel {
	pthread_mutex_t mu;
	bool fired;               /* mu */
};
void objfs_cancel_init(struct objfs_cancel *c);
void objfs_cancel_release(struct objfs_cancel *c);
void objfs_cancel_fire(struct objfs_cancel *c);
/* c NULL: false. */
bool objfs_cancel_fired(struct objfs_cancel *c);

struct objfs_get_opts {
	uint64_t off;             /* first byte */
	uint64_t len;             /* bytes wanted, or OBJFS_LEN_ALL */
	const char *if_match;     /* ETag the object must have, or NULL (ESTALE) */
	struct objfs_cancel *cancel;    /* NULL, or see above */
	bool background;          /* nobody waits on it yet (a prefetch): a
				     slow answer is not raced by a hedge */
};
#define OBJFS_GET_ALL { 0, OBJFS_LEN_ALL, NULL, NULL, false }

struct objfs_put_opts {
	const struct objfs_meta *meta;   /* NULL for none */
	const char *content_type;        /* NULL for application/octet-stream */
	bool if_none_match;              /* fail with EEXIST if the key exists
					    (best effort: not every store) */
};

enum objfs_meta_directive {
	OBJFS_META_COPY = 0,    /* keep the source's metadata */
	OBJFS_META_REPLACE = 1, /* use the given metadata and content type */
};

struct objfs_copy_opts {
	enum objfs_meta_directive directive;
	const struct objfs_meta *meta;   /* with REPLACE */
	const char *content_type;        /* with REPLACE */
	const char *if_match;            /* source ETag, or NULL */
};

struct objfs_list_req {
	const char *prefix;             /* "" or NULL for all keys */
	const char *delimiter;          /* NULL for a flat listing, usually "/" */
	const char *continuation;       /* token from a previous page, or NULL */
	const char *start_after;        /* key, or NULL */
	unsigned max_keys;              /* 1..1000; 0 means 1000 (the delq
					   layer may return more: delq.c) */
};

struct objfs_list_entry {
	char *key;
	uint64_t size;
	char etag[OBJFS_ETAG_MAX];
	struct timespec mtime;
};

/* One page of a listing, owned by the caller: objfs_list_page_release().
 * Entries and common prefixes are each in S3 (byte-wise) order.
 * OBJFS_LIST_PAGE_INIT is empty. */
struct objfs_list_page {
	struct objfs_list_entry *entries;
	size_t n_entries;
	char **prefixes;                /* common prefixes, each ending in delimiter */
	size_t n_prefixes;
	char *next;                     /* continuation token, NULL on the last page */
};
#define OBJFS_LIST_PAGE_INIT { NULL, 0, NULL, 0, NULL }
void objfs_list_page_release(struct objfs_list_page *page);

/* A half-open byte range [start, end). */
struct objfs_range {
	uint64_t start;
	uint64_t end;
};

struct objfs_part {
	unsigned number;                /* 1..10000 */
	char etag[OBJFS_ETAG_MAX];
};

/* What mpu_part_copy copies: bytes [off, off+len) of the object src
 * (a key of the same store), when it still has ETag if_match (NULL: any). */
struct objfs_part_copy {
	const char *src;
	uint64_t off;
	uint64_t len;
	const char *if_match;
};

/* ---- the interface ---------------------------------------------------- */

/* A leaf sets every slot but the optional ones.  A layer sets only the
 * ops it changes, and destroy: the objfs_store_* wrappers (store.c) send
 * an op whose slot a layer left unset to the first store below it that
 * sets it, as curl's filters pass through by default (the optional
 * del_deferred and del_barrier are not forwarded: see their wrappers).
 * A layer that maps keys (prefix) sets every op that takes one.
 * All ops are thread-safe on one store. */
struct objfs_store_ops {
	const char *name;               /* "s3", "local", "retry", ... */

	/* Reads [opts->off, off+len) of key into sink.  A range past the end
	 * is cut at the end of the object; a range starting past the end of a
	 * non-empty object is ERANGE.  info, when not NULL, receives the
	 * object's size (the whole object), ETag, mtime, content type and
	 * metadata. */
	int (*get)(struct objfs_store *s, const char *key,
		   const struct objfs_get_opts *opts,
		   const struct objfs_sink *sink, struct objfs_obj_info *info);

	/* Creates or replaces key with src's bytes (at most 5 GiB).  info,
	 * when not NULL, receives at least the new ETag. */
	int (*put)(struct objfs_store *s, const char *key,
		   const struct objfs_source *src,
		   const struct objfs_put_opts *opts,
		   struct objfs_obj_info *info);

	/* Size, ETag, mtime, content type and metadata of key. */
	int (*head)(struct objfs_store *s, const char *key,
		    struct objfs_obj_info *info);

	/* One page of keys.  A continuation token the store did not issue is
	 * EINVAL. */
	int (*list)(struct objfs_store *s, const struct objfs_list_req *req,
		    struct objfs_list_page *page);

	/* Server-side copy of src to dst (any size: stores split objects over
	 * 5 GiB into part copies).  info receives the new ETag when not NULL. */
	int (*copy)(struct objfs_store *s, const char *src, const char *dst,
		    const struct objfs_copy_opts *opts,
		    struct objfs_obj_info *info);

	/* Deletes key; deleting a missing key succeeds. */
	int (*del)(struct objfs_store *s, const char *key);

	/* Deletes n keys (any n; stores batch by OBJFS_DELETE_BATCH).  Missing
	 * keys count as deleted.  On error, *failed (when not NULL) is set to
	 * the number of keys not deleted; the first error is returned. */
	int (*del_many)(struct objfs_store *s, const char *const *keys,
			size_t n, size_t *failed);

	/* Multipart upload.  *upload_id is malloc'ed; the caller frees it. */
	int (*mpu_create)(struct objfs_store *s, const char *key,
			  const struct objfs_put_opts *opts, char **upload_id);
	/* Uploads part `number` (1..10000) from src; part->etag is filled.
	 * Parts of one upload may be sent from several threads at once. */
	int (*mpu_part)(struct objfs_store *s, const char *key,
			const char *upload_id, unsigned number,
			const struct objfs_source *src, struct objfs_part *part);
	/* Parts must be in increasing number order.  info gets the ETag. */
	int (*mpu_complete)(struct objfs_store *s, const char *key,
			    const char *upload_id,
			    const struct objfs_part *parts, size_t n,
			    struct objfs_obj_info *info);
	/* Aborting an unknown upload succeeds. */
	int (*mpu_abort)(struct objfs_store *s, const char *key,
			 const char *upload_id);

	/* Frees this instance and (for layers) its inner store. */
	void (*destroy)(struct objfs_store *s);

	/* Optional (NULL in every kind but delq, which sits on top of a
	 * stack; the objfs_store_* wrappers fall back as said there). */
	/* Deletes key later; from now on head/get/list/copy see it gone. */
	int (*del_deferred)(struct objfs_store *s, const char *key);
	/* Waits until every deferred delete queued before the call has been
	 * answered by the store: 0, or EIO when one failed since the last
	 * barrier (those keys are visible again). */
	int (*del_barrier)(struct objfs_store *s);

	/* Part `number` of an upload made by the store from bytes
	 * [pc->off, pc->off + pc->len) of the object pc->src (UploadPartCopy:
	 * nothing is sent but the request); part->etag is filled.  pc->len
	 * is 1..5 GiB and the range lies inside the source (else EINVAL or
	 * ERANGE).  With pc->if_match, a source with another ETag is ESTALE
	 * (best effort: Ceph RGW 16 ignores the condition, so a caller that
	 * must know checks the source again after its last part).  A store
	 * that cannot copy parts is EOPNOTSUPP (the S3 leaf maps
	 * NotImplemented, 501, 405 and 400 InvalidRequest to it, and
	 * answers so at once after the first refusal).  Both leaves set it;
	 * NULL in a leaf is EOPNOTSUPP. */
	int (*mpu_part_copy)(struct objfs_store *s, const char *key,
			     const char *upload_id, unsigned number,
			     const struct objfs_part_copy *pc,
			     struct objfs_part *part);
};

/* An instance.  Created by each kind's constructor; freed by
 * objfs_store_destroy(), which destroys the whole stack below it. */
struct objfs_store {
	const struct objfs_store_ops *ops;
	struct objfs_store *inner;      /* NULL for leaves; owned by this store */
	void *ctx;                      /* private to the kind */
	struct objfs_log *log;          /* not owned; may be NULL */
};

/* ---- calling a store (thin wrappers over ops) ------------------------- */

int objfs_store_get(struct objfs_store *s, const char *key,
		    const struct objfs_get_opts *opts,
		    const struct objfs_sink *sink, struct objfs_obj_info *info);
int objfs_store_put(struct objfs_store *s, const char *key,
		    const struct objfs_source *src,
		    const struct objfs_put_opts *opts,
		    struct objfs_obj_info *info);
int objfs_store_head(struct objfs_store *s, const char *key,
		     struct objfs_obj_info *info);
int objfs_store_list(struct objfs_store *s, const struct objfs_list_req *req,
		     struct objfs_list_page *page);
int objfs_store_copy(struct objfs_store *s, const char *src, const char *dst,
		     const struct objfs_copy_opts *opts,
		     struct objfs_obj_info *info);
int objfs_store_del(struct objfs_store *s, const char *key);
int objfs_store_del_many(struct objfs_store *s, const char *const *keys,
			 size_t n, size_t *failed);
/* A store without del_deferred deletes at once (objfs_store_del); one
 * without del_barrier has nothing to wait for (0). */
int objfs_store_del_deferred(struct objfs_store *s, const char *key);
int objfs_store_del_barrier(struct objfs_store *s);
int objfs_store_mpu_create(struct objfs_store *s, const char *key,
			   const struct objfs_put_opts *opts, char **upload_id);
int objfs_store_mpu_part(struct objfs_store *s, const char *key,
			 const char *upload_id, unsigned number,
			 const struct objfs_source *src, struct objfs_part *part);
int objfs_store_mpu_complete(struct objfs_store *s, const char *key,
			     const char *upload_id,
			     const struct objfs_part *parts, size_t n,
			     struct objfs_obj_info *info);
int objfs_store_mpu_abort(struct objfs_store *s, const char *key,
			  const char *upload_id);
/* A store without mpu_part_copy answers EOPNOTSUPP. */
int objfs_store_mpu_part_copy(struct objfs_store *s, const char *key,
			      const char *upload_id, unsigned number,
			      const struct objfs_part_copy *pc,
			      struct objfs_part *part);
/* Destroys s and everything below it; NULL is fine. */
void objfs_store_destroy(struct objfs_store *s);

/* Checks a key against the rules above: 0 or EINVAL. */
int objfs_key_valid(const char *key);

/* ---- conveniences built on the ops (store.c) --------------------------- */

/* Uploads src to key: a single put when src->size <= part_size, otherwise a
 * multipart upload with parts of part_size bytes sent by up to `parallel`
 * threads; aborts the upload on any failure.  part_size is raised as needed
 * to stay within 10,000 parts and at least OBJFS_MPU_MIN_PART. */
int objfs_store_upload(struct objfs_store *s, const char *key,
		       const struct objfs_source *src,
		       const struct objfs_put_opts *opts, uint64_t part_size,
		       unsigned parallel, struct objfs_obj_info *info);

/* Stores src again as key, whose stored object (base_size bytes, ETag
 * base_etag) src differs from only in `changed` (n sorted, disjoint
 * ranges; bytes of src past base_size count as changed too): a multipart
 * upload whose unchanged stretches are part copies of the stored object
 * (mpu_part_copy, conditional on base_etag) and whose changed ones are
 * read from src and sent, each widened to the 5 MiB S3 wants of every
 * part but the last: less than OBJFS_MPU_MIN_PART of unchanged bytes is
 * sent per changed range, but where an unchanged stretch between two is
 * too short to copy once widened (under 2 x OBJFS_MPU_MIN_PART): then
 * it is sent whole.
 * Copied stretches are cut into parts of at most 64 MiB (the server
 * works on a copy before it answers), sent ones into parts of about
 * part_size; up to `parallel` in flight.  The stored object is checked again (a HEAD) after the last
 * copy, before the upload completes: ESTALE when it is no longer
 * base_etag.  EOPNOTSUPP, before anything was sent, when it does not pay
 * (nothing to copy of at least OBJFS_MPU_MIN_PART, a base under
 * 2 x part_size, more than 10,000 parts); EOPNOTSUPP too when the store
 * refuses part copies.  read_at() of src is only called for the sent
 * stretches (objfs_store_delta_plan() says which).  Aborts the upload on
 * any failure.  0 or an errno; *sent (when not NULL) gets the bytes
 * read from src and sent. */
int objfs_store_upload_delta(struct objfs_store *s, const char *key,
			     const struct objfs_source *src,
			     const struct objfs_put_opts *opts,
			     uint64_t base_size, const char *base_etag,
			     const struct objfs_range *changed, size_t n,
			     uint64_t part_size, unsigned parallel,
			     uint64_t *sent, struct objfs_obj_info *info);

/* One stretch of a delta upload: [off, off+len) of the new object, copied
 * from the same bytes of the stored one or sent from the source. */
struct objfs_delta_seg {
	uint64_t off;
	uint64_t len;
	bool copy;
};
/* The stretches objfs_store_upload_delta() would use, in order, covering
 * [0, size): *segs malloc'ed (caller frees), *nseg set.  0, EOPNOTSUPP
 * (it would not pay: see there) or ENOMEM. */
int objfs_store_delta_plan(uint64_t size, uint64_t base_size,
			   const struct objfs_range *changed, size_t n,
			   uint64_t part_size, struct objfs_delta_seg **segs,
			   size_t *nseg);

/* ---- the kinds --------------------------------------------------------- */

/* Local directory store rooted at dir (created if missing, mode 0700).  A
 * store root holds this marker file (stack.c finds roots by it). */
#define OBJFS_LOCAL_STORE_MARKER ".objfs-store"
int objfs_local_store_create(const char *dir, struct objfs_log *log,
			     struct objfs_store **out);

struct objfs_s3_config {
	const char *endpoint;       /* "http://127.0.0.1:8080", "https://s3.example" */
	const char *region;         /* "us-east-1" when NULL */
	const char *bucket;
	bool path_style;            /* true: endpoint/bucket/key; false: bucket.host */
	const char *ca_file;        /* PEM bundle, or NULL for the system's */
	bool insecure_skip_verify;  /* only when explicitly asked */
	const char *access_key;     /* copied; never logged */
	const char *secret_key;     /* copied; never logged */
	const char *session_token;  /* copied; never logged; may be NULL */
	const struct objfs_creds *keyless; /* without access_key: keys fetched
				       and renewed (role + web identity token
				       file, container endpoint:
				       backend/credprov.h); copied; may be
				       NULL (anonymous) */
	const char *creds_looked;   /* the credential chain's account of
				       where it looked (common/creds.h
				       objfs_aws_env.looked): with neither
				       keys nor a keyless source the store is
				       refused (EACCES, "no credentials
				       found" naming each place); NULL: such
				       a store is anonymous (unsigned) */
	double creds_refresh_s;     /* renew temporary keys this long before
				       they expire; 0: 300 */
	bool unsigned_payload;      /* UNSIGNED-PAYLOAD instead of the hash */
	bool signed_payload;        /* hash payloads even over https, where
				       TLS already protects them and the
				       default is UNSIGNED-PAYLOAD (as the AWS
				       CLI does); plain http always hashes
				       unless unsigned_payload */
	long connect_timeout_ms;    /* 0: 10 s */
	long low_speed_timeout_s;   /* abort a transfer stalled this long while
				       the server works on a large answer
				       (copies, multi-deletes, completions,
				       the answer to an upload); 0: 30 s */
	long stall_timeout_ms;      /* the least silence that is a stall: any
				       other transfer that moves no byte for
				       max(this, 4 x p90 of recent requests'
				       longest silences) (waiting for an
				       answer, sending a body) is abandoned,
				       unless nothing moved since on any
				       (a slow server: s3_req.c); the retry
				       layer tries again; 0: 3000 */
	unsigned max_connections;   /* pooled handles; 0: 16 */
	struct objfs_metrics *metrics;  /* HTTP status, timeouts and connection
					   reuse are counted here; NULL: not
					   counted.  Borrowed. */
};
int objfs_s3_store_create(const struct objfs_s3_config *cfg,
			  struct objfs_log *log, struct objfs_store **out);

/* How long the retry layer keeps trying.  A store that is down (refused or
 * reset connections, timeouts, 5xx, throttling) is ridden through like an
 * NFS hard mount up to max_total_ms, the caller blocked, not failed, when
 * max_attempts is OBJFS_RETRY_UNLIMITED (objfs-mount's default); the CSI
 * plugin caps attempts instead, as its caller retries. */
#define OBJFS_RETRY_UNLIMITED UINT32_MAX
struct objfs_retry_config {
	unsigned max_attempts;      /* total tries, 0: 5; OBJFS_RETRY_UNLIMITED:
				       as many as max_total_ms allows */
	unsigned base_delay_ms;     /* 0: 100 */
	unsigned max_delay_ms;      /* cap of one sleep, 0: 2000 */
	unsigned max_total_ms;      /* give up after this long, 0: 60000 */
	unsigned budget;            /* the retry token bucket's capacity (as
				       the AWS SDKs' standard retry mode: a
				       retry takes 5 tokens, 10 after a
				       timeout or a lost connection; an answer
				       earns 1, or gives back what its retry
				       took).  An empty bucket spaces retries
				       out, never fails a call (retry.c).
				       0: 500; OBJFS_RETRY_NO_BUDGET: none */
	struct objfs_metrics *metrics;  /* retries, give-ups and waits for the
					   budget are counted here; NULL: not
					   counted.  Borrowed. */
};
#define OBJFS_RETRY_NO_BUDGET UINT32_MAX
/* Wraps inner (taking ownership, also on failure). */
int objfs_retry_store_create(struct objfs_store *inner,
			     const struct objfs_retry_config *cfg,
			     struct objfs_store **out);

/* The hedge layer (hedge.c): a ranged GET of at most max_len bytes that
 * has received nothing for a threshold derived from recent GETs (k times
 * the 95th percentile of their longest silences, within [floor_ms,
 * ceiling_ms]; ceiling_ms until enough GETs were seen) is raced by a
 * second one; the first to finish answers, the other is cancelled.
 * Hedges draw on a budget (budget_percent per 100 GETs, at most
 * budget_burst saved up) and none is sent while most GETs are late (the
 * whole server is slow, not one GET).  ceiling_ms 0: no hedging (the
 * layer passes everything through). */
struct objfs_hedge_config {
	unsigned ceiling_ms;        /* 0: off */
	unsigned floor_ms;          /* 0: 50 */
	unsigned k_percent;         /* threshold = p95 * k_percent / 100; 0: 200 */
	uint64_t max_len;           /* 0: 16 MiB */
	unsigned max_hedges;        /* in flight at once; 0: 8 */
	unsigned budget_percent;    /* hedges earned per 100 GETs; 0: 5 */
	unsigned budget_burst;      /* hedges saved up at most (and at the
				       start); 0: 10 */
	unsigned slow_percent;      /* the server is slow when more than half
				       of the current first-byte waits pass
				       p50 * slow_percent / 100 (and
				       floor_ms / 2); 0: 300 */
	struct objfs_metrics *metrics;  /* hedges and refusals are counted
					   here; NULL: not counted.
					   Borrowed. */
};
/* Wraps inner (taking ownership, also on failure). */
int objfs_hedge_store_create(struct objfs_store *inner,
			     const struct objfs_hedge_config *cfg,
			     struct objfs_log *log, struct objfs_store **out);
/* GETs hedged and GETs the hedge answered, since creation (s made by
 * objfs_hedge_store_create()). */
void objfs_hedge_stats(struct objfs_store *s, uint64_t *hedged, uint64_t *won);
/* GETs not hedged at their threshold since creation: for want of budget,
 * or because the whole server was slow (s made by
 * objfs_hedge_store_create(); each GET counted once per reason). */
void objfs_hedge_refusals(struct objfs_store *s, uint64_t *budget,
			  uint64_t *slow);

/* The requests a stack sent: every request the meter layer (meter.c)
 * passed to the store below it, i.e. every try the retry layer made (one
 * op of the S3 leaf is one HTTP request, but for del_many of more than
 * OBJFS_DELETE_BATCH keys and copies of objects over 5 GiB), indexed in
 * this order:
 *   get put head list copy del del_many mpu_create mpu_part mpu_complete
 *   mpu_abort mpu_part_copy
 * Counted with metrics on or off; objfs_store_requests_total (metrics on)
 * counts the same requests, by result too, in the same place. */
#define OBJFS_STORE_REQ_OPS 12
struct objfs_store_requests {
	uint64_t n[OBJFS_STORE_REQ_OPS];
	uint64_t total;
};
/* Reads the counters of the first meter layer at or under s: 0, or ENOENT
 * (*out zeroed) when the stack has none (one not made by
 * objfs_store_stack_create). */
int objfs_store_requests(struct objfs_store *s,
			 struct objfs_store_requests *out);
/* "total=N get=N put=N ..." (ops never called left out) into buf.  0 or
 * ENOSPC. */
int objfs_store_requests_format(const struct objfs_store_requests *r,
				char *buf, size_t cap);

/* Confines inner to keys under prefix ("" allowed; a non-empty prefix is
 * normalised to end in "/").  Keys given to this store are relative to the
 * prefix; listings return relative keys.  Takes ownership of inner, also on
 * failure. */
int objfs_prefix_store_create(struct objfs_store *inner, const char *prefix,
			      struct objfs_store **out);
/* The bytes a key given to s may have: OBJFS_KEY_MAX less the prefixes of
 * the prefix layers in its stack (a longer key is ENAMETOOLONG there). */
size_t objfs_store_key_room(struct objfs_store *s);

/* The meter layer (meter.c): counts every request (objfs_store_requests)
 * and, with reg, counts and times it into reg's objfs_store_* families
 * (reg NULL: registers and exports nothing).  Takes ownership of inner,
 * also on failure; reg must outlive the store. */
int objfs_meter_store_create(struct objfs_store *inner,
			     struct objfs_metrics *reg,
			     struct objfs_store **out);

/* The fault layer: see fault.h for its rules.  Takes ownership of inner. */
struct objfs_fault;
int objfs_fault_store_create(struct objfs_store *inner,
			     struct objfs_store **out, struct objfs_fault **ctl);

/* ---- assembling a stack from configuration (stack.c) ------------------ */

/* Where a volume or bucket lives:
 *   s3://BUCKET[/PREFIX]   the S3 leaf (endpoint etc. from cfg->s3), under
 *                          a meter layer (with cfg->metrics), a limit
 *                          layer (at most s3.max_connections), a retry
 *                          layer, a hedge layer (when cfg->hedge.ceiling_ms)
 *                          and a prefix layer;
 *   file:///DIR[/PREFIX]   the local leaf (under a meter layer with
 *                          cfg->metrics).  Its root is the nearest ancestor
 *                          of the path (or the path itself) that holds a
 *                          local store (a ".objfs-store" marker file); the
 *                          rest is the prefix.  When no ancestor holds one,
 *                          the path itself becomes a new store root.
 * Parsing never touches the network. */
struct objfs_store_config {
	const char *url;
	struct objfs_s3_config s3;        /* bucket is taken from url */
	struct objfs_retry_config retry;
	struct objfs_hedge_config hedge;  /* s3 only */
	unsigned delete_delay_ms;         /* > 0: a delq layer on top
					     (delq.h), deferred deletes sent
					     after this long */
	struct objfs_metrics *metrics;    /* NULL: no meter layer, nothing
					     counted; else also given to the
					     retry layer and the S3 leaf.
					     Borrowed. */
};

/* Splits url into scheme ("s3"/"file"), bucket-or-dir and prefix (may be
 * ""), each malloc'ed and freed by the caller.  0 or EINVAL. */
int objfs_store_url_parse(const char *url, char **scheme, char **bucket,
			  char **prefix);

/* The AWS endpoint of region (NULL or "": us-east-1) for bucket, when no
 * endpoint is configured: https://s3.REGION.amazonaws.com into buf (len
 * bytes), and *path_style false (virtual-hosted, as AWS wants) unless the
 * bucket name has a dot (a virtual host name would not match AWS's TLS
 * certificate).  0 or EINVAL (a region that is not a host label). */
int objfs_s3_aws_endpoint(const char *region, const char *bucket, char *buf,
			  size_t len, bool *path_style);

/* Builds [delq ->] prefix -> [hedge ->] retry -> limit -> [meter ->] leaf
 * for cfg (limit and retry for s3 only); an s3 url without an endpoint
 * gets AWS's (objfs_s3_aws_endpoint).  0 or an errno; *out is owned by
 * the caller (objfs_store_destroy). */
int objfs_store_stack_create(const struct objfs_store_config *cfg,
			     struct objfs_log *log, struct objfs_store **out);

#endif
