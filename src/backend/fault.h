/*
 * fault.h - control of the fault layer (fault.c).
 *
 * The fault layer wraps a store and, per operation, can fail calls with a
 * chosen errno (the next N calls, or each call with probability P drawn
 * from a seeded, deterministic generator), delay calls, and cut gets short
 * (deliver the first K bytes, then fail with EIO), and make listings lag
 * behind writes as Swift's container listings do.  It counts the calls of
 * every operation.  Used by retry tests and by FUSE/CSI tests.
 *
 * The control handle is created with the store by objfs_fault_store_create()
 * (backend.h), is owned by the store and stays valid until the store is
 * destroyed.  Every function here is thread-safe and may be called while
 * ops run.  A failed call never reaches the inner store.
 */
#ifndef OBJFS_FAULT_H
#define OBJFS_FAULT_H

#include <stdint.h>

#include "backend/backend.h"

enum objfs_fault_op {
	OBJFS_FOP_GET = 0,
	OBJFS_FOP_PUT,
	OBJFS_FOP_HEAD,
	OBJFS_FOP_LIST,
	OBJFS_FOP_COPY,
	OBJFS_FOP_DEL,
	OBJFS_FOP_DEL_MANY,
	OBJFS_FOP_MPU_CREATE,
	OBJFS_FOP_MPU_PART,
	OBJFS_FOP_MPU_COMPLETE,
	OBJFS_FOP_MPU_ABORT,
	OBJFS_FOP_MPU_PART_COPY,
	OBJFS_FOP_COUNT,
	/* Applies a rule to every operation. */
	OBJFS_FOP_ALL = OBJFS_FOP_COUNT,
};

/* Fails the next n calls of op with err (replacing any earlier count). */
void objfs_fault_fail_next(struct objfs_fault *f, enum objfs_fault_op op,
			   unsigned n, int err);
/* Fails each call of op with probability p (0 disables) with err; draws
 * from a generator seeded with seed, so a run is reproducible. */
void objfs_fault_fail_prob(struct objfs_fault *f, enum objfs_fault_op op,
			   double p, int err, uint64_t seed);
/* Delays each call of op by ms milliseconds (0 disables). */
void objfs_fault_delay(struct objfs_fault *f, enum objfs_fault_op op,
		       unsigned ms);
/* Cuts the next n gets (0: every get until cleared with k = UINT64_MAX)
 * after k bytes: they deliver the first k bytes of their range and fail
 * with EIO.  Gets of k bytes or less are not affected. */
void objfs_fault_short_read(struct objfs_fault *f, uint64_t k, unsigned n);
/* The next n gets hang for ms milliseconds before they run (a stalled
 * transfer); a fired cancel of the get ends the hang with ECANCELED. */
void objfs_fault_stall(struct objfs_fault *f, unsigned n, unsigned ms);
/* As objfs_fault_stall, counting only gets of a range not stalled before
 * (key aside): a get of a range that hung already, a hedge of it, runs
 * at once, whatever the order the two reach the layer in. */
void objfs_fault_stall_ranges(struct objfs_fault *f, unsigned n, unsigned ms);
/* The next get hangs first_ms, the n - 1 after it then_ms each: an order
 * of answers that no scheduling delay under first_ms can swap. */
void objfs_fault_stall_then(struct objfs_fault *f, unsigned n,
			    unsigned first_ms, unsigned then_ms);
/* Listings lag ms milliseconds behind writes (0: they do not): a LIST
 * shows every key that a put, copy, multipart completion or delete
 * changed less than ms ago as it was before that change (a new key is
 * hidden, a deleted one still shown with its old size, ETag and
 * Last-Modified), with the common prefixes that follow from that.  Such a
 * LIST is answered by the layer from a flat listing of the inner store
 * (its continuation tokens are the layer's own).  Calls of op other than
 * LIST are unchanged (a HEAD or GET sees a write at once, as on Swift). */
void objfs_fault_list_lag(struct objfs_fault *f, unsigned ms);
/* Calls of op so far (failed ones included); OBJFS_FOP_ALL sums them. */
uint64_t objfs_fault_calls(struct objfs_fault *f, enum objfs_fault_op op);
/* Bytes of the puts and parts forwarded to the inner store so far (what
 * a client would have sent; part copies send none). */
uint64_t objfs_fault_sent(struct objfs_fault *f);
/* Clears every rule (the listing lag too) and counter. */
void objfs_fault_reset(struct objfs_fault *f);

#endif
