/*
 * http.h - the one setup every curl handle of objfs gets, whoever sends
 * the request (the S3 leaf, s3_req.c; the credential providers,
 * credprov.c): the URL, http and https only (no other scheme a URL or a
 * redirect could name), no signals (handles are used from many threads),
 * objfs's user agent, and the TLS trust (a CA file, or no verification at
 * all when insecure).  Each caller adds what is its own (timeouts,
 * callbacks, headers, the method).
 */
#ifndef OBJFS_BACKEND_HTTP_H
#define OBJFS_BACKEND_HTTP_H

#include <stdbool.h>

#include <curl/curl.h>

/* Sets those options on h.  ca_file may be NULL (the system's). */
void objfs_http_setup(CURL *h, const char *url, const char *ca_file,
		      bool insecure);

#endif
