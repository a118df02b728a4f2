/* place.h - where each stream of a stream set lives, pure: consistent
 * hashing with bounded loads (Mirrokni, Thorup and Zadimoghaddam) weighted
 * by capacity, sticky, and the ownership of every stream with its epochs.
 *
 * It owns the workers (capacity, alive or not, lease), the streams (key,
 * cost, owner, epoch, reported load), the hash ring and the actions the
 * caller must send (ASSIGN to a new owner, REVOKE to the current one). It
 * owns no socket, no clock and no global state: every time is an int64
 * count of milliseconds the caller passes in (any monotonic origin), so
 * that tests run it on a simulated clock. The coordinator that owns the
 * connections calls these functions and sends the actions.
 *
 * Decisions:
 * - The ring: a worker has vnodes points at the mean capacity of the live
 *   workers, in proportion to its capacity (at least one, at most 16 x
 *   vnodes), at hashes of (worker, i); a stream (64-bit hash of its key) walks
 *   the ring clockwise from its hash, and its preference list is the
 *   distinct live workers met on the way.
 * - Bounded loads: worker w may hold at most bound(w) = (1 + epsilon) x
 *   its share of capacity x the total cost of all streams. A stream goes
 *   to the first worker of its preference list with room for it (an empty
 *   worker always has room: one stream costlier than a bound still gets a
 *   worker); when none has room, to the live worker with the lowest load
 *   per capacity after taking it.
 * - Sticky: a stream stays where it is while its owner lives, keeps its
 *   lease and is within its bound. Only these move it: its owner's death
 *   or lease running out (its streams, and no others); a worker joining
 *   (the streams whose first preference it now is, up to its fair share);
 *   a worker above its bound after a change (its costliest streams, until
 *   within); a worker whose reported load stayed above its bound for
 *   shed_after_ms (its costliest reported streams, to other workers).
 * - Never two owners: moving a stream is REVOKE to its owner; the stream
 *   goes to its next owner (ASSIGN, a new epoch) only once the owner
 *   released it, died, or its lease ran out. Epochs come from one counter
 *   of the set, so every ownership of a stream has a larger epoch than the
 *   one before. A worker whose lease ran out is told REVOKE for each
 *   stream taken from it (its epoch is then old: its results are stale).
 * - A removed stream that has an owner is revoked and forgotten at its
 *   release (or its owner's end). Removing an unknown stream does nothing.
 *   Adding a stream that exists does nothing (its cost stays). */
#ifndef COHORT_PLACE_H
#define COHORT_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PLACE_KEY_MAX 255 /* bytes of a key, without the terminating NUL */
#define PLACE_MAX_WORKERS 131072u
#define PLACE_MAX_CAPACITY 1e6
#define PLACE_DEFAULT_EPSILON 0.25
#define PLACE_DEFAULT_VNODES 100u       /* ring points per unit of capacity */
#define PLACE_DEFAULT_LEASE_MS 30000    /* a worker silent this long loses its streams */
#define PLACE_DEFAULT_SHED_AFTER_MS 10000

/* Every field 0 means its default. */
struct place_opts {
    double epsilon;         /* > 0: the load bound's slack */
    unsigned vnodes;        /* ring points per unit of capacity */
    int64_t lease_ms;       /* a worker not renewed for this long loses its streams */
    int64_t shed_after_ms;  /* reported load above the bound this long: shed */
};

enum {
    PLACE_OK = 0,
    PLACE_NOOP = 1,         /* add: it exists; remove: unknown; release: an old epoch */
    PLACE_EINVAL = -1,      /* a bad argument; err says which */
    PLACE_ENOMEM = -2,      /* out of memory: the set is no longer whole; free it */
};

enum place_act_type { PLACE_ASSIGN = 1, PLACE_REVOKE = 2 };

/* One thing to tell a worker. */
struct place_act {
    enum place_act_type type;
    uint32_t worker;
    uint64_t epoch;         /* ASSIGN: the new ownership's; REVOKE: the one ending */
    char key[PLACE_KEY_MAX + 1];
};

struct place;

/* A set for workers 0..nw-1, none of them joined yet. */
int place_new(uint32_t nw, const struct place_opts *opts, struct place **out,
              struct cohort_err *err);
void place_free(struct place *p);

/* Worker w joins (or comes back) with capacity cap (> 0); its lease runs
 * from now. */
int place_join(struct place *p, uint32_t w, double cap, int64_t now, struct cohort_err *err);
/* Worker w is gone (its connection closed): its streams go to others now. */
int place_lost(struct place *p, uint32_t w, struct cohort_err *err);
/* Worker w was heard from: its lease runs from now. A worker whose lease
 * had run out joins again (with its capacity). */
int place_renew(struct place *p, uint32_t w, int64_t now, struct cohort_err *err);

/* A stream (key: 1..PLACE_KEY_MAX bytes; cost > 0). PLACE_OK or PLACE_NOOP. */
int place_add(struct place *p, const char *key, double cost, struct cohort_err *err);
/* PLACE_OK, or PLACE_NOOP for a key the set does not have. */
int place_remove(struct place *p, const char *key, struct cohort_err *err);
/* Worker w stopped working on key at epoch. PLACE_OK; PLACE_NOOP for a
 * late owner (the stream was given on since, is unplaced or was
 * forgotten: an epoch this set gave, older than the stream's now);
 * PLACE_EINVAL when w does not own key at that epoch. A release of a
 * stream not revoked gives it to another worker (where one has room,
 * else the least loaded other; with no other live worker, back to w
 * under a new epoch). */
int place_release(struct place *p, uint32_t w, const char *key, uint64_t epoch,
                  struct cohort_err *err);
/* Worker w's measured load on key (>= 0, any unit, the same for all). */
int place_report(struct place *p, uint32_t w, const char *key, double load,
                 struct cohort_err *err);

/* Expired leases and load shedding due by now; *next: the next moment
 * something may be due (INT64_MAX: none). It looks only at the workers
 * whose lease ended, those that may be over their reported bound and those
 * timed as over it (a tree over the workers names them), not at every
 * worker or stream; a renewal or a report costs a walk up that tree. A
 * worker's reported load is kept as reports come, with the sum of its
 * additions' rounding errors (none while its loads add up exactly, as
 * whole numbers below 2^53 do); it is summed afresh where that error could
 * decide (within it of its bound), before it sheds, and, the most in error
 * first and each at most once, while the errors a fresh sum would remove
 * are more than 1e-13 of the set's load (the sum of the workers',
 * pairwise); a fresh sum keeps its own rounding as its error. So with
 * loads that do not add up exactly a worker's sum and the set's may differ
 * in their last bits from sums of the same loads in another order. */
int place_tick(struct place *p, int64_t now, int64_t *next, struct cohort_err *err);

/* The actions since the last call, in order; valid until the next call
 * into the set. */
size_t place_actions(struct place *p, const struct place_act **acts);

/* Looking in (tests, status, benchmarks). */
struct place_status {
    size_t streams;         /* live (not removed) */
    size_t moving;          /* revoked, waiting for a release */
    size_t unplaced;        /* no live worker to hold them */
    uint32_t workers;       /* live */
    double total_cost, total_cap;
    uint64_t moves;         /* streams that changed owner (not counting first assignments) */
};
void place_status(const struct place *p, struct place_status *st);
/* The declared cost worker w holds or is about to hold, and its bound. */
double place_load(const struct place *p, uint32_t w);
double place_bound(const struct place *p, uint32_t w);
/* Key's owner and epoch: true, or false when it has none (or is unknown). */
bool place_owner(const struct place *p, const char *key, uint32_t *w, uint64_t *epoch);
/* The set's invariants (tests): every worker's load is the cost of the
 * streams counted on it, the totals add up, every key is found, each
 * worker's lists of streams and its summary in the tree of loads are what
 * the streams say. 0, or -1 with err naming the first that does not
 * hold. */
int place_check(const struct place *p, struct cohort_err *err);

#endif
