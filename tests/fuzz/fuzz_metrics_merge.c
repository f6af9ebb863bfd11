/*
 * fuzz_metrics_merge.c - mounts' expositions as the node plugin merges and
 * relabels them (objfs_metrics_merge, common/metrics.c, called as
 * csi/node_metrics.c does: the node's own text first, then each mount's
 * answer with a line end made sure of, its up gauge appended, and the
 * volume's labels, the ones the CO did not pass NULL).
 *
 * Input: NUL-separated fields: mount A's text, its volume_id, its pv
 * ("" = not passed); mount B's text, its volume_id (no pv).
 *
 * Properties: the merge succeeds or says EINVAL having written nothing.
 * Every line written is a HELP or TYPE comment or a sample
 * NAME[{LABELS}] VALUE [TIMESTAMP] in the strict text format (label
 * values escaping \\, \" and \n only, no name twice, no spaces inside the
 * braces).  A sample is either one of the node's own, byte for byte, or
 * starts with one mount's labels exactly as the model escapes them and
 * carries none of the node's label names (volume_id, pv) after them: no
 * mount adds a label or a line, or passes for another.  There are no
 * more mount samples than mount lines.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/buf.h"
#include "common/metrics.h"
#include "fuzz.h"

static const char own[] =
	"# HELP objfs_csi_mounts Volumes.\n# TYPE objfs_csi_mounts gauge\n"
	"objfs_csi_mounts{state=\"healthy\"} 1\n"
	"objfs_csi_mounts{state=\"broken\"} 0\n";
static const char up[] =
	"# HELP objfs_mount_up Whether the mount answered.\n"
	"# TYPE objfs_mount_up gauge\nobjfs_mount_up 1\n";
static const char *const names[] = { "volume_id", "pv" };

/* "volume_id=\"V\"[,pv=\"P\"]" with the model's escapes; malloc'ed. */
static char *model_labels(const char *const *vals)
{
	struct objfs_buf b = OBJFS_BUF_INIT(1 << 20, EFBIG);
	size_t i;
	const char *v;

	for (i = 0; i < 2; i++) {
		if (vals[i] == NULL)
			continue;
		objfs_buf_addf(&b, "%s%s=\"", i > 0 ? "," : "", names[i]);
		for (v = vals[i]; *v != '\0'; v++) {
			switch (*v) {
			case '\\': objfs_buf_adds(&b, "\\\\"); break;
			case '"': objfs_buf_adds(&b, "\\\""); break;
			case '\n': objfs_buf_adds(&b, "\\n"); break;
			default: objfs_buf_addc(&b, *v);
			}
		}
		objfs_buf_addc(&b, '"');
	}
	FUZZ_CHECK(objfs_buf_err(&b) == 0);
	return objfs_buf_detach(&b);
}

/* The mount's text as the node hands it over; malloc'ed. */
static char *as_node(const char *text)
{
	struct objfs_buf b = OBJFS_BUF_INIT(1 << 24, EFBIG);
	size_t n = strlen(text);

	objfs_buf_adds(&b, text);
	if (n > 0 && text[n - 1] != '\n')
		objfs_buf_addc(&b, '\n');
	objfs_buf_adds(&b, up);
	FUZZ_CHECK(objfs_buf_err(&b) == 0);
	return objfs_buf_detach(&b);
}

static size_t lines(const char *t)
{
	size_t n = 1;

	for (; *t != '\0'; t++)
		n += *t == '\n';
	return n;
}

static bool lname_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

static bool value_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || c == '.' || c == '+' || c == '-';
}

/* Checks one sample line l (n bytes, no '\n'): the strict format; *lb
 * gets where its label block's inside starts, *lbn its length. */
static void check_sample(const char *l, size_t n, size_t *lb, size_t *lbn)
{
	size_t i = 0, k, tok = 0, nl = 0;
	const char *seen[64];
	size_t seen_n[64];

	FUZZ_CHECK(n > 0 && (lname_char(l[0], true) || l[0] == ':'));
	while (i < n && (lname_char(l[i], false) || l[i] == ':'))
		i++;
	*lb = i;
	*lbn = 0;
	if (i < n && l[i] == '{') {
		*lb = ++i;
		while (i < n && l[i] != '}') {
			size_t b = i;

			FUZZ_CHECK(lname_char(l[i], true));
			while (i < n && lname_char(l[i], false))
				i++;
			FUZZ_CHECK(nl < 64);
			for (k = 0; k < nl; k++)    /* no name twice */
				FUZZ_CHECK(seen_n[k] != i - b || memcmp(seen[k], l + b, i - b) != 0);
			seen[nl] = l + b;
			seen_n[nl++] = i - b;
			FUZZ_CHECK(i + 1 < n && l[i] == '=' && l[i + 1] == '"');
			for (i += 2; i < n && l[i] != '"'; i++) {
				if (l[i] == '\\') {
					FUZZ_CHECK(i + 1 < n && strchr("\\\"n", l[i + 1]) != NULL &&
						   l[i + 1] != '\0');
					i++;
				}
			}
			FUZZ_CHECK(i < n);
			i++;
			FUZZ_CHECK(i < n && (l[i] == '}' || (l[i] == ',' && i + 1 < n &&
							     l[i + 1] != '}')));
			if (l[i] == ',')
				i++;
		}
		FUZZ_CHECK(i < n && nl > 0);
		*lbn = i - *lb;
		i++;
	}
	while (i < n) {
		FUZZ_CHECK(l[i] == ' ' && tok < 2);
		i++;
		FUZZ_CHECK(i < n && value_char(l[i]));
		while (i < n && value_char(l[i]))
			i++;
		tok++;
	}
	FUZZ_CHECK(tok >= 1);
}

/* Whether the label block inside (n bytes) starts with mine and names
 * none of the node's labels after it. */
static bool of_mount(const char *in, size_t n, const char *mine)
{
	size_t ml = strlen(mine), i;

	if (n < ml || memcmp(in, mine, ml) != 0 || (n > ml && in[ml] != ','))
		return false;
	/* after it: label names follow '{' or ',' outside quotes */
	for (i = ml; i < n; i++) {
		size_t j;

		if (in[i] == '"') {
			for (i++; in[i] != '"'; i++)
				i += in[i] == '\\';
			continue;
		}
		if (in[i] != ',')
			continue;
		for (j = 0; j < 2; j++)
			if (strncmp(in + i + 1, names[j], strlen(names[j])) == 0 &&
			    in[i + 1 + strlen(names[j])] == '=')
				return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	char *ta = fuzz_str(&in), *va = fuzz_str(&in), *pa = fuzz_str(&in);
	char *tb = fuzz_str(&in), *vb = fuzz_str(&in);
	const char *vals_a[2] = { va, pa[0] != '\0' ? pa : NULL };
	const char *vals_b[2] = { vb, NULL };
	char *na = as_node(ta), *nb = as_node(tb);
	char *la = model_labels(vals_a), *lb_ = model_labels(vals_b);
	struct objfs_metrics_source src[3] = {
		{ own, NULL, NULL, 0 },
		{ na, names, vals_a, 2 },
		{ nb, names, vals_b, 2 },
	};
	struct objfs_buf out = OBJFS_BUF_INIT(1 << 26, EFBIG);
	size_t mount_lines = lines(na) + lines(nb), mount_samples = 0;
	const char *p, *e;
	int rc;

	rc = objfs_metrics_merge(src, 3, &out);
	FUZZ_CHECK(rc == 0 || rc == EINVAL);
	if (rc != 0) {
		FUZZ_CHECK(out.len == 0);
		goto out;
	}
	FUZZ_CHECK(out.p != NULL && strlen(out.p) == out.len);
	FUZZ_CHECK(out.len > 0 && out.p[out.len - 1] == '\n');
	for (p = out.p; *p != '\0'; p = e + 1) {
		size_t n, b, bn;

		e = strchr(p, '\n');
		n = (size_t)(e - p);
		FUZZ_CHECK(n > 0);
		if (p[0] == '#') {
			FUZZ_CHECK(n > 7 && (memcmp(p, "# HELP ", 7) == 0 ||
					     memcmp(p, "# TYPE ", 7) == 0));
			continue;
		}
		check_sample(p, n, &b, &bn);
		if (bn >= 10 && memcmp(p + b, "volume_id=", 10) == 0) {
			FUZZ_CHECK(of_mount(p + b, bn, la) || of_mount(p + b, bn, lb_));
			mount_samples++;
		} else {
			/* one of the node's own, as it was */
			char *line = strndup(p, n + 1);

			FUZZ_CHECK(line != NULL && strstr(own, line) != NULL);
			free(line);
		}
	}
	FUZZ_CHECK(mount_samples <= mount_lines);
out:
	objfs_buf_release(&out);
	free(ta);
	free(va);
	free(pa);
	free(tb);
	free(vb);
	free(na);
	free(nb);
	free(la);
	free(lb_);
	return 0;
}
