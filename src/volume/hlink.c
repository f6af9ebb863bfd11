/*
 * hlink.c - keys and metadata of hard links (see hlink.h).  No state, no
 * I/O but the random id.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "common/io.h"
#include "volume/hlink.h"

static bool hex_valid(const char *s, size_t len)
{
	size_t i;

	if (s == NULL)
		return false;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return s[i] == '\0';
}

/* len random lowercase hex digits into out (len + 1 bytes). */
static int hex_new(char *out, size_t len)
{
	unsigned char r[OBJFS_HLINK_ID_LEN / 2];
	size_t i;
	int err;

	err = objfs_random_bytes(r, len / 2);
	if (err != 0)
		return err;
	for (i = 0; i < len / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

bool objfs_hlink_id_valid(const char *id)
{
	return hex_valid(id, OBJFS_HLINK_ID_LEN);
}

bool objfs_hlink_token_valid(const char *token)
{
	return hex_valid(token, OBJFS_HLINK_TOKEN_LEN);
}

int objfs_hlink_id_new(char *id)
{
	return hex_new(id, OBJFS_HLINK_ID_LEN);
}

int objfs_hlink_token_new(char *token)
{
	return hex_new(token, OBJFS_HLINK_TOKEN_LEN);
}

bool objfs_hlink_from_meta(const struct objfs_meta *m, char *id, char *token)
{
	const char *v = objfs_meta_get(m, OBJFS_META_HLINK);
	const char *t = objfs_meta_get(m, OBJFS_META_HLINK_TOKEN);

	if (!objfs_hlink_id_valid(v) || !objfs_hlink_token_valid(t))
		return false;
	memcpy(id, v, OBJFS_HLINK_ID_LEN + 1);
	memcpy(token, t, OBJFS_HLINK_TOKEN_LEN + 1);
	return true;
}

int objfs_hlink_to_meta(const char *id, const char *token,
			struct objfs_meta *m)
{
	int err;

	if (!objfs_hlink_id_valid(id) || !objfs_hlink_token_valid(token))
		return EINVAL;
	err = objfs_meta_set(m, OBJFS_META_HLINK, id);
	if (err == 0)
		err = objfs_meta_set(m, OBJFS_META_HLINK_TOKEN, token);
	return err;
}

static int put(char *buf, size_t cap, int n)
{
	return n < 0 || (size_t)n >= cap ? ENAMETOOLONG : 0;
}

int objfs_hlink_name_body(const char *id, const char *token, char *buf,
			  size_t cap)
{
	if (!objfs_hlink_id_valid(id) || !objfs_hlink_token_valid(token) ||
	    cap < OBJFS_HLINK_BODY_LEN + 1)
		return EINVAL;
	snprintf(buf, cap, "objfs-link %s %s\n", id, token);
	return 0;
}

int objfs_hlink_data_key(const char *id, char *buf, size_t cap)
{
	if (!objfs_hlink_id_valid(id))
		return EINVAL;
	return put(buf, cap, snprintf(buf, cap, "%s%s/data",
				      OBJFS_HLINK_PREFIX, id));
}

int objfs_hlink_names_prefix(const char *id, char *buf, size_t cap)
{
	if (!objfs_hlink_id_valid(id))
		return EINVAL;
	return put(buf, cap, snprintf(buf, cap, "%s%s/names/",
				      OBJFS_HLINK_PREFIX, id));
}

int objfs_hlink_name_key(const char *id, const char *token, char *buf,
			 size_t cap)
{
	if (!objfs_hlink_id_valid(id) || !objfs_hlink_token_valid(token))
		return EINVAL;
	return put(buf, cap, snprintf(buf, cap, "%s%s/names/%s",
				      OBJFS_HLINK_PREFIX, id, token));
}

enum objfs_hlink_kind objfs_hlink_key_kind(const char *key, char *id)
{
	const size_t pl = strlen(OBJFS_HLINK_PREFIX);
	const char *rest;

	if (strncmp(key, OBJFS_HLINK_PREFIX, pl) != 0 ||
	    strlen(key) < pl + OBJFS_HLINK_ID_LEN + 1 ||
	    key[pl + OBJFS_HLINK_ID_LEN] != '/')
		return OBJFS_HLINK_OTHER;
	memcpy(id, key + pl, OBJFS_HLINK_ID_LEN);
	id[OBJFS_HLINK_ID_LEN] = '\0';
	if (!objfs_hlink_id_valid(id))
		return OBJFS_HLINK_OTHER;
	rest = key + pl + OBJFS_HLINK_ID_LEN + 1;
	if (strcmp(rest, "data") == 0)
		return OBJFS_HLINK_DATA;
	if (strncmp(rest, "names/", 6) == 0 &&
	    objfs_hlink_token_valid(rest + 6))
		return OBJFS_HLINK_ENTRY;
	return OBJFS_HLINK_OTHER;
}
