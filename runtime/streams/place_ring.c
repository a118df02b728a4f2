/* place_ring.c - the stream placement's hash ring (place.h): its points
 * for the live workers, brought up to date only when a decision needs it
 * (joins and deaths before any stream cost nothing), a stream's
 * preference walk, the load bound, and the choice of a worker for a
 * stream. A walk that goes long (few workers with room) asks the tree
 * (place_tree.c) which workers may have room and takes the one the walk
 * would meet first; with none, the least loaded comes from the tree too
 * when the stream is one of the cheapest. */
#include "base_runs.h"
#include "base_sys.h"
#include "place_ring.h"
#include "place_tree.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#define WALK_FIRST 1024   /* steps of a walk before the tree is asked */
#define NEAREST_MAX 1024  /* workers that may have room: more, and the walk goes on */

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

/* The hash of worker w's i-th point. */
static uint64_t point_hash(uint32_t w, size_t i)
{
    return mix(((uint64_t)w << 32 | i) ^ UINT64_C(0x5bd1e995));
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

static size_t want_of(const struct place *p, uint32_t w)
{
    return p->w[w].alive ? points_of(p, w) : 0;
}

/* Sorts the n points of a by hash (tmp: room for n more); those of equal
 * hash keep their order. LSD radix, a byte a pass. */
static void sort_points(struct point *a, struct point *tmp, size_t n)
{
    struct point *src = a, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        size_t at[256] = {0}, sum = 0;
        for (size_t i = 0; i < n; i++)
            at[src[i].h >> shift & 255]++;
        for (int d = 0; d < 256; d++) {
            size_t c = at[d];
            at[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[at[src[i].h >> shift & 255]++] = src[i];
        struct point *t = src; /* eight passes: the last lands in a */
        src = dst;
        dst = t;
    }
}

/* The points of the workers whose count grew into f, in point_cmp's order
 * (made by worker, then sorted stably by hash); every worker's count set
 * to what it is now. */
static void fresh_points(struct place *p, struct point *f, struct point *tmp, size_t n)
{
    size_t k = 0;
    for (uint32_t w = 0; w < p->nw; w++) {
        size_t want = want_of(p, w);
        for (size_t i = p->w[w].points; i < want; i++)
            f[k++] = (struct point){point_hash(w, i), w, (uint32_t)i};
        p->w[w].points = (uint32_t)want;
    }
    sort_points(f, tmp, n);
}

/* The ring is what a full build for the live workers would give (each
 * worker's points 0 to points_of - 1, sorted by hash then worker: the order
 * is total): the points of workers whose count fell come out, those of
 * workers whose count grew are sorted and merged in, one pass over the
 * ring when few change. */
int place_ring_sync(struct place *p)
{
    if (!p->ring_stale)
        return 0;
    size_t keep = 0, add = 0;
    for (uint32_t w = 0; w < p->nw; w++) {
        size_t want = want_of(p, w), had = p->w[w].points;
        keep += want < had ? want : had;
        add += want > had ? want - had : 0;
    }
    if (keep + add > p->cappoints) {
        struct point *r = realloc(p->ring, (keep + add) * sizeof *r);
        if (!r)
            return -1;
        p->ring = r;
        p->cappoints = keep + add;
    }
    /* with nothing kept, the new points go straight into the ring */
    struct point *f = keep ? malloc((add ? add : 1) * sizeof *f) : p->ring,
                 *tmp = malloc((add ? add : 1) * sizeof *tmp);
    if ((keep && !f) || !tmp) {
        free(tmp);
        if (keep)
            free(f);
        return -1;
    }
    fresh_points(p, f, tmp, add);
    free(tmp);
    size_t a = 0, b = add, k = keep + add;
    for (size_t j = 0; keep && j < p->npoints; j++) /* the points kept, in order */
        if (p->ring[j].i < p->w[p->ring[j].w].points)
            p->ring[a++] = p->ring[j];
    while (keep && b) /* merged in from the back */
        p->ring[--k] = a && point_cmp(&p->ring[a - 1], &f[b - 1]) > 0 ? p->ring[--a] : f[--b];
    if (keep)
        free(f);
    p->npoints = keep + add;
    p->ring_stale = false;
    return 0;
}

/* The index of the first point at or after hash (wrapping to 0). */
static size_t start_of(const struct place *p, uint64_t hash)
{
    size_t a = base_lower_bound(p->ring, p->npoints, sizeof *p->ring, offsetof(struct point, h),
                                hash);
    return a == p->npoints ? 0 : a;
}

int32_t place_first(const struct place *p, uint64_t hash)
{
    return p->npoints ? (int32_t)p->ring[start_of(p, hash)].w : -1;
}

/* Where worker w's point (h) lies on the ring: its index. */
static size_t point_at(const struct place *p, uint64_t h, uint32_t w)
{
    size_t k = start_of(p, h);
    while (p->ring[k].h == h && p->ring[k].w != w) /* equal hashes: by worker */
        k = k + 1 == p->npoints ? 0 : k + 1;
    return k;
}

/* Appends to v (n of cap) the streams of buckets b to e whose first live
 * worker is w: 0, or -1 when out of memory. */
static int gather(const struct place *p, uint32_t w, size_t b, size_t e, uint32_t **v,
                  size_t *n, size_t *cap)
{
    for (size_t k = b; k <= e; k++)
        for (uint32_t i = p->bucket[k]; i != PLACE_NONE; i = p->s[i].link[PLACE_LIST_BUCKET][1]) {
            if (place_first(p, p->s[i].hash) != (int32_t)w)
                continue;
            if (base_grow((void **)v, cap, *n + 1, sizeof **v) < 0)
                return -1;
            (*v)[(*n)++] = i;
        }
    return 0;
}

static int index_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

size_t place_index_order(uint32_t *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, index_cmp);
    size_t m = 0;
    for (size_t j = 0; j < n; j++)
        if (!m || v[m - 1] != v[j])
            v[m++] = v[j];
    return m;
}

long place_first_of(const struct place *p, uint32_t w, uint32_t **out)
{
    const size_t last = ((size_t)1 << PLACE_BUCKET_BITS) - 1;
    uint32_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < p->w[w].points && p->npoints; i++) {
        /* the stretch that ends at w's point i: its predecessor's hash to its own */
        size_t k = point_at(p, point_hash(w, i), w);
        uint64_t lo = p->ring[k ? k - 1 : p->npoints - 1].h, hi = p->ring[k].h;
        size_t b = PLACE_BUCKET(lo), e = PLACE_BUCKET(hi);
        if (p->npoints == 1 || (lo > hi) || (lo == hi && k == 0)) /* around the end */
            rc = gather(p, w, b, last, &v, &n, &cap) < 0 || gather(p, w, 0, e, &v, &n, &cap) < 0
                     ? -1 : 0;
        else
            rc = gather(p, w, b, e, &v, &n, &cap);
    }
    if (rc < 0) {
        free(v);
        return -1;
    }
    *out = v; /* a bucket met from two stretches gave its streams twice */
    return (long)place_index_order(v, n);
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
 * is another) with the lowest load per capacity once it takes cost, the
 * first of equals. For one of the cheapest streams that is the tree's
 * least lo, computed alike (unless it overflowed). */
static int32_t least_loaded(const struct place *p, double cost, int32_t exclude)
{
    double m = cost == p->min_cost ? place_tree_least(p, exclude) : INFINITY;
    if (m < DBL_MAX) {
        long x = place_tree_next(p, 0, PLACE_ROOM, m);
        return (int32_t)(x == exclude ? place_tree_next(p, (size_t)x + 1, PLACE_ROOM, m) : x);
    }
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

/* Where a walk from hash from meets a point: before every point of a
 * lower triple. */
struct meet {
    bool wrapped;           /* below from: met after the ring's end */
    uint64_t h;
    uint32_t w;
};

static bool sooner(struct meet a, struct meet b)
{
    if (a.wrapped != b.wrapped)
        return b.wrapped;
    return a.h != b.h ? a.h < b.h : a.w < b.w;
}

/* Where the walk from hash from meets worker x first. */
static struct meet first_meet(const struct place *p, uint32_t x, uint64_t from)
{
    struct meet m = {true, UINT64_MAX, x};
    for (size_t i = 0; i < p->w[x].points; i++) {
        uint64_t h = point_hash(x, i);
        struct meet c = {h < from, h, x};
        if (i == 0 || sooner(c, m))
            m = c;
    }
    return m;
}

/* The worker with room for s (never exclude) that s's walk meets first,
 * from the workers the tree says may have room (all that have): -1 when
 * none has, -2 when more than NEAREST_MAX may (the walk goes on). */
static int32_t nearest(const struct place *p, const struct stream *s, int32_t exclude)
{
    struct place_gates g;
    place_gates(p, &g);
    int32_t best = -1;
    struct meet bm = {true, UINT64_MAX, 0};
    long n = 0;
    for (long x = place_tree_next(p, 0, PLACE_TAKER, g.room); x >= 0;
         x = place_tree_next(p, (size_t)x + 1, PLACE_TAKER, g.room)) {
        if (++n > NEAREST_MAX)
            return -2;
        if ((int32_t)x == exclude || !room(p, (uint32_t)x, s->cost))
            continue;
        struct meet m = first_meet(p, (uint32_t)x, s->hash);
        if (best < 0 || sooner(m, bm)) {
            best = (int32_t)x;
            bm = m;
        }
    }
    return best;
}

/* The walk: the first point whose worker is not exclude and has room (a
 * worker met again was looked at already); after WALK_FIRST steps the
 * tree finds it, unless too many workers may have room. */
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
        if (step == WALK_FIRST) {
            int32_t x = nearest(p, s, exclude);
            if (x >= 0)
                return x;
            if (x == -1)
                break;
        }
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
