/*
 * delq.h - the deferred-delete layer (delq.c): unlinks answered at once,
 * their keys deleted later in DeleteObjects batches.
 *
 * Ownership: objfs_delq_store_create() takes inner (also on failure); the
 * layer's sender thread runs until objfs_store_destroy(), which first
 * sends every key still queued.  cfg->metrics is borrowed and must
 * outlive the store.
 */
#ifndef OBJFS_DELQ_H
#define OBJFS_DELQ_H

#include <stddef.h>

#include "backend/backend.h"

/* Keys one DeleteObjects carries, and keys queued before a caller of
 * objfs_store_del_deferred() waits for room. */
#define OBJFS_DELQ_BATCH OBJFS_DELETE_BATCH
#define OBJFS_DELQ_QUEUE_MAX 10000

/* Told once per del_deferred call when the layer is done with it: err 0
 * (the store deleted it, a write to the key cancelled it, or it was queued
 * already) or the errno of a delete that failed (the key is visible
 * again).  Runs on the sender thread or on the caller's, with no lock of
 * the layer held but its own (the callback may not call the layer); for
 * keys a barrier waits for, before the barrier returns. */
typedef void (*objfs_delq_done_fn)(void *arg, const char *key, int err);

struct objfs_delq_config {
	unsigned delay_ms;              /* oldest key's wait before a batch
					   goes; 0: deletes are synchronous */
	size_t queue_max;               /* 0: OBJFS_DELQ_QUEUE_MAX */
	struct objfs_metrics *metrics;  /* NULL: nothing exported */
};

int objfs_delq_store_create(struct objfs_store *inner,
			    const struct objfs_delq_config *cfg,
			    struct objfs_log *log, struct objfs_store **out);

/* Sets the done callback of the delq layer s (one made by
 * objfs_delq_store_create); ENOENT when s is not one.  Set it before the
 * first deferred delete; once it returns, the old callback runs no more
 * (fn NULL: none). */
int objfs_delq_set_done(struct objfs_store *s, objfs_delq_done_fn fn,
			void *arg);

/* Keys queued or in flight (tests, metrics). */
size_t objfs_delq_pending(struct objfs_store *s);

#endif
