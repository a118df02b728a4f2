/* test_place_same.c - the placement of streams (runtime/streams/place.h)
 * decides as the eager one did: seeded random sequences of calls (joins,
 * deaths, adds, removes, releases prompt, late and bogus, load reports,
 * leases running out, shedding; equal and unequal capacities and costs,
 * from 1e-150 to 1e12) are each digested (every call's result, every
 * action, then every stream's owner and epoch and every worker's load and
 * bound to the bit) and compared with the digests the eager placement gave
 * (the ring rebuilt at every join and death, every settle, room check,
 * death and candidate list a scan of all workers or streams), recorded
 * before the ring became lazy and the scans went through per-worker lists
 * and a tree of loads. The set's own check runs all along. Then a set of
 * the most workers, 131,072, checked for its properties. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place.h"
#include "tap.h"

#define MAX_PENDING 200000

struct run {
    struct place *p;
    uint64_t digest, rng;
    int64_t now;
    uint32_t nw;
    int nk;
    bool *dead;
    struct pending { uint32_t w; int k; uint64_t epoch; } *rv; /* REVOKEs unanswered */
    size_t nrv;
};

static long checks_failed;
static char first_failure[600];

static uint64_t rnd(struct run *r)
{
    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    return r->rng;
}

static unsigned pick(struct run *r, unsigned n)
{
    return (unsigned)(rnd(r) % n);
}

static void eat(struct run *r, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        r->digest = (r->digest ^ ((v >> (8 * i)) & 0xff)) * UINT64_C(0x100000001b3);
}

static void eat_double(struct run *r, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    eat(r, v);
}

static const char *key(int k)
{
    static char b[4][32];
    static int n;
    char *s = b[n++ % 4];
    snprintf(s, 32, "s%d", k);
    return s;
}

/* The actions into the digest; REVOKEs wait for an answer. */
static void drain(struct run *r)
{
    const struct place_act *a;
    size_t n = place_actions(r->p, &a);
    for (size_t i = 0; i < n; i++) {
        eat(r, a[i].type);
        eat(r, a[i].worker);
        eat(r, a[i].epoch);
        eat(r, (uint64_t)atoi(a[i].key + 1));
        if (a[i].type == PLACE_REVOKE && r->nrv < MAX_PENDING)
            r->rv[r->nrv++] = (struct pending){a[i].worker, atoi(a[i].key + 1), a[i].epoch};
    }
}

/* A call's result, its actions, and now and then the set's own check. */
static void took(struct run *r, int rc)
{
    struct cohort_err e;
    eat(r, (uint64_t)(int64_t)rc);
    drain(r);
    if (pick(r, 16) == 0 && place_check(r->p, &e) != 0 && !checks_failed++)
        snprintf(first_failure, sizeof first_failure, "%s", e.msg);
}

/* The REVOKE i answered with a release (late ones are no-ops). */
static void answer(struct run *r, size_t i)
{
    struct cohort_err e;
    struct pending v = r->rv[i];
    r->rv[i] = r->rv[--r->nrv];
    took(r, place_release(r->p, v.w, key(v.k), v.epoch, &e));
}

static void answer_all(struct run *r)
{
    while (r->nrv)
        answer(r, r->nrv - 1);
}

static void tick(struct run *r, int64_t by)
{
    struct cohort_err e;
    int64_t next;
    r->now += by;
    took(r, place_tick(r->p, r->now, &next, &e));
    eat(r, (uint64_t)next);
}

static void start(struct run *r, uint32_t nw, const struct place_opts *o, uint64_t seed)
{
    struct cohort_err e;
    memset(r, 0, sizeof *r);
    r->rng = seed;
    r->digest = UINT64_C(0xcbf29ce484222325);
    r->nw = nw;
    r->dead = calloc(nw, sizeof *r->dead);
    r->rv = malloc(MAX_PENDING * sizeof *r->rv);
    if (place_new(nw, o, &r->p, &e) != PLACE_OK || !r->dead || !r->rv)
        abort();
}

/* Every stream's owner and epoch, every worker's load and bound, the
 * totals; the digest. */
static uint64_t finish(struct run *r)
{
    for (int k = 0; k < r->nk; k++) {
        uint32_t w = UINT32_MAX;
        uint64_t epoch = 0;
        eat(r, place_owner(r->p, key(k), &w, &epoch));
        eat(r, w);
        eat(r, epoch);
    }
    for (uint32_t w = 0; w < r->nw; w++) {
        eat_double(r, place_load(r->p, w));
        eat_double(r, place_bound(r->p, w));
    }
    struct place_status st;
    place_status(r->p, &st);
    eat(r, st.streams);
    eat(r, st.moving);
    eat(r, st.unplaced);
    eat(r, st.workers);
    eat_double(r, st.total_cost);
    eat_double(r, st.total_cap);
    eat(r, st.moves);
    place_free(r->p);
    free(r->dead);
    free(r->rv);
    return r->digest;
}

/* ---- the scenarios ------------------------------------------------------ */

/* One random call of many kinds on worker w and stream k; costs and
 * capacities from costs[] and caps[]. */
static void churn_op(struct run *r, const double *costs, int ncosts, const double *caps,
                     int ncaps)
{
    struct cohort_err e;
    uint32_t w = pick(r, r->nw);
    int k = (int)pick(r, (unsigned)r->nk), c = (int)pick(r, 100);
    uint32_t ow;
    uint64_t ep;
    if (c < 30) {
        took(r, place_add(r->p, key(k), costs[pick(r, (unsigned)ncosts)], &e));
    } else if (c < 38) {
        took(r, place_remove(r->p, key(k), &e));
    } else if (c < 41 && !r->dead[w]) {
        r->dead[w] = true;
        took(r, place_lost(r->p, w, &e));
    } else if (c < 46 && r->dead[w]) {
        r->dead[w] = false;
        took(r, place_join(r->p, w, caps[pick(r, (unsigned)ncaps)], r->now, &e));
    } else if (c < 66 && r->nrv) {
        answer(r, pick(r, (unsigned)r->nrv));
    } else if (c < 69 && place_owner(r->p, key(k), &ow, &ep)) {
        took(r, place_release(r->p, ow, key(k), ep, &e)); /* given up unasked */
    } else if (c < 71) {
        took(r, place_release(r->p, w, key(k), pick(r, 50), &e));
    } else if (c < 80 && place_owner(r->p, key(k), &ow, &ep)) {
        took(r, place_report(r->p, ow, key(k), (double)pick(r, 100), &e));
    } else if (c < 92) {
        for (uint32_t x = 0; x < r->nw; x++) /* most are heard from */
            if (!r->dead[x] && pick(r, 8))
                took(r, place_renew(r->p, x, r->now, &e));
    } else {
        tick(r, pick(r, 2500));
    }
}

static uint64_t churn(uint64_t seed, uint32_t nw, int nk, int ops, const struct place_opts *o,
                      const double *costs, int ncosts, const double *caps, int ncaps)
{
    struct run r;
    struct cohort_err e;
    start(&r, nw, o, seed);
    r.nk = nk;
    for (uint32_t w = 0; w < nw; w++)
        took(&r, place_join(r.p, w, caps[w % (uint32_t)ncaps], 0, &e));
    for (int i = 0; i < ops; i++)
        churn_op(&r, costs, ncosts, caps, ncaps);
    answer_all(&r);
    tick(&r, 1);
    return finish(&r);
}

/* Nodes of 8 workers of capacities 1:2:4 in turn, all joined, then nk
 * streams of cost 1; nodes die and come back with streams in place, more
 * streams come and go; every REVOKE answered at once. */
static uint64_t nodes(uint64_t seed, uint32_t nw, int nk)
{
    struct run r;
    struct cohort_err e;
    const double caps[3] = {1, 2, 4};
    start(&r, nw, NULL, seed);
    r.nk = nk + nk / 4;
    for (uint32_t w = 0; w < nw; w++)
        took(&r, place_join(r.p, w, caps[w % 3], 0, &e));
    for (int k = 0; k < nk; k++)
        took(&r, place_add(r.p, key(k), 1.0, &e));
    for (int round = 0; round < 6; round++) {
        uint32_t node = pick(&r, nw / 8);
        for (uint32_t w = 8 * node; w < 8 * node + 8; w++)
            took(&r, place_lost(r.p, w, &e));
        answer_all(&r);
        for (int i = 0; i < nk / 16; i++)
            took(&r, pick(&r, 3) ? place_add(r.p, key((int)pick(&r, (unsigned)r.nk)), 1.0, &e)
                                 : place_remove(r.p, key((int)pick(&r, (unsigned)r.nk)), &e));
        answer_all(&r);
        for (uint32_t w = 8 * node; w < 8 * node + 8; w++)
            took(&r, place_join(r.p, w, caps[w % 3], r.now, &e));
        answer_all(&r);
    }
    return finish(&r);
}

/* Workers that stop renewing lose their streams together at a tick and
 * join again when heard from; owners report loads, some far above the
 * rest, and shed them. */
static uint64_t leases(uint64_t seed, uint32_t nw, int nk)
{
    struct run r;
    struct cohort_err e;
    struct place_opts o = {.lease_ms = 3000, .shed_after_ms = 1000, .epsilon = 0.5};
    start(&r, nw, &o, seed);
    r.nk = nk;
    for (uint32_t w = 0; w < nw; w++)
        took(&r, place_join(r.p, w, 1 + pick(&r, 3), 0, &e));
    for (int k = 0; k < nk; k++)
        took(&r, place_add(r.p, key(k), 0.5 + pick(&r, 4), &e));
    for (int round = 0; round < 12; round++) {
        for (int k = 0; k < nk; k++) {
            uint32_t w;
            uint64_t ep;
            if (place_owner(r.p, key(k), &w, &ep))
                took(&r, place_report(r.p, w, key(k), pick(&r, 20) ? 1 : 40 + pick(&r, 40), &e));
        }
        uint32_t quiet = pick(&r, nw);
        for (uint32_t w = 0; w < nw; w++)
            if ((w + nw - quiet) % nw >= nw / 5) /* a fifth go quiet */
                took(&r, place_renew(r.p, w, r.now + 2000, &e));
        tick(&r, 2000);
        tick(&r, 1500);
        if (pick(&r, 2))
            answer_all(&r);
        for (uint32_t w = 0; w < nw; w++)
            took(&r, place_renew(r.p, w, r.now, &e));
        answer_all(&r);
    }
    return finish(&r);
}

/* The most workers a set takes, few points each: all join before any
 * stream, then a node dies. Properties, not digests (the eager placement
 * took hours at this size): every stream owned, none moving; only the
 * dead node's streams move; no worker above its bound but one holding a
 * single stream; the set's check holds. */
static void most_workers(void)
{
    struct place *p;
    struct cohort_err e;
    struct place_opts o = {.vnodes = 4};
    const double caps[3] = {1, 2, 4};
    enum { NS = 300000 };
    static int32_t before[NS];
    ok(place_new(PLACE_MAX_WORKERS + 1, &o, &p, &e) == PLACE_EINVAL,
       "%u workers: refused (%s)", PLACE_MAX_WORKERS + 1, e.msg);
    if (!ok(place_new(PLACE_MAX_WORKERS, &o, &p, &e) == PLACE_OK, "%u workers: a set",
            PLACE_MAX_WORKERS))
        return;
    const struct place_act *a;
    for (uint32_t w = 0; w < PLACE_MAX_WORKERS; w++)
        place_join(p, w, caps[w % 3], 0, &e);
    for (int k = 0; k < NS; k++)
        place_add(p, key(k), 1.0, &e);
    place_actions(p, &a);
    uint32_t w;
    uint64_t ep;
    long over = 0, moved = 0, others = 0, held = 0;
    for (int k = 0; k < NS; k++)
        before[k] = place_owner(p, key(k), &w, &ep) ? (int32_t)w : -1;
    for (w = 16; w < 24; w++) /* node 2 */
        place_lost(p, w, &e);
    place_actions(p, &a);
    for (int k = 0; k < NS; k++) {
        int32_t now = place_owner(p, key(k), &w, &ep) ? (int32_t)w : -1;
        held += before[k] >= 16 && before[k] < 24;
        moved += now != before[k];
        others += now != before[k] && !(before[k] >= 16 && before[k] < 24);
    }
    for (w = 0; w < PLACE_MAX_WORKERS; w++)
        over += place_load(p, w) > place_bound(p, w) * (1 + 1e-12) && place_load(p, w) > 1.5;
    struct place_status st;
    place_status(p, &st);
    ok(st.streams == NS && st.moving == 0 && st.unplaced == 0 && others == 0 && moved == held &&
           over == 0 && place_check(p, &e) == 0,
       "%u workers (1:2:4, 4 points a unit), %d streams, node 2 dead: %ld streams moved, the %ld "
       "it held; %ld others; %zu moving, %zu unplaced; %ld workers over their bound with more "
       "than one stream; the set's check: %s",
       PLACE_MAX_WORKERS, NS, moved, held, others, st.moving, st.unplaced, over,
       place_check(p, &e) == 0 ? "holds" : e.msg);
    place_free(p);
}

int main(void)
{
    static const double costs[] = {1, 1, 1, 0.5, 2, 3.25, 0.01, 7};
    static const double caps[] = {1, 2, 4, 0.3, 7.5};
    static const double wild_costs[] = {1e12, 1e-90, 1, 3e-7, 1e12, 0.1, 1e-150};
    static const double wild_caps[] = {1e6, 1e-150, 1, 1e-120, 2.5, 1e6, 3e-9};
    struct place_opts o = {.lease_ms = 5000, .shed_after_ms = 3000};
    struct place_opts tight = {.epsilon = 0.01, .vnodes = 3, .lease_ms = 4000};
    struct place_opts loose = {.epsilon = 100, .vnodes = 1, .lease_ms = 4000};
    static const double two_costs[] = {1, 50};
    struct {
        const char *what;
        uint64_t got, want;
    } t[] = {
        {"churn: 40 workers, 1,500 streams, 30,000 calls",
         churn(1, 40, 1500, 30000, &o, costs, 8, caps, 5), UINT64_C(0x93625136ae93e3b3)},
        {"churn, epsilon 0.01 and 3 vnodes: 24 workers, 400 streams",
         churn(2, 24, 400, 20000, &tight, costs, 8, caps, 5), UINT64_C(0x9ccad15307904157)},
        {"churn, epsilon 100 and 1 vnode: 24 workers, 400 streams",
         churn(3, 24, 400, 20000, &loose, costs, 8, caps, 5), UINT64_C(0x6c41efe68d54a59d)},
        {"churn, costs 1e-150 to 1e12, capacities 1e-150 to 1e6",
         churn(4, 32, 600, 20000, &o, wild_costs, 7, wild_caps, 7), UINT64_C(0x12e6b9fd9a065c45)},
        {"nodes: 512 workers (1:2:4), 6,000 streams, 6 nodes die and come back",
         nodes(5, 512, 6000), UINT64_C(0x47ce63ccb1c531cb)},
        {"nodes: 64 workers, 100 streams (fewer streams than room)",
         nodes(6, 64, 100), UINT64_C(0x703f46db4874ee52)},
        {"leases: 100 workers, 2,000 streams, a fifth silent at a time, shedding",
         leases(7, 100, 2000), UINT64_C(0x60ba93ef031405eb)},
        {"churn, epsilon 0.01, costs 1 and 50: 1,100 workers (long walks past 1,024 with room)",
         churn(8, 1100, 2000, 1500, &tight, two_costs, 2, caps, 3), UINT64_C(0xee56f49972c748e4)},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        ok(t[i].got == t[i].want, "%s: digest 0x%016" PRIx64 " (recorded 0x%016" PRIx64 ")",
           t[i].what, t[i].got, t[i].want);
    ok(checks_failed == 0, "the set's own check held all along (%s)",
       checks_failed ? first_failure : "no failure");
    most_workers();
    return tap_done();
}
