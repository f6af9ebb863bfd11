/*
 * fuzz_s3_xml.c - the S3 XML parsers (backend/s3_xml.c) on documents a
 * server sent.  The first byte picks the document kind; the rest is the
 * document.
 *
 * Properties: results are NUL-terminated within their buffers; a failed
 * listing leaves the page empty; an ETag is quoted or empty; and a listing
 * that goes up through the prefix layer (backend/prefix.c, which confines a
 * volume) never yields a key outside the volume's prefix: every key and
 * common prefix it returns is the server's with the prefix removed, or the
 * listing fails.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/s3_xml.h"
#include "fuzz.h"

#define VOL "vol/"

static bool page_empty(const struct objfs_list_page *p)
{
	return p->entries == NULL && p->n_entries == 0 && p->prefixes == NULL &&
	       p->n_prefixes == 0 && p->next == NULL;
}

static void check_err(const struct objfs_s3_error *e)
{
	FUZZ_CHECK(memchr(e->code, '\0', sizeof(e->code)) != NULL);
	FUZZ_CHECK(memchr(e->message, '\0', sizeof(e->message)) != NULL);
}

/* A store whose listing is the document being fuzzed. */
struct doc {
	const char *p;
	size_t n;
};

static int doc_list(struct objfs_store *s, const struct objfs_list_req *req,
		    struct objfs_list_page *page)
{
	const struct doc *d = s->ctx;
	struct objfs_s3_error err;

	FUZZ_CHECK(req->prefix != NULL && strncmp(req->prefix, VOL, strlen(VOL)) == 0);
	return objfs_s3_xml_parse_list(d->p, d->n, page, &err);
}

static void doc_destroy(struct objfs_store *s)
{
	free(s);
}

static const struct objfs_store_ops doc_ops = {
	.name = "fuzz-doc",
	.list = doc_list,
	.destroy = doc_destroy,
};

static void through_prefix_layer(const char *doc, size_t n)
{
	struct doc d = { doc, n };
	struct objfs_store *inner = calloc(1, sizeof(*inner)), *vol = NULL;
	struct objfs_list_page raw = OBJFS_LIST_PAGE_INIT;
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_list_req req = { 0 };
	struct objfs_s3_error err;
	size_t i;
	int rc;

	if (inner == NULL)
		abort();
	inner->ops = &doc_ops;
	inner->ctx = &d;
	FUZZ_CHECK(objfs_prefix_store_create(inner, VOL, &vol) == 0);
	req.delimiter = "/";
	rc = objfs_store_list(vol, &req, &page);
	if (rc == 0) {
		FUZZ_CHECK(objfs_s3_xml_parse_list(doc, n, &raw, &err) == 0);
		FUZZ_CHECK(raw.n_entries == page.n_entries);
		FUZZ_CHECK(raw.n_prefixes == page.n_prefixes);
		for (i = 0; i < raw.n_entries; i++) {
			const char *k = raw.entries[i].key;

			FUZZ_CHECK(strncmp(k, VOL, strlen(VOL)) == 0);
			FUZZ_CHECK(strcmp(k + strlen(VOL), page.entries[i].key) == 0);
		}
		for (i = 0; i < raw.n_prefixes; i++) {
			const char *k = raw.prefixes[i];

			FUZZ_CHECK(strncmp(k, VOL, strlen(VOL)) == 0);
			FUZZ_CHECK(strcmp(k + strlen(VOL), page.prefixes[i]) == 0);
		}
	}
	objfs_list_page_release(&raw);
	objfs_list_page_release(&page);
	objfs_store_destroy(vol);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const roots[] = {
		"CompleteMultipartUploadResult", "CopyObjectResult",
		"CopyPartResult",
	};
	struct objfs_s3_error err;
	const char *doc;
	size_t n, i;
	uint8_t kind;
	int rc;

	if (size < 1)
		return 0;
	kind = data[0];
	doc = (const char *)data + 1;
	n = size - 1;
	memset(&err, 0x5a, sizeof(err));
	switch (kind % 5) {
	case 0:
		if (objfs_s3_xml_parse_error(doc, n, &err) == 0)
			check_err(&err);
		break;
	case 1: {
		struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;

		rc = objfs_s3_xml_parse_list(doc, n, &page, &err);
		FUZZ_CHECK(rc == 0 || rc == EPROTO || rc == EREMOTEIO || rc == ENOMEM);
		if (rc != 0)
			FUZZ_CHECK(page_empty(&page));
		if (rc == EREMOTEIO)
			check_err(&err);
		for (i = 0; rc == 0 && i < page.n_entries; i++) {
			FUZZ_CHECK(page.entries[i].key != NULL);
			FUZZ_CHECK(memchr(page.entries[i].etag, '\0', OBJFS_ETAG_MAX) != NULL);
		}
		for (i = 0; rc == 0 && i < page.n_prefixes; i++)
			FUZZ_CHECK(page.prefixes[i] != NULL);
		objfs_list_page_release(&page);
		through_prefix_layer(doc, n);
		break;
	}
	case 2: {
		char *id = NULL;

		rc = objfs_s3_xml_parse_initiate(doc, n, &id, &err);
		if (rc == 0)
			FUZZ_CHECK(id != NULL);
		else
			FUZZ_CHECK(id == NULL);
		if (rc == EREMOTEIO)
			check_err(&err);
		free(id);
		break;
	}
	case 3: {
		char etag[OBJFS_ETAG_MAX];
		size_t el;

		rc = objfs_s3_xml_parse_etag(doc, n, roots[(kind / 5) % 3], etag, &err);
		if (rc == 0) {
			FUZZ_CHECK(memchr(etag, '\0', sizeof(etag)) != NULL);
			el = strlen(etag);
			FUZZ_CHECK(el == 0 || (el >= 2 && etag[0] == '"' && etag[el - 1] == '"'));
		}
		if (rc == EREMOTEIO)
			check_err(&err);
		break;
	}
	case 4: {
		size_t failed = 12345;

		rc = objfs_s3_xml_parse_delete(doc, n, &failed, &err);
		if (rc == 0 && failed > 0)
			check_err(&err);
		if (rc == EREMOTEIO)
			check_err(&err);
		break;
	}
	}
	return 0;
}
