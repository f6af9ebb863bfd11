/*
 * fuzz_node_rec.c - the node plugin's records of staged and published
 * volumes (csi/records.c), read back after a restart from STATE_DIR/node.
 *
 * Properties: a record that parses has a volume id and an absolute staging
 * path, every publication an absolute target; it formats without error,
 * and the formatted text is its canonical form: it parses to the same
 * fields and formats to the same bytes (a fixed point).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "csi/noderec.h"
#include "fuzz.h"

static void same(const char *a, const char *b)
{
	/* format writes NULL and "" alike (an empty line) */
	FUZZ_CHECK(strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0);
}

static void rec_equal(const struct objfs_node_rec *a, const struct objfs_node_rec *b)
{
	size_t i;

	same(a->volume_id, b->volume_id);
	same(a->staging, b->staging);
	same(a->source, b->source);
	same(a->endpoint, b->endpoint);
	same(a->region, b->region);
	same(a->addressing, b->addressing);
	same(a->options, b->options);
	same(a->fingerprint, b->fingerprint);
	same(a->group, b->group);
	same(a->unit, b->unit);
	FUZZ_CHECK(a->pid == b->pid && a->start == b->start && a->secrets == b->secrets);
	FUZZ_CHECK(a->n_pubs == b->n_pubs);
	for (i = 0; i < a->n_pubs; i++) {
		same(a->pubs[i].target, b->pubs[i].target);
		same(a->pubs[i].fingerprint, b->pubs[i].fingerprint);
		FUZZ_CHECK(a->pubs[i].readonly == b->pubs[i].readonly);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct objfs_node_rec r, r2;
	char *out = NULL, *out2 = NULL;
	size_t len, len2, i;
	int rc;

	rc = objfs_node_rec_parse((const char *)data, size, &r);
	FUZZ_CHECK(rc == 0 || rc == EINVAL);
	if (rc != 0)
		return 0;
	FUZZ_CHECK(r.volume_id != NULL && r.volume_id[0] != '\0');
	FUZZ_CHECK(r.staging != NULL && r.staging[0] == '/');
	for (i = 0; i < r.n_pubs; i++)
		FUZZ_CHECK(r.pubs[i].target != NULL && r.pubs[i].target[0] == '/');
	rc = objfs_node_rec_format(&r, &out, &len);
	FUZZ_CHECK(rc == 0);
	FUZZ_CHECK(strlen(out) == len);
	FUZZ_CHECK(objfs_node_rec_parse(out, len, &r2) == 0);
	rec_equal(&r, &r2);
	FUZZ_CHECK(objfs_node_rec_format(&r2, &out2, &len2) == 0);
	FUZZ_CHECK(len == len2 && memcmp(out, out2, len) == 0);
	free(out);
	free(out2);
	objfs_node_rec_release(&r);
	objfs_node_rec_release(&r2);
	return 0;
}
