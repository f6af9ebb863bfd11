/*
 * noderec.h - the node plugin's memory of staged and published volumes,
 * kept under STATE_DIR/node so that a restarted objfs-csi finds its mounts
 * again (adopts the healthy ones, repairs the broken ones).
 *
 * One file per staged volume, named "v-" + SHA-256(volume_id) in hex (any
 * volume id fits in a file name), holding key=value lines:
 *
 *   # objfs node record
 *   volume_id=pvc-1234
 *   staging=/var/lib/kubelet/plugins/.../globalmount
 *   source=s3://bucket/pvc-1234
 *   endpoint=http://127.0.0.1:8080      (may be empty)
 *   region=us-east-1                    (may be empty)
 *   addressing=path                     (may be empty)
 *   options=memory_mib=64,gid=1000      the non-secret -o list of the mount
 *   fingerprint=...                     what a repeated stage must match
 *   group=1000                          the volume mount group, or empty
 *   pid=4242                            the mount process
 *   start=123456                        its start time (/proc/PID/stat #22)
 *   unit=objfs-mount-0123abcd.service   host-systemd runner: its unit
 *   secrets=1                           a secrets file exists
 *   publish=0|FINGERPRINT|/var/lib/kubelet/pods/.../mount   (0 rw, 1 ro)
 *   #+pv_name=pv-1                      what the CO said of the volume
 *   #+pvc_name=data                     (metrics labels), when it did
 *   #+pvc_namespace=team
 *
 * Rollbacks.  A reader ignores keys it does not know, so that a plugin
 * reads the records of a later one.  Plugins before the metrics labels
 * refused a record with an unknown key (the whole volume was skipped at
 * their start), so keys added since are written behind "#+", which they
 * read as a comment: to them the record is the same minus those keys.  A
 * key whose absence would make a record wrong for an older plugin must
 * not be added this way (docs/kubernetes.md, "Rolling back").
 *
 * Values are escaped: bytes below 0x20, 0x7f, '%' and '|' as %XX.  Writes
 * are atomic (temp file, fsync, rename, fsync of the directory).  Secrets
 * never appear in a record: when NodeStageVolume carried secrets they are
 * kept, for repairs after a restart, in "v-HASH.secrets" (mode 0600, in the
 * 0700 records directory, in the creds.h file format) and removed with the
 * record at unstage.
 */
#ifndef OBJFS_CSI_RECORDS_H
#define OBJFS_CSI_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct objfs_creds;

/* The prefix of the lines of keys added after the first plugins. */
#define OBJFS_NODE_REC_EXT "#+"
/* The largest record format() produces and parse() accepts. */
#define OBJFS_NODE_REC_MAX (1024 * 1024)
/* "v-" + 64 hex digits + NUL. */
#define OBJFS_NODE_REC_NAME_MAX 67

struct objfs_node_pub {
	char *target;           /* owned */
	char *fingerprint;      /* owned */
	bool readonly;
};

/* Every string owned (NULL or malloc'ed); OBJFS_NODE_REC_INIT is empty;
 * objfs_node_rec_release() frees. */
struct objfs_node_rec {
	char *volume_id;
	char *staging;
	char *source;
	char *endpoint;
	char *region;
	char *addressing;
	char *options;
	char *fingerprint;
	char *group;
	char *unit;
	/* what the CO said of the volume (volume_context csi.storage.k8s.io/
	 * pv/name, pvc/name, pvc/namespace; "" or NULL when it did not):
	 * labels of the mount's metrics */
	char *pv_name;
	char *pvc_name;
	char *pvc_namespace;
	pid_t pid;
	unsigned long long start;
	bool secrets;
	struct objfs_node_pub *pubs;
	size_t n_pubs;
};
#define OBJFS_NODE_REC_INIT { 0 }

void objfs_node_rec_release(struct objfs_node_rec *r);

/* Deep copy of src into *dst (which must be empty).  0 or ENOMEM. */
int objfs_node_rec_copy(struct objfs_node_rec *dst, const struct objfs_node_rec *src);

/* Appends a publication (copies both strings).  0 or ENOMEM. */
int objfs_node_rec_add_pub(struct objfs_node_rec *r, const char *target,
			   const char *fingerprint, bool readonly);
/* Index of target among r's publications, or -1. */
long objfs_node_rec_find_pub(const struct objfs_node_rec *r, const char *target);
/* Removes publication i (frees its strings). */
void objfs_node_rec_del_pub(struct objfs_node_rec *r, size_t i);

/* The file name of volume_id's record into name (OBJFS_NODE_REC_NAME_MAX).
 * 0 or EIO (the digest failed). */
int objfs_node_rec_name(const char *volume_id, char name[OBJFS_NODE_REC_NAME_MAX]);

/* Formats r into *out (malloc'ed, NUL-terminated; caller frees), *len
 * without the NUL.  0, EINVAL (no volume_id/staging) or ENOMEM/EFBIG. */
int objfs_node_rec_format(const struct objfs_node_rec *r, char **out, size_t *len);
/* Parses text into *r (which must be empty).  0, EINVAL (malformed line,
 * unknown key, missing volume_id or staging) or ENOMEM.  On error *r is
 * released. */
int objfs_node_rec_parse(const char *text, size_t len, struct objfs_node_rec *r);

/* Creates dir (mode 0700) when missing.  0 or an errno. */
int objfs_node_rec_mkdir(const char *dir);
/* Writes r atomically into dir.  0 or an errno. */
int objfs_node_rec_save(const char *dir, const struct objfs_node_rec *r);
/* Removes volume_id's record and secrets file; absent files are fine. */
int objfs_node_rec_remove(const char *dir, const char *volume_id);
/* Loads every record of dir into *recs (malloc'ed array of *n records;
 * free each with objfs_node_rec_release, then the array).  A file that does
 * not parse is skipped and counted in *bad (may be NULL).  A missing dir
 * gives 0 records.  0 or an errno. */
int objfs_node_rec_load_all(const char *dir, struct objfs_node_rec **recs,
			    size_t *n, unsigned *bad);

/* Saves c as volume_id's secrets file (mode 0600, atomic; the format of
 * objfs_creds_format()).  0 or errno. */
int objfs_node_secrets_save(const char *dir, const char *volume_id,
			    const struct objfs_creds *c);
/* Loads them into c (empty).  0, ENOENT or another errno. */
int objfs_node_secrets_load(const char *dir, const char *volume_id,
			    struct objfs_creds *c);

#endif
