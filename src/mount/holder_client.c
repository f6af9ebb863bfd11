/*
 * holder_client.c - the holder's messages and its client side (see
 * holder.h): one connection per request, so callers in many threads need
 * no lock, and a holder replaced between two requests is simply the one
 * answering the next.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/io.h"
#include "mount/holder.h"

void objfs_hmsg_init(struct objfs_hmsg *m, uint32_t op, const char *name)
{
	memset(m, 0, offsetof(struct objfs_hmsg, spec));
	m->op = op;
	if (name != NULL)
		snprintf(m->name, sizeof(m->name), "%s", name);
}

int objfs_hmsg_set_spec(struct objfs_hmsg *m, const char *const str[HSPEC_N])
{
	size_t off = 0;
	int i;

	for (i = 0; i < HSPEC_N; i++) {
		const char *s = str[i] != NULL ? str[i] : "";
		size_t l = strlen(s) + 1;

		if (off + l > sizeof(m->spec))
			return ENAMETOOLONG;
		memcpy(m->spec + off, s, l);
		off += l;
	}
	m->spec_len = (uint32_t)off;
	return 0;
}

int objfs_hmsg_get_spec(const struct objfs_hmsg *m, const char *str[HSPEC_N])
{
	size_t off = 0;
	int i;

	if (m->spec_len > sizeof(m->spec))
		return EPROTO;
	for (i = 0; i < HSPEC_N; i++) {
		const char *nul;

		if (off >= m->spec_len)
			return EPROTO;
		nul = memchr(m->spec + off, '\0', m->spec_len - off);
		if (nul == NULL)
			return EPROTO;
		str[i] = m->spec + off;
		off = (size_t)(nul - m->spec) + 1;
	}
	return 0;
}

int objfs_hmsg_mount(const struct objfs_hmsg *m, const char *str[HSPEC_N])
{
	int err;

	if (memchr(m->name, '\0', sizeof(m->name)) == NULL)
		return EPROTO;
	err = objfs_hmsg_get_spec(m, str);
	if (err != 0)
		return err;
	if (m->name[0] == '\0' || str[HSPEC_PROGRAM][0] != '/' ||
	    str[HSPEC_MOUNTPOINT][0] != '/' || str[HSPEC_SOURCE][0] == '\0')
		return EINVAL;
	return 0;
}

static int connect_to(const char *path, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s;

	*out = -1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return errno;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int err = errno;

		close(s);
		return err;
	}
	*out = s;
	return 0;
}

/* One request with the fds of out (nout, those >= 0) attached, one
 * answer: as objfs_holder_call(). */
static int call_fds(const char *path, const struct objfs_hmsg *req,
		    const int *out, int nout, struct objfs_hmsg *rep,
		    unsigned timeout_ms)
{
	long long deadline = objfs_now_ms() + timeout_ms;
	int s, err, fds[3];

	err = connect_to(path, &s);
	if (err != 0)
		return err;
	err = objfs_kpkt_send(s, req, sizeof(*req), out, nout);
	while (err == 0) {
		struct pollfd pf = { .fd = s, .events = POLLIN };
		long long left = deadline - objfs_now_ms();
		int r, i;

		if (left <= 0) {
			err = ETIMEDOUT;
			break;
		}
		r = poll(&pf, 1, left > 1000 ? 1000 : (int)left);
		if (r < 0 && errno != EINTR)
			err = errno;
		if (r <= 0)
			continue;
		err = objfs_kpkt_recv(s, rep, sizeof(*rep), fds, 3);
		for (i = 0; i < 3; i++) {
			if (fds[i] >= 0)
				close(fds[i]);
		}
		if (err == 0 && rep->op != HOP_OK && rep->op != HOP_ERR)
			err = EPROTO;
		break;
	}
	close(s);
	return err;
}

int objfs_holder_call(const char *path, const struct objfs_hmsg *req, int fd,
		      struct objfs_hmsg *rep, unsigned timeout_ms)
{
	return call_fds(path, req, &fd, 1, rep, timeout_ms);
}

int objfs_holder_adopt(const char *path, const char *name, uint64_t serial,
		       const struct objfs_kmsg *init, int fuse_fd,
		       int slot_sock, int creds_fd, unsigned timeout_ms)
{
	struct objfs_hmsg *m = calloc(2, sizeof(*m));
	int fds[3] = { fuse_fd, slot_sock, creds_fd }, err;

	if (m == NULL)
		return ENOMEM;
	objfs_hmsg_init(m, HOP_ADOPT, name);
	m->serial = serial;
	m->init = *init;
	m->arg = creds_fd >= 0 ? 1 : 0;
	err = call_fds(path, m, fds, 3, &m[1], timeout_ms);
	if (err == ENOENT || err == ECONNREFUSED || err == ECONNRESET ||
	    err == ETIMEDOUT)
		err = EAGAIN;           /* no holder (yet), or a dying one */
	else if (err == 0 && m[1].op != HOP_OK)
		err = m[1].status == EAGAIN ? EAGAIN :
		      m[1].status != 0 ? m[1].status : EPROTO;
	free(m);
	return err;
}

int objfs_holder_list(const char *path, FILE *out)
{
	struct objfs_hmsg *m = calloc(1, sizeof(*m));
	int s, err, fds[3];

	if (m == NULL)
		return ENOMEM;
	err = connect_to(path, &s);
	if (err != 0)
		goto out;
	objfs_hmsg_init(m, HOP_LIST, NULL);
	err = objfs_kpkt_send(s, m, sizeof(*m), NULL, 0);
	while (err == 0) {
		const char *str[HSPEC_N];

		err = objfs_kpkt_recv(s, m, sizeof(*m), fds, 3);
		for (int i = 0; i < 3; i++) {
			if (fds[i] >= 0)
				close(fds[i]);
		}
		if (err != 0 || m->op == HOP_END)
			break;
		if (m->op == HOP_ERR) {
			err = m->status ? m->status : EPROTO;
			break;
		}
		m->name[sizeof(m->name) - 1] = '\0';
		fprintf(out, "%s %llu %lld %d %s\n", m->name,
			(unsigned long long)m->serial, (long long)m->pid, (int)m->arg,
			objfs_hmsg_get_spec(m, str) == 0 ? str[HSPEC_MOUNTPOINT] : "?");
	}
	close(s);
out:
	free(m);
	return err;
}

int objfs_holder_ping(const char *path, unsigned timeout_ms, int *oom_score_adj)
{
	static const char key[] = "oom_score_adj=";
	struct objfs_hmsg *m = calloc(2, sizeof(*m));
	const char *v;
	char *end;
	long n;
	int err;

	*oom_score_adj = OBJFS_HOLDER_OOM_UNKNOWN;
	if (m == NULL)
		return ENOMEM;
	objfs_hmsg_init(m, HOP_PING, NULL);
	err = objfs_holder_call(path, m, -1, &m[1], timeout_ms);
	if (err == 0 && m[1].op != HOP_OK)
		err = m[1].status ? m[1].status : EPROTO;
	if (err != 0 || m[1].spec_len == 0 || m[1].spec_len > sizeof(m[1].spec) ||
	    m[1].spec[m[1].spec_len - 1] != '\0' ||
	    strncmp(m[1].spec, key, sizeof(key) - 1) != 0)
		goto out;
	v = m[1].spec + sizeof(key) - 1;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno == 0 && end != v && *end == '\0' && n >= -1000 && n <= 1000)
		*oom_score_adj = (int)n;
out:
	free(m);
	return err;
}

int objfs_holder_check(const char *path, const char *ready_file)
{
	struct objfs_hmsg *req = calloc(2, sizeof(*req));
	char id[OBJFS_HNAME_MAX] = "";
	int err = 0, fd;
	ssize_t n;

	if (req == NULL)
		return ENOMEM;
	fd = open(ready_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		goto out;
	}
	n = read(fd, id, sizeof(id) - 1);
	close(fd);
	if (n <= 0) {
		err = ENOENT;
		goto out;
	}
	id[n] = '\0';
	id[strcspn(id, "\n")] = '\0';
	objfs_hmsg_init(req, HOP_PING, NULL);
	err = objfs_holder_call(path, req, -1, &req[1], 5000);
	if (err == 0 && req[1].op != HOP_OK)
		err = req[1].status ? req[1].status : EPROTO;
	if (err == 0 && (strcmp(req[1].name, id) != 0 || req[1].arg != 1))
		err = ESTALE;
out:
	free(req);
	return err;
}
