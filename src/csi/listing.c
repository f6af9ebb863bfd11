/*
 * listing.c - paged listings of the CSI index for ListVolumes and
 * ListSnapshots.
 *
 * A listing walks the index (catalog.h) in hash order.  Its page token is
 * "H.MAC": the hash of the last entry answered and 16 hex digits of an
 * HMAC-SHA256 of it under a key drawn at start, so a token is good for
 * this plugin process only and a forged or stale one is ABORTED (the CO
 * lists again from the start).  Entries added or removed during a listing
 * are seen or not, never twice.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "csi/controller_int.h"
#include "csi/driver.h"
#include "volume/catalog.h"

#define HASH_HEX OBJFS_CATALOG_HASH_HEX
#define MAC_HEX 16
#define TOKEN_MAX (HASH_HEX + 1 + MAC_HEX)

static void token_mac(struct objfs_csi_controller *c, char kind,
		      const char *hash, char *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char data[HASH_HEX + 1];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t i;

	data[0] = (unsigned char)kind;
	memcpy(data + 1, hash, HASH_HEX);
	if (HMAC(EVP_sha256(), c->token_key, sizeof(c->token_key), data,
		 sizeof(data), md, &mdlen) == NULL)
		memset(md, 0, sizeof(md));
	for (i = 0; i < MAC_HEX; i++)
		out[i] = hex[(md[i / 2] >> (i % 2 == 0 ? 4 : 0)) & 0xf];
	out[MAC_HEX] = '\0';
}

static void token_make(struct objfs_csi_controller *c, char kind,
		       const char *hash, char *out)
{
	memcpy(out, hash, HASH_HEX);
	out[HASH_HEX] = '.';
	token_mac(c, kind, hash, out + HASH_HEX + 1);
}

/* Checks a starting token; *hash gets its index hash.  0 or EINVAL. */
static int token_check(struct objfs_csi_controller *c, char kind,
		       const char *tok, char *hash)
{
	char mac[MAC_HEX + 1];
	size_t i;

	if (strlen(tok) != TOKEN_MAX || tok[HASH_HEX] != '.')
		return EINVAL;
	for (i = 0; i < HASH_HEX; i++) {
		if (!((tok[i] >= '0' && tok[i] <= '9') || (tok[i] >= 'a' && tok[i] <= 'f')))
			return EINVAL;
	}
	memcpy(hash, tok, HASH_HEX);
	hash[HASH_HEX] = '\0';
	token_mac(c, kind, hash, mac);
	if (CRYPTO_memcmp(mac, tok + HASH_HEX + 1, MAC_HEX) != 0)
		return EINVAL;
	return 0;
}

/* A listing in progress (objfs_ctl_index_walk()). */
struct index_walk {
	struct objfs_csi *csi;
	char kind;                      /* of tokens: 'v' or 's' */
	int32_t max;                    /* entries per answer, 0: all */
	int32_t taken;
	char last[HASH_HEX + 1];        /* H(id) of the last entry taken */
	objfs_ctl_index_fn fn;
	void *arg;
	char *next;                     /* the token of the next answer */
	int fn_err;                     /* what fn failed with, on fn_id */
	char fn_id[OBJFS_ID_MAX + 1];
};

/* Stops the walk (EALREADY) when the answer is full and one more entry
 * exists, or with fn's error. */
static int index_walk_one(void *arg, const char *hash, const char *id,
			  const struct objfs_kv *entry)
{
	struct index_walk *w = arg;
	char tok[TOKEN_MAX + 1];
	bool taken = false;
	int err;

	if (w->max > 0 && w->taken == w->max) {
		/* One more exists: the page ends at last. */
		token_make(w->csi->controller, w->kind, w->last, tok);
		w->next = strdup(tok);
		return w->next != NULL ? EALREADY : ENOMEM;
	}
	err = w->fn(w->arg, id, entry, &taken);
	if (err != 0) {
		w->fn_err = err;
		snprintf(w->fn_id, sizeof(w->fn_id), "%s", id);
		return err;
	}
	if (taken) {
		w->taken++;
		memcpy(w->last, hash, HASH_HEX);
		w->last[HASH_HEX] = '\0';
	}
	return 0;
}

/* Walks the index of kind from the token on; calls fn(arg, id, entry) for
 * each entry until fn has taken max entries (0: no limit) and one more
 * exists.  *next gets the token of the last entry taken when more remain
 * (the caller frees it). */
enum objfs_rpc_code objfs_ctl_index_walk(struct objfs_csi *csi,
					 enum objfs_catalog_kind kind,
					 const char *token, int32_t max,
					 objfs_ctl_index_fn fn, void *arg, char **next,
					 struct objfs_rpc_status *st)
{
	struct index_walk w;
	char hash[HASH_HEX + 1];
	int err;

	*next = NULL;
	memset(&w, 0, sizeof(w));
	w.csi = csi;
	w.kind = kind == OBJFS_CATALOG_VOLUME ? 'v' : 's';
	w.max = max;
	w.fn = fn;
	w.arg = arg;
	if (max < 0)
		return objfs_rpc_fail(st, OBJFS_RPC_INVALID_ARGUMENT,
				      "max_entries must not be negative");
	if (token != NULL && token[0] != '\0' &&
	    token_check(csi->controller, w.kind, token, hash) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_ABORTED,
				      "starting_token was not issued by this plugin: list again from the start");
	err = objfs_catalog_walk(csi->store, kind,
				 token != NULL && token[0] != '\0' ? hash : NULL,
				 csi->controller->page_keys, index_walk_one, &w);
	if (w.fn_err != 0)
		return w.fn_err == ENOMEM ? objfs_ctl_oom(st) :
		       objfs_ctl_store_fail(csi, st, w.fn_err, "cannot read", w.fn_id);
	if (w.next != NULL) {
		*next = w.next;
		return OBJFS_RPC_OK;
	}
	if (err == ENOMEM)
		return objfs_ctl_oom(st);
	if (err != 0)
		return objfs_ctl_store_fail(csi, st, err, "cannot list", "the index");
	return OBJFS_RPC_OK;
}

