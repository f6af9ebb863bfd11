/*
 * creds.h - S3 credentials: read from a file or the environment, never from
 * a command line, wiped from memory when released; and the writer of the
 * file (the node plugin hands a mount its credentials through one).
 *
 * File format: one key=value per line (at most 4094 bytes: a longer line
 * is EINVAL); blank lines and lines starting with '#' or '[' are ignored;
 * surrounding spaces are trimmed.  Keys (any case):
 *   access_key_id (or aws_access_key_id, accessKeyID)
 *   secret_access_key (or aws_secret_access_key, secretAccessKey)
 *   session_token (or aws_session_token, sessionToken)
 * and, for keys that are fetched and renewed (backend/credprov.h):
 *   role_arn (roleArn), web_identity_token_file (webIdentityTokenFile),
 *   role_session_name (roleSessionName), sts_endpoint (stsEndpoint),
 *   container_credentials_full_uri (containerCredentialsURI),
 *   container_authorization_token_file (containerAuthorizationTokenFile),
 *   ec2_metadata_endpoint (ec2MetadataEndpoint: the instance metadata
 *   service's URL; set by objfs_creds_chain(), never from the environment)
 * Environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
 * AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_SESSION_NAME,
 * AWS_ENDPOINT_URL_STS, AWS_CONTAINER_CREDENTIALS_FULL_URI,
 * AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE.  The token files' contents are
 * read by the provider when it fetches keys, never here.
 */
#ifndef OBJFS_CREDS_H
#define OBJFS_CREDS_H

#include <stddef.h>

/* Owned strings (NULL when absent); release with objfs_creds_release(). */
struct objfs_creds {
	char *access_key;
	char *secret_key;
	char *session_token;
	char *role_arn;
	char *web_identity_token_file;
	char *role_session_name;
	char *sts_endpoint;
	char *container_uri;
	char *container_token_file;
	char *imds_endpoint;            /* EC2 instance metadata (IMDSv2) */
};
#define OBJFS_CREDS_INIT { NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL }

/* Reads path.  0, an errno from open/read, or EINVAL for a malformed line
 * (*line, when not NULL, gets its number) or a file that names only one of
 * the two keys.  Never puts file contents in an error. */
int objfs_creds_load_file(const char *path, struct objfs_creds *c, int *line);

/* Fills what is missing in c from the environment.  0 or ENOMEM. */
int objfs_creds_load_env(struct objfs_creds *c);

/*
 * The AWS credential chain, in the AWS SDKs' order; the first source that
 * names credentials wins and the later ones are not looked at:
 *   1. environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
 *      (AWS_SESSION_TOKEN);
 *   2. shared files: the profile AWS_PROFILE (else "default") of
 *      AWS_SHARED_CREDENTIALS_FILE (else ~/.aws/credentials, section
 *      [NAME]) and AWS_CONFIG_FILE (else ~/.aws/config, section
 *      [profile NAME], [default]); the credentials file's values win.  Its
 *      aws_access_key_id, aws_secret_access_key, aws_session_token, else
 *      role_arn + web_identity_token_file (role_session_name);
 *   3. web identity: AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE;
 *   4. container credentials: AWS_CONTAINER_CREDENTIALS_FULL_URI (or
 *      AWS_CONTAINER_CREDENTIALS_RELATIVE_URI on 169.254.170.2) with
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE;
 *   5. EC2 instance metadata (IMDSv2): AWS_EC2_METADATA_SERVICE_ENDPOINT,
 *      else http://169.254.169.254 (http://[fd00:ec2::254] when
 *      AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE is IPv6); skipped when
 *      AWS_EC2_METADATA_DISABLED is "true" (any case), as the SDKs do.
 * AWS_ROLE_SESSION_NAME and AWS_ENDPOINT_URL_STS apply to both web
 * identity sources.  The settings beside them:
 *   region     AWS_REGION, AWS_DEFAULT_REGION, the profile's region;
 *   endpoint   AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
 *              endpoint_url;
 *   ca_bundle  AWS_CA_BUNDLE, the profile's ca_bundle.
 */
struct objfs_aws_env {
	char *region;           /* owned; NULL when none names one */
	char *endpoint;
	char *ca_bundle;
	char looked[1536];      /* the sources looked at, in order, and what
				   each had ("" before the chain ran); never
				   a secret */
};
#define OBJFS_AWS_ENV_INIT { NULL, NULL, NULL, "" }

/* Runs the chain above with env (NULL: getenv(3); HOME from it too) into
 * c, which must be empty, and a.  0 with c empty when no source had
 * credentials (a->looked says where objfs looked); EINVAL when a source
 * is wrong (AWS_PROFILE names a profile neither file has, a malformed
 * shared file: why, cap bytes, says which and where, never a value);
 * ENOMEM. */
int objfs_creds_chain(struct objfs_creds *c, struct objfs_aws_env *a,
		      char *(*env)(const char *), char *why, size_t cap);
void objfs_aws_env_release(struct objfs_aws_env *a);

/* Reads the section of profile in the shared file path (config: the
 * config file's names, [profile NAME]) into c and a (each value replaces
 * one already there).  *found says whether the section is there.  0, an
 * errno of open/read, or EINVAL for a malformed line (*line gets its
 * number).  Unknown keys are ignored, as are indented sub-keys. */
int objfs_creds_load_profile(const char *path, const char *profile, int config,
			     struct objfs_creds *c, struct objfs_aws_env *a,
			     int *found, int *line);

/* Sets one named key (the names above).  0, EINVAL (unknown name) or ENOMEM. */
int objfs_creds_set(struct objfs_creds *c, const char *name, const char *value);

/* Formats c in the file format above (access_key_id=, secret_access_key=,
 * session_token=, role_arn=, ... lines, absent keys left out) into *out (malloc'ed,
 * NUL-terminated; the caller wipes and frees it; *len bytes without the
 * NUL).  0, EINVAL (a value objfs_creds_load_file() would not read back:
 * empty, a CR or LF, surrounding blanks) or ENOMEM. */
int objfs_creds_format(const struct objfs_creds *c, char **out, size_t *len);

/* Writes c (objfs_creds_format) to a new file "DIR/creds-XXXXXX" of mode
 * 0600 in the existing directory dir; path (cap bytes) gets its name.  On
 * failure nothing is left and path is "".  0, an errno of the file calls,
 * ENAMETOOLONG or an error of objfs_creds_format().  The caller unlinks
 * the file. */
int objfs_creds_write_temp(const char *dir, const struct objfs_creds *c,
			   char *path, size_t cap);

/* Whether c names keys or where to fetch them (a role, a container
 * endpoint, instance metadata): something for a store to sign with. */
int objfs_creds_any(const struct objfs_creds *c);

/* Replaces to with a copy of from.  0 or ENOMEM (to left empty). */
int objfs_creds_copy(const struct objfs_creds *from, struct objfs_creds *to);

/* Wipes and frees; leaves c empty. */
void objfs_creds_release(struct objfs_creds *c);

#endif
