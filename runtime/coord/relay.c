/* relay.c - a node relay (relay.h): the coordinator dialed, the node's
 * Unix socket served, frames carried both ways by rank. */
#include "relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coord_start.h"
#include "net.h"
#include "wire.h"

#define RELAY_WAIT_MS 1000 /* the longest poll: the idle deadline looked at this often */

struct relay {
    const struct coord_config *cfg;
    struct net *net;
    struct net_conn *up;       /* to the coordinator */
    struct net_conn **local;   /* per rank of the step: this node's ranks, connected */
    struct addrinfo *addrs;
    uint32_t n_local;          /* the node's ranks connected now */
    int64_t idle_by;           /* with none connected: the relay ends then */
    bool oom;
};

static enum net_admit admit(void *ctx, const struct hs_hello *h, struct cohort_err *why)
{
    struct relay *r = ctx;
    if (!coord_config_has_rank(r->cfg, h))
        return NET_DROP;
    if (r->local[h->rank]) {
        cohort_fail_code(why, COHORT_E_CONFIG,
                         "rank %u is connected to its node's relay already (two tasks with one "
                         "SLURM_PROCID?)", h->rank);
        return NET_REFUSE;
    }
    return NET_ADMIT;
}

static void send_up(struct relay *r, enum wire_type type, uint16_t op, uint32_t rank,
                    const void *p, uint32_t len)
{
    if (net_queue(r->up, type, op, rank, p, len) < 0)
        r->oom = true;
}

/* The coordinator, reached by the join deadline. */
static int dial_up(struct relay *r, struct cohort_err *err)
{
    const struct coord_config *cfg = r->cfg;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", cfg->port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    int g = getaddrinfo(cfg->host, ps, &hints, &r->addrs);
    if (g != 0)
        return cohort_fail(err, "the node relay of node %u cannot resolve %s: %s", cfg->node,
                           cfg->host, gai_strerror(g));
    struct net_target t = {.addrs = r->addrs, .port = cfg->port, .listening = true,
                           .timeout_s = (int)cfg->join_timeout_s, .role = "work coordinator"};
    snprintf(t.name, sizeof t.name, "the coordinator at %.100s:%u", cfg->host, cfg->port);
    long long end = net_now_ms() + (long long)cfg->join_timeout_s * 1000;
    if (!(r->up = net_dial(r->net, &t, end)))
        return cohort_fail(err, "out of memory");
    while (r->up->state != NET_READY) {
        struct net_event *ev;
        long long left = end - net_now_ms();
        int n = net_poll(r->net, left > 0 ? (int)left : 0, &ev, err);
        if (n < 0)
            return -1;
        for (int i = 0; i < n; i++)
            if (ev[i].what & NET_EV_FAILED)
                return cohort_fail(err, "the node relay of node %u: %s", cfg->node,
                                   net_dial_error(r->up)->msg);
    }
    return 0;
}

/* The node's Unix socket, served; "1" told to the starting rank. */
static int listen_local(struct relay *r, struct cohort_err *err)
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
    return coord_started(1, err);
}

/* A rank's connection closed, the rank broke the protocol, or the
 * coordinator dropped it: closed, and the coordinator told (it ignores a
 * GONE for a rank it dropped). */
static void local_gone(struct relay *r, uint32_t rank)
{
    net_close(r->net, r->local[rank]);
    r->local[rank] = NULL;
    if (--r->n_local == 0)
        r->idle_by = net_now_ms() + (int64_t)r->cfg->join_timeout_s * 1000;
    send_up(r, WIRE_RELAY, RELAY_GONE, rank, NULL, 0);
}

/* Every whole frame of rank's connection c, up. */
static void from_rank(struct relay *r, struct net_conn *c, uint32_t rank)
{
    struct wire_frame f;
    struct cohort_err e;
    int got;
    while ((got = conn_next(&c->c, WIRE_MAX_PAYLOAD_DEFAULT, &f, &e)) > 0 &&
           f.type == WIRE_WORK) {
        send_up(r, WIRE_WORK, f.flags, rank, f.payload, f.len);
        conn_consume(&c->c, &f);
    }
    if (got == 0)
        return;
    fprintf(stderr, "cohort: node relay of node %u: rank %u sent %s: its connection is "
                    "closed\n", r->cfg->node, rank, got > 0 ? "a frame of another kind" : e.msg);
    local_gone(r, rank);
}

/* Every whole frame of the coordinator, down: 0, or -1 when it broke the
 * protocol (the relay ends). */
static int from_up(struct relay *r)
{
    struct wire_frame f;
    struct cohort_err e;
    int got;
    while ((got = conn_next(&r->up->c, WIRE_MAX_PAYLOAD_DEFAULT, &f, &e)) > 0) {
        uint32_t rank = f.rank;
        struct net_conn *c = rank < r->cfg->size ? r->local[rank] : NULL;
        if (f.type == WIRE_WORK && c) {
            if (net_queue(c, WIRE_WORK, f.flags, UINT32_MAX, f.payload, f.len) < 0)
                r->oom = true;
        } else if (f.type == WIRE_RELAY && f.flags == RELAY_DROP && c) {
            local_gone(r, rank); /* GONE up: a rank back since the drop is not left on */
        } else if (f.type != WIRE_WORK && f.type != WIRE_RELAY) {
            snprintf(e.msg, sizeof e.msg, "a %s frame", wire_type_name(f.type));
            break;
        } /* else for a rank gone since: its GONE is on the way up */
        conn_consume(&r->up->c, &f);
    }
    if (got == 0)
        return 0;
    fprintf(stderr, "cohort: node relay of node %u: the coordinator sent %s: the relay ends\n",
            r->cfg->node, e.msg);
    return -1;
}

/* One round's events: 0, or -1 when the relay ends. */
static int on_events(struct relay *r, struct net_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        struct net_conn *c = ev[i].c;
        if (!(ev[i].what & NET_EV_JOINED))
            continue;
        if (r->local[c->c.rank]) { /* two admitted in one round: the first stays */
            net_close(r->net, c);
            continue;
        }
        r->local[c->c.rank] = c;
        r->n_local++;
        send_up(r, WIRE_RELAY, RELAY_JOIN, c->c.rank, NULL, 0);
    }
    for (int i = 0; i < n; i++) {
        struct net_conn *c = ev[i].c;
        if (c == r->up) {
            if ((ev[i].what & (NET_EV_DATA | NET_EV_CLOSED)) && from_up(r) < 0)
                return -1;
            continue;
        }
        uint32_t rank = c->c.rank;
        if (c->state != NET_READY || rank >= r->cfg->size || r->local[rank] != c)
            continue;
        if (ev[i].what & (NET_EV_DATA | NET_EV_CLOSED))
            from_rank(r, c, rank);
        if ((ev[i].what & NET_EV_CLOSED) && r->local[rank] == c)
            local_gone(r, rank);
    }
    return r->up->closed ? -1 : 0;
}

/* The coordinator closed (or broke the protocol): every rank still here
 * is told so, to tell that from the relay's own death. */
static void tell_closed(struct relay *r)
{
    for (uint32_t i = 0; r->n_local && i < r->cfg->size; i++)
        if (r->local[i] &&
            net_queue(r->local[i], WIRE_RELAY, RELAY_GONE, UINT32_MAX, NULL, 0) < 0)
            r->oom = true;
}

static int serve(struct relay *r, struct cohort_err *err)
{
    /* the other nodes' relays may start up to the join timeout after this
     * one: its ranks are given that long again to come */
    r->idle_by = net_now_ms() + 2 * (int64_t)r->cfg->join_timeout_s * 1000;
    while (r->n_local || net_now_ms() < r->idle_by) {
        struct net_event *ev;
        int n = net_poll(r->net, RELAY_WAIT_MS, &ev, err);
        if (n < 0)
            return -1;
        if (on_events(r, ev, n) < 0) {
            tell_closed(r);
            break;
        }
        if (r->oom)
            return cohort_fail(err, "out of memory");
    }
    net_flush(r->net, net_now_ms() + 1000);
    return 0;
}

int relay_run(const struct coord_config *cfg, struct cohort_err *err)
{
    struct relay r = {.cfg = cfg};
    uint32_t ranks = 0; /* the node's */
    prctl(PR_SET_NAME, "cohort-relay"); /* what ps and top show: not a coordinator */
    for (uint32_t i = 0; i < cfg->size; i++)
        ranks += cfg->rank_node[i] == cfg->node;
    struct hs_self me = {.key = &cfg->key, .job = cfg->job, .step = cfg->step,
                         .rank = COORD_AGENT_RANK, .node = cfg->node};
    memcpy(me.view, cfg->view, sizeof me.view);
    struct net_ops ops = {.ctx = &r, .max_payload = WIRE_MAX_PAYLOAD_DEFAULT, .admit = admit};
    int rc = -2;
    char who[48];
    snprintf(who, sizeof who, "the node relay of node %u", cfg->node);
    if (net_fd_check(ranks + 1, who, "of its node's ranks and the coordinator, one connection "
                     "each", err) < 0)
        return rc;
    if (!(r.local = calloc(cfg->size, sizeof *r.local)))
        return cohort_fail(err, "out of memory") - 1;
    if (net_new(&me, &ops, &r.net, err) == 0 && dial_up(&r, err) == 0 &&
        listen_local(&r, err) == 0)
        rc = serve(&r, err);
    net_free(r.net);
    free(r.local);
    if (r.addrs)
        freeaddrinfo(r.addrs);
    return rc;
}
