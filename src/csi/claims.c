/* claims.c - the in-progress set of the CSI services (see claims.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "csi/claims.h"

int objfs_claims_init(struct objfs_claims *c)
{
	memset(c, 0, sizeof(*c));
	return pthread_mutex_init(&c->mu, NULL) != 0 ? ENOMEM : 0;
}

void objfs_claims_release(struct objfs_claims *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->keys[i]);
	free(c->keys);
	c->keys = NULL;
	c->n = 0;
	pthread_mutex_destroy(&c->mu);
}

/* Under mu. */
static bool has(const struct objfs_claims *c, const char *k)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (strcmp(c->keys[i], k) == 0)
			return true;
	}
	return false;
}

/* Under mu. */
static void drop(struct objfs_claims *c, const char *k)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (strcmp(c->keys[i], k) == 0) {
			free(c->keys[i]);
			c->keys[i] = c->keys[--c->n];
			return;
		}
	}
}

int objfs_claims_take(struct objfs_claims *c, const char *const *keys, size_t n)
{
	char **grown;
	size_t i, done = 0;
	int err = 0;

	pthread_mutex_lock(&c->mu);
	for (i = 0; i < n; i++) {
		if (keys[i] != NULL && has(c, keys[i])) {
			err = EBUSY;
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		if (keys[i] == NULL)
			continue;
		grown = realloc(c->keys, (c->n + 1) * sizeof(*grown));
		if (grown == NULL) {
			err = ENOMEM;
			break;
		}
		c->keys = grown;
		c->keys[c->n] = strdup(keys[i]);
		if (c->keys[c->n] == NULL) {
			err = ENOMEM;
			break;
		}
		c->n++;
		done = i + 1;
	}
	if (err != 0) {
		for (i = 0; i < done; i++) {
			if (keys[i] != NULL)
				drop(c, keys[i]);
		}
	}
out:
	pthread_mutex_unlock(&c->mu);
	return err;
}

void objfs_claims_drop(struct objfs_claims *c, const char *const *keys, size_t n)
{
	size_t i;

	pthread_mutex_lock(&c->mu);
	for (i = 0; i < n; i++) {
		if (keys[i] != NULL)
			drop(c, keys[i]);
	}
	pthread_mutex_unlock(&c->mu);
}
