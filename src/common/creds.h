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
 *   container_authorization_token_file (containerAuthorizationTokenFile)
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
};
#define OBJFS_CREDS_INIT { NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL }

/* Reads path.  0, an errno from open/read, or EINVAL for a malformed line
 * (*line, when not NULL, gets its number) or a file that names only one of
 * the two keys.  Never puts file contents in an error. */
int objfs_creds_load_file(const char *path, struct objfs_creds *c, int *line);

/* Fills what is missing in c from the environment.  0 or ENOMEM. */
int objfs_creds_load_env(struct objfs_creds *c);

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
 * endpoint): something for a store to sign with. */
int objfs_creds_any(const struct objfs_creds *c);

/* Replaces to with a copy of from.  0 or ENOMEM (to left empty). */
int objfs_creds_copy(const struct objfs_creds *from, struct objfs_creds *to);

/* Wipes and frees; leaves c empty. */
void objfs_creds_release(struct objfs_creds *c);

#endif
