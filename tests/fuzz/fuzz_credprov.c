/*
 * fuzz_credprov.c - the credential provider's readers of foreign answers
 * (backend/credprov.c): an STS AssumeRoleWithWebIdentity document and a
 * container credentials endpoint's JSON.  The first input byte picks the
 * reader.
 *
 * Properties: an answer read as valid has an access key, a secret key and
 * an expiry; an STS error document is EACCES with no keys; keys read from
 * JSON, written back as JSON (escaped), read back the same; only the
 * top level counts: a valid answer nested one level down, as the value
 * of a member of an object, is no answer (EPROTO).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "backend/credprov.h"
#include "common/creds.h"
#include "fuzz.h"

static bool same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* "name":"escaped value", into out (at least 2 * strlen(v) + 32 bytes). */
static size_t json_field(char *out, const char *name, const char *v)
{
	size_t k = (size_t)sprintf(out, "\"%s\":\"", name);

	for (; *v != '\0'; v++) {
		if (*v == '"' || *v == '\\')
			out[k++] = '\\';
		out[k++] = *v;
	}
	out[k++] = '"';
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct objfs_creds c = OBJFS_CREDS_INIT, back = OBJFS_CREDS_INIT;
	long long exp = 0, exp2 = 0;
	char why[128];
	int rc;

	if (size < 1 || size > 65536)
		return 0;
	if (data[0] & 1) {
		rc = objfs_credprov_parse_sts((const char *)data + 1, size - 1, &c, &exp,
					      why, sizeof(why));
		if (rc == 0)
			FUZZ_CHECK(c.access_key != NULL && c.secret_key != NULL);
		else
			FUZZ_CHECK(c.access_key == NULL && c.secret_key == NULL &&
				   c.session_token == NULL);
		FUZZ_CHECK(strlen(why) < sizeof(why));
		objfs_creds_release(&c);
		return 0;
	}
	rc = objfs_credprov_parse_json((const char *)data + 1, size - 1, &c, &exp);
	if (rc != 0) {
		FUZZ_CHECK(c.access_key == NULL && c.secret_key == NULL);
		return 0;
	}
	FUZZ_CHECK(c.access_key != NULL && c.secret_key != NULL);
	{
		/* {"Nested": DOC} names no keys at its top level */
		char *wrap = malloc(size + 16);
		struct objfs_creds w = OBJFS_CREDS_INIT;
		long long wexp = 0;

		if (wrap == NULL)
			abort();
		memcpy(wrap, "{\"Nested\":", 10);
		memcpy(wrap + 10, data + 1, size - 1);
		wrap[10 + size - 1] = '}';
		FUZZ_CHECK(objfs_credprov_parse_json(wrap, size + 10, &w, &wexp) == EPROTO);
		FUZZ_CHECK(w.access_key == NULL && w.secret_key == NULL);
		free(wrap);
	}
	{
		size_t cap = 2 * (strlen(c.access_key) + strlen(c.secret_key) +
				  (c.session_token ? strlen(c.session_token) : 0)) + 256;
		char *doc = malloc(cap), t[32];
		size_t k = 1;
		time_t tt = (time_t)exp;
		struct tm tm;
		bool ctl = false;
		const char *s;

		if (doc == NULL)
			abort();
		for (s = c.access_key; *s; s++)
			ctl |= (unsigned char)*s < 0x20;
		for (s = c.secret_key; *s; s++)
			ctl |= (unsigned char)*s < 0x20;
		for (s = c.session_token ? c.session_token : ""; *s; s++)
			ctl |= (unsigned char)*s < 0x20;
		doc[0] = '{';
		k += json_field(doc + k, "AccessKeyId", c.access_key);
		doc[k++] = ',';
		k += json_field(doc + k, "SecretAccessKey", c.secret_key);
		if (c.session_token != NULL) {
			doc[k++] = ',';
			k += json_field(doc + k, "Token", c.session_token);
		}
		gmtime_r(&tt, &tm);
		strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
		doc[k++] = ',';
		k += json_field(doc + k, "Expiration", t);
		doc[k++] = '}';
		/* control characters were escapes (\n, \t ...): not written
		 * back as such here, so only plain keys round-trip */
		if (!ctl && tm.tm_year >= 0) {
			FUZZ_CHECK(objfs_credprov_parse_json(doc, k, &back, &exp2) == 0);
			FUZZ_CHECK(same(c.access_key, back.access_key));
			FUZZ_CHECK(same(c.secret_key, back.secret_key));
			FUZZ_CHECK(same(c.session_token, back.session_token));
			FUZZ_CHECK(exp == exp2);
		}
		free(doc);
	}
	objfs_creds_release(&c);
	objfs_creds_release(&back);
	return 0;
}
