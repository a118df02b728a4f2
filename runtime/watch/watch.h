/* watch.h - the step watch's decisions (--cohort-watch): who died first,
 * which node is lost, which rank is stopped or keeps a collective waiting,
 * and when. It holds what the node agents report of their nodes and ranks
 * and turns it into at most one verdict for the step. It has no sockets and
 * no clock of its own: every call takes the time (ms, one monotonic clock
 * of the caller's), so that tests drive it with a simulated clock. The
 * store holder keeps one for the step (runtime/coord/store_service.c).
 *
 * Decisions: a death's verdict waits WATCH_SETTLE_MS after the first death
 * and names the earliest death by the node's wall clock, because a rank's
 * death makes its peers' libraries fail a moment later and those are not
 * the news; a step whose every rank ended by then was ended by Slurm (scancel,
 * a time limit) and gets no verdict, and so does a step whose every running
 * rank is stopped (Slurm suspended it). A node is lost after WATCH_LOST_MS of
 * silence: ten beats missed, far above a loaded node's scheduling delays,
 * and inside the 15 s the user is promised. A rank that computes (running,
 * in no collective its peers started) is never named. */
#ifndef COHORT_WATCH_H
#define COHORT_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#define WATCH_BEAT_MS 1000   /* agents and holder send a beat this often */
#define WATCH_LOST_MS 10000  /* a node (or the holder) silent this long is lost */
#define WATCH_SETTLE_MS 300  /* the first death waits this long for an earlier one */
#define WATCH_STALL_DEFAULT_S 120
#define WATCH_GRACE_MS 1000  /* SIGTERM, then SIGKILL this much later */
#define WATCH_PAUSE_MS 3000  /* a holder's or agent's loop this late was stopped, not slow */

/* A collective's operation, as the profiler reports it. */
enum watch_op {
    WATCH_OP_OTHER = 0,
    WATCH_OP_BROADCAST,
    WATCH_OP_REDUCE,
    WATCH_OP_ALLGATHER,
    WATCH_OP_REDUCESCATTER,
    WATCH_OP_ALLREDUCE,
    WATCH_OP_SEND,
    WATCH_OP_RECV,
    WATCH_OP_ALLTOALL,
    WATCH_OP_MAX = WATCH_OP_ALLTOALL,
};

/* The name of op ("allreduce"; "collective" for WATCH_OP_OTHER or out of
 * range). */
const char *watch_op_name(unsigned op);

enum watch_kind {
    WATCH_NONE = 0,
    WATCH_DIED,          /* a task ended with a non-zero status */
    WATCH_NODE_LOST,     /* a node silent for WATCH_LOST_MS, or its link closed */
    WATCH_STOPPED,       /* a task stopped (SIGSTOP, a debugger) for stall_ms */
    WATCH_NOT_JOINED,    /* a rank did not start a collective its peers started */
    WATCH_NOT_COMPLETED, /* a collective started by all, not completed by some */
};

#define WATCH_RANKS_MAX 8 /* ranks a verdict names by number (more: counted) */

/* The verdict: what the line and the JSON object say (watch_text.h). */
struct watch_verdict {
    enum watch_kind kind;
    uint32_t node;              /* the node named (the first rank's, for rank kinds) */
    bool closed;                /* NODE_LOST: its link closed (else: silent) */
    uint32_t n_ranks;           /* ranks named in all */
    uint32_t ranks[WATCH_RANKS_MAX]; /* the first of them, ascending */
    int status;                 /* DIED: the wait status */
    int64_t at_wall_ms;         /* DIED: the node's wall clock at the death; else 0 */
    int64_t since_ms;           /* STOPPED, collectives, NODE_LOST: when the wait began
                                 * (the caller's clock) */
    int64_t now_ms;             /* when the verdict was made (the caller's clock) */
    uint64_t comm;              /* collectives: the communicator's hash */
    uint64_t seq;               /* collectives: the collective's number (1 = the first) */
    unsigned op;                /* collectives: enum watch_op */
    uint32_t peers;             /* collectives: ranks of the communicator that started it
                                 * (NOT_JOINED) or its size (NOT_COMPLETED) */
    int64_t coll_since_ms;      /* STOPPED with seq set: when its peers started the
                                 * collective it has not joined (the caller's clock) */
    uint32_t teller;            /* the node whose plugin tells the user */
};

struct watch;

/* A watch over a step of n_ranks ranks on n_nodes nodes, rank_node[r]
 * being rank r's node (copied); stall_ms: how long a rank may keep the
 * others waiting. NULL with errno ENOMEM, or EINVAL when n_ranks or
 * n_nodes is 0, a rank's node is not below n_nodes or stall_ms is below 1.
 * The calls below ignore a node or rank out of range: the caller checks
 * what it reads and says so. */
struct watch *watch_new(uint32_t n_ranks, uint32_t n_nodes, const uint32_t *rank_node,
                        int64_t stall_ms);
void watch_free(struct watch *w);

/* A node's agent connected (its silence counts from now); nothing for a
 * node that left or was lost. */
void watch_node_joined(struct watch *w, uint32_t node, int64_t now);
/* Anything came from the node's agent. */
void watch_node_heard(struct watch *w, uint32_t node, int64_t now);
/* The node's agent said goodbye (the step ended there): never lost. */
void watch_node_left(struct watch *w, uint32_t node, int64_t now);
/* The node's link closed without a goodbye: lost now. */
void watch_node_closed(struct watch *w, uint32_t node, int64_t now);

/* The node was lost at now as the agent above it in the watch's tree
 * (watch_tree.h) saw it: its link closed (closed), or it was silent since
 * since. For a node whose agent does not reach the caller itself, whose
 * silence the caller never judges. */
void watch_node_lost(struct watch *w, uint32_t node, bool closed, int64_t since, int64_t now);

/* A rank's task ended with wait status at the node's wall clock wall_ms. */
void watch_task_ended(struct watch *w, uint32_t rank, int status, int64_t wall_ms, int64_t now);
/* A rank's task was seen stopped (true) or running again (false). */
void watch_task_stopped(struct watch *w, uint32_t rank, bool stopped, int64_t now);
/* A rank's counts of one communicator (comm: its hash; nranks, comm_rank:
 * its size and the rank's place in it; started, completed: collectives so
 * far; op: the last one started). Counts never go back (a lower one is
 * kept at the higher) and completed is taken as at most started. Returns
 * 0, or -1 with errno and the report dropped: ENOMEM, or EINVAL when rank
 * is not below n_ranks, nranks is 0 or above n_ranks, comm_rank is not
 * below nranks, the communicator was reported with another size, or its
 * place comm_rank by another rank. */
int watch_progress(struct watch *w, uint32_t rank, uint64_t comm, uint32_t nranks,
                   uint32_t comm_rank, uint64_t started, uint64_t completed, unsigned op,
                   int64_t now);

/* The caller itself did not run for gap_ms just before now (its process was
 * stopped: `scontrol suspend`, a gang-scheduled or preempted job, which stop
 * the whole step with its agents): every time the watch holds moves gap_ms
 * later, so that the pause counts as no one's silence, stop or wait. */
void watch_pause(struct watch *w, int64_t gap_ms);

/* The verdict due at now: 1 with *v the first time one is due (and never
 * again), 0 when none is. */
int watch_check(struct watch *w, int64_t now, struct watch_verdict *v);

/* The earliest time (the caller's clock) watch_check may have a verdict
 * that it has not now: the caller's next wake-up, never before now (now
 * itself: one is due). INT64_MAX: none pending. */
int64_t watch_next(const struct watch *w, int64_t now);

/* When the first death that counts was reported (the caller's clock),
 * INT64_MAX when none was. */
int64_t watch_death_seen(const struct watch *w);

/* The teller for a verdict naming node lost: the lowest node other than
 * it that has neither left nor been lost; failing that, lost itself. */
uint32_t watch_teller(const struct watch *w, uint32_t lost);

#endif
