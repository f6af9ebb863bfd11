/*
 * catalog.c - the CSI index and the snapshot record (see catalog.h).
 *
 * Every document goes through docstore.h; the index keys are formed here
 * only (index_key()).  Field order inside documents is the order of
 * first writing, as kvtext keeps it, so that rewriting an entry changes
 * only the values it updates.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "backend/backend.h"
#include "volume/catalog.h"
#include "volume/docstore.h"
#include "volume/kvtext.h"
#include "volume/volrec.h"

#define SNAPREC_COMMENT "objfs snapshot record"
#define INDEX_COMMENT "objfs-csi index"
#define NAME_INDEX_COMMENT "objfs-csi name index"

/* Snapshot record fields (and the snapshot index entry's facts). */
#define F_NAME "name"
#define F_CREATED "created"
#define F_SOURCE "source_volume_id"
#define F_SIZE "size_bytes"
#define F_SOURCE_CAPACITY "source_capacity_bytes"
#define F_ID "csi.id"
#define F_SEC "csi.created_sec"
#define F_NSEC "csi.created_nsec"

void objfs_catalog_hash(const char *s, size_t len, char *out, size_t hexlen)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t i;

	if (hexlen > 64)
		hexlen = 64;
	if (EVP_Digest(s, len, md, &mdlen, EVP_sha256(), NULL) != 1)
		memset(md, 0, sizeof(md));
	for (i = 0; i < hexlen; i++)
		out[i] = hex[(md[i / 2] >> (i % 2 == 0 ? 4 : 0)) & 0xf];
	out[hexlen] = '\0';
}

static const char *id_dir(enum objfs_catalog_kind kind)
{
	return kind == OBJFS_CATALOG_VOLUME ? OBJFS_INDEX_VOLUMES :
	       OBJFS_INDEX_SNAPSHOTS;
}

static const char *name_dir(enum objfs_catalog_kind kind)
{
	return kind == OBJFS_CATALOG_VOLUME ? OBJFS_INDEX_VOLUME_NAMES :
	       OBJFS_INDEX_SNAPSHOT_NAMES;
}

/* dir + H(s) into key (OBJFS_KEY_MAX bytes). */
static void index_key(char *key, const char *dir, const char *s)
{
	char h[OBJFS_CATALOG_HASH_HEX + 1];

	objfs_catalog_hash(s, strlen(s), h, OBJFS_CATALOG_HASH_HEX);
	snprintf(key, OBJFS_KEY_MAX, "%s%s", dir, h);
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

static int set_u64(struct objfs_kv *kv, const char *key, uint64_t v)
{
	char num[32];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	return objfs_kv_set(kv, key, num);
}

int objfs_catalog_load(struct objfs_store *idx, enum objfs_catalog_kind kind,
		       const char *id, struct objfs_kv *out)
{
	char key[OBJFS_KEY_MAX];

	if (idx == NULL)
		return ENOENT;
	index_key(key, id_dir(kind), id);
	return objfs_doc_load(idx, key, out);
}

/* The name entry key exists: rewritten with kv when it names id (a
 * retried add), else EEXIST. */
static int name_retake(struct objfs_store *idx, const char *key, const char *id,
		       const struct objfs_kv *kv)
{
	struct objfs_kv have = OBJFS_KV_INIT;
	const char *hid;
	int err;

	err = objfs_doc_load(idx, key, &have);
	hid = err == 0 ? objfs_kv_get(&have, OBJFS_CATALOG_ID) : NULL;
	if (err == 0)
		err = hid != NULL && strcmp(hid, id) == 0 ? 0 : EEXIST;
	if (err == 0)
		err = objfs_doc_save(idx, key, kv, NAME_INDEX_COMMENT);
	objfs_kv_release(&have);
	return err;
}

int objfs_catalog_add(struct objfs_store *idx, enum objfs_catalog_kind kind,
		      const char *id, const char *name,
		      const struct objfs_kv *extra)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	char key[OBJFS_KEY_MAX];
	size_t i;
	int err;

	if (idx == NULL)
		return 0;
	err = objfs_kv_set(&kv, OBJFS_CATALOG_ID, id);
	if (err == 0)
		err = objfs_kv_set(&kv, OBJFS_CATALOG_NAME, name);
	for (i = 0; err == 0 && extra != NULL && i < extra->n; i++)
		err = objfs_kv_set(&kv, extra->items[i].key, extra->items[i].value);
	if (err == 0) {
		/* The name is taken by creating its entry, never by
		 * replacing another id's (two controllers racing). */
		index_key(key, name_dir(kind), name);
		err = objfs_doc_create(idx, key, &kv, NAME_INDEX_COMMENT);
		if (err == EEXIST)
			err = name_retake(idx, key, id, &kv);
	}
	if (err == 0) {
		index_key(key, id_dir(kind), id);
		err = objfs_doc_save(idx, key, &kv, INDEX_COMMENT);
	}
	objfs_kv_release(&kv);
	return err;
}

/* Loads the id entry of id, lets fill() update it and writes it back. */
static int entry_update(struct objfs_store *idx, enum objfs_catalog_kind kind,
			const char *id,
			int (*fill)(struct objfs_kv *kv, const void *arg),
			const void *arg)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	char key[OBJFS_KEY_MAX];
	int err;

	if (idx == NULL)
		return 0;
	index_key(key, id_dir(kind), id);
	err = objfs_doc_load(idx, key, &kv);
	if (err == 0)
		err = fill(&kv, arg);
	if (err == 0)
		err = objfs_doc_save(idx, key, &kv, INDEX_COMMENT);
	objfs_kv_release(&kv);
	return err;
}

static int fill_capacity(struct objfs_kv *kv, const void *arg)
{
	return set_u64(kv, OBJFS_VOLREC_CAPACITY, *(const uint64_t *)arg);
}

int objfs_catalog_set_capacity(struct objfs_store *idx, const char *id,
			       uint64_t capacity)
{
	return entry_update(idx, OBJFS_CATALOG_VOLUME, id, fill_capacity,
			    &capacity);
}

static int fill_ready(struct objfs_kv *kv, const void *arg)
{
	const struct objfs_snaprec *r = arg;
	int err;

	err = set_u64(kv, F_SIZE, r->size_bytes);
	if (err == 0)
		err = set_u64(kv, F_SEC, r->created_sec);
	if (err == 0)
		err = set_u64(kv, F_NSEC, r->created_nsec);
	if (err == 0 && r->source_volume_id != NULL)
		err = objfs_kv_set(kv, F_SOURCE, r->source_volume_id);
	if (err == 0)
		err = objfs_kv_set(kv, OBJFS_CATALOG_READY, "1");
	return err;
}

int objfs_catalog_snapshot_ready(struct objfs_store *idx, const char *id,
				 const struct objfs_snaprec *rec)
{
	return entry_update(idx, OBJFS_CATALOG_SNAPSHOT, id, fill_ready, rec);
}

int objfs_catalog_remove(struct objfs_store *idx, enum objfs_catalog_kind kind,
			 const char *id, const char *name_hint)
{
	struct objfs_kv kv = OBJFS_KV_INIT, nkv = OBJFS_KV_INIT;
	char key[OBJFS_KEY_MAX];
	const char *name, *nid;
	int err;

	if (idx == NULL)
		return 0;
	err = objfs_catalog_load(idx, kind, id, &kv);
	if (err != 0 && err != ENOENT)
		goto out;
	name = objfs_kv_get(&kv, OBJFS_CATALOG_NAME);
	if (name == NULL)
		name = name_hint;
	if (name != NULL) {
		index_key(key, name_dir(kind), name);
		err = objfs_doc_load(idx, key, &nkv);
		if (err != 0 && err != ENOENT)
			goto out;
		nid = objfs_kv_get(&nkv, OBJFS_CATALOG_ID);
		err = 0;
		if (nid != NULL && strcmp(nid, id) == 0)
			err = objfs_store_del(idx, key);
		if (err != 0)
			goto out;
	}
	index_key(key, id_dir(kind), id);
	err = objfs_store_del(idx, key);
out:
	objfs_kv_release(&kv);
	objfs_kv_release(&nkv);
	return err;
}

int objfs_catalog_name_check(struct objfs_store *idx,
			     enum objfs_catalog_kind kind, const char *name,
			     const char *id, char *other, size_t cap)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	char key[OBJFS_KEY_MAX];
	const char *nid;
	int err;

	if (idx == NULL)
		return 0;
	index_key(key, name_dir(kind), name);
	err = objfs_doc_load(idx, key, &kv);
	if (err == ENOENT) {
		err = 0;
		goto out;
	}
	if (err != 0)
		goto out;
	nid = objfs_kv_get(&kv, OBJFS_CATALOG_ID);
	if (nid != NULL && strcmp(nid, id) != 0) {
		snprintf(other, cap, "%s", nid);
		err = EEXIST;
	}
out:
	objfs_kv_release(&kv);
	return err;
}

int objfs_catalog_walk(struct objfs_store *idx, enum objfs_catalog_kind kind,
		       const char *after, unsigned page_keys,
		       objfs_catalog_fn fn, void *arg)
{
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	struct objfs_kv kv = OBJFS_KV_INIT;
	struct objfs_list_req lr;
	const char *dir = id_dir(kind);
	char from[OBJFS_KEY_MAX];
	bool more = true, have_from = false;
	size_t i, dlen = strlen(dir);
	int err = 0;

	if (idx == NULL)
		return 0;
	if (after != NULL) {
		snprintf(from, sizeof(from), "%s%s", dir, after);
		have_from = true;
	}
	while (more && err == 0) {
		memset(&lr, 0, sizeof(lr));
		lr.prefix = dir;
		lr.start_after = have_from ? from : NULL;
		lr.max_keys = page_keys;
		err = objfs_store_list(idx, &lr, &page);
		if (err != 0)
			break;
		more = page.next != NULL && page.n_entries > 0;
		for (i = 0; i < page.n_entries && err == 0; i++) {
			const char *key = page.entries[i].key;
			const char *id;

			snprintf(from, sizeof(from), "%s", key);
			have_from = true;
			if (strlen(key) != dlen + OBJFS_CATALOG_HASH_HEX)
				continue;
			err = objfs_doc_load(idx, key, &kv);
			if (err == ENOENT) {
				err = 0;
				continue;
			}
			id = objfs_kv_get(&kv, OBJFS_CATALOG_ID);
			if (err == 0 && id != NULL)
				err = fn(arg, key + dlen, id, &kv);
			objfs_kv_release(&kv);
		}
		objfs_list_page_release(&page);
	}
	objfs_kv_release(&kv);
	objfs_list_page_release(&page);
	return err;
}

uint64_t objfs_catalog_capacity(const struct objfs_kv *entry)
{
	uint64_t cap = 0;

	if (!parse_u64(objfs_kv_get(entry, OBJFS_VOLREC_CAPACITY), &cap))
		cap = 0;
	return cap;
}

/* ---- the snapshot record -------------------------------------------- */

void objfs_snaprec_release(struct objfs_snaprec *r)
{
	if (r == NULL)
		return;
	free(r->name);
	free(r->created);
	free(r->source_volume_id);
	free(r->id);
	memset(r, 0, sizeof(*r));
}

int objfs_snaprec_set(char **dst, const char *s)
{
	char *c = NULL;

	if (s != NULL) {
		if (objfs_kv_value_valid(s) != 0)
			return EINVAL;
		c = strdup(s);
		if (c == NULL)
			return ENOMEM;
	}
	free(*dst);
	*dst = c;
	return 0;
}

int objfs_snaprec_set_cut_now(struct objfs_snaprec *r)
{
	struct timespec ts;
	struct tm tm;
	char buf[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	r->created_sec = (uint64_t)ts.tv_sec;
	r->created_nsec = (uint64_t)ts.tv_nsec;
	return objfs_snaprec_set(&r->created, buf);
}

int objfs_snaprec_entry(const struct objfs_snaprec *r, struct objfs_kv *out)
{
	if (r->source_volume_id == NULL)
		return 0;
	return objfs_kv_set(out, F_SOURCE, r->source_volume_id);
}

static uint64_t get_u64(const struct objfs_kv *kv, const char *key)
{
	uint64_t v = 0;

	if (!parse_u64(objfs_kv_get(kv, key), &v))
		v = 0;
	return v;
}

int objfs_snaprec_from_kv(const struct objfs_kv *kv, struct objfs_snaprec *out)
{
	int err;

	err = objfs_snaprec_set(&out->name, objfs_kv_get(kv, F_NAME));
	if (err == 0)
		err = objfs_snaprec_set(&out->created, objfs_kv_get(kv, F_CREATED));
	if (err == 0)
		err = objfs_snaprec_set(&out->source_volume_id,
					objfs_kv_get(kv, F_SOURCE));
	if (err == 0)
		err = objfs_snaprec_set(&out->id, objfs_kv_get(kv, F_ID));
	out->size_bytes = get_u64(kv, F_SIZE);
	out->source_capacity_bytes = get_u64(kv, F_SOURCE_CAPACITY);
	out->created_sec = get_u64(kv, F_SEC);
	out->created_nsec = get_u64(kv, F_NSEC);
	if (err != 0)
		objfs_snaprec_release(out);
	return err;
}

static int to_kv(const struct objfs_snaprec *r, struct objfs_kv *kv)
{
	int err = 0;

	if (r->name != NULL)
		err = objfs_kv_set(kv, F_NAME, r->name);
	if (err == 0 && r->created != NULL)
		err = objfs_kv_set(kv, F_CREATED, r->created);
	if (err == 0 && r->source_volume_id != NULL)
		err = objfs_kv_set(kv, F_SOURCE, r->source_volume_id);
	if (err == 0)
		err = set_u64(kv, F_SIZE, r->size_bytes);
	if (err == 0)
		err = set_u64(kv, F_SOURCE_CAPACITY, r->source_capacity_bytes);
	if (err == 0 && r->id != NULL)
		err = objfs_kv_set(kv, F_ID, r->id);
	if (err == 0)
		err = set_u64(kv, F_SEC, r->created_sec);
	if (err == 0)
		err = set_u64(kv, F_NSEC, r->created_nsec);
	return err;
}

/* BASE/.objfs-snapshots/NAME/SUFFIX for the snapshot path BASE/NAME, or
 * .objfs-snapshots/NAME/SUFFIX for a path of one segment (every snapshot
 * made before snapshots moved under the base prefix: its id is unchanged,
 * so it is found where it was written). */
static int snapshot_key(const char *path, const char *suffix, char *buf, size_t cap)
{
	const char *slash = strrchr(path, '/');
	int n;

	if (slash == NULL)
		n = snprintf(buf, cap, "%s/%s/%s", OBJFS_SNAPSHOTS_PREFIX, path, suffix);
	else
		n = snprintf(buf, cap, "%.*s/%s/%s/%s", (int)(slash - path), path,
			     OBJFS_SNAPSHOTS_PREFIX, slash + 1, suffix);
	return n < 0 || (size_t)n >= cap ? ENAMETOOLONG : 0;
}

int objfs_snapshot_prefix(const char *path, char *buf, size_t cap)
{
	return snapshot_key(path, "", buf, cap);
}

int objfs_snaprec_key(const char *path, char *buf, size_t cap)
{
	return snapshot_key(path, OBJFS_SNAPREC_KEY, buf, cap);
}

int objfs_snaprec_load(struct objfs_store *s, const char *path,
		       struct objfs_snaprec *out)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	char key[OBJFS_KEY_MAX];
	int err;

	err = objfs_snaprec_key(path, key, sizeof(key));
	if (err == 0)
		err = objfs_doc_load(s, key, &kv);
	if (err == 0)
		err = objfs_snaprec_from_kv(&kv, out);
	objfs_kv_release(&kv);
	return err;
}

int objfs_snaprec_store(struct objfs_store *s, const char *path,
			const struct objfs_snaprec *rec)
{
	struct objfs_kv kv = OBJFS_KV_INIT;
	char key[OBJFS_KEY_MAX];
	int err;

	err = objfs_snaprec_key(path, key, sizeof(key));
	if (err == 0)
		err = to_kv(rec, &kv);
	if (err == 0)
		err = objfs_doc_create(s, key, &kv, SNAPREC_COMMENT);
	objfs_kv_release(&kv);
	return err;
}
