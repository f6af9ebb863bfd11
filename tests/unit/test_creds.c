/* Unit tests of the credentials loader: file formats, env fallback, errors
 * that never echo file contents. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_formats),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_env_fills_gaps),
	};
	return cmocka_run_group_tests_name("creds", tests, NULL, NULL);
}
