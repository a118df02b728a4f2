/* watch_private.h - what the watch's two files share (watch.c: the nodes,
 * the ranks' ends and stops, the verdict; watch_comm.c: the communicators'
 * counts and their waits): the watch's state and the helpers watch_comm.c
 * offers watch.c. Not for other modules. */
#ifndef COHORT_WATCH_PRIVATE_H
#define COHORT_WATCH_PRIVATE_H

#include <stddef.h>

#include "watch.h"

#define NONE UINT32_MAX
#define NEVER INT64_MAX
#define RING 64 /* counts of a communicator whose first time is kept */

/* Collectives up to hi (from the previous entry's hi + 1) were first
 * reached at t. */
struct seq_time {
    uint64_t hi;
    int64_t t;
};

struct seq_ring {
    uint32_t n;
    struct seq_time r[RING];
};

/* One place (comm rank) of a communicator. */
struct member {
    uint32_t rank;                   /* global rank; NONE: not reported yet */
    uint32_t pos[2];                 /* places in the heaps; NONE: not active */
    uint32_t next_comm, next_member; /* the rank's next membership */
    uint64_t count[2];               /* started, completed (never above started) */
    unsigned op;
};

/* A communicator: its places, the active ones (reported, the rank not
 * ended, its node not left) in two heaps, by started and by completed. */
struct comm {
    uint64_t hash;
    uint32_t nranks, n_reported, n_active;
    uint64_t max_started;
    struct seq_ring peers;        /* when the highest started first reached each count */
    struct seq_ring all;          /* when the lowest started did, while every place is active */
    int64_t due_joined, due_done; /* when NOT_JOINED and NOT_COMPLETED become due */
    uint32_t *heap[2];
    uint32_t heap_n[2];
    struct member m[];
};

struct comm_key {
    uint64_t hash;
    uint32_t index;
};

struct rank_state {
    bool ended;
    int status;
    int64_t wall_ms, seen;            /* the end's wall clock, and when it was reported */
    uint32_t stop_at;                 /* place in the stopped list; NONE: running */
    int64_t stopped_since;
    uint32_t first_comm, first_member; /* its first membership; NONE: none */
};

struct node_state {
    bool joined, left, lost, closed;
    int64_t last_heard, since, lost_at;
    uint32_t prev, next;          /* the silence list, oldest heard first */
    uint32_t first_rank, n_ranks; /* its ranks in node_ranks */
};

struct watch {
    uint32_t n_ranks, n_nodes, n_ended;
    int64_t stall_ms;
    uint32_t *rank_node, *node_ranks, *stopped;
    uint32_t n_stopped;
    struct rank_state *rank;
    struct node_state *node;
    uint32_t quiet_head, quiet_tail;
    uint32_t lost_node;  /* the lost node to name; NONE: none */
    int64_t death_seen;  /* when the first death was reported; NEVER: none */
    uint32_t death_rank; /* the earliest death so far */
    bool given;
    struct comm **comms;
    struct comm_key *keys; /* sorted by hash */
    size_t n_comms, cap_comms, cap_keys;
};

/* t + d, or NEVER when that is past the clock's end. */
static inline int64_t watch_after(int64_t t, int64_t d)
{
    return t > NEVER - d ? NEVER : t + d;
}

/* A rank whose reports still count: not ended, its node not left. */
static inline bool watch_rank_active(const struct watch *w, uint32_t r)
{
    return !w->rank[r].ended && !w->node[w->rank_node[r]].left;
}

/* Adds rank r to the verdict's named ranks (counted in n_ranks), keeping
 * the lowest WATCH_RANKS_MAX in ranks, ascending. */
void watch_name_rank(struct watch_verdict *v, uint32_t r);

/* Takes rank r out of every communicator's waits: it has ended or its node
 * has left, so that what it last reported is stale. */
void watch_comms_retire(struct watch *w, uint32_t r, int64_t now);

/* The collective wait due at now into *v (NOT_COMPLETED before NOT_JOINED,
 * the earliest first): true, or false when none is due. */
bool watch_comms_due(const struct watch *w, int64_t now, struct watch_verdict *v);
/* For a stopped rank r's verdict: the collective of its communicators that
 * its peers started first and it has not joined, if any (comm, seq, op,
 * peers, coll_since_ms); v is left as it is when there is none. */
void watch_comms_waiting(const struct watch *w, uint32_t r, struct watch_verdict *v);

/* The earliest time a collective wait becomes due; NEVER: none. */
int64_t watch_comms_next(const struct watch *w);

/* Moves every time the communicators hold gap_ms later (watch_pause). */
void watch_comms_pause(struct watch *w, int64_t gap_ms);

void watch_comms_free(struct watch *w);

#endif
