/*
 * noderec.c - node records in the state directory (see noderec.h).
 *
 * Invariant: a record file on disk is always complete (written to a temp
 * file in the same directory, fsync'ed, renamed over the old one, then the
 * directory fsync'ed), so a crash leaves the old or the new record, never a
 * torn one.  Temp files that a crash left behind start with "." and are
 * ignored by load_all.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "common/hex.h"
#include "common/buf.h"
#include "common/creds.h"
#include "csi/noderec.h"

static void free_pub(struct objfs_node_pub *p)
{
	free(p->target);
	free(p->fingerprint);
	p->target = NULL;
	p->fingerprint = NULL;
}

void objfs_node_rec_release(struct objfs_node_rec *r)
{
	size_t i;

	if (r == NULL)
		return;
	free(r->volume_id);
	free(r->staging);
	free(r->source);
	free(r->endpoint);
	free(r->region);
	free(r->addressing);
	free(r->options);
	free(r->fingerprint);
	free(r->group);
	free(r->pv_name);
	free(r->pvc_name);
	free(r->pvc_namespace);
	free(r->unit);
	for (i = 0; i < r->n_pubs; i++)
		free_pub(&r->pubs[i]);
	free(r->pubs);
	memset(r, 0, sizeof(*r));
}

static int dup_str(char **dst, const char *src)
{
	*dst = NULL;
	if (src == NULL)
		return 0;
	*dst = strdup(src);
	return *dst == NULL ? ENOMEM : 0;
}

int objfs_node_rec_add_pub(struct objfs_node_rec *r, const char *target,
			   const char *fingerprint, bool readonly)
{
	struct objfs_node_pub *grown;
	struct objfs_node_pub p = { NULL, NULL, readonly };

	if (dup_str(&p.target, target) != 0 ||
	    dup_str(&p.fingerprint, fingerprint != NULL ? fingerprint : "") != 0)
		goto nomem;
	grown = realloc(r->pubs, (r->n_pubs + 1) * sizeof(*grown));
	if (grown == NULL)
		goto nomem;
	grown[r->n_pubs++] = p;
	r->pubs = grown;
	return 0;
nomem:
	free_pub(&p);
	return ENOMEM;
}

long objfs_node_rec_find_pub(const struct objfs_node_rec *r, const char *target)
{
	size_t i;

	for (i = 0; i < r->n_pubs; i++) {
		if (strcmp(r->pubs[i].target, target) == 0)
			return (long)i;
	}
	return -1;
}

void objfs_node_rec_del_pub(struct objfs_node_rec *r, size_t i)
{
	if (i >= r->n_pubs)
		return;
	free_pub(&r->pubs[i]);
	memmove(&r->pubs[i], &r->pubs[i + 1], (r->n_pubs - i - 1) * sizeof(r->pubs[0]));
	r->n_pubs--;
}

int objfs_node_rec_copy(struct objfs_node_rec *dst, const struct objfs_node_rec *src)
{
	size_t i;
	int err = 0;

	memset(dst, 0, sizeof(*dst));
	err |= dup_str(&dst->volume_id, src->volume_id);
	err |= dup_str(&dst->staging, src->staging);
	err |= dup_str(&dst->source, src->source);
	err |= dup_str(&dst->endpoint, src->endpoint);
	err |= dup_str(&dst->region, src->region);
	err |= dup_str(&dst->addressing, src->addressing);
	err |= dup_str(&dst->options, src->options);
	err |= dup_str(&dst->fingerprint, src->fingerprint);
	err |= dup_str(&dst->group, src->group);
	err |= dup_str(&dst->pv_name, src->pv_name);
	err |= dup_str(&dst->pvc_name, src->pvc_name);
	err |= dup_str(&dst->pvc_namespace, src->pvc_namespace);
	err |= dup_str(&dst->unit, src->unit);
	dst->pid = src->pid;
	dst->start = src->start;
	dst->secrets = src->secrets;
	for (i = 0; err == 0 && i < src->n_pubs; i++)
		err = objfs_node_rec_add_pub(dst, src->pubs[i].target,
					     src->pubs[i].fingerprint,
					     src->pubs[i].readonly);
	if (err != 0) {
		objfs_node_rec_release(dst);
		return ENOMEM;
	}
	return 0;
}

int objfs_node_rec_name(const char *volume_id, char name[OBJFS_NODE_REC_NAME_MAX])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (SHA256((const unsigned char *)volume_id, strlen(volume_id), md) == NULL)
		return EIO;
	name[0] = 'v';
	name[1] = '-';
	for (i = 0; i < SHA256_DIGEST_LENGTH; i++) {
		name[2 + 2 * i] = hex[md[i] >> 4];
		name[3 + 2 * i] = hex[md[i] & 15];
	}
	name[2 + 2 * SHA256_DIGEST_LENGTH] = '\0';
	return 0;
}

/* ---- formatting ------------------------------------------------------- */

static void buf_esc(struct objfs_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *u = (const unsigned char *)(s != NULL ? s : "");
	char e[3];

	for (; *u != '\0'; u++) {
		if (*u < 0x20 || *u == 0x7f || *u == '%' || *u == '|') {
			e[0] = '%';
			e[1] = hex[*u >> 4];
			e[2] = hex[*u & 15];
			objfs_buf_add(b, e, 3);
		} else {
			objfs_buf_add(b, u, 1);
		}
	}
}

static void buf_kv(struct objfs_buf *b, const char *k, const char *v)
{
	objfs_buf_adds(b, k);
	objfs_buf_addc(b, '=');
	buf_esc(b, v);
	objfs_buf_addc(b, '\n');
}

int objfs_node_rec_format(const struct objfs_node_rec *r, char **out, size_t *len)
{
	struct objfs_buf b = OBJFS_BUF_INIT(OBJFS_NODE_REC_MAX - 1, EFBIG);
	char num[64];
	size_t i;
	int err;

	*out = NULL;
	*len = 0;
	if (r->volume_id == NULL || r->volume_id[0] == '\0' ||
	    r->staging == NULL || r->staging[0] == '\0')
		return EINVAL;
	objfs_buf_adds(&b, "# objfs node record\n");
	buf_kv(&b, "volume_id", r->volume_id);
	buf_kv(&b, "staging", r->staging);
	buf_kv(&b, "source", r->source);
	buf_kv(&b, "endpoint", r->endpoint);
	buf_kv(&b, "region", r->region);
	buf_kv(&b, "addressing", r->addressing);
	buf_kv(&b, "options", r->options);
	buf_kv(&b, "fingerprint", r->fingerprint);
	buf_kv(&b, "group", r->group);
	if (r->unit != NULL && r->unit[0] != '\0')
		buf_kv(&b, "unit", r->unit);
	/* keys plugins before them refuse: behind "#+" (noderec.h) */
	if (r->pv_name != NULL && r->pv_name[0] != '\0')
		buf_kv(&b, OBJFS_NODE_REC_EXT "pv_name", r->pv_name);
	if (r->pvc_name != NULL && r->pvc_name[0] != '\0')
		buf_kv(&b, OBJFS_NODE_REC_EXT "pvc_name", r->pvc_name);
	if (r->pvc_namespace != NULL && r->pvc_namespace[0] != '\0')
		buf_kv(&b, OBJFS_NODE_REC_EXT "pvc_namespace", r->pvc_namespace);
	snprintf(num, sizeof(num), "%ld", (long)r->pid);
	buf_kv(&b, "pid", num);
	snprintf(num, sizeof(num), "%llu", r->start);
	buf_kv(&b, "start", num);
	buf_kv(&b, "secrets", r->secrets ? "1" : "0");
	for (i = 0; i < r->n_pubs; i++) {
		objfs_buf_adds(&b, "publish=");
		objfs_buf_adds(&b, r->pubs[i].readonly ? "1|" : "0|");
		buf_esc(&b, r->pubs[i].fingerprint);
		objfs_buf_adds(&b, "|");
		buf_esc(&b, r->pubs[i].target);
		objfs_buf_adds(&b, "\n");
	}
	*len = b.len;
	*out = objfs_buf_detach(&b);
	if (*out == NULL) {
		*len = 0;
		err = objfs_buf_err(&b) != 0 ? objfs_buf_err(&b) : ENOMEM;
		objfs_buf_release(&b);
		return err;
	}
	return 0;
}

/* ---- parsing ---------------------------------------------------------- */

/* Unescapes s[0..n) into a new string.  0, EINVAL or ENOMEM. */
static int unesc(const char *s, size_t n, char **out)
{
	char *d = malloc(n + 1);
	size_t i, j = 0;

	*out = NULL;
	if (d == NULL)
		return ENOMEM;
	for (i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= n) {
				free(d);
				return EINVAL;
			}
			hi = objfs_hexval(s[i + 1]);
			lo = objfs_hexval(s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				free(d);
				return EINVAL;
			}
			d[j++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			d[j++] = s[i];
		}
	}
	d[j] = '\0';
	*out = d;
	return 0;
}

static int parse_ull(const char *s, unsigned long long *out)
{
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno != 0 || *end != '\0' ? EINVAL : 0;
}

static int parse_pub(struct objfs_node_rec *r, const char *v, size_t n)
{
	const char *bar1, *bar2;
	char *fp = NULL, *target = NULL;
	int err;

	if (n < 2 || (v[0] != '0' && v[0] != '1') || v[1] != '|')
		return EINVAL;
	bar1 = v + 1;
	bar2 = memchr(bar1 + 1, '|', n - 2);
	if (bar2 == NULL)
		return EINVAL;
	err = unesc(bar1 + 1, (size_t)(bar2 - bar1 - 1), &fp);
	if (err == 0)
		err = unesc(bar2 + 1, n - (size_t)(bar2 + 1 - v), &target);
	if (err == 0 && target[0] != '/')
		err = EINVAL;
	if (err == 0)
		err = objfs_node_rec_add_pub(r, target, fp, v[0] == '1');
	free(fp);
	free(target);
	return err;
}

static int parse_line(struct objfs_node_rec *r, const char *line, size_t n)
{
	static const struct {
		const char *key;
		size_t off;
	} strs[] = {
		{ "volume_id", offsetof(struct objfs_node_rec, volume_id) },
		{ "staging", offsetof(struct objfs_node_rec, staging) },
		{ "source", offsetof(struct objfs_node_rec, source) },
		{ "endpoint", offsetof(struct objfs_node_rec, endpoint) },
		{ "region", offsetof(struct objfs_node_rec, region) },
		{ "addressing", offsetof(struct objfs_node_rec, addressing) },
		{ "options", offsetof(struct objfs_node_rec, options) },
		{ "fingerprint", offsetof(struct objfs_node_rec, fingerprint) },
		{ "group", offsetof(struct objfs_node_rec, group) },
		{ "unit", offsetof(struct objfs_node_rec, unit) },
		{ "pv_name", offsetof(struct objfs_node_rec, pv_name) },
		{ "pvc_name", offsetof(struct objfs_node_rec, pvc_name) },
		{ "pvc_namespace", offsetof(struct objfs_node_rec, pvc_namespace) },
	};
	const char *eq = memchr(line, '=', n);
	size_t klen, vlen, i;
	const char *v;
	char *val = NULL;
	unsigned long long u;
	int err;

	if (eq == NULL)
		return EINVAL;
	klen = (size_t)(eq - line);
	v = eq + 1;
	vlen = n - klen - 1;
	if (klen == 7 && memcmp(line, "publish", 7) == 0)
		return parse_pub(r, v, vlen);
	err = unesc(v, vlen, &val);
	if (err != 0)
		return err;
	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		char **field = (char **)((char *)r + strs[i].off);

		if (strlen(strs[i].key) == klen && memcmp(strs[i].key, line, klen) == 0) {
			if (*field != NULL) {
				err = EINVAL;     /* a key given twice */
				goto out;
			}
			*field = val;
			val = NULL;
			goto out;
		}
	}
	if (klen == 3 && memcmp(line, "pid", 3) == 0) {
		err = parse_ull(val, &u);
		if (err == 0 && u > 0x7fffffff)
			err = EINVAL;
		r->pid = (pid_t)u;
	} else if (klen == 5 && memcmp(line, "start", 5) == 0) {
		err = parse_ull(val, &r->start);
	} else if (klen == 7 && memcmp(line, "secrets", 7) == 0) {
		if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
			err = EINVAL;
		r->secrets = val[0] == '1';
	}
	/* any other key is a later plugin's: ignored (noderec.h) */
out:
	free(val);
	return err;
}

int objfs_node_rec_parse(const char *text, size_t len, struct objfs_node_rec *r)
{
	size_t pos = 0;
	int err = 0;

	memset(r, 0, sizeof(*r));
	if (len > OBJFS_NODE_REC_MAX) {
		err = EINVAL;
		goto out;
	}
	while (pos < len && err == 0) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl != NULL ? (size_t)(nl - (text + pos)) : len - pos;

		size_t ext = n >= sizeof(OBJFS_NODE_REC_EXT) - 1 &&
			     memcmp(text + pos, OBJFS_NODE_REC_EXT,
				    sizeof(OBJFS_NODE_REC_EXT) - 1) == 0 ?
			     sizeof(OBJFS_NODE_REC_EXT) - 1 : 0;

		if (n > ext && (ext > 0 || text[pos] != '#')) {
			if (memchr(text + pos, '\0', n) != NULL)
				err = EINVAL;
			else
				err = parse_line(r, text + pos + ext, n - ext);
		}
		pos += n + 1;
	}
	if (err == 0 && (r->volume_id == NULL || r->volume_id[0] == '\0' ||
			 r->staging == NULL || r->staging[0] != '/'))
		err = EINVAL;
out:
	if (err != 0)
		objfs_node_rec_release(r);
	return err;
}

/* ---- files ------------------------------------------------------------ */

int objfs_node_rec_mkdir(const char *dir)
{
	char tmp[4096];
	size_t i, n = strlen(dir);

	if (n == 0 || n >= sizeof(tmp))
		return ENAMETOOLONG;
	memcpy(tmp, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		tmp[i] = '\0';
		if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
			return errno;
		if (i < n)
			tmp[i] = '/';
	}
	return 0;
}

/* Writes data atomically as dir/name with the given mode. */
static int write_atomic(const char *dir, const char *name, const char *data,
			size_t len, mode_t mode)
{
	char path[4096], tmp[4096];
	size_t off = 0;
	int fd = -1, dfd = -1;
	int err = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >= sizeof(tmp))
		return ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		err = errno;
		goto out;
	}
	if (fchmod(fd, mode) != 0) {
		err = errno;
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			err = errno;
			goto out;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0) {
		err = errno;
		goto out;
	}
	if (close(fd) != 0) {
		fd = -1;
		err = errno;
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		err = errno;
		goto out;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		(void)fsync(dfd);
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (err != 0)
		unlink(tmp);
	return err;
}

int objfs_node_rec_save(const char *dir, const struct objfs_node_rec *r)
{
	char name[OBJFS_NODE_REC_NAME_MAX];
	char *text = NULL;
	size_t len = 0;
	int err;

	err = objfs_node_rec_name(r->volume_id != NULL ? r->volume_id : "", name);
	if (err == 0)
		err = objfs_node_rec_format(r, &text, &len);
	if (err == 0)
		err = objfs_node_rec_mkdir(dir);
	if (err == 0)
		err = write_atomic(dir, name, text, len, 0600);
	free(text);
	return err;
}

static int remove_file(const char *dir, const char *name, const char *suffix)
{
	char path[4096];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s%s", dir, name, suffix) >= sizeof(path))
		return ENAMETOOLONG;
	if (unlink(path) != 0 && errno != ENOENT)
		return errno;
	return 0;
}

int objfs_node_rec_remove(const char *dir, const char *volume_id)
{
	char name[OBJFS_NODE_REC_NAME_MAX];
	int err, err2;

	err = objfs_node_rec_name(volume_id, name);
	if (err != 0)
		return err;
	err = remove_file(dir, name, "");
	err2 = remove_file(dir, name, ".secrets");
	return err != 0 ? err : err2;
}

/* Reads a whole small file (at most max bytes) into a malloc'ed buffer. */
static int read_file(int dfd, const char *name, size_t max, char **out, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	int fd, err = 0;

	*out = NULL;
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno;
	buf = malloc(max + 1);
	if (buf == NULL) {
		err = ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, max + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			err = EFBIG;
			goto out;
		}
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return err;
}

int objfs_node_rec_load_all(const char *dir, struct objfs_node_rec **recs,
			    size_t *n, unsigned *bad)
{
	DIR *d;
	struct dirent *de;
	struct objfs_node_rec *arr = NULL;
	size_t cnt = 0;
	int err = 0;

	*recs = NULL;
	*n = 0;
	if (bad != NULL)
		*bad = 0;
	d = opendir(dir);
	if (d == NULL)
		return errno == ENOENT ? 0 : errno;
	for (;;) {
		struct objfs_node_rec r;
		struct objfs_node_rec *grown;
		char *text = NULL;
		size_t len = 0;

		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			err = errno;
			break;
		}
		if (strncmp(de->d_name, "v-", 2) != 0 ||
		    strlen(de->d_name) != OBJFS_NODE_REC_NAME_MAX - 1)
			continue;
		if (read_file(dirfd(d), de->d_name, OBJFS_NODE_REC_MAX, &text, &len) != 0 ||
		    objfs_node_rec_parse(text, len, &r) != 0) {
			free(text);
			if (bad != NULL)
				(*bad)++;
			continue;
		}
		free(text);
		grown = realloc(arr, (cnt + 1) * sizeof(*arr));
		if (grown == NULL) {
			objfs_node_rec_release(&r);
			err = ENOMEM;
			break;
		}
		arr = grown;
		arr[cnt++] = r;
	}
	closedir(d);
	if (err != 0) {
		while (cnt > 0)
			objfs_node_rec_release(&arr[--cnt]);
		free(arr);
		return err;
	}
	*recs = arr;
	*n = cnt;
	return 0;
}

int objfs_node_secrets_save(const char *dir, const char *volume_id,
			    const struct objfs_creds *c)
{
	char hash[OBJFS_NODE_REC_NAME_MAX];
	char name[OBJFS_NODE_REC_NAME_MAX + 8];
	char *text = NULL;
	size_t len = 0;
	int err;

	err = objfs_node_rec_name(volume_id, hash);
	if (err != 0)
		return err;
	snprintf(name, sizeof(name), "%s.secrets", hash);
	err = objfs_creds_format(c, &text, &len);
	if (err == 0)
		err = objfs_node_rec_mkdir(dir);
	if (err == 0)
		err = write_atomic(dir, name, text != NULL ? text : "", len, 0600);
	if (text != NULL) {
		explicit_bzero(text, len);
		free(text);
	}
	return err;
}

int objfs_node_secrets_load(const char *dir, const char *volume_id,
			    struct objfs_creds *c)
{
	char name[OBJFS_NODE_REC_NAME_MAX];
	char path[4096];
	int err;

	err = objfs_node_rec_name(volume_id, name);
	if (err != 0)
		return err;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.secrets", dir, name) >= sizeof(path))
		return ENAMETOOLONG;
	return objfs_creds_load_file(path, c, NULL);
}
