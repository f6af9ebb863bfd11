/*
 * limit.h - the limit layer (limit.c): an adaptive bound on the requests
 * in flight to one store (AIMD on latency and errors), and its test hooks.
 */
#ifndef OBJFS_LIMIT_H
#define OBJFS_LIMIT_H

#include <stdint.h>

#include "backend/backend.h"

/* The limit never goes under this. */
#define OBJFS_LIMIT_MIN 2
/* Latency samples kept for the baseline (their median). */
#define OBJFS_LIMIT_SAMPLES 64
/* Samples needed before latency counts (until then only errors do). */
#define OBJFS_LIMIT_MIN_SAMPLES 8
/* An answer is fast at most max(TARGET_K x p50, FLOOR_MS): it counts
 * towards an increase; slow from max(FAR_K x p50, FAR_FLOOR_MS) on: a
 * decrease. */
#define OBJFS_LIMIT_TARGET_K 2
#define OBJFS_LIMIT_FAR_K 4
#define OBJFS_LIMIT_FLOOR_MS 20
#define OBJFS_LIMIT_FAR_FLOOR_MS 200
/* The decrease: limit = limit x 7 / 10 (at least OBJFS_LIMIT_MIN). */
#define OBJFS_LIMIT_DECREASE_NUM 7
#define OBJFS_LIMIT_DECREASE_DEN 10

struct objfs_limit_config {
	unsigned max;               /* the start and the ceiling; 0: 16 (the
				       S3 leaf's max_connections); raised to
				       OBJFS_LIMIT_MIN */
	struct objfs_metrics *metrics;  /* the limit and the waits are
					   exported here; NULL: not.
					   Borrowed. */
};

/* Wraps inner (taking ownership, also on failure). */
int objfs_limit_store_create(struct objfs_store *inner,
			     const struct objfs_limit_config *cfg,
			     struct objfs_store **out);

/* The state of s (made by objfs_limit_store_create()): the current limit,
 * the requests in flight, and the requests that waited for a slot since
 * creation.  Any pointer may be NULL.  0 or EINVAL. */
int objfs_limit_store_stats(struct objfs_store *s, unsigned *limit,
			    unsigned *in_flight, uint64_t *waits);

/* Test hook: a monotonic clock in milliseconds (latencies), replacing
 * CLOCK_MONOTONIC.  Set it before the store is used; arg is not owned.
 * 0 or EINVAL. */
int objfs_limit_store_set_clock(struct objfs_store *s,
				uint64_t (*now_ms)(void *arg), void *arg);

#endif
