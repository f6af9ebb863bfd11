/*
 * pool.c - worker threads and byte budgets (see pool.h).
 *
 * State: a FIFO of tasks under p->mu; workers sleep on p->cv while it is
 * empty; `stopping` makes idle workers exit once the queue is drained.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "common/pool.h"

struct task {
	struct task *next;
	void (*fn)(void *arg);
	void *arg;
	struct objfs_group *g;
};

struct objfs_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct task *head, *tail;    /* protected by mu */
	bool stopping;               /* protected by mu */
	unsigned n;
	pthread_t *threads;
};

void objfs_group_init(struct objfs_group *g)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->pending = 0;
}

void objfs_group_wait(struct objfs_group *g)
{
	pthread_mutex_lock(&g->mu);
	while (g->pending > 0)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

static void *worker(void *arg)
{
	struct objfs_pool *p = arg;
	struct task *t;

	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (p->head == NULL && !p->stopping)
			pthread_cond_wait(&p->cv, &p->mu);
		t = p->head;
		if (t == NULL) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		p->head = t->next;
		if (p->head == NULL)
			p->tail = NULL;
		pthread_mutex_unlock(&p->mu);
		t->fn(t->arg);
		if (t->g != NULL) {
			pthread_mutex_lock(&t->g->mu);
			if (--t->g->pending == 0)
				pthread_cond_broadcast(&t->g->cv);
			pthread_mutex_unlock(&t->g->mu);
		}
		free(t);
	}
	return NULL;
}

int objfs_pool_create(unsigned n, struct objfs_pool **out)
{
	struct objfs_pool *p;
	unsigned i;
	int err;

	if (n == 0)
		n = 1;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return ENOMEM;
	p->threads = calloc(n, sizeof(*p->threads));
	if (p->threads == NULL) {
		free(p);
		return ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (i = 0; i < n; i++) {
		err = pthread_create(&p->threads[i], NULL, worker, p);
		if (err != 0) {
			p->n = i;
			objfs_pool_destroy(p);
			return err;
		}
	}
	p->n = n;
	*out = p;
	return 0;
}

void objfs_pool_destroy(struct objfs_pool *p)
{
	unsigned i;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (i = 0; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->threads);
	free(p);
}

int objfs_pool_submit(struct objfs_pool *p, struct objfs_group *g,
		      void (*fn)(void *arg), void *arg)
{
	struct task *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return ENOMEM;
	t->fn = fn;
	t->arg = arg;
	t->g = g;
	if (g != NULL) {
		pthread_mutex_lock(&g->mu);
		g->pending++;
		pthread_mutex_unlock(&g->mu);
	}
	pthread_mutex_lock(&p->mu);
	if (p->tail != NULL)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void objfs_budget_init(struct objfs_budget *b, uint64_t limit)
{
	pthread_mutex_init(&b->mu, NULL);
	b->limit = limit;
	b->used = 0;
	b->peak = 0;
}

void objfs_budget_release(struct objfs_budget *b)
{
	pthread_mutex_destroy(&b->mu);
}

bool objfs_budget_take(struct objfs_budget *b, uint64_t n)
{
	bool ok;

	pthread_mutex_lock(&b->mu);
	ok = b->limit == 0 || (b->used <= b->limit && n <= b->limit - b->used);
	if (ok) {
		b->used += n;
		if (b->used > b->peak)
			b->peak = b->used;
	}
	pthread_mutex_unlock(&b->mu);
	return ok;
}

void objfs_budget_give(struct objfs_budget *b, uint64_t n)
{
	pthread_mutex_lock(&b->mu);
	b->used = n > b->used ? 0 : b->used - n;
	pthread_mutex_unlock(&b->mu);
}

uint64_t objfs_budget_used(struct objfs_budget *b)
{
	uint64_t u;

	pthread_mutex_lock(&b->mu);
	u = b->used;
	pthread_mutex_unlock(&b->mu);
	return u;
}
