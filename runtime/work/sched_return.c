/* sched_return.c - items coming back from workers: commits (with the rate
 * they measure), items given back, leases taken back at their deadline or
 * from a lost worker, deadlines extended, and what happens to an item's
 * other copy in each case (see work_sched.h). Every step that changes two
 * places reserves its memory first, so running out leaves no half-done
 * item. */
#include "sched_private.h"

#include <inttypes.h>
#include <string.h>

#define RATE_WEIGHT 0.3 /* of a new sample in a worker's rate */

/* Splits segment si of lease l at id x (inside it); room reserved. */
static void seg_split(struct lease *l, size_t si, uint64_t x)
{
    memmove(&l->segs[si + 2], &l->segs[si + 1], (l->nseg - si - 1) * sizeof *l->segs);
    l->segs[si + 1] = l->segs[si];
    l->segs[si].hi = l->segs[si + 1].lo = x;
    l->nseg++;
}

/* The other copy of a segment with a twin: its lease and index. */
static struct lease *mirror(struct sched *s, const struct seg *g, size_t *mi)
{
    return lease_find(&s->w[g->twin], g->lo, mi);
}

/* Makes p..q-1 (inside segment *si of l) a segment of its own, and so its
 * other copy too. 0, or -1 with nothing changed. */
static int isolate(struct sched *s, struct lease *l, size_t *si, uint64_t p, uint64_t q)
{
    const struct seg *g = &l->segs[*si];
    size_t splits = (p > g->lo) + (q < g->hi), mi = 0;
    if (!splits)
        return 0;
    struct lease *m = g->twin >= 0 ? mirror(s, g, &mi) : NULL;
    if ((m && lease_reserve(m, splits) < 0) || lease_reserve(l, splits) < 0)
        return -1;
    if (q < l->segs[*si].hi) {
        seg_split(l, *si, q);
        if (m)
            seg_split(m, mi, q);
    }
    if (p > l->segs[*si].lo) {
        seg_split(l, *si, p);
        if (m)
            seg_split(m, mi, p);
        (*si)++;
    }
    return 0;
}

/* Takes segment si out of worker wk's lease l, and the lease when empty. */
static void seg_remove(struct worker *wk, struct lease *l, size_t si)
{
    l->held -= seg_len(&l->segs[si]);
    memmove(&l->segs[si], &l->segs[si + 1], (l->nseg - si - 1) * sizeof *l->segs);
    if (--l->nseg == 0)
        lease_drop(wk, l);
}

/* Room for an item that goes back with this many attempts. */
static int requeue_reserve(struct sched *s, uint32_t attempts)
{
    if (attempts < s->o.max_attempts)
        return segq_reserve(&s->q, 1);
    return base_grow((void **)&s->aside, &s->capaside, s->naside + 1, sizeof *s->aside);
}

/* Items held by nobody any more go back to the queue's front, or aside. */
static void requeue(struct sched *s, uint64_t lo, uint64_t hi, uint32_t attempts)
{
    s->leased -= hi - lo;
    if (attempts < s->o.max_attempts) {
        segq_push_front(&s->q, lo, hi, attempts);
        s->queued += hi - lo;
        s->requeued += hi - lo;
        return;
    }
    struct sched_aside *last = s->naside ? &s->aside[s->naside - 1] : NULL;
    if (last && last->hi == lo && last->attempts == attempts)
        last->hi = hi;
    else
        s->aside[s->naside++] = (struct sched_aside){lo, hi, attempts};
    s->set_aside += hi - lo;
}

/* Takes worker wi's lease l back (deadline or loss): items with a copy
 * elsewhere stay there, the others go back with one attempt more; with
 * revoke, the worker's late commit of them will be STALE. */
static int take_back(struct sched *s, unsigned wi, struct lease *l, bool revoke)
{
    struct worker *wk = &s->w[wi];
    while (l->nseg) {
        struct seg g = l->segs[l->nseg - 1];
        if (g.twin < 0 && requeue_reserve(s, g.attempts + 1) < 0)
            return -1;
        if (revoke && base_runs_reserve(&wk->revoked, 1) < 0)
            return -1;
        size_t mi;
        if (g.twin >= 0)
            mirror(s, &g, &mi)->segs[mi].twin = -1;
        else
            requeue(s, g.lo, g.hi, g.attempts + 1);
        if (revoke) {
            base_runs_add(&wk->revoked, g.lo, g.hi);
            wk->st.expired += seg_len(&g);
        }
        l->held -= seg_len(&g);
        l->nseg--;
    }
    lease_drop(wk, l);
    return 0;
}

int sched_expire(struct sched *s, int64_t now, struct cohort_err *err)
{
    if (now < s->next_deadline)
        return 0;
    int64_t next = INT64_MAX;
    for (unsigned wi = 0; wi < s->nw; wi++) {
        struct worker *wk = &s->w[wi];
        for (size_t li = 0; li < wk->nlease;) {
            struct lease *l = &wk->leases[li];
            if (l->deadline > now) {
                next = l->deadline < next ? l->deadline : next;
                li++;
            } else if (take_back(s, wi, l, true) < 0) {
                return sched_nomem(err); /* next_deadline stays: the next call goes on */
            }
        }
    }
    s->next_deadline = next;
    return 0;
}

/* Worker wk did `done` items by now: its rate, measured over at least 1
 * ms of its busy time, its first one over at least SCHED_FIRST_SAMPLE_MS
 * (on a millisecond clock a shorter first sample can be off by 2x, and the
 * first lease sized from it would hold up to twice the target). Short
 * intervals add up, items and busy time alike. */
static void measure(struct sched *s, struct worker *wk, int64_t now, uint64_t done)
{
    if (!done || !wk->active)
        return;
    wk->pending += done;
    wk->pending_ms += now - wk->busy_since; /* busy time only: a grant restarts the clock */
    wk->busy_since = now;
    if (wk->pending_ms < (wk->rate > 0 ? 1 : SCHED_FIRST_SAMPLE_MS)) {
        wk->probes += wk->rate == 0;
        return;
    }
    double sample = (double)wk->pending / (double)wk->pending_ms;
    sched_set_rate(s, wk, wk->rate > 0 ? wk->rate + RATE_WEIGHT * (sample - wk->rate) : sample);
    wk->pending = 0;
    wk->pending_ms = 0;
}

/* What commit and fail do to p..q-1, held by worker wi in segment si of l:
 * 0, or -1 when out of memory (nothing changed). */
typedef int piece_fn(struct sched *s, unsigned wi, struct lease *l, size_t si, uint64_t p,
                     uint64_t q);

static int commit_piece(struct sched *s, unsigned wi, struct lease *l, size_t si, uint64_t p,
                        uint64_t q)
{
    int32_t t = l->segs[si].twin;
    if (t >= 0 && base_runs_reserve(&s->w[t].revoked, 1) < 0)
        return -1;
    if (isolate(s, l, &si, p, q) < 0)
        return -1;
    if (t >= 0) { /* the other copy loses: its holder's commit is STALE */
        size_t mi;
        struct lease *m = mirror(s, &l->segs[si], &mi);
        base_runs_add(&s->w[t].revoked, p, q);
        seg_remove(&s->w[t], m, mi);
    }
    seg_remove(&s->w[wi], l, si);
    s->committed += q - p;
    s->leased -= q - p;
    s->w[wi].st.committed += q - p;
    return 0;
}

static int fail_piece(struct sched *s, unsigned wi, struct lease *l, size_t si, uint64_t p,
                      uint64_t q)
{
    struct seg g = l->segs[si];
    if (g.twin < 0 && requeue_reserve(s, g.attempts + 1) < 0)
        return -1;
    if (isolate(s, l, &si, p, q) < 0)
        return -1;
    size_t mi;
    if (g.twin >= 0) /* the other copy goes on alone */
        mirror(s, &l->segs[si], &mi)->segs[mi].twin = -1;
    else
        requeue(s, p, q, g.attempts + 1);
    seg_remove(&s->w[wi], l, si);
    s->w[wi].st.failed += q - p;
    return 0;
}

/* How many ids from ids[i] on run on by one, all below limit. */
static size_t run_len(const uint64_t *ids, size_t i, size_t n, uint64_t limit)
{
    size_t j = i + 1;
    while (j < n && ids[j] == ids[j - 1] + 1 && ids[j] < limit)
        j++;
    return j - i;
}

static void note(struct sched_verdict *v, unsigned char *verdicts, size_t i, size_t len,
                 enum sched_verdict_code code, uint64_t id)
{
    uint64_t *count = code == SCHED_V_TAKEN ? &v->taken : code == SCHED_V_STALE ? &v->stale
                                                                               : &v->bad;
    if (*count == 0 && code == SCHED_V_STALE)
        v->first_stale = id;
    if (*count == 0 && code >= SCHED_V_NOT_HELD)
        v->first_bad = id;
    *count += len;
    if (verdicts)
        memset(verdicts + i, code, len);
}

/* Classifies ids[0..n-1] for worker wi and applies fn to those it holds.
 * *bad_code: why the first bad id is bad. */
static int apply(struct sched *s, unsigned wi, const uint64_t *ids, size_t n, piece_fn *fn,
                 struct sched_verdict *v, unsigned char *verdicts, int *bad_code)
{
    struct worker *wk = &s->w[wi];
    for (size_t i = 0, len; i < n; i += len) {
        uint64_t p = ids[i], end;
        size_t si;
        struct lease *l = p < s->n ? lease_find(wk, p, &si) : NULL;
        enum sched_verdict_code code = SCHED_V_TAKEN;
        if (l) {
            len = run_len(ids, i, n, l->segs[si].hi);
            if (fn(s, wi, l, si, p, p + len) < 0)
                return SCHED_ENOMEM;
        } else if (p < s->n && (end = base_runs_end(&wk->revoked, p)) != 0) {
            len = run_len(ids, i, n, end);
            code = SCHED_V_STALE;
        } else {
            len = 1;
            code = p < s->n ? SCHED_V_NOT_HELD : SCHED_V_OUT_OF_RANGE;
            if (v->bad == 0)
                *bad_code = code;
        }
        note(v, verdicts, i, len, code, p);
    }
    return SCHED_OK;
}

static int probe_piece(struct sched *s, unsigned wi, struct lease *l, size_t si, uint64_t p,
                       uint64_t q)
{
    (void)s, (void)wi, (void)l, (void)si, (void)p, (void)q;
    return 0;
}

enum give_mode { GIVE_FAIL, GIVE_COMMIT, GIVE_PROBE };

/* The common part of commit, fail and the probe of an all-or-nothing
 * commit: checks, expiry, apply, the result. */
static int give(struct sched *s, unsigned w, int64_t now, const uint64_t *ids, size_t n,
                struct sched_verdict *vp, unsigned char *verdicts, struct cohort_err *err,
                enum give_mode mode)
{
    static piece_fn *const fns[] = {fail_piece, commit_piece, probe_piece};
    struct sched_verdict v = {0};
    int rc = sched_worker_ok(s, w, err), bad_code = 0;
    if (!rc && n && !ids)
        rc = cohort_fail(err, "no ids given for %zu items", n);
    if (!rc)
        rc = sched_expire(s, now, err);
    if (!rc && apply(s, w, ids, n, fns[mode], &v, verdicts, &bad_code) < 0)
        rc = sched_nomem(err);
    if (vp)
        *vp = v;
    if (rc)
        return rc;
    if (mode != GIVE_PROBE)
        s->w[w].st.stale += v.stale;
    if (mode == GIVE_COMMIT)
        measure(s, &s->w[w], now, v.taken + v.stale);
    if (v.bad && bad_code == SCHED_V_OUT_OF_RANGE)
        return cohort_fail(err, "id %" PRIu64 " is out of range: the queue has %" PRIu64
                           " items (ids 0 to %" PRIu64 ")%s", v.first_bad, s->n, s->n - 1,
                           v.bad > 1 ? ", and other ids were bad too" : "");
    if (v.bad)
        return cohort_fail(err, "id %" PRIu64 " is not leased to worker %u (never leased to "
                           "it, or already done)%s", v.first_bad, w,
                           v.bad > 1 ? ", and other ids were bad too" : "");
    return v.stale ? SCHED_STALE : SCHED_OK;
}

int sched_commit(struct sched *s, unsigned w, int64_t now, const uint64_t *ids, size_t n,
                 struct sched_verdict *v, unsigned char *verdicts, struct cohort_err *err)
{
    return give(s, w, now, ids, n, v, verdicts, err, GIVE_COMMIT);
}

int sched_commit_all(struct sched *s, unsigned w, int64_t now, const uint64_t *ids, size_t n,
                     struct sched_verdict *v, unsigned char *verdicts, struct cohort_err *err)
{
    for (size_t i = 1; i < n; i++) {
        if (ids[i] > ids[i - 1])
            continue;
        if (v)
            *v = (struct sched_verdict){0};
        return cohort_fail(err, "ids of an all-or-nothing commit must be ascending, with "
                           "none twice (id %" PRIu64 " after %" PRIu64 ")", ids[i], ids[i - 1]);
    }
    int rc = give(s, w, now, ids, n, v, verdicts, err, GIVE_PROBE);
    if (rc != SCHED_OK)
        return rc;
    return give(s, w, now, ids, n, v, verdicts, err, GIVE_COMMIT);
}

int sched_fail(struct sched *s, unsigned w, int64_t now, const uint64_t *ids, size_t n,
               struct sched_verdict *v, unsigned char *verdicts, struct cohort_err *err)
{
    return give(s, w, now, ids, n, v, verdicts, err, GIVE_FAIL);
}

int sched_extend(struct sched *s, unsigned w, int64_t now, struct cohort_err *err)
{
    int rc = sched_worker_ok(s, w, err);
    if (!rc)
        rc = sched_expire(s, now, err);
    for (size_t li = 0; !rc && li < s->w[w].nlease; li++)
        s->w[w].leases[li].deadline = sched_deadline(s, now);
    return rc;
}

int sched_worker_lost(struct sched *s, unsigned w, int64_t now, struct cohort_err *err)
{
    int rc = sched_worker_ok(s, w, err);
    if (!rc)
        rc = sched_expire(s, now, err);
    struct worker *wk = &s->w[w];
    while (!rc && wk->nlease)
        if (take_back(s, w, &wk->leases[wk->nlease - 1], false) < 0)
            rc = sched_nomem(err);
    if (rc)
        return rc;
    wk->revoked.n = 0;
    sched_deactivate(s, wk);
    wk->lost = true;
    return 0;
}

int sched_worker_join(struct sched *s, unsigned w, struct cohort_err *err)
{
    if (w >= s->nw)
        return sched_worker_ok(s, w, err);
    if (!s->w[w].lost)
        return cohort_fail(err, "worker %u joins, but it is not lost", w);
    s->w[w].lost = false;
    return 0;
}

int sched_tick(struct sched *s, int64_t now, int64_t *next, struct cohort_err *err)
{
    s->started = true;
    int rc = sched_expire(s, now, err);
    *next = s->next_deadline;
    return rc;
}
