/* place_types.h - the stream placement's state (place.h): the types and
 * constants its modules share, and no function. Each module has a header
 * of its own for its functions and calls only those after it: place.c
 * (the calls), place_move.c (joins, deaths, leases, bounds and shedding),
 * place_own.c (the streams by key, their ownership and epochs, each
 * worker's lists of them, the actions), place_ring.c (the ring, brought up
 * to date when a decision needs it, the preference walk, the choice of a
 * worker) and place_tree.c (a tree over the workers' loads: the first over
 * its bound, the first with room, without a scan of all). */
#ifndef COHORT_PLACE_TYPES_H
#define COHORT_PLACE_TYPES_H

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

#endif
