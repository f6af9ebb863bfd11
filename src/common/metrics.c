/*
 * metrics.c - the metrics registry and the Prometheus text exposition (see
 * metrics.h).
 *
 * Cells: a counter or gauge series is one 64-bit cell; a histogram series
 * is n_bounds + 1 bucket cells (not cumulative: bucket i counts the
 * observations in (bound[i-1], bound[i]], the last one those above every
 * bound) and a sum cell.  Writers use relaxed atomics on their cells;
 * the exposition reads them the same way and makes buckets cumulative, so
 * a scrape racing with observations may see a sum a few observations
 * ahead of the buckets, never a +Inf bucket that disagrees with _count.
 *
 * The registry's mutex guards the family list and the collectors; it is
 * taken by register, add_collector and render, never by the hot path.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/metrics.h"

const double objfs_metric_latency_bounds[OBJFS_METRIC_LATENCY_N] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};

struct objfs_metric {
	struct objfs_metric *next;
	const struct objfs_metric_def *def;
	size_t n_series;
	size_t stride;                  /* cells per series */
	double scale;
	uint64_t bounds_raw[OBJFS_METRIC_BOUNDS_MAX];
	uint64_t *cells;
};

struct collector {
	struct collector *next;
	void (*fn)(void *arg);
	void *arg;
};

struct objfs_metrics {
	pthread_mutex_t mu;
	struct objfs_metric *first, *last;      /* registration order */
	struct collector *collectors;
	/* the process's gauges (objfs_metrics_add_process) */
	struct objfs_metric *p_rss, *p_cpu, *p_fds, *p_start;
	long long start_time;
};

int objfs_metrics_create(struct objfs_metrics **out)
{
	struct objfs_metrics *reg = calloc(1, sizeof(*reg));

	*out = NULL;
	if (reg == NULL)
		return ENOMEM;
	pthread_mutex_init(&reg->mu, NULL);
	*out = reg;
	return 0;
}

void objfs_metrics_destroy(struct objfs_metrics *reg)
{
	struct objfs_metric *m, *mn;
	struct collector *c, *cn;

	if (reg == NULL)
		return;
	for (m = reg->first; m != NULL; m = mn) {
		mn = m->next;
		free(m->cells);
		free(m);
	}
	for (c = reg->collectors; c != NULL; c = cn) {
		cn = c->next;
		free(c);
	}
	pthread_mutex_destroy(&reg->mu);
	free(reg);
}

static bool name_ok(const char *s)
{
	size_t i;

	if (s == NULL || s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (i = 0; s[i] != '\0'; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == ':'))
			return false;
	}
	return i <= 200;
}

int objfs_metrics_register(struct objfs_metrics *reg,
			   const struct objfs_metric_def *def,
			   struct objfs_metric **out)
{
	struct objfs_metric *m, *o;
	size_t i, n = 1;
	int err = 0;

	*out = NULL;
	if (reg == NULL)
		return 0;
	if (def == NULL || !name_ok(def->name) || def->help == NULL ||
	    def->n_labels > OBJFS_METRIC_LABELS_MAX ||
	    (def->type == OBJFS_METRIC_HISTOGRAM &&
	     (def->n_bounds == 0 || def->n_bounds > OBJFS_METRIC_BOUNDS_MAX)) ||
	    def->scale < 0)
		return EINVAL;
	for (i = 0; i < def->n_labels; i++) {
		if (!name_ok(def->labels[i].name) || def->labels[i].n == 0 ||
		    strcmp(def->labels[i].name, "le") == 0)
			return EINVAL;
		n *= def->labels[i].n;
		if (n > OBJFS_METRIC_SERIES_MAX)
			return EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return ENOMEM;
	m->def = def;
	m->n_series = n;
	m->scale = def->scale > 0 ? def->scale : 1;
	m->stride = def->type == OBJFS_METRIC_HISTOGRAM ? def->n_bounds + 2 : 1;
	if (def->type == OBJFS_METRIC_HISTOGRAM) {
		for (i = 0; i < def->n_bounds; i++) {
			double b = def->bounds[i] * m->scale;

			if (!(b >= 0) || b > 1.8e19 ||
			    (i > 0 && def->bounds[i] <= def->bounds[i - 1])) {
				free(m);
				return EINVAL;
			}
			m->bounds_raw[i] = (uint64_t)(b + 0.5);
		}
	}
	m->cells = calloc(n * m->stride, sizeof(uint64_t));
	if (m->cells == NULL) {
		free(m);
		return ENOMEM;
	}
	pthread_mutex_lock(&reg->mu);
	for (o = reg->first; o != NULL && err == 0; o = o->next) {
		if (strcmp(o->def->name, def->name) != 0)
			continue;
		/* the same family again (a second store over the registry)
		 * shares the first one's cells */
		err = o->def == def ? EALREADY : EEXIST;
		if (err == EALREADY)
			*out = o;
	}
	if (err == 0) {
		if (reg->last != NULL)
			reg->last->next = m;
		else
			reg->first = m;
		reg->last = m;
	}
	pthread_mutex_unlock(&reg->mu);
	if (err != 0) {
		free(m->cells);
		free(m);
		return err == EALREADY ? 0 : err;
	}
	*out = m;
	return 0;
}

int objfs_metrics_add_collector(struct objfs_metrics *reg,
				void (*fn)(void *arg), void *arg)
{
	struct collector *c;

	if (reg == NULL)
		return 0;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return ENOMEM;
	c->fn = fn;
	c->arg = arg;
	pthread_mutex_lock(&reg->mu);
	c->next = reg->collectors;
	reg->collectors = c;
	pthread_mutex_unlock(&reg->mu);
	return 0;
}

size_t objfs_metric_index(const struct objfs_metric *m, const size_t *idx)
{
	size_t i, s = 0;

	if (m == NULL)
		return 0;
	for (i = 0; i < m->def->n_labels; i++) {
		size_t n = m->def->labels[i].n;

		s = s * n + (idx[i] < n ? idx[i] : n - 1);
	}
	return s;
}

void objfs_metric_add(struct objfs_metric *m, size_t series, uint64_t n)
{
	if (m == NULL || series >= m->n_series)
		return;
	__atomic_fetch_add(&m->cells[series * m->stride], n, __ATOMIC_RELAXED);
}

void objfs_metric_sub(struct objfs_metric *m, size_t series, uint64_t n)
{
	if (m == NULL || series >= m->n_series)
		return;
	__atomic_fetch_sub(&m->cells[series * m->stride], n, __ATOMIC_RELAXED);
}

void objfs_metric_set(struct objfs_metric *m, size_t series, int64_t value)
{
	if (m == NULL || series >= m->n_series)
		return;
	__atomic_store_n(&m->cells[series * m->stride], (uint64_t)value,
			 __ATOMIC_RELAXED);
}

void objfs_metric_observe(struct objfs_metric *m, size_t series, uint64_t raw)
{
	uint64_t *c;
	size_t b, nb;

	if (m == NULL || series >= m->n_series ||
	    m->def->type != OBJFS_METRIC_HISTOGRAM)
		return;
	c = &m->cells[series * m->stride];
	nb = m->def->n_bounds;
	for (b = 0; b < nb && raw > m->bounds_raw[b]; b++)
		;
	__atomic_fetch_add(&c[b], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c[nb + 1], raw, __ATOMIC_RELAXED);
}

uint64_t objfs_metric_value(const struct objfs_metric *m, size_t series)
{
	const uint64_t *c;
	uint64_t v = 0;
	size_t b;

	if (m == NULL || series >= m->n_series)
		return 0;
	c = &m->cells[series * m->stride];
	if (m->def->type != OBJFS_METRIC_HISTOGRAM)
		return __atomic_load_n(c, __ATOMIC_RELAXED);
	for (b = 0; b <= m->def->n_bounds; b++)
		v += __atomic_load_n(&c[b], __ATOMIC_RELAXED);
	return v;
}

uint64_t objfs_metrics_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- exposition ----------------------------------------------------------- */

void objfs_metrics_escape_label(struct objfs_buf *out, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\')
			objfs_buf_adds(out, "\\\\");
		else if (*v == '"')
			objfs_buf_adds(out, "\\\"");
		else if (*v == '\n')
			objfs_buf_adds(out, "\\n");
		else
			objfs_buf_addc(out, *v);
	}
}

static void escape_help(struct objfs_buf *out, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\')
			objfs_buf_adds(out, "\\\\");
		else if (*v == '\n')
			objfs_buf_adds(out, "\\n");
		else
			objfs_buf_addc(out, *v);
	}
}

/* A float as Prometheus reads it (Go's ParseFloat). */
static void add_float(struct objfs_buf *out, double v)
{
	if (isinf(v))
		objfs_buf_adds(out, v > 0 ? "+Inf" : "-Inf");
	else if (isnan(v))
		objfs_buf_adds(out, "NaN");
	else
		objfs_buf_addf(out, "%.15g", v);
}

/* A raw value in the family's unit. */
static void add_value(struct objfs_buf *out, const struct objfs_metric *m,
		      uint64_t raw, bool is_signed)
{
	if (m->scale == 1) {
		if (is_signed)
			objfs_buf_addf(out, "%lld", (long long)(int64_t)raw);
		else
			objfs_buf_addf(out, "%llu", (unsigned long long)raw);
	} else {
		double v = is_signed ? (double)(int64_t)raw : (double)raw;

		add_float(out, v / m->scale);
	}
}

/* name{labels of series s[,le="le"]} */
static void add_series(struct objfs_buf *out, const struct objfs_metric *m,
		       const char *suffix, size_t s, const char *le)
{
	const struct objfs_metric_def *d = m->def;
	size_t idx[OBJFS_METRIC_LABELS_MAX], i, rest = s;
	bool any = false;

	for (i = d->n_labels; i-- > 0; ) {
		idx[i] = rest % d->labels[i].n;
		rest /= d->labels[i].n;
	}
	objfs_buf_adds(out, d->name);
	objfs_buf_adds(out, suffix);
	for (i = 0; i < d->n_labels; i++) {
		objfs_buf_adds(out, any ? ",": "{");
		objfs_buf_adds(out, d->labels[i].name);
		objfs_buf_adds(out, "=\"");
		objfs_metrics_escape_label(out, d->labels[i].values[idx[i]]);
		objfs_buf_addc(out, '"');
		any = true;
	}
	if (le != NULL) {
		objfs_buf_adds(out, any ? ",le=\"" : "{le=\"");
		objfs_buf_adds(out, le);
		objfs_buf_addc(out, '"');
		any = true;
	}
	if (any)
		objfs_buf_addc(out, '}');
	objfs_buf_addc(out, ' ');
}

static void render_family(struct objfs_buf *out, const struct objfs_metric *m)
{
	const struct objfs_metric_def *d = m->def;
	static const char *const types[] = { "counter", "gauge", "histogram" };
	size_t s, b;

	objfs_buf_addf(out, "# HELP %s ", d->name);
	escape_help(out, d->help);
	objfs_buf_addf(out, "\n# TYPE %s %s\n", d->name, types[d->type]);
	for (s = 0; s < m->n_series; s++) {
		const uint64_t *c = &m->cells[s * m->stride];

		if (d->type != OBJFS_METRIC_HISTOGRAM) {
			uint64_t v = __atomic_load_n(c, __ATOMIC_RELAXED);

			if (d->sparse && v == 0)
				continue;
			add_series(out, m, "", s, NULL);
			add_value(out, m, v, d->type == OBJFS_METRIC_GAUGE);
			objfs_buf_addc(out, '\n');
			continue;
		}
		{
			uint64_t cum = 0, sum;
			char le[64];

			if (d->sparse && objfs_metric_value(m, s) == 0)
				continue;
			for (b = 0; b <= d->n_bounds; b++) {
				cum += __atomic_load_n(&c[b], __ATOMIC_RELAXED);
				if (b < d->n_bounds)
					snprintf(le, sizeof(le), "%g", d->bounds[b]);
				else
					snprintf(le, sizeof(le), "+Inf");
				add_series(out, m, "_bucket", s, le);
				objfs_buf_addf(out, "%llu\n", (unsigned long long)cum);
			}
			sum = __atomic_load_n(&c[d->n_bounds + 1], __ATOMIC_RELAXED);
			add_series(out, m, "_sum", s, NULL);
			add_value(out, m, sum, false);
			objfs_buf_addc(out, '\n');
			add_series(out, m, "_count", s, NULL);
			objfs_buf_addf(out, "%llu\n", (unsigned long long)cum);
		}
	}
}

int objfs_metrics_render(struct objfs_metrics *reg, struct objfs_buf *out)
{
	const struct objfs_metric *m;
	const struct collector *c;

	pthread_mutex_lock(&reg->mu);
	for (c = reg->collectors; c != NULL; c = c->next)
		c->fn(c->arg);
	for (m = reg->first; m != NULL; m = m->next)
		render_family(out, m);
	pthread_mutex_unlock(&reg->mu);
	return objfs_buf_err(out);
}

/* ---- the process ---------------------------------------------------------- */

static const struct objfs_metric_def def_rss = {
	.name = "process_resident_memory_bytes",
	.help = "Resident memory size in bytes.",
	.type = OBJFS_METRIC_GAUGE,
};
static const struct objfs_metric_def def_cpu = {
	.name = "process_cpu_seconds_total",
	.help = "Total user and system CPU time spent in seconds.",
	.type = OBJFS_METRIC_COUNTER,
	.scale = 1e6,
};
static const struct objfs_metric_def def_fds = {
	.name = "process_open_fds",
	.help = "Number of open file descriptors.",
	.type = OBJFS_METRIC_GAUGE,
};
static const struct objfs_metric_def def_start = {
	.name = "process_start_time_seconds",
	.help = "Start time of the process since the Unix epoch in seconds.",
	.type = OBJFS_METRIC_GAUGE,
};

static void collect_process(void *arg)
{
	struct objfs_metrics *reg = arg;
	struct rusage ru;
	unsigned long long pages = 0, rss = 0;
	FILE *f;
	DIR *d;
	int64_t fds = 0;

	f = fopen("/proc/self/statm", "re");
	if (f != NULL) {
		if (fscanf(f, "%llu %llu", &pages, &rss) == 2)
			objfs_metric_set(reg->p_rss, 0,
					 (int64_t)(rss * (unsigned long long)sysconf(_SC_PAGESIZE)));
		fclose(f);
	}
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		objfs_metric_set(reg->p_cpu, 0,
				 (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
				 (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec);
	d = opendir("/proc/self/fd");
	if (d != NULL) {
		while (readdir(d) != NULL)
			fds++;
		closedir(d);
		objfs_metric_set(reg->p_fds, 0, fds - 3);   /* ., .., d's own */
	}
	objfs_metric_set(reg->p_start, 0, reg->start_time);
}

int objfs_metrics_add_process(struct objfs_metrics *reg)
{
	int err;

	if (reg == NULL)
		return 0;
	reg->start_time = (long long)time(NULL);
	err = objfs_metrics_register(reg, &def_rss, &reg->p_rss);
	if (err == 0)
		err = objfs_metrics_register(reg, &def_cpu, &reg->p_cpu);
	if (err == 0)
		err = objfs_metrics_register(reg, &def_fds, &reg->p_fds);
	if (err == 0)
		err = objfs_metrics_register(reg, &def_start, &reg->p_start);
	if (err == 0)
		err = objfs_metrics_add_collector(reg, collect_process, reg);
	return err;
}

/* ---- merging -------------------------------------------------------------- */

struct mfam {
	char *name;
	char *help;             /* the whole "# HELP ..." line, or NULL */
	char *type;             /* the whole "# TYPE ..." line, or NULL */
	struct objfs_buf samples;
};

struct merge {
	struct mfam *f;
	size_t n, cap;
	int err;
};

static struct mfam *fam_get(struct merge *mg, const char *name, size_t len)
{
	struct mfam *f;
	size_t i;

	for (i = 0; i < mg->n; i++)
		if (strlen(mg->f[i].name) == len &&
		    memcmp(mg->f[i].name, name, len) == 0)
			return &mg->f[i];
	if (mg->n == mg->cap) {
		size_t cap = mg->cap ? mg->cap * 2 : 64;
		struct mfam *nf = realloc(mg->f, cap * sizeof(*nf));

		if (nf == NULL)
			return NULL;
		mg->f = nf;
		mg->cap = cap;
	}
	f = &mg->f[mg->n];
	memset(f, 0, sizeof(*f));
	f->name = strndup(name, len);
	if (f->name == NULL)
		return NULL;
	f->samples = (struct objfs_buf)OBJFS_BUF_INIT(64u << 20, EFBIG);
	mg->n++;
	return f;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == ':';
}

#define MERGE_LABELS_MAX 32     /* a sample's own labels */

/* One label of a sample line: name and the value between its quotes. */
struct mlabel {
	const char *name, *value;
	size_t nlen, vlen;
};

/* Parses the label block of l (len bytes) from *i, just past its '{', to
 * just past its '}' into lb (*nlb of them): NAME="VALUE" pairs separated
 * by commas (one after the last allowed, spaces around each), VALUE
 * escaping only \\, \" and \n.  0 or EINVAL. */
static int labels_parse(const char *l, size_t len, size_t *i,
			struct mlabel *lb, size_t *nlb)
{
	size_t k = *i;

	*nlb = 0;
	for (;;) {
		struct mlabel *m;

		while (k < len && l[k] == ' ')
			k++;
		if (k < len && l[k] == '}')
			break;
		if (*nlb == MERGE_LABELS_MAX || k == len ||
		    !((l[k] >= 'a' && l[k] <= 'z') || (l[k] >= 'A' && l[k] <= 'Z') ||
		      l[k] == '_'))
			return EINVAL;
		m = &lb[(*nlb)++];
		m->name = l + k;
		while (k < len && name_char(l[k]) && l[k] != ':')
			k++;
		m->nlen = (size_t)(l + k - m->name);
		while (k < len && l[k] == ' ')
			k++;
		if (k == len || l[k] != '=')
			return EINVAL;
		k++;
		while (k < len && l[k] == ' ')
			k++;
		if (k == len || l[k] != '"')
			return EINVAL;
		m->value = l + ++k;
		while (k < len && l[k] != '"') {
			if (l[k] == '\\') {
				if (k + 1 == len || (l[k + 1] != '\\' && l[k + 1] != '"' &&
						     l[k + 1] != 'n'))
					return EINVAL;
				k++;
			}
			k++;
		}
		if (k == len)
			return EINVAL;
		m->vlen = (size_t)(l + k - m->value);
		k++;
		while (k < len && l[k] == ' ')
			k++;
		if (k < len && l[k] == ',')
			k++;
		else if (k == len || l[k] != '}')
			return EINVAL;
	}
	*i = k + 1;
	return 0;
}

/* Whether the sample's labels lb[0..n) repeat a name among themselves or
 * take one of s's. */
static bool labels_clash(const struct objfs_metrics_source *s,
			 const struct mlabel *lb, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++)
			if (lb[j].nlen == lb[i].nlen &&
			    memcmp(lb[j].name, lb[i].name, lb[i].nlen) == 0)
				return true;
		for (j = 0; j < s->n_labels; j++)
			if (strlen(s->label_names[j]) == lb[i].nlen &&
			    memcmp(s->label_names[j], lb[i].name, lb[i].nlen) == 0)
				return true;
	}
	return false;
}

/* The end of a sample's value from *i: " VALUE" and an optional
 * " TIMESTAMP", tokens of [0-9A-Za-z.+-] (numbers, NaN, +Inf).  Sets *v
 * and *vlen to them (one space between).  0 or EINVAL. */
static int value_parse(const char *l, size_t len, size_t i, size_t *v,
		       size_t *vlen)
{
	size_t tok = 0;

	*v = i;
	while (i < len) {
		size_t b;

		if (l[i] != ' ' || tok == 2)
			return EINVAL;
		while (i < len && l[i] == ' ')
			i++;
		b = i;
		while (i < len && ((l[i] >= '0' && l[i] <= '9') ||
				   (l[i] >= 'a' && l[i] <= 'z') ||
				   (l[i] >= 'A' && l[i] <= 'Z') ||
				   l[i] == '.' || l[i] == '+' || l[i] == '-'))
			i++;
		if (i == b)
			return EINVAL;
		if (tok++ == 0)
			*v = b;
	}
	if (tok == 0)
		return EINVAL;
	*vlen = len - *v;
	return 0;
}

/* Whether sample name (len bytes) belongs to family fam. */
static bool of_family(const char *fam, const char *name, size_t len)
{
	size_t fl = strlen(fam);
	static const char *const sfx[] = { "", "_bucket", "_sum", "_count" };
	size_t i;

	if (len < fl || memcmp(name, fam, fl) != 0)
		return false;
	for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
		if (len - fl == strlen(sfx[i]) && memcmp(name + fl, sfx[i], len - fl) == 0)
			return true;
	return false;
}

static int merge_line(struct merge *mg, const struct objfs_metrics_source *s,
		      const char *l, size_t len, struct mfam **cur)
{
	struct mlabel lb[MERGE_LABELS_MAX];
	struct mfam *f;
	size_t nl = 0, i, nlb = 0, v = 0, vlen = 0;
	bool any;

	while (len > 0 && (l[len - 1] == '\r' || l[len - 1] == ' '))
		len--;
	if (len == 0)
		return 0;
	if (l[0] == '#') {
		bool help = len > 7 && memcmp(l, "# HELP ", 7) == 0;
		bool type = len > 7 && memcmp(l, "# TYPE ", 7) == 0;
		const char *n = l + 7;
		char **slot;

		if (!help && !type)
			return 0;
		while ((size_t)(n - l) + nl < len && name_char(n[nl]))
			nl++;
		if (nl == 0)
			return EINVAL;
		f = fam_get(mg, n, nl);
		if (f == NULL)
			return ENOMEM;
		*cur = f;
		slot = help ? &f->help : &f->type;
		if (*slot == NULL) {
			*slot = strndup(l, len);
			if (*slot == NULL)
				return ENOMEM;
		}
		return 0;
	}
	if (!name_char(l[0]) || (l[0] >= '0' && l[0] <= '9'))
		return EINVAL;
	while (nl < len && name_char(l[nl]))
		nl++;
	i = nl;
	if (i < len && l[i] == '{') {
		i++;
		if (labels_parse(l, len, &i, lb, &nlb) != 0 ||
		    labels_clash(s, lb, nlb))
			return EINVAL;
	}
	if (value_parse(l, len, i, &v, &vlen) != 0)
		return EINVAL;
	if (*cur != NULL && of_family((*cur)->name, l, nl)) {
		f = *cur;
	} else {
		f = fam_get(mg, l, nl);
		if (f == NULL)
			return ENOMEM;
		*cur = f;
	}
	objfs_buf_add(&f->samples, l, nl);
	any = false;
	for (i = 0; i < s->n_labels; i++) {
		if (s->label_values[i] == NULL)
			continue;
		objfs_buf_adds(&f->samples, any ? "," : "{");
		objfs_buf_adds(&f->samples, s->label_names[i]);
		objfs_buf_adds(&f->samples, "=\"");
		objfs_metrics_escape_label(&f->samples, s->label_values[i]);
		objfs_buf_addc(&f->samples, '"');
		any = true;
	}
	for (i = 0; i < nlb; i++) {
		objfs_buf_adds(&f->samples, any ? "," : "{");
		objfs_buf_add(&f->samples, lb[i].name, lb[i].nlen);
		objfs_buf_adds(&f->samples, "=\"");
		objfs_buf_add(&f->samples, lb[i].value, lb[i].vlen);
		objfs_buf_addc(&f->samples, '"');
		any = true;
	}
	if (any)
		objfs_buf_addc(&f->samples, '}');
	objfs_buf_addc(&f->samples, ' ');
	/* the value's tokens with one space between */
	for (i = v; i < v + vlen; i++)
		if (l[i] != ' ' || l[i - 1] != ' ')
			objfs_buf_addc(&f->samples, l[i]);
	objfs_buf_addc(&f->samples, '\n');
	return objfs_buf_err(&f->samples);
}

int objfs_metrics_merge(const struct objfs_metrics_source *src, size_t n,
			struct objfs_buf *out)
{
	struct merge mg = { NULL, 0, 0, 0 };
	size_t i;
	int err = 0;

	for (i = 0; i < n && err == 0; i++) {
		const char *p = src[i].text;
		struct mfam *cur = NULL;

		while (p != NULL && *p != '\0' && err == 0) {
			const char *e = strchr(p, '\n');
			size_t len = e != NULL ? (size_t)(e - p) : strlen(p);

			err = merge_line(&mg, &src[i], p, len, &cur);
			p = e != NULL ? e + 1 : p + len;
		}
	}
	for (i = 0; i < mg.n; i++) {
		struct mfam *f = &mg.f[i];

		if (err == 0) {
			if (f->help != NULL) {
				objfs_buf_adds(out, f->help);
				objfs_buf_addc(out, '\n');
			}
			if (f->type != NULL) {
				objfs_buf_adds(out, f->type);
				objfs_buf_addc(out, '\n');
			}
			if (f->samples.len > 0)
				objfs_buf_add(out, f->samples.p, f->samples.len);
		}
		free(f->name);
		free(f->help);
		free(f->type);
		objfs_buf_release(&f->samples);
	}
	free(mg.f);
	return err != 0 ? err : objfs_buf_err(out);
}
