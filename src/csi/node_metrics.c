/*
 * node_metrics.c - what the node plugin says about its mounts (see
 * node_int.h): mounts by state, repairs done, and every mount's own
 * exposition, fetched from STATE_DIR/node/resume/NAME/metrics.sock (the
 * state directory stage_spec gives each mount) and merged under the
 * volume's labels.
 *
 *   objfs_csi_mounts{state}              gauge: healthy, repairing, broken
 *   objfs_csi_repairs_total{result}      counter: ok, failed
 *   objfs_mount_up{volume_id,...}        1 when the mount answered the
 *                                        scrape, 0 when not
 *
 * and the mount runner's own samples (mounter ops->metrics, asked first
 * with no lock held): the holder runner's objfs_holder_up and
 * objfs_holder_oom_score_adj.
 *
 * Labels of a mount: volume_id, and pv, pvc, pvc_namespace where the CO
 * passed them (noderec.h): names the CO gave, never a file name or key.
 * Mounts are asked with no node lock held, in parallel (up to
 * SCRAPE_WORKERS at once), each within MOUNT_TIMEOUT_MS and all within
 * SCRAPE_TIMEOUT_MS of the scrape's start: mounts that hang delay the
 * scrape by MOUNT_TIMEOUT_MS, SCRAPE_TIMEOUT_MS at most however many hang
 * (one not yet asked when the scrape's time is up counts as down).  A mount's counters restart at
 * zero when its process does (a repair, a resumed mount's new server),
 * which Prometheus's rate() reads as a counter reset.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/io.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/metrics_http.h"
#include "csi/node.h"
#include "csi/node_int.h"

#define MOUNT_TIMEOUT_MS 2000
#define SCRAPE_TIMEOUT_MS 3000
#define SCRAPE_WORKERS 16
#define N_LABELS 4

static const char *const states[] = { "healthy", "repairing", "broken" };
static const char *const results[] = { "ok", "failed" };
static const char *const label_names[N_LABELS] = {
	"volume_id", "pv", "pvc", "pvc_namespace",
};

static const struct objfs_metric_def def_mounts = {
	.name = "objfs_csi_mounts",
	.help = "Volumes staged on this node, by state: healthy, repairing (the watchdog is restarting the mount), broken (its last repair failed).",
	.type = OBJFS_METRIC_GAUGE,
	.labels = { { "state", states, 3 } },
	.n_labels = 1,
};

static const struct objfs_metric_def def_repairs = {
	.name = "objfs_csi_repairs_total",
	.help = "Repairs of broken mounts by the node's watchdog, by result.",
	.type = OBJFS_METRIC_COUNTER,
	.labels = { { "result", results, 2 } },
	.n_labels = 1,
};

static const char up_help[] =
	"# HELP objfs_mount_up Whether the mount's process answered the node plugin's scrape (1) or not (0).\n"
	"# TYPE objfs_mount_up gauge\n";

static void collect(void *arg)
{
	struct objfs_csi_node *n = arg;
	int64_t c[3] = { 0, 0, 0 };
	const struct vol *v;
	size_t i;

	pthread_mutex_lock(&n->lock);
	for (v = n->vols; v != NULL; v = v->next)
		c[v->repairing ? 1 : v->abnormal ? 2 : 0]++;
	pthread_mutex_unlock(&n->lock);
	for (i = 0; i < 3; i++)
		objfs_metric_set(n->m_mounts, i, c[i]);
}

int node_metrics_attach(struct objfs_csi_node *n, struct objfs_metrics *reg)
{
	int err;

	if (reg == NULL)
		return 0;
	err = objfs_metrics_register(reg, &def_mounts, &n->m_mounts);
	if (err == 0)
		err = objfs_metrics_register(reg, &def_repairs, &n->m_repairs);
	if (err == 0)
		err = objfs_metrics_add_collector(reg, collect, n);
	return err;
}

void node_metrics_repaired(struct objfs_csi_node *n, bool ok)
{
	objfs_metric_add(n->m_repairs, ok ? 0 : 1, 1);
}

/* One mount to ask: its labels and socket, copied under n->lock. */
struct target {
	char *values[N_LABELS];
	const char *names[N_LABELS];
	const char *vals[N_LABELS];     /* NULL: not passed by the CO */
	size_t n_labels;
	char sock[PATH_MAX + 64];
	struct objfs_buf text;
	int err;                        /* of the fetch */
};

/* The fetches of one scrape, shared by its workers. */
struct scrape {
	struct target *t;
	size_t n;
	size_t next;                    /* the next target to ask (atomic) */
	long long deadline;             /* objfs_now_ms() */
};

static void *scrape_worker(void *arg)
{
	struct scrape *sc = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&sc->next, 1, __ATOMIC_RELAXED)) < sc->n) {
		long long left = sc->deadline - objfs_now_ms();

		sc->t[i].err = left <= 0 ? ETIMEDOUT :
			       objfs_metrics_fetch_unix(sc->t[i].sock,
							left < MOUNT_TIMEOUT_MS ?
							(int)left : MOUNT_TIMEOUT_MS,
							&sc->t[i].text);
	}
	return NULL;
}

/* Asks every target, in parallel; t[i].err says how each went. */
static void scrape_all(struct target *t, size_t n)
{
	struct scrape sc = { t, n, 0, objfs_now_ms() + SCRAPE_TIMEOUT_MS };
	pthread_t th[SCRAPE_WORKERS];
	size_t started = 0, i;

	/* this thread is a worker too: the scrape never waits on none */
	while (started + 1 < n && started < SCRAPE_WORKERS &&
	       pthread_create(&th[started], NULL, scrape_worker, &sc) == 0)
		started++;
	scrape_worker(&sc);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

static void target_release(struct target *t)
{
	size_t i;

	for (i = 0; i < N_LABELS; i++)
		free(t->values[i]);
	objfs_buf_release(&t->text);
}

static int target_init(struct objfs_csi_node *n, const struct vol *v,
		       struct target *t)
{
	const char *vals[N_LABELS] = {
		v->rec.volume_id, v->rec.pv_name, v->rec.pvc_name,
		v->rec.pvc_namespace,
	};
	char name[OBJFS_NODE_REC_NAME_MAX];
	size_t i;
	int err;

	memset(t, 0, sizeof(*t));
	t->text = (struct objfs_buf)OBJFS_BUF_INIT(64u << 20, EFBIG);
	err = objfs_node_rec_name(v->rec.volume_id, name);
	if (err != 0)
		return err;
	if ((size_t)snprintf(t->sock, sizeof(t->sock), "%s/%s/metrics.sock",
			     n->resume_dir, name) >= sizeof(t->sock))
		return ENAMETOOLONG;
	/* every name, so that no mount's own samples take one; NULL values
	 * (the CO did not pass them) are not written */
	for (i = 0; i < N_LABELS; i++) {
		t->names[i] = label_names[i];
		if (vals[i] == NULL || vals[i][0] == '\0')
			continue;
		t->values[i] = strdup(vals[i]);
		if (t->values[i] == NULL)
			return ENOMEM;
		t->vals[i] = t->values[i];
	}
	t->n_labels = N_LABELS;
	return 0;
}

int objfs_csi_node_metrics_merge(struct objfs_csi_node *n, const char *own,
				 struct objfs_buf *out)
{
	struct objfs_buf runner = OBJFS_BUF_INIT(64u << 10, EFBIG);
	struct objfs_metrics_source *src = NULL;
	struct target *t = NULL;
	const struct vol *v;
	size_t cnt = 0, i, k = 0, base = 1;
	int err = 0;

	/* the mount runner's own samples (the holder's), asked unlocked */
	if (n->m.ops->metrics != NULL) {
		n->m.ops->metrics(n->m.ctx, &runner);
		if (objfs_buf_err(&runner) == 0 && runner.p != NULL)
			base = 2;
	}
	pthread_mutex_lock(&n->lock);
	if (n->resume_dir[0] != '\0')
		for (v = n->vols; v != NULL; v = v->next)
			cnt++;
	t = calloc(cnt + 1, sizeof(*t));
	src = calloc(cnt + 2, sizeof(*src));
	if (t == NULL || src == NULL)
		err = ENOMEM;
	for (v = n->vols; err == 0 && k < cnt && v != NULL; v = v->next) {
		err = target_init(n, v, &t[k]);
		if (err != 0 && err != ENOMEM) {
			/* no socket path for it: the others still count */
			objfs_warn(n->log, "node", "metrics of volume %s: %s",
				   v->rec.volume_id, objfs_strerror(err));
			target_release(&t[k]);
			err = 0;
			continue;
		}
		k++;
	}
	if (err != 0 && k < cnt)
		k++;            /* release the one that failed too */
	pthread_mutex_unlock(&n->lock);
	if (err == 0) {
		src[0].text = own;
		if (base == 2)
			src[1].text = runner.p;
		scrape_all(t, k);
		for (i = 0; i < k; i++) {
			int e = t[i].err;

			if (e != 0) {
				objfs_buf_reset(&t[i].text);
				objfs_debug(n->log, "node", "metrics of volume %s: %s",
					    t[i].values[0], objfs_strerror(e));
			}
			/* the up gauge first: the mount's text may lack it
			 * (and its last line an end) */
			if (t[i].text.len > 0 && t[i].text.p[t[i].text.len - 1] != '\n')
				objfs_buf_addc(&t[i].text, '\n');
			objfs_buf_adds(&t[i].text, up_help);
			objfs_buf_adds(&t[i].text, e == 0 ? "objfs_mount_up 1\n" :
				       "objfs_mount_up 0\n");
			src[base + i].text = t[i].text.p;
			src[base + i].label_names = t[i].names;
			src[base + i].label_values = t[i].vals;
			src[base + i].n_labels = t[i].n_labels;
		}
		err = objfs_metrics_merge(src, base + k, out);
	}
	for (i = 0; t != NULL && i < k; i++)
		target_release(&t[i]);
	free(t);
	free(src);
	objfs_buf_release(&runner);
	return err;
}
