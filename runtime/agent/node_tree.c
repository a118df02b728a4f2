/* node_tree.c - the node agent's place in the watch's tree of nodes (see
 * agent.h and watch_tree.h): the agents below it, their frames passed up,
 * their silence judged, and the holder's verdict passed down to them.
 *
 * Decisions: an agent below is lost as the holder loses one: its link
 * closed without a goodbye, or WATCH_LOST_MS of silence; its loss goes up
 * at once with how long it was silent, and the holder names it. An agent
 * whose parent is lost, leaves (its node's tasks ended) or never answers
 * its dial (its port taken, its agent not started) dials the holder
 * instead, so that it stays watched and its tasks are ended by the
 * holder's verdict, not by one of its own whose ends the healthy nodes'
 * ranks would see first; only an agent that cannot reach the holder either
 * decides alone (node_watch.c). A parent that has left takes no child, and
 * a child that joins late is told what the others were told. The tree is
 * only for steps whose store is not served: with the store, every agent has
 * a link to the holder for the queries anyway, and a local client's store
 * frames are dropped by the parent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "coord_start.h"
#include "store_msg.h"
#include "watch.h"
#include "watch_tree.h"

/* The dial to the holder in place of the parent gives up after this (s):
 * the holder is up from the step's start, so an agent that cannot reach it
 * in this time is cut off, and decides alone (node_watch.c). */
#define TREE_REDIAL_S (WATCH_LOST_MS / 1000)

/* What the agents below sent while the link up was not ready (not yet
 * connected, or dialing the holder after the parent left) waits for it, up
 * to this many bytes; past it, frames are dropped and counted. */
#define TREE_HELD_MAX (16u << 20)

/* A frame held for the link up. */
struct held_frame {
    uint16_t op;
    uint32_t c;
    size_t len;
    uint8_t *p;
};

/* An agent right below this one. */
struct tree_kid {
    struct net_conn *c; /* NULL: not connected, or no longer */
    int64_t heard;
    bool claimed;       /* admitted once; never again */
    bool left, lost;
};

struct node_tree {
    uint32_t fanout, parent, first, n_kids;
    struct tree_kid *kid;
    int lfd;
    bool redial;        /* the holder is to be dialed */
    bool direct;        /* it was: this agent is at the top now */
    bool left;          /* the node's tasks ended: no child is taken any more */
    bool over;          /* the holder said the watch is over */
    uint8_t *verdict;   /* the verdict passed down, for children that join later */
    size_t verdict_len;
    struct held_frame *held;
    size_t n_held, cap_held, held_bytes;
    unsigned dropped;   /* frames dropped past TREE_HELD_MAX */
};

/* Sends a frame up, or holds it while the link up is not ready (and while
 * frames held before it wait, to keep their order). */
static void send_up(struct agent *a, uint16_t op, uint32_t c, const uint8_t *p, size_t len)
{
    struct node_tree *t = a->tree;
    if (a->up_ready && !t->n_held) {
        agent_up_send(a, op, c, p, len, NULL, 0);
        return;
    }
    uint8_t *copy = len ? malloc(len) : NULL;
    if (t->held_bytes + len > TREE_HELD_MAX || (len && !copy) ||
        base_grow((void **)&t->held, &t->cap_held, t->n_held + 1, sizeof *t->held) < 0) {
        free(copy);
        t->dropped++;
        return;
    }
    if (len)
        memcpy(copy, p, len);
    t->held[t->n_held++] = (struct held_frame){op, c, len, copy};
    t->held_bytes += len;
}

/* Sends up what was held, in order, once the link up is ready. */
static void send_held(struct agent *a)
{
    struct node_tree *t = a->tree;
    for (size_t i = 0; i < t->n_held; i++) {
        agent_up_send(a, t->held[i].op, t->held[i].c, t->held[i].p, t->held[i].len, NULL, 0);
        free(t->held[i].p);
    }
    t->n_held = t->held_bytes = 0;
    if (t->dropped)
        fprintf(stderr, "cohort: watch: node %u's agent dropped %u frames of the agents below "
                "it while its link up was down\n", a->step.node_id, t->dropped);
    t->dropped = 0;
}

int node_tree_start(struct agent *a, const struct envlist *env, bool watched,
                    struct cohort_err *err)
{
    const char *serve = envlist_get(env, "COHORT_STORE_SERVE");
    const char *f = envlist_get(env, "COHORT_WATCH_FANOUT");
    uint32_t fanout = WATCH_TREE_FANOUT;
    if (!watched || !serve || strcmp(serve, "0") != 0)
        return 0;
    if (f && *f && watch_tree_parse_fanout(f, &fanout, err) < 0)
        return -1;
    struct node_tree *t = a->tree = calloc(1, sizeof *t);
    if (!t)
        return cohort_fail(err, "out of memory");
    uint32_t node = a->step.node_id;
    t->lfd = -1;
    t->fanout = fanout;
    t->parent = watch_tree_up(fanout, node);
    t->n_kids = watch_tree_kids(fanout, a->step.num_nodes, node, &t->first);
    if (!t->n_kids)
        return 0;
    if (!(t->kid = calloc(t->n_kids, sizeof *t->kid)))
        return cohort_fail(err, "out of memory");
    /* A port taken here (by anyone: a neighbour may take it first) must not
     * stop the step: the agents below then dial the holder. */
    uint16_t port = a->port;
    struct cohort_err e;
    if ((t->lfd = coord_listen_any(&port, &e)) < 0)
        fprintf(stderr, "cohort: watch: node %u's agent cannot serve the agents of nodes "
                "%u-%u (%s): they will dial the holder instead\n", node, t->first,
                t->first + t->n_kids - 1, e.msg);
    return 0;
}

uint32_t node_tree_fanout(const struct agent *a)
{
    return a->tree ? a->tree->fanout : 0;
}

uint32_t node_tree_parent(const struct agent *a)
{
    return a->tree && !a->tree->direct ? a->tree->parent : WATCH_TREE_TOP;
}

int node_tree_dial_s(const struct agent *a)
{
    return node_tree_parent(a) != WATCH_TREE_TOP && a->timeout_s > AGENT_PARENT_DIAL_S
               ? AGENT_PARENT_DIAL_S
               : a->timeout_s;
}

enum net_admit node_tree_admit(void *ctx, const struct hs_hello *h, bool via_unix,
                               struct cohort_err *why)
{
    struct agent *a = ctx;
    struct node_tree *t = a->tree;
    if (!t || via_unix || h->rank != COORD_AGENT_RANK ||
        memcmp(h->view, a->view, sizeof a->view) != 0 || h->node < t->first ||
        h->node - t->first >= t->n_kids)
        return NET_DROP;
    struct tree_kid *k = &t->kid[h->node - t->first];
    if (t->left) { /* It dials the holder instead. */
        cohort_fail_code(why, COHORT_E_CONFIG, "node %u's agent has left the watch's tree",
                         a->step.node_id);
        return NET_REFUSE;
    }
    if (k->claimed) { /* Two hellos may be proven in one round. */
        cohort_fail_code(why, COHORT_E_CONFIG, "node %u's agent has reached this one already",
                         h->node);
        return NET_REFUSE;
    }
    k->claimed = true;
    return NET_ADMIT;
}

int node_tree_attach(struct agent *a, struct cohort_err *err)
{
    struct node_tree *t = a->tree;
    if (!t || t->lfd < 0)
        return 0;
    net_reserve(a->net, t->n_kids + 1);
    if (net_listen(a->net, t->lfd, false, err) < 0)
        return -1;
    t->lfd = -1; /* The loop owns it now. */
    return 0;
}

/* Tells up that kid k is lost (its link closed, or silent) and closes it. */
static void kid_lost(struct agent *a, struct tree_kid *k, bool closed, int64_t now)
{
    struct node_tree *t = a->tree;
    if (k->c)
        net_close(a->net, k->c);
    k->c = NULL;
    /* After this node's own goodbye its children dial the holder, closing
     * their links here: that is no loss. */
    if (k->left || k->lost || t->left)
        return;
    k->lost = true;
    uint8_t b[STORE_WATCH_LOST_LEN];
    int64_t ago = now - k->heard;
    b[0] = closed;
    wire_put32(b + 1, (uint32_t)(ago < 0 ? 0 : ago > UINT32_MAX ? UINT32_MAX : ago));
    send_up(a, STORE_WATCH_LOST, t->first + (uint32_t)(k - t->kid), b, sizeof b);
}

/* Whether node n is kid's own or below it. */
static bool kid_speaks_for(const struct agent *a, uint32_t kid, uint32_t n)
{
    return n < a->step.num_nodes && watch_tree_below(a->tree->fanout, kid, n);
}

/* Takes one frame of kid node's agent: its beat, or a frame for the holder
 * passed up. Returns 0, or -1 when it is not one of the watch's or speaks
 * for a node not below it (a protocol break: the kid is closed as lost). */
static int kid_frame(struct agent *a, struct tree_kid *k, uint32_t node,
                     const struct wire_frame *f)
{
    uint32_t c;
    const uint8_t *rest;
    size_t len;
    if (f->type != WIRE_STORE || store_msg_get(f->payload, f->len, &c, &rest, &len) < 0)
        return -1;
    switch (f->flags) {
    case STORE_BEAT:
        return len == 0 ? 0 : -1;
    case STORE_QUERY:
    case STORE_GONE:
        return 0; /* A local client's: the store is not served in the tree. */
    case STORE_WATCH_NODE:
        if (len < 2 || rest[len - 1] != 0 || memchr(rest, 0, len) == rest + len - 1 ||
            !kid_speaks_for(a, node, c))
            return -1; /* not two strings, or not of its subtree */
        break;
    case STORE_WATCH_LOST:
    case STORE_WATCH_BYE:
        if (len != (f->flags == STORE_WATCH_LOST ? STORE_WATCH_LOST_LEN : 0u) ||
            !kid_speaks_for(a, node, c))
            return -1;
        if (f->flags == STORE_WATCH_BYE && c == node)
            k->left = true;
        break;
    case STORE_ENDED:
    case STORE_WATCH_STOP:
    case STORE_WATCH_COLL:
        if (len != (f->flags == STORE_ENDED ? 12u : f->flags == STORE_WATCH_STOP
                                                      ? 1u
                                                      : STORE_WATCH_COLL_LEN) ||
            c >= a->step.num_tasks || !kid_speaks_for(a, node, a->rank_node[c]))
            return -1;
        break;
    default:
        return -1;
    }
    send_up(a, f->flags, c, rest, len);
    return 0;
}

/* Reads what kid k (of node) sent; closes it when it broke the protocol or
 * its link closed. */
static void kid_serve(struct agent *a, struct tree_kid *k, uint32_t node, unsigned what,
                      int64_t now)
{
    struct wire_frame f;
    struct cohort_err e;
    int got;
    k->heard = now;
    while ((got = conn_next(&k->c->c, WIRE_MAX_PAYLOAD_DEFAULT, &f, &e)) > 0) {
        if (kid_frame(a, k, node, &f) < 0) {
            got = -1;
            break;
        }
        conn_consume(&k->c->c, &f);
    }
    if (got < 0) {
        fprintf(stderr, "cohort: watch: the agent of node %u sent what is not the watch's: "
                        "its connection is closed\n", node);
        kid_lost(a, k, true, now);
    } else if (what & NET_EV_CLOSED) {
        kid_lost(a, k, true, now);
    }
}

/* Tells a child that joins late what the others were told: the verdict,
 * the end of the watch, this agent's goodbye. */
static void catch_up(struct agent *a, struct net_conn *c)
{
    struct node_tree *t = a->tree;
    if (t->verdict)
        store_msg_send(c, COORD_AGENT_RANK, STORE_VERDICT, 0, t->verdict, t->verdict_len,
                       NULL, 0);
    if (t->over)
        store_msg_send(c, COORD_AGENT_RANK, STORE_WATCH_OVER, 0, NULL, 0, NULL, 0);
    if (t->left)
        store_msg_send(c, COORD_AGENT_RANK, STORE_WATCH_BYE, a->step.node_id, NULL, 0, NULL, 0);
}

void node_tree_events(struct agent *a, struct net_event *ev, int n)
{
    struct node_tree *t = a->tree;
    int64_t now = base_now_ms();
    for (int i = 0; t && t->n_kids && i < n; i++) {
        struct net_conn *c = ev[i].c;
        if (c == a->up || c->c.node < t->first || c->c.node - t->first >= t->n_kids)
            continue;
        struct tree_kid *k = &t->kid[c->c.node - t->first];
        if (ev[i].what & NET_EV_JOINED) {
            k->c = c;
            k->heard = now;
            catch_up(a, c);
        }
        if (k->c == c && c->state == NET_READY && (ev[i].what & (NET_EV_DATA | NET_EV_CLOSED)))
            kid_serve(a, k, c->c.node, ev[i].what, now);
    }
}

void node_tree_pass(struct agent *a, uint16_t op, uint32_t c, const uint8_t *p, size_t len)
{
    struct node_tree *t = a->tree;
    if (t && op == STORE_WATCH_OVER)
        t->over = true;
    if (t && op == STORE_VERDICT && !t->verdict && (t->verdict = malloc(len))) {
        memcpy(t->verdict, p, len);
        t->verdict_len = len;
    }
    for (uint32_t i = 0; t && i < t->n_kids; i++)
        if (t->kid[i].c && t->kid[i].c->state == NET_READY)
            store_msg_send(t->kid[i].c, COORD_AGENT_RANK, op, c, p, len, NULL, 0);
}

void node_tree_connected(struct agent *a)
{
    if (a->tree)
        send_held(a);
}

bool node_tree_redial(struct agent *a)
{
    struct node_tree *t = a->tree;
    if (!t || t->direct || t->parent == WATCH_TREE_TOP)
        return false;
    t->redial = true;
    return true;
}

int node_tree_turn(struct agent *a, struct cohort_err *err)
{
    struct node_tree *t = a->tree;
    if (!t || !t->redial)
        return 0;
    t->redial = false;
    t->direct = true;
    return agent_up_dial(a, WATCH_TREE_TOP, TREE_REDIAL_S, err);
}

void node_tree_tick(struct agent *a, int64_t now, int64_t gap_ms)
{
    struct node_tree *t = a->tree;
    for (uint32_t i = 0; t && i < t->n_kids; i++) {
        struct tree_kid *k = &t->kid[i];
        k->heard += gap_ms;
        if (!k->c || k->left || k->lost)
            continue;
        if (now - k->heard >= WATCH_LOST_MS)
            kid_lost(a, k, false, now);
        else
            store_msg_send(k->c, COORD_AGENT_RANK, STORE_BEAT, 0, NULL, 0, NULL, 0);
    }
}

void node_tree_leave(struct agent *a)
{
    if (!a->tree || !a->tree->n_kids || a->tree->left)
        return;
    a->tree->left = true;
    node_tree_pass(a, STORE_WATCH_BYE, a->step.node_id, NULL, 0);
    net_flush(a->net, base_now_ms() + 500);
}

void node_tree_end(struct agent *a)
{
    struct node_tree *t = a->tree;
    if (!t)
        return;
    if (t->lfd >= 0)
        close(t->lfd);
    if (t->n_held)
        fprintf(stderr, "cohort: watch: node %u's agent ends with %zu frames of the agents "
                "below it never sent up\n", a->step.node_id, t->n_held);
    for (size_t i = 0; i < t->n_held; i++)
        free(t->held[i].p);
    free(t->held);
    free(t->verdict);
    free(t->kid);
    free(t);
    a->tree = NULL;
}
