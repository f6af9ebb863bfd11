/*
 * kslot.h - one resumable mount as its keeper sees it: the messages a
 * keeper and its servers exchange, and the state machine of a mount slot,
 * shared by objfs-mount's own keeper (one slot, mount/keeper.h) and the
 * node-wide holder (N slots, mount/holder.h).
 *
 * A keeper never serves FUSE: it starts the server (objfs-mount, exec'd
 * with $OBJFS_KEEPER_FD naming its end of a socket pair), keeps a
 * reference to the mount's /dev/fuse fd and the INIT exchange the kernel
 * negotiated, and when the server dies without saying goodbye it starts a
 * successor and hands both over.  While the keeper holds the fd the kernel
 * keeps the connection: applications block, they do not fail.
 *
 * INIT, exactly once.  The kernel queues its INIT request in the fd at
 * mount(2) and sends it once per connection.  The keeper, not a server,
 * reads it (the first server mounts, hands the fd over with KOP_PUT and
 * reads nothing from it before INIT is answered), so a server that dies
 * before its reply reached the kernel takes nothing with it.  Every server
 * asks for the INIT (KOP_PEEK) and feeds it to libfuse, which answers into
 * a hook that keeps the reply instead of writing it:
 *   - not answered yet (rep_len 0): the server sends request and reply
 *     (KOP_INIT); the keeper writes the reply to the fd, the one write of
 *     an INIT reply the kernel ever gets, only for the first KOP_INIT that
 *     comes (from whichever server, even one dead since: its queued
 *     messages are read before its death is handled), records it, and
 *     answers KOP_INIT with the exchange recorded and the write's status;
 *     a server whose reply differs from the recorded one refuses to serve;
 *   - answered (rep_len > 0): the server compares libfuse's reply with the
 *     recorded one (not a byte reaches the kernel) and serves; a
 *     difference (a binary that negotiates otherwise) refuses.
 * The keeper is single-threaded and writes before it records: a keeper
 * that dies in between takes the mount with it (the fd), so no state has
 * the reply written twice or never.
 *
 * One SOCK_SEQPACKET socket pair per server; every message is one struct
 * objfs_kmsg (fixed size: neither side allocates), with at most one fd
 * attached (SCM_RIGHTS).  A successor also sees $OBJFS_RESUME=1; a mount
 * with credentials gets them as an fd named by $OBJFS_CREDENTIALS_FD (the
 * keeper keeps it open, so a successor can read them after the file the
 * mount was started with is gone).
 *
 *   server -> keeper                       keeper -> server
 *   KOP_PUT   + the /dev/fuse fd (mounted,
 *             INIT unread)
 *   KOP_PEEK  (every server) the INIT      KOP_INIT blob: struct
 *                                          objfs_kinit (once the keeper
 *                                          has read the request; a
 *                                          successor gets it before its
 *                                          KOP_GET: a binary that would
 *                                          negotiate otherwise gives up
 *                                          before anything stops)
 *   KOP_INIT  blob: request + reply, not   KOP_INIT blob: the exchange
 *             written (INIT not answered)  recorded, status: 0 or the
 *                                          errno of the write
 *   KOP_READY serving (the mount is live)
 *   KOP_BYE   status: the mount ended cleanly, do not resume
 *   KOP_GET   (successor) give me the fd   KOP_FD + fd, blob: the INIT
 *                                          (only once the previous server
 *                                          is dead: sending RESEND is then
 *                                          safe)
 *                                          KOP_STOP: leave the mount to a
 *                                          successor (planned handover)
 *   KOP_ADOPT + the fd and the credentials fd (or none), blob: the INIT
 *             (answered): sent by a server whose keeper died to the
 *             keeper it started (objfs-mount with $OBJFS_KEEPER_ADOPT_FD),
 *             first on that socket; the pid is the socket's peer
 *             (SO_PEERCRED), watched with a pidfd (objfs_kslot_adopt_server)
 *
 * The slot (struct objfs_kslot) is driven by its owner's poll loop: the
 * owner puts the slot's descriptors in its pollfd array
 * (objfs_kslot_pollfds), hands back their revents (objfs_kslot_poll),
 * hands it every child it reaps (objfs_kslot_child), and reads the events
 * the slot raised (s->events, cleared by the owner).  No allocation, no
 * threads: a slot is plain data in its owner's tables.
 *
 * States:
 *   none      -> a server is spawned (the first, or a successor)
 *   running   the server pid is alive; ssock is its socket
 *   stopping  KOP_STOP sent (planned handover): a successor waits for the
 *             fd until the server is reaped
 *   ending    the mount is being ended (SIGTERM): a death is not resumed
 *   releasing the server was stopped for another holder (takeover): no
 *             successor here
 *   foreign   (takeover) a server of another holder still serves: the
 *             successor's KOP_GET waits until it is gone (KSLOT_EV_FOREIGN
 *             asks the owner to have it stopped; objfs_kslot_foreign_gone()
 *             or the end of the pidfd given to objfs_kslot_adopt() opens the
 *             gate)
 * A server that dies once the keeper has the fd and the INIT request is
 * resumed, whether INIT was answered or not.  Five deaths within 30 s
 * (planned handovers do not count) give up: the fd is closed, the mount
 * fails (ENOTCONN) and the node's watchdog remounts.
 */
#ifndef OBJFS_MOUNT_KSLOT_H
#define OBJFS_MOUNT_KSLOT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct objfs_log;

#define OBJFS_KEEPER_ENV "OBJFS_KEEPER_FD"
#define OBJFS_RESUME_ENV "OBJFS_RESUME"
#define OBJFS_CREDS_FD_ENV "OBJFS_CREDENTIALS_FD"
/* Set (to "1") for the servers of a slot whose servers outlive it
 * (!die_with_owner): a server that loses its keeper starts a new one
 * (KOP_ADOPT, below) and serves on. */
#define OBJFS_KEEPER_REPLACE_ENV "OBJFS_KEEPER_REPLACE"
/* The new keeper's end of the socket to the server that started it. */
#define OBJFS_ADOPT_ENV "OBJFS_KEEPER_ADOPT_FD"
/* Set for the servers of a slot with rejoin (the holder's): "SERIAL:NAME:
 * SOCKET".  A server whose holder dies serves on and hands the mount to
 * the next holder on SOCKET (HOP_ADOPT, mount/holder.h). */
#define OBJFS_REJOIN_ENV "OBJFS_HOLDER_REJOIN"

enum objfs_kop {
	KOP_PUT = 1, KOP_INIT, KOP_READY, KOP_BYE, KOP_GET, KOP_FD, KOP_STOP,
	KOP_PEEK, KOP_ADOPT,
};

#define OBJFS_KBLOB_MAX 1024

/* The blob of KOP_INIT and KOP_FD: the kernel's INIT request as read
 * (fuse_in_header + fuse_init_in) and the reply it got (fuse_out_header +
 * fuse_init_out; rep_len 0: not answered yet). */
#define OBJFS_KINIT_HALF 256
struct objfs_kinit {
	uint32_t req_len, rep_len;
	uint8_t req[OBJFS_KINIT_HALF];
	uint8_t rep[OBJFS_KINIT_HALF];
};

struct objfs_kmsg {
	uint32_t op;                    /* enum objfs_kop */
	int32_t status;                 /* 0 or a positive errno / exit code */
	uint32_t len;                   /* bytes of blob used */
	uint32_t pad;
	uint8_t blob[OBJFS_KBLOB_MAX];
};

/* One fixed-size message of len bytes with up to OBJFS_KFDS_MAX fds
 * attached (fds[i] >= 0 only).  0 or an errno. */
#define OBJFS_KFDS_MAX 4
int objfs_kpkt_send(int sock, const void *m, size_t len, const int *fds, int nfds);
/* Receives one message of exactly len bytes; fds (nfds entries) get the
 * attached fds (close-on-exec) or -1; extra fds are closed.  0, an errno,
 * ECONNRESET at end of file, EPROTO when malformed (fds closed then). */
int objfs_kpkt_recv(int sock, void *m, size_t len, int *fds, int nfds);

/* Sends m with fd attached when fd >= 0.  0 or an errno. */
int objfs_kmsg_send(int sock, const struct objfs_kmsg *m, int fd);
/* Receives one message; *fd gets an attached fd (close-on-exec) or -1.
 * 0, an errno, ECONNRESET at end of file, EPROTO when malformed. */
int objfs_kmsg_recv(int sock, struct objfs_kmsg *m, int *fd);

/* Events a slot raises for its owner (s->events, a mask). */
enum {
	KSLOT_EV_READY = 1,             /* a server said KOP_READY */
	KSLOT_EV_ENDED = 2,             /* the mount ended: s->status; the slot
					   holds nothing any more */
	KSLOT_EV_FOREIGN = 4,           /* a successor waits: have the foreign
					   server stopped */
	KSLOT_EV_RELEASED = 8,          /* objfs_kslot_release() done: the
					   server is gone */
};

#define KSLOT_DEATHS_MAX 5
#define KSLOT_POLLFDS 6                 /* at most this many per slot */

struct objfs_kslot {
	/* Set by the owner before objfs_kslot_start()/adopt(); borrowed. */
	const char *name;               /* for the log */
	const char *exe;                /* the server binary */
	char *const *argv;              /* its argv, the same for every server */
	struct objfs_log *log;
	bool die_with_owner;            /* servers get PR_SET_PDEATHSIG SIGKILL:
					   whoever kills the owner ends its
					   mounts (the holder's); else a server
					   whose keeper dies starts a new one
					   and serves on (objfs-mount's) */
	const char *rejoin;             /* NULL, or OBJFS_REJOIN_ENV's value:
					   servers outlive the owner and hand
					   the mount to its successor (the
					   holder's; die_with_owner false) */
	/* Owned by the slot once set (closed by objfs_kslot_close()). */
	int creds_fd;                   /* -1: none */
	int log_fd;                     /* servers' stdout/stderr; -1: inherit */

	/* State (read-only for the owner). */
	int fuse_fd;                    /* our reference, or -1 */
	bool have_init;                 /* the kernel's INIT request read */
	bool init_answered;             /* its reply written to fuse_fd */
	struct objfs_kmsg init;         /* KOP_INIT: struct objfs_kinit */
	bool peek_server, peek_next;    /* a KOP_PEEK waits for the INIT */
	pid_t server;                   /* 0: none */
	int ssock;
	bool ready;                     /* the current server said KOP_READY */
	bool stop_sent;                 /* KOP_STOP sent to server */
	bool bye;                       /* the server ended the mount */
	int bye_status;
	pid_t next;                     /* a successor starting, or 0 */
	int nsock;
	bool next_wants;                /* it sent KOP_GET */
	bool conn_gone;                 /* POLLERR on the fuse fd */
	bool ending;                    /* no successor: the mount ends */
	bool releasing;                 /* server stopped for another holder */
	bool foreign;                   /* another holder's server serves */
	bool foreign_asked;
	int foreign_pidfd;              /* that server, or -1 */
	int server_pidfd;               /* an adopted server (not our child:
					   its end is the pidfd's POLLIN), or
					   -1 */
	int pending_sig;                /* to forward once a server is ready */
	double deaths[KSLOT_DEATHS_MAX];
	unsigned n_deaths;
	unsigned events;                /* KSLOT_EV_*, cleared by the owner */
	int status;                     /* with KSLOT_EV_ENDED: exit status */
	int poll_first, poll_n;         /* its entries in the owner's array */
	int poll_kind[KSLOT_POLLFDS];
	struct objfs_kmsg msg;
};

/* Empties s (every fd -1, no process). */
void objfs_kslot_init(struct objfs_kslot *s);
/* Starts the first server (it mounts).  0 or an errno. */
int objfs_kslot_start(struct objfs_kslot *s);
/* Takeover: s gets a live mount's fd and INIT exchange (answered; both
 * duplicated) while another holder's server (foreign_pidfd, taken; -1:
 * unknown) still serves it, and starts a successor that takes the mount
 * once the foreign server is gone.  0, EPROTO (INIT not answered) or an
 * errno. */
int objfs_kslot_adopt(struct objfs_kslot *s, int fuse_fd,
		      const struct objfs_kmsg *init, int foreign_pidfd);
/* A keeper started by a server whose keeper died: s gets the server's
 * socket (sock), the mount's fd and INIT exchange (answered), all taken,
 * and watches server pid through pidfd (taken; -1: it is gone already, a
 * successor starts at once).  Its death is resumed as a child's would be.
 * 0, EPROTO (INIT not answered) or an errno. */
int objfs_kslot_adopt_server(struct objfs_kslot *s, int sock, int fuse_fd,
			     const struct objfs_kmsg *init, pid_t pid,
			     int pidfd);
/* The foreign server is gone (its holder reaped it, or that holder is
 * gone): a waiting successor gets the fd. */
void objfs_kslot_foreign_gone(struct objfs_kslot *s);
/* Adds s's descriptors at pf[n..]; returns the new n (at most
 * KSLOT_POLLFDS more). */
int objfs_kslot_pollfds(struct objfs_kslot *s, struct pollfd *pf, int n);
/* Handles the revents of the entries objfs_kslot_pollfds() added. */
void objfs_kslot_poll(struct objfs_kslot *s, const struct pollfd *pf);
/* A reaped child: true when it was one of s's (then handled). */
bool objfs_kslot_child(struct objfs_kslot *s, pid_t pid, int wstatus);
/* Passes sig to the server (once it is ready). */
void objfs_kslot_signal(struct objfs_kslot *s, int sig);
/* Ends the mount: sig (SIGTERM: the server uploads, unmounts and says
 * KOP_BYE) and no successor after a death. */
void objfs_kslot_end(struct objfs_kslot *s, int sig);
/* Planned handover to the binary now at s->exe.  0, EBUSY (one is under
 * way or the mount is not live) or an errno. */
int objfs_kslot_upgrade(struct objfs_kslot *s);
/* Takeover, old side: stop the server (KOP_STOP) for another holder;
 * KSLOT_EV_RELEASED once it is reaped (at once when there is none). */
void objfs_kslot_release(struct objfs_kslot *s);
/* Takeover, old side: the other holder left before it was done: serve
 * again (a successor if the server was released). */
void objfs_kslot_unrelease(struct objfs_kslot *s);
/* True while a server or successor is starting or stopping. */
bool objfs_kslot_busy(const struct objfs_kslot *s);
/* Kills the server with sig (0: leave it) and a successor with SIGKILL,
 * closes every fd: the slot holds nothing. */
void objfs_kslot_close(struct objfs_kslot *s, int sig);

#endif
