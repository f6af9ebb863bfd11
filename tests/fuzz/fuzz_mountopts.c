/*
 * fuzz_mountopts.c - objfs-mount's -o option list (common/mountopts.c):
 * what a user writes in fstab or a StorageClass's mountOptions, and what
 * the node plugin builds for objfs-mount across the process boundary.
 * The first byte chooses whether the list is a user's.
 *
 * Properties: a list that parses builds into a list that parses to the
 * same options and values and builds to the same text (a fixed point: the
 * plugin hands a mount exactly what was asked); a user's list never sets a
 * supervisor's option; a size with a K, M or G suffix is the number times
 * the unit, never wrapped around; an error names the option, never holds
 * its value.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "common/mountopts.h"
#include "fuzz.h"

#define BUILD_MAX 65536

static bool same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void opts_equal(const struct objfs_mount_opts *a, const struct objfs_mount_opts *b)
{
	FUZZ_CHECK(a->set == b->set);
#define SAME(f) FUZZ_CHECK(!objfs_mount_opts_has(a, OBJFS_MOPT_##f) || a->f == b->f)
#define SAMEF(w, f) FUZZ_CHECK(!objfs_mount_opts_has(a, OBJFS_MOPT_##w) || a->f == b->f)
#define SAMES(w, f) FUZZ_CHECK(!objfs_mount_opts_has(a, OBJFS_MOPT_##w) || same_str(a->f, b->f))
	SAMES(ENDPOINT, endpoint);
	SAMES(REGION, region);
	SAMEF(ADDRESSING, path_style);
	SAMES(CA_FILE, ca_file);
	SAMEF(MAX_CONNECTIONS, max_connections);
	SAMEF(RETRIES, retries);
	SAMEF(RETRY_TIMEOUT, retry_timeout);
	SAMEF(STALL_TIMEOUT, stall_timeout);
	SAMEF(UID, uid);
	SAMEF(GID, gid);
	SAMEF(UMASK, umask);
	SAMEF(ATTR_TTL, attr_ttl);
	SAMEF(ENTRY_TTL, entry_ttl);
	SAMEF(NEGATIVE_TTL, negative_ttl);
	SAMEF(DIR_TTL, dir_ttl);
	SAMEF(VOLREC_TTL, volrec_ttl);
	SAMEF(USAGE_REFRESH, usage_refresh);
	SAMEF(MEM_LIMIT, mem_limit);
	SAMEF(READAHEAD, readahead);
	SAMEF(PART_SIZE, part_size);
	SAMEF(SPOOL_LIMIT, spool_limit);
	SAMEF(CACHE_SIZE, cache_size);
	SAMEF(READAHEAD_CHUNKS, readahead_chunks);
	SAMEF(UPLOAD_PARALLEL, upload_parallel);
	SAMEF(THREADS, threads);
	SAMES(SPOOL_DIR, spool_dir);
	SAMES(CACHE_DIR, cache_dir);
	SAMEF(LOG_LEVEL, log_level);
	SAMES(LOG_FILE, log_file);
	SAMES(STATE_DIR, state_dir);
	SAMES(CRASH_AT, crash_at);
	SAMEF(READY_FD, ready_fd);
	SAMES(CREDENTIALS_FILE, credentials_file);
	FUZZ_CHECK(same_str(a->fuse, b->fuse));
#undef SAME
#undef SAMEF
#undef SAMES
}

/* The value of a size option as text says it: digits (strtoull base 0)
 * times the unit; false when it does not fit 64 bits. */
static bool size_fits(const char *text, const char *name)
{
	const char *p = text;
	size_t nl = strlen(name);

	/* the last occurrence wins, as in the parser; only plain ones are
	 * checked (no escapes in the item) */
	const char *last = NULL;

	while ((p = strstr(p, name)) != NULL) {
		if ((p == text || p[-1] == ',') && p[nl] == '=')
			last = p + nl + 1;
		p += nl;
	}
	if (last == NULL || strchr(text, '\\') != NULL)
		return true;
	{
		char *end;
		unsigned long long v;
		unsigned shift = 0;

		errno = 0;
		v = strtoull(last, &end, 0);
		if (errno != 0)
			return true;
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: break;
		}
		return shift == 0 || v <= (~0ULL >> shift);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sizes[] = {
		"mem_limit", "readahead", "part_size", "spool_limit", "cache_size",
	};
	struct objfs_mount_opts o, o2;
	unsigned flags;
	char err[256], *text, *built, *built2;
	size_t i;
	int rc;

	if (size < 1 || size > 8192)
		return 0;
	flags = (data[0] & 1) ? OBJFS_MOUNT_OPTS_USER : 0;
	text = fuzz_dup(data + 1, size - 1);
	built = malloc(BUILD_MAX);
	built2 = malloc(BUILD_MAX);
	if (built == NULL || built2 == NULL)
		abort();
	err[0] = '\0';
	rc = objfs_mount_opts_parse(text, flags, &o, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == EINVAL);
	if (rc != 0) {
		FUZZ_CHECK(err[0] != '\0');
		goto out;
	}
	if (flags & OBJFS_MOUNT_OPTS_USER) {
		FUZZ_CHECK(!objfs_mount_opts_has(&o, OBJFS_MOPT_READY_FD));
		FUZZ_CHECK(!objfs_mount_opts_has(&o, OBJFS_MOPT_CREDENTIALS_FILE));
		FUZZ_CHECK(!objfs_mount_opts_has(&o, OBJFS_MOPT_STATE_DIR));
		FUZZ_CHECK(!objfs_mount_opts_has(&o, OBJFS_MOPT_CRASH_AT));
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		FUZZ_CHECK(size_fits(text, sizes[i]));
	/* seconds are a number of seconds: finite, not negative */
	FUZZ_CHECK(isfinite(o.retry_timeout) && o.retry_timeout >= 0);
	FUZZ_CHECK(isfinite(o.stall_timeout) && o.stall_timeout >= 0);
	FUZZ_CHECK(isfinite(o.attr_ttl) && o.attr_ttl >= 0);
	FUZZ_CHECK(isfinite(o.entry_ttl) && o.entry_ttl >= 0);
	FUZZ_CHECK(isfinite(o.negative_ttl) && o.negative_ttl >= 0);
	FUZZ_CHECK(isfinite(o.dir_ttl) && o.dir_ttl >= 0);
	FUZZ_CHECK(isfinite(o.volrec_ttl) && o.volrec_ttl >= 0);
	FUZZ_CHECK(isfinite(o.usage_refresh) && o.usage_refresh >= 0);
	built[0] = '\0';
	FUZZ_CHECK(objfs_mount_opts_build(&o, built, BUILD_MAX) == 0);
	FUZZ_CHECK(objfs_mount_opts_parse(built, 0, &o2, err, sizeof(err)) == 0);
	opts_equal(&o, &o2);
	built2[0] = '\0';
	FUZZ_CHECK(objfs_mount_opts_build(&o2, built2, BUILD_MAX) == 0);
	FUZZ_CHECK(strcmp(built, built2) == 0);
	objfs_mount_opts_release(&o2);
	objfs_mount_opts_release(&o);
out:
	free(text);
	free(built);
	free(built2);
	return 0;
}
