/* work_sched.h - the work coordinator's scheduling and lease logic, pure: which
 * item ids a worker gets, how many, until when, and what happens to them
 * when the worker commits, gives them back, hangs or dies.
 *
 * It owns the queue of items 0..n-1 (as ranges: a fresh queue is the one
 * range [0,n), items given back go to its front), every worker's leases,
 * each worker's measured rate, the items set aside, and the counters of
 * the final report. It owns no socket, no clock, no file and no global
 * state: every time is an int64 count of milliseconds the caller passes in
 * (any monotonic origin), and the coordinator that owns the connections,
 * the journal and the clock calls these functions.
 *
 * Decisions:
 * - Lease size: rate x the lease time, the rate being an EWMA (weight 0.3) of
 *   the items per ms a worker commits (stale items count: the work was
 *   done), measured from when it began holding a lease or last committed.
 *   Before its first measurement a worker gets first_lease items, doubled
 *   with each commit that came before SCHED_FIRST_SAMPLE_MS of its work
 *   (the first sample is taken over at least that long). Toward the end no
 *   lease is larger than half the worker's share of the queue
 *   (queued x its rate / all active workers' rates / 2), so leases shrink
 *   geometrically and every worker ends within about one item's time.
 * - Lease time: target_ms, or longer where the workers would otherwise ask
 *   the coordinator for more than lease_rate leases a second: with A
 *   workers active, A / lease_rate seconds (at 131,072 workers and the
 *   default budget, 18.7 s), but at most half the lease timeout (beyond
 *   that the budget is exceeded rather than leases taken back from workers
 *   doing them). Then a worker not yet measured gets the mean
 *   rate's lease at once instead of doubling its way up from first_lease
 *   (once any worker is measured), and waits (SCHED_WAIT) last that long
 *   too. There each lease's time is also spread over +-25 % of it (never
 *   over half the lease timeout), by a hash of the worker and its count
 *   of leases (the same calls give the same leases): workers of one speed
 *   that started together would otherwise come back in the same
 *   millisecond lease after lease, the last of them waiting for the
 *   coordinator to answer all the others.
 *   The queue's end is unchanged: leases still shrink to its half share
 *   (not under a quarter of the lease time), so the tail stays short.
 * - Attempts: an item counts one attempt each time it goes back to the
 *   queue: given back (sched_fail), taken back at its deadline, or held by
 *   a lost worker. So a poison item that crashes or hangs every worker that
 *   takes it is set aside after max_attempts, instead of killing workers
 *   one after the other. An item whose other copy (speculation) is still
 *   held goes nowhere and counts nothing.
 * - Speculation: when the queue is empty, a worker asking for work gets a
 *   copy of the tail of the lease predicted to finish last (granted +
 *   size / holder's rate; an overdue lease is expected to take as long
 *   again as it has already), as many items k as minimize
 *   max(holder's finish - k / its rate, now + k / asker's rate), and only
 *   when that finish is earlier than the holder's. Each item has at most
 *   one copy; a worker never gets a copy of an item it holds. The first
 *   commit wins; the other holder's commit is STALE. Beyond
 *   SCHED_VICTIM_SCAN workers, one asking looks at the leases of the next
 *   SCHED_VICTIM_SCAN workers in turn, not all: at 131,072 workers a look
 *   at every lease by every idle worker at the tail would cost the
 *   coordinator minutes.
 * - Expiry: every call that passes `now` first takes back the leases whose
 *   deadline is at or before it, so a commit after its lease's deadline is
 *   STALE whether or not sched_tick ran in between.
 */
#ifndef COHORT_SCHED_H
#define COHORT_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define SCHED_MAX_ITEMS (UINT64_C(1) << 48) /* rates and sizes stay exact in a double */
#define SCHED_MAX_WORKERS 1048576u

#define SCHED_DEFAULT_LEASE_TIMEOUT_MS 60000
#define SCHED_DEFAULT_MAX_ATTEMPTS 3u
#define SCHED_DEFAULT_TARGET_MS 500
#define SCHED_DEFAULT_FIRST_LEASE 1u
#define SCHED_FIRST_SAMPLE_MS 10 /* a worker's first rate is measured over this much */
#define SCHED_DEFAULT_LEASE_RATE 7000u /* leases a second the coordinator is asked for */
#define SCHED_VICTIM_SCAN 256u /* workers one speculation looks at, at most */

/* Every field 0 means its default. */
struct sched_opts {
    int64_t lease_timeout_ms; /* a lease not committed or extended by then is taken back */
    unsigned max_attempts;    /* an item that went back to the queue this often is set aside */
    int64_t target_ms;        /* the work one lease should hold, at the worker's rate */
    uint64_t first_lease;     /* items of a worker's leases before its rate is known */
    uint32_t lease_rate;      /* the leases a second all workers together should ask for */
};

/* Results of the calls (errors are negative, with a sentence in err). */
enum {
    SCHED_OK = 0,        /* sched_lease: items granted; commit/fail: every id taken */
    SCHED_STALE = 1,     /* commit/fail: some ids had been taken back from this worker */
    SCHED_WAIT = 2,      /* sched_lease: nothing now; ask again by wait_until or on a change */
    SCHED_FINISHED = 3,  /* sched_lease: every item is committed or set aside */
    SCHED_EINVAL = -1,   /* a bad argument or id; err says which */
    SCHED_ENOMEM = -2,   /* out of memory; what was done before is consistent and counted */
};

/* Per id of sched_commit and sched_fail, in the caller's optional array. */
enum sched_verdict_code {
    SCHED_V_TAKEN = 0,   /* committed now (commit) or given back now (fail) */
    SCHED_V_STALE,       /* this worker held it once, and it was taken back */
    SCHED_V_NOT_HELD,    /* never leased to this worker, or already done by it */
    SCHED_V_OUT_OF_RANGE,/* not an id of this queue */
};

struct sched_verdict {
    uint64_t taken, stale, bad;      /* counts over the call's ids */
    uint64_t first_stale, first_bad; /* the first such id, when the count is not 0 */
};

struct sched_grant {
    size_t n;            /* ids written (SCHED_OK) */
    size_t copies;       /* of them, copies of items another worker holds */
    int64_t wait_until;  /* SCHED_WAIT: the next moment items may come back */
};

struct sched_status {
    uint64_t total, committed, leased, queued, set_aside;
    uint64_t copies;     /* items handed out as a second copy (speculation) */
    uint64_t requeued;   /* items that went back to the queue (fail, deadline, lost) */
};

struct sched_worker_stats {
    uint64_t committed;  /* items this worker committed */
    uint64_t stale;      /* items it committed or gave back after they were taken back */
    uint64_t failed;     /* items it gave back */
    uint64_t leases;     /* leases granted (copies included) */
    uint64_t leased;     /* items granted */
    uint64_t copies;     /* items granted as copies */
    uint64_t expired;    /* items taken back at their deadline */
    double rate;         /* measured items per second; 0: not measured */
    int lost;            /* 1 while lost */
};

struct sched_span {
    uint64_t lo, hi;     /* ids lo..hi-1 */
};

struct sched_aside {
    uint64_t lo, hi;     /* ids lo..hi-1 */
    unsigned attempts;
};

struct sched;

/* A queue of n_items ids 0..n_items-1 (1..SCHED_MAX_ITEMS) for workers
 * 0..n_workers-1 (1..SCHED_MAX_WORKERS), all live. opts may be NULL.
 * Returns 0, or SCHED_EINVAL / SCHED_ENOMEM with err. */
int sched_create(uint64_t n_items, unsigned n_workers, const struct sched_opts *opts,
                 struct sched **out, struct cohort_err *err);
void sched_destroy(struct sched *s);

/* Resume: the ids in spans were committed by an earlier run (a journal's
 * records, in any order, overlaps allowed; spans sorted by lo, as a
 * journal replays them, are neither copied nor sorted again). Only before
 * the first other call; best in one call (each costs a pass over the
 * queue's ranges).
 * Returns 0, SCHED_EINVAL (an id out of range, or leasing has begun) or
 * SCHED_ENOMEM. */
int sched_mark_committed(struct sched *s, const struct sched_span *spans, size_t n,
                         struct cohort_err *err);

/* Hands worker w at most cap ids (sorted ascending) into ids, fresh or
 * given back ones first, else copies of another worker's tail. Returns
 * SCHED_OK with g->n > 0, SCHED_WAIT with g->wait_until (> now: the next
 * lease deadline, or now + target_ms when a copy may become worthwhile),
 * SCHED_FINISHED, or an error. The lease's deadline is now +
 * lease_timeout_ms. */
int sched_lease(struct sched *s, unsigned w, int64_t now, uint64_t *ids, size_t cap,
                struct sched_grant *g, struct cohort_err *err);

/* Worker w has done ids[0..n-1]. Each id w holds is committed now (for
 * good: it is never handed out again), whatever the other ids of the call
 * are; an id w held and lost is STALE; any other id is bad. v (counts and
 * first ids) and verdicts (one sched_verdict_code per id) may be NULL.
 * Returns SCHED_OK, SCHED_STALE (none bad, some stale), SCHED_EINVAL (some
 * bad: err names the first and why) or SCHED_ENOMEM. */
int sched_commit(struct sched *s, unsigned w, int64_t now, const uint64_t *ids, size_t n,
                 struct sched_verdict *v, unsigned char *verdicts, struct cohort_err *err);

/* All or nothing: when worker w holds every id of ids[0..n-1] (ascending,
 * none twice), they are committed as by sched_commit and SCHED_OK is
 * returned; else nothing changes (w keeps the ids it holds) and the result
 * is SCHED_STALE or SCHED_EINVAL, v and verdicts saying which ids are
 * stale or bad (SCHED_V_TAKEN there: held, not committed). */
int sched_commit_all(struct sched *s, unsigned w, int64_t now, const uint64_t *ids, size_t n,
                     struct sched_verdict *v, unsigned char *verdicts, struct cohort_err *err);

/* Worker w gives ids back unprocessed: each goes to the queue's front with
 * one attempt more, or is set aside at max_attempts; an id of which
 * another worker holds a copy only loses this worker's copy. Results as
 * sched_commit. */
int sched_fail(struct sched *s, unsigned w, int64_t now, const uint64_t *ids, size_t n,
               struct sched_verdict *v, unsigned char *verdicts, struct cohort_err *err);

/* Moves every deadline of worker w's leases to now + lease_timeout_ms
 * (leases already past their deadline are taken back first). */
int sched_extend(struct sched *s, unsigned w, int64_t now, struct cohort_err *err);

/* Worker w is gone (its connection closed): all its leases go back to the
 * queue's front at once, each item counting an attempt, and w may not call
 * again until sched_worker_join. On SCHED_ENOMEM part may be back; calling
 * again finishes. */
int sched_worker_lost(struct sched *s, unsigned w, int64_t now, struct cohort_err *err);

/* A lost worker slot is taken by a new process: live again, rate unknown;
 * its report counters go on. */
int sched_worker_join(struct sched *s, unsigned w, struct cohort_err *err);

/* Takes back the leases past their deadline at now. *next: no deadline
 * left is earlier (INT64_MAX: none left), so the caller need not call
 * again before it. */
int sched_tick(struct sched *s, int64_t now, int64_t *next, struct cohort_err *err);

void sched_status(const struct sched *s, struct sched_status *st);
/* Returns 0, or SCHED_EINVAL for a worker out of range. */
int sched_worker_stats(const struct sched *s, unsigned w, struct sched_worker_stats *ws);
/* The items set aside, in the order they were, with their attempts. */
const struct sched_aside *sched_set_aside(const struct sched *s, size_t *n);

/* Checks every internal invariant (counts add up to the total, no id in
 * two places, copies mirror each other, ...): 0, or -1 with the first
 * broken one in err. For tests; it costs a pass over all ranges. */
int sched_check(const struct sched *s, struct cohort_err *err);

#endif
