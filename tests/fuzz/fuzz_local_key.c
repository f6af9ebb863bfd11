/*
 * fuzz_local_key.c - the key-to-path mapping of the local store
 * (backend/local.c): any key (a file name a user chose) and any on-disk
 * name a listing reads back.
 *
 * Properties: a valid key always maps to a path; every component of the
 * path is non-empty, never starts with '.' (so never "..", never the hidden
 * .objfs area or the store marker) and ends in a type suffix ('+' object,
 * '@' directory, '#' continuation); decoding the path gives the key back
 * (the mapping is one-to-one); an on-disk name that decodes is exactly the
 * name the key it decodes to would have (no two names for one key).
 */
#include "config.h"

#include <limits.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/local_int.h"
#include "fuzz.h"

/* Decodes a whole path back into the key it stands for. */
static void path_to_key(const char *path, char *key, size_t cap, size_t *klen,
			char want_last)
{
	const char *p = path;
	size_t n = 0, dl;

	for (;;) {
		const char *slash = strchr(p, '/');
		size_t cl = slash != NULL ? (size_t)(slash - p) : strlen(p);
		char suffix;

		FUZZ_CHECK(cl >= 1);
		FUZZ_CHECK(p[0] != '.');
		FUZZ_CHECK(cl <= NAME_CHUNK + 1);
		suffix = p[cl - 1];
		FUZZ_CHECK(suffix == '+' || suffix == '@' || suffix == '#');
		FUZZ_CHECK(local_name_decode(p, cl - 1, key + n, cap - n, &dl) == 0);
		n += dl;
		if (slash == NULL) {
			FUZZ_CHECK(suffix == want_last);
			break;
		}
		FUZZ_CHECK(suffix != '+');
		if (suffix == '@') {
			FUZZ_CHECK(n < cap);
			key[n++] = '/';
		}
		p = slash + 1;
	}
	key[n] = '\0';
	*klen = n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *key, path[PATH_MAX], back[2 * OBJFS_KEY_MAX + 2];
	size_t kl, bl;
	int rc;

	if (size > 2 * OBJFS_KEY_MAX)
		return 0;
	key = fuzz_dup(data, size);
	kl = strlen(key);

	/* as an object key */
	rc = local_obj_path(key, path, sizeof(path));
	FUZZ_CHECK((rc == 0) == (objfs_key_valid(key) == 0));
	if (rc == 0) {
		path_to_key(path, back, sizeof(back), &bl, '+');
		FUZZ_CHECK(bl == kl && memcmp(back, key, kl) == 0);
	}

	/* as a listing's prefix (a directory) */
	if (kl > 0 && kl <= OBJFS_KEY_MAX && key[kl - 1] == '/') {
		FUZZ_CHECK(local_dir_path(key, kl, path, sizeof(path)) == 0);
		path_to_key(path, back, sizeof(back), &bl, '@');
		FUZZ_CHECK(bl + 1 == kl && memcmp(back, key, bl) == 0);
	}

	/* as an on-disk name (without its suffix) */
	if (size <= NAME_CHUNK) {
		char name[NAME_CHUNK + 1], comp[OBJFS_KEY_MAX + 1];
		size_t cl;

		memcpy(name, data, size);
		name[size] = '\0';
		if (local_name_decode(name, size, comp, sizeof(comp) - 1, &cl) == 0 &&
		    cl > 0) {
			comp[cl] = '\0';
			FUZZ_CHECK(strlen(comp) == cl && strchr(comp, '/') == NULL);
			FUZZ_CHECK(local_obj_path(comp, path, sizeof(path)) == 0);
			FUZZ_CHECK(strlen(path) == size + 1 && path[size] == '+' &&
				   memcmp(path, name, size) == 0);
		}
	}
	free(key);
	return 0;
}
