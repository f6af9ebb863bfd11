/*
 * fuzz_fsattr.c - file attributes in object metadata and the key of a
 * directory's child (fs/attr.c), as read from objects and listings that
 * other clients (s3fs, rclone, any S3 user) wrote.
 *
 * Input: NUL-separated fields: mode, uid, gid, mtime (metadata values),
 * then a directory key and a listed key or prefix.
 *
 * Properties: attributes read from metadata, written back and read again
 * are the same (mode, uid, gid, mtime to the nanosecond, negative times
 * included); an mtime that parses has nanoseconds in [0, 1e9) and its
 * written form is a fixed point; a mode is taken only with a regular file,
 * directory or symlink type; a listed key names a child only when it is
 * one name under the directory (no '/', not "." or "..", not the reserved
 * name at the root), and joining the directory and that name gives the key
 * back.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/backend.h"
#include "fs/attr.h"
#include "fuzz.h"

static void check_mtime(const char *s)
{
	struct timespec ts, ts2;
	char buf[48], buf2[48];

	if (objfs_mtime_parse(s, &ts) != 0)
		return;
	FUZZ_CHECK(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000);
	FUZZ_CHECK(objfs_mtime_format(&ts, buf, sizeof(buf)) == 0);
	FUZZ_CHECK(objfs_mtime_parse(buf, &ts2) == 0);
	FUZZ_CHECK(ts.tv_sec == ts2.tv_sec && ts.tv_nsec == ts2.tv_nsec);
	FUZZ_CHECK(objfs_mtime_format(&ts2, buf2, sizeof(buf2)) == 0);
	FUZZ_CHECK(strcmp(buf, buf2) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct objfs_meta m = OBJFS_META_INIT, m2 = OBJFS_META_INIT;
	struct objfs_fattr a = { S_IFREG | 0600, 7, 8, { 9, 10 }, 0,
				 { 0, -1 }, { 0, -1 } }, b;
	char *mode = fuzz_str(&in), *uid = fuzz_str(&in), *gid = fuzz_str(&in);
	char *mtime = fuzz_str(&in), *dir = fuzz_str(&in), *key = fuzz_str(&in);
	char name[OBJFS_NAME_MAX + 1], joined[OBJFS_KEY_MAX + 1];
	unsigned found, found2;
	bool prefix = (size & 1) != 0;

	check_mtime(mtime);
	if (mode[0] != '\0')
		objfs_meta_set(&m, OBJFS_META_MODE, mode);
	if (uid[0] != '\0')
		objfs_meta_set(&m, OBJFS_META_UID, uid);
	if (gid[0] != '\0')
		objfs_meta_set(&m, OBJFS_META_GID, gid);
	if (mtime[0] != '\0')
		objfs_meta_set(&m, OBJFS_META_MTIME, mtime);
	found = objfs_fattr_from_meta(&m, &a);
	FUZZ_CHECK(S_ISREG(a.mode) || S_ISDIR(a.mode) || S_ISLNK(a.mode) ||
		   S_ISFIFO(a.mode) || S_ISSOCK(a.mode) || S_ISCHR(a.mode) ||
		   S_ISBLK(a.mode));
	if ((found & OBJFS_FATTR_MODE) == 0)
		FUZZ_CHECK(a.mode == (S_IFREG | 0600));
	FUZZ_CHECK(objfs_fattr_to_meta(&a, &m2) == 0);
	memset(&b, 0, sizeof(b));
	found2 = objfs_fattr_from_meta(&m2, &b);
	/* no atime or ctime (tv_nsec < 0); rdev for a device */
	FUZZ_CHECK(found2 == (OBJFS_FATTR_MODE | OBJFS_FATTR_UID | OBJFS_FATTR_GID |
			      OBJFS_FATTR_MTIME |
			      (S_ISCHR(a.mode) || S_ISBLK(a.mode) ?
			       OBJFS_FATTR_RDEV : 0)));
	FUZZ_CHECK(a.mode == b.mode && a.uid == b.uid && a.gid == b.gid);
	FUZZ_CHECK(a.mtime.tv_sec == b.mtime.tv_sec && a.mtime.tv_nsec == b.mtime.tv_nsec);

	/* a listing's key under a directory */
	{
		size_t dl = strlen(dir);

		if ((dl == 0 || dir[dl - 1] == '/') && strlen(key) <= OBJFS_KEY_MAX) {
			if (objfs_key_child(dir, key, prefix, name, sizeof(name))) {
				FUZZ_CHECK(objfs_name_check(name) == 0);
				FUZZ_CHECK(!objfs_name_reserved(dl == 0, name));
				FUZZ_CHECK(objfs_key_join(dir, name, prefix, joined,
							  sizeof(joined)) == 0);
				FUZZ_CHECK(strcmp(joined, key) == 0);
			}
		}
	}
	objfs_meta_release(&m);
	objfs_meta_release(&m2);
	free(mode);
	free(uid);
	free(gid);
	free(mtime);
	free(dir);
	free(key);
	return 0;
}
