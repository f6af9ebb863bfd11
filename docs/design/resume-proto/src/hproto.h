/*
 * hproto.h - wire protocol between the fd holder and FUSE servers.
 *
 * One SOCK_SEQPACKET unix socket; every message is one struct hmsg (fixed
 * size, so neither side allocates), optionally carrying one fd with
 * SCM_RIGHTS.  The holder keeps, per named slot, the /dev/fuse fd of one
 * mount plus an opaque blob the server asked it to keep (the negotiated
 * INIT request and reply): both live exactly as long as the connection.
 *
 *   server -> holder                       holder -> server
 *   H_MOUNT  name, arg="mnt\0opts"         H_OK / H_ERR   (holder mounts)
 *   H_PUT    name, fd, [blob]              H_OK           (server mounted)
 *   H_GET    name                          H_FD fd+blob   (maybe deferred:
 *                                          the current owner is sent H_STOP
 *                                          first and the answer waits until
 *                                          the owner's connection closes)
 *   H_SETBLOB name, blob                   H_OK
 *   H_RELEASE name                         H_OK           (holder closes fd)
 *   H_LIST                                 H_INFO..., H_END
 *   H_DUMP  (a new holder taking over)     H_SLOT fd+blob..., H_END; exit
 */
#ifndef HPROTO_H
#define HPROTO_H

#include <stddef.h>
#include <stdint.h>

enum hop {
	H_OK = 1, H_ERR, H_MOUNT, H_PUT, H_GET, H_FD, H_SETBLOB, H_RELEASE,
	H_LIST, H_INFO, H_END, H_STOP, H_DUMP, H_SLOT,
};

#define H_NAME_MAX 64
#define H_ARG_MAX 512
#define H_BLOB_MAX 1024

struct hmsg {
	uint32_t op;
	int32_t status;			/* 0 or a positive errno */
	char name[H_NAME_MAX];
	char arg[H_ARG_MAX];
	uint32_t bloblen;
	uint8_t blob[H_BLOB_MAX];
};

/* Send m, with fd attached when fd >= 0.  Returns 0 or -errno. */
int hmsg_send(int sock, const struct hmsg *m, int fd);
/* Receive one message; *fd gets an attached fd or -1.  Returns 0, -errno,
 * or -ECONNRESET on EOF. */
int hmsg_recv(int sock, struct hmsg *m, int *fd);
/* Connect a SOCK_SEQPACKET socket to path.  Returns fd or -errno. */
int hsock_connect(const char *path);
/* Build a request: m is zeroed, op and name set. */
void hmsg_init(struct hmsg *m, uint32_t op, const char *name);

#endif
