/* place_private.h - the stream placement's state (place.h), shared by its
 * modules, each calling only those after it: place.c (the calls),
 * place_move.c (joins, deaths, leases, bounds and shedding), place_own.c
 * (the streams by key, their ownership and epochs, the actions) and
 * place_ring.c (the ring, the preference walk, the choice of a worker). */
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
};

struct pworker {
    double cap;
    double load;            /* declared cost it holds or is about to hold */
    int64_t lease_until;
    int64_t over_since;     /* reported load above its bound since (0: not) */
    bool alive;             /* joined, connected, lease running */
    bool expired;           /* connected, but its lease ran out */
    uint32_t seen;          /* the preference walk's mark */
};

struct point {
    uint64_t h;
    uint32_t w;
};

struct place {
    struct place_opts o;
    uint32_t nw;
    struct pworker *w;
    struct stream *s;       /* dense: removed ones are taken out */
    size_t ns, caps;
    uint32_t *table;        /* key hash -> index in s, open addressing */
    size_t tcap;            /* a power of two */
    struct point *ring;
    size_t npoints, cappoints;
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
/* Moves s's cost from where it counted (before) to where it counts now. */
void place_recount(struct place *p, const struct stream *s, int32_t before);

#define PLACE_MAX_POINTS_FACTOR 16 /* a worker's ring points: at most this x vnodes */

/* place_ring.c */
uint64_t place_hash(const char *key);
int place_ring_build(struct place *p);
/* The first live worker of the preference list of hash, or -1. */
int32_t place_first(const struct place *p, uint64_t hash);
/* The worker s should go to: the first of its preference list with room
 * (never exclude). With none: with fallback, the least loaded after taking
 * it (exclude only when no other is live), else -1. -1 when no worker is
 * live. */
int32_t place_choose(struct place *p, const struct stream *s, int32_t exclude, bool fallback);
double place_bound_of(const struct place *p, uint32_t w, double total_cost);

/* place_move.c */
/* Workers above their bound shed their costliest streams. */
int place_settle(struct place *p);
/* Every stream w held or was about to get goes elsewhere; expired: w is
 * alive but silent (its owned streams are revoked to tell it). */
int place_drop_worker(struct place *p, uint32_t w, bool expired);

#endif
