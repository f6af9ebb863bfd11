/*
 * fuzz_mountinfo.c - /proc/self/mountinfo as the node plugin reads it to
 * decide whether a path is mounted, and by what (objfs_csi_mountinfo_find,
 * csi/mounter.c).  Mount points are anybody's: a pod names directories
 * under its volumes, a FUSE mount names its source and fstype.
 *
 * Input: the path, a NUL, the text (to its end or the next NUL), handed
 * over in memory of exactly its size.
 *
 * Property: the answer is the model's.  The model splits each line into
 * fields at every space; a line is path's mount when it has a field "-"
 * after the sixth and another after that one (the fstype), its fifth
 * field decodes (\ooo with ooo 000-377 octal is that byte, any other
 * backslash is itself) to path exactly with no NUL, and its third is
 * MAJ:MIN in decimal (at most 4095 and 1048575).  The last such line
 * counts: found, dev MAJ << 20 | MIN, fuse when the fstype is "fuse" or
 * begins "fuse.".  Otherwise ENOENT.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "csi/mounter.h"
#include "fuzz.h"

/* Decodes s in place; false when a NUL comes out. */
static bool model_decode(char *s, size_t *len)
{
	size_t i, j = 0, n = strlen(s);

	for (i = 0; i < n; i++) {
		if (s[i] == '\\' && n - i >= 4 && strchr("0123", s[i + 1]) &&
		    strchr("01234567", s[i + 2]) && strchr("01234567", s[i + 3]) &&
		    s[i + 1] && s[i + 2] && s[i + 3]) {
			s[j++] = (char)(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) |
					(s[i + 3] - '0'));
			i += 3;
			if (s[j - 1] == '\0')
				return false;
		} else {
			s[j++] = s[i];
		}
	}
	s[j] = '\0';
	*len = j;
	return true;
}

static bool model_num(const char *s, size_t n, unsigned long max,
		      unsigned long *v)
{
	size_t i;

	*v = 0;
	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (unsigned long)(s[i] - '0');
		if (*v > max)
			*v = max + 1;   /* saturated: leading zeros are fine */
	}
	return *v <= max;
}

/* One line (a writable copy): path's mount? */
static bool model_line(char *l, const char *path, struct objfs_csi_mount_info *mi)
{
	char **f, *p = l, *colon;
	size_t n = 0, i, len;
	unsigned long maj, min;
	bool ok = false;

	for (i = 0; l[i] != '\0'; i++)
		n += l[i] == ' ';
	f = malloc((n + 1) * sizeof(*f));
	FUZZ_CHECK(f != NULL);
	n = 0;
	for (;;) {
		char *sp = strchr(p, ' ');

		f[n++] = p;
		if (sp == NULL)
			break;
		*sp = '\0';
		p = sp + 1;
	}
	for (i = 6; i + 1 < n && strcmp(f[i], "-") != 0; i++)
		;
	if (n < 8 || i + 1 >= n)
		goto out;
	if (!model_decode(f[4], &len) || strcmp(f[4], path) != 0 || len >= PATH_MAX)
		goto out;
	colon = strchr(f[2], ':');
	if (colon == NULL ||
	    !model_num(f[2], (size_t)(colon - f[2]), 4095, &maj) ||
	    !model_num(colon + 1, strlen(colon + 1), 1048575, &min))
		goto out;
	mi->dev = maj << 20 | min;
	mi->fuse = strcmp(f[i + 1], "fuse") == 0 || strncmp(f[i + 1], "fuse.", 5) == 0;
	ok = true;
out:
	free(f);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	char *path = fuzz_str(&in), *text = fuzz_str(&in), *copy, *l, *nl;
	struct objfs_csi_mount_info got = { true, 12345 }, want = { false, 0 };
	int rc, model = ENOENT;

	if (strlen(path) >= PATH_MAX)
		path[PATH_MAX - 1] = '\0';
	rc = objfs_csi_mountinfo_find(text, path, &got);
	copy = strdup(text);
	FUZZ_CHECK(copy != NULL);
	for (l = copy; *l != '\0'; l = nl + 1) {
		struct objfs_csi_mount_info mi;

		nl = strchr(l, '\n');
		if (nl != NULL)
			*nl = '\0';
		if (model_line(l, path, &mi)) {
			want = mi;
			model = 0;
		}
		if (nl == NULL)
			break;
	}
	FUZZ_CHECK(rc == model);
	if (rc == 0)
		FUZZ_CHECK(got.dev == want.dev && got.fuse == want.fuse);
	else
		FUZZ_CHECK(got.dev == 12345 && got.fuse);       /* untouched */
	free(copy);
	free(path);
	free(text);
	return 0;
}
