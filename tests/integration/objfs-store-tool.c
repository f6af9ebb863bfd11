/*
 * objfs-store-tool - direct store access for the integration tests and
 * benchmarks (checks what the filesystem left in the store, plants objects
 * "another tool" wrote, writes volume records).
 *
 *   objfs-store-tool URL get KEY          object bytes to stdout
 *   objfs-store-tool URL put KEY [N=V..]  stdin to KEY with metadata N=V
 *   objfs-store-tool URL head KEY         "size N", "etag E", "mtime S.NS"
 *                                         (Last-Modified), "meta N V" lines
 *   objfs-store-tool URL list [PREFIX]    every key under PREFIX, one a line
 *   objfs-store-tool URL del KEY
 *   objfs-store-tool URL capacity BYTES   writes the volume record
 *   objfs-store-tool URL put-many PREFIX N SIZE   N objects PREFIXnnnnnn of
 *                                         SIZE bytes (16 threads)
 *   objfs-store-tool URL floor PREFIX N SIZE      the raw request floor of
 *                                         bench/: N sequential PUTs of SIZE
 *                                         bytes, N HEADs, the LIST of them,
 *                                         N DELETEs; prints "put S", "head
 *                                         S", "list S", "del S" (seconds)
 *
 * URL as for objfs-mount; S3 settings from AWS_ENDPOINT_URL, AWS_REGION,
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN (path-style
 * addressing).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/errors.h"
#include "volume/volrec.h"

static int out_write(void *arg, uint64_t off, const void *data, size_t n)
{
	(void)arg;
	(void)off;
	return fwrite(data, 1, n, stdout) == n ? 0 : EIO;
}

static int cmd_put(struct objfs_store *s, const char *key, int argc, char **argv)
{
	struct objfs_meta meta = OBJFS_META_INIT;
	struct objfs_put_opts po = { &meta, NULL, false };
	struct objfs_source src;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int i, err = 0;

	for (i = 0; i < argc && err == 0; i++) {
		char *eq = strchr(argv[i], '=');

		if (eq == NULL)
			return EINVAL;
		*eq = '\0';
		err = objfs_meta_set(&meta, argv[i], eq + 1);
	}
	for (;;) {
		size_t n;

		if (len == cap) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (nb == NULL) {
				err = ENOMEM;
				goto out;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		n = fread(buf + len, 1, cap - len, stdin);
		if (n == 0)
			break;
		len += n;
	}
	objfs_source_mem(&src, buf != NULL ? buf : "", len);
	if (err == 0)
		err = objfs_store_upload(s, key, &src, &po, 8 << 20, 4, NULL);
out:
	free(buf);
	objfs_meta_release(&meta);
	return err;
}

static int cmd_list(struct objfs_store *s, const char *prefix, bool print)
{
	struct objfs_list_req rq = { prefix, NULL, NULL, NULL, 1000 };
	char *token = NULL;
	int err;

	do {
		struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
		size_t i;

		rq.continuation = token;
		err = objfs_store_list(s, &rq, &pg);
		free(token);
		token = NULL;
		if (err != 0)
			break;
		for (i = 0; print && i < pg.n_entries; i++)
			printf("%s\n", pg.entries[i].key);
		token = pg.next;
		pg.next = NULL;
		objfs_list_page_release(&pg);
	} while (token != NULL);
	free(token);
	return err;
}

struct many {
	struct objfs_store *s;
	const char *prefix;
	unsigned n;
	size_t size;
	char *data;
	pthread_mutex_t mu;
	unsigned next;
	int err;
};

static void *many_run(void *arg)
{
	struct many *m = arg;

	for (;;) {
		struct objfs_put_opts po = { NULL, NULL, false };
		struct objfs_source src;
		char key[1100];
		unsigned i;
		int err;

		pthread_mutex_lock(&m->mu);
		i = m->next++;
		pthread_mutex_unlock(&m->mu);
		if (i >= m->n)
			break;
		snprintf(key, sizeof(key), "%s%06u", m->prefix, i);
		objfs_source_mem(&src, m->data, m->size);
		err = objfs_store_put(m->s, key, &src, &po, NULL);
		if (err != 0) {
			pthread_mutex_lock(&m->mu);
			m->err = err;
			pthread_mutex_unlock(&m->mu);
			break;
		}
	}
	return NULL;
}

static int cmd_put_many(struct objfs_store *s, const char *prefix, unsigned n,
			size_t size)
{
	struct many m = { s, prefix, n, size, NULL, PTHREAD_MUTEX_INITIALIZER, 0, 0 };
	pthread_t th[16];
	unsigned i;

	m.data = calloc(1, size ? size : 1);
	if (m.data == NULL)
		return ENOMEM;
	for (i = 0; i < 16; i++)
		pthread_create(&th[i], NULL, many_run, &m);
	for (i = 0; i < 16; i++)
		pthread_join(th[i], NULL);
	free(m.data);
	return m.err;
}

static double secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One op of the floor on key i. */
static int floor_op(struct objfs_store *s, int op, const char *key,
		    const char *data, size_t size)
{
	struct objfs_put_opts po = { NULL, NULL, false };
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	struct objfs_source src;
	int err;

	switch (op) {
	case 0:
		objfs_source_mem(&src, data, size);
		return objfs_store_put(s, key, &src, &po, NULL);
	case 1:
		err = objfs_store_head(s, key, &info);
		objfs_obj_info_release(&info);
		return err;
	default:
		return objfs_store_del(s, key);
	}
}

static int cmd_floor(struct objfs_store *s, const char *prefix, unsigned n,
		     size_t size)
{
	static const char *const names[] = { "put", "head", "del" };
	char *data = calloc(1, size ? size : 1);
	char key[1100];
	double t0;
	unsigned i;
	int op, err = 0;

	if (data == NULL)
		return ENOMEM;
	for (op = 0; op < 3 && err == 0; op++) {
		if (op == 2) {
			/* the listing of what the PUTs made, before the DELETEs */
			t0 = secs();
			err = cmd_list(s, prefix, false);
			printf("list %.3f\n", secs() - t0);
		}
		t0 = secs();
		for (i = 0; i < n && err == 0; i++) {
			snprintf(key, sizeof(key), "%s%06u", prefix, i);
			err = floor_op(s, op, key, data, size);
		}
		printf("%s %.3f\n", names[op], secs() - t0);
	}
	free(data);
	return err;
}

int main(int argc, char **argv)
{
	struct objfs_store_config cfg;
	struct objfs_store *s = NULL;
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;
	int err = EINVAL;

	if (argc < 3) {
		fprintf(stderr, "usage: %s URL get|put|head|list|del|capacity ...\n",
			argv[0]);
		return 2;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.url = argv[1];
	cfg.s3.endpoint = getenv("AWS_ENDPOINT_URL");
	cfg.s3.region = getenv("AWS_REGION");
	cfg.s3.path_style = true;
	cfg.s3.access_key = getenv("AWS_ACCESS_KEY_ID");
	cfg.s3.secret_key = getenv("AWS_SECRET_ACCESS_KEY");
	cfg.s3.session_token = getenv("AWS_SESSION_TOKEN");
	err = objfs_store_stack_create(&cfg, NULL, &s);
	if (err != 0)
		goto out;
	err = EINVAL;
	if (strcmp(argv[2], "get") == 0 && argc == 4) {
		struct objfs_get_opts go = OBJFS_GET_ALL;
		struct objfs_sink sink = { out_write, NULL };

		err = objfs_store_get(s, argv[3], &go, &sink, NULL);
		if (err == ERANGE)
			err = 0;
	} else if (strcmp(argv[2], "put") == 0 && argc >= 4) {
		err = cmd_put(s, argv[3], argc - 4, argv + 4);
	} else if (strcmp(argv[2], "head") == 0 && argc == 4) {
		err = objfs_store_head(s, argv[3], &info);
		if (err == 0) {
			size_t i;

			printf("size %" PRIu64 "\netag %s\nmtime %lld.%09ld\n",
			       info.size, info.etag,
			       (long long)info.mtime.tv_sec, info.mtime.tv_nsec);
			for (i = 0; i < info.meta.n; i++)
				printf("meta %s %s\n", info.meta.items[i].name,
				       info.meta.items[i].value);
		}
	} else if (strcmp(argv[2], "list") == 0) {
		err = cmd_list(s, argc > 3 ? argv[3] : "", true);
	} else if (strcmp(argv[2], "put-many") == 0 && argc == 6) {
		err = cmd_put_many(s, argv[3], (unsigned)strtoul(argv[4], NULL, 10),
				   (size_t)strtoull(argv[5], NULL, 10));
	} else if (strcmp(argv[2], "floor") == 0 && argc == 6) {
		err = cmd_floor(s, argv[3], (unsigned)strtoul(argv[4], NULL, 10),
				(size_t)strtoull(argv[5], NULL, 10));
	} else if (strcmp(argv[2], "del") == 0 && argc == 4) {
		err = objfs_store_del(s, argv[3]);
	} else if (strcmp(argv[2], "capacity") == 0 && argc == 4) {
		struct objfs_volrec v = OBJFS_VOLREC_INIT;

		v.capacity_bytes = strtoull(argv[3], NULL, 10);
		err = objfs_volrec_set_created_now(&v);
		if (err == 0)
			err = objfs_volrec_set_name(&v, "test");
		if (err == 0)
			err = objfs_volrec_store(s, &v);
		objfs_volrec_release(&v);
	}
out:
	objfs_obj_info_release(&info);
	objfs_store_destroy(s);
	if (err != 0) {
		fprintf(stderr, "objfs-store-tool: %s\n", objfs_strerror(err));
		return err == ENOENT ? 3 : 1;
	}
	return 0;
}
