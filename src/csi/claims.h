/*
 * claims.h - the in-progress set of the CSI services: at most one call
 * works on a volume (or name, or snapshot) at a time; a second call that
 * finds its key claimed answers ABORTED (CSI's "operation pending").
 *
 * A claim is a string key; the set holds private copies.  objfs_claims_take()
 * claims several keys at once, all or none, so a call that needs a name,
 * an id and a source never holds part of them.  The holder alone drops
 * its keys.  The controller and the node each own one set; keys of one
 * set never mean anything to another.
 *
 * Thread-safe: every function takes the set's own mutex and none blocks
 * while holding it.  objfs_claims_init()/objfs_claims_release() pair;
 * release frees every key still claimed (the service is going away).
 */
#ifndef OBJFS_CSI_CLAIMS_H
#define OBJFS_CSI_CLAIMS_H

#include <pthread.h>
#include <stddef.h>

struct objfs_claims {
	pthread_mutex_t mu;
	char **keys;                    /* protected by mu; owned */
	size_t n;                       /* protected by mu */
};

/* 0 or ENOMEM. */
int objfs_claims_init(struct objfs_claims *c);
void objfs_claims_release(struct objfs_claims *c);
/* Claims every non-NULL key of keys[0..n), or none: 0, EBUSY (one is
 * claimed already) or ENOMEM. */
int objfs_claims_take(struct objfs_claims *c, const char *const *keys, size_t n);
/* Drops the non-NULL keys of keys[0..n) (those not claimed are ignored). */
void objfs_claims_drop(struct objfs_claims *c, const char *const *keys, size_t n);

#endif
