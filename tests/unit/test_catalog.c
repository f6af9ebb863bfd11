/* Unit tests of the catalog (the CSI index and the snapshot record) and
 * of records at a volume prefix, over a real local store. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "volume/catalog.h"
#include "volume/docstore.h"
#include "volume/layout.h"
#include "volume/volrec.h"

struct env {
	char dir[256];
	struct objfs_store *s;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return -1;
	snprintf(e->dir, sizeof(e->dir), "/tmp/objfs-test-catalog-XXXXXX");
	if (mkdtemp(e->dir) == NULL ||
	    objfs_local_store_create(e->dir, NULL, &e->s) != 0)
		return -1;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	char cmd[300];

	objfs_store_destroy(e->s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", e->dir);
	if (system(cmd) != 0)
		return -1;
	free(e);
	return 0;
}

static void put(struct objfs_store *s, const char *key, const char *text)
{
	struct objfs_source src;

	objfs_source_mem(&src, text, strlen(text));
	assert_int_equal(objfs_store_put(s, key, &src, NULL, NULL), 0);
}

static void test_entries(void **state)
{
	struct env *e = *state;
	struct objfs_kv extra = OBJFS_KV_INIT, kv = OBJFS_KV_INIT;
	char other[128], key[OBJFS_KEY_MAX], h[OBJFS_CATALOG_HASH_HEX + 1];
	struct objfs_obj_info info = OBJFS_OBJ_INFO_INIT;

	assert_int_equal(objfs_kv_set(&extra, OBJFS_VOLREC_CAPACITY, "100"), 0);
	assert_int_equal(objfs_catalog_add(e->s, OBJFS_CATALOG_VOLUME, "id-a",
					   "pvc-a", &extra), 0);
	/* the layout: H(id) and H(name) under the index prefixes */
	objfs_catalog_hash("id-a", 4, h, OBJFS_CATALOG_HASH_HEX);
	assert_int_equal(strlen(h), OBJFS_CATALOG_HASH_HEX);
	snprintf(key, sizeof(key), "%s%s", OBJFS_INDEX_VOLUMES, h);
	assert_int_equal(objfs_store_head(e->s, key, &info), 0);
	objfs_obj_info_release(&info);
	objfs_catalog_hash("pvc-a", 5, h, OBJFS_CATALOG_HASH_HEX);
	snprintf(key, sizeof(key), "%s%s", OBJFS_INDEX_VOLUME_NAMES, h);
	assert_int_equal(objfs_store_head(e->s, key, &info), 0);
	objfs_obj_info_release(&info);

	assert_int_equal(objfs_catalog_load(e->s, OBJFS_CATALOG_VOLUME, "id-a", &kv), 0);
	assert_string_equal(objfs_kv_get(&kv, OBJFS_CATALOG_ID), "id-a");
	assert_string_equal(objfs_kv_get(&kv, OBJFS_CATALOG_NAME), "pvc-a");
	assert_true(objfs_catalog_capacity(&kv) == 100);
	objfs_kv_release(&kv);
	/* volumes and snapshots are apart */
	assert_int_equal(objfs_catalog_load(e->s, OBJFS_CATALOG_SNAPSHOT, "id-a", &kv),
			 ENOENT);
	objfs_kv_release(&kv);

	assert_int_equal(objfs_catalog_name_check(e->s, OBJFS_CATALOG_VOLUME, "pvc-a",
						  "id-a", other, sizeof(other)), 0);
	assert_int_equal(objfs_catalog_name_check(e->s, OBJFS_CATALOG_VOLUME, "pvc-b",
						  "id-b", other, sizeof(other)), 0);
	assert_int_equal(objfs_catalog_name_check(e->s, OBJFS_CATALOG_VOLUME, "pvc-a",
						  "id-b", other, sizeof(other)), EEXIST);
	assert_string_equal(other, "id-a");
	assert_int_equal(objfs_catalog_name_check(e->s, OBJFS_CATALOG_SNAPSHOT, "pvc-a",
						  "id-b", other, sizeof(other)), 0);

	assert_int_equal(objfs_catalog_set_capacity(e->s, "id-a", 200), 0);
	assert_int_equal(objfs_catalog_load(e->s, OBJFS_CATALOG_VOLUME, "id-a", &kv), 0);
	assert_true(objfs_catalog_capacity(&kv) == 200);
	assert_int_equal(kv.n, 3);      /* updated in place */
	objfs_kv_release(&kv);
	assert_int_equal(objfs_catalog_set_capacity(e->s, "id-x", 1), ENOENT);

	/* a name entry is created, never replaced: another id's add is
	 * EEXIST (a concurrent controller lost), the same id's is a retry */
	assert_int_equal(objfs_catalog_add(e->s, OBJFS_CATALOG_VOLUME, "id-c",
					   "pvc-a", NULL), EEXIST);
	assert_int_equal(objfs_catalog_add(e->s, OBJFS_CATALOG_VOLUME, "id-a",
					   "pvc-a", NULL), 0);
	/* the name now names id-c: removing id-a keeps it */
	assert_int_equal(objfs_store_del(e->s, key), 0);
	assert_int_equal(objfs_catalog_add(e->s, OBJFS_CATALOG_VOLUME, "id-c",
					   "pvc-a", NULL), 0);
	assert_int_equal(objfs_catalog_remove(e->s, OBJFS_CATALOG_VOLUME, "id-a",
					      NULL), 0);
	assert_int_equal(objfs_catalog_load(e->s, OBJFS_CATALOG_VOLUME, "id-a", &kv),
			 ENOENT);
	objfs_kv_release(&kv);
	assert_int_equal(objfs_catalog_name_check(e->s, OBJFS_CATALOG_VOLUME, "pvc-a",
						  "id-b", other, sizeof(other)), EEXIST);
	assert_string_equal(other, "id-c");
	/* the hint finds the name entry when the id entry is gone */
	assert_int_equal(objfs_store_del(e->s, key), 0);
	assert_int_equal(objfs_catalog_add(e->s, OBJFS_CATALOG_VOLUME, "id-c",
					   "pvc-a", NULL), 0);
	objfs_catalog_hash("id-c", 4, h, OBJFS_CATALOG_HASH_HEX);
	snprintf(key, sizeof(key), "%s%s", OBJFS_INDEX_VOLUMES, h);
	assert_int_equal(objfs_store_del(e->s, key), 0);
	assert_int_equal(objfs_catalog_remove(e->s, OBJFS_CATALOG_VOLUME, "id-c",
					      "pvc-a"), 0);
	assert_int_equal(objfs_catalog_name_check(e->s, OBJFS_CATALOG_VOLUME, "pvc-a",
						  "id-b", other, sizeof(other)), 0);
	objfs_kv_release(&extra);
}

static void test_no_index(void **state)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	char other[16];

	(void)state;
	assert_int_equal(objfs_catalog_add(NULL, OBJFS_CATALOG_VOLUME, "a", "b", NULL), 0);
	assert_int_equal(objfs_catalog_load(NULL, OBJFS_CATALOG_VOLUME, "a", &kv), ENOENT);
	assert_int_equal(objfs_catalog_name_check(NULL, OBJFS_CATALOG_VOLUME, "b", "c",
						  other, sizeof(other)), 0);
	assert_int_equal(objfs_catalog_set_capacity(NULL, "a", 1), 0);
	assert_int_equal(objfs_catalog_remove(NULL, OBJFS_CATALOG_VOLUME, "a", "b"), 0);
	assert_int_equal(objfs_catalog_walk(NULL, OBJFS_CATALOG_VOLUME, NULL, 10,
					    NULL, NULL), 0);
}

struct seen {
	char hash[8][OBJFS_CATALOG_HASH_HEX + 1];
	char id[8][16];
	int n;
	int stop_at;
};

static int collect(void *arg, const char *hash, const char *id,
		   const struct objfs_kv *entry)
{
	struct seen *s = arg;

	assert_string_equal(objfs_kv_get(entry, OBJFS_CATALOG_ID), id);
	if (s->n == s->stop_at)
		return EALREADY;
	assert_true(s->n < 8);
	snprintf(s->hash[s->n], sizeof(s->hash[0]), "%s", hash);
	snprintf(s->id[s->n], sizeof(s->id[0]), "%s", id);
	s->n++;
	return 0;
}

static void test_walk(void **state)
{
	struct env *e = *state;
	struct seen all, rest, part;
	char id[16], name[16];
	int i;

	for (i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "vol-%d", i);
		snprintf(name, sizeof(name), "name-%d", i);
		assert_int_equal(objfs_catalog_add(e->s, OBJFS_CATALOG_VOLUME, id, name,
						   NULL), 0);
	}
	assert_int_equal(objfs_catalog_add(e->s, OBJFS_CATALOG_SNAPSHOT, "snap-0",
					   "s", NULL), 0);
	/* an entry without an id is skipped, a stray key too */
	put(e->s, OBJFS_INDEX_VOLUMES "ffffffffffffffffffffffffffffffffffffffff",
	    "name=x\n");
	put(e->s, OBJFS_INDEX_VOLUMES "short", "id=y\n");

	memset(&all, 0, sizeof(all));
	all.stop_at = -1;
	assert_int_equal(objfs_catalog_walk(e->s, OBJFS_CATALOG_VOLUME, NULL, 2,
					    collect, &all), 0);
	assert_int_equal(all.n, 5);
	for (i = 1; i < all.n; i++)
		assert_true(strcmp(all.hash[i - 1], all.hash[i]) < 0);

	memset(&rest, 0, sizeof(rest));
	rest.stop_at = -1;
	assert_int_equal(objfs_catalog_walk(e->s, OBJFS_CATALOG_VOLUME, all.hash[1], 1,
					    collect, &rest), 0);
	assert_int_equal(rest.n, 3);
	assert_string_equal(rest.id[0], all.id[2]);

	memset(&part, 0, sizeof(part));
	part.stop_at = 3;
	assert_int_equal(objfs_catalog_walk(e->s, OBJFS_CATALOG_VOLUME, NULL, 1000,
					    collect, &part), EALREADY);
	assert_int_equal(part.n, 3);

	memset(&part, 0, sizeof(part));
	part.stop_at = -1;
	assert_int_equal(objfs_catalog_walk(e->s, OBJFS_CATALOG_SNAPSHOT, NULL, 1000,
					    collect, &part), 0);
	assert_int_equal(part.n, 1);
	assert_string_equal(part.id[0], "snap-0");
}

static void test_snapshot_record(void **state)
{
	struct env *e = *state;
	struct objfs_snaprec r = OBJFS_SNAPREC_INIT, w = OBJFS_SNAPREC_INIT;
	struct objfs_kv extra = OBJFS_KV_INIT, kv = OBJFS_KV_INIT;
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(4096);
	struct objfs_get_opts opts = OBJFS_GET_ALL;
	struct objfs_sink sink;
	char key[OBJFS_KEY_MAX];

	assert_int_equal(objfs_snapshot_prefix("snap-1", key, sizeof(key)), 0);
	assert_string_equal(key, OBJFS_SNAPSHOTS_PREFIX "/snap-1/");
	assert_int_equal(objfs_snaprec_key("snap-1", key, sizeof(key)), 0);
	assert_string_equal(key, OBJFS_SNAPSHOTS_PREFIX "/snap-1/" OBJFS_SNAPREC_KEY);
	/* Under the source volume's base prefix. */
	assert_int_equal(objfs_snapshot_prefix("a/b/snap-1", key, sizeof(key)), 0);
	assert_string_equal(key, "a/b/" OBJFS_SNAPSHOTS_PREFIX "/snap-1/");
	assert_int_equal(objfs_snaprec_key("a/snap-1", key, sizeof(key)), 0);
	assert_string_equal(key, "a/" OBJFS_SNAPSHOTS_PREFIX "/snap-1/" OBJFS_SNAPREC_KEY);
	assert_int_equal(objfs_snaprec_key("snap-1", key, sizeof(key)), 0);
	assert_int_equal(objfs_snaprec_load(e->s, "snap-1", &w), ENOENT);

	assert_int_equal(objfs_snaprec_set(&r.source_volume_id, "vol-1"), 0);
	assert_int_equal(objfs_snaprec_entry(&r, &extra), 0);
	assert_int_equal(objfs_catalog_add(e->s, OBJFS_CATALOG_SNAPSHOT, "sid-1",
					   "snap-1", &extra), 0);
	assert_int_equal(objfs_snaprec_set_cut_now(&r), 0);
	assert_non_null(r.created);
	assert_true(r.created_sec > 0 && r.created_nsec < 1000000000ULL);
	assert_int_equal(objfs_snaprec_set(&r.name, "snap-1"), 0);
	assert_int_equal(objfs_snaprec_set(&r.id, "sid-1"), 0);
	assert_int_equal(objfs_snaprec_set(&r.name, "a\nb"), EINVAL);
	r.size_bytes = 4242;
	r.source_capacity_bytes = 1 << 20;
	assert_int_equal(objfs_snaprec_store(e->s, "snap-1", &r), 0);
	objfs_sink_membuf(&sink, &mb);
	assert_int_equal(objfs_store_get(e->s, key, &opts, &sink, NULL), 0);
	assert_true(mb.len > 36);
	assert_memory_equal(mb.data, "# objfs snapshot record\nname=snap-1\n", 36);
	objfs_membuf_release(&mb);

	assert_int_equal(objfs_snaprec_load(e->s, "snap-1", &w), 0);
	assert_string_equal(w.name, "snap-1");
	assert_string_equal(w.created, r.created);
	assert_string_equal(w.source_volume_id, "vol-1");
	assert_string_equal(w.id, "sid-1");
	assert_true(w.size_bytes == 4242 && w.source_capacity_bytes == (1 << 20));
	assert_true(w.created_sec == r.created_sec && w.created_nsec == r.created_nsec);
	objfs_snaprec_release(&w);

	/* the index entry learns the facts and reads back as a record */
	assert_int_equal(objfs_catalog_load(e->s, OBJFS_CATALOG_SNAPSHOT, "sid-1", &kv), 0);
	assert_null(objfs_kv_get(&kv, OBJFS_CATALOG_READY));
	objfs_kv_release(&kv);
	assert_int_equal(objfs_catalog_snapshot_ready(e->s, "sid-1", &r), 0);
	assert_int_equal(objfs_catalog_load(e->s, OBJFS_CATALOG_SNAPSHOT, "sid-1", &kv), 0);
	assert_non_null(objfs_kv_get(&kv, OBJFS_CATALOG_READY));
	assert_int_equal(objfs_snaprec_from_kv(&kv, &w), 0);
	assert_string_equal(w.source_volume_id, "vol-1");
	assert_string_equal(w.name, "snap-1");
	assert_true(w.size_bytes == 4242 && w.created_sec == r.created_sec);
	objfs_snaprec_release(&w);
	objfs_kv_release(&kv);
	assert_int_equal(objfs_catalog_snapshot_ready(e->s, "sid-x", &r), ENOENT);

	objfs_snaprec_release(&r);
	objfs_kv_release(&extra);
}

static void test_volume_record_at(void **state)
{
	struct env *e = *state;
	struct objfs_volrec v = OBJFS_VOLREC_INIT, w = OBJFS_VOLREC_INIT;
	struct objfs_kv kv = OBJFS_KV_INIT;
	char key[OBJFS_KEY_MAX];

	assert_int_equal(objfs_volrec_key("base/pvc-1", key, sizeof(key)), 0);
	assert_string_equal(key, "base/pvc-1/" OBJFS_VOLREC_KEY);
	assert_int_equal(objfs_volrec_key(NULL, key, sizeof(key)), 0);
	assert_string_equal(key, OBJFS_VOLREC_KEY);
	assert_int_equal(objfs_volrec_key("x", key, 4), ENAMETOOLONG);
	assert_int_equal(objfs_volrec_load_at(e->s, "base/pvc-1", &w), ENOENT);
	v.capacity_bytes = 77;
	assert_int_equal(objfs_volrec_set_param(&v, OBJFS_VOLREC_CSI_STATE,
						OBJFS_VOLREC_STATE_RETAINED), 0);
	assert_int_equal(objfs_volrec_store_at(e->s, "base/pvc-1", &v), 0);
	assert_int_equal(objfs_volrec_load_at(e->s, "base/pvc-1", &w), 0);
	assert_true(w.capacity_bytes == 77);
	assert_string_equal(objfs_volrec_get_param(&w, OBJFS_VOLREC_CSI_STATE),
			    OBJFS_VOLREC_STATE_RETAINED);
	/* a document in the same format, read as a document */
	assert_int_equal(objfs_volrec_key("base/pvc-1", key, sizeof(key)), 0);
	assert_int_equal(objfs_doc_load(e->s, key, &kv), 0);
	assert_string_equal(objfs_kv_get(&kv, OBJFS_VOLREC_CAPACITY), "77");
	objfs_kv_release(&kv);
	assert_int_equal(objfs_doc_load(e->s, "nothing", &kv), ENOENT);
	objfs_kv_release(&kv);
	objfs_volrec_release(&v);
	objfs_volrec_release(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_entries, setup, teardown),
		cmocka_unit_test(test_no_index),
		cmocka_unit_test_setup_teardown(test_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_volume_record_at, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
