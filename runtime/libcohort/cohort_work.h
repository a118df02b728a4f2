/* cohort_work.h - a work queue over every task of a step: items 0..n-1
 * handed to each worker at its own speed, committed exactly once, never
 * lost when a worker dies.
 *
 *   struct cohort_work *w;
 *   struct cohort_work_opts o = {.size = sizeof o, .journal = "/shared/q.journal"};
 *   if (cohort_work_open(c, "frames", n, &o, &w) != 0) ... cohort_error(c)
 *   uint64_t ids[256];
 *   long k;
 *   while ((k = cohort_work_lease(w, ids, 256)) > 0) {
 *       ... process ids[0..k-1] into results (res, len bytes) ...
 *       int r = cohort_work_commit_output(w, ids, k, res, len);
 *       if (r == COHORT_WORK_STALE) ... another worker has cohort_work_stale_ids'
 *           ids: process the others again and commit them with their results ...
 *   }
 * (with opts.output set: the results are published exactly once; without
 * it, cohort_work_commit commits ids alone and the program keeps results
 * as it likes.)
 *   cohort_work_close(w);
 *
 * The queue is served by a coordinator process of its own (started by
 * rank 0 at cohort_work_open, apart from every worker), reached over
 * cohort's authenticated connections (the step's secret, or munge). A
 * worker pulls: each lease holds about half a second of work at that
 * worker's measured speed, and leases shrink toward the end so nobody
 * holds a large one at the tail; near the end an idle worker may get a
 * copy of a slow worker's last items, and the first commit wins.
 *
 * Guarantees: an item is committed exactly once, ever (with a journal,
 * across steps too); it is processed at least once. A worker whose
 * connection closes (crash, kill -9, node loss) loses its leases at once;
 * a worker that stops answering loses them at lease_timeout_s, and its
 * late commit returns COHORT_WORK_STALE. An item given back (or lost with
 * its worker, or timed out) max_attempts times is set aside: never leased
 * again, reported at the end. When the coordinator dies, every worker's
 * next call fails with one line naming it; rerun the step with the same
 * journal to resume.
 *
 * Every call but cohort_work_status may wait; none waits without a
 * deadline. Calls on one queue from one thread at a time. */
#ifndef COHORT_WORK_H
#define COHORT_WORK_H

#include <stddef.h>
#include <stdint.h>

#include "cohort.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cohort_work;

struct cohort_work_opts {
    size_t size;         /* sizeof(struct cohort_work_opts), so the struct can grow */
    const char *journal; /* NULL: none; else a file (shared filesystem) to resume from: the
                            user's own, not a symbolic link, one hard link, not writable by
                            group or others (docs/work.md, "The journal") */
    int lease_timeout_s; /* 0: default (60); a lease not committed by then is taken back */
    int max_attempts;    /* 0: default 3; an item that failed this often is set aside */
    /* API 1.3: */
    const char *output;  /* NULL: none; else a directory (shared filesystem, one queue's:
                            made when missing, the user's own, not writable by group or
                            others) where cohort_work_commit_output publishes results;
                            needs a journal (docs/work.md, "Results exactly once") */
};

/* cohort_work_commit: this worker's lease on some ids was taken back (by
 * timeout, or another worker committed them first): drop their results. */
#define COHORT_WORK_STALE 1

/* Collective over the step: every rank opens the same queue (name, 1..128
 * characters) with the same n_items (ids 0..n_items-1) and options. 0, or
 * -1 with the reason in cohort_error(c) (the same on every rank). */
int cohort_work_open(struct cohort *c, const char *name, uint64_t n_items,
                     const struct cohort_work_opts *opts, struct cohort_work **w);

/* Leases up to cap item ids into ids (cohort picks how many, at most cap)
 * and returns that count; waits while items may still come back; returns
 * 0 when every item is committed or set aside, -1 on error (cohort_error). */
long cohort_work_lease(struct cohort_work *w, uint64_t *ids, size_t cap);

/* These items are done. 0; COHORT_WORK_STALE when this worker's lease on
 * some of them was taken back (those are not committed by it: drop their
 * results; the others are committed); -1 on error, e.g. ids this worker
 * does not hold (named in cohort_error). */
int cohort_work_commit(struct cohort_work *w, const uint64_t *ids, size_t n);

/* API 1.3. Commits ids[0..n-1] (any order, none twice, n >= 1) together
 * with their results, len bytes at data (any content; 0 allowed), all or
 * nothing. 0: every id is committed by this worker and the bytes are
 * published in the queue's output directory exactly once, as one part
 * (also when this worker dies as the call returns, and when the
 * coordinator dies after deciding: a rerun over the journal finishes the
 * publication). COHORT_WORK_STALE: some id was no longer this worker's;
 * nothing of the call is committed or published, cohort_work_stale_ids
 * names those ids, and the others stay leased to this worker (commit them
 * again, with their own results). -1: an error (cohort_error), nothing
 * committed by this call as far as this worker can tell; when the
 * coordinator refused the call (its offer, or an id never this worker's),
 * the ids of the call it still held went back to the queue (other workers
 * do them); when the coordinator is gone the call's fate is settled by
 * the rerun over the journal, either way exactly once. The results are written to a file
 * by this worker (synced before the commit): they never pass through the
 * coordinator. The queue needs opts.output. */
int cohort_work_commit_output(struct cohort_work *w, const uint64_t *ids, size_t n,
                              const void *data, size_t len);

/* The kinds of results a part records for its readers. */
#define COHORT_WORK_OUTPUT_BYTES 0u  /* bytes, as given */
#define COHORT_WORK_OUTPUT_PICKLE 1u /* a Python pickle (the Python package's save) */

/* API 1.3. cohort_work_commit_output, the part recorded as of kind (the
 * two above, or any other number a program gives its own meaning). */
int cohort_work_commit_output_kind(struct cohort_work *w, const uint64_t *ids, size_t n,
                                   const void *data, size_t len, uint32_t kind);

/* Gives items back unprocessed (counts an attempt). 0, COHORT_WORK_STALE
 * or -1 as cohort_work_commit. */
int cohort_work_fail(struct cohort_work *w, const uint64_t *ids, size_t n);

/* After cohort_work_commit or cohort_work_fail returned COHORT_WORK_STALE:
 * the ids of that call this worker no longer held (*n of them; drop their
 * results), every other id of the call having been committed (or given
 * back) by it. Valid until the next call on w; NULL with *n 0 when none. */
const uint64_t *cohort_work_stale_ids(const struct cohort_work *w, size_t *n);

/* Keeps this worker's leases alive for another lease_timeout_s (long items). */
int cohort_work_extend(struct cohort_work *w);

/* Totals as the coordinator sees them. */
struct cohort_work_status {
    uint64_t total, committed, leased, queued, set_aside;
};
int cohort_work_status(struct cohort_work *w, struct cohort_work_status *st);

/* API 1.3. Drains this worker (async-signal-safe: for a handler of
 * Slurm's warning, SIGTERM at a time limit or preemption, or --signal's):
 * the next cohort_work_lease leases nothing more and returns 0, and
 * cohort_work_close returns at once, COHORT_WORK_DRAINED when items are
 * left (they stay queued, in the journal, for the next step, e.g. after
 * --requeue). Commit the ids in hand before that close: what this worker
 * still holds then goes back. Returns 0 (-1 for w NULL). */
int cohort_work_drain(struct cohort_work *w);

/* cohort_work_close of a drained worker: items are left for a later step. */
#define COHORT_WORK_DRAINED 2

/* Collective: returns when every item is committed or set aside; frees w
 * (whatever it returns). 0; or -1 with the reason in cohort_error, e.g. at
 * once when every worker left in the queue has closed it with items not
 * done and none leased (nobody would do them), or after a call on w failed
 * for the coordinator (gone, silent), cohort_error still naming that
 * failure; or, after cohort_work_drain, COHORT_WORK_DRAINED at once when
 * items are left (not collective then: each drained worker returns by
 * itself). */
int cohort_work_close(struct cohort_work *w);

#ifdef __cplusplus
}
#endif

#endif
