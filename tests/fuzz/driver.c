/*
 * driver.c - main() of a fuzz target in the ordinary build: feeds files to
 * LLVMFuzzerTestOneInput() once each, so that `make check` runs every seed
 * and every input that ever failed without clang or libFuzzer.
 *
 *   fuzz_NAME               runs $OBJFS_SRCDIR/tests/fuzz/corpus/NAME/ and
 *                           tests/fuzz/regress/NAME/ (NAME from argv[0];
 *                           the corpus must exist and hold inputs)
 *   fuzz_NAME FILE|DIR...   runs those (reproducing a finding)
 *
 * A failed property aborts, so the test fails with the input's name last
 * on stderr.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	size_t n = 0, cap = 0, got;

	if (f == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (n == cap) {
			cap = cap == 0 ? 4096 : cap * 2;
			data = realloc(data, cap);
			if (data == NULL)
				abort();
		}
		got = fread(data + n, 1, cap - n, f);
		if (got == 0)
			break;
		n += got;
	}
	fclose(f);
	fprintf(stderr, "input %s (%zu bytes)\n", path, n);
	/* a copy of exactly n bytes, so that ASan sees reads past the end */
	{
		uint8_t *exact = malloc(n > 0 ? n : 1);

		if (exact == NULL)
			abort();
		memcpy(exact, data, n);
		LLVMFuzzerTestOneInput(exact, n);
		free(exact);
	}
	free(data);
	return 0;
}

/* Runs path (a file, or every file of a directory); the number run, or -1. */
static long run_path(const char *path)
{
	struct stat sb;
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, i;
	long count = 0;

	if (stat(path, &sb) != 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(sb.st_mode))
		return run_file(path) == 0 ? 1 : -1;
	d = opendir(path);
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		if (names == NULL || (names[n] = strdup(e->d_name)) == NULL)
			abort();
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp);
	for (i = 0; i < n; i++) {
		char file[PATH_MAX];

		snprintf(file, sizeof(file), "%s/%s", path, names[i]);
		if (count >= 0 && run_file(file) == 0)
			count++;
		else
			count = -1;
		free(names[i]);
	}
	free(names);
	return count;
}

int main(int argc, char **argv)
{
	const char *srcdir = getenv("OBJFS_SRCDIR");
	const char *base = strrchr(argv[0], '/');
	char dir[PATH_MAX];
	long n, total = 0;
	int i;

	if (argc > 1) {
		for (i = 1; i < argc; i++) {
			n = run_path(argv[i]);
			if (n < 0)
				return 1;
			total += n;
		}
		printf("%ld inputs: every property held\n", total);
		return 0;
	}
	base = base != NULL ? base + 1 : argv[0];
	if (strncmp(base, "fuzz_", 5) != 0) {
		fprintf(stderr, "%s: the program must be named fuzz_TARGET\n", argv[0]);
		return 1;
	}
	base += 5;
	if (srcdir == NULL)
		srcdir = ".";
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", srcdir, base);
	n = run_path(dir);
	if (n <= 0) {
		fprintf(stderr, "%s: no seed corpus\n", dir);
		return 1;
	}
	total += n;
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/regress/%s", srcdir, base);
	if (access(dir, F_OK) == 0) {
		n = run_path(dir);
		if (n < 0)
			return 1;
		total += n;
	}
	printf("%s: %ld inputs (corpus and regressions): every property held\n",
	       base, total);
	return 0;
}
