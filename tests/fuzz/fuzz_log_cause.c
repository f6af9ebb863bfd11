/*
 * fuzz_log_cause.c - the end of an objfs-mount log file as the node plugin
 * reads it when a mount failed (objfs_csi_log_cause_text, csi/mounter.c;
 * objfs_csi_log_cause hands it the file's last 16 KiB).  The file is
 * written by a process that logs what it read from the store and the
 * command line: foreign bytes.
 *
 * Input: one byte, msg's capacity (0-255); the rest, the log's text, in
 * memory of exactly its size (ASan: nothing past it is read).
 *
 * Properties: msg, in memory of exactly its capacity, gets a string that
 * fits, starting ": ", only when the text has a non-empty line; a line not
 * in JSON gives its first 400 bytes.  The errno is that of a model: the
 * decimal number after the first "errno": of the last non-empty line that
 * has one (spaces before it allowed, 1-4095), else EIO.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "csi/mounter_int.h"
#include "fuzz.h"

/* The last non-empty line of t (n bytes) that has needle ("" for any):
 * its start and *len, or NULL. */
static const char *model_last(const char *t, size_t n, const char *needle,
			      size_t *len)
{
	const char *found = NULL;
	size_t i = 0, nl = strlen(needle);

	while (i < n) {
		size_t j = i, k;

		while (j < n && t[j] != '\n')
			j++;
		for (k = i; j > i && k + nl <= j; k++) {
			if (memcmp(t + k, needle, nl) == 0) {
				found = t + i;
				*len = j - i;
				break;
			}
		}
		i = j + 1;
	}
	return found;
}

static int model_errno(const char *t, size_t n)
{
	size_t len = 0, k;
	const char *l = model_last(t, n, "\"errno\":", &len);
	unsigned long v = 0;

	if (l == NULL)
		return EIO;
	for (k = 0; memcmp(l + k, "\"errno\":", 8) != 0; k++)
		;
	for (k += 8; k < len && l[k] == ' '; k++)
		;
	for (; k < len && l[k] >= '0' && l[k] <= '9'; k++) {
		v = v * 10 + (unsigned long)(l[k] - '0');
		if (v > 10000)
			v = 10000;      /* too large for an errno, however long */
	}
	return v >= 1 && v <= 4095 ? (int)v : EIO;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cap = size > 0 ? data[0] : 16, n = size > 0 ? size - 1 : 0;
	char *text = calloc(n > 0 ? n : 1, 1), *msg = malloc(cap > 0 ? cap : 1);
	size_t len = 0, i;
	const char *last, *cause;
	int rc;

	FUZZ_CHECK(text != NULL && msg != NULL);
	if (n > 0)
		memcpy(text, data + 1, n);
	memset(msg, 'Z', cap > 0 ? cap : 1);
	rc = objfs_csi_log_cause_text(text, n, msg, cap);
	FUZZ_CHECK(rc == (cap > 0 ? model_errno(text, n) : EIO));
	last = model_last(text, n, "", &len);
	if (cap == 0 || last == NULL) {
		for (i = 0; i < (cap > 0 ? cap : 1); i++)
			FUZZ_CHECK(msg[i] == 'Z');      /* untouched */
		goto out;
	}
	FUZZ_CHECK(memchr(msg, '\0', cap) != NULL);
	FUZZ_CHECK(strncmp(msg, ": ", cap - 1 < 2 ? cap - 1 : 2) == 0);
	cause = model_last(text, n, "\"errno\":", &i);
	if (cause != NULL) {
		last = cause;
		len = i;
	}
	if (last[0] != '{') {
		/* ": " and the line's first 400 bytes (to a NUL), as fits */
		char want[404];
		size_t w = len < 400 ? len : 400;

		memcpy(want, ": ", 2);
		memcpy(want + 2, last, w);
		want[2 + w] = '\0';
		want[cap - 1 < strlen(want) ? cap - 1 : strlen(want)] = '\0';
		FUZZ_CHECK(strcmp(msg, want) == 0);
	}
out:
	free(text);
	free(msg);
	return 0;
}
