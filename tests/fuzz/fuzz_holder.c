/*
 * fuzz_holder.c - the messages of objfs-holder's socket (mount/holder.h):
 * what a peer sends (objfs-csi, a new holder taking over, an old one
 * handing over) as objfs_kpkt_recv() takes it off a real SOCK_SEQPACKET
 * socket pair, then decoded as holder.c and holder_client.c decode it
 * (objfs_hmsg_get_spec, objfs_hmsg_mount).
 *
 * Input: a first byte, then the message.  First byte even: the message is
 * padded with zeros (or cut) to the size of struct objfs_hmsg, so the
 * fields are what is fuzzed; odd: it is sent as it is, so the length is.
 *
 * Properties: a message is taken iff it has exactly the size of struct
 * objfs_hmsg; decoding answers 0, EPROTO or EINVAL; the strings of a spec
 * that decodes lie inside spec_len, each NUL-terminated there; a mount
 * that decodes has a name, an absolute program and mount point and a
 * source, and the same strings set into a new message (objfs_hmsg_init,
 * objfs_hmsg_set_spec, as objfs-csi sends them) decode to the same mount
 * with a spec no longer than the one received.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mount/holder.h"
#include "mount/kslot.h"
#include "fuzz.h"

static void spec_inside(const struct objfs_hmsg *m, const char *const str[HSPEC_N])
{
	int i;

	FUZZ_CHECK(m->spec_len <= sizeof(m->spec));
	for (i = 0; i < HSPEC_N; i++) {
		size_t off = (size_t)(str[i] - m->spec);

		FUZZ_CHECK(str[i] >= m->spec && off < m->spec_len);
		FUZZ_CHECK(memchr(str[i], '\0', m->spec_len - off) != NULL);
	}
}

static void decode(const struct objfs_hmsg *m)
{
	struct objfs_hmsg *n;
	const char *str[HSPEC_N], *str2[HSPEC_N];
	int rc, i;

	rc = objfs_hmsg_get_spec(m, str);
	FUZZ_CHECK(rc == 0 || rc == EPROTO);
	if (rc == 0)
		spec_inside(m, str);
	rc = objfs_hmsg_mount(m, str);
	FUZZ_CHECK(rc == 0 || rc == EPROTO || rc == EINVAL);
	if (rc != 0)
		return;
	spec_inside(m, str);
	FUZZ_CHECK(memchr(m->name, '\0', sizeof(m->name)) != NULL && m->name[0] != '\0');
	FUZZ_CHECK(str[HSPEC_PROGRAM][0] == '/' && str[HSPEC_MOUNTPOINT][0] == '/');
	FUZZ_CHECK(str[HSPEC_SOURCE][0] != '\0');
	/* as objfs-csi would send the same mount */
	n = calloc(1, sizeof(*n));
	FUZZ_CHECK(n != NULL);
	objfs_hmsg_init(n, m->op, m->name);
	FUZZ_CHECK(objfs_hmsg_set_spec(n, str) == 0);
	FUZZ_CHECK(n->spec_len <= m->spec_len);
	FUZZ_CHECK(objfs_hmsg_mount(n, str2) == 0);
	FUZZ_CHECK(strcmp(n->name, m->name) == 0);
	for (i = 0; i < HSPEC_N; i++)
		FUZZ_CHECK(strcmp(str[i], str2[i]) == 0);
	free(n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct objfs_hmsg *m;
	uint8_t *msg;
	size_t len;
	int sv[2], fds[3], rc, i;

	if (size == 0)
		return 0;
	len = data[0] & 1 ? size - 1 : sizeof(*m);
	if (len > 2 * sizeof(*m))
		return 0;       /* beyond what a socket buffer takes at once */
	msg = calloc(1, len > 0 ? len : 1);
	m = malloc(sizeof(*m));
	FUZZ_CHECK(msg != NULL && m != NULL);
	memcpy(msg, data + 1, size - 1 < len ? size - 1 : len);
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	rc = objfs_kpkt_send(sv[0], msg, len, NULL, 0);
	FUZZ_CHECK(rc == 0);
	memset(m, 0xa5, sizeof(*m));
	rc = objfs_kpkt_recv(sv[1], m, sizeof(*m), fds, 3);
	for (i = 0; i < 3; i++)
		FUZZ_CHECK(fds[i] == -1);       /* none sent, none made up */
	FUZZ_CHECK((rc == 0) == (len == sizeof(*m)));
	if (rc == 0) {
		FUZZ_CHECK(memcmp(m, msg, sizeof(*m)) == 0);
		decode(m);
	}
	close(sv[0]);
	close(sv[1]);
	free(msg);
	free(m);
	return 0;
}
