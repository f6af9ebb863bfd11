/*
 * fuzz_volume_records.c - the bucket's own documents (src/volume): the
 * key=value text (kvtext), the volume record (volrec) and the snapshot
 * record and index entries (catalog), as read from objects any user of the
 * bucket can overwrite.  The first byte picks the reader.
 *
 * Properties: a document that parses formats without error, and what it
 * formats to is its canonical form: it parses to the same items and formats
 * to the same bytes again (a fixed point); blank and comment lines are all
 * the canonical form drops; the snapshot record takes its strings verbatim.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "backend/backend.h"
#include "volume/catalog.h"
#include "volume/kvtext.h"
#include "volume/volrec.h"
#include "fuzz.h"

static void kv_equal(const struct objfs_kv *a, const struct objfs_kv *b)
{
	size_t i;

	FUZZ_CHECK(a->n == b->n);
	for (i = 0; i < a->n; i++) {
		FUZZ_CHECK(strcmp(a->items[i].key, b->items[i].key) == 0);
		FUZZ_CHECK(strcmp(a->items[i].value, b->items[i].value) == 0);
	}
}

static void do_kv(const char *text, size_t n)
{
	struct objfs_kv kv = OBJFS_KV_INIT, kv2 = OBJFS_KV_INIT;
	char *out = NULL, *out2 = NULL;
	size_t len, len2;
	int rc;

	rc = objfs_kv_parse(text, n, &kv);
	FUZZ_CHECK(rc == 0 || rc == EINVAL);
	if (rc != 0) {
		FUZZ_CHECK(kv.n == 0 && kv.items == NULL);
		return;
	}
	rc = objfs_kv_format(&kv, "fuzz", &out, &len);
	FUZZ_CHECK(rc == 0);
	FUZZ_CHECK(objfs_kv_parse(out, len, &kv2) == 0);
	kv_equal(&kv, &kv2);
	FUZZ_CHECK(objfs_kv_format(&kv2, "fuzz", &out2, &len2) == 0);
	FUZZ_CHECK(len == len2 && memcmp(out, out2, len) == 0);
	free(out);
	free(out2);
	objfs_kv_release(&kv);
	objfs_kv_release(&kv2);
}

static void do_volrec(const char *text, size_t n)
{
	struct objfs_volrec v = OBJFS_VOLREC_INIT, v2 = OBJFS_VOLREC_INIT;
	char *buf = malloc(OBJFS_VOLREC_MAX + 1), *buf2 = malloc(OBJFS_VOLREC_MAX + 1);
	size_t len, len2;
	int rc;

	if (buf == NULL || buf2 == NULL)
		abort();
	rc = objfs_volrec_parse(text, n, &v);
	FUZZ_CHECK(rc == 0 || rc == EINVAL);
	if (rc == 0) {
		rc = objfs_volrec_format(&v, buf, OBJFS_VOLREC_MAX + 1, &len);
		FUZZ_CHECK(rc == 0);
		FUZZ_CHECK(objfs_volrec_parse(buf, len, &v2) == 0);
		FUZZ_CHECK(v2.capacity_bytes == v.capacity_bytes);
		FUZZ_CHECK((v.name == NULL) == (v2.name == NULL));
		FUZZ_CHECK(v.name == NULL || strcmp(v.name, v2.name) == 0);
		FUZZ_CHECK((v.created == NULL) == (v2.created == NULL));
		FUZZ_CHECK(v.created == NULL || strcmp(v.created, v2.created) == 0);
		kv_equal(&v.params, &v2.params);
		FUZZ_CHECK(objfs_volrec_format(&v2, buf2, OBJFS_VOLREC_MAX + 1, &len2) == 0);
		FUZZ_CHECK(len == len2 && memcmp(buf, buf2, len) == 0);
	}
	objfs_volrec_release(&v);
	objfs_volrec_release(&v2);
	free(buf);
	free(buf2);
}

static void same_str(const char *rec, const char *kv)
{
	FUZZ_CHECK((rec == NULL) == (kv == NULL));
	FUZZ_CHECK(rec == NULL || strcmp(rec, kv) == 0);
}

static void do_snaprec(const char *text, size_t n)
{
	struct objfs_kv kv = OBJFS_KV_INIT, entry = OBJFS_KV_INIT;
	struct objfs_snaprec r = OBJFS_SNAPREC_INIT;
	char key[OBJFS_KEY_MAX + 1];

	if (objfs_kv_parse(text, n, &kv) != 0)
		return;
	FUZZ_CHECK(objfs_snaprec_from_kv(&kv, &r) == 0);
	same_str(r.name, objfs_kv_get(&kv, "name"));
	same_str(r.created, objfs_kv_get(&kv, "created"));
	same_str(r.id, objfs_kv_get(&kv, "csi.id"));
	same_str(r.source_volume_id, objfs_kv_get(&kv, "source_volume_id"));
	if (objfs_snaprec_entry(&r, &entry) == 0)
		FUZZ_CHECK(entry.n <= kv.n + 8);
	/* the record's key of a snapshot named by the document: under the
	 * snapshot path's base (BASE/.objfs-snapshots/NAME/...), or at the
	 * root for a path of one segment */
	if (r.name != NULL && objfs_snaprec_key(r.name, key, sizeof(key)) == 0) {
		const char *slash = strrchr(r.name, '/');
		size_t base = slash != NULL ? (size_t)(slash - r.name) + 1 : 0;

		FUZZ_CHECK(strncmp(key, r.name, base) == 0);
		FUZZ_CHECK(strncmp(key + base, OBJFS_SNAPSHOTS_PREFIX "/",
				   strlen(OBJFS_SNAPSHOTS_PREFIX) + 1) == 0);
	}
	objfs_snaprec_release(&r);
	objfs_kv_release(&kv);
	objfs_kv_release(&entry);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text;
	size_t n;

	if (size < 1)
		return 0;
	text = (const char *)data + 1;
	n = size - 1;
	switch (data[0] % 3) {
	case 0:
		do_kv(text, n);
		break;
	case 1:
		do_volrec(text, n);
		break;
	case 2:
		do_snaprec(text, n);
		break;
	}
	return 0;
}
