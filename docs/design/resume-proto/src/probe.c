/*
 * probe.c - the application side of the demonstrations.
 *
 *   probe mkfile FILE SIZE          write the check pattern
 *   probe read FILE OFF LEN         one read(); verify the pattern
 *   probe write FILE OFF LEN        one write() of the pattern
 *   probe rename OLD NEW            one rename()
 *   probe loop FILE SECONDS [MS [FROM TO]]  every MS (10) ms: stat, open, pread 4 KiB
 *                                   (verified), pwrite a 64-byte record,
 *                                   close; report errors and the longest pause
 *                                   (overall, and for iterations starting in
 *                                   [FROM, TO] ms: the event window)
 * Each prints one line "RESULT ..." and exits 0 on success.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned char pat(long long i)
{
	return (unsigned char)((i * 7 + 3) & 0xff);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmd_mkfile(const char *f, long long size)
{
	static unsigned char buf[65536];
	int fd = open(f, O_CREAT | O_TRUNC | O_WRONLY, 0644);

	if (fd < 0)
		return perror(f), 1;
	for (long long off = 0; off < size; off += sizeof(buf)) {
		size_t n = (size_t)(size - off < (long long)sizeof(buf) ? size - off : (long long)sizeof(buf));

		for (size_t i = 0; i < n; i++)
			buf[i] = pat(off + i);
		if (write(fd, buf, n) != (ssize_t)n)
			return perror("write"), 1;
	}
	return close(fd) != 0;
}

static int cmd_read(const char *f, long long off, size_t len)
{
	unsigned char *buf = malloc(len);
	double t0 = now_ms();
	ssize_t n;
	int fd = open(f, O_RDONLY);

	if (fd < 0) {
		printf("RESULT read open error=%d (%s) ms=%.1f\n", errno, strerror(errno),
		       now_ms() - t0);
		return 1;
	}
	n = pread(fd, buf, len, off);
	if (n < 0) {
		printf("RESULT read error=%d (%s) ms=%.1f\n", errno, strerror(errno),
		       now_ms() - t0);
		return 1;
	}
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] != pat(off + i)) {
			printf("RESULT read WRONG DATA at %lld ms=%.1f\n", off + (long long)i,
			       now_ms() - t0);
			return 1;
		}
	printf("RESULT read ok bytes=%zd verified ms=%.1f\n", n, now_ms() - t0);
	close(fd);
	return n == (ssize_t)len ? 0 : 1;
}

static int cmd_write(const char *f, long long off, size_t len)
{
	unsigned char *buf = malloc(len);
	double t0 = now_ms();
	ssize_t n;
	int fd = open(f, O_WRONLY);

	for (size_t i = 0; i < len; i++)
		buf[i] = pat(off + i) ^ 0x5a;	/* distinguishable from the original */
	if (fd < 0) {
		printf("RESULT write open error=%d (%s)\n", errno, strerror(errno));
		return 1;
	}
	n = pwrite(fd, buf, len, off);
	if (n < 0) {
		printf("RESULT write error=%d (%s) ms=%.1f\n", errno, strerror(errno),
		       now_ms() - t0);
		return 1;
	}
	if (close(fd) != 0) {
		printf("RESULT write close error=%d (%s)\n", errno, strerror(errno));
		return 1;
	}
	/* read back through the mount */
	fd = open(f, O_RDONLY);
	memset(buf, 0, len);
	if (fd < 0 || pread(fd, buf, len, off) != (ssize_t)len) {
		printf("RESULT write readback failed errno=%d\n", errno);
		return 1;
	}
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (pat(off + i) ^ 0x5a)) {
			printf("RESULT write WRONG DATA at %lld\n", off + (long long)i);
			return 1;
		}
	printf("RESULT write ok bytes=%zd read back and verified ms=%.1f\n", n,
	       now_ms() - t0);
	return 0;
}

static int cmd_rename(const char *a, const char *b)
{
	double t0 = now_ms();

	if (rename(a, b) != 0) {
		printf("RESULT rename error=%d (%s) ms=%.1f\n", errno, strerror(errno),
		       now_ms() - t0);
		return 1;
	}
	printf("RESULT rename ok ms=%.1f\n", now_ms() - t0);
	return 0;
}

static int cmd_loop(const char *f, double secs, double every, double wfrom, double wto)
{
	double wmax = 0;
	unsigned char buf[4096];
	char rec[64];
	double start = now_ms(), worst = 0, worst_at = 0, next = start;
	long iters = 0, errors = 0, slow = 0;
	int first_err = 0;

	while (now_ms() - start < secs * 1000) {
		double t0 = now_ms(), dt;
		struct stat st;
		int fd, ok = 1;

		if (stat(f, &st) != 0) {
			ok = 0;
		} else if ((fd = open(f, O_RDWR)) < 0) {
			ok = 0;
		} else {
			if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
				ok = 0;
			for (size_t i = 0; ok && i < sizeof(buf); i++)
				if (buf[i] != pat(i)) {
					ok = 0;
					errno = EILSEQ;
				}
			snprintf(rec, sizeof(rec), "%-63ld", iters);
			if (ok && pwrite(fd, rec, 64, 4096 + (iters % 1024) * 64) != 64)
				ok = 0;
			if (close(fd) != 0 && ok)
				ok = 0;
		}
		if (!ok) {
			if (!errors)
				first_err = errno;
			errors++;
		}
		dt = now_ms() - t0;
		if (t0 - start >= wfrom && t0 - start <= wto && dt > wmax)
			wmax = dt;
		if (dt > worst) {
			worst = dt;
			worst_at = t0 - start;
		}
		if (dt > 50) {
			slow++;
			fprintf(stderr, "probe: iteration %ld took %.1f ms at t=%.0f ms%s\n",
				iters, dt, t0 - start, ok ? "" : " (error)");
		}
		iters++;
		next += every;
		if (next < now_ms())
			next = now_ms();
		else
			usleep((useconds_t)((next - now_ms()) * 1000));
	}
	/* every record written must be there */
	{
		int fd = open(f, O_RDONLY), bad = 0;
		long from = iters > 1024 ? iters - 1024 : 0;

		for (long i = from; fd >= 0 && i < iters; i++) {
			char want[64], got[64];

			snprintf(want, sizeof(want), "%-63ld", i);
			if (pread(fd, got, 64, 4096 + (i % 1024) * 64) != 64 ||
			    memcmp(got, want, 63) != 0)
				bad++;
		}
		if (fd >= 0)
			close(fd);
		printf("RESULT loop iterations=%ld errors=%ld%s%s slow(>50ms)=%ld "
		       "max_pause_ms=%.1f at_ms=%.0f event_window_max_ms=%.1f records_bad=%d\n",
		       iters, errors, errors ? " first_error=" : "",
		       errors ? strerror(first_err) : "", slow, worst, worst_at, wmax, bad);
		return errors || bad;
	}
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "mkfile"))
		return cmd_mkfile(argv[2], atoll(argv[3]));
	if (argc >= 5 && !strcmp(argv[1], "read"))
		return cmd_read(argv[2], atoll(argv[3]), atol(argv[4]));
	if (argc >= 5 && !strcmp(argv[1], "write"))
		return cmd_write(argv[2], atoll(argv[3]), atol(argv[4]));
	if (argc >= 4 && !strcmp(argv[1], "rename"))
		return cmd_rename(argv[2], argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "loop"))
		return cmd_loop(argv[2], atof(argv[3]), argc > 4 ? atof(argv[4]) : 10,
				argc > 6 ? atof(argv[5]) : 0, argc > 6 ? atof(argv[6]) : 1e12);
	fprintf(stderr, "usage: see probe.c\n");
	return 2;
}
