/* creds.c - credentials from files and the environment, and the file
 * writer (see creds.h). */
#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
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

int objfs_creds_set(struct objfs_creds *c, const char *name, const char *value)
{
	if (strcasecmp(name, "access_key_id") == 0 ||
	    strcasecmp(name, "aws_access_key_id") == 0 ||
	    strcasecmp(name, "accessKeyID") == 0)
		return replace(&c->access_key, value);
	if (strcasecmp(name, "secret_access_key") == 0 ||
	    strcasecmp(name, "aws_secret_access_key") == 0 ||
	    strcasecmp(name, "secretAccessKey") == 0)
		return replace(&c->secret_key, value);
	if (strcasecmp(name, "session_token") == 0 ||
	    strcasecmp(name, "aws_session_token") == 0 ||
	    strcasecmp(name, "sessionToken") == 0)
		return replace(&c->session_token, value);
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
	static const struct {
		const char *env;
		const char *name;
	} vars[] = {
		{ "AWS_ACCESS_KEY_ID", "access_key_id" },
		{ "AWS_SECRET_ACCESS_KEY", "secret_access_key" },
		{ "AWS_SESSION_TOKEN", "session_token" },
	};
	char **fields[] = { &c->access_key, &c->secret_key, &c->session_token };
	size_t i;
	int err;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i].env);

		if (*fields[i] != NULL || v == NULL || *v == '\0')
			continue;
		err = objfs_creds_set(c, vars[i].name, v);
		if (err != 0)
			return err;
	}
	return 0;
}

void objfs_creds_release(struct objfs_creds *c)
{
	wipe_free(&c->access_key);
	wipe_free(&c->secret_key);
	wipe_free(&c->session_token);
}

static bool value_ok(const char *v)
{
	size_t n = strlen(v);

	return n > 0 && strpbrk(v, "\r\n") == NULL && v[0] != ' ' &&
	       v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t';
}

int objfs_creds_format(const struct objfs_creds *c, char **out, size_t *len)
{
	static const char *const keys[3] = {
		"access_key_id", "secret_access_key", "session_token"
	};
	const char *vals[3] = { c->access_key, c->secret_key, c->session_token };
	size_t i, cap = 1, off = 0;
	char *text;

	*out = NULL;
	*len = 0;
	for (i = 0; i < 3; i++) {
		if (vals[i] == NULL)
			continue;
		if (!value_ok(vals[i]))
			return EINVAL;
		cap += strlen(keys[i]) + strlen(vals[i]) + 2;
	}
	text = malloc(cap);
	if (text == NULL)
		return ENOMEM;
	text[0] = '\0';
	for (i = 0; i < 3; i++) {
		if (vals[i] != NULL)
			off += (size_t)snprintf(text + off, cap - off, "%s=%s\n",
						keys[i], vals[i]);
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
