/*
 * s3_int.h - what the files of the S3 leaf share: s3_req.c (one signed
 * request on a pooled curl handle: struct s3_req, the connection pool, the
 * curl callbacks, signing, performing, errno mapping) and s3.c (the store's
 * ops, each as one or a few requests; its design comment describes both).
 * Not for use outside them.
 */
#ifndef OBJFS_BACKEND_S3_INT_H
#define OBJFS_BACKEND_S3_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "backend/backend.h"
#include "backend/s3_sign.h"
#include "backend/s3_xml.h"
#include "common/buf.h"

#define S3_MAX_EXTRA_HEADERS 48
#define S3_MAX_HEADER_LINE 4096
#define S3_ERRBODY_MAX (64u * 1024)
#define S3_URL_MAX (8 * 1024)
#define S3_HASH_CHUNK (1u << 20)
/* curl buffers of a large body (smaller ones keep curl's defaults) */
#define S3_BIG_BUF (512u * 1024)
/* Objects above this are copied with UploadPartCopy. */
#define S3_COPY_MAX OBJFS_MPU_MAX_PART
#define S3_COPY_PART (1ULL << 30)
/* Stall timeout multiplier for requests that do server-side work. */
#define S3_SLOW_FACTOR 4
/* Stall detection (s3_req.c): a silence is a stall past
 * max(stall_ms, S3_STALL_K * p90 of the longest silences of the last
 * S3_SILENCES requests), at most the low-speed limit. */
#define S3_STALL_K 4
#define S3_SILENCES 64

struct objfs_metric;
struct objfs_metrics;

/* The leaf's counters (s3_meter.c); all NULL without a registry. */
struct s3_meter {
	struct objfs_metric *http;       /* by method and status */
	struct objfs_metric *transport;  /* no answer, by kind */
	struct objfs_metric *conns;      /* reused or new connection */
	struct objfs_metric *slow_waits; /* silences let run: server slow */
};

struct s3_req;

struct s3_ctx {
	char *scheme;            /* "http" or "https" */
	char *url_host;          /* host[:port] in URLs (bucket. prefixed when
				    virtual-hosted); replaced (under mu) when
				    an AWS endpoint follows the bucket's
				    region */
	char *base_path;         /* "/bucket" (path style) or "" */
	char *bucket;
	char *region;            /* replaced under mu (the bucket's region,
				    when the server names another) */
	char *ca_file;
	struct objfs_credprov *creds;   /* the keys (NULL: anonymous); each
					   request signs with a copy */
	bool insecure;
	bool unsigned_payload;
	long connect_timeout_ms;
	long low_speed_s;
	long stall_ms;
	unsigned max_conn;
	int no_cond_put;         /* the server refused If-None-Match on PUT
				    (Swift: 501); atomic */
	int no_part_copy;        /* the server refused UploadPartCopy
				    (atomic): answered EOPNOTSUPP at once */
	int no_copy_cond;        /* the server's UploadPartCopy condition
				    fails on a matching source (Swift 2.30
				    with a multipart source): not sent;
				    atomic */
	int no_multi_delete;     /* DeleteObjects refused where DELETE is
				    allowed (RGW 16, keys scoped to a
				    prefix); atomic */
	int answered;            /* atomic: the server answered HTTP once */
	int tls_port;            /* an http:// endpoint that failed before
				    any answer: 0 not tried, 1 its port
				    speaks TLS (http to an https port), 2
				    it does not; atomic (s3_req.c) */

	pthread_mutex_t mu;
	pthread_cond_t cv;
	CURL **free_handles;     /* protected by mu */
	unsigned n_free;         /* protected by mu */
	unsigned n_total;        /* protected by mu */
	struct s3_req *active;   /* transfers with a stall check, mu */
	long long moved_ms;      /* atomic: the last byte any transfer
				    with a stall check moved */
	unsigned silences[S3_SILENCES];  /* mu: longest silence (ms) of
					    the last requests answered or
					    abandoned as stalled */
	unsigned n_silences, next_silence;       /* mu */
	long stall_thr_ms;       /* the stall threshold now: written under
				    mu, read atomically */
	struct s3_meter meter;
};

struct s3_req {
	/* request */
	const char *method;
	const char *key;                         /* NULL: the bucket */
	struct objfs_sigv4_param params[8];
	size_t n_params;
	char *hdr_store[S3_MAX_EXTRA_HEADERS];   /* "name\0value" strings */
	struct objfs_sigv4_header hdrs[S3_MAX_EXTRA_HEADERS];
	size_t n_hdrs;
	const struct objfs_source *src;          /* body, or NULL */
	const char *payload_hash;                /* NULL: computed */
	bool want_body;                          /* keep a 2xx body (XML) */
	bool slow;                               /* server-side work before
						    the first response byte */

	/* response */
	const struct objfs_sink *sink;           /* 2xx data, or NULL */
	uint64_t skip;                           /* 200 to a Range: skip */
	uint64_t limit;                          /* ... and stop after */
	bool ranged;                             /* a Range was sent */
	bool range_checked;
	uint64_t range_off;
	uint64_t range_len;
	uint64_t sink_off;
	int sink_err;
	uint64_t src_off;
	int src_err;
	struct objfs_buf body;                   /* error or XML document */
	struct s3_ctx *ctx;                      /* the store's, while run */
	struct s3_req *active_next;              /* ctx->active, ctx->mu */
	long long moved_at_ms;                   /* last byte moved (or start);
						    atomic: read by others */
	curl_off_t moved_dl, moved_ul;           /* ... and the counts then */
	long long max_silence_ms;                /* longest silence so far */
	bool stalled;                            /* aborted: no byte moved */
	bool slow_server;                        /* a silence past the
						    threshold let run */
	long stall_ms;                           /* 0: no stall check */
	struct objfs_cancel *cancel;             /* a get's, or NULL */
	long status;
	struct objfs_obj_info cap;               /* captured headers */
	uint64_t content_length;
	bool have_length;
	uint64_t range_total;
	bool have_total;
	int hdr_err;
	struct objfs_s3_error err;
	char bucket_region[64];                  /* x-amz-bucket-region */
};

/* Adds a header (copied).  0, EINVAL (CR/LF in a value, bad name), E2BIG
 * or ENOMEM. */
int s3_req_header(struct s3_req *r, const char *prefix, const char *name,
		      const char *value);

void s3_req_init(struct s3_req *r, const char *method, const char *key);

int s3_req_meta(struct s3_req *r, const struct objfs_meta *meta,
		    const char *content_type);

void s3_req_param(struct s3_req *r, const char *name, const char *value);

void s3_req_release(struct s3_req *r);

/* Registers the leaf's families into reg (NULL: none).  0 or an errno. */
int s3_meter_init(struct s3_meter *m, struct objfs_metrics *reg);
/* Counts one performed request (h its handle, cc curl's result). */
void s3_meter_note(const struct s3_meter *m, const struct s3_req *r,
		   CURL *h, CURLcode cc);

/* Runs r.  0 for a 2xx response (r->body holds the document when
 * want_body), else an errno; r->err holds the S3 error code if any. */
int s3_perform(struct objfs_store *s, struct s3_req *r);

/* libcurl's header callback (arg is the struct s3_req): captures ETag,
 * Content-Length, Content-Range's total, Last-Modified, Content-Type and
 * x-amz-meta-* of the last response; exposed for the fuzz target
 * tests/fuzz/fuzz_s3_header.c. */
size_t s3_on_header(char *line, size_t size, size_t nmemb, void *arg);

/* Moves the captured headers into info (when not NULL). */
void s3_take_info(struct s3_req *r, struct objfs_obj_info *info,
		      uint64_t size);

#endif
