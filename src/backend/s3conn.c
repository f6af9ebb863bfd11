/*
 * s3conn.c - the S3 connection (see s3conn.h): filled from sources in the
 * caller's order, checked, completed with AWS's endpoint, written to a
 * volume context, turned into -o options and a store configuration.
 *
 * Invariant: a field counts only with its bit in `set`; every function
 * here fills only unset fields, so the first source to give one wins.
 * The addressing style's words belong to the -o contract
 * (objfs_mount_opts_addressing_parse), the one place they are spelled.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/s3conn.h"
#include "common/mountopts.h"

const char *const objfs_s3_conn_keys[] = {
	OBJFS_S3_CONN_KEY_ENDPOINT, OBJFS_S3_CONN_KEY_REGION,
	OBJFS_S3_CONN_KEY_STYLE, NULL,
};

/* Copies v into dst (cap); true when it had to be cut short. */
static bool copy(char *dst, size_t cap, const char *v)
{
	return (size_t)snprintf(dst, cap, "%s", v) >= cap;
}

/* Sets one field of c from v (NULL: not given); the problem bits. */
static unsigned set_field(struct objfs_s3_conn *c, unsigned which, const char *v)
{
	bool path;

	if (v == NULL || (c->set & which) != 0)
		return 0;
	switch (which) {
	case OBJFS_S3_CONN_HAS_ENDPOINT:
		c->set |= which;
		return copy(c->endpoint, sizeof(c->endpoint), v) ?
		       OBJFS_S3_CONN_LONG_ENDPOINT : 0;
	case OBJFS_S3_CONN_HAS_REGION:
		c->set |= which;
		return copy(c->region, sizeof(c->region), v) ?
		       OBJFS_S3_CONN_LONG_REGION : 0;
	case OBJFS_S3_CONN_HAS_STYLE:
		if (objfs_mount_opts_addressing_parse(v, &path) != 0)
			return OBJFS_S3_CONN_BAD_STYLE;
		c->set |= which;
		c->path_style = path;
		return 0;
	case OBJFS_S3_CONN_HAS_CA:
		c->set |= which;
		return copy(c->ca_file, sizeof(c->ca_file), v) ?
		       OBJFS_S3_CONN_LONG_CA : 0;
	}
	return 0;
}

unsigned objfs_s3_conn_add(struct objfs_s3_conn *c, objfs_s3_conn_get_fn *get,
			   const void *src)
{
	unsigned bad = 0;

	bad |= set_field(c, OBJFS_S3_CONN_HAS_ENDPOINT, get(src, OBJFS_S3_CONN_KEY_ENDPOINT));
	bad |= set_field(c, OBJFS_S3_CONN_HAS_REGION, get(src, OBJFS_S3_CONN_KEY_REGION));
	bad |= set_field(c, OBJFS_S3_CONN_HAS_STYLE, get(src, OBJFS_S3_CONN_KEY_STYLE));
	return bad;
}

void objfs_s3_conn_add_plugin(struct objfs_s3_conn *c,
			      const struct objfs_store_config *sc)
{
	bool s3_store = sc->url != NULL && strncmp(sc->url, "s3:", 3) == 0;

	(void)set_field(c, OBJFS_S3_CONN_HAS_ENDPOINT,
			sc->s3.endpoint != NULL ? sc->s3.endpoint : "");
	(void)set_field(c, OBJFS_S3_CONN_HAS_REGION,
			sc->s3.region != NULL ? sc->s3.region : OBJFS_S3_DEFAULT_REGION);
	(void)set_field(c, OBJFS_S3_CONN_HAS_STYLE,
			objfs_s3_conn_style_name(!s3_store || sc->s3.path_style));
	if (sc->s3.ca_file != NULL && sc->s3.ca_file[0] != '\0')
		(void)set_field(c, OBJFS_S3_CONN_HAS_CA, sc->s3.ca_file);
}

/* A value objfs-mount's -o can carry as the plugin writes it: printable,
 * no comma or blank. */
static bool opt_value_ok(const char *s)
{
	for (; *s != '\0'; s++)
		if (*s <= ' ' || *s == ',' || *s == 0x7f)
			return false;
	return true;
}

unsigned objfs_s3_conn_check(const struct objfs_s3_conn *c)
{
	unsigned bad = 0;

	if (c->endpoint[0] != '\0' && strncmp(c->endpoint, "http://", 7) != 0 &&
	    strncmp(c->endpoint, "https://", 8) != 0)
		bad |= OBJFS_S3_CONN_BAD_SCHEME;
	if (!opt_value_ok(c->endpoint))
		bad |= OBJFS_S3_CONN_BAD_ENDPOINT_CHAR;
	if (!opt_value_ok(c->region))
		bad |= OBJFS_S3_CONN_BAD_REGION_CHAR;
	return bad;
}

int objfs_s3_aws_endpoint(const char *region, const char *bucket, char *buf,
			  size_t len, bool *path_style)
{
	const char *r = region != NULL && region[0] != '\0' ? region :
			OBJFS_S3_DEFAULT_REGION;
	size_t i;
	int n;

	for (i = 0; r[i] != '\0'; i++)
		if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') ||
		      r[i] == '-'))
			return EINVAL;
	if (i > 63)
		return EINVAL;
	n = snprintf(buf, len, "https://s3.%s.amazonaws.com", r);
	if (n < 0 || (size_t)n >= len)
		return EINVAL;
	*path_style = bucket != NULL && strchr(bucket, '.') != NULL;
	return 0;
}

int objfs_s3_conn_aws(struct objfs_s3_conn *c, const char *bucket)
{
	char aws[128];
	bool path;
	int err;

	if (c->endpoint[0] != '\0')
		return 0;
	err = objfs_s3_aws_endpoint(c->region, bucket, aws, sizeof(aws), &path);
	if (err != 0)
		return err;
	snprintf(c->endpoint, sizeof(c->endpoint), "%s", aws);
	c->path_style = path;
	c->set |= OBJFS_S3_CONN_HAS_ENDPOINT | OBJFS_S3_CONN_HAS_STYLE;
	return 0;
}

int objfs_s3_conn_write(const struct objfs_s3_conn *c,
			int (*set)(void *arg, const char *key, const char *value),
			void *arg)
{
	int err = 0;

	if ((c->set & OBJFS_S3_CONN_HAS_ENDPOINT) != 0)
		err = set(arg, OBJFS_S3_CONN_KEY_ENDPOINT, c->endpoint);
	if (err == 0 && (c->set & OBJFS_S3_CONN_HAS_REGION) != 0)
		err = set(arg, OBJFS_S3_CONN_KEY_REGION, c->region);
	if (err == 0 && (c->set & OBJFS_S3_CONN_HAS_STYLE) != 0)
		err = set(arg, OBJFS_S3_CONN_KEY_STYLE,
			  objfs_s3_conn_style_name(c->path_style));
	return err;
}

int objfs_s3_conn_digest_text(const struct objfs_s3_conn *c, char *buf, size_t cap)
{
	int n;

	n = snprintf(buf, cap, "%s=%s\n%s=%s\n%s=%s\n",
		     OBJFS_S3_CONN_KEY_ENDPOINT,
		     (c->set & OBJFS_S3_CONN_HAS_ENDPOINT) != 0 ? c->endpoint : "",
		     OBJFS_S3_CONN_KEY_REGION,
		     (c->set & OBJFS_S3_CONN_HAS_REGION) != 0 ? c->region : "",
		     OBJFS_S3_CONN_KEY_STYLE,
		     (c->set & OBJFS_S3_CONN_HAS_STYLE) != 0 ?
		     objfs_s3_conn_style_name(c->path_style) : "");
	return n < 0 || (size_t)n >= cap ? ENOSPC : 0;
}

const char *objfs_s3_conn_style_name(bool path_style)
{
	return objfs_mount_opts_addressing_name(path_style);
}

void objfs_s3_conn_to_mount_opts(const struct objfs_s3_conn *c,
				 struct objfs_mount_opts *mo)
{
	mo->endpoint = c->endpoint;
	objfs_mount_opts_mark(mo, OBJFS_MOPT_ENDPOINT);
	if (c->region[0] != '\0') {
		mo->region = c->region;
		objfs_mount_opts_mark(mo, OBJFS_MOPT_REGION);
	}
	mo->path_style = c->path_style;
	objfs_mount_opts_mark(mo, OBJFS_MOPT_ADDRESSING);
	if ((c->set & OBJFS_S3_CONN_HAS_CA) != 0 && c->ca_file[0] != '\0') {
		mo->ca_file = c->ca_file;
		objfs_mount_opts_mark(mo, OBJFS_MOPT_CA_FILE);
	}
}

unsigned objfs_s3_conn_from_mount_opts(struct objfs_s3_conn *c,
				       const struct objfs_mount_opts *mo)
{
	unsigned bad = 0;

	if (objfs_mount_opts_has(mo, OBJFS_MOPT_ENDPOINT))
		bad |= set_field(c, OBJFS_S3_CONN_HAS_ENDPOINT, mo->endpoint);
	if (objfs_mount_opts_has(mo, OBJFS_MOPT_REGION))
		bad |= set_field(c, OBJFS_S3_CONN_HAS_REGION, mo->region);
	if (objfs_mount_opts_has(mo, OBJFS_MOPT_ADDRESSING) &&
	    (c->set & OBJFS_S3_CONN_HAS_STYLE) == 0) {
		c->path_style = mo->path_style;
		c->set |= OBJFS_S3_CONN_HAS_STYLE;
	}
	if (objfs_mount_opts_has(mo, OBJFS_MOPT_CA_FILE))
		bad |= set_field(c, OBJFS_S3_CONN_HAS_CA, mo->ca_file);
	return bad;
}

void objfs_s3_conn_to_store(const struct objfs_s3_conn *c,
			    struct objfs_s3_config *s3)
{
	s3->endpoint = c->endpoint;
	s3->region = c->region[0] != '\0' ? c->region : NULL;
	s3->path_style = c->path_style;
	if ((c->set & OBJFS_S3_CONN_HAS_CA) != 0 && c->ca_file[0] != '\0')
		s3->ca_file = c->ca_file;
}
