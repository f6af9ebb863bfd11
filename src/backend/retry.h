/*
 * retry.h - the retry policy of the retry layer (retry.c), exposed so unit
 * tests can check it directly, and the test hooks of the layer.
 */
#ifndef OBJFS_RETRY_H
#define OBJFS_RETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"

/* Whether a failure with err is worth another try: transient transport and
 * server errors (EAGAIN, EIO, ETIMEDOUT, ECONNRESET, ECONNREFUSED, EPIPE,
 * EHOSTUNREACH).  Never ENOENT, EACCES, EINVAL, ESTALE, ERANGE, EEXIST. */
bool objfs_retry_retryable(int err);

/* cfg with every 0 replaced by its default (see backend.h). */
struct objfs_retry_config objfs_retry_config_resolve(
	const struct objfs_retry_config *cfg);

/* The sleep before try number attempt + 1, after `attempt` (>= 1) failed
 * tries: full jitter over a capped exponential,
 *   cap = min(max_delay_ms, base_delay_ms * 2^(attempt-1)),
 *   delay = rnd mod (cap + 1),
 * so 0 <= delay <= cap.  cfg must be resolved. */
unsigned objfs_retry_delay_ms(const struct objfs_retry_config *cfg,
			      unsigned attempt, uint64_t rnd);

/* Test hooks: a sleep and a monotonic clock in milliseconds, replacing
 * nanosleep and CLOCK_MONOTONIC (so tests never sleep for real).  Set them
 * before the store is used; arg is not owned. */
struct objfs_retry_hooks {
	void (*sleep_ms)(void *arg, unsigned ms);
	uint64_t (*now_ms)(void *arg);
	void *arg;
};
/* s must be a store made by objfs_retry_store_create(); 0 or EINVAL. */
int objfs_retry_store_set_hooks(struct objfs_store *s,
				const struct objfs_retry_hooks *hooks);

#endif
