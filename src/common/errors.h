/*
 * errors.h - the one error convention of objfs.
 *
 * Inside objfs every fallible function returns 0 or a positive errno value.
 * Errors are negated only at the FUSE boundary (src/fs), mapped to gRPC status
 * codes only in src/csi, and HTTP/S3/curl failures are mapped to errno in one
 * table (src/backend/s3_errors.c).
 */
#ifndef OBJFS_ERRORS_H
#define OBJFS_ERRORS_H

/* A short, thread-safe description of a positive errno ("No such file or
 * directory"); never NULL.  Use this instead of strerror(). */
const char *objfs_strerror(int err);

#endif
