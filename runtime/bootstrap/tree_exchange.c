/* tree_exchange.c - the bootstrap tree's one operation (tree.h): blocks go
 * up to the root, the gathered result comes down; deadlines, lost peers and
 * aborts spread to every task. */
#include <errno.h>
#include <poll.h>
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

/* Flushes every queued byte, giving up on peers that do not take it by
 * deadline (they are failing anyway). */
static void flush_all(struct tree *t, long long deadline)
{
    struct cohort_err ignored;
    if (t->parent.fd >= 0)
        tree_write_all(&t->parent, deadline, &ignored);
    for (size_t i = 0; i < t->n_kids; i++)
        if (t->kids[i].ready)
            tree_write_all(&t->kids[i], deadline, &ignored);
}

/* Fails this task with msg, after passing it to every peer but from. */
static int spread_abort(struct tree *t, const struct conn *from, const char *msg,
                        struct cohort_err *err)
{
    uint32_t len = (uint32_t)strlen(msg);
    if (t->parent.ready && &t->parent != from)
        conn_queue(&t->parent, WIRE_ABORT, 0, t->l.rank, msg, len);
    for (size_t i = 0; i < t->n_kids; i++)
        if (t->kids[i].ready && &t->kids[i] != from)
            conn_queue(&t->kids[i], WIRE_ABORT, 0, t->l.rank, msg, len);
    flush_all(t, tree_now_ms() + 1000);
    t->broken = true;
    snprintf(t->broken_msg, sizeof t->broken_msg, "%s", msg);
    return cohort_fail(err, "%s", msg);
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

static int root_finish(struct tree *t, struct exchange *x)
{
    struct blocks all = {0};
    for (uint32_t r = 0; r < t->l.size; r++)
        if (x->len[r] && blocks_add(&all, r, x->data[r], x->len[r]) < 0) {
            free(all.data);
            return -1;
        }
    x->down = all.data;
    x->down_len = (uint32_t)all.len;
    x->done = true;
    for (size_t i = 0; i < t->n_kids; i++)
        if (t->kids[i].ready &&
            conn_queue(&t->kids[i], WIRE_DOWN, x->seq, t->l.rank, x->down, x->down_len) < 0)
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
        if (from_leader ? t->l.rank_node[rank] != c->node : rank != c->rank)
            return -1;
        if (t->is_root ? root_store(x, rank, p + 8, n) < 0
                       : blocks_add(&x->pending, rank, p + 8, n) < 0)
            return -1;
        p += 8 + n;
    }
    return 0;
}

/* Fails the exchange what because the kid (rank, node) left: for another
 * node's leader, all of that node's ranks are lost. */
static int lost_kid(struct tree *t, const char *what, uint32_t rank, uint32_t node,
                    const struct conn *from, struct cohort_err *err)
{
    char who[COHORT_ERR_LEN - 120], msg[COHORT_ERR_LEN];
    if (node != t->node) {
        size_t n;
        uint32_t *ranks = tree_ranks_of_node(t, node, &n);
        tree_describe_ranks(t, ranks ? ranks : &rank, ranks ? n : 1, who, sizeof who);
        free(ranks);
        snprintf(msg, sizeof msg, "the bootstrap connection of %s closed during %s "
                                  "(a task exited or crashed?)", who, what);
    } else {
        tree_describe_ranks(t, &rank, 1, who, sizeof who);
        snprintf(msg, sizeof msg, "%s closed its bootstrap connection during %s (exited or "
                                  "crashed?)", who, what);
    }
    return spread_abort(t, from, msg, err);
}

static int root_timeout(struct tree *t, struct exchange *x, struct cohort_err *err)
{
    uint32_t *missing = malloc(sizeof *missing * t->l.size);
    size_t n = 0;
    for (uint32_t r = 0; missing && r < t->l.size; r++)
        if (!x->have[r])
            missing[n++] = r;
    char who[COHORT_ERR_LEN - 120], msg[COHORT_ERR_LEN];
    tree_describe_ranks(t, missing, n, who, sizeof who);
    free(missing);
    if (x->seq == 1)
        snprintf(msg, sizeof msg, "%s did not join within %d s", who, t->timeout_ms / 1000);
    else
        snprintf(msg, sizeof msg, "%s did not reach %s within %d s", who, x->what,
                 t->timeout_ms / 1000);
    return spread_abort(t, NULL, msg, err);
}

/* Handles what kid i sent. Returns 0, 1 when the kid was dropped (i now
 * holds another), -1 when the exchange failed. */
static int serve_kid(struct tree *t, struct exchange *x, size_t i, short revents,
                     struct cohort_err *err)
{
    struct conn *c = &t->kids[i];
    bool closed = false;
    if (revents & POLLOUT && conn_flush(c) < 0)
        closed = true;
    if (revents & (POLLIN | POLLHUP | POLLERR) &&
        conn_fill(c, c->ready ? t->max_payload : UNAUTH_MAX_PAYLOAD) < 0)
        closed = true;
    struct wire_frame f;
    struct cohort_err bad;
    int got;
    while ((got = conn_next(c, c->ready ? t->max_payload : UNAUTH_MAX_PAYLOAD, &f, &bad)) > 0) {
        if (!c->ready) {
            if (!tree_hello_ok(t, c, &f) || conn_flush(c) < 0) {
                tree_drop_kid(t, i); /* a stranger, or a bad proof: the job goes on */
                return 1;
            }
            conn_consume(c, &f);
            continue;
        }
        if (f.type == WIRE_ABORT) {
            char msg[COHORT_ERR_LEN];
            snprintf(msg, sizeof msg, "%.*s", (int)(f.len < sizeof msg ? f.len : sizeof msg - 1),
                     (const char *)f.payload);
            return spread_abort(t, c, msg, err);
        }
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
    if (got < 0 && !c->ready) {
        tree_drop_kid(t, i);
        return 1;
    }
    if (got < 0) {
        char msg[COHORT_ERR_LEN];
        snprintf(msg, sizeof msg, "rank %u sent malformed bootstrap data during %s", c->rank,
                 x->what);
        return spread_abort(t, c, msg, err);
    }
    if (closed) {
        if (c->ready && !x->done)
            return lost_kid(t, x->what, c->rank, c->node, c, err);
        if (c->ready && !t->gone) {
            /* It has its result; if this was not the last exchange, the
             * next one fails at once naming it. */
            t->gone = true;
            t->gone_rank = c->rank;
            t->gone_node = c->node;
        }
        tree_drop_kid(t, i); /* a stranger left, or a task is through */
        return 1;
    }
    return 0;
}

/* Handles what the parent sent. Returns 0, or -1 when the exchange failed. */
static int serve_parent(struct tree *t, struct exchange *x, short revents,
                        struct cohort_err *err)
{
    struct conn *c = &t->parent;
    char name[200], msg[COHORT_ERR_LEN];
    bool closed = false;
    if (revents & POLLOUT && conn_flush(c) < 0)
        closed = true;
    if (revents & (POLLIN | POLLHUP | POLLERR) && conn_fill(c, t->max_payload) < 0)
        closed = true;
    struct wire_frame f;
    struct cohort_err bad;
    int got = 0;
    while (!x->done && (got = conn_next(c, t->max_payload, &f, &bad)) > 0) {
        if (f.type == WIRE_ABORT) {
            snprintf(msg, sizeof msg, "%.*s", (int)(f.len < sizeof msg ? f.len : sizeof msg - 1),
                     (const char *)f.payload);
            return spread_abort(t, c, msg, err);
        }
        if (f.type != WIRE_DOWN || f.flags != x->seq) {
            got = -1;
            break;
        }
        x->down = malloc(f.len ? f.len : 1);
        if (!x->down)
            return spread_abort(t, NULL, "out of memory in the bootstrap", err);
        memcpy(x->down, f.payload, f.len);
        x->down_len = f.len;
        x->done = true;
        for (size_t i = 0; i < t->n_kids; i++)
            if (t->kids[i].ready &&
                conn_queue(&t->kids[i], WIRE_DOWN, x->seq, t->l.rank, f.payload, f.len) < 0)
                return spread_abort(t, NULL, "out of memory in the bootstrap", err);
        conn_consume(c, &f);
    }
    tree_parent_name(t, name, sizeof name);
    if (!x->done && got < 0) {
        snprintf(msg, sizeof msg, "%s sent malformed bootstrap data during %s", name, x->what);
        return spread_abort(t, c, msg, err);
    }
    if (closed && !x->done) {
        snprintf(msg, sizeof msg, "%s closed the bootstrap connection during %s (exited or "
                                  "crashed?)", name, x->what);
        return spread_abort(t, c, msg, err);
    }
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

static int run_exchange(struct tree *t, struct exchange *x, struct cohort_err *err)
{
    char name[200], msg[COHORT_ERR_LEN + 256];
    long long deadline = x->start + t->timeout_ms +
                         (t->is_root ? 0 : t->is_leader ? LEADER_GRACE_MS : TASK_GRACE_MS);
    struct pollfd *p = NULL;
    size_t cap = 0;
    int rc = -1;
    /* A peer may have sent its part of this exchange while the last one was
     * still flushing; those frames wait in its input buffer, and its socket
     * will not poll readable for them. Take them first. */
    for (size_t k = t->n_kids; k-- > 0;)
        if (k < t->n_kids && t->kids[k].in_len && serve_kid(t, x, k, 0, err) < 0)
            return -1;
    if (t->parent.in_len && serve_parent(t, x, 0, err) < 0)
        return -1;
    for (;;) {
        if (t->is_root && !x->done && x->count == t->l.size && root_finish(t, x) < 0) {
            rc = spread_abort(t, NULL, "out of memory in the bootstrap", err);
            break;
        }
        if (!t->is_root && x->pending.len) {
            if (conn_queue(&t->parent, WIRE_UP, x->seq, t->l.rank, x->pending.data,
                           (uint32_t)x->pending.len) < 0) {
                rc = spread_abort(t, NULL, "out of memory in the bootstrap", err);
                break;
            }
            x->pending.len = 0;
        }
        bool queued = t->parent.out_len > 0;
        for (size_t i = 0; i < t->n_kids; i++)
            queued |= t->kids[i].ready && t->kids[i].out_len > 0;
        if (x->done && !queued) {
            rc = 0;
            break;
        }
        long long left = deadline - tree_now_ms();
        if (left <= 0 && !x->done) {
            if (t->is_root) {
                rc = root_timeout(t, x, err);
                break;
            }
            tree_parent_name(t, name, sizeof name);
            snprintf(msg, sizeof msg, "no answer from %s within %d s during %s", name,
                     t->timeout_ms / 1000, x->what);
            rc = spread_abort(t, &t->parent, msg, err);
            break;
        }
        if (left <= 0) { /* done, but some peer does not take its result */
            flush_all(t, tree_now_ms() + 1000);
            rc = 0;
            break;
        }
        size_t need = t->n_kids + 3, n = 0;
        if (need > cap) {
            struct pollfd *q = realloc(p, need * sizeof *q);
            if (!q) {
                rc = spread_abort(t, NULL, "out of memory in the bootstrap", err);
                break;
            }
            p = q;
            cap = need;
        }
        size_t first_kid = 0;
        bool accepting = t->ready_kids < t->expected_kids || t->n_kids > t->ready_kids;
        if (t->listen_unix >= 0 && accepting)
            p[n++] = (struct pollfd){.fd = t->listen_unix, .events = POLLIN};
        if (t->listen_tcp >= 0 && accepting)
            p[n++] = (struct pollfd){.fd = t->listen_tcp, .events = POLLIN};
        size_t parent_at = n;
        if (t->parent.fd >= 0)
            p[n++] = (struct pollfd){.fd = t->parent.fd,
                                     .events = (short)(POLLIN | (t->parent.out_len ? POLLOUT : 0))};
        first_kid = n;
        for (size_t i = 0; i < t->n_kids; i++)
            p[n++] = (struct pollfd){.fd = t->kids[i].fd,
                                     .events = (short)(POLLIN | (t->kids[i].out_len ? POLLOUT : 0))};
        int ready = poll(p, n, (int)(left < 1000 ? left : 1000));
        if (ready < 0 && errno != EINTR) {
            rc = spread_abort(t, NULL, "poll failed in the bootstrap", err);
            break;
        }
        if (ready <= 0)
            continue;
        /* Kids first (their fds are in p after first_kid, in kids order as
         * of the poll): walk backwards so that drops do not shift the rest. */
        bool failed = false;
        size_t polled = n - first_kid;
        for (size_t k = polled; k-- > 0 && !failed;) {
            if (!p[first_kid + k].revents || k >= t->n_kids)
                continue;
            if (serve_kid(t, x, k, p[first_kid + k].revents, err) < 0)
                failed = true;
        }
        if (!failed && t->parent.fd >= 0 && p[parent_at].revents &&
            serve_parent(t, x, p[parent_at].revents, err) < 0)
            failed = true;
        if (failed)
            break;
        for (size_t k = 0; k < first_kid; k++)
            if (k != parent_at && p[k].revents & POLLIN)
                tree_accept_kids(t, p[k].fd);
    }
    free(p);
    return rc;
}

int tree_exchange(struct tree *t, const void *mine, uint32_t len, const char *what,
                  uint8_t **down, uint32_t *down_len, struct cohort_err *err)
{
    *down = NULL;
    *down_len = 0;
    if (t->broken)
        return cohort_fail(err, "%s", t->broken_msg);
    if (t->gone)
        return lost_kid(t, what, t->gone_rank, t->gone_node, NULL, err);
    struct exchange x = {.seq = ++t->seq, .what = what, .start = tree_now_ms()};
    int rc = -1;
    if (t->is_root) {
        x.data = calloc(t->l.size, sizeof *x.data);
        x.len = calloc(t->l.size, sizeof *x.len);
        x.have = calloc(t->l.size, sizeof *x.have);
        if (!x.data || !x.len || !x.have || root_store(&x, 0, mine, len) < 0) {
            cohort_fail(err, "out of memory in the bootstrap");
            goto out;
        }
    } else if (blocks_add(&x.pending, t->l.rank, mine, len) < 0) {
        cohort_fail(err, "out of memory in the bootstrap");
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
