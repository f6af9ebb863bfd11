/*
 * s3_xml.h - the S3 XML documents objfs reads and writes.
 *
 * Parsers (expat) are tolerant of unknown elements, namespaces and element
 * order, and strict about everything else: malformed or truncated input,
 * a DOCTYPE (hence any entity declaration), nesting deeper than
 * OBJFS_S3_XML_MAX_DEPTH, a text value longer than OBJFS_S3_XML_MAX_TEXT or a
 * document longer than OBJFS_S3_XML_MAX_DOC is EPROTO; an unexpected root
 * element is EPROTO.  When the document is an S3 <Error> (also inside a 200
 * response, as CompleteMultipartUpload and CopyObject may send), parsers
 * fill *err and return EREMOTEIO; the caller maps err->code with
 * s3_errors.h.
 *
 * Builders write into a malloc'ed buffer sized from the input up front
 * (bounded: at most OBJFS_MPU_MAX_PARTS parts or OBJFS_DELETE_BATCH keys).
 */
#ifndef OBJFS_S3_XML_H
#define OBJFS_S3_XML_H

#include <stddef.h>

#include "backend/backend.h"

#define OBJFS_S3_XML_MAX_DOC (32u << 20)
#define OBJFS_S3_XML_MAX_DEPTH 16
#define OBJFS_S3_XML_MAX_TEXT 8192

/* An S3 <Error> document's interesting parts (truncated, NUL-terminated). */
struct objfs_s3_error {
	char code[64];
	char message[256];
	char region[64];        /* <Region>: where the bucket is (AWS's
				   AuthorizationHeaderMalformed) */
};

/* Parses an <Error> document.  0 (err filled) or EPROTO. */
int objfs_s3_xml_parse_error(const char *doc, size_t len,
			     struct objfs_s3_error *err);

/* Parses a ListObjectsV2 <ListBucketResult> into page (which must be empty;
 * on failure it is left empty).  Keys and prefixes are URL-decoded when the
 * result says <EncodingType>url</EncodingType>.  page->next is set only when
 * <IsTruncated>true</IsTruncated>.  0, EPROTO, EREMOTEIO or ENOMEM. */
int objfs_s3_xml_parse_list(const char *doc, size_t len,
			    struct objfs_list_page *page,
			    struct objfs_s3_error *err);

/* <InitiateMultipartUploadResult>: *upload_id is malloc'ed (caller frees).
 * 0, EPROTO, EREMOTEIO or ENOMEM. */
int objfs_s3_xml_parse_initiate(const char *doc, size_t len,
				char **upload_id, struct objfs_s3_error *err);

/* Documents carrying an ETag: root is "CompleteMultipartUploadResult",
 * "CopyObjectResult" or "CopyPartResult".  etag gets the ETag in quotes
 * (added when the server sent none, as Ceph RGW does), or "" when the
 * element is empty (Ceph RGW 16's CompleteMultipartUploadResult).  0,
 * EPROTO (also for a missing ETag) or EREMOTEIO. */
int objfs_s3_xml_parse_etag(const char *doc, size_t len, const char *root,
			    char etag[OBJFS_ETAG_MAX],
			    struct objfs_s3_error *err);

/* A <DeleteResult>: *failed counts <Error> entries other than NoSuchKey;
 * err receives the first such entry's code.  0, EPROTO or EREMOTEIO. */
int objfs_s3_xml_parse_delete(const char *doc, size_t len, size_t *failed,
			      struct objfs_s3_error *err);

/* Builds <CompleteMultipartUpload> for parts (1..OBJFS_MPU_MAX_PARTS).
 * *out is malloc'ed (caller frees), *len its length.  0, EINVAL or ENOMEM. */
int objfs_s3_xml_build_complete(const struct objfs_part *parts, size_t n,
				char **out, size_t *len);

/* Builds a quiet <Delete> for keys (1..OBJFS_DELETE_BATCH).  A key holding a
 * character XML 1.0 cannot carry (control characters other than tab, LF,
 * CR) is EILSEQ: delete such keys one by one.  0, EINVAL, EILSEQ, ENOMEM. */
int objfs_s3_xml_build_delete(const char *const *keys, size_t n, char **out,
			      size_t *len);

/* Appends s XML-escaped (&amp; &lt; &gt; &quot; &apos;, and tab, LF, CR as
 * character references) into out (cap bytes, NUL-terminated).  0, E2BIG or
 * EILSEQ. */
int objfs_s3_xml_escape(const char *s, char *out, size_t cap);

#endif
