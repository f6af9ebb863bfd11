/*
 * store.c - the parts of the object store interface that are not a kind:
 * metadata lists, object info, sources and sinks, the objfs_store_* call
 * wrappers, key validation, cancellation tokens, and two conveniences
 * built on the ops:
 *
 *   objfs_store_upload      one put, or a multipart upload whose parts are
 *                           sent by up to `parallel` threads.  States:
 *                           CREATED -> (all parts ok) COMPLETED
 *                                   -> (any failure)  ABORTED
 *                           An upload id never outlives the call: every
 *                           failure after mpu_create ends in mpu_abort.
 *   objfs_store_upload_delta  the same with unchanged stretches copied
 *                           from the stored object by the store (part
 *                           copies), checked against its ETag before the
 *                           upload completes.  Same states.
 *   objfs_store_del_prefix  flat listing pages (start_after the last key of
 *                           the previous page) fed to del_many.  Stateless,
 *                           so a failed call can simply be run again.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/store_error.h"
#include "common/io.h"
#include "common/errors.h"
#include "common/log.h"

/* ---- cancellation ------------------------------------------------------ */

void objfs_cancel_init(struct objfs_cancel *c)
{
	pthread_mutex_init(&c->mu, NULL);
	c->fired = false;
}

void objfs_cancel_release(struct objfs_cancel *c)
{
	pthread_mutex_destroy(&c->mu);
}

void objfs_cancel_fire(struct objfs_cancel *c)
{
	pthread_mutex_lock(&c->mu);
	c->fired = true;
	pthread_mutex_unlock(&c->mu);
}

bool objfs_cancel_fired(struct objfs_cancel *c)
{
	bool fired;

	if (c == NULL)
		return false;
	pthread_mutex_lock(&c->mu);
	fired = c->fired;
	pthread_mutex_unlock(&c->mu);
	return fired;
}

/* ---- user metadata ---------------------------------------------------- */

static char *dup_lower(const char *s)
{
	char *d = strdup(s);
	char *p;

	if (d == NULL)
		return NULL;
	for (p = d; *p != '\0'; p++) {
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	}
	return d;
}

static ssize_t meta_find(const struct objfs_meta *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (strcasecmp(m->items[i].name, name) == 0)
			return (ssize_t)i;
	}
	return -1;
}

int objfs_meta_set(struct objfs_meta *m, const char *name, const char *value)
{
	struct objfs_meta_item *items;
	char *n = NULL, *v = NULL;
	ssize_t at;
	int err = 0;

	if (m == NULL || name == NULL || name[0] == '\0' || value == NULL)
		return EINVAL;
	v = strdup(value);
	if (v == NULL) {
		err = ENOMEM;
		goto out;
	}
	at = meta_find(m, name);
	if (at >= 0) {
		free(m->items[at].value);
		m->items[at].value = v;
		v = NULL;
		goto out;
	}
	n = dup_lower(name);
	if (n == NULL) {
		err = ENOMEM;
		goto out;
	}
	items = realloc(m->items, (m->n + 1) * sizeof(*items));
	if (items == NULL) {
		err = ENOMEM;
		goto out;
	}
	m->items = items;
	items[m->n].name = n;
	items[m->n].value = v;
	m->n++;
	n = NULL;
	v = NULL;
out:
	free(n);
	free(v);
	return err;
}

const char *objfs_meta_get(const struct objfs_meta *m, const char *name)
{
	ssize_t at;

	if (m == NULL || name == NULL)
		return NULL;
	at = meta_find(m, name);
	return at >= 0 ? m->items[at].value : NULL;
}

int objfs_meta_copy(struct objfs_meta *dst, const struct objfs_meta *src)
{
	size_t i;
	int err = 0;

	if (src == NULL)
		return 0;
	for (i = 0; i < src->n; i++) {
		err = objfs_meta_set(dst, src->items[i].name, src->items[i].value);
		if (err != 0)
			break;
	}
	if (err != 0)
		objfs_meta_release(dst);
	return err;
}

void objfs_meta_release(struct objfs_meta *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->n; i++) {
		free(m->items[i].name);
		free(m->items[i].value);
	}
	free(m->items);
	m->items = NULL;
	m->n = 0;
}

/* ---- object info and list pages -------------------------------------- */

void objfs_obj_info_release(struct objfs_obj_info *info)
{
	if (info == NULL)
		return;
	free(info->content_type);
	objfs_meta_release(&info->meta);
	*info = (struct objfs_obj_info)OBJFS_OBJ_INFO_INIT;
}

void objfs_list_page_release(struct objfs_list_page *page)
{
	size_t i;

	if (page == NULL)
		return;
	for (i = 0; i < page->n_entries; i++)
		free(page->entries[i].key);
	free(page->entries);
	for (i = 0; i < page->n_prefixes; i++)
		free(page->prefixes[i]);
	free(page->prefixes);
	free(page->next);
	*page = (struct objfs_list_page)OBJFS_LIST_PAGE_INIT;
}

/* ---- sources ---------------------------------------------------------- */

static int mem_read_at(void *arg, uint64_t off, void *buf, size_t n)
{
	if (n > 0)
		memcpy(buf, (const char *)arg + off, n);
	return 0;
}

void objfs_source_mem(struct objfs_source *src, const void *data, size_t size)
{
	src->size = size;
	src->read_at = mem_read_at;
	src->arg = (void *)data;
}

static int fd_read_at(void *arg, uint64_t off, void *buf, size_t n)
{
	const struct objfs_fd_source *ctx = arg;

	return objfs_pread_all(ctx->fd, buf, n, ctx->off + off);
}

void objfs_source_fd(struct objfs_source *src, struct objfs_fd_source *ctx,
		     int fd, uint64_t off, uint64_t size)
{
	ctx->fd = fd;
	ctx->off = off;
	src->size = size;
	src->read_at = fd_read_at;
	src->arg = ctx;
}

static int slice_read_at(void *arg, uint64_t off, void *buf, size_t n)
{
	const struct objfs_slice_source *ctx = arg;

	return ctx->parent->read_at(ctx->parent->arg, ctx->off + off, buf, n);
}

void objfs_source_slice(struct objfs_source *src,
			struct objfs_slice_source *ctx,
			const struct objfs_source *parent, uint64_t off,
			uint64_t size)
{
	ctx->parent = parent;
	ctx->off = off;
	src->size = size;
	src->read_at = slice_read_at;
	src->arg = ctx;
}

/* ---- sinks ------------------------------------------------------------ */

static int membuf_write_at(void *arg, uint64_t off, const void *data, size_t n)
{
	struct objfs_membuf *mb = arg;
	uint64_t end = off + n;
	size_t cap;
	char *p;

	if (end < off || end > SIZE_MAX / 2 ||
	    (mb->limit != 0 && end > mb->limit))
		return EFBIG;
	if (end > mb->cap) {
		cap = mb->cap != 0 ? mb->cap : 4096;
		while (cap < end)
			cap *= 2;
		if (mb->limit != 0 && cap > mb->limit)
			cap = mb->limit;
		p = realloc(mb->data, cap);
		if (p == NULL)
			return ENOMEM;
		mb->data = p;
		mb->cap = cap;
	}
	if (off > mb->len)
		memset(mb->data + mb->len, 0, (size_t)off - mb->len);
	if (n > 0)
		memcpy(mb->data + off, data, n);
	if (end > mb->len)
		mb->len = (size_t)end;
	return 0;
}

void objfs_sink_membuf(struct objfs_sink *sink, struct objfs_membuf *mb)
{
	sink->write_at = membuf_write_at;
	sink->arg = mb;
}

void objfs_membuf_release(struct objfs_membuf *mb)
{
	if (mb == NULL)
		return;
	free(mb->data);
	mb->data = NULL;
	mb->len = 0;
	mb->cap = 0;
}

static int fixed_write_at(void *arg, uint64_t off, const void *data, size_t n)
{
	struct objfs_fixedbuf *fb = arg;
	uint64_t end = off + n;

	if (end < off || end > fb->cap)
		return EFBIG;
	if (n > 0)
		memcpy(fb->data + off, data, n);
	if (end > fb->got)
		fb->got = (size_t)end;
	return 0;
}

void objfs_sink_fixed(struct objfs_sink *sink, struct objfs_fixedbuf *fb)
{
	sink->write_at = fixed_write_at;
	sink->arg = fb;
}

/* ---- calling a store -------------------------------------------------- */

/* The store that answers op for s: s itself, or, for a layer that left
 * the slot unset, the first store below it that sets it (curl's
 * pass-through defaults: a layer writes only the ops it changes).  A leaf
 * sets every slot but the optional ones, so this ends at the leaf. */
#define IMPL(s, op)							\
	do {								\
		while ((s)->ops->op == NULL && (s)->inner != NULL)	\
			(s) = (s)->inner;				\
	} while (0)

int objfs_store_get(struct objfs_store *s, const char *key,
		    const struct objfs_get_opts *opts,
		    const struct objfs_sink *sink, struct objfs_obj_info *info)
{
	IMPL(s, get);
	return s->ops->get(s, key, opts, sink, info);
}

int objfs_store_put(struct objfs_store *s, const char *key,
		    const struct objfs_source *src,
		    const struct objfs_put_opts *opts,
		    struct objfs_obj_info *info)
{
	IMPL(s, put);
	return s->ops->put(s, key, src, opts, info);
}

int objfs_store_head(struct objfs_store *s, const char *key,
		     struct objfs_obj_info *info)
{
	IMPL(s, head);
	return s->ops->head(s, key, info);
}

int objfs_store_list(struct objfs_store *s, const struct objfs_list_req *req,
		     struct objfs_list_page *page)
{
	IMPL(s, list);
	return s->ops->list(s, req, page);
}

int objfs_store_copy(struct objfs_store *s, const char *src, const char *dst,
		     const struct objfs_copy_opts *opts,
		     struct objfs_obj_info *info)
{
	IMPL(s, copy);
	return s->ops->copy(s, src, dst, opts, info);
}

int objfs_store_del(struct objfs_store *s, const char *key)
{
	IMPL(s, del);
	return s->ops->del(s, key);
}

int objfs_store_del_many(struct objfs_store *s, const char *const *keys,
			 size_t n, size_t *failed)
{
	IMPL(s, del_many);
	return s->ops->del_many(s, keys, n, failed);
}

/* Not forwarded: a layer that maps keys (prefix) must see the delete, so
 * a store without del_deferred deletes at once through its own del. */
int objfs_store_del_deferred(struct objfs_store *s, const char *key)
{
	if (s->ops->del_deferred == NULL)
		return objfs_store_del(s, key);
	return s->ops->del_deferred(s, key);
}

int objfs_store_del_barrier(struct objfs_store *s)
{
	return s->ops->del_barrier != NULL ? s->ops->del_barrier(s) : 0;
}

int objfs_store_mpu_create(struct objfs_store *s, const char *key,
			   const struct objfs_put_opts *opts, char **upload_id)
{
	IMPL(s, mpu_create);
	return s->ops->mpu_create(s, key, opts, upload_id);
}

int objfs_store_mpu_part(struct objfs_store *s, const char *key,
			 const char *upload_id, unsigned number,
			 const struct objfs_source *src, struct objfs_part *part)
{
	IMPL(s, mpu_part);
	return s->ops->mpu_part(s, key, upload_id, number, src, part);
}

int objfs_store_mpu_complete(struct objfs_store *s, const char *key,
			     const char *upload_id,
			     const struct objfs_part *parts, size_t n,
			     struct objfs_obj_info *info)
{
	IMPL(s, mpu_complete);
	return s->ops->mpu_complete(s, key, upload_id, parts, n, info);
}

int objfs_store_mpu_abort(struct objfs_store *s, const char *key,
			  const char *upload_id)
{
	IMPL(s, mpu_abort);
	return s->ops->mpu_abort(s, key, upload_id);
}

int objfs_store_mpu_part_copy(struct objfs_store *s, const char *key,
			      const char *upload_id, unsigned number,
			      const struct objfs_part_copy *pc,
			      struct objfs_part *part)
{
	IMPL(s, mpu_part_copy);
	if (s->ops->mpu_part_copy == NULL)
		return EOPNOTSUPP;
	return s->ops->mpu_part_copy(s, key, upload_id, number, pc, part);
}

void objfs_store_destroy(struct objfs_store *s)
{
	if (s != NULL)
		s->ops->destroy(s);
}

int objfs_key_valid(const char *key)
{
	size_t n;

	if (key == NULL)
		return EINVAL;
	n = strnlen(key, OBJFS_KEY_MAX + 1);
	if (n == 0 || n > OBJFS_KEY_MAX)
		return EINVAL;
	return 0;
}

/* ---- objfs_store_upload ----------------------------------------------- */

/* Shared by the part senders of one upload.  Workers take the next part
 * number under mu; after the first failure no new part is started. */
struct upload_job {
	struct objfs_store *s;
	const char *key;
	const char *upload_id;
	const struct objfs_source *src;
	uint64_t part_size;
	size_t n_parts;
	const struct objfs_delta_seg *plan; /* part i+1 is plan[i], or NULL:
					       part_size bytes of src each */
	const char *base_etag;      /* with plan: the copies' condition */
	uint64_t sent;              /* bytes of src sent; protected by mu */
	struct objfs_part *parts;   /* parts[i] is part i+1 */
	pthread_mutex_t mu;
	size_t next;                /* protected by mu */
	int err;                    /* first failure; protected by mu */
};

static void *upload_worker(void *arg)
{
	struct upload_job *job = arg;
	struct objfs_slice_source sctx;
	struct objfs_source part;
	uint64_t off, len;
	size_t i;
	int err;

	for (;;) {
		pthread_mutex_lock(&job->mu);
		if (job->err != 0 || job->next >= job->n_parts) {
			pthread_mutex_unlock(&job->mu);
			break;
		}
		i = job->next++;
		pthread_mutex_unlock(&job->mu);

		if (job->plan != NULL) {
			off = job->plan[i].off;
			len = job->plan[i].len;
		} else {
			off = (uint64_t)i * job->part_size;
			len = job->src->size - off;
			if (len > job->part_size)
				len = job->part_size;
		}
		if (job->plan != NULL && job->plan[i].copy) {
			struct objfs_part_copy pc = { job->key, off, len,
						      job->base_etag };

			err = objfs_store_mpu_part_copy(job->s, job->key,
							job->upload_id,
							(unsigned)(i + 1), &pc,
							&job->parts[i]);
		} else {
			objfs_source_slice(&part, &sctx, job->src, off, len);
			err = objfs_store_mpu_part(job->s, job->key,
						   job->upload_id,
						   (unsigned)(i + 1), &part,
						   &job->parts[i]);
		}
		pthread_mutex_lock(&job->mu);
		if (job->plan == NULL || !job->plan[i].copy)
			job->sent += len;
		if (err != 0 && job->err == 0)
			job->err = err;
		pthread_mutex_unlock(&job->mu);
		if (err != 0)
			break;
	}
	return NULL;
}

/* Sends every part with up to `parallel` threads (the caller's thread is
 * one of them).  Returns the first failure. */
static int upload_parts(struct upload_job *job, unsigned parallel)
{
	pthread_t *tids = NULL;
	size_t started = 0, i, want;

	want = parallel > 1 ? parallel - 1 : 0;
	if (want > job->n_parts - 1)
		want = job->n_parts - 1;
	if (want > 0)
		tids = calloc(want, sizeof(*tids));
	/* Without memory for threads the caller's thread sends every part. */
	for (i = 0; tids != NULL && i < want; i++) {
		if (pthread_create(&tids[i], NULL, upload_worker, job) != 0)
			break;
		started++;
	}
	upload_worker(job);
	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	return job->err;
}

/* ETags equal but for quotes. */
static bool etag_same(const char *a, const char *b)
{
	size_t la, lb;

	if (*a == '"')
		a++;
	if (*b == '"')
		b++;
	la = strlen(a);
	lb = strlen(b);
	if (la > 0 && a[la - 1] == '"')
		la--;
	if (lb > 0 && b[lb - 1] == '"')
		lb--;
	return la == lb && strncmp(a, b, la) == 0;
}

/* Runs job (s, key, src and part_size or plan, n_parts set) as one
 * multipart upload: its parts, then, when base_etag is set, a HEAD that
 * finds the object still the one the copies read (a store that ignores a
 * copy's condition, Ceph RGW 16, may have copied from a newer object:
 * ESTALE), then the completion; any failure aborts the upload.  0 or the
 * first error. */
static int run_job(struct upload_job *job, const struct objfs_put_opts *opts,
		   unsigned parallel, struct objfs_obj_info *info)
{
	struct objfs_obj_info now = OBJFS_OBJ_INFO_INIT;
	char *upload_id = NULL;
	bool mu_init = false;
	int err, aerr;

	job->parts = calloc(job->n_parts, sizeof(*job->parts));
	if (job->parts == NULL) {
		err = ENOMEM;
		goto out;
	}
	err = pthread_mutex_init(&job->mu, NULL);
	if (err != 0)
		goto out;
	mu_init = true;

	err = objfs_store_mpu_create(job->s, job->key, opts, &upload_id);
	if (err != 0)
		goto out;
	job->upload_id = upload_id;
	err = upload_parts(job, parallel);
	if (err == 0 && job->base_etag != NULL) {
		err = objfs_store_head(job->s, job->key, &now);
		if (err == ENOENT || (err == 0 && !etag_same(now.etag, job->base_etag)))
			err = ESTALE;
	}
	if (err == 0)
		err = objfs_store_mpu_complete(job->s, job->key, upload_id,
					       job->parts, job->n_parts, info);
	if (err != 0) {
		aerr = objfs_store_mpu_abort(job->s, job->key, upload_id);
		if (aerr != 0)
			objfs_warn(job->s->log, "store",
				   "abort of a failed upload failed: %s",
				   objfs_strerror(aerr));
	}
out:
	if (mu_init)
		pthread_mutex_destroy(&job->mu);
	objfs_obj_info_release(&now);
	free(upload_id);
	free(job->parts);
	job->parts = NULL;
	return err;
}

int objfs_store_upload(struct objfs_store *s, const char *key,
		       const struct objfs_source *src,
		       const struct objfs_put_opts *opts, uint64_t part_size,
		       unsigned parallel, struct objfs_obj_info *info)
{
	struct upload_job job = { 0 };

	if (part_size < OBJFS_MPU_MIN_PART)
		part_size = OBJFS_MPU_MIN_PART;
	if (src->size <= part_size)
		return objfs_store_put(s, key, src, opts, info);
	/* Stay within 10,000 parts. */
	if ((src->size + part_size - 1) / part_size > OBJFS_MPU_MAX_PARTS)
		part_size = (src->size + OBJFS_MPU_MAX_PARTS - 1) /
			    OBJFS_MPU_MAX_PARTS;
	if (part_size > OBJFS_MPU_MAX_PART)
		return EFBIG;

	job.s = s;
	job.key = key;
	job.src = src;
	job.part_size = part_size;
	job.n_parts = (size_t)((src->size + part_size - 1) / part_size);
	return run_job(&job, opts, parallel, info);
}

/* ---- objfs_store_upload_delta ------------------------------------------ */

/* A growable array of stretches. */
struct seg_list {
	struct objfs_delta_seg *v;
	size_t n, cap;
};

static int seg_push(struct seg_list *l, uint64_t off, uint64_t len, bool copy)
{
	if (len == 0)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap != 0 ? l->cap * 2 : 16;
		struct objfs_delta_seg *v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL)
			return ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].off = off;
	l->v[l->n].len = len;
	l->v[l->n].copy = copy;
	l->n++;
	return 0;
}

/* The most one part copy copies: the server does that work before it
 * answers, silent (bounded by the S3 leaf's limit for a silent answer),
 * and smaller copies run in parallel. */
#define COPY_PIECE (64ULL << 20)

/* Cuts a stretch into parts: copies into pieces of at most COPY_PIECE, sent
 * stretches into len / part_size pieces (each part_size..2 x part_size,
 * or the whole stretch when shorter), all of about equal size. */
static int seg_split(struct seg_list *out, const struct objfs_delta_seg *sg,
		     uint64_t part_size)
{
	uint64_t n, i, off = sg->off;
	int err = 0;

	if (sg->copy)
		n = (sg->len + COPY_PIECE - 1) / COPY_PIECE;
	else
		n = sg->len / part_size;
	if (n == 0)
		n = 1;
	for (i = 0; i < n && err == 0; i++) {
		uint64_t end = sg->off + sg->len * (i + 1) / n;

		err = seg_push(out, off, end - off, sg->copy);
		off = end;
	}
	return err;
}

/* Greedy, left to right: each unchanged stretch of the base (a "keep")
 * is copied when at least OBJFS_MPU_MIN_PART long once the sent stretch
 * before it (when shorter than that and not the last) took what it lacks
 * from the keep's start, or from the end of the copy before it; else the
 * keep is sent with its neighbours. */
int objfs_store_delta_plan(uint64_t size, uint64_t base_size,
			   const struct objfs_range *changed, size_t n,
			   uint64_t part_size, struct objfs_delta_seg **segs,
			   size_t *nseg)
{
	const uint64_t min = OBJFS_MPU_MIN_PART;
	struct seg_list st = { 0 }, parts = { 0 };
	uint64_t cur = 0, pos = 0, lim, copied = 0;
	size_t i;
	int err = 0;

	*segs = NULL;
	*nseg = 0;
	if (part_size < min)
		part_size = min;
	if (part_size > OBJFS_MPU_MAX_PART / 2)
		part_size = OBJFS_MPU_MAX_PART / 2;
	if (base_size < 2 * part_size || size <= part_size)
		return EOPNOTSUPP;
	lim = base_size < size ? base_size : size;
	for (i = 0; i <= n && err == 0; i++) {
		uint64_t k0 = pos, k1 = i < n ? changed[i].start : lim, s, need;

		if (i < n)
			pos = changed[i].end > pos ? changed[i].end : pos;
		if (k1 > lim)
			k1 = lim;
		if (k1 <= k0)
			continue;
		/* the keep is [k0, k1); the pending send is [cur, k0) */
		s = k0 - cur;
		if (s > 0 && s < min) {
			struct objfs_delta_seg *last =
				st.n > 0 ? &st.v[st.n - 1] : NULL;

			need = min - s;
			if (k1 - k0 >= need + min) {
				k0 += need;
			} else if (last != NULL && last->copy &&
				   last->off + last->len == cur &&
				   last->len >= need + min) {
				last->len -= need;
				copied -= need;
				cur -= need;
			} else {
				continue;       /* sent with its neighbours */
			}
		}
		if (k1 - k0 < min)
			continue;
		err = seg_push(&st, cur, k0 - cur, false);
		if (err == 0)
			err = seg_push(&st, k0, k1 - k0, true);
		copied += k1 - k0;
		cur = k1;
	}
	if (err == 0)
		err = seg_push(&st, cur, size - cur, false);
	if (err == 0 && copied == 0)
		err = EOPNOTSUPP;
	for (i = 0; i < st.n && err == 0; i++)
		err = seg_split(&parts, &st.v[i], part_size);
	if (err == 0 && parts.n > OBJFS_MPU_MAX_PARTS)
		err = EOPNOTSUPP;
	free(st.v);
	if (err != 0) {
		free(parts.v);
		return err;
	}
	*segs = parts.v;
	*nseg = parts.n;
	return 0;
}


int objfs_store_upload_delta(struct objfs_store *s, const char *key,
			     const struct objfs_source *src,
			     const struct objfs_put_opts *opts,
			     uint64_t base_size, const char *base_etag,
			     const struct objfs_range *changed, size_t n,
			     uint64_t part_size, unsigned parallel,
			     uint64_t *sent, struct objfs_obj_info *info)
{
	struct upload_job job = { 0 };
	struct objfs_delta_seg *plan = NULL;
	int err;

	if (sent != NULL)
		*sent = 0;
	if (base_etag == NULL || base_etag[0] == '\0')
		return EOPNOTSUPP;
	err = objfs_store_delta_plan(src->size, base_size, changed, n,
				     part_size, &plan, &job.n_parts);
	if (err != 0)
		return err;
	job.s = s;
	job.key = key;
	job.src = src;
	job.plan = plan;
	job.base_etag = base_etag;
	err = run_job(&job, opts, parallel, info);
	if (err == 0 && info != NULL)
		info->size = src->size;
	if (sent != NULL)
		*sent = job.sent;
	free(plan);
	return err;
}

int objfs_store_probe(struct objfs_store *s, const char *prefix)
{
	struct objfs_list_req lreq;
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	int err;

	memset(&lreq, 0, sizeof(lreq));
	lreq.prefix = prefix != NULL ? prefix : "";
	lreq.max_keys = 1;
	err = objfs_store_list(s, &lreq, &page);
	objfs_list_page_release(&page);
	return err;
}
