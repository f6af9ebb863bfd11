/* Unit tests of objfs-mount's -o contract (common/mountopts): what the node
 * builds, objfs-mount reads back; bad options are refused by name; values
 * never add options. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/mountopts.h"

#define MARK(o, w) objfs_mount_opts_mark((o), OBJFS_MOPT_##w)

/* What the node plugin asks of every mount: the exact text. */
static void test_build_node_options(void **state)
{
	struct objfs_mount_opts o = OBJFS_MOUNT_OPTS_INIT;
	char buf[512] = "";

	(void)state;
	o.allow_other = true;
	MARK(&o, ALLOW_OTHER);
	o.ro = true;
	MARK(&o, RO);
	o.gid = 1000;
	MARK(&o, GID);
	o.umask = 02;
	MARK(&o, UMASK);
	o.mem_limit = 32ULL << 20;
	MARK(&o, MEM_LIMIT);
	o.spool_dir = "/state/node/spool";
	MARK(&o, SPOOL_DIR);
	o.endpoint = "http://127.0.0.1:9";
	MARK(&o, ENDPOINT);
	o.region = "us-east-1";
	MARK(&o, REGION);
	o.path_style = true;
	MARK(&o, ADDRESSING);
	assert_int_equal(objfs_mount_opts_build(&o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "allow_other,ro,gid=1000,umask=0002,mem_limit=32M,"
			    "spool_dir=/state/node/spool,endpoint=http://127.0.0.1:9,"
			    "region=us-east-1,addressing=path");

	/* The supervisor's options go after what is there. */
	memset(&o, 0, sizeof(o));
	o.ready_fd = 3;
	MARK(&o, READY_FD);
	o.credentials_file = "/tmp/creds-AbC123";
	MARK(&o, CREDENTIALS_FILE);
	assert_int_equal(objfs_mount_opts_build(&o, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "addressing=path,ready_fd=3,"
			       "credentials_file=/tmp/creds-AbC123"));
	assert_string_equal(objfs_mount_opts_name(OBJFS_MOPT_MEM_LIMIT), "mem_limit");
}

/* Every option, built and parsed back, is the same typed value. */
static void test_round_trip(void **state)
{
	struct objfs_mount_opts o = OBJFS_MOUNT_OPTS_INIT, p;
	char buf[2048] = "", again[2048] = "", err[128];

	(void)state;
	o.endpoint = "https://s3.example:9000";
	o.region = "eu-west-3";
	o.path_style = false;
	o.ca_file = "/etc/ssl/ca.pem";
	o.insecure_skip_verify = true;
	o.unsigned_payload = true;
	o.signed_payload = true;
	o.max_connections = 4;
	o.retries = 7;
	o.retry_timeout = 90;
	o.stall_timeout = 1.5;
	o.ro = true;
	o.allow_other = true;
	o.uid = 1001;
	o.gid = 0;
	o.umask = 027;
	o.attr_ttl = 0.25;
	o.entry_ttl = 1;
	o.negative_ttl = 0.1;
	o.dir_ttl = 30;
	o.volrec_ttl = 1e-3;
	o.usage_refresh = 600;
	o.mem_limit = 12ULL << 20;
	o.readahead = 1536ULL << 10;
	o.part_size = 5ULL << 30;
	o.spool_limit = 0;
	o.cache_size = 1000;
	o.readahead_chunks = 3;
	o.upload_parallel = 0;
	o.threads = 32;
	o.spool_dir = "/var/tmp";
	o.cache_dir = "/var/cache/objfs";
	o.log_level = OBJFS_LOG_WARN;
	o.log_file = "/var/log/objfs-vol.log";
	o.metrics = "127.0.0.1:9100";
	o.ready_fd = 3;
	o.credentials_file = "/run/c";
	o.resume = true;
	o.noresume = true;              /* objfs-mount refuses both */
	o.nonempty = true;
	o.xattrs = true;
	o.state_dir = "/var/lib/objfs/s,1";
	o.crash_at = "rename:a";
	o.user_resend = true;
	o.no_sign_request = true;
	o.hedge_after = 0.25;
	o.fuse = "noatime,fsname=vol\\,1";
	o.set = (UINT64_C(1) << OBJFS_MOPT_COUNT) - 1;
	assert_int_equal(objfs_mount_opts_build(&o, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "readahead=1536K,"));
	assert_non_null(strstr(buf, "part_size=5G,"));
	assert_non_null(strstr(buf, "cache_size=1000,"));
	assert_non_null(strstr(buf, "addressing=virtual,"));
	assert_non_null(strstr(buf, "umask=0027,"));
	assert_non_null(strstr(buf, "log_level=warn,"));
	assert_non_null(strstr(buf, "log_file=/var/log/objfs-vol.log,"));
	assert_non_null(strstr(buf, "metrics=127.0.0.1:9100,"));

	assert_int_equal(objfs_mount_opts_parse(buf, 0, &p, err, sizeof(err)), 0);
	assert_true(p.set == o.set);
	assert_string_equal(p.endpoint, o.endpoint);
	assert_string_equal(p.region, o.region);
	assert_false(p.path_style);
	assert_string_equal(p.ca_file, o.ca_file);
	assert_true(p.resume);
	assert_true(p.noresume);
	assert_true(p.nonempty);
	assert_string_equal(p.metrics, o.metrics);
	assert_string_equal(p.state_dir, o.state_dir);
	assert_string_equal(p.crash_at, o.crash_at);
	assert_true(p.user_resend && p.hedge_after == 0.25);
	assert_true(p.insecure_skip_verify && p.unsigned_payload && p.signed_payload);
	assert_int_equal(p.max_connections, 4);
	assert_int_equal(p.retries, 7);
	assert_true(p.retry_timeout == 90 && p.stall_timeout == 1.5);
	assert_true(p.ro && p.allow_other);
	assert_int_equal(p.uid, 1001);
	assert_int_equal(p.gid, 0);
	assert_int_equal(p.umask, 027);
	assert_true(p.attr_ttl == 0.25 && p.entry_ttl == 1 && p.negative_ttl == 0.1);
	assert_true(p.dir_ttl == 30 && p.volrec_ttl == 1e-3 && p.usage_refresh == 600);
	assert_int_equal(p.mem_limit, 12ULL << 20);
	assert_int_equal(p.readahead, 1536ULL << 10);
	assert_int_equal(p.part_size, 5ULL << 30);
	assert_int_equal(p.spool_limit, 0);
	assert_int_equal(p.cache_size, 1000);
	assert_int_equal(p.readahead_chunks, 3);
	assert_int_equal(p.upload_parallel, 0);
	assert_int_equal(p.threads, 32);
	assert_string_equal(p.spool_dir, o.spool_dir);
	assert_string_equal(p.cache_dir, o.cache_dir);
	assert_string_equal(p.log_file, o.log_file);
	assert_int_equal(p.log_level, OBJFS_LOG_WARN);
	assert_int_equal(p.ready_fd, 3);
	assert_string_equal(p.credentials_file, o.credentials_file);
	assert_string_equal(p.fuse, "noatime,fsname=vol\\,1");
	assert_int_equal(objfs_mount_opts_build(&p, again, sizeof(again)), 0);
	assert_string_equal(again, buf);
	objfs_mount_opts_release(&p);
	assert_null(p.mem);
}

/* objfs-mount's own spellings of values. */
static void test_values(void **state)
{
	struct objfs_mount_opts o;
	char err[128];

	(void)state;
	assert_int_equal(objfs_mount_opts_parse("mem_limit=12MiB,readahead=4MB,part_size=0x10,"
						"cache_size=2G,threads=0,attr_ttl=1e1,"
						"log_level=WARNING,addressing=path",
						0, &o, err, sizeof(err)), 0);
	assert_int_equal(o.mem_limit, 12ULL << 20);
	assert_int_equal(o.readahead, 4ULL << 20);
	assert_int_equal(o.part_size, 16);
	assert_int_equal(o.cache_size, 2ULL << 30);
	assert_true(objfs_mount_opts_has(&o, OBJFS_MOPT_THREADS));
	assert_int_equal(o.threads, 0);
	assert_true(o.attr_ttl == 10);
	assert_int_equal(o.log_level, OBJFS_LOG_WARN);
	assert_true(o.path_style);
	assert_false(objfs_mount_opts_has(&o, OBJFS_MOPT_RO));
	assert_null(o.fuse);
	objfs_mount_opts_release(&o);

	/* later options win; empty items are nothing */
	assert_int_equal(objfs_mount_opts_parse(",spool_dir=/a,,spool_dir=/b,endpoint=,", 0,
						&o, err, sizeof(err)), 0);
	assert_string_equal(o.spool_dir, "/b");
	assert_string_equal(o.endpoint, "");
	objfs_mount_opts_release(&o);
	assert_int_equal(objfs_mount_opts_parse("", 0, &o, err, sizeof(err)), 0);
	assert_true(o.set == 0);
	objfs_mount_opts_release(&o);
}

/* Each bad option is refused with its name in the error. */
static void test_rejects(void **state)
{
	static const struct {
		const char *text;
		unsigned flags;
		const char *name;
	} bad[] = {
		{ "allow_other,bogus", 0, "bogus" },
		{ "bogus=1", 0, "bogus" },
		{ "mem_limit=abc", 0, "mem_limit" },
		{ "mem_limit=12X", 0, "mem_limit" },
		{ "mem_limit=", 0, "mem_limit" },
		{ "threads=many", 0, "threads" },
		{ "attr_ttl=-1", 0, "attr_ttl" },
		{ "dir_ttl=1s", 0, "dir_ttl" },
		{ "retry_timeout=nan", 0, "retry_timeout" },
		{ "stall_timeout=inf", 0, "stall_timeout" },
		{ "attr_ttl=1e7", 0, "attr_ttl" },
		{ "entry_ttl=-0.5", 0, "entry_ttl" },
		{ "umask=0800", 0, "umask" },
		{ "umask=abc", 0, "umask" },
		{ "addressing=sideways", 0, "addressing" },
		{ "log_level=loud", 0, "log_level" },
		{ "ro=1", 0, "ro" },
		{ "allow_other=yes", 0, "allow_other" },
		{ "endpoint", 0, "endpoint" },
		{ "spool_dir", 0, "spool_dir" },
		{ "noatime=1", 0, "noatime" },
		{ "fsname", 0, "fsname" },
		{ "ready_fd=3", OBJFS_MOUNT_OPTS_USER, "ready_fd" },
		{ "credentials_file=/etc/c", OBJFS_MOUNT_OPTS_USER, "credentials_file" },
		/* the node's: a path, an address or a protection of it */
		{ "spool_dir=/any", OBJFS_MOUNT_OPTS_USER, "spool_dir" },
		{ "cache_dir=/any", OBJFS_MOUNT_OPTS_USER, "cache_dir" },
		{ "log_file=/any", OBJFS_MOUNT_OPTS_USER, "log_file" },
		{ "ca_file=/any", OBJFS_MOUNT_OPTS_USER, "ca_file" },
		{ "metrics=0.0.0.0:9", OBJFS_MOUNT_OPTS_USER, "metrics" },
		{ "insecure_skip_verify", OBJFS_MOUNT_OPTS_USER, "insecure_skip_verify" },
		{ "ro,suid", OBJFS_MOUNT_OPTS_USER, "suid" },
		{ "dev", OBJFS_MOUNT_OPTS_USER, "dev" },
		{ "allow_root", OBJFS_MOUNT_OPTS_USER, "allow_root" },
		{ "blkdev", OBJFS_MOUNT_OPTS_USER, "blkdev" },
	};
	struct objfs_mount_opts o;
	char err[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(objfs_mount_opts_parse(bad[i].text, bad[i].flags, &o, err,
							sizeof(err)), EINVAL);
		assert_non_null(strstr(err, bad[i].name));
		assert_null(o.mem);
		assert_true(o.set == 0);
	}
	/* a command line (the node's own) may set the node's */
	assert_int_equal(objfs_mount_opts_parse("spool_dir=/x,suid,dev,allow_root,"
						"metrics=127.0.0.1:9", 0, &o, err,
						sizeof(err)), 0);
	objfs_mount_opts_release(&o);
	/* the supervisor may set its own */
	assert_int_equal(objfs_mount_opts_parse("ready_fd=3,credentials_file=/c", 0, &o, err,
						sizeof(err)), 0);
	objfs_mount_opts_release(&o);
	/* values never reach the message */
	assert_int_equal(objfs_mount_opts_parse("mem_limit=SECRETVALUE", 0, &o, err,
						sizeof(err)), EINVAL);
	assert_null(strstr(err, "SECRETVALUE"));
}

/* A value with commas or backslashes stays one value. */
static void test_escaping(void **state)
{
	struct objfs_mount_opts o = OBJFS_MOUNT_OPTS_INIT, p;
	char buf[512] = "", err[128];

	(void)state;
	o.endpoint = "http://h/?a=1,allow_root,ready_fd=9";
	MARK(&o, ENDPOINT);
	o.spool_dir = "C:\\tmp\\,ro\\";
	MARK(&o, SPOOL_DIR);
	assert_int_equal(objfs_mount_opts_build(&o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "spool_dir=C:\\\\tmp\\\\\\,ro\\\\,"
			    "endpoint=http://h/?a=1\\,allow_root\\,ready_fd=9");
	assert_int_equal(objfs_mount_opts_parse(buf, 0, &p, err, sizeof(err)), 0);
	assert_string_equal(p.endpoint, o.endpoint);
	assert_string_equal(p.spool_dir, o.spool_dir);
	assert_true(p.set == o.set);
	assert_false(p.ro);
	assert_null(p.fuse);
	objfs_mount_opts_release(&p);

	/* libfuse's octal escape */
	assert_int_equal(objfs_mount_opts_parse("region=a\\054b", 0, &p, err, sizeof(err)), 0);
	assert_string_equal(p.region, "a,b");
	objfs_mount_opts_release(&p);
}

/* FUSE options pass through; apply() says which ones libfuse gets. */
static void test_fuse_options(void **state)
{
	struct objfs_mount_opts o = OBJFS_MOUNT_OPTS_INIT;
	char buf[256] = "mem_limit=1M", err[128];

	(void)state;
	assert_int_equal(objfs_mount_opts_apply(&o, "noatime", 0, err, sizeof(err)), 1);
	assert_int_equal(objfs_mount_opts_apply(&o, "fsname=a,b", 0, err, sizeof(err)), 1);
	assert_int_equal(objfs_mount_opts_apply(&o, "ro", 0, err, sizeof(err)), 1);
	assert_int_equal(objfs_mount_opts_apply(&o, "allow_other", 0, err, sizeof(err)), 1);
	assert_int_equal(objfs_mount_opts_apply(&o, "threads=4", 0, err, sizeof(err)), 0);
	assert_int_equal(objfs_mount_opts_apply(&o, "", 0, err, sizeof(err)), 0);
	assert_int_equal(objfs_mount_opts_apply(&o, "nonsense", 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nonsense"));
	assert_string_equal(o.fuse, "noatime,fsname=a\\,b");
	assert_int_equal(objfs_mount_opts_build(&o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "mem_limit=1M,allow_other,ro,threads=4,noatime,fsname=a\\,b");
	objfs_mount_opts_release(&o);
}

/* A build that does not fit leaves the buffer as it was. */
static void test_no_space(void **state)
{
	struct objfs_mount_opts o = OBJFS_MOUNT_OPTS_INIT;
	char buf[32] = "allow_other";

	(void)state;
	o.endpoint = "https://a-rather-long-endpoint.example";
	MARK(&o, ENDPOINT);
	assert_int_equal(objfs_mount_opts_build(&o, buf, sizeof(buf)), ENOSPC);
	assert_string_equal(buf, "allow_other");
	o.endpoint = "h,,";
	assert_int_equal(objfs_mount_opts_build(&o, buf, 22), ENOSPC);
	assert_string_equal(buf, "allow_other");
	assert_int_equal(objfs_mount_opts_build(&o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "allow_other,endpoint=h\\,\\,");
}

/* A row's bound is the parser's: the bound itself is taken, one past it
 * refused naming the option and the bound (never the value). */
static void test_bounds(void **state)
{
	static const struct {
		const char *ok, *past, *name, *most;
	} b[] = {
		{ "prefetch=64", "prefetch=65", "prefetch", "64" },
		{ "readahead_chunks=16", "readahead_chunks=17", "readahead_chunks", "16" },
		{ "retry_timeout=86400", "retry_timeout=86400.5", "retry_timeout", "86400" },
		{ "stall_timeout=3600", "stall_timeout=3601", "stall_timeout", "3600" },
		{ "hedge_after=3600", "hedge_after=1e4", "hedge_after", "3600" },
		{ "delete_delay=60", "delete_delay=61", "delete_delay", "60" },
	};
	struct objfs_mount_opts o;
	char err[128], want[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
		assert_int_equal(objfs_mount_opts_parse(b[i].ok, 0, &o, err, sizeof(err)), 0);
		objfs_mount_opts_release(&o);
		assert_int_equal(objfs_mount_opts_parse(b[i].past, OBJFS_MOUNT_OPTS_USER, &o,
							err, sizeof(err)), EINVAL);
		snprintf(want, sizeof(want), "option %s: at most %s", b[i].name, b[i].most);
		assert_string_equal(err, want);
		assert_true(o.set == 0);
	}
	/* a volume's options are checked against them too (CSI) */
	assert_int_equal(objfs_mount_opts_check_user("prefetch=65", err, sizeof(err)), EINVAL);
	assert_int_equal(objfs_mount_opts_check_user("prefetch=64", err, sizeof(err)), 0);
}

/* Every row is complete, and --help shows each visible one with its
 * default and bound. */
static void test_rows_and_usage(void **state)
{
	struct objfs_mount_opts d = OBJFS_MOUNT_OPTS_INIT;
	char *text = NULL, *flat, line[80], v[64];
	size_t len = 0, i, n;
	FILE *f;

	(void)state;
	for (i = 0; i < OBJFS_MOPT_COUNT; i++) {
		const struct objfs_mopt_info *in = objfs_mount_opts_info(i);

		assert_string_equal(objfs_mount_opts_name(i), in->name);
		assert_non_null(in->help);
		assert_true(in->help[0] != '\0');
		/* a flag has no placeholder, a value option one */
		assert_true((in->metavar[0] == '\0') ==
			    (in->kind == OBJFS_MOPT_K_FLAG || in->kind == OBJFS_MOPT_K_FUSEFLAG));
	}
	d.prefetch = 16;
	MARK(&d, PREFETCH);
	d.mem_limit = 12ULL << 20;
	MARK(&d, MEM_LIMIT);
	d.hedge_after = 0.5;
	MARK(&d, HEDGE_AFTER);
	objfs_mount_opts_value(&d, OBJFS_MOPT_MEM_LIMIT, v, sizeof(v));
	assert_string_equal(v, "12M");
	objfs_mount_opts_value(&d, OBJFS_MOPT_HEDGE_AFTER, v, sizeof(v));
	assert_string_equal(v, "0.5");
	f = open_memstream(&text, &len);
	assert_non_null(f);
	objfs_mount_opts_usage(f, OBJFS_MOPT_FS, &d);
	objfs_mount_opts_usage(f, OBJFS_MOPT_STORE, &d);
	fclose(f);
	for (i = 0; i < OBJFS_MOPT_COUNT; i++) {
		const struct objfs_mopt_info *in = objfs_mount_opts_info(i);

		snprintf(line, sizeof(line), "\n  %s%s", in->name,
			 in->metavar[0] != '\0' ? "=" : " ");
		if (in->group == OBJFS_MOPT_HIDDEN)
			assert_null(strstr(text, line + 1));
		else if (i == 0)
			assert_true(strncmp(text, line + 1, strlen(line + 1)) == 0);
		else
			assert_non_null(strstr(text, line));
	}
	/* no line past 79 columns */
	for (i = 0; i < len; ) {
		size_t cols = strcspn(text + i, "\n");

		assert_true(cols <= 79);
		i += cols + 1;
	}
	/* the text as one line: a wrap is one space */
	flat = malloc(len + 1);
	assert_non_null(flat);
	for (i = 0, n = 0; i < len; i++) {
		if (text[i] == '\n') {
			while (text[i + 1] == ' ')
				i++;
			flat[n++] = ' ';
		} else {
			flat[n++] = text[i];
		}
	}
	flat[n] = '\0';
	assert_non_null(strstr(flat, "(default: 16; at most 64)"));
	assert_non_null(strstr(flat, "(default: 0.5; at most 3600)"));
	assert_non_null(strstr(flat, "(default: caller)"));
	assert_non_null(strstr(flat, "(default: 12M)"));
	free(flat);
	free(text);
}

/* One command line for every supervisor: -o only with options. */
static void test_argv(void **state)
{
	char *argv[OBJFS_MOUNT_ARGV_MAX];

	(void)state;
	assert_int_equal(objfs_mount_argv(argv, "/bin/objfs-mount", "ro,ready_fd=3",
					  "s3://b/p", "/mnt/x"), 6);
	assert_string_equal(argv[0], "/bin/objfs-mount");
	assert_string_equal(argv[1], "-f");
	assert_string_equal(argv[2], "-o");
	assert_string_equal(argv[3], "ro,ready_fd=3");
	assert_string_equal(argv[4], "s3://b/p");
	assert_string_equal(argv[5], "/mnt/x");
	assert_null(argv[6]);
	assert_int_equal(objfs_mount_argv(argv, "objfs-mount", "", "file:///s/p", "/m"), 4);
	assert_string_equal(argv[1], "-f");
	assert_string_equal(argv[2], "file:///s/p");
	assert_string_equal(argv[3], "/m");
	assert_null(argv[4]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_node_options),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_fuse_options),
		cmocka_unit_test(test_no_space),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_rows_and_usage),
		cmocka_unit_test(test_argv),
	};
	return cmocka_run_group_tests_name("mountopts", tests, NULL, NULL);
}
