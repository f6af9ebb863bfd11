/*
 * objfs-mount - mounts one objfs volume with FUSE.
 *
 *   objfs-mount [-f] [-o opt,...] SOURCE MOUNTPOINT
 *
 * SOURCE is s3://BUCKET/PREFIX or file:///DIR/PREFIX.  Credentials come
 * from the environment or -o credentials_file, never from argv.  See
 * usage() for every option; common/mountopts.h reads them (the same
 * contract the node plugin builds them with); the S3 connection (-o
 * endpoint, region, addressing, ca_file, else AWS_ENDPOINT_URL and
 * AWS_REGION, else path-style) is backend/s3conn.h's.  Readiness: with -o ready_fd=N the program
 * writes the single byte "R" to fd N and closes it once the mount is live;
 * on failure it closes N without writing and exits non-zero.
 */
#define FUSE_USE_VERSION 312
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/s3conn.h"
#include "backend/store_error.h"
#include "common/creds.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/metrics_http.h"
#include "common/mountopts.h"
#include "fs/fs.h"
#include "fs/fuselog.h"
#include "fs/spool.h"
#include "mount/keeper.h"
#include "mount/resume.h"

struct cli {
	char *source;
	int nonopt;
	int help;
	struct objfs_mount_opts mo;     /* the -o options (common/mountopts.h) */
};

/* -o options reach cli_proc() one by one; only the help flags are here. */
static const struct fuse_opt cli_opts[] = {
	{ "-h", offsetof(struct cli, help), 1 },
	{ "--help", offsetof(struct cli, help), 1 },
	FUSE_OPT_END
};

static void usage(const char *prog, const struct objfs_mount_opts *defaults)
{
	printf(
"usage: %s [-f] [-d] [-o OPTION[,OPTION...]] SOURCE MOUNTPOINT\n"
"\n"
"Mounts one objfs volume.  SOURCE is s3://BUCKET/PREFIX or\n"
"file:///DIR/PREFIX (a local directory store, for tests).\n"
"\n"
"  -f                     stay in the foreground\n"
"  -d                     FUSE debug output (implies -f)\n"
"  -h, --help             this text\n"
"\n"
"Store options (s3:// sources):\n", prog);
	objfs_mount_opts_usage(stdout, OBJFS_MOPT_STORE, defaults);
	printf("\nFilesystem options:\n");
	objfs_mount_opts_usage(stdout, OBJFS_MOPT_FS, defaults);
	printf(
"\n"
"BYTES accept the suffixes K, M, G (powers of 1024).  Other -o options are\n"
"passed to FUSE (e.g. default_permissions, which is always on).\n"
"SIGTERM, SIGINT and unmount upload everything unsaved before exit.\n");
}

/* Takes SOURCE and every -o option: objfs-mount's own are applied to
 * c->mo, FUSE's (ro and allow_other are both) stay in outargs for libfuse,
 * anything else fails the parse. */
static int cli_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct cli *c = data;
	char err[160];
	int r;

	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT) {
		if (c->nonopt++ == 0) {
			c->source = strdup(arg);
			return 0;
		}
		return 1;
	}
	if (arg[0] == '-') {
		static const char *const known[] = {
			"-f", "-d", "-s", "-h", "--help", "-V", "--version",
		};
		size_t i;

		/* fuse_parse_cmdline's; anything else would be refused
		 * only once the store was contacted */
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strcmp(arg, known[i]) == 0)
				return 1;
		fprintf(stderr, "objfs-mount: unknown argument %s (-f: stay in the "
			"foreground; --help lists the options)\n", arg);
		return -1;
	}
	r = objfs_mount_opts_apply(&c->mo, arg, 0, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "objfs-mount: -o %s\n", err);
		return -1;
	}
	return r;
}

/* Whether the directory path has no entry but . and .. (false when it
 * holds one; true when it cannot be read: the mount then says why). */
static bool dir_empty(const char *path)
{
	struct dirent *de;
	bool empty = true;
	DIR *d = opendir(path);

	if (d == NULL)
		return true;
	while (empty && (de = readdir(d)) != NULL)
		empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
	closedir(d);
	return empty;
}

/* Adds -o fsname=SOURCE, its commas and backslashes escaped as libfuse's
 * option parser reads them.  0 or -1. */
static int add_fsname(struct fuse_args *args, const char *source)
{
	char opt[2 * 4096 + 16];
	size_t n = 0, i;

	n = (size_t)snprintf(opt, sizeof(opt), "-ofsname=");
	for (i = 0; source[i] != '\0' && n + 3 < sizeof(opt); i++) {
		if (source[i] == ',' || source[i] == '\\')
			opt[n++] = '\\';
		opt[n++] = source[i];
	}
	opt[n] = '\0';
	return fuse_opt_add_arg(args, opt);
}

struct settings {
	struct objfs_fs_opts fo;
	bool resume;
	bool resume_asked;              /* -o resume given (not the default) */
	bool user_resend;               /* test only: force it */
	int creds_fd;                   /* a keeper's copy of the credentials,
					   kept for a new keeper; -1: none */
	const char *state_dir;
	struct objfs_store_config sc;
	struct objfs_s3_conn conn;      /* sc.s3 borrows its strings */
	int ready_fd;
	enum objfs_log_level level;
	struct objfs_creds creds;
	struct objfs_aws_env aws;       /* the chain's settings and account */
	bool metrics;                   /* off: nothing counted */
	const char *metrics_tcp;        /* [ADDR:]PORT, or NULL */
	double unsaved_keep;            /* seconds kept unsaved data stays */
};

/* The data of files that could never be saved is kept in the spool
 * directory (fs/spool.h), for unsaved_keep (7 days by default). */
#define UNSAVED_KEEP_DEFAULT (7 * 24 * 3600.0)

/* The settings before any option: the filesystem's defaults
 * (objfs_fs_opts_default), the store's as objfs-mount runs it (requests
 * retried for retry_timeout, however many tries), and --help shows
 * these. */
static void settings_default(struct settings *s)
{
	memset(s, 0, sizeof(*s));
	objfs_fs_opts_default(&s->fo);
	s->ready_fd = s->creds_fd = -1;
	s->level = OBJFS_LOG_INFO;
	s->unsaved_keep = UNSAVED_KEEP_DEFAULT;
	s->metrics = true;
	s->resume = true;
	s->sc.s3.max_connections = 16;
	s->sc.s3.stall_timeout_ms = 3000;
	s->sc.s3.creds_refresh_s = 300;
	s->sc.retry.max_attempts = OBJFS_RETRY_UNLIMITED;
	s->sc.retry.max_total_ms = 60000;
	s->sc.hedge.ceiling_ms = 500;
	s->sc.delete_delay_ms = 20;
}

/* Where an option's value goes (mountopts.def's target column): a field
 * of the settings, of size bytes at off, converted from the option's
 * kind (conv). */
enum conv {
	T_NONE,         /* build_settings reads the option itself */
	T_COPY,         /* as the field's type holds it */
	T_MS,           /* seconds into milliseconds (rounded; > 0: >= 1) */
	T_MS1,          /* the same, and 0 is 1 ms */
	T_MIN1,         /* a number; 0 is 1 */
};

struct target {
	size_t off, size;
	enum conv conv;
};

#define AT(path, c) { offsetof(struct settings, path), \
		      sizeof(((struct settings *)0)->path), c }
#define FS(f) AT(fo.f, T_COPY)
#define SC(f) AT(sc.f, T_COPY)
#define SET(f) AT(f, T_COPY)
#define MS(p) AT(p, T_MS)
#define MS1(p) AT(p, T_MS1)
#define MIN1(p) AT(p, T_MIN1)
#define NONE { 0, 0, T_NONE }
static const struct target targets[OBJFS_MOPT_COUNT] = {
#define MOPT(id, name, field, kind, owner, group, max, target, ...) \
	[OBJFS_MOPT_##id] = target,
#include "common/mountopts.def"
#undef MOPT
};
#undef AT
#undef FS
#undef SC
#undef SET
#undef MS
#undef MS1
#undef MIN1
#undef NONE

/* The bounds the rows state are the filesystem's. */
enum {
#define MOPT(id, name, field, kind, owner, group, max, ...) MAX_##id = (int)(max),
#include "common/mountopts.def"
#undef MOPT
};
_Static_assert(MAX_READAHEAD_CHUNKS == OBJFS_RA_CHUNKS_MAX,
	       "mountopts.def: readahead_chunks' bound is the filesystem's");
_Static_assert(MAX_PREFETCH == OBJFS_PREFETCH_MAX,
	       "mountopts.def: prefetch's bound is the filesystem's");

static void put_uint(char *dst, size_t size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	if (size == 1)
		memcpy(dst, &u8, 1);
	else if (size == 2)
		memcpy(dst, &u16, 2);
	else if (size == 4)
		memcpy(dst, &u32, 4);
	else
		memcpy(dst, &v, sizeof(v));
}

static uint64_t get_uint(const char *src, size_t size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t v;

	if (size == 1) {
		memcpy(&u8, src, 1);
		return u8;
	}
	if (size == 2) {
		memcpy(&u16, src, 2);
		return u16;
	}
	if (size == 4) {
		memcpy(&u32, src, 4);
		return u32;
	}
	memcpy(&v, src, sizeof(v));
	return v;
}

/* Puts option `which` of mo into its target in s. */
static void target_put(struct settings *s, enum objfs_mopt which,
		       const struct objfs_mount_opts *mo)
{
	const struct target *t = &targets[which];
	const struct objfs_mopt_info *in = objfs_mount_opts_info(which);
	const char *src = (const char *)mo + in->off;
	char *dst = (char *)s + t->off;
	uint64_t v;
	double d;

	switch (in->kind) {
	case OBJFS_MOPT_K_FLAG:
	case OBJFS_MOPT_K_FUSEFLAG:
	case OBJFS_MOPT_K_ADDRESSING:
		memcpy(dst, src, sizeof(bool));
		return;
	case OBJFS_MOPT_K_STR:
		*(const char **)(void *)dst = *(const char *const *)(const void *)src;
		return;
	case OBJFS_MOPT_K_LEVEL:
		memcpy(dst, src, sizeof(enum objfs_log_level));
		return;
	case OBJFS_MOPT_K_SECONDS:
		memcpy(&d, src, sizeof(d));
		if (t->conv == T_COPY) {
			memcpy(dst, &d, sizeof(d));
			return;
		}
		v = (uint64_t)(d * 1000 + 0.5);
		if (v == 0 && (d > 0 || t->conv == T_MS1))
			v = 1;
		put_uint(dst, t->size, v);
		return;
	case OBJFS_MOPT_K_OCTAL:
		v = get_uint(src, sizeof(unsigned));
		put_uint(dst, t->size, v);
		return;
	case OBJFS_MOPT_K_NUM:
	case OBJFS_MOPT_K_BYTES:
		memcpy(&v, src, sizeof(v));
		if (v == 0 && t->conv == T_MIN1)
			v = 1;
		put_uint(dst, t->size, v);
		return;
	}
}

/* The reverse, for --help: the value in s of option `which`'s target
 * into mo, marked set (strings only when not NULL; flags never). */
static void target_get(const struct settings *s, enum objfs_mopt which,
		       struct objfs_mount_opts *mo)
{
	const struct target *t = &targets[which];
	const struct objfs_mopt_info *in = objfs_mount_opts_info(which);
	const char *src = (const char *)s + t->off;
	char *dst = (char *)mo + in->off;
	const char *str;
	uint64_t v;
	double d;

	if (t->conv == T_NONE)
		return;
	switch (in->kind) {
	case OBJFS_MOPT_K_FLAG:
	case OBJFS_MOPT_K_FUSEFLAG:
	case OBJFS_MOPT_K_ADDRESSING:
		return;
	case OBJFS_MOPT_K_STR:
		memcpy(&str, src, sizeof(str));
		if (str == NULL)
			return;
		memcpy(dst, &str, sizeof(str));
		break;
	case OBJFS_MOPT_K_LEVEL:
		memcpy(dst, src, sizeof(enum objfs_log_level));
		break;
	case OBJFS_MOPT_K_SECONDS:
		if (t->conv == T_COPY) {
			memcpy(dst, src, sizeof(double));
		} else {
			d = (double)get_uint(src, t->size) / 1000;
			memcpy(dst, &d, sizeof(d));
		}
		break;
	case OBJFS_MOPT_K_OCTAL:
		v = get_uint(src, t->size);
		put_uint(dst, sizeof(unsigned), v);
		break;
	case OBJFS_MOPT_K_NUM:
	case OBJFS_MOPT_K_BYTES:
		v = get_uint(src, t->size);
		memcpy(dst, &v, sizeof(v));
		break;
	}
	objfs_mount_opts_mark(mo, which);
}

/* The AWS settings as a source of the connection (src: the chain's
 * struct objfs_aws_env, which reads the environment and the profile;
 * when the chain did not run, a credentials_file given, the environment
 * alone); path-style addressing. */
static const char *first_env(const char *a, const char *b)
{
	const char *v = getenv(a);

	return v != NULL && v[0] != '\0' ? v : getenv(b);
}

static const char *env_conn_get(const void *src, const char *key)
{
	const struct objfs_aws_env *aws = src;

	if (strcmp(key, OBJFS_S3_CONN_KEY_ENDPOINT) == 0)
		return aws->endpoint != NULL ? aws->endpoint :
		       first_env("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
	if (strcmp(key, OBJFS_S3_CONN_KEY_REGION) == 0)
		return aws->region != NULL ? aws->region :
		       first_env("AWS_REGION", "AWS_DEFAULT_REGION");
	if (strcmp(key, OBJFS_S3_CONN_KEY_STYLE) == 0)
		return objfs_s3_conn_style_name(true);
	return NULL;
}

static int build_settings(struct cli *c, struct settings *s)
{
	const struct objfs_mount_opts *mo = &c->mo;
	unsigned i;
	int err;

#define HAS(w) objfs_mount_opts_has(mo, OBJFS_MOPT_##w)
	settings_default(s);
	/* each option with a target (mountopts.def), then the rules
	 * between options */
	for (i = 0; i < OBJFS_MOPT_COUNT; i++)
		if (targets[i].conv != T_NONE && objfs_mount_opts_has(mo, i))
			target_put(s, i, mo);
	s->fo.fsgroup_set = HAS(FSGROUP);
	if (HAS(READAHEAD) || HAS(READAHEAD_CHUNKS)) {
		/* Read-ahead buffers come out of mem_limit: one that does not
		 * fit there is never taken, and every read becomes a GET of
		 * its own.  Unset, mem_limit grows to what was asked for;
		 * set too small, it is an error naming both. */
		uint64_t want = objfs_fs_opts_ra(&s->fo);
		uint64_t chunk = s->fo.ra_chunk;

		if (!HAS(MEM_LIMIT) && want > s->fo.mem_limit) {
			s->fo.mem_limit = want;
		} else if (HAS(MEM_LIMIT) && want > 0 && chunk > s->fo.mem_limit) {
			fprintf(stderr, "objfs-mount: -o readahead=%llu is over "
				"mem_limit=%llu: no read-ahead buffer would fit; "
				"raise mem_limit to readahead x readahead_chunks "
				"(%llu)\n", (unsigned long long)chunk,
				(unsigned long long)s->fo.mem_limit,
				(unsigned long long)want);
			return EINVAL;
		}
	}
	if (HAS(RESUME) && HAS(NORESUME)) {
		fprintf(stderr, "objfs-mount: -o resume and noresume: one or the "
			"other\n");
		return EINVAL;
	}
	/* on unless -o noresume (issue 29): any one process may die */
	s->resume = !HAS(NORESUME);
	s->resume_asked = HAS(RESUME);
	if (HAS(METRICS) && strcmp(mo->metrics, "off") == 0) {
		s->metrics = false;
	} else if (HAS(METRICS) && strcmp(mo->metrics, "unix") != 0) {
		char host[256], port[8];

		if (objfs_metrics_addr_parse(mo->metrics, host, sizeof(host), port,
					     sizeof(port)) != 0) {
			fprintf(stderr, "objfs-mount: -o metrics=%s: not unix, off or "
				"[ADDR:]PORT\n", mo->metrics);
			return EINVAL;
		}
		s->metrics_tcp = mo->metrics;
	}
	/* Ride through store outages up to retry_timeout (backend.h). */
	if (HAS(RETRIES) && mo->retries > 0 &&
	    mo->retries < OBJFS_RETRY_UNLIMITED)
		s->sc.retry.max_attempts = (unsigned)mo->retries;

	s->sc.url = c->source;
	/* the connection: -o first; the AWS settings (environment, profile)
	 * fill in the rest once the chain has run, below */
	if (objfs_s3_conn_from_mount_opts(&s->conn, mo) != 0) {
		fprintf(stderr, "objfs-mount: -o endpoint, region or ca_file: too long\n");
		return EINVAL;
	}
	if (getenv(OBJFS_ADOPT_ENV) != NULL) {
		/* a new keeper (mount/keeper.h) reads no credentials: the
		 * server that starts it sends their fd */
	} else if (getenv(OBJFS_CREDS_FD_ENV) != NULL || HAS(CREDENTIALS_FILE)) {
		const char *cfd = getenv(OBJFS_CREDS_FD_ENV);
		const char *path = mo->credentials_file;
		char fdpath[64];
		int line = 0;

		if (cfd != NULL) {
			/* a keeper's copy of the credentials (mount/kslot.h):
			 * the file may be gone by now */
			if (strspn(cfd, "0123456789") != strlen(cfd) || cfd[0] == '\0' ||
			    strlen(cfd) > 9)
				return EINVAL;
			snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%s", cfd);
			path = fdpath;
		}
		err = objfs_creds_load_file(path, &s->creds, &line);
		if (cfd != NULL) {
			/* kept (close-on-exec) for a new keeper, should
			 * this server's die (mount/resume.h) */
			s->creds_fd = atoi(cfd);
			(void)fcntl(s->creds_fd, F_SETFD, FD_CLOEXEC);
			unsetenv(OBJFS_CREDS_FD_ENV);
		}
		if (err != 0) {
			fprintf(stderr, "objfs-mount: reading %s: %s (line %d)\n",
				cfd != NULL ? "the keeper's credentials" : path,
				objfs_strerror(err), line);
			return err;
		}
	} else if (!HAS(NO_SIGN_REQUEST)) {
		char why[512];

		/* the AWS SDKs' chain (common/creds.h) */
		err = objfs_creds_chain(&s->creds, &s->aws, NULL, why, sizeof(why));
		if (err == EINVAL) {
			fprintf(stderr, "objfs-mount: credentials: %s\n", why);
			return err;
		}
		if (err != 0)
			return err;
		s->sc.s3.creds_looked = s->aws.looked;
	} else {
		/* the settings only: no source is looked at */
		err = objfs_creds_chain(&s->creds, &s->aws, NULL, NULL, 0);
		objfs_creds_release(&s->creds);
		if (err != 0 && err != EINVAL)
			return err;
	}
	/* then the AWS settings, path-style (and AWS's endpoint when none:
	 * the stack's) */
	(void)objfs_s3_conn_add(&s->conn, env_conn_get, &s->aws);
	objfs_s3_conn_to_store(&s->conn, &s->sc.s3);
	if (!HAS(CA_FILE))
		s->sc.s3.ca_file = s->aws.ca_bundle != NULL ? s->aws.ca_bundle :
				   getenv("AWS_CA_BUNDLE");
#undef HAS
	s->sc.s3.access_key = s->creds.access_key;
	s->sc.s3.secret_key = s->creds.secret_key;
	s->sc.s3.session_token = s->creds.session_token;
	s->sc.s3.keyless = &s->creds;   /* without keys: a role or a container
					   endpoint, renewed (credprov.h) */
	return 0;
}

/* Unmounts a mount this process did not mount (a successor's), as
 * libfuse's fuse_session_unmount() would. */
static void unmount_inherited(struct objfs_log *log, const char *mnt)
{
	pid_t pid;
	int st;

	if (umount2(mnt, MNT_DETACH) == 0)
		return;
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-z", "--", mnt,
		       (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		objfs_error(log, "mount", "unmounting %s failed", mnt);
}

static int render_metrics(void *arg, struct objfs_buf *out)
{
	return objfs_metrics_render(arg, out);
}

/* Serves reg on STATE_DIR/metrics.sock (and TCP when asked).  Without a
 * resumable mount's state directory, one is made for this process
 * (*made says so: removed at exit).  A failure is logged, not fatal: the
 * mount serves files either way. */
static struct objfs_metrics_server *serve_metrics(struct objfs_log *log,
						  const struct settings *s,
						  struct objfs_metrics *reg,
						  const char *resume_dir,
						  char *dir, size_t dirlen,
						  bool *made)
{
	struct objfs_metrics_server_config mc = {
		.tcp = s->metrics_tcp, .render = render_metrics, .arg = reg,
		.log = log,
	};
	struct objfs_metrics_server *srv = NULL;
	char sock[4200];

	*made = false;
	if (resume_dir != NULL)
		snprintf(dir, dirlen, "%s", resume_dir);
	else if (s->state_dir != NULL)
		snprintf(dir, dirlen, "%s", s->state_dir);
	else
		snprintf(dir, dirlen, "%s/objfs-state.%d",
			 s->fo.spool_dir != NULL ? s->fo.spool_dir : "/var/tmp",
			 (int)getpid());
	if (mkdir(dir, 0700) == 0)
		*made = resume_dir == NULL;
	else if (errno != EEXIST)
		objfs_warn(log, "mount", "metrics: creating %s: %s", dir,
			   objfs_strerror(errno));
	snprintf(sock, sizeof(sock), "%s/metrics.sock", dir);
	mc.unix_path = sock;
	if (objfs_metrics_server_start(&mc, &srv) != 0)
		return NULL;
	objfs_info(log, "mount", "metrics on %s%s%s", sock,
		   s->metrics_tcp != NULL ? " and " : "",
		   s->metrics_tcp != NULL ? s->metrics_tcp : "");
	return srv;
}

/* Data that could never be saved, kept in the spool directory
 * (fs/spool.h) longer than unsaved_keep, by this or any earlier mount
 * using the directory, goes now. */
static void expire_unsaved(const struct settings *s, struct objfs_log *log)
{
	const char *dir = s->fo.spool_dir != NULL ? s->fo.spool_dir : "/var/tmp";
	double keep = s->unsaved_keep;
	unsigned n = 0;
	int err;

	if (keep <= 0)
		return;
	err = objfs_spool_expire(dir, keep, &n);
	if (n > 0)
		objfs_warn(log, "mount", "deleted %u kept unsaved file(s) older "
			   "than %.0f s from %s (unsaved_keep)", n, keep, dir);
	if (err != 0)
		objfs_warn(log, "mount", "expiring kept unsaved files in %s: %s",
			   dir, objfs_strerror(err));
}

/* The bucket of an s3:// source with a prefix, as a store of its own
 * (quiet, no metrics, no deferred deletes or hedging), and in *key the
 * prefix without its trailing '/': the prefix's own key is outside the
 * volume's store (warn_prefix_object).  NULL (and *key NULL, never to
 * free) for other sources or when it cannot be made.  Called before the
 * credentials are released: the store copies them. */
static struct objfs_store *bucket_store(const struct settings *s, const char *source,
					char **key)
{
	struct objfs_store_config bc = s->sc;
	struct objfs_store *out = NULL;
	char *scheme = NULL, *name = NULL, *prefix = NULL;
	char url[320];
	size_t n;

	*key = NULL;
	if (objfs_store_url_parse(source, &scheme, &name, &prefix) != 0 ||
	    strcmp(scheme, "s3") != 0)
		goto out;
	n = strlen(prefix);
	while (n > 0 && prefix[n - 1] == '/')
		prefix[--n] = '\0';
	if (n == 0 || (size_t)snprintf(url, sizeof(url), "s3://%s", name) >= sizeof(url))
		goto out;
	bc.url = url;
	bc.metrics = NULL;
	bc.delete_delay_ms = 0;
	bc.hedge.ceiling_ms = 0;
	if (objfs_store_stack_create(&bc, NULL, &out) != 0) {
		out = NULL;
		goto out;
	}
	*key = prefix;
	prefix = NULL;
out:
	free(scheme);
	free(name);
	free(prefix);
	return out;
}

/* objfs_store_probe() (one key of the volume listed: 0, ENOENT for a
 * missing bucket, or the failure), also saying whether the volume has no
 * key (*empty), from the same request. */
static int probe_volume(struct objfs_store *store, bool *empty)
{
	struct objfs_list_req lreq = { .prefix = "", .max_keys = 1 };
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	int err = objfs_store_list(store, &lreq, &page);

	*empty = err == 0 && page.n_entries == 0 && page.n_prefixes == 0;
	objfs_list_page_release(&page);
	return err;
}

/* s3://B/P where P is an object (a file), not a directory prefix, mounts
 * the empty directory P/: for a volume with no key, when the bucket has
 * the object P, one warning naming it and what to do. */
static void warn_prefix_object(struct objfs_store *bucket, const char *key,
			       const char *source, struct objfs_log *log)
{
	struct objfs_obj_info info;

	memset(&info, 0, sizeof(info));
	if (objfs_store_head(bucket, key, &info) != 0)
		return;
	objfs_obj_info_release(&info);
	objfs_warn(log, "mount", "%s: %s is an object (a file), not a directory "
		   "prefix: this mount shows the keys under %s/ (none), not the "
		   "object; to reach it, mount its bucket or the prefix above it "
		   "and open %s there", source, key, key, key);
}

/* Frees what parsing the command line allocated. */
static void cli_release(struct cli *c)
{
	free(c->source);
	c->source = NULL;
	objfs_mount_opts_release(&c->mo);
}

/* Points stdin, stdout and stderr at /dev/null. */
static void stdio_to_null(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co;
	struct fuse_loop_config *lc = NULL;
	struct fuse_session *se = NULL;
	struct objfs_store *store = NULL, *bucket = NULL;
	char *prefix_key = NULL;
	struct objfs_fs *fs = NULL;
	struct objfs_log *log = NULL;
	struct objfs_resume *rs = NULL;
	struct objfs_metrics *reg = NULL;
	struct objfs_metrics_server *msrv = NULL;
	char state_dir[4096], metrics_dir[4096];
	bool successor = false, by_signal = false, ended = false, serving = false;
	bool empty = false;
	bool metrics_dir_made = false;
	struct settings s;
	struct cli c;
	int ret = 1, err, mounted = 0, log_fd = -1, detach_fd = -1;
	sigset_t term;

	/* Dozens of worker threads would each get a malloc arena that keeps
	 * freed chunks: two arenas keep a mount within its memory bound. */
	mallopt(M_ARENA_MAX, 2);
	/* Large buffers (reads, FUSE requests) are mapped and unmapped, not
	 * kept in the arenas (a fixed threshold stops glibc raising it). */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	/* SIGTERM, SIGINT and SIGHUP must land on a thread of libfuse's loop,
	 * which then ends: every thread made before the loop (the fs pool,
	 * the usage scan, the resume watcher) inherits them blocked.  One
	 * landing on such a thread set the session's exit flag and woke
	 * nobody, and the process hung until the next FUSE request. */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	sigaddset(&term, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	memset(&c, 0, sizeof(c));
	memset(&co, 0, sizeof(co));
	memset(&s, 0, sizeof(s));
	s.ready_fd = s.creds_fd = -1;
	if (fuse_opt_parse(&args, &c, cli_opts, cli_proc) != 0)
		goto out;
	if (c.help) {
		struct objfs_mount_opts dm = OBJFS_MOUNT_OPTS_INIT;    /* borrows */
		unsigned i;

		/* the defaults --help shows are the settings' own */
		settings_default(&s);
		for (i = 0; i < OBJFS_MOPT_COUNT; i++)
			target_get(&s, i, &dm);
		usage(argv[0], &dm);
		ret = 0;
		goto out;
	}
	if (fuse_parse_cmdline(&args, &co) != 0)
		goto out;
	if (co.show_version) {
		printf("objfs-mount %s, FUSE %s\n", PACKAGE_VERSION,
		       fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (build_settings(&c, &s) != 0)
		goto out;
	if (c.source == NULL || co.mountpoint == NULL) {
		fprintf(stderr, "usage: objfs-mount [-f] [-o options] SOURCE MOUNTPOINT "
			"(--help for more)\n");
		goto out;
	}
	log = objfs_log_create(STDERR_FILENO, s.level);
	if (log == NULL)
		goto out;
	/* Detached, stderr goes nowhere: the log goes to log_file= or
	 * syslog from the first line, and until the process detaches its
	 * warnings and errors also reach the terminal (a mount(8) that
	 * succeeds prints nothing, and the log has the whole mount). */
	if (objfs_mount_opts_has(&c.mo, OBJFS_MOPT_LOG_FILE)) {
		log_fd = open(c.mo.log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
		if (log_fd < 0) {
			objfs_error(log, "mount", "log_file=%s: %s", c.mo.log_file,
				    objfs_strerror(errno));
			goto out;
		}
	}
	if (!co.foreground) {
		objfs_log_redirect(log, log_fd, "objfs-mount");
		objfs_log_also(log, STDERR_FILENO, OBJFS_LOG_WARN);
	}
	objfs_fuselog_route(log);
	if (s.resume && getenv(OBJFS_KEEPER_ENV) == NULL &&
	    getenv(OBJFS_ADOPT_ENV) == NULL) {
		/* A kernel that aborts a connection whose request waits
		 * longer than a takeover may take (Linux 6.14): a death would
		 * end the mount anyway, and the keeper cannot help. */
		unsigned to = objfs_fuse_request_timeout(getenv("OBJFS_TEST_FUSE_SYSCTL_DIR"));

		if (to != 0 && to < OBJFS_TAKEOVER_MAX_S && s.resume_asked) {
			objfs_error(log, "mount", "cannot mount %s with resume: the "
				    "kernel aborts a FUSE request unanswered for %u s "
				    "(/proc/sys/fs/fuse/max_request_timeout or "
				    "default_request_timeout), and a takeover may take "
				    "up to %u s; raise it (or set it to 0) or mount "
				    "with noresume", c.source, to, OBJFS_TAKEOVER_MAX_S);
			goto out;
		}
		if (to != 0 && to < OBJFS_TAKEOVER_MAX_S) {
			objfs_warn(log, "mount", "%s: mounting without resume: the "
				   "kernel aborts a FUSE request unanswered for %u s "
				   "(/proc/sys/fs/fuse/max_request_timeout or "
				   "default_request_timeout), shorter than a takeover "
				   "may take (%u s); the death of this process will "
				   "end the mount", c.source, to, OBJFS_TAKEOVER_MAX_S);
			s.resume = false;
		}
	}
	/* a first mount (not a keeper's server, nor a new keeper) over a
	 * directory that has files would hide them: refused unless asked */
	if (getenv(OBJFS_KEEPER_ENV) == NULL && getenv(OBJFS_ADOPT_ENV) == NULL &&
	    !objfs_mount_opts_has(&c.mo, OBJFS_MOPT_NONEMPTY) &&
	    !dir_empty(co.mountpoint)) {
		objfs_error(log, "mount", "mount point %s is not empty (a mount "
			    "would hide its files): empty it, or mount with -o "
			    "nonempty", co.mountpoint);
		goto out;
	}
	if (s.resume && getenv(OBJFS_ADOPT_ENV) != NULL) {
		/* a server whose keeper died started this one: keep its mount */
		const char *a = getenv(OBJFS_ADOPT_ENV);
		struct objfs_keeper_conf kc = {
			.argv = argv, .ready_fd = -1, .creds_fd = -1,
			.foreground = co.foreground, .log_fd = log_fd,
			.adopt_sock = -1, .log = log,
		};

		if (strspn(a, "0123456789") == strlen(a) && a[0] != '\0' &&
		    strlen(a) < 9)
			kc.adopt_sock = atoi(a);
		unsetenv(OBJFS_ADOPT_ENV);
		if (kc.adopt_sock < 0) {
			objfs_error(log, "mount", "%s=%s: not a descriptor",
				    OBJFS_ADOPT_ENV, a);
			goto out;
		}
		(void)fcntl(kc.adopt_sock, F_SETFD, FD_CLOEXEC);
		/* detached already (the server's session): log where a
		 * detached mount does */
		if (!co.foreground)
			objfs_log_redirect(log, log_fd, "objfs-mount");
		objfs_creds_release(&s.creds);
		ret = objfs_keeper_run(&kc);
		goto out;
	}
	if (s.resume && getenv(OBJFS_KEEPER_ENV) == NULL) {
		/* this process keeps the FUSE fd; servers are its children */
		struct objfs_keeper_conf kc = {
			.argv = argv, .ready_fd = s.ready_fd, .creds_fd = -1,
			.foreground = co.foreground, .log_fd = log_fd,
			.adopt_sock = -1, .log = log,
		};

		/* every server reads the credentials again: keep the file
		 * open, a supervisor may remove it once the mount is up */
		if (objfs_mount_opts_has(&c.mo, OBJFS_MOPT_CREDENTIALS_FILE))
			kc.creds_fd = open(c.mo.credentials_file, O_RDONLY | O_CLOEXEC);

		objfs_creds_release(&s.creds);
		objfs_aws_env_release(&s.aws);
		s.ready_fd = -1;
		ret = objfs_keeper_run(&kc);
		goto out;
	}
	/* Detached (without -f): fork now, before the store's threads (the
	 * hedge timer).  fuse_daemonize() forked after them: the child had
	 * no timer (no hedged GET) and crashed joining it at exit.  A
	 * keeper's server is never detached: the keeper is the daemon. */
	if (!co.foreground && getenv(OBJFS_KEEPER_ENV) == NULL) {
		err = objfs_detach_begin(&detach_fd);
		if (err != 0) {
			objfs_error(log, "mount", "detaching: %s",
				    objfs_strerror(err));
			goto out;
		}
	}
	if (s.metrics) {
		err = objfs_metrics_create(&reg);
		if (err == 0)
			err = objfs_metrics_add_process(reg);
		if (err != 0) {
			objfs_error(log, "mount", "metrics: %s", objfs_strerror(err));
			goto out;
		}
		s.sc.metrics = reg;
	}
	err = objfs_store_stack_create(&s.sc, log, &store);
	if (err == 0)
		bucket = bucket_store(&s, c.source, &prefix_key);
	/* the stores copied what they need */
	objfs_creds_release(&s.creds);
	if (err != 0) {
		objfs_log_cause(log, "mount", err, "opening %s: %s", c.source,
				objfs_strerror(err));
		goto out;
	}
	/* Refuse a store that does not answer or a bucket that does not
	 * exist now, naming the cause, rather than fail writes later. */
	err = probe_volume(store, &empty);
	if (err != 0) {
		char why[512];

		/* the cause, for a supervisor reading the log */
		objfs_log_cause(log, "mount", err, "cannot mount %s: %s%s", c.source,
				err == ENOENT ? "the bucket does not exist: " : "",
				objfs_store_error_text(err, why, sizeof(why)));
		goto out;
	}
	if (bucket != NULL && empty) {
		warn_prefix_object(bucket, prefix_key, c.source, log);
		objfs_store_destroy(bucket);
		bucket = NULL;
	}
	expire_unsaved(&s, log);
	err = objfs_fs_create(store, &s.fo, log, &fs);
	if (err == 0 && reg != NULL)
		err = objfs_fs_metrics_attach(fs, reg);
	if (err != 0) {
		objfs_error(log, "mount", "starting the filesystem: %s",
			    objfs_strerror(err));
		goto out;
	}
	err = objfs_resume_create(log, fs, &rs);
	if (err != 0) {
		objfs_error(log, "mount", "the keeper's socket: %s",
			    objfs_strerror(err));
		goto out;
	}
	if (rs != NULL) {
		successor = objfs_resume_successor(rs);
		/* the keeper writes ready_fd once a server serves (the first
		 * may die before): the number in argv is not ours */
		s.ready_fd = -1;
		/* a detached keeper's successors have no terminal: their log
		 * goes where a detached objfs-mount's goes from the start */
		if (successor && !co.foreground)
			objfs_log_redirect(log, log_fd, "objfs-mount");
		/* a cloned fd dies with this process, and its requests fail */
		co.clone_fd = 0;
		/* a new keeper, should this one die */
		objfs_resume_set_relaunch(rs, argv, s.creds_fd);
		s.creds_fd = -1;
		if (s.state_dir != NULL) {
			snprintf(state_dir, sizeof(state_dir), "%s", s.state_dir);
		} else {
			/* the same for every server of this source and mount
			 * point (the keeper's pid changes with the keeper) */
			err = objfs_default_state_dir(c.source, co.mountpoint,
						      objfs_mount_opts_has(&c.mo,
							OBJFS_MOPT_SPOOL_DIR) ?
						      s.fo.spool_dir : NULL,
						      state_dir, sizeof(state_dir));
			if (err != 0) {
				objfs_error(log, "mount", "the state directory of %s: %s",
					    co.mountpoint, objfs_strerror(err));
				goto out;
			}
		}
		/* A first server (not a successor) would start an empty state
		 * over what a mount that died with its keeper left in the
		 * same state directory (the node plugin's watchdog mounts
		 * again with it): that is saved first, before the mount is
		 * live, or the mount fails and leaves it there. */
		if (!successor) {
			err = objfs_fs_recover(fs, state_dir);
			if (err != 0) {
				objfs_error(log, "mount", "cannot mount %s: the "
					    "unsaved data a dead mount left in %s "
					    "could not be saved: %s", c.source,
					    state_dir, objfs_strerror(err));
				goto out;
			}
		}
	}
	/* file-system options every mount gets; df and mount(8) show the
	 * source (no secret is ever in it) */
	if (fuse_opt_add_arg(&args, "-odefault_permissions,subtype=objfs") != 0 ||
	    add_fsname(&args, c.source) != 0 ||
	    (s.fo.read_only && fuse_opt_add_arg(&args, "-oro") != 0))
		goto out;
	se = fuse_session_new(&args, reg != NULL ? objfs_fs_metered_ops() :
			      objfs_fs_ops(), objfs_fs_ops_size(), fs);
	if (se == NULL)
		goto out;
	objfs_fs_set_session(fs, se);
	/* libfuse keeps the session in a process-wide variable for signals */
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	if (successor) {
		err = objfs_resume_take(rs, se);
		if (err == 0)
			err = objfs_fs_state_start(fs, state_dir, true);
		if (err == 0)
			err = objfs_resume_slots(rs, state_dir, s.user_resend);
		if (err == 0)
			err = objfs_resume_answer_init(rs);
		if (err != 0) {
			objfs_error(log, "mount", "taking the mount over: %s",
				    objfs_strerror(err));
			goto out_unmount;
		}
	} else {
		if (fuse_session_mount(se, co.mountpoint) != 0) {
			objfs_error(log, "mount", "mounting on %s failed",
				    co.mountpoint);
			goto out_signals;
		}
		mounted = 1;
		if (rs != NULL) {
			err = objfs_resume_attach(rs, se);
			if (err == 0)
				err = objfs_fs_state_start(fs, state_dir, false);
			if (err == 0)
				err = objfs_resume_slots(rs, state_dir,
							 s.user_resend);
			if (err == 0)
				err = objfs_resume_answer_init(rs);
			if (err != 0) {
				objfs_error(log, "mount", "resumable mount: %s",
					    objfs_strerror(err));
				goto out_unmount;
			}
		}
	}
	if (!co.foreground && !successor) {
		objfs_log_redirect(log, log_fd, "objfs-mount");
		/* the first server under a detached keeper had the caller's
		 * stderr for its errors until now (fuse_daemonize() does
		 * this for a mount without resume) */
		if (rs != NULL)
			stdio_to_null();
	}
	/* forked already (or under a keeper, the daemon): chdir("/") */
	if (fuse_daemonize(1) != 0)
		goto out_unmount;
	if (detach_fd >= 0) {
		/* as fuse_daemonize(0) did: the caller returns now */
		stdio_to_null();
		(void)!write(detach_fd, "R", 1);
		close(detach_fd);
		detach_fd = -1;
	}
	err = objfs_fs_start(fs);
	if (err != 0) {
		objfs_error(log, "mount", "starting workers: %s", objfs_strerror(err));
		goto out_unmount;
	}
	/* a thread: after fuse_daemonize's fork */
	if (reg != NULL)
		msrv = serve_metrics(log, &s, reg, rs != NULL ? state_dir : NULL,
				     metrics_dir, sizeof(metrics_dir),
				     &metrics_dir_made);
	if (rs != NULL) {
		err = objfs_resume_serving(rs, se);
		if (err != 0) {
			objfs_error(log, "mount", "telling the keeper: %s",
				    objfs_strerror(err));
			goto out_unmount;
		}
		serving = true;
	}
	objfs_info(log, "mount", "%s %s on %s", c.source,
		   successor ? "taken over" : "mounted", co.mountpoint);
	if (s.ready_fd >= 0) {
		ssize_t n = write(s.ready_fd, "R", 1);

		close(s.ready_fd);
		s.ready_fd = -1;
		if (n != 1)
			objfs_warn(log, "mount", "ready_fd: write failed");
	}
	lc = fuse_loop_cfg_create();
	if (lc == NULL)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(lc, co.clone_fd);
	fuse_loop_cfg_set_max_threads(lc, co.max_threads > 0 && co.max_threads <= 1000 ?
				      co.max_threads : 16);
	fuse_loop_cfg_set_idle_threads(lc, co.max_idle_threads > 0 &&
				       co.max_idle_threads <= 1000 ?
				       co.max_idle_threads : 8);
	pthread_sigmask(SIG_UNBLOCK, &term, NULL);
	if (co.singlethread)
		ret = fuse_session_loop(se);
	else
		ret = fuse_session_loop_mt(se, lc);
	ended = true;
	/* The stop is under way: a SIGTERM now (a supervisor asking again
	 * while the upload runs, or once libfuse's handlers are removed
	 * below) must not kill the flush or turn a clean end into status
	 * 143.  Every other thread has them blocked already. */
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	if (objfs_resume_handing_over(rs)) {
		/* a successor takes the mount as it is: no upload, no
		 * unmount, no libfuse destroy (it would upload): the state
		 * directory has everything, as after a crash */
		objfs_info(log, "mount", "handed over");
		_exit(0);
	}
	/* a loop ended by SIGTERM/SIGINT/SIGHUP reports the signal: that is
	 * a requested stop, clean when everything is saved below */
	if (ret == SIGTERM || ret == SIGINT || ret == SIGHUP) {
		ret = 0;
		by_signal = true;
	}
	/* SIGTERM or unmount: nothing unsaved may be left behind */
	err = objfs_fs_sync_all(fs);
	if (err != 0)
		ret = 1;
	if (objfs_fs_unsaved_kept(fs) > 0) {
		/* each was logged with where it is: the status says so too */
		objfs_error(log, "mount", "the data of %u file(s) could not be "
			    "saved and was kept in %s (logged above)",
			    objfs_fs_unsaved_kept(fs), s.fo.spool_dir != NULL ?
			    s.fo.spool_dir : "the spool directory");
		ret = 1;
	}
	if (err == 0)
		objfs_resume_slots_drop(rs);
	objfs_fs_state_stop(fs, err == 0);
	objfs_info(log, "mount", "stopping (%s)", ret == 0 ? "clean" : "with errors");
	objfs_metrics_server_stop(msrv);
	msrv = NULL;
	/* its metrics socket gone: an empty state directory goes too */
	if (rs != NULL && err == 0)
		rmdir(state_dir);
out_unmount:
	if (rs != NULL && !ended && (successor || serving)) {
		/* a resumable server that fails leaves the state as a crash
		 * would: destroying the fs would free the table in the log and
		 * delete the spools the successor needs (a first server that
		 * never served unmounts: nobody uses the mount yet) */
		objfs_error(log, "mount", "server failed: the keeper resumes");
		_exit(1);
	}
	if (mounted)
		fuse_session_unmount(se);
	else if (successor && by_signal)
		unmount_inherited(log, co.mountpoint);
	objfs_resume_bye(rs, ret == 0 ? 0 : 1);
out_signals:
	fuse_remove_signal_handlers(se);
out:
	/* its collector reads fs */
	objfs_metrics_server_stop(msrv);
	if (metrics_dir_made)
		rmdir(metrics_dir);
	if (s.ready_fd >= 0)
		close(s.ready_fd);
	if (s.creds_fd >= 0)
		close(s.creds_fd);
	if (detach_fd >= 0)
		close(detach_fd);       /* never ready: the caller exits 1 */
	if (lc != NULL)
		fuse_loop_cfg_destroy(lc);
	if (se != NULL)
		fuse_session_destroy(se);
	objfs_fs_destroy(fs);
	objfs_resume_destroy(rs);
	if (store != NULL) {
		struct objfs_store_requests rq;
		char rbuf[512];

		if (objfs_store_requests(store, &rq) == 0 &&
		    objfs_store_requests_format(&rq, rbuf, sizeof(rbuf)) == 0)
			objfs_info(log, "mount", "store requests: %s", rbuf);
		objfs_store_destroy(store);
		/* the last line: the end of a detached process, which
		 * nobody waits for, shows in its log (a crash in the
		 * teardown leaves it out) */
		objfs_info(log, "mount", "exiting with status %d",
			   ret == 0 ? 0 : 1);
	}
	objfs_store_destroy(bucket);
	free(prefix_key);
	objfs_metrics_destroy(reg);
	objfs_fuselog_route(NULL);
	objfs_log_destroy(log);
	if (log_fd >= 0)
		close(log_fd);
	objfs_creds_release(&s.creds);
	objfs_aws_env_release(&s.aws);
	free(co.mountpoint);
	fuse_opt_free_args(&args);
	cli_release(&c);
	return ret == 0 ? 0 : 1;
}
