/* peers.c - a coordinator's ranks through the node relays (peers.h). It
 * holds one connection per relay of the tree's top, takes ranks joining and
 * going as the relays say, and hands their frames to the service by rank. */
#include "peers.h"

#include <stdio.h>
#include <stdlib.h>

struct peers {
    const struct coord_config *cfg;
    const struct peers_ops *ops;
    struct net *net;
    struct net_conn **relay; /* per node of the tree's top; NULL: none connected */
    uint32_t *top;           /* per rank: the node of the top relay it comes through */
    uint8_t *on;             /* per rank: 1 when joined and not gone; 2 when its relay
                              * was lost and the service is being told */
};

int peers_new(const struct coord_config *cfg, const struct peers_ops *ops, struct peers **out,
              struct cohort_err *err)
{
    struct peers *p = calloc(1, sizeof *p);
    *out = p;
    if (!p || !(p->relay = calloc(cfg->num_nodes, sizeof *p->relay)) ||
        !(p->on = calloc(cfg->size, 1)) || !(p->top = malloc(sizeof *p->top * cfg->size)))
        return cohort_fail(err, "out of memory");
    for (uint32_t r = 0; r < cfg->size; r++)
        p->top[r] = coord_relay_toward(cfg, COORD_TOP, cfg->rank_node[r]);
    p->cfg = cfg;
    p->ops = ops;
    return 0;
}

void peers_free(struct peers *p)
{
    if (!p)
        return;
    free(p->relay);
    free(p->top);
    free(p->on);
    free(p);
}

enum net_admit peers_admit(void *ctx, const struct hs_hello *h, bool via_unix,
                           struct cohort_err *why)
{
    struct peers *p = ctx;
    if (!coord_config_has_rank(p->cfg, h) || via_unix) /* Relays come over TCP. */
        return NET_DROP;
    if (p->relay[h->node]) {
        cohort_fail_code(why, COHORT_E_CONFIG,
                         "the node relay of node %u is connected to the coordinator already "
                         "(two relays for one node?)", h->node);
        return NET_REFUSE;
    }
    return NET_ADMIT;
}

void peers_attach(struct peers *p, struct net *net)
{
    p->net = net;
}

int peers_send(struct peers *p, uint32_t rank, uint16_t op, const void *b, uint32_t len)
{
    struct net_conn *c = p->relay[p->top[rank]];
    if (p->on[rank] != 1 || !c)
        return 0;
    return net_queue(c, WIRE_WORK, op, rank, b, len);
}

/* Marks rank gone and tells the service. */
static void gone(struct peers *p, uint32_t rank)
{
    p->on[rank] = 0;
    p->ops->lost(p->ops->ctx, rank);
}

void peers_drop(struct peers *p, uint32_t rank)
{
    struct net_conn *c = p->relay[p->top[rank]];
    if (p->on[rank] != 1)
        return;
    if (c)
        net_queue(c, WIRE_RELAY, RELAY_DROP, rank, NULL, 0);
    gone(p, rank);
}

/* Closes the relay of node, which is gone, and with it every rank it
 * carried (its node's and those of the relays below it). Every one is off
 * before the service hears of the first, because what the service sends on
 * a loss (a stream set's handoffs) must not go to another of them. */
static void relay_lost(struct peers *p, uint32_t node)
{
    net_close(p->net, p->relay[node]);
    p->relay[node] = NULL;
    for (uint32_t r = 0; r < p->cfg->size; r++)
        if (p->top[r] == node && p->on[r])
            p->on[r] = 2; /* It is gone, not yet told. */
    for (uint32_t r = 0; r < p->cfg->size; r++)
        if (p->on[r] == 2)
            gone(p, r);
}

/* Takes one frame of node's relay. Returns 0, or -1 when it breaks the
 * protocol. */
static int take(struct peers *p, uint32_t node, const struct wire_frame *f)
{
    uint32_t r = f->rank;
    if (r >= p->cfg->size || p->top[r] != node)
        return -1;
    if (f->type == WIRE_WORK) {
        if (p->on[r] && p->ops->frame(p->ops->ctx, r, f) < 0)
            peers_drop(p, r);
        return 0;
    }
    if (f->type != WIRE_RELAY || f->len != 0)
        return -1;
    if (f->flags == RELAY_JOIN && !p->on[r]) {
        p->on[r] = 1;
        p->ops->joined(p->ops->ctx, r);
        return 0;
    }
    if (f->flags == RELAY_GONE) {
        if (p->on[r])
            gone(p, r);
        return 0;
    }
    return -1;
}

/* Takes every whole frame of node's relay c; one that breaks the protocol
 * or fails its check loses the relay. */
static void serve(struct peers *p, struct net_conn *c, uint32_t node)
{
    struct wire_frame f;
    struct cohort_err e;
    int got;
    while ((got = conn_next(&c->c, WIRE_MAX_PAYLOAD_DEFAULT, &f, &e)) > 0) {
        if (take(p, node, &f) < 0) {
            got = -1;
            snprintf(e.msg, sizeof e.msg, "a %s frame for rank %u, against the protocol",
                     wire_type_name(f.type), f.rank);
            break;
        }
        conn_consume(&c->c, &f);
    }
    if (got < 0) {
        fprintf(stderr, "cohort: coordinator: the node relay of node %u sent %s: its "
                        "connection is closed and its ranks are lost\n", node, e.msg);
        relay_lost(p, node);
    }
}

void peers_events(struct peers *p, struct net_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        struct net_conn *c = ev[i].c;
        if (!(ev[i].what & NET_EV_JOINED))
            continue;
        if (p->relay[c->c.node]) { /* Two were admitted in one round: the first stays. */
            net_close(p->net, c);
            continue;
        }
        p->relay[c->c.node] = c;
    }
    for (int i = 0; i < n; i++) {
        struct net_conn *c = ev[i].c;
        uint32_t node = c->c.node;
        if (c->state != NET_READY || node >= p->cfg->num_nodes || p->relay[node] != c)
            continue;
        if (ev[i].what & (NET_EV_DATA | NET_EV_CLOSED))
            serve(p, c, node);
        if ((ev[i].what & NET_EV_CLOSED) && p->relay[node] == c)
            relay_lost(p, node);
    }
}
