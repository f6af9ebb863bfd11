/*
 * log.c - JSON-lines logger (see log.h).
 *
 * Each line is formatted into a bounded stack buffer (messages longer than
 * OBJFS_LOG_LINE_MAX are cut and end with "..."), then written with a single
 * write(2), so lines from different threads never interleave.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

#define OBJFS_LOG_LINE_MAX 4096

struct objfs_log {
	int fd;                         /* -1: syslog(3) */
	enum objfs_log_level min;
	int also_fd;                    /* -1: none (objfs_log_also) */
	enum objfs_log_level also_min;
};

struct objfs_log *objfs_log_create(int fd, enum objfs_log_level min)
{
	struct objfs_log *log = calloc(1, sizeof(*log));

	if (log == NULL)
		return NULL;
	log->fd = fd;
	log->min = min;
	log->also_fd = -1;
	return log;
}

void objfs_log_also(struct objfs_log *log, int fd, enum objfs_log_level min)
{
	if (log == NULL)
		return;
	log->also_fd = fd;
	log->also_min = min;
}

void objfs_log_redirect(struct objfs_log *log, int fd, const char *ident)
{
	if (log == NULL)
		return;
	if (fd < 0)
		openlog(ident != NULL ? ident : "objfs", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log->fd = fd < 0 ? -1 : fd;
	log->also_fd = -1;      /* the terminal is left */
}

void objfs_log_destroy(struct objfs_log *log)
{
	free(log);
}

int objfs_log_parse_level(const char *s, enum objfs_log_level *out)
{
	if (s == NULL)
		return EINVAL;
	if (strcasecmp(s, "debug") == 0)
		*out = OBJFS_LOG_DEBUG;
	else if (strcasecmp(s, "info") == 0)
		*out = OBJFS_LOG_INFO;
	else if (strcasecmp(s, "warn") == 0 || strcasecmp(s, "warning") == 0)
		*out = OBJFS_LOG_WARN;
	else if (strcasecmp(s, "error") == 0)
		*out = OBJFS_LOG_ERROR;
	else
		return EINVAL;
	return 0;
}

const char *objfs_log_level_name(enum objfs_log_level level)
{
	switch (level) {
	case OBJFS_LOG_DEBUG:
		return "debug";
	case OBJFS_LOG_INFO:
		return "info";
	case OBJFS_LOG_WARN:
		return "warn";
	case OBJFS_LOG_ERROR:
		return "error";
	}
	return "info";
}

int objfs_log_enabled(const struct objfs_log *log, enum objfs_log_level level)
{
	return log != NULL && level >= log->min;
}

/* Appends s to buf[*len..cap) as JSON string content.  Stops (without
 * splitting an escape) when the buffer is full. */
static void json_escape(char *buf, size_t *len, size_t cap, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = *len;

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[7];
		size_t elen;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			elen = 2;
		} else if (c == '\n') {
			memcpy(esc, "\\n", 2);
			elen = 2;
		} else if (c == '\t') {
			memcpy(esc, "\\t", 2);
			elen = 2;
		} else if (c < 0x20 || c == 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			elen = 6;
		} else {
			esc[0] = (char)c;
			elen = 1;
		}
		if (n + elen >= cap)
			break;
		memcpy(buf + n, esc, elen);
		n += elen;
	}
	*len = n;
}

/* One line; err > 0 adds its errno fields (objfs_log_cause). */
static void emit(struct objfs_log *log, enum objfs_log_level level,
		 const char *sub, int err, const char *fmt, va_list ap)
{
	char msg[OBJFS_LOG_LINE_MAX];
	char line[OBJFS_LOG_LINE_MAX + 256];
	struct timespec ts;
	struct tm tm;
	size_t len;
	int n;

	if (!objfs_log_enabled(log, level))
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(msg))
		memcpy(msg + sizeof(msg) - 4, "...", 4);

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line),
		     "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\",\"sub\":\"",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
		     objfs_log_level_name(level));
	if (n < 0)
		return;
	len = (size_t)n;
	json_escape(line, &len, sizeof(line) - 16, sub != NULL ? sub : "");
	if (err > 0) {
		const char *name = strerrorname_np(err);

		n = snprintf(line + len, sizeof(line) - 16 - len,
			     "\",\"errno\":%d,\"cause\":\"%s", err,
			     name != NULL ? name : "?");
		if (n > 0 && (size_t)n < sizeof(line) - 16 - len)
			len += (size_t)n;
	}
	memcpy(line + len, "\",\"msg\":\"", 9);
	len += 9;
	json_escape(line, &len, sizeof(line) - 4, msg);
	memcpy(line + len, "\"}\n", 3);
	len += 3;
	if (log->also_fd >= 0 && level >= log->also_min)
		(void)!write(log->also_fd, line, len);      /* nowhere to say */
	if (log->fd < 0) {
		static const int prio[] = { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR };

		/* The journal adds the time: the JSON object without it. */
		line[len - 1] = '\0';
		syslog(prio[level], "%s", line);
		return;
	}
	/* One write per line; a short write to a pipe of a line under
	 * PIPE_BUF cannot happen, and a failed write has nowhere to go. */
	if (write(log->fd, line, len) < 0)
		return;
}

void objfs_vlogf(struct objfs_log *log, enum objfs_log_level level,
		 const char *sub, const char *fmt, va_list ap)
{
	emit(log, level, sub, 0, fmt, ap);
}

void objfs_log_cause(struct objfs_log *log, const char *sub, int err,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(log, OBJFS_LOG_ERROR, sub, err, fmt, ap);
	va_end(ap);
}

void objfs_logf(struct objfs_log *log, enum objfs_log_level level,
		const char *sub, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	objfs_vlogf(log, level, sub, fmt, ap);
	va_end(ap);
}
