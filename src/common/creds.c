/* creds.c - credentials from files and the environment, and the file
 * writer (see creds.h). */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/creds.h"

#define CREDS_LINE_MAX 4096

static void wipe_free(char **p)
{
	if (*p != NULL) {
		OPENSSL_cleanse(*p, strlen(*p));
		free(*p);
		*p = NULL;
	}
}

static int replace(char **field, const char *value)
{
	char *copy = strdup(value);

	if (copy == NULL)
		return ENOMEM;
	wipe_free(field);
	*field = copy;
	return 0;
}

/* Every field: its offset, its names in files and secrets, its variable. */
static const struct field {
	size_t off;
	const char *names[3];
	const char *env;
} fields[] = {
	{ offsetof(struct objfs_creds, access_key),
	  { "access_key_id", "aws_access_key_id", "accessKeyID" }, "AWS_ACCESS_KEY_ID" },
	{ offsetof(struct objfs_creds, secret_key),
	  { "secret_access_key", "aws_secret_access_key", "secretAccessKey" },
	  "AWS_SECRET_ACCESS_KEY" },
	{ offsetof(struct objfs_creds, session_token),
	  { "session_token", "aws_session_token", "sessionToken" }, "AWS_SESSION_TOKEN" },
	{ offsetof(struct objfs_creds, role_arn),
	  { "role_arn", "roleArn", NULL }, "AWS_ROLE_ARN" },
	{ offsetof(struct objfs_creds, web_identity_token_file),
	  { "web_identity_token_file", "webIdentityTokenFile", NULL },
	  "AWS_WEB_IDENTITY_TOKEN_FILE" },
	{ offsetof(struct objfs_creds, role_session_name),
	  { "role_session_name", "roleSessionName", NULL }, "AWS_ROLE_SESSION_NAME" },
	{ offsetof(struct objfs_creds, sts_endpoint),
	  { "sts_endpoint", "stsEndpoint", NULL }, "AWS_ENDPOINT_URL_STS" },
	{ offsetof(struct objfs_creds, container_uri),
	  { "container_credentials_full_uri", "containerCredentialsURI", NULL },
	  "AWS_CONTAINER_CREDENTIALS_FULL_URI" },
	{ offsetof(struct objfs_creds, container_token_file),
	  { "container_authorization_token_file", "containerAuthorizationTokenFile", NULL },
	  "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE" },
	{ offsetof(struct objfs_creds, imds_endpoint),
	  { "ec2_metadata_endpoint", "ec2MetadataEndpoint", NULL }, NULL },
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))
#define FIELD(c, i) ((char **)((char *)(c) + fields[i].off))

int objfs_creds_set(struct objfs_creds *c, const char *name, const char *value)
{
	size_t i, k;

	for (i = 0; i < N_FIELDS; i++)
		for (k = 0; k < 3 && fields[i].names[k] != NULL; k++)
			if (strcasecmp(name, fields[i].names[k]) == 0)
				return replace(FIELD(c, i), value);
	return EINVAL;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

int objfs_creds_load_file(const char *path, struct objfs_creds *c, int *line)
{
	char buf[CREDS_LINE_MAX];
	FILE *f;
	int n = 0;
	int err = 0;

	if (line != NULL)
		*line = 0;
	f = fopen(path, "re");
	if (f == NULL)
		return errno;
	while (fgets(buf, sizeof(buf), f) != NULL) {
		char *s, *eq;

		n++;
		/* a line longer than buf is refused, never read as two */
		if (strlen(buf) == sizeof(buf) - 1 && buf[sizeof(buf) - 2] != '\n') {
			int ch = fgetc(f);

			if (ch != EOF) {
				err = EINVAL;
				break;
			}
		}
		s = trim(buf);
		if (*s == '\0' || *s == '#' || *s == '[')
			continue;
		eq = strchr(s, '=');
		if (eq == NULL) {
			err = EINVAL;
			break;
		}
		*eq = '\0';
		err = objfs_creds_set(c, trim(s), trim(eq + 1));
		if (err != 0)
			break;
	}
	OPENSSL_cleanse(buf, sizeof(buf));
	if (err == 0 && ferror(f))
		err = EIO;
	fclose(f);
	if (err == 0 && (c->access_key == NULL) != (c->secret_key == NULL))
		err = EINVAL;
	if (err != 0 && line != NULL)
		*line = n;
	return err;
}

int objfs_creds_load_env(struct objfs_creds *c)
{
	size_t i;
	int err;

	for (i = 0; i < N_FIELDS; i++) {
		const char *v = fields[i].env != NULL ? getenv(fields[i].env) : NULL;

		if (*FIELD(c, i) != NULL || v == NULL || *v == '\0')
			continue;
		err = replace(FIELD(c, i), v);
		if (err != 0)
			return err;
	}
	return 0;
}

void objfs_creds_release(struct objfs_creds *c)
{
	size_t i;

	for (i = 0; i < N_FIELDS; i++)
		wipe_free(FIELD(c, i));
}

int objfs_creds_any(const struct objfs_creds *c)
{
	return c != NULL && (c->access_key != NULL || c->role_arn != NULL ||
			     c->container_uri != NULL || c->imds_endpoint != NULL);
}

int objfs_creds_copy(const struct objfs_creds *from, struct objfs_creds *to)
{
	size_t i;
	int err = 0;

	objfs_creds_release(to);
	for (i = 0; i < N_FIELDS && err == 0; i++)
		if (*FIELD(from, i) != NULL)
			err = replace(FIELD(to, i), *FIELD(from, i));
	if (err != 0)
		objfs_creds_release(to);
	return err;
}

static bool value_ok(const char *v)
{
	size_t n = strlen(v);

	return n > 0 && strpbrk(v, "\r\n") == NULL && v[0] != ' ' &&
	       v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t';
}

int objfs_creds_format(const struct objfs_creds *c, char **out, size_t *len)
{
	size_t i, cap = 1, off = 0;
	char *text;

	*out = NULL;
	*len = 0;
	for (i = 0; i < N_FIELDS; i++) {
		const char *v = *FIELD(c, i);

		if (v == NULL)
			continue;
		if (!value_ok(v))
			return EINVAL;
		cap += strlen(fields[i].names[0]) + strlen(v) + 2;
	}
	text = malloc(cap);
	if (text == NULL)
		return ENOMEM;
	text[0] = '\0';
	for (i = 0; i < N_FIELDS; i++) {
		if (*FIELD(c, i) != NULL)
			off += (size_t)snprintf(text + off, cap - off, "%s=%s\n",
						fields[i].names[0], *FIELD(c, i));
	}
	*out = text;
	*len = off;
	return 0;
}

int objfs_creds_write_temp(const char *dir, const struct objfs_creds *c,
			   char *path, size_t cap)
{
	char *text = NULL;
	size_t len = 0, off = 0;
	int fd, err;

	path[0] = '\0';
	err = objfs_creds_format(c, &text, &len);
	if (err != 0)
		return err;
	if ((size_t)snprintf(path, cap, "%s/creds-XXXXXX", dir) >= cap) {
		path[0] = '\0';
		err = ENAMETOOLONG;
		goto out;
	}
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		path[0] = '\0';
		goto out;
	}
	if (fchmod(fd, 0600) != 0)
		err = errno;
	while (err == 0 && off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno != EINTR)
			err = errno;
		else if (w > 0)
			off += (size_t)w;
	}
	close(fd);
	if (err != 0) {
		unlink(path);
		path[0] = '\0';
	}
out:
	OPENSSL_cleanse(text, len);
	free(text);
	return err;
}

/* ---- the AWS shared files and the chain ---------------------------------- */

void objfs_aws_env_release(struct objfs_aws_env *a)
{
	free(a->region);
	free(a->endpoint);
	free(a->ca_bundle);
	a->region = a->endpoint = a->ca_bundle = NULL;
	a->looked[0] = '\0';
}

/* Whether the section header s ("[...]", trimmed) names profile. */
static bool section_is(const char *s, const char *profile, int config)
{
	size_t n = strlen(s), pl = strlen(profile);
	const char *name;

	if (n < 2 || s[n - 1] != ']')
		return false;
	name = s + 1;
	n -= 2;
	while (n > 0 && isspace((unsigned char)*name)) {
		name++;
		n--;
	}
	while (n > 0 && isspace((unsigned char)name[n - 1]))
		n--;
	if (config && n > 8 && strncmp(name, "profile", 7) == 0 &&
	    isspace((unsigned char)name[7])) {
		/* [profile NAME]; [default] below, as the SDKs read it */
		name += 8;
		n -= 8;
		while (n > 0 && isspace((unsigned char)*name)) {
			name++;
			n--;
		}
		return n == pl && strncmp(name, profile, n) == 0;
	}
	if (config && strcmp(profile, "default") != 0)
		return false;
	return n == pl && strncmp(name, profile, n) == 0;
}

static int set_setting(char **field, const char *v)
{
	char *copy = strdup(v);

	if (copy == NULL)
		return ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

/* One key of a profile: what objfs uses, the rest ignored. */
static int profile_key(struct objfs_creds *c, struct objfs_aws_env *a,
		       const char *k, const char *v)
{
	static const char *const cred_keys[] = {
		"aws_access_key_id", "aws_secret_access_key", "aws_session_token",
		"role_arn", "web_identity_token_file", "role_session_name",
	};
	size_t i;

	for (i = 0; i < sizeof(cred_keys) / sizeof(cred_keys[0]); i++)
		if (strcasecmp(k, cred_keys[i]) == 0)
			return objfs_creds_set(c, cred_keys[i], v);
	if (a == NULL)
		return 0;
	if (strcasecmp(k, "region") == 0)
		return set_setting(&a->region, v);
	if (strcasecmp(k, "endpoint_url") == 0)
		return set_setting(&a->endpoint, v);
	if (strcasecmp(k, "ca_bundle") == 0)
		return set_setting(&a->ca_bundle, v);
	return 0;
}

int objfs_creds_load_profile(const char *path, const char *profile, int config,
			     struct objfs_creds *c, struct objfs_aws_env *a,
			     int *found, int *line)
{
	char buf[CREDS_LINE_MAX];
	bool in = false;
	FILE *f;
	int n = 0, err = 0;

	*found = 0;
	if (line != NULL)
		*line = 0;
	f = fopen(path, "re");
	if (f == NULL)
		return errno;
	while (fgets(buf, sizeof(buf), f) != NULL) {
		char *s, *eq, *colon;
		bool indented;

		n++;
		if (strlen(buf) == sizeof(buf) - 1 && buf[sizeof(buf) - 2] != '\n') {
			int ch = fgetc(f);

			if (ch != EOF) {
				err = EINVAL;
				break;
			}
		}
		indented = buf[0] == ' ' || buf[0] == '\t';
		s = trim(buf);
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			if (s[strlen(s) - 1] != ']') {
				err = EINVAL;
				break;
			}
			in = section_is(s, profile, config);
			if (in)
				*found = 1;
			continue;
		}
		/* "s3 =" and its indented sub-keys: settings of one service */
		if (indented)
			continue;
		eq = strchr(s, '=');
		colon = strchr(s, ':');
		if (eq == NULL || (colon != NULL && colon < eq))
			eq = colon;
		if (eq == NULL) {
			err = EINVAL;
			break;
		}
		if (!in)
			continue;
		*eq = '\0';
		if (*trim(eq + 1) == '\0')
			continue;
		err = profile_key(c, a, trim(s), trim(eq + 1));
		if (err != 0)
			break;
	}
	OPENSSL_cleanse(buf, sizeof(buf));
	if (err == 0 && ferror(f))
		err = EIO;
	fclose(f);
	if (err != 0 && line != NULL)
		*line = n;
	return err;
}

/* Appends to a->looked, "; "-separated. */
static void looked_add(struct objfs_aws_env *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void looked_add(struct objfs_aws_env *a, const char *fmt, ...)
{
	size_t n = strlen(a->looked);
	va_list ap;

	if (n > 0 && n + 2 < sizeof(a->looked)) {
		memcpy(a->looked + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(a->looked + n, sizeof(a->looked) - n, fmt, ap);
	va_end(ap);
}

static const char *env_get(char *(*env)(const char *), const char *name)
{
	const char *v = env(name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The env variable names into c: 0, ENOMEM. */
static int from_env(struct objfs_creds *c, char *(*env)(const char *),
		    const char *const *names, size_t n)
{
	size_t i, k;
	int err = 0;

	for (i = 0; i < n && err == 0; i++) {
		const char *v = env_get(env, names[i]);

		if (v == NULL)
			continue;
		for (k = 0; k < N_FIELDS; k++)
			if (fields[k].env != NULL && strcmp(fields[k].env, names[i]) == 0)
				err = replace(FIELD(c, k), v);
	}
	return err;
}

/* The profile of the shared files into *p (credentials, when it names
 * some) and s (its settings); note (ncap bytes) says what it had.  0,
 * EINVAL (why says why), ENOMEM. */
static int chain_profile(struct objfs_creds *p, struct objfs_aws_env *s,
			 char *(*env)(const char *), char *why, size_t cap,
			 char *note, size_t ncap)
{
	const char *profile = env_get(env, "AWS_PROFILE");
	const char *home = env_get(env, "HOME");
	const char *cf = env_get(env, "AWS_SHARED_CREDENTIALS_FILE");
	const char *gf = env_get(env, "AWS_CONFIG_FILE");
	char cpath[4096], gpath[4096], fnote[2][160];
	int found[2] = { 0, 0 }, line = 0, err = 0, i;
	bool named = profile != NULL;

	if (profile == NULL)
		profile = "default";
	if (cf == NULL && home != NULL) {
		snprintf(cpath, sizeof(cpath), "%s/.aws/credentials", home);
		cf = cpath;
	}
	if (gf == NULL && home != NULL) {
		snprintf(gpath, sizeof(gpath), "%s/.aws/config", home);
		gf = gpath;
	}
	/* the config file first: the credentials file's values replace its */
	for (i = 1; i >= 0 && err == 0; i--) {
		const char *path = i == 0 ? cf : gf;

		if (path == NULL) {
			snprintf(fnote[i], sizeof(fnote[i]), "~/.aws/%s (HOME unset)",
				 i == 0 ? "credentials" : "config");
			continue;
		}
		err = objfs_creds_load_profile(path, profile, i, p, s, &found[i], &line);
		if (err == ENOENT || err == ENOTDIR) {
			snprintf(fnote[i], sizeof(fnote[i]), "%.120s (no such file)", path);
			err = 0;
		} else if (err == EINVAL) {
			snprintf(why, cap, "%s line %d: neither a [section] nor "
				 "key = value", path, line);
		} else if (err != 0 && err != ENOMEM) {
			snprintf(why, cap, "%s: %s", path, strerror(err));
			err = EINVAL;
		} else {
			snprintf(fnote[i], sizeof(fnote[i]), "%.120s (%s)", path,
				 found[i] ? "no keys nor role" : "no such profile");
		}
	}
	if (err == 0 && named && !found[0] && !found[1]) {
		snprintf(why, cap, "AWS_PROFILE names profile \"%s\", which neither %s "
			 "nor %s has", profile, cf != NULL ? cf : "~/.aws/credentials",
			 gf != NULL ? gf : "~/.aws/config");
		err = EINVAL;
	}
	if (err != 0) {
		objfs_creds_release(p);
		return err;
	}
	if (p->access_key != NULL || p->secret_key != NULL) {
		/* the profile's keys (a role beside them is not used) */
		wipe_free(&p->role_arn);
		wipe_free(&p->web_identity_token_file);
		wipe_free(&p->role_session_name);
		snprintf(note, ncap, "profile \"%.64s\" (%.200s, %.200s): keys", profile,
			 cf != NULL ? cf : "-", gf != NULL ? gf : "-");
	} else if (p->role_arn != NULL && p->web_identity_token_file != NULL) {
		snprintf(note, ncap, "profile \"%.64s\" (%.200s, %.200s): role_arn and "
			 "web_identity_token_file", profile, cf != NULL ? cf : "-",
			 gf != NULL ? gf : "-");
		err = from_env(p, env, (const char *const[]){ "AWS_ENDPOINT_URL_STS" }, 1);
	} else {
		snprintf(note, ncap, "profile \"%.64s\" in %s and %s%s", profile, fnote[0],
			 fnote[1], p->role_arn != NULL ? " (a role_arn without "
			 "web_identity_token_file: source_profile and credential_source "
			 "are not supported)" : "");
		objfs_creds_release(p);
	}
	return err;
}

int objfs_creds_chain(struct objfs_creds *c, struct objfs_aws_env *a,
		      char *(*env)(const char *), char *why, size_t cap)
{
	static const char *const keys[] = {
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	};
	static const char *const web[] = {
		"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_SESSION_NAME",
		"AWS_ENDPOINT_URL_STS",
	};
	static const char *const cont[] = {
		"AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
	};
	struct objfs_creds prof = OBJFS_CREDS_INIT;
	struct objfs_aws_env ps = OBJFS_AWS_ENV_INIT;
	char why0[1], note[800];
	const char *v, *rel, *mode;
	int err;

	if (env == NULL)
		env = getenv;
	if (why == NULL || cap == 0) {
		why = why0;
		cap = sizeof(why0);
	}
	why[0] = '\0';
	a->looked[0] = '\0';
	/* the profile is read whatever gives the keys: its settings count */
	err = chain_profile(&prof, &ps, env, why, cap, note, sizeof(note));
	if (err != 0)
		goto out;
	/* 1. environment */
	if (env_get(env, keys[0]) != NULL || env_get(env, keys[1]) != NULL) {
		looked_add(a, "environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY): keys");
		err = from_env(c, env, keys, 3);
		goto settings;
	}
	looked_add(a, "environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY): unset");
	/* 2. shared files */
	looked_add(a, "%s", note);
	if (objfs_creds_any(&prof)) {
		*c = prof;
		memset(&prof, 0, sizeof(prof));
		goto settings;
	}
	/* 3. web identity */
	if (env_get(env, web[0]) != NULL || env_get(env, web[1]) != NULL) {
		looked_add(a, "web identity (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE)");
		err = from_env(c, env, web, 4);
		goto settings;
	}
	looked_add(a, "web identity (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE): unset");
	/* 4. container credentials */
	rel = env_get(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	if (env_get(env, cont[0]) != NULL || rel != NULL) {
		looked_add(a, "container credentials (AWS_CONTAINER_CREDENTIALS_%s_URI)",
			   env_get(env, cont[0]) != NULL ? "FULL" : "RELATIVE");
		err = from_env(c, env, cont, 2);
		if (err == 0 && c->container_uri == NULL) {
			char uri[2048];

			/* ECS: the agent's link-local address */
			snprintf(uri, sizeof(uri), "http://169.254.170.2%s%s",
				 rel[0] == '/' ? "" : "/", rel);
			err = replace(&c->container_uri, uri);
		}
		goto settings;
	}
	looked_add(a, "container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI, "
		   "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI): unset");
	/* 5. EC2 instance metadata, unless disabled as the SDKs allow */
	v = env_get(env, "AWS_EC2_METADATA_DISABLED");
	if (v != NULL && strcasecmp(v, "true") == 0) {
		looked_add(a, "EC2 instance metadata: disabled by "
			   "AWS_EC2_METADATA_DISABLED=%s", v);
		goto settings;
	}
	v = env_get(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
	mode = env_get(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
	if (v == NULL)
		v = mode != NULL && strcasecmp(mode, "ipv6") == 0 ?
			"http://[fd00:ec2::254]" : "http://169.254.169.254";
	looked_add(a, "EC2 instance metadata (%s)", v);
	err = replace(&c->imds_endpoint, v);
settings:
	/* the environment's, else the profile's */
	v = env_get(env, "AWS_REGION");
	if (v == NULL)
		v = env_get(env, "AWS_DEFAULT_REGION");
	if (err == 0 && (v != NULL || ps.region != NULL))
		err = set_setting(&a->region, v != NULL ? v : ps.region);
	v = env_get(env, "AWS_ENDPOINT_URL_S3");
	if (v == NULL)
		v = env_get(env, "AWS_ENDPOINT_URL");
	if (err == 0 && (v != NULL || ps.endpoint != NULL))
		err = set_setting(&a->endpoint, v != NULL ? v : ps.endpoint);
	v = env_get(env, "AWS_CA_BUNDLE");
	if (err == 0 && (v != NULL || ps.ca_bundle != NULL))
		err = set_setting(&a->ca_bundle, v != NULL ? v : ps.ca_bundle);
out:
	objfs_creds_release(&prof);
	objfs_aws_env_release(&ps);
	if (err != 0)
		objfs_creds_release(c);
	return err;
}
