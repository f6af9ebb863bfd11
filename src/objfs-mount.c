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
"                         (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL,\n"
"                         the profile's endpoint_url, else AWS:\n"
"                         https://s3.REGION.amazonaws.com, virtual-hosted)\n"
"  region=NAME            signing region (default: $AWS_REGION,\n"
"                         $AWS_DEFAULT_REGION, the profile's region, else\n"
"                         us-east-1)\n"
"  addressing=path|virtual  URL style (default: path)\n"
"  ca_file=PATH           PEM bundle of CAs to trust (default: $AWS_CA_BUNDLE,\n"
"                         the profile's ca_bundle, else the system's)\n"
"  insecure_skip_verify   do not verify the server's certificate\n"
"  unsigned_payload       sign requests with UNSIGNED-PAYLOAD (the default\n"
"                         over https, where TLS protects the payload)\n"
"  signed_payload         hash every payload into the signature, also\n"
"                         over https (plain http always does, unless\n"
"                         unsigned_payload)\n"
"  credentials_file=PATH  key=value lines: access_key_id=, secret_access_key=,\n"
"                         session_token=, or role_arn= and\n"
"                         web_identity_token_file=, or\n"
"                         container_credentials_full_uri= (without it,\n"
"                         the AWS SDKs' chain, first found wins:\n"
"                         $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY\n"
"                         ($AWS_SESSION_TOKEN); the profile $AWS_PROFILE\n"
"                         (default) of ~/.aws/credentials and\n"
"                         ~/.aws/config ($AWS_SHARED_CREDENTIALS_FILE,\n"
"                         $AWS_CONFIG_FILE); $AWS_ROLE_ARN and\n"
"                         $AWS_WEB_IDENTITY_TOKEN_FILE, exchanged with STS\n"
"                         AssumeRoleWithWebIdentity;\n"
"                         $AWS_CONTAINER_CREDENTIALS_FULL_URI with\n"
"                         $AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE; EC2\n"
"                         instance metadata (IMDSv2;\n"
"                         $AWS_EC2_METADATA_SERVICE_ENDPOINT, off when\n"
"                         $AWS_EC2_METADATA_DISABLED=true).  None found:\n"
"                         the mount fails, naming each place looked at)\n"
"  no_sign_request        no credentials: unsigned requests (a public\n"
"                         bucket)\n"
"  creds_refresh=SECONDS  renew temporary keys this long before they\n"
"                         expire (default: 300)\n"
"  max_connections=N      pooled HTTP connections (default: 16)\n"
"  retry_timeout=SECONDS  how long a request is retried while the store is\n"
"                         down or failing (refused or reset connections,\n"
"                         timeouts, 5xx, throttling): the application waits,\n"
"                         as on an NFS hard mount, then gets EIO (default: 60)\n"
"  retries=N              cap the tries per request instead (default: none)\n"
"  stall_timeout=SECONDS  a transfer that moves no byte this long (or 4x\n"
"                         the store's usual silences, if longer) while\n"
"                         others move is abandoned and tried again\n"
"                         (default: 3)\n"
"  hedge_after=SECONDS    a GET silent for twice the 95th percentile of\n"
"                         recent GETs' silences (at most this long) is\n"
"                         raced by a second one, 5 per 100 GETs at most,\n"
"                         none while most GETs are late; 0: never\n"
"                         (default: 0.5)\n"
"  delete_delay=SECONDS   unlinks are answered at once and their deletes\n"
"                         sent in batches (DeleteObjects) after this long;\n"
"                         0: each delete before the unlink returns\n"
"                         (default: 0.02)\n"
"\n"
"Filesystem options:\n"
"  uid=N, gid=N           owner of objects without metadata (default: caller)\n"
"  umask=OCTAL            for objects without metadata (default: 022)\n"
"  fsgroup=N              new files and directories belong to group N and\n"
"                         are group-writable: their group permission bits\n"
"                         are the owner's (Kubernetes fsGroup; objfs-csi\n"
"                         sets it from the pod's volume_mount_group)\n"
"  attr_ttl=SECONDS       attribute cache lifetime (default: 1)\n"
"  entry_ttl=SECONDS      name cache lifetime (default: 1)\n"
"  negative_ttl=SECONDS   missing-name cache lifetime (default: 1)\n"
"  dir_ttl=SECONDS        directory listing cache lifetime (default: 1)\n"
"                         (the defaults give close-to-open consistency;\n"
"                         every open revalidates the file with a HEAD,\n"
"                         or uses a prefetch sent at most attr_ttl ago)\n"
"  mem_limit=BYTES        read-ahead memory bound (default: 12M, or\n"
"                         readahead x readahead_chunks; raise it for a\n"
"                         distant S3: it bounds the bytes in flight)\n"
"  readahead=BYTES        size of one read-ahead GET (default: 4M)\n"
"  readahead_chunks=N     read-ahead GETs in flight per reader (default: 3,\n"
"                         at most 16)\n"
"  prefetch=N             a reader going through a directory's files in\n"
"                         order gets its next N small files (< 1 MiB)\n"
"                         fetched in parallel (default: 16; 0: off; max 64)\n"
"  part_size=BYTES        multipart upload part size (default: 32M)\n"
"  upload_parallel=N      parts uploaded at once per file (default: 2)\n"
"  upload_delay=SECONDS   a new file (never stored) is uploaded up to this\n"
"                         long after its last close, not at the close, so\n"
"                         a rename or unlink meanwhile costs no request;\n"
"                         fsync still stores it (default: 0: close means\n"
"                         stored; at most 60)\n"
"  threads=N              worker threads for read-ahead, HEADs, copies\n"
"                         (default: 32)\n"
"  spool_dir=DIR          where unsaved data waits (default: /var/tmp)\n"
"  unsaved_keep=SECONDS   how long the data of files that could never be\n"
"                         saved is kept in spool_dir (objfs-unsaved-*, each\n"
"                         with a .txt note) before a mount deletes it\n"
"                         (default: 604800, 7 days; 0: never)\n"
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
"  nonempty               mount over a directory that has files (hidden\n"
"                         while mounted; refused without it)\n"
"  xattrs                 user.* extended attributes, kept in the objects'\n"
"                         metadata (1,536 bytes a file at most); off by\n"
"                         default: with them the kernel asks one more\n"
"                         request before every write(2)\n"
"  allow_other            let other users access the mount\n"
"  ready_fd=N             write the byte \"R\" to fd N, then close it, once\n"
"                         the mount is live (closed unwritten on failure)\n"
"  log_level=LEVEL        debug, info, warn, error (default: info)\n"
"  log_file=PATH          once detached (no -f), log there (appended)\n"
"                         instead of syslog\n"
"  resume                 (the default) survive the death of any one\n"
"                         process: a keeper (this pid) holds the FUSE\n"
"                         connection and starts a successor when the\n"
"                         server dies; when the keeper dies the server\n"
"                         starts a new keeper and serves on; SIGUSR2\n"
"                         hands the mount to the binary now at the same\n"
"                         path.  Costs a second process (about 2 MiB),\n"
"                         a state log written on every create, rename,\n"
"                         unlink and open of a file for writing, and\n"
"                         unsaved data waiting in STATE_DIR/spool\n"
"  noresume               one process: its death (kill -9, OOM) ends the\n"
"                         mount (ENOTCONN until unmounted); fsynced data\n"
"                         is saved, unsynced writes are lost\n"
"  state_dir=DIR          what a successor or the next mount needs, and\n"
"                         the metrics socket (default: with resume,\n"
"                         /var/lib/objfs/state/HASH, or with spool_dir=\n"
"                         SPOOL_DIR/objfs-state.HASH, HASH of the source\n"
"                         and the mount point: a new mount of both\n"
"                         recovers what a dead one left unsaved; with\n"
"                         noresume, SPOOL_DIR/objfs-state.PID)\n"
"  metrics=unix|off|[ADDR:]PORT  Prometheus metrics: on the unix socket\n"
"                         STATE_DIR/metrics.sock (unix, the default), also\n"
"                         on TCP ADDR:PORT (ADDR 127.0.0.1 unless given;\n"
"                         0.0.0.0 for every interface), or not at all\n"
"                         (off: nothing is counted)\n"
"\n"
"BYTES accept the suffixes K, M, G (powers of 1024).  Other -o options are\n"
"passed to FUSE (e.g. allow_other, default_permissions is always on).\n"
"SIGTERM, SIGINT and unmount upload everything unsaved before exit.\n",
		prog);
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
};

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
	int err;

#define HAS(w) objfs_mount_opts_has(mo, OBJFS_MOPT_##w)
	objfs_fs_opts_default(&s->fo);
	memset(&s->sc, 0, sizeof(s->sc));
	memset(&s->conn, 0, sizeof(s->conn));
	s->ready_fd = -1;
	s->level = HAS(LOG_LEVEL) ? mo->log_level : OBJFS_LOG_INFO;
	if (HAS(UID))
		s->fo.uid = (uid_t)mo->uid;
	if (HAS(GID))
		s->fo.gid = (gid_t)mo->gid;
	if (HAS(UMASK))
		s->fo.umask = (mode_t)mo->umask;
	if (HAS(FSGROUP)) {
		s->fo.fsgroup_set = true;
		s->fo.fsgroup = (gid_t)mo->fsgroup;
	}
	if (HAS(ATTR_TTL))
		s->fo.attr_ttl = mo->attr_ttl;
	if (HAS(ENTRY_TTL))
		s->fo.entry_ttl = mo->entry_ttl;
	if (HAS(NEGATIVE_TTL))
		s->fo.neg_ttl = mo->negative_ttl;
	if (HAS(DIR_TTL))
		s->fo.dir_ttl = mo->dir_ttl;
	if (HAS(VOLREC_TTL))
		s->fo.volrec_ttl = mo->volrec_ttl;
	if (HAS(USAGE_REFRESH))
		s->fo.usage_refresh = mo->usage_refresh;
	if (HAS(MEM_LIMIT))
		s->fo.mem_limit = mo->mem_limit;
	if (HAS(READAHEAD))
		s->fo.ra_chunk = mo->readahead;
	if (HAS(PART_SIZE))
		s->fo.part_size = mo->part_size;
	/* a bound the docs state is refused past, not cut quietly */
	if (HAS(READAHEAD_CHUNKS) && mo->readahead_chunks > OBJFS_RA_CHUNKS_MAX) {
		fprintf(stderr, "objfs-mount: -o readahead_chunks: at most %d\n",
			OBJFS_RA_CHUNKS_MAX);
		return EINVAL;
	}
	if (HAS(READAHEAD_CHUNKS))
		s->fo.ra_chunks = (unsigned)mo->readahead_chunks;
	if (HAS(PREFETCH) && mo->prefetch > OBJFS_PREFETCH_MAX) {
		fprintf(stderr, "objfs-mount: -o prefetch: at most %d\n",
			OBJFS_PREFETCH_MAX);
		return EINVAL;
	}
	if (HAS(PREFETCH))
		s->fo.prefetch = (unsigned)mo->prefetch;
	if (HAS(UPLOAD_DELAY) && mo->upload_delay > 60) {
		fprintf(stderr, "objfs-mount: -o upload_delay: at most 60\n");
		return EINVAL;
	}
	if (HAS(UPLOAD_DELAY))
		s->fo.upload_delay = mo->upload_delay;
	if (HAS(UPLOAD_PARALLEL))
		s->fo.upload_parallel = mo->upload_parallel ? (unsigned)mo->upload_parallel : 1;
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
	if (HAS(THREADS))
		s->fo.threads = mo->threads ? (unsigned)mo->threads : 1;
	if (HAS(SPOOL_DIR))
		s->fo.spool_dir = mo->spool_dir;
	s->fo.cache_dir = HAS(CACHE_DIR) ? mo->cache_dir : NULL;
	if (HAS(CACHE_SIZE))
		s->fo.cache_size = mo->cache_size;
	if (HAS(SPOOL_LIMIT))
		s->fo.spool_limit = mo->spool_limit;
	s->fo.read_only = HAS(RO) && mo->ro;
	s->fo.xattrs = HAS(XATTRS);
	if (HAS(READY_FD))
		s->ready_fd = (int)mo->ready_fd;
	if (HAS(RESUME) && HAS(NORESUME)) {
		fprintf(stderr, "objfs-mount: -o resume and noresume: one or the "
			"other\n");
		return EINVAL;
	}
	/* on unless -o noresume (issue 29): any one process may die */
	s->resume = !HAS(NORESUME);
	s->resume_asked = HAS(RESUME);
	s->fo.crash_at = HAS(CRASH_AT) ? mo->crash_at : NULL;
	s->user_resend = HAS(USER_RESEND);
	s->state_dir = HAS(STATE_DIR) ? mo->state_dir : NULL;
	s->metrics = true;
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
	if (HAS(MAX_CONNECTIONS))
		s->sc.s3.max_connections = (unsigned)mo->max_connections;
	/* Ride through store outages up to retry_timeout (backend.h). */
	s->sc.retry.max_attempts = OBJFS_RETRY_UNLIMITED;
	if (HAS(RETRIES) && mo->retries > 0 &&
	    mo->retries < OBJFS_RETRY_UNLIMITED)
		s->sc.retry.max_attempts = (unsigned)mo->retries;
	if (HAS(RETRY_TIMEOUT)) {
		if (mo->retry_timeout > 86400) {
			fprintf(stderr, "objfs-mount: -o retry_timeout: over a "
				"day\n");
			return EINVAL;
		}
		s->sc.retry.max_total_ms = mo->retry_timeout > 0 ?
			(unsigned)(mo->retry_timeout * 1000) : 1;
	}
	s->sc.hedge.ceiling_ms = 500;
	if (HAS(HEDGE_AFTER)) {
		if (mo->hedge_after > 3600) {
			fprintf(stderr, "objfs-mount: -o hedge_after: over an "
				"hour\n");
			return EINVAL;
		}
		s->sc.hedge.ceiling_ms = (unsigned)(mo->hedge_after * 1000);
	}
	s->sc.delete_delay_ms = 20;
	if (HAS(DELETE_DELAY)) {
		if (mo->delete_delay > 60) {
			fprintf(stderr, "objfs-mount: -o delete_delay: over a "
				"minute\n");
			return EINVAL;
		}
		s->sc.delete_delay_ms = (unsigned)(mo->delete_delay * 1000 + 0.5);
		if (mo->delete_delay > 0 && s->sc.delete_delay_ms == 0)
			s->sc.delete_delay_ms = 1;
	}
	if (HAS(STALL_TIMEOUT)) {
		if (mo->stall_timeout > 3600) {
			fprintf(stderr, "objfs-mount: -o stall_timeout: over an "
				"hour\n");
			return EINVAL;
		}
		s->sc.s3.stall_timeout_ms = mo->stall_timeout > 0 ?
			(long)(mo->stall_timeout * 1000) : 1;
	}

	s->sc.url = c->source;
	/* the connection: -o first; the AWS settings (environment, profile)
	 * fill in the rest once the chain has run, below */
	if (objfs_s3_conn_from_mount_opts(&s->conn, mo) != 0) {
		fprintf(stderr, "objfs-mount: -o endpoint, region or ca_file: too long\n");
		return EINVAL;
	}
	s->sc.s3.insecure_skip_verify = HAS(INSECURE_SKIP_VERIFY);
	s->sc.s3.unsigned_payload = HAS(UNSIGNED_PAYLOAD);
	s->sc.s3.signed_payload = HAS(SIGNED_PAYLOAD);
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
	if (HAS(CREDS_REFRESH))
		s->sc.s3.creds_refresh_s = mo->creds_refresh;
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

/* The data of files that could never be saved is kept in the spool
 * directory (fs/spool.h), for unsaved_keep (7 days by default): older
 * kept files, of this or any earlier mount using the directory, go now. */
#define UNSAVED_KEEP_DEFAULT (7 * 24 * 3600.0)
static void expire_unsaved(const struct settings *s,
			   const struct objfs_mount_opts *mo, struct objfs_log *log)
{
	const char *dir = s->fo.spool_dir != NULL ? s->fo.spool_dir : "/var/tmp";
	double keep = objfs_mount_opts_has(mo, OBJFS_MOPT_UNSAVED_KEEP) ?
		mo->unsaved_keep : UNSAVED_KEEP_DEFAULT;
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
	struct objfs_store *store = NULL;
	struct objfs_fs *fs = NULL;
	struct objfs_log *log = NULL;
	struct objfs_resume *rs = NULL;
	struct objfs_metrics *reg = NULL;
	struct objfs_metrics_server *msrv = NULL;
	char state_dir[4096], metrics_dir[4096];
	bool successor = false, by_signal = false, ended = false, serving = false;
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
	/* Detached, stderr goes nowhere: the log moves to log_file= or
	 * syslog once the process detaches (errors before that reach the
	 * terminal). */
	if (objfs_mount_opts_has(&c.mo, OBJFS_MOPT_LOG_FILE)) {
		log_fd = open(c.mo.log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
		if (log_fd < 0) {
			objfs_error(log, "mount", "log_file=%s: %s", c.mo.log_file,
				    objfs_strerror(errno));
			goto out;
		}
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
	/* the store copied what it needs */
	objfs_creds_release(&s.creds);
	if (err != 0) {
		objfs_log_cause(log, "mount", err, "opening %s: %s", c.source,
				objfs_strerror(err));
		goto out;
	}
	/* Refuse a store that does not answer or a bucket that does not
	 * exist now, naming the cause, rather than fail writes later. */
	err = objfs_store_probe(store, NULL);
	if (err != 0) {
		char why[512];

		/* the cause, for a supervisor reading the log */
		objfs_log_cause(log, "mount", err, "cannot mount %s: %s%s", c.source,
				err == ENOENT ? "the bucket does not exist: " : "",
				objfs_store_error_text(err, why, sizeof(why)));
		goto out;
	}
	expire_unsaved(&s, &c.mo, log);
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
