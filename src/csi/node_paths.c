/*
 * node_paths.c - the paths a node call may touch (see node_int.h).
 *
 * Staging and target paths must be absolute, free of "..", and lie under
 * the kubelet directory once symbolic links in their parents are resolved;
 * the last component must not be a symbolic link.  Only mount_info() and
 * lstat() look at the path itself: a stat() of a mount point would ask the
 * mounted filesystem, which may hang.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errors.h"
#include "csi/node_int.h"

int node_normalise(const char *path, char *out, size_t cap)
{
	const char *p = path;
	size_t len = 0;

	if (path[0] != '/')
		return EINVAL;
	out[0] = '\0';
	while (*p != '\0') {
		const char *start;
		size_t n;

		while (*p == '/')
			p++;
		start = p;
		while (*p != '\0' && *p != '/')
			p++;
		n = (size_t)(p - start);
		if (n == 0 || (n == 1 && start[0] == '.'))
			continue;
		if (n == 2 && start[0] == '.' && start[1] == '.')
			return EXDEV;
		if (len + n + 2 > cap)
			return ENAMETOOLONG;
		out[len++] = '/';
		memcpy(out + len, start, n);
		len += n;
		out[len] = '\0';
	}
	if (len == 0) {
		if (cap < 2)
			return ENAMETOOLONG;
		out[0] = '/';
		out[1] = '\0';
	}
	return 0;
}

/* Resolves symbolic links in the parents of the normalised path norm: the
 * deepest existing ancestor through realpath(), the rest appended. */
static int resolve_parents(const char *norm, char *out, size_t cap)
{
	char probe[PATH_MAX], real[PATH_MAX];
	const char *tail;
	char *slash;
	size_t plen;

	if ((size_t)snprintf(probe, sizeof(probe), "%s", norm) >= sizeof(probe))
		return ENAMETOOLONG;
	slash = strrchr(probe, '/');
	*slash = '\0';              /* probe: the parent ("" for /x) */
	for (;;) {
		if (realpath(probe[0] != '\0' ? probe : "/", real) != NULL)
			break;
		if (errno != ENOENT && errno != ENOTDIR)
			return errno;
		slash = strrchr(probe, '/');
		if (slash == NULL)
			return ENOENT;
		*slash = '\0';
	}
	plen = strlen(probe);
	tail = norm + plen;         /* starts with '/' */
	if (strcmp(real, "/") == 0)
		real[0] = '\0';
	if ((size_t)snprintf(out, cap, "%s%s", real, tail) >= cap)
		return ENAMETOOLONG;
	return 0;
}

enum objfs_rpc_code node_confine(struct objfs_csi_node *n, const char *field,
				 const char *path, char *out, size_t cap,
				 enum objfs_rpc_code code, struct objfs_rpc_status *st)
{
	char norm[PATH_MAX];
	size_t klen = strlen(n->kubelet);
	struct objfs_csi_mount_info mi;
	struct stat sb;
	int err;

	err = node_normalise(path, norm, sizeof(norm));
	if (err == EINVAL)
		return objfs_rpc_fail(st, code, "%s \"%s\" is not an absolute path",
				      field, path);
	if (err == EXDEV)
		return objfs_rpc_fail(st, code, "%s \"%s\" must not contain \"..\"",
				      field, path);
	if (err != 0)
		return objfs_rpc_fail(st, code, "%s is too long", field);
	err = resolve_parents(norm, out, cap);
	if (err != 0)
		return objfs_rpc_fail(st, code, "%s \"%s\": cannot resolve its parent: %s",
				      field, path, objfs_strerror(err));
	if (strncmp(out, n->kubelet, klen) != 0 || out[klen] != '/' ||
	    out[klen + 1] == '\0')
		return objfs_rpc_fail(st, code, "%s \"%s\" is outside the kubelet directory %s",
				      field, path, n->kubelet);
	/* A mount point is no symbolic link; and an lstat() there would ask
	 * the mounted filesystem, which may hang. */
	if (n->m.ops->mount_info(n->m.ctx, out, &mi) != 0 &&
	    lstat(out, &sb) == 0 && S_ISLNK(sb.st_mode))
		return objfs_rpc_fail(st, code, "%s \"%s\" is a symbolic link", field, path);
	return OBJFS_RPC_OK;
}
