/* credprov.c - the credential provider (see credprov.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <expat.h>
#include <openssl/crypto.h>

#include "backend/credprov.h"
#include "backend/http.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/log.h"

#define SUB "creds"
#define REFRESH_DEFAULT_S 300.0
#define RETRY_GAP_S 5
#define DOC_MAX (64u * 1024)
#define TOKEN_MAX (16u * 1024)
/* What objfs asks STS for (AWS allows 900..the role's maximum, default
 * 3600; RGW up to rgw_sts_max_session_duration, 43200 by default). */
#define STS_DURATION "3600"

enum kind { K_NONE, K_STATIC, K_WEB, K_CONTAINER };

struct objfs_credprov {
	enum kind kind;
	struct objfs_creds src;         /* the configuration (copied) */
	char *region;
	char *ca_file;
	bool insecure;
	double refresh_s;
	struct objfs_log *log;

	pthread_mutex_t mu;             /* cur, exp, renewals, last_try */
	struct objfs_creds cur;         /* keys in use */
	long long exp;                  /* their expiry (epoch s); 0: none */
	unsigned renewals;
	long long last_try;             /* last failed renewal */
	pthread_mutex_t renew_mu;       /* one renewal at a time */
};

bool objfs_credprov_uri_allowed(const char *uri)
{
	static const char *const hosts[] = {
		"127.0.0.1", "localhost", "[::1]", "169.254.170.2",
		"169.254.170.23", "[fd00:ec2::23]",
	};
	const char *h, *end;
	size_t i, n;

	if (strncmp(uri, "https://", 8) == 0)
		return uri[8] != '\0';
	if (strncmp(uri, "http://", 7) != 0)
		return false;
	h = uri + 7;
	end = h + strcspn(h, "/?#");
	/* host[:port]: the port is the last ':' after a ']' or in a name */
	for (n = (size_t)(end - h); n > 0 && h[n - 1] >= '0' && h[n - 1] <= '9'; n--)
		;
	if (n > 0 && h[n - 1] == ':')
		n--;
	else
		n = (size_t)(end - h);
	if (memchr(h, '@', (size_t)(end - h)) != NULL)
		return false;
	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		if (strlen(hosts[i]) == n && strncasecmp(h, hosts[i], n) == 0)
			return true;
	/* 127.0.0.0/8 */
	if (n > 4 && n < 16 && strncmp(h, "127.", 4) == 0) {
		char ip[16];
		struct in_addr a;

		memcpy(ip, h, n);
		ip[n] = '\0';
		return inet_pton(AF_INET, ip, &a) == 1;
	}
	return false;
}

int objfs_credprov_create(const struct objfs_credprov_config *cfg,
			  struct objfs_log *log, struct objfs_credprov **out)
{
	const struct objfs_creds *c = cfg->creds;
	struct objfs_credprov *p;
	bool fail = false;
	int err;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return ENOMEM;
	if (c != NULL && (c->access_key != NULL || c->secret_key != NULL)) {
		p->kind = K_STATIC;
		if (c->access_key == NULL || c->secret_key == NULL) {
			objfs_error(log, "creds", "an access key without a secret "
				    "key, or a secret key without an access key: "
				    "give both");
			goto inval;
		}
	} else if (c != NULL && (c->role_arn != NULL || c->web_identity_token_file != NULL)) {
		p->kind = K_WEB;
		if (c->role_arn == NULL || c->web_identity_token_file == NULL) {
			objfs_error(log, "creds", "%s without %s: a role is "
				    "assumed with both (AWS_ROLE_ARN and "
				    "AWS_WEB_IDENTITY_TOKEN_FILE)",
				    c->role_arn == NULL ? "a web identity token file" :
				    "a role ARN", c->role_arn == NULL ? "a role ARN" :
				    "a web identity token file");
			goto inval;
		}
	} else if (c != NULL && c->container_uri != NULL) {
		p->kind = K_CONTAINER;
		if (!objfs_credprov_uri_allowed(c->container_uri)) {
			/* not echoed: a URI may carry a token */
			objfs_error(log, "creds", "the container credentials URI "
				    "is refused: https, or http to a loopback or "
				    "container-link address only");
			goto inval;
		}
	}
	if (c != NULL && objfs_creds_copy(c, &p->src) != 0)
		fail = true;
	p->region = strdup(cfg->region != NULL && cfg->region[0] != '\0' ? cfg->region :
			   "us-east-1");
	p->ca_file = cfg->ca_file != NULL ? strdup(cfg->ca_file) : NULL;
	if (p->region == NULL || (cfg->ca_file != NULL && p->ca_file == NULL))
		fail = true;
	p->insecure = cfg->insecure_skip_verify;
	p->refresh_s = cfg->refresh_s > 0 ? cfg->refresh_s : REFRESH_DEFAULT_S;
	p->log = log;
	if (fail) {
		err = ENOMEM;
		goto out;
	}
	if (p->kind == K_STATIC && objfs_creds_copy(&p->src, &p->cur) != 0) {
		err = ENOMEM;
		goto out;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutex_init(&p->renew_mu, NULL);
	*out = p;
	return 0;
inval:
	err = EINVAL;
out:
	objfs_creds_release(&p->src);
	objfs_creds_release(&p->cur);
	free(p->region);
	free(p->ca_file);
	free(p);
	return err;
}

void objfs_credprov_destroy(struct objfs_credprov *p)
{
	if (p == NULL)
		return;
	pthread_mutex_destroy(&p->mu);
	pthread_mutex_destroy(&p->renew_mu);
	objfs_creds_release(&p->src);
	objfs_creds_release(&p->cur);
	free(p->region);
	free(p->ca_file);
	free(p);
}

const char *objfs_credprov_kind(const struct objfs_credprov *p)
{
	switch (p->kind) {
	case K_STATIC: return "static keys";
	case K_WEB: return "web identity";
	case K_CONTAINER: return "container endpoint";
	default: return "none";
	}
}

unsigned objfs_credprov_renewals(struct objfs_credprov *p)
{
	unsigned n;

	pthread_mutex_lock(&p->mu);
	n = p->renewals;
	pthread_mutex_unlock(&p->mu);
	return n;
}

/* ---- parsing ------------------------------------------------------------ */

/* "2026-11-24T10:00:00Z" or with fractional seconds: epoch seconds. */
static int parse_time(const char *s, long long *out)
{
	struct tm tm;
	const char *e;

	memset(&tm, 0, sizeof(tm));
	e = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (e == NULL)
		return EPROTO;
	if (*e == '.')
		for (e++; *e >= '0' && *e <= '9'; e++)
			;
	if (strcmp(e, "Z") != 0 && strcmp(e, "+00:00") != 0)
		return EPROTO;
	*out = (long long)timegm(&tm);
	return 0;
}

struct sts_parse {
	struct objfs_creds *out;
	char exp[64];
	char code[64], message[256];
	char *text;
	size_t len;
	bool error_doc;
	int err;
};

static void XMLCALL sts_start(void *data, const XML_Char *name, const XML_Char **atts)
{
	struct sts_parse *sp = data;

	(void)atts;
	if (strcmp(name, "ErrorResponse") == 0 || strcmp(name, "Error") == 0)
		sp->error_doc = true;
	sp->len = 0;
}

static void XMLCALL sts_chars(void *data, const XML_Char *s, int len)
{
	struct sts_parse *sp = data;

	if (sp->err != 0 || len <= 0)
		return;
	if (sp->len + (size_t)len >= TOKEN_MAX) {
		sp->err = EPROTO;
		return;
	}
	memcpy(sp->text + sp->len, s, (size_t)len);
	sp->len += (size_t)len;
}

static void XMLCALL sts_end(void *data, const XML_Char *name)
{
	struct sts_parse *sp = data;
	char **field = NULL;

	if (sp->err != 0)
		return;
	sp->text[sp->len] = '\0';
	if (strcmp(name, "AccessKeyId") == 0)
		field = &sp->out->access_key;
	else if (strcmp(name, "SecretAccessKey") == 0)
		field = &sp->out->secret_key;
	else if (strcmp(name, "SessionToken") == 0)
		field = &sp->out->session_token;
	else if (strcmp(name, "Expiration") == 0)
		snprintf(sp->exp, sizeof(sp->exp), "%s", sp->text);
	else if (strcmp(name, "Code") == 0)
		snprintf(sp->code, sizeof(sp->code), "%s", sp->text);
	else if (strcmp(name, "Message") == 0)
		snprintf(sp->message, sizeof(sp->message), "%s", sp->text);
	if (field != NULL) {
		free(*field);
		*field = strdup(sp->text);
		if (*field == NULL)
			sp->err = ENOMEM;
	}
	OPENSSL_cleanse(sp->text, sp->len);
	sp->len = 0;
}

int objfs_credprov_parse_sts(const char *doc, size_t len, struct objfs_creds *out,
			     long long *exp, char *why, size_t cap)
{
	struct sts_parse sp;
	XML_Parser x;
	int err;

	memset(&sp, 0, sizeof(sp));
	sp.out = out;
	if (why != NULL && cap > 0)
		why[0] = '\0';
	sp.text = malloc(TOKEN_MAX);
	x = XML_ParserCreate(NULL);
	if (sp.text == NULL || x == NULL) {
		free(sp.text);
		if (x != NULL)
			XML_ParserFree(x);
		return ENOMEM;
	}
	XML_SetUserData(x, &sp);
	XML_SetElementHandler(x, sts_start, sts_end);
	XML_SetCharacterDataHandler(x, sts_chars);
	if (len > DOC_MAX || XML_Parse(x, doc, (int)len, 1) != XML_STATUS_OK)
		err = EPROTO;
	else
		err = sp.err;
	XML_ParserFree(x);
	OPENSSL_cleanse(sp.text, TOKEN_MAX);
	free(sp.text);
	if (err == 0 && sp.error_doc) {
		if (why != NULL)
			snprintf(why, cap, "%s: %s", sp.code[0] ? sp.code : "error",
				 sp.message);
		err = EACCES;
	}
	if (err == 0 && (out->access_key == NULL || out->secret_key == NULL ||
			 parse_time(sp.exp, exp) != 0))
		err = EPROTO;
	if (err != 0)
		objfs_creds_release(out);
	return err;
}

/* The JSON string value of "name" at the top level of doc (a flat
 * object, as the container endpoint answers), unescaped, malloc'ed. */
static int json_string(const char *doc, size_t len, const char *name, char **out)
{
	const char *p = doc, *end = doc + len;
	size_t nl = strlen(name);
	char *v;
	size_t k = 0;

	*out = NULL;
	for (; p + nl + 2 <= end; p++) {
		if (*p != '"' || (size_t)(end - p) < nl + 2 ||
		    memcmp(p + 1, name, nl) != 0 || p[nl + 1] != '"')
			continue;
		p += nl + 2;
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
			p++;
		if (p >= end || *p != ':')
			continue;
		for (p++; p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'); p++)
			;
		if (p >= end || *p != '"')
			return EPROTO;
		v = malloc((size_t)(end - p));
		if (v == NULL)
			return ENOMEM;
		for (p++; p < end && *p != '"'; p++) {
			if (*p == '\\') {
				if (++p >= end)
					break;
				switch (*p) {
				case '"': case '\\': case '/': v[k++] = *p; break;
				case 'n': v[k++] = '\n'; break;
				case 't': v[k++] = '\t'; break;
				case 'r': v[k++] = '\r'; break;
				case 'b': v[k++] = '\b'; break;
				case 'f': v[k++] = '\f'; break;
				default:        /* \uXXXX: not in keys, tokens or times */
					OPENSSL_cleanse(v, k);
					free(v);
					return EPROTO;
				}
			} else if ((unsigned char)*p < 0x20) {
				break;
			} else {
				v[k++] = *p;
			}
		}
		if (p >= end || *p != '"') {
			OPENSSL_cleanse(v, k);
			free(v);
			return EPROTO;
		}
		v[k] = '\0';
		*out = v;
		return 0;
	}
	return ENOENT;
}

int objfs_credprov_parse_json(const char *doc, size_t len, struct objfs_creds *out,
			      long long *exp)
{
	char *t = NULL;
	int err;

	err = json_string(doc, len, "AccessKeyId", &out->access_key);
	if (err == 0)
		err = json_string(doc, len, "SecretAccessKey", &out->secret_key);
	if (err == 0) {
		err = json_string(doc, len, "Token", &out->session_token);
		if (err == ENOENT)
			err = 0;
		if (err == 0 && out->session_token != NULL && out->session_token[0] == '\0') {
			free(out->session_token);       /* "Token": "" is none */
			out->session_token = NULL;
		}
	}
	if (err == 0)
		err = json_string(doc, len, "Expiration", &t);
	if (err == 0)
		err = parse_time(t, exp);
	free(t);
	if (err == ENOENT)
		err = EPROTO;
	if (err != 0)
		objfs_creds_release(out);
	return err;
}

/* ---- fetching ------------------------------------------------------------ */

/* A token file's contents (trimmed), malloc'ed; the caller wipes it. */
static int read_token(const char *path, char **out)
{
	char *buf = malloc(TOKEN_MAX);
	size_t n;
	int bad;
	FILE *f;

	*out = NULL;
	if (buf == NULL)
		return ENOMEM;
	f = fopen(path, "re");
	if (f == NULL) {
		free(buf);
		return errno;
	}
	n = fread(buf, 1, TOKEN_MAX - 1, f);
	bad = ferror(f) ? EIO : !feof(f) ? EFBIG : 0;
	fclose(f);
	if (bad != 0) {
		OPENSSL_cleanse(buf, TOKEN_MAX);
		free(buf);
		return bad;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	if (n == 0 || memchr(buf, '\n', n) != NULL || memchr(buf, '\r', n) != NULL) {
		OPENSSL_cleanse(buf, TOKEN_MAX);
		free(buf);
		return EINVAL;
	}
	*out = buf;
	return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct objfs_buf *b = arg;
	size_t n = size * nmemb;

	objfs_buf_add(b, data, n);
	return objfs_buf_err(b) == 0 ? n : 0;
}

/* One HTTP request: body (NULL: GET) to url with an optional header line;
 * the answer's status and body.  0 or an errno of the transport. */
static int http(struct objfs_credprov *p, const char *url, const char *body,
		const char *header, long *status, struct objfs_buf *resp)
{
	struct curl_slist *hl = NULL, *t;
	CURL *h = curl_easy_init();
	CURLcode cc;
	int err = 0;

	*status = 0;
	if (h == NULL)
		return ENOMEM;
	if (header != NULL) {
		t = curl_slist_append(hl, header);
		if (t == NULL) {
			curl_easy_cleanup(h);
			return ENOMEM;
		}
		hl = t;
	}
	objfs_http_setup(h, url, p->ca_file, p->insecure);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
	if (hl != NULL)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	if (body != NULL)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		objfs_warn(p->log, SUB, "%s: %s", url, curl_easy_strerror(cc));
		err = cc == CURLE_OUT_OF_MEMORY ? ENOMEM : ECONNREFUSED;
	} else {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	}
	curl_easy_cleanup(h);
	if (hl != NULL) {
		/* the header may hold a token */
		for (t = hl; t != NULL; t = t->next)
			OPENSSL_cleanse(t->data, strlen(t->data));
		curl_slist_free_all(hl);
	}
	return err;
}

/* Appends name=urlencoded(value)& to the form. */
static int form_add(struct objfs_buf *f, const char *name, const char *value)
{
	char *e = curl_easy_escape(NULL, value, 0);
	int err;

	if (e == NULL)
		return ENOMEM;
	objfs_buf_addf(f, "%s%s=%s", f->len > 0 ? "&" : "", name, e);
	err = objfs_buf_err(f);
	OPENSSL_cleanse(e, strlen(e));
	curl_free(e);
	return err;
}

static int fetch_web(struct objfs_credprov *p, struct objfs_creds *out, long long *exp)
{
	struct objfs_buf form = OBJFS_BUF_INIT(2 * TOKEN_MAX, E2BIG);
	struct objfs_buf resp = OBJFS_BUF_INIT(DOC_MAX, EFBIG);
	char url[512], session[80], why[400];
	char *token = NULL;
	long status = 0;
	int err;

	if (p->src.sts_endpoint != NULL)
		snprintf(url, sizeof(url), "%s", p->src.sts_endpoint);
	else
		snprintf(url, sizeof(url), "https://sts.%s.amazonaws.com", p->region);
	if (p->src.role_session_name != NULL)
		snprintf(session, sizeof(session), "%s", p->src.role_session_name);
	else
		snprintf(session, sizeof(session), "objfs-%ld-%lld", (long)getpid(),
			 (long long)time(NULL));
	err = read_token(p->src.web_identity_token_file, &token);
	if (err != 0) {
		objfs_error(p->log, SUB, "web identity: cannot read the token file %s: %s",
			    p->src.web_identity_token_file, objfs_strerror(err));
		return EACCES;
	}
	err = form_add(&form, "Action", "AssumeRoleWithWebIdentity");
	if (err == 0)
		err = form_add(&form, "Version", "2011-06-15");
	if (err == 0)
		err = form_add(&form, "RoleArn", p->src.role_arn);
	if (err == 0)
		err = form_add(&form, "RoleSessionName", session);
	if (err == 0)
		err = form_add(&form, "DurationSeconds", STS_DURATION);
	if (err == 0)
		err = form_add(&form, "WebIdentityToken", token);
	OPENSSL_cleanse(token, strlen(token));
	free(token);
	if (err == 0)
		err = http(p, url, form.p, NULL, &status, &resp);
	if (form.p != NULL)
		OPENSSL_cleanse(form.p, form.len);
	objfs_buf_release(&form);
	if (err == 0) {
		err = objfs_credprov_parse_sts(resp.p != NULL ? resp.p : "", resp.len, out,
					       exp, why, sizeof(why));
		if (err == 0 && (status < 200 || status >= 300))
			err = EACCES;
		if (err != 0)
			objfs_error(p->log, SUB, "web identity: STS %s refused AssumeRoleWithWebIdentity "
				    "of %s (HTTP %ld%s%s); check the role's trust policy, the "
				    "OIDC provider and the token file %s", url, p->src.role_arn,
				    status, why[0] ? ", " : "", why,
				    p->src.web_identity_token_file);
	}
	if (resp.p != NULL)
		OPENSSL_cleanse(resp.p, resp.len);
	objfs_buf_release(&resp);
	return err == 0 ? 0 : (err == ENOMEM ? ENOMEM : EACCES);
}

static int fetch_container(struct objfs_credprov *p, struct objfs_creds *out,
			   long long *exp)
{
	struct objfs_buf resp = OBJFS_BUF_INIT(DOC_MAX, EFBIG);
	char *token = NULL, *hdr = NULL;
	long status = 0;
	int err = 0;

	if (p->src.container_token_file != NULL) {
		err = read_token(p->src.container_token_file, &token);
		if (err != 0) {
			objfs_error(p->log, SUB, "container endpoint: cannot read the token "
				    "file %s: %s", p->src.container_token_file,
				    objfs_strerror(err));
			return EACCES;
		}
		if (asprintf(&hdr, "Authorization: %s", token) < 0)
			hdr = NULL;
		OPENSSL_cleanse(token, strlen(token));
		free(token);
		if (hdr == NULL)
			return ENOMEM;
	}
	err = http(p, p->src.container_uri, NULL, hdr, &status, &resp);
	if (hdr != NULL) {
		OPENSSL_cleanse(hdr, strlen(hdr));
		free(hdr);
	}
	if (err == 0 && (status < 200 || status >= 300)) {
		objfs_error(p->log, SUB, "container endpoint %s: HTTP %ld; check the "
			    "authorization token file and the pod's association",
			    p->src.container_uri, status);
		err = EACCES;
	} else if (err == 0) {
		err = objfs_credprov_parse_json(resp.p != NULL ? resp.p : "", resp.len,
						out, exp);
		if (err != 0)
			objfs_error(p->log, SUB, "container endpoint %s: an answer without "
				    "AccessKeyId, SecretAccessKey and Expiration",
				    p->src.container_uri);
	}
	if (resp.p != NULL)
		OPENSSL_cleanse(resp.p, resp.len);
	objfs_buf_release(&resp);
	return err == 0 ? 0 : (err == ENOMEM ? ENOMEM : EACCES);
}

/* Renews the keys (renew_mu held).  0 or an errno. */
static int renew(struct objfs_credprov *p)
{
	struct objfs_creds fresh = OBJFS_CREDS_INIT;
	long long exp = 0;
	char when[32];
	struct tm tm;
	time_t t;
	int err;

	err = p->kind == K_WEB ? fetch_web(p, &fresh, &exp) :
		fetch_container(p, &fresh, &exp);
	if (err != 0)
		return err;
	pthread_mutex_lock(&p->mu);
	objfs_creds_release(&p->cur);
	p->cur = fresh;
	p->exp = exp;
	p->renewals++;
	pthread_mutex_unlock(&p->mu);
	t = (time_t)exp;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (p->kind == K_WEB)
		objfs_info(p->log, SUB, "web identity: keys of role %s until %s",
			   p->src.role_arn, when);
	else
		objfs_info(p->log, SUB, "container endpoint %s: keys until %s",
			   p->src.container_uri, when);
	return 0;
}

int objfs_credprov_get(struct objfs_credprov *p, struct objfs_creds *out)
{
	long long now = (long long)time(NULL);
	bool due, valid, try_now;
	int err = 0;

	objfs_creds_release(out);
	if (p->kind == K_NONE)
		return 0;
	pthread_mutex_lock(&p->mu);
	due = p->kind != K_STATIC && (double)(p->exp - now) <= p->refresh_s;
	valid = p->kind == K_STATIC || p->exp > now;
	try_now = due && (!valid || now - p->last_try >= RETRY_GAP_S);
	pthread_mutex_unlock(&p->mu);
	if (try_now) {
		if (valid) {
			/* another thread may be renewing: keep signing with the
			 * keys in hand rather than wait for it */
			if (pthread_mutex_trylock(&p->renew_mu) != 0)
				try_now = false;
		} else {
			pthread_mutex_lock(&p->renew_mu);
		}
	}
	if (try_now) {
		pthread_mutex_lock(&p->mu);
		due = (double)(p->exp - now) <= p->refresh_s;
		pthread_mutex_unlock(&p->mu);
		if (due) {
			err = renew(p);
			if (err != 0) {
				pthread_mutex_lock(&p->mu);
				p->last_try = now;
				pthread_mutex_unlock(&p->mu);
				if (valid)
					objfs_warn(p->log, SUB, "renewing the %s keys failed; "
						   "the current ones stay valid %lld s more",
						   objfs_credprov_kind(p), p->exp - now);
			}
		}
		pthread_mutex_unlock(&p->renew_mu);
	}
	pthread_mutex_lock(&p->mu);
	if (p->kind != K_STATIC && p->exp <= (long long)time(NULL))
		err = err != 0 ? err : EACCES;
	else
		err = objfs_creds_copy(&p->cur, out);
	pthread_mutex_unlock(&p->mu);
	return err == ENOMEM ? ENOMEM : (err != 0 ? EACCES : 0);
}
