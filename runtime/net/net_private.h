/* net_private.h - what net.c (the loop, listeners, the server side of the
 * handshake) gives net_dial.c (the client side), its one client: net.c
 * reaches the client side only through the connection's client_step; and
 * what net_pool.c (the account of unproven connections) and net_origin.c
 * (where a TCP connection comes from) give net.c. Not for other modules
 * (test_net_pool and test_net_cap look inside). */
#ifndef COHORT_NET_PRIVATE_H
#define COHORT_NET_PRIVATE_H

#include "net.h"

#define NET_TAG_CONN 1
#define NET_TAG_LISTENER 2

struct net_listener {
    int tag;
    int fd;
    bool is_unix;
};

/* A source of remote connections: an IPv4 address (as ::ffff:a.b.c.d) or
 * the first 64 bits of an IPv6 address. */
struct net_source {
    uint8_t b[16];
};

/* The loop's unproven connections: trusted (this uid's) and remote, by
 * source. Filled by net_pool_join, emptied by net_pool_leave. */
struct net_pool {
    /* a source's unproven connections, in the order accepted */
    struct net_group {
        struct net_source src;
        size_t count;
        struct net_conn *oldest, *newest;        /* net_conn.older, newer */
        struct net_group *next;                  /* in its hash bucket */
        struct net_group *prev_size, *next_size; /* among the groups of its count */
    } trusted;                   /* this uid's, by a Unix socket or from this host */
    size_t remote;               /* the others, grouped by source: */
    struct net_group **buckets;  /* a hash by source */
    size_t n_buckets, n_groups;
    struct net_group **by_size;  /* [k]: the groups of k connections (k >= 1) */
    size_t n_sizes, largest;     /* largest: the count of the largest group (0: none) */
    uint64_t seed;               /* of the hash */
};

enum { NET_DIAG_UNTRIED, NET_DIAG_ON, NET_DIAG_OFF }; /* struct net's diag */

struct net {
    struct hs_self me;
    struct net_ops ops;
    int epfd;
    int spare_fd;               /* given up for a moment when accept finds no descriptor */
    long fd_cap;                /* connections at most */
    long reserve;               /* of them, kept for proven ones (net_reserve) */
    struct net_pool pool;       /* the unproven connections */
    unsigned burst;             /* accepts from one listener's wake-up so far (net_conn.burst) */
    int diag;                   /* whether sock_diag answers here (net_origin): NET_DIAG_* */
    struct net_listener **lis;  /* stable addresses: epoll points at them */
    size_t n_lis;
    struct net_conn **conns;
    size_t n_conns, cap_conns;
    size_t dead;                /* of n_conns, closed since net_poll last freed them */
    struct net_event *evs;
    size_t n_evs, cap_evs;
    struct cohort_err refusal;  /* net_refuse's; msg "" until then */
    unsigned refused;
};

/* Registers c with epoll for events (EPOLLIN/EPOLLOUT bits); 0 or -1. */
int net_watch(struct net *n, struct net_conn *c, unsigned events);
/* Adds an event bit for c in this round. */
void net_event_add(struct net *n, struct net_conn *c, unsigned what);
/* A new connection record in the loop (fd may be -1). */
struct net_conn *net_conn_new(struct net *n, int fd);
/* Adds what to c's events, with NET_EV_DATA when input waits and
 * NET_EV_CLOSED (once) when the peer is gone. */
void net_tell(struct net *n, struct net_conn *c, unsigned what);
/* Reads what c's socket has; false when the peer closed or failed. */
bool net_read(const struct net *n, struct net_conn *c);

/* --- net_pool.c ---------------------------------------------------------- */

/* An empty pool (its hash seeded from getrandom); net_pool_free frees
 * what it holds (not the connections). */
void net_pool_init(struct net_pool *p);
void net_pool_free(struct net_pool *p);
/* The source of a connection from sa (AF_INET or AF_INET6), for grouping. */
void net_source_of(const struct sockaddr *sa, struct net_source *src);
/* c joins p as the newest: of src's group, or trusted when src is NULL.
 * 0, or -1 when out of memory (c in none). */
int net_pool_join(struct net_pool *p, struct net_conn *c, const struct net_source *src);
/* c leaves its group (nothing when it is in none: a dial, or proven). */
void net_pool_leave(struct net_pool *p, struct net_conn *c);
/* The connection whose place a newcomer from src (NULL: trusted) takes
 * when there is no room: the oldest of the largest remote group (the
 * newcomer's own on a tie), or with none, for a trusted newcomer, the
 * oldest trusted one. One accepted in this round (burst) is taken only
 * from a group larger by two than the newcomer's, never from its own:
 * NULL then, as when there is none (the newcomer is closed instead). */
struct net_conn *net_pool_victim(const struct net_pool *p, const struct net_source *src,
                                 unsigned burst);

/* --- net_origin.c -------------------------------------------------------- */

enum net_origin {
    NET_FROM_US,       /* this host, this process's euid (sock_diag), or a Unix peer's */
    NET_FROM_STRANGER, /* this host, another uid or none shown: closed unread */
    NET_FROM_REMOTE,   /* another host (or sock_diag not answering): *src set */
};

/* Where the connection on fd, accepted by a TCP listener, comes from. */
enum net_origin net_origin(struct net *n, int fd, struct net_source *src);

#endif
