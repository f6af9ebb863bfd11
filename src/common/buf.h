/*
 * buf.h - the one bounded buffer of objfs: a NUL-terminated byte string
 * built by appending, either growing on the heap up to a cap or filling
 * caller memory (as curl's dynbuf, with git strbuf's ownership rules).
 *
 * Errors are sticky: the first append that does not fit (or finds no
 * memory) sets err (the buffer's `toobig` errno, or ENOMEM), leaves the
 * contents as they were before it, and every later append does nothing;
 * the builder checks objfs_buf_err() once at the end.  p is always a valid
 * string ("" when empty) once anything was appended or the buffer is
 * fixed; a heap buffer never appended to has p == NULL.
 *
 * Ownership: a heap buffer owns p (objfs_buf_release() frees it,
 * objfs_buf_detach() hands it to the caller); a fixed buffer never frees
 * the caller's memory.
 */
#ifndef OBJFS_COMMON_BUF_H
#define OBJFS_COMMON_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct objfs_buf {
	char *p;
	size_t len;             /* bytes before the terminating NUL */
	size_t cap;             /* bytes of p */
	size_t max;             /* most bytes of content (heap) */
	int toobig;             /* errno of an overflow */
	int err;                /* sticky: 0, toobig or ENOMEM */
	bool fixed;             /* p is caller memory */
};

/* A heap buffer of at most max content bytes (overflow: toobig). */
#define OBJFS_BUF_INIT(max, toobig) { NULL, 0, 0, (max), (toobig), 0, false }

/* A buffer over caller memory of cap bytes (cap - 1 bytes of content);
 * makes it "" (cap 0: every append overflows). */
void objfs_buf_fixed(struct objfs_buf *b, char *mem, size_t cap, int toobig);

void objfs_buf_add(struct objfs_buf *b, const void *data, size_t n);
void objfs_buf_adds(struct objfs_buf *b, const char *s);
void objfs_buf_addc(struct objfs_buf *b, char c);
void objfs_buf_addf(struct objfs_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Empties the contents, keeping memory and clearing err. */
void objfs_buf_reset(struct objfs_buf *b);

static inline int objfs_buf_err(const struct objfs_buf *b)
{
	return b->err;
}

/* Hands the heap string to the caller (free()); NULL on a fixed buffer or
 * after an error, where release is still needed.  The buffer is left
 * empty and reusable. */
char *objfs_buf_detach(struct objfs_buf *b);
/* Frees a heap buffer's memory and empties it; fine on a fixed one. */
void objfs_buf_release(struct objfs_buf *b);

#endif
