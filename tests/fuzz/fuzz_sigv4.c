/*
 * fuzz_sigv4.c - SigV4 canonicalisation (backend/s3_sign.c) of what a
 * request carries that came from elsewhere: the object key (a file name),
 * query parameters (a listing's prefix, start-after, a continuation token
 * the server issued) and header values (metadata), added through the S3
 * leaf's own s3_req_header() as every request is built.
 *
 * Input: NUL-separated fields: key, then pairs of parameter name and value
 * (at most 8), then "--" and pairs of header name and value.
 *
 * Properties: the path and every parameter are encoded with only
 * unreserved bytes and upper-case %XX (the path keeps '/'), and decode back
 * to what was given (nothing lost, nothing merged); the query is sorted;
 * nothing a key, parameter or header value holds adds a line to the
 * canonical request (exactly one line per distinct header name); the
 * Authorization header is one line.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "backend/s3_int.h"
#include "backend/s3_sign.h"
#include "fuzz.h"

#define CAP (64 * 1024)

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Checks that enc[0..n) is a strict SigV4 encoding and decodes it into out
 * (NUL-terminated); returns the decoded length. */
static size_t decode(const char *enc, size_t n, bool keep_slash, char *out)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		if (enc[i] == '%') {
			int hi, lo;

			FUZZ_CHECK(i + 2 < n);
			hi = hexval(enc[i + 1]);
			lo = hexval(enc[i + 2]);
			FUZZ_CHECK(hi >= 0 && lo >= 0);
			out[o] = (char)(hi << 4 | lo);
			/* never an escape of what must go as is */
			FUZZ_CHECK(!unreserved((unsigned char)out[o]));
			FUZZ_CHECK(!(keep_slash && out[o] == '/'));
			o++;
			i += 2;
		} else {
			FUZZ_CHECK(unreserved((unsigned char)enc[i]) ||
				   (keep_slash && enc[i] == '/'));
			out[o++] = enc[i];
		}
	}
	out[o] = '\0';
	return o;
}

static size_t count(const char *s, char c)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += *s == c;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct s3_req r;
	struct objfs_sigv4_header hdrs[S3_MAX_EXTRA_HEADERS + 2];
	struct objfs_sigv4_request req;
	struct objfs_sigv4_key key = { "AKIDEXAMPLE", "secret", "us-east-1", "s3" };
	char *strs[64];
	size_t ns = 0, i, j, nh, distinct;
	char *k, *path, *creq, *sh, *dec, *line, *save = NULL;
	char auth[OBJFS_SIGV4_AUTH_MAX];
	int rc;

	if (size > 16384)
		return 0;
	s3_req_init(&r, "GET", NULL);
	k = fuzz_str(&in);
	/* parameters until "--" */
	while (in.n > 0 && ns + 2 <= 16 && r.n_params < 8) {
		char *name = fuzz_str(&in);

		if (strcmp(name, "--") == 0) {
			free(name);
			break;
		}
		strs[ns++] = name;
		strs[ns++] = fuzz_str(&in);
		s3_req_param(&r, strs[ns - 2], strs[ns - 1]);
	}
	while (in.n > 0 && r.n_hdrs < 16) {
		char *name = fuzz_str(&in), *value = fuzz_str(&in);

		rc = s3_req_header(&r, "x-amz-meta-", name, value);
		if (rc == 0) {
			FUZZ_CHECK(strpbrk(value, "\r\n") == NULL);
		}
		free(name);
		free(value);
	}

	path = malloc(strlen(k) + 9);
	creq = malloc(CAP);
	sh = malloc(OBJFS_SIGV4_SIGNED_HEADERS_MAX);
	dec = malloc(CAP);
	if (path == NULL || creq == NULL || sh == NULL || dec == NULL)
		abort();
	sprintf(path, "/bucket/%s", k);

	/* the path alone */
	rc = objfs_sigv4_uri_encode(path, strlen(path), true, creq, CAP);
	if (rc == 0) {
		FUZZ_CHECK(decode(creq, strlen(creq), true, dec) == strlen(path));
		FUZZ_CHECK(strcmp(dec, path) == 0);
	}

	nh = 0;
	hdrs[nh++] = (struct objfs_sigv4_header){ "Host", "127.0.0.1:8080" };
	hdrs[nh++] = (struct objfs_sigv4_header){ "X-Amz-Date", "20261124T000000Z" };
	for (i = 0; i < r.n_hdrs; i++)
		hdrs[nh++] = r.hdrs[i];
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.path = path;
	req.params = r.params;
	req.n_params = r.n_params;
	req.headers = hdrs;
	req.n_headers = nh;
	req.payload_hash = OBJFS_SIGV4_UNSIGNED;
	rc = objfs_sigv4_canonical_request(&req, creq, CAP, sh,
					   OBJFS_SIGV4_SIGNED_HEADERS_MAX);
	FUZZ_CHECK(rc == 0 || rc == E2BIG);
	if (rc == 0) {
		/* distinct header names (case-insensitive) */
		distinct = 0;
		for (i = 0; i < nh; i++) {
			for (j = 0; j < i; j++)
				if (strcasecmp(hdrs[i].name, hdrs[j].name) == 0)
					break;
			distinct += j == i;
		}
		FUZZ_CHECK(count(creq, '\n') == distinct + 5);
		FUZZ_CHECK(count(sh, ';') == distinct - 1);
		/* line 2: the path; line 3: the query */
		line = strtok_r(creq, "\n", &save);
		FUZZ_CHECK(line != NULL && strcmp(line, "GET") == 0);
		line = strtok_r(NULL, "\n", &save);
		FUZZ_CHECK(line != NULL);
		FUZZ_CHECK(decode(line, strlen(line), true, dec) == strlen(path));
		FUZZ_CHECK(strcmp(dec, path) == 0);
		if (r.n_params > 0) {
			char *q = strtok_r(NULL, "\n", &save);
			char *pname = NULL, *pvalue = NULL;
			char *item, *save2 = NULL;
			size_t items = 0;

			FUZZ_CHECK(q != NULL);
			for (item = strtok_r(q, "&", &save2); item != NULL;
			     item = strtok_r(NULL, "&", &save2)) {
				char *eq = strchr(item, '=');

				FUZZ_CHECK(eq != NULL);
				*eq = '\0';
				decode(item, strlen(item), false, dec);
				decode(eq + 1, strlen(eq + 1), false, dec);
				/* sorted by encoded name, then value */
				if (pname != NULL)
					FUZZ_CHECK(strcmp(pname, item) < 0 ||
						   (strcmp(pname, item) == 0 &&
						    strcmp(pvalue, eq + 1) <= 0));
				pname = item;
				pvalue = eq + 1;
				items++;
			}
			FUZZ_CHECK(items == r.n_params);
		}
	}
	rc = objfs_sigv4_authorization(&req, &key, "20261124T000000Z", auth, sizeof(auth));
	FUZZ_CHECK(rc == 0 || rc == E2BIG);
	if (rc == 0)
		FUZZ_CHECK(strpbrk(auth, "\r\n") == NULL);

	for (i = 0; i < ns; i++)
		free(strs[i]);
	free(k);
	free(path);
	free(creq);
	free(sh);
	free(dec);
	s3_req_release(&r);
	return 0;
}
