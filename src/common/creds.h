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
 * Environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN.
 */
#ifndef OBJFS_CREDS_H
#define OBJFS_CREDS_H

#include <stddef.h>

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

/* Formats c in the file format above (access_key_id=, secret_access_key=,
 * session_token= lines, absent keys left out) into *out (malloc'ed,
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

/* Wipes and frees; leaves c empty. */
void objfs_creds_release(struct objfs_creds *c);

#endif
