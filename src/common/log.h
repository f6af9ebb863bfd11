/*
 * log.h - the one logger of objfs.
 *
 * Every component gets a `struct objfs_log *` injected; nothing logs through
 * a global.  Lines go to one file descriptor (stderr by default) as JSON, one
 * object per line, which log collectors (fluent-bit, vector, promtail) parse
 * without configuration:
 *
 *   {"ts":"2026-11-22T10:41:19.123Z","level":"info","sub":"csi","msg":"..."}
 *
 * A NULL logger is valid everywhere and drops every line, so unit tests need
 * no setup.  The logger is thread-safe: one write(2) per line.
 *
 * Secrets never reach the logger: callers log key ids, never keys.
 */
#ifndef OBJFS_LOG_H
#define OBJFS_LOG_H

#include <stdarg.h>

enum objfs_log_level {
	OBJFS_LOG_DEBUG = 0,
	OBJFS_LOG_INFO = 1,
	OBJFS_LOG_WARN = 2,
	OBJFS_LOG_ERROR = 3,
};

struct objfs_log;

/* Creates a logger writing to fd (not closed by destroy) that drops lines
 * below min.  Returns NULL only when out of memory.  Free with
 * objfs_log_destroy(). */
struct objfs_log *objfs_log_create(int fd, enum objfs_log_level min);
void objfs_log_destroy(struct objfs_log *log);
/* Sends later lines to fd (not closed by destroy), or with fd < 0 to
 * syslog(3) as ident (facility daemon, the level as priority): for a
 * process that detaches from its terminal (ends objfs_log_also).  Call
 * before other threads log. */
void objfs_log_redirect(struct objfs_log *log, int fd, const char *ident);
/* Also writes lines at min or above to fd (not closed by destroy; -1:
 * no longer), until the next objfs_log_redirect(): a process that logs
 * to its file or syslog from the start shows its warnings and errors on
 * the terminal until it detaches.  Call before other threads log. */
void objfs_log_also(struct objfs_log *log, int fd, enum objfs_log_level min);

/* Parses "debug", "info", "warn"/"warning", "error" (any case).
 * Returns 0 or EINVAL. */
int objfs_log_parse_level(const char *s, enum objfs_log_level *out);
const char *objfs_log_level_name(enum objfs_log_level level);
int objfs_log_enabled(const struct objfs_log *log, enum objfs_log_level level);

/* Writes one line.  sub is a short subsystem tag ("csi", "s3", "fuse"). */
void objfs_logf(struct objfs_log *log, enum objfs_log_level level,
		const char *sub, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void objfs_vlogf(struct objfs_log *log, enum objfs_log_level level,
		 const char *sub, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* An error line that is the cause of a failure (objfs-mount's reason not
 * to mount), with the errno's number and name as fields of their own,
 *   {"ts":...,"level":"error","sub":"mount","errno":13,"cause":"EACCES","msg":"..."}
 * so a supervisor reading the log (objfs-csi's node plugin) finds the
 * cause among later lines and answers with the matching code. */
void objfs_log_cause(struct objfs_log *log, const char *sub, int err,
		     const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define objfs_debug(log, sub, ...) objfs_logf((log), OBJFS_LOG_DEBUG, (sub), __VA_ARGS__)
#define objfs_info(log, sub, ...)  objfs_logf((log), OBJFS_LOG_INFO, (sub), __VA_ARGS__)
#define objfs_warn(log, sub, ...)  objfs_logf((log), OBJFS_LOG_WARN, (sub), __VA_ARGS__)
#define objfs_error(log, sub, ...) objfs_logf((log), OBJFS_LOG_ERROR, (sub), __VA_ARGS__)

#endif
