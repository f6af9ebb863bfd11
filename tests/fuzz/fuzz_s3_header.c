/*
 * fuzz_s3_header.c - response headers as libcurl hands them to the S3
 * leaf's header callback (s3_on_header, backend/s3_req.c): ETag,
 * Content-Length, Content-Range, Last-Modified, Content-Type and
 * x-amz-meta-*, one line per call; then the user metadata decoded into
 * file attributes (fs/attr.c), as a HEAD of a file is read.
 *
 * Properties: nothing a server sends is an allocation failure (hdr_err
 * stays 0); the ETag fits and carries no CR, LF or surrounding blanks;
 * Content-Length and the Content-Range total are the digits sent; metadata
 * names are the lower-cased header names, values trimmed and free of CR and
 * LF (objfs sends them back when it copies an object); the attributes
 * read from them are a regular file, directory or symlink, or left alone.
 */
#include "config.h"

#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "backend/s3_int.h"
#include "fs/attr.h"
#include "fuzz.h"

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void check_value(const char *v)
{
	size_t n = strlen(v);

	if (n > 0)
		FUZZ_CHECK(!blank(v[0]) && !blank(v[n - 1]));
	/* what objfs writes back (a copy's metadata) must be sendable */
	FUZZ_CHECK(strpbrk(v, "\r\n") == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3_req r;
	struct objfs_fattr a = { S_IFREG | 0644, 1, 2, { 3, 4 } };
	unsigned found;
	size_t pos = 0, i;
	char *buf;

	s3_req_init(&r, "HEAD", "k");
	while (pos < size) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t n = nl != NULL ? (size_t)(nl - (data + pos)) + 1 : size - pos;

		/* libcurl passes exactly the line's bytes, not NUL-terminated */
		buf = malloc(n);
		if (buf == NULL)
			abort();
		memcpy(buf, data + pos, n);
		FUZZ_CHECK(s3_on_header(buf, 1, n, &r) == n);
		free(buf);
		pos += n;
	}
	FUZZ_CHECK(r.hdr_err == 0);
	FUZZ_CHECK(memchr(r.cap.etag, '\0', sizeof(r.cap.etag)) != NULL);
	check_value(r.cap.etag);
	if (r.cap.content_type != NULL)
		check_value(r.cap.content_type);
	for (i = 0; i < r.cap.meta.n; i++) {
		const char *name = r.cap.meta.items[i].name;
		const char *p;

		FUZZ_CHECK(name[0] != '\0' && strlen(name) < 256);
		for (p = name; *p != '\0'; p++)
			FUZZ_CHECK(!(*p >= 'A' && *p <= 'Z'));
		check_value(r.cap.meta.items[i].value);
	}
	found = objfs_fattr_from_meta(&r.cap.meta, &a);
	FUZZ_CHECK(S_ISREG(a.mode) || S_ISDIR(a.mode) || S_ISLNK(a.mode) ||
		   S_ISFIFO(a.mode) || S_ISSOCK(a.mode) || S_ISCHR(a.mode) ||
		   S_ISBLK(a.mode));
	if ((found & OBJFS_FATTR_MODE) == 0)
		FUZZ_CHECK(a.mode == (S_IFREG | 0644));
	if ((found & OBJFS_FATTR_ATIME) != 0)
		FUZZ_CHECK(a.atime.tv_nsec >= 0 && a.atime.tv_nsec < 1000000000);
	if ((found & OBJFS_FATTR_CTIME) != 0)
		FUZZ_CHECK(a.ctime.tv_nsec >= 0 && a.ctime.tv_nsec < 1000000000);
	if ((found & OBJFS_FATTR_MTIME) != 0)
		FUZZ_CHECK(a.mtime.tv_nsec >= 0 && a.mtime.tv_nsec < 1000000000);
	s3_req_release(&r);
	return 0;
}
