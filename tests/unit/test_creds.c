/* Unit tests of the credentials loader and writer: file formats, env
 * fallback, errors that never echo file contents, round trips. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/creds.h"

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/objfs-creds-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_file_formats(void **state)
{
	struct objfs_creds c = OBJFS_CREDS_INIT;
	char *p;
	int line;

	(void)state;
	p = write_tmp("# comment\n[default]\n  aws_access_key_id = AK1 \n"
		      "aws_secret_access_key=se=cret/+\n\nsessionToken=tok\n");
	assert_int_equal(objfs_creds_load_file(p, &c, &line), 0);
	assert_string_equal(c.access_key, "AK1");
	assert_string_equal(c.secret_key, "se=cret/+");
	assert_string_equal(c.session_token, "tok");
	unlink(p);
	objfs_creds_release(&c);
	assert_null(c.access_key);
	assert_null(c.secret_key);
	assert_null(c.session_token);
}

static void test_file_errors(void **state)
{
	struct objfs_creds c = OBJFS_CREDS_INIT;
	char *p;
	int line = 0;

	(void)state;
	assert_int_equal(objfs_creds_load_file("/nonexistent/creds", &c, &line), ENOENT);

	p = write_tmp("access_key_id=A\nthis line has no equals sign\n");
	assert_int_equal(objfs_creds_load_file(p, &c, &line), EINVAL);
	assert_int_equal(line, 2);
	unlink(p);
	objfs_creds_release(&c);

	p = write_tmp("access_key_id=A\nfavourite_colour=blue\n");
	assert_int_equal(objfs_creds_load_file(p, &c, &line), EINVAL);
	unlink(p);
	objfs_creds_release(&c);

	/* An access key without its secret is a mistake, not a credential. */
	p = write_tmp("access_key_id=A\n");
	assert_int_equal(objfs_creds_load_file(p, &c, &line), EINVAL);
	unlink(p);
	objfs_creds_release(&c);
}

static void test_env_fills_gaps(void **state)
{
	struct objfs_creds c = OBJFS_CREDS_INIT;

	(void)state;
	setenv("AWS_ACCESS_KEY_ID", "ENVAK", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "ENVSK", 1);
	unsetenv("AWS_SESSION_TOKEN");
	assert_int_equal(objfs_creds_set(&c, "access_key_id", "FILEAK"), 0);
	assert_int_equal(objfs_creds_load_env(&c), 0);
	assert_string_equal(c.access_key, "FILEAK");   /* file wins */
	assert_string_equal(c.secret_key, "ENVSK");
	assert_null(c.session_token);
	assert_int_equal(objfs_creds_set(&c, "nope", "x"), EINVAL);
	objfs_creds_release(&c);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
}

/* What the writer writes, the loader reads back, in a 0600 file. */
static void test_write_round_trip(void **state)
{
	static const char *const tokens[] = { NULL, "tok/+=en" };
	char dir[] = "/tmp/objfs-creds-dir-XXXXXX";
	char path[128];
	size_t i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (i = 0; i < 2; i++) {
		struct objfs_creds in = OBJFS_CREDS_INIT, out = OBJFS_CREDS_INIT;
		struct stat sb;

		assert_int_equal(objfs_creds_set(&in, "access_key_id", "AK ID"), 0);
		assert_int_equal(objfs_creds_set(&in, "secret_access_key", "s=c#r[e]t/+"), 0);
		if (tokens[i] != NULL)
			assert_int_equal(objfs_creds_set(&in, "session_token", tokens[i]), 0);
		assert_int_equal(objfs_creds_write_temp(dir, &in, path, sizeof(path)), 0);
		assert_int_equal(strncmp(path, dir, strlen(dir)), 0);
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0600);
		assert_int_equal(objfs_creds_load_file(path, &out, NULL), 0);
		assert_string_equal(out.access_key, "AK ID");
		assert_string_equal(out.secret_key, "s=c#r[e]t/+");
		if (tokens[i] != NULL)
			assert_string_equal(out.session_token, tokens[i]);
		else
			assert_null(out.session_token);
		unlink(path);
		objfs_creds_release(&in);
		objfs_creds_release(&out);
	}
	assert_int_equal(rmdir(dir), 0);
}

/* Values the loader would read differently are refused, and nothing is
 * left behind. */
static void test_write_rejects(void **state)
{
	static const char *const bad[] = { "two\nlines", "cr\r", " lead", "trail\t", "" };
	char dir[] = "/tmp/objfs-creds-dir-XXXXXX";
	char path[128];
	char *text = NULL;
	size_t i, len = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct objfs_creds c = OBJFS_CREDS_INIT;

		assert_int_equal(objfs_creds_set(&c, "access_key_id", "AK"), 0);
		assert_int_equal(objfs_creds_set(&c, "secret_access_key", bad[i]), 0);
		assert_int_equal(objfs_creds_format(&c, &text, &len), EINVAL);
		assert_null(text);
		assert_int_equal(objfs_creds_write_temp(dir, &c, path, sizeof(path)), EINVAL);
		assert_string_equal(path, "");
		objfs_creds_release(&c);
	}
	assert_int_equal(rmdir(dir), 0);   /* empty */
	{
		struct objfs_creds c = OBJFS_CREDS_INIT;

		assert_int_equal(objfs_creds_set(&c, "access_key_id", "AK"), 0);
		assert_int_equal(objfs_creds_set(&c, "secret_access_key", "SK"), 0);
		assert_int_equal(objfs_creds_write_temp("/nonexistent/dir", &c, path,
							sizeof(path)), ENOENT);
		assert_string_equal(path, "");
		assert_int_equal(objfs_creds_format(&c, &text, &len), 0);
		assert_string_equal(text, "access_key_id=AK\nsecret_access_key=SK\n");
		assert_int_equal(len, strlen(text));
		free(text);
		objfs_creds_release(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_formats),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_env_fills_gaps),
		cmocka_unit_test(test_write_round_trip),
		cmocka_unit_test(test_write_rejects),
	};
	return cmocka_run_group_tests_name("creds", tests, NULL, NULL);
}
