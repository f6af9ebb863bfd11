/*
 * spool.c - sparse on-disk spool files and their range bookkeeping
 * (see spool.h for the invariant).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/spool.h"

static int rs_reserve(struct objfs_rangeset *rs, size_t n)
{
	struct objfs_range *r;
	size_t cap;

	if (n <= rs->cap)
		return 0;
	cap = rs->cap ? rs->cap * 2 : 4;
	while (cap < n)
		cap *= 2;
	r = realloc(rs->r, cap * sizeof(*r));
	if (r == NULL)
		return ENOMEM;
	rs->r = r;
	rs->cap = cap;
	return 0;
}

int objfs_rangeset_add(struct objfs_rangeset *rs, uint64_t start, uint64_t end)
{
	size_t i, j;
	int err;

	if (start >= end)
		return 0;
	/* first range that ends at or after start (touching merges) */
	for (i = 0; i < rs->n && rs->r[i].end < start; i++)
		;
	/* ranges [i, j) overlap or touch [start, end) */
	for (j = i; j < rs->n && rs->r[j].start <= end; j++)
		;
	if (i == j) {
		err = rs_reserve(rs, rs->n + 1);
		if (err != 0)
			return err;
		memmove(&rs->r[i + 1], &rs->r[i], (rs->n - i) * sizeof(*rs->r));
		rs->r[i].start = start;
		rs->r[i].end = end;
		rs->n++;
		return 0;
	}
	if (rs->r[i].start < start)
		start = rs->r[i].start;
	if (rs->r[j - 1].end > end)
		end = rs->r[j - 1].end;
	rs->r[i].start = start;
	rs->r[i].end = end;
	memmove(&rs->r[i + 1], &rs->r[j], (rs->n - j) * sizeof(*rs->r));
	rs->n -= j - i - 1;
	return 0;
}

int objfs_rangeset_remove(struct objfs_rangeset *rs, uint64_t start,
			  uint64_t end)
{
	size_t i = 0;
	int err;

	if (start >= end)
		return 0;
	while (i < rs->n) {
		struct objfs_range *r = &rs->r[i];

		if (r->end <= start || r->start >= end) {
			i++;
			continue;
		}
		if (r->start < start && r->end > end) {
			/* split */
			err = rs_reserve(rs, rs->n + 1);
			if (err != 0)
				return err;
			r = &rs->r[i];
			memmove(&rs->r[i + 1], &rs->r[i],
				(rs->n - i) * sizeof(*rs->r));
			rs->n++;
			rs->r[i].end = start;
			rs->r[i + 1].start = end;
			return 0;
		}
		if (r->start < start) {
			r->end = start;
			i++;
		} else if (r->end > end) {
			r->start = end;
			i++;
		} else {
			memmove(&rs->r[i], &rs->r[i + 1],
				(rs->n - i - 1) * sizeof(*rs->r));
			rs->n--;
		}
	}
	return 0;
}

bool objfs_rangeset_first_gap(const struct objfs_rangeset *rs, uint64_t start,
			      uint64_t end, uint64_t *gs, uint64_t *ge)
{
	size_t i;
	uint64_t pos = start;

	if (start >= end)
		return false;
	for (i = 0; i < rs->n && pos < end; i++) {
		const struct objfs_range *r = &rs->r[i];

		if (r->end <= pos)
			continue;
		if (r->start > pos) {
			*gs = pos;
			*ge = r->start < end ? r->start : end;
			return true;
		}
		pos = r->end;
	}
	if (pos < end) {
		*gs = pos;
		*ge = end;
		return true;
	}
	return false;
}

bool objfs_rangeset_covers(const struct objfs_rangeset *rs, uint64_t start,
			   uint64_t end)
{
	uint64_t a, b;

	return !objfs_rangeset_first_gap(rs, start, end, &a, &b);
}

uint64_t objfs_rangeset_bytes(const struct objfs_rangeset *rs)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < rs->n; i++)
		t += rs->r[i].end - rs->r[i].start;
	return t;
}

void objfs_rangeset_release(struct objfs_rangeset *rs)
{
	free(rs->r);
	rs->r = NULL;
	rs->n = 0;
	rs->cap = 0;
}


/* ---- the journal of a named spool ------------------------------------- */

/* One change of a named spool's bookkeeping: 'A' adds [a, b) to present,
 * 'R' removes it, 'S' sets size a, 'B' sets base_size a.  The header
 * record is 'H' (a: base_size) followed by the base ETag. */
struct jrec {
	char op;
	char pad[7];
	uint64_t a, b;
};

static int jwrite(struct objfs_spool *sp, char op, uint64_t a, uint64_t b)
{
	struct jrec r;

	if (sp->jfd < 0)
		return 0;
	memset(&r, 0, sizeof(r));
	r.op = op;
	r.a = a;
	r.b = b;
	if (write(sp->jfd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		return errno ? errno : EIO;
	return 0;
}

static int sp_add(struct objfs_spool *sp, uint64_t start, uint64_t end)
{
	int err = objfs_rangeset_add(&sp->present, start, end);

	return err != 0 ? err : jwrite(sp, 'A', start, end);
}

static int sp_remove(struct objfs_spool *sp, uint64_t start, uint64_t end)
{
	int err = objfs_rangeset_remove(&sp->present, start, end);

	return err != 0 ? err : jwrite(sp, 'R', start, end);
}

static int sp_size(struct objfs_spool *sp, uint64_t size)
{
	sp->size = size;
	return jwrite(sp, 'S', size, 0);
}

static int spool_new(int fd, uint64_t base_size, const char *base_etag,
		     struct objfs_spool **out)
{
	struct objfs_spool *sp = calloc(1, sizeof(*sp));

	if (sp == NULL)
		return ENOMEM;
	/* a new file is empty already; a truncate to 0 would make ext4 write
	 * the data out at close (auto_da_alloc), see objfs_spool_destroy */
	if (base_size > 0 && ftruncate(fd, (off_t)base_size) != 0) {
		int err = errno;

		free(sp);
		return err;
	}
	sp->fd = fd;
	sp->jfd = -1;
	sp->size = base_size;
	sp->base_size = base_size;
	snprintf(sp->base_etag, sizeof(sp->base_etag), "%s",
		 base_etag != NULL ? base_etag : "");
	*out = sp;
	return 0;
}

int objfs_spool_create_named(const char *path, uint64_t base_size,
			     const char *base_etag, struct objfs_spool **out)
{
	struct objfs_spool *sp = NULL;
	struct jrec h;
	char jpath[4200];
	int fd, err;

	if (snprintf(jpath, sizeof(jpath), "%s.j", path) >= (int)sizeof(jpath))
		return ENAMETOOLONG;
	fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	err = spool_new(fd, base_size, base_etag, &sp);
	if (err != 0) {
		close(fd);
		unlink(path);
		return err;
	}
	sp->path = strdup(path);
	sp->jfd = open(jpath, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND | O_CLOEXEC,
		       0600);
	if (sp->path == NULL || sp->jfd < 0) {
		err = sp->path == NULL ? ENOMEM : errno;
		goto fail;
	}
	memset(&h, 0, sizeof(h));
	h.op = 'H';
	h.a = base_size;
	if (write(sp->jfd, &h, sizeof(h)) != (ssize_t)sizeof(h) ||
	    write(sp->jfd, sp->base_etag, sizeof(sp->base_etag)) !=
	    (ssize_t)sizeof(sp->base_etag)) {
		err = errno ? errno : EIO;
		goto fail;
	}
	*out = sp;
	return 0;
fail:
	objfs_spool_destroy(sp);
	return err;
}

int objfs_spool_rebase(struct objfs_spool *sp, uint64_t size, const char *etag)
{
	int err;

	sp->base_size = size;
	snprintf(sp->base_etag, sizeof(sp->base_etag), "%s", etag);
	objfs_rangeset_release(&sp->changed);
	err = jwrite(sp, 'E', size, 0);
	if (err == 0 && sp->jfd >= 0 &&
	    write(sp->jfd, sp->base_etag, sizeof(sp->base_etag)) !=
	    (ssize_t)sizeof(sp->base_etag))
		err = errno ? errno : EIO;
	return err;
}

int objfs_spool_open_named(const char *path, struct objfs_spool **out)
{
	struct objfs_spool *sp = NULL;
	char jpath[4200], etag[OBJFS_ETAG_MAX];
	struct jrec r;
	off_t done;             /* journal bytes of whole records */
	int fd, jfd = -1, err = 0;

	if (snprintf(jpath, sizeof(jpath), "%s.j", path) >= (int)sizeof(jpath))
		return ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	jfd = open(jpath, O_RDWR | O_APPEND | O_CLOEXEC);
	if (jfd < 0 || read(jfd, &r, sizeof(r)) != (ssize_t)sizeof(r) ||
	    r.op != 'H' || read(jfd, etag, sizeof(etag)) != (ssize_t)sizeof(etag)) {
		err = jfd < 0 ? errno : EPROTO;
		goto fail;
	}
	etag[sizeof(etag) - 1] = '\0';
	done = (off_t)(sizeof(r) + sizeof(etag));
	sp = calloc(1, sizeof(*sp));
	if (sp == NULL) {
		err = ENOMEM;
		goto fail;
	}
	sp->fd = fd;
	sp->jfd = -1;           /* replaying: nothing written back */
	sp->size = sp->base_size = r.a;
	snprintf(sp->base_etag, sizeof(sp->base_etag), "%s", etag);
	while (err == 0 && read(jfd, &r, sizeof(r)) == (ssize_t)sizeof(r)) {
		if (r.op == 'A')
			err = objfs_rangeset_add(&sp->present, r.a, r.b);
		else if (r.op == 'R')
			err = objfs_rangeset_remove(&sp->present, r.a, r.b);
		else if (r.op == 'S')
			sp->size = r.a;
		else if (r.op == 'B')
			sp->base_size = r.a;
		else if (r.op == 'E') {
			/* a record cut short by the crash is not one */
			if (read(jfd, etag, sizeof(etag)) != (ssize_t)sizeof(etag))
				break;
			etag[sizeof(etag) - 1] = '\0';
			sp->base_size = r.a;
			memcpy(sp->base_etag, etag, sizeof(etag));
			done += (off_t)sizeof(etag);
		}
		done += (off_t)sizeof(r);
	}
	/* what follows the last whole record goes: records appended from now
	 * on must start where a reader expects one */
	if (err == 0 && lseek(jfd, 0, SEEK_END) > done && ftruncate(jfd, done) != 0)
		err = errno;
	/* the journal does not say what was written since the base: every
	 * byte held counts as changed */
	for (size_t i = 0; err == 0 && i < sp->present.n; i++)
		err = objfs_rangeset_add(&sp->changed, sp->present.r[i].start,
					 sp->present.r[i].end);
	sp->path = strdup(path);
	if (err != 0 || sp->path == NULL) {
		objfs_rangeset_release(&sp->changed);
		objfs_rangeset_release(&sp->present);
		free(sp->path);
		free(sp);
		err = err != 0 ? err : ENOMEM;
		goto fail;
	}
	sp->jfd = jfd;
	*out = sp;
	return 0;
fail:
	close(fd);
	if (jfd >= 0)
		close(jfd);
	return err;
}

int objfs_spool_create(const char *dir, uint64_t base_size,
		       const char *base_etag, struct objfs_spool **out)
{
	char path[4096];
	int fd, err;

	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		/* file systems without O_TMPFILE */
		if (snprintf(path, sizeof(path), "%s/objfs-spool-XXXXXX", dir) >=
		    (int)sizeof(path))
			return ENAMETOOLONG;
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0)
			return errno;
		unlink(path);
	}
	err = spool_new(fd, base_size, base_etag, out);
	if (err != 0)
		close(fd);
	return err;
}

void objfs_spool_leave(struct objfs_spool *sp)
{
	if (sp == NULL)
		return;
	if (sp->path == NULL) {
		objfs_spool_destroy(sp);
		return;
	}
	close(sp->fd);
	if (sp->jfd >= 0)
		close(sp->jfd);
	free(sp->path);
	objfs_rangeset_release(&sp->present);
	objfs_rangeset_release(&sp->changed);
	free(sp->kept);
	free(sp);
}

void objfs_spool_destroy(struct objfs_spool *sp)
{
	if (sp == NULL)
		return;
	/* Drops the data before the close: a file once truncated to 0 (an
	 * application's O_TRUNC) is written out at its last close by ext4
	 * (auto_da_alloc), and the close then waits for that write and for
	 * the blocks' discard, 0.3 ms or more per small file, for bytes
	 * nobody will read.  Failures (no hole punching here) cost only
	 * that time.  Never a kept spool's: its name outlives it. */
	if (sp->size > 0 && sp->kept == NULL)
		(void)fallocate(sp->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				0, (off_t)sp->size);
	close(sp->fd);
	if (sp->jfd >= 0)
		close(sp->jfd);
	if (sp->path != NULL) {
		char jpath[4200];

		unlink(sp->path);
		if (snprintf(jpath, sizeof(jpath), "%s.j", sp->path) <
		    (int)sizeof(jpath))
			unlink(jpath);
		free(sp->path);
	}
	objfs_rangeset_release(&sp->present);
	objfs_rangeset_release(&sp->changed);
	free(sp->kept);
	free(sp);
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int objfs_spool_write(struct objfs_spool *sp, uint64_t off, const void *buf,
		      size_t len)
{
	int err;

	if (len == 0)
		return 0;
	err = pwrite_all(sp->fd, buf, len, off);
	if (err != 0)
		return err;
	if (off > sp->size) {
		err = sp_add(sp, sp->size, off);
		if (err != 0)
			return err;
	}
	err = sp_add(sp, off, off + len);
	if (err == 0 && off < sp->base_size)
		err = objfs_rangeset_add(&sp->changed, off, off + len);
	if (err != 0)
		return err;
	if (off + len > sp->size)
		return sp_size(sp, off + len);
	return 0;
}

int objfs_spool_fill(struct objfs_spool *sp, uint64_t off, const void *buf,
		     size_t len)
{
	const char *p = buf;
	uint64_t end = off + len, gs, ge, pos = off;
	int err;

	if (end > sp->size)
		end = sp->size;
	while (pos < end && objfs_rangeset_first_gap(&sp->present, pos, end,
						     &gs, &ge)) {
		err = pwrite_all(sp->fd, p + (gs - off), ge - gs, gs);
		if (err != 0)
			return err;
		err = sp_add(sp, gs, ge);
		if (err != 0)
			return err;
		pos = ge;
	}
	return 0;
}

int objfs_spool_truncate(struct objfs_spool *sp, uint64_t size)
{
	int err;

	if (ftruncate(sp->fd, (off_t)size) != 0)
		return errno;
	if (size < sp->size) {
		err = objfs_rangeset_remove(&sp->changed, size, UINT64_MAX);
		if (err == 0)
			err = sp_remove(sp, size, UINT64_MAX);
		if (err != 0)
			return err;
		/* bytes past the new end can no longer come from the base */
		if (sp->base_size > size) {
			sp->base_size = size;
			err = jwrite(sp, 'B', size, 0);
			if (err != 0)
				return err;
		}
	} else if (size > sp->size) {
		err = sp_add(sp, sp->size, size);
		if (err != 0)
			return err;
	}
	return sp_size(sp, size);
}

bool objfs_spool_missing(const struct objfs_spool *sp, uint64_t off,
			 uint64_t end, uint64_t *gs, uint64_t *ge)
{
	if (end > sp->size)
		end = sp->size;
	return objfs_rangeset_first_gap(&sp->present, off, end, gs, ge);
}

int objfs_spool_read(struct objfs_spool *sp, uint64_t off, void *buf,
		     size_t len, size_t *got)
{
	char *p = buf;
	size_t done = 0;

	if (off >= sp->size) {
		*got = 0;
		return 0;
	}
	if (off + len > sp->size)
		len = (size_t)(sp->size - off);
	while (done < len) {
		ssize_t n = pread(sp->fd, p + done, len - done,
				  (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0) {
			/* sparse tail: zeros */
			memset(p + done, 0, len - done);
			break;
		}
		done += (size_t)n;
	}
	*got = len;
	return 0;
}

int objfs_spool_punch(struct objfs_spool *sp, uint64_t start, uint64_t end)
{
	if (end > sp->size)
		end = sp->size;
	if (start >= end)
		return 0;
	if (fallocate(sp->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)start, (off_t)(end - start)) != 0)
		return errno;
	return sp_remove(sp, start, end);
}

uint64_t objfs_spool_disk(const struct objfs_spool *sp)
{
	struct stat st;

	if (fstat(sp->fd, &st) != 0)
		return 0;
	return (uint64_t)st.st_blocks * 512;
}

/* A copy of the first size bytes of fd in a new file at path. */
static int copy_to(int fd, uint64_t size, const char *path)
{
	char buf[64 * 1024];
	uint64_t off = 0;
	int out, err = 0;

	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		return errno;
	while (off < size && err == 0) {
		size_t want = size - off < sizeof(buf) ?
			(size_t)(size - off) : sizeof(buf);
		ssize_t n = pread(fd, buf, want, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			break;
		}
		err = pwrite_all(out, buf, (size_t)n, off);
		off += (uint64_t)n;
	}
	if (err == 0 && fsync(out) != 0)
		err = errno;
	close(out);
	if (err != 0)
		unlink(path);
	return err;
}

int objfs_spool_keep(struct objfs_spool *sp, const char *dir,
		     const char *prefix, const char **path)
{
	char name[4096], proc[64];
	unsigned n;
	int err = EEXIST;

	if (sp->kept != NULL) {
		*path = sp->kept;
		return 0;
	}
	if (fsync(sp->fd) != 0)
		return errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", sp->fd);
	for (n = 0; n < 1000 && err == EEXIST; n++) {
		int k = snprintf(name, sizeof(name), "%s/%s.%u", dir, prefix,
				 n);

		if (k < 0 || (size_t)k >= sizeof(name))
			return ENAMETOOLONG;
		err = linkat(AT_FDCWD, proc, AT_FDCWD, name,
			     AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
		/* an unlinked mkostemp spool cannot be linked again */
		if (err != 0 && err != EEXIST)
			err = copy_to(sp->fd, sp->size, name);
	}
	if (err != 0)
		return err;
	/* kept now: its age (objfs_spool_expire) starts here */
	(void)utimensat(AT_FDCWD, name, NULL, 0);
	sp->kept = strdup(name);
	if (sp->kept == NULL)
		return ENOMEM;
	*path = sp->kept;
	return 0;
}

int objfs_spool_note(const char *path, const char *text)
{
	char name[4200];
	size_t len = strlen(text);
	int fd, err = 0;

	if ((size_t)snprintf(name, sizeof(name), "%s.txt", path) >= sizeof(name))
		return ENAMETOOLONG;
	fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	if (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 ||
	    fsync(fd) != 0)
		err = errno != 0 ? errno : EIO;
	if (close(fd) != 0 && err == 0)
		err = errno;
	return err;
}

int objfs_spool_expire(const char *dir, double max_age, unsigned *n)
{
	size_t pl = strlen(OBJFS_SPOOL_KEPT);
	time_t now = time(NULL);
	struct dirent *de;
	struct stat st;
	int err = 0, dfd;
	DIR *d;

	if (n != NULL)
		*n = 0;
	d = opendir(dir);
	if (d == NULL)
		return errno == ENOENT ? 0 : errno;
	dfd = dirfd(d);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);

		if (strncmp(de->d_name, OBJFS_SPOOL_KEPT, pl) != 0)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode) || difftime(now, st.st_mtime) <= max_age)
			continue;
		if (unlinkat(dfd, de->d_name, 0) != 0) {
			if (err == 0 && errno != ENOENT)
				err = errno;
			continue;
		}
		if (n != NULL && !(l > 4 && strcmp(de->d_name + l - 4, ".txt") == 0))
			(*n)++;
	}
	closedir(d);
	return err;
}
