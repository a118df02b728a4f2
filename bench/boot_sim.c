/* boot_sim.c - the TCP bootstrap tree (runtime/bootstrap/tree.h) at up to
 * 131,072 ranks, simulated: every process of a step from its start until it
 * returns from cohort_init's exchange (or later ones), as events on a
 * simulated clock; no socket carries a simulated message. This file owns
 * the simulation; boot_sim_costs.c measures what it charges.
 *
 * Real code: the tree of nodes (tree.c's tree_up_node); a rank's setup (a
 * real tree_open + tree_close of a non-leader rank of this step). Measured
 * at start, best of 5 batches, printed to stderr (boot_sim_costs.c): the
 * handshake's crypto, a frame's MAC each way, HMAC-SHA256 and memcpy per
 * byte, a block taken up, and the system calls of both kinds of socket.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot_sim.h"
#include "tree_private.h"

#define HOP_NODE_US 2.0
#define HOP_NET_US 5.0
#define LINK_B_PER_US 12500.0 /* 12.5 GB/s: 100 Gb/s */
#define MAX_X 8               /* exchanges in one run */
#define NONE UINT32_MAX

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
    costs_measure(&c, s.ranks, s.per_node, s.fanout);
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
