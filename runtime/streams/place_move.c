/* place_move.c - the stream placement's workers (place.h): joining, dying,
 * leases running out and coming back, the bound kept after every change,
 * and shedding by reported load. It finds the workers to look at through
 * the tree (place_tree.c) and a worker's streams through its lists
 * (place_own.c), in the order the scans of all workers and all streams
 * took them. */
#include "place_move.h"
#include "place_own.h"
#include "place_ring.h"
#include "place_tree.h"

#include <math.h>
#include <stdlib.h>

static int nomem(struct cohort_err *err)
{
    cohort_fail(err, "out of memory");
    return PLACE_ENOMEM;
}

static int bad_worker(const struct place *p, uint32_t w, struct cohort_err *err)
{
    if (w < p->nw)
        return 0;
    cohort_fail(err, "worker %u: the set has workers 0..%u", w, p->nw - 1);
    return PLACE_EINVAL;
}

/* ---- the bound, after every change -------------------------------------- */

struct cand {
    size_t i;
    double key;             /* larger goes first */
};

/* Larger keys first; equal ones in the order of the streams' indexes. */
static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The streams counted on w, the best to move first: those only on their
 * way to w (no move undone), then its own, costliest first (or most
 * loaded, by_load), those w is not the first choice of before the others.
 * Their count, or -1. */
static long candidates(struct place *p, uint32_t w, bool by_load, struct cand **out)
{
    struct cand *c = malloc((p->w[w].counted ? p->w[w].counted : 1) * sizeof *c);
    long n = 0;
    if (!c || place_ring_sync(p) < 0) {
        free(c);
        return -1;
    }
    for (uint32_t i = p->w[w].head[PLACE_LIST_HELD]; i != PLACE_NONE;
         i = p->s[i].link[PLACE_LIST_HELD][1]) {
        const struct stream *s = &p->s[i];
        if (s->removed || (by_load && (s->state != ST_OWNED || s->load < 0)))
            continue;
        double k = by_load ? s->load : s->cost;
        if (s->state == ST_MOVING)
            k = INFINITY;
        else if (place_first(p, s->hash) != (int32_t)w)
            k += 1e-9 * (k > 0 ? k : 1); /* among equals, the ones that overflowed to w */
        c[n++] = (struct cand){i, k};
    }
    qsort(c, (size_t)n, sizeof *c, cand_cmp);
    *out = c;
    return n;
}

/* Moves candidate s off w to another worker with room for it; *moved
 * false when none has. A stream alone on w stays: any worker may hold one
 * stream, however costly. */
static int move_off(struct place *p, struct stream *s, uint32_t w, bool *moved)
{
    if (p->w[w].load - s->cost < 0.5 * p->min_cost) { /* alone there: it may stay */
        *moved = true; /* (not a reason to stop looking) */
        return 0;
    }
    int32_t to = place_choose(p, s, (int32_t)w, false);
    *moved = to >= 0;
    if (!*moved)
        return 0;
    if (s->state == ST_MOVING) { /* not there yet: it goes elsewhere instead */
        place_retarget(p, s, to);
        return 0;
    }
    return place_revoke(p, s, to);
}

/* Whether a worker but w (UINT32_MAX: any) has room for the cheapest
 * stream the set has had (a quick no before looking at w's streams one by
 * one). */
static bool any_room(const struct place *p, uint32_t w, const struct place_gates *g)
{
    for (long x = place_tree_next(p, 0, PLACE_ROOM, g->room); x >= 0;
         x = place_tree_next(p, (size_t)x + 1, PLACE_ROOM, g->room))
        if ((uint32_t)x != w && p->w[x].alive &&
            p->w[x].load + p->min_cost <= place_bound_of(p, (uint32_t)x, p->total_cost) * (1 + 1e-12))
            return true;
    return false;
}

/* Every worker over its bound with a worker that has room, in order: the
 * tree names those that may be (the others: none over it, or one stream
 * alone, which stays). With no worker that has room, nothing moves. */
int place_settle(struct place *p)
{
    struct place_gates g;
    place_gates(p, &g);
    if (!any_room(p, UINT32_MAX, &g))
        return 0;
    for (long x = place_tree_next(p, 0, PLACE_OVER, g.over); x >= 0;
         x = place_tree_next(p, (size_t)x + 1, PLACE_OVER, g.over)) {
        uint32_t w = (uint32_t)x;
        double bound = place_bound_of(p, w, p->total_cost);
        if (!p->w[w].alive || p->w[w].load <= bound * (1 + 1e-12) || !any_room(p, w, &g))
            continue;
        struct cand *c;
        long n = candidates(p, w, false, &c);
        if (n < 0)
            return -1;
        bool moved = true;
        for (long k = 0; k < n && moved && p->w[w].load > bound * (1 + 1e-12); k++)
            if (move_off(p, &p->s[c[k].i], w, &moved) < 0) {
                free(c);
                return -1;
            }
        free(c);
    }
    return 0;
}

/* ---- joining ------------------------------------------------------------ */

/* Stream s, looked at for joining worker w: placed, when it has no
 * worker; taken for w (revoked from its owner), when w is now its first
 * and w's load stays within fair. 0, or -1 when out of memory. */
static int pull_one(struct place *p, struct stream *s, uint32_t w, double fair)
{
    if (s->state == ST_UNPLACED && !s->removed) {
        int32_t to = place_choose(p, s, -1, true);
        return to >= 0 ? place_assign(p, s, (uint32_t)to) : 0;
    }
    if (s->state == ST_OWNED && s->owner != (int32_t)w &&
        place_first(p, s->hash) == (int32_t)w && p->w[w].load + s->cost <= fair * (1 + 1e-12))
        return place_revoke(p, s, w);
    return 0;
}

/* The streams that now have w first, from other workers, up to w's fair
 * share; then every stream without a worker: in the order of the set's
 * array. With none without a worker (there are some only while no
 * worker was live), only the streams of w's stretches of the ring are
 * looked at (the same decisions: no other has w first). */
static int pull(struct place *p, uint32_t w)
{
    double fair = p->w[w].cap / p->total_cap * p->total_cost;
    if (p->ns && place_ring_sync(p) < 0)
        return -1;
    int rc = 0;
    if (!p->n_unplaced) {
        uint32_t *c;
        long n = p->ns ? place_first_of(p, w, &c) : 0;
        rc = n < 0 ? -1 : 0;
        for (long k = 0; rc == 0 && k < n; k++)
            rc = pull_one(p, &p->s[c[k]], w, fair);
        if (n > 0)
            free(c);
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < p->ns; i++)
        rc = pull_one(p, &p->s[i], w, fair);
    return rc;
}

static int join(struct place *p, uint32_t w, double cap, int64_t now)
{
    struct pworker *k = &p->w[w];
    k->cap = cap;
    k->alive = true;
    k->expired = false;
    k->lease_until = now + p->o.lease_ms;
    k->over_since = 0;
    p->live++;
    p->total_cap += cap;
    p->tiny += cap < PLACE_GATE_MIN;
    p->ring_stale = true;
    place_tree_touch(p, w);
    place_tree_time(p, w);
    if (pull(p, w) < 0 || place_settle(p) < 0)
        return -1;
    return 0;
}

int place_join(struct place *p, uint32_t w, double cap, int64_t now, struct cohort_err *err)
{
    if (bad_worker(p, w, err))
        return PLACE_EINVAL;
    if (!(cap > 0) || !(cap <= PLACE_MAX_CAPACITY)) {
        cohort_fail(err, "worker %u: capacity %g: give a number above 0 (at most %g)", w, cap,
                    PLACE_MAX_CAPACITY);
        return PLACE_EINVAL;
    }
    if (p->w[w].alive) {
        cohort_fail(err, "worker %u joined already", w);
        return PLACE_EINVAL;
    }
    return join(p, w, cap, now) < 0 ? nomem(err) : PLACE_OK;
}

/* ---- leaving ------------------------------------------------------------ */

/* Worker w holds nothing from now on (the ring follows when next used). */
static void leave(struct place *p, uint32_t w)
{
    struct pworker *k = &p->w[w];
    if (!k->alive)
        return;
    k->alive = false;
    p->live--;
    p->total_cap -= k->cap;
    p->tiny -= k->cap < PLACE_GATE_MIN;
    if (!p->live)
        p->total_cap = 0; /* no rounding left over */
    p->ring_stale = true;
    place_tree_touch(p, w);
    place_tree_time(p, w);
}

/* Stream i, one of dead (or expired) worker w's: to another. */
static int drop_one(struct place *p, size_t i, uint32_t w, bool expired)
{
    struct stream *s = &p->s[i];
    int rc = 0;
    if (s->owner == (int32_t)w && s->state != ST_UNPLACED) {
        if (expired && s->state == ST_OWNED) /* it is told; its epoch is old now */
            rc = place_act(p, PLACE_REVOKE, w, s->epoch, s->key);
        if (rc == 0)
            rc = place_handoff(p, s, (int32_t)w);
    } else {
        place_retarget(p, s, -1); /* moving to w: chosen at the release */
    }
    return rc;
}

/* w's streams in the order of their indexes; when one is forgotten, the
 * last stream takes its index and, if one of w's, is next. */
int place_drop_worker(struct place *p, uint32_t w, bool expired)
{
    struct pworker *k = &p->w[w];
    leave(p, w);
    uint32_t *v;
    long n = place_streams_of(p, w, &v);
    int rc = n < 0 ? -1 : 0;
    for (long j = 0; j < n && rc == 0; j++) {
        size_t ns = p->ns;
        rc = drop_one(p, v[j], w, expired);
        if (p->ns < ns && v[j] < p->ns && j < n - 1 && v[n - 1] == ns - 1) {
            n--; /* forgotten: the last stream, one of w's, took its index */
            j--;
        }
    }
    if (n >= 0)
        free(v);
    if (rc < 0)
        return -1;
    k->load = 0;
    place_tree_touch(p, w);
    return place_settle(p);
}

int place_lost(struct place *p, uint32_t w, struct cohort_err *err)
{
    if (bad_worker(p, w, err))
        return PLACE_EINVAL;
    p->w[w].expired = false;
    return place_drop_worker(p, w, false) < 0 ? nomem(err) : PLACE_OK;
}

int place_renew(struct place *p, uint32_t w, int64_t now, struct cohort_err *err)
{
    if (bad_worker(p, w, err))
        return PLACE_EINVAL;
    struct pworker *k = &p->w[w];
    if (k->alive) {
        k->lease_until = now + p->o.lease_ms;
        place_tree_lease(p, w);
    }
    if (!k->expired)
        return PLACE_OK;
    k->expired = false; /* heard from again: it joins again */
    return join(p, w, k->cap, now) < 0 ? nomem(err) : PLACE_OK;
}

/* ---- time: leases and shedding ------------------------------------------ */

/* Worker w sheds its most loaded reported streams until its reported
 * load is within bound. */
static int shed(struct place *p, uint32_t w, double mine, double bound)
{
    struct cand *c;
    long n = candidates(p, w, true, &c);
    if (n < 0)
        return -1;
    bool moved = true;
    for (long k = 0; k < n && moved && mine > bound; k++) {
        struct stream *s = &p->s[c[k].i];
        mine -= s->load;
        if (move_off(p, s, w, &moved) < 0) {
            free(c);
            return -1;
        }
    }
    free(c);
    return 0;
}

/* Into p->pick, ascending and each once, the workers a shedding pass
 * looks at: those whose over_since is set (p->over) and those the tree
 * names as maybe over their reported bound (thr): their count. */
static uint32_t to_look_at(struct place *p, double thr)
{
    uint32_t n = 0, j = 0;
    long x = place_tree_next(p, 0, PLACE_REPORTED, thr);
    while (x >= 0 || j < p->n_over) {
        uint32_t w = x >= 0 && (j == p->n_over || (uint32_t)x <= p->over[j]) ? (uint32_t)x
                                                                             : p->over[j];
        p->pick[n++] = w;
        if (x == (long)w)
            x = place_tree_next(p, (size_t)w + 1, PLACE_REPORTED, thr);
        j += j < p->n_over && p->over[j] == w;
    }
    return n;
}

/* Every worker whose reported load is over its bound since shed_after_ms
 * sheds, as a pass over every worker did: the bounds are those of the
 * set's reported load when it starts; the others over theirs are timed
 * (*next the moment the first is due), and those within them are not. A
 * worker's reported load is summed afresh where it is within its error
 * of its bound, and before it sheds. */
static int shedding(struct place *p, int64_t now, int64_t *next)
{
    double total = place_rep_total(p);
    uint32_t n = to_look_at(p, place_rep_gate(p, total));
    p->n_over = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t w = p->pick[j];
        struct pworker *k = &p->w[w];
        double bound = k->alive && total > 0 ? (1 + p->o.epsilon) * k->cap / p->total_cap * total
                                              : INFINITY;
        double lim = bound * (1 + 1e-12);
        if (k->rep_err && !k->rep_fresh && !(k->reported - k->rep_err > lim) &&
            !(k->reported + k->rep_err <= lim))
            place_rep_exact(p, w); /* within its error of the limit (or not finite) */
        if (k->reported <= lim) {
            k->over_since = 0;
            continue;
        }
        if (!k->over_since)
            k->over_since = now ? now : 1;
        if (now - k->over_since < p->o.shed_after_ms) {
            if (k->over_since + p->o.shed_after_ms < *next)
                *next = k->over_since + p->o.shed_after_ms;
            p->over[p->n_over++] = w;
            continue;
        }
        k->over_since = 0;
        if (!k->rep_fresh)
            place_rep_exact(p, w);
        if (shed(p, w, k->reported, bound) < 0)
            return -1;
    }
    return 0;
}

int place_tick(struct place *p, int64_t now, int64_t *next, struct cohort_err *err)
{
    *next = INT64_MAX;
    uint32_t n = 0;
    for (long x = place_tree_expired(p, 0, now); x >= 0;
         x = place_tree_expired(p, (size_t)x + 1, now))
        p->pick[n++] = (uint32_t)x;
    for (uint32_t j = 0; j < n; j++) { /* all of them first: none gets another's */
        p->w[p->pick[j]].expired = true;
        leave(p, p->pick[j]);
    }
    for (uint32_t j = 0; j < n; j++) /* its MOVING streams too, though none counts on it */
        if (place_drop_worker(p, p->pick[j], true) < 0)
            return nomem(err);
    if (shedding(p, now, next) < 0)
        return nomem(err);
    if (p->ttree[1].lease < *next)
        *next = p->ttree[1].lease;
    return PLACE_OK;
}
