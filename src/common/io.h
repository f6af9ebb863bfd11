/*
 * io.h - small I/O helpers shared by the backend files: whole reads and
 * writes that retry EINTR and short transfers, kernel randomness and the
 * monotonic clock.
 * Each returns 0 or a positive errno.
 */
#ifndef OBJFS_COMMON_IO_H
#define OBJFS_COMMON_IO_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Reads exactly n bytes at off; end of file before n bytes is EIO. */
int objfs_pread_all(int fd, void *buf, size_t n, uint64_t off);
/* Writes exactly n bytes at the file position. */
int objfs_write_all(int fd, const void *buf, size_t n);
/* Fills buf with n bytes from getrandom(2). */
int objfs_random_bytes(void *buf, size_t n);
/* CLOCK_MONOTONIC in milliseconds. */
long long objfs_now_ms(void);
/* *ts = clock clk's now plus ms: the deadline of a pthread_cond_timedwait
 * on a condition variable of that clock. */
void objfs_deadline_ms(clockid_t clk, long long ms, struct timespec *ts);

/* Reads the small file at path (a /proc or /sys entry) into buf, NUL
 * terminated: the bytes read (at most cap - 1), or 0 when it is missing,
 * empty or unreadable. */
size_t objfs_read_small(const char *path, char *buf, size_t cap);
/* Bytes process pid has read and written (rchar + wchar of /proc/PID/io,
 * sockets included: a sign of progress), or 0 when unknown. */
unsigned long long objfs_proc_io(int pid);

#endif
