/*
 * roots.c - the root stores of CSI volumes (see roots.h).
 *
 * The default store is borrowed from the driver for the length of a call;
 * a bucket store is opened per call from the driver's configuration, the
 * connection resolved here and the request's secrets, and destroyed by
 * objfs_csi_root_close().  A caBundle secret is written once to a
 * content-addressed file under the state dir, so concurrent calls agree.
 *
 * The connection (backend/s3conn.h) is resolved here for controller and
 * node alike (objfs_csi_conn_resolve: hint, secrets, plugin), with the
 * getters of its sources in the CSI: request maps, index entries, volume
 * records, the volume context.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/s3conn.h"
#include "common/creds.h"
#include "common/errors.h"
#include "csi/driver.h"
#include "csi/params.h"
#include "csi/pb.h"
#include "csi/roots.h"
#include "csi/volid.h"
#include "volume/catalog.h"
#include "volume/kvtext.h"

unsigned objfs_csi_conn_resolve(const struct objfs_csi *csi,
				objfs_s3_conn_get_fn *get, const void *hint,
				void *const *secrets, size_t n_secrets,
				struct objfs_s3_conn *out)
{
	struct objfs_csi_map sec = { secrets, n_secrets };
	unsigned bad = 0;

	if (get != NULL)
		bad |= objfs_s3_conn_add(out, get, hint);
	if (n_secrets > 0)
		bad |= objfs_s3_conn_add(out, objfs_csi_map_conn_get, &sec);
	objfs_s3_conn_add_plugin(out, &csi->cfg.store);
	return bad;
}

enum objfs_rpc_code objfs_csi_conn_for_create(const struct objfs_csi *csi,
					      const struct objfs_csi_params *p,
					      void *const *secrets, size_t n_secrets,
					      struct objfs_s3_conn *out,
					      struct objfs_rpc_status *st)
{
	unsigned bad;

	*out = p->conn;
	bad = objfs_csi_conn_resolve(csi, NULL, NULL, secrets, n_secrets, out);
	/* a style the node would refuse makes no volume */
	if ((bad & OBJFS_S3_CONN_BAD_STYLE) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "secret %s must be path or virtual",
				      OBJFS_S3_CONN_KEY_STYLE);
	return OBJFS_RPC_OK;
}

/* "ctx.KEY" into buf; false when it does not fit. */
static bool ctx_key(char *buf, size_t cap, const char *key)
{
	return (size_t)snprintf(buf, cap, "%s%s", OBJFS_VOLREC_CTX, key) < cap;
}

const char *objfs_csi_kv_conn_get(const void *kv, const char *key)
{
	char k[64];

	return ctx_key(k, sizeof(k), key) ? objfs_kv_get(kv, k) : NULL;
}

const char *objfs_csi_volrec_conn_get(const void *volrec, const char *key)
{
	char k[64];

	return ctx_key(k, sizeof(k), key) ? objfs_volrec_get_param(volrec, k) : NULL;
}

int objfs_csi_kv_conn_set(void *kv, const char *key, const char *value)
{
	char k[64];

	return ctx_key(k, sizeof(k), key) ? objfs_kv_set(kv, k, value) : ENAMETOOLONG;
}

enum objfs_rpc_code objfs_csi_conn_from_context(const struct objfs_csi *csi,
						void *const *ctx, size_t n_ctx,
						const char *bucket,
						const char *volume_id,
						struct objfs_s3_conn *out,
						struct objfs_rpc_status *st)
{
	struct objfs_csi_map map = { ctx, n_ctx };
	unsigned bad;

	memset(out, 0, sizeof(*out));
	bad = objfs_csi_conn_resolve(csi, objfs_csi_map_conn_get, &map, NULL, 0, out);
	bad |= objfs_s3_conn_check(out);
	if ((bad & OBJFS_S3_CONN_BAD_STYLE) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_context %s must be path or virtual, not \"%s\"",
				      OBJFS_S3_CONN_KEY_STYLE,
				      objfs_pb_map_get(ctx, n_ctx, OBJFS_S3_CONN_KEY_STYLE));
	if ((bad & (OBJFS_S3_CONN_BAD_SCHEME | OBJFS_S3_CONN_BAD_ENDPOINT_CHAR |
		    OBJFS_S3_CONN_LONG_ENDPOINT)) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_context endpoint \"%s\" is not an http(s) URL",
				      out->endpoint);
	if ((bad & (OBJFS_S3_CONN_BAD_REGION_CHAR | OBJFS_S3_CONN_LONG_REGION)) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume_context region \"%s\" is not valid", out->region);
	/* No endpoint anywhere: AWS's for the region, as the controller's
	 * store stack does. */
	if (bucket != NULL && objfs_s3_conn_aws(out, bucket) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "volume %s: region \"%s\" cannot name an AWS endpoint",
				      volume_id, out->region);
	return OBJFS_RPC_OK;
}

void objfs_csi_root_close(struct objfs_csi_root *r)
{
	if (r->owned)
		objfs_store_destroy(r->store);
	r->store = NULL;
	r->owned = false;
}

/* Writes a PEM bundle given in the secrets (key caBundle) to
 * STATE_DIR/ca/<sha256>.pem (once; content-addressed, so concurrent calls
 * agree) and puts its path in path. */
int objfs_csi_ca_bundle_file(struct objfs_csi *csi, const char *pem, char *path,
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

enum objfs_rpc_code objfs_csi_role_creds(struct objfs_csi *csi, const char *role,
					 struct objfs_creds *c,
					 struct objfs_rpc_status *st)
{
	const struct objfs_creds *own = csi->cfg.store.s3.keyless;
	const char *tok = own != NULL ? own->web_identity_token_file : NULL;
	const char *sts = own != NULL ? own->sts_endpoint : NULL;
	char *(*env)(const char *) = csi->cfg.getenv != NULL ? csi->cfg.getenv :
				     getenv;

	if (tok == NULL)
		tok = env("AWS_WEB_IDENTITY_TOKEN_FILE");
	if (sts == NULL)
		sts = env("AWS_ENDPOINT_URL_STS");
	if (strncmp(role, "arn:", 4) != 0 || strpbrk(role, "\r\n") != NULL)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "secret roleArn \"%.128s\" is not a role ARN", role);
	if (tok == NULL || tok[0] == '\0')
		return objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "secret roleArn needs the plugin's web identity token: "
				      "set AWS_WEB_IDENTITY_TOKEN_FILE (IRSA, or a projected "
				      "service account token)");
	if (objfs_creds_set(c, "role_arn", role) != 0 ||
	    objfs_creds_set(c, "web_identity_token_file", tok) != 0 ||
	    (sts != NULL && sts[0] != '\0' && objfs_creds_set(c, "sts_endpoint", sts) != 0))
		return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
	return OBJFS_RPC_OK;
}

/* Opens the root store of id.  For a bucket, conn must be resolved; keys
 * come from the secrets (keys, or a roleArn), else the plugin's own. */
enum objfs_rpc_code objfs_csi_root_open(struct objfs_csi *csi,
					const struct objfs_id *id,
					const struct objfs_s3_conn *conn,
					void *const *secrets, size_t n_secrets,
					struct objfs_csi_root *r,
					struct objfs_rpc_status *st)
{
	struct objfs_store_config sc;
	struct objfs_creds role = OBJFS_CREDS_INIT;
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
	/* No endpoint anywhere: AWS's for the region (the store stack). */
	r->conn = *conn;
	sc = csi->cfg.store;
	snprintf(url, sizeof(url), "s3://%s", id->bucket);
	sc.url = url;
	objfs_s3_conn_to_store(&r->conn, &sc.s3);
	ak = objfs_csi_map_get(secrets, n_secrets, "accessKeyID");
	sk = objfs_csi_map_get(secrets, n_secrets, "secretAccessKey");
	if ((ak == NULL) != (sk == NULL))
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "secrets must hold both accessKeyID and secretAccessKey, or neither");
	if (ak != NULL) {
		sc.s3.access_key = ak;
		sc.s3.secret_key = sk;
		sc.s3.session_token = objfs_csi_map_get(secrets, n_secrets, "sessionToken");
	} else if ((v = objfs_csi_map_get(secrets, n_secrets, "roleArn")) != NULL) {
		enum objfs_rpc_code code = objfs_csi_role_creds(csi, v, &role, st);

		if (code != OBJFS_RPC_OK) {
			objfs_creds_release(&role);
			return code;
		}
		sc.s3.access_key = sc.s3.secret_key = sc.s3.session_token = NULL;
		sc.s3.keyless = &role;
	}
	if (sc.s3.access_key == NULL && !objfs_creds_any(sc.s3.keyless) &&
	    sc.s3.creds_looked != NULL)
		return objfs_rpc_fail(st, OBJFS_RPC_PERMISSION_DENIED,
				      "no credentials for bucket %s: the secrets hold neither "
				      "accessKeyID and secretAccessKey nor roleArn, and the "
				      "plugin found none of its own; it looked at, in order: %s",
				      id->bucket, sc.s3.creds_looked);
	v = objfs_csi_map_get(secrets, n_secrets, "caBundle");
	if (v != NULL) {
		err = objfs_csi_ca_bundle_file(csi, v, ca, sizeof(ca));
		if (err != 0)
			objfs_creds_release(&role);
		if (err != 0)
			return objfs_rpc_fail(st, err == EINVAL ? OBJFS_RPC_INVALID_ARGUMENT :
					      OBJFS_RPC_FAILED_PRECONDITION,
					      "secret caBundle: %s", err == EINVAL ?
					      "not a PEM bundle" : objfs_strerror(err));
		sc.s3.ca_file = ca;
	}
	err = csi->cfg.store_open(&sc, csi->log, &r->store);
	objfs_creds_release(&role);     /* the store has its copy */
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
enum objfs_rpc_code objfs_csi_root_open_by_id(struct objfs_csi *csi,
					      const struct objfs_id *id,
					      const char *id_text,
					      void *const *secrets,
					      size_t n_secrets,
					      struct objfs_csi_root *r,
					      struct objfs_rpc_status *st)
{
	struct objfs_kv idx = OBJFS_KV_INIT;
	struct objfs_s3_conn conn;
	enum objfs_rpc_code code;

	memset(&conn, 0, sizeof(conn));
	if (id->store == OBJFS_ID_BUCKET) {
		if (objfs_catalog_load(csi->store, id_kind(id), id_text, &idx) != 0)
			objfs_kv_release(&idx);
		(void)objfs_csi_conn_resolve(csi, idx.n > 0 ? objfs_csi_kv_conn_get : NULL,
					     &idx, secrets, n_secrets, &conn);
		/* Nothing in the index and nowhere to look: objfs knows
		 * nothing of it (deleted already, or never made). */
		if (idx.n == 0 && conn.endpoint[0] == '\0') {
			memset(r, 0, sizeof(*r));
			return objfs_rpc_fail(st, OBJFS_RPC_NOT_FOUND,
					      "%s is unknown: not in the index, and no endpoint (secret \"endpoint\" or --s3-endpoint) to look for it",
					      id_text);
		}
	}
	code = objfs_csi_root_open(csi, id, &conn, secrets, n_secrets, r, st);
	objfs_kv_release(&idx);
	return code;
}

