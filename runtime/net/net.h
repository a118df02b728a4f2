/* net.h - cohort's one connection layer: an epoll event loop of
 * authenticated, framed connections, used by the bootstrap tree and by
 * anything else in libcohort that serves peers.
 *
 * Listening: every accepted connection is challenged at once and has
 * NET_PROVE_MS to send a good hello (handshake.h); until then it is
 * unproven. A Unix listener closes connections of another uid at once
 * (SO_PEERCRED), unread; a TCP listener does the same with a connection
 * from this host (loopback, or the address it came to) whose socket the
 * kernel does not show to be this process's euid's (sock_diag; where it
 * cannot tell, such connections are grouped as other hosts' are). This
 * uid's unproven connections count only against the loop's cap. Those
 * from other hosts never take the slots the owner reserved for its
 * proven peers (net_reserve): together they are held to the rest of the
 * cap (the room), grouped by source (an IPv4 address, an IPv6 /64). A
 * connection that finds no room takes the place of the oldest of the
 * largest group (its own on a tie), once that one is found to have no
 * hello waiting (one that has is proven instead), so that a host
 * flooding the loop takes its own connections' places, not those of a
 * host holding fewer; a connection accepted in the same round is never
 * closed for a newcomer of its own group or one about as large (the
 * newcomer is closed). A proven hello goes to the owner's admit
 * callback; an admitted peer is welcomed and its session starts: from
 * then on every frame both ways carries a MAC and an implicit sequence
 * number (session.h).
 *
 * Dialing: net_dial connects to a parent, retrying (1 ms growing to
 * NET_RETRY_MAX_MS) while it is not there or closes the connection before
 * welcoming this process, each address for NET_CONNECT_TRY_MS at most. A
 * TCP parent that accepts but does not challenge within NET_CHALLENGE_MS,
 * or answers with something that is not this step's challenge, is not
 * this step's parent: the dial fails at once, naming the port. (Its
 * kernel is probed a second after the connect, so that a connection the
 * parent's side lost as it was made, as a restarted parent's listener
 * closed, is reset and dialed again instead.) A Unix parent of another
 * uid is refused.
 *
 * Everything waits in net_poll, with a deadline. Not thread-safe. */
#ifndef COHORT_NET_H
#define COHORT_NET_H

#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#include "base_sys.h"
#include "conn.h"
#include "error.h"
#include "handshake.h"

#define NET_PROVE_MS 3000       /* an accepted connection's time to send a good hello */
#define NET_CHALLENGE_MS 3000   /* a TCP parent's time to challenge a connection */
#define NET_CONNECT_TRY_MS 2000 /* one connect to one address */
#define NET_RETRY_MAX_MS 250    /* the longest wait between dials */
#define NET_ROOM_MAX 4096       /* unproven connections from other hosts at most */
#define NET_ROOM_MIN 64         /* and the room for them net_fd_check asks for */
#define NET_FD_SPARE 16         /* descriptors kept for all but connections */
#define NET_UNAUTH_MAX 1024     /* bytes a frame may hold before its sender is proven */

/* Ordered: every state before NET_READY is a connection not proven yet. */
enum net_state {
    NET_DIALING,        /* client: waiting to connect (again) */
    NET_CONNECTING,     /* client: connect in progress */
    NET_WAIT_CHALLENGE, /* client */
    NET_WAIT_WELCOME,   /* client */
    NET_PROVING,        /* server: challenged, waiting for a good hello */
    NET_READY,          /* authenticated both ways; frames are MAC'd */
    NET_CLOSING,        /* flushing a last frame, then closed */
    NET_DEAD,
};

struct net_dial;

struct net;

struct net_conn {
    int tag;                 /* tells a connection from a listener in epoll */
    struct conn c;           /* socket, buffers, session; c.rank, c.node: the peer */
    enum net_state state;
    int listener;            /* server: its listener's index; client: -1 */
    long long deadline;      /* of the current handshake step */
    uint8_t nonce[AUTH_NONCE_LEN]; /* server: the challenge it was sent */
    struct hs_child hs;      /* client: its side of the handshake */
    struct net_dial *dial;   /* client: where and how to retry (malloc'd, freed with c) */
    /* client: its handshake's progress at a socket event (events: EPOLL
     * bits, 0 for a timer), set by net_dial; NULL on the server side */
    void (*client_step)(struct net *n, struct net_conn *c, unsigned events);
    bool closed;             /* ready: the peer closed, or a write failed */
    bool closed_told;        /* NET_EV_CLOSED was given */
    unsigned events;         /* what epoll watches for it (0: not watched) */
    int ev;                  /* its slot in this round's events, or -1 */
    /* server, unproven: its group (net_private.h) and its neighbours
     * there, in the order they were accepted (NULL at either end) */
    struct net_group *group;
    struct net_conn *older, *newer;
    unsigned burst;          /* server: the listener's wake-up that accepted it */
};

enum net_admit { NET_ADMIT, NET_DROP, NET_REFUSE };

struct net_ops {
    void *ctx;
    uint32_t max_payload;    /* the largest frame a proven peer may send */
    /* A proven hello, which came to a Unix listener (via_unix, its peer's
     * uid checked) or a TCP one: NET_ADMIT, NET_DROP (closed, as a
     * stranger would be) or NET_REFUSE with why (sentence and code), the
     * child's failure. */
    enum net_admit (*admit)(void *ctx, const struct hs_hello *h, bool via_unix,
                            struct cohort_err *why);
};

/* What happened to a connection in one net_poll (bits). */
enum {
    NET_EV_JOINED = 1,    /* server: admitted and welcomed */
    NET_EV_CONNECTED = 2, /* client: welcomed by the parent */
    NET_EV_DATA = 4,      /* ready: bytes arrived (conn_next them) */
    NET_EV_CLOSED = 8,    /* ready: the peer is gone (its last frames may be buffered) */
    NET_EV_FAILED = 16,   /* client: the dial failed (net_dial_error) */
};

struct net_event {
    struct net_conn *c;
    unsigned what;
};

/* Where a dial goes: a Unix socket, or every address of a TCP host. */
struct net_target {
    char name[200];                /* for messages */
    const char *role;              /* what the dialer expects there, for messages when
                                    * something else answers: "bootstrap root", "work
                                    * coordinator" (a string that outlives the dial) */
    bool is_unix;
    struct sockaddr_un ua;
    socklen_t ua_len;
    const struct addrinfo *addrs;  /* TCP: tried in turn; owned by the caller */
    unsigned port;                 /* TCP: for messages */
    int timeout_s;                 /* for messages */
    bool listening;                /* it listened before its address was given out, so a
                                    * refusal on its last address means it is gone: the
                                    * dial fails at once (else it is retried: not yet up) */
};

/* A loop for the process described by me (me->key must outlive it). */
int net_new(const struct hs_self *me, const struct net_ops *ops, struct net **out,
            struct cohort_err *err);
void net_free(struct net *n);

/* The most connections n holds at once, below the process's limit (for a
 * loop that shares its process with others: what it was counted for). */
void net_cap(struct net *n, long conns);

/* Keeps peers of n's connections (net_cap's, or the process's limit) for
 * proven ones: the most the owner's admit lets in at once, with its own
 * dials. Unproven connections from other hosts are held to the rest (at
 * least 1, at most NET_ROOM_MAX), so that no stranger takes a peer's
 * slot. Without it nothing is kept. */
void net_reserve(struct net *n, long peers);

/* The descriptors this process may use for connections: the soft limit,
 * raised to the hard one first. */
long net_fd_limit(void);

/* accept4 on lfd with flags: the new descriptor; or, with no descriptor
 * left, the connection taken off the backlog with *spare (a descriptor
 * kept open for this, given up and opened again) and closed, -1 (no busy
 * loop on a listener that stays readable); -2 when nothing waits (or the
 * accept failed otherwise). */
int net_accept(int lfd, int flags, int *spare);

/* Whether this process (who, for the message: "rank 0 (n1)") can hold
 * peers connections, NET_ROOM_MIN unproven ones and NET_FD_SPARE
 * descriptors besides, under net_fd_limit. 0, or -1 with err
 * (COHORT_E_RESOURCE): "WHO serves PEERS WHAT, but its open-file limit is
 * L (ulimit -n): raise it to at least N". */
int net_fd_check(uint32_t peers, const char *who, const char *what, struct cohort_err *err);

/* Serves a bound, listening, non-blocking socket. */
int net_listen(struct net *n, int fd, bool is_unix, struct cohort_err *err);

/* Starts a dial to t (copied) until deadline (ms, tree_now_ms clock). */
struct net_conn *net_dial(struct net *n, const struct net_target *t, long long deadline);
/* Why a dial failed (NET_EV_FAILED). */
const struct cohort_err *net_dial_error(const struct net_conn *c);

/* A dial to t, waited for: the connection once it is proven (NET_READY),
 * or NULL with err (why the dial failed, or deadline passed). For a loop
 * with nothing else on it yet: other events of the wait are not kept. */
struct net_conn *net_dial_wait(struct net *n, const struct net_target *t, long long deadline,
                               struct cohort_err *err);

/* Waits at most timeout_ms for something to happen; returns the number
 * of events (*evs valid until the next call), or -1 with err. */
int net_poll(struct net *n, int timeout_ms, struct net_event **evs, struct cohort_err *err);

/* For a ready connection its owner waits on alone, with nothing left to
 * write (a client of one server): waits at most timeout_ms for input and
 * reads it, in one blocking read instead of net_poll's wait and read
 * (conn_wait_fill). False when the peer closed or failed: c->closed is
 * set, as net_poll sets it. */
bool net_wait_read(struct net *n, struct net_conn *c, int timeout_ms);

/* Queues a frame (sealed) and writes what the socket takes; -1 when out
 * of memory (a dead peer shows as NET_EV_CLOSED). */
int net_send(struct net_conn *c, enum wire_type type, uint16_t flags, uint32_t rank,
             const void *payload, uint32_t len);
/* Queues a frame (sealed) to be written at the next net_poll (or
 * net_flush), with whatever else was queued for c by then: one write for
 * many frames. -1 when out of memory. */
int net_queue(struct net_conn *c, enum wire_type type, uint16_t flags, uint32_t rank,
              const void *payload, uint32_t len);
/* Writes every ready connection's queue, until deadline at most. */
void net_flush(struct net *n, long long deadline);
/* After a failure this process has told its peers of: ends its side of
 * every ready connection (shutdown) and waits until each peer has closed
 * its own, or deadline (ms), reading and dropping what comes, so that no
 * peer loses the last frames (the abort) to a reset at the close. At most
 * 256 connections are waited for. */
void net_linger(struct net *n, long long deadline);
/* Closes c now; it is freed at the next net_poll. */
void net_close(struct net *n, struct net_conn *c);

/* From now on every proven hello is answered with why (the step failed:
 * its sentence and code), and never admitted. */
void net_refuse(struct net *n, const struct cohort_err *why);
/* How many proven hellos were answered so. */
unsigned net_refused(const struct net *n);
/* Connections accepted and not yet proven (all listeners, trusted or not). */
size_t net_unproven(const struct net *n);

/* The loop's epoll descriptor: readable when net_poll has something to
 * do, for a process that waits on it with descriptors of its own (it must
 * still call net_poll at least every NET_RETRY_MAX_MS while a dial or a
 * handshake is under way: their deadlines are timers). */
int net_fd(const struct net *n);

#endif
