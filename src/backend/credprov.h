/*
 * credprov.h - where an S3 store's keys come from, and when they are
 * renewed: the one credential provider of objfs.
 *
 * Sources, the first configured wins:
 *   static       access key, secret key, optional session token (a
 *                credentials file, AWS_ACCESS_KEY_ID, node-stage secrets):
 *                never renewed;
 *   web identity role_arn + web_identity_token_file (AWS_ROLE_ARN and
 *                AWS_WEB_IDENTITY_TOKEN_FILE: EKS IRSA, projected service
 *                account tokens): the token file is read anew and
 *                exchanged with STS AssumeRoleWithWebIdentity (an
 *                unsigned POST to sts_endpoint, default
 *                https://sts.REGION.amazonaws.com) for temporary keys;
 *   container    container_uri (AWS_CONTAINER_CREDENTIALS_FULL_URI, EKS
 *                Pod Identity) with the token in container_token_file
 *                (AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE, read anew each
 *                time) sent as the Authorization header; the answer is
 *                JSON (AccessKeyId, SecretAccessKey, Token, Expiration).
 *                Over http the host must be a loopback address or the EKS
 *                agent's (169.254.170.2, 169.254.170.23, fd00:ec2::23), as
 *                the AWS SDKs require.
 *   instance     imds_endpoint (EC2 instance metadata, IMDSv2; the last
 *   metadata     source of the chain, common/creds.h): PUT
 *                /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds
 *                (21600), then, with the token in X-aws-ec2-metadata-token,
 *                GET /latest/meta-data/iam/security-credentials/ (the
 *                instance's role) and .../ROLE (JSON as above, with
 *                "Code": "Success"); 1 s per request, never through a
 *                proxy.  Without keys so far, a failure is logged as "no
 *                credentials found" with every source the chain looked at
 *                (the config's looked).
 *
 * JSON answers are read with json-c (strict: only the top-level members
 * count, escapes as RFC 8259 has them).
 *
 * Renewal: temporary keys are renewed refresh_s seconds before they
 * expire (default 300; a test may ask for more to force renewals), by the
 * first request that finds them due; the others keep signing with the
 * current keys meanwhile (they are still valid).  A renewal that fails
 * while the keys are valid is logged and tried again by the next request
 * (at most once per 5 s); once they have expired, requests fail (EACCES)
 * until a renewal succeeds.  No remount is ever needed.
 *
 * Thread-safe.  Secrets (keys, tokens, the token files' contents) are
 * never logged or put in an error; the log names the source, the role,
 * the endpoint and the expiry time.
 */
#ifndef OBJFS_BACKEND_CREDPROV_H
#define OBJFS_BACKEND_CREDPROV_H

#include <stdbool.h>

#include "common/creds.h"

struct objfs_log;
struct objfs_credprov;

struct objfs_credprov_config {
	const struct objfs_creds *creds;        /* the sources above (copied) */
	const char *region;                     /* for STS's default endpoint */
	const char *ca_file;                    /* for the STS and container
						   endpoints, as for S3 */
	bool insecure_skip_verify;
	double refresh_s;                       /* 0: 300 */
	const char *looked;                     /* where the chain looked
						   (objfs_aws_env.looked), for
						   the instance metadata's
						   error; may be NULL */
};

/* 0; EINVAL when creds names no source, or an incomplete one (a role
 * without its token file, one key without the other, a container URI
 * that is neither https nor an allowed http host); ENOMEM.  Nothing is
 * fetched yet: the first objfs_credprov_get() does. */
int objfs_credprov_create(const struct objfs_credprov_config *cfg,
			  struct objfs_log *log, struct objfs_credprov **out);
void objfs_credprov_destroy(struct objfs_credprov *p);

/* Copies the current keys into *out (empty; the caller releases it with
 * objfs_creds_release), renewing them first when due.  0, or EACCES when
 * there are no valid keys (the renewal failed: the log says why), ENOMEM.
 * A provider with no source (anonymous) gives empty keys. */
int objfs_credprov_get(struct objfs_credprov *p, struct objfs_creds *out);

/* Renewals done so far (tests). */
unsigned objfs_credprov_renewals(struct objfs_credprov *p);

/* What the source is, for logs: "static keys", "web identity",
 * "container endpoint", "instance metadata", "none". */
const char *objfs_credprov_kind(const struct objfs_credprov *p);

/* Pure helpers, exposed for tests: the fields of an STS
 * AssumeRoleWithWebIdentity answer or of a container endpoint's or the
 * instance metadata's JSON (a top-level object) into *out and the expiry
 * (seconds since the epoch) into *exp; an error document's code and
 * message into why (cap bytes).  0, EPROTO, ENOMEM, or EACCES (an STS
 * error document, a JSON "Code" other than "Success"). */
int objfs_credprov_parse_sts(const char *doc, size_t len, struct objfs_creds *out,
			     long long *exp, char *why, size_t cap);
int objfs_credprov_parse_json(const char *doc, size_t len, struct objfs_creds *out,
			      long long *exp);
/* Whether a container credentials URI may be used (see above). */
bool objfs_credprov_uri_allowed(const char *uri);

#endif
