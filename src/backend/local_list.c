/*
 * local_list.c - listing of the local store (see local.c for the layout):
 * a walk of the tree in byte-wise key order from the deepest directory the
 * prefix names, with delimiter roll-up and MAC-checked continuation tokens.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "backend/backend.h"
#include "backend/local_int.h"
#include "common/buf.h"
#include "common/io.h"
#include "common/errors.h"
#include "common/log.h"

/* ---- listing ------------------------------------------------------------ */

/* One entry of a logical directory: a component (sorting as comp + "/" for
 * directories) and its on-disk path relative to the directory. */
struct item {
	char *skey;             /* comp, plus '/' for a directory */
	size_t sklen;
	bool dir;
	char *rel;              /* on-disk path below the directory */
};

struct items {
	struct item *v;
	size_t n, cap;
};

static void items_free(struct items *it)
{
	size_t i;

	for (i = 0; i < it->n; i++) {
		free(it->v[i].skey);
		free(it->v[i].rel);
	}
	free(it->v);
	it->v = NULL;
	it->n = it->cap = 0;
}

static int items_add(struct items *it, const char *comp, size_t clen,
		     bool dir, const char *rel)
{
	struct item *v;
	struct item x;

	if (it->n == it->cap) {
		it->cap = it->cap != 0 ? it->cap * 2 : 32;
		v = realloc(it->v, it->cap * sizeof(*v));
		if (v == NULL)
			return ENOMEM;
		it->v = v;
	}
	x.dir = dir;
	x.sklen = clen + (dir ? 1 : 0);
	x.skey = malloc(x.sklen + 1);
	x.rel = strdup(rel);
	if (x.skey == NULL || x.rel == NULL) {
		free(x.skey);
		free(x.rel);
		return ENOMEM;
	}
	memcpy(x.skey, comp, clen);
	if (dir)
		x.skey[clen] = '/';
	x.skey[x.sklen] = '\0';
	it->v[it->n++] = x;
	return 0;
}

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return local_bytes_cmp(x->skey, x->sklen, y->skey, y->sklen);
}

/* Reads the on-disk directory `path` (continuation directories included)
 * into it.  comp is the component prefix carried by continuations and rel
 * the on-disk path from the logical directory.  A directory that vanished
 * (pruned) reads as empty. */
static int read_logical(struct local *L, const char *path, const char *comp,
			size_t clen, const char *rel, struct items *it)
{
	char cbuf[OBJFS_KEY_MAX + 1];
	char sub[PATH_MAX], subrel[PATH_MAX];
	struct dirent *de;
	DIR *d = NULL;
	size_t nlen, dlen;
	char suffix;
	int err = 0;

	err = local_dir_open(L, path, &d);
	if (err != 0)
		return err == ENOENT ? 0 : err;
	memcpy(cbuf, comp, clen);
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			err = errno;
			break;
		}
		if (de->d_name[0] == '.')
			continue;
		nlen = strlen(de->d_name);
		suffix = de->d_name[nlen - 1];
		if (suffix != '+' && suffix != '@' && suffix != '#')
			continue;
		if (local_name_decode(de->d_name, nlen - 1, cbuf + clen,
				sizeof(cbuf) - clen, &dlen) != 0)
			continue;
		if (snprintf(subrel, sizeof(subrel), "%s%s%s", rel,
			     rel[0] != '\0' ? "/" : "", de->d_name) >=
		    (int)sizeof(subrel))
			continue;
		if (suffix == '#') {
			if (snprintf(sub, sizeof(sub), "%s%s%s", path,
				     path[0] != '\0' ? "/" : "", de->d_name) >=
			    (int)sizeof(sub))
				continue;
			err = read_logical(L, sub, cbuf, clen + dlen, subrel, it);
		} else {
			err = items_add(it, cbuf, clen + dlen, suffix == '@',
					subrel);
		}
		if (err != 0)
			break;
	}
	closedir(d);
	return err;
}

/* The state of one list call. */
struct lister {
	struct local *L;
	const char *prefix;
	size_t plen;
	const char *delim;      /* NULL or non-empty */
	size_t dlen;
	const char *marker;     /* skip keys <= marker */
	size_t mlen;
	bool marker_cp;         /* also skip keys starting with marker */
	unsigned max;
	struct objfs_list_page *page;
	size_t cap_e, cap_p;
	unsigned count;
	bool truncated;
	char last_kind;         /* 'k' key, 'p' prefix, 0 nothing yet */
	const char *last;       /* the last thing returned (owned by page) */
	char key[OBJFS_KEY_MAX + 2];
	size_t klen;
};

static bool past_marker(const struct lister *ls, const char *k, size_t n)
{
	if (ls->marker == NULL)
		return true;
	if (local_bytes_cmp(k, n, ls->marker, ls->mlen) <= 0)
		return false;
	return !(ls->marker_cp && local_has_prefix(k, n, ls->marker, ls->mlen));
}

/* Whether cp[0..n) is the common prefix returned last. */
static bool is_last_prefix(const struct lister *ls, const char *cp, size_t n)
{
	return ls->last_kind == 'p' && strlen(ls->last) == n &&
	       memcmp(ls->last, cp, n) == 0;
}

/* Room for one more result; false (and truncated) when the page is full. */
static bool room(struct lister *ls)
{
	if (ls->count < ls->max)
		return true;
	ls->truncated = true;
	return false;
}

static int emit_prefix(struct lister *ls, const char *cp, size_t n)
{
	struct objfs_list_page *pg = ls->page;
	char **v;
	char *d;

	if (is_last_prefix(ls, cp, n))
		return 0;
	if (!room(ls))
		return 0;
	if (pg->n_prefixes == ls->cap_p) {
		ls->cap_p = ls->cap_p != 0 ? ls->cap_p * 2 : 16;
		v = realloc(pg->prefixes, ls->cap_p * sizeof(*v));
		if (v == NULL)
			return ENOMEM;
		pg->prefixes = v;
	}
	d = strndup(cp, n);
	if (d == NULL)
		return ENOMEM;
	pg->prefixes[pg->n_prefixes++] = d;
	ls->count++;
	ls->last_kind = 'p';
	ls->last = d;
	return 0;
}

static int emit_key(struct lister *ls, const char *relpath)
{
	struct objfs_list_page *pg = ls->page;
	struct objfs_list_entry *v, *e;
	struct robj ro;
	int err;

	if (!room(ls))
		return 0;
	err = local_obj_open(ls->L, relpath, &ro);
	if (err == ENOENT)
		return 0;       /* deleted while we listed */
	if (err != 0)
		return err;
	if (pg->n_entries == ls->cap_e) {
		ls->cap_e = ls->cap_e != 0 ? ls->cap_e * 2 : 64;
		v = realloc(pg->entries, ls->cap_e * sizeof(*v));
		if (v == NULL) {
			err = ENOMEM;
			goto out;
		}
		pg->entries = v;
	}
	e = &pg->entries[pg->n_entries];
	e->key = strndup(ls->key, ls->klen);
	if (e->key == NULL) {
		err = ENOMEM;
		goto out;
	}
	e->size = ro.size;
	e->mtime = ro.info.mtime;
	snprintf(e->etag, sizeof(e->etag), "%s", ro.info.etag);
	pg->n_entries++;
	ls->count++;
	ls->last_kind = 'k';
	ls->last = e->key;
out:
	local_obj_close(&ro);
	return err;
}

/* The common prefix of key[0..n) when the delimiter occurs after the
 * prefix within it: its length, else 0. */
static size_t rollup(const struct lister *ls, const char *k, size_t n)
{
	const char *d;

	if (ls->delim == NULL || n < ls->plen)
		return 0;
	d = memmem(k + ls->plen, n - ls->plen, ls->delim, ls->dlen);
	if (d == NULL)
		return 0;
	return (size_t)(d - k) + ls->dlen;
}

/* Reads the logical directory at path, sorted in key order. */
static int read_sorted(struct local *L, const char *path, struct items *it)
{
	int err = read_logical(L, path, "", 0, "", it);

	if (err == 0 && it->n > 1)
		qsort(it->v, it->n, sizeof(*it->v), item_cmp);
	return err;
}

/* Makes ls->key the key (or directory prefix) of item x of the directory
 * at path whose keys start with ls->key[0..klen), and sub its on-disk
 * path.  False when either would be too long (no such key can exist). */
static bool item_enter(struct lister *ls, size_t klen, const char *path,
		       const struct item *x, char *sub, size_t cap)
{
	if (klen + x->sklen > OBJFS_KEY_MAX + 1)
		return false;
	memcpy(ls->key + klen, x->skey, x->sklen);
	ls->klen = klen + x->sklen;
	return snprintf(sub, cap, "%s%s%s", path, path[0] != '\0' ? "/" : "",
			x->rel) < (int)cap;
}

/* Whether the on-disk directory at path holds any object at all.  Stops
 * at the first one found (directories hold something unless a delete is
 * pruning them, so this rarely reads more than a few names). */
static int any_key(struct local *L, const char *path, bool *found)
{
	char *sub = NULL;
	struct dirent *de;
	DIR *d = NULL;
	size_t n;
	int err = 0;

	*found = false;
	err = local_dir_open(L, path, &d);
	if (err != 0)
		return err == ENOENT ? 0 : err;
	/* on the heap: this recurses once per key component */
	sub = malloc(PATH_MAX);
	if (sub == NULL) {
		err = ENOMEM;
		goto out;
	}
	while (!*found && err == 0) {
		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			err = errno;
			break;
		}
		n = strlen(de->d_name);
		if (de->d_name[0] == '.')
			continue;
		if (de->d_name[n - 1] == '+')
			*found = true;
		else if ((de->d_name[n - 1] == '@' || de->d_name[n - 1] == '#') &&
			 snprintf(sub, PATH_MAX, "%s/%s", path, de->d_name) <
			 PATH_MAX)
			err = any_key(L, sub, found);
	}
out:
	if (d != NULL)
		closedir(d);
	free(sub);
	return err;
}

/* Whether the directory at path (keys starting with ls->key) holds a key
 * past the marker.  Tries the greatest keys first. */
static int has_key(struct lister *ls, const char *path, bool *found)
{
	struct items it = { 0 };
	char *sub;
	size_t i, klen = ls->klen;
	int err;

	*found = false;
	/* The whole directory is past the marker: any key will do. */
	if (past_marker(ls, ls->key, ls->klen) &&
	    (ls->marker == NULL ||
	     !local_has_prefix(ls->marker, ls->mlen, ls->key, ls->klen)))
		return any_key(ls->L, path, found);
	sub = malloc(PATH_MAX);         /* recursion: not on the stack */
	if (sub == NULL)
		return ENOMEM;
	err = read_sorted(ls->L, path, &it);
	for (i = it.n; err == 0 && i-- > 0 && !*found;) {
		if (!item_enter(ls, klen, path, &it.v[i], sub, PATH_MAX))
			continue;
		if (it.v[i].dir)
			err = has_key(ls, sub, found);
		else
			*found = past_marker(ls, ls->key, ls->klen);
	}
	ls->klen = klen;
	items_free(&it);
	free(sub);
	return err;
}

/* Lists one object, ls->key, stored at path. */
static int walk_key(struct lister *ls, const char *path)
{
	const char *k = ls->key;
	size_t cpl;

	if (!local_has_prefix(k, ls->klen, ls->prefix, ls->plen) ||
	    !past_marker(ls, k, ls->klen))
		return 0;
	cpl = rollup(ls, k, ls->klen);
	return cpl > 0 ? emit_prefix(ls, k, cpl) : emit_key(ls, path);
}

static int walk(struct lister *ls, const char *path);

/* Lists the directory at path holding the keys ls->key + "...": skips it
 * when the prefix or the marker rule it out, reports it as one common
 * prefix when all its keys roll up into one, else walks it. */
static int walk_dir(struct lister *ls, const char *path)
{
	const char *k = ls->key;
	size_t cpl;
	bool found;
	int err;

	if (!local_has_prefix(k, ls->klen, ls->prefix, ls->plen) &&
	    !local_has_prefix(ls->prefix, ls->plen, k, ls->klen))
		return 0;
	if (ls->marker != NULL &&
	    !local_has_prefix(ls->marker, ls->mlen, k, ls->klen) &&
	    local_bytes_cmp(k, ls->klen, ls->marker, ls->mlen) < 0)
		return 0;
	if (ls->marker_cp && local_has_prefix(k, ls->klen, ls->marker, ls->mlen))
		return 0;
	cpl = rollup(ls, k, ls->klen);
	if (cpl == 0)
		return walk(ls, path);
	if (is_last_prefix(ls, k, cpl))
		return 0;
	err = has_key(ls, path, &found);
	if (err == 0 && found)
		err = emit_prefix(ls, k, cpl);
	return err;
}

/* Walks the directory at path (keys starting with ls->key[0..klen)) in
 * key order. */
static int walk(struct lister *ls, const char *path)
{
	struct items it = { 0 };
	char *sub = malloc(PATH_MAX);   /* recursion: not on the stack */
	size_t i, klen = ls->klen;
	int err;

	if (sub == NULL)
		return ENOMEM;
	err = read_sorted(ls->L, path, &it);
	for (i = 0; err == 0 && i < it.n && !ls->truncated; i++) {
		if (!item_enter(ls, klen, path, &it.v[i], sub, PATH_MAX))
			continue;
		err = it.v[i].dir ? walk_dir(ls, sub) : walk_key(ls, sub);
	}
	ls->klen = klen;
	items_free(&it);
	free(sub);
	return err;
}

static int token_mac(struct local *L, char kind, const char *pos, size_t n,
		     char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int err = 0;

	if (c == NULL)
		return ENOMEM;
	if (EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(c, L->secret, sizeof(L->secret)) != 1 ||
	    EVP_DigestUpdate(c, &kind, 1) != 1 ||
	    EVP_DigestUpdate(c, pos, n) != 1 ||
	    EVP_DigestFinal_ex(c, md, &mdlen) != 1)
		err = EIO;
	else
		local_hex_encode(md, MAC_LEN, out);
	EVP_MD_CTX_free(c);
	return err;
}

/* Token: "1" kind ":" hex(position) ":" hex(mac). */
static int token_make(struct local *L, char kind, const char *pos, char **out)
{
	size_t n = strlen(pos);
	char mac[2 * MAC_LEN + 1];
	char *t;
	int err;

	err = token_mac(L, kind, pos, n, mac);
	if (err != 0)
		return err;
	t = malloc(2 * n + 2 * MAC_LEN + 5);
	if (t == NULL)
		return ENOMEM;
	t[0] = '1';
	t[1] = kind;
	t[2] = ':';
	local_hex_encode((const unsigned char *)pos, n, t + 3);
	t[3 + 2 * n] = ':';
	memcpy(t + 4 + 2 * n, mac, 2 * MAC_LEN + 1);
	*out = t;
	return 0;
}

/* Parses a token into pos (caller buffer of OBJFS_KEY_MAX + 2). */
static int token_parse(struct local *L, const char *t, char *kind, char *pos,
		       size_t *plen)
{
	char mac[2 * MAC_LEN + 1];
	const char *c2;
	size_t hlen;

	if (t[0] != '1' || (t[1] != 'k' && t[1] != 'p') || t[2] != ':')
		return EINVAL;
	c2 = strchr(t + 3, ':');
	if (c2 == NULL)
		return EINVAL;
	hlen = (size_t)(c2 - (t + 3));
	if (hlen == 0 || hlen / 2 > OBJFS_KEY_MAX + 1 ||
	    local_hex_decode(t + 3, hlen, (unsigned char *)pos) != 0)
		return EINVAL;
	*plen = hlen / 2;
	pos[*plen] = '\0';
	if (memchr(pos, '\0', *plen) != NULL)
		return EINVAL;
	if (token_mac(L, t[1], pos, *plen, mac) != 0)
		return EINVAL;
	if (strlen(c2 + 1) != 2 * MAC_LEN || memcmp(c2 + 1, mac, 2 * MAC_LEN) != 0)
		return EINVAL;
	*kind = t[1];
	return 0;
}

int local_list(struct objfs_store *s, const struct objfs_list_req *req,
		      struct objfs_list_page *page)
{
	struct local *L = local_of(s);
	struct lister *ls;
	char pos[OBJFS_KEY_MAX + 2];
	char path[PATH_MAX];
	const char *slash;
	char kind = 0;
	size_t i;
	int err = 0;

	*page = (struct objfs_list_page)OBJFS_LIST_PAGE_INIT;
	ls = calloc(1, sizeof(*ls));
	if (ls == NULL)
		return ENOMEM;
	ls->L = L;
	ls->page = page;
	ls->prefix = req->prefix != NULL ? req->prefix : "";
	ls->plen = strlen(ls->prefix);
	if (req->delimiter != NULL && req->delimiter[0] != '\0') {
		ls->delim = req->delimiter;
		ls->dlen = strlen(ls->delim);
	}
	ls->max = req->max_keys == 0 || req->max_keys > 1000 ? 1000 : req->max_keys;
	if (req->continuation != NULL) {
		err = token_parse(L, req->continuation, &kind, pos, &ls->mlen);
		if (err != 0)
			goto out;
		ls->marker = pos;
		ls->marker_cp = kind == 'p';
	} else if (req->start_after != NULL && req->start_after[0] != '\0') {
		ls->marker = req->start_after;
		ls->mlen = strlen(req->start_after);
	}
	if (ls->plen > OBJFS_KEY_MAX)
		goto out;       /* no key can match */
	/* Start at the deepest directory the prefix names. */
	slash = memrchr(ls->prefix, '/', ls->plen);
	i = slash != NULL ? (size_t)(slash - ls->prefix) + 1 : 0;
	err = local_dir_path(ls->prefix, i, path, sizeof(path));
	if (err != 0) {
		err = 0;        /* too long to exist */
		goto out;
	}
	memcpy(ls->key, ls->prefix, i);
	ls->klen = i;
	err = walk(ls, path);
	if (err == 0 && ls->truncated)
		err = token_make(L, ls->last_kind, ls->last, &page->next);
out:
	if (err != 0)
		objfs_list_page_release(page);
	free(ls);
	return err;
}
