/* io.c - whole reads, whole writes and randomness (see io.h). */
#include "config.h"

#include <errno.h>
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
