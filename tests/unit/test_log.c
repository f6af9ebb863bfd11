/* Unit tests of the logger: levels, JSON escaping, one line per call. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/errors.h"
#include "common/log.h"

static size_t read_all(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	return n;
}

static void test_parse_level(void **state)
{
	enum objfs_log_level l;

	(void)state;
	assert_int_equal(objfs_log_parse_level("debug", &l), 0);
	assert_int_equal(l, OBJFS_LOG_DEBUG);
	assert_int_equal(objfs_log_parse_level("WARNING", &l), 0);
	assert_int_equal(l, OBJFS_LOG_WARN);
	assert_int_equal(objfs_log_parse_level("Error", &l), 0);
	assert_int_equal(l, OBJFS_LOG_ERROR);
	assert_int_equal(objfs_log_parse_level("loud", &l), EINVAL);
	assert_int_equal(objfs_log_parse_level(NULL, &l), EINVAL);
}

static void test_json_line(void **state)
{
	int p[2];
	char buf[8192];
	struct objfs_log *log;

	(void)state;
	assert_int_equal(pipe(p), 0);
	log = objfs_log_create(p[1], OBJFS_LOG_INFO);
	assert_non_null(log);
	objfs_debug(log, "t", "hidden %d", 1);
	objfs_info(log, "csi", "quote \" back \\ nl \n tab \t bell \a");
	objfs_error(log, "s3", "second");
	objfs_log_destroy(log);
	close(p[1]);
	read_all(p[0], buf, sizeof(buf));
	close(p[0]);

	assert_null(strstr(buf, "hidden"));
	assert_non_null(strstr(buf, "\"level\":\"info\",\"sub\":\"csi\","));
	assert_non_null(strstr(buf,
		"\"msg\":\"quote \\\" back \\\\ nl \\n tab \\t bell \\u0007\"}\n"));
	assert_non_null(strstr(buf, "\"level\":\"error\",\"sub\":\"s3\",\"msg\":\"second\"}\n"));
	/* exactly two lines */
	assert_int_equal(strchr(strchr(buf, '\n') + 1, '\n')[1], '\0');
}

/* A detached process's terminal gets warnings and errors besides the log
 * (objfs_log_also), until the log is redirected. */
static void test_also(void **state)
{
	int main_p[2], term[2], later[2];
	char buf[8192];
	struct objfs_log *log;

	(void)state;
	assert_int_equal(pipe(main_p), 0);
	assert_int_equal(pipe(term), 0);
	assert_int_equal(pipe(later), 0);
	log = objfs_log_create(main_p[1], OBJFS_LOG_DEBUG);
	assert_non_null(log);
	objfs_log_also(log, term[1], OBJFS_LOG_WARN);
	objfs_info(log, "t", "quiet");
	objfs_warn(log, "t", "loud");
	objfs_log_redirect(log, later[1], "t");
	objfs_error(log, "t", "after");
	objfs_log_destroy(log);
	close(main_p[1]);
	close(term[1]);
	close(later[1]);
	read_all(term[0], buf, sizeof(buf));
	assert_null(strstr(buf, "quiet"));
	assert_non_null(strstr(buf, "\"msg\":\"loud\"}\n"));
	assert_null(strstr(buf, "after"));
	read_all(main_p[0], buf, sizeof(buf));
	assert_non_null(strstr(buf, "quiet"));
	assert_non_null(strstr(buf, "loud"));
	read_all(later[0], buf, sizeof(buf));
	assert_non_null(strstr(buf, "after"));
	close(main_p[0]);
	close(term[0]);
	close(later[0]);
}

static void test_long_message_is_cut(void **state)
{
	int p[2];
	static char big[10000];
	static char buf[16384];
	struct objfs_log *log;
	size_t n;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	assert_int_equal(pipe(p), 0);
	log = objfs_log_create(p[1], OBJFS_LOG_DEBUG);
	objfs_info(log, "t", "%s", big);
	objfs_log_destroy(log);
	close(p[1]);
	n = read_all(p[0], buf, sizeof(buf));
	close(p[0]);
	assert_true(n < 4096 + 256);
	assert_non_null(strstr(buf, "...\"}\n"));
}

static void test_null_logger_and_strerror(void **state)
{
	(void)state;
	objfs_info(NULL, "t", "dropped");
	assert_false(objfs_log_enabled(NULL, OBJFS_LOG_ERROR));
	assert_string_equal(objfs_strerror(ENOENT), "No such file or directory");
	assert_non_null(objfs_strerror(99999));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_level),
		cmocka_unit_test(test_json_line),
		cmocka_unit_test(test_long_message_is_cut),
		cmocka_unit_test(test_also),
		cmocka_unit_test(test_null_logger_and_strerror),
	};
	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
