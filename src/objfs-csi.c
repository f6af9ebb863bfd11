/*
 * objfs-csi - the objfs CSI plugin: parses its command line, builds the
 * default object store and the driver, serves gRPC until SIGTERM/SIGINT.
 *
 * Exit codes: 0 after a clean shutdown (or a successful --dry-run), 1 when
 * serving fails, 2 for a bad command line or configuration.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/creds.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/mountopts.h"
#include "common/metrics.h"
#include "common/metrics_http.h"
#include "csi/driver.h"
#include "csi/mounter.h"
#include "csi/server.h"

#define SHUTDOWN_GRACE_MS 10000

struct options {
	const char *endpoint;
	const char *node_id;
	const char *mode;
	const char *log_level;
	const char *state_dir;
	const char *kubelet_dir;
	const char *store_url;
	const char *s3_endpoint;
	const char *s3_region;
	const char *s3_addressing;
	bool s3_path_style;             /* s3_addressing, parsed */
	const char *s3_ca_file;
	const char *credentials_file;
	const char *mount_program;
	const char *mount_runner;
	const char *metrics_address;
	unsigned mount_memory_mib;
	unsigned threads;
	int dry_run;
	int advertise_get_snapshot;
	/* derived */
	enum objfs_csi_mode mode_v;
	enum objfs_log_level level_v;
	char default_store[PATH_MAX + 8];
	char mount_program_buf[PATH_MAX];
	struct objfs_creds creds;
	struct objfs_aws_env aws;       /* the chain's settings and account */
};

static const char usage_text[] =
"Usage: objfs-csi --endpoint unix:///path/csi.sock [options]\n"
"\n"
"The objfs CSI plugin: serves the CSI Identity, Controller and Node services\n"
"for ReadWriteMany volumes kept in S3-compatible object storage.\n"
"\n"
"Options:\n"
"  --endpoint URL          CSI socket, unix:///abs/path.sock (env CSI_ENDPOINT)\n"
"  --mode MODE             controller, node or all (default all)\n"
"  --node-id ID            this node's name; required in node and all modes\n"
"                          (env NODE_ID)\n"
"  --log-level LEVEL       debug, info, warn or error (default info)\n"
"  --state-dir DIR         records of staged volumes and the embedded local\n"
"                          store (default /var/lib/objfs)\n"
"  --kubelet-dir DIR       node targets must lie under it (default\n"
"                          /var/lib/kubelet)\n"
"  --store URL             the default store: s3://BUCKET[/PREFIX] or\n"
"                          file:///DIR (default file://STATE_DIR/store)\n"
"  --s3-endpoint URL       S3 endpoint, http(s)://host[:port] (default:\n"
"                          AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the\n"
"                          profile's endpoint_url, else AWS,\n"
"                          https://s3.REGION.amazonaws.com, virtual-hosted)\n"
"  --s3-region REGION      S3 region (default: AWS_REGION,\n"
"                          AWS_DEFAULT_REGION, the profile's, us-east-1)\n"
"  --s3-addressing STYLE   path or virtual (default path)\n"
"  --s3-ca-file FILE       PEM bundle of CAs to trust for the endpoint\n"
"                          (default: AWS_CA_BUNDLE, the profile's ca_bundle)\n"
"  --credentials-file FILE S3 keys as key=value lines: access_key_id=,\n"
"                          secret_access_key=, session_token= (else the AWS\n"
"                          SDKs' chain: AWS_ACCESS_KEY_ID and\n"
"                          AWS_SECRET_ACCESS_KEY, the AWS_PROFILE profile\n"
"                          of ~/.aws/credentials and ~/.aws/config, web\n"
"                          identity, container credentials, EC2 instance\n"
"                          metadata: docs/credentials.md); never pass keys\n"
"                          as arguments\n"
"  --mount-program PATH    objfs-mount to run (default: beside objfs-csi)\n"
"  --mount-memory-mib N    memory bound of each mount process (default 64)\n"
"  --threads N             calls served at once (default 16)\n"
"  --metrics-address [ADDR:]PORT  serve Prometheus metrics on\n"
"                          http://ADDR:PORT/metrics (ADDR 127.0.0.1 unless\n"
"                          given; 0.0.0.0 for every interface): CSI calls,\n"
"                          the store and, on a node, every mount's metrics\n"
"                          under its volume's labels (default: none)\n"
"  --advertise-get-snapshot  list GET_SNAPSHOT in ControllerGetCapabilities\n"
"                          (GetSnapshot is served either way; off by default\n"
"                          because csi-sanity and older sidecars reject it)\n"
"  --dry-run               check the arguments and configuration, then exit\n"
"  --help                  show this help\n"
"  --version               show the version\n"
"\n"
"Environment (node):\n"
"  OBJFS_MOUNT_RUNNER      fork (default: mount processes double-forked in\n"
"                          their own session), host-systemd (transient\n"
"                          units of the host's systemd via /run/systemd:\n"
"                          they survive the plugin's container, MemoryMax\n"
"                          enforces --mount-memory-mib) or holder (the\n"
"                          node's objfs-holder starts and keeps every\n"
"                          mount: they survive the plugin's container; see\n"
"                          docs/kubernetes.md)\n"
"  OBJFS_MOUNT_RUNTIME_DIR with host-systemd: the host directory holding\n"
"                          objfs-mount.sh (default --mount-program)\n"
"  OBJFS_HOLDER_SOCKET     with holder: its socket (default\n"
"                          STATE_DIR/holder.sock)\n";

enum {
	OPT_ENDPOINT = 256, OPT_NODE_ID, OPT_MODE, OPT_LOG_LEVEL, OPT_STATE_DIR,
	OPT_KUBELET_DIR, OPT_STORE, OPT_S3_ENDPOINT, OPT_S3_REGION,
	OPT_S3_ADDRESSING, OPT_S3_CA_FILE, OPT_CREDENTIALS_FILE,
	OPT_MOUNT_PROGRAM, OPT_MOUNT_MEMORY, OPT_THREADS, OPT_DRY_RUN,
	OPT_GET_SNAPSHOT, OPT_METRICS_ADDRESS,
	OPT_HELP, OPT_VERSION,
};

static const struct option long_options[] = {
	{ "endpoint", required_argument, NULL, OPT_ENDPOINT },
	{ "node-id", required_argument, NULL, OPT_NODE_ID },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "kubelet-dir", required_argument, NULL, OPT_KUBELET_DIR },
	{ "store", required_argument, NULL, OPT_STORE },
	{ "s3-endpoint", required_argument, NULL, OPT_S3_ENDPOINT },
	{ "s3-region", required_argument, NULL, OPT_S3_REGION },
	{ "s3-addressing", required_argument, NULL, OPT_S3_ADDRESSING },
	{ "s3-ca-file", required_argument, NULL, OPT_S3_CA_FILE },
	{ "credentials-file", required_argument, NULL, OPT_CREDENTIALS_FILE },
	{ "mount-program", required_argument, NULL, OPT_MOUNT_PROGRAM },
	{ "mount-memory-mib", required_argument, NULL, OPT_MOUNT_MEMORY },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "metrics-address", required_argument, NULL, OPT_METRICS_ADDRESS },
	{ "advertise-get-snapshot", no_argument, NULL, OPT_GET_SNAPSHOT },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* Prints the one-line error for a bad command line and returns 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("objfs-csi: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see objfs-csi --help)\n", stderr);
	return 2;
}

static int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' ||
	    v < min || v > max)
		return EINVAL;
	*out = (unsigned)v;
	return 0;
}

static void default_mount_program(struct options *o)
{
	char self[PATH_MAX - 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	o->mount_program = "objfs-mount";
	if (n <= 0)
		return;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash == NULL)
		return;
	*slash = '\0';
	snprintf(o->mount_program_buf, sizeof(o->mount_program_buf),
		 "%s/objfs-mount", self);
	if (access(o->mount_program_buf, X_OK) == 0)
		o->mount_program = o->mount_program_buf;
}

/* Returns 0 to go on, or the exit code. */
static int parse_args(int argc, char **argv, struct options *o)
{
	char *scheme = NULL, *bucket = NULL, *prefix = NULL;
	struct objfs_creds chain = OBJFS_CREDS_INIT;
	char why[512];
	int c, err, line;
	int rc = 0;

	o->mode = "all";
	o->log_level = "info";
	o->state_dir = "/var/lib/objfs";
	o->kubelet_dir = "/var/lib/kubelet";
	o->s3_addressing = "path";
	o->mount_memory_mib = 64;
	o->endpoint = getenv("CSI_ENDPOINT");
	o->node_id = getenv("NODE_ID");

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		switch (c) {
		case OPT_ENDPOINT: o->endpoint = optarg; break;
		case OPT_NODE_ID: o->node_id = optarg; break;
		case OPT_MODE: o->mode = optarg; break;
		case OPT_LOG_LEVEL: o->log_level = optarg; break;
		case OPT_STATE_DIR: o->state_dir = optarg; break;
		case OPT_KUBELET_DIR: o->kubelet_dir = optarg; break;
		case OPT_STORE: o->store_url = optarg; break;
		case OPT_S3_ENDPOINT: o->s3_endpoint = optarg; break;
		case OPT_S3_REGION: o->s3_region = optarg; break;
		case OPT_S3_ADDRESSING: o->s3_addressing = optarg; break;
		case OPT_S3_CA_FILE: o->s3_ca_file = optarg; break;
		case OPT_CREDENTIALS_FILE: o->credentials_file = optarg; break;
		case OPT_MOUNT_PROGRAM: o->mount_program = optarg; break;
		case OPT_MOUNT_MEMORY:
			if (parse_uint(optarg, 8, 65536, &o->mount_memory_mib) != 0)
				return usage_error("--mount-memory-mib wants a number of MiB from 8 to 65536, not \"%s\"", optarg);
			break;
		case OPT_THREADS:
			if (parse_uint(optarg, 2, 256, &o->threads) != 0)
				return usage_error("--threads wants a number from 2 to 256, not \"%s\"", optarg);
			break;
		case OPT_DRY_RUN: o->dry_run = 1; break;
		case OPT_GET_SNAPSHOT: o->advertise_get_snapshot = 1; break;
		case OPT_METRICS_ADDRESS: {
			char host[256], port[8];

			if (objfs_metrics_addr_parse(optarg, host, sizeof(host), port,
						     sizeof(port)) != 0)
				return usage_error("--metrics-address wants [ADDR:]PORT, not \"%s\"",
						   optarg);
			o->metrics_address = optarg;
			break;
		}
		case OPT_HELP:
			fputs(usage_text, stdout);
			return -1;
		case OPT_VERSION:
			printf("objfs-csi %s (CSI v1.12, driver %s)\n", PACKAGE_VERSION,
			       OBJFS_CSI_DRIVER_NAME);
			return -1;
		case ':':
			return usage_error("option %s needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument \"%s\"", argv[optind]);

	if (o->endpoint == NULL || o->endpoint[0] == '\0')
		return usage_error("--endpoint is required (or set CSI_ENDPOINT)");
	{
		char *path = NULL;

		if (objfs_grpc_endpoint_path(o->endpoint, &path) != 0)
			return usage_error("--endpoint \"%s\" is not unix:///absolute/path", o->endpoint);
		free(path);
	}
	if (objfs_csi_mode_parse(o->mode, &o->mode_v) != 0)
		return usage_error("--mode must be controller, node or all, not \"%s\"", o->mode);
	if ((o->mode_v & OBJFS_CSI_MODE_NODE) != 0 &&
	    (o->node_id == NULL || o->node_id[0] == '\0'))
		return usage_error("--node-id is required in %s mode (or set NODE_ID)", o->mode);
	if (objfs_log_parse_level(o->log_level, &o->level_v) != 0)
		return usage_error("--log-level must be debug, info, warn or error, not \"%s\"", o->log_level);
	if (o->state_dir[0] != '/')
		return usage_error("--state-dir \"%s\" must be an absolute path", o->state_dir);
	if (o->kubelet_dir[0] != '/')
		return usage_error("--kubelet-dir \"%s\" must be an absolute path", o->kubelet_dir);
	if (objfs_mount_opts_addressing_parse(o->s3_addressing, &o->s3_path_style) != 0)
		return usage_error("--s3-addressing must be path or virtual, not \"%s\"", o->s3_addressing);
	if (o->s3_ca_file != NULL && access(o->s3_ca_file, R_OK) != 0)
		return usage_error("--s3-ca-file %s cannot be read", o->s3_ca_file);
	if (o->s3_endpoint != NULL &&
	    strncmp(o->s3_endpoint, "http://", 7) != 0 &&
	    strncmp(o->s3_endpoint, "https://", 8) != 0)
		return usage_error("--s3-endpoint \"%s\" must start with http:// or https://", o->s3_endpoint);

	if (o->store_url == NULL) {
		snprintf(o->default_store, sizeof(o->default_store), "file://%s/store",
			 o->state_dir);
		o->store_url = o->default_store;
	}
	err = objfs_store_url_parse(o->store_url, &scheme, &bucket, &prefix);
	if (err != 0) {
		rc = usage_error("--store \"%s\" is not s3://BUCKET[/PREFIX] or file:///DIR", o->store_url);
		goto out;
	}
	if (o->credentials_file != NULL) {
		err = objfs_creds_load_file(o->credentials_file, &o->creds, &line);
		if (err == EINVAL) {
			fprintf(stderr, "objfs-csi: --credentials-file %s: line %d is not a known key=value (see objfs-csi --help)\n",
				o->credentials_file, line);
			rc = 2;
			goto out;
		} else if (err != 0) {
			fprintf(stderr, "objfs-csi: --credentials-file %s: %s (see objfs-csi --help)\n",
				o->credentials_file, objfs_strerror(err));
			rc = 2;
			goto out;
		}
	}
	if (objfs_creds_any(&o->creds)) {
		/* the file's source; the environment fills what it lacks */
		if (objfs_creds_load_env(&o->creds) != 0) {
			rc = 1;
			goto out;
		}
		err = objfs_creds_chain(&chain, &o->aws, NULL, NULL, 0);
		objfs_creds_release(&chain);
		o->aws.looked[0] = '\0';
	} else {
		/* the AWS SDKs' chain (common/creds.h) */
		err = objfs_creds_chain(&chain, &o->aws, NULL, why, sizeof(why));
		if (err == EINVAL) {
			rc = usage_error("credentials: %s", why);
			goto out;
		}
		objfs_creds_release(&o->creds);
		o->creds = chain;
	}
	if (err != 0 && err != EINVAL) {
		rc = 1;
		goto out;
	}
	if (o->s3_endpoint == NULL)
		o->s3_endpoint = o->aws.endpoint;
	if (o->s3_region == NULL)
		o->s3_region = o->aws.region;
	if (o->s3_ca_file == NULL)
		o->s3_ca_file = o->aws.ca_bundle;
	o->mount_runner = getenv("OBJFS_MOUNT_RUNNER");
	if (o->mount_runner != NULL && o->mount_runner[0] != '\0' &&
	    strcmp(o->mount_runner, "fork") != 0 &&
	    strcmp(o->mount_runner, "host-systemd") != 0 &&
	    strcmp(o->mount_runner, "holder") != 0) {
		rc = usage_error("OBJFS_MOUNT_RUNNER must be fork, host-systemd or holder, not \"%s\"",
				 o->mount_runner);
		goto out;
	}
	if (o->mount_program == NULL && o->mount_runner != NULL &&
	    strcmp(o->mount_runner, "host-systemd") == 0 &&
	    getenv("OBJFS_MOUNT_RUNTIME_DIR") != NULL) {
		snprintf(o->mount_program_buf, sizeof(o->mount_program_buf),
			 "%s/objfs-mount.sh", getenv("OBJFS_MOUNT_RUNTIME_DIR"));
		o->mount_program = o->mount_program_buf;
	}
	if (o->mount_program == NULL)
		default_mount_program(o);
out:
	free(scheme);
	free(bucket);
	free(prefix);
	return rc;
}

static int open_default_store(struct options *o, struct objfs_log *log,
			      struct objfs_metrics *reg, struct objfs_store **store)
{
	struct objfs_store_config sc;

	memset(&sc, 0, sizeof(sc));
	sc.metrics = reg;
	sc.url = o->store_url;
	sc.s3.endpoint = o->s3_endpoint;
	sc.s3.region = o->s3_region;
	sc.s3.path_style = o->s3_path_style;
	sc.s3.ca_file = o->s3_ca_file;
	sc.s3.access_key = o->creds.access_key;
	sc.s3.secret_key = o->creds.secret_key;
	sc.s3.session_token = o->creds.session_token;
	sc.s3.keyless = &o->creds;
	sc.s3.creds_looked = o->aws.looked[0] != '\0' ? o->aws.looked : NULL;
	return objfs_store_stack_create(&sc, log, store);
}

int main(int argc, char **argv)
{
	struct options o;
	struct objfs_csi_config cc;
	struct objfs_csi_mounter holder_mounter;
	char holder_sock[4096];
	struct objfs_grpc_server_config sc;
	struct objfs_log *log = NULL;
	struct objfs_store *store = NULL;
	struct objfs_csi *csi = NULL;
	struct objfs_grpc_server *srv = NULL;
	struct objfs_metrics *reg = NULL;
	struct objfs_metrics_server *msrv = NULL;
	char errbuf[512];
	sigset_t sigs;
	int sig = 0;
	int rc;
	int err;

	/* Block before any thread starts: gRPC's threads inherit the mask and
	 * main collects the signals with sigwait. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	memset(&o, 0, sizeof(o));
	rc = parse_args(argc, argv, &o);
	if (rc != 0) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}
	if (o.dry_run)
		goto out;

	log = objfs_log_create(STDERR_FILENO, o.level_v);
	if (log == NULL) {
		rc = 1;
		goto out;
	}
	if (o.metrics_address != NULL) {
		err = objfs_metrics_create(&reg);
		if (err == 0)
			err = objfs_metrics_add_process(reg);
		if (err != 0) {
			objfs_error(log, "csi", "metrics: %s", objfs_strerror(err));
			rc = 1;
			goto out;
		}
	}
	err = open_default_store(&o, log, reg, &store);
	if (err != 0) {
		objfs_error(log, "csi", "cannot open the default store %s: %s",
			    o.store_url, objfs_strerror(err));
		rc = 1;
		goto out;
	}

	memset(&cc, 0, sizeof(cc));
	cc.driver_name = OBJFS_CSI_DRIVER_NAME;
	cc.version = PACKAGE_VERSION;
	cc.mode = o.mode_v;
	cc.node_id = o.node_id;
	cc.state_dir = o.state_dir;
	cc.kubelet_dir = o.kubelet_dir;
	cc.mount_program = o.mount_program;
	cc.mount_memory_mib = o.mount_memory_mib;
	cc.advertise_get_snapshot = o.advertise_get_snapshot != 0;
	if (o.mount_runner != NULL && strcmp(o.mount_runner, "host-systemd") == 0)
		cc.mounter = objfs_csi_mounter_host_systemd();
	if (o.mount_runner != NULL && strcmp(o.mount_runner, "holder") == 0) {
		const char *hs = getenv("OBJFS_HOLDER_SOCKET");

		if (hs != NULL && hs[0] != '\0')
			snprintf(holder_sock, sizeof(holder_sock), "%s", hs);
		else
			snprintf(holder_sock, sizeof(holder_sock), "%s/holder.sock",
				 o.state_dir);
		objfs_csi_mounter_holder(&holder_mounter, holder_sock);
		cc.mounter = &holder_mounter;
		objfs_info(log, "csi", "mounts are kept by the objfs-holder on %s",
			   holder_sock);
	}
	cc.store.url = o.store_url;
	cc.store.s3.endpoint = o.s3_endpoint;
	cc.store.s3.region = o.s3_region;
	cc.store.s3.path_style = o.s3_path_style;
	cc.store.s3.ca_file = o.s3_ca_file;
	cc.store.s3.access_key = o.creds.access_key;
	cc.store.s3.secret_key = o.creds.secret_key;
	cc.store.s3.session_token = o.creds.session_token;
	cc.store.s3.keyless = &o.creds;     /* a role or container endpoint */
	cc.store.s3.creds_looked = o.aws.looked[0] != '\0' ? o.aws.looked : NULL;
	cc.store_open = objfs_store_stack_create;
	cc.metrics = reg;
	cc.store.metrics = reg;
	err = objfs_csi_create(&cc, store, log, &csi);
	store = NULL;
	if (err != 0) {
		objfs_error(log, "csi", "cannot create the driver: %s", objfs_strerror(err));
		rc = 1;
		goto out;
	}

	memset(&sc, 0, sizeof(sc));
	sc.endpoint = o.endpoint;
	sc.threads = o.threads;
	sc.methods = csi->methods;
	sc.n_methods = csi->n_methods;
	sc.ctx = csi;
	sc.log = log;
	sc.observe = reg != NULL ? objfs_csi_observe_call : NULL;
	sc.observe_arg = csi;
	err = objfs_grpc_server_start(&sc, &srv, errbuf, sizeof(errbuf));
	if (err != 0) {
		objfs_error(log, "csi", "%s", errbuf);
		rc = 1;
		goto out;
	}
	if (reg != NULL) {
		struct objfs_metrics_server_config mc = {
			.tcp = o.metrics_address, .render = objfs_csi_metrics_render,
			.arg = csi, .log = log,
		};

		err = objfs_metrics_server_start(&mc, &msrv);
		if (err != 0) {
			rc = 1;
			goto out;
		}
		objfs_info(log, "csi", "metrics on http://%s/metrics", o.metrics_address);
	}
	objfs_info(log, "csi", "objfs-csi %s started: driver %s, mode %s, node %s, store %s",
		   PACKAGE_VERSION, OBJFS_CSI_DRIVER_NAME, o.mode,
		   o.node_id != NULL ? o.node_id : "-", o.store_url);

	if (sigwait(&sigs, &sig) != 0)
		sig = 0;
	objfs_info(log, "csi", "received %s, shutting down",
		   sig == SIGINT ? "SIGINT" : "SIGTERM");
	objfs_grpc_server_stop(srv, SHUTDOWN_GRACE_MS);
	srv = NULL;
	objfs_info(log, "csi", "stopped");
out:
	objfs_grpc_server_stop(srv, 0);
	/* renders through the driver */
	objfs_metrics_server_stop(msrv);
	objfs_csi_destroy(csi);
	objfs_store_destroy(store);
	objfs_metrics_destroy(reg);
	objfs_creds_release(&o.creds);
	objfs_aws_env_release(&o.aws);
	objfs_log_destroy(log);
	return rc;
}
