/*
 * controller.c - the CSI Controller service (see controller.h for the
 * layout of volumes, snapshots, records and the index).
 *
 * Every handler follows the same shape: check the request (INVALID_ARGUMENT
 * naming the field), parse ids (volid.c: an id objfs did not produce is
 * NOT_FOUND for lookups and INVALID_ARGUMENT for deletes, a malformed one
 * INVALID_ARGUMENT, and neither touches a store), claim the names/ids in
 * the in-progress set (ABORTED when taken), open the root store the id
 * names, then act on full keys in that store.
 *
 * Root stores: the default store is borrowed from the driver; a bucket
 * store is opened per call with cfg.store_open and destroyed at the end.
 *
 * States of a volume, as seen in its store:
 *   absent      no record, maybe index entries or objects of a failed
 *               create/delete: not reported, create and delete both finish
 *               the job when called again;
 *   live        record present;
 *   retained    record with csi.state=retained (deleted with onDelete=
 *               retain): NOT_FOUND for lookups, kept in the store.
 * A snapshot is absent or ready (record present).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "backend/backend.h"
#include "common/errors.h"
#include "common/log.h"
#include "csi.pb-c.h"
#include "csi/caps.h"
#include "csi/claims.h"
#include "csi/controller.h"
#include "csi/driver.h"
#include "csi/pb.h"
#include "csi/volid.h"
#include "volume/catalog.h"
#include "volume/kvtext.h"
#include "volume/layout.h"
#include "volume/volrec.h"

#define SUB "csi"
#define HASH_HEX OBJFS_CATALOG_HASH_HEX
/* volume_context keys, kept in the record as its ctx.* parameters. */
#define CTX_SOURCE OBJFS_VOLREC_CTX "source"
#define CTX_ENDPOINT OBJFS_VOLREC_CTX "endpoint"
#define CTX_REGION OBJFS_VOLREC_CTX "region"
#define CTX_ADDRESSING OBJFS_VOLREC_CTX "addressingStyle"
#define CTX_MOUNT_OPTIONS OBJFS_VOLREC_CTX "mountOptions"
#define MAC_HEX 16
#define TOKEN_MAX (HASH_HEX + 1 + MAC_HEX)
#define NAME_MAX_LEN 1024
#define READABLE_MAX 63
#define COPY_WORKERS 8
#define PAGE_KEYS 1000
#define URL_MAX 2048
#define ENDPOINT_MAX 512
#define REGION_MAX 64

struct objfs_csi_controller {
	struct objfs_csi *csi;                  /* not owned */
	struct objfs_claims busy;               /* the in-progress set */
	unsigned char token_key[32];            /* MAC key of list tokens */
	unsigned copy_workers;
	unsigned page_keys;                     /* keys per listing page */
};

/* ---- state ------------------------------------------------------------ */

int objfs_csi_controller_create(struct objfs_csi *csi,
				struct objfs_csi_controller **out)
{
	struct objfs_csi_controller *c;
	size_t got = 0;
	ssize_t r;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return ENOMEM;
	c->csi = csi;
	c->copy_workers = COPY_WORKERS;
	c->page_keys = PAGE_KEYS;
	while (got < sizeof(c->token_key)) {
		r = getrandom(c->token_key + got, sizeof(c->token_key) - got, 0);
		if (r <= 0) {
			free(c);
			return EIO;
		}
		got += (size_t)r;
	}
	if (objfs_claims_init(&c->busy) != 0) {
		free(c);
		return ENOMEM;
	}
	*out = c;
	return 0;
}

void objfs_csi_controller_tune(struct objfs_csi_controller *c,
			       unsigned page_keys, unsigned copy_workers)
{
	if (page_keys >= 1 && page_keys <= PAGE_KEYS)
		c->page_keys = page_keys;
	if (copy_workers >= 1 && copy_workers <= COPY_WORKERS)
		c->copy_workers = copy_workers;
}

void objfs_csi_controller_destroy(struct objfs_csi_controller *c)
{
	if (c == NULL)
		return;
	objfs_claims_release(&c->busy);
	free(c);
}

/* ---- small helpers ---------------------------------------------------- */

static enum objfs_rpc_code oom(struct objfs_rpc_status *st)
{
	return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
}

/* Claims keys for a handler: ABORTED naming what (a "volume" or a
 * "snapshot") and name when another call holds one of them. */
static enum objfs_rpc_code claim_rpc(struct objfs_csi *csi,
				     const char *const *keys, size_t n,
				     const char *what, const char *name,
				     struct objfs_rpc_status *st)
{
	int err = objfs_claims_take(&csi->controller->busy, keys, n);

	if (err == EBUSY)
		return objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "an operation on %s %.128s is in progress",
				      what, name);
	if (err != 0)
		return oom(st);
	return OBJFS_RPC_OK;
}

/* Fails with the code for a store errno; what names the step. */
static enum objfs_rpc_code store_fail(struct objfs_csi *csi,
				      struct objfs_rpc_status *st, int err,
				      const char *what, const char *id)
{
	enum objfs_rpc_code code = objfs_rpc_code_from_errno(err);

	if (code == OBJFS_RPC_NOT_FOUND || code == OBJFS_RPC_ALREADY_EXISTS ||
	    code == OBJFS_RPC_INVALID_ARGUMENT || code == OBJFS_RPC_OK)
		code = OBJFS_RPC_INTERNAL;
	/* ABORTED means "another call on this volume" to a CO: a throttled
	 * or busy store is UNAVAILABLE (retry with backoff). */
	if (code == OBJFS_RPC_ABORTED)
		code = OBJFS_RPC_UNAVAILABLE;
	objfs_warn(csi->log, SUB, "%s %s: %s", what, id, objfs_strerror(err));
	return objfs_rpc_fail(st, code, "%s %s: %s", what, id, objfs_strerror(err));
}

static const char *secret_get(void *const *entries, size_t n, const char *key)
{
	const char *v = objfs_pb_map_get(entries, n, key);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* ---- parameters ------------------------------------------------------- */

enum on_delete { ON_DELETE_DELETE, ON_DELETE_RETAIN, ON_DELETE_ARCHIVE };

struct vparams {
	const char *bucket;
	const char *base_prefix;
	const char *endpoint;
	const char *region;
	const char *addressing;
	const char *on_delete;
	const char *archive_prefix;
	const char *mount_options;
	enum on_delete policy;
};

static const char *const known_params[] = {
	"bucket", "basePrefix", "endpoint", "region", "addressingStyle",
	"onDelete", "archivePrefix", "mountOptions",
};

/* Reads and checks StorageClass parameters.  INVALID_ARGUMENT names the
 * offending key (values are not secret, but are cut short). */
static enum objfs_rpc_code params_parse(void *const *entries, size_t n,
					struct vparams *p,
					struct objfs_rpc_status *st)
{
	size_t i, j;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < n; i++) {
		const struct objfs_pb_map_entry *e = entries[i];
		bool known = false;

		if (strncmp(e->key, "csi.storage.k8s.io/", 19) == 0)
			continue;
		for (j = 0; j < sizeof(known_params) / sizeof(known_params[0]); j++)
			known = known || strcmp(e->key, known_params[j]) == 0;
		if (!known)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "unknown parameter \"%.64s\" (known: bucket, basePrefix, endpoint, region, addressingStyle, onDelete, archivePrefix, mountOptions)",
					      e->key);
		if (objfs_kv_value_valid(e->value) != 0 || strlen(e->value) > 1024)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "parameter %s: value too long or has a line break",
					      e->key);
	}
	p->bucket = secret_get(entries, n, "bucket");
	p->base_prefix = secret_get(entries, n, "basePrefix");
	p->endpoint = secret_get(entries, n, "endpoint");
	p->region = secret_get(entries, n, "region");
	p->addressing = secret_get(entries, n, "addressingStyle");
	p->on_delete = secret_get(entries, n, "onDelete");
	p->archive_prefix = secret_get(entries, n, "archivePrefix");
	p->mount_options = secret_get(entries, n, "mountOptions");
	if (p->bucket != NULL && objfs_id_bucket_valid(p->bucket) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter bucket \"%.64s\" is not a valid S3 bucket name",
				      p->bucket);
	if (p->bucket == NULL && (p->endpoint != NULL || p->region != NULL ||
				  p->addressing != NULL))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameters endpoint, region and addressingStyle need parameter bucket");
	if (p->base_prefix != NULL && objfs_id_prefix_valid(p->base_prefix) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter basePrefix \"%.64s\" must be segments of [A-Za-z0-9._-] joined by '/', none starting with '.'",
				      p->base_prefix);
	if (p->archive_prefix != NULL && objfs_id_prefix_valid(p->archive_prefix) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter archivePrefix \"%.64s\" must be segments of [A-Za-z0-9._-] joined by '/', none starting with '.'",
				      p->archive_prefix);
	if (p->endpoint != NULL && strncmp(p->endpoint, "http://", 7) != 0 &&
	    strncmp(p->endpoint, "https://", 8) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter endpoint must start with http:// or https://");
	if (p->endpoint != NULL && strlen(p->endpoint) >= ENDPOINT_MAX)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter endpoint is too long");
	if (p->region != NULL && strlen(p->region) >= REGION_MAX)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter region is too long");
	if (p->addressing != NULL && strcmp(p->addressing, "path") != 0 &&
	    strcmp(p->addressing, "virtual") != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter addressingStyle must be path or virtual");
	p->policy = ON_DELETE_DELETE;
	if (p->on_delete == NULL || strcmp(p->on_delete, "delete") == 0)
		p->policy = ON_DELETE_DELETE;
	else if (strcmp(p->on_delete, "retain") == 0)
		p->policy = ON_DELETE_RETAIN;
	else if (strcmp(p->on_delete, "archive") == 0)
		p->policy = ON_DELETE_ARCHIVE;
	else
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter onDelete must be delete, retain or archive");
	if (p->archive_prefix != NULL && p->policy != ON_DELETE_ARCHIVE)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameter archivePrefix needs onDelete=archive");
	return OBJFS_RPC_OK;
}

/* A digest of the parameters that shape a volume, to tell a repeated
 * CreateVolume from a conflicting one. */
static void params_digest(const struct vparams *p, char *out)
{
	char buf[8192];
	int n;

	n = snprintf(buf, sizeof(buf),
		     "bucket=%s\nbasePrefix=%s\nendpoint=%s\nregion=%s\naddressingStyle=%s\nonDelete=%s\narchivePrefix=%s\nmountOptions=%s\n",
		     p->bucket ? p->bucket : "", p->base_prefix ? p->base_prefix : "",
		     p->endpoint ? p->endpoint : "", p->region ? p->region : "",
		     p->addressing ? p->addressing : "",
		     p->on_delete ? p->on_delete : "",
		     p->archive_prefix ? p->archive_prefix : "",
		     p->mount_options ? p->mount_options : "");
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	objfs_id_hash(buf, (size_t)n, out, HASH_HEX);
}

/* ---- root stores ------------------------------------------------------ */

/* Where a bucket lives (not secret). */
struct conn {
	char endpoint[ENDPOINT_MAX];
	char region[REGION_MAX];
	char addressing[16];
};

struct root {
	struct objfs_store *store;      /* the default store (borrowed) or owned */
	bool owned;
	struct conn conn;               /* for bucket stores */
};

static void conn_pick(char *dst, size_t cap, const char *a, const char *b,
		      const char *c, const char *d)
{
	const char *v = a != NULL ? a : b != NULL ? b : c != NULL ? c : d;

	snprintf(dst, cap, "%s", v != NULL ? v : "");
}

/* Resolves the connection of a bucket volume: first the hint (parameters
 * or the index), then the secret, then the plugin's defaults. */
static void conn_resolve(struct objfs_csi *csi, const struct objfs_kv *hint,
			 const struct vparams *p, void *const *secrets,
			 size_t n_secrets, struct conn *out)
{
	const char *he = NULL, *hr = NULL, *ha = NULL;

	if (p != NULL) {
		he = p->endpoint;
		hr = p->region;
		ha = p->addressing;
	} else if (hint != NULL) {
		he = objfs_kv_get(hint, CTX_ENDPOINT);
		hr = objfs_kv_get(hint, CTX_REGION);
		ha = objfs_kv_get(hint, CTX_ADDRESSING);
	}
	conn_pick(out->endpoint, sizeof(out->endpoint), he,
		  secret_get(secrets, n_secrets, "endpoint"),
		  csi->cfg.store.s3.endpoint, NULL);
	conn_pick(out->region, sizeof(out->region), hr,
		  secret_get(secrets, n_secrets, "region"),
		  csi->cfg.store.s3.region, "us-east-1");
	conn_pick(out->addressing, sizeof(out->addressing), ha,
		  secret_get(secrets, n_secrets, "addressingStyle"),
		  csi->cfg.store.url != NULL && strncmp(csi->cfg.store.url, "s3:", 3) == 0 &&
		  !csi->cfg.store.s3.path_style ? "virtual" : NULL, "path");
}

static void root_close(struct root *r)
{
	if (r->owned)
		objfs_store_destroy(r->store);
	r->store = NULL;
	r->owned = false;
}

/* Writes a PEM bundle given in the secrets (key caBundle) to
 * STATE_DIR/ca/<sha256>.pem (once; content-addressed, so concurrent calls
 * agree) and puts its path in path. */
static int ca_bundle_file(struct objfs_csi *csi, const char *pem, char *path,
			  size_t cap)
{
	char hash[65], dir[PATH_MAX], tmp[PATH_MAX + 32];
	size_t len = strlen(pem), done = 0;
	ssize_t w;
	int fd, err = 0;

	if (csi->cfg.state_dir == NULL || csi->cfg.state_dir[0] == '\0')
		return ENOTSUP;
	if (len == 0 || len > 1024 * 1024 || strstr(pem, "-----BEGIN") == NULL)
		return EINVAL;
	objfs_id_hash(pem, len, hash, 64);
	snprintf(dir, sizeof(dir), "%s/ca", csi->cfg.state_dir);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return errno;
	if ((size_t)snprintf(path, cap, "%s/%s.pem", dir, hash) >= cap)
		return ENAMETOOLONG;
	if (access(path, R_OK) == 0)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	while (done < len) {
		w = write(fd, pem + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? errno : EIO;
			break;
		}
		done += (size_t)w;
	}
	if (close(fd) != 0 && err == 0)
		err = errno;
	if (err == 0 && rename(tmp, path) != 0)
		err = errno;
	if (err != 0)
		unlink(tmp);
	return err;
}

/* Opens the root store of id.  For a bucket, conn must be resolved; keys
 * come from the secrets, else the plugin's own. */
static enum objfs_rpc_code root_open(struct objfs_csi *csi,
				     const struct objfs_id *id,
				     const struct conn *conn,
				     void *const *secrets, size_t n_secrets,
				     struct root *r, struct objfs_rpc_status *st)
{
	struct objfs_store_config sc;
	char url[128], ca[PATH_MAX];
	const char *ak, *sk, *v;
	int err;

	memset(r, 0, sizeof(*r));
	if (id->store == OBJFS_ID_DEFAULT) {
		if (csi->store == NULL)
			return objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
					      "no default object store is configured");
		r->store = csi->store;
		return OBJFS_RPC_OK;
	}
	if (csi->cfg.store_open == NULL)
		return objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "this plugin serves volumes of its default store only");
	if (conn->endpoint[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "bucket %s: no S3 endpoint (give parameter or secret \"endpoint\", or start objfs-csi with --s3-endpoint)",
				      id->bucket);
	r->conn = *conn;
	sc = csi->cfg.store;
	snprintf(url, sizeof(url), "s3://%s", id->bucket);
	sc.url = url;
	sc.s3.endpoint = r->conn.endpoint;
	sc.s3.region = r->conn.region;
	sc.s3.path_style = strcmp(r->conn.addressing, "virtual") != 0;
	ak = secret_get(secrets, n_secrets, "accessKeyID");
	sk = secret_get(secrets, n_secrets, "secretAccessKey");
	if ((ak == NULL) != (sk == NULL))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "secrets must hold both accessKeyID and secretAccessKey, or neither");
	if (ak != NULL) {
		sc.s3.access_key = ak;
		sc.s3.secret_key = sk;
		sc.s3.session_token = secret_get(secrets, n_secrets, "sessionToken");
	}
	v = secret_get(secrets, n_secrets, "caBundle");
	if (v != NULL) {
		err = ca_bundle_file(csi, v, ca, sizeof(ca));
		if (err != 0)
			return objfs_rpc_fail(st, err == EINVAL ? OBJFS_RPC_INVALID_ARGUMENT :
					      OBJFS_RPC_FAILED_PRECONDITION,
					      "secret caBundle: %s", err == EINVAL ?
					      "not a PEM bundle" : objfs_strerror(err));
		sc.s3.ca_file = ca;
	}
	err = csi->cfg.store_open(&sc, csi->log, &r->store);
	if (err != 0) {
		enum objfs_rpc_code code = objfs_rpc_code_from_errno(err);

		r->store = NULL;
		if (code == OBJFS_RPC_NOT_FOUND || code == OBJFS_RPC_ALREADY_EXISTS)
			code = OBJFS_RPC_FAILED_PRECONDITION;
		return objfs_rpc_fail(st, code,
				      "cannot open bucket %s at %s: %s", id->bucket,
				      r->conn.endpoint, objfs_strerror(err));
	}
	r->owned = true;
	return OBJFS_RPC_OK;
}

/* The catalog kind of an id. */
static enum objfs_catalog_kind id_kind(const struct objfs_id *id)
{
	return id->type == OBJFS_ID_VOLUME ? OBJFS_CATALOG_VOLUME :
	       OBJFS_CATALOG_SNAPSHOT;
}

/* Opens the root store of an id for the id-only calls: a bucket's
 * connection comes from the index (what the create used), else the
 * secrets, else the defaults. */
static enum objfs_rpc_code root_open_by_id(struct objfs_csi *csi,
					   const struct objfs_id *id,
					   const char *id_text,
					   void *const *secrets, size_t n_secrets,
					   struct root *r, struct objfs_rpc_status *st)
{
	struct objfs_kv idx = OBJFS_KV_INIT;
	struct conn conn;
	enum objfs_rpc_code code;

	memset(&conn, 0, sizeof(conn));
	if (id->store == OBJFS_ID_BUCKET) {
		if (objfs_catalog_load(csi->store, id_kind(id), id_text, &idx) != 0)
			objfs_kv_release(&idx);
		conn_resolve(csi, idx.n > 0 ? &idx : NULL, NULL, secrets,
			     n_secrets, &conn);
		/* Nothing in the index and nowhere to look: objfs knows
		 * nothing of it (deleted already, or never made). */
		if (idx.n == 0 && conn.endpoint[0] == '\0') {
			memset(r, 0, sizeof(*r));
			return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND,
					      "%s is unknown: not in the index, and no endpoint (secret \"endpoint\" or --s3-endpoint) to look for it",
					      id_text);
		}
	}
	code = root_open(csi, id, &conn, secrets, n_secrets, r, st);
	objfs_kv_release(&idx);
	return code;
}

/* ---- walking, copying and deleting prefixes --------------------------- */

typedef int (*page_fn)(void *arg, const struct objfs_list_page *page);

/* Calls fn on every page of the flat listing of prefix (full keys). */
static int walk_prefix(struct objfs_store *s, const char *prefix,
		       unsigned page_keys, page_fn fn, void *arg)
{
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_list_req req;
	char *after = NULL;
	bool more;
	int err = 0;

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.prefix = prefix;
		req.start_after = after;
		req.max_keys = page_keys;
		err = objfs_store_list(s, &req, &page);
		if (err != 0)
			break;
		if (page.n_entries == 0) {
			objfs_list_page_release(&page);
			break;
		}
		err = fn(arg, &page);
		free(after);
		after = strdup(page.entries[page.n_entries - 1].key);
		more = page.next != NULL;
		objfs_list_page_release(&page);
		if (err == 0 && after == NULL)
			err = ENOMEM;
		if (err != 0 || !more)
			break;
	}
	free(after);
	return err;
}

struct copy_batch {
	struct objfs_store *s;
	char **src;
	char **dst;
	size_t n;
	size_t next;            /* protected by mu */
	int err;                /* protected by mu: the first failure */
	pthread_mutex_t mu;
};

static void *copy_worker(void *arg)
{
	struct copy_batch *b = arg;
	size_t i;
	int err;

	for (;;) {
		pthread_mutex_lock(&b->mu);
		if (b->err != 0 || b->next >= b->n) {
			pthread_mutex_unlock(&b->mu);
			break;
		}
		i = b->next++;
		pthread_mutex_unlock(&b->mu);
		err = objfs_store_copy(b->s, b->src[i], b->dst[i], NULL, NULL);
		if (err != 0) {
			pthread_mutex_lock(&b->mu);
			if (b->err == 0)
				b->err = err;
			pthread_mutex_unlock(&b->mu);
		}
	}
	return NULL;
}

/* Copies src[i] to dst[i] for every i with up to workers threads. */
static int copy_parallel(struct objfs_store *s, char **src, char **dst,
			 size_t n, unsigned workers)
{
	struct copy_batch b;
	pthread_t th[COPY_WORKERS];
	size_t i, started = 0;

	memset(&b, 0, sizeof(b));
	b.s = s;
	b.src = src;
	b.dst = dst;
	b.n = n;
	if (pthread_mutex_init(&b.mu, NULL) != 0)
		return ENOMEM;
	if (workers > COPY_WORKERS)
		workers = COPY_WORKERS;
	for (i = 1; i < workers && i < n; i++) {
		if (pthread_create(&th[started], NULL, copy_worker, &b) != 0)
			break;
		started++;
	}
	copy_worker(&b);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&b.mu);
	return b.err;
}

/* Keys relative to a prefix that a copy leaves out. */
struct tree_op {
	struct objfs_store *s;
	unsigned page_keys;
	const char *src;        /* "a/b/" */
	const char *dst;        /* "c/" (copy) */
	const char *const *skip;        /* relative keys left out, NULL-ended */
	unsigned workers;
	uint64_t bytes;
	uint64_t count;
};

static bool skipped(const struct tree_op *op, const char *rel)
{
	size_t i;

	for (i = 0; op->skip != NULL && op->skip[i] != NULL; i++) {
		if (strcmp(op->skip[i], rel) == 0)
			return true;
	}
	return false;
}

static int copy_page(void *arg, const struct objfs_list_page *page)
{
	struct tree_op *op = arg;
	size_t plen = strlen(op->src), dlen = strlen(op->dst);
	char **src = calloc(page->n_entries, sizeof(*src));
	char **dst = calloc(page->n_entries, sizeof(*dst));
	size_t i, n = 0;
	int err = 0;

	if (src == NULL || dst == NULL) {
		err = ENOMEM;
		goto out;
	}
	for (i = 0; i < page->n_entries; i++) {
		const char *key = page->entries[i].key;
		const char *rel = key + plen;

		if (strncmp(key, op->src, plen) != 0 || skipped(op, rel))
			continue;
		if (dlen + strlen(rel) > OBJFS_KEY_MAX) {
			err = ENAMETOOLONG;
			goto out;
		}
		dst[n] = malloc(dlen + strlen(rel) + 1);
		if (dst[n] == NULL) {
			err = ENOMEM;
			goto out;
		}
		memcpy(dst[n], op->dst, dlen);
		memcpy(dst[n] + dlen, rel, strlen(rel) + 1);
		src[n] = (char *)key;
		n++;
		op->bytes += page->entries[i].size;
		op->count++;
	}
	err = copy_parallel(op->s, src, dst, n, op->workers);
out:
	if (dst != NULL) {
		for (i = 0; i < n; i++)
			free(dst[i]);
	}
	free(src);
	free(dst);
	return err;
}

static int size_page(void *arg, const struct objfs_list_page *page)
{
	struct tree_op *op = arg;
	size_t plen = strlen(op->src), i;

	for (i = 0; i < page->n_entries; i++) {
		if (skipped(op, page->entries[i].key + plen))
			continue;
		op->bytes += page->entries[i].size;
		op->count++;
	}
	return 0;
}

static int delete_page(void *arg, const struct objfs_list_page *page)
{
	struct tree_op *op = arg;
	size_t plen = strlen(op->src);
	const char **keys = calloc(page->n_entries, sizeof(*keys));
	size_t i, n = 0;
	int err;

	if (keys == NULL)
		return ENOMEM;
	for (i = 0; i < page->n_entries; i++) {
		if (skipped(op, page->entries[i].key + plen))
			continue;
		keys[n++] = page->entries[i].key;
	}
	err = n > 0 ? objfs_store_del_many(op->s, keys, n, NULL) : 0;
	if (err == 0)
		op->count += n;
	free(keys);
	return err;
}

/* Copies every key under src (ending in '/') to dst + the same relative
 * key, skipping skip[].  *bytes gets the bytes copied. */
static int tree_copy(struct objfs_csi_controller *c, struct objfs_store *s,
		     const char *src, const char *dst, const char *const *skip,
		     uint64_t *bytes)
{
	struct tree_op op = { s, c->page_keys, src, dst, skip, c->copy_workers, 0, 0 };
	int err = walk_prefix(s, src, op.page_keys, copy_page, &op);

	if (bytes != NULL)
		*bytes = op.bytes;
	return err;
}

static int tree_size(struct objfs_csi_controller *c, struct objfs_store *s,
		     const char *prefix, const char *const *skip, uint64_t *bytes)
{
	struct tree_op op = { s, c->page_keys, prefix, NULL, skip, 0, 0, 0 };
	int err = walk_prefix(s, prefix, op.page_keys, size_page, &op);

	*bytes = op.bytes;
	return err;
}

/* Deletes every key under prefix but skip[] (which the caller deletes
 * last).  Restartable. */
static int tree_delete(struct objfs_csi_controller *c, struct objfs_store *s,
		       const char *prefix, const char *const *skip, uint64_t *count)
{
	struct tree_op op = { s, c->page_keys, prefix, NULL, skip, 0, 0, 0 };
	int err = walk_prefix(s, prefix, op.page_keys, delete_page, &op);

	if (count != NULL)
		*count = op.count;
	return err;
}

/* ---- building responses ----------------------------------------------- */

/* The objfs-mount source of a volume prefix. */
static int source_url(struct objfs_csi *csi, const struct objfs_id *id,
		      char *buf, size_t cap)
{
	const char *base;
	size_t n;
	int r;

	if (id->store == OBJFS_ID_BUCKET) {
		r = snprintf(buf, cap, "s3://%s/%s", id->bucket, id->path);
	} else {
		base = csi->cfg.store.url != NULL ? csi->cfg.store.url : "";
		n = strlen(base);
		while (n > 0 && base[n - 1] == '/')
			n--;
		if (n > 0 && strncmp(base, "file://", 7) == 0 && n <= 7)
			n = strlen(base);   /* "file:///": the root itself */
		r = snprintf(buf, cap, "%.*s/%s", (int)n, base, id->path);
	}
	return r < 0 || (size_t)r >= cap ? ENAMETOOLONG : 0;
}

/* Fills the ctx.* keys of a record or index entry. */
static int context_record(struct objfs_csi *csi, const struct objfs_id *id,
			  const struct conn *conn, const struct vparams *p,
			  struct objfs_kv *kv)
{
	char url[URL_MAX];
	const char *durl = csi->cfg.store.url;
	int err;

	err = source_url(csi, id, url, sizeof(url));
	if (err == 0)
		err = objfs_kv_set(kv, CTX_SOURCE, url);
	if (err == 0 && id->store == OBJFS_ID_BUCKET) {
		err = objfs_kv_set(kv, CTX_ENDPOINT, conn->endpoint);
		if (err == 0)
			err = objfs_kv_set(kv, CTX_REGION, conn->region);
		if (err == 0)
			err = objfs_kv_set(kv, CTX_ADDRESSING, conn->addressing);
	} else if (err == 0 && durl != NULL && strncmp(durl, "s3:", 3) == 0) {
		err = objfs_kv_set(kv, CTX_ENDPOINT,
				   csi->cfg.store.s3.endpoint ? csi->cfg.store.s3.endpoint : "");
		if (err == 0)
			err = objfs_kv_set(kv, CTX_REGION,
					   csi->cfg.store.s3.region ? csi->cfg.store.s3.region : "us-east-1");
		if (err == 0)
			err = objfs_kv_set(kv, CTX_ADDRESSING,
					   csi->cfg.store.s3.path_style ? "path" : "virtual");
	}
	if (err == 0 && p != NULL && p->mount_options != NULL)
		err = objfs_kv_set(kv, CTX_MOUNT_OPTIONS, p->mount_options);
	return err;
}

static int content_source_new(const char *src, Csi__V1__VolumeContentSource **out)
{
	Csi__V1__VolumeContentSource *cs;
	int err = ENOMEM;

	*out = NULL;
	if (src == NULL || src[0] == '\0')
		return 0;
	cs = objfs_pb_new(&csi__v1__volume_content_source__descriptor);
	if (cs == NULL)
		return ENOMEM;
	if (strncmp(src, "snapshot:", 9) == 0) {
		cs->snapshot = objfs_pb_new(&csi__v1__volume_content_source__snapshot_source__descriptor);
		if (cs->snapshot != NULL) {
			cs->type_case = CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT;
			err = objfs_pb_set_str(&cs->snapshot->snapshot_id, src + 9);
		}
	} else if (strncmp(src, "volume:", 7) == 0) {
		cs->volume = objfs_pb_new(&csi__v1__volume_content_source__volume_source__descriptor);
		if (cs->volume != NULL) {
			cs->type_case = CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_VOLUME;
			err = objfs_pb_set_str(&cs->volume->volume_id, src + 7);
		}
	} else {
		err = 0;
	}
	if (err != 0) {
		protobuf_c_message_free_unpacked(&cs->base, NULL);
		return err;
	}
	*out = cs;
	return 0;
}

/* A Volume message of id: its capacity and, from fields (the record's
 * parameters or the index entry), its volume_context (ctx.*) and content
 * source (csi.source). */
static int volume_new(const char *id, uint64_t cap, const struct objfs_kv *fields,
		      Csi__V1__Volume **out)
{
	Csi__V1__Volume *v = objfs_pb_new(&csi__v1__volume__descriptor);
	size_t i, plen = strlen(OBJFS_VOLREC_CTX);
	int err;

	*out = NULL;
	if (v == NULL)
		return ENOMEM;
	if (cap <= INT64_MAX)
		v->capacity_bytes = (int64_t)cap;
	err = objfs_pb_set_str(&v->volume_id, id);
	for (i = 0; err == 0 && i < fields->n; i++) {
		if (strncmp(fields->items[i].key, OBJFS_VOLREC_CTX, plen) != 0)
			continue;
		err = objfs_pb_map_add((void ***)&v->volume_context, &v->n_volume_context,
				       &csi__v1__volume__volume_context_entry__descriptor,
				       fields->items[i].key + plen, fields->items[i].value);
	}
	if (err == 0)
		err = content_source_new(objfs_kv_get(fields, OBJFS_VOLREC_CSI_SOURCE),
					 &v->content_source);
	if (err != 0) {
		protobuf_c_message_free_unpacked(&v->base, NULL);
		return err;
	}
	*out = v;
	return 0;
}

static int condition_new(bool abnormal, const char *msg,
			 Csi__V1__VolumeCondition **out)
{
	Csi__V1__VolumeCondition *c = objfs_pb_new(&csi__v1__volume_condition__descriptor);

	*out = NULL;
	if (c == NULL)
		return ENOMEM;
	c->abnormal = abnormal;
	if (objfs_pb_set_str(&c->message, msg) != 0) {
		protobuf_c_message_free_unpacked(&c->base, NULL);
		return ENOMEM;
	}
	*out = c;
	return 0;
}

static int snapshot_new(const char *id, const struct objfs_snaprec *rec,
			Csi__V1__Snapshot **out)
{
	Csi__V1__Snapshot *s = objfs_pb_new(&csi__v1__snapshot__descriptor);
	uint64_t sec = rec->created_sec, ns = rec->created_nsec;
	int err;

	*out = NULL;
	if (s == NULL)
		return ENOMEM;
	if (rec->size_bytes <= INT64_MAX)
		s->size_bytes = (int64_t)rec->size_bytes;
	err = objfs_pb_set_str(&s->snapshot_id, id);
	if (err == 0)
		err = objfs_pb_set_str(&s->source_volume_id, rec->source_volume_id);
	s->creation_time = objfs_pb_new(&google__protobuf__timestamp__descriptor);
	if (s->creation_time == NULL)
		err = ENOMEM;
	if (err == 0) {
		s->creation_time->seconds = (int64_t)(sec <= INT64_MAX ? sec : 0);
		s->creation_time->nanos = (int32_t)(ns < 1000000000ULL ? ns : 0);
		s->ready_to_use = 1;
	}
	if (err != 0) {
		protobuf_c_message_free_unpacked(&s->base, NULL);
		return err;
	}
	*out = s;
	return 0;
}

/* ---- list tokens ------------------------------------------------------ */

static void token_mac(struct objfs_csi_controller *c, char kind,
		      const char *hash, char *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char data[HASH_HEX + 1];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t i;

	data[0] = (unsigned char)kind;
	memcpy(data + 1, hash, HASH_HEX);
	if (HMAC(EVP_sha256(), c->token_key, sizeof(c->token_key), data,
		 sizeof(data), md, &mdlen) == NULL)
		memset(md, 0, sizeof(md));
	for (i = 0; i < MAC_HEX; i++)
		out[i] = hex[(md[i / 2] >> (i % 2 == 0 ? 4 : 0)) & 0xf];
	out[MAC_HEX] = '\0';
}

static void token_make(struct objfs_csi_controller *c, char kind,
		       const char *hash, char *out)
{
	memcpy(out, hash, HASH_HEX);
	out[HASH_HEX] = '.';
	token_mac(c, kind, hash, out + HASH_HEX + 1);
}

/* Checks a starting token; *hash gets its index hash.  0 or EINVAL. */
static int token_check(struct objfs_csi_controller *c, char kind,
		       const char *tok, char *hash)
{
	char mac[MAC_HEX + 1];
	size_t i;

	if (strlen(tok) != TOKEN_MAX || tok[HASH_HEX] != '.')
		return EINVAL;
	for (i = 0; i < HASH_HEX; i++) {
		if (!((tok[i] >= '0' && tok[i] <= '9') || (tok[i] >= 'a' && tok[i] <= 'f')))
			return EINVAL;
	}
	memcpy(hash, tok, HASH_HEX);
	hash[HASH_HEX] = '\0';
	token_mac(c, kind, hash, mac);
	if (CRYPTO_memcmp(mac, tok + HASH_HEX + 1, MAC_HEX) != 0)
		return EINVAL;
	return 0;
}

/* ---- records ---------------------------------------------------------- */

static void vol_prefix(const struct objfs_id *id, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/", id->path);
}

static bool volrec_retained(const struct objfs_volrec *rec)
{
	const char *state = objfs_volrec_get_param(rec, OBJFS_VOLREC_CSI_STATE);

	return state != NULL && strcmp(state, OBJFS_VOLREC_STATE_RETAINED) == 0;
}

/* Loads the record of a live volume: ENOENT when absent or retained. */
static int volrec_load_live(struct objfs_store *s, const struct objfs_id *id,
			    struct objfs_volrec *rec)
{
	int err;

	err = objfs_volrec_load_at(s, id->path, rec);
	if (err != 0)
		return err;
	if (volrec_retained(rec)) {
		objfs_volrec_release(rec);
		return ENOENT;
	}
	return 0;
}

/* ---- id helpers ------------------------------------------------------- */

/* Parses an id of type want for a lookup: foreign ids are NOT_FOUND,
 * malformed ones INVALID_ARGUMENT.  field names the request field. */
static enum objfs_rpc_code id_for_lookup(const char *text, enum objfs_id_type want,
					 const char *field, struct objfs_id *id,
					 struct objfs_rpc_status *st)
{
	const char *what = want == OBJFS_ID_VOLUME ? "volume" : "snapshot";
	int err;

	if (text == NULL || text[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "%s is required", field);
	err = objfs_id_parse(text, id);
	if (err == ENOENT || (err == 0 && id->type != want))
		return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND,
				      "%s: no %s %.128s (not an objfs %s id)", field,
				      what, text, what);
	if (err != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "%s: malformed objfs %s id", field, what);
	return OBJFS_RPC_OK;
}

/* Parses an id of type want for a delete: only ids of our grammar. */
static enum objfs_rpc_code id_for_delete(const char *text, enum objfs_id_type want,
					 const char *field, struct objfs_id *id,
					 struct objfs_rpc_status *st)
{
	const char *what = want == OBJFS_ID_VOLUME ? "volume" : "snapshot";
	int err;

	if (text == NULL || text[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "%s is required", field);
	err = objfs_id_parse(text, id);
	if (err != 0 || id->type != want)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "%s: not an objfs %s id (objfs1:%s:...)", field,
				      what, want == OBJFS_ID_VOLUME ? "vol" : "snap");
	return OBJFS_RPC_OK;
}

/* Makes the id of a new volume or snapshot named name. */
static enum objfs_rpc_code id_make(enum objfs_id_type type, const char *bucket,
				   const char *base, const char *name,
				   struct objfs_id *id, char *text, size_t cap,
				   struct objfs_rpc_status *st)
{
	enum objfs_id_store store = bucket != NULL ? OBJFS_ID_BUCKET : OBJFS_ID_DEFAULT;
	size_t head = objfs_id_head_len(type, store, bucket != NULL ? bucket : "");
	size_t room = OBJFS_ID_MAX - head;
	char safe[OBJFS_SEGMENT_MAX + 1];
	int err;

	memset(id, 0, sizeof(*id));
	id->type = type;
	id->store = store;
	if (bucket != NULL)
		snprintf(id->bucket, sizeof(id->bucket), "%s", bucket);
	if (base != NULL) {
		if (strlen(base) + 1 >= room)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "parameter basePrefix is too long for a volume id of at most %d bytes",
					      OBJFS_ID_MAX);
		room -= strlen(base) + 1;
	}
	if (room > READABLE_MAX)
		room = READABLE_MAX;
	if (room < 24)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "parameters bucket and basePrefix leave no room for the volume name in a %d-byte volume id",
				      OBJFS_ID_MAX);
	err = objfs_id_safe_name(name, room, safe, sizeof(safe));
	if (err != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "name: %s",
				      objfs_strerror(err));
	snprintf(id->path, sizeof(id->path), "%s%s%s", base != NULL ? base : "",
		 base != NULL ? "/" : "", safe);
	err = objfs_id_format(id, text, cap);
	if (err != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INTERNAL, "cannot form an id: %s",
				      objfs_strerror(err));
	return OBJFS_RPC_OK;
}

static bool same_root(const struct objfs_id *a, const struct objfs_id *b)
{
	return a->store == b->store && strcmp(a->bucket, b->bucket) == 0;
}

/* ---- CreateVolume ----------------------------------------------------- */

/* Capacity for a new volume from range (may be NULL) and the size of its
 * content (0 when empty).  OK or OUT_OF_RANGE/INVALID_ARGUMENT. */
static enum objfs_rpc_code capacity_pick(const Csi__V1__CapacityRange *range,
					 uint64_t content, uint64_t *cap,
					 struct objfs_rpc_status *st)
{
	uint64_t req = 0, lim = 0, c;

	if (range != NULL) {
		if (range->required_bytes < 0 || range->limit_bytes < 0)
			return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
					      "capacity_range: required_bytes and limit_bytes must not be negative");
		req = (uint64_t)range->required_bytes;
		lim = (uint64_t)range->limit_bytes;
	}
	if (lim != 0 && req > lim)
		return objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
				      "capacity_range: required_bytes %" PRIu64 " exceeds limit_bytes %" PRIu64,
				      req, lim);
	if (req != 0)
		c = req;
	else if (lim != 0)
		c = lim < OBJFS_CSI_DEFAULT_CAPACITY ? lim : OBJFS_CSI_DEFAULT_CAPACITY;
	else
		c = OBJFS_CSI_DEFAULT_CAPACITY;
	if (c < content) {
		if (lim != 0 && lim < content)
			return objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
					      "capacity_range: limit_bytes %" PRIu64 " is smaller than the source's %" PRIu64 " bytes",
					      lim, content);
		if (req != 0)
			return objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
					      "capacity_range: required_bytes %" PRIu64 " is smaller than the source's %" PRIu64 " bytes",
					      req, content);
		c = content;
	}
	*cap = c;
	return OBJFS_RPC_OK;
}

static bool capacity_fits(const Csi__V1__CapacityRange *range, uint64_t cap)
{
	if (range == NULL)
		return true;
	if (range->required_bytes > 0 && cap < (uint64_t)range->required_bytes)
		return false;
	if (range->limit_bytes > 0 && cap > (uint64_t)range->limit_bytes)
		return false;
	return true;
}

/* The source of a new volume: "" or snapshot:ID / volume:ID, its root id,
 * the prefix to copy and its size. */
struct vsource {
	char text[OBJFS_ID_MAX + 16];
	struct objfs_id id;
	char prefix[OBJFS_KEY_MAX];
	const char *const *skip;
	uint64_t bytes;
};

static const char *const vol_skip[] = { OBJFS_VOLREC_KEY, NULL };
static const char *const snap_skip[] = { OBJFS_VOLREC_KEY, OBJFS_SNAPREC_KEY, NULL };

static enum objfs_rpc_code source_parse(const Csi__V1__VolumeContentSource *cs,
					struct vsource *src,
					struct objfs_rpc_status *st)
{
	enum objfs_rpc_code code;

	memset(src, 0, sizeof(*src));
	if (cs == NULL)
		return OBJFS_RPC_OK;
	if (cs->type_case == CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT &&
	    cs->snapshot != NULL) {
		code = id_for_lookup(cs->snapshot->snapshot_id, OBJFS_ID_SNAPSHOT,
				     "volume_content_source.snapshot.snapshot_id",
				     &src->id, st);
		if (code != OBJFS_RPC_OK)
			return code;
		snprintf(src->text, sizeof(src->text), "snapshot:%s",
			 cs->snapshot->snapshot_id);
		objfs_snapshot_prefix(src->id.path, src->prefix, sizeof(src->prefix));
		src->skip = snap_skip;
		return OBJFS_RPC_OK;
	}
	if (cs->type_case == CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_VOLUME &&
	    cs->volume != NULL) {
		code = id_for_lookup(cs->volume->volume_id, OBJFS_ID_VOLUME,
				     "volume_content_source.volume.volume_id",
				     &src->id, st);
		if (code != OBJFS_RPC_OK)
			return code;
		snprintf(src->text, sizeof(src->text), "volume:%s",
			 cs->volume->volume_id);
		vol_prefix(&src->id, src->prefix, sizeof(src->prefix));
		src->skip = vol_skip;
		return OBJFS_RPC_OK;
	}
	return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
			      "volume_content_source: snapshot or volume is required");
}

/* Checks that the source exists and measures it. */
static enum objfs_rpc_code source_measure(struct objfs_csi *csi, struct root *r,
					  struct vsource *src,
					  struct objfs_rpc_status *st)
{
	struct objfs_volrec vrec = OBJFS_VOLREC_INIT;
	struct objfs_snaprec srec = OBJFS_SNAPREC_INIT;
	const char *idtext = strchr(src->text, ':') + 1;
	int err;

	if (src->id.type == OBJFS_ID_SNAPSHOT)
		err = objfs_snaprec_load(r->store, src->id.path, &srec);
	else
		err = volrec_load_live(r->store, &src->id, &vrec);
	objfs_snaprec_release(&srec);
	objfs_volrec_release(&vrec);
	if (err == ENOENT)
		return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND,
				      "volume_content_source: %s %s does not exist",
				      src->id.type == OBJFS_ID_SNAPSHOT ? "snapshot" : "volume",
				      idtext);
	if (err != 0)
		return store_fail(csi, st, err, "cannot read the source", idtext);
	err = tree_size(csi->controller, r->store, src->prefix, src->skip, &src->bytes);
	if (err != 0)
		return store_fail(csi, st, err, "cannot measure the source", idtext);
	return OBJFS_RPC_OK;
}

OBJFS_CSI_HANDLER(objfs_csi_create_volume)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__CreateVolumeRequest *rq = (const Csi__V1__CreateVolumeRequest *)req;
	Csi__V1__CreateVolumeResponse *r = NULL;
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_kv ctxkv = OBJFS_KV_INIT, ixkv = OBJFS_KV_INIT;
	struct vparams p;
	struct vsource src;
	struct objfs_id id;
	struct root root;
	struct conn conn;
	char idtext[OBJFS_ID_MAX + 1], dst[OBJFS_KEY_MAX];
	char digest[HASH_HEX + 1], other[OBJFS_ID_MAX + 1], msg[256];
	char num[32];
	char lk_name[NAME_MAX_LEN + 8], lk_id[OBJFS_ID_MAX + 8];
	char lk_src[OBJFS_ID_MAX + 8];
	const char *locks[3] = { lk_name, lk_id, NULL };
	const char *v;
	uint64_t cap = 0, have = 0;
	enum objfs_rpc_code code;
	bool locked = false;
	int err;

	memset(&root, 0, sizeof(root));
	if (rq->name == NULL || rq->name[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "name is required");
	if (strlen(rq->name) > NAME_MAX_LEN || objfs_id_name_banned(rq->name))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "name is too long or holds control characters");
	if (rq->n_volume_capabilities == 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_capabilities is required");
	code = objfs_csi_caps_check(rq->volume_capabilities, rq->n_volume_capabilities,
				    "volume_capabilities[]", msg, sizeof(msg));
	if (code != OBJFS_RPC_OK)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "%s", msg);
	if (rq->n_mutable_parameters > 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "mutable_parameters are not supported (no MODIFY_VOLUME)");
	code = params_parse((void *const *)rq->parameters, rq->n_parameters, &p, st);
	if (code != OBJFS_RPC_OK)
		return code;
	code = source_parse(rq->volume_content_source, &src, st);
	if (code != OBJFS_RPC_OK)
		return code;
	code = capacity_pick(rq->capacity_range, 0, &cap, st);
	if (code != OBJFS_RPC_OK)
		return code;
	code = id_make(OBJFS_ID_VOLUME, p.bucket, p.base_prefix, rq->name, &id,
		       idtext, sizeof(idtext), st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (src.text[0] != '\0' && !same_root(&src.id, &id))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_content_source: the source lives in another store than the new volume (bucket parameter differs)");
	params_digest(&p, digest);

	snprintf(lk_name, sizeof(lk_name), "vn:%s", rq->name);
	snprintf(lk_id, sizeof(lk_id), "v:%s", idtext);
	/* The source too: no delete may empty it while it is copied. */
	if (src.text[0] != '\0') {
		snprintf(lk_src, sizeof(lk_src), "%s:%s",
			 src.id.type == OBJFS_ID_SNAPSHOT ? "s" : "v",
			 strchr(src.text, ':') + 1);
		locks[2] = lk_src;
	}
	code = claim_rpc(csi, locks, 3, "volume", rq->name, st);
	if (code != OBJFS_RPC_OK)
		return code;
	locked = true;

	memset(&conn, 0, sizeof(conn));
	if (id.store == OBJFS_ID_BUCKET)
		conn_resolve(csi, NULL, &p, (void *const *)rq->secrets,
			     rq->n_secrets, &conn);
	code = root_open(csi, &id, &conn, (void *const *)rq->secrets,
			 rq->n_secrets, &root, st);
	if (code != OBJFS_RPC_OK)
		goto out;

	err = objfs_catalog_name_check(csi->store, OBJFS_CATALOG_VOLUME, rq->name,
				       idtext, other, sizeof(other));
	if (err == EEXIST) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "volume %.128s already exists as %s, with other parameters",
				      rq->name, other);
		goto out;
	}
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot read the index for", idtext);
		goto out;
	}

	err = objfs_volrec_load_at(root.store, id.path, &rec);
	if (err == 0) {
		/* It exists: the same request again, or a conflict. */
		if (volrec_retained(&rec)) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "volume %.128s was deleted and retained at %s",
					      rq->name, idtext);
			goto out;
		}
		if (rec.name == NULL || strcmp(rec.name, rq->name) != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "prefix of volume %.128s holds another volume", rq->name);
			goto out;
		}
		v = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_PARAMS);
		if (v == NULL || strcmp(v, digest) != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "volume %.128s already exists with other parameters",
					      rq->name);
			goto out;
		}
		v = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_SOURCE);
		if (strcmp(v != NULL ? v : "", src.text) != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "volume %.128s already exists with another content source",
					      rq->name);
			goto out;
		}
		have = rec.capacity_bytes;
		if (!capacity_fits(rq->capacity_range, have)) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "volume %.128s already exists with capacity %" PRIu64 " bytes, outside capacity_range",
					      rq->name, have);
			goto out;
		}
		goto answer;
	}
	if (err != ENOENT) {
		code = store_fail(csi, st, err, "cannot read the record of", idtext);
		goto out;
	}
	objfs_volrec_release(&rec);

	if (src.text[0] != '\0') {
		code = source_measure(csi, &root, &src, st);
		if (code != OBJFS_RPC_OK)
			goto out;
		code = capacity_pick(rq->capacity_range, src.bytes, &cap, st);
		if (code != OBJFS_RPC_OK)
			goto out;
	}

	/* The index first, so that ListVolumes-driven cleanup can find what a
	 * failed create left; the record last. */
	snprintf(num, sizeof(num), "%" PRIu64, cap);
	err = context_record(csi, &id, &conn, &p, &ctxkv);
	if (err == 0)
		err = objfs_kv_set(&ixkv, OBJFS_VOLREC_CAPACITY, num);
	if (err == 0 && src.text[0] != '\0')
		err = objfs_kv_set(&ixkv, OBJFS_VOLREC_CSI_SOURCE, src.text);
	for (size_t i = 0; err == 0 && i < ctxkv.n; i++)
		err = objfs_kv_set(&ixkv, ctxkv.items[i].key, ctxkv.items[i].value);
	if (err == 0)
		err = objfs_catalog_add(csi->store, OBJFS_CATALOG_VOLUME, idtext,
					rq->name, &ixkv);
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot write the index for", idtext);
		goto out;
	}
	if (src.text[0] != '\0') {
		vol_prefix(&id, dst, sizeof(dst));
		err = tree_copy(csi->controller, root.store, src.prefix, dst,
				src.skip, NULL);
		if (err != 0) {
			code = store_fail(csi, st, err, "cannot copy the content source into", idtext);
			goto out;
		}
	}
	rec.capacity_bytes = cap;
	err = objfs_volrec_set_created_now(&rec);
	if (err == 0)
		err = objfs_volrec_set_name(&rec, rq->name);
	if (err == 0)
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_ID, idtext);
	if (err == 0)
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_PARAMS, digest);
	if (err == 0)
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_SOURCE, src.text);
	if (err == 0)
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_ON_DELETE,
					     p.policy == ON_DELETE_RETAIN ? "retain" :
					     p.policy == ON_DELETE_ARCHIVE ? "archive" : "delete");
	if (err == 0 && p.policy == ON_DELETE_ARCHIVE)
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_ARCHIVE,
					     p.archive_prefix != NULL ? p.archive_prefix :
					     OBJFS_ARCHIVE_DEFAULT);
	for (size_t i = 0; err == 0 && i < ctxkv.n; i++)
		err = objfs_volrec_set_param(&rec, ctxkv.items[i].key,
					     ctxkv.items[i].value);
	if (err != 0) {
		code = oom(st);
		goto out;
	}
	err = objfs_volrec_store_at(root.store, id.path, &rec);
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot write the record of", idtext);
		goto out;
	}
	objfs_info(csi->log, SUB, "created volume %s for %s (%" PRIu64 " bytes%s%s)",
		   idtext, rq->name, cap, src.text[0] != '\0' ? ", from " : "", src.text);

answer:
	r = objfs_pb_new(&csi__v1__create_volume_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL || volume_new(idtext, rec.capacity_bytes, &rec.params,
				    &r->volume) != 0) {
		code = oom(st);
		goto out;
	}
	code = OBJFS_RPC_OK;
out:
	if (locked)
		objfs_claims_drop(&csi->controller->busy, locks, 3);
	root_close(&root);
	objfs_volrec_release(&rec);
	objfs_kv_release(&ctxkv);
	objfs_kv_release(&ixkv);
	return code;
}

/* ---- DeleteVolume ----------------------------------------------------- */

OBJFS_CSI_HANDLER(objfs_csi_delete_volume)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__DeleteVolumeRequest *rq = (const Csi__V1__DeleteVolumeRequest *)req;
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_id id;
	struct root root;
	char key[OBJFS_KEY_MAX], prefix[OBJFS_KEY_MAX], dst[OBJFS_KEY_MAX];
	char lk_id[OBJFS_ID_MAX + 8];
	const char *locks[1] = { lk_id };
	const char *policy, *archive;
	enum objfs_rpc_code code;
	bool locked = false;
	uint64_t n = 0;
	int err;

	memset(&root, 0, sizeof(root));
	code = id_for_delete(rq->volume_id, OBJFS_ID_VOLUME, "volume_id", &id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	snprintf(lk_id, sizeof(lk_id), "v:%s", rq->volume_id);
	code = claim_rpc(csi, locks, 1, "volume", rq->volume_id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	locked = true;
	code = root_open_by_id(csi, &id, rq->volume_id, (void *const *)rq->secrets,
			       rq->n_secrets, &root, st);
	if (code == OBJFS_RPC_NOT_FOUND) {
		objfs_warn(csi->log, SUB, "delete volume: %s", st->msg);
		goto done;
	}
	if (code != OBJFS_RPC_OK)
		goto out;

	objfs_volrec_key(id.path, key, sizeof(key));
	vol_prefix(&id, prefix, sizeof(prefix));
	err = objfs_volrec_load_at(root.store, id.path, &rec);
	if (err != 0 && err != ENOENT) {
		code = store_fail(csi, st, err, "cannot read the record of", rq->volume_id);
		goto out;
	}
	policy = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ON_DELETE);
	if (volrec_retained(&rec)) {
		/* Already deleted with retain: only the index may be left. */
	} else if (policy != NULL && strcmp(policy, "retain") == 0) {
		err = objfs_volrec_set_param(&rec, OBJFS_VOLREC_CSI_STATE,
					     OBJFS_VOLREC_STATE_RETAINED);
		if (err == 0)
			err = objfs_volrec_store_at(root.store, id.path, &rec);
		if (err != 0) {
			code = store_fail(csi, st, err, "cannot retain", rq->volume_id);
			goto out;
		}
		objfs_info(csi->log, SUB, "deleted volume %s, data retained", rq->volume_id);
	} else {
		if (policy != NULL && strcmp(policy, "archive") == 0) {
			archive = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_ARCHIVE);
			snprintf(dst, sizeof(dst), "%s/%s/",
				 archive != NULL ? archive : OBJFS_ARCHIVE_DEFAULT, id.path);
			/* The record too, so the archive says what it was. */
			err = tree_copy(csi->controller, root.store, prefix, dst,
					NULL, NULL);
			if (err != 0) {
				code = store_fail(csi, st, err, "cannot archive", rq->volume_id);
				goto out;
			}
		}
		err = tree_delete(csi->controller, root.store, prefix, vol_skip, &n);
		if (err == 0)
			err = objfs_store_del(root.store, key);
		if (err != 0) {
			code = store_fail(csi, st, err, "cannot delete the objects of", rq->volume_id);
			goto out;
		}
		objfs_info(csi->log, SUB, "deleted volume %s (%" PRIu64 " objects%s)",
			   rq->volume_id, n,
			   policy != NULL && strcmp(policy, "archive") == 0 ? ", archived" : "");
	}
	err = objfs_catalog_remove(csi->store, OBJFS_CATALOG_VOLUME, rq->volume_id,
				   rec.name);
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot update the index for", rq->volume_id);
		goto out;
	}
done:
	*resp = objfs_pb_new(&csi__v1__delete_volume_response__descriptor);
	code = *resp != NULL ? OBJFS_RPC_OK : oom(st);
out:
	if (locked)
		objfs_claims_drop(&csi->controller->busy, locks, 1);
	root_close(&root);
	objfs_volrec_release(&rec);
	return code;
}

/* ---- ValidateVolumeCapabilities --------------------------------------- */

static int copy_message(const ProtobufCMessage *m, ProtobufCMessage **out)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len > 0 ? len : 1);

	*out = NULL;
	if (buf == NULL)
		return ENOMEM;
	protobuf_c_message_pack(m, buf);
	*out = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	free(buf);
	return *out != NULL ? 0 : ENOMEM;
}

OBJFS_CSI_HANDLER(objfs_csi_validate_volume_capabilities)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__ValidateVolumeCapabilitiesRequest *rq =
		(const Csi__V1__ValidateVolumeCapabilitiesRequest *)req;
	Csi__V1__ValidateVolumeCapabilitiesResponse *r;
	Csi__V1__ValidateVolumeCapabilitiesResponse__Confirmed *cf;
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_id id;
	struct root root;
	char msg[OBJFS_RPC_MSG_MAX], digest[HASH_HEX + 1];
	char ctxkey[OBJFS_KV_KEY_MAX + 8];
	ProtobufCMessage *copy;
	enum objfs_rpc_code code;
	struct vparams p;
	const char *v;
	size_t i;
	int err;

	memset(&root, 0, sizeof(root));
	code = id_for_lookup(rq->volume_id, OBJFS_ID_VOLUME, "volume_id", &id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (rq->n_volume_capabilities == 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_capabilities is required");
	code = root_open_by_id(csi, &id, rq->volume_id, (void *const *)rq->secrets,
			       rq->n_secrets, &root, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	err = volrec_load_live(root.store, &id, &rec);
	if (err == ENOENT) {
		code = objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "volume %s does not exist",
				      rq->volume_id);
		goto out;
	}
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot read the record of", rq->volume_id);
		goto out;
	}
	r = objfs_pb_new(&csi__v1__validate_volume_capabilities_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL) {
		code = oom(st);
		goto out;
	}
	msg[0] = '\0';
	code = objfs_csi_caps_check(rq->volume_capabilities, rq->n_volume_capabilities,
				    "volume_capabilities[]", msg, sizeof(msg));
	if (code == OBJFS_RPC_INVALID_ARGUMENT) {
		code = objfs_rpc_fail(st, code, "%s", msg);
		goto out;
	}
	if (code != OBJFS_RPC_OK) {
		code = OBJFS_RPC_OK;
		goto unconfirmed;
	}
	for (i = 0; i < rq->n_volume_context; i++) {
		snprintf(ctxkey, sizeof(ctxkey), "%s%s", OBJFS_VOLREC_CTX,
			 rq->volume_context[i]->key);
		v = objfs_volrec_get_param(&rec, ctxkey);
		if (v == NULL || strcmp(v, rq->volume_context[i]->value) != 0) {
			snprintf(msg, sizeof(msg), "volume_context key %.64s does not match the volume's",
				 rq->volume_context[i]->key);
			goto unconfirmed;
		}
	}
	for (i = 0; i < rec.params.n; i++) {
		const char *k = rec.params.items[i].key;
		size_t plen = strlen(OBJFS_VOLREC_CTX);

		if (strncmp(k, OBJFS_VOLREC_CTX, plen) == 0 && rq->n_volume_context > 0 &&
		    objfs_pb_map_get((void *const *)rq->volume_context,
				     rq->n_volume_context, k + plen) == NULL) {
			snprintf(msg, sizeof(msg), "volume_context lacks key %.64s of the volume",
				 k + plen);
			goto unconfirmed;
		}
	}
	if (rq->n_parameters > 0) {
		struct objfs_rpc_status pst;

		if (params_parse((void *const *)rq->parameters, rq->n_parameters, &p,
				 &pst) != OBJFS_RPC_OK) {
			snprintf(msg, sizeof(msg), "%s", pst.msg);
			goto unconfirmed;
		}
		params_digest(&p, digest);
		v = objfs_volrec_get_param(&rec, OBJFS_VOLREC_CSI_PARAMS);
		if (v == NULL || strcmp(v, digest) != 0) {
			snprintf(msg, sizeof(msg), "parameters differ from the volume's");
			goto unconfirmed;
		}
	}
	if (rq->n_mutable_parameters > 0) {
		snprintf(msg, sizeof(msg), "mutable_parameters are not supported");
		goto unconfirmed;
	}
	cf = objfs_pb_new(&csi__v1__validate_volume_capabilities_response__confirmed__descriptor);
	r->confirmed = cf;
	if (cf == NULL) {
		code = oom(st);
		goto out;
	}
	for (i = 0; i < rq->n_volume_capabilities; i++) {
		if (copy_message(&rq->volume_capabilities[i]->base, &copy) != 0 ||
		    objfs_pb_append((void ***)&cf->volume_capabilities,
				    &cf->n_volume_capabilities, copy) != 0) {
			if (copy != NULL)
				protobuf_c_message_free_unpacked(copy, NULL);
			code = oom(st);
			goto out;
		}
	}
	for (i = 0; i < rq->n_volume_context; i++) {
		if (objfs_pb_map_add((void ***)&cf->volume_context, &cf->n_volume_context,
				     &csi__v1__validate_volume_capabilities_response__confirmed__volume_context_entry__descriptor,
				     rq->volume_context[i]->key,
				     rq->volume_context[i]->value) != 0) {
			code = oom(st);
			goto out;
		}
	}
	for (i = 0; i < rq->n_parameters; i++) {
		if (objfs_pb_map_add((void ***)&cf->parameters, &cf->n_parameters,
				     &csi__v1__validate_volume_capabilities_response__confirmed__parameters_entry__descriptor,
				     rq->parameters[i]->key, rq->parameters[i]->value) != 0) {
			code = oom(st);
			goto out;
		}
	}
	goto out;
unconfirmed:
	if (objfs_pb_set_str(&r->message, msg) != 0)
		code = oom(st);
out:
	root_close(&root);
	objfs_volrec_release(&rec);
	return code;
}

/* ---- volume status (ListVolumes, ControllerGetVolume) ----------------- */

/* Reads what is known of a volume from its index entry idx (may be NULL):
 * *vol and *cond are set on OK.  ENOENT when the volume is not live. */
static int volume_status(struct objfs_csi *csi, const char *idtext,
			 const struct objfs_kv *idx, Csi__V1__Volume **vol,
			 Csi__V1__VolumeCondition **cond)
{
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_rpc_status st;
	struct objfs_id id;
	struct root root;
	struct conn conn;
	char msg[OBJFS_RPC_MSG_MAX + 64];
	bool abnormal = true;
	int err;

	*vol = NULL;
	*cond = NULL;
	memset(&root, 0, sizeof(root));
	if (objfs_id_parse(idtext, &id) != 0 || id.type != OBJFS_ID_VOLUME)
		return ENOENT;
	memset(&conn, 0, sizeof(conn));
	if (id.store == OBJFS_ID_BUCKET)
		conn_resolve(csi, idx, NULL, NULL, 0, &conn);
	if (id.store == OBJFS_ID_BUCKET && idx == NULL && conn.endpoint[0] == '\0')
		return ENOENT;   /* unknown, and nowhere to look */
	if (id.store == OBJFS_ID_BUCKET && (csi->cfg.store.s3.access_key == NULL ||
					    csi->cfg.store.s3.access_key[0] == '\0')) {
		/* Keys come with the secrets, which this call lacks. */
		err = EIO;
		abnormal = false;
		snprintf(msg, sizeof(msg), "condition not checked: the controller has no keys of its own for bucket %s and this call carries no secrets",
			 id.bucket);
	} else if (root_open(csi, &id, &conn, NULL, 0, &root, &st) != OBJFS_RPC_OK) {
		err = EIO;
		snprintf(msg, sizeof(msg), "cannot reach the volume's store: %s", st.msg);
		if (st.code == OBJFS_RPC_PERMISSION_DENIED ||
		    st.code == OBJFS_RPC_UNAUTHENTICATED) {
			abnormal = false;
			snprintf(msg, sizeof(msg), "condition not checked: bucket %s refuses the controller's own keys and this call carries no secrets",
				 id.bucket);
		}
	} else {
		err = volrec_load_live(root.store, &id, &rec);
		if (err == 0) {
			abnormal = false;
			snprintf(msg, sizeof(msg), "volume record readable in its store");
		} else if (err == EACCES || err == EPERM) {
			/* The bucket takes keys from the secrets, which this
			 * call does not carry: unknown is not abnormal. */
			abnormal = false;
			snprintf(msg, sizeof(msg), "condition not checked: bucket %s refuses the controller's own keys and this call carries no secrets",
				 id.bucket);
		} else {
			snprintf(msg, sizeof(msg), "cannot read the volume record: %s",
				 objfs_strerror(err));
		}
	}
	root_close(&root);
	if (err == ENOENT) {
		objfs_volrec_release(&rec);
		return ENOENT;
	}
	/* A store that does not answer: report the volume with what the
	 * index knows. */
	if (err != 0 && idx != NULL)
		err = volume_new(idtext, objfs_catalog_capacity(idx), idx, vol);
	else if (err != 0)
		err = EIO;
	else
		err = volume_new(idtext, rec.capacity_bytes, &rec.params, vol);
	objfs_volrec_release(&rec);
	if (err == 0)
		err = condition_new(abnormal, msg, cond);
	if (err != 0) {
		if (*vol != NULL)
			protobuf_c_message_free_unpacked(&(*vol)->base, NULL);
		*vol = NULL;
	}
	return err;
}

OBJFS_CSI_HANDLER(objfs_csi_controller_get_volume)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__ControllerGetVolumeRequest *rq =
		(const Csi__V1__ControllerGetVolumeRequest *)req;
	Csi__V1__ControllerGetVolumeResponse *r;
	struct objfs_kv idx = OBJFS_KV_INIT;
	struct objfs_id id;
	enum objfs_rpc_code code;
	int err;

	code = id_for_lookup(rq->volume_id, OBJFS_ID_VOLUME, "volume_id", &id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	r = objfs_pb_new(&csi__v1__controller_get_volume_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return oom(st);
	r->status = objfs_pb_new(&csi__v1__controller_get_volume_response__volume_status__descriptor);
	if (r->status == NULL)
		return oom(st);
	if (objfs_catalog_load(csi->store, OBJFS_CATALOG_VOLUME, rq->volume_id, &idx) != 0)
		objfs_kv_release(&idx);
	err = volume_status(csi, rq->volume_id, idx.n > 0 ? &idx : NULL, &r->volume,
			    &r->status->volume_condition);
	objfs_kv_release(&idx);
	if (err == ENOENT)
		return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "volume %s does not exist",
				      rq->volume_id);
	if (err == EIO)
		return objfs_rpc_fail(st, OBJFS_RPC_UNAVAILABLE,
				      "volume %s: its store does not answer", rq->volume_id);
	if (err != 0)
		return oom(st);
	return OBJFS_RPC_OK;
}

/* ---- listing the index ------------------------------------------------ */

/* Called for each id entry of a listing: *taken says whether it was
 * listed.  0 or an errno (ENOMEM, else a store's). */
typedef int (*index_fn)(void *arg, const char *id, const struct objfs_kv *entry,
			bool *taken);

/* A listing in progress (index_walk()). */
struct index_walk {
	struct objfs_csi *csi;
	char kind;                      /* of tokens: 'v' or 's' */
	int32_t max;                    /* entries per answer, 0: all */
	int32_t taken;
	char last[HASH_HEX + 1];        /* H(id) of the last entry taken */
	index_fn fn;
	void *arg;
	char *next;                     /* the token of the next answer */
	int fn_err;                     /* what fn failed with, on fn_id */
	char fn_id[OBJFS_ID_MAX + 1];
};

/* Stops the walk (EALREADY) when the answer is full and one more entry
 * exists, or with fn's error. */
static int index_walk_one(void *arg, const char *hash, const char *id,
			  const struct objfs_kv *entry)
{
	struct index_walk *w = arg;
	char tok[TOKEN_MAX + 1];
	bool taken = false;
	int err;

	if (w->max > 0 && w->taken == w->max) {
		/* One more exists: the page ends at last. */
		token_make(w->csi->controller, w->kind, w->last, tok);
		w->next = strdup(tok);
		return w->next != NULL ? EALREADY : ENOMEM;
	}
	err = w->fn(w->arg, id, entry, &taken);
	if (err != 0) {
		w->fn_err = err;
		snprintf(w->fn_id, sizeof(w->fn_id), "%s", id);
		return err;
	}
	if (taken) {
		w->taken++;
		memcpy(w->last, hash, HASH_HEX);
		w->last[HASH_HEX] = '\0';
	}
	return 0;
}

/* Walks the index of kind from the token on; calls fn(arg, id, entry) for
 * each entry until fn has taken max entries (0: no limit) and one more
 * exists.  *next gets the token of the last entry taken when more remain
 * (the caller frees it). */
static enum objfs_rpc_code index_walk(struct objfs_csi *csi,
				      enum objfs_catalog_kind kind,
				      const char *token, int32_t max,
				      index_fn fn, void *arg, char **next,
				      struct objfs_rpc_status *st)
{
	struct index_walk w;
	char hash[HASH_HEX + 1];
	int err;

	*next = NULL;
	memset(&w, 0, sizeof(w));
	w.csi = csi;
	w.kind = kind == OBJFS_CATALOG_VOLUME ? 'v' : 's';
	w.max = max;
	w.fn = fn;
	w.arg = arg;
	if (max < 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "max_entries must not be negative");
	if (token != NULL && token[0] != '\0' &&
	    token_check(csi->controller, w.kind, token, hash) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "starting_token was not issued by this plugin: list again from the start");
	err = objfs_catalog_walk(csi->store, kind,
				 token != NULL && token[0] != '\0' ? hash : NULL,
				 csi->controller->page_keys, index_walk_one, &w);
	if (w.fn_err != 0)
		return w.fn_err == ENOMEM ? oom(st) :
		       store_fail(csi, st, w.fn_err, "cannot read", w.fn_id);
	if (w.next != NULL) {
		*next = w.next;
		return OBJFS_RPC_OK;
	}
	if (err == ENOMEM)
		return oom(st);
	if (err != 0)
		return store_fail(csi, st, err, "cannot list", "the index");
	return OBJFS_RPC_OK;
}

struct list_volumes_ctx {
	struct objfs_csi *csi;
	Csi__V1__ListVolumesResponse *r;
};

static int list_volume_one(void *arg, const char *id, const struct objfs_kv *entry,
			   bool *taken)
{
	struct list_volumes_ctx *lc = arg;
	Csi__V1__ListVolumesResponse__Entry *e;
	Csi__V1__Volume *vol;
	Csi__V1__VolumeCondition *cond;
	int err;

	err = volume_status(lc->csi, id, entry, &vol, &cond);
	if (err == ENOENT)
		return 0;
	if (err != 0)
		return err;
	e = objfs_pb_new(&csi__v1__list_volumes_response__entry__descriptor);
	if (e == NULL)
		goto nomem;
	e->volume = vol;
	vol = NULL;
	e->status = objfs_pb_new(&csi__v1__list_volumes_response__volume_status__descriptor);
	if (e->status == NULL)
		goto nomem;
	e->status->volume_condition = cond;
	cond = NULL;
	if (objfs_pb_append((void ***)&lc->r->entries, &lc->r->n_entries, e) != 0)
		goto nomem;
	*taken = true;
	return 0;
nomem:
	if (e != NULL)
		protobuf_c_message_free_unpacked(&e->base, NULL);
	if (vol != NULL)
		protobuf_c_message_free_unpacked(&vol->base, NULL);
	if (cond != NULL)
		protobuf_c_message_free_unpacked(&cond->base, NULL);
	return ENOMEM;
}

OBJFS_CSI_HANDLER(objfs_csi_list_volumes)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__ListVolumesRequest *rq = (const Csi__V1__ListVolumesRequest *)req;
	Csi__V1__ListVolumesResponse *r;
	struct list_volumes_ctx lc;
	enum objfs_rpc_code code;
	char *next = NULL;

	r = objfs_pb_new(&csi__v1__list_volumes_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return oom(st);
	lc.csi = csi;
	lc.r = r;
	code = index_walk(csi, OBJFS_CATALOG_VOLUME, rq->starting_token, rq->max_entries,
			  list_volume_one, &lc, &next, st);
	if (code == OBJFS_RPC_OK && next != NULL && objfs_pb_set_str(&r->next_token, next) != 0)
		code = oom(st);
	free(next);
	return code;
}

/* ---- GetCapacity ------------------------------------------------------ */

/* Free bytes of the file system holding the local default store, or 0
 * with ENOTSUP when the default store is not local. */
static int local_free_bytes(struct objfs_csi *csi, uint64_t *out)
{
	const char *url = csi->cfg.store.url;
	char path[PATH_MAX];
	struct statvfs sv;
	char *slash;

	*out = 0;
	if (url == NULL || strncmp(url, "file://", 7) != 0)
		return ENOTSUP;
	snprintf(path, sizeof(path), "%s", url + 7);
	while (statvfs(path, &sv) != 0) {
		if (errno != ENOENT)
			return errno;
		slash = strrchr(path, '/');
		if (slash == NULL || slash == path)
			return ENOENT;
		*slash = '\0';
	}
	*out = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
	return 0;
}

OBJFS_CSI_HANDLER(objfs_csi_get_capacity)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__GetCapacityRequest *rq = (const Csi__V1__GetCapacityRequest *)req;
	Csi__V1__GetCapacityResponse *r;
	enum objfs_rpc_code code;
	struct vparams p;
	char msg[256];
	uint64_t avail = 0;
	int err;

	code = params_parse((void *const *)rq->parameters, rq->n_parameters, &p, st);
	if (code != OBJFS_RPC_OK)
		return code;
	r = objfs_pb_new(&csi__v1__get_capacity_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return oom(st);
	/* Capabilities objfs does not offer leave no capacity for them. */
	if (objfs_csi_caps_check(rq->volume_capabilities, rq->n_volume_capabilities,
				 "volume_capabilities[]", msg, sizeof(msg)) != OBJFS_RPC_OK)
		return OBJFS_RPC_OK;
	/* A local default store reports its file system's free space.  S3
	 * reports no capacity at all: available_capacity stays 0, the only
	 * value proto3 has for "not reported" (CSIDriver storageCapacity
	 * should stay false for S3-backed classes). */
	if (p.bucket == NULL) {
		err = local_free_bytes(csi, &avail);
		if (err == 0)
			r->available_capacity = avail > INT64_MAX ? INT64_MAX : (int64_t)avail;
		else if (err != ENOTSUP)
			objfs_warn(csi->log, SUB, "get capacity: %s", objfs_strerror(err));
	}
	return OBJFS_RPC_OK;
}

/* ---- ControllerGetCapabilities ---------------------------------------- */

OBJFS_CSI_HANDLER(objfs_csi_controller_get_capabilities)
{
	static const Csi__V1__ControllerServiceCapability__RPC__Type types[] = {
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_VOLUME,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__LIST_VOLUMES,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__GET_CAPACITY,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__EXPAND_VOLUME,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_SNAPSHOT,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__LIST_SNAPSHOTS,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CLONE_VOLUME,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_CONDITION,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__GET_SNAPSHOT,
		CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__SINGLE_NODE_MULTI_WRITER,
	};
	Csi__V1__ControllerGetCapabilitiesResponse *r;
	Csi__V1__ControllerServiceCapability *cap;
	size_t i;

	(void)ctx;
	(void)req;
	r = objfs_pb_new(&csi__v1__controller_get_capabilities_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return oom(st);
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		cap = objfs_pb_new(&csi__v1__controller_service_capability__descriptor);
		if (cap == NULL)
			return oom(st);
		cap->type_case = CSI__V1__CONTROLLER_SERVICE_CAPABILITY__TYPE_RPC;
		cap->rpc = objfs_pb_new(&csi__v1__controller_service_capability__rpc__descriptor);
		if (cap->rpc == NULL ||
		    objfs_pb_append((void ***)&r->capabilities, &r->n_capabilities, cap) != 0) {
			protobuf_c_message_free_unpacked(&cap->base, NULL);
			return oom(st);
		}
		cap->rpc->type = types[i];
	}
	return OBJFS_RPC_OK;
}

/* ---- ControllerExpandVolume ------------------------------------------- */

OBJFS_CSI_HANDLER(objfs_csi_controller_expand_volume)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__ControllerExpandVolumeRequest *rq =
		(const Csi__V1__ControllerExpandVolumeRequest *)req;
	Csi__V1__ControllerExpandVolumeResponse *r;
	struct objfs_volrec rec = OBJFS_VOLREC_INIT;
	struct objfs_id id;
	struct root root;
	char msg[256];
	char lk_id[OBJFS_ID_MAX + 8];
	const char *locks[1] = { lk_id };
	enum objfs_rpc_code code;
	uint64_t have = 0, want, lim;
	bool locked = false;
	int err;

	memset(&root, 0, sizeof(root));
	code = id_for_lookup(rq->volume_id, OBJFS_ID_VOLUME, "volume_id", &id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	if (rq->capacity_range == NULL)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "capacity_range is required");
	if (rq->capacity_range->required_bytes < 0 || rq->capacity_range->limit_bytes < 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "capacity_range: required_bytes and limit_bytes must not be negative");
	if (rq->capacity_range->required_bytes == 0 && rq->capacity_range->limit_bytes == 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "capacity_range: required_bytes or limit_bytes is required");
	if (rq->volume_capability != NULL &&
	    objfs_csi_cap_check(rq->volume_capability, "volume_capability", msg,
				sizeof(msg)) != OBJFS_RPC_OK)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "volume_capability: %s", msg);
	want = (uint64_t)rq->capacity_range->required_bytes;
	lim = (uint64_t)rq->capacity_range->limit_bytes;
	if (want == 0)
		want = lim;
	if (lim != 0 && want > lim)
		return objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
				      "capacity_range: required_bytes exceeds limit_bytes");

	snprintf(lk_id, sizeof(lk_id), "v:%s", rq->volume_id);
	code = claim_rpc(csi, locks, 1, "volume", rq->volume_id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	locked = true;
	code = root_open_by_id(csi, &id, rq->volume_id, (void *const *)rq->secrets,
			       rq->n_secrets, &root, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	err = volrec_load_live(root.store, &id, &rec);
	if (err == ENOENT) {
		code = objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "volume %s does not exist",
				      rq->volume_id);
		goto out;
	}
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot read the record of", rq->volume_id);
		goto out;
	}
	have = rec.capacity_bytes;
	if (have < want) {
		if (lim != 0 && have > lim) {
			code = objfs_rpc_fail(st, OBJFS_RPC_OUT_OF_RANGE,
					      "volume %s is larger than limit_bytes: shrinking is not supported",
					      rq->volume_id);
			goto out;
		}
		rec.capacity_bytes = want;
		err = objfs_volrec_store_at(root.store, id.path, &rec);
		if (err != 0) {
			code = store_fail(csi, st, err, "cannot write the record of", rq->volume_id);
			goto out;
		}
		err = objfs_catalog_set_capacity(csi->store, rq->volume_id, want);
		if (err != 0)
			objfs_warn(csi->log, SUB, "volume %s: cannot update the index: %s",
				   rq->volume_id, objfs_strerror(err));
		objfs_info(csi->log, SUB, "expanded volume %s from %" PRIu64 " to %" PRIu64 " bytes",
			   rq->volume_id, have, want);
		have = want;
	}
	r = objfs_pb_new(&csi__v1__controller_expand_volume_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL) {
		code = oom(st);
		goto out;
	}
	r->capacity_bytes = have > INT64_MAX ? INT64_MAX : (int64_t)have;
	r->node_expansion_required = 0;
	code = OBJFS_RPC_OK;
out:
	if (locked)
		objfs_claims_drop(&csi->controller->busy, locks, 1);
	root_close(&root);
	objfs_volrec_release(&rec);
	return code;
}

/* ---- snapshots -------------------------------------------------------- */

OBJFS_CSI_HANDLER(objfs_csi_create_snapshot)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__CreateSnapshotRequest *rq = (const Csi__V1__CreateSnapshotRequest *)req;
	Csi__V1__CreateSnapshotResponse *r;
	struct objfs_snaprec rec = OBJFS_SNAPREC_INIT;
	struct objfs_volrec vrec = OBJFS_VOLREC_INIT;
	struct objfs_kv extra = OBJFS_KV_INIT;
	struct objfs_id vid, sid;
	struct root root;
	char sidtext[OBJFS_ID_MAX + 1];
	char src[OBJFS_KEY_MAX], dst[OBJFS_KEY_MAX], other[OBJFS_ID_MAX + 1];
	char lk_name[NAME_MAX_LEN + 8], lk_id[OBJFS_ID_MAX + 8];
	char lk_src[OBJFS_ID_MAX + 8];
	const char *locks[3] = { lk_name, lk_id, lk_src };
	const char *v;
	enum objfs_rpc_code code;
	uint64_t bytes = 0;
	bool locked = false;
	int err;

	memset(&root, 0, sizeof(root));
	if (rq->name == NULL || rq->name[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT, "name is required");
	if (strlen(rq->name) > NAME_MAX_LEN || objfs_id_name_banned(rq->name))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "name is too long or holds control characters");
	if (rq->source_volume_id == NULL || rq->source_volume_id[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "source_volume_id is required");
	code = id_for_lookup(rq->source_volume_id, OBJFS_ID_VOLUME, "source_volume_id",
			     &vid, st);
	if (code != OBJFS_RPC_OK)
		return code;
	code = id_make(OBJFS_ID_SNAPSHOT, vid.store == OBJFS_ID_BUCKET ? vid.bucket : NULL,
		       NULL, rq->name, &sid, sidtext, sizeof(sidtext), st);
	if (code != OBJFS_RPC_OK)
		return code;

	snprintf(lk_name, sizeof(lk_name), "sn:%s", rq->name);
	snprintf(lk_id, sizeof(lk_id), "s:%s", sidtext);
	/* The source volume too: no delete or second copy while cutting. */
	snprintf(lk_src, sizeof(lk_src), "v:%s", rq->source_volume_id);
	code = claim_rpc(csi, locks, 3, "snapshot", rq->name, st);
	if (code != OBJFS_RPC_OK)
		return code;
	locked = true;

	code = root_open_by_id(csi, &vid, rq->source_volume_id,
			       (void *const *)rq->secrets, rq->n_secrets, &root, st);
	if (code != OBJFS_RPC_OK)
		goto out;
	err = objfs_catalog_name_check(csi->store, OBJFS_CATALOG_SNAPSHOT, rq->name,
				       sidtext, other, sizeof(other));
	if (err == EEXIST) {
		code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
				      "snapshot %.128s already exists as %s, of another volume",
				      rq->name, other);
		goto out;
	}
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot read the index for", sidtext);
		goto out;
	}
	err = objfs_snaprec_load(root.store, sid.path, &rec);
	if (err == 0) {
		v = rec.source_volume_id;
		if (v == NULL || strcmp(v, rq->source_volume_id) != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "snapshot %.128s already exists, of another volume",
					      rq->name);
			goto out;
		}
		v = rec.name;
		if (v == NULL || strcmp(v, rq->name) != 0) {
			code = objfs_rpc_fail(st, OBJFS_RPC_ALREADY_EXISTS,
					      "the prefix of snapshot %.128s holds another snapshot",
					      rq->name);
			goto out;
		}
		goto answer;
	}
	if (err != ENOENT) {
		code = store_fail(csi, st, err, "cannot read the record of", sidtext);
		goto out;
	}
	objfs_snaprec_release(&rec);
	err = volrec_load_live(root.store, &vid, &vrec);
	if (err == ENOENT) {
		code = objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "source volume %s does not exist",
				      rq->source_volume_id);
		goto out;
	}
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot read the record of", rq->source_volume_id);
		goto out;
	}
	/* The snapshot's entry names the source (for listings by volume) and
	 * a bucket's connection (for id-only calls). */
	err = objfs_snaprec_set(&rec.source_volume_id, rq->source_volume_id);
	if (err == 0)
		err = objfs_snaprec_entry(&rec, &extra);
	v = objfs_volrec_get_param(&vrec, CTX_ENDPOINT);
	if (err == 0 && v != NULL && vid.store == OBJFS_ID_BUCKET)
		err = objfs_kv_set(&extra, CTX_ENDPOINT, v);
	v = objfs_volrec_get_param(&vrec, CTX_REGION);
	if (err == 0 && v != NULL && vid.store == OBJFS_ID_BUCKET)
		err = objfs_kv_set(&extra, CTX_REGION, v);
	v = objfs_volrec_get_param(&vrec, CTX_ADDRESSING);
	if (err == 0 && v != NULL && vid.store == OBJFS_ID_BUCKET)
		err = objfs_kv_set(&extra, CTX_ADDRESSING, v);
	if (err == 0)
		err = objfs_catalog_add(csi->store, OBJFS_CATALOG_SNAPSHOT, sidtext,
					rq->name, &extra);
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot write the index for", sidtext);
		goto out;
	}
	/* The cut: the moment the copy starts. */
	err = objfs_snaprec_set_cut_now(&rec);
	if (err != 0) {
		code = oom(st);
		goto out;
	}
	vol_prefix(&vid, src, sizeof(src));
	objfs_snapshot_prefix(sid.path, dst, sizeof(dst));
	err = tree_copy(csi->controller, root.store, src, dst, vol_skip, &bytes);
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot copy the volume into snapshot", sidtext);
		goto out;
	}
	err = objfs_snaprec_set(&rec.name, rq->name);
	if (err == 0)
		err = objfs_snaprec_set(&rec.id, sidtext);
	rec.size_bytes = bytes;
	rec.source_capacity_bytes = vrec.capacity_bytes;
	if (err != 0) {
		code = oom(st);
		goto out;
	}
	err = objfs_snaprec_store(root.store, sid.path, &rec);
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot write the record of", sidtext);
		goto out;
	}
	/* The index learns what the record says, so that listing works
	 * when the bucket refuses the plugin's own keys.  Best effort. */
	err = objfs_catalog_snapshot_ready(csi->store, sidtext, &rec);
	if (err != 0)
		objfs_warn(csi->log, SUB, "snapshot %s: cannot update the index: %s",
			   sidtext, objfs_strerror(err));
	objfs_info(csi->log, SUB, "created snapshot %s of %s (%" PRIu64 " bytes)",
		   sidtext, rq->source_volume_id, bytes);
answer:
	r = objfs_pb_new(&csi__v1__create_snapshot_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL || snapshot_new(sidtext, &rec, &r->snapshot) != 0) {
		code = oom(st);
		goto out;
	}
	code = OBJFS_RPC_OK;
out:
	if (locked)
		objfs_claims_drop(&csi->controller->busy, locks, 3);
	root_close(&root);
	objfs_snaprec_release(&rec);
	objfs_volrec_release(&vrec);
	objfs_kv_release(&extra);
	return code;
}

OBJFS_CSI_HANDLER(objfs_csi_delete_snapshot)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__DeleteSnapshotRequest *rq = (const Csi__V1__DeleteSnapshotRequest *)req;
	struct objfs_snaprec rec = OBJFS_SNAPREC_INIT;
	struct objfs_id sid;
	struct root root;
	char key[OBJFS_KEY_MAX], prefix[OBJFS_KEY_MAX];
	char lk_id[OBJFS_ID_MAX + 8];
	const char *locks[1] = { lk_id };
	enum objfs_rpc_code code;
	bool locked = false;
	int err;

	memset(&root, 0, sizeof(root));
	code = id_for_delete(rq->snapshot_id, OBJFS_ID_SNAPSHOT, "snapshot_id", &sid, st);
	if (code != OBJFS_RPC_OK)
		return code;
	snprintf(lk_id, sizeof(lk_id), "s:%s", rq->snapshot_id);
	code = claim_rpc(csi, locks, 1, "snapshot", rq->snapshot_id, st);
	if (code != OBJFS_RPC_OK)
		return code;
	locked = true;
	code = root_open_by_id(csi, &sid, rq->snapshot_id, (void *const *)rq->secrets,
			       rq->n_secrets, &root, st);
	if (code == OBJFS_RPC_NOT_FOUND) {
		objfs_warn(csi->log, SUB, "delete snapshot: %s", st->msg);
		goto done;
	}
	if (code != OBJFS_RPC_OK)
		goto out;
	objfs_snaprec_key(sid.path, key, sizeof(key));
	objfs_snapshot_prefix(sid.path, prefix, sizeof(prefix));
	err = objfs_snaprec_load(root.store, sid.path, &rec);
	if (err != 0 && err != ENOENT) {
		code = store_fail(csi, st, err, "cannot read the record of", rq->snapshot_id);
		goto out;
	}
	{
		static const char *const keep[] = { OBJFS_SNAPREC_KEY, NULL };

		err = tree_delete(csi->controller, root.store, prefix, keep, NULL);
	}
	if (err == 0)
		err = objfs_store_del(root.store, key);
	if (err == 0)
		err = objfs_catalog_remove(csi->store, OBJFS_CATALOG_SNAPSHOT,
					   rq->snapshot_id, rec.name);
	if (err != 0) {
		code = store_fail(csi, st, err, "cannot delete snapshot", rq->snapshot_id);
		goto out;
	}
	objfs_info(csi->log, SUB, "deleted snapshot %s", rq->snapshot_id);
done:
	*resp = objfs_pb_new(&csi__v1__delete_snapshot_response__descriptor);
	code = *resp != NULL ? OBJFS_RPC_OK : oom(st);
out:
	if (locked)
		objfs_claims_drop(&csi->controller->busy, locks, 1);
	root_close(&root);
	objfs_snaprec_release(&rec);
	return code;
}

/* Reads a snapshot's record: 0 with *snap set, ENOENT, or a store errno. */
static int snapshot_read(struct objfs_csi *csi, const char *idtext,
			 const struct objfs_kv *idx, void *const *secrets,
			 size_t n_secrets, Csi__V1__Snapshot **snap)
{
	struct objfs_snaprec rec = OBJFS_SNAPREC_INIT;
	struct objfs_rpc_status st;
	struct objfs_id sid;
	struct root root;
	struct conn conn;
	int err;

	*snap = NULL;
	if (objfs_id_parse(idtext, &sid) != 0 || sid.type != OBJFS_ID_SNAPSHOT)
		return ENOENT;
	memset(&conn, 0, sizeof(conn));
	if (sid.store == OBJFS_ID_BUCKET)
		conn_resolve(csi, idx, NULL, secrets, n_secrets, &conn);
	if (sid.store == OBJFS_ID_BUCKET && idx == NULL && conn.endpoint[0] == '\0')
		return ENOENT;   /* unknown, and nowhere to look */
	if (root_open(csi, &sid, &conn, secrets, n_secrets, &root, &st) != OBJFS_RPC_OK) {
		err = ECONNREFUSED;
	} else {
		err = objfs_snaprec_load(root.store, sid.path, &rec);
		if (err == 0)
			err = snapshot_new(idtext, &rec, snap);
		root_close(&root);
	}
	/* The store does not answer (or refuses): a snapshot is immutable,
	 * so what the index recorded once it was ready still holds. */
	if (err != 0 && err != ENOENT && err != ENOMEM && idx != NULL &&
	    objfs_kv_get(idx, OBJFS_CATALOG_READY) != NULL) {
		objfs_debug(csi->log, SUB, "snapshot %s from the index: %s", idtext,
			    objfs_strerror(err));
		objfs_snaprec_release(&rec);
		err = objfs_snaprec_from_kv(idx, &rec);
		if (err == 0)
			err = snapshot_new(idtext, &rec, snap);
	}
	objfs_snaprec_release(&rec);
	return err;
}

OBJFS_CSI_HANDLER(objfs_csi_get_snapshot)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__GetSnapshotRequest *rq = (const Csi__V1__GetSnapshotRequest *)req;
	Csi__V1__GetSnapshotResponse *r;
	struct objfs_kv idx = OBJFS_KV_INIT;
	enum objfs_rpc_code code;
	struct objfs_id sid;
	int err;

	code = id_for_lookup(rq->snapshot_id, OBJFS_ID_SNAPSHOT, "snapshot_id", &sid, st);
	if (code != OBJFS_RPC_OK)
		return code;
	r = objfs_pb_new(&csi__v1__get_snapshot_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return oom(st);
	if (objfs_catalog_load(csi->store, OBJFS_CATALOG_SNAPSHOT, rq->snapshot_id,
			       &idx) != 0)
		objfs_kv_release(&idx);
	err = snapshot_read(csi, rq->snapshot_id, idx.n > 0 ? &idx : NULL,
			    (void *const *)rq->secrets, rq->n_secrets, &r->snapshot);
	objfs_kv_release(&idx);
	if (err == ENOENT)
		return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND, "snapshot %s does not exist",
				      rq->snapshot_id);
	if (err != 0)
		return store_fail(csi, st, err, "cannot read snapshot", rq->snapshot_id);
	return OBJFS_RPC_OK;
}

struct list_snapshots_ctx {
	struct objfs_csi *csi;
	const Csi__V1__ListSnapshotsRequest *rq;
	Csi__V1__ListSnapshotsResponse *r;
};

static int list_snapshot_add(Csi__V1__ListSnapshotsResponse *r, Csi__V1__Snapshot *snap)
{
	Csi__V1__ListSnapshotsResponse__Entry *e;

	e = objfs_pb_new(&csi__v1__list_snapshots_response__entry__descriptor);
	if (e == NULL) {
		protobuf_c_message_free_unpacked(&snap->base, NULL);
		return ENOMEM;
	}
	e->snapshot = snap;
	if (objfs_pb_append((void ***)&r->entries, &r->n_entries, e) != 0) {
		protobuf_c_message_free_unpacked(&e->base, NULL);
		return ENOMEM;
	}
	return 0;
}

static int list_snapshot_one(void *arg, const char *id, const struct objfs_kv *entry,
			     bool *taken)
{
	struct list_snapshots_ctx lc = *(struct list_snapshots_ctx *)arg;
	const char *srcv = lc.rq->source_volume_id;
	struct objfs_snaprec facts = OBJFS_SNAPREC_INIT;
	Csi__V1__Snapshot *snap;
	bool other;
	int err;

	err = objfs_snaprec_from_kv(entry, &facts);
	if (err != 0)
		return err;
	other = srcv != NULL && srcv[0] != '\0' &&
		(facts.source_volume_id == NULL ||
		 strcmp(facts.source_volume_id, srcv) != 0);
	objfs_snaprec_release(&facts);
	if (other)
		return 0;
	err = snapshot_read(lc.csi, id, entry, (void *const *)lc.rq->secrets,
			    lc.rq->n_secrets, &snap);
	if (err == ENOENT)
		return 0;
	if (err != 0)
		return err;
	err = list_snapshot_add(lc.r, snap);
	*taken = err == 0;
	return err;
}

OBJFS_CSI_HANDLER(objfs_csi_list_snapshots)
{
	struct objfs_csi *csi = ctx;
	const Csi__V1__ListSnapshotsRequest *rq = (const Csi__V1__ListSnapshotsRequest *)req;
	Csi__V1__ListSnapshotsResponse *r;
	struct objfs_kv idx = OBJFS_KV_INIT;
	struct list_snapshots_ctx lc;
	Csi__V1__Snapshot *snap = NULL;
	enum objfs_rpc_code code;
	struct objfs_id sid;
	char *next = NULL;
	int err;

	r = objfs_pb_new(&csi__v1__list_snapshots_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return oom(st);
	if (rq->max_entries < 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "max_entries must not be negative");
	if (rq->snapshot_id != NULL && rq->snapshot_id[0] != '\0') {
		/* One snapshot: an unknown or foreign id lists nothing. */
		if (objfs_id_parse(rq->snapshot_id, &sid) != 0 || sid.type != OBJFS_ID_SNAPSHOT)
			return OBJFS_RPC_OK;
		if (objfs_catalog_load(csi->store, OBJFS_CATALOG_SNAPSHOT,
				       rq->snapshot_id, &idx) != 0)
			objfs_kv_release(&idx);
		err = snapshot_read(csi, rq->snapshot_id, idx.n > 0 ? &idx : NULL,
				    (void *const *)rq->secrets, rq->n_secrets, &snap);
		objfs_kv_release(&idx);
		if (err == ENOENT)
			return OBJFS_RPC_OK;
		if (err != 0)
			return store_fail(csi, st, err, "cannot read snapshot", rq->snapshot_id);
		if (rq->source_volume_id != NULL && rq->source_volume_id[0] != '\0' &&
		    strcmp(snap->source_volume_id, rq->source_volume_id) != 0) {
			protobuf_c_message_free_unpacked(&snap->base, NULL);
			return OBJFS_RPC_OK;
		}
		return list_snapshot_add(r, snap) == 0 ? OBJFS_RPC_OK : oom(st);
	}
	lc.csi = csi;
	lc.rq = rq;
	lc.r = r;
	code = index_walk(csi, OBJFS_CATALOG_SNAPSHOT, rq->starting_token, rq->max_entries,
			  list_snapshot_one, &lc, &next, st);
	if (code == OBJFS_RPC_OK && next != NULL && objfs_pb_set_str(&r->next_token, next) != 0)
		code = oom(st);
	free(next);
	return code;
}
