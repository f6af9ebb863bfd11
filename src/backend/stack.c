/*
 * stack.c - store URLs and the one function that assembles a store stack.
 *
 *   s3://BUCKET[/PREFIX]   [delq ->] prefix(PREFIX) -> [hedge ->] retry -> limit -> meter -> s3(BUCKET)
 *   file:///DIR[/PREFIX]   [delq ->] prefix(PREFIX) -> meter -> local(ROOT)
 *
 * The delq layer (deferred deletes, when cfg->delete_delay_ms) is on top:
 * the keys it holds are the ones callers gave, and objfs_store_del_deferred()
 * finds it there.
 *
 * The limit layer (limit.c: an adaptive bound on the requests in flight,
 * at most max_connections) is under the retry layer, so each retry waits
 * for a slot too, and a retry's sleep holds none.
 *
 * An s3 store without an endpoint gets AWS's for its region
 * (objfs_s3_aws_endpoint, backend/s3conn.c: the connection's one home).
 *
 * The meter layer is in every stack, right above the leaf, so it sees
 * each try: it counts the stack's requests (objfs_store_requests()) and,
 * when cfg->metrics names a registry, exports them with the counters of
 * retry and s3; with metrics off nothing is registered.
 *
 * objfs_store_url_parse() is pure string work: for s3 it splits bucket and
 * prefix; for file it returns the whole normalised absolute path as the
 * "bucket" and an empty prefix, because where the store root ends and the
 * prefix starts depends on the filesystem.  objfs_store_stack_create()
 * settles that: the root is the nearest ancestor of the path (or the path
 * itself) holding a ".objfs-store" marker, the rest is the prefix; with no
 * marker anywhere the path itself (created with its parents, mode 0700)
 * becomes a new store root.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "backend/delq.h"
#include "backend/limit.h"
#include "common/log.h"

#define STORE_MARKER OBJFS_LOCAL_STORE_MARKER
#define URL_MAX 4096

static bool bucket_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

/* Normalises an absolute path: '//' collapsed, trailing '/' removed; "."
 * and ".." components are EINVAL (a store location is never relative to a
 * walk).  out has room for strlen(path) + 1. */
static int normalise_path(const char *path, char *out)
{
	const char *p = path;
	size_t n = 0;

	if (*p != '/')
		return EINVAL;
	while (*p != '\0') {
		const char *e;
		size_t cl;

		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		e = strchr(p, '/');
		cl = e != NULL ? (size_t)(e - p) : strlen(p);
		if ((cl == 1 && p[0] == '.') ||
		    (cl == 2 && p[0] == '.' && p[1] == '.'))
			return EINVAL;
		out[n++] = '/';
		memcpy(out + n, p, cl);
		n += cl;
		p += cl;
	}
	out[n] = '\0';
	return n == 0 ? EINVAL : 0;
}

int objfs_store_url_parse(const char *url, char **scheme, char **bucket,
			  char **prefix)
{
	char *sc = NULL, *bk = NULL, *px = NULL;
	const char *rest, *slash;
	size_t ul, bl, i;
	int rc = 0;

	*scheme = *bucket = *prefix = NULL;
	if (url == NULL)
		return EINVAL;
	ul = strnlen(url, URL_MAX + 1);
	if (ul == 0 || ul > URL_MAX)
		return EINVAL;
	for (i = 0; i < ul; i++) {
		unsigned char c = (unsigned char)url[i];

		if (c < 0x20 || c == 0x7f || c == '?' || c == '#')
			return EINVAL;
	}
	if (strncmp(url, "s3://", 5) == 0) {
		rest = url + 5;
		slash = strchr(rest, '/');
		bl = slash != NULL ? (size_t)(slash - rest) : strlen(rest);
		if (bl < 1 || bl > 255)
			return EINVAL;
		for (i = 0; i < bl; i++)
			if (!bucket_char(rest[i]))
				return EINVAL;
		sc = strdup("s3");
		bk = strndup(rest, bl);
		px = strdup(slash != NULL ? slash + 1 : "");
		if (sc == NULL || bk == NULL || px == NULL) {
			rc = ENOMEM;
			goto out;
		}
		if (strlen(px) > OBJFS_KEY_MAX) {
			rc = EINVAL;
			goto out;
		}
	} else if (strncmp(url, "file://", 7) == 0) {
		rest = url + 7;
		if (rest[0] != '/')     /* file://host/... */
			return EINVAL;
		sc = strdup("file");
		bk = malloc(strlen(rest) + 1);
		px = strdup("");
		if (sc == NULL || bk == NULL || px == NULL) {
			rc = ENOMEM;
			goto out;
		}
		rc = normalise_path(rest, bk);
	} else {
		return EINVAL;
	}
out:
	if (rc != 0) {
		free(sc);
		free(bk);
		free(px);
		return rc;
	}
	*scheme = sc;
	*bucket = bk;
	*prefix = px;
	return 0;
}

static bool has_marker(const char *dir)
{
	char p[URL_MAX + sizeof(STORE_MARKER) + 2];
	struct stat st;
	int k;

	k = snprintf(p, sizeof(p), "%s/%s", strcmp(dir, "/") == 0 ? "" : dir,
		     STORE_MARKER);
	if (k < 0 || (size_t)k >= sizeof(p))
		return false;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* mkdir -p with mode 0700 for the missing parts. */
static int mkdirs(const char *path)
{
	char p[URL_MAX + 1];
	size_t n = strlen(path), i;

	if (n >= sizeof(p))
		return ENAMETOOLONG;
	memcpy(p, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (p[i] == '/' || p[i] == '\0') {
			char c = p[i];

			p[i] = '\0';
			if (mkdir(p, 0700) != 0 && errno != EEXIST)
				return errno;
			p[i] = c;
		}
	}
	return 0;
}

/* Splits the normalised path into the store root and the prefix. */
static int find_root(const char *path, char **root, char **prefix)
{
	size_t n = strlen(path);
	char *r = NULL;
	size_t cut;
	int rc;

	*root = *prefix = NULL;
	r = strdup(path);
	if (r == NULL)
		return ENOMEM;
	for (cut = n; ; ) {
		r[cut] = '\0';
		if (has_marker(cut == 0 ? "/" : r)) {
			if (cut == 0) {
				r[0] = '/';
				r[1] = '\0';
			}
			*root = r;
			*prefix = strdup(path[cut] == '/' ? path + cut + 1 :
					 path + cut);
			if (*prefix == NULL) {
				free(r);
				*root = NULL;
				return ENOMEM;
			}
			return 0;
		}
		if (cut == 0)
			break;
		while (cut > 0 && path[cut - 1] != '/')
			cut--;
		if (cut > 0)
			cut--;          /* drop the '/' too */
	}
	/* No marker anywhere: the path becomes a new store root. */
	free(r);
	rc = mkdirs(path);
	if (rc != 0)
		return rc;
	*root = strdup(path);
	*prefix = strdup("");
	if (*root == NULL || *prefix == NULL) {
		free(*root);
		free(*prefix);
		*root = *prefix = NULL;
		return ENOMEM;
	}
	return 0;
}

/* Puts the meter layer over *leaf, exporting into cfg->metrics when set
 * (on failure *leaf is gone: the layer took it). */
static int meter(const struct objfs_store_config *cfg, struct objfs_store **leaf)
{
	struct objfs_store *m;
	int rc;

	rc = objfs_meter_store_create(*leaf, cfg->metrics, &m);
	*leaf = rc == 0 ? m : NULL;
	return rc;
}

int objfs_store_stack_create(const struct objfs_store_config *cfg,
			     struct objfs_log *log, struct objfs_store **out)
{
	char *scheme = NULL, *bucket = NULL, *prefix = NULL;
	char *root = NULL, *lprefix = NULL;
	struct objfs_store *leaf = NULL, *mid = NULL;
	struct objfs_retry_config retry;
	struct objfs_hedge_config hedge;
	struct objfs_limit_config limit;
	int rc;

	*out = NULL;
	if (cfg == NULL)
		return EINVAL;
	rc = objfs_store_url_parse(cfg->url, &scheme, &bucket, &prefix);
	if (rc == EINVAL)
		objfs_error(log, "store", "\"%s\" is not a store location: "
			    "s3://BUCKET[/PREFIX] (a bucket name of a-z, A-Z, "
			    "0-9, '.', '-', '_') or file:///DIR (absolute, no "
			    "'.' or '..'); no '?', '#' or control characters",
			    cfg->url != NULL ? cfg->url : "");
	if (rc != 0)
		return rc;
	if (strcmp(scheme, "s3") == 0) {
		struct objfs_s3_config s3 = cfg->s3;
		char aws[128];

		s3.bucket = bucket;
		s3.metrics = cfg->metrics;
		if (s3.endpoint == NULL || s3.endpoint[0] == '\0') {
			rc = objfs_s3_aws_endpoint(s3.region, bucket, aws, sizeof(aws),
						   &s3.path_style);
			if (rc != 0)
				goto out;
			s3.endpoint = aws;
			objfs_info(log, "store", "no S3 endpoint given: AWS %s, %s addressing",
				   aws, s3.path_style ? "path" : "virtual-hosted");
		}
		rc = objfs_s3_store_create(&s3, log, &leaf);
		if (rc != 0)
			goto out;
		/* meter, limit, retry, hedge and prefix take ownership,
		 * also on failure */
		rc = meter(cfg, &leaf);
		if (rc != 0)
			goto out;
		limit.max = s3.max_connections;
		limit.metrics = cfg->metrics;
		rc = objfs_limit_store_create(leaf, &limit, &leaf);
		if (rc != 0)
			goto out;
		retry = cfg->retry;
		retry.metrics = cfg->metrics;
		rc = objfs_retry_store_create(leaf, &retry, &mid);
		hedge = cfg->hedge;
		hedge.metrics = cfg->metrics;
		if (rc == 0 && hedge.ceiling_ms > 0)
			rc = objfs_hedge_store_create(mid, &hedge, log, &mid);
		if (rc != 0)
			goto out;
		rc = objfs_prefix_store_create(mid, prefix, out);
		if (rc == 0)
			objfs_info(log, "store", "store s3://%s/%s", bucket,
				   prefix);
	} else {
		rc = find_root(bucket, &root, &lprefix);
		if (rc != 0)
			goto out;
		rc = objfs_local_store_create(root, log, &leaf);
		if (rc == 0)
			rc = meter(cfg, &leaf);
		if (rc != 0)
			goto out;
		rc = objfs_prefix_store_create(leaf, lprefix, out);
		if (rc == 0)
			objfs_info(log, "store", "store file://%s (root %s, "
				   "prefix \"%s\")", bucket, root, lprefix);
	}
	if (rc == 0 && cfg->delete_delay_ms > 0) {
		struct objfs_delq_config dc = {
			.delay_ms = cfg->delete_delay_ms,
			.metrics = cfg->metrics,
		};

		rc = objfs_delq_store_create(*out, &dc, log, out);
	}
out:
	free(scheme);
	free(bucket);
	free(prefix);
	free(root);
	free(lprefix);
	return rc;
}
