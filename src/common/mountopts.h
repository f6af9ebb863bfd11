/*
 * mountopts.h - the -o options of objfs-mount: the contract between the
 * node plugin, which builds them (objfs-csi: csi/node.c, csi/mounter.c),
 * and objfs-mount, which parses them, across a process boundary.  One
 * row per option (mountopts.def: name, kind, who may set it, bound,
 * --help's text and default, objfs-mount's target field) feeds the
 * parser, the builder and --help; docs/objfs-mount.md describes them.
 * The S3 addressing styles are spelled here only
 * (objfs_mount_opts_addressing_parse); backend/s3conn.h maps a whole
 * connection to and from these options.
 *
 * Text: options separated by ',', each NAME or NAME=VALUE; in a value,
 * '\,' stands for a comma and '\\' for a backslash (libfuse's -o escaping,
 * so objfs-mount's argument parser reads the same options back).  The
 * builder escapes every value: a value can never add an option.
 *
 * Three kinds of names:
 *  - objfs-mount's own (endpoint=, mem_limit=, spool_dir= ...): typed
 *    fields below, values checked as objfs-mount reads them;
 *  - FUSE and kernel mount options objfs-mount passes to libfuse
 *    (default_permissions, noatime, max_read= ...): kept as text in `fuse`;
 *    ro and allow_other are both (a typed field, and passed on);
 *  - anything else: rejected, the error names the option.
 * A user's list (OBJFS_MOUNT_OPTS_USER: a volume's mountOptions and mount
 * flags, written by whoever writes StorageClasses and PVs) may set neither
 *  - the supervisor's: ready_fd=, credentials_file=, state_dir=, and
 *    crash_at= and user_resend (test only), set by the plugin that starts
 *    objfs-mount, nor
 *  - the node's: options that name a path or an address of the node or
 *    turn one of its protections off (spool_dir=, cache_dir=, log_file=,
 *    ca_file=, metrics=, insecure_skip_verify, and FUSE's suid, dev,
 *    allow_root and blkdev): a volume must not open the host, nor make
 *    set-user-id binaries and devices of objects any bucket user writes.
 * objfs-mount's own command line and fstab take every option.
 */
#ifndef OBJFS_MOUNTOPTS_H
#define OBJFS_MOUNTOPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/log.h"

/* One bit per option of objfs-mount (struct objfs_mount_opts.set), in
 * the rows' order (mountopts.def). */
enum objfs_mopt {
#define MOPT(id, name, field, kind, owner, group, max, target, meta, def, help) \
	OBJFS_MOPT_##id,
#include "common/mountopts.def"
#undef MOPT
	OBJFS_MOPT_COUNT
};

/* The options of one objfs-mount.  A field counts only when its bit is in
 * `set` (objfs_mount_opts_set* set both).  Strings are borrowed from the
 * caller, or after objfs_mount_opts_parse() point into `mem`; never NULL
 * when their bit is set.  OBJFS_MOUNT_OPTS_INIT is empty; release with
 * objfs_mount_opts_release(). */
struct objfs_mount_opts {
	uint64_t set;                   /* 1 << enum objfs_mopt */
	/* store */
	const char *endpoint;           /* S3 endpoint URL */
	const char *region;
	bool path_style;                /* addressing=path (else virtual) */
	const char *ca_file;
	bool insecure_skip_verify;
	bool unsigned_payload;
	bool signed_payload;
	uint64_t max_connections;
	uint64_t retries;
	double retry_timeout, stall_timeout, hedge_after;    /* seconds */
	double delete_delay;            /* seconds deletes wait to be batched */
	/* filesystem */
	bool ro;
	bool allow_other;
	uint64_t uid;
	uint64_t gid;
	unsigned umask;                 /* at most 0777 */
	uint64_t fsgroup;               /* new files' group (group-writable) */
	double attr_ttl, entry_ttl, negative_ttl, dir_ttl;   /* seconds */
	double volrec_ttl, usage_refresh;                    /* seconds */
	uint64_t mem_limit, readahead, part_size, spool_limit, cache_size;
	uint64_t readahead_chunks, upload_parallel, threads, prefetch;
	const char *spool_dir;
	double unsaved_keep;            /* seconds kept spools are kept */
	double upload_delay;            /* seconds a new file's upload waits
					   after its last close */
	double creds_refresh;           /* renew keys this long before expiry */
	bool no_sign_request;           /* no credentials: unsigned requests */
	const char *cache_dir;
	enum objfs_log_level log_level;
	const char *log_file;           /* detached: log here, not syslog */
	const char *metrics;            /* off, unix or [ADDR:]PORT */
	bool resume;                    /* a keeper holds the FUSE fd (the
					   default of objfs-mount) */
	bool noresume;                  /* no keeper: one process */
	bool nonempty;                  /* mount over a directory's files */
	bool xattrs;                    /* user.* extended attributes */
	const char *state_dir;          /* what a successor reads */
	const char *crash_at;           /* test only: SIGKILL in a request, or
					   at INIT (crash_at=init) */
	bool user_resend;               /* test only: the userspace RESEND */
	/* the supervisor's */
	uint64_t ready_fd;
	const char *credentials_file;
	/* the other FUSE and kernel options (not ro, allow_other), escaped
	 * -o text ("a,b=c") or NULL; parse fills it, the builder appends it
	 * as is */
	const char *fuse;
	void *mem;                      /* owned: strings parse copied */
};
/* The largest value of a seconds option (about 11.6 days): times 1000
 * it still fits an unsigned int of milliseconds. */
#define OBJFS_MOUNTOPT_SECONDS_MAX 1000000.0

#define OBJFS_MOUNT_OPTS_INIT { 0 }

/* Frees what parse allocated; borrowed strings are left alone.  Leaves o
 * empty. */
void objfs_mount_opts_release(struct objfs_mount_opts *o);

/* Whether option `which` was given. */
static inline bool objfs_mount_opts_has(const struct objfs_mount_opts *o,
					enum objfs_mopt which)
{
	return (o->set >> which) & 1;
}

/* The name of an option ("mem_limit"). */
const char *objfs_mount_opts_name(enum objfs_mopt which);

/* Marks an option set whose field the caller filled. */
static inline void objfs_mount_opts_mark(struct objfs_mount_opts *o,
					 enum objfs_mopt which)
{
	o->set |= (uint64_t)1 << which;
}

/* Set in the environment of an objfs-mount that a supervisor starts and
 * repairs (objfs-csi's fork and host-systemd runners): its servers die
 * with its keeper, and the supervisor, which watches the keeper, mounts
 * again; without it a server that loses its keeper starts a new one
 * (mount/keeper.c). */
#define OBJFS_MOUNT_SUPERVISED_ENV "OBJFS_SUPERVISED"

/* Who may set an option (see the head of this file). */
enum objfs_mopt_owner {
	OBJFS_MOPT_ANYONE,      /* a volume's options too */
	OBJFS_MOPT_NODE,        /* the node's configuration, a command line */
	OBJFS_MOPT_PLUGIN,      /* the supervisor that starts objfs-mount */
};

/* How an option's value is written and read (mountopts.def). */
enum objfs_mopt_kind {
	OBJFS_MOPT_K_FLAG,      /* bool, no value */
	OBJFS_MOPT_K_FUSEFLAG,  /* the same, and libfuse gets it too */
	OBJFS_MOPT_K_STR,       /* const char *, any string (may be empty) */
	OBJFS_MOPT_K_NUM,       /* uint64_t, printed in decimal */
	OBJFS_MOPT_K_BYTES,     /* uint64_t, printed with a unit */
	OBJFS_MOPT_K_SECONDS,   /* double */
	OBJFS_MOPT_K_OCTAL,     /* unsigned, at most 0777 */
	OBJFS_MOPT_K_ADDRESSING,        /* bool path_style */
	OBJFS_MOPT_K_LEVEL,     /* enum objfs_log_level */
};

/* --help's sections. */
enum objfs_mopt_group {
	OBJFS_MOPT_STORE,       /* store options (s3:// sources) */
	OBJFS_MOPT_FS,          /* filesystem options */
	OBJFS_MOPT_HIDDEN,      /* test hooks: not in --help */
};

/* One row of mountopts.def, as the parser and --help read it (static:
 * never freed). */
struct objfs_mopt_info {
	const char *name;
	enum objfs_mopt_kind kind;
	size_t off;                     /* of the field in objfs_mount_opts */
	enum objfs_mopt_owner owner;
	enum objfs_mopt_group group;
	double max;                     /* 0: the kind's own bound */
	const char *metavar;            /* "" for a flag */
	const char *def;                /* the default --help shows, or NULL */
	const char *help;
};

/* The row of option `which` (which < OBJFS_MOPT_COUNT). */
const struct objfs_mopt_info *objfs_mount_opts_info(enum objfs_mopt which);

/* Writes the value of option `which` in o as the builder writes it
 * ("32M", "0.5", "0022", "path"; "" for a flag) into out (cap bytes,
 * NUL-terminated, cut when longer). */
void objfs_mount_opts_value(const struct objfs_mount_opts *o,
			    enum objfs_mopt which, char *out, size_t cap);

/* Writes --help's lines for the options of group (mountopts.def's help,
 * wrapped to 79 columns) to f, each followed by "(default: D)" (the
 * row's default text, else the value in defaults when its bit is set
 * there) and "at most M" when the row has a bound. */
void objfs_mount_opts_usage(FILE *f, enum objfs_mopt_group group,
			    const struct objfs_mount_opts *defaults);

/* Flags of objfs_mount_opts_parse(). */
#define OBJFS_MOUNT_OPTS_USER 1u    /* a user's list: neither the node's
				       nor the supervisor's options */

/* Parses text (see above) into *o (empty; strings point into o->mem).
 * Later options replace earlier ones, as objfs-mount reads them.  0, or
 * EINVAL with err (cap bytes) naming the option and why (an unknown name,
 * a malformed value, a flag with a value, a value option without one, a
 * supervisor's option in a user's list), or ENOMEM.  Empty items ("a,,b")
 * are skipped.  On error *o is released.  err holds the option's name,
 * never its value. */
int objfs_mount_opts_parse(const char *text, unsigned flags,
			   struct objfs_mount_opts *o, char *err, size_t cap);

/* Checks a user's list (a volume's mountOptions, a mount flag, a
 * StorageClass's mountOptions parameter): letters, digits and "_.:/=+-@"
 * separated by commas (nothing to escape), and options a user may set
 * (OBJFS_MOUNT_OPTS_USER).  0 or EINVAL with err as above (ENOMEM too). */
int objfs_mount_opts_check_user(const char *list, char *err, size_t cap);

/* Applies one option (unescaped: "name" or "name=value", as libfuse's
 * parser hands it over) to *o.  1 when it is a FUSE option, which the
 * caller passes to libfuse (ro and allow_other too: both kinds); 0 when
 * it is objfs-mount's own (or empty); -1 with err as above.  The value is
 * copied into o->mem. */
int objfs_mount_opts_apply(struct objfs_mount_opts *o, const char *opt,
			   unsigned flags, char *err, size_t cap);

/* An S3 addressing style, path (*path_style true) or virtual: 0 or
 * EINVAL.  The only spelling of the words in objfs: -o addressing= and a
 * volume's addressingStyle (backend/s3conn.h) alike. */
int objfs_mount_opts_addressing_parse(const char *s, bool *path_style);
/* The name of a style: path or virtual. */
const char *objfs_mount_opts_addressing_name(bool path_style);

/* Appends the set options of o to buf (cap bytes, NUL-terminated; a comma
 * first when buf is not empty), in the table's order, values escaped,
 * then o->fuse.  Bytes are written in the largest unit that divides them
 * (32M, 1536K).  0 or ENOSPC (buf is left as it was). */
int objfs_mount_opts_build(const struct objfs_mount_opts *o, char *buf, size_t cap);

/* The command line of an objfs-mount a supervisor starts (objfs-csi's
 * fork and systemd runners, objfs-holder): PROGRAM -f -o OPTIONS SOURCE
 * MOUNTPOINT, without "-o OPTIONS" when options is "", then NULL.  The
 * strings are borrowed: they must outlive argv. */
#define OBJFS_MOUNT_ARGV_MAX 7
/* Fills argv (OBJFS_MOUNT_ARGV_MAX slots) and returns the number of
 * arguments before the NULL. */
size_t objfs_mount_argv(char *argv[OBJFS_MOUNT_ARGV_MAX], const char *program,
			const char *options, const char *source,
			const char *mountpoint);

#endif
