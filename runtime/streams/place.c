/* place.c - the stream placement (place.h): the set and the calls for
 * streams (add, remove, release, report) and about them. Over four
 * modules it calls, each of which calls only those below it: place_move.c
 * (workers coming and going, leases, bounds), place_own.c (the streams by
 * key, their ownership, each worker's lists of them), place_ring.c (the
 * ring) and place_tree.c (the tree over the workers' loads). */
#include "place_move.h"
#include "place_own.h"
#include "place_ring.h"
#include "place_tree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int place_new(uint32_t nw, const struct place_opts *opts, struct place **out,
              struct cohort_err *err)
{
    struct place_opts o = opts ? *opts : (struct place_opts){0};
    *out = NULL;
    if (nw == 0 || nw > PLACE_MAX_WORKERS) {
        cohort_fail(err, "%u workers: give 1 to %u", nw, PLACE_MAX_WORKERS);
        return PLACE_EINVAL;
    }
    if (!(o.epsilon >= 0) || o.epsilon > 100 || o.lease_ms < 0 || o.shed_after_ms < 0 ||
        o.vnodes > 10000) {
        cohort_fail(err, "epsilon %g, vnodes %u, lease %lld ms, shed after %lld ms: give an "
                         "epsilon in (0, 100], at most 10000 vnodes and no negative time "
                         "(0: the defaults)",
                    o.epsilon, o.vnodes, (long long)o.lease_ms, (long long)o.shed_after_ms);
        return PLACE_EINVAL;
    }
    o.epsilon = o.epsilon > 0 ? o.epsilon : PLACE_DEFAULT_EPSILON;
    o.vnodes = o.vnodes ? o.vnodes : PLACE_DEFAULT_VNODES;
    o.lease_ms = o.lease_ms ? o.lease_ms : PLACE_DEFAULT_LEASE_MS;
    o.shed_after_ms = o.shed_after_ms ? o.shed_after_ms : PLACE_DEFAULT_SHED_AFTER_MS;
    struct place *p = calloc(1, sizeof *p);
    if (p)
        p->nw = nw;
    size_t nb = (size_t)1 << PLACE_BUCKET_BITS;
    if (!p || !(p->w = calloc(nw, sizeof *p->w)) ||
        !(p->bucket = malloc(nb * sizeof *p->bucket)) || place_tree_new(p) < 0 ||
        !(p->over = malloc(nw * sizeof *p->over)) || !(p->pick = malloc(nw * sizeof *p->pick))) {
        place_free(p);
        cohort_fail(err, "out of memory");
        return PLACE_ENOMEM;
    }
    for (uint32_t w = 0; w < nw; w++)
        p->w[w].head[PLACE_LIST_HELD] = p->w[w].head[PLACE_LIST_LEAVING] = PLACE_NONE;
    memset(p->bucket, 0xff, nb * sizeof *p->bucket); /* PLACE_NONE: empty */
    p->o = o;
    *out = p;
    return PLACE_OK;
}

void place_free(struct place *p)
{
    if (!p)
        return;
    free(p->w);
    free(p->s);
    free(p->table);
    free(p->bucket);
    free(p->over);
    free(p->pick);
    free(p->ring);
    free(p->tree);
    free(p->ttree);
    free(p->acts);
    free(p);
}

/* ---- the calls for streams --------------------------------------------- */

static int bad_key(const char *key, struct cohort_err *err)
{
    size_t n = key ? strnlen(key, PLACE_KEY_MAX + 1) : 0;
    if (n == 0 || n > PLACE_KEY_MAX) {
        cohort_fail(err, "a stream key %s: give 1 to %d bytes",
                    !key ? "that is NULL" : n == 0 ? "that is empty" : "over 255 bytes",
                    PLACE_KEY_MAX);
        return PLACE_EINVAL;
    }
    return 0;
}

int place_add(struct place *p, const char *key, double cost, struct cohort_err *err)
{
    if (bad_key(key, err))
        return PLACE_EINVAL;
    if (!(cost > 0) || !isfinite(cost) || cost > 1e12) {
        cohort_fail(err, "stream '%s': cost %g: give a number above 0 (at most 1e12)", key, cost);
        return PLACE_EINVAL;
    }
    struct stream *s = place_find(p, key);
    if (s && !s->removed)
        return PLACE_NOOP;
    if (s) { /* removed while moving, added again: it goes on */
        int32_t before = place_counted(s);
        s->removed = false;
        p->total_cost += s->cost;
        place_recount(p, s, before);
        return PLACE_OK;
    }
    if (!(s = place_insert(p, key, cost))) {
        cohort_fail(err, "out of memory");
        return PLACE_ENOMEM;
    }
    p->total_cost += cost;
    if (!p->min_cost || cost < p->min_cost) {
        p->min_cost = cost;
        place_tree_rebuild(p);
    }
    int rc = place_ring_sync(p);
    int32_t to = rc < 0 ? -1 : place_choose(p, s, -1, true);
    if (rc < 0 || (to >= 0 && place_assign(p, s, (uint32_t)to) < 0) || place_settle(p) < 0) {
        cohort_fail(err, "out of memory");
        return PLACE_ENOMEM;
    }
    return PLACE_OK;
}

int place_remove(struct place *p, const char *key, struct cohort_err *err)
{
    if (bad_key(key, err))
        return PLACE_EINVAL;
    struct stream *s = place_find(p, key);
    if (!s || s->removed)
        return PLACE_NOOP;
    int32_t before = place_counted(s);
    s->removed = true;
    p->total_cost -= s->cost;
    place_recount(p, s, before);
    if (s->state == ST_UNPLACED) {
        place_forget(p, s);
        return PLACE_OK;
    }
    if ((s->state == ST_OWNED && place_revoke(p, s, -1) < 0) || place_settle(p) < 0) {
        cohort_fail(err, "out of memory");
        return PLACE_ENOMEM;
    }
    return PLACE_OK;
}

/* The stream key that worker w holds at epoch, or NULL with err (or
 * *noop for an old epoch). */
static struct stream *held(struct place *p, uint32_t w, const char *key, uint64_t epoch,
                           bool *noop, struct cohort_err *err)
{
    *noop = false;
    if (bad_key(key, err))
        return NULL;
    struct stream *s = w < p->nw ? place_find(p, key) : NULL;
    if ((s && (epoch < s->epoch || (epoch == s->epoch && s->state == ST_UNPLACED))) ||
        (!s && epoch && epoch <= p->epoch)) {
        *noop = true; /* a late owner: given on since, or forgotten */
        return NULL;
    }
    if (!s || s->owner != (int32_t)w || s->epoch != epoch || s->state == ST_UNPLACED) {
        cohort_fail(err, "stream '%s' at epoch %llu is not owned by worker %u (%s)", key,
                    (unsigned long long)epoch, w,
                    !s ? "no such stream" : epoch > s->epoch ? "no such epoch yet"
                                                             : "another worker owns it");
        return NULL;
    }
    return s;
}

int place_release(struct place *p, uint32_t w, const char *key, uint64_t epoch,
                  struct cohort_err *err)
{
    bool noop;
    struct stream *s = held(p, w, key, epoch, &noop, err);
    if (!s)
        return noop ? PLACE_NOOP : PLACE_EINVAL;
    int rc = place_handoff(p, s, (int32_t)w);
    if (rc == 0)
        rc = place_settle(p);
    if (rc < 0) {
        cohort_fail(err, "out of memory");
        return PLACE_ENOMEM;
    }
    return PLACE_OK;
}

int place_report(struct place *p, uint32_t w, const char *key, double load,
                 struct cohort_err *err)
{
    if (bad_key(key, err))
        return PLACE_EINVAL;
    struct stream *s = place_find(p, key);
    if (!(load >= 0) || !isfinite(load)) {
        cohort_fail(err, "stream '%s': load %g: give a number of 0 or more", key, load);
        return PLACE_EINVAL;
    }
    if (!s || s->owner != (int32_t)w || s->state != ST_OWNED)
        return PLACE_NOOP; /* moved meanwhile: a report of its last owner, dropped */
    place_rep_count(p, s, -1);
    s->load = load;
    place_rep_count(p, s, 1);
    return PLACE_OK;
}

size_t place_actions(struct place *p, const struct place_act **acts)
{
    *acts = p->acts;
    size_t n = p->nacts;
    p->nacts = 0;
    return n;
}

void place_status(const struct place *p, struct place_status *st)
{
    *st = (struct place_status){.workers = p->live, .total_cost = p->total_cost,
                                .total_cap = p->total_cap, .moves = p->moves};
    for (size_t i = 0; i < p->ns; i++) {
        st->streams += !p->s[i].removed;
        st->moving += p->s[i].state == ST_MOVING;
        st->unplaced += p->s[i].state == ST_UNPLACED;
    }
}

double place_load(const struct place *p, uint32_t w)
{
    return w < p->nw ? p->w[w].load : 0;
}

double place_bound(const struct place *p, uint32_t w)
{
    return w < p->nw ? place_bound_of(p, w, p->total_cost) : 0;
}

bool place_owner(const struct place *p, const char *key, uint32_t *w, uint64_t *epoch)
{
    const struct stream *s = key ? place_find(p, key) : NULL;
    if (!s || s->state == ST_UNPLACED)
        return false;
    *w = (uint32_t)s->owner;
    *epoch = s->epoch;
    return true;
}

int place_check(const struct place *p, struct cohort_err *err)
{
    double *load = calloc(p->nw, sizeof *load), cost = 0, cap = 0;
    if (!load)
        return cohort_fail(err, "out of memory");
    int rc = 0;
    uint32_t live = 0;
    for (size_t i = 0; i < p->ns && rc == 0; i++) {
        const struct stream *s = &p->s[i];
        int32_t at = place_counted(s);
        if (at >= 0)
            load[at] += s->cost;
        cost += s->removed ? 0 : s->cost;
        if (place_find(p, s->key) != s)
            rc = cohort_fail(err, "stream '%s' is not found by its key", s->key);
        else if (s->state != ST_UNPLACED && (s->owner < 0 || (uint32_t)s->owner >= p->nw))
            rc = cohort_fail(err, "stream '%s' has no owner", s->key);
    }
    for (uint32_t w = 0; w < p->nw && rc == 0; w++) {
        live += p->w[w].alive;
        cap += p->w[w].alive ? p->w[w].cap : 0;
        if (fabs(load[w] - p->w[w].load) > 1e-6 * (cost > 1 ? cost : 1))
            rc = cohort_fail(err, "worker %u: load %g, but its streams cost %g", w,
                             p->w[w].load, load[w]);
    }
    if (rc == 0 && (live != p->live || fabs(cost - p->total_cost) > 1e-6 * (cost > 1 ? cost : 1) ||
                    fabs(cap - p->total_cap) > 1e-6 * (cap > 1 ? cap : 1)))
        rc = cohort_fail(err, "totals: %u live workers (counted %u), cost %g (counted %g), "
                              "capacity %g (counted %g)",
                         live, p->live, cost, p->total_cost, cap, p->total_cap);
    free(load);
    long stale = rc == 0 ? place_tree_stale(p) : -1;
    if (stale >= 0)
        rc = cohort_fail(err, "worker %ld: its node in the tree is not its state", stale);
    if (rc == 0)
        rc = place_lists_check(p, err);
    return rc == 0 ? place_reported_check(p, err) : rc;
}
