/*
 * fuzz_volid.c - volume and snapshot ids (csi/volid.c), as every
 * controller and node request carries them, and the safe names made from
 * the CO's names.
 *
 * Properties: an id that parses formats back to exactly itself; what it
 * names is a path of valid segments (no "", ".", "..", hidden name, "//",
 * leading '/' or control byte) and a valid bucket; fields taken from the
 * input that format parse back to the same fields; a safe name is a valid
 * segment, within its bound, and the same for the same name.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "csi/volid.h"
#include "fuzz.h"

static void check_path(const struct objfs_id *id)
{
	const char *p = id->path;
	size_t n = strlen(p), i;

	FUZZ_CHECK(n > 0 && p[0] != '/' && p[n - 1] != '/');
	FUZZ_CHECK(strstr(p, "//") == NULL && strstr(p, "/.") == NULL);
	FUZZ_CHECK(p[0] != '.');
	for (i = 0; i < n; i++)
		FUZZ_CHECK((unsigned char)p[i] > 0x20 && (unsigned char)p[i] < 0x7f);
	/* volume PREFIX and snapshot BASE/NAME alike: valid segments */
	FUZZ_CHECK(objfs_id_prefix_valid(p) == 0);
	if (id->store == OBJFS_ID_BUCKET)
		FUZZ_CHECK(objfs_id_bucket_valid(id->bucket) == 0);
	else
		FUZZ_CHECK(id->bucket[0] == '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct objfs_id id, id2;
	char buf[OBJFS_ID_MAX + 64], safe[OBJFS_SEGMENT_MAX + 1], safe2[sizeof(safe)];
	char *s;
	size_t max;
	int rc;

	if (size > 1024)
		return 0;
	/* the whole input as an id */
	s = fuzz_dup(data, size);
	rc = objfs_id_parse(s, &id);
	FUZZ_CHECK(rc == 0 || rc == ENOENT || rc == EINVAL);
	if (rc == 0) {
		check_path(&id);
		FUZZ_CHECK(objfs_id_format(&id, buf, sizeof(buf)) == 0);
		FUZZ_CHECK(strcmp(buf, s) == 0);
		FUZZ_CHECK(strlen(buf) <= OBJFS_ID_MAX);
	}
	free(s);

	/* fields from the input: type, store, bucket, path */
	memset(&id, 0, sizeof(id));
	{
		uint8_t b = fuzz_byte(&in);
		char *bucket = fuzz_str(&in), *path = fuzz_str(&in);

		id.type = (b & 1) ? OBJFS_ID_SNAPSHOT : OBJFS_ID_VOLUME;
		id.store = (b & 2) ? OBJFS_ID_BUCKET : OBJFS_ID_DEFAULT;
		snprintf(id.bucket, sizeof(id.bucket), "%s", id.store == OBJFS_ID_BUCKET ? bucket : "");
		snprintf(id.path, sizeof(id.path), "%s", path);
		rc = objfs_id_format(&id, buf, sizeof(buf));
		FUZZ_CHECK(rc == 0 || rc == EINVAL || rc == ENAMETOOLONG);
		if (rc == 0) {
			FUZZ_CHECK(objfs_id_parse(buf, &id2) == 0);
			FUZZ_CHECK(id2.type == id.type && id2.store == id.store);
			FUZZ_CHECK(strcmp(id2.bucket, id.bucket) == 0);
			FUZZ_CHECK(strcmp(id2.path, id.path) == 0);
			FUZZ_CHECK(strlen(id.path) + objfs_id_head_len(id.type, id.store, id.bucket) ==
				   strlen(buf));
		}
		/* a CO name made safe */
		max = 24 + (b >> 2) % (OBJFS_SEGMENT_MAX - 24 + 1);
		rc = objfs_id_safe_name(path, max, safe, sizeof(safe));
		FUZZ_CHECK(rc == 0 || (rc == EINVAL && path[0] == '\0'));
		if (rc == 0) {
			FUZZ_CHECK(strlen(safe) <= max);
			FUZZ_CHECK(objfs_id_segment_valid(safe, strlen(safe)) == 0);
			FUZZ_CHECK(objfs_id_safe_name(path, max, safe2, sizeof(safe2)) == 0);
			FUZZ_CHECK(strcmp(safe, safe2) == 0);
		}
		(void)objfs_id_name_banned(path);
		free(bucket);
		free(path);
	}
	return 0;
}
