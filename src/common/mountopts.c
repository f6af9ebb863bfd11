/*
 * mountopts.c - objfs-mount's -o options (see mountopts.h): one table of
 * objfs-mount's own options with their types, the FUSE options passed on,
 * a parser and a builder.
 *
 * Values are read exactly as objfs-mount always read them: integers with
 * strtoull(base 0) and an optional K/M/G suffix (then an optional "i" and
 * "B"), seconds with strtod (0 to OBJFS_MOUNTOPT_SECONDS_MAX: no NaN or inf), umask in octal up to 0777,
 * addressing path or virtual, log_level as objfs_log_parse_level().
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mountopts.h"

enum kind {
	K_FLAG,         /* bool, no value */
	K_STR,          /* any string (may be empty) */
	K_NUM,          /* uint64_t, printed in decimal */
	K_BYTES,        /* uint64_t, printed with a unit */
	K_SECONDS,      /* double */
	K_OCTAL,        /* unsigned, at most 0777 */
	K_ADDRESSING,   /* bool path_style */
	K_LEVEL,        /* enum objfs_log_level */
};

struct spec {
	const char *name;
	enum kind kind;
	size_t off;             /* of the field in struct objfs_mount_opts */
	bool fuse;              /* also passed to FUSE */
	enum objfs_mopt_owner owner;    /* who may set it */
};

#define F(f) offsetof(struct objfs_mount_opts, f)
/* objfs-mount's own option w, named as its field f, of kind k. */
#define OWN(w, f, k) [OBJFS_MOPT_##w] = { #f, k, F(f), false, OBJFS_MOPT_ANYONE }
/* The same, for an option only the node's own configuration may set. */
#define NODE(w, f, k) [OBJFS_MOPT_##w] = { #f, k, F(f), false, OBJFS_MOPT_NODE }
/* In enum objfs_mopt order: the builder writes them in this order. */
static const struct spec specs[OBJFS_MOPT_COUNT] = {
	[OBJFS_MOPT_ALLOW_OTHER] = { "allow_other", K_FLAG, F(allow_other), true,
				     OBJFS_MOPT_ANYONE },
	[OBJFS_MOPT_RO] = { "ro", K_FLAG, F(ro), true, OBJFS_MOPT_ANYONE },
	OWN(UID, uid, K_NUM),
	OWN(GID, gid, K_NUM),
	OWN(UMASK, umask, K_OCTAL),
	OWN(FSGROUP, fsgroup, K_NUM),
	OWN(MEM_LIMIT, mem_limit, K_BYTES),
	NODE(SPOOL_DIR, spool_dir, K_STR),
	OWN(ENDPOINT, endpoint, K_STR),
	OWN(REGION, region, K_STR),
	[OBJFS_MOPT_ADDRESSING] = { "addressing", K_ADDRESSING, F(path_style),
				    false, false },
	NODE(CA_FILE, ca_file, K_STR),
	NODE(INSECURE_SKIP_VERIFY, insecure_skip_verify, K_FLAG),
	OWN(UNSIGNED_PAYLOAD, unsigned_payload, K_FLAG),
	OWN(SIGNED_PAYLOAD, signed_payload, K_FLAG),
	OWN(MAX_CONNECTIONS, max_connections, K_NUM),
	OWN(RETRIES, retries, K_NUM),
	OWN(RETRY_TIMEOUT, retry_timeout, K_SECONDS),
	OWN(STALL_TIMEOUT, stall_timeout, K_SECONDS),
	OWN(HEDGE_AFTER, hedge_after, K_SECONDS),
	OWN(DELETE_DELAY, delete_delay, K_SECONDS),
	OWN(ATTR_TTL, attr_ttl, K_SECONDS),
	OWN(ENTRY_TTL, entry_ttl, K_SECONDS),
	OWN(NEGATIVE_TTL, negative_ttl, K_SECONDS),
	OWN(DIR_TTL, dir_ttl, K_SECONDS),
	OWN(READAHEAD, readahead, K_BYTES),
	OWN(READAHEAD_CHUNKS, readahead_chunks, K_NUM),
	OWN(PREFETCH, prefetch, K_NUM),
	OWN(PART_SIZE, part_size, K_BYTES),
	OWN(UPLOAD_PARALLEL, upload_parallel, K_NUM),
	OWN(UPLOAD_DELAY, upload_delay, K_SECONDS),
	OWN(THREADS, threads, K_NUM),
	OWN(SPOOL_LIMIT, spool_limit, K_BYTES),
	OWN(UNSAVED_KEEP, unsaved_keep, K_SECONDS),
	OWN(CREDS_REFRESH, creds_refresh, K_SECONDS),
	OWN(NO_SIGN_REQUEST, no_sign_request, K_FLAG),
	NODE(CACHE_DIR, cache_dir, K_STR),
	OWN(CACHE_SIZE, cache_size, K_BYTES),
	OWN(VOLREC_TTL, volrec_ttl, K_SECONDS),
	OWN(USAGE_REFRESH, usage_refresh, K_SECONDS),
	OWN(LOG_LEVEL, log_level, K_LEVEL),
	NODE(LOG_FILE, log_file, K_STR),
	NODE(METRICS, metrics, K_STR),
	OWN(RESUME, resume, K_FLAG),
	OWN(NORESUME, noresume, K_FLAG),
	OWN(NONEMPTY, nonempty, K_FLAG),
	OWN(XATTRS, xattrs, K_FLAG),
	[OBJFS_MOPT_STATE_DIR] = { "state_dir", K_STR, F(state_dir), false,
				   OBJFS_MOPT_PLUGIN },
	[OBJFS_MOPT_CRASH_AT] = { "crash_at", K_STR, F(crash_at), false,
				  OBJFS_MOPT_PLUGIN },
	[OBJFS_MOPT_USER_RESEND] = { "user_resend", K_FLAG, F(user_resend), false,
				     OBJFS_MOPT_PLUGIN },
	[OBJFS_MOPT_READY_FD] = { "ready_fd", K_NUM, F(ready_fd), false,
				  OBJFS_MOPT_PLUGIN },
	[OBJFS_MOPT_CREDENTIALS_FILE] = { "credentials_file", K_STR, F(credentials_file),
					  false, OBJFS_MOPT_PLUGIN },
};
#undef OWN
#undef NODE
#undef F

/* FUSE and kernel mount options libfuse 3 accepts from objfs-mount's -o
 * (its mount, session and command-line tables); a trailing '=' means the
 * option takes a value.  A name libfuse does not know fails the mount. */
static const char *const fuse_opts[] = {
	"allow_root", "auto_unmount", "blkdev", "default_permissions",
	"rw", "suid", "nosuid", "dev", "nodev", "exec", "noexec", "async",
	"sync", "dirsync", "atime", "noatime", "diratime", "nodiratime",
	"lazytime", "nolazytime", "relatime", "norelatime", "strictatime",
	"nostrictatime", "large_read", "debug", "clone_fd", "io_uring",
	"fsname=", "subtype=", "max_read=", "blksize=", "context=",
	"fscontext=", "defcontext=", "rootcontext=", "user=",
	"max_idle_threads=", "max_threads=", "io_uring_q_depth=",
};

/* The FUSE options above that turn a protection of the node off: set-user-id
 * files and device nodes made of objects any bucket user can write, and
 * root's way past allow_other's checks.  Not in a user's list. */
static const char *const fuse_node_opts[] = { "suid", "dev", "allow_root", "blkdev" };

/* Owned strings of a parse, chained from o->mem. */
struct chunk {
	struct chunk *next;
	char s[];
};

static char *keep(struct objfs_mount_opts *o, const char *s, size_t n)
{
	struct chunk *c = malloc(sizeof(*c) + n + 1);

	if (c == NULL)
		return NULL;
	memcpy(c->s, s, n);
	c->s[n] = '\0';
	c->next = o->mem;
	o->mem = c;
	return c->s;
}

void objfs_mount_opts_release(struct objfs_mount_opts *o)
{
	struct chunk *c = o->mem;

	while (c != NULL) {
		struct chunk *next = c->next;

		free(c);
		c = next;
	}
	memset(o, 0, sizeof(*o));
}

const char *objfs_mount_opts_name(enum objfs_mopt which)
{
	return (unsigned)which < OBJFS_MOPT_COUNT ? specs[which].name : "";
}

/* ---- values -------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	/* strtoull() takes "-2" as 2^64 - 2: digits only */
	if (*s < '0' || *s > '9')
		return EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s)
		return EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (v > (~0ULL >> shift))
		return EINVAL;          /* the unit would wrap it around */
	v <<= shift;
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end != '\0')
		return EINVAL;
	*out = v;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* !(v <= MAX) refuses NaN too; the bound keeps v * 1000 inside an
	 * unsigned int, as the users of these options convert it */
	if (errno != 0 || end == s || *end != '\0' || v < 0 ||
	    !(v <= OBJFS_MOUNTOPT_SECONDS_MAX))
		return EINVAL;
	*out = v;
	return 0;
}

static int parse_octal(const char *s, unsigned *out)
{
	char *end;
	unsigned long m = strtoul(s, &end, 8);

	if (*end != '\0' || m > 0777)
		return EINVAL;
	*out = (unsigned)m;
	return 0;
}

static const char *kind_wants(enum kind k)
{
	switch (k) {
	case K_NUM: return "a number";
	case K_BYTES: return "a size (K, M, G suffixes)";
	case K_SECONDS: return "seconds (0 to 1000000)";
	case K_OCTAL: return "an octal mode up to 0777";
	case K_ADDRESSING: return "path or virtual";
	case K_LEVEL: return "debug, info, warn or error";
	default: return "a value";
	}
}

/* The one spelling of the S3 addressing styles (backend/s3conn.h uses
 * it for a volume's addressingStyle too). */
int objfs_mount_opts_addressing_parse(const char *s, bool *path_style)
{
	if (strcmp(s, "path") == 0)
		*path_style = true;
	else if (strcmp(s, "virtual") == 0)
		*path_style = false;
	else
		return EINVAL;
	return 0;
}

const char *objfs_mount_opts_addressing_name(bool path_style)
{
	return path_style ? "path" : "virtual";
}

/* Stores value (NUL-terminated, unescaped) into the field of sp. */
static int set_value(struct objfs_mount_opts *o, const struct spec *sp, const char *value)
{
	char *field = (char *)o + sp->off;
	enum objfs_log_level level;
	unsigned mode;
	uint64_t v;
	double d;
	char *copy;

	switch (sp->kind) {
	case K_FLAG:
		*(bool *)field = true;
		return 0;
	case K_STR:
		copy = keep(o, value, strlen(value));
		if (copy == NULL)
			return ENOMEM;
		*(const char **)field = copy;
		return 0;
	case K_NUM:
	case K_BYTES:
		if (parse_u64(value, &v) != 0)
			return EINVAL;
		*(uint64_t *)field = v;
		return 0;
	case K_SECONDS:
		if (parse_seconds(value, &d) != 0)
			return EINVAL;
		*(double *)field = d;
		return 0;
	case K_OCTAL:
		if (parse_octal(value, &mode) != 0)
			return EINVAL;
		*(unsigned *)field = mode;
		return 0;
	case K_ADDRESSING:
		return objfs_mount_opts_addressing_parse(value, (bool *)field);
	case K_LEVEL:
		if (objfs_log_parse_level(value, &level) != 0)
			return EINVAL;
		*(enum objfs_log_level *)field = level;
		return 0;
	}
	return EINVAL;
}

/* ---- parsing -------------------------------------------------------------- */

/* Appends s escaped to buf (cap) at *len; false when it does not fit. */
static bool put_escaped(char *buf, size_t cap, size_t *len, const char *s)
{
	for (; *s != '\0'; s++) {
		bool esc = *s == ',' || *s == '\\';

		if (*len + (esc ? 2 : 1) >= cap)
			return false;
		if (esc)
			buf[(*len)++] = '\\';
		buf[(*len)++] = *s;
	}
	buf[*len] = '\0';
	return true;
}

/* Adds a FUSE option (unescaped) to o->fuse. */
static int add_fuse(struct objfs_mount_opts *o, const char *opt)
{
	size_t old = o->fuse != NULL ? strlen(o->fuse) : 0;
	size_t cap = old + 2 * strlen(opt) + 2, len = 0;
	char *text = malloc(cap);
	char *copy;

	if (text == NULL)
		return ENOMEM;
	if (old > 0) {
		memcpy(text, o->fuse, old);
		text[old] = ',';
		len = old + 1;
	}
	text[len] = '\0';
	(void)put_escaped(text, cap, &len, opt);
	copy = keep(o, text, len);
	free(text);
	if (copy == NULL)
		return ENOMEM;
	o->fuse = copy;
	return 0;
}

static bool is_fuse_opt(const char *name, size_t nlen, bool has_value)
{
	size_t i;

	for (i = 0; i < sizeof(fuse_opts) / sizeof(fuse_opts[0]); i++) {
		const char *f = fuse_opts[i];
		size_t flen = strlen(f);
		bool wants_value = f[flen - 1] == '=';

		if (wants_value)
			flen--;
		if (flen == nlen && strncmp(f, name, nlen) == 0 && wants_value == has_value)
			return true;
	}
	return false;
}

/* Applies one unescaped option: 0 (*fuse says whether FUSE gets it too),
 * EINVAL or ENOMEM with err set. */
static int apply(struct objfs_mount_opts *o, const char *opt, unsigned flags,
		 bool *fuse, char *err, size_t cap)
{
	const char *eq = strchr(opt, '=');
	size_t nlen = eq != NULL ? (size_t)(eq - opt) : strlen(opt);
	const struct spec *sp = NULL;
	size_t i;
	int e;

	*fuse = false;
	if (opt[0] == '\0')
		return 0;
	for (i = 0; i < OBJFS_MOPT_COUNT; i++) {
		if (strlen(specs[i].name) == nlen && strncmp(specs[i].name, opt, nlen) == 0) {
			sp = &specs[i];
			break;
		}
	}
	if (sp == NULL) {
		if (!is_fuse_opt(opt, nlen, eq != NULL)) {
			snprintf(err, cap, "unknown option \"%.*s\"",
				 (int)(nlen < 64 ? nlen : 64), opt);
			return EINVAL;
		}
		for (i = 0; (flags & OBJFS_MOUNT_OPTS_USER) != 0 &&
			    i < sizeof(fuse_node_opts) / sizeof(fuse_node_opts[0]); i++) {
			if (strcmp(opt, fuse_node_opts[i]) == 0) {
				snprintf(err, cap, "option %s turns a protection of "
					 "the node off: not in a volume's options", opt);
				return EINVAL;
			}
		}
		e = add_fuse(o, opt);
		*fuse = e == 0;
		goto out;
	}
	if (sp->owner == OBJFS_MOPT_PLUGIN && (flags & OBJFS_MOUNT_OPTS_USER) != 0) {
		snprintf(err, cap, "option %s is set by the plugin", sp->name);
		return EINVAL;
	}
	if (sp->owner == OBJFS_MOPT_NODE && (flags & OBJFS_MOUNT_OPTS_USER) != 0) {
		snprintf(err, cap, "option %s names a path or an address of the "
			 "node, or turns a protection off: only the node's own "
			 "configuration sets it, not a volume's options", sp->name);
		return EINVAL;
	}
	if ((sp->kind == K_FLAG) != (eq == NULL)) {
		if (sp->kind == K_FLAG)
			snprintf(err, cap, "option %s takes no value", sp->name);
		else
			snprintf(err, cap, "option %s needs a value (%s=...)", sp->name, sp->name);
		return EINVAL;
	}
	e = set_value(o, sp, eq != NULL ? eq + 1 : "");
	if (e == EINVAL) {
		snprintf(err, cap, "option %s: the value is not %s", sp->name,
			 kind_wants(sp->kind));
		return EINVAL;
	}
	if (e == 0) {
		objfs_mount_opts_mark(o, (enum objfs_mopt)(sp - specs));
		*fuse = sp->fuse;       /* a typed field, not copied to o->fuse */
	}
out:
	if (e == ENOMEM)
		snprintf(err, cap, "out of memory");
	return e;
}

int objfs_mount_opts_apply(struct objfs_mount_opts *o, const char *opt,
			   unsigned flags, char *err, size_t cap)
{
	bool fuse;

	if (apply(o, opt, flags, &fuse, err, cap) != 0)
		return -1;
	return fuse ? 1 : 0;
}

int objfs_mount_opts_parse(const char *text, unsigned flags,
			   struct objfs_mount_opts *o, char *err, size_t cap)
{
	size_t n = strlen(text);
	char *item = malloc(n + 1);
	const char *s = text;
	bool fuse;
	int ret = 0;

	memset(o, 0, sizeof(*o));
	if (item == NULL) {
		snprintf(err, cap, "out of memory");
		return ENOMEM;
	}
	while (ret == 0) {
		size_t len = 0;

		/* One option, unescaped as libfuse's -o parser does. */
		while (*s != '\0' && *s != ',') {
			if (s[0] == '\\' && s[1] != '\0') {
				s++;
				if (s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' &&
				    s[2] >= '0' && s[2] <= '7') {
					item[len++] = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 +
							     (s[2] - '0'));
					s += 3;
					continue;
				}
			}
			item[len++] = *s++;
		}
		item[len] = '\0';
		ret = apply(o, item, flags, &fuse, err, cap);
		if (*s == '\0')
			break;
		s++;
	}
	free(item);
	if (ret != 0)
		objfs_mount_opts_release(o);
	return ret;
}

/* ---- building ------------------------------------------------------------- */

static void format_bytes(uint64_t v, char *out, size_t cap)
{
	static const char units[] = "GMK";
	static const unsigned shifts[] = { 30, 20, 10 };
	size_t i;

	for (i = 0; v != 0 && i < 3; i++) {
		if ((v & ((1ULL << shifts[i]) - 1)) == 0) {
			snprintf(out, cap, "%llu%c", (unsigned long long)(v >> shifts[i]),
				 units[i]);
			return;
		}
	}
	snprintf(out, cap, "%llu", (unsigned long long)v);
}

/* The shortest decimal that reads back as d. */
static void format_seconds(double d, char *out, size_t cap)
{
	int prec;

	for (prec = 6; prec <= 17; prec++) {
		snprintf(out, cap, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			return;
	}
}

int objfs_mount_opts_build(const struct objfs_mount_opts *o, char *buf, size_t cap)
{
	size_t start = strlen(buf), len = start;
	char num[64];
	size_t i;

	for (i = 0; i < OBJFS_MOPT_COUNT; i++) {
		const struct spec *sp = &specs[i];
		const char *field = (const char *)o + sp->off;
		const char *value = NULL;

		if (!objfs_mount_opts_has(o, (enum objfs_mopt)i))
			continue;
		switch (sp->kind) {
		case K_FLAG:
			if (!*(const bool *)field)
				continue;
			break;
		case K_STR:
			value = *(const char *const *)field;
			break;
		case K_NUM:
			snprintf(num, sizeof(num), "%llu",
				 (unsigned long long)*(const uint64_t *)field);
			value = num;
			break;
		case K_BYTES:
			format_bytes(*(const uint64_t *)field, num, sizeof(num));
			value = num;
			break;
		case K_SECONDS:
			format_seconds(*(const double *)field, num, sizeof(num));
			value = num;
			break;
		case K_OCTAL:
			snprintf(num, sizeof(num), "%04o", *(const unsigned *)field);
			value = num;
			break;
		case K_ADDRESSING:
			value = objfs_mount_opts_addressing_name(*(const bool *)field);
			break;
		case K_LEVEL:
			value = objfs_log_level_name(*(const enum objfs_log_level *)field);
			break;
		}
		if (len + strlen(sp->name) + 3 > cap)
			goto nospace;
		len += (size_t)snprintf(buf + len, cap - len, "%s%s%s", len > 0 ? "," : "",
					sp->name, value != NULL ? "=" : "");
		if (value != NULL && !put_escaped(buf, cap, &len, value))
			goto nospace;
	}
	if (o->fuse != NULL && o->fuse[0] != '\0') {
		if (len + strlen(o->fuse) + 2 > cap)
			goto nospace;
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", len > 0 ? "," : "",
					o->fuse);
	}
	return 0;
nospace:
	buf[start] = '\0';
	return ENOSPC;
}

int objfs_mount_opts_check_user(const char *list, char *err, size_t cap)
{
	struct objfs_mount_opts tmp;
	size_t i;

	for (i = 0; list[i] != '\0'; i++) {
		char c = list[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || strchr(",_.:/=+-@", c) != NULL)) {
			snprintf(err, cap, "a character other than letters, digits and _.:/=+-@");
			return EINVAL;
		}
	}
	if (objfs_mount_opts_parse(list, OBJFS_MOUNT_OPTS_USER, &tmp, err, cap) != 0)
		return EINVAL;
	objfs_mount_opts_release(&tmp);
	return 0;
}
