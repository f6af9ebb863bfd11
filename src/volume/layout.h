/*
 * layout.h - the bucket's own format: every key and prefix objfs reserves
 * in a store, in one place.  Code that names a reserved key includes this
 * header; no other file spells one out.
 *
 * A store (an S3 bucket, or a local store directory) holds:
 *
 *   PREFIX/...                        a volume: its files and directories
 *                                     as objects (fs/attr.h), under a
 *                                     prefix the CSI controller chose
 *                                     (basePrefix/NAME) or the one given to
 *                                     objfs-mount
 *   PREFIX/.objfs/                    reserved at the root of every volume:
 *                                     the filesystem never shows or lets a
 *                                     user create it
 *   PREFIX/.objfs/volume              the volume record (volrec.h)
 *   PREFIX/.objfs/root                attributes of the volume's root
 *                                     directory (fs.c)
 *   PREFIX/.objfs/usage               the volume's usage as the last
 *                                     listing of it counted (bytes=,
 *                                     objects=, scanned= seconds since the
 *                                     epoch, writer=): shared by the
 *                                     mounts (fs/capacity.c)
 *   PREFIX/.objfs/attrs/H(D)/W-SEQ    the attribute index: segments
 *                                     describing the files of the
 *                                     directory whose key is D
 *                                     (attrseg.h, fs/attrindex.c)
 *   PREFIX/.objfs/links/ID/data       a file with several names (hard
 *                                     links): its data; each name is a
 *                                     small object pointing at ID
 *   PREFIX/.objfs/links/ID/names/T    one per name of ID: T, the token
 *                                     in the name's metadata
 *                                     (volume/hlink.h, fs/hardlink.c)
 *   BASE/.objfs-snapshots/NAME/...    a snapshot: a copy of a volume's
 *                                     objects (CSI controller), under the
 *                                     base prefix BASE of its source
 *                                     volume (BASE/VOLUME)
 *   BASE/.objfs-snapshots/NAME/.objfs/snapshot   the snapshot record
 *                                     (catalog.h)
 *   BASE/ARCHIVE/VOLUME/...           a volume BASE/VOLUME deleted with
 *                                     onDelete=archive, record included
 *                                     (ARCHIVE: the StorageClass's
 *                                     archivePrefix, else .objfs-archive)
 *   .objfs-csi/volumes/H(id)          the CSI index (catalog.h), in the
 *   .objfs-csi/volume-names/H(name)   controller's default store only;
 *   .objfs-csi/snapshots/H(id)        H is 40 hex digits of SHA-256
 *   .objfs-csi/snapshot-names/H(name)
 *
 * (BASE/ is absent when the volume has no base prefix.)  Everything the
 * controller writes for a volume stays under its base prefix, so keys
 * scoped to it suffice.  Before that rule, snapshots were written to
 * .objfs-snapshots/NAME/ at the store's root (an id whose snapshot path
 * is one segment still names that place: catalog.c) and archives to
 * ARCHIVE/BASE/VOLUME/ (a volume record without csi.archiveTo still
 * archives there: csi/volumes.c).
 *
 * Records and index entries are key=value text documents (kvtext.h).
 * Volume prefixes never start with '.' (csi/volid.c), so none of the
 * reserved names above can collide with a volume (but an archivePrefix,
 * which does not start with '.', names BASE/ARCHIVE like a volume: its
 * first segment must not be a volume's name; CO volume names are
 * pvc-UUID).
 *
 * Not part of this format: the local leaf's own files in its directory
 * (".objfs-store" marker, ".objfs/tmp", ".objfs/mpu": backend/local.c and
 * backend/stack.c), which are never objects.
 */
#ifndef OBJFS_VOLUME_LAYOUT_H
#define OBJFS_VOLUME_LAYOUT_H

/* The reserved directory at the root of a volume (a name, not a key). */
#define OBJFS_META_DIR ".objfs"

/* Keys relative to a volume's prefix. */
#define OBJFS_VOLREC_KEY OBJFS_META_DIR "/volume"
#define OBJFS_ROOT_ATTR_KEY OBJFS_META_DIR "/root"
/* The usage document (key=value text, fs/capacity.c). */
#define OBJFS_USAGE_KEY OBJFS_META_DIR "/usage"
/* The attribute index: OBJFS_ATTR_INDEX_PREFIX H(dir key) "/" segment. */
#define OBJFS_ATTR_INDEX_PREFIX OBJFS_META_DIR "/attrs/"
/* Hard links: OBJFS_HLINK_PREFIX ID "/data" and ID "/names/" TOKEN. */
#define OBJFS_HLINK_PREFIX OBJFS_META_DIR "/links/"

/* Snapshots: [BASE/]SNAPSHOTS/NAME/ holds the copy, the record is relative
 * to it. */
#define OBJFS_SNAPSHOTS_PREFIX ".objfs-snapshots"
#define OBJFS_SNAPREC_KEY OBJFS_META_DIR "/snapshot"

/* Where onDelete=archive moves a volume (under its base prefix) when no
 * archivePrefix is given. */
#define OBJFS_ARCHIVE_DEFAULT ".objfs-archive"

/* The CSI index (in the default store), each followed by H(id or name). */
#define OBJFS_INDEX_PREFIX ".objfs-csi/"
#define OBJFS_INDEX_VOLUMES OBJFS_INDEX_PREFIX "volumes/"
#define OBJFS_INDEX_VOLUME_NAMES OBJFS_INDEX_PREFIX "volume-names/"
#define OBJFS_INDEX_SNAPSHOTS OBJFS_INDEX_PREFIX "snapshots/"
#define OBJFS_INDEX_SNAPSHOT_NAMES OBJFS_INDEX_PREFIX "snapshot-names/"

#endif
