/*
 * clock.h - the monotonic clock in seconds and a sleep that rides out
 * signals: the one copy of each, for every folder (csi, backend, fs,
 * mount).  Milliseconds since boot and condition-variable deadlines are
 * objfs_now_ms() and objfs_deadline_ms() in common/io.h.
 *
 * Header only (static inline): it includes nothing else from src/.
 */
#ifndef OBJFS_COMMON_CLOCK_H
#define OBJFS_COMMON_CLOCK_H

#include <errno.h>
#include <time.h>

/* CLOCK_MONOTONIC in seconds: for ages and time-to-live checks. */
static inline double objfs_now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps ms milliseconds, the whole of them even when a signal comes. */
static inline void objfs_sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

#endif
