/* sched_private.h - the scheduler's structures, shared by its files:
 * sched.c (queue, containers, a worker's leases, creation, resume,
 * status), sched_return.c (commit, fail, expiry, loss), sched_lease.c
 * (sizes, grants, speculation), sched_check.c (invariants); each calls
 * only those before it. Nothing outside runtime/work includes it. */
#ifndef COHORT_SCHED_PRIVATE_H
#define COHORT_SCHED_PRIVATE_H

#include <stdbool.h>

#include "base_runs.h"
#include "base_sys.h"
#include "work_sched.h"

/* A run of ids lo..hi-1 with the same attempts. In a lease, twin is the
 * worker holding the other copy of exactly this run (its segment has the
 * same lo and hi and names this worker), or -1. */
struct seg {
    uint64_t lo, hi;
    uint32_t attempts;
    int32_t twin;
};

/* One grant to one worker: its segments, sorted by lo, disjoint. */
struct lease {
    int64_t granted, deadline;
    uint64_t size;      /* items at grant */
    uint64_t held;      /* items still held */
    struct seg *segs;
    size_t nseg, capseg;
};

/* The queue: a ring of segments; taken from and given back to the front. */
struct segq {
    struct seg *buf;
    size_t cap, head, len;
};

struct worker {
    struct lease *leases;   /* nlease in use; up to caplease kept with their buffers */
    size_t nlease, caplease;
    struct base_runs revoked; /* its ids taken back: its late commit of them is STALE */
    double rate;            /* items per ms; 0: not measured */
    int64_t busy_since;     /* start of the interval the next commit measures */
    uint64_t pending;       /* items done in intervals too short to measure so far */
    int64_t pending_ms;     /* the busy time of those intervals */
    unsigned probes;        /* commits too quick to measure: first leases double */
    bool lost, active;      /* active: has leased since it (re)joined */
    struct sched_worker_stats st;
};

struct sched {
    uint64_t n;
    unsigned nw;
    struct sched_opts o;
    struct segq q;
    struct worker *w;
    struct sched_aside *aside;
    size_t naside, capaside;
    uint64_t committed, leased, queued, set_aside, copies, requeued;
    double sum_rate;        /* of measured active workers */
    unsigned n_measured, n_active;
    int64_t next_deadline;  /* no lease's deadline is earlier (a lower bound) */
    unsigned scan_from;     /* where the next speculation's look starts */
    bool started;           /* leasing began: no more sched_mark_committed */
};

static inline uint64_t seg_len(const struct seg *g)
{
    return g->hi - g->lo;
}

/* A lease's deadline given at now (saturating). */
static inline int64_t sched_deadline(const struct sched *s, int64_t now)
{
    return now > INT64_MAX - s->o.lease_timeout_ms ? INT64_MAX : now + s->o.lease_timeout_ms;
}

/* sched.c: the queue */
int segq_reserve(struct segq *q, size_t more);
struct seg *segq_front(struct segq *q);
void segq_pop(struct segq *q);
/* Puts a run at the front (merged with the front run when they touch);
 * segq_reserve(q, 1) first. */
void segq_push_front(struct segq *q, uint64_t lo, uint64_t hi, uint32_t attempts);
int lease_reserve(struct lease *l, size_t more);

/* sched.c: SCHED_ENOMEM with its sentence */
int sched_nomem(struct cohort_err *err);
/* sched.c: common checks and the worker's membership in the rate sums */
int sched_worker_ok(struct sched *s, unsigned w, struct cohort_err *err);
void sched_set_rate(struct sched *s, struct worker *wk, double rate);
void sched_deactivate(struct sched *s, struct worker *wk);

/* sched.c: a worker's leases */
/* The lease of wk holding id and the segment's index, or NULL. */
struct lease *lease_find(const struct worker *wk, uint64_t id, size_t *si);
/* A fresh lease slot of worker wi, or NULL when out of memory. */
struct lease *lease_new(struct sched *s, unsigned wi, int64_t now);
/* Adds the lease's deadline to the bounds and the counters of worker wi. */
void lease_granted(struct sched *s, unsigned wi, struct lease *l, int64_t now);
void lease_drop(struct worker *wk, struct lease *l);

/* sched_return.c: what sched_lease.c needs */
int sched_expire(struct sched *s, int64_t now, struct cohort_err *err);

#endif
