/* sched_check.c - the scheduler's invariants, recomputed from its
 * structures (for tests): counts add up, no id is in two places, copies
 * mirror each other, lost workers hold nothing, the deadline bound holds. */
#include "sched_private.h"

#include <inttypes.h>
#include <stdlib.h>

struct piece {
    uint64_t lo, hi;
};

static int piece_cmp(const void *a, const void *b)
{
    const struct piece *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* A copy's segment on the other side: same ids, same attempts, naming wi. */
static bool mirrored(const struct sched *s, unsigned wi, const struct seg *g)
{
    if (g->twin < 0 || (unsigned)g->twin >= s->nw || (unsigned)g->twin == wi ||
        s->w[g->twin].lost)
        return false;
    size_t mi;
    const struct lease *m = lease_find(&s->w[g->twin], g->lo, &mi);
    return m && m->segs[mi].lo == g->lo && m->segs[mi].hi == g->hi &&
           m->segs[mi].twin == (int32_t)wi && m->segs[mi].attempts == g->attempts;
}

/* Worker wi's leases: well formed, mirrored; their ids into p. */
static int check_worker(const struct sched *s, unsigned wi, struct piece *p, size_t *np,
                        uint64_t *leased, struct cohort_err *err)
{
    const struct worker *wk = &s->w[wi];
    if (wk->lost && wk->nlease)
        return cohort_fail(err, "lost worker %u holds %zu leases", wi, wk->nlease);
    for (size_t li = 0; li < wk->nlease; li++) {
        const struct lease *l = &wk->leases[li];
        uint64_t held = 0;
        if (l->nseg == 0 || l->deadline < s->next_deadline)
            return cohort_fail(err, "worker %u lease %zu: empty, or a deadline before the bound",
                               wi, li);
        for (size_t i = 0; i < l->nseg; i++) {
            const struct seg *g = &l->segs[i];
            if (g->lo >= g->hi || g->hi > s->n || (i && g->lo < l->segs[i - 1].hi))
                return cohort_fail(err, "worker %u lease %zu: segment %" PRIu64 "..%" PRIu64
                                   " out of order or range", wi, li, g->lo, g->hi);
            if (g->twin >= 0 && !mirrored(s, wi, g))
                return cohort_fail(err, "worker %u: the copy of %" PRIu64 "..%" PRIu64
                                   " on worker %d does not mirror it", wi, g->lo, g->hi, g->twin);
            held += seg_len(g);
            if (g->twin < 0 || wi < (unsigned)g->twin) {
                p[(*np)++] = (struct piece){g->lo, g->hi};
                *leased += seg_len(g);
            }
        }
        if (held != l->held || held > l->size)
            return cohort_fail(err, "worker %u lease %zu holds %" PRIu64 " items, counted %" PRIu64,
                               wi, li, held, l->held);
    }
    return 0;
}

/* Queue and set-aside ids into p, with their counts checked. */
static int check_queue(const struct sched *s, struct piece *p, size_t *np,
                       struct cohort_err *err)
{
    uint64_t queued = 0, aside = 0;
    for (size_t i = 0; i < s->q.len; i++) {
        const struct seg *g = &s->q.buf[(s->q.head + i) % s->q.cap];
        if (g->lo >= g->hi || g->hi > s->n || g->attempts >= s->o.max_attempts)
            return cohort_fail(err, "queue run %" PRIu64 "..%" PRIu64 " (attempts %u) is wrong",
                               g->lo, g->hi, (unsigned)g->attempts);
        queued += seg_len(g);
        p[(*np)++] = (struct piece){g->lo, g->hi};
    }
    for (size_t i = 0; i < s->naside; i++) {
        const struct sched_aside *a = &s->aside[i];
        if (a->lo >= a->hi || a->hi > s->n || a->attempts < s->o.max_attempts)
            return cohort_fail(err, "set-aside run %" PRIu64 "..%" PRIu64 " is wrong", a->lo,
                               a->hi);
        aside += a->hi - a->lo;
        p[(*np)++] = (struct piece){a->lo, a->hi};
    }
    if (queued != s->queued || aside != s->set_aside)
        return cohort_fail(err, "queued %" PRIu64 " (counted %" PRIu64 "), set aside %" PRIu64
                           " (counted %" PRIu64 ")", queued, s->queued, aside, s->set_aside);
    return 0;
}

static int check_rates(const struct sched *s, struct cohort_err *err)
{
    unsigned active = 0, measured = 0;
    for (unsigned wi = 0; wi < s->nw; wi++) {
        active += s->w[wi].active;
        measured += s->w[wi].rate > 0;
        if (s->w[wi].rate > 0 && !s->w[wi].active)
            return cohort_fail(err, "worker %u has a rate but is not active", wi);
    }
    if (active != s->n_active || measured != s->n_measured)
        return cohort_fail(err, "%u active and %u measured workers, counted %u and %u", active,
                           measured, s->n_active, s->n_measured);
    return 0;
}

int sched_check(const struct sched *s, struct cohort_err *err)
{
    size_t cap = s->q.len + s->naside, np = 0;
    for (unsigned wi = 0; wi < s->nw; wi++)
        for (size_t li = 0; li < s->w[wi].nlease; li++)
            cap += s->w[wi].leases[li].nseg;
    struct piece *p = malloc((cap ? cap : 1) * sizeof *p);
    if (!p)
        return cohort_fail(err, "out of memory for checking the scheduler");
    uint64_t leased = 0;
    int rc = check_queue(s, p, &np, err);
    for (unsigned wi = 0; !rc && wi < s->nw; wi++)
        rc = check_worker(s, wi, p, &np, &leased, err);
    if (!rc)
        rc = check_rates(s, err);
    if (!rc && (leased != s->leased || s->committed + leased + s->queued + s->set_aside != s->n))
        rc = cohort_fail(err, "committed %" PRIu64 " + leased %" PRIu64 " (counted %" PRIu64
                         ") + queued %" PRIu64 " + set aside %" PRIu64 " is not %" PRIu64,
                         s->committed, leased, s->leased, s->queued, s->set_aside, s->n);
    if (!rc)
        qsort(p, np, sizeof *p, piece_cmp);
    for (size_t i = 1; !rc && i < np; i++)
        if (p[i].lo < p[i - 1].hi)
            rc = cohort_fail(err, "ids %" PRIu64 "..%" PRIu64 " are in two places", p[i].lo,
                             p[i - 1].hi < p[i].hi ? p[i - 1].hi : p[i].hi);
    free(p);
    return rc;
}
