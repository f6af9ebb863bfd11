/* Unit tests of the keeper's INIT rule (mount/kslot.h): the slot reads
 * the kernel's INIT from the fuse fd itself, answers KOP_PEEK with it,
 * writes the first INIT reply a server hands it and that one only (a dead
 * server's queued one included), and resumes a server that died before
 * INIT was answered.  The kernel is the other end of a SOCK_SEQPACKET pair
 * standing in for /dev/fuse (a read takes one request, a write is one
 * reply); the server is the test, over the slot's socket, with a child
 * that only waits as its pid. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <linux/fuse.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "mount/keeper.h"
#include "mount/kslot.h"

#define UNIQUE 2

struct fixture {
	struct objfs_log *log;
	struct objfs_kslot s;
	int kernel;                     /* the kernel's end of the fuse fd */
	int server;                     /* the server's end of the socket */
	char *argv[3];
};

/* The kernel's INIT request into k. */
static size_t init_request(struct objfs_kinit *k)
{
	struct fuse_in_header in = {
		.len = sizeof(in) + sizeof(struct fuse_init_in),
		.opcode = FUSE_INIT, .unique = UNIQUE,
	};
	struct fuse_init_in ii = { .major = 7, .minor = 45, .max_readahead = 131072 };

	memcpy(k->req, &in, sizeof(in));
	memcpy(k->req + sizeof(in), &ii, sizeof(ii));
	k->req_len = in.len;
	return in.len;
}

/* A server's reply (libfuse's, as the writev hook keeps it) into k. */
static void init_reply(struct objfs_kinit *k, uint64_t unique, uint32_t max_write)
{
	struct fuse_out_header out = {
		.len = sizeof(out) + sizeof(struct fuse_init_out), .unique = unique,
	};
	struct fuse_init_out io = { .major = 7, .minor = 31, .max_write = max_write };

	memcpy(k->rep, &out, sizeof(out));
	memcpy(k->rep + sizeof(out), &io, sizeof(io));
	k->rep_len = out.len;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct objfs_kinit k;
	int kp[2], sp[2];
	pid_t pid;

	assert_non_null(f);
	f->log = objfs_log_create(STDERR_FILENO, OBJFS_LOG_ERROR);
	assert_non_null(f->log);
	objfs_kslot_init(&f->s);
	/* a successor: a process that only waits, killed by the close */
	f->argv[0] = (char *)"sleep";
	f->argv[1] = (char *)"60";
	f->s.name = "t";
	f->s.exe = "/bin/sleep";
	f->s.argv = f->argv;
	f->s.log = f->log;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, kp), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	/* what mount(2) queued */
	init_request(&k);
	assert_int_equal(write(kp[1], k.req, k.req_len), (ssize_t)k.req_len);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	f->s.server = pid;
	f->s.ssock = sp[0];
	f->server = sp[1];
	f->kernel = kp[1];
	/* the first server hands the fd over, INIT unread */
	{
		struct objfs_kmsg m = { .op = KOP_PUT };

		assert_int_equal(objfs_kmsg_send(f->server, &m, kp[0]), 0);
	}
	close(kp[0]);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	pid_t server = f->s.server, next = f->s.next;

	objfs_kslot_close(&f->s, SIGKILL);
	if (server != 0)
		waitpid(server, NULL, 0);
	if (next != 0)
		waitpid(next, NULL, 0);
	close(f->kernel);
	close(f->server);
	objfs_log_destroy(f->log);
	free(f);
	return 0;
}

/* Runs the slot's poll until nothing comes for 50 ms. */
static void pump(struct fixture *f)
{
	for (;;) {
		struct pollfd pf[KSLOT_POLLFDS];
		int n = objfs_kslot_pollfds(&f->s, pf, 0);

		if (poll(pf, (nfds_t)n, 50) <= 0)
			return;
		objfs_kslot_poll(&f->s, pf);
	}
}

static void send_op(struct fixture *f, uint32_t op, const struct objfs_kinit *k)
{
	struct objfs_kmsg m;

	memset(&m, 0, sizeof(m));
	m.op = op;
	if (k != NULL) {
		m.len = sizeof(*k);
		memcpy(m.blob, k, sizeof(*k));
	}
	assert_int_equal(objfs_kmsg_send(f->server, &m, -1), 0);
}

/* The keeper's answer: KOP_INIT, its exchange into k; the status. */
static int answer(struct fixture *f, struct objfs_kinit *k)
{
	struct pollfd p = { .fd = f->server, .events = POLLIN };
	struct objfs_kmsg m;
	int fd;

	assert_int_equal(poll(&p, 1, 2000), 1);
	assert_int_equal(objfs_kmsg_recv(f->server, &m, &fd), 0);
	assert_int_equal(fd, -1);
	assert_int_equal(m.op, KOP_INIT);
	assert_int_equal(m.len, sizeof(*k));
	memcpy(k, m.blob, sizeof(*k));
	return m.status;
}

/* What the kernel got: one reply into buf (its length), or 0. */
static ssize_t kernel_got(struct fixture *f, uint8_t *buf, size_t cap)
{
	ssize_t n = recv(f->kernel, buf, cap, MSG_DONTWAIT);

	return n < 0 && errno == EAGAIN ? 0 : n;
}

static void test_init_answered_once(void **state)
{
	struct fixture *f = *state;
	struct objfs_kinit want, k, r1, r2, bad;
	uint8_t got[OBJFS_KINIT_HALF];

	init_request(&want);
	pump(f);
	assert_true(f->s.have_init);
	assert_false(f->s.init_answered);
	/* a server's KOP_PEEK: the request as the kernel sent it, unanswered */
	send_op(f, KOP_PEEK, NULL);
	pump(f);
	assert_int_equal(answer(f, &k), 0);
	assert_int_equal(k.req_len, want.req_len);
	assert_memory_equal(k.req, want.req, want.req_len);
	assert_int_equal(k.rep_len, 0);
	/* a reply for another unique is refused, and not written */
	bad = k;
	init_reply(&bad, UNIQUE + 1, 1 << 20);
	send_op(f, KOP_INIT, &bad);
	pump(f);
	assert_int_equal(answer(f, &k), EPROTO);
	assert_int_equal(kernel_got(f, got, sizeof(got)), 0);
	assert_false(f->s.init_answered);
	/* the first reply reaches the kernel */
	r1 = k;
	init_reply(&r1, UNIQUE, 1 << 20);
	send_op(f, KOP_INIT, &r1);
	pump(f);
	assert_int_equal(answer(f, &k), 0);
	assert_int_equal(k.rep_len, r1.rep_len);
	assert_memory_equal(k.rep, r1.rep, r1.rep_len);
	assert_int_equal(kernel_got(f, got, sizeof(got)), (ssize_t)r1.rep_len);
	assert_memory_equal(got, r1.rep, r1.rep_len);
	assert_true(f->s.init_answered);
	/* a second one (a successor's) is not: it gets the first back */
	r2 = r1;
	init_reply(&r2, UNIQUE, 1 << 17);
	send_op(f, KOP_INIT, &r2);
	pump(f);
	assert_int_equal(answer(f, &k), 0);
	assert_memory_equal(k.rep, r1.rep, r1.rep_len);
	assert_int_equal(kernel_got(f, got, sizeof(got)), 0);
	/* and a KOP_PEEK now gets the exchange */
	send_op(f, KOP_PEEK, NULL);
	pump(f);
	assert_int_equal(answer(f, &k), 0);
	assert_int_equal(k.rep_len, r1.rep_len);
}

/* The server killed before it handed a reply over: the keeper has the
 * INIT (it read it), so a successor is started. */
static void test_death_before_reply_resumes(void **state)
{
	struct fixture *f = *state;
	pid_t pid = f->s.server;
	int st;

	pump(f);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(objfs_kslot_child(&f->s, pid, st));
	assert_false(f->s.events & KSLOT_EV_ENDED);
	assert_int_equal(f->s.server, 0);
	assert_true(f->s.next > 0);
	assert_true(f->s.have_init);
	assert_false(f->s.init_answered);
	assert_true(f->s.fuse_fd >= 0);
}

/* The server handed its reply over and died before the keeper read it:
 * the queued KOP_INIT is written, once, before the death is handled. */
static void test_dead_servers_reply_written(void **state)
{
	struct fixture *f = *state;
	struct objfs_kinit r;
	uint8_t got[OBJFS_KINIT_HALF];
	pid_t pid = f->s.server;
	int st;

	pump(f);
	init_request(&r);
	init_reply(&r, UNIQUE, 1 << 20);
	send_op(f, KOP_INIT, &r);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	/* reaped before the message is polled */
	assert_true(objfs_kslot_child(&f->s, pid, st));
	assert_true(f->s.init_answered);
	assert_int_equal(kernel_got(f, got, sizeof(got)), (ssize_t)r.rep_len);
	assert_memory_equal(got, r.rep, r.rep_len);
	assert_int_equal(kernel_got(f, got, sizeof(got)), 0);
	assert_true(f->s.next > 0);
}

/* A keeper started by a server whose keeper died (KOP_ADOPT): the server
 * is not its child, its death comes through the pidfd, and a successor
 * starts as for a reaped server. */
static void test_adopted_server_death_resumes(void **state)
{
	struct fixture *f = *state;
	struct objfs_kslot a;
	struct objfs_kmsg init;
	struct objfs_kinit *k = (struct objfs_kinit *)(void *)init.blob;
	int sp[2], fp[2], pidfd, i;
	pid_t pid;

	(void)f;
	objfs_kslot_init(&a);
	a.name = "adopted";
	a.exe = "/bin/sleep";
	a.argv = f->argv;
	a.log = f->log;
	memset(&init, 0, sizeof(init));
	init.op = KOP_ADOPT;
	init.len = sizeof(*k);
	init_request(k);
	init_reply(k, UNIQUE, 1 << 20);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pidfd >= 0);
	assert_int_equal(objfs_kslot_adopt_server(&a, sp[0], fp[0], &init, pid,
						  pidfd), 0);
	assert_true(a.have_init && a.init_answered && a.ready);
	assert_int_equal(a.server, pid);
	assert_int_equal(a.next, 0);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	for (i = 0; i < 20 && a.next == 0; i++) {
		struct pollfd pf[KSLOT_POLLFDS];
		int n = objfs_kslot_pollfds(&a, pf, 0);

		if (poll(pf, (nfds_t)n, 50) > 0)
			objfs_kslot_poll(&a, pf);
	}
	assert_int_equal(a.server, 0);
	assert_true(a.next > 0);
	assert_false(a.events & KSLOT_EV_ENDED);
	pid = a.next;
	objfs_kslot_close(&a, 0);
	waitpid(pid, NULL, 0);
	close(sp[1]);
	close(fp[1]);
}

static void put_file(const char *dir, const char *name, const char *v)
{
	char path[512];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(v, fp);
	fclose(fp);
}

/* Linux 6.14's timeouts: default capped by max; missing files are 0. */
static void test_request_timeout(void **state)
{
	char dir[] = "/tmp/objfs-test-sysctl.XXXXXX";

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(objfs_fuse_request_timeout(dir), 0);
	put_file(dir, "default_request_timeout", "0\n");
	put_file(dir, "max_request_timeout", "0\n");
	assert_int_equal(objfs_fuse_request_timeout(dir), 0);
	put_file(dir, "max_request_timeout", "10\n");
	assert_int_equal(objfs_fuse_request_timeout(dir), 10);
	put_file(dir, "default_request_timeout", "30\n");
	assert_int_equal(objfs_fuse_request_timeout(dir), 10);
	put_file(dir, "default_request_timeout", "5\n");
	assert_int_equal(objfs_fuse_request_timeout(dir), 5);
	put_file(dir, "max_request_timeout", "0\n");
	assert_int_equal(objfs_fuse_request_timeout(dir), 5);
	assert_true(OBJFS_TAKEOVER_MAX_S > 5);
	{
		char path[512];

		snprintf(path, sizeof(path), "%s/default_request_timeout", dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/max_request_timeout", dir);
		unlink(path);
		rmdir(dir);
	}
}

/* The default state directory: the same for the same source and mount
 * point, another for another. */
static void test_default_state_dir(void **state)
{
	char a[256], b[256], c[256], d[256];

	(void)state;
	assert_int_equal(objfs_default_state_dir("s3://b/p", "/mnt/x", "/sp", a,
						 sizeof(a)), 0);
	assert_int_equal(objfs_default_state_dir("s3://b/p", "/mnt/x", "/sp", b,
						 sizeof(b)), 0);
	assert_int_equal(objfs_default_state_dir("s3://b/p", "/mnt/y", "/sp", c,
						 sizeof(c)), 0);
	assert_int_equal(objfs_default_state_dir("s3://b/q", "/mnt/x", "/sp", d,
						 sizeof(d)), 0);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	assert_string_not_equal(a, d);
	assert_int_equal(strncmp(a, "/sp/objfs-state.", 16), 0);
	assert_int_equal(strlen(a), 16 + 16);
	assert_int_equal(objfs_default_state_dir("s3://b/p", "/mnt/x", "/sp", a, 20),
			 ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_answered_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_death_before_reply_resumes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dead_servers_reply_written, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_adopted_server_death_resumes, setup,
						teardown),
		cmocka_unit_test(test_request_timeout),
		cmocka_unit_test(test_default_state_dir),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
