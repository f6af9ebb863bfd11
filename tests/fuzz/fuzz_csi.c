/*
 * fuzz_csi.c - every CSI method of objfs-csi (csi/driver.c's table: the
 * Identity, Controller and Node services) fed fuzzed request messages
 * through the transport-free dispatcher: protobuf-c unpacks the bytes as
 * the method's request type, then the handler runs, with the default store
 * a local store, bucket stores a local store too, and a fake mounter (no
 * process is started, nothing is mounted).
 *
 * Input: up to 4 calls, each a method byte (an index into the method
 * table), a 16-bit big-endian length and that many bytes of request; so a
 * CreateVolume can be followed by a NodeStageVolume of the id it made
 * (tests/fuzz/make_csi_seeds.py writes such sequences).  Every input
 * starts from an empty state directory and store.  The root
 * /tmp/objfs-fuzz-csi-XXXXXX in an input stands for this process's.
 * OBJFS_FUZZ_VERBOSE=1 prints each call's method, code and message.
 *
 * Properties: every call returns a gRPC status code (0..16), the same in
 * the status; a failure has a message and no response; no message holds
 * the plugin's secret (unless the request itself carried it); every path the node hands the mounter (staging,
 * targets, work and log files) lies under the kubelet or state directory,
 * and nothing is created in the test's root outside the directories it
 * made.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/creds.h"
#include "csi/driver.h"
#include "csi/mounter.h"
#include "csi/rpc.h"
#include "fuzz.h"

#define SECRET "FUZZPLUGINSECRETq9w8e7"
#define MAX_MOUNTS 32
/* make_csi_seeds.py writes paths under this root; mkdtemp() makes one of
 * the same length */
#define PLACEHOLDER "/tmp/objfs-fuzz-csi-XXXXXX"

static char root[64];
static char kubelet[128], state[128], store_dir[128], bucket_dir[128];

struct fake_mounter {
	pthread_mutex_t lock;
	char mounts[MAX_MOUNTS][PATH_MAX];
	unsigned long devs[MAX_MOUNTS];
	int n;
	pid_t next_pid;
	bool alive[64];
};

static struct fake_mounter fm = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return path != NULL && strncmp(path, dir, n) == 0 && path[n] == '/' &&
	       strstr(path + n, "/../") == NULL && strstr(path + n, "/./") == NULL;
}

static void check_path(const char *path)
{
	FUZZ_CHECK(under(path, kubelet));
}

static int find(const char *path)
{
	int i;

	for (i = fm.n - 1; i >= 0; i--)
		if (strcmp(fm.mounts[i], path) == 0)
			return i;
	return -1;
}

static int add(const char *path, unsigned long dev)
{
	if (fm.n >= MAX_MOUNTS || strlen(path) >= PATH_MAX)
		return ENOSPC;
	strcpy(fm.mounts[fm.n], path);
	fm.devs[fm.n++] = dev;
	return 0;
}

static int f_start(void *ctx, const struct objfs_csi_mount_spec *spec,
		   struct objfs_csi_proc *out, char *msg, size_t cap)
{
	int err;

	check_path(spec->mountpoint);
	FUZZ_CHECK(spec->work_dir == NULL || under(spec->work_dir, state));
	FUZZ_CHECK(spec->log_path == NULL || under(spec->log_path, state));
	FUZZ_CHECK(spec->options != NULL && strstr(spec->options, SECRET) == NULL);
	pthread_mutex_lock(&fm.lock);
	err = add(spec->mountpoint, 40 + (unsigned long)fm.n);
	if (err == 0) {
		out->pid = fm.next_pid++;
		out->start = 77;
		out->unit[0] = '\0';
		if (out->pid < 64)
			fm.alive[out->pid] = true;
	} else {
		snprintf(msg, cap, "fake mounter: too many mounts");
	}
	pthread_mutex_unlock(&fm.lock);
	return err;
}

static bool f_alive(void *ctx, const struct objfs_csi_proc *p)
{
	bool a;

	pthread_mutex_lock(&fm.lock);
	a = p->pid > 0 && p->pid < 64 && fm.alive[p->pid] && p->start == 77;
	pthread_mutex_unlock(&fm.lock);
	return a;
}

static int f_stop(void *ctx, const struct objfs_csi_proc *p, unsigned grace_ms)
{
	pthread_mutex_lock(&fm.lock);
	if (p->pid > 0 && p->pid < 64)
		fm.alive[p->pid] = false;
	pthread_mutex_unlock(&fm.lock);
	return 0;
}

static int f_bind(void *ctx, const char *src, const char *dst, bool readonly)
{
	struct stat sb;
	int i, err;

	check_path(src);
	check_path(dst);
	pthread_mutex_lock(&fm.lock);
	i = find(src);
	if (i < 0)
		err = ENOENT;
	else if (stat(dst, &sb) != 0 || !S_ISDIR(sb.st_mode))
		err = ENOENT;
	else
		err = add(dst, fm.devs[i]);
	pthread_mutex_unlock(&fm.lock);
	return err;
}

static int f_unmount(void *ctx, const char *path, bool lazy)
{
	int i;

	check_path(path);
	pthread_mutex_lock(&fm.lock);
	i = find(path);
	if (i >= 0) {
		memmove(fm.mounts[i], fm.mounts[i + 1], (size_t)(fm.n - i - 1) * PATH_MAX);
		memmove(&fm.devs[i], &fm.devs[i + 1], (size_t)(fm.n - i - 1) * sizeof(fm.devs[0]));
		fm.n--;
	}
	pthread_mutex_unlock(&fm.lock);
	return i >= 0 ? 0 : EINVAL;
}

static void f_abort(void *ctx, const char *path, unsigned long dev)
{
}

static int f_mount_info(void *ctx, const char *path, struct objfs_csi_mount_info *out)
{
	int i;

	check_path(path);
	pthread_mutex_lock(&fm.lock);
	i = find(path);
	if (i >= 0) {
		out->fuse = true;
		out->dev = fm.devs[i];
	}
	pthread_mutex_unlock(&fm.lock);
	return i >= 0 ? 0 : ENOENT;
}

static int f_statfs(void *ctx, const char *path, unsigned timeout_ms, struct statvfs *out)
{
	check_path(path);
	memset(out, 0, sizeof(*out));
	out->f_frsize = out->f_bsize = 4096;
	out->f_blocks = 1000;
	out->f_bfree = out->f_bavail = 500;
	out->f_files = 100;
	out->f_ffree = out->f_favail = 50;
	return 0;
}

static const struct objfs_csi_mounter_ops fake_ops = {
	.start = f_start, .alive = f_alive, .stop = f_stop, .bind = f_bind,
	.unmount = f_unmount, .abort_conn = f_abort, .mount_info = f_mount_info,
	.statfs = f_statfs,
};

/* Every bucket a request names is the one local store bucket_dir (the
 * fake never builds a path from a request). */
static int f_store_open(const struct objfs_store_config *cfg, struct objfs_log *log,
			struct objfs_store **out)
{
	*out = NULL;
	if (cfg->url == NULL || strncmp(cfg->url, "s3://", 5) != 0)
		return ECONNREFUSED;
	return objfs_local_store_create(bucket_dir, log, out);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path) == 0 ? 0 : errno;
}

static void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void remove_root(void)
{
	if (root[0] != '\0')
		rm_rf(root);
}

static void init_once(void)
{
	if (root[0] != '\0')
		return;
	snprintf(root, sizeof(root), PLACEHOLDER);
	if (mkdtemp(root) == NULL)
		abort();
	atexit(remove_root);
	snprintf(kubelet, sizeof(kubelet), "%s/kubelet", root);
	snprintf(state, sizeof(state), "%s/state", root);
	snprintf(store_dir, sizeof(store_dir), "%s/store", root);
	snprintf(bucket_dir, sizeof(bucket_dir), "%s/bucket", root);
}

/* Only the directories made here may exist in root. */
static void check_root(void)
{
	DIR *d = opendir(root);
	struct dirent *e;

	FUZZ_CHECK(d != NULL);
	while ((e = readdir(d)) != NULL) {
		const char *n = e->d_name;

		FUZZ_CHECK(strcmp(n, ".") == 0 || strcmp(n, "..") == 0 ||
			   strcmp(n, "kubelet") == 0 || strcmp(n, "state") == 0 ||
			   strcmp(n, "store") == 0 || strcmp(n, "bucket") == 0);
	}
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct objfs_csi_mounter mounter = { &fake_ops, NULL, 0, 1000, 10, 100 };
	struct objfs_csi_config cfg;
	struct objfs_store *store = NULL;
	struct objfs_csi *csi = NULL;
	size_t pos = 0;
	int calls;
	uint8_t *input;

	if (size > 16384)
		return 0;
	init_once();
	/* the seeds' placeholder root becomes ours (the same length) */
	input = malloc(size > 0 ? size : 1);
	if (input == NULL)
		abort();
	memcpy(input, data, size);
	{
		size_t pl = strlen(PLACEHOLDER), i;

		for (i = 0; i + pl <= size; i++)
			if (memcmp(input + i, PLACEHOLDER, pl) == 0)
				memcpy(input + i, root, pl);
	}
	data = input;
	rm_rf(kubelet);
	rm_rf(state);
	rm_rf(store_dir);
	rm_rf(bucket_dir);
	if (mkdir(kubelet, 0755) != 0 || mkdir(state, 0700) != 0)
		abort();
	/* what the kubelet makes: the staging directory, a target's parent */
	{
		static const char *const dirs[] = {
			"plugins", "plugins/kubernetes.io", "plugins/kubernetes.io/csi",
			"plugins/kubernetes.io/csi/objfs.csi.io",
			"plugins/kubernetes.io/csi/objfs.csi.io/abc",
			"plugins/kubernetes.io/csi/objfs.csi.io/abc/globalmount",
			"pods", "pods/p1", "pods/p1/volumes",
			"pods/p1/volumes/kubernetes.io~csi",
			"pods/p1/volumes/kubernetes.io~csi/pv",
		};
		char dir[PATH_MAX];
		size_t i;

		for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
			snprintf(dir, sizeof(dir), "%s/%s", kubelet, dirs[i]);
			if (mkdir(dir, 0755) != 0)
				abort();
		}
	}
	memset(&fm.mounts, 0, sizeof(fm.mounts));
	fm.n = 0;
	fm.next_pid = 2;
	memset(fm.alive, 0, sizeof(fm.alive));

	memset(&cfg, 0, sizeof(cfg));
	cfg.driver_name = OBJFS_CSI_DRIVER_NAME;
	cfg.version = "0.0.0-fuzz";
	cfg.mode = OBJFS_CSI_MODE_ALL;
	cfg.node_id = "node-1";
	cfg.state_dir = state;
	cfg.kubelet_dir = kubelet;
	cfg.mount_program = "/nonexistent/objfs-mount";
	cfg.mount_memory_mib = 64;
	cfg.mounter = &mounter;
	cfg.store.url = "s3://defbucket/base";
	cfg.store.s3.endpoint = "http://127.0.0.1:9";
	cfg.store.s3.region = "us-east-1";
	cfg.store.s3.path_style = true;
	cfg.store.s3.access_key = "AKIDFUZZ";
	cfg.store.s3.secret_key = SECRET;
	cfg.store_open = f_store_open;
	if (objfs_local_store_create(store_dir, NULL, &store) != 0)
		abort();
	if (objfs_csi_create(&cfg, store, NULL, &csi) != 0)
		abort();

	for (calls = 0; calls < 4 && pos + 3 <= size; calls++) {
		const struct objfs_rpc_method *m = &csi->methods[data[pos] % csi->n_methods];
		size_t len = (size_t)data[pos + 1] << 8 | data[pos + 2];
		struct objfs_rpc_status st;
		enum objfs_rpc_code code;
		uint8_t *out = NULL, *body;
		size_t out_len = 0;

		pos += 3;
		if (len > size - pos)
			len = size - pos;
		/* an exact copy, so that reads past the message are caught */
		body = malloc(len > 0 ? len : 1);
		if (body == NULL)
			abort();
		memcpy(body, data + pos, len);
		pos += len;
		memset(&st, 0, sizeof(st));
		code = objfs_rpc_dispatch(csi->methods, csi->n_methods, csi, m->path,
					  body, len, &out, &out_len, &st);
		free(body);
		if (getenv("OBJFS_FUZZ_VERBOSE") != NULL)
			fprintf(stderr, "%s: %s %s\n", m->path, objfs_rpc_code_name(code), st.msg);
		FUZZ_CHECK((int)code >= 0 && (int)code <= 16);
		FUZZ_CHECK(st.code == code);
		FUZZ_CHECK(memchr(st.msg, '\0', sizeof(st.msg)) != NULL);
		/* a message may quote the request, never the plugin's config */
		if (memmem(data, size, SECRET, strlen(SECRET)) == NULL)
			FUZZ_CHECK(strstr(st.msg, SECRET) == NULL);
		if (code != OBJFS_RPC_OK) {
			FUZZ_CHECK(out == NULL);
			FUZZ_CHECK(st.msg[0] != '\0');
		}
		free(out);
	}
	objfs_csi_destroy(csi);
	check_root();
	free(input);
	return 0;
}
