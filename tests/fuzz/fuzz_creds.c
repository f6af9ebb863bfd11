/*
 * fuzz_creds.c - the credentials file reader (common/creds.c): a mounted
 * Secret, an fstab credentials_file=, the node plugin's secrets files.
 *
 * Properties: the reader agrees with a model of the documented format (one
 * key=value per line, blank, '#' and '[' lines skipped, blanks trimmed,
 * known key names in any case, a line longer than the reader's line buffer
 * is an error -- never read as two lines -- and a file naming only one of
 * the two keys is EINVAL); what it read, written with objfs_creds_format(),
 * reads back the same.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/creds.h"
#include "fuzz.h"

#define LINE_MAX_MODEL 4094     /* bytes of a line without its newline */

static bool same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int load(const void *text, size_t n, struct objfs_creds *c, int *line)
{
	char path[64];
	int fd = memfd_create("creds", MFD_CLOEXEC), rc;

	if (fd < 0 || (n > 0 && write(fd, text, n) != (ssize_t)n))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rc = objfs_creds_load_file(path, c, line);
	close(fd);
	return rc;
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

/* The model: 0 or EINVAL, *line as the reader reports it. */
static int model(const char *text, size_t n, struct objfs_creds *c, int *line)
{
	size_t pos = 0;
	int ln = 0, err = 0;

	while (pos < n && err == 0) {
		const char *nl = memchr(text + pos, '\n', n - pos);
		size_t len = nl != NULL ? (size_t)(nl - text - pos) : n - pos;
		char *l, *s, *eq;

		ln++;
		if (len > LINE_MAX_MODEL) {
			err = EINVAL;
			break;
		}
		l = fuzz_dup((const uint8_t *)text + pos, len);
		s = trim(l);
		if (*s != '\0' && *s != '#' && *s != '[') {
			eq = strchr(s, '=');
			if (eq == NULL) {
				err = EINVAL;
			} else {
				*eq = '\0';
				err = objfs_creds_set(c, trim(s), trim(eq + 1));
			}
		}
		free(l);
		pos += len + 1;
	}
	if (err == 0 && (c->access_key == NULL) != (c->secret_key == NULL))
		err = EINVAL;
	*line = err != 0 ? ln : 0;
	return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct objfs_creds c = OBJFS_CREDS_INIT, m = OBJFS_CREDS_INIT;
	struct objfs_creds c2 = OBJFS_CREDS_INIT;
	int rc, mrc, line = -1, mline = -1;
	char *out = NULL;
	size_t len;

	if (size > 20000)
		return 0;
	rc = load(data, size, &c, &line);
	FUZZ_CHECK(rc == 0 || rc == EINVAL);
	/* a NUL byte ends what the reader sees of a line; the model is of
	 * text only */
	if (memchr(data, '\0', size) == NULL) {
		mrc = model((const char *)data, size, &m, &mline);
		FUZZ_CHECK(rc == mrc);
		FUZZ_CHECK(line == mline);
		if (rc == 0) {
			FUZZ_CHECK(same(c.access_key, m.access_key));
			FUZZ_CHECK(same(c.secret_key, m.secret_key));
			FUZZ_CHECK(same(c.session_token, m.session_token));
		}
	}
	if (rc == 0 && objfs_creds_format(&c, &out, &len) == 0) {
		FUZZ_CHECK(load(out, len, &c2, &line) == 0);
		FUZZ_CHECK(same(c.access_key, c2.access_key));
		FUZZ_CHECK(same(c.secret_key, c2.secret_key));
		FUZZ_CHECK(same(c.session_token, c2.session_token));
		free(out);
	}
	objfs_creds_release(&c);
	objfs_creds_release(&c2);
	objfs_creds_release(&m);
	return 0;
}
