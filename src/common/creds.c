/* creds.c - credentials from files and the environment, and the file
 * writer (see creds.h). */
#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/creds.h"

#define CREDS_LINE_MAX 4096

static void wipe_free(char **p)
{
	if (*p != NULL) {
		OPENSSL_cleanse(*p, strlen(*p));
		free(*p);
		*p = NULL;
	}
}

static int replace(char **field, const char *value)
{
	char *copy = strdup(value);

	if (copy == NULL)
		return ENOMEM;
	wipe_free(field);
	*field = copy;
	return 0;
}

/* Every field: its offset, its names in files and secrets, its variable. */
static const struct field {
	size_t off;
	const char *names[3];
	const char *env;
} fields[] = {
	{ offsetof(struct objfs_creds, access_key),
	  { "access_key_id", "aws_access_key_id", "accessKeyID" }, "AWS_ACCESS_KEY_ID" },
	{ offsetof(struct objfs_creds, secret_key),
	  { "secret_access_key", "aws_secret_access_key", "secretAccessKey" },
	  "AWS_SECRET_ACCESS_KEY" },
	{ offsetof(struct objfs_creds, session_token),
	  { "session_token", "aws_session_token", "sessionToken" }, "AWS_SESSION_TOKEN" },
	{ offsetof(struct objfs_creds, role_arn),
	  { "role_arn", "roleArn", NULL }, "AWS_ROLE_ARN" },
	{ offsetof(struct objfs_creds, web_identity_token_file),
	  { "web_identity_token_file", "webIdentityTokenFile", NULL },
	  "AWS_WEB_IDENTITY_TOKEN_FILE" },
	{ offsetof(struct objfs_creds, role_session_name),
	  { "role_session_name", "roleSessionName", NULL }, "AWS_ROLE_SESSION_NAME" },
	{ offsetof(struct objfs_creds, sts_endpoint),
	  { "sts_endpoint", "stsEndpoint", NULL }, "AWS_ENDPOINT_URL_STS" },
	{ offsetof(struct objfs_creds, container_uri),
	  { "container_credentials_full_uri", "containerCredentialsURI", NULL },
	  "AWS_CONTAINER_CREDENTIALS_FULL_URI" },
	{ offsetof(struct objfs_creds, container_token_file),
	  { "container_authorization_token_file", "containerAuthorizationTokenFile", NULL },
	  "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE" },
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))
#define FIELD(c, i) ((char **)((char *)(c) + fields[i].off))

int objfs_creds_set(struct objfs_creds *c, const char *name, const char *value)
{
	size_t i, k;

	for (i = 0; i < N_FIELDS; i++)
		for (k = 0; k < 3 && fields[i].names[k] != NULL; k++)
			if (strcasecmp(name, fields[i].names[k]) == 0)
				return replace(FIELD(c, i), value);
	return EINVAL;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

int objfs_creds_load_file(const char *path, struct objfs_creds *c, int *line)
{
	char buf[CREDS_LINE_MAX];
	FILE *f;
	int n = 0;
	int err = 0;

	if (line != NULL)
		*line = 0;
	f = fopen(path, "re");
	if (f == NULL)
		return errno;
	while (fgets(buf, sizeof(buf), f) != NULL) {
		char *s, *eq;

		n++;
		/* a line longer than buf is refused, never read as two */
		if (strlen(buf) == sizeof(buf) - 1 && buf[sizeof(buf) - 2] != '\n') {
			int ch = fgetc(f);

			if (ch != EOF) {
				err = EINVAL;
				break;
			}
		}
		s = trim(buf);
		if (*s == '\0' || *s == '#' || *s == '[')
			continue;
		eq = strchr(s, '=');
		if (eq == NULL) {
			err = EINVAL;
			break;
		}
		*eq = '\0';
		err = objfs_creds_set(c, trim(s), trim(eq + 1));
		if (err != 0)
			break;
	}
	OPENSSL_cleanse(buf, sizeof(buf));
	if (err == 0 && ferror(f))
		err = EIO;
	fclose(f);
	if (err == 0 && (c->access_key == NULL) != (c->secret_key == NULL))
		err = EINVAL;
	if (err != 0 && line != NULL)
		*line = n;
	return err;
}

int objfs_creds_load_env(struct objfs_creds *c)
{
	size_t i;
	int err;

	for (i = 0; i < N_FIELDS; i++) {
		const char *v = getenv(fields[i].env);

		if (*FIELD(c, i) != NULL || v == NULL || *v == '\0')
			continue;
		err = replace(FIELD(c, i), v);
		if (err != 0)
			return err;
	}
	return 0;
}

void objfs_creds_release(struct objfs_creds *c)
{
	size_t i;

	for (i = 0; i < N_FIELDS; i++)
		wipe_free(FIELD(c, i));
}

int objfs_creds_any(const struct objfs_creds *c)
{
	return c != NULL && (c->access_key != NULL || c->role_arn != NULL ||
			     c->container_uri != NULL);
}

int objfs_creds_copy(const struct objfs_creds *from, struct objfs_creds *to)
{
	size_t i;
	int err = 0;

	objfs_creds_release(to);
	for (i = 0; i < N_FIELDS && err == 0; i++)
		if (*FIELD(from, i) != NULL)
			err = replace(FIELD(to, i), *FIELD(from, i));
	if (err != 0)
		objfs_creds_release(to);
	return err;
}

static bool value_ok(const char *v)
{
	size_t n = strlen(v);

	return n > 0 && strpbrk(v, "\r\n") == NULL && v[0] != ' ' &&
	       v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t';
}

int objfs_creds_format(const struct objfs_creds *c, char **out, size_t *len)
{
	size_t i, cap = 1, off = 0;
	char *text;

	*out = NULL;
	*len = 0;
	for (i = 0; i < N_FIELDS; i++) {
		const char *v = *FIELD(c, i);

		if (v == NULL)
			continue;
		if (!value_ok(v))
			return EINVAL;
		cap += strlen(fields[i].names[0]) + strlen(v) + 2;
	}
	text = malloc(cap);
	if (text == NULL)
		return ENOMEM;
	text[0] = '\0';
	for (i = 0; i < N_FIELDS; i++) {
		if (*FIELD(c, i) != NULL)
			off += (size_t)snprintf(text + off, cap - off, "%s=%s\n",
						fields[i].names[0], *FIELD(c, i));
	}
	*out = text;
	*len = off;
	return 0;
}

int objfs_creds_write_temp(const char *dir, const struct objfs_creds *c,
			   char *path, size_t cap)
{
	char *text = NULL;
	size_t len = 0, off = 0;
	int fd, err;

	path[0] = '\0';
	err = objfs_creds_format(c, &text, &len);
	if (err != 0)
		return err;
	if ((size_t)snprintf(path, cap, "%s/creds-XXXXXX", dir) >= cap) {
		path[0] = '\0';
		err = ENAMETOOLONG;
		goto out;
	}
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		path[0] = '\0';
		goto out;
	}
	if (fchmod(fd, 0600) != 0)
		err = errno;
	while (err == 0 && off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno != EINTR)
			err = errno;
		else if (w > 0)
			off += (size_t)w;
	}
	close(fd);
	if (err != 0) {
		unlink(path);
		path[0] = '\0';
	}
out:
	OPENSSL_cleanse(text, len);
	free(text);
	return err;
}
