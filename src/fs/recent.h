/*
 * recent.h - the names this mount created or removed lately (recent.c),
 * merged into whole listings so that a mount lists what it made itself
 * whatever its store's listing lag (issue 28 item 8: Swift updates
 * container listings asynchronously).
 *
 * The table is embedded in struct objfs_fs (fs->recent) and protected by
 * fs->lock, like the snapshots it completes; it allocates only its
 * entries.  Times are passed in (now_mono() seconds), so the unit tests
 * drive it with a fake clock.
 */
#ifndef OBJFS_FS_RECENT_H
#define OBJFS_FS_RECENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/list.h"

/* Seconds a change is merged into listings.  Swift's container listing
 * normally follows a write within a second or a few under load, but an
 * update the container server could not take in time waits for the
 * object-updater, which sweeps every 300 s (its default interval): a
 * change is kept that long, plus some slack for the sweep itself. */
#define RECENT_WINDOW 330.0
/* Changes kept at most (oldest dropped first: those the store most
 * likely shows by then); about 100 bytes each.  RECENT_MAX over
 * RECENT_WINDOW is 200 creates a second, sustained, before a change is
 * dropped early. */
#define RECENT_MAX 65536
#define RECENT_DIR_HASH 1024
#define RECENT_ENT_HASH 16384

struct recent_dir;

/* One change: a name of a directory created (add) or removed here. */
struct recent_ent {
	struct recent_ent *hnext;       /* chain of the (dir, name) hash */
	struct recent_dir *dir;
	struct objfs_list in_dir;       /* dir->ents */
	struct objfs_list age;          /* r->age: oldest first */
	double time;                    /* when (now_mono()) */
	struct timespec when;           /* when (real time): a name the
					   listing shows written later than
					   its removal is another writer's */
	bool add;
	bool is_dir;
	char name[];
};

/* The changes of one directory, by its key ("" the root, "a/b/"). */
struct recent_dir {
	struct recent_dir *hnext;       /* chain of the key hash */
	struct objfs_list ents;         /* its struct recent_ent */
	size_t n;
	char key[];
};

/* All of it under fs->lock.  An empty table is all zeros but for the
 * lists: recent_init(). */
struct fs_recent {
	struct recent_dir *dirs[RECENT_DIR_HASH];
	struct recent_ent *ents[RECENT_ENT_HASH];
	struct objfs_list age;          /* every entry, oldest first */
	size_t n;                       /* entries */
	size_t max;                     /* RECENT_MAX (tests: fewer) */
	double window;                  /* RECENT_WINDOW (tests: less) */
	uint64_t dropped;               /* entries dropped before their
					   window ended (the bound) */
};

/* Makes r empty with the default window and bound / frees its entries.
 * No failure: nothing is allocated. */
void recent_init(struct fs_recent *r);
void recent_release(struct fs_recent *r);

/* Notes that name (of type is_dir) was created (add) or removed in the
 * directory whose key is dkey at now (real: when); the latest change of
 * a name wins.  Out of memory: the change is not kept (listings are then
 * the store's alone, as before).  Entries past the window go first. */
void recent_note(struct fs_recent *r, const char *dkey, const char *name,
		 bool add, bool is_dir, double now, struct timespec when);

/* A directory renamed: the changes of every directory at or under the
 * key from ("a/") move to the same place under to ("b/"); those that were
 * under to before are dropped (the renamed tree replaces what was
 * there).  Entries past the window go first. */
void recent_rename_dir(struct fs_recent *r, const char *from, const char *to,
		       double now);

/* The change of name in the directory whose key is dkey noted less than
 * the window before now, or NULL; valid until r changes. */
const struct recent_ent *recent_find(struct fs_recent *r, const char *dkey,
				     const char *name, double now);

/* Forgets the change of name in the directory dkey, if any (another
 * mount removed a name made here: its HEAD says so). */
void recent_forget(struct fs_recent *r, const char *dkey, const char *name);

/* Calls fn(arg, e) for each change of the directory whose key is dkey
 * noted less than the window before now (entries past it go first), in
 * no order; fn must not change r. */
void recent_each(struct fs_recent *r, const char *dkey, double now,
		 void (*fn)(void *arg, const struct recent_ent *e), void *arg);

#endif
