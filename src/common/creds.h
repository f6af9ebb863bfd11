/*
 * creds.h - S3 credentials: read from a file or the environment, never from
 * a command line, wiped from memory when released.
 *
 * File format: one key=value per line; blank lines and lines starting with
 * '#' or '[' are ignored; surrounding spaces are trimmed.  Keys (any case):
 *   access_key_id (or aws_access_key_id, accessKeyID)
 *   secret_access_key (or aws_secret_access_key, secretAccessKey)
 *   session_token (or aws_session_token, sessionToken)
 * Environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN.
 */
#ifndef OBJFS_CREDS_H
#define OBJFS_CREDS_H

/* Owned strings (NULL when absent); release with objfs_creds_release(). */
struct objfs_creds {
	char *access_key;
	char *secret_key;
	char *session_token;
};
#define OBJFS_CREDS_INIT { NULL, NULL, NULL }

/* Reads path.  0, an errno from open/read, or EINVAL for a malformed line
 * (*line, when not NULL, gets its number) or a file that names only one of
 * the two keys.  Never puts file contents in an error. */
int objfs_creds_load_file(const char *path, struct objfs_creds *c, int *line);

/* Fills what is missing in c from the environment.  0 or ENOMEM. */
int objfs_creds_load_env(struct objfs_creds *c);

/* Sets one named key (the names above).  0, EINVAL (unknown name) or ENOMEM. */
int objfs_creds_set(struct objfs_creds *c, const char *name, const char *value);

/* Wipes and frees; leaves c empty. */
void objfs_creds_release(struct objfs_creds *c);

#endif
