/* test_sched.c - the work coordinator's scheduling and lease logic
 * (runtime/work/work_sched.h) under a simulated clock: exactly-once commits
 * through random deaths, hangs, failures and speculation; lease sizes that
 * follow each worker's speed and shrink at the end, with the makespan
 * against the ideal and a static split; deadlines and extend; attempts and
 * the items set aside; resume and bad input (the budget of leases a
 * second: test_sched_budget.c). No sleeps, no real time. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "work_sched.h"
#include "tap.h"

#define CAP 4096

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

static int chance(double p)
{
    return (double)(rnd() >> 11) / 9007199254740992.0 < p;
}

/* ---- 1. a random simulation: every item committed exactly once ---- */

enum { IDLE, BUSY, HUNG, DEAD, DONE };

struct sw {
    double ms_per_item;
    int state;
    int64_t wake;
    uint64_t cur[CAP], next[CAP];
    size_t ncur, nnext;
};

struct sim {
    struct sched *s;
    uint64_t n;
    unsigned nw;
    struct sw *w;
    unsigned char *done; /* times committed, per id */
    uint64_t committed, deaths, hangs, stale_late, fails;
    char why[600];       /* the first broken rule */
};

static int broken(struct sim *m, const char *what, uint64_t id)
{
    if (!m->why[0])
        snprintf(m->why, sizeof m->why, "%s (id %" PRIu64 ")", what, id);
    return -1;
}

/* Leases into ids; checks what came is new to the worker and not done. */
static int sim_lease(struct sim *m, unsigned wi, int64_t t, uint64_t *ids, size_t *n,
                     int64_t *wait_until)
{
    struct sched_grant g;
    struct cohort_err err;
    struct sw *w = &m->w[wi];
    int rc = sched_lease(m->s, wi, t, ids, CAP, &g, &err);
    *n = 0;
    *wait_until = g.wait_until;
    if (rc == SCHED_WAIT && g.wait_until <= t)
        return broken(m, "wait_until not after now", 0);
    if (rc != SCHED_OK)
        return rc;
    *n = g.n;
    for (size_t i = 0; i < g.n; i++) {
        if (ids[i] >= m->n || m->done[ids[i]])
            return broken(m, "an id out of range or already committed was leased", ids[i]);
        for (size_t j = 0; ids != w->cur && j < w->ncur; j++)
            if (w->cur[j] == ids[i])
                return broken(m, "an id handed twice to the same worker", ids[i]);
    }
    return SCHED_OK;
}

static void start(struct sw *w, int64_t t)
{
    w->state = BUSY;
    w->wake = t + (int64_t)ceil((double)w->ncur * w->ms_per_item);
}

static int sim_commit(struct sim *m, unsigned wi, int64_t t, const uint64_t *ids, size_t n,
                      int late)
{
    unsigned char v[CAP];
    struct cohort_err err;
    int rc = sched_commit(m->s, wi, t, ids, n, NULL, v, &err);
    if (rc < 0)
        return broken(m, err.msg, 0);
    for (size_t i = 0; i < n; i++) {
        if (v[i] == SCHED_V_TAKEN && ++m->done[ids[i]] > 1)
            return broken(m, "an id committed twice", ids[i]);
        m->committed += v[i] == SCHED_V_TAKEN;
        m->stale_late += late && v[i] == SCHED_V_STALE;
        if (late && v[i] != SCHED_V_STALE)
            return broken(m, "a hung worker's late commit was not STALE", ids[i]);
    }
    return 0;
}

/* Commits the current batch, failing a random part of it now and then. */
static int finish_batch(struct sim *m, unsigned wi, int64_t t, double p_fail)
{
    struct sw *w = &m->w[wi];
    uint64_t keep[CAP], give[CAP];
    size_t nk = 0, ng = 0;
    int failing = chance(p_fail);
    for (size_t i = 0; i < w->ncur; i++) {
        if (failing && chance(0.5))
            give[ng++] = w->cur[i];
        else
            keep[nk++] = w->cur[i];
    }
    struct cohort_err err;
    if (ng && sched_fail(m->s, wi, t, give, ng, NULL, NULL, &err) < 0)
        return broken(m, err.msg, 0);
    m->fails += ng;
    return sim_commit(m, wi, t, keep, nk, 0);
}

static int step_busy(struct sim *m, unsigned wi, int64_t t, int64_t timeout, double p_fail)
{
    struct sw *w = &m->w[wi];
    struct cohort_err err;
    if (chance(0.02)) { /* dies: its batches are gone */
        m->deaths++;
        w->state = DEAD;
        w->nnext = 0;
        w->wake = t + 1 + (int64_t)(rnd() % 3000);
        return sched_worker_lost(m->s, wi, t, &err) < 0 ? broken(m, err.msg, 0) : 0;
    }
    if (w->state == BUSY && chance(0.02)) { /* stops past its deadline */
        m->hangs++;
        w->state = HUNG;
        w->wake = t + timeout + 1 + (int64_t)(rnd() % (uint64_t)timeout);
        return 0;
    }
    if (w->state == HUNG) {
        w->state = IDLE;
        w->nnext = 0;
        return sim_commit(m, wi, t, w->cur, w->ncur, 1);
    }
    if (finish_batch(m, wi, t, p_fail) < 0)
        return -1;
    w->state = IDLE;
    if (w->nnext) {
        memcpy(w->cur, w->next, w->nnext * sizeof *w->cur);
        w->ncur = w->nnext;
        w->nnext = 0;
        start(w, t);
    }
    return 0;
}

static int step_idle(struct sim *m, unsigned wi, int64_t t)
{
    struct sw *w = &m->w[wi];
    int64_t until;
    int rc = sim_lease(m, wi, t, w->cur, &w->ncur, &until);
    if (rc == SCHED_FINISHED) {
        w->state = DONE;
        w->wake = INT64_MAX;
    } else if (rc == SCHED_WAIT) {
        w->wake = until;
    } else if (rc == SCHED_OK) {
        start(w, t);
        if (chance(0.3) && sim_lease(m, wi, t, w->next, &w->nnext, &until) < 0) /* prefetch */
            return -1;
    }
    return rc < 0 ? -1 : 0;
}

static int sim_step(struct sim *m, unsigned wi, int64_t t, int64_t timeout, double p_fail)
{
    struct sw *w = &m->w[wi];
    struct cohort_err err;
    if (w->state == DEAD) {
        w->state = IDLE;
        return sched_worker_join(m->s, wi, &err) < 0 ? broken(m, err.msg, 0) : 0;
    }
    if (w->state == BUSY || w->state == HUNG)
        return step_busy(m, wi, t, timeout, p_fail);
    return step_idle(m, wi, t);
}

static int sim_invariants(struct sim *m)
{
    struct sched_status st;
    struct cohort_err err;
    if (sched_check(m->s, &err) < 0)
        return broken(m, err.msg, 0);
    sched_status(m->s, &st);
    if (st.committed != m->committed ||
        st.committed + st.leased + st.queued + st.set_aside != st.total)
        return broken(m, "status counts do not add up", st.committed);
    return 0;
}

/* The end: each id committed once, or set aside and never committed. */
static int sim_final(struct sim *m)
{
    size_t na;
    const struct sched_aside *a = sched_set_aside(m->s, &na);
    for (size_t i = 0; i < na; i++)
        for (uint64_t id = a[i].lo; id < a[i].hi; id++) {
            if (m->done[id] || a[i].attempts < 3)
                return broken(m, "a set-aside id was committed or had too few attempts", id);
            m->done[id] = 2;
        }
    for (uint64_t id = 0; id < m->n; id++)
        if (!m->done[id])
            return broken(m, "an id was lost", id);
    return 0;
}

static int sim_round(uint64_t seed, struct sim *m, uint64_t *copies, uint64_t *aside)
{
    static const double speeds[][4] = {{1, 2, 4, 1}, {1, 1, 1, 0.25}, {1, 3, 0.5, 2}};
    rng_state = seed * 0x9e3779b97f4a7c15u + 1;
    unsigned nw = 2 + (unsigned)(rnd() % 5);
    uint64_t n = 50 + rnd() % 1500;
    int64_t timeout = 500 + (int64_t)(rnd() % 2500);
    double p_fail = chance(0.3) ? 0.3 : 0.03;
    struct sched_opts o = {.lease_timeout_ms = timeout, .target_ms = 50 + (int64_t)(rnd() % 250)};
    struct cohort_err err;
    memset(m, 0, sizeof *m);
    m->n = n;
    m->nw = nw;
    m->w = calloc(nw, sizeof *m->w);
    m->done = calloc(n, 1);
    if (!m->w || !m->done || sched_create(n, nw, &o, &m->s, &err) < 0)
        return broken(m, "set-up", 0);
    for (unsigned i = 0; i < nw; i++)
        m->w[i].ms_per_item = 10.0 / speeds[seed % 3][i % 4];
    int rc = 0;
    for (long steps = 0; rc == 0; steps++) {
        int64_t t = INT64_MAX;
        for (unsigned i = 0; i < nw; i++)
            t = m->w[i].wake < t ? m->w[i].wake : t;
        if (t == INT64_MAX || steps > 2000000) {
            rc = t == INT64_MAX ? sim_final(m) : broken(m, "no end", 0);
            break;
        }
        for (unsigned i = 0; i < nw && rc == 0; i++)
            if (m->w[i].wake == t)
                rc = sim_step(m, i, t, timeout, p_fail);
        if (rc == 0)
            rc = sim_invariants(m);
    }
    struct sched_status st;
    sched_status(m->s, &st);
    *copies += st.copies;
    *aside += st.set_aside;
    sched_destroy(m->s);
    free(m->w);
    free(m->done);
    return rc;
}

static void test_random(void)
{
    struct sim m;
    uint64_t copies = 0, aside = 0, deaths = 0, hangs = 0, late = 0, fails = 0;
    int failed = 0;
    for (uint64_t seed = 1; seed <= 200 && !failed; seed++) {
        failed = sim_round(seed, &m, &copies, &aside) < 0;
        deaths += m.deaths;
        hangs += m.hangs;
        late += m.stale_late;
        fails += m.fails;
        if (failed)
            ok(0, "round %" PRIu64 ": %s", seed, m.why);
    }
    ok(!failed, "200 random rounds (2-6 workers at different speeds, deaths and re-joins, "
       "hangs past the deadline, failures, speculation): every id committed exactly once or "
       "set aside, none lost, invariants after every step");
    ok(deaths > 50 && hangs > 50 && late > 0 && fails > 0 && copies > 0 && aside > 0,
       "the rounds exercised it all: %" PRIu64 " deaths, %" PRIu64 " hangs (%" PRIu64
       " late ids STALE), %" PRIu64 " ids given back, %" PRIu64 " copies, %" PRIu64
       " set aside", deaths, hangs, late, fails, copies, aside);
}

/* ---- 2. adaptive sizes and the makespan ---- */

struct run {
    int64_t makespan;
    uint64_t copies;
    double mid_size[4];  /* mean lease size in the middle third */
    uint64_t last_size[4];
};

/* Workers at speeds sp (item time item_ms / speed) pull until the end;
 * each commits its whole lease when done. */
static int run_speeds(const double *sp, unsigned nw, uint64_t n, double item_ms,
                      int64_t ideal, struct run *r)
{
    struct sched *s;
    struct cohort_err err;
    static uint64_t ids[4][CAP];
    size_t cnt[4] = {0};
    int64_t wake[4] = {0};
    double sum[4] = {0}, k[4] = {0};
    memset(r, 0, sizeof *r);
    if (sched_create(n, nw, NULL, &s, &err) < 0)
        return -1;
    struct sched_status st;
    for (sched_status(s, &st); st.committed < n; sched_status(s, &st)) {
        int64_t t = INT64_MAX;
        for (unsigned i = 0; i < nw; i++)
            t = wake[i] < t ? wake[i] : t;
        for (unsigned i = 0; i < nw; i++) {
            if (wake[i] != t)
                continue;
            if (t == INT64_MAX ||
                (cnt[i] && sched_commit(s, i, t, ids[i], cnt[i], NULL, NULL, &err) < 0)) {
                sched_destroy(s);
                return -1;
            }
            struct sched_grant g;
            int rc = sched_lease(s, i, t, ids[i], CAP, &g, &err);
            cnt[i] = rc == SCHED_OK ? g.n : 0;
            wake[i] = rc == SCHED_OK ? t + (int64_t)ceil(g.n * item_ms / sp[i])
                      : rc == SCHED_WAIT ? g.wait_until : INT64_MAX;
            if (rc == SCHED_OK && t > ideal / 3 && t < 2 * ideal / 3 && !g.copies) {
                sum[i] += g.n;
                k[i]++;
            }
            if (rc == SCHED_OK)
                r->last_size[i] = g.n;
        }
        r->makespan = t;
    }
    for (unsigned i = 0; i < nw; i++)
        r->mid_size[i] = k[i] ? sum[i] / k[i] : 0;
    r->copies = st.copies;
    sched_destroy(s);
    return 0;
}

/* One worker whose items take 0.5 ms, on the coordinator's millisecond
 * clock: each time it passes is the real time (in us here) cut to whole
 * ms, so a lease of 1.05 ms can read as 1 ms or as 2. A first rate taken
 * over the first ms or two comes out up to 2x too high, and the lease
 * sized from it holds that much more than the target. */
static void test_first_leases(void)
{
    struct sched *s;
    struct cohort_err err;
    static uint64_t ids[CAP];
    if (sched_create(200000, 1, NULL, &s, &err) < 0)
        return;
    int64_t us = 0;
    double max_ms = 0;
    for (int i = 0; i < 40; i++) {
        struct sched_grant g;
        if (sched_lease(s, 0, us / 1000, ids, CAP, &g, &err) != SCHED_OK)
            break;
        us += (int64_t)g.n * 500 + 50; /* 0.5 ms an item, 50 us a round trip */
        max_ms = g.n * 0.5 > max_ms ? g.n * 0.5 : max_ms;
        if (sched_commit(s, 0, us / 1000, ids, g.n, NULL, NULL, &err) < 0)
            break;
    }
    ok(max_ms <= 1.2 * SCHED_DEFAULT_TARGET_MS,
       "items of 0.5 ms on a millisecond clock: the largest of the first 40 leases holds %.0f "
       "ms of work (target %d, at most 1.2x)", max_ms, SCHED_DEFAULT_TARGET_MS);
    sched_destroy(s);
}

static void test_adaptive(const double *sp, unsigned nw, const char *name, unsigned fast,
                          unsigned slow)
{
    const uint64_t n = 20000;
    const double item_ms = 40;
    double speed = 0, slowest = sp[0];
    for (unsigned i = 0; i < nw; i++) {
        speed += sp[i];
        slowest = sp[i] < slowest ? sp[i] : slowest;
    }
    int64_t ideal = (int64_t)(n * item_ms / speed);
    struct run r;
    if (!ok(run_speeds(sp, nw, n, item_ms, ideal, &r) == 0, "speeds %s: the run ends", name))
        return;
    double ratio = r.mid_size[fast] / r.mid_size[slow], want = sp[fast] / sp[slow];
    ok(fabs(ratio / want - 1) < 0.2,
       "speeds %s: after warm-up, leases follow speed: %.1f vs %.1f items (%.2fx, speeds %.2fx)",
       name, r.mid_size[fast], r.mid_size[slow], ratio, want);
    int shrunk = 1;
    for (unsigned i = 0; i < nw; i++)
        shrunk &= r.last_size[i] * 4 <= r.mid_size[i] || r.last_size[i] <= 1;
    ok(shrunk, "speeds %s: the last leases are small (%" PRIu64 ", %" PRIu64 ", ... items)",
       name, r.last_size[0], r.last_size[1]);
    double c = (double)r.makespan / (double)ideal;
    ok(r.makespan <= 1.03 * (double)ideal + item_ms,
       "speeds %s: makespan %" PRId64 " ms, %.4fx the ideal %" PRId64 " ms (limit 1.03x + one "
       "item's %.0f ms), %" PRIu64 " items copied at the tail", name, r.makespan, c, ideal,
       item_ms, r.copies);
    double static_ms = ceil((double)n / nw) * item_ms / slowest;
    printf("# speeds %s: cohort %.3fx ideal, a static split (DistributedSampler) %.2fx\n", name,
           c, static_ms / (double)ideal);
}

/* ---- 3. deadlines, extend, speculation's first commit ---- */

static void test_timeout(void)
{
    struct sched *s;
    struct cohort_err err;
    struct sched_grant g;
    struct sched_verdict v;
    struct sched_status st;
    uint64_t a[64], b[64];
    int64_t next;
    struct sched_opts o = {.lease_timeout_ms = 1000, .first_lease = 10};
    sched_create(100, 2, &o, &s, &err);
    sched_lease(s, 0, 0, a, 64, &g, &err); /* worker 0 takes 0..9 and hangs */
    sched_lease(s, 1, 999, b, 64, &g, &err);
    ok(g.n == 10 && b[0] == 10, "before the deadline the hung worker's items stay its own");
    sched_tick(s, 1000, &next, &err);
    sched_status(s, &st);
    ok(st.queued == 90 && st.leased == 10 && next == 1999,
       "at the deadline they are back in the queue (queued %" PRIu64 ", next deadline %" PRId64
       ")", st.queued, next);
    sched_lease(s, 1, 1000, b, 64, &g, &err);
    ok(g.n >= 1 && b[0] == 0, "they go to another worker first (it got %zu from id %" PRIu64 ")",
       g.n, b[0]);
    int rc = sched_commit(s, 0, 1500, a, 10, &v, NULL, &err);
    ok(rc == SCHED_STALE && v.stale == 10 && v.taken == 0 && v.first_stale == 0,
       "the hung worker's late commit is STALE (%d, %" PRIu64 " stale)", rc, v.stale);
    rc = sched_lease(s, 0, 2000, a, 64, &g, &err);
    size_t na = g.n;
    sched_extend(s, 0, 2900, &err);
    sched_tick(s, 3500, &next, &err);
    rc = sched_commit(s, 0, 3800, a, na, &v, NULL, &err);
    ok(rc == SCHED_OK && v.taken == na && next <= 3900,
       "extend at 2900 keeps a lease of 2000 alive at 3800 (commit %d)", rc);
    sched_destroy(s);

    /* Speculation: worker 1 sits on id 1; worker 0, idle, gets a copy. */
    sched_create(3, 2, NULL, &s, &err);
    sched_lease(s, 0, 0, a, 64, &g, &err);
    sched_lease(s, 1, 0, b, 64, &g, &err);
    sched_commit(s, 0, 10, a, 1, NULL, NULL, &err);
    sched_lease(s, 0, 10, a, 64, &g, &err);
    sched_commit(s, 0, 20, a, 1, NULL, NULL, &err);
    rc = sched_lease(s, 0, 20, a, 64, &g, &err);
    ok(rc == SCHED_OK && g.n == 1 && g.copies == 1 && a[0] == 1,
       "an idle worker gets a copy of an overdue worker's item");
    ok(sched_lease(s, 0, 20, a + 1, 63, &g, &err) == SCHED_WAIT &&
       sched_lease(s, 1, 20, b + 1, 63, &g, &err) == SCHED_WAIT,
       "no third copy, and no copy to a worker of an item it holds");
    ok(sched_commit(s, 0, 25, a, 1, NULL, NULL, &err) == SCHED_OK &&
       sched_commit(s, 1, 30, b, 1, &v, NULL, &err) == SCHED_STALE && v.first_stale == 1,
       "the first commit wins, the other holder's is STALE");
    ok(sched_lease(s, 1, 30, b, 64, &g, &err) == SCHED_FINISHED && sched_check(s, &err) == 0,
       "then the queue is finished");
    sched_destroy(s);
}

/* ---- 4. attempts ---- */

static void test_attempts(void)
{
    struct sched *s;
    struct cohort_err err;
    struct sched_grant g;
    uint64_t ids[16], seen3 = 0;
    sched_create(10, 1, NULL, &s, &err);
    int fails = 0;
    for (int64_t t = 0; fails < 3 && t < 100; t++) {
        sched_lease(s, 0, t, ids, 1, &g, &err);
        if (ids[0] == 3)
            fails += sched_fail(s, 0, t, ids, 1, NULL, NULL, &err) == SCHED_OK;
        else
            sched_commit(s, 0, t, ids, 1, NULL, NULL, &err);
    }
    size_t na;
    const struct sched_aside *a = sched_set_aside(s, &na);
    ok(fails == 3 && na == 1 && a[0].lo == 3 && a[0].hi == 4 && a[0].attempts == 3,
       "an item given back 3 times is set aside and listed with its attempts");
    int rc;
    for (int64_t t = 100; (rc = sched_lease(s, 0, t, ids, 16, &g, &err)) == SCHED_OK; t++) {
        for (size_t i = 0; i < g.n; i++)
            seen3 |= ids[i] == 3;
        sched_commit(s, 0, t, ids, g.n, NULL, NULL, &err);
    }
    struct sched_status st;
    sched_status(s, &st);
    ok(rc == SCHED_FINISHED && !seen3 && st.committed == 9 && st.set_aside == 1,
       "it is never leased again, and the queue finishes (%" PRIu64 " committed)", st.committed);
    sched_destroy(s);

    struct sched_opts o = {.max_attempts = 2};
    sched_create(5, 1, &o, &s, &err);
    for (int i = 0; i < 2; i++) {
        sched_lease(s, 0, i, ids, 16, &g, &err);
        sched_worker_lost(s, 0, i, &err);
        sched_worker_join(s, 0, &err);
    }
    a = sched_set_aside(s, &na);
    ok(na == 1 && a[0].lo == 0 && a[0].attempts == 2 && sched_check(s, &err) == 0,
       "an item whose worker dies twice, with max_attempts 2, is set aside");
    sched_destroy(s);
}

/* ---- 5. resume, bad input ---- */

static void test_resume_and_bad_input(void)
{
    struct sched *s;
    struct cohort_err err;
    struct sched_grant g;
    struct sched_verdict v;
    struct sched_status st;
    uint64_t ids[128];
    unsigned char vd[4];
    sched_create(100, 2, NULL, &s, &err);
    struct sched_span done[] = {{50, 60}, {0, 10}, {5, 20}, {99, 100}};
    ok(sched_mark_committed(s, done, 4, &err) == 0, "resume: committed spans marked");
    sched_status(s, &st);
    ok(st.committed == 31 && st.queued == 69, "31 committed, 69 queued");
    int marked = 0, rc;
    for (int64_t t = 0; (rc = sched_lease(s, 0, t, ids, 128, &g, &err)) == SCHED_OK; t += 5) {
        for (size_t i = 0; i < g.n; i++)
            marked |= ids[i] < 20 || (ids[i] >= 50 && ids[i] < 60) || ids[i] == 99;
        sched_commit(s, 0, t + 1, ids, g.n, NULL, NULL, &err);
    }
    ok(rc == SCHED_FINISHED && !marked, "only the rest is leased");
    ok(sched_mark_committed(s, done, 1, &err) == SCHED_EINVAL && strstr(err.msg, "before"),
       "marking after leasing began: %s", err.msg);
    sched_destroy(s);

    ok(sched_create(0, 4, NULL, &s, &err) == SCHED_EINVAL && !s && strstr(err.msg, "0 items"),
       "n_items 0: %s", err.msg);
    ok(sched_create(SCHED_MAX_ITEMS + 1, 4, NULL, &s, &err) == SCHED_EINVAL,
       "too many items: %s", err.msg);
    ok(sched_create(10, 0, NULL, &s, &err) == SCHED_EINVAL, "no workers: %s", err.msg);
    sched_create(100, 4, NULL, &s, &err);
    struct sched_span far = {90, 101};
    ok(sched_mark_committed(s, &far, 1, &err) == SCHED_EINVAL && strstr(err.msg, "100 items"),
       "a committed span out of range: %s", err.msg);
    ok(sched_lease(s, 4, 0, ids, 8, &g, &err) == SCHED_EINVAL && strstr(err.msg, "worker 4"),
       "a worker out of range: %s", err.msg);
    ok(sched_lease(s, 0, 0, ids, 0, &g, &err) == SCHED_EINVAL, "cap 0: %s", err.msg);
    sched_lease(s, 0, 0, ids, 8, &g, &err);
    uint64_t mixed[] = {ids[0], 7, 1000, 8};
    rc = sched_commit(s, 0, 1, mixed, 4, &v, vd, &err);
    ok(rc == SCHED_EINVAL && v.taken == 1 && v.bad == 3 && v.first_bad == 7 &&
           vd[0] == SCHED_V_TAKEN && vd[1] == SCHED_V_NOT_HELD &&
           vd[2] == SCHED_V_OUT_OF_RANGE && strstr(err.msg, "id 7 is not leased to worker 0"),
       "ids not held are named, the held one is committed: %s", err.msg);
    rc = sched_commit(s, 0, 2, mixed + 2, 1, &v, NULL, &err);
    ok(rc == SCHED_EINVAL && strstr(err.msg, "id 1000 is out of range"), "%s", err.msg);
    ok(sched_commit(s, 0, 3, mixed, 1, &v, NULL, &err) == SCHED_EINVAL && v.bad == 1,
       "a second commit of the same id is refused: %s", err.msg);
    ok(sched_commit(s, 3, 3, ids, 1, &v, NULL, &err) == SCHED_EINVAL,
       "a commit by a worker that never leased it: %s", err.msg);
    sched_worker_lost(s, 1, 4, &err);
    ok(sched_lease(s, 1, 5, ids, 8, &g, &err) == SCHED_EINVAL && strstr(err.msg, "lost"),
       "a lost worker must join again: %s", err.msg);
    ok(sched_worker_join(s, 2, &err) == SCHED_EINVAL, "a live worker cannot join: %s", err.msg);
    ok(sched_check(s, &err) == 0, "the queue is intact after all that");
    sched_destroy(s);
}

int main(void)
{
    test_random();
    test_adaptive((const double[]){1, 2, 4}, 3, "1:2:4", 2, 0);
    test_adaptive((const double[]){1, 1, 1, 0.25}, 4, "1:1:1:0.25", 0, 3);
    test_first_leases();
    test_timeout();
    test_attempts();
    test_resume_and_bad_input();
    return tap_done();
}
