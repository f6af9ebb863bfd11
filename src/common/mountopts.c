/*
 * mountopts.c - objfs-mount's -o options (see mountopts.h): the table of
 * objfs-mount's own options (the rows of mountopts.def), the FUSE options
 * passed on, a parser, a builder, --help's option lines, and the command
 * line a supervisor starts objfs-mount with.
 *
 * Values are read exactly as objfs-mount always read them: integers with
 * strtoull(base 0) and an optional K/M/G suffix (then an optional "i" and
 * "B"), seconds with strtod (0 to OBJFS_MOUNTOPT_SECONDS_MAX: no NaN or
 * inf), umask in octal up to 0777, addressing path or virtual, log_level
 * as objfs_log_parse_level(); a row's max bounds numbers and seconds.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mountopts.h"

#define K(k) OBJFS_MOPT_K_##k

/* The rows (mountopts.def), in enum objfs_mopt order: the builder writes
 * them in this order.  The target column is objfs-mount's. */
static const struct objfs_mopt_info specs[OBJFS_MOPT_COUNT] = {
#define MOPT(id, nm, field, knd, own, grp, mx, target, meta, dflt, text)   \
	[OBJFS_MOPT_##id] = {                                              \
		.name = nm, .kind = K(knd),                                \
		.off = offsetof(struct objfs_mount_opts, field),           \
		.owner = OBJFS_MOPT_##own, .group = OBJFS_MOPT_##grp,      \
		.max = mx, .metavar = meta, .def = dflt, .help = text,     \
	},
#include "common/mountopts.def"
#undef MOPT
};

const struct objfs_mopt_info *objfs_mount_opts_info(enum objfs_mopt which)
{
	return &specs[(unsigned)which < OBJFS_MOPT_COUNT ? which : 0];
}

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

static const char *kind_wants(enum objfs_mopt_kind k)
{
	switch (k) {
	case K(NUM): return "a number";
	case K(BYTES): return "a size (K, M, G suffixes)";
	case K(SECONDS): return "seconds (0 to 1000000)";
	case K(OCTAL): return "an octal mode up to 0777";
	case K(ADDRESSING): return "path or virtual";
	case K(LEVEL): return "debug, info, warn or error";
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

static void format_max(const struct objfs_mopt_info *sp, char *out, size_t cap);

static bool is_flag(enum objfs_mopt_kind k)
{
	return k == K(FLAG) || k == K(FUSEFLAG);
}

/* Stores value (NUL-terminated, unescaped) into the field of sp: 0,
 * EINVAL (malformed), ERANGE (past the row's bound) or ENOMEM. */
static int set_value(struct objfs_mount_opts *o, const struct objfs_mopt_info *sp,
		     const char *value)
{
	char *field = (char *)o + sp->off;
	enum objfs_log_level level;
	unsigned mode;
	uint64_t v;
	double d;
	char *copy;

	switch (sp->kind) {
	case K(FLAG):
	case K(FUSEFLAG):
		*(bool *)field = true;
		return 0;
	case K(STR):
		copy = keep(o, value, strlen(value));
		if (copy == NULL)
			return ENOMEM;
		*(const char **)field = copy;
		return 0;
	case K(NUM):
	case K(BYTES):
		if (parse_u64(value, &v) != 0)
			return EINVAL;
		if (sp->max > 0 && (double)v > sp->max)
			return ERANGE;
		*(uint64_t *)field = v;
		return 0;
	case K(SECONDS):
		if (parse_seconds(value, &d) != 0)
			return EINVAL;
		if (sp->max > 0 && d > sp->max)
			return ERANGE;
		*(double *)field = d;
		return 0;
	case K(OCTAL):
		if (parse_octal(value, &mode) != 0)
			return EINVAL;
		*(unsigned *)field = mode;
		return 0;
	case K(ADDRESSING):
		return objfs_mount_opts_addressing_parse(value, (bool *)field);
	case K(LEVEL):
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
	const struct objfs_mopt_info *sp = NULL;
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
	if (is_flag(sp->kind) != (eq == NULL)) {
		if (is_flag(sp->kind))
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
	if (e == ERANGE) {
		char most[32];

		format_max(sp, most, sizeof(most));
		snprintf(err, cap, "option %s: at most %s", sp->name, most);
		return EINVAL;
	}
	if (e == 0) {
		objfs_mount_opts_mark(o, (enum objfs_mopt)(sp - specs));
		/* a typed field, not copied to o->fuse */
		*fuse = sp->kind == K(FUSEFLAG);
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

/* The text of sp's value in o, in num (cap bytes) or a constant; NULL
 * for a flag. */
static const char *value_text(const struct objfs_mount_opts *o,
			      const struct objfs_mopt_info *sp, char *num, size_t cap)
{
	const char *field = (const char *)o + sp->off;

	switch (sp->kind) {
	case K(FLAG):
	case K(FUSEFLAG):
		return NULL;
	case K(STR):
		return *(const char *const *)field;
	case K(NUM):
		snprintf(num, cap, "%llu", (unsigned long long)*(const uint64_t *)field);
		return num;
	case K(BYTES):
		format_bytes(*(const uint64_t *)field, num, cap);
		return num;
	case K(SECONDS):
		format_seconds(*(const double *)field, num, cap);
		return num;
	case K(OCTAL):
		snprintf(num, cap, "%04o", *(const unsigned *)field);
		return num;
	case K(ADDRESSING):
		return objfs_mount_opts_addressing_name(*(const bool *)field);
	case K(LEVEL):
		return objfs_log_level_name(*(const enum objfs_log_level *)field);
	}
	return NULL;
}

void objfs_mount_opts_value(const struct objfs_mount_opts *o,
			    enum objfs_mopt which, char *out, size_t cap)
{
	const struct objfs_mopt_info *sp = objfs_mount_opts_info(which);
	char num[64];
	const char *v = value_text(o, sp, num, sizeof(num));

	snprintf(out, cap, "%s", v != NULL ? v : "");
}

static void format_max(const struct objfs_mopt_info *sp, char *out, size_t cap)
{
	if (sp->kind == K(BYTES))
		format_bytes((uint64_t)sp->max, out, cap);
	else
		snprintf(out, cap, "%.15g", sp->max);
}

int objfs_mount_opts_build(const struct objfs_mount_opts *o, char *buf, size_t cap)
{
	size_t start = strlen(buf), len = start;
	char num[64];
	size_t i;

	for (i = 0; i < OBJFS_MOPT_COUNT; i++) {
		const struct objfs_mopt_info *sp = &specs[i];
		const char *value;

		if (!objfs_mount_opts_has(o, (enum objfs_mopt)i))
			continue;
		if (is_flag(sp->kind) && !*(const bool *)((const char *)o + sp->off))
			continue;
		value = value_text(o, sp, num, sizeof(num));
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

/* ---- --help -------------------------------------------------------------- */

#define HELP_COL 25             /* where the text starts */
#define HELP_WIDTH 79

/* Writes text's words to f from column *col, wrapping at HELP_WIDTH to
 * HELP_COL. */
static void put_words(FILE *f, const char *text, size_t *col)
{
	const char *s = text;

	while (*s != '\0') {
		size_t n;

		while (*s == ' ')
			s++;
		n = strcspn(s, " ");
		if (n == 0)
			break;
		if (*col > HELP_COL && *col + 1 + n > HELP_WIDTH) {
			fprintf(f, "\n%*s", HELP_COL, "");
			*col = HELP_COL;
		} else if (*col > HELP_COL) {
			fputc(' ', f);
			(*col)++;
		}
		fprintf(f, "%.*s", (int)n, s);
		*col += n;
		s += n;
	}
}

void objfs_mount_opts_usage(FILE *f, enum objfs_mopt_group group,
			    const struct objfs_mount_opts *defaults)
{
	size_t i;

	for (i = 0; i < OBJFS_MOPT_COUNT; i++) {
		const struct objfs_mopt_info *sp = &specs[i];
		char label[64], tail[512], dflt[256], most[32];
		const char *d = sp->def;
		size_t col, n;

		if (sp->group != group)
			continue;
		n = (size_t)snprintf(label, sizeof(label), "%s%s%s", sp->name,
				     sp->metavar[0] != '\0' ? "=" : "", sp->metavar);
		if (n + 2 + 2 <= HELP_COL) {
			fprintf(f, "  %-*s", HELP_COL - 2, label);
			col = HELP_COL;
		} else {
			/* past HELP_COL: a space, then the text wraps there */
			fprintf(f, "  %s ", label);
			col = 2 + n + 1;
		}
		put_words(f, sp->help, &col);
		if (d == NULL && !is_flag(sp->kind) &&
		    objfs_mount_opts_has(defaults, (enum objfs_mopt)i)) {
			objfs_mount_opts_value(defaults, (enum objfs_mopt)i, dflt,
					       sizeof(dflt));
			d = dflt;
		}
		tail[0] = '\0';
		if (d != NULL)
			snprintf(tail, sizeof(tail), "(default: %s", d);
		if (sp->max > 0) {
			format_max(sp, most, sizeof(most));
			n = strlen(tail);
			snprintf(tail + n, sizeof(tail) - n, "%s at most %s",
				 d != NULL ? ";" : "(", most);
		}
		if (tail[0] != '\0') {
			n = strlen(tail);
			snprintf(tail + n, sizeof(tail) - n, ")");
			put_words(f, tail, &col);
		}
		fputc('\n', f);
	}
}

/* ---- the supervisors' command line -------------------------------------- */

size_t objfs_mount_argv(char *argv[OBJFS_MOUNT_ARGV_MAX], const char *program,
			const char *options, const char *source,
			const char *mountpoint)
{
	size_t n = 0;

	argv[n++] = (char *)program;
	argv[n++] = (char *)"-f";
	if (options[0] != '\0') {
		argv[n++] = (char *)"-o";
		argv[n++] = (char *)options;
	}
	argv[n++] = (char *)source;
	argv[n++] = (char *)mountpoint;
	argv[n] = NULL;
	return n;
}
