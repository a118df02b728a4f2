/* relay.c - the node relay (relay.h). It dials its parent (the coordinator
 * or the relay above), serves the node's Unix socket and the relays below,
 * and carries frames both ways by rank. */
#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coord_start.h"
#include "net.h"
#include "wire.h"

#define RELAY_WAIT_MS 1000 /* The longest poll: the idle deadline is checked this often. */
#define NO_NODE UINT32_MAX

struct relay {
    const struct coord_config *cfg;
    struct net *net;
    struct net_conn *up;       /* to the coordinator, or the relay above */
    struct net_conn **local;   /* per rank of the step: this node's connected ranks */
    struct net_conn **kid;     /* per relay below: its connection, when connected */
    uint32_t *via;             /* per rank below: the node of the relay below that the
                                * rank joined through (NO_NODE: not joined) */
    struct addrinfo *addrs;
    uint32_t first_kid, n_kids; /* the relays below are on nodes first_kid, ... */
    uint32_t n_local, kids_on; /* ranks and relays below connected now */
    uint32_t node_ranks, n_seen; /* this node's ranks, and how many of them ever joined */
    bool *seen;                /* per rank of the step: this node's ranks that joined */
    uint32_t gone_node;        /* where the way up closed: the node the one above named or,
                                * failing that, the one above (NO_NODE: the coordinator) */
    bool heard;                /* the one above said where the way up closed */
    bool gone;                 /* The way up closed, so whoever joins is told where at once. */
    bool broken;               /* The one above broke the protocol. */
    int64_t idle_by;           /* When nothing is connected, or once gone, the relay ends then. */
    int *tell;                 /* the descriptor its start is told on (closed, then -1),
                                * or NULL for standard output */
    uint32_t others;           /* descriptors its process holds besides (host.h); 0: alone */
    bool oom;
};

static enum net_admit admit(void *ctx, const struct hs_hello *h, bool via_unix,
                            struct cohort_err *why)
{
    struct relay *r = ctx;
    /* This node's ranks come over its Unix socket (their uid is checked) and
     * the relays below over TCP, so a key holder coming the other way is dropped. */
    if (!coord_config_has_rank(r->cfg, h) || via_unix != (h->rank != COORD_AGENT_RANK))
        return NET_DROP;
    if (h->rank == COORD_AGENT_RANK ? r->kid[h->node - r->first_kid] != NULL
                                    : r->local[h->rank] != NULL) {
        cohort_fail_code(why, COHORT_E_CONFIG,
                         h->rank == COORD_AGENT_RANK
                             ? "the relay of node %u is connected already (two relays for a node?)"
                             : "rank %u is connected to its node's relay already (two tasks "
                               "with one SLURM_PROCID?)",
                         h->rank == COORD_AGENT_RANK ? h->node : h->rank);
        return NET_REFUSE;
    }
    return NET_ADMIT;
}

/* Queues a frame on c; when that fails, the relay is out of memory. */
static void send_on(struct relay *r, struct net_conn *c, enum wire_type type, uint16_t op,
                    uint32_t rank, const void *p, uint32_t len)
{
    if (net_queue(c, type, op, rank, p, len) < 0)
        r->oom = true;
}

/* Returns whether ss is a loopback address (IPv4's 127/8, ::1, or 127/8 mapped). */
static bool loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    return ss->ss_family == AF_INET6 &&
           (IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127));
}

/* Writes to addr where the relays below reach this relay: the local
 * address of its connection up, which is the node's address toward the one
 * above. When that is a loopback address at the top (the coordinator is on
 * this very host, reached through lo), it writes instead the coordinator's
 * host as every rank was given it (MASTER_ADDR, which every node reaches).
 * Returns 0, or -1 with err. */
static int own_addr(struct relay *r, char addr[COORD_ADDR_LEN], struct cohort_err *err)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int g = getsockname(r->up->c.fd, (struct sockaddr *)&ss, &sl) < 0 ? EAI_SYSTEM
            : getnameinfo((struct sockaddr *)&ss, sl, addr, COORD_ADDR_LEN, NULL, 0,
                          NI_NUMERICHOST);
    if (g != 0)
        return cohort_fail(err, "the node relay of node %u cannot tell its own address: %s",
                           r->cfg->node, g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
    if (loopback(&ss) && coord_relay_up(r->cfg, r->cfg->node) == COORD_TOP)
        snprintf(addr, COORD_ADDR_LEN, "%s", r->cfg->host);
    return 0;
}

/* Dials the coordinator or the relay above within half the join timeout
 * and writes to addr where the relays below reach this relay. Returns 0, or
 * -1 with err. It waits only half because the starting rank waits the whole
 * timeout for the relay's line: a relay that cannot reach up says why first. */
static int dial_up(struct relay *r, char addr[COORD_ADDR_LEN], struct cohort_err *err)
{
    const struct coord_config *cfg = r->cfg;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", cfg->port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    int g = getaddrinfo(cfg->host, ps, &hints, &r->addrs);
    if (g != 0)
        return cohort_fail(err, "the node relay of node %u cannot resolve %s: %s", cfg->node,
                           cfg->host, gai_strerror(g));
    uint32_t above = coord_relay_up(cfg, cfg->node);
    int wait_s = cfg->join_timeout_s > 1 ? (int)cfg->join_timeout_s / 2 : 1;
    struct net_target t = {.addrs = r->addrs, .port = cfg->port, .listening = true,
                           .timeout_s = wait_s,
                           .role = above == COORD_TOP ? "work coordinator" : "node relay"};
    if (above == COORD_TOP)
        snprintf(t.name, sizeof t.name, "the coordinator at %.100s:%u", cfg->host, cfg->port);
    else
        snprintf(t.name, sizeof t.name, "the relay of node %u at %.100s:%u", above, cfg->host,
                 cfg->port);
    struct cohort_err e;
    if (!(r->up = net_dial_wait(r->net, &t, base_now_ms() + (long long)wait_s * 1000, &e)))
        return cohort_fail(err, "the node relay of node %u: %s", cfg->node, e.msg);
    return own_addr(r, addr, err);
}

/* Listens on the node's Unix socket and, when there are relays below, on a
 * TCP port for them, then tells the starting rank the port and addr.
 * Returns 0, or -1 with err. */
static int listen_all(struct relay *r, const char *addr, struct cohort_err *err)
{
    struct sockaddr_un ua;
    socklen_t len = coord_relay_addr(r->cfg->name, &ua);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&ua, len) < 0 || listen(fd, 4096) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return cohort_fail(err, "the node relay of node %u cannot listen on its socket "
                           "@%s: %s", r->cfg->node, r->cfg->name, strerror(e));
    }
    if (net_listen(r->net, fd, true, err) < 0)
        return -1;
    uint16_t port = 0;
    if (r->n_kids && ((fd = coord_listen_any(&port, err)) < 0 ||
                      net_listen(r->net, fd, false, err) < 0))
        return -1;
    unsigned told = r->n_kids ? port : 1;
    return r->tell ? coord_tell(r->tell, told, addr, err) : coord_started(told, addr, err);
}

/* When nothing is connected any more, sets the relay to end after the join
 * timeout (or at the start's deadline, when that is later). */
static void maybe_idle(struct relay *r)
{
    int64_t by = base_now_ms() + (int64_t)r->cfg->join_timeout_s * 1000;
    if (!r->gone && r->n_local == 0 && r->kids_on == 0 && by > r->idle_by)
        r->idle_by = by;
}

/* Closes the connection of a rank that closed it, broke the protocol or was
 * dropped by the coordinator, and tells the coordinator unless the way up
 * is gone. The coordinator ignores a GONE for a rank it dropped. */
static void local_gone(struct relay *r, uint32_t rank)
{
    net_close(r->net, r->local[rank]);
    r->local[rank] = NULL;
    r->n_local--;
    maybe_idle(r);
    if (!r->gone)
        send_on(r, r->up, WIRE_RELAY, RELAY_GONE, rank, NULL, 0);
}

/* Closes the connection of the relay below on node kid, which closed or
 * broke the protocol, and sends a GONE up for every rank that joined
 * through it. */
static void kid_gone(struct relay *r, uint32_t kid)
{
    net_close(r->net, r->kid[kid - r->first_kid]);
    r->kid[kid - r->first_kid] = NULL;
    r->kids_on--;
    maybe_idle(r);
    for (uint32_t i = 0; !r->gone && i < r->cfg->size; i++)
        if (r->via[i] == kid) {
            r->via[i] = NO_NODE;
            send_on(r, r->up, WIRE_RELAY, RELAY_GONE, i, NULL, 0);
        }
}

/* Sends every whole frame of rank's connection c up. */
static void from_rank(struct relay *r, struct net_conn *c, uint32_t rank)
{
    struct wire_frame f;
    struct cohort_err e;
    int got;
    while ((got = conn_next(&c->c, WIRE_MAX_PAYLOAD_DEFAULT, &f, &e)) > 0 &&
           f.type == WIRE_WORK) {
        send_on(r, r->up, WIRE_WORK, f.flags, rank, f.payload, f.len);
        conn_consume(&c->c, &f);
    }
    if (got == 0)
        return;
    fprintf(stderr, "cohort: node relay of node %u: rank %u sent %s: its connection is "
                    "closed\n", r->cfg->node, rank, got > 0 ? "a frame of another kind" : e.msg);
    local_gone(r, rank);
}

/* Sends one frame of the relay below on node kid up. Returns 0, or -1 when
 * the frame is not for a rank below that relay or is out of order (a rank
 * joins once, and sends and goes only while joined); then that relay alone
 * is lost, not every rank of the way up. */
static int kid_frame(struct relay *r, uint32_t kid, const struct wire_frame *f)
{
    uint32_t rank = f->rank;
    if (rank >= r->cfg->size ||
        coord_relay_toward(r->cfg, r->cfg->node, r->cfg->rank_node[rank]) != kid)
        return -1;
    if (f->type == WIRE_RELAY && f->len == 0 && f->flags == RELAY_JOIN &&
        r->via[rank] == NO_NODE)
        r->via[rank] = kid;
    else if (f->type == WIRE_RELAY && f->len == 0 && f->flags == RELAY_GONE &&
             r->via[rank] == kid)
        r->via[rank] = NO_NODE;
    else if (f->type != WIRE_WORK || r->via[rank] != kid)
        return -1; /* It is a second JOIN, or a rank not joined went or asked. */
    send_on(r, r->up, f->type, f->flags, rank, f->payload, f->len);
    return 0;
}

/* Sends every whole frame of the relay below on node kid up. */
static void from_kid(struct relay *r, struct net_conn *c, uint32_t kid)
{
    struct wire_frame f;
    struct cohort_err e;
    int got;
    while ((got = conn_next(&c->c, WIRE_MAX_PAYLOAD_DEFAULT, &f, &e)) > 0) {
        if (kid_frame(r, kid, &f) < 0) {
            got = -1;
            snprintf(e.msg, sizeof e.msg, "a %s frame for rank %u, against the protocol",
                     wire_type_name(f.type), f.rank);
            break;
        }
        conn_consume(&c->c, &f);
    }
    if (got == 0)
        return;
    fprintf(stderr, "cohort: node relay of node %u: the relay of node %u sent %s: its "
                    "connection is closed and its ranks are lost\n", r->cfg->node, kid, e.msg);
    kid_gone(r, kid);
}

/* Passes one frame from above on toward rank f->rank: to the rank itself
 * when it is on this node, or else to the relay below on its way. */
static void down(struct relay *r, const struct wire_frame *f)
{
    uint32_t rank = f->rank, node = r->cfg->rank_node[rank];
    if (node == r->cfg->node) {
        struct net_conn *c = r->local[rank];
        if (c && f->type == WIRE_WORK)
            send_on(r, c, WIRE_WORK, f->flags, UINT32_MAX, f->payload, f->len);
        else if (c && f->type == WIRE_RELAY && f->flags == RELAY_DROP)
            /* Its GONE goes up, so that a rank back since the drop is not left on. */
            local_gone(r, rank);
        return; /* Else the rank has gone since, and its GONE is on the way up. */
    }
    uint32_t kid = coord_relay_toward(r->cfg, r->cfg->node, node);
    struct net_conn *c = kid != UINT32_MAX ? r->kid[kid - r->first_kid] : NULL;
    if (c)
        send_on(r, c, f->type, f->flags, rank, f->payload, f->len);
}

/* Passes every whole frame from above down. Returns 0, or -1 when the one
 * above broke the protocol (then the relay ends). */
static int from_up(struct relay *r)
{
    struct wire_frame f;
    struct cohort_err e;
    int got;
    while ((got = conn_next(&r->up->c, WIRE_MAX_PAYLOAD_DEFAULT, &f, &e)) > 0) {
        bool all = f.type == WIRE_RELAY && f.flags == RELAY_GONE && f.rank == UINT32_MAX;
        if (all && (f.len == 0 || f.len == 4)) {
            r->heard = true;
            r->gone_node = f.len ? wire_get32(f.payload) : NO_NODE;
        } else if ((f.type != WIRE_WORK && f.type != WIRE_RELAY) || f.rank >= r->cfg->size) {
            snprintf(e.msg, sizeof e.msg, "a %s frame for rank %u", wire_type_name(f.type),
                     f.rank);
            break;
        } else {
            down(r, &f);
        }
        conn_consume(&r->up->c, &f);
    }
    if (got == 0)
        return 0;
    r->broken = true;
    fprintf(stderr, "cohort: node relay of node %u: the %s sent %s: the relay ends\n",
            r->cfg->node,
            coord_relay_up(r->cfg, r->cfg->node) == COORD_TOP ? "coordinator" : "relay above",
            e.msg);
    return -1;
}

/* Tells c where the way up closed (RELAY_GONE for rank UINT32_MAX, with
 * the node of the relay that went, or nothing for the coordinator). */
static void tell_gone(struct relay *r, struct net_conn *c)
{
    uint8_t b[4];
    wire_put32(b, r->gone_node);
    send_on(r, c, WIRE_RELAY, RELAY_GONE, UINT32_MAX, b, r->gone_node == NO_NODE ? 0 : 4);
}

/* Takes in a connection that proved itself: a rank of this node, or a relay
 * below. Once the way up closed, the connection is told so at once. */
static void joined(struct relay *r, struct net_conn *c)
{
    struct net_conn **slot = c->c.rank == COORD_AGENT_RANK ? &r->kid[c->c.node - r->first_kid]
                                                         : &r->local[c->c.rank];
    if (*slot) { /* Two were admitted in one round: the first stays. */
        net_close(r->net, c);
        return;
    }
    *slot = c;
    if (c->c.rank == COORD_AGENT_RANK) {
        r->kids_on++;
    } else {
        r->n_local++;
        r->n_seen += !r->seen[c->c.rank];
        r->seen[c->c.rank] = true;
    }
    if (r->gone)
        tell_gone(r, c);
    else if (c->c.rank != COORD_AGENT_RANK)
        send_on(r, r->up, WIRE_RELAY, RELAY_JOIN, c->c.rank, NULL, 0);
}

/* Closes the way up and tells every rank and relay below still here where
 * it closed (the coordinator, or the relay that went), so that they can tell
 * that from this relay's own death. Each of this node's ranks that joins
 * later, within the join timeout, is told too: a rank slower to open the
 * queue than the failure would otherwise find no relay, and could not say
 * what failed. */
static void go_gone(struct relay *r)
{
    uint32_t above = coord_relay_up(r->cfg, r->cfg->node);
    if (!r->heard) /* The one above went (the coordinator: NO_NODE). */
        r->gone_node = above == COORD_TOP ? NO_NODE : above;
    r->gone = true;
    net_close(r->net, r->up);
    r->up = NULL;
    r->idle_by = base_now_ms() + (int64_t)r->cfg->join_timeout_s * 1000;
    for (uint32_t i = 0; r->n_local && i < r->cfg->size; i++)
        if (r->local[i])
            tell_gone(r, r->local[i]);
    for (uint32_t i = 0; i < r->n_kids; i++)
        if (r->kid[i])
            tell_gone(r, r->kid[i]);
}

/* Drops what a rank or a relay below sends once the way up closed, and
 * closes its connection when it closes or breaks the protocol. */
static void drain(struct relay *r, struct net_conn *c, unsigned what)
{
    struct wire_frame f;
    struct cohort_err e;
    int got = 0;
    if (what & NET_EV_DATA)
        while ((got = conn_next(&c->c, WIRE_MAX_PAYLOAD_DEFAULT, &f, &e)) > 0)
            conn_consume(&c->c, &f);
    if (got == 0 && !(what & NET_EV_CLOSED))
        return;
    if (c->c.rank == COORD_AGENT_RANK)
        kid_gone(r, c->c.node);
    else
        local_gone(r, c->c.rank);
}

/* Returns whether c is the connection of a rank of this node or a relay below
 * that the relay holds (not one closed or put aside since). */
static bool owned(const struct relay *r, const struct net_conn *c)
{
    if (c->c.rank == COORD_AGENT_RANK)
        return c->c.node - r->first_kid < r->n_kids && r->kid[c->c.node - r->first_kid] == c;
    return c->c.rank < r->cfg->size && r->local[c->c.rank] == c;
}

/* Handles one round's events. Returns 0, or -1 when the way up closed or
 * broke, or the one above said it closed further up (then nothing more
 * comes from it). */
static int on_events(struct relay *r, struct net_event *ev, int n)
{
    for (int i = 0; i < n; i++)
        if (ev[i].what & NET_EV_JOINED)
            joined(r, ev[i].c);
    for (int i = 0; i < n; i++) {
        struct net_conn *c = ev[i].c;
        bool data = ev[i].what & (NET_EV_DATA | NET_EV_CLOSED);
        if (r->gone) {
            if (c->state == NET_READY && owned(r, c))
                drain(r, c, ev[i].what);
            continue;
        }
        if (c == r->up) { /* When it broke, the round's other events are still taken in. */
            if (data && !r->broken)
                from_up(r);
            continue;
        }
        if (c->state != NET_READY)
            continue;
        if (!owned(r, c))
            continue;
        if (c->c.rank == COORD_AGENT_RANK) {
            uint32_t kid = c->c.node;
            if (data)
                from_kid(r, c, kid);
            if ((ev[i].what & NET_EV_CLOSED) && r->kid[kid - r->first_kid] == c)
                kid_gone(r, kid);
            continue;
        }
        uint32_t rank = c->c.rank;
        if (data)
            from_rank(r, c, rank);
        if ((ev[i].what & NET_EV_CLOSED) && r->local[rank] == c)
            local_gone(r, rank);
    }
    return !r->gone && (r->up->closed || r->broken || r->heard) ? -1 : 0;
}

/* Serves the relay's connections until nothing is connected after the idle
 * deadline or, once the way up closed, until every rank of the node joined
 * or the deadline passed. Returns 0, or -1 with err. */
static int serve(struct relay *r, struct cohort_err *err)
{
    r->idle_by = base_now_ms() +
                 (int64_t)(coord_relay_levels(r->cfg) + 1) * r->cfg->join_timeout_s * 1000;
    while (r->gone ? r->n_seen < r->node_ranks && base_now_ms() < r->idle_by
                   : r->n_local || r->kids_on || base_now_ms() < r->idle_by) {
        struct net_event *ev;
        int n = net_poll(r->net, RELAY_WAIT_MS, &ev, err);
        if (n < 0)
            return -1;
        if (on_events(r, ev, n) < 0) {
            /* A failed write closes it too; what the one above said last is still read. */
            if (!r->broken)
                conn_fill(&r->up->c, WIRE_MAX_PAYLOAD_DEFAULT);
            if (!r->broken)
                from_up(r);
            go_gone(r);
        }
        if (r->oom)
            return cohort_fail(err, "out of memory");
    }
    net_flush(r->net, base_now_ms() + 1000);
    return 0;
}

/* Returns how many ranks the relay's node runs. */
static uint32_t node_ranks(const struct coord_config *cfg)
{
    uint32_t ranks = 0;
    for (uint32_t i = 0; i < cfg->size; i++)
        ranks += cfg->rank_node[i] == cfg->node;
    return ranks;
}

uint32_t relay_fds(const struct coord_config *cfg, bool shared)
{
    uint32_t kids = coord_relay_kids(cfg, cfg->node);
    return node_ranks(cfg) + kids + (kids ? 3 : 2) + (shared ? 2 + RELAY_POOL : 0);
}

/* Checks the relay's descriptors (counting what the node's other relays in
 * this process hold), then allocates its tables. Returns 0, or -1 with err. */
static int setup(struct relay *r, struct cohort_err *err)
{
    const struct coord_config *cfg = r->cfg;
    r->node_ranks = node_ranks(cfg);
    r->n_kids = coord_relay_kids(cfg, cfg->node);
    r->first_kid = (cfg->node + 1) * cfg->fanout;
    char who[48];
    snprintf(who, sizeof who, "the node relay of node %u", cfg->node);
    /* net_fd_check counts the room for strangers itself; RELAY_POOL is that room. */
    _Static_assert(RELAY_POOL == NET_ROOM_MIN, "a shared relay's room is the one checked for");
    uint32_t room = r->others ? RELAY_POOL : 0;
    if (net_fd_check(relay_fds(cfg, r->others > 0) - room + r->others, who,
                     r->others ? "of its node's ranks, the relays below it, the one above, its "
                                 "listeners and what its process holds besides, one each"
                               : "of its node's ranks, the relays below it, the one above and "
                                 "its listeners, one each",
                     err) < 0)
        return -1;
    if (!(r->local = calloc(cfg->size, sizeof *r->local)) ||
        !(r->kid = calloc(r->n_kids ? r->n_kids : 1, sizeof *r->kid)) ||
        !(r->via = malloc(sizeof *r->via * cfg->size)) ||
        !(r->seen = calloc(cfg->size, sizeof *r->seen)))
        return cohort_fail(err, "out of memory");
    for (uint32_t i = 0; i < cfg->size; i++)
        r->via[i] = NO_NODE;
    return 0;
}

int relay_run(const struct coord_config *cfg, int *tell, uint32_t others, struct cohort_err *err)
{
    struct relay r = {.cfg = cfg, .gone_node = NO_NODE, .tell = tell, .others = others};
    prctl(PR_SET_NAME, "cohort-relay"); /* ps and top show a relay, not a coordinator. */
    struct hs_self me = {.key = &cfg->key, .job = cfg->job, .step = cfg->step,
                         .rank = COORD_AGENT_RANK, .node = cfg->node};
    memcpy(me.view, cfg->view, sizeof me.view);
    struct net_ops ops = {.ctx = &r, .max_payload = WIRE_MAX_PAYLOAD_DEFAULT, .admit = admit};
    char addr[COORD_ADDR_LEN];
    int rc = -2;
    if (setup(&r, err) == 0 && net_new(&me, &ops, &r.net, err) == 0) {
        /* Its ranks, the relays below and the one above have slots; strangers never. */
        long peers = (long)r.node_ranks + r.n_kids + 1;
        net_reserve(r.net, peers);
        if (others) /* In a shared process, its connections stay within what it was counted for. */
            net_cap(r.net, peers + RELAY_POOL);
        if (dial_up(&r, addr, err) == 0 && listen_all(&r, addr, err) == 0)
            rc = serve(&r, err);
    }
    net_free(r.net);
    free(r.local);
    free(r.kid);
    free(r.via);
    free(r.seen);
    if (r.addrs)
        freeaddrinfo(r.addrs);
    return rc;
}
