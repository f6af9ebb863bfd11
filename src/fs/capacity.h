/*
 * capacity.h - capacity.c's state and functions: the charges of files
 * against the volume's capacity, the volume record (re-read when stale),
 * the usage scan.  Embedded in the filesystem as fs->cap; included by
 * fs_int.h.
 */
#ifndef OBJFS_FS_CAPACITY_H
#define OBJFS_FS_CAPACITY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct objfs_fs;
struct inode;

/* The volume's capacity and usage (fs->lock unless said). */
struct fs_capacity {
	uint64_t capacity;              /* 0: unlimited */
	int64_t used;
	int64_t objects;
	int64_t scan_delta;
	int64_t scan_obj_delta;
	bool scan_done;
	time_t usage_time;              /* when the listing behind `used` ran
					   (the usage document), 0: none yet */
	double volrec_time;
	pthread_cond_t scan_cv;
	pthread_t scan_thread;
	bool scan_started;
	pthread_mutex_t volrec_mu;      /* one volume record refresh at a time */
	bool volrec_busy;               /* fs->lock: one on the pool */
};

/* Sets in's charge to size bytes whatever the capacity (a shrink or a
 * delete).  fs->lock held. */
void charge_force(struct objfs_fs *fs, struct inode *in, uint64_t size);
/* Charges in for size bytes: ENOSPC when that passes the capacity (after
 * re-reading a stale volume record), else 0.  Waits for the first usage
 * scan when the volume has a capacity.  Takes fs->lock. */
int charge(struct objfs_fs *fs, struct inode *in, uint64_t size);
/* Re-reads the volume record when older than max_age seconds.  Takes
 * fs->cap.volrec_mu and fs->lock (store I/O between). */
void volrec_refresh(struct objfs_fs *fs, double max_age);
/* The same for volrec_ttl on the pool, one at a time, returning at once
 * (statfs never waits for the store).  Takes fs->lock. */
void volrec_refresh_async(struct objfs_fs *fs);
/* The usage thread (arg: the fs): reads the volume's usage document, or
 * lists the volume when it is missing or stale, at start and every
 * usage_refresh seconds until fs->stopping; then writes this mount's
 * view back when it changed the usage. */
void *scan_main(void *arg);

#endif
