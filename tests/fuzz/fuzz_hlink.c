/*
 * fuzz_hlink.c - what makes an object a hard link's name (volume/hlink.c):
 * its user metadata (objfs_hlink_from_meta), which any user of the bucket
 * can set, and keys under .objfs/links/ (objfs_hlink_key_kind), which any
 * listing may return.
 *
 * Input: NUL-separated fields: a key, then metadata name, value pairs
 * (set in order, as the store hands them over).
 *
 * Properties: a name is a link's iff the model says so: the last values
 * set under "objfs-link" and "objfs-link-token" (any case) are 32 and 16
 * lowercase hex digits; then id and token (memory of exactly their size)
 * are those values, they write to metadata that reads back the same, and
 * the name's body is "objfs-link ID TOKEN\n", OBJFS_HLINK_BODY_LEN bytes.
 * Otherwise writing them is EINVAL.  A key read as a set's data or a
 * name's entry is the key formatted from what was read (a round trip);
 * the keys formatted from a valid id and token read back as such.
 */
#include "config.h"

#include <errno.h>
#include <strings.h>
#include <string.h>

#include "backend/backend.h"
#include "volume/hlink.h"
#include "volume/layout.h"
#include "fuzz.h"

#define PAIRS_MAX 16

static bool model_hex(const char *s, size_t len)
{
	size_t i;

	if (s == NULL || strlen(s) != len)
		return false;
	for (i = 0; i < len; i++)
		if (strchr("0123456789abcdef", s[i]) == NULL)
			return false;
	return true;
}

static void check_keys(const char *key)
{
	char *id = malloc(OBJFS_HLINK_ID_LEN + 1), buf[512], buf2[512];
	enum objfs_hlink_kind k;

	FUZZ_CHECK(id != NULL);
	k = objfs_hlink_key_kind(key, id);
	if (k == OBJFS_HLINK_DATA) {
		FUZZ_CHECK(objfs_hlink_data_key(id, buf, sizeof(buf)) == 0);
		FUZZ_CHECK(strcmp(buf, key) == 0);
	} else if (k == OBJFS_HLINK_ENTRY) {
		FUZZ_CHECK(objfs_hlink_names_prefix(id, buf, sizeof(buf)) == 0);
		FUZZ_CHECK(strncmp(key, buf, strlen(buf)) == 0);
		FUZZ_CHECK(objfs_hlink_token_valid(key + strlen(buf)));
		FUZZ_CHECK(objfs_hlink_name_key(id, key + strlen(buf), buf2,
						sizeof(buf2)) == 0);
		FUZZ_CHECK(strcmp(buf2, key) == 0);
	} else {
		FUZZ_CHECK(k == OBJFS_HLINK_OTHER);
	}
	free(id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct objfs_meta m = OBJFS_META_INIT, m2 = OBJFS_META_INIT;
	char *key = fuzz_str(&in), *names[PAIRS_MAX], *vals[PAIRS_MAX];
	char *id = malloc(OBJFS_HLINK_ID_LEN + 1);
	char *token = malloc(OBJFS_HLINK_TOKEN_LEN + 1);
	char *id2 = malloc(OBJFS_HLINK_ID_LEN + 1);
	char *token2 = malloc(OBJFS_HLINK_TOKEN_LEN + 1);
	const char *mid = NULL, *mtok = NULL;
	char body[OBJFS_HLINK_BODY_LEN + 1], want[128], kbuf[512];
	size_t n = 0, i;
	bool model, got;

	FUZZ_CHECK(id != NULL && token != NULL && id2 != NULL && token2 != NULL);
	while (in.n > 0 && n < PAIRS_MAX) {
		names[n] = fuzz_str(&in);
		vals[n] = fuzz_str(&in);
		if (objfs_meta_set(&m, names[n], vals[n]) == 0) {
			if (strcasecmp(names[n], OBJFS_META_HLINK) == 0)
				mid = vals[n];
			else if (strcasecmp(names[n], OBJFS_META_HLINK_TOKEN) == 0)
				mtok = vals[n];
		} else {
			FUZZ_CHECK(names[n][0] == '\0');
		}
		n++;
	}
	model = model_hex(mid, OBJFS_HLINK_ID_LEN) &&
		model_hex(mtok, OBJFS_HLINK_TOKEN_LEN);
	got = objfs_hlink_from_meta(&m, id, token);
	FUZZ_CHECK(got == model);
	if (got) {
		FUZZ_CHECK(strcmp(id, mid) == 0 && strcmp(token, mtok) == 0);
		FUZZ_CHECK(objfs_hlink_to_meta(id, token, &m2) == 0);
		FUZZ_CHECK(objfs_hlink_from_meta(&m2, id2, token2));
		FUZZ_CHECK(strcmp(id, id2) == 0 && strcmp(token, token2) == 0);
		FUZZ_CHECK(objfs_hlink_name_body(id, token, body, sizeof(body)) == 0);
		snprintf(want, sizeof(want), "objfs-link %s %s\n", id, token);
		FUZZ_CHECK(strcmp(body, want) == 0 &&
			   strlen(body) == OBJFS_HLINK_BODY_LEN);
		FUZZ_CHECK(objfs_hlink_data_key(id, kbuf, sizeof(kbuf)) == 0);
		FUZZ_CHECK(objfs_hlink_key_kind(kbuf, id2) == OBJFS_HLINK_DATA &&
			   strcmp(id2, id) == 0);
		FUZZ_CHECK(objfs_hlink_name_key(id, token, kbuf, sizeof(kbuf)) == 0);
		FUZZ_CHECK(objfs_hlink_key_kind(kbuf, id2) == OBJFS_HLINK_ENTRY &&
			   strcmp(id2, id) == 0);
	} else if (mid != NULL && mtok != NULL) {
		FUZZ_CHECK(objfs_hlink_to_meta(mid, mtok, &m2) == EINVAL);
		FUZZ_CHECK(objfs_hlink_name_body(mid, mtok, body, sizeof(body)) == EINVAL);
	}
	check_keys(key);
	for (i = 0; i < n; i++) {
		free(names[i]);
		free(vals[i]);
	}
	objfs_meta_release(&m);
	objfs_meta_release(&m2);
	free(key);
	free(id);
	free(token);
	free(id2);
	free(token2);
	return 0;
}
