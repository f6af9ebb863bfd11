/*
 * fuzz_spool_journal.c - the journal N.j of a named spool (fs/spool.c) as
 * a resumed mount's successor replays it (objfs_spool_open_named): the
 * bookkeeping of a file being written, left on disk by a process that may
 * have died in the middle of any write.
 *
 * Input: the journal's bytes, in its format (native byte order): a
 * 24-byte record {op, 7 pad bytes, u64 a, u64 b}, the header 'H'
 * (a: base size) followed by an 80-byte ETag; then records 'A'/'R'
 * (add/remove [a, b) present), 'S' (size a), 'B' (base size a), 'E'
 * (base size a, then an 80-byte ETag); others are ignored.
 *
 * Properties: the spool opens iff the header is whole (else EPROTO).  Its
 * size, base size, ETag (NUL-terminated) and present ranges are the
 * model's: a replay of the whole records over a coordinate-compressed
 * bitmap, a record cut short at the end ignored.  Present is sorted,
 * disjoint, not touching.  A change made after opening (a rebase) is
 * appended where a reader finds it: the journal, replayed again by the
 * model, gives the same spool with the new base.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/spool.h"
#include "fuzz.h"

#define REC 24
#define ETAG 80

struct model {
	bool ok;
	uint64_t size, base_size;
	char etag[ETAG];
	uint64_t *pt;                   /* sorted distinct boundaries */
	bool *on;                       /* [pt[i], pt[i+1]) present */
	size_t npt;
};

static uint64_t u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void model_run(const uint8_t *d, size_t n, struct model *m)
{
	size_t off, k = 0, i;

	memset(m, 0, sizeof(*m));
	if (n < REC + ETAG || d[0] != 'H')
		return;
	m->ok = true;
	m->size = m->base_size = u64(d + 8);
	memcpy(m->etag, d + REC, ETAG);
	m->etag[ETAG - 1] = '\0';
	m->pt = malloc((n / REC * 2 + 1) * sizeof(*m->pt));
	FUZZ_CHECK(m->pt != NULL);
	for (off = REC + ETAG; off + REC <= n; off += REC)
		if (d[off] == 'A' || d[off] == 'R') {
			m->pt[k++] = u64(d + off + 8);
			m->pt[k++] = u64(d + off + 16);
		} else if (d[off] == 'E') {
			off += ETAG;
		}
	qsort(m->pt, k, sizeof(*m->pt), cmp64);
	for (i = 0; i < k; i++)
		if (m->npt == 0 || m->pt[m->npt - 1] != m->pt[i])
			m->pt[m->npt++] = m->pt[i];
	m->on = calloc(m->npt + 1, sizeof(*m->on));
	FUZZ_CHECK(m->on != NULL);
	for (off = REC + ETAG; off + REC <= n; off += REC) {
		uint64_t a = u64(d + off + 8), b = u64(d + off + 16);

		switch (d[off]) {
		case 'A':
		case 'R':
			for (i = 0; i + 1 < m->npt; i++)
				if (m->pt[i] >= a && m->pt[i + 1] <= b && a < b)
					m->on[i] = d[off] == 'A';
			break;
		case 'S':
			m->size = a;
			break;
		case 'B':
			m->base_size = a;
			break;
		case 'E':
			if (off + REC + ETAG > n)
				return;
			m->base_size = a;
			memcpy(m->etag, d + off + REC, ETAG);
			m->etag[ETAG - 1] = '\0';
			off += ETAG;
			break;
		}
	}
}

static void model_free(struct model *m)
{
	free(m->pt);
	free(m->on);
}

/* sp's present ranges are the model's, merged. */
static void same_present(const struct objfs_spool *sp, const struct model *m)
{
	size_t i, j = 0;

	for (i = 0; i + 1 < m->npt; i++) {
		uint64_t s;

		if (!m->on[i])
			continue;
		s = m->pt[i];
		while (i + 1 < m->npt && m->on[i])
			i++;
		FUZZ_CHECK(j < sp->present.n);
		FUZZ_CHECK(sp->present.r[j].start == s && sp->present.r[j].end == m->pt[i]);
		j++;
	}
	FUZZ_CHECK(j == sp->present.n);
	for (i = 0; i < sp->present.n; i++) {
		FUZZ_CHECK(sp->present.r[i].start < sp->present.r[i].end);
		FUZZ_CHECK(i == 0 || sp->present.r[i - 1].end < sp->present.r[i].start);
	}
}

static char dir[64];

static void dir_remove(void)
{
	rmdir(dir);
}

static uint8_t *slurp(const char *path, size_t *n)
{
	struct stat st;
	uint8_t *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	FUZZ_CHECK(fd >= 0 && fstat(fd, &st) == 0);
	p = malloc((size_t)st.st_size + 1);
	FUZZ_CHECK(p != NULL);
	FUZZ_CHECK(read(fd, p, (size_t)st.st_size) == st.st_size);
	close(fd);
	*n = (size_t)st.st_size;
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct objfs_spool *sp = NULL;
	struct model m, m2;
	char path[128], jpath[132];
	uint8_t *j;
	size_t jn;
	int fd, rc;

	if (dir[0] == '\0') {
		const char *t = getenv("TMPDIR");

		snprintf(dir, sizeof(dir), "%s/objfs-fuzz-spool-XXXXXX",
			 t != NULL && strlen(t) < 32 ? t : "/tmp");
		FUZZ_CHECK(mkdtemp(dir) != NULL);
		atexit(dir_remove);
	}
	snprintf(path, sizeof(path), "%s/7", dir);
	snprintf(jpath, sizeof(jpath), "%s.j", path);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0);
	close(fd);
	fd = open(jpath, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0 && write(fd, data, size) == (ssize_t)size);
	close(fd);

	model_run(data, size, &m);
	rc = objfs_spool_open_named(path, &sp);
	FUZZ_CHECK(rc == (m.ok ? 0 : EPROTO));
	if (rc != 0) {
		unlink(path);
		unlink(jpath);
		goto out;
	}
	FUZZ_CHECK(sp->size == m.size && sp->base_size == m.base_size);
	FUZZ_CHECK(memchr(sp->base_etag, '\0', sizeof(sp->base_etag)) != NULL);
	FUZZ_CHECK(strcmp(sp->base_etag, m.etag) == 0);
	same_present(sp, &m);

	/* appended after the replay: read back by the next one */
	FUZZ_CHECK(objfs_spool_rebase(sp, 4242, "\"after\"") == 0);
	j = slurp(jpath, &jn);
	model_run(j, jn, &m2);
	FUZZ_CHECK(m2.ok && m2.size == m.size && m2.base_size == 4242);
	FUZZ_CHECK(strcmp(m2.etag, "\"after\"") == 0);
	same_present(sp, &m2);
	free(j);
	model_free(&m2);
	objfs_spool_destroy(sp);
out:
	model_free(&m);
	return 0;
}
