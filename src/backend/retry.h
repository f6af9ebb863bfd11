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

/* How long a failure that finds nothing at the store's address (refused,
 * no route, no name) is retried before the store has answered once: the
 * first contact of a mount or plugin fails fast with its cause (retry.c). */
#define OBJFS_RETRY_FIRST_CONTACT_MS 10000

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

/* The retry budget (a token bucket per retry layer, as the AWS SDKs'
 * standard retry mode): what a retry after err takes from it
 * (OBJFS_RETRY_COST_TIMEOUT after a timeout or a lost or refused
 * connection, which say the store is unhealthy; OBJFS_RETRY_COST after
 * an answer such as a 5xx or throttling), and what an answer without a
 * retry gives back. */
#define OBJFS_RETRY_COST 5
#define OBJFS_RETRY_COST_TIMEOUT 10
#define OBJFS_RETRY_EARN 1
unsigned objfs_retry_cost(int err);

/* The sleep before a retry the budget could not pay for: equal jitter at
 * the cap, max_delay_ms / 2 + rnd mod (max_delay_ms / 2 + 1), so such
 * retries come at most about once per max_delay_ms per call.  cfg must
 * be resolved. */
unsigned objfs_retry_wait_ms(const struct objfs_retry_config *cfg,
			     uint64_t rnd);

/* The budget of s (made by objfs_retry_store_create()): the tokens it
 * holds now, and the retries that found it short and waited
 * objfs_retry_wait_ms() instead, since creation.  0 or EINVAL. */
int objfs_retry_store_budget(struct objfs_store *s, unsigned *tokens,
			     uint64_t *waits);

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
