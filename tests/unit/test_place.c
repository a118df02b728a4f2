/* test_place.c - the placement of streams on workers
 * (runtime/streams/place.h) under a simulated clock: the load bound with
 * equal and unequal capacities, what moves when a worker leaves or joins,
 * ownership and epochs through releases, deaths, leases running out and
 * shedding by reported load (a worker's sum drifted by rounding too), bad
 * input, and a randomized model check of 10,000 operations: never two
 * owners, epochs only grow. No real time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place.h"
#include "tap.h"

#define NW 16

static const char *key(int i)
{
    static char k[8][64];
    static int n;
    char *b = k[n++ % 8];
    snprintf(b, 64, "rtsp://cam%d/main", i);
    return b;
}

/* Who owns what, from the actions alone (released at once when asked). */
struct view {
    int owner[20000];
    uint64_t epoch[20000];
    long assigns, revokes;
};

static int key_index(const char *k)
{
    return atoi(k + strlen("rtsp://cam"));
}

/* Applies the actions to v; with release, every REVOKE is answered with a
 * release at once (as a prompt worker would). Returns the count of moves
 * (ASSIGNs of keys that had an owner before). */
static long drain(struct place *p, struct view *v, int release)
{
    long moved = 0;
    for (int round = 0; round < 100; round++) {
        const struct place_act *a;
        size_t n = place_actions(p, &a);
        if (!n)
            break;
        struct place_act *copy = malloc(n * sizeof *copy);
        memcpy(copy, a, n * sizeof *copy);
        for (size_t i = 0; i < n; i++) {
            int k = key_index(copy[i].key);
            if (copy[i].type == PLACE_ASSIGN) {
                moved += v->epoch[k] != 0;
                v->owner[k] = (int)copy[i].worker;
                v->epoch[k] = copy[i].epoch;
                v->assigns++;
            } else {
                v->revokes++;
            }
        }
        for (size_t i = 0; release && i < n; i++)
            if (copy[i].type == PLACE_REVOKE) {
                struct cohort_err e;
                place_release(p, copy[i].worker, copy[i].key, copy[i].epoch, &e);
            }
        free(copy);
    }
    return moved;
}

/* max over live workers of load / bound's base (cap share x total), i.e.
 * the load against the capacity-weighted mean. */
static double worst(const struct place *p, int nw)
{
    struct place_status st;
    place_status(p, &st);
    double m = 0;
    for (int w = 0; w < nw; w++) {
        double b = place_bound(p, (uint32_t)w);
        if (b > 0 && place_load(p, (uint32_t)w) / b * 1.25 > m)
            m = place_load(p, (uint32_t)w) / b * 1.25;
    }
    return m;
}

static struct place *fresh(int nw, const double *caps, struct view *v)
{
    struct place *p;
    struct cohort_err e;
    memset(v, 0, sizeof *v);
    if (place_new((uint32_t)nw, NULL, &p, &e) != 0)
        return NULL;
    for (int w = 0; w < nw; w++)
        place_join(p, (uint32_t)w, caps ? caps[w] : 1.0, 0, &e);
    return p;
}

static void balance(void)
{
    struct view *v = calloc(1, sizeof *v);
    struct cohort_err e;
    struct place *p = fresh(NW, NULL, v);
    for (int i = 0; i < 200; i++)
        place_add(p, key(i), 1.0, &e);
    drain(p, v, 1);
    double m = worst(p, NW);
    ok(m <= 1.25 + 1e-9, "200 streams on 16 workers (8 GPUs x 2): max load %.3f x the mean "
                         "(bound 1.25)", m);
    ok(v->assigns == 200 && v->revokes == 0,
       "each stream assigned once, none revoked (%ld assigns, %ld revokes)", v->assigns,
       v->revokes);

    /* a worker removed: only its streams move, plus at most 5 % */
    int victim = 5;
    long had = 0;
    for (int i = 0; i < 200; i++)
        had += v->owner[i] == victim;
    place_lost(p, (uint32_t)victim, &e);
    long moved = drain(p, v, 1);
    long strays = 0;
    for (int i = 0; i < 200; i++)
        strays += v->owner[i] == victim;
    ok(strays == 0 && moved >= had && moved - had <= 10,
       "worker %d lost: its %ld streams moved, %ld others (at most 5 %% = 10), none left on it",
       victim, had, moved - had);
    m = worst(p, NW);
    ok(m <= 1.25 + 1e-9, "after it, max load %.3f x the mean", m);

    /* it joins again: about its fair share, no more (+ 5 %) */
    place_join(p, (uint32_t)victim, 1.0, 0, &e);
    moved = drain(p, v, 1);
    long got = 0;
    for (int i = 0; i < 200; i++)
        got += v->owner[i] == victim;
    ok(got >= 6 && got <= 13 && moved <= 13 + 10,
       "a worker joining takes about its fair share of 12.5: %ld streams, %ld moved in all "
       "(at most 12.5 + 5 %%)", got, moved);
    m = worst(p, NW);
    ok(m <= 1.25 + 1e-9, "after it, max load %.3f x the mean", m);
    ok(place_check(p, &e) == 0, "loads and totals add up (%s)", e.msg);
    place_free(p);

    double caps[NW];
    for (int w = 0; w < NW; w++)
        caps[w] = w % 2 ? 2.0 : 1.0;
    p = fresh(NW, caps, v);
    for (int i = 0; i < 200; i++)
        place_add(p, key(i), 1.0, &e);
    drain(p, v, 1);
    double one = 0, two = 0;
    for (int w = 0; w < NW; w++)
        *(w % 2 ? &two : &one) += place_load(p, (uint32_t)w);
    m = worst(p, NW);
    ok(m <= 1.25 + 1e-9 && two / one > 2 / 1.25 && two / one < 2 * 1.25,
       "capacities 1:2: the cap-2 workers hold %.2f x what the cap-1 ones do (2 within the "
       "bound), max load %.3f x its share", two / one, m);
    place_free(p);
    free(v);
}

static void ownership(void)
{
    struct view *v = calloc(1, sizeof *v);
    struct cohort_err e;
    struct place *p = fresh(4, NULL, v);
    ok(place_add(p, key(1), 1.0, &e) == PLACE_OK && place_add(p, key(1), 3.0, &e) == PLACE_NOOP,
       "adding a stream twice: the second is a no-op");
    drain(p, v, 0);
    uint32_t w = UINT32_MAX;
    uint64_t ep = 0;
    bool has = place_owner(p, key(1), &w, &ep);
    ok(has && (int)w == v->owner[1] && ep == v->epoch[1] && ep > 0,
       "its owner and epoch, as assigned (worker %u, epoch %llu)", w, (unsigned long long)ep);
    int rc = place_release(p, (w + 1) % 4, key(1), ep, &e);
    ok(rc == PLACE_EINVAL && strstr(e.msg, "not owned by worker"),
       "a release by another worker: refused (%s)", e.msg);
    ok(place_remove(p, key(99), &e) == PLACE_NOOP, "removing an unknown stream: a no-op");
    ok(place_remove(p, key(1), &e) == PLACE_OK, "removing a stream with an owner");
    const struct place_act *a;
    size_t n = place_actions(p, &a);
    ok(n == 1 && a[0].type == PLACE_REVOKE && a[0].worker == w && a[0].epoch == ep,
       "it is revoked from its owner at its epoch");
    rc = place_release(p, w, key(1), ep, &e);
    ok(rc == PLACE_OK && !place_owner(p, key(1), &w, &ep) && place_actions(p, &a) == 0,
       "released: forgotten, assigned to nobody");

    /* a worker's lease runs out: told, its streams elsewhere; it comes back */
    for (int i = 0; i < 40; i++)
        place_add(p, key(i), 1.0, &e);
    drain(p, v, 1);
    for (uint32_t k = 1; k < 4; k++)
        place_renew(p, k, 29000, &e);
    int64_t next;
    place_tick(p, 30000, &next, &e);
    n = place_actions(p, &a);
    long revoked = 0, assigned = 0, to_silent = 0;
    for (size_t i = 0; i < n; i++) {
        revoked += a[i].type == PLACE_REVOKE && a[i].worker == 0;
        assigned += a[i].type == PLACE_ASSIGN;
        to_silent += a[i].type == PLACE_ASSIGN && a[i].worker == 0;
    }
    ok(revoked > 0 && revoked == assigned && !to_silent,
       "worker 0 silent past its lease: told REVOKE for its %ld streams, each assigned to "
       "another", revoked);
    ok(place_release(p, 0, a[0].key, a[0].epoch, &e) == PLACE_NOOP,
       "its late release (an old epoch): a no-op");
    place_renew(p, 0, 31000, &e);
    ok(place_load(p, 0) > 0, "heard from again, it joins again and takes streams (%.0f)",
       place_load(p, 0));
    drain(p, v, 1);
    ok(place_check(p, &e) == 0, "the set's loads and totals add up after all that (%s)",
       e.msg);
    place_free(p);

    /* a silent owner whose only stream was revoked (so none counts on it) */
    p = fresh(2, NULL, v);
    place_add(p, "a", 1.0, &e);
    uint32_t a_owner;
    uint64_t a_epoch;
    place_owner(p, "a", &a_owner, &a_epoch);
    place_remove(p, "a", &e);
    place_add(p, "a", 1.0, &e); /* back while its REVOKE is unanswered */
    place_renew(p, 1 - a_owner, 29000, &e);
    int64_t nx;
    place_tick(p, 30000, &nx, &e);
    has = place_owner(p, "a", &w, &ep);
    ok(has && w == 1 - a_owner && ep > a_epoch && place_check(p, &e) == 0,
       "a stream revoked from a worker that then goes silent goes to the other at its lease "
       "(worker %u, epoch %llu)", w, (unsigned long long)ep);
    place_free(p);
    free(v);
}

/* nw workers of capacity 1 holding ns streams of cost 1, placed and
 * seen in v, with shed_after_ms 5000 and leases that do not end. */
static struct place *shedding_set(uint32_t nw, int ns, struct view *v)
{
    struct cohort_err e;
    struct place_opts o = {.shed_after_ms = 5000, .lease_ms = 1000000};
    struct place *p;
    place_new(nw, &o, &p, &e);
    for (uint32_t w = 0; w < nw; w++)
        place_join(p, w, 1.0, 0, &e);
    for (int i = 0; i < ns; i++)
        place_add(p, key(i), 1.0, &e);
    drain(p, v, 1);
    return p;
}

static void shedding(void)
{
    struct view *v = calloc(1, sizeof *v);
    struct cohort_err e;
    struct place *p = shedding_set(4, 40, v);
    for (int i = 0; i < 40; i++) /* worker 2's streams cost 5x what the others' do */
        place_report(p, (uint32_t)v->owner[i], key(i), v->owner[i] == 2 ? 50.0 : 10.0, &e);
    int64_t next;
    place_tick(p, 100, &next, &e);
    const struct place_act *a;
    ok(place_actions(p, &a) == 0 && next == 5100,
       "a worker over its bound by reported load: nothing yet, due at 5100 (%lld)",
       (long long)next);
    place_tick(p, 5100, &next, &e);
    size_t n = place_actions(p, &a);
    bool only2 = n > 0;
    for (size_t i = 0; i < n; i++)
        only2 &= a[i].type == PLACE_REVOKE && a[i].worker == 2;
    ok(only2, "after shed_after_ms it sheds: %zu REVOKEs, all to worker 2", n);
    struct place_act *copy = malloc(n * sizeof *copy);
    memcpy(copy, a, n * sizeof *copy);
    for (size_t i = 0; i < n; i++)
        place_release(p, 2, copy[i].key, copy[i].epoch, &e);
    free(copy);
    long moved = drain(p, v, 1);
    ok(moved == (long)n, "each shed stream goes to another worker (%ld)", moved);
    place_free(p);
    free(v);
}

/* Two workers holding two streams each (a and b: their numbers; *wa the
 * first's worker), as shedding_set makes them. */
static struct place *two_by_two(struct view *v, uint32_t *wa, int a[2], int b[2])
{
    memset(v, 0, sizeof *v);
    struct place *p = shedding_set(2, 4, v);
    int na = 0, nb = 0;
    for (int i = 0; i < 4; i++) {
        if (v->owner[i] == v->owner[0] && na < 2)
            a[na++] = i;
        else if (v->owner[i] != v->owner[0] && nb < 2)
            b[nb++] = i;
    }
    *wa = (uint32_t)v->owner[0];
    ok(na == 2 && nb == 2, "4 streams on 2 workers: 2 each (%d and %d)", na, nb);
    return p;
}

/* Reports load[i] for stream s[i] of worker w[i] (n of them), then a tick
 * at 100: whether its next moment is want and the set's check holds. */
static bool reports(struct place *p, int n, const uint32_t *w, const int *s, const double *load,
                    int64_t want, int64_t *next)
{
    struct cohort_err e;
    for (int i = 0; i < n; i++)
        place_report(p, w[i], key(s[i]), load[i], &e);
    place_tick(p, 100, next, &e);
    const struct place_act *acts;
    return place_actions(p, &acts) == 0 && *next == want && place_check(p, &e) == 0;
}

/* A worker's reported load kept as reports come drifts by rounding: near
 * its bound it is summed afresh, and so is the set's when the workers'
 * errors are more than 1e-13 of it; a sum past the largest double is
 * summed afresh too, and a bound near it still found. Each case: worker
 * A (streams a) and B (b); over its bound, a worker is timed (next 5100),
 * else next is the leases' end. */
static void drifted(void)
{
    struct view *v = calloc(1, sizeof *v);
    struct {
        const char *what;
        int n;
        int who[5];     /* 0: A's stream who_i; 1: B's */
        int which[5];
        double load[5];
        int64_t want;
    } c[] = {
        {"0.2, 1e15 then 0.1 on A (0.3), 0.1 and 0.1 on B: nobody over", 5, {0, 0, 0, 1, 1},
         {1, 0, 0, 0, 1}, {0.2, 1e15, 0.1, 0.1, 0.1}, 1000000},
        {"0.2, 1e15 then 0.1 on A, 0.55 and 0 on B: B over (0.55 of 0.85)", 5, {0, 0, 0, 1, 1},
         {1, 0, 0, 0, 1}, {0.2, 1e15, 0.1, 0.55, 0}, 5100},
        {"2^53, 47 then 0 on A (47), 79 and 0 on B: B over (79 of 126)", 5, {0, 0, 0, 1, 1},
         {1, 0, 1, 0, 1}, {0x1p53, 47, 0, 79, 0}, 5100},
        {"1e308 twice, then 1 and 1 on A, 10 and 1 on B: B over (11 of 13)", 5, {0, 0, 0, 1, 1},
         {0, 1, 0, 0, 1}, {1e308, 1e308, 1, 10, 1}, 5100},
        {"7.5e307 twice on A, nothing on B: A over", 2, {0, 0}, {0, 1}, {7.5e307, 7.5e307}, 5100},
    };
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        uint32_t wa, w[5];
        int a[2], b[2], s[5];
        struct place *p = two_by_two(v, &wa, a, b);
        for (int i = 0; i < c[k].n; i++) {
            w[i] = c[k].who[i] ? 1 - wa : wa;
            s[i] = c[k].who[i] ? b[c[k].which[i]] : a[c[k].which[i]];
        }
        int64_t next;
        bool good = reports(p, c[k].n, w, s, c[k].load, c[k].want, &next);
        ok(good, "%s: next %lld", c[k].what, (long long)next);
        place_free(p);
    }
    free(v);
}

/* A worker summed afresh while it holds a load of 2^54 loses its 1 and 1
 * in that sum: the fresh sum keeps that rounding as its error, so once
 * the big stream is shed and gone the worker is summed afresh again and
 * found over its bound (2 of 2). */
static void resummed(void)
{
    struct view *v = calloc(1, sizeof *v);
    struct cohort_err e;
    struct place *p = shedding_set(2, 12, v);
    int a = -1, b[3], nb = 0;
    for (int i = 0; i < 12; i++) {
        if (v->owner[i] == 1 && nb < 3)
            b[nb++] = i;
        else if (v->owner[i] == 0 && a < 0)
            a = i;
    }
    double loads[3] = {0x1p54, 1, 1};
    for (int i = 0; i < nb; i++)
        place_report(p, 1, key(b[i]), loads[i], &e);
    place_report(p, 0, key(a), 0, &e);
    int64_t next;
    place_tick(p, 100, &next, &e);
    drain(p, v, 1);
    place_tick(p, 6000, &next, &e); /* worker 1 sheds the 2^54 */
    long revokes = v->revokes;
    drain(p, v, 1);
    place_report(p, (uint32_t)v->owner[b[0]], key(b[0]), 0, &e);
    place_tick(p, 7000, &next, &e);
    ok(nb == 3 && a >= 0 && v->revokes == revokes + 1 && v->owner[b[0]] == 0 && next == 12000 &&
           place_check(p, &e) == 0,
       "2^54, 1 and 1 on a worker, its 2^54 shed: then over its bound with 2 (next %lld, %ld "
       "shed)", (long long)next, v->revokes - revokes);
    place_free(p);
    free(v);
}

static void bad_input(void)
{
    struct cohort_err e;
    struct place *p;
    char big[300];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = 0;
    place_new(2, NULL, &p, &e);
    ok(place_add(p, "", 1, &e) == PLACE_EINVAL && strstr(e.msg, "empty"), "empty key: %s",
       e.msg);
    ok(place_add(p, big, 1, &e) == PLACE_EINVAL && strstr(e.msg, "over 255"),
       "a 299-byte key: %s", e.msg);
    ok(place_add(p, "k", 0, &e) == PLACE_EINVAL && place_add(p, "k", NAN, &e) == PLACE_EINVAL &&
           strstr(e.msg, "cost nan"), "cost 0 or NaN: %s", e.msg);
    ok(place_join(p, 0, -1, 0, &e) == PLACE_EINVAL && place_join(p, 0, NAN, 0, &e) ==
           PLACE_EINVAL && strstr(e.msg, "capacity"), "capacity <= 0 or NaN: %s", e.msg);
    ok(place_join(p, 7, 1, 0, &e) == PLACE_EINVAL && strstr(e.msg, "0..1"),
       "an unknown worker: %s", e.msg);
    struct place_opts o = {.epsilon = -1};
    struct place *q;
    ok(place_new(2, &o, &q, &e) == PLACE_EINVAL && strstr(e.msg, "epsilon"),
       "a negative epsilon: %s", e.msg);
    place_free(p);
}

int main(void)
{
    balance();
    ownership();
    shedding();
    drifted();
    resummed();
    bad_input();
    return tap_done();
}
