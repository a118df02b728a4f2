/* watch.c - the step watch's decisions (watch.h): each node's silence, each
 * rank's end and stop, and the one verdict they and the communicators'
 * waits (watch_comm.c) give. The watched nodes are kept in the order they
 * were last heard from, the silent one first, so that a beat costs a
 * constant time whatever the step's size. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "watch_private.h"

/* ---- the step's state ---- */

/* The node's ranks, ascending, in node_ranks (one counting pass, one
 * placing pass). */
static void index_nodes(struct watch *w)
{
    for (uint32_t r = 0; r < w->n_ranks; r++)
        w->node[w->rank_node[r]].n_ranks++;
    for (uint32_t n = 0, at = 0; n < w->n_nodes; n++) {
        w->node[n].first_rank = at;
        at += w->node[n].n_ranks;
        w->node[n].n_ranks = 0;
    }
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        struct node_state *n = &w->node[w->rank_node[r]];
        w->node_ranks[n->first_rank + n->n_ranks++] = r;
    }
}

struct watch *watch_new(uint32_t n_ranks, uint32_t n_nodes, const uint32_t *rank_node,
                        int64_t stall_ms)
{
    if (n_ranks == 0 || n_nodes == 0 || n_ranks == NONE || n_nodes == NONE || stall_ms < 1) {
        errno = EINVAL;
        return NULL;
    }
    for (uint32_t r = 0; r < n_ranks; r++)
        if (rank_node[r] >= n_nodes) {
            errno = EINVAL;
            return NULL;
        }
    struct watch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->rank_node = malloc(n_ranks * sizeof *w->rank_node);
    w->node_ranks = malloc(n_ranks * sizeof *w->node_ranks);
    w->stopped = malloc(n_ranks * sizeof *w->stopped);
    w->rank = calloc(n_ranks, sizeof *w->rank);
    w->node = calloc(n_nodes, sizeof *w->node);
    if (!w->rank_node || !w->node_ranks || !w->stopped || !w->rank || !w->node) {
        watch_free(w);
        errno = ENOMEM;
        return NULL;
    }
    memcpy(w->rank_node, rank_node, n_ranks * sizeof *rank_node);
    w->n_ranks = n_ranks;
    w->n_nodes = n_nodes;
    w->stall_ms = stall_ms;
    w->quiet_head = w->quiet_tail = w->lost_node = w->death_rank = NONE;
    w->death_seen = NEVER;
    for (uint32_t r = 0; r < n_ranks; r++)
        w->rank[r].stop_at = w->rank[r].first_comm = NONE;
    index_nodes(w);
    return w;
}

void watch_free(struct watch *w)
{
    if (!w)
        return;
    watch_comms_free(w);
    free(w->rank_node);
    free(w->node_ranks);
    free(w->stopped);
    free(w->rank);
    free(w->node);
    free(w);
}

/* ---- nodes ---- */

static void quiet_unlink(struct watch *w, uint32_t n)
{
    struct node_state *s = &w->node[n];
    *(s->prev == NONE ? &w->quiet_head : &w->node[s->prev].next) = s->next;
    *(s->next == NONE ? &w->quiet_tail : &w->node[s->next].prev) = s->prev;
}

static void quiet_append(struct watch *w, uint32_t n)
{
    struct node_state *s = &w->node[n];
    s->prev = w->quiet_tail;
    s->next = NONE;
    *(w->quiet_tail == NONE ? &w->quiet_head : &w->node[w->quiet_tail].next) = n;
    w->quiet_tail = n;
}

/* A node that is watched: joined, not left, not lost. */
static bool watched(const struct watch *w, uint32_t n)
{
    return n < w->n_nodes && w->node[n].joined && !w->node[n].left && !w->node[n].lost;
}

static void mark_lost(struct watch *w, uint32_t n, bool closed, int64_t since, int64_t at)
{
    struct node_state *s = &w->node[n];
    if (watched(w, n))
        quiet_unlink(w, n);
    s->lost = true;
    s->closed = closed;
    s->since = since;
    s->lost_at = at;
    struct node_state *b = w->lost_node == NONE ? NULL : &w->node[w->lost_node];
    if (!b || at < b->lost_at || (at == b->lost_at && n < w->lost_node))
        w->lost_node = n;
}

/* Marks lost the node when it has been silent for WATCH_LOST_MS at now. */
static void check_silent(struct watch *w, uint32_t n, int64_t now)
{
    int64_t heard = w->node[n].last_heard;
    if (watched(w, n) && now - heard >= WATCH_LOST_MS)
        mark_lost(w, n, false, heard, heard + WATCH_LOST_MS);
}

void watch_node_joined(struct watch *w, uint32_t node, int64_t now)
{
    if (node < w->n_nodes && (w->node[node].left || w->node[node].lost))
        return; /* Its end is known: nothing more to watch. */
    if (node >= w->n_nodes || w->node[node].joined) {
        watch_node_heard(w, node, now);
        return;
    }
    w->node[node].joined = true;
    w->node[node].last_heard = now;
    quiet_append(w, node);
}

void watch_node_heard(struct watch *w, uint32_t node, int64_t now)
{
    if (!watched(w, node))
        return;
    check_silent(w, node, now);
    if (w->node[node].lost)
        return;
    w->node[node].last_heard = now;
    quiet_unlink(w, node);
    quiet_append(w, node);
}

static void stop_remove(struct watch *w, uint32_t r)
{
    uint32_t at = w->rank[r].stop_at;
    if (at == NONE)
        return;
    uint32_t last = w->stopped[--w->n_stopped];
    w->stopped[at] = last;
    w->rank[last].stop_at = at;
    w->rank[r].stop_at = NONE;
}

/* Rank r's reports no longer count: it has ended or its node has left. */
static void rank_retire(struct watch *w, uint32_t r, int64_t now)
{
    stop_remove(w, r);
    watch_comms_retire(w, r, now);
}

void watch_node_left(struct watch *w, uint32_t node, int64_t now)
{
    if (node >= w->n_nodes || w->node[node].left)
        return;
    if (watched(w, node))
        quiet_unlink(w, node);
    w->node[node].left = true;
    struct node_state *s = &w->node[node];
    for (uint32_t i = 0; i < s->n_ranks; i++)
        rank_retire(w, w->node_ranks[s->first_rank + i], now);
}

void watch_node_closed(struct watch *w, uint32_t node, int64_t now)
{
    if (!watched(w, node))
        return;
    check_silent(w, node, now);
    if (!w->node[node].lost)
        mark_lost(w, node, true, now, now);
}

void watch_node_lost(struct watch *w, uint32_t node, bool closed, int64_t since, int64_t now)
{
    if (node >= w->n_nodes || w->node[node].left || w->node[node].lost)
        return;
    check_silent(w, node, now);
    if (!w->node[node].lost)
        mark_lost(w, node, closed, since < now ? since : now, now);
}

/* ---- ranks ---- */

void watch_task_ended(struct watch *w, uint32_t rank, int status, int64_t wall_ms, int64_t now)
{
    if (rank >= w->n_ranks || w->rank[rank].ended)
        return;
    uint32_t node = w->rank_node[rank];
    struct rank_state *s = &w->rank[rank];
    s->ended = true;
    s->status = status;
    s->wall_ms = wall_ms;
    s->seen = now;
    w->n_ended++;
    rank_retire(w, rank, now);
    check_silent(w, node, now);
    /* A lost node's tasks fail because it was lost: that is the news. */
    if (status == 0 || w->node[node].lost)
        return;
    if (w->death_seen == NEVER)
        w->death_seen = now;
    struct rank_state *b = w->death_rank == NONE ? NULL : &w->rank[w->death_rank];
    if (!b || wall_ms < b->wall_ms || (wall_ms == b->wall_ms && rank < w->death_rank))
        w->death_rank = rank;
}

void watch_task_stopped(struct watch *w, uint32_t rank, bool stopped, int64_t now)
{
    if (rank >= w->n_ranks || !watch_rank_active(w, rank))
        return;
    if (!stopped) {
        stop_remove(w, rank);
    } else if (w->rank[rank].stop_at == NONE) {
        w->rank[rank].stop_at = w->n_stopped;
        w->stopped[w->n_stopped++] = rank;
        w->rank[rank].stopped_since = now;
    }
}

void watch_pause(struct watch *w, int64_t gap_ms)
{
    if (gap_ms <= 0)
        return;
    for (uint32_t n = 0; n < w->n_nodes; n++)
        if (w->node[n].joined && !w->node[n].lost)
            w->node[n].last_heard = watch_after(w->node[n].last_heard, gap_ms);
    for (uint32_t i = 0; i < w->n_stopped; i++)
        w->rank[w->stopped[i]].stopped_since =
            watch_after(w->rank[w->stopped[i]].stopped_since, gap_ms);
    if (w->death_seen != NEVER)
        w->death_seen = watch_after(w->death_seen, gap_ms);
    watch_comms_pause(w, gap_ms);
}

/* ---- verdicts ---- */

/* Whether every rank still running is stopped: Slurm suspended the step
 * (its tasks stopped together), which is no rank's fault. */
static bool all_stopped(const struct watch *w)
{
    uint32_t active = 0;
    for (uint32_t r = 0; r < w->n_ranks && active <= w->n_stopped; r++)
        active += watch_rank_active(w, r);
    return active <= w->n_stopped;
}

static bool stopped_due(const struct watch *w, int64_t now, struct watch_verdict *v)
{
    if (w->n_stopped && all_stopped(w))
        return false;
    uint32_t best = NONE;
    for (uint32_t i = 0; i < w->n_stopped; i++) {
        uint32_t r = w->stopped[i];
        const struct rank_state *s = &w->rank[r];
        if (now - s->stopped_since < w->stall_ms)
            continue;
        if (best == NONE || s->stopped_since < w->rank[best].stopped_since ||
            (s->stopped_since == w->rank[best].stopped_since && r < best))
            best = r;
    }
    if (best == NONE)
        return false;
    v->kind = WATCH_STOPPED;
    v->since_ms = w->rank[best].stopped_since;
    watch_name_rank(v, best);
    v->node = w->rank_node[best];
    watch_comms_waiting(w, best, v); /* the collective it keeps waiting, if known */
    return true;
}

static void node_verdict(const struct watch *w, uint32_t n, struct watch_verdict *v)
{
    const struct node_state *s = &w->node[n];
    v->kind = WATCH_NODE_LOST;
    v->node = n;
    v->closed = s->closed;
    v->since_ms = s->since;
    for (uint32_t i = 0; i < s->n_ranks; i++)
        watch_name_rank(v, w->node_ranks[s->first_rank + i]);
}

static void death_verdict(const struct watch *w, struct watch_verdict *v)
{
    const struct rank_state *s = &w->rank[w->death_rank];
    v->kind = WATCH_DIED;
    v->status = s->status;
    v->at_wall_ms = s->wall_ms;
    v->since_ms = s->seen;
    watch_name_rank(v, w->death_rank);
    v->node = w->rank_node[w->death_rank];
}

int64_t watch_death_seen(const struct watch *w)
{
    return w->death_seen;
}

/* A node can tell: it has neither left nor been lost. */
static bool can_tell(const struct watch *w, uint32_t n)
{
    return !w->node[n].left && !w->node[n].lost;
}

/* The lowest node that can tell and is not one of the verdict's nodes;
 * failing that the lowest that can tell; failing that the verdict's node. */
static uint32_t teller(const struct watch *w, const struct watch_verdict *v)
{
    uint32_t fallback = NONE, shown = v->n_ranks < WATCH_RANKS_MAX ? v->n_ranks : WATCH_RANKS_MAX;
    for (uint32_t n = 0; n < w->n_nodes; n++) {
        if (!can_tell(w, n))
            continue;
        bool named = n == v->node;
        for (uint32_t i = 0; i < shown && v->kind != WATCH_NODE_LOST; i++)
            named = named || w->rank_node[v->ranks[i]] == n;
        if (!named)
            return n;
        if (fallback == NONE)
            fallback = n;
    }
    return fallback == NONE ? v->node : fallback;
}

uint32_t watch_teller(const struct watch *w, uint32_t lost)
{
    struct watch_verdict v = {.kind = WATCH_NODE_LOST, .node = lost};
    return teller(w, &v);
}

int watch_check(struct watch *w, int64_t now, struct watch_verdict *v)
{
    if (w->given || w->n_ended == w->n_ranks)
        return 0;
    while (w->quiet_head != NONE && now - w->node[w->quiet_head].last_heard >= WATCH_LOST_MS)
        check_silent(w, w->quiet_head, now);
    memset(v, 0, sizeof *v);
    /* While a death settles, every other verdict waits: the death explains
     * them. */
    if (w->death_seen != NEVER) {
        if (now - w->death_seen < WATCH_SETTLE_MS)
            return 0;
        death_verdict(w, v);
    } else if (w->lost_node != NONE) {
        node_verdict(w, w->lost_node, v);
    } else if (!stopped_due(w, now, v) && !watch_comms_due(w, now, v)) {
        return 0;
    }
    v->now_ms = now;
    v->teller = teller(w, v);
    w->given = true;
    return 1;
}

/* The earliest time a node's silence, a stop or a collective wait becomes
 * due; NEVER: none. */
static int64_t waits_next(const struct watch *w)
{
    int64_t t = NEVER;
    if (w->quiet_head != NONE)
        t = watch_after(w->node[w->quiet_head].last_heard, WATCH_LOST_MS);
    bool suspended = w->n_stopped && all_stopped(w);
    for (uint32_t i = 0; i < w->n_stopped && !suspended; i++) {
        int64_t due = watch_after(w->rank[w->stopped[i]].stopped_since, w->stall_ms);
        t = due < t ? due : t;
    }
    int64_t comms = watch_comms_next(w);
    return comms < t ? comms : t;
}

int64_t watch_next(const struct watch *w, int64_t now)
{
    if (w->given || w->n_ended == w->n_ranks)
        return NEVER;
    /* A settling death holds every other verdict until it is given. */
    int64_t t = w->death_seen != NEVER ? watch_after(w->death_seen, WATCH_SETTLE_MS)
                : w->lost_node != NONE ? now
                                       : waits_next(w);
    return t < now ? now : t;
}
