/* Unit tests of the credentials loader and writer: file formats, env
 * fallback, errors that never echo file contents, round trips. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/creds.h"

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/objfs-creds-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_file_formats(void **state)
{
	struct objfs_creds c = OBJFS_CREDS_INIT;
	char *p;
	int line;

	(void)state;
	p = write_tmp("# comment\n[default]\n  aws_access_key_id = AK1 \n"
		      "aws_secret_access_key=se=cret/+\n\nsessionToken=tok\n");
	assert_int_equal(objfs_creds_load_file(p, &c, &line), 0);
	assert_string_equal(c.access_key, "AK1");
	assert_string_equal(c.secret_key, "se=cret/+");
	assert_string_equal(c.session_token, "tok");
	unlink(p);
	objfs_creds_release(&c);
	assert_null(c.access_key);
	assert_null(c.secret_key);
	assert_null(c.session_token);
}

static void test_file_errors(void **state)
{
	struct objfs_creds c = OBJFS_CREDS_INIT;
	char *p;
	int line = 0;

	(void)state;
	assert_int_equal(objfs_creds_load_file("/nonexistent/creds", &c, &line), ENOENT);

	p = write_tmp("access_key_id=A\nthis line has no equals sign\n");
	assert_int_equal(objfs_creds_load_file(p, &c, &line), EINVAL);
	assert_int_equal(line, 2);
	unlink(p);
	objfs_creds_release(&c);

	p = write_tmp("access_key_id=A\nfavourite_colour=blue\n");
	assert_int_equal(objfs_creds_load_file(p, &c, &line), EINVAL);
	unlink(p);
	objfs_creds_release(&c);

	/* An access key without its secret is a mistake, not a credential. */
	p = write_tmp("access_key_id=A\n");
	assert_int_equal(objfs_creds_load_file(p, &c, &line), EINVAL);
	unlink(p);
	objfs_creds_release(&c);
}

static void test_env_fills_gaps(void **state)
{
	struct objfs_creds c = OBJFS_CREDS_INIT;

	(void)state;
	setenv("AWS_ACCESS_KEY_ID", "ENVAK", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "ENVSK", 1);
	unsetenv("AWS_SESSION_TOKEN");
	assert_int_equal(objfs_creds_set(&c, "access_key_id", "FILEAK"), 0);
	assert_int_equal(objfs_creds_load_env(&c), 0);
	assert_string_equal(c.access_key, "FILEAK");   /* file wins */
	assert_string_equal(c.secret_key, "ENVSK");
	assert_null(c.session_token);
	assert_int_equal(objfs_creds_set(&c, "nope", "x"), EINVAL);
	objfs_creds_release(&c);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
}

/* What the writer writes, the loader reads back, in a 0600 file. */
static void test_write_round_trip(void **state)
{
	static const char *const tokens[] = { NULL, "tok/+=en" };
	char dir[] = "/tmp/objfs-creds-dir-XXXXXX";
	char path[128];
	size_t i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (i = 0; i < 2; i++) {
		struct objfs_creds in = OBJFS_CREDS_INIT, out = OBJFS_CREDS_INIT;
		struct stat sb;

		assert_int_equal(objfs_creds_set(&in, "access_key_id", "AK ID"), 0);
		assert_int_equal(objfs_creds_set(&in, "secret_access_key", "s=c#r[e]t/+"), 0);
		if (tokens[i] != NULL)
			assert_int_equal(objfs_creds_set(&in, "session_token", tokens[i]), 0);
		assert_int_equal(objfs_creds_write_temp(dir, &in, path, sizeof(path)), 0);
		assert_int_equal(strncmp(path, dir, strlen(dir)), 0);
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0600);
		assert_int_equal(objfs_creds_load_file(path, &out, NULL), 0);
		assert_string_equal(out.access_key, "AK ID");
		assert_string_equal(out.secret_key, "s=c#r[e]t/+");
		if (tokens[i] != NULL)
			assert_string_equal(out.session_token, tokens[i]);
		else
			assert_null(out.session_token);
		unlink(path);
		objfs_creds_release(&in);
		objfs_creds_release(&out);
	}
	assert_int_equal(rmdir(dir), 0);
}

/* Values the loader would read differently are refused, and nothing is
 * left behind. */
static void test_write_rejects(void **state)
{
	static const char *const bad[] = { "two\nlines", "cr\r", " lead", "trail\t", "" };
	char dir[] = "/tmp/objfs-creds-dir-XXXXXX";
	char path[128];
	char *text = NULL;
	size_t i, len = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct objfs_creds c = OBJFS_CREDS_INIT;

		assert_int_equal(objfs_creds_set(&c, "access_key_id", "AK"), 0);
		assert_int_equal(objfs_creds_set(&c, "secret_access_key", bad[i]), 0);
		assert_int_equal(objfs_creds_format(&c, &text, &len), EINVAL);
		assert_null(text);
		assert_int_equal(objfs_creds_write_temp(dir, &c, path, sizeof(path)), EINVAL);
		assert_string_equal(path, "");
		objfs_creds_release(&c);
	}
	assert_int_equal(rmdir(dir), 0);   /* empty */
	{
		struct objfs_creds c = OBJFS_CREDS_INIT;

		assert_int_equal(objfs_creds_set(&c, "access_key_id", "AK"), 0);
		assert_int_equal(objfs_creds_set(&c, "secret_access_key", "SK"), 0);
		assert_int_equal(objfs_creds_write_temp("/nonexistent/dir", &c, path,
							sizeof(path)), ENOENT);
		assert_string_equal(path, "");
		assert_int_equal(objfs_creds_format(&c, &text, &len), 0);
		assert_string_equal(text, "access_key_id=AK\nsecret_access_key=SK\n");
		assert_int_equal(len, strlen(text));
		free(text);
		objfs_creds_release(&c);
	}
}

/* ---- the AWS shared files and the chain --------------------------------- */

/* A fake environment: NAME=VALUE strings, NULL-terminated. */
static const char *const *fake_env;

static char *env_of(const char *name)
{
	size_t n = strlen(name), i;

	for (i = 0; fake_env[i] != NULL; i++)
		if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
			return (char *)fake_env[i] + n + 1;
	return NULL;
}

static void test_profile_parser(void **state)
{
	struct objfs_creds c = OBJFS_CREDS_INIT;
	struct objfs_aws_env a = OBJFS_AWS_ENV_INIT;
	int found = 0, line = 0;
	char *p;

	(void)state;
	p = write_tmp("# comment\n; comment\n[default]\naws_access_key_id = DEF\n"
		      "aws_secret_access_key = DEFS\n\n[work]\n"
		      "AWS_ACCESS_KEY_ID=WK\naws_secret_access_key= W=S/+ \n"
		      "aws_session_token = TOK\ns3 =\n  addressing_style = path\n"
		      "credential_process = /bin/false\n[other]\naws_access_key_id=O\n");
	/* the credentials file: [NAME] */
	assert_int_equal(objfs_creds_load_profile(p, "work", 0, &c, &a, &found, &line), 0);
	assert_true(found);
	assert_string_equal(c.access_key, "WK");
	assert_string_equal(c.secret_key, "W=S/+");
	assert_string_equal(c.session_token, "TOK");
	objfs_creds_release(&c);
	assert_int_equal(objfs_creds_load_profile(p, "nope", 0, &c, &a, &found, &line), 0);
	assert_false(found);
	assert_null(c.access_key);
	unlink(p);

	/* the config file: [profile NAME], [default]; region, endpoint, CA */
	p = write_tmp("[default]\nregion = eu-west-1\n[profile  dev ]\nregion=ap-south-1\n"
		      "role_arn = arn:aws:iam::1:role/r\nweb_identity_token_file=/t\n"
		      "endpoint_url = http://127.0.0.1:9000\nca_bundle = /ca.pem\n"
		      "[dev]\nregion = wrong\n[sso-session x]\nsso_region = x\n");
	assert_int_equal(objfs_creds_load_profile(p, "dev", 1, &c, &a, &found, &line), 0);
	assert_true(found);
	assert_string_equal(a.region, "ap-south-1");
	assert_string_equal(a.endpoint, "http://127.0.0.1:9000");
	assert_string_equal(a.ca_bundle, "/ca.pem");
	assert_string_equal(c.role_arn, "arn:aws:iam::1:role/r");
	assert_string_equal(c.web_identity_token_file, "/t");
	objfs_creds_release(&c);
	objfs_aws_env_release(&a);
	assert_int_equal(objfs_creds_load_profile(p, "default", 1, &c, &a, &found, &line), 0);
	assert_true(found);
	assert_string_equal(a.region, "eu-west-1");
	objfs_aws_env_release(&a);
	unlink(p);

	/* a line that is neither: its number, never its text */
	p = write_tmp("[default]\naws_access_key_id = A\nsecret-in-a-line-without-equals\n");
	assert_int_equal(objfs_creds_load_profile(p, "default", 0, &c, &a, &found, &line),
			 EINVAL);
	assert_int_equal(line, 3);
	objfs_creds_release(&c);
	unlink(p);
	assert_int_equal(objfs_creds_load_profile("/nonexistent/x", "default", 0, &c, &a,
						  &found, &line), ENOENT);
}

/* The chain with env; the source it picked (its first credential field). */
static int chain(const char *const *env, struct objfs_creds *c, struct objfs_aws_env *a,
		 char *why, size_t cap)
{
	fake_env = env;
	objfs_creds_release(c);
	objfs_aws_env_release(a);
	return objfs_creds_chain(c, a, env_of, why, cap);
}

static void test_chain_order(void **state)
{
	char dir[] = "/tmp/objfs-chain-XXXXXX", awsdir[64], cf[96], gf[96], home[64];
	char why[512];
	struct objfs_creds c = OBJFS_CREDS_INIT;
	struct objfs_aws_env a = OBJFS_AWS_ENV_INIT;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(home, sizeof(home), "HOME=%s", dir);
	snprintf(awsdir, sizeof(awsdir), "%s/.aws", dir);
	assert_int_equal(mkdir(awsdir, 0700), 0);
	snprintf(cf, sizeof(cf), "%s/credentials", awsdir);
	snprintf(gf, sizeof(gf), "%s/config", awsdir);

	/* nothing anywhere, instance metadata disabled: no source, and
	 * every place looked at named, in order */
	{
		const char *const env[] = { home, "AWS_EC2_METADATA_DISABLED=TRUE", NULL };

		assert_int_equal(chain(env, &c, &a, why, sizeof(why)), 0);
		assert_false(objfs_creds_any(&c));
		assert_non_null(strstr(a.looked, "environment (AWS_ACCESS_KEY_ID"));
		assert_non_null(strstr(a.looked, "credentials (no such file)"));
		assert_non_null(strstr(a.looked, "config (no such file)"));
		assert_non_null(strstr(a.looked, "web identity"));
		assert_non_null(strstr(a.looked, "container credentials"));
		assert_non_null(strstr(a.looked, "EC2 instance metadata: disabled"));
		assert_true(strstr(a.looked, "environment") < strstr(a.looked, "profile") &&
			    strstr(a.looked, "profile") < strstr(a.looked, "web identity") &&
			    strstr(a.looked, "web identity") < strstr(a.looked, "container") &&
			    strstr(a.looked, "container") < strstr(a.looked, "EC2"));
		assert_null(a.region);
	}
	/* nothing: instance metadata last, at the SDKs' address or the
	 * endpoint the environment names ("false" does not disable it) */
	{
		const char *const env[] = { home, "AWS_EC2_METADATA_DISABLED=false", NULL };
		const char *const env2[] = { home, "AWS_EC2_METADATA_SERVICE_ENDPOINT="
					     "http://127.0.0.1:1234", NULL };
		const char *const env3[] = { home, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6",
					     NULL };

		assert_int_equal(chain(env, &c, &a, why, sizeof(why)), 0);
		assert_string_equal(c.imds_endpoint, "http://169.254.169.254");
		assert_true(objfs_creds_any(&c));
		assert_int_equal(chain(env2, &c, &a, why, sizeof(why)), 0);
		assert_string_equal(c.imds_endpoint, "http://127.0.0.1:1234");
		assert_int_equal(chain(env3, &c, &a, why, sizeof(why)), 0);
		assert_string_equal(c.imds_endpoint, "http://[fd00:ec2::254]");
	}
	/* container credentials before instance metadata */
	{
		const char *const env[] = { home, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/x",
					    "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:1",
					    NULL };

		assert_int_equal(chain(env, &c, &a, why, sizeof(why)), 0);
		assert_string_equal(c.container_uri, "http://169.254.170.2/v2/x");
		assert_null(c.imds_endpoint);
	}
	/* web identity before container credentials */
	{
		const char *const env[] = { home, "AWS_ROLE_ARN=arn:aws:iam::1:role/env",
					    "AWS_WEB_IDENTITY_TOKEN_FILE=/tok",
					    "AWS_CONTAINER_CREDENTIALS_FULL_URI=http://127.0.0.1/c",
					    NULL };

		assert_int_equal(chain(env, &c, &a, why, sizeof(why)), 0);
		assert_string_equal(c.role_arn, "arn:aws:iam::1:role/env");
		assert_null(c.container_uri);
	}
	/* the shared files before web identity; the credentials file's
	 * keys over the config file's; the config's region */
	f = fopen(gf, "w");
	assert_non_null(f);
	fputs("[default]\nregion = eu-central-1\naws_access_key_id = CONFAK\n"
	      "aws_secret_access_key = CONFSK\n[profile dev]\nregion = us-west-2\n"
	      "role_arn = arn:aws:iam::1:role/dev\nweb_identity_token_file = /devtok\n", f);
	fclose(f);
	f = fopen(cf, "w");
	assert_non_null(f);
	fputs("[default]\naws_access_key_id = FILEAK\naws_secret_access_key = FILESK\n", f);
	fclose(f);
	{
		const char *const env[] = { home, "AWS_ROLE_ARN=arn:aws:iam::1:role/env",
					    "AWS_WEB_IDENTITY_TOKEN_FILE=/tok", NULL };
		const char *const dev[] = { home, "AWS_PROFILE=dev",
					    "AWS_ENDPOINT_URL_STS=http://127.0.0.1:5", NULL };

		assert_int_equal(chain(env, &c, &a, why, sizeof(why)), 0);
		assert_string_equal(c.access_key, "FILEAK");
		assert_string_equal(c.secret_key, "FILESK");
		assert_null(c.role_arn);
		assert_string_equal(a.region, "eu-central-1");
		/* a profile with a web identity role */
		assert_int_equal(chain(dev, &c, &a, why, sizeof(why)), 0);
		assert_null(c.access_key);
		assert_string_equal(c.role_arn, "arn:aws:iam::1:role/dev");
		assert_string_equal(c.web_identity_token_file, "/devtok");
		assert_string_equal(c.sts_endpoint, "http://127.0.0.1:5");
		assert_string_equal(a.region, "us-west-2");
	}
	/* the environment's keys before everything; its settings before
	 * the profile's */
	{
		const char *const env[] = { home, "AWS_ACCESS_KEY_ID=ENVAK",
					    "AWS_SECRET_ACCESS_KEY=ENVSK",
					    "AWS_SESSION_TOKEN=ENVTOK",
					    "AWS_DEFAULT_REGION=sa-east-1",
					    "AWS_ENDPOINT_URL=http://127.0.0.1:1",
					    "AWS_ENDPOINT_URL_S3=http://127.0.0.1:2",
					    "AWS_CA_BUNDLE=/etc/ca.pem", NULL };
		const char *const env2[] = { home, "AWS_REGION=ca-central-1",
					     "AWS_DEFAULT_REGION=sa-east-1",
					     "AWS_ENDPOINT_URL=http://127.0.0.1:1", NULL };

		assert_int_equal(chain(env, &c, &a, why, sizeof(why)), 0);
		assert_string_equal(c.access_key, "ENVAK");
		assert_string_equal(c.session_token, "ENVTOK");
		assert_string_equal(a.region, "sa-east-1");
		assert_string_equal(a.endpoint, "http://127.0.0.1:2");
		assert_string_equal(a.ca_bundle, "/etc/ca.pem");
		assert_int_equal(chain(env2, &c, &a, why, sizeof(why)), 0);
		assert_string_equal(c.access_key, "FILEAK");
		assert_string_equal(a.region, "ca-central-1");
		assert_string_equal(a.endpoint, "http://127.0.0.1:1");
	}
	/* AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE; a profile neither
	 * has is an error naming both files */
	{
		char cfe[128], gfe[128];
		const char *env[] = { "HOME=/nonexistent", cfe, gfe, "AWS_PROFILE=dev",
				      NULL };
		const char *const missing[] = { home, "AWS_PROFILE=ghost", NULL };

		snprintf(cfe, sizeof(cfe), "AWS_SHARED_CREDENTIALS_FILE=%s", cf);
		snprintf(gfe, sizeof(gfe), "AWS_CONFIG_FILE=%s", gf);
		assert_int_equal(chain(env, &c, &a, why, sizeof(why)), 0);
		assert_string_equal(c.role_arn, "arn:aws:iam::1:role/dev");
		assert_int_equal(chain(missing, &c, &a, why, sizeof(why)), EINVAL);
		assert_non_null(strstr(why, "\"ghost\""));
		assert_non_null(strstr(why, cf));
		assert_non_null(strstr(why, gf));
		assert_false(objfs_creds_any(&c));
	}
	objfs_creds_release(&c);
	objfs_aws_env_release(&a);
	unlink(cf);
	unlink(gf);
	assert_int_equal(rmdir(awsdir), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* The instance metadata's endpoint travels in the file a mount reads. */
static void test_imds_round_trip(void **state)
{
	struct objfs_creds c = OBJFS_CREDS_INIT, out = OBJFS_CREDS_INIT;
	char *text = NULL, *p;
	size_t len = 0;

	(void)state;
	assert_int_equal(objfs_creds_set(&c, "ec2_metadata_endpoint", "http://127.0.0.1:9"), 0);
	assert_int_equal(objfs_creds_format(&c, &text, &len), 0);
	assert_string_equal(text, "ec2_metadata_endpoint=http://127.0.0.1:9\n");
	p = write_tmp(text);
	assert_int_equal(objfs_creds_load_file(p, &out, NULL), 0);
	assert_string_equal(out.imds_endpoint, "http://127.0.0.1:9");
	/* never from the environment alone */
	objfs_creds_release(&out);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:8", 1);
	assert_int_equal(objfs_creds_load_env(&out), 0);
	assert_null(out.imds_endpoint);
	unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	unlink(p);
	free(text);
	objfs_creds_release(&c);
	objfs_creds_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_formats),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_env_fills_gaps),
		cmocka_unit_test(test_write_round_trip),
		cmocka_unit_test(test_write_rejects),
		cmocka_unit_test(test_profile_parser),
		cmocka_unit_test(test_chain_order),
		cmocka_unit_test(test_imds_round_trip),
	};
	return cmocka_run_group_tests_name("creds", tests, NULL, NULL);
}
