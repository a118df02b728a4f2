/* place_ring.c - the stream placement's hash ring (place.h): its points
 * for the live workers, a stream's preference walk, the load bound, and
 * the choice of a worker for a stream. */
#include "place_private.h"

#include <math.h>
#include <stdlib.h>

/* A 64-bit mix (SplitMix64's finalizer): nearby inputs land far apart. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

uint64_t place_hash(const char *key)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a, then mixed */
    for (const unsigned char *k = (const unsigned char *)key; *k; k++)
        h = (h ^ *k) * UINT64_C(0x100000001b3);
    return mix(h);
}

static int point_cmp(const void *a, const void *b)
{
    const struct point *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->w < y->w ? -1 : x->w > y->w;
}

/* Worker w's ring points: vnodes for the mean capacity, in proportion
 * (at least 1, at most PLACE_MAX_POINTS_FACTOR x vnodes): capacities are
 * relative, 1e6 and 1 give the same ring as 2e6 and 2. */
static size_t points_of(const struct place *p, uint32_t w)
{
    double mean = p->live ? p->total_cap / p->live : 1;
    double v = floor(p->o.vnodes * p->w[w].cap / mean + 0.5);
    double most = (double)PLACE_MAX_POINTS_FACTOR * p->o.vnodes;
    return v < 1 ? 1 : v > most ? (size_t)most : (size_t)v;
}

int place_ring_build(struct place *p)
{
    size_t n = 0;
    for (uint32_t w = 0; w < p->nw; w++)
        if (p->w[w].alive)
            n += points_of(p, w);
    if (n > p->cappoints) {
        struct point *r = realloc(p->ring, n * sizeof *r);
        if (!r)
            return -1;
        p->ring = r;
        p->cappoints = n;
    }
    size_t k = 0;
    for (uint32_t w = 0; w < p->nw; w++) {
        if (!p->w[w].alive)
            continue;
        size_t m = points_of(p, w);
        for (size_t i = 0; i < m; i++)
            p->ring[k++] = (struct point){mix(((uint64_t)w << 32 | i) ^ UINT64_C(0x5bd1e995)), w};
    }
    qsort(p->ring, k, sizeof *p->ring, point_cmp);
    p->npoints = k;
    return 0;
}

/* The index of the first point at or after hash (wrapping to 0). */
static size_t start_of(const struct place *p, uint64_t hash)
{
    size_t a = 0, b = p->npoints;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (p->ring[m].h < hash)
            a = m + 1;
        else
            b = m;
    }
    return a == p->npoints ? 0 : a;
}

int32_t place_first(const struct place *p, uint64_t hash)
{
    return p->npoints ? (int32_t)p->ring[start_of(p, hash)].w : -1;
}

double place_bound_of(const struct place *p, uint32_t w, double total_cost)
{
    if (!p->w[w].alive || p->total_cap <= 0)
        return 0;
    return (1 + p->o.epsilon) * p->w[w].cap / p->total_cap * total_cost;
}

/* Whether worker w has room for cost more (an empty worker always has). */
static bool room(const struct place *p, uint32_t w, double cost)
{
    const struct pworker *k = &p->w[w];
    return k->load < 0.5 * p->min_cost || /* holds no stream (whatever rounding left) */
           k->load + cost <= place_bound_of(p, w, p->total_cost) * (1 + 1e-12);
}

/* No worker of the walk had room: the live one (not exclude, when there
 * is another) with the lowest load per capacity once it takes cost. */
static int32_t least_loaded(const struct place *p, double cost, int32_t exclude)
{
    int32_t best = -1;
    double best_f = INFINITY;
    for (uint32_t w = 0; w < p->nw; w++) {
        if (!p->w[w].alive || (int32_t)w == exclude)
            continue;
        double f = (p->w[w].load + cost) / p->w[w].cap;
        if (f < best_f) {
            best_f = f;
            best = (int32_t)w;
        }
    }
    return best >= 0 ? best : exclude >= 0 && p->w[exclude].alive ? exclude : -1;
}

int32_t place_choose(struct place *p, const struct stream *s, int32_t exclude, bool fallback)
{
    if (!p->npoints)
        return -1;
    if (++p->walk == 0) { /* the marks wrapped: clear them */
        for (uint32_t w = 0; w < p->nw; w++)
            p->w[w].seen = 0;
        p->walk = 1;
    }
    uint32_t distinct = 0;
    size_t i = start_of(p, s->hash);
    for (size_t step = 0; step < p->npoints && distinct < p->live; step++) {
        uint32_t w = p->ring[(i + step) % p->npoints].w;
        if (p->w[w].seen == p->walk)
            continue;
        p->w[w].seen = p->walk;
        distinct++;
        if ((int32_t)w != exclude && room(p, w, s->cost))
            return (int32_t)w;
    }
    return fallback ? least_loaded(p, s->cost, exclude) : -1;
}
