/* fuselog.c - libfuse's log into objfs's logger (see fuselog.h). */
#define FUSE_USE_VERSION 312
#include "config.h"

#include <fuse_log.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "fs/fuselog.h"

#define LINE_MAX_LEN 1024

/* libfuse's log function takes no user data: see fuselog.h. */
static struct objfs_log *fuselog_target;

static enum objfs_log_level level_of(enum fuse_log_level l)
{
	switch (l) {
	case FUSE_LOG_EMERG:
	case FUSE_LOG_ALERT:
	case FUSE_LOG_CRIT:
	case FUSE_LOG_ERR:
		return OBJFS_LOG_ERROR;
	case FUSE_LOG_WARNING:
		return OBJFS_LOG_WARN;
	case FUSE_LOG_NOTICE:
	case FUSE_LOG_INFO:
		return OBJFS_LOG_INFO;
	default:
		return OBJFS_LOG_DEBUG;
	}
}

/* libfuse writes some lines in several calls ("fuse: unknown option(s):
 * `", "-o ", "x'\n"): pieces are gathered per thread until the newline. */
struct pending {
	char line[LINE_MAX_LEN];
	size_t len;
	enum objfs_log_level level;
};
static __thread struct pending fuselog_pending;

static void fuselog_line(enum fuse_log_level l, const char *fmt, va_list ap)
{
	struct objfs_log *log = fuselog_target;
	struct pending *p = &fuselog_pending;
	size_t room = sizeof(p->line) - p->len;
	int n;

	if (log == NULL)
		return;
	if (p->len == 0)
		p->level = level_of(l);
	n = vsnprintf(p->line + p->len, room, fmt, ap);
	if (n < 0)
		return;
	p->len += (size_t)n < room ? (size_t)n : room - 1;
	if (p->len + 1 < sizeof(p->line) && (p->len == 0 ||
					     p->line[p->len - 1] != '\n'))
		return;
	/* A log record has no trailing newline. */
	while (p->len > 0 && (p->line[p->len - 1] == '\n' ||
			      p->line[p->len - 1] == '\r'))
		p->line[--p->len] = '\0';
	if (p->len > 0 && objfs_log_enabled(log, p->level))
		objfs_logf(log, p->level, "fuse", "%s", p->line);
	p->len = 0;
}

void objfs_fuselog_route(struct objfs_log *log)
{
	fuselog_target = log;
	fuse_set_log_func(log != NULL ? fuselog_line : NULL);
}
