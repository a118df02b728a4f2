/* net_origin.c - where a connection a TCP listener accepted comes from
 * (net_private.h): this host, and then whose it is, as a Unix socket's
 * SO_PEERCRED tells it, from the kernel's table of sockets (sock_diag);
 * or another host, and then its source, by which its unproven
 * connections are grouped (net_pool.c). */
#include "net_private.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* a, an IPv4 address by IPv6 (::ffff:a.b.c.d), as IPv4: the kernel's
 * table holds such a connection by its IPv4 addresses */
static void plain(struct sockaddr_storage *a)
{
    struct sockaddr_in6 s6 = *(struct sockaddr_in6 *)a;
    if (a->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6.sin6_addr))
        return;
    struct sockaddr_in *in = (struct sockaddr_in *)a;
    *in = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = s6.sin6_port};
    memcpy(&in->sin_addr, s6.sin6_addr.s6_addr + 12, 4);
}

/* Whether peer is an address of this host: loopback (127/8, ::1), or the
 * one the connection came to (self). Other addresses of this host are
 * taken for another host's: their connections are grouped by source, so
 * that they can only take each other's places. */
static bool this_host(const struct sockaddr_storage *peer, const struct sockaddr_storage *self)
{
    if (peer->ss_family == AF_INET) {
        struct in_addr p = ((const struct sockaddr_in *)peer)->sin_addr;
        return (ntohl(p.s_addr) >> 24) == 127 ||
               p.s_addr == ((const struct sockaddr_in *)self)->sin_addr.s_addr;
    }
    const struct in6_addr *p = &((const struct sockaddr_in6 *)peer)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(p) ||
           memcmp(p, &((const struct sockaddr_in6 *)self)->sin6_addr, sizeof *p) == 0;
}

/* The uid that owns the TCP socket of local address from, connected to
 * to, in this network namespace: 0 with *uid, -1 when there is none, -2
 * when sock_diag cannot be asked here or answered with another error, -3
 * when it could not be asked now (no descriptor, memory or buffers). The
 * netlink socket lives for the question only: no descriptor is held. */
static int owner(const struct sockaddr_storage *from, const struct sockaddr_storage *to,
                 uint32_t *uid)
{
    struct {
        struct nlmsghdr h;
        struct inet_diag_req_v2 r;
    } req = {
        .h = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY,
              .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1},
        .r = {.sdiag_family = (uint8_t)from->ss_family, .sdiag_protocol = IPPROTO_TCP,
              .idiag_states = ~0u,
              .id.idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}},
    };
    if (from->ss_family == AF_INET) {
        const struct sockaddr_in *f = (const void *)from, *t = (const void *)to;
        req.r.id.idiag_sport = f->sin_port;
        req.r.id.idiag_dport = t->sin_port;
        memcpy(req.r.id.idiag_src, &f->sin_addr, 4);
        memcpy(req.r.id.idiag_dst, &t->sin_addr, 4);
    } else {
        const struct sockaddr_in6 *f = (const void *)from, *t = (const void *)to;
        req.r.id.idiag_sport = f->sin6_port;
        req.r.id.idiag_dport = t->sin6_port;
        memcpy(req.r.id.idiag_src, &f->sin6_addr, 16);
        memcpy(req.r.id.idiag_dst, &t->sin6_addr, 16);
    }
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM ? -3
                                                                                        : -2;
    /* the kernel answers within the send: the answer waits when it returns */
    long buf[2048 / sizeof(long)];
    ssize_t got = send(nl, &req, sizeof req, 0) == (ssize_t)sizeof req
                      ? recv(nl, buf, sizeof buf, MSG_DONTWAIT)
                      : -1;
    close(nl);
    if (got <= 0)
        return -3;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)got);
         h = NLMSG_NEXT(h, got)) {
        if (h->nlmsg_type == NLMSG_ERROR)
            return ((struct nlmsgerr *)NLMSG_DATA(h))->error == -ENOENT ? -1 : -2;
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
            return -2;
        *uid = ((struct inet_diag_msg *)NLMSG_DATA(h))->idiag_uid;
        return 0;
    }
    return -2;
}

/* Whether fd's connection is still in the kernel's table (not reset). */
static bool alive(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_state != TCP_CLOSE;
}

/* Whether sock_diag answers in this loop's network namespace, found once
 * by asking about the loop's own end of a connection (fd, self to peer),
 * which it must know: NET_DIAG_ON, NET_DIAG_OFF (no inet_diag in the
 * kernel: connections from this host are then taken for another host's
 * and grouped by source), or NET_DIAG_UNTRIED when this connection could
 * not tell (reset already, or no descriptor or memory for the question
 * now): a connection cannot turn the check off by a reset, nor by filling
 * the descriptor table. */
static int diag_on(struct net *n, int fd, const struct sockaddr_storage *self,
                   const struct sockaddr_storage *peer)
{
    uint32_t uid;
    if (n->diag != NET_DIAG_UNTRIED)
        return n->diag;
    int got = owner(self, peer, &uid);
    if (got == 0 || got == -2 || (got == -1 && alive(fd)))
        n->diag = got == 0 ? NET_DIAG_ON : NET_DIAG_OFF;
    return n->diag;
}

enum net_origin net_origin(struct net *n, int fd, struct net_source *src)
{
    struct sockaddr_storage peer, self;
    socklen_t pl = sizeof peer, sl = sizeof self;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 ||
        getsockname(fd, (struct sockaddr *)&self, &sl) < 0)
        return NET_FROM_STRANGER; /* gone already */
    plain(&peer);
    plain(&self);
    net_source_of((const struct sockaddr *)&peer, src);
    if (peer.ss_family != self.ss_family || !this_host(&peer, &self))
        return NET_FROM_REMOTE;
    int diag = diag_on(n, fd, &self, &peer);
    if (diag == NET_DIAG_OFF)
        return NET_FROM_REMOTE;
    /* The peer's end, owned by whoever made it. Not found (sock_diag
     * answering, as it did for a loop's end) or not answered, it is closed
     * unread: a connection that cannot be shown to be this uid's may be a
     * stranger's, and one of this uid's lost so is dialed again (net_dial
     * retries). */
    uint32_t uid;
    bool ours = diag == NET_DIAG_ON && owner(&peer, &self, &uid) == 0 && uid == geteuid();
    return ours ? NET_FROM_US : NET_FROM_STRANGER;
}
