/* net.c - the connection layer's loop (net.h): listeners (this host's
 * strangers closed at once, an unproven connection making room for a new
 * one when there is none: their account is net_pool.c's), the parent's
 * side of the handshake, ready connections, timers and events. The
 * child's side is in net_dial.c. */
#include "net_private.h"

#include "base_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ACCEPT_BURST 128 /* connections taken from one listener per wake-up */

long net_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) { /* no unprivileged process can pass the hard one */
        rlim_t want = rl.rlim_max;
        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur > (rlim_t)(1L << 30) ? 1L << 30 : (long)rl.rlim_cur;
}

int net_fd_check(uint32_t peers, const char *who, const char *what, struct cohort_err *err)
{
    long limit = net_fd_limit(), need = (long)peers + NET_ROOM_MIN + NET_FD_SPARE;
    if (need <= limit)
        return 0;
    return cohort_fail_code(err, COHORT_E_RESOURCE,
                            "%s serves %u %s, but its open-file limit is %ld (ulimit -n): raise "
                            "it to at least %ld", who, peers, what, limit, need);
}

void net_cap(struct net *n, long conns)
{
    if (conns < n->fd_cap)
        n->fd_cap = conns;
}

void net_reserve(struct net *n, long peers)
{
    n->reserve = peers;
}

int net_new(const struct hs_self *me, const struct net_ops *ops, struct net **out,
            struct cohort_err *err)
{
    struct net *n = calloc(1, sizeof *n);
    *out = NULL;
    if (!n)
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
    n->me = *me;
    n->ops = *ops;
    n->epfd = epoll_create1(EPOLL_CLOEXEC);
    n->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    n->fd_cap = net_fd_limit() - NET_FD_SPARE;
    net_pool_init(&n->pool);
    if (n->epfd < 0) {
        int e = errno;
        net_free(n);
        return cohort_fail_code(err, COHORT_E_RESOURCE,
                                "cannot create the bootstrap's event loop (epoll: %s)",
                                strerror(e));
    }
    *out = n;
    return 0;
}

int net_fd(const struct net *n)
{
    return n->epfd;
}

void net_free(struct net *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n_conns; i++) {
        conn_close(&n->conns[i]->c);
        free(n->conns[i]->dial);
        free(n->conns[i]);
    }
    for (size_t i = 0; i < n->n_lis; i++) {
        close(n->lis[i]->fd);
        free(n->lis[i]);
    }
    if (n->epfd >= 0)
        close(n->epfd);
    if (n->spare_fd >= 0)
        close(n->spare_fd);
    net_pool_free(&n->pool);
    free(n->conns);
    free(n->lis);
    free(n->evs);
    free(n);
}

int net_listen(struct net *n, int fd, bool is_unix, struct cohort_err *err)
{
    struct net_listener *l = calloc(1, sizeof *l), **lis = realloc(n->lis, (n->n_lis + 1) * sizeof *lis);
    if (lis)
        n->lis = lis;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};
    if (!l || !lis || epoll_ctl(n->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        free(l);
        close(fd);
        return cohort_fail_code(err, COHORT_E_RESOURCE, "cannot watch a bootstrap socket (%s)",
                                strerror(errno));
    }
    *l = (struct net_listener){.tag = NET_TAG_LISTENER, .fd = fd, .is_unix = is_unix};
    n->lis[n->n_lis++] = l;
    return 0;
}

struct net_conn *net_conn_new(struct net *n, int fd)
{
    if (base_grow((void **)&n->conns, &n->cap_conns, n->n_conns + 1, sizeof *n->conns) < 0)
        return NULL;
    struct net_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->tag = NET_TAG_CONN;
    conn_init(&c->c, fd);
    c->listener = -1;
    c->ev = -1;
    n->conns[n->n_conns++] = c;
    return c;
}

int net_watch(struct net *n, struct net_conn *c, unsigned events)
{
    if (c->c.fd < 0 || events == c->events)
        return 0;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    int op = !c->events ? EPOLL_CTL_ADD : events ? EPOLL_CTL_MOD : EPOLL_CTL_DEL;
    if (epoll_ctl(n->epfd, op, c->c.fd, &ev) < 0)
        return -1;
    c->events = events;
    return 0;
}

void net_event_add(struct net *n, struct net_conn *c, unsigned what)
{
    if (c->ev >= 0) {
        n->evs[c->ev].what |= what;
        return;
    }
    if (base_grow((void **)&n->evs, &n->cap_evs, n->n_evs + 1, sizeof *n->evs) < 0)
        return; /* the next round sees its state again */
    c->ev = (int)n->n_evs;
    n->evs[n->n_evs++] = (struct net_event){c, what};
}

bool net_read(const struct net *n, struct net_conn *c)
{
    return conn_fill(&c->c, c->c.ready ? n->ops.max_payload : NET_UNAUTH_MAX) == 0;
}

bool net_wait_read(struct net *n, struct net_conn *c, int timeout_ms)
{
    if (c->state != NET_READY || c->closed ||
        conn_wait_fill(&c->c, n->ops.max_payload, timeout_ms) < 0)
        c->closed = true;
    return !c->closed;
}

void net_close(struct net *n, struct net_conn *c)
{
    if (c->state == NET_DEAD)
        return;
    net_pool_leave(&n->pool, c);
    conn_close(&c->c); /* closing the socket takes it out of epoll */
    c->events = 0;
    c->state = NET_DEAD;
    n->dead++;
}

void net_refuse(struct net *n, const struct cohort_err *why)
{
    n->refusal = *why;
}

unsigned net_refused(const struct net *n)
{
    return n->refused;
}

size_t net_unproven(const struct net *n)
{
    return n->pool.remote + n->pool.trusted.count;
}

int net_send(struct net_conn *c, enum wire_type type, uint16_t flags, uint32_t rank,
             const void *payload, uint32_t len)
{
    if (c->state != NET_READY || c->closed)
        return 0; /* gone: its owner hears NET_EV_CLOSED */
    if (conn_queue(&c->c, type, flags, rank, payload, len) < 0)
        return -1;
    if (conn_flush(&c->c) < 0)
        c->closed = true;
    return 0;
}

int net_queue(struct net_conn *c, enum wire_type type, uint16_t flags, uint32_t rank,
              const void *payload, uint32_t len)
{
    if (c->state != NET_READY || c->closed)
        return 0;
    return conn_queue(&c->c, type, flags, rank, payload, len) < 0 ? -1 : 0;
}

void net_linger(struct net *n, long long deadline)
{
    struct pollfd p[256];
    size_t k = 0;
    for (size_t i = 0; i < n->n_conns && k < 256; i++) {
        struct net_conn *c = n->conns[i];
        if (c->state == NET_READY && !c->closed && shutdown(c->c.fd, SHUT_WR) == 0)
            p[k++] = (struct pollfd){.fd = c->c.fd, .events = POLLIN};
    }
    while (k) {
        long long left = deadline - base_now_ms();
        if (left <= 0 || poll(p, k, (int)left) <= 0)
            return;
        for (size_t i = 0; i < k;) {
            uint8_t scrap[4096];
            ssize_t got = p[i].revents ? recv(p[i].fd, scrap, sizeof scrap, MSG_DONTWAIT) : 1;
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                p[i] = p[--k]; /* the peer has read all and closed */
            else
                i++;
        }
    }
}

void net_flush(struct net *n, long long deadline)
{
    for (;;) {
        struct pollfd p[64];
        size_t k = 0;
        for (size_t i = 0; i < n->n_conns && k < 64; i++) {
            struct net_conn *c = n->conns[i];
            if ((c->state == NET_READY || c->state == NET_CLOSING) && !c->closed && c->c.out_len)
                p[k++] = (struct pollfd){.fd = c->c.fd, .events = POLLOUT};
        }
        long long left = deadline - base_now_ms();
        if (!k || left <= 0 || poll(p, k, (int)left) <= 0)
            return;
        for (size_t i = 0; i < n->n_conns; i++) {
            struct net_conn *c = n->conns[i];
            if ((c->state == NET_READY || c->state == NET_CLOSING) && !c->closed &&
                c->c.out_len && conn_flush(&c->c) < 0)
                c->closed = true;
        }
    }
}

/* --- the parent's side ------------------------------------------------- */

int net_accept(int lfd, int flags, int *spare)
{
    int fd = accept4(lfd, NULL, NULL, flags);
    if (fd >= 0 || (errno != EMFILE && errno != ENFILE) || *spare < 0)
        return fd < 0 ? -2 : fd;
    close(*spare);
    fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0)
        close(fd);
    *spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd >= 0 ? -1 : -2;
}

/* Answers a proven hello with why and closes once it is written. */
static void refuse(struct net *n, struct net_conn *c, const struct cohort_err *why)
{
    uint8_t abort[WIRE_ABORT_MAX];
    conn_queue(&c->c, WIRE_ABORT, 0, n->me.rank, abort, wire_abort_encode(why, abort));
    c->state = NET_CLOSING;
    c->deadline = base_now_ms() + 1000;
    if (conn_flush(&c->c) < 0 || !c->c.out_len)
        net_close(n, c);
}

/* What an unproven connection sent: nothing yet, a good hello (admitted,
 * refused or dropped by the owner), or anything else (dropped). */
static void serve_proving(struct net *n, struct net_conn *c)
{
    bool open = net_read(n, c);
    struct wire_frame f;
    struct hs_hello h;
    struct cohort_err e;
    int got = conn_next(&c->c, NET_UNAUTH_MAX, &f, &e);
    if (got == 0 && open)
        return;
    if (got <= 0 || f.type != WIRE_HELLO ||
        hs_hello_check(&n->me, c->nonce, f.payload, f.len, &h) < 0) {
        net_close(n, c); /* a stranger, or a bad proof: the step goes on */
        return;
    }
    struct cohort_err why;
    enum net_admit a = NET_REFUSE;
    if (n->refusal.msg[0]) {
        why = n->refusal;
        n->refused++;
    } else {
        a = n->ops.admit(n->ops.ctx, &h, n->lis[c->listener]->is_unix, &why);
    }
    if (a == NET_DROP) {
        net_close(n, c);
        return;
    }
    net_pool_leave(&n->pool, c);
    if (a == NET_REFUSE) {
        conn_consume(&c->c, &f);
        refuse(n, c, &why);
        return;
    }
    uint8_t w[HS_WELCOME_MAX], base[32];
    int len = hs_welcome(&n->me, c->nonce, &h, w, base, NULL);
    c->c.rank = h.rank;
    c->c.node = h.node;
    conn_consume(&c->c, &f); /* h pointed into it */
    if (len < 0 || conn_queue(&c->c, WIRE_WELCOME, 0, n->me.rank, w, (uint32_t)len) < 0) {
        net_close(n, c);
        return;
    }
    session_start(&c->c.sess, base, true);
    explicit_bzero(base, sizeof base);
    c->c.ready = true;
    c->state = NET_READY;
    c->closed = !open || conn_flush(&c->c) < 0;
    net_tell(n, c, NET_EV_JOINED);
}

/* Room for a connection new in this round from src (NULL: trusted): when
 * it is from another host and those fill what the reserve leaves of the
 * cap (the room), or the loop is at its cap, the unproven connection
 * net_pool_victim names is served (a peer whose hello waits is proven)
 * or closed, and the next until one is closed (the cap) or the room is
 * made. False when none can be: the newcomer is to be closed. */
static bool make_room(struct net *n, const struct net_source *src)
{
    long room = n->fd_cap - n->reserve;
    room = room < 1 ? 1 : room > NET_ROOM_MAX ? NET_ROOM_MAX : room;
    while ((src && (long)n->pool.remote >= room) || (long)(n->n_conns - n->dead) >= n->fd_cap) {
        struct net_conn *c = net_pool_victim(&n->pool, src, n->burst);
        if (!c)
            return false;
        serve_proving(n, c);
        if (c->state == NET_PROVING)
            net_close(n, c);
    }
    return true;
}

/* Where the connection on fd, new on l, comes from: a Unix peer of this
 * uid or another; TCP, net_origin's answer. */
static enum net_origin origin(struct net *n, const struct net_listener *l, int fd,
                              struct net_source *src)
{
    if (!l->is_unix)
        return net_origin(n, fd, src);
    struct ucred cred;
    socklen_t len = sizeof cred;
    bool ours = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                cred.uid == geteuid();
    return ours ? NET_FROM_US : NET_FROM_STRANGER;
}

static void accept_on(struct net *n, int li)
{
    struct net_listener *l = n->lis[li];
    n->burst++;
    for (int i = 0; i < ACCEPT_BURST; i++) {
        int fd = net_accept(l->fd, SOCK_NONBLOCK | SOCK_CLOEXEC, &n->spare_fd);
        if (fd == -2)
            return; /* nothing more waits */
        if (fd < 0)
            continue;
        struct net_source from, *src = &from;
        enum net_origin o = origin(n, l, fd, &from);
        if (o == NET_FROM_US)
            src = NULL;
        /* another uid of this host, unread; no room, and none to make it */
        if (o == NET_FROM_STRANGER || !make_room(n, src)) {
            close(fd);
            continue;
        }
        struct net_conn *c = net_conn_new(n, fd);
        if (!c) {
            close(fd);
            return;
        }
        c->listener = li;
        c->burst = n->burst;
        c->state = NET_PROVING;
        c->deadline = base_now_ms() + NET_PROVE_MS;
        if (net_pool_join(&n->pool, c, src) < 0) {
            net_close(n, c);
            continue;
        }
        if (!l->is_unix) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        uint8_t ch[HS_CHALLENGE_MAX];
        int len = hs_challenge(&n->me, c->nonce, ch, NULL);
        if (len < 0 || conn_queue(&c->c, WIRE_CHALLENGE, 0, n->me.rank, ch, (uint32_t)len) < 0 ||
            conn_flush(&c->c) < 0 || net_watch(n, c, EPOLLIN) < 0)
            net_close(n, c);
    }
}

void net_tell(struct net *n, struct net_conn *c, unsigned what)
{
    if (c->c.in_len)
        what |= NET_EV_DATA;
    if (c->closed && !c->closed_told) {
        c->closed_told = true;
        what |= NET_EV_CLOSED;
        net_watch(n, c, 0);
    }
    if (what)
        net_event_add(n, c, what);
}

static void serve_ready(struct net *n, struct net_conn *c, unsigned events)
{
    if (events & EPOLLOUT && conn_flush(&c->c) < 0)
        c->closed = true;
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP) && !net_read(n, c))
        c->closed = true;
    net_tell(n, c, 0);
}

/* --- the loop ------------------------------------------------------------ */

static bool in_handshake(const struct net_conn *c)
{
    return c->state != NET_READY && c->state != NET_DEAD;
}

/* Frees closed connections, tells of new deaths, sets what epoll watches;
 * returns the earliest timer (LLONG_MAX: none). */
static long long prepare(struct net *n)
{
    long long next = (long long)(-1ULL >> 1);
    size_t k = 0;
    n->n_evs = 0;
    for (size_t i = 0; i < n->n_conns; i++) {
        struct net_conn *c = n->conns[i];
        if (c->state == NET_DEAD) {
            free(c->dial);
            free(c);
            continue;
        }
        n->conns[k++] = c;
        c->ev = -1;
        if (c->state == NET_READY) {
            if (!c->closed && c->c.out_len && conn_flush(&c->c) < 0) /* net_queue's frames */
                c->closed = true;
            if (c->closed) {
                if (!c->closed_told)
                    net_tell(n, c, 0);
                continue;
            }
            unsigned want = (unsigned)EPOLLRDHUP |
                (conn_full(&c->c, n->ops.max_payload) ? 0u : (unsigned)EPOLLIN) |
                (c->c.out_len ? (unsigned)EPOLLOUT : 0u);
            if (net_watch(n, c, want) < 0)
                c->closed = true;
        } else if (c->state == NET_CLOSING) {
            net_watch(n, c, EPOLLOUT);
        }
        if (in_handshake(c) && c->deadline < next)
            next = c->deadline;
    }
    n->n_conns = k;
    n->dead = 0;
    return next;
}

static void dispatch(struct net *n, void *ptr, unsigned events)
{
    if (*(int *)ptr == NET_TAG_LISTENER) {
        for (size_t li = 0; li < n->n_lis; li++)
            if (n->lis[li] == ptr)
                accept_on(n, (int)li);
        return;
    }
    struct net_conn *c = ptr;
    switch (c->state) {
    case NET_PROVING:
        serve_proving(n, c);
        break;
    case NET_READY:
        serve_ready(n, c, events);
        break;
    case NET_CLOSING:
        if (conn_flush(&c->c) < 0 || !c->c.out_len)
            net_close(n, c);
        break;
    case NET_DEAD:
        break; /* closed earlier in this round */
    default:
        c->client_step(n, c, events);
    }
}

int net_poll(struct net *n, int timeout_ms, struct net_event **evs, struct cohort_err *err)
{
    long long next = prepare(n), now = base_now_ms();
    int wait = n->n_evs ? 0 : timeout_ms < 0 ? 0 : timeout_ms;
    if (next - now < wait)
        wait = next <= now ? 0 : (int)(next - now);
    struct epoll_event ev[256];
    int got = epoll_wait(n->epfd, ev, 256, wait);
    if (got < 0 && errno != EINTR)
        return cohort_fail_code(err, COHORT_E_RESOURCE,
                                "the bootstrap's event loop failed (epoll_wait: %s)",
                                strerror(errno));
    for (int i = 0; i < got; i++)
        dispatch(n, ev[i].data.ptr, ev[i].events);
    now = base_now_ms();
    for (size_t i = 0, count = n->n_conns; i < count; i++) {
        struct net_conn *c = n->conns[i];
        if (!in_handshake(c) || c->deadline > now)
            continue;
        if (c->state == NET_PROVING || c->state == NET_CLOSING)
            net_close(n, c); /* too slow to prove itself, or to take its refusal */
        else
            c->client_step(n, c, 0);
    }
    *evs = n->evs;
    return (int)n->n_evs;
}
