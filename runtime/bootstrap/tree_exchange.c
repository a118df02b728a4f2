/* tree_exchange.c - the bootstrap tree's one operation (tree.h): blocks go
 * up to the root, the gathered result comes down; deadlines, lost peers,
 * tampered frames and aborts spread to every task. The first exchange
 * also completes the join (children admitted, the parent reached). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "tree_private.h"

struct exchange {
    uint16_t seq;
    const char *what;
    long long start;
    uint8_t **data; /* root: each rank's block */
    uint32_t *len;
    bool *have;
    uint32_t count;
    struct blocks pending; /* leader: blocks to send up */
    uint8_t *down;    /* the result */
    uint32_t down_len;
    bool done;
};

/* Fails this task with reason (its sentence and code), after passing it
 * to every peer but from (and, while children still join, to them): every
 * task reports the code of the task that saw the failure. reason is copied
 * first: it may live in a connection that the polls below free. */
static int spread_abort(struct tree *t, const struct net_conn *from,
                        const struct cohort_err *reason, struct cohort_err *err)
{
    const struct cohort_err copy = *reason, *why = &copy;
    /* A parent still being reached (connecting, or in the middle of its
     * handshake) is waited for a moment, so that the reason goes up rather
     * than a closed connection. */
    long long end = tree_now_ms() + RELAY_MS;
    net_refuse(t->net, why); /* children that prove themselves from now on are told */
    if (t->parent == from)
        t->parent_told = true; /* the failure came from it */
    for (size_t i = 0; i < t->n_kids; i++)
        if (t->kids[i] != from)
            tree_send_abort(t, t->kids[i], why);
    while (t->parent && !t->parent_told && t->parent->state < NET_READY &&
           tree_now_ms() < end && tree_abort_poll(t, (int)(end - tree_now_ms()), why) >= 0) {
    }
    tree_tell_parent(t, why);
    if (t->seq == 1 && t->n_kids < t->expected_kids)
        tree_relay(t, why);
    else
        net_flush(t->net, tree_now_ms() + 1000);
    t->broken = true;
    t->broken_why = *why;
    *err = *why;
    return -1;
}

/* Fails the exchange on every rank: this task ran out of memory. */
static int spread_oom(struct tree *t, struct cohort_err *err)
{
    struct cohort_err why;
    cohort_fail_code(&why, COHORT_E_RESOURCE, "out of memory in the bootstrap");
    return spread_abort(t, NULL, &why, err);
}

/* Fails the exchange on every rank: its result would not fit one frame. */
static int too_big(struct tree *t, const char *what, size_t bytes, struct cohort_err *err)
{
    struct cohort_err why;
    cohort_fail_code(&why, COHORT_E_RESOURCE, "%s: the result would be at least %zu bytes, "
                                              "above the bootstrap's limit of %u bytes (%u MiB) "
                                              "for one call",
                     what, bytes, t->max_payload, t->max_payload >> 20);
    return spread_abort(t, NULL, &why, err);
}

/* Root: keeps rank's block. Returns -1 when it came already, or out of
 * memory. */
static int root_store(struct exchange *x, uint32_t rank, const uint8_t *data, uint32_t n)
{
    if (x->have[rank] || (n && !(x->data[rank] = malloc(n))))
        return -1;
    if (n)
        memcpy(x->data[rank], data, n);
    x->have[rank] = true;
    x->len[rank] = n;
    x->count++;
    return 0;
}

/* Root: sends the result down. Returns 0, 1 when it is above the frame
 * limit (*total its size), -1 when out of memory. */
static int root_finish(struct tree *t, struct exchange *x, size_t *total)
{
    struct blocks all = {0};
    *total = 0;
    for (uint32_t r = 0; r < t->l.size; r++)
        *total += x->len[r] ? 8 + (size_t)x->len[r] : 0;
    if (*total > t->max_payload)
        return 1;
    for (uint32_t r = 0; r < t->l.size; r++)
        if (x->len[r] && blocks_add(&all, r, x->data[r], x->len[r]) < 0) {
            free(all.data);
            return -1;
        }
    x->down = all.data;
    x->down_len = (uint32_t)all.len;
    x->done = true;
    for (size_t i = 0; i < t->n_kids; i++)
        if (net_send(t->kids[i], WIRE_DOWN, x->seq, t->l.rank, x->down, x->down_len) < 0)
            return -1;
    return 0;
}

/* Takes the blocks of an UP frame from kid c. Returns -1 on malformed data. */
static int take_up(struct tree *t, struct exchange *x, const struct conn *c,
                   const struct wire_frame *f)
{
    const uint8_t *p = f->payload, *end = f->payload + f->len;
    while (p < end) {
        if (end - p < 8)
            return -1;
        uint32_t rank = wire_get32(p), n = wire_get32(p + 4);
        if ((size_t)(end - p - 8) < n || rank >= t->l.size)
            return -1;
        bool from_leader = c->rank == t->node_first[c->node] && c->node != t->node;
        if (from_leader ? !tree_under(t, t->l.rank_node[rank], c->node) : rank != c->rank)
            return -1;
        if (t->is_root ? root_store(x, rank, p + 8, n) < 0
                       : blocks_add(&x->pending, rank, p + 8, n) < 0)
            return -1;
        p += 8 + n;
    }
    return 0;
}

/* Fails the exchange what because the kid (rank, node) left: for another
 * node's leader, all the ranks of its subtree of nodes are lost. */
static int lost_kid(struct tree *t, const char *what, uint32_t rank, uint32_t node,
                    const struct net_conn *from, struct cohort_err *err)
{
    char who[COHORT_ERR_LEN - 120];
    struct cohort_err why;
    if (node != t->node) {
        size_t n;
        uint32_t *ranks = tree_ranks_under(t, node, &n);
        tree_describe_ranks(t, ranks ? ranks : &rank, ranks ? n : 1, who, sizeof who);
        free(ranks);
        cohort_fail_code(&why, COHORT_E_PEER_LOST, "the bootstrap connection of %s closed "
                                                   "during %s (a task exited or crashed?)",
                         who, what);
    } else {
        tree_describe_ranks(t, &rank, 1, who, sizeof who);
        cohort_fail_code(&why, COHORT_E_PEER_LOST, "%s closed its bootstrap connection during "
                                                   "%s (exited or crashed?)",
                         who, what);
    }
    return spread_abort(t, from, &why, err);
}

static int root_timeout(struct tree *t, struct exchange *x, struct cohort_err *err)
{
    uint32_t *missing = malloc(sizeof *missing * t->l.size);
    size_t n = 0;
    for (uint32_t r = 0; missing && r < t->l.size; r++)
        if (!x->have[r])
            missing[n++] = r;
    char who[COHORT_ERR_LEN - 120];
    struct cohort_err why;
    tree_describe_ranks(t, missing, n, who, sizeof who);
    free(missing);
    if (x->seq == 1)
        cohort_fail_code(&why, COHORT_E_TIMEOUT, "%s did not join within %d s", who,
                         t->timeout_ms / 1000);
    else
        cohort_fail_code(&why, COHORT_E_TIMEOUT, "%s did not reach %s within %d s", who,
                         x->what, t->timeout_ms / 1000);
    return spread_abort(t, NULL, &why, err);
}

/* The failure of a frame from who: tampered with, or not a frame. Both
 * are authentication failures: frames between proven peers are MAC'd, so
 * malformed ones were changed on the way (or a peer is not cohort's). */
static int bad_input(struct tree *t, const struct net_conn *c, const char *who, int got,
                     const char *reason, const char *what, struct cohort_err *err)
{
    struct cohort_err why;
    if (got == -2)
        cohort_fail_code(&why, COHORT_E_AUTH, "the bootstrap connection from %.200s was "
                                              "tampered with during %s: %.200s",
                         who, what, reason);
    else
        cohort_fail_code(&why, COHORT_E_AUTH, "%.200s sent malformed bootstrap data during %s",
                         who, what);
    (void)c; /* it is told too: what it sends may be damaged on the way, not by it */
    return spread_abort(t, NULL, &why, err);
}

/* Takes what kid i sent. Returns 0, 1 when the kid was dropped (i now
 * holds another), -1 when the exchange failed. */
static int serve_kid(struct tree *t, struct exchange *x, size_t i, bool closed,
                     struct cohort_err *err)
{
    struct net_conn *k = t->kids[i];
    struct conn *c = &k->c;
    struct wire_frame f;
    struct cohort_err bad, why;
    int got;
    while ((got = conn_next(c, t->max_payload, &f, &bad)) > 0) {
        if (f.type == WIRE_ABORT && wire_abort_decode(f.payload, f.len, &why) == 0)
            return spread_abort(t, k, &why, err);
        if (f.type != WIRE_UP)
            got = -1;
        else if (f.flags == (uint16_t)(x->seq + 1))
            return 0; /* the next exchange's: leave it for then */
        else if (f.flags != x->seq || take_up(t, x, c, &f) < 0)
            got = -1;
        if (got < 0)
            break;
        conn_consume(c, &f);
    }
    if (got < 0) {
        char who[120];
        tree_describe_ranks(t, &c->rank, 1, who, sizeof who);
        return bad_input(t, k, who, got, bad.msg, x->what, err);
    }
    if (!closed && !k->closed)
        return 0;
    if (!x->done)
        return lost_kid(t, x->what, c->rank, c->node, k, err);
    if (!t->gone) {
        /* It has its result; if this was not the last exchange, the next
         * one fails at once naming it. */
        t->gone = true;
        t->gone_rank = c->rank;
        t->gone_node = c->node;
    }
    tree_drop_kid(t, i); /* a task is through */
    return 1;
}

/* Takes what the parent sent. Returns 0, or -1 when the exchange failed. */
static int serve_parent(struct tree *t, struct exchange *x, struct cohort_err *err)
{
    struct net_conn *p = t->parent;
    struct conn *c = &p->c;
    char name[200];
    struct wire_frame f;
    struct cohort_err bad, why;
    int got = 0;
    while (!x->done && (got = conn_next(c, t->max_payload, &f, &bad)) > 0) {
        if (f.type == WIRE_ABORT && wire_abort_decode(f.payload, f.len, &why) == 0)
            return spread_abort(t, p, &why, err);
        if (f.type != WIRE_DOWN || f.flags != x->seq) {
            got = -1;
            break;
        }
        x->down = malloc(f.len ? f.len : 1);
        if (!x->down)
            return spread_oom(t, err);
        memcpy(x->down, f.payload, f.len);
        x->down_len = f.len;
        x->done = true;
        for (size_t i = 0; i < t->n_kids; i++)
            if (net_send(t->kids[i], WIRE_DOWN, x->seq, t->l.rank, f.payload, f.len) < 0)
                return spread_oom(t, err);
        conn_consume(c, &f);
    }
    tree_parent_name(t, name, sizeof name);
    if (!x->done && got < 0)
        return bad_input(t, p, name, got, bad.msg, x->what, err);
    if (p->closed && !x->done) {
        cohort_fail_code(&why, COHORT_E_PEER_LOST, "%s closed the bootstrap connection during "
                                                   "%s (exited or crashed?)",
                         name, x->what);
        return spread_abort(t, p, &why, err);
    }
    return 0;
}

/* One event of the loop. Returns 0, or -1 when the exchange failed. */
static int on_event(struct tree *t, struct exchange *x, const struct net_event *ev,
                    struct cohort_err *err)
{
    struct net_conn *c = ev->c;
    if (ev->what & NET_EV_FAILED)
        return spread_abort(t, NULL, net_dial_error(c), err);
    if (c == t->parent)
        return c->state == NET_READY ? serve_parent(t, x, err) : 0;
    for (size_t i = 0; i < t->n_kids; i++)
        if (t->kids[i] == c)
            return serve_kid(t, x, i, (ev->what & NET_EV_CLOSED) != 0, err) < 0 ? -1 : 0;
    return 0;
}

static void exchange_free(struct tree *t, struct exchange *x)
{
    for (uint32_t r = 0; x->data && r < t->l.size; r++)
        free(x->data[r]);
    free(x->data);
    free(x->len);
    free(x->have);
    free(x->pending.data);
}

/* Root: complete when every block is in; a leader or task: its blocks
 * go up once the parent is reached. Returns 0, or -1 when it failed. */
static int progress(struct tree *t, struct exchange *x, struct cohort_err *err)
{
    size_t total = 0;
    int fin = t->is_root && !x->done && x->count == t->l.size ? root_finish(t, x, &total) : 0;
    if (fin)
        return fin > 0 ? too_big(t, x->what, total, err)
                       : spread_oom(t, err);
    if (!t->is_root && x->pending.len > t->max_payload)
        return too_big(t, x->what, x->pending.len, err);
    if (!t->is_root && x->pending.len && t->parent->state == NET_READY) {
        if (net_send(t->parent, WIRE_UP, x->seq, t->l.rank, x->pending.data,
                     (uint32_t)x->pending.len) < 0)
            return spread_oom(t, err);
        x->pending.len = 0;
    }
    return 0;
}

static bool queued(const struct tree *t)
{
    bool q = t->parent && t->parent->state == NET_READY && !t->parent->closed &&
             t->parent->c.out_len > 0;
    for (size_t i = 0; i < t->n_kids; i++)
        q |= !t->kids[i]->closed && t->kids[i]->c.out_len > 0;
    return q;
}

static int timed_out(struct tree *t, struct exchange *x, struct cohort_err *err)
{
    char name[200];
    struct cohort_err why;
    if (t->is_root)
        return root_timeout(t, x, err);
    tree_parent_name(t, name, sizeof name);
    cohort_fail_code(&why, COHORT_E_TIMEOUT, "no answer from %s within %d s during %s", name,
                     t->timeout_ms / 1000, x->what);
    return spread_abort(t, t->parent, &why, err);
}

static int run_exchange(struct tree *t, struct exchange *x, struct cohort_err *err)
{
    long long deadline = x->start + t->timeout_ms +
                         (t->is_root ? 0 : t->is_leader ? LEADER_GRACE_MS : TASK_GRACE_MS);
    /* A peer may have sent its part of this exchange while the last one was
     * still flushing; those frames wait in its input buffer. Take them first.
     * A parent that closed right after the last result was told of then
     * (NET_EV_CLOSED comes once): this exchange fails at once naming it. */
    for (size_t k = t->n_kids; k-- > 0;)
        if (k < t->n_kids && t->kids[k]->c.in_len && serve_kid(t, x, k, false, err) < 0)
            return -1;
    if (t->parent && t->parent->state == NET_READY &&
        (t->parent->c.in_len || t->parent->closed) && serve_parent(t, x, err) < 0)
        return -1;
    for (;;) {
        if (progress(t, x, err) < 0)
            return -1;
        if (x->done && !queued(t))
            return 0;
        long long left = deadline - tree_now_ms();
        if (left <= 0 && !x->done)
            return timed_out(t, x, err);
        if (left <= 0) { /* done, but some peer does not take its result */
            net_flush(t->net, tree_now_ms() + 1000);
            return 0;
        }
        struct net_event *ev;
        struct cohort_err e;
        int n = net_poll(t->net, (int)(left < 1000 ? left : 1000), &ev, &e);
        if (n < 0)
            return spread_abort(t, NULL, &e, err);
        /* children admitted in this round are taken first: a failure met
         * in any event of it reaches them too */
        for (int i = 0; i < n; i++)
            if ((ev[i].what & NET_EV_JOINED) && tree_add_kid(t, ev[i].c) < 0)
                return spread_oom(t, err);
        for (int i = 0; i < n; i++)
            if (on_event(t, x, &ev[i], err) < 0)
                return -1;
        if (t->refused.msg[0]) /* a child that sees another step: it can never join */
            return spread_abort(t, NULL, &t->refused, err);
    }
}

int tree_exchange(struct tree *t, const void *mine, uint32_t len, const char *what,
                  uint8_t **down, uint32_t *down_len, struct cohort_err *err)
{
    *down = NULL;
    *down_len = 0;
    if (t->broken) {
        *err = t->broken_why;
        return -1;
    }
    if (t->gone)
        return lost_kid(t, what, t->gone_rank, t->gone_node, NULL, err);
    struct exchange x = {.seq = ++t->seq, .what = what, .start = tree_now_ms()};
    int rc = -1;
    if (8 + (size_t)len > t->max_payload)
        return too_big(t, what, 8 + (size_t)len, err);
    if (t->is_root) {
        x.data = calloc(t->l.size, sizeof *x.data);
        x.len = calloc(t->l.size, sizeof *x.len);
        x.have = calloc(t->l.size, sizeof *x.have);
        if (!x.data || !x.len || !x.have || root_store(&x, 0, mine, len) < 0) {
            cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory in the bootstrap");
            goto out;
        }
    } else if (blocks_add(&x.pending, t->l.rank, mine, len) < 0) {
        cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory in the bootstrap");
        goto out;
    }
    rc = run_exchange(t, &x, err);
    if (rc == 0) {
        *down = x.down;
        *down_len = x.down_len;
        x.down = NULL;
    }
out:
    free(x.down);
    exchange_free(t, &x);
    return rc;
}
