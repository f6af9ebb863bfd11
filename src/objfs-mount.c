/*
 * objfs-mount - mounts one objfs volume with FUSE.
 *
 *   objfs-mount [-f] [-o opt,...] SOURCE MOUNTPOINT
 *
 * SOURCE is s3://BUCKET/PREFIX or file:///DIR/PREFIX.  Credentials come
 * from the environment or -o credentials_file, never from argv.  See
 * usage() for every option.  Readiness: with -o ready_fd=N the program
 * writes the single byte "R" to fd N and closes it once the mount is live;
 * on failure it closes N without writing and exits non-zero.
 */
#define FUSE_USE_VERSION 312
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/creds.h"
#include "common/errors.h"
#include "common/log.h"
#include "fs/fs.h"
#include "fs/fuselog.h"

struct cli {
	char *source;
	int nonopt;
	char *endpoint;
	char *region;
	char *addressing;
	char *ca_file;
	int insecure;
	int unsigned_payload;
	int signed_payload;
	char *credentials_file;
	char *uid;
	char *gid;
	char *umask;
	char *attr_ttl;
	char *entry_ttl;
	char *neg_ttl;
	char *dir_ttl;
	char *mem_limit;
	char *readahead;
	char *readahead_chunks;
	char *part_size;
	char *upload_parallel;
	char *threads;
	char *spool_dir;
	char *spool_limit;
	char *cache_dir;
	char *cache_size;
	char *volrec_ttl;
	char *usage_refresh;
	char *ready_fd;
	char *log_level;
	char *max_connections;
	char *retries;
	char *retry_timeout;
	char *stall_timeout;
	int read_only;
	int help;
};

#define OPT(t, f) { t, offsetof(struct cli, f), 0 }
static const struct fuse_opt cli_opts[] = {
	OPT("endpoint=%s", endpoint),
	OPT("region=%s", region),
	OPT("addressing=%s", addressing),
	OPT("ca_file=%s", ca_file),
	{ "insecure_skip_verify", offsetof(struct cli, insecure), 1 },
	{ "unsigned_payload", offsetof(struct cli, unsigned_payload), 1 },
	{ "signed_payload", offsetof(struct cli, signed_payload), 1 },
	OPT("credentials_file=%s", credentials_file),
	OPT("uid=%s", uid),
	OPT("gid=%s", gid),
	OPT("umask=%s", umask),
	OPT("attr_ttl=%s", attr_ttl),
	OPT("entry_ttl=%s", entry_ttl),
	OPT("negative_ttl=%s", neg_ttl),
	OPT("dir_ttl=%s", dir_ttl),
	OPT("mem_limit=%s", mem_limit),
	OPT("readahead=%s", readahead),
	OPT("readahead_chunks=%s", readahead_chunks),
	OPT("part_size=%s", part_size),
	OPT("upload_parallel=%s", upload_parallel),
	OPT("threads=%s", threads),
	OPT("spool_dir=%s", spool_dir),
	OPT("spool_limit=%s", spool_limit),
	OPT("cache_dir=%s", cache_dir),
	OPT("cache_size=%s", cache_size),
	OPT("volrec_ttl=%s", volrec_ttl),
	OPT("usage_refresh=%s", usage_refresh),
	OPT("ready_fd=%s", ready_fd),
	OPT("log_level=%s", log_level),
	OPT("max_connections=%s", max_connections),
	OPT("retries=%s", retries),
	OPT("retry_timeout=%s", retry_timeout),
	OPT("stall_timeout=%s", stall_timeout),
	{ "ro", offsetof(struct cli, read_only), 1 },
	FUSE_OPT_KEY("ro", FUSE_OPT_KEY_KEEP),
	{ "-h", offsetof(struct cli, help), 1 },
	{ "--help", offsetof(struct cli, help), 1 },
	FUSE_OPT_END
};

static void usage(const char *prog)
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
"Store options (s3:// sources):\n"
"  endpoint=URL           S3 endpoint, e.g. https://s3.example:9000\n"
"                         (default: $AWS_ENDPOINT_URL)\n"
"  region=NAME            signing region (default: $AWS_REGION or us-east-1)\n"
"  addressing=path|virtual  URL style (default: path)\n"
"  ca_file=PATH           PEM bundle of CAs to trust (default: system's)\n"
"  insecure_skip_verify   do not verify the server's certificate\n"
"  unsigned_payload       sign requests with UNSIGNED-PAYLOAD (the default\n"
"                         over https, where TLS protects the payload)\n"
"  signed_payload         hash every payload into the signature, also\n"
"                         over https (plain http always does, unless\n"
"                         unsigned_payload)\n"
"  credentials_file=PATH  key=value lines: access_key_id=, secret_access_key=,\n"
"                         session_token= (without it: $AWS_ACCESS_KEY_ID,\n"
"                         $AWS_SECRET_ACCESS_KEY, $AWS_SESSION_TOKEN)\n"
"  max_connections=N      pooled HTTP connections (default: 16)\n"
"  retry_timeout=SECONDS  how long a request is retried while the store is\n"
"                         down or failing (refused or reset connections,\n"
"                         timeouts, 5xx, throttling): the application waits,\n"
"                         as on an NFS hard mount, then gets EIO (default: 60)\n"
"  retries=N              cap the tries per request instead (default: none)\n"
"  stall_timeout=SECONDS  a transfer that moves no byte this long is\n"
"                         abandoned and tried again (default: 3)\n"
"\n"
"Filesystem options:\n"
"  uid=N, gid=N           owner of objects without metadata (default: caller)\n"
"  umask=OCTAL            for objects without metadata (default: 022)\n"
"  attr_ttl=SECONDS       attribute cache lifetime (default: 1)\n"
"  entry_ttl=SECONDS      name cache lifetime (default: 1)\n"
"  negative_ttl=SECONDS   missing-name cache lifetime (default: 1)\n"
"  dir_ttl=SECONDS        directory listing cache lifetime (default: 1)\n"
"                         (the defaults give close-to-open consistency;\n"
"                         every open revalidates the file with a HEAD)\n"
"  mem_limit=BYTES        read-ahead memory bound (default: 12M; raise it\n"
"                         for a distant S3: it bounds the bytes in flight)\n"
"  readahead=BYTES        size of one read-ahead GET (default: 4M)\n"
"  readahead_chunks=N     read-ahead GETs in flight per reader (default: 3)\n"
"  part_size=BYTES        multipart upload part size (default: 32M)\n"
"  upload_parallel=N      parts uploaded at once per file (default: 2)\n"
"  threads=N              worker threads for read-ahead, HEADs, copies\n"
"                         (default: 32)\n"
"  spool_dir=DIR          where unsaved data waits (default: /var/tmp)\n"
"  spool_limit=BYTES      disk the waiting data may take (default: 2G);\n"
"                         past it, sequential writers drop the parts\n"
"                         already sent and other files are uploaded\n"
"                         early (0: bounded only by the disk)\n"
"  cache_dir=DIR          keep an on-disk cache of object data in a private\n"
"                         directory under DIR (default: none)\n"
"  cache_size=BYTES       bound of that cache (default: 1G)\n"
"  volrec_ttl=SECONDS     re-read the volume record (capacity) after\n"
"                         (default: 30)\n"
"  usage_refresh=SECONDS  re-list the volume to refresh `used' (default: 600)\n"
"  ro                     read-only mount\n"
"  allow_other            let other users access the mount\n"
"  ready_fd=N             write the byte \"R\" to fd N, then close it, once\n"
"                         the mount is live (closed unwritten on failure)\n"
"  log_level=LEVEL        debug, info, warn, error (default: info)\n"
"\n"
"BYTES accept the suffixes K, M, G (powers of 1024).  Other -o options are\n"
"passed to FUSE (e.g. allow_other, default_permissions is always on).\n"
"SIGTERM, SIGINT and unmount upload everything unsaved before exit.\n",
		prog);
}

static int cli_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct cli *c = data;

	if (key == FUSE_OPT_KEY_NONOPT && c->nonopt++ == 0) {
		c->source = strdup(arg);
		return 0;
	}
	return 1;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s)
		return EINVAL;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end != '\0')
		return EINVAL;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || v < 0)
		return EINVAL;
	*out = v;
	return 0;
}

struct settings {
	struct objfs_fs_opts fo;
	struct objfs_store_config sc;
	int ready_fd;
	enum objfs_log_level level;
	struct objfs_creds creds;
};

#define NUM(field, dst, fn) do {                                        \
	if (c->field != NULL && fn(c->field, dst) != 0) {               \
		fprintf(stderr, "objfs-mount: bad value for %s: %s\n",  \
			#field, c->field);                              \
		return EINVAL;                                          \
	}                                                               \
} while (0)

static int build_settings(struct cli *c, struct settings *s)
{
	uint64_t v;
	int err;

	objfs_fs_opts_default(&s->fo);
	memset(&s->sc, 0, sizeof(s->sc));
	s->ready_fd = -1;
	s->level = OBJFS_LOG_INFO;
	if (c->log_level != NULL && objfs_log_parse_level(c->log_level, &s->level) != 0) {
		fprintf(stderr, "objfs-mount: bad log_level: %s\n", c->log_level);
		return EINVAL;
	}
	if (c->uid != NULL) {
		NUM(uid, &v, parse_u64);
		s->fo.uid = (uid_t)v;
	}
	if (c->gid != NULL) {
		NUM(gid, &v, parse_u64);
		s->fo.gid = (gid_t)v;
	}
	if (c->umask != NULL) {
		char *end;
		unsigned long m = strtoul(c->umask, &end, 8);

		if (*end != '\0' || m > 0777) {
			fprintf(stderr, "objfs-mount: bad umask: %s\n", c->umask);
			return EINVAL;
		}
		s->fo.umask = (mode_t)m;
	}
	NUM(attr_ttl, &s->fo.attr_ttl, parse_double);
	NUM(entry_ttl, &s->fo.entry_ttl, parse_double);
	NUM(neg_ttl, &s->fo.neg_ttl, parse_double);
	NUM(dir_ttl, &s->fo.dir_ttl, parse_double);
	NUM(volrec_ttl, &s->fo.volrec_ttl, parse_double);
	NUM(usage_refresh, &s->fo.usage_refresh, parse_double);
	NUM(mem_limit, &s->fo.mem_limit, parse_u64);
	NUM(readahead, &s->fo.ra_chunk, parse_u64);
	NUM(part_size, &s->fo.part_size, parse_u64);
	if (c->readahead_chunks != NULL) {
		NUM(readahead_chunks, &v, parse_u64);
		s->fo.ra_chunks = (unsigned)v;
	}
	if (c->upload_parallel != NULL) {
		NUM(upload_parallel, &v, parse_u64);
		s->fo.upload_parallel = v ? (unsigned)v : 1;
	}
	if (c->threads != NULL) {
		NUM(threads, &v, parse_u64);
		s->fo.threads = v ? (unsigned)v : 1;
	}
	if (c->spool_dir != NULL)
		s->fo.spool_dir = c->spool_dir;
	s->fo.cache_dir = c->cache_dir;
	NUM(cache_size, &s->fo.cache_size, parse_u64);
	NUM(spool_limit, &s->fo.spool_limit, parse_u64);
	s->fo.read_only = c->read_only != 0;
	if (c->ready_fd != NULL) {
		NUM(ready_fd, &v, parse_u64);
		s->ready_fd = (int)v;
	}
	if (c->max_connections != NULL) {
		NUM(max_connections, &v, parse_u64);
		s->sc.s3.max_connections = (unsigned)v;
	}
	/* Ride through store outages up to retry_timeout (see backend.h). */
	s->sc.retry.max_attempts = OBJFS_RETRY_UNLIMITED;
	if (c->retries != NULL) {
		NUM(retries, &v, parse_u64);
		s->sc.retry.max_attempts = v > 0 && v < OBJFS_RETRY_UNLIMITED ?
					   (unsigned)v : OBJFS_RETRY_UNLIMITED;
	}
	if (c->retry_timeout != NULL) {
		double t;

		NUM(retry_timeout, &t, parse_double);
		if (t > 86400) {
			fprintf(stderr, "objfs-mount: retry_timeout over a day: "
				"%s\n", c->retry_timeout);
			return EINVAL;
		}
		s->sc.retry.max_total_ms = t > 0 ? (unsigned)(t * 1000) : 1;
	}
	if (c->stall_timeout != NULL) {
		double t;

		NUM(stall_timeout, &t, parse_double);
		if (t > 3600) {
			fprintf(stderr, "objfs-mount: stall_timeout over an hour: "
				"%s\n", c->stall_timeout);
			return EINVAL;
		}
		s->sc.s3.stall_timeout_ms = t > 0 ? (long)(t * 1000) : 1;
	}

	s->sc.url = c->source;
	s->sc.s3.endpoint = c->endpoint != NULL ? c->endpoint : getenv("AWS_ENDPOINT_URL");
	s->sc.s3.region = c->region != NULL ? c->region : getenv("AWS_REGION");
	s->sc.s3.path_style = true;
	if (c->addressing != NULL) {
		if (strcmp(c->addressing, "virtual") == 0) {
			s->sc.s3.path_style = false;
		} else if (strcmp(c->addressing, "path") != 0) {
			fprintf(stderr, "objfs-mount: addressing must be path or virtual\n");
			return EINVAL;
		}
	}
	s->sc.s3.ca_file = c->ca_file;
	s->sc.s3.insecure_skip_verify = c->insecure != 0;
	s->sc.s3.unsigned_payload = c->unsigned_payload != 0;
	s->sc.s3.signed_payload = c->signed_payload != 0;
	if (c->credentials_file != NULL) {
		int line = 0;

		err = objfs_creds_load_file(c->credentials_file, &s->creds, &line);
		if (err != 0) {
			fprintf(stderr, "objfs-mount: reading %s: %s (line %d)\n",
				c->credentials_file, objfs_strerror(err), line);
			return err;
		}
	} else {
		err = objfs_creds_load_env(&s->creds);
		if (err != 0)
			return err;
	}
	s->sc.s3.access_key = s->creds.access_key;
	s->sc.s3.secret_key = s->creds.secret_key;
	s->sc.s3.session_token = s->creds.session_token;
	return 0;
}

/* Frees the strings fuse_opt_parse() duplicated into c. */
static void cli_release(struct cli *c)
{
	char **strs[] = {
		&c->source, &c->endpoint, &c->region, &c->addressing,
		&c->ca_file, &c->credentials_file, &c->uid, &c->gid, &c->umask,
		&c->attr_ttl, &c->entry_ttl, &c->neg_ttl, &c->dir_ttl,
		&c->mem_limit, &c->readahead, &c->readahead_chunks,
		&c->part_size, &c->upload_parallel, &c->threads, &c->spool_dir,
		&c->spool_limit, &c->cache_dir, &c->cache_size,
		&c->volrec_ttl, &c->usage_refresh, &c->ready_fd, &c->log_level,
		&c->max_connections, &c->retries, &c->retry_timeout,
		&c->stall_timeout,
	};
	size_t i;

	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		free(*strs[i]);
		*strs[i] = NULL;
	}
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co;
	struct fuse_loop_config *lc = NULL;
	struct fuse_session *se = NULL;
	struct objfs_store *store = NULL;
	struct objfs_fs *fs = NULL;
	struct objfs_log *log = NULL;
	struct settings s;
	struct cli c;
	int ret = 1, err, mounted = 0;

	/* Dozens of worker threads would each get a malloc arena that keeps
	 * freed chunks: two arenas keep a mount within its memory bound. */
	mallopt(M_ARENA_MAX, 2);
	/* Large buffers (reads, FUSE requests) are mapped and unmapped, not
	 * kept in the arenas (a fixed threshold stops glibc raising it). */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	memset(&c, 0, sizeof(c));
	memset(&co, 0, sizeof(co));
	memset(&s, 0, sizeof(s));
	s.ready_fd = -1;
	if (fuse_opt_parse(&args, &c, cli_opts, cli_proc) != 0)
		goto out;
	if (c.help) {
		usage(argv[0]);
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
	objfs_fuselog_route(log);
	err = objfs_store_stack_create(&s.sc, log, &store);
	/* the store copied what it needs */
	objfs_creds_release(&s.creds);
	if (err != 0) {
		objfs_error(log, "mount", "opening %s: %s", c.source,
			    objfs_strerror(err));
		goto out;
	}
	err = objfs_fs_create(store, &s.fo, log, &fs);
	if (err != 0) {
		objfs_error(log, "mount", "starting the filesystem: %s",
			    objfs_strerror(err));
		goto out;
	}
	/* file-system options every mount gets */
	if (fuse_opt_add_arg(&args, "-odefault_permissions,fsname=objfs,subtype=objfs") != 0 ||
	    (s.fo.read_only && fuse_opt_add_arg(&args, "-oro") != 0))
		goto out;
	se = fuse_session_new(&args, objfs_fs_ops(), objfs_fs_ops_size(), fs);
	if (se == NULL)
		goto out;
	objfs_fs_set_session(fs, se);
	/* libfuse keeps the session in a process-wide variable for signals */
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, co.mountpoint) != 0) {
		objfs_error(log, "mount", "mounting on %s failed", co.mountpoint);
		goto out_signals;
	}
	mounted = 1;
	if (fuse_daemonize(co.foreground) != 0)
		goto out_unmount;
	err = objfs_fs_start(fs);
	if (err != 0) {
		objfs_error(log, "mount", "starting workers: %s", objfs_strerror(err));
		goto out_unmount;
	}
	objfs_info(log, "mount", "%s mounted on %s", c.source, co.mountpoint);
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
	if (co.singlethread)
		ret = fuse_session_loop(se);
	else
		ret = fuse_session_loop_mt(se, lc);
	/* a loop ended by SIGTERM/SIGINT/SIGHUP reports the signal: that is
	 * a requested stop, clean when everything is saved below */
	if (ret == SIGTERM || ret == SIGINT || ret == SIGHUP)
		ret = 0;
	/* SIGTERM or unmount: nothing unsaved may be left behind */
	err = objfs_fs_sync_all(fs);
	if (err != 0)
		ret = 1;
	objfs_info(log, "mount", "stopping (%s)", ret == 0 ? "clean" : "with errors");
out_unmount:
	if (mounted)
		fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out:
	if (s.ready_fd >= 0)
		close(s.ready_fd);
	if (lc != NULL)
		fuse_loop_cfg_destroy(lc);
	if (se != NULL)
		fuse_session_destroy(se);
	objfs_fs_destroy(fs);
	objfs_store_destroy(store);
	objfs_fuselog_route(NULL);
	objfs_log_destroy(log);
	objfs_creds_release(&s.creds);
	free(co.mountpoint);
	fuse_opt_free_args(&args);
	cli_release(&c);
	return ret == 0 ? 0 : 1;
}
