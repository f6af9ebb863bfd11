/* io.c - whole reads, whole writes and randomness (see io.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/io.h"

int objfs_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	ssize_t r;

	while (done < n) {
		r = pread(fd, (char *)buf + done, n - done,
			  (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno;
		if (r == 0)
			return EIO;
		done += (size_t)r;
	}
	return 0;
}

int objfs_write_all(int fd, const void *buf, size_t n)
{
	size_t done = 0;
	ssize_t r;

	while (done < n) {
		r = write(fd, (const char *)buf + done, n - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno;
		done += (size_t)r;
	}
	return 0;
}

int objfs_random_bytes(void *buf, size_t n)
{
	size_t done = 0;
	ssize_t r;

	while (done < n) {
		r = getrandom((char *)buf + done, n - done, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno;
		done += (size_t)r;
	}
	return 0;
}

long long objfs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void objfs_deadline_ms(clockid_t clk, long long ms, struct timespec *ts)
{
	clock_gettime(clk, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

size_t objfs_read_small(const char *path, char *buf, size_t cap)
{
	ssize_t n;
	int fd;

	if (cap == 0)
		return 0;
	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (size_t)n;
}

unsigned long long objfs_proc_io(int pid)
{
	char path[64], buf[512];
	unsigned long long r = 0, w = 0;
	const char *p;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/io", pid);
	if (objfs_read_small(path, buf, sizeof(buf)) == 0)
		return 0;
	if ((p = strstr(buf, "rchar: ")) != NULL)
		r = strtoull(p + 7, NULL, 10);
	if ((p = strstr(buf, "wchar: ")) != NULL)
		w = strtoull(p + 7, NULL, 10);
	return r + w;
}
