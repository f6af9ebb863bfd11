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
#include <json-c/json.h>
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
/* Instance metadata, as the AWS SDKs ask it: a session token of 6 h,
 * 1 s to answer (off EC2 nothing answers: the chain ends fast). */
#define IMDS_TOKEN_TTL "21600"
#define IMDS_TIMEOUT_S 1L
#define IMDS_ROLE_MAX 1024u
#define IMDS_CREDS_PATH "/latest/meta-data/iam/security-credentials/"

enum kind { K_NONE, K_STATIC, K_WEB, K_CONTAINER, K_IMDS };

struct objfs_credprov {
	enum kind kind;
	struct objfs_creds src;         /* the configuration (copied) */
	char *region;
	char *ca_file;
	bool insecure;
	double refresh_s;
	char *looked;                   /* where the chain looked, or NULL */
	struct objfs_log *log;

	pthread_mutex_t mu;             /* cur, exp, renewals, last_try */
	struct objfs_creds cur;         /* keys in use */
	long long exp;                  /* their expiry (epoch s); 0: none */
	unsigned renewals;
	long long last_try;             /* last failed renewal */
	char imds_role[130];            /* the instance's role (renew_mu) */
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
	} else if (c != NULL && c->imds_endpoint != NULL) {
		p->kind = K_IMDS;
		if (strncmp(c->imds_endpoint, "http://", 7) != 0 &&
		    strncmp(c->imds_endpoint, "https://", 8) != 0) {
			objfs_error(log, "creds", "the instance metadata endpoint "
				    "\"%s\" is not http[s]://HOST[:PORT] "
				    "(AWS_EC2_METADATA_SERVICE_ENDPOINT)",
				    c->imds_endpoint);
			goto inval;
		}
	}
	if (c != NULL && objfs_creds_copy(c, &p->src) != 0)
		fail = true;
	p->region = strdup(cfg->region != NULL && cfg->region[0] != '\0' ? cfg->region :
			   "us-east-1");
	p->ca_file = cfg->ca_file != NULL ? strdup(cfg->ca_file) : NULL;
	p->looked = cfg->looked != NULL ? strdup(cfg->looked) : NULL;
	if (p->region == NULL || (cfg->ca_file != NULL && p->ca_file == NULL) ||
	    (cfg->looked != NULL && p->looked == NULL))
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
	free(p->looked);
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
	free(p->looked);
	free(p);
}

const char *objfs_credprov_kind(const struct objfs_credprov *p)
{
	switch (p->kind) {
	case K_STATIC: return "static keys";
	case K_WEB: return "web identity";
	case K_CONTAINER: return "container endpoint";
	case K_IMDS: return "instance metadata";
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

/* The string member name of the object o: 0, ENOENT (absent), EPROTO
 * (not a string, or one holding a NUL), ENOMEM.  *out is malloc'ed. */
static int json_member(struct json_object *o, const char *name, char **out)
{
	struct json_object *v;
	const char *str;
	int n;

	*out = NULL;
	if (!json_object_object_get_ex(o, name, &v))
		return ENOENT;
	if (!json_object_is_type(v, json_type_string))
		return EPROTO;
	str = json_object_get_string(v);
	n = json_object_get_string_len(v);
	if (str == NULL || n < 0 || memchr(str, '\0', (size_t)n) != NULL)
		return EPROTO;
	*out = strndup(str, (size_t)n);
	return *out == NULL ? ENOMEM : 0;
}

/* Wipes the string members of o (keys and tokens) before it is freed. */
static void json_wipe(struct json_object *o)
{
	json_object_object_foreach(o, k, v) {
		(void)k;
		if (json_object_is_type(v, json_type_string))
			OPENSSL_cleanse((char *)json_object_get_string(v),
					(size_t)json_object_get_string_len(v));
	}
}

int objfs_credprov_parse_json(const char *doc, size_t len, struct objfs_creds *out,
			      long long *exp)
{
	struct json_tokener *tok = NULL;
	struct json_object *o = NULL;
	char *t = NULL, *code = NULL;
	size_t end;
	int err;

	if (len > DOC_MAX)
		return EPROTO;
	/* json-c: strict RFC 8259 (no trailing text, no comments, valid
	 * UTF-8), nested at most 32 deep; only the top level counts */
	tok = json_tokener_new();
	if (tok == NULL)
		return ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, doc, (int)len);
	err = o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
		!json_object_is_type(o, json_type_object) ? EPROTO : 0;
	if (err == 0) {
		for (end = json_tokener_get_parse_end(tok); end < len; end++)
			if (doc[end] != ' ' && doc[end] != '\t' && doc[end] != '\r' &&
			    doc[end] != '\n')
				err = EPROTO;
	}
	json_tokener_free(tok);
	/* instance metadata: "Code": "Success", else the error */
	if (err == 0) {
		err = json_member(o, "Code", &code);
		if (err == ENOENT)
			err = 0;
		else if (err == 0 && strcmp(code, "Success") != 0)
			err = EACCES;
		free(code);
	}
	if (err == 0)
		err = json_member(o, "AccessKeyId", &out->access_key);
	if (err == 0)
		err = json_member(o, "SecretAccessKey", &out->secret_key);
	if (err == 0) {
		err = json_member(o, "Token", &out->session_token);
		if (err == ENOENT)
			err = 0;
		if (err == 0 && out->session_token != NULL && out->session_token[0] == '\0') {
			free(out->session_token);       /* "Token": "" is none */
			out->session_token = NULL;
		}
	}
	if (err == 0)
		err = json_member(o, "Expiration", &t);
	if (err == 0)
		err = parse_time(t, exp);
	free(t);
	if (o != NULL) {
		if (json_object_is_type(o, json_type_object))
			json_wipe(o);
		json_object_put(o);
	}
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

/* One HTTP request. */
struct req {
	const char *url;
	const char *method;             /* NULL: GET, or POST with a body */
	const char *body;
	const char *header;             /* one header line, or NULL */
	long timeout_s, connect_s;      /* 0: 30 s, 10 s */
	bool noproxy;                   /* never through a proxy */
	char *why;                      /* the transport's error, or NULL */
	size_t cap;
};

/* rq's answer: its status and body.  0 or an errno of the transport
 * (rq->why says what). */
static int http(struct objfs_credprov *p, const struct req *rq, long *status,
		struct objfs_buf *resp)
{
	struct curl_slist *hl = NULL, *t;
	CURL *h = curl_easy_init();
	CURLcode cc;
	int err = 0;

	*status = 0;
	if (h == NULL)
		return ENOMEM;
	if (rq->header != NULL) {
		t = curl_slist_append(hl, rq->header);
		if (t == NULL) {
			curl_easy_cleanup(h);
			return ENOMEM;
		}
		hl = t;
	}
	objfs_http_setup(h, rq->url, p->ca_file, p->insecure);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, rq->timeout_s > 0 ? rq->timeout_s : 30L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, rq->connect_s > 0 ? rq->connect_s : 10L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
	if (rq->noproxy)
		curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	if (hl != NULL)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	if (rq->body != NULL)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body);
	if (rq->method != NULL)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
	cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		if (rq->why != NULL)
			snprintf(rq->why, rq->cap, "%s", curl_easy_strerror(cc));
		else
			objfs_warn(p->log, SUB, "%s: %s", rq->url, curl_easy_strerror(cc));
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
		err = http(p, &(struct req){ .url = url, .body = form.p }, &status, &resp);
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
	err = http(p, &(struct req){ .url = p->src.container_uri, .header = hdr },
		   &status, &resp);
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

/* A one-line answer (a token, a role name), trimmed, in b: 0 or EPROTO. */
static int one_line(struct objfs_buf *b)
{
	size_t n = b->len;

	if (objfs_buf_err(b) != 0 || b->p == NULL)
		return EPROTO;
	while (n > 0 && (b->p[n - 1] == '\n' || b->p[n - 1] == '\r' || b->p[n - 1] == ' '))
		n--;
	b->p[n] = '\0';
	if (n == 0 || strpbrk(b->p, "\r\n") != NULL)
		return EPROTO;
	return 0;
}

/* EC2 instance metadata, IMDSv2: a session token (PUT, with its TTL),
 * the role attached to the instance, its keys.  Without keys so far, a
 * failure is "no credentials found" and names every source looked at. */
static int fetch_imds(struct objfs_credprov *p, struct objfs_creds *out, long long *exp)
{
	struct objfs_buf tok = OBJFS_BUF_INIT(TOKEN_MAX, EFBIG);
	struct objfs_buf role = OBJFS_BUF_INIT(IMDS_ROLE_MAX, EFBIG);
	struct objfs_buf resp = OBJFS_BUF_INIT(DOC_MAX, EFBIG);
	const char *ep = p->src.imds_endpoint;
	char url[2048], cause[400] = "", curl_why[256] = "", *hdr = NULL, *e;
	struct req rq = {
		.timeout_s = IMDS_TIMEOUT_S, .connect_s = IMDS_TIMEOUT_S,
		.noproxy = true, .why = curl_why, .cap = sizeof(curl_why),
	};
	int el = (int)strlen(ep), err;
	long status = 0;

	while (el > 0 && ep[el - 1] == '/')
		el--;
	rq.url = url;
	snprintf(url, sizeof(url), "%.*s/latest/api/token", el, ep);
	rq.method = "PUT";
	rq.header = "X-aws-ec2-metadata-token-ttl-seconds: " IMDS_TOKEN_TTL;
	err = http(p, &rq, &status, &tok);
	if (err == 0 && status != 200)
		snprintf(cause, sizeof(cause), "the session token PUT answered HTTP %ld",
			 status);
	if (err == 0 && cause[0] == '\0' && one_line(&tok) != 0)
		snprintf(cause, sizeof(cause), "the session token is not one line");
	if (err == 0 && cause[0] == '\0' &&
	    asprintf(&hdr, "X-aws-ec2-metadata-token: %s", tok.p) < 0) {
		hdr = NULL;
		err = ENOMEM;
	}
	if (err == 0 && cause[0] == '\0') {
		snprintf(url, sizeof(url), "%.*s" IMDS_CREDS_PATH, el, ep);
		rq.method = NULL;
		rq.header = hdr;
		err = http(p, &rq, &status, &role);
		if (err == 0 && status == 404)
			snprintf(cause, sizeof(cause), "no IAM role is attached to "
				 "the instance (HTTP 404 for the role)");
		else if (err == 0 && status != 200)
			snprintf(cause, sizeof(cause), "HTTP %ld for the role", status);
		else if (err == 0 && (one_line(&role) != 0 || strchr(role.p, '/') != NULL ||
				      strlen(role.p) > 128))
			snprintf(cause, sizeof(cause), "the role's name is not one "
				 "line of a name");
	}
	if (err == 0 && cause[0] == '\0') {
		e = curl_easy_escape(NULL, role.p, 0);
		if (e == NULL) {
			err = ENOMEM;
		} else {
			snprintf(url, sizeof(url), "%.*s" IMDS_CREDS_PATH "%s", el, ep, e);
			curl_free(e);
			err = http(p, &rq, &status, &resp);
		}
		if (err == 0 && status != 200) {
			snprintf(cause, sizeof(cause), "HTTP %ld for the keys of role %s",
				 status, role.p);
		} else if (err == 0) {
			err = objfs_credprov_parse_json(resp.p != NULL ? resp.p : "",
							resp.len, out, exp);
			if (err != 0 && err != ENOMEM)
				snprintf(cause, sizeof(cause), "the keys of role %s: an "
					 "answer without \"Code\": \"Success\", AccessKeyId, "
					 "SecretAccessKey and Expiration", role.p);
			if (err == 0)
				snprintf(p->imds_role, sizeof(p->imds_role), "%s", role.p);
		}
	}
	if (err != 0 && err != ENOMEM && cause[0] == '\0')
		snprintf(cause, sizeof(cause), "%s", curl_why[0] ? curl_why : objfs_strerror(err));
	if (cause[0] != '\0') {
		if (objfs_credprov_renewals(p) == 0 && p->looked != NULL)
			objfs_error(p->log, SUB, "no credentials found; objfs looked at, "
				    "in order: %s: %s", p->looked, cause);
		else
			objfs_error(p->log, SUB, "instance metadata %.*s: %s", el, ep, cause);
		err = EACCES;
	}
	if (hdr != NULL) {
		OPENSSL_cleanse(hdr, strlen(hdr));
		free(hdr);
	}
	if (tok.p != NULL)
		OPENSSL_cleanse(tok.p, tok.len);
	if (resp.p != NULL)
		OPENSSL_cleanse(resp.p, resp.len);
	objfs_buf_release(&tok);
	objfs_buf_release(&role);
	objfs_buf_release(&resp);
	return err;
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
		p->kind == K_IMDS ? fetch_imds(p, &fresh, &exp) :
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
	else if (p->kind == K_IMDS)
		objfs_info(p->log, SUB, "instance metadata %s: keys of role %s until %s",
			   p->src.imds_endpoint, p->imds_role, when);
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
