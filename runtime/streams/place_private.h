/* place_private.h - the stream placement's state (place.h), shared by its
 * modules, each calling only those after it: place.c (the calls),
 * place_move.c (joins, deaths, leases, bounds and shedding), place_own.c
 * (the streams by key, their ownership and epochs, each worker's lists of
 * them, the actions), place_ring.c (the ring, brought up to date when a
 * decision needs it, the preference walk, the choice of a worker) and
 * place_tree.c (a tree over the workers' loads: the first over its bound,
 * the first with room, without a scan of all). */
#ifndef COHORT_PLACE_PRIVATE_H
#define COHORT_PLACE_PRIVATE_H

#include "place.h"

enum stream_state {
    ST_OWNED,               /* owner works on it */
    ST_MOVING,              /* revoked from owner, waiting for its release */
    ST_UNPLACED,            /* no live worker to hold it */
};

struct stream {
    char key[PLACE_KEY_MAX + 1];
    uint64_t hash;
    double cost;
    double load;            /* reported by its owner; < 0: none */
    uint64_t epoch;         /* of the current (or last) ownership */
    int32_t owner;          /* OWNED, MOVING: who holds it */
    int32_t target;         /* MOVING: where it goes at the release (-1: chosen then) */
    enum stream_state state;
    bool removed;           /* MOVING: forgotten at the release */
    uint32_t link[3][2];    /* its neighbours (prev, next) in the lists it is in (PLACE_LIST_*) */
};

#define PLACE_NONE UINT32_MAX /* no stream: a list's end */

/* A worker's lists of streams, by index in the set's array, in no order:
 * HELD, those it owns (OWNED) or is to get (MOVING to it), removed ones
 * too; LEAVING, those revoked from it (MOVING from it). */
enum { PLACE_LIST_HELD, PLACE_LIST_LEAVING };

/* Every stream is also in the list of its hash's bucket (the hash's top
 * PLACE_BUCKET_BITS bits), so that the streams of a stretch of the ring
 * are found without a pass over all (a join's). */
#define PLACE_LIST_BUCKET 2
#define PLACE_BUCKET_BITS 16
#define PLACE_BUCKET(hash) ((size_t)((hash) >> (64 - PLACE_BUCKET_BITS)))

struct pworker {
    double cap;
    double load;            /* declared cost it holds or is about to hold */
    int64_t lease_until;
    int64_t over_since;     /* reported load above its bound since (0: not) */
    bool alive;             /* joined, connected, lease running */
    bool expired;           /* connected, but its lease ran out */
    uint32_t seen;          /* the preference walk's mark */
    uint32_t head[2];       /* its lists' first streams (PLACE_LIST_*) */
    uint32_t counted;       /* streams whose cost counts on it (held, not removed) */
    uint32_t points;        /* its points on the ring as last brought up to date */
    double reported;        /* the reported loads of the streams it owns, kept as they
                             * change (summed afresh when a decision needs it exact) */
    double rep_err;         /* a bound on how far reported is from their sum: the sum of
                             * every addition's rounding error (+inf: not finite) */
    bool rep_fresh;         /* reported was summed afresh since it last changed: summing
                             * again would not lessen rep_err */
    uint32_t n_rep;         /* the streams it owns with a reported load */
};

struct point {
    uint64_t h;
    uint32_t w;
    uint32_t i;             /* the worker's i-th point */
};

/* A node of the tree over the workers (place_tree.c). */
struct span {
    double hi;              /* the most load per capacity of a worker settle must look at */
    double lo;              /* the least (load + min_cost) per capacity of a live worker */
    double least;           /* the least load of a live worker */
};

/* A node of the second tree over the workers, of what a tick looks at. */
struct tspan {
    double rep;             /* the most (reported + rep_err) per capacity of a live worker */
    double rsum;            /* the sum of the workers' reported loads (pairwise) */
    double esum, emax;      /* the sum and the most of their rep_err that summing afresh
                             * would remove (not of those just summed afresh) */
    int64_t lease;          /* the earliest lease end of a live worker */
};

struct place {
    struct place_opts o;
    uint32_t nw;
    struct pworker *w;
    struct stream *s;       /* dense: removed ones are taken out */
    size_t ns, caps;
    uint32_t *table;        /* key hash -> index in s, open addressing */
    uint32_t *bucket;       /* 2^PLACE_BUCKET_BITS heads: the streams by hash (PLACE_LIST_BUCKET) */
    size_t n_unplaced;      /* streams in ST_UNPLACED */
    uint32_t *over;         /* ascending: every worker whose over_since is set (and maybe
                             * others) */
    uint32_t n_over;
    uint32_t *pick;         /* room for nw workers: those a tick looks at */
    size_t tcap;            /* a power of two */
    struct point *ring;     /* sorted by hash, then worker */
    size_t npoints, cappoints;
    bool ring_stale;        /* workers came or went since the ring was brought up to date */
    struct span *tree;      /* 2 x leaves nodes; node 1 the root, leaf w at leaves + w */
    struct tspan *ttree;    /* the same shape */
    size_t leaves;          /* a power of two, at least nw */
    uint32_t tiny;          /* live workers of capacity below PLACE_GATE_MIN */
    uint32_t walk;          /* the preference walk's generation */
    double total_cost;      /* of live (not removed) streams */
    double total_cap;       /* of live workers */
    double min_cost;        /* the cheapest stream ever added (0: none yet) */
    uint32_t live;
    uint64_t epoch;         /* the last epoch given */
    uint64_t moves;
    struct place_act *acts;
    size_t nacts, capacts;
};

/* place_own.c */
struct stream *place_find(const struct place *p, const char *key);
/* A new stream, unplaced, in the table; NULL when out of memory. */
struct stream *place_insert(struct place *p, const char *key, double cost);
/* Records an action; -1 when out of memory. */
int place_act(struct place *p, enum place_act_type t, uint32_t w, uint64_t epoch,
              const char *key);
/* Gives s to worker w under a new epoch (ASSIGN). */
int place_assign(struct place *p, struct stream *s, uint32_t w);
/* Tells s's owner to stop (REVOKE); s goes to target at the release. */
int place_revoke(struct place *p, struct stream *s, int32_t target);
/* s's ownership ended (released, owner dead or expired): its next owner. */
int place_handoff(struct place *p, struct stream *s, int32_t exclude);
/* Forgets s (the array stays dense). */
void place_forget(struct place *p, struct stream *s);
/* Where s's cost counts: its owner, its target, or -1. */
int32_t place_counted(const struct stream *s);
/* s's reported load counts on its owner's (owned, with a report) no more
 * (sign -1: before a change of its load, state or owner) or again (1:
 * after a change of its load). */
void place_rep_count(struct place *p, const struct stream *s, int sign);
/* Worker w's reported load summed afresh (rep_err that sum's rounding). */
void place_rep_exact(struct place *p, uint32_t w);
/* The set's reported load, the sum of the workers': those with the most
 * error summed afresh, each at most once, until the error left that
 * summing afresh would remove is within 1e-13 of it. */
double place_rep_total(struct place *p);
/* Whether each worker's reported load is within rep_err of its streams'
 * and each worker over its reported bound is in the list (place_check). */
int place_reported_check(const struct place *p, struct cohort_err *err);
/* Moves s's cost from where it counted (before) to where it counts now. */
void place_recount(struct place *p, const struct stream *s, int32_t before);
/* s (MOVING) goes to target (-1: chosen at the release) instead. */
void place_retarget(struct place *p, struct stream *s, int32_t target);
/* The streams in worker w's lists, by index, ascending, each once: their
 * count (*out malloc'd), or -1 when out of memory. */
long place_streams_of(const struct place *p, uint32_t w, uint32_t **out);
/* Whether the lists and counts agree with the streams (place_check). */
int place_lists_check(const struct place *p, struct cohort_err *err);

#define PLACE_MAX_POINTS_FACTOR 16 /* a worker's ring points: at most this x vnodes */

/* place_ring.c */
uint64_t place_hash(const char *key);
/* The ring for the live workers now (nothing to do when they have not
 * changed): 0, or -1 when out of memory. Before every place_first and
 * place_choose. */
int place_ring_sync(struct place *p);
/* The first live worker of the preference list of hash, or -1. */
int32_t place_first(const struct place *p, uint64_t hash);
/* The n stream indices of v in increasing order, each once: their count. */
size_t place_index_order(uint32_t *v, size_t n);
/* The streams whose first live worker is w (the ring up to date), by
 * index in increasing order, into a malloc'd *out: their count, or -1
 * when out of memory. Looks only at the buckets of w's stretches of the
 * ring. */
long place_first_of(const struct place *p, uint32_t w, uint32_t **out);
/* The worker s should go to: the first of its preference list with room
 * (never exclude). With none: with fallback, the least loaded after taking
 * it (exclude only when no other is live), else -1. -1 when no worker is
 * live. */
int32_t place_choose(struct place *p, const struct stream *s, int32_t exclude, bool fallback);
double place_bound_of(const struct place *p, uint32_t w, double total_cost);

/* place_tree.c */
#define PLACE_GATE_MIN 1e-100 /* below it, a capacity or cost turns the gates off */
/* Thresholds on the tree's hi (strictly above) and lo (at or below) that
 * every worker over its bound, and every worker with room for the
 * cheapest stream, passes (with few others). */
struct place_gates {
    double over, room;
};
void place_gates(const struct place *p, struct place_gates *g);
/* The threshold on the tree's rep (strictly above) that every worker
 * whose reported load is over its reported bound passes, with total the
 * reported loads' sum (+inf: none can be). */
double place_rep_gate(const struct place *p, double total);
/* What a worker must pass: PLACE_OVER, hi > thr (it may be over its
 * bound); PLACE_ROOM, lo <= thr (it may have room for the cheapest
 * stream); PLACE_TAKER, that or a load below half the cheapest stream's
 * (it may have room for any stream: place_ring.c's room); PLACE_REPORTED,
 * rep > thr (it may be over its reported bound). */
enum place_pass { PLACE_OVER, PLACE_ROOM, PLACE_TAKER, PLACE_REPORTED };
/* The trees for nw workers, all dead: 0, or -1 when out of memory. */
int place_tree_new(struct place *p);
/* Worker w's load, capacity, life or counted streams changed. */
void place_tree_touch(struct place *p, uint32_t w);
/* Worker w's capacity, life, lease or reported load changed (the second
 * tree). */
void place_tree_time(struct place *p, uint32_t w);
/* Worker w's lease alone changed (cheaper than place_tree_time). */
void place_tree_lease(struct place *p, uint32_t w);
/* min_cost changed: every worker. */
void place_tree_rebuild(struct place *p);
/* The first worker at or after from that passes, or -1. */
long place_tree_next(const struct place *p, size_t from, enum place_pass pass, double thr);
/* The first live worker at or after from whose lease ended by now, or -1. */
long place_tree_expired(const struct place *p, size_t from, int64_t now);
/* The least lo of a worker but exclude (-1: none excluded); +inf for none. */
double place_tree_least(const struct place *p, int32_t exclude);
/* The first worker whose node is not what its state says, or -1. */
long place_tree_stale(const struct place *p);

/* place_move.c */
/* Workers above their bound shed their costliest streams. */
int place_settle(struct place *p);
/* Every stream w held or was about to get goes elsewhere; expired: w is
 * alive but silent (its owned streams are revoked to tell it). */
int place_drop_worker(struct place *p, uint32_t w, bool expired);

#endif
