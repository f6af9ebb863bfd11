/* hctl.c - ask the holder to mount, list its slots, or release one. */
#define _GNU_SOURCE
#include "hproto.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct hmsg m;
	int s, fd, err;

	if (argc < 3) {
		fprintf(stderr, "usage: hctl SOCK mount NAME MNT [OPTS] | list | release NAME\n");
		return 2;
	}
	s = hsock_connect(argv[1]);
	if (s < 0) {
		fprintf(stderr, "hctl: connect %s: %s\n", argv[1], strerror(-s));
		return 1;
	}
	if (strcmp(argv[2], "mount") == 0 && argc >= 5) {
		hmsg_init(&m, H_MOUNT, argv[3]);
		snprintf(m.arg, sizeof(m.arg), "%s", argv[4]);
		if (argc > 5)
			snprintf((char *)m.blob, sizeof(m.blob), "%s", argv[5]);
	} else if (strcmp(argv[2], "release") == 0 && argc >= 4) {
		hmsg_init(&m, H_RELEASE, argv[3]);
	} else if (strcmp(argv[2], "list") == 0) {
		hmsg_init(&m, H_LIST, NULL);
	} else {
		fprintf(stderr, "hctl: bad command\n");
		return 2;
	}
	if (hmsg_send(s, &m, -1) != 0)
		return 1;
	for (;;) {
		err = hmsg_recv(s, &m, &fd);
		if (err != 0) {
			fprintf(stderr, "hctl: %s\n", strerror(-err));
			return 1;
		}
		if (fd >= 0)
			close(fd);
		if (m.op == H_INFO) {
			printf("%s %s\n", m.name, m.arg);
			continue;
		}
		if (m.op == H_ERR) {
			fprintf(stderr, "hctl: %s\n", strerror(m.status));
			return 1;
		}
		return 0;
	}
}
