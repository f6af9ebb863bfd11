/*
 * mountopts.h - the -o options of objfs-mount: the contract between the
 * node plugin, which builds them (objfs-csi: csi/node.c, csi/mounter.c),
 * and objfs-mount, which parses them, across a process boundary.  One
 * table (mountopts.c) names every option once; docs/objfs-mount.md
 * describes them.  The S3 addressing styles are spelled here only
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

#include "common/log.h"

/* One bit per option of objfs-mount (struct objfs_mount_opts.set). */
enum objfs_mopt {
	OBJFS_MOPT_ALLOW_OTHER,
	OBJFS_MOPT_RO,
	OBJFS_MOPT_UID,
	OBJFS_MOPT_GID,
	OBJFS_MOPT_UMASK,
	OBJFS_MOPT_FSGROUP,
	OBJFS_MOPT_MEM_LIMIT,
	OBJFS_MOPT_SPOOL_DIR,
	OBJFS_MOPT_ENDPOINT,
	OBJFS_MOPT_REGION,
	OBJFS_MOPT_ADDRESSING,
	OBJFS_MOPT_CA_FILE,
	OBJFS_MOPT_INSECURE_SKIP_VERIFY,
	OBJFS_MOPT_UNSIGNED_PAYLOAD,
	OBJFS_MOPT_SIGNED_PAYLOAD,
	OBJFS_MOPT_MAX_CONNECTIONS,
	OBJFS_MOPT_RETRIES,
	OBJFS_MOPT_RETRY_TIMEOUT,
	OBJFS_MOPT_STALL_TIMEOUT,
	OBJFS_MOPT_HEDGE_AFTER,
	OBJFS_MOPT_DELETE_DELAY,
	OBJFS_MOPT_ATTR_TTL,
	OBJFS_MOPT_ENTRY_TTL,
	OBJFS_MOPT_NEGATIVE_TTL,
	OBJFS_MOPT_DIR_TTL,
	OBJFS_MOPT_READAHEAD,
	OBJFS_MOPT_READAHEAD_CHUNKS,
	OBJFS_MOPT_PREFETCH,
	OBJFS_MOPT_PART_SIZE,
	OBJFS_MOPT_UPLOAD_PARALLEL,
	OBJFS_MOPT_UPLOAD_DELAY,
	OBJFS_MOPT_THREADS,
	OBJFS_MOPT_SPOOL_LIMIT,
	OBJFS_MOPT_UNSAVED_KEEP,
	OBJFS_MOPT_CREDS_REFRESH,
	OBJFS_MOPT_NO_SIGN_REQUEST,
	OBJFS_MOPT_CACHE_DIR,
	OBJFS_MOPT_CACHE_SIZE,
	OBJFS_MOPT_VOLREC_TTL,
	OBJFS_MOPT_USAGE_REFRESH,
	OBJFS_MOPT_LOG_LEVEL,
	OBJFS_MOPT_LOG_FILE,
	OBJFS_MOPT_METRICS,
	OBJFS_MOPT_RESUME,
	OBJFS_MOPT_NORESUME,
	OBJFS_MOPT_NONEMPTY,
	OBJFS_MOPT_XATTRS,
	OBJFS_MOPT_STATE_DIR,
	OBJFS_MOPT_CRASH_AT,
	OBJFS_MOPT_USER_RESEND,
	OBJFS_MOPT_READY_FD,
	OBJFS_MOPT_CREDENTIALS_FILE,
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

#endif
