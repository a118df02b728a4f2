/* sched.c - the scheduler's queue of ranges, its small containers (growth,
 * the ring of segments, a worker's leases), creation, resume from a
 * journal's committed ids, and the status and report counters (see
 * work_sched.h). */
#include "sched_private.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int lease_reserve(struct lease *l, size_t more)
{
    return base_grow((void **)&l->segs, &l->capseg, l->nseg + more, sizeof *l->segs);
}

int segq_reserve(struct segq *q, size_t more)
{
    if (q->len + more <= q->cap)
        return 0;
    size_t ncap = q->cap ? q->cap * 2 : 8;
    if (ncap < q->len + more)
        ncap = q->len + more;
    struct seg *nb = ncap <= SIZE_MAX / sizeof *nb ? malloc(ncap * sizeof *nb) : NULL;
    if (!nb)
        return -1;
    for (size_t i = 0; i < q->len; i++)
        nb[i] = q->buf[(q->head + i) % q->cap];
    free(q->buf);
    q->buf = nb;
    q->cap = ncap;
    q->head = 0;
    return 0;
}

struct seg *segq_front(struct segq *q)
{
    return &q->buf[q->head];
}

void segq_pop(struct segq *q)
{
    q->head = (q->head + 1) % q->cap;
    q->len--;
}

void segq_push_front(struct segq *q, uint64_t lo, uint64_t hi, uint32_t attempts)
{
    struct seg *f = q->len ? segq_front(q) : NULL;
    if (f && f->attempts == attempts && (f->lo == hi || f->hi == lo)) {
        if (f->lo == hi)
            f->lo = lo;
        else
            f->hi = hi;
        return;
    }
    q->head = (q->head + q->cap - 1) % q->cap;
    q->buf[q->head] = (struct seg){lo, hi, attempts, -1};
    q->len++;
}

int sched_create(uint64_t n_items, unsigned n_workers, const struct sched_opts *opts,
                 struct sched **out, struct cohort_err *err)
{
    *out = NULL;
    if (n_items == 0 || n_items > SCHED_MAX_ITEMS)
        return cohort_fail(err, "a work queue of %" PRIu64 " items: it needs 1 to %" PRIu64,
                           n_items, SCHED_MAX_ITEMS);
    if (n_workers == 0 || n_workers > SCHED_MAX_WORKERS)
        return cohort_fail(err, "a work queue for %u workers: it needs 1 to %u", n_workers,
                           SCHED_MAX_WORKERS);
    struct sched_opts o = opts ? *opts : (struct sched_opts){0};
    if (o.lease_timeout_ms < 0 || o.target_ms < 0)
        return cohort_fail(err, "a lease timeout of %" PRId64 " ms and a lease target of %" PRId64
                           " ms: neither may be negative", o.lease_timeout_ms, o.target_ms);
    o.lease_timeout_ms = o.lease_timeout_ms ? o.lease_timeout_ms : SCHED_DEFAULT_LEASE_TIMEOUT_MS;
    o.max_attempts = o.max_attempts ? o.max_attempts : SCHED_DEFAULT_MAX_ATTEMPTS;
    o.target_ms = o.target_ms ? o.target_ms : SCHED_DEFAULT_TARGET_MS;
    o.first_lease = o.first_lease ? o.first_lease : SCHED_DEFAULT_FIRST_LEASE;
    o.lease_rate = o.lease_rate ? o.lease_rate : SCHED_DEFAULT_LEASE_RATE;
    struct sched *s = calloc(1, sizeof *s);
    if (!s || !(s->w = calloc(n_workers, sizeof *s->w)) || segq_reserve(&s->q, 1) < 0) {
        sched_destroy(s);
        return cohort_fail(err, "out of memory for a work queue of %u workers", n_workers);
    }
    s->n = n_items;
    s->nw = n_workers;
    s->o = o;
    s->queued = n_items;
    s->next_deadline = INT64_MAX;
    segq_push_front(&s->q, 0, n_items, 0);
    *out = s;
    return 0;
}

void sched_destroy(struct sched *s)
{
    if (!s)
        return;
    for (unsigned i = 0; s->w && i < s->nw; i++) {
        for (size_t l = 0; l < s->w[i].caplease; l++)
            free(s->w[i].leases[l].segs);
        free(s->w[i].leases);
        base_runs_free(&s->w[i].revoked);
    }
    free(s->w);
    free(s->q.buf);
    free(s->aside);
    free(s);
}

static int span_cmp(const void *a, const void *b)
{
    const struct sched_span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The queue (still ascending, all fresh) minus the sorted spans m[0..nm-1],
 * into nb (room for q.len + nm runs). Returns the runs written. */
static size_t subtract(const struct segq *q, const struct sched_span *m, size_t nm,
                       struct seg *nb)
{
    size_t out = 0, j = 0;
    for (size_t i = 0; i < q->len; i++) {
        const struct seg *g = &q->buf[(q->head + i) % q->cap];
        uint64_t x = g->lo;
        while (j < nm && m[j].hi <= x)
            j++;
        for (size_t k = j; k < nm && m[k].lo < g->hi; k++) {
            if (m[k].lo > x)
                nb[out++] = (struct seg){x, m[k].lo, 0, -1};
            if (m[k].hi > x)
                x = m[k].hi;
        }
        if (x < g->hi)
            nb[out++] = (struct seg){x, g->hi, 0, -1};
    }
    return out;
}

int sched_mark_committed(struct sched *s, const struct sched_span *spans, size_t n,
                         struct cohort_err *err)
{
    if (s->started)
        return cohort_fail(err, "committed ids can be marked only before leasing begins");
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (spans[i].lo > spans[i].hi || spans[i].hi > s->n)
            return cohort_fail(err, "committed ids %" PRIu64 " to %" PRIu64 " are out of range: "
                               "the queue has %" PRIu64 " items (ids 0 to %" PRIu64 ")",
                               spans[i].lo, spans[i].hi - 1, s->n, s->n - 1);
    if (n > SIZE_MAX / sizeof(struct seg) - s->q.len)
        return sched_nomem(err);
    int sorted = 1; /* as a journal replays them: no copy, no sort */
    for (size_t i = 1; i < n && sorted; i++)
        sorted = spans[i - 1].lo <= spans[i].lo;
    struct sched_span *m = sorted ? NULL : malloc(n * sizeof *m);
    struct seg *nb = malloc((s->q.len + n) * sizeof *nb);
    if ((!sorted && !m) || !nb) {
        free(m);
        free(nb);
        return cohort_fail(err, "out of memory for %zu committed spans", n);
    }
    if (!sorted) {
        memcpy(m, spans, n * sizeof *m);
        qsort(m, n, sizeof *m, span_cmp);
    }
    size_t runs = subtract(&s->q, sorted ? spans : m, n, nb);
    free(m);
    uint64_t queued = 0;
    for (size_t i = 0; i < runs; i++)
        queued += seg_len(&nb[i]);
    free(s->q.buf);
    s->q = (struct segq){nb, s->q.len + n, 0, runs};
    s->committed += s->queued - queued;
    s->queued = queued;
    return segq_reserve(&s->q, 1) < 0 ? cohort_fail(err, "out of memory for the queue") : 0;
}

int sched_nomem(struct cohort_err *err)
{
    cohort_fail(err, "out of memory in the work scheduler");
    return SCHED_ENOMEM;
}

int sched_worker_ok(struct sched *s, unsigned w, struct cohort_err *err)
{
    if (w >= s->nw)
        return cohort_fail(err, "worker %u is out of range: the queue has workers 0 to %u", w,
                           s->nw - 1);
    if (s->w[w].lost)
        return cohort_fail(err, "worker %u was lost; it must join again first", w);
    s->started = true;
    return 0;
}

void sched_set_rate(struct sched *s, struct worker *wk, double rate)
{
    if (wk->rate > 0) {
        s->sum_rate -= wk->rate;
        s->n_measured--;
    }
    wk->rate = rate;
    if (rate > 0) {
        s->sum_rate += rate;
        s->n_measured++;
    }
    if (!s->n_measured)
        s->sum_rate = 0;
}

void sched_deactivate(struct sched *s, struct worker *wk)
{
    sched_set_rate(s, wk, 0);
    if (wk->active)
        s->n_active--;
    wk->active = false;
    wk->probes = 0;
    wk->pending = 0;
    wk->pending_ms = 0;
}

void sched_status(const struct sched *s, struct sched_status *st)
{
    *st = (struct sched_status){s->n, s->committed, s->leased, s->queued, s->set_aside,
                                s->copies, s->requeued};
}

int sched_worker_stats(const struct sched *s, unsigned w, struct sched_worker_stats *ws)
{
    if (w >= s->nw)
        return SCHED_EINVAL;
    *ws = s->w[w].st;
    ws->rate = s->w[w].rate * 1000.0;
    ws->lost = s->w[w].lost;
    return 0;
}

const struct sched_aside *sched_set_aside(const struct sched *s, size_t *n)
{
    *n = s->naside;
    return s->aside;
}

/* ---- a worker's leases ---- */

struct lease *lease_find(const struct worker *wk, uint64_t id, size_t *si)
{
    for (size_t li = 0; li < wk->nlease; li++) {
        struct lease *l = &wk->leases[li];
        size_t a = 0, b = l->nseg;
        while (a < b) { /* the first segment ending after id */
            size_t m = a + (b - a) / 2;
            if (l->segs[m].hi <= id)
                a = m + 1;
            else
                b = m;
        }
        if (a < l->nseg && l->segs[a].lo <= id) {
            *si = a;
            return l;
        }
    }
    return NULL;
}

struct lease *lease_new(struct sched *s, unsigned wi, int64_t now)
{
    struct worker *wk = &s->w[wi];
    if (wk->nlease == wk->caplease) {
        size_t old = wk->caplease;
        if (base_grow((void **)&wk->leases, &wk->caplease, old + 1, sizeof *wk->leases) < 0)
            return NULL;
        memset(&wk->leases[old], 0, (wk->caplease - old) * sizeof *wk->leases);
    }
    struct lease *l = &wk->leases[wk->nlease];
    l->nseg = 0;
    l->granted = now;
    l->deadline = sched_deadline(s, now);
    return l;
}

void lease_granted(struct sched *s, unsigned wi, struct lease *l, int64_t now)
{
    struct worker *wk = &s->w[wi];
    if (wk->nlease == 0)
        wk->busy_since = now;
    wk->nlease++;
    l->size = l->held = 0;
    for (size_t i = 0; i < l->nseg; i++)
        l->size += seg_len(&l->segs[i]);
    l->held = l->size;
    if (l->deadline < s->next_deadline)
        s->next_deadline = l->deadline;
    wk->st.leases++;
    wk->st.leased += l->size;
}

void lease_drop(struct worker *wk, struct lease *l)
{
    struct lease *last = &wk->leases[wk->nlease - 1];
    struct lease t = *l;
    *l = *last;
    *last = t; /* keeps its segment buffer for the next lease */
    wk->nlease--;
}
