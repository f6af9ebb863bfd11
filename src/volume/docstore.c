/* docstore.c - key=value documents kept as objects (see docstore.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "volume/docstore.h"
#include "volume/kvtext.h"

int objfs_doc_load(struct objfs_store *s, const char *key, struct objfs_kv *out)
{
	struct objfs_membuf mb = OBJFS_MEMBUF_INIT(OBJFS_KV_MAX);
	struct objfs_get_opts opts = OBJFS_GET_ALL;
	struct objfs_sink sink;
	int err;

	objfs_sink_membuf(&sink, &mb);
	err = objfs_store_get(s, key, &opts, &sink, NULL);
	if (err == ERANGE)      /* an empty object */
		err = 0;
	if (err == EFBIG)
		err = EINVAL;
	if (err == 0)
		err = objfs_kv_parse(mb.data != NULL ? mb.data : "", mb.len, out);
	objfs_membuf_release(&mb);
	return err;
}

static int doc_put(struct objfs_store *s, const char *key,
		   const struct objfs_kv *kv, const char *comment, bool create)
{
	struct objfs_put_opts opts = { NULL, "text/plain", create };
	struct objfs_source src;
	char *text = NULL;
	size_t len = 0;
	int err;

	err = objfs_kv_format(kv, comment, &text, &len);
	if (err != 0)
		return err;
	objfs_source_mem(&src, text, len);
	err = objfs_store_put(s, key, &src, &opts, NULL);
	free(text);
	return err;
}

int objfs_doc_save(struct objfs_store *s, const char *key,
		   const struct objfs_kv *kv, const char *comment)
{
	return doc_put(s, key, kv, comment, false);
}

int objfs_doc_create(struct objfs_store *s, const char *key,
		     const struct objfs_kv *kv, const char *comment)
{
	return doc_put(s, key, kv, comment, true);
}
