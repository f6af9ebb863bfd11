/*
 * store_error.h - what the object store itself said about a failed request.
 *
 * Ops return only an errno (backend.h); the S3 leaf also records, per
 * thread, the store's own account of the last failure (its error code,
 * HTTP status and message, or the transport failure) with what to check.
 * Callers that report errors to people (objfs-mount's messages, the CSI
 * controller's gRPC messages) read it right after the failed call, on the
 * same thread.  Never holds a secret: S3 error messages carry none, and
 * nothing from the request is copied.
 *
 * The record is set by s3_errors.c whenever it maps a failure; it belongs
 * to the errno it was recorded with, so a later failure of another kind
 * (ENOMEM, a local store) never borrows it.
 */
#ifndef OBJFS_STORE_ERROR_H
#define OBJFS_STORE_ERROR_H

#include <stdbool.h>
#include <stddef.h>

struct objfs_store_error {
	int err;                /* the errno the failure mapped to */
	long status;            /* HTTP status; 0 for a transport failure */
	char code[64];          /* S3 error code, "" when the reply had none */
	char message[256];      /* the store's message or the transport's */
	const char *hint;       /* what to check (static), or NULL */
	bool config;            /* a configuration error: the same request
				 * fails again until someone fixes it */
};

/* Copies the calling thread's last recorded failure into *out when it
 * mapped to err and returns true; else zeroes *out and returns false. */
bool objfs_store_error_get(int err, struct objfs_store_error *out);

/* Describes err in one line into buf (len bytes), with the store's account
 * when the calling thread has one for err: "S3 NoSuchBucket (HTTP 404): The
 * specified bucket does not exist; check that the bucket exists ...", else
 * objfs_strerror(err).  Returns buf. */
const char *objfs_store_error_text(int err, char *buf, size_t len);

/* Records a failure for the calling thread (the S3 leaf's error mapping,
 * and tests).  status 0 means a transport failure described by message. */
void objfs_store_error_note(int err, long status, const char *code,
			    const char *message);

struct objfs_store;

/* Asks the store for one key under prefix ("" or NULL: its root), to learn
 * before anything is written that the store answers and its bucket
 * exists.  0, ENOENT when the bucket does not exist (an S3 listing of a
 * missing prefix is empty, never ENOENT), or the failure's errno, with
 * the store's account recorded for objfs_store_error_text(). */
int objfs_store_probe(struct objfs_store *s, const char *prefix);

#endif
