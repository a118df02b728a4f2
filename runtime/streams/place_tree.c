/* place_tree.c - the stream placement's trees over its workers (place.h):
 * segment trees whose leaf w summarizes worker w, kept as loads change, so
 * that settling the bound finds the workers over it, the room check and a
 * long preference walk the workers with room, the fallback the least
 * loaded, and a tick the workers whose lease ended or that may be over
 * their reported bound, without looking at every worker. They only narrow
 * the search: whoever walks them checks each worker named exactly as
 * before.
 *
 * The first tree, leaf w: hi, worker w's load per capacity when settle
 * must look at it (live and holding two streams or more, or one it is not
 * alone with: a stream alone on a worker never moves off it), else -inf;
 * lo, its (load + min_cost) per capacity when live, else +inf; least, its
 * load when live, else +inf. A node holds the most hi and the least lo and
 * least of its leaves.
 *
 * The second (a tick's), leaf w: rep, its (reported + rep_err) per
 * capacity when live (at least its reported load's sum afresh), else
 * -inf; rsum, its reported load; lease, its lease's end when live, else
 * the largest time. A node holds the most rep, the sum of rsum (the
 * root's: the set's reported load, summed pairwise along every change)
 * and the least lease of its leaves.
 *
 * The gates (place_gates): let t = (1 + epsilon) x total_cost / total_cap
 * x (1 + 1e-12). A worker is over its bound when load > bound x (1 +
 * 1e-12), bound = (1 + epsilon) x cap / total_cap x total_cost, i.e. load
 * / cap > t up to a few roundings, and has room for the cheapest stream
 * when (load + min_cost) / cap <= t likewise. While every live capacity,
 * min_cost and total_cap are at least PLACE_GATE_MIN (1e-100) and
 * total_cost is not negative, every quantity in both is a normal double
 * (costs of at least 1e-100 keep loads and totals multiples of 2^-385,
 * far from the subnormals), so each side is within 1e-15 of the real
 * value and a slack of 1e-9 lets every such worker through: over: hi > t
 * x (1 - 1e-9); room: lo <= t x (1 + 1e-9) (t = 0: hi > 0, lo <= 0,
 * exactly). Outside those bounds the gates let every candidate through
 * (over: -inf; room: the largest double), as the scans of all did.
 *
 * The reported gate (place_rep_gate) likewise, with the reported loads'
 * sum R for total_cost: over when reported > (1 + epsilon) x cap /
 * total_cap x R x (1 + 1e-12); no one is with R <= 0 (+inf); with R at
 * least PLACE_GATE_MIN (and the capacities as above) such a worker's
 * reported load, its bound and its rep are normal doubles (capacities are
 * at most PLACE_MAX_CAPACITY), so rep > t x (1 - 1e-9) lets it through;
 * otherwise every live worker (-inf). */
#include "place_tree.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#define GATE_SLACK 1e-9

void place_gates(const struct place *p, struct place_gates *g)
{
    g->over = -INFINITY;
    g->room = DBL_MAX;
    if (p->min_cost < PLACE_GATE_MIN || p->tiny || !(p->total_cap >= PLACE_GATE_MIN) ||
        !(p->total_cost >= 0))
        return;
    double t = (1 + p->o.epsilon) * p->total_cost / p->total_cap * (1 + 1e-12);
    g->over = t * (1 - GATE_SLACK);
    g->room = t * (1 + GATE_SLACK);
}

/* Whether settle must look at worker w: two streams or more count on it,
 * or one it is not alone with (move_off's test). */
static bool settles(const struct place *p, uint32_t w)
{
    const struct pworker *k = &p->w[w];
    if (k->counted != 1)
        return k->counted > 1;
    uint32_t i = k->head[PLACE_LIST_HELD];
    while (p->s[i].removed) /* the one not removed */
        i = p->s[i].link[PLACE_LIST_HELD][1];
    return !(k->load - p->s[i].cost < 0.5 * p->min_cost);
}

double place_rep_gate(const struct place *p, double total)
{
    if (!(total > 0))
        return INFINITY;
    if (p->tiny || !(p->total_cap >= PLACE_GATE_MIN) || !(total >= PLACE_GATE_MIN))
        return -INFINITY;
    double t = (1 + p->o.epsilon) * total / p->total_cap * (1 + 1e-12) * (1 - GATE_SLACK);
    return isfinite(t) ? t : -INFINITY; /* (1 + epsilon) x total past the largest double */
}

static struct span leaf(const struct place *p, uint32_t w)
{
    const struct pworker *k = &p->w[w];
    if (!k->alive)
        return (struct span){-INFINITY, INFINITY, INFINITY};
    return (struct span){settles(p, w) ? fmax(k->load / k->cap, -DBL_MAX) : -INFINITY,
                         fmin((k->load + p->min_cost) / k->cap, DBL_MAX), k->load};
}

static struct span both(struct span a, struct span b)
{
    return (struct span){fmax(a.hi, b.hi), fmin(a.lo, b.lo), fmin(a.least, b.least)};
}

static struct tspan tleaf(const struct place *p, uint32_t w)
{
    const struct pworker *k = &p->w[w];
    double err = k->rep_fresh ? 0 : k->rep_err; /* what summing afresh would remove */
    if (!k->alive)
        return (struct tspan){-INFINITY, k->reported, err, err, INT64_MAX};
    return (struct tspan){fmax((k->reported + k->rep_err) / k->cap, -DBL_MAX), k->reported,
                          err, err, k->lease_until};
}

static struct tspan tboth(struct tspan a, struct tspan b)
{
    return (struct tspan){fmax(a.rep, b.rep), a.rsum + b.rsum, a.esum + b.esum,
                          fmax(a.emax, b.emax), a.lease < b.lease ? a.lease : b.lease};
}

int place_tree_new(struct place *p)
{
    p->leaves = 1;
    while (p->leaves < p->nw)
        p->leaves *= 2;
    if (!(p->tree = malloc(2 * p->leaves * sizeof *p->tree)) ||
        !(p->ttree = malloc(2 * p->leaves * sizeof *p->ttree)))
        return -1;
    for (size_t i = 0; i < 2 * p->leaves; i++) {
        p->tree[i] = (struct span){-INFINITY, INFINITY, INFINITY};
        p->ttree[i] = (struct tspan){-INFINITY, 0, 0, 0, INT64_MAX};
    }
    return 0;
}

void place_tree_touch(struct place *p, uint32_t w)
{
    size_t i = p->leaves + w;
    p->tree[i] = leaf(p, w);
    for (i /= 2; i; i /= 2)
        p->tree[i] = both(p->tree[2 * i], p->tree[2 * i + 1]);
}

void place_tree_time(struct place *p, uint32_t w)
{
    size_t i = p->leaves + w;
    p->ttree[i] = tleaf(p, w);
    for (i /= 2; i; i /= 2)
        p->ttree[i] = tboth(p->ttree[2 * i], p->ttree[2 * i + 1]);
}

void place_tree_lease(struct place *p, uint32_t w)
{
    size_t i = p->leaves + w;
    p->ttree[i].lease = p->w[w].alive ? p->w[w].lease_until : INT64_MAX;
    for (i /= 2; i; i /= 2) { /* up while the least lease below changes */
        int64_t a = p->ttree[2 * i].lease, b = p->ttree[2 * i + 1].lease;
        if (p->ttree[i].lease == (a < b ? a : b))
            break;
        p->ttree[i].lease = a < b ? a : b;
    }
}

void place_tree_rebuild(struct place *p)
{
    for (uint32_t w = 0; w < p->nw; w++)
        p->tree[p->leaves + w] = leaf(p, w);
    for (size_t i = p->leaves - 1; i; i--)
        p->tree[i] = both(p->tree[2 * i], p->tree[2 * i + 1]);
}

/* What a node must pass: pass and thr, or (expired) a lease ended by now. */
struct want {
    enum place_pass pass;
    double thr;
    bool expired;
    int64_t now;
};

static bool passes(const struct place *p, size_t i, const struct want *x)
{
    if (x->expired)
        return p->ttree[i].lease <= x->now;
    switch (x->pass) {
    case PLACE_OVER: return p->tree[i].hi > x->thr;
    case PLACE_REPORTED: return p->ttree[i].rep > x->thr;
    case PLACE_ROOM: return p->tree[i].lo <= x->thr;
    default: return p->tree[i].lo <= x->thr || p->tree[i].least < 0.5 * p->min_cost; /* TAKER */
    }
}

static long next_passing(const struct place *p, size_t from, const struct want *x)
{
    if (from >= p->nw)
        return -1;
    size_t i = p->leaves + from;
    for (;;) {
        if (passes(p, i, x)) { /* down to its first leaf that passes */
            while (i < p->leaves) {
                i *= 2;
                i += !passes(p, i, x);
            }
            return (long)(i - p->leaves);
        }
        while (i & 1) /* up while a right child; then on to the right */
            i /= 2;
        if (!i)
            return -1;
        i++;
    }
}

long place_tree_next(const struct place *p, size_t from, enum place_pass pass, double thr)
{
    struct want x = {.pass = pass, .thr = thr};
    return next_passing(p, from, &x);
}

long place_tree_expired(const struct place *p, size_t from, int64_t now)
{
    struct want x = {.expired = true, .now = now};
    return next_passing(p, from, &x);
}

/* The least lo of workers a to b - 1. */
static double least_in(const struct place *p, size_t a, size_t b)
{
    double m = INFINITY;
    for (a += p->leaves, b += p->leaves; a < b; a /= 2, b /= 2) {
        if (a & 1)
            m = fmin(m, p->tree[a++].lo);
        if (b & 1)
            m = fmin(m, p->tree[--b].lo);
    }
    return m;
}

double place_tree_least(const struct place *p, int32_t exclude)
{
    if (exclude < 0)
        return p->tree[1].lo;
    return fmin(least_in(p, 0, (size_t)exclude), least_in(p, (size_t)exclude + 1, p->nw));
}

static bool same(struct span a, struct span b)
{
    return a.hi == b.hi && a.lo == b.lo && a.least == b.least;
}

static bool eq(double a, double b) /* NaN too (a sum of +inf and -inf) */
{
    return a == b || (isnan(a) && isnan(b));
}

static bool tsame(struct tspan a, struct tspan b)
{
    return eq(a.rep, b.rep) && eq(a.rsum, b.rsum) && eq(a.esum, b.esum) && eq(a.emax, b.emax) &&
           a.lease == b.lease;
}

long place_tree_stale(const struct place *p)
{
    for (uint32_t w = 0; w < p->nw; w++)
        if (!same(leaf(p, w), p->tree[p->leaves + w]) ||
            !tsame(tleaf(p, w), p->ttree[p->leaves + w]))
            return w;
    for (size_t i = p->leaves - 1; i; i--) {
        if (!same(both(p->tree[2 * i], p->tree[2 * i + 1]), p->tree[i]) ||
            !tsame(tboth(p->ttree[2 * i], p->ttree[2 * i + 1]), p->ttree[i])) {
            while (i < p->leaves) /* its first worker */
                i *= 2;
            return (long)(i - p->leaves);
        }
    }
    return -1;
}
