/* boot_sim.c - the TCP bootstrap tree (runtime/bootstrap/tree.h) at up to
 * 131,072 ranks, simulated: every process of a step from its start until it
 * returns from cohort_init's exchange (or later ones), as events on a
 * simulated clock; no socket carries a simulated message.
 *
 * Real code: the tree of nodes (tree.c's tree_up_node); a rank's setup (a
 * real tree_open + tree_close of a non-leader rank of this step). Measured
 * at start, best of 5 batches, printed to stderr: the handshake's crypto
 * as net.c and net_dial.c call it (hs_*, session_start), a frame's MAC each
 * way, HMAC-SHA256 and memcpy per byte, a block taken up (tree_under +
 * blocks_add); send + recv pairs of 64 B and 64 KiB over AF_UNIX and TCP on
 * 127.0.0.1 (half a send, half a recv), connect and accept4 of both, a Unix
 * listener, epoll_wait, epoll_ctl, getsockopt.
 * Modelled: RANKS ranks, PER_NODE a node in block order, all starting at 0;
 * each node's leader (its first rank) listens on Unix and, with nodes below,
 * on TCP; the others dial their leader, leaders their parent node's leader
 * (refused before it listens: again after 1 ms, growing, as net_dial.c).
 * 2 us a message within a node, 5 us between nodes plus its bytes at 12.5
 * GB/s through each end's NIC, a queue (a leader's result to 128 nodes
 * leaves copy after copy). A process is one CPU handling what came in
 * rounds, as net_poll (an epoll_wait, up to 256 events, then progress);
 * each message costs it the measured calls and crypto, and per byte the
 * kernel's copy, the MAC and the copies of conn.c and tree_exchange.c. A
 * connection: connect, CHALLENGE, HELLO, WELCOME (1.5 round trips after the
 * connect); then UP frames, one DOWN to each child. cohort_init makes one
 * tree_exchange (cohort.c join), a barrier: empty blocks (8 bytes a rank
 * going up), an empty result. EXCHANGES adds "bcastN" (rank 0's N bytes)
 * and "allgatherN" (a result of RANKS x (8 + N) bytes, which each leader
 * sends each child). Not modelled: the launch, getaddrinfo, socket buffer
 * limits (a send is taken whole), ranks sharing a core.
 * Prints a Markdown row (columns: bench/boot-sim.sh), the costs to stderr.
 *   bench/boot_sim RANKS [PER_NODE [FANOUT [EXCHANGES]]]  (8 128 barrier) */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "blocks.h"
#include "tree_private.h"

#define HOP_NODE_US 2.0
#define HOP_NET_US 5.0
#define LINK_B_PER_US 12500.0 /* 12.5 GB/s: 100 Gb/s */
#define ROUND_MAX 256         /* events one net_poll takes (epoll_wait's 256) */
#define MAX_X 8               /* exchanges in one run */
#define BIG (1u << 20)
#define PAIR_BIG 65536
#define DIALS 20 /* connections a batch: 100 wait in a backlog, under 128 */
#define NONE UINT32_MAX

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what)
{
    fprintf(stderr, "boot_sim: %s: %s\n", what, errno ? strerror(errno) : "failed");
    exit(1);
}

/* out = the best of 5 batches of iters runs of the statements, us a run. */
#define TIMED(out, iters, ...)                                                   \
    do {                                                                         \
        (out) = 1e30;                                                            \
        for (int b_ = 0; b_ < 5; b_++) {                                         \
            double t0_ = now_us(), d_;                                           \
            for (int i_ = 0; i_ < (iters); i_++) { __VA_ARGS__; }                \
            d_ = (now_us() - t0_) / (iters);                                     \
            (out) = d_ < (out) ? d_ : (out);                                     \
        }                                                                        \
    } while (0)

struct costs { /* us; _b: us a byte; [0] Unix, [1] TCP */
    double open, listen, challenge, hello, welcome, welcomed; /* setup; the handshake's steps */
    double seal, check, entry, mac_b, copy_b; /* frame MACs, a block taken up, per byte */
    double io[2], io_b[2], connect[2], accept[2]; /* io: a send or a recv (half a pair) */
    double epoll, ctl, sysc;
    int hs_len[3]; /* challenge, hello, welcome payloads */
};

static void time_crypto(struct costs *c, const struct auth_key *key)
{
    struct hs_self par = {.key = key, .job = 1, .rank = 0}, kid = {.key = key, .job = 1, .rank = 1};
    uint8_t nonce[AUTH_NONCE_LEN], ch[HS_CHALLENGE_MAX], hello[HS_HELLO_MAX], w[HS_WELCOME_MAX];
    uint8_t base[32], hdr[WIRE_HEADER_LEN] = {0}, mac[SESSION_MAC_LEN];
    static uint8_t big[BIG], dst[BIG];
    struct hs_child st;
    struct hs_hello h;
    struct cohort_err e;
    struct session s;
    int *n = c->hs_len;
    double mac_big, copy_big;
    TIMED(c->challenge, 2000, n[0] = hs_challenge(&par, nonce, ch, &e));
    TIMED(c->hello, 2000, hs_challenge_check(&kid, ch, (uint32_t)n[0], &st, &e);
          n[1] = hs_hello(&kid, &st, hello, &e));
    TIMED(c->welcome, 2000, hs_hello_check(&par, nonce, hello, (uint32_t)n[1], &h);
          n[2] = hs_welcome(&par, nonce, &h, w, base, &e); session_start(&s, base, true));
    TIMED(c->welcomed, 2000, if (hs_welcome_check(&kid, &st, w, (uint32_t)n[2], base) < 0)
          die("hs_welcome_check"); session_start(&s, base, false));
    TIMED(c->seal, 20000, session_seal(&s, hdr, big, 16, mac));
    TIMED(c->check, 20000, session_check(&s, hdr, big, 16, mac));
    TIMED(mac_big, 20, session_seal(&s, hdr, big, BIG, mac));
    TIMED(copy_big, 20, memcpy(dst, big, BIG); __asm__ volatile("" : : "r"(dst) : "memory"));
    c->mac_b = (mac_big - c->seal) / BIG;
    c->copy_b = copy_big / BIG;
}

/* At the listener lfd (address sa): socket + connect (non-blocking), and
 * accept4; then a send + recv pair of 64 B and of 64 KiB on a connection,
 * half of it each way. */
static void time_dial(struct costs *c, int i, int lfd, const struct sockaddr *sa, socklen_t len)
{
    static uint8_t buf[PAIR_BIG];
    int fd[5 * DIALS], ac[5 * DIALS], k = 0, n = 0, mib = 1 << 20, one = 1, a, b;
    double small, big;
    TIMED(c->connect[i], DIALS, fd[k] = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
          if (fd[k] < 0 || (connect(fd[k++], sa, len) < 0 && errno != EINPROGRESS)) die("connect"));
    TIMED(c->accept[i], DIALS, if ((ac[n++] = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) < 0)
          die("accept"));
    for (k = 0; k < 5 * DIALS; k++) {
        close(fd[k]);
        close(ac[k]);
    }
    if ((a = socket(sa->sa_family, SOCK_STREAM, 0)) < 0 || connect(a, sa, len) < 0 ||
        (b = accept4(lfd, NULL, NULL, 0)) < 0)
        die("a connection");
    if (i)
        setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(a, SOL_SOCKET, SO_SNDBUF, &mib, sizeof mib);
    setsockopt(b, SOL_SOCKET, SO_RCVBUF, &mib, sizeof mib);
    TIMED(small, 5000, if (send(a, buf, 64, 0) != 64 || recv(b, buf, 64, MSG_WAITALL) != 64)
          die("send/recv"));
    TIMED(big, 500, if (send(a, buf, PAIR_BIG, 0) != PAIR_BIG ||
                        recv(b, buf, PAIR_BIG, MSG_WAITALL) != PAIR_BIG) die("send/recv"));
    c->io[i] = small / 2;
    c->io_b[i] = (big - small) / 2 / (PAIR_BIG - 64);
    close(a);
    close(b);
}

static void time_calls(struct costs *c)
{
    int ep = epoll_create1(0), lu, lt = socket(AF_INET, SOCK_STREAM, 0), w, v, k;
    struct sockaddr_un ua = {.sun_family = AF_UNIX};
    struct sockaddr_in ta = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t tl = sizeof ta, vl = sizeof v, ul = (socklen_t)(offsetof(struct sockaddr_un, sun_path)
        + 1 + (size_t)snprintf(ua.sun_path + 1, sizeof ua.sun_path - 1, "boot-sim%d", getpid()));
    struct epoll_event ev = {.events = EPOLLIN}, evs[ROUND_MAX];
    TIMED(c->listen, 200, lu = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
          if (bind(lu, (struct sockaddr *)&ua, ul) < 0 || listen(lu, SOMAXCONN) < 0)
          die("listen"); close(lu));
    lu = socket(AF_UNIX, SOCK_STREAM, 0);
    if (ep < 0 || lu < 0 || lt < 0 || bind(lu, (struct sockaddr *)&ua, ul) < 0 ||
        listen(lu, SOMAXCONN) < 0 || bind(lt, (struct sockaddr *)&ta, tl) < 0 ||
        listen(lt, SOMAXCONN) < 0 || getsockname(lt, (struct sockaddr *)&ta, &tl) < 0)
        die("listeners");
    time_dial(c, 0, lu, (struct sockaddr *)&ua, ul);
    time_dial(c, 1, lt, (struct sockaddr *)&ta, tl);
    /* a readable listener: a connection waits in lu's backlog */
    if ((w = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 || connect(w, (struct sockaddr *)&ua, ul) < 0 ||
        epoll_ctl(ep, EPOLL_CTL_ADD, lu, &ev) < 0)
        die("epoll");
    TIMED(c->epoll, 20000, epoll_wait(ep, evs, ROUND_MAX, 0));
    TIMED(c->ctl, 20000, epoll_ctl(ep, EPOLL_CTL_ADD, lt, &ev);
          epoll_ctl(ep, EPOLL_CTL_DEL, lt, &ev));
    c->ctl /= 2;
    TIMED(c->sysc, 20000, getsockopt(lt, SOL_SOCKET, SO_ERROR, &v, &vl));
    for (k = 0; k < 4; k++)
        close((int[]){w, lu, lt, ep}[k]);
}

/* A real tree_open + tree_close of rank 1 (not a leader) of this step;
 * a block taken up as take_up takes it (tree_under, blocks_add). */
static void time_tree(struct costs *c, uint32_t ranks, uint32_t per_node, uint32_t fanout,
                      const struct auth_key *key)
{
    char expr[40];
    struct hostlist *hl;
    struct cohort_err err;
    struct blocks b = {0};
    uint32_t nodes = (ranks + per_node - 1) / per_node, k = 0;
    uint32_t *rank_node = malloc(sizeof *rank_node * ranks);
    struct tree *t, shape = {.l.num_nodes = nodes, .fanout = fanout};
    snprintf(expr, sizeof expr, "n[1-%u]", nodes);
    if (!rank_node || hostlist_parse(expr, &hl, &err) < 0)
        die("the layout");
    for (uint32_t r = 0; r < ranks; r++)
        rank_node[r] = r / per_node;
    struct tree_layout l = {.rank = 1, .size = ranks, .num_nodes = nodes, .rank_node = rank_node,
                            .nodes = hl, .master_addr = "127.0.0.1", .port = 1, .job_id = 1,
                            .socket_dir = "/tmp", .fanout = fanout};
    TIMED(c->open, 1, if (tree_open(&l, key, 1000, &t, &err) < 0) die(err.msg); tree_close(t));
    TIMED(c->entry, 20000, (void)tree_under(&shape, k++ % nodes, nodes > 1);
          if (blocks_add(&b, k, NULL, 0) < 0) die("blocks_add"));
    hostlist_free(hl);
    free(rank_node);
    free(b.data);
}

enum kind { SYN, REDIAL, ACCEPT, CHALLENGE, HELLO, WELCOME, UP, DOWN, WAKE };

struct msg {
    double t;
    uint64_t seq, payload;      /* ties: in the order posted; UP, DOWN: payload bytes */
    uint32_t to, from, entries; /* UP: its blocks */
    uint8_t kind, x;            /* UP, DOWN: the exchange */
};

struct proc {
    uint32_t parent;        /* the rank it dials; NONE: the root */
    bool ready, waking;     /* the parent welcomed it; a WAKE is due */
    uint8_t x;              /* the exchange it is in; nx: returned from the last */
    uint16_t wait_ms;       /* before its next dial */
    double busy, cpu, done, flushed, listen_at[2];
    struct msg *in;         /* what came, waiting for a round: in[in_at..n_in) */
    uint32_t in_at, n_in, cap_in;
    uint32_t *kids, nkids, msgs, listeners;
    uint32_t pend_n[MAX_X]; /* blocks to send up (the root: blocks in) */
    uint64_t pend_b[MAX_X];
};

struct sim {
    const struct costs *c;
    uint32_t ranks, per_node, nodes, fanout, nx, levels, refused;
    bool bcast[MAX_X]; /* rank 0's block only; else every rank's (a barrier: of 0 bytes) */
    uint32_t len[MAX_X];
    struct proc *p;
    uint32_t *node_kids;
    double *nic_out, *nic_in;
    struct msg *heap;
    size_t nheap, capheap;
    uint64_t seq;
};

static bool before(const struct msg *a, const struct msg *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push(struct sim *s, struct msg m)
{
    if (s->nheap == s->capheap &&
        !(s->heap = realloc(s->heap, (s->capheap = 2 * s->capheap + 1024) * sizeof *s->heap)))
        die("malloc");
    m.seq = s->seq++;
    size_t i = s->nheap++;
    for (; i && before(&m, &s->heap[(i - 1) / 2]); i = (i - 1) / 2)
        s->heap[i] = s->heap[(i - 1) / 2];
    s->heap[i] = m;
}

static struct msg pop(struct sim *s)
{
    struct msg top = s->heap[0], last = s->heap[--s->nheap];
    size_t i = 0, k;
    for (; (k = 2 * i + 1) < s->nheap; i = k) {
        k += k + 1 < s->nheap && before(&s->heap[k + 1], &s->heap[k]);
        if (!before(&s->heap[k], &last))
            break;
        s->heap[i] = s->heap[k];
    }
    s->heap[i] = last;
    return top;
}

static bool tcp(const struct sim *s, uint32_t a, uint32_t b)
{
    return a / s->per_node != b / s->per_node;
}

/* What from sends at t, bytes on the wire: 2 us within a node; between
 * nodes through both NICs' queues, then 5 us. */
static void post(struct sim *s, uint32_t from, uint32_t to, int kind, uint8_t x, uint32_t entries,
                 uint64_t payload, uint64_t bytes, double t)
{
    uint32_t nf = from / s->per_node, nt = to / s->per_node;
    double at = t + HOP_NODE_US, dur = (double)bytes / LINK_B_PER_US;
    if (nf != nt) {
        double tx = (t > s->nic_out[nf] ? t : s->nic_out[nf]) + dur;
        double rx = tx > s->nic_in[nt] + dur ? tx : s->nic_in[nt] + dur;
        s->nic_out[nf] = tx;
        s->nic_in[nt] = rx;
        s->p[from].flushed = tx > s->p[from].flushed ? tx : s->p[from].flushed;
        at = rx + HOP_NET_US;
    }
    push(s, (struct msg){.t = at, .to = to, .from = from, .entries = entries,
                         .kind = (uint8_t)kind, .x = x, .payload = payload});
}

/* A session frame's bytes; a rank's block in x; x's result's entries. */
static uint64_t frame(uint64_t payload) { return WIRE_HEADER_LEN + payload + SESSION_MAC_LEN; }
static uint32_t block_len(const struct sim *s, uint8_t x, uint32_t rank)
{
    return !s->bcast[x] || rank == 0 ? s->len[x] : 0;
}
static uint32_t result_n(const struct sim *s, uint8_t x)
{
    return !s->len[x] ? 0 : s->bcast[x] ? 1 : s->ranks;
}

/* Done with exchange x at t; starts the next with this rank's block. */
static void finish(struct sim *s, uint32_t r, double t)
{
    struct proc *p = &s->p[r];
    if (++p->x == s->nx) {
        p->done = t > p->flushed ? t : p->flushed;
        return;
    }
    p->pend_n[p->x]++;
    p->pend_b[p->x] += 8 + block_len(s, p->x, r);
}

/* The result of x to every child in the order they were admitted: a
 * copy into each one's queue, its MAC, the send. */
static double send_down(struct sim *s, uint32_t r, uint8_t x, double t)
{
    const struct costs *c = s->c;
    struct proc *p = &s->p[r];
    uint64_t n = result_n(s, x) * (8 + (uint64_t)s->len[x]);
    for (uint32_t i = 0; i < p->nkids; i++) {
        bool net = tcp(s, r, p->kids[i]);
        t += (c->copy_b + c->mac_b + c->io_b[net]) * (double)frame(n) + c->seal + c->io[net];
        post(s, r, p->kids[i], DOWN, x, 0, n, frame(n), t);
        p->msgs++;
    }
    finish(s, r, t);
    return t;
}

/* After a round: the root completes what has every block in (root_finish
 * builds the result); another rank sends what it holds up, once its
 * parent welcomed it. */
static double progress(struct sim *s, uint32_t r, double t)
{
    const struct costs *c = s->c;
    struct proc *p = &s->p[r];
    while (r == 0 && p->x < s->nx && p->pend_n[p->x] == s->ranks) {
        t += result_n(s, p->x) * (c->entry + c->copy_b * (8 + (double)s->len[p->x]));
        t = send_down(s, r, p->x, t);
    }
    if (r == 0 || p->x == s->nx || !p->ready || !p->pend_n[p->x])
        return t;
    bool net = tcp(s, r, p->parent);
    uint64_t n = p->pend_b[p->x];
    t += (c->mac_b + c->io_b[net]) * (double)frame(n) + c->seal + c->io[net];
    post(s, r, p->parent, UP, p->x, p->pend_n[p->x], n, frame(n), t);
    p->msgs++;
    p->pend_n[p->x] = 0;
    p->pend_b[p->x] = 0;
    return t;
}

/* A dial: socket + connect, epoll_ctl, net_dial.c's connected() (Unix:
 * SO_PEERCRED; TCP: SO_ERROR, TCP_NODELAY, epoll_ctl once connected,
 * counted here). */
static double dial(struct sim *s, uint32_t r, double t)
{
    bool net = tcp(s, r, s->p[r].parent);
    t += s->c->connect[net] + s->c->ctl + (net ? 2 * s->c->sysc + s->c->ctl : s->c->sysc);
    post(s, r, s->p[r].parent, SYN, 0, 0, 0, 0, t);
    return t;
}

/* One message taken in a round by r at t; returns when it is through. */
static double handle(struct sim *s, uint32_t r, const struct msg *m, double t)
{
    const struct costs *c = s->c;
    struct proc *p = &s->p[r];
    bool net = tcp(s, r, m->from);
    double io = c->io[net], per_b = (c->io_b[net] + c->mac_b + c->copy_b) * frame(m->payload);
    p->msgs += m->kind >= CHALLENGE;
    switch (m->kind) {
    case REDIAL:
        return dial(s, r, t);
    case ACCEPT: /* accept4, SO_PEERCRED or TCP_NODELAY, the challenge, epoll_ctl */
        t += c->accept[net] + c->sysc + c->challenge + io + c->ctl;
        post(s, r, m->from, CHALLENGE, 0, 0, 0, WIRE_HEADER_LEN + (uint64_t)c->hs_len[0], t);
        p->msgs++;
        return t;
    case CHALLENGE: /* answered with a HELLO; a HELLO with a WELCOME, the child admitted */
    case HELLO:
        t += 2 * io + (m->kind == HELLO ? c->welcome : c->hello);
        post(s, r, m->from, m->kind + 1, 0, 0, 0,
             WIRE_HEADER_LEN + (uint64_t)c->hs_len[m->kind - CHALLENGE + 1], t);
        if (m->kind == HELLO)
            p->kids[p->nkids++] = m->from;
        p->msgs++;
        return t;
    case WELCOME:
        p->ready = true;
        return t + io + c->welcomed;
    case UP: /* conn_next's MAC; take_up (the root: root_store) */
        p->pend_n[m->x] += m->entries;
        p->pend_b[m->x] += m->payload;
        return t + io + c->check + c->entry * m->entries + per_b;
    default: /* DOWN: its MAC, serve_parent's copy, then to every child */
        return send_down(s, r, m->x, t + io + c->check + per_b);
    }
}

/* A round of r's net_poll at t: one epoll_wait, what came, progress. */
static void round_of(struct sim *s, uint32_t r, double t)
{
    struct proc *p = &s->p[r];
    double t0 = t;
    t += s->c->epoll;
    for (int k = 0; k < ROUND_MAX && p->in_at < p->n_in; k++)
        t = handle(s, r, &p->in[p->in_at++], t);
    if (p->in_at == p->n_in)
        p->in_at = p->n_in = 0;
    t = progress(s, r, t);
    p->cpu += t - t0;
    p->busy = t;
    if (!(p->waking = p->n_in > 0))
        return;
    push(s, (struct msg){.t = t, .to = r, .kind = WAKE});
}

/* m has reached its process: it waits for the next round. */
static void arrive(struct sim *s, const struct msg *m)
{
    struct proc *p = &s->p[m->to];
    if (p->n_in == p->cap_in &&
        !(p->in = realloc(p->in, (p->cap_in = 2 * p->cap_in + 4) * sizeof *p->in)))
        die("malloc");
    p->in[p->n_in++] = *m;
    if (!p->waking)
        push(s, (struct msg){.t = m->t > p->busy ? m->t : p->busy, .to = m->to, .kind = WAKE});
    p->waking = true;
}

/* A SYN at its parent's host: before the parent listens, refused, and
 * dialed again after the wait (1 ms, then + half + 1, at most 250);
 * else in the backlog, by the kernel (no CPU of the parent's). */
static void syn(struct sim *s, const struct msg *m)
{
    struct proc *kid = &s->p[m->from];
    bool net = tcp(s, m->from, m->to);
    double hop = net ? HOP_NET_US : HOP_NODE_US;
    if (m->t >= s->p[m->to].listen_at[net]) {
        push(s, (struct msg){.t = m->t + (net ? 2 * hop : 0), .to = m->to, .from = m->from,
                             .kind = ACCEPT});
        return;
    }
    s->refused++;
    push(s, (struct msg){.t = m->t + hop + kid->wait_ms * 1e3, .to = m->from, .kind = REDIAL});
    kid->wait_ms = (uint16_t)(kid->wait_ms * 3 / 2 + 1 > 250 ? 250 : kid->wait_ms * 3 / 2 + 1);
}

/* Every rank at 0: the tree of nodes (tree_up_node), its setup, a
 * leader's listeners, the first dial. */
static void start(struct sim *s)
{
    const struct costs *c = s->c;
    struct tree t = {.l.num_nodes = s->nodes, .fanout = s->fanout};
    uint32_t *depth = calloc(s->nodes, sizeof *depth);
    s->node_kids = calloc(s->nodes, sizeof *s->node_kids);
    s->p = calloc(s->ranks, sizeof *s->p);
    s->nic_out = calloc(s->nodes, sizeof *s->nic_out);
    s->nic_in = calloc(s->nodes, sizeof *s->nic_in);
    if (!depth || !s->node_kids || !s->p || !s->nic_out || !s->nic_in)
        die("malloc");
    for (uint32_t n = 1; n < s->nodes; n++) { /* a parent comes before its children */
        s->node_kids[tree_up_node(&t, n)]++;
        depth[n] = depth[tree_up_node(&t, n)] + 1;
        s->levels = depth[n] > s->levels ? depth[n] : s->levels;
    }
    s->levels++;
    for (uint32_t r = 0; r < s->ranks; r++) {
        struct proc *p = &s->p[r];
        uint32_t node = r / s->per_node, first = node * s->per_node;
        double at = c->open;
        p->parent = r != first ? first : r ? tree_up_node(&t, node) * s->per_node : NONE;
        p->wait_ms = 1;
        p->pend_n[0] = 1;
        p->pend_b[0] = 8 + block_len(s, 0, r);
        if (r == first) {
            p->listeners = 1 + (s->node_kids[node] > 0);
            if (!(p->kids = malloc(sizeof *p->kids * (s->per_node + s->node_kids[node]))))
                die("malloc");
            p->listen_at[0] = at += c->listen;
            p->listen_at[1] = at += s->node_kids[node] ? c->listen : 0;
        }
        p->busy = p->cpu = r ? dial(s, r, at) : progress(s, r, at);
    }
    free(depth);
}

/* "barrier,bcast128,allgather64" into s's exchanges. */
static void parse_exchanges(struct sim *s, const char *spec)
{
    char buf[256], *save = NULL, *end;
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        const char *num = !strcmp(w, "barrier") ? "0" : !strncmp(w, "bcast", 5) ? w + 5
                          : !strncmp(w, "allgather", 9) ? w + 9 : NULL;
        unsigned long n = num ? strtoul(num, &end, 10) : 0;
        if (!num || !*num || *end || n > BIG || s->nx == MAX_X) {
            fprintf(stderr, "boot_sim: '%s' is not barrier, bcastN or allgatherN (N up to %u; "
                            "%d exchanges at most)\n", w, BIG, MAX_X);
            exit(2);
        }
        s->bcast[s->nx] = w[1] == 'c';
        s->len[s->nx++] = (uint32_t)n;
    }
}

static void print_costs(const struct costs *c)
{
    fprintf(stderr, "measured (us): tree_open of a task %.1f, a Unix listener %.1f; handshake: "
            "challenge %.2f, challenge check + hello %.2f, hello check + welcome + session "
            "%.2f, welcome check + session %.2f; frame MAC seal/check %.2f/%.2f, a block taken "
            "up %.3f; per KiB: HMAC %.2f, memcpy %.3f; Unix send or recv %.2f +%.3f/KiB, "
            "connect/accept %.2f/%.2f; TCP send or recv %.2f +%.3f/KiB, connect/accept "
            "%.2f/%.2f; epoll_wait %.2f, epoll_ctl %.2f, getsockopt %.2f\n",
            c->open, c->listen, c->challenge, c->hello, c->welcome, c->welcomed, c->seal,
            c->check, c->entry, c->mac_b * 1024, c->copy_b * 1024, c->io[0], c->io_b[0] * 1024,
            c->connect[0], c->accept[0], c->io[1], c->io_b[1] * 1024, c->connect[1],
            c->accept[1], c->epoll, c->ctl, c->sysc);
}

static uint32_t sockets(const struct proc *p) /* listeners, children, parent */
{
    return p->listeners + p->nkids + (p->parent != NONE);
}

static void print_row(const struct sim *s, const char *spec, double wall_s)
{
    uint32_t most = 0, busiest = 0, local = 0;
    double cpu = 0, done = 0;
    for (uint32_t r = 0; r < s->ranks; r++) {
        const struct proc *p = &s->p[r];
        if (p->x != s->nx) {
            fprintf(stderr, "boot_sim: rank %u did not finish\n", r);
            exit(1);
        }
        most = sockets(&s->p[r]) > sockets(&s->p[most]) ? r : most;
        busiest = p->msgs > s->p[busiest].msgs ? r : busiest;
        cpu += p->cpu;
        done = p->done > done ? p->done : done;
    }
    const struct proc *m = &s->p[most], *b = &s->p[busiest];
    for (uint32_t i = 0; i < m->nkids; i++)
        local += !tcp(s, most, m->kids[i]);
    printf("| %u | %u | %u | %u | %s | %.3f | %u = %u+%u+%u+%u | %u <= %u | %u (rank %u) | %.3f "
           "| %.3f | %u | %.2f |\n",
           s->ranks, s->nodes, s->fanout, s->levels, spec, done / 1e3, sockets(m), m->listeners,
           local, m->nkids - local, (unsigned)(m->parent != NONE), m->nkids,
           s->fanout + s->per_node, b->msgs, busiest, b->cpu / 1e3, cpu / 1e6, s->refused, wall_s);
}

static void sim_free(struct sim *s)
{
    for (uint32_t r = 0; r < s->ranks; r++) {
        free(s->p[r].in);
        free(s->p[r].kids);
    }
    free(s->p);
    free(s->node_kids);
    free(s->nic_out);
    free(s->nic_in);
    free(s->heap);
}

int main(int argc, char **argv)
{
    struct sim s = {.per_node = 8, .fanout = TREE_DEFAULT_FANOUT};
    struct costs c;
    struct auth_key key;
    struct cohort_err err;
    uint32_t *a[3] = {&s.ranks, &s.per_node, &s.fanout};
    for (int i = 1; i < argc && i < 4; i++)
        *a[i - 1] = (uint32_t)strtoul(argv[i], NULL, 10);
    if (argc < 2 || s.ranks < 1 || s.ranks > (1u << 24) || s.per_node < 2 || s.per_node > 65536 ||
        s.fanout < 1 || s.fanout > TREE_MAX_FANOUT) {
        fprintf(stderr, "usage: boot_sim RANKS [PER_NODE (2-65536) [FANOUT [EXCHANGES]]]\n");
        return 2;
    }
    s.nodes = (s.ranks + s.per_node - 1) / s.per_node;
    parse_exchanges(&s, argc > 4 ? argv[4] : "barrier");
    if (auth_key_from_hex("the key", "000102030405060708090a0b0c0d0e0f"
                          "101112131415161718191a1b1c1d1e1f", &key, &err) < 0)
        die(err.msg);
    time_crypto(&c, &key);
    time_calls(&c);
    time_tree(&c, s.ranks, s.per_node, s.fanout, &key);
    print_costs(&c);
    s.c = &c;
    double t0 = now_us();
    for (start(&s); s.nheap;) {
        struct msg m = pop(&s);
        if (m.kind == WAKE)
            round_of(&s, m.to, m.t);
        else if (m.kind == SYN)
            syn(&s, &m);
        else
            arrive(&s, &m);
    }
    print_row(&s, argc > 4 ? argv[4] : "barrier", (now_us() - t0) / 1e6);
    sim_free(&s);
    return 0;
}
