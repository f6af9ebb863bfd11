/* fuzz.c - helpers of the fuzz targets (see fuzz.h). */
#include "config.h"

#include <string.h>

#include "fuzz.h"

void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: property violated: %s\n", file, line, what);
	abort();
}

uint8_t fuzz_byte(struct fuzz_in *in)
{
	uint8_t b;

	if (in->n == 0)
		return 0;
	b = in->p[0];
	in->p++;
	in->n--;
	return b;
}

char *fuzz_dup(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);

	if (s == NULL)
		abort();
	if (n > 0)
		memcpy(s, d, n);
	s[n] = '\0';
	return s;
}

char *fuzz_str(struct fuzz_in *in)
{
	const uint8_t *z = in->n > 0 ? memchr(in->p, '\0', in->n) : NULL;
	size_t len = z != NULL ? (size_t)(z - in->p) : in->n;
	char *s = fuzz_dup(in->p, len);

	in->p += len;
	in->n -= len;
	if (z != NULL) {
		in->p++;
		in->n--;
	}
	return s;
}
