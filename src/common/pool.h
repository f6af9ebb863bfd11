/*
 * pool.h - a fixed set of worker threads running queued tasks, plus a
 * budget of bytes (the mount's memory limit for read-ahead buffers).
 *
 * Tasks run in FIFO order on any worker.  A group counts tasks so a caller
 * can wait for a batch (parallel HEADs, parallel copies).  Workers never
 * block on each other: a task must not wait for another queued task.
 */
#ifndef OBJFS_COMMON_POOL_H
#define OBJFS_COMMON_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct objfs_pool;

/* Counts outstanding tasks of a batch.  objfs_group_init/objfs_group_wait
 * (which also destroys its sync objects) bracket its use. */
struct objfs_group {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned pending;
};
void objfs_group_init(struct objfs_group *g);
/* Waits until every task submitted with g has finished, then releases g. */
void objfs_group_wait(struct objfs_group *g);

/* Starts n (>= 1) workers.  0 or an errno; free with objfs_pool_destroy(),
 * which runs the tasks still queued, then joins the workers. */
int objfs_pool_create(unsigned n, struct objfs_pool **out);
void objfs_pool_destroy(struct objfs_pool *p);
/* Queues fn(arg); when g is not NULL the task counts in g.  0 or ENOMEM
 * (then nothing was queued). */
int objfs_pool_submit(struct objfs_pool *p, struct objfs_group *g,
		      void (*fn)(void *arg), void *arg);

/* A byte budget.  Thread-safe. */
struct objfs_budget {
	pthread_mutex_t mu;
	uint64_t limit;      /* 0: no limit */
	uint64_t used;
	uint64_t peak;
};
void objfs_budget_init(struct objfs_budget *b, uint64_t limit);
void objfs_budget_release(struct objfs_budget *b);
/* Takes n bytes if they fit: true, else false (nothing taken). */
bool objfs_budget_take(struct objfs_budget *b, uint64_t n);
void objfs_budget_give(struct objfs_budget *b, uint64_t n);
uint64_t objfs_budget_used(struct objfs_budget *b);

#endif
