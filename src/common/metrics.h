/*
 * metrics.h - the one metrics registry of objfs: counters, gauges and
 * histograms with fixed, bounded label sets, and the Prometheus text
 * exposition (format 0.0.4).
 *
 * A family is registered once with its label names and, for each label,
 * the complete list of values it may take (static strings): a family of
 * labels with n1, n2 ... values has n1 * n2 ... series, laid out in
 * mixed radix (objfs_metric_index).  No label value is ever made at run
 * time, so no file name, key or secret can reach a label.
 *
 * Hot path: objfs_metric_add / _set / _observe are a few relaxed atomic
 * operations on the series' own cells; no lock.  Every function accepts
 * a NULL family and does nothing, so code with metrics off passes NULL.
 * Histograms keep integer observations in a raw unit (nanoseconds,
 * bytes) and expose them divided by the family's scale; a series' count
 * is the sum of its buckets, so the +Inf bucket always equals _count.
 *
 * Gauges that mirror state kept elsewhere are set by collectors, called
 * (under the registry's mutex) before each exposition.
 *
 * The registry is owned by whoever made it (objfs-mount's main, the CSI
 * driver) and handed to the layers that count; families live as long as
 * the registry.
 */
#ifndef OBJFS_COMMON_METRICS_H
#define OBJFS_COMMON_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct objfs_metrics;
struct objfs_metric;

enum objfs_metric_type {
	OBJFS_METRIC_COUNTER,
	OBJFS_METRIC_GAUGE,
	OBJFS_METRIC_HISTOGRAM,
};

#define OBJFS_METRIC_LABELS_MAX 3
#define OBJFS_METRIC_BOUNDS_MAX 24
/* The most series one family may have. */
#define OBJFS_METRIC_SERIES_MAX 4096

/* One label: its name and every value it may take (n of them). */
struct objfs_metric_label {
	const char *name;
	const char *const *values;
	size_t n;
};

/* A family.  Every pointer is borrowed and must outlive the registry
 * (static tables in practice). */
struct objfs_metric_def {
	const char *name;               /* [a-zA-Z_:][a-zA-Z0-9_:]* */
	const char *help;
	enum objfs_metric_type type;
	struct objfs_metric_label labels[OBJFS_METRIC_LABELS_MAX];
	size_t n_labels;
	/* histograms: increasing upper bounds in the exposed unit (the +Inf
	 * bucket is implicit) */
	const double *bounds;
	size_t n_bounds;
	/* exposed value = raw / scale (0 means 1): 1e9 for nanoseconds
	 * exposed as seconds */
	double scale;
	/* expose only series that moved (a large cross product: method x
	 * code); otherwise every series is exposed from the start */
	bool sparse;
};

/* Latency bounds in seconds shared by the request histograms: 100 us to
 * 60 s. */
#define OBJFS_METRIC_LATENCY_N 18
extern const double objfs_metric_latency_bounds[OBJFS_METRIC_LATENCY_N];

/* A registry.  0 or ENOMEM; free with objfs_metrics_destroy (NULL fine). */
int objfs_metrics_create(struct objfs_metrics **out);
void objfs_metrics_destroy(struct objfs_metrics *reg);

/* Registers def (borrowed) into reg; *out belongs to reg.  The same def
 * registered again gives the family already there (shared cells).  0,
 * EINVAL (a bad name, too many labels, series or bounds, unsorted
 * bounds), EEXIST (the name is taken by another def) or ENOMEM.  reg NULL: *out = NULL and 0, so a
 * layer built without a registry registers nothing. */
int objfs_metrics_register(struct objfs_metrics *reg,
			   const struct objfs_metric_def *def,
			   struct objfs_metric **out);

/* A collector: called before each exposition with the registry's mutex
 * held (it may set gauges, not register).  0, or ENOMEM. */
int objfs_metrics_add_collector(struct objfs_metrics *reg,
				void (*fn)(void *arg), void *arg);

/* The series of label value indexes idx[0..n_labels) (each below its
 * label's n; an index past it is clamped to the last value, which tables
 * make "other"). */
size_t objfs_metric_index(const struct objfs_metric *m, const size_t *idx);

/* Counter: adds n.  Gauge: adds (int64_t)n.  Histogram: not allowed. */
void objfs_metric_add(struct objfs_metric *m, size_t series, uint64_t n);
/* Gauge: subtracts n. */
void objfs_metric_sub(struct objfs_metric *m, size_t series, uint64_t n);
/* Gauge: sets the raw value (exposed as value / scale). */
void objfs_metric_set(struct objfs_metric *m, size_t series, int64_t value);
/* Histogram: one observation of raw (in the raw unit). */
void objfs_metric_observe(struct objfs_metric *m, size_t series, uint64_t raw);

/* The raw value of a counter or gauge series, or a histogram series'
 * count (tests). */
uint64_t objfs_metric_value(const struct objfs_metric *m, size_t series);

/* The monotonic clock in nanoseconds, for latencies. */
uint64_t objfs_metrics_now_ns(void);

/* Appends the exposition of every family (collectors run first) to out.
 * 0 or out's error. */
int objfs_metrics_render(struct objfs_metrics *reg, struct objfs_buf *out);

/* Registers the process's own gauges (resident memory, CPU seconds, open
 * fds, start time: the process_* names every exporter uses).  0 or an
 * errno. */
int objfs_metrics_add_process(struct objfs_metrics *reg);

/* Appends v as a label value, escaped (\\, \", \n). */
void objfs_metrics_escape_label(struct objfs_buf *out, const char *v);

/* ---- merging expositions (the node plugin and its mounts) -------------- */

/* Extra labels put on every sample of one exposition; values are any
 * text (escaped here).  A NULL value: that label is not written, and its
 * name is still the source's (no sample of it may have one so named). */
struct objfs_metrics_source {
	const char *text;               /* an exposition, NUL-terminated */
	const char *const *label_names; /* n_labels of them */
	const char *const *label_values;
	size_t n_labels;
};

/* Merges n expositions into one: each family once (its HELP and TYPE from
 * the first source that has it), then its samples from every source in
 * order, each with that source's extra labels first.  Comments other
 * than HELP/TYPE are dropped; a sample before any TYPE keeps a family of
 * its own name.  A sample line must be NAME[{LABELS}] VALUE [TIMESTAMP]:
 * LABELS name="value" pairs (escapes \\, \" and \n only; a comma after
 * the last and spaces around them allowed), no name twice nor one of the
 * source's extra labels; VALUE and TIMESTAMP of [0-9A-Za-z.+-].  It is
 * written back in that form (no spaces inside the braces, one space
 * before each token), so no source can add a label, a line or a sample
 * another's labels.  0, EINVAL (a sample line that is not so: nothing
 * else is written) or out's error. */
int objfs_metrics_merge(const struct objfs_metrics_source *src, size_t n,
			struct objfs_buf *out);

#endif
