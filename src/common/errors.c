/* errors.c - thread-safe errno descriptions (see errors.h). */
#define _GNU_SOURCE
#include "config.h"

#include <string.h>

#include "common/errors.h"

const char *objfs_strerror(int err)
{
	const char *s = strerrordesc_np(err);

	return s != NULL ? s : "Unknown error";
}
