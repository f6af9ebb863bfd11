/*
 * attr.c - metadata encoding and key mapping (see attr.h).  No state.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/backend.h"
#include "fs/attr.h"

int objfs_mtime_format(const struct timespec *ts, char *buf, size_t cap)
{
	int n;

	if (ts->tv_nsec == 0)
		n = snprintf(buf, cap, "%lld", (long long)ts->tv_sec);
	else if (ts->tv_sec < 0)   /* {-2, 0.25 s} is -1.75 s: "-1.750000000" */
		n = snprintf(buf, cap, "-%lld.%09ld", -((long long)ts->tv_sec + 1),
			     1000000000L - (long)ts->tv_nsec);
	else
		n = snprintf(buf, cap, "%lld.%09ld", (long long)ts->tv_sec,
			     (long)ts->tv_nsec);
	if (n < 0 || (size_t)n >= cap)
		return ENOSPC;
	return 0;
}

int objfs_mtime_parse(const char *s, struct timespec *out)
{
	long long sec = 0;
	long nsec = 0, scale = 100000000;
	bool neg = false;
	const char *p = s;
	int digits = 0;

	if (*p == '-') {
		neg = true;
		p++;
	}
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (sec > (INT64_MAX - 9) / 10)
			return EINVAL;
		sec = sec * 10 + (*p - '0');
	}
	if (digits == 0)
		return EINVAL;
	if (*p == '.') {
		p++;
		for (; *p >= '0' && *p <= '9'; p++) {
			nsec += (*p - '0') * scale;
			scale /= 10;
		}
	}
	if (*p != '\0')
		return EINVAL;
	if (neg) {
		sec = -sec;
		if (nsec != 0) {
			sec -= 1;
			nsec = 1000000000 - nsec;
		}
	}
	out->tv_sec = (time_t)sec;
	out->tv_nsec = nsec;
	return 0;
}

int objfs_mode_parse(const char *s, mode_t *out)
{
	unsigned long long v = 0;
	unsigned base = 10;
	const char *p = s;

	if (*p == '\0')
		return EINVAL;
	if (p[0] == '0' && p[1] != '\0')
		base = 8;
	for (; *p != '\0'; p++) {
		unsigned d;

		if (*p < '0' || *p > '9')
			return EINVAL;
		d = (unsigned)(*p - '0');
		if (d >= base)
			return EINVAL;
		v = v * base + d;
		if (v > 0xffffffULL)
			return EINVAL;
	}
	*out = (mode_t)v;
	return 0;
}

static bool ts_equal(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* name=ts into m unless ts->tv_nsec is negative (no value). */
static int time_to_meta(struct objfs_meta *m, const char *name,
			const struct timespec *ts)
{
	char buf[48];
	int err;

	if (ts->tv_nsec < 0)
		return 0;
	err = objfs_mtime_format(ts, buf, sizeof(buf));
	return err != 0 ? err : objfs_meta_set(m, name, buf);
}

int objfs_fattr_to_meta(const struct objfs_fattr *a, struct objfs_meta *m)
{
	char buf[48];
	int err;

	snprintf(buf, sizeof(buf), "%u", (unsigned)a->mode);
	err = objfs_meta_set(m, OBJFS_META_MODE, buf);
	if (err != 0)
		return err;
	snprintf(buf, sizeof(buf), "%u", (unsigned)a->uid);
	err = objfs_meta_set(m, OBJFS_META_UID, buf);
	if (err != 0)
		return err;
	snprintf(buf, sizeof(buf), "%u", (unsigned)a->gid);
	err = objfs_meta_set(m, OBJFS_META_GID, buf);
	if (err != 0)
		return err;
	if (S_ISCHR(a->mode) || S_ISBLK(a->mode)) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)a->rdev);
		err = objfs_meta_set(m, OBJFS_META_RDEV, buf);
		if (err != 0)
			return err;
	}
	/* an atime or ctime equal to mtime is left out: a reader takes
	 * mtime for a missing one (fewer headers on most writes) */
	if (!ts_equal(&a->atime, &a->mtime))
		err = time_to_meta(m, OBJFS_META_ATIME, &a->atime);
	if (err == 0 && !ts_equal(&a->ctime, &a->mtime))
		err = time_to_meta(m, OBJFS_META_CTIME, &a->ctime);
	if (err == 0)
		err = time_to_meta(m, OBJFS_META_MTIME, &a->mtime);
	return err;
}

/* A decimal of at most max.  0 or EINVAL. */
static int parse_dec(const char *s, unsigned long long max,
		     unsigned long long *out)
{
	unsigned long long v = 0;

	if (*s == '\0')
		return EINVAL;
	for (; *s != '\0'; s++) {
		unsigned d;

		if (*s < '0' || *s > '9')
			return EINVAL;
		d = (unsigned)(*s - '0');
		if (v > (max - d) / 10)
			return EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int parse_id(const char *s, unsigned *out)
{
	unsigned long long v;
	int err = parse_dec(s, UINT32_MAX, &v);

	if (err == 0)
		*out = (unsigned)v;
	return err;
}

static int parse_u64(const char *s, unsigned long long *out)
{
	return parse_dec(s, UINT64_MAX, out);
}

/* The times in metadata: name, field, OBJFS_FATTR_* bit. */
static const struct {
	const char *name;
	size_t off;
	unsigned bit;
} meta_times[] = {
	{ OBJFS_META_MTIME, offsetof(struct objfs_fattr, mtime),
	  OBJFS_FATTR_MTIME },
	{ OBJFS_META_ATIME, offsetof(struct objfs_fattr, atime),
	  OBJFS_FATTR_ATIME },
	{ OBJFS_META_CTIME, offsetof(struct objfs_fattr, ctime),
	  OBJFS_FATTR_CTIME },
};

unsigned objfs_fattr_from_meta(const struct objfs_meta *m,
			       struct objfs_fattr *a)
{
	unsigned found = 0, id;
	unsigned long long rdev;
	size_t i;
	const char *v;
	mode_t mode;
	struct timespec ts;

	v = objfs_meta_get(m, OBJFS_META_MODE);
	if (v != NULL && objfs_mode_parse(v, &mode) == 0 &&
	    (S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode) ||
	     S_ISFIFO(mode) || S_ISSOCK(mode) || S_ISCHR(mode) ||
	     S_ISBLK(mode))) {
		a->mode = mode;
		found |= OBJFS_FATTR_MODE;
	}
	v = objfs_meta_get(m, OBJFS_META_UID);
	if (v != NULL && parse_id(v, &id) == 0) {
		a->uid = (uid_t)id;
		found |= OBJFS_FATTR_UID;
	}
	v = objfs_meta_get(m, OBJFS_META_GID);
	if (v != NULL && parse_id(v, &id) == 0) {
		a->gid = (gid_t)id;
		found |= OBJFS_FATTR_GID;
	}
	for (i = 0; i < sizeof(meta_times) / sizeof(meta_times[0]); i++) {
		v = objfs_meta_get(m, meta_times[i].name);
		if (v != NULL && objfs_mtime_parse(v, &ts) == 0) {
			*(struct timespec *)((char *)a + meta_times[i].off) = ts;
			found |= meta_times[i].bit;
		}
	}
	v = objfs_meta_get(m, OBJFS_META_RDEV);
	if (v != NULL && parse_u64(v, &rdev) == 0) {
		a->rdev = (dev_t)rdev;
		found |= OBJFS_FATTR_RDEV;
	}
	return found;
}

int objfs_name_check(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strchr(name, '/') != NULL)
		return EINVAL;
	if (n > OBJFS_NAME_MAX)
		return ENAMETOOLONG;
	return 0;
}

bool objfs_name_reserved(bool parent_is_root, const char *name)
{
	return parent_is_root && strcmp(name, OBJFS_RESERVED_NAME) == 0;
}

int objfs_key_join(const char *dir_key, const char *name, bool dir,
		   char *buf, size_t cap)
{
	int n;

	if (cap > OBJFS_KEY_MAX + 1)
		cap = OBJFS_KEY_MAX + 1;
	n = snprintf(buf, cap, "%s%s%s", dir_key, name, dir ? "/" : "");
	if (n < 0 || (size_t)n >= cap)
		return ENAMETOOLONG;
	return 0;
}

bool objfs_key_child(const char *dir_key, const char *key, bool is_prefix,
		     char *name, size_t cap)
{
	size_t dl = strlen(dir_key), kl = strlen(key), n;
	const char *rest;

	if (kl <= dl || strncmp(key, dir_key, dl) != 0)
		return false;
	rest = key + dl;
	n = kl - dl;
	if (is_prefix) {
		if (rest[n - 1] != '/')
			return false;
		n--;
	}
	if (n == 0 || n > OBJFS_NAME_MAX || n + 1 > cap ||
	    memchr(rest, '/', n) != NULL)
		return false;
	memcpy(name, rest, n);
	name[n] = '\0';
	if ((n == 1 && name[0] == '.') || (n == 2 && name[0] == '.' && name[1] == '.'))
		return false;
	if (objfs_name_reserved(dl == 0, name))
		return false;
	return true;
}
