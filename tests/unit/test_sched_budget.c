/* test_sched_budget.c - the work scheduler (runtime/work/work_sched.h)
 * under its budget of leases a second, on a simulated clock: 1,200 workers
 * ask for about the budget, the makespan stays within 1.03x the ideal,
 * leases timed out early hold half the timeout at most; where the budget
 * binds, leases of workers that started together are spread about the
 * budget's lease (the same calls giving the same leases), and where it
 * does not, they are not. No sleeps, no real time. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "work_sched.h"
#include "tap.h"

#define CAP 4096

/* nw workers at speeds 1:2:4 (item_ms / speed an item) pull n items
 * under o; *mid_rate is the leases a second asked for over the run's
 * middle third, *makespan its end, *requeued the items taken back. Returns
 * the ideal makespan, or -1. */
static int run_many(unsigned nw, uint64_t n, double item_ms, struct sched_opts o,
                    double *mid_rate, int64_t *makespan, uint64_t *requeued)
{
    struct sched *s;
    struct cohort_err err;
    uint64_t *ids = malloc(sizeof *ids * (size_t)nw * CAP), mid = 0;
    size_t *cnt = calloc(nw, sizeof *cnt);
    int64_t *wake = calloc(nw, sizeof *wake), ideal = 0, t = 0;
    double speed = 0;
    for (unsigned i = 0; i < nw; i++)
        speed += (double)(1u << i % 3) / item_ms;
    ideal = (int64_t)((double)n / speed);
    int rc = ids && cnt && wake ? sched_create(n, nw, &o, &s, &err) : -1;
    struct sched_status st = {0};
    for (; rc == 0 && st.committed < n; sched_status(s, &st)) {
        t = INT64_MAX;
        for (unsigned i = 0; i < nw; i++)
            t = wake[i] < t ? wake[i] : t;
        for (unsigned i = 0; rc == 0 && i < nw; i++) {
            uint64_t *mine = ids + (size_t)i * CAP;
            if (wake[i] != t)
                continue;
            if (t == INT64_MAX || (cnt[i] && sched_commit(s, i, t, mine, cnt[i], NULL, NULL,
                                                          &err) < 0)) {
                rc = -1;
                break;
            }
            struct sched_grant g;
            int got = sched_lease(s, i, t, mine, CAP, &g, &err);
            mid += t >= ideal / 3 && t < 2 * ideal / 3;
            cnt[i] = got == SCHED_OK ? g.n : 0;
            wake[i] = got == SCHED_OK ? t + (int64_t)ceil((double)g.n * item_ms / (1u << i % 3))
                      : got == SCHED_WAIT ? g.wait_until : INT64_MAX;
        }
    }
    *mid_rate = (double)mid / ((double)(2 * ideal / 3 - ideal / 3) / 1000);
    *makespan = t;
    *requeued = st.requeued;
    if (rc == 0)
        sched_destroy(s);
    free(ids);
    free(cnt);
    free(wake);
    return rc < 0 ? -1 : (int)ideal;
}

static void test_lease_budget(void)
{
    const unsigned nw = 1200;
    const double item_ms = 10;
    double rate_free, rate;
    int64_t end_free, end;
    uint64_t n = 24000000, back; /* about 86 s of the 1,200 workers' 280 items a ms */
    struct sched_opts o = {.lease_rate = 1000000};
    int ideal = run_many(nw, n, item_ms, o, &rate_free, &end_free, &back);
    if (!ok(ideal > 0, "1,200 workers without a budget: the run ends"))
        return;
    ok(rate_free > 1500, "1,200 workers with leases of 500 ms and no budget ask for %.0f leases "
       "a second (about 2,400)", rate_free);
    o.lease_rate = 200;
    if (!ok(run_many(nw, n, item_ms, o, &rate, &end, &back) == ideal,
            "1,200 workers with a budget of 200 leases a second: the run ends"))
        return;
    ok(rate <= 1.1 * 200, "with a budget of 200 leases a second they ask for %.0f a second "
       "(leases of 6 s)", rate);
    ok(end <= 1.03 * ideal + item_ms, "with the budget, makespan %" PRId64 " ms, %.4fx the "
       "ideal %d ms (limit 1.03x + one item; %.4fx without the budget)", end,
       (double)end / ideal, ideal, (double)end_free / ideal);
    o.lease_timeout_ms = 4000;
    if (!ok(run_many(nw, n, item_ms, o, &rate, &end, &back) == ideal,
            "the same with leases timed out at 4 s: the run ends"))
        return;
    ok(back == 0 && rate > 400 && rate <= 1.1 * 600,
       "leases timed out at 4 s hold at most 2 s of work, not the budget's 6 s: %.0f leases a "
       "second (about 640: the spread, cut at 2 s, only shortens them), %" PRIu64 " items "
       "taken back (none)", rate, back);
}

/* The second leases of nw workers of one speed that all started at 0
 * (1 item, 10 ms) under a budget of rate leases a second and a lease
 * timeout of timeout_ms (0: the default): their sizes. */
static int second_leases(unsigned nw, uint32_t rate, int64_t timeout_ms, uint64_t *size)
{
    struct sched *s;
    struct cohort_err err;
    struct sched_grant g;
    static uint64_t ids[CAP];
    struct sched_opts o = {.lease_rate = rate, .lease_timeout_ms = timeout_ms};
    if (sched_create(10000000, nw, &o, &s, &err) < 0)
        return -1;
    int rc = 0;
    for (unsigned i = 0; i < nw && rc == 0; i++)
        rc = sched_lease(s, i, 0, ids + i, 1, &g, &err) == SCHED_OK && g.n == 1 ? 0 : -1;
    for (unsigned i = 0; i < nw && rc == 0; i++) {
        uint64_t id = ids[i];
        rc = sched_commit(s, i, 10, &id, 1, NULL, NULL, &err) == SCHED_OK &&
                     sched_lease(s, i, 10, ids + nw, CAP - nw, &g, &err) == SCHED_OK
                 ? 0 : -1;
        size[i] = g.n;
    }
    rc = rc ? rc : sched_check(s, &err);
    sched_destroy(s);
    return rc;
}

static void test_lease_spread(void)
{
    enum { NW = 1200 };
    static uint64_t a[NW], b[NW];
    if (!ok(second_leases(NW, 200, 0, a) == 0 && second_leases(NW, 200, 0, b) == 0,
            "1,200 workers of one speed under a budget: their second leases granted"))
        return;
    uint64_t lo = UINT64_MAX, hi = 0, sum = 0, eq = 0;
    unsigned i;
    for (i = 0; i < NW; i++) {
        lo = a[i] < lo ? a[i] : lo;
        hi = a[i] > hi ? a[i] : hi;
        sum += a[i];
        eq += i && a[i] == a[i - 1];
    }
    /* 0.1 items a ms x the budget's 6 s: 600 items, spread +-25 % */
    ok(lo >= 450 && hi <= 750 && hi - lo >= 250 && eq < NW / 10,
       "leases of workers that started together are spread: %" PRIu64 " to %" PRIu64 " items "
       "(600 +- 25 %%), %" PRIu64 " equal to the one before", lo, hi, eq);
    ok(sum >= 570 * NW && sum <= 630 * NW, "their mean is the budget's lease: %.1f items (600)",
       (double)sum / NW);
    ok(memcmp(a, b, sizeof a) == 0, "the same calls give the same leases");
    /* a budget that does not bind: leases of the 500 ms target, unspread */
    if (!ok(second_leases(NW, 1000000, 0, a) == 0 && second_leases(NW, 200, 9000, b) == 0,
            "the same workers without a budget, and with one and a lease timeout of 9 s"))
        return;
    uint64_t lo_b = UINT64_MAX, hi_b = 0;
    for (lo = UINT64_MAX, hi = 0, i = 0; i < NW; i++) {
        lo = a[i] < lo ? a[i] : lo;
        hi = a[i] > hi ? a[i] : hi;
        lo_b = b[i] < lo_b ? b[i] : lo_b;
        hi_b = b[i] > hi_b ? b[i] : hi_b;
    }
    ok(lo == 50 && hi == 50, "where the budget does not bind, no spread: %" PRIu64 " to %" PRIu64
       " items (0.1 a ms x 500 ms)", lo, hi);
    ok(lo_b >= 337 && lo_b < 400 && hi_b == 450,
       "a spread lease holds at most half the lease timeout: %" PRIu64 " to %" PRIu64 " items "
       "(the budget's 6 s cut to half the timeout, 4.5 s: spread below it, never above)",
       lo_b, hi_b);
}

int main(void)
{
    test_lease_budget();
    test_lease_spread();
    return tap_done();
}
