/* net_private.h - what net.c (the loop, listeners, the server side of the
 * handshake) gives net_dial.c (the client side), its one client: net.c
 * reaches the client side only through the connection's client_step.
 * Not for other modules. */
#ifndef COHORT_NET_PRIVATE_H
#define COHORT_NET_PRIVATE_H

#include "net.h"

#define NET_TAG_CONN 1
#define NET_TAG_LISTENER 2

struct net_listener {
    int tag;
    int fd;
    bool is_unix;
    size_t unproven, pool_max;
    struct net_conn *oldest, *newest; /* its unproven connections (net_conn.older, newer) */
};

struct net {
    struct hs_self me;
    struct net_ops ops;
    int epfd;
    int spare_fd;               /* given up for a moment when accept finds no descriptor */
    long fd_cap;                /* connections at most */
    long reserve;               /* of them, kept for proven ones (net_reserve) */
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

#endif
