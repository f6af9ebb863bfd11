/* buf.c - the bounded buffer (see buf.h). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

void objfs_buf_fixed(struct objfs_buf *b, char *mem, size_t cap, int toobig)
{
	b->p = mem;
	b->len = 0;
	b->cap = cap;
	b->max = cap > 0 ? cap - 1 : 0;
	b->toobig = toobig;
	b->err = cap > 0 ? 0 : toobig;
	b->fixed = true;
	if (cap > 0)
		mem[0] = '\0';
}

/* Makes room for n more bytes of content: 0 or sets err. */
static int grow(struct objfs_buf *b, size_t n)
{
	size_t need, cap;
	char *np;

	if (b->err != 0)
		return b->err;
	if (n > b->max || b->len > b->max - n) {
		b->err = b->toobig;
		return b->err;
	}
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap != 0 ? b->cap : 64;
	while (cap < need)
		cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
	if (cap > b->max + 1)
		cap = b->max + 1;
	np = realloc(b->p, cap);
	if (np == NULL) {
		b->err = ENOMEM;
		return b->err;
	}
	if (b->p == NULL)
		np[0] = '\0';
	b->p = np;
	b->cap = cap;
	return 0;
}

void objfs_buf_add(struct objfs_buf *b, const void *data, size_t n)
{
	if (grow(b, n) != 0)
		return;
	if (n > 0)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void objfs_buf_adds(struct objfs_buf *b, const char *s)
{
	objfs_buf_add(b, s, strlen(s));
}

void objfs_buf_addc(struct objfs_buf *b, char c)
{
	objfs_buf_add(b, &c, 1);
}

void objfs_buf_addf(struct objfs_buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[256];
	char *big = NULL;
	int n;

	if (b->err != 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = EINVAL;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		objfs_buf_add(b, small, (size_t)n);
		return;
	}
	big = malloc((size_t)n + 1);
	if (big == NULL) {
		b->err = ENOMEM;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	objfs_buf_add(b, big, (size_t)n);
	free(big);
}

void objfs_buf_reset(struct objfs_buf *b)
{
	b->len = 0;
	b->err = b->fixed && b->cap == 0 ? b->toobig : 0;
	if (b->p != NULL && b->cap > 0)
		b->p[0] = '\0';
}

char *objfs_buf_detach(struct objfs_buf *b)
{
	char *p;

	if (b->fixed || b->err != 0)
		return NULL;
	if (b->p == NULL && grow(b, 0) != 0)
		return NULL;
	p = b->p;
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

void objfs_buf_release(struct objfs_buf *b)
{
	if (!b->fixed) {
		free(b->p);
		b->p = NULL;
		b->cap = 0;
	}
	b->len = 0;
	b->err = 0;
}
