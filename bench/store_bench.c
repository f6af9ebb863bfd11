/*
 * store_bench - upload and download one object through the backend stack
 * (prefix -> retry -> s3) and print the throughput.
 *
 *   store_bench [-s MiB] [-p part_MiB] [-j threads] [-u]
 *
 * The server comes from OBJFS_TEST_S3_ENDPOINT, _REGION, _BUCKET,
 * _ACCESS_KEY and _SECRET_KEY (bench/backend.sh starts a Swift and sets
 * them).  Upload: objfs_store_upload with `threads` parallel parts.
 * Download: `threads` workers doing ranged GETs of part size into one
 * buffer.  The downloaded bytes are compared with what was sent (outside the
 * timed part).  -u sends UNSIGNED-PAYLOAD instead of hashing each part.
 * Output: one line per phase, "upload|download MiB/s", parseable.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/errors.h"

struct dl {
	struct objfs_store *s;
	const char *key;
	char *buf;
	uint64_t size;
	uint64_t part;
	pthread_mutex_t mu;
	uint64_t next;          /* protected by mu */
	int err;                /* protected by mu */
};

struct at_sink {
	char *base;
	uint64_t cap;
};

static int at_write(void *arg, uint64_t off, const void *data, size_t n)
{
	struct at_sink *a = arg;

	if (off > a->cap || n > a->cap - off)
		return EFBIG;
	memcpy(a->base + off, data, n);
	return 0;
}

static void *dl_worker(void *arg)
{
	struct dl *d = arg;

	for (;;) {
		struct objfs_get_opts go = OBJFS_GET_ALL;
		struct at_sink as;
		struct objfs_sink sink = { at_write, &as };
		uint64_t off;
		int err;

		pthread_mutex_lock(&d->mu);
		off = d->next;
		if (off >= d->size || d->err != 0) {
			pthread_mutex_unlock(&d->mu);
			break;
		}
		d->next += d->part;
		pthread_mutex_unlock(&d->mu);
		go.off = off;
		go.len = d->size - off < d->part ? d->size - off : d->part;
		as.base = d->buf + off;
		as.cap = go.len;
		err = objfs_store_get(d->s, d->key, &go, &sink, NULL);
		if (err != 0) {
			pthread_mutex_lock(&d->mu);
			if (d->err == 0)
				d->err = err;
			pthread_mutex_unlock(&d->mu);
			break;
		}
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || v[0] == '\0') {
		fprintf(stderr, "store_bench: %s is not set\n", name);
		return NULL;
	}
	return v;
}

int main(int argc, char **argv)
{
	uint64_t size_mib = 256, part_mib = 16, size, i, x;
	unsigned threads = 4;
	bool unsigned_payload = false;
	struct objfs_store_config cfg;
	struct objfs_store *s = NULL;
	struct objfs_source src;
	struct dl d;
	pthread_t *t = NULL;
	char url[512];
	char *data = NULL, *back = NULL;
	double t0, up, down;
	int opt, err, rc = 1;
	unsigned j;

	for (;;) {
		opt = getopt(argc, argv, "s:p:j:u");
		if (opt == -1)
			break;
		switch (opt) {
		case 's': size_mib = strtoull(optarg, NULL, 10); break;
		case 'p': part_mib = strtoull(optarg, NULL, 10); break;
		case 'j': threads = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'u': unsigned_payload = true; break;
		default:
			fprintf(stderr, "usage: %s [-s MiB] [-p part_MiB] "
				"[-j threads] [-u]\n", argv[0]);
			return 2;
		}
	}
	if (size_mib == 0 || part_mib < 5 || threads == 0 || threads > 64)
		return 2;
	memset(&cfg, 0, sizeof(cfg));
	cfg.s3.endpoint = env("OBJFS_TEST_S3_ENDPOINT");
	cfg.s3.region = getenv("OBJFS_TEST_S3_REGION");
	cfg.s3.access_key = env("OBJFS_TEST_S3_ACCESS_KEY");
	cfg.s3.secret_key = env("OBJFS_TEST_S3_SECRET_KEY");
	if (env("OBJFS_TEST_S3_BUCKET") == NULL || cfg.s3.endpoint == NULL ||
	    cfg.s3.access_key == NULL || cfg.s3.secret_key == NULL)
		return 2;
	snprintf(url, sizeof(url), "s3://%s/bench",
		 getenv("OBJFS_TEST_S3_BUCKET"));
	cfg.url = url;
	cfg.s3.path_style = true;
	cfg.s3.unsigned_payload = unsigned_payload;
	cfg.s3.max_connections = threads;

	size = size_mib << 20;
	data = malloc(size);
	back = malloc(size);
	t = calloc(threads, sizeof(*t));
	if (data == NULL || back == NULL || t == NULL)
		goto out;
	/* Incompressible, reproducible bytes (xorshift64). */
	for (i = 0, x = 88172645463325252ULL; i < size; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(data + i, &x, 8);
	}
	memset(back, 0, size);

	err = objfs_store_stack_create(&cfg, NULL, &s);
	if (err != 0) {
		fprintf(stderr, "store_bench: stack: %s\n", objfs_strerror(err));
		goto out;
	}
	objfs_source_mem(&src, data, size);
	t0 = now_s();
	err = objfs_store_upload(s, "obj", &src, NULL, part_mib << 20, threads,
				 NULL);
	up = now_s() - t0;
	if (err != 0) {
		fprintf(stderr, "store_bench: upload: %s\n",
			objfs_strerror(err));
		goto out;
	}

	memset(&d, 0, sizeof(d));
	d.s = s;
	d.key = "obj";
	d.buf = back;
	d.size = size;
	d.part = part_mib << 20;
	pthread_mutex_init(&d.mu, NULL);
	t0 = now_s();
	for (j = 0; j < threads; j++)
		pthread_create(&t[j], NULL, dl_worker, &d);
	for (j = 0; j < threads; j++)
		pthread_join(t[j], NULL);
	down = now_s() - t0;
	pthread_mutex_destroy(&d.mu);
	if (d.err != 0) {
		fprintf(stderr, "store_bench: download: %s\n",
			objfs_strerror(d.err));
		goto out;
	}
	if (memcmp(data, back, size) != 0) {
		fprintf(stderr, "store_bench: downloaded bytes differ\n");
		goto out;
	}
	(void)objfs_store_del(s, "obj");
	printf("upload %.1f\n", (double)size_mib / up);
	printf("download %.1f\n", (double)size_mib / down);
	rc = 0;
out:
	objfs_store_destroy(s);
	free(t);
	free(data);
	free(back);
	return rc;
}
