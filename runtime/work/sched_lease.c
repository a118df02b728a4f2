/* sched_lease.c - handing out leases: how many items a worker gets (its
 * rate x the target, shrinking toward the end), taking them from the
 * queue's front, and, once the queue is empty, copying the tail of the
 * lease predicted to finish last (see the decisions in work_sched.h). */
#include "sched_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Where the budget binds, no lease shrinks below the lease time over this. */
#define TAIL_DIVISOR 4
/* Where the budget binds, each lease's time is spread over this share of
 * it either way (see work_sched.h). */
#define LEASE_SPREAD 0.25

/* The mean measured rate (items per ms), 0 when none is. */
static double mean_rate(const struct sched *s)
{
    return s->n_measured ? s->sum_rate / s->n_measured : 0;
}

/* The work one lease should hold (ms): the target, or as long as keeps the
 * active workers' leases within the coordinator's budget of lease_rate a
 * second, but never over half the lease timeout (a lease must not be
 * taken back from a worker that is merely doing it). */
static double lease_ms(const struct sched *s)
{
    double budget = 1000.0 * s->n_active / s->o.lease_rate;
    budget = fmin(budget, (double)s->o.lease_timeout_ms / 2);
    return budget > (double)s->o.target_ms ? budget : (double)s->o.target_ms;
}

/* A factor in [1 - LEASE_SPREAD, 1 + LEASE_SPREAD): a hash of the worker
 * and how many leases it has had, so the same calls give the same leases. */
static double spread(const struct sched *s, const struct worker *wk)
{
    uint64_t z = (uint64_t)(wk - s->w) * UINT64_C(0x9E3779B97F4A7C15) +
                 (wk->st.leases + 1) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ z >> 31) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 29;
    return 1 + LEASE_SPREAD * (ldexp((double)(z >> 11), -52) - 1);
}

/* Items for worker wk's next lease from the queue: rate x the lease time
 * (before its rate is known, the first lease doubled per commit too quick
 * to measure, or the mean rate's lease where the budget binds; there the
 * lease time spread, but not over half the lease timeout), at most half
 * its share of what is queued (where the budget binds, not under
 * TAIL_DIVISOR's floor), at least 1, at most cap and what is queued. */
static uint64_t lease_size(const struct sched *s, const struct worker *wk, size_t cap)
{
    double mean = mean_rate(s), share = 1.0 / s->n_active, t = lease_ms(s);
    double mine = wk->rate > 0 ? wk->rate : mean; /* 0 until some worker is measured */
    bool binds = t > (double)s->o.target_ms && mean > 0;
    double ts = binds ? fmin(t * spread(s, wk), (double)s->o.lease_timeout_ms / 2) : t;
    double base = binds ? mine * ts
                  : wk->rate > 0 ? wk->rate * t
                  : ldexp((double)s->o.first_lease, wk->probes < 20 ? wk->probes : 20);
    if (mean > 0)
        share = mine / (s->sum_rate + (s->n_active - s->n_measured) * mean);
    double size = fmin(floor(base + 0.5), ceil((double)s->queued * share / 2));
    if (binds) /* the tail's leases too */
        size = fmax(size, floor(mine * t / TAIL_DIVISOR));
    uint64_t n = size < 1 ? 1 : (uint64_t)fmin(size, (double)s->queued);
    return n < cap ? n : cap;
}

static int seg_cmp(const void *a, const void *b)
{
    const struct seg *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static size_t write_ids(const struct lease *l, uint64_t *ids)
{
    size_t k = 0;
    for (size_t i = 0; i < l->nseg; i++)
        for (uint64_t id = l->segs[i].lo; id < l->segs[i].hi; id++)
            ids[k++] = id;
    return k;
}

static int grant_from_queue(struct sched *s, unsigned wi, int64_t now, uint64_t *ids,
                            uint64_t size, struct sched_grant *g, struct cohort_err *err)
{
    struct lease *l = lease_new(s, wi, now);
    uint64_t got = 0;
    while (l && got < size && lease_reserve(l, 1) == 0) {
        struct seg *f = segq_front(&s->q);
        uint64_t take = seg_len(f) < size - got ? seg_len(f) : size - got;
        l->segs[l->nseg++] = (struct seg){f->lo, f->lo + take, f->attempts, -1};
        f->lo += take;
        got += take;
        if (f->lo == f->hi)
            segq_pop(&s->q);
    }
    if (got == 0)
        return sched_nomem(err);
    if (l->nseg > 1)
        qsort(l->segs, l->nseg, sizeof *l->segs, seg_cmp);
    s->queued -= got;
    s->leased += got;
    lease_granted(s, wi, l, now);
    g->n = write_ids(l, ids);
    return SCHED_OK;
}

/* The lease speculation would copy from: of the other live workers' leases
 * with items nobody copied yet, the one expected to finish last; beyond
 * SCHED_VICTIM_SCAN workers, among the next SCHED_VICTIM_SCAN in turn. */
struct victim {
    unsigned a;
    size_t li;
    double e, rate; /* expected finish, holder's rate */
    uint64_t free;  /* items without a copy */
};

static bool pick_victim(struct sched *s, unsigned wi, int64_t now, double mean,
                        struct victim *v)
{
    *v = (struct victim){.e = -1};
    unsigned scan = s->nw < SCHED_VICTIM_SCAN ? s->nw : SCHED_VICTIM_SCAN;
    unsigned from = scan < s->nw ? s->scan_from : 0;
    if (scan < s->nw)
        s->scan_from = (unsigned)(((uint64_t)from + scan) % s->nw);
    for (unsigned j = 0; j < scan; j++) {
        unsigned a = (unsigned)(((uint64_t)from + j) % s->nw);
        struct worker *wk = &s->w[a];
        double r = wk->rate > 0 ? wk->rate : mean;
        for (size_t li = 0; a != wi && li < wk->nlease; li++) {
            const struct lease *l = &wk->leases[li];
            uint64_t free = 0;
            for (size_t i = 0; i < l->nseg; i++)
                free += l->segs[i].twin < 0 ? seg_len(&l->segs[i]) : 0;
            double e = (double)l->granted + (double)l->size / r;
            if (e < (double)now)
                e = 2.0 * (double)now - (double)l->granted;
            if (free && e > v->e)
                *v = (struct victim){a, li, e, r, free};
        }
    }
    return v->e >= 0;
}

/* How many tail items to copy: k minimizing max(e - k/rA, now + k/rB),
 * within [1, limit]; 0 when copying would not finish before the holder. */
static uint64_t copy_count(const struct victim *v, double rb, int64_t now, uint64_t limit)
{
    double t = (double)now, kstar = (v->e - t) / (1.0 / v->rate + 1.0 / rb);
    uint64_t best = 0;
    double best_f = v->e;
    for (double k = floor(kstar); k <= floor(kstar) + 1; k++) {
        double kk = fmax(1.0, fmin(k, (double)limit));
        double f = fmax(v->e - kk / v->rate, t + kk / rb);
        if (t + kk / rb < v->e && f < best_f) {
            best_f = f;
            best = (uint64_t)kk;
        }
    }
    return best;
}

/* Copies the last k items without a copy of lease v into a new lease of
 * worker wi; both sides' segments name each other. */
static int copy_tail(struct sched *s, unsigned wi, const struct victim *v, uint64_t k,
                     int64_t now, uint64_t *ids, struct sched_grant *g)
{
    struct lease *src = &s->w[v->a].leases[v->li];
    size_t nseg = 0;
    uint64_t rem = k;
    for (size_t i = src->nseg; i-- > 0 && rem;)
        if (src->segs[i].twin < 0) {
            nseg++;
            rem -= seg_len(&src->segs[i]) < rem ? seg_len(&src->segs[i]) : rem;
        }
    struct lease *l = lease_new(s, wi, now);
    if (!l || lease_reserve(l, nseg) < 0 || lease_reserve(src, 1) < 0)
        return SCHED_ENOMEM;
    rem = k;
    for (size_t i = src->nseg, j = nseg; i-- > 0 && rem;) {
        struct seg *sg = &src->segs[i];
        if (sg->twin >= 0)
            continue;
        uint64_t take = seg_len(sg) < rem ? seg_len(sg) : rem;
        if (take < seg_len(sg)) { /* split: the head stays without a copy */
            memmove(sg + 2, sg + 1, (src->nseg - i - 1) * sizeof *sg);
            sg[1] = *sg;
            sg->hi = sg[1].lo = sg->hi - take;
            src->nseg++;
            sg++;
        }
        sg->twin = (int32_t)wi;
        l->segs[--j] = (struct seg){sg->lo, sg->hi, sg->attempts, (int32_t)v->a};
        rem -= take;
    }
    l->nseg = nseg;
    lease_granted(s, wi, l, now);
    s->copies += k;
    s->w[wi].st.copies += k;
    g->n = write_ids(l, ids);
    g->copies = g->n;
    return SCHED_OK;
}

/* The queue is empty: a copy of another worker's tail, or SCHED_WAIT. */
static int speculate(struct sched *s, unsigned wi, int64_t now, uint64_t *ids, size_t cap,
                     struct sched_grant *g, struct cohort_err *err)
{
    double mean = mean_rate(s);
    struct victim v;
    if (mean <= 0 || !pick_victim(s, wi, now, mean, &v))
        return SCHED_WAIT;
    const struct worker *wk = &s->w[wi];
    double rb = wk->rate > 0 ? wk->rate : mean;
    double base = floor(rb * lease_ms(s) + 0.5);
    uint64_t limit = v.free < cap ? v.free : cap;
    if (base >= 1 && base < (double)limit)
        limit = (uint64_t)base;
    uint64_t k = copy_count(&v, rb, now, limit);
    if (!k)
        return SCHED_WAIT;
    return copy_tail(s, wi, &v, k, now, ids, g) < 0 ? sched_nomem(err) : SCHED_OK;
}

int sched_lease(struct sched *s, unsigned w, int64_t now, uint64_t *ids, size_t cap,
                struct sched_grant *g, struct cohort_err *err)
{
    int rc = sched_worker_ok(s, w, err);
    if (rc)
        return rc;
    *g = (struct sched_grant){0};
    if (!ids || cap == 0)
        return cohort_fail(err, "a lease needs room for at least one id");
    if ((rc = sched_expire(s, now, err)) != 0)
        return rc;
    if (s->committed + s->set_aside == s->n)
        return SCHED_FINISHED;
    if (!s->w[w].active) {
        s->w[w].active = true;
        s->n_active++;
    }
    if (s->queued)
        return grant_from_queue(s, w, now, ids, lease_size(s, &s->w[w], cap), g, err);
    if ((rc = speculate(s, w, now, ids, cap, g, err)) != SCHED_WAIT)
        return rc;
    g->wait_until = s->next_deadline;
    int64_t wait_ms = (int64_t)ceil(lease_ms(s));
    if (now + wait_ms < g->wait_until)
        g->wait_until = now + wait_ms;
    return SCHED_WAIT;
}
