/*
 * s3_errors.h - the one place where HTTP status codes, S3 error codes and
 * libcurl result codes become errno values (the table is in s3_errors.c).
 *
 * Precedence: a transport failure (CURLcode other than CURLE_OK) decides
 * alone; otherwise a 2xx status is success; otherwise a known S3 error code
 * from the response body decides; otherwise the HTTP status (then its class:
 * other 4xx EINVAL, other 5xx EIO).
 *
 * Every failure mapped here is also recorded for the calling thread, with
 * what to check (store_error.h).
 */
#ifndef OBJFS_S3_ERRORS_H
#define OBJFS_S3_ERRORS_H

#include <curl/curl.h>

/* errno for a libcurl failure; 0 for CURLE_OK. */
int objfs_s3_errno_curl(CURLcode cc);

/* errno for an HTTP status and S3 error code (code may be NULL or "");
 * 0 for a 2xx status. */
int objfs_s3_errno_http(long status, const char *code);

/* The same for a reply whose body gave code and message (either may be
 * NULL); both are recorded for objfs_store_error_get (store_error.h). */
int objfs_s3_errno_reply(long status, const char *code, const char *message);

/* The whole mapping (see the precedence above). */
int objfs_s3_errno(CURLcode cc, long status, const char *code);

#endif
