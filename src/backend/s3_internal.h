/*
 * s3_internal.h - S3 leaf internals exposed to its tests only.
 */
#ifndef OBJFS_S3_INTERNAL_H
#define OBJFS_S3_INTERNAL_H

#include <stdint.h>

#include "backend/backend.h"

/* The copy path for objects over 5 GiB, with a chosen part size (s3.c uses
 * 1 GiB): HEAD src, create an upload of dst (metadata per opts->directive),
 * UploadPartCopy each range conditional on the ETag seen, complete (abort
 * on failure).  s must be an S3 leaf.  0 or an errno. */
int objfs_s3_copy_multipart(struct objfs_store *s, const char *src,
			    const char *dst,
			    const struct objfs_copy_opts *opts,
			    uint64_t part_size, struct objfs_obj_info *info);

/* The AWS endpoint host [BUCKET.]s3[.-]...amazonaws.com moved to region:
 * [BUCKET.]s3.REGION.amazonaws.com into out.  0, ENOENT (not an AWS
 * host, or a bad region) or ENAMETOOLONG. */
int objfs_s3_region_host(const char *host, const char *region, char *out,
			 size_t cap);

/* The stall threshold of the S3 leaf's rule (s3_req.c): max(stall_ms,
 * k * the 90th percentile of samples[0..n)), at most cap_ms (n 0: stall_ms). */
long objfs_s3_stall_threshold(long stall_ms, long cap_ms, unsigned k,
			      const unsigned *samples, size_t n);

/* The stall threshold of S3 leaf s now, in ms. */
long objfs_s3_stall_now(struct objfs_store *s);

#endif
