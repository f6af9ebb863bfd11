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
#include "volume/catalog.h"
#include "volume/hlink.h"

bool objfs_hlink_id_valid(const char *id)
{
	size_t i;

	if (id == NULL)
		return false;
	for (i = 0; i < OBJFS_HLINK_ID_LEN; i++) {
		char c = id[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return id[i] == '\0';
}

int objfs_hlink_id_new(char *id)
{
	unsigned char r[OBJFS_HLINK_ID_LEN / 2];
	size_t i;
	int err;

	err = objfs_random_bytes(r, sizeof(r));
	if (err != 0)
		return err;
	for (i = 0; i < sizeof(r); i++)
		snprintf(id + 2 * i, 3, "%02x", r[i]);
	return 0;
}

bool objfs_hlink_id_from_meta(const struct objfs_meta *m, char *id)
{
	const char *v = objfs_meta_get(m, OBJFS_META_HLINK);

	if (!objfs_hlink_id_valid(v))
		return false;
	memcpy(id, v, OBJFS_HLINK_ID_LEN + 1);
	return true;
}

static int put(char *buf, size_t cap, int n)
{
	return n < 0 || (size_t)n >= cap ? ENAMETOOLONG : 0;
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

int objfs_hlink_name_key(const char *id, const char *name_key, char *buf,
			 size_t cap)
{
	char h[OBJFS_CATALOG_HASH_HEX + 1];

	if (!objfs_hlink_id_valid(id) || name_key == NULL || name_key[0] == '\0')
		return EINVAL;
	objfs_catalog_hash(name_key, strlen(name_key), h, OBJFS_CATALOG_HASH_HEX);
	return put(buf, cap, snprintf(buf, cap, "%s%s/names/%s",
				      OBJFS_HLINK_PREFIX, id, h));
}
