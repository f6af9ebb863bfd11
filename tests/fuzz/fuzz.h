/*
 * fuzz.h - what the fuzz targets of tests/fuzz share.
 *
 * A target is tests/fuzz/fuzz_NAME.c: one LLVMFuzzerTestOneInput() that
 * feeds its input to a parser and checks, with FUZZ_CHECK, what must hold
 * of the result (a record that parses writes back to itself, a key never
 * leaves its prefix ...), not only that nothing crashes.  The same file is
 * built twice:
 *   - with clang and libFuzzer, ASan and UBSan (configure --enable-fuzz,
 *     `make fuzz`; scripts/fuzz.sh runs them);
 *   - in the ordinary build with driver.c's main(), which feeds it the
 *     seed corpus tests/fuzz/corpus/NAME/ and the inputs that once failed,
 *     tests/fuzz/regress/NAME/ (make check).
 * docs/fuzzing.md says how to run, reproduce and add one.
 */
#ifndef OBJFS_TESTS_FUZZ_H
#define OBJFS_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property of the target: abort() (a finding) when cond is false. */
#define FUZZ_CHECK(cond) \
	do { \
		if (!(cond)) \
			fuzz_fail(__FILE__, __LINE__, #cond); \
	} while (0)

void fuzz_fail(const char *file, int line, const char *what)
	__attribute__((noreturn));

/* Input taken apart field by field: fields are separated by NUL bytes, so
 * a mutated input still splits into strings. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

/* The next byte (0 once the input is used up). */
uint8_t fuzz_byte(struct fuzz_in *in);
/* The next field up to a NUL byte or the end, as a malloc'ed string ("" once
 * the input is used up).  The caller frees. */
char *fuzz_str(struct fuzz_in *in);
/* A malloc'ed NUL-terminated copy of n bytes of d (NUL bytes kept). */
char *fuzz_dup(const uint8_t *d, size_t n);

#endif
