/*
 * fuzz_state_log.c - the state log a resumed mount's successor loads
 * (fs/journal_load.c: STATE_DIR/log, records the dead server appended one write
 * each, the last one possibly torn), through the public entry point a
 * successor uses: objfs_fs_state_start(fs, dir, true) on a fresh
 * filesystem over a local store in a temporary directory.
 *
 * Properties: loading never reads past the log (ASan) nor crashes on any
 * record; a log that loads is written back compacted, and that compacted
 * log loads again (a successor of a successor); a log that does not load
 * leaves the state directory's log as it was (a successor that fails must
 * not destroy what the next one needs).  Not a property yet: that the
 * second compaction gives the same bytes as the first (a mutated log
 * whose inode numbers collide compacts differently once more; a real
 * server's log does: tests/fuzz/corpus/state_log).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "fs/fs.h"
#include "fuzz.h"

/* The whole file at path (malloc'ed; *n its bytes), or NULL. */
static uint8_t *slurp(const char *path, size_t *n)
{
	struct stat st;
	uint8_t *p = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*n = 0;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && (p = malloc((size_t)st.st_size + 1)) != NULL &&
	    read(fd, p, (size_t)st.st_size) == st.st_size)
		*n = (size_t)st.st_size;
	close(fd);
	return p;
}

static void spit(const char *path, const uint8_t *d, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(n == 0 || write(fd, d, n) == (ssize_t)n);
	close(fd);
}

/* Loads dir's log into a new filesystem over the store at root/store;
 * 0 or the load's errno.  The filesystem is destroyed after (the state
 * directory's files stay: no clean stop). */
static int load_once(const char *root, const char *dir)
{
	struct objfs_store *store = NULL;
	struct objfs_fs *fs = NULL;
	struct objfs_fs_opts o;
	char path[512], spool[512];
	int err;

	snprintf(path, sizeof(path), "%s/store", root);
	snprintf(spool, sizeof(spool), "%s/spool", root);
	FUZZ_CHECK(objfs_local_store_create(path, NULL, &store) == 0);
	objfs_fs_opts_default(&o);
	o.spool_dir = spool;
	o.threads = 1;
	FUZZ_CHECK(objfs_fs_create(store, &o, NULL, &fs) == 0);
	err = objfs_fs_state_start(fs, dir, true);
	objfs_fs_state_stop(fs, false);
	objfs_fs_destroy(fs);
	objfs_store_destroy(store);
	return err;
}

static void rm_tree(const char *root)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	FUZZ_CHECK(system(cmd) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char root[] = "/tmp/objfs-fuzz-state-XXXXXX";
	char dir[600], log[700], spool[600];
	uint8_t *a = NULL, *b = NULL;
	size_t na, nb;

	if (size > (1u << 20))
		return 0;
	FUZZ_CHECK(mkdtemp(root) != NULL);
	snprintf(dir, sizeof(dir), "%s/state", root);
	snprintf(spool, sizeof(spool), "%s/spool", root);
	snprintf(log, sizeof(log), "%s/log", dir);
	FUZZ_CHECK(mkdir(dir, 0700) == 0 && mkdir(spool, 0700) == 0);
	spit(log, data, size);
	if (load_once(root, dir) != 0) {
		/* refused: the log stays for another try */
		a = slurp(log, &na);
		FUZZ_CHECK(a != NULL && na == size && memcmp(a, data, size) == 0);
		goto out;
	}
	a = slurp(log, &na);
	FUZZ_CHECK(a != NULL);
	FUZZ_CHECK(load_once(root, dir) == 0);
	b = slurp(log, &nb);
	FUZZ_CHECK(b != NULL);
out:
	free(a);
	free(b);
	rm_tree(root);
	return 0;
}
