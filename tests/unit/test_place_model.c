/* test_place_model.c - a randomized model check of the placement of
 * streams (runtime/streams/place.h) on a simulated clock: 10,000 random
 * adds, removes, deaths, joins, releases (prompt, late, voluntary and
 * bogus), load reports, workers that stop renewing and come back, and
 * time passing. From the actions alone it checks that no stream ever has
 * two owners (an ASSIGN only after the owner released it, died or its
 * lease ran out), that epochs only grow, that a REVOKE names the owner at
 * its epoch, and that every worker that still believes it owns a stream
 * given to another holds an older epoch (it can tell it is stale). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place.h"
#include "tap.h"

#define NK 300
#define NW 8
#define OPS 10000
#define LEASE_MS 5000

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static unsigned pick(unsigned n)
{
    return (unsigned)(rnd() % n);
}

struct revoke {
    int k;
    uint64_t e;
};

struct sim {
    bool dead, stopped, expired;
    int64_t renewed;
    uint64_t holds[NK];        /* the epoch it believes it owns key k at; 0: none */
    struct revoke rv[4 * NK];  /* REVOKEs it has not answered */
    int nrv;
};

static struct sim sim[NW];
static int own[NK];            /* the owner by the actions; -1: none */
static uint64_t last_epoch[NK];
static long violations, assigns, revokes, stale_beliefs;
static char first_violation[640];

static const char *key(int k)
{
    static char b[4][32];
    static int n;
    char *s = b[n++ % 4];
    snprintf(s, 32, "cam-%d", k);
    return s;
}

static void violation(const char *what, int k)
{
    if (!violations++)
        snprintf(first_violation, sizeof first_violation, "%s (key %d)", what, k);
}

/* Whether worker x has a REVOKE of k at e waiting. */
static bool told(int x, int k, uint64_t e)
{
    for (int i = 0; i < sim[x].nrv; i++)
        if (sim[x].rv[i].k == k && sim[x].rv[i].e == e)
            return true;
    return false;
}

static void drain(struct place *p)
{
    const struct place_act *a;
    size_t n = place_actions(p, &a);
    for (size_t i = 0; i < n; i++) {
        int k = atoi(a[i].key + 4), w = (int)a[i].worker;
        if (a[i].type == PLACE_ASSIGN) {
            assigns++;
            if (own[k] >= 0)
                violation("ASSIGN while another owns it", k);
            if (a[i].epoch <= last_epoch[k])
                violation("an epoch that did not grow", k);
            if (sim[w].dead || sim[w].expired)
                violation("ASSIGN to a dead or expired worker", k);
            for (int x = 0; x < NW; x++)
                if (x != w && sim[x].holds[k]) {
                    stale_beliefs++;
                    if (sim[x].holds[k] >= a[i].epoch ||
                        !(sim[x].expired || sim[x].stopped || told(x, k, sim[x].holds[k])))
                        violation("another worker still believes it owns it, not fenced", k);
                }
            own[k] = w;
            last_epoch[k] = a[i].epoch;
            sim[w].holds[k] = a[i].epoch;
        } else {
            revokes++;
            bool notice = sim[w].expired && sim[w].holds[k] == a[i].epoch;
            if (!notice && (own[k] != w || a[i].epoch != last_epoch[k]))
                violation("REVOKE not to the owner at its epoch", k);
            if (!sim[w].dead && sim[w].nrv < 4 * NK)
                sim[w].rv[sim[w].nrv++] = (struct revoke){k, a[i].epoch};
        }
    }
}

/* Worker w answers its oldest REVOKE. */
static void release_one(struct place *p, int w)
{
    struct cohort_err e;
    struct revoke r = sim[w].rv[0];
    memmove(sim[w].rv, sim[w].rv + 1, (size_t)--sim[w].nrv * sizeof r);
    bool current = own[r.k] == w && last_epoch[r.k] == r.e;
    int rc = place_release(p, (uint32_t)w, key(r.k), r.e, &e);
    if (rc == PLACE_OK && current)
        own[r.k] = -1;
    else if (rc != (current ? PLACE_OK : PLACE_NOOP))
        violation("a release answered wrongly", r.k);
    if (sim[w].holds[r.k] == r.e)
        sim[w].holds[r.k] = 0;
    drain(p);
}

static void time_passes(struct place *p, int64_t *now, int64_t by)
{
    struct cohort_err e;
    *now += by;
    for (int w = 0; w < NW; w++)
        if (!sim[w].dead && !sim[w].stopped && !sim[w].expired) {
            place_renew(p, (uint32_t)w, *now, &e);
            sim[w].renewed = *now;
        }
    for (int w = 0; w < NW; w++)
        if (!sim[w].dead && !sim[w].expired && *now >= sim[w].renewed + LEASE_MS) {
            sim[w].expired = true; /* its lease ran out: it owns nothing now */
            for (int k = 0; k < NK; k++)
                if (own[k] == w)
                    own[k] = -1;
        }
    int64_t next;
    place_tick(p, *now, &next, &e);
    drain(p);
}

static void one_op(struct place *p, int64_t *now)
{
    struct cohort_err e;
    int w = (int)pick(NW), k = (int)pick(NK), r = (int)pick(100);
    if (r < 30) {
        place_add(p, key(k), 0.5 + pick(6) * 0.5, &e);
    } else if (r < 40) {
        place_remove(p, key(k), &e);
    } else if (r < 43 && !sim[w].dead) { /* dies: its connection closes */
        place_lost(p, (uint32_t)w, &e);
        memset(&sim[w], 0, sizeof sim[w]);
        sim[w].dead = true;
        for (int j = 0; j < NK; j++)
            own[j] = own[j] == w ? -1 : own[j];
    } else if (r < 47 && sim[w].dead) {
        sim[w] = (struct sim){.renewed = *now};
        place_join(p, (uint32_t)w, 1.0 + pick(2), *now, &e);
    } else if (r < 70 && sim[w].nrv && !sim[w].stopped) {
        release_one(p, w);
    } else if (r < 73 && sim[w].holds[k] && own[k] == w && !sim[w].stopped) {
        if (place_release(p, (uint32_t)w, key(k), sim[w].holds[k], &e) == PLACE_OK) {
            own[k] = -1; /* gives it up unasked */
            sim[w].holds[k] = 0;
        }
    } else if (r < 75) { /* a release of what it does not own at that epoch */
        int rc = place_release(p, (uint32_t)w, key(k), UINT64_MAX - pick(3), &e);
        if (rc != PLACE_EINVAL)
            violation("a bogus release was taken", k);
    } else if (r < 82 && sim[w].holds[k] && !sim[w].stopped) {
        place_report(p, (uint32_t)w, key(k), (double)pick(100), &e);
    } else if (r < 84 && !sim[w].dead) {
        sim[w].stopped = !sim[w].stopped;
        if (!sim[w].stopped) { /* resumes: heard from again */
            sim[w].expired = false;
            sim[w].renewed = *now;
            place_renew(p, (uint32_t)w, *now, &e);
        }
    } else {
        time_passes(p, now, pick(3000));
    }
    drain(p);
    if (place_check(p, &e) != 0)
        violation(e.msg, -1);
}

int main(void)
{
    struct place_opts o = {.lease_ms = LEASE_MS, .shed_after_ms = 4000};
    struct place *p;
    struct cohort_err e;
    place_new(NW, &o, &p, &e);
    for (int k = 0; k < NK; k++)
        own[k] = -1;
    for (int w = 0; w < NW; w++)
        place_join(p, (uint32_t)w, 1.0, 0, &e);
    int64_t now = 0;
    for (int i = 0; i < OPS; i++)
        one_op(p, &now);
    time_passes(p, &now, LEASE_MS + 1); /* every stopped worker's lease runs out */
    long kept = 0;
    for (int k = 0; k < NK; k++) {
        uint32_t w;
        uint64_t ep;
        kept += place_owner(p, key(k), &w, &ep) && sim[w].expired;
    }
    ok(kept == 0, "after a lease with no word from them, no stopped worker holds a stream, "
                  "revoked ones included (%ld held)", kept);
    for (int w = 0; w < NW; w++) /* everyone answers everything */
        sim[w].stopped = false;
    for (int round = 0; round < 50; round++)
        for (int w = 0; w < NW; w++)
            while (sim[w].nrv)
                release_one(p, w);
    ok(violations == 0, "%d random operations: no stream with two owners, epochs only grow, "
                        "every REVOKE to the owner at its epoch (%ld ASSIGNs, %ld REVOKEs; %s)",
       OPS, assigns, revokes, violations ? first_violation : "no violation");
    ok(stale_beliefs > 0, "the check saw %ld streams given on while a stopped worker still "
                          "believed it owned them, each with an older epoch", stale_beliefs);
    struct place_status st;
    place_status(p, &st);
    long owned = 0;
    for (int k = 0; k < NK; k++)
        owned += own[k] >= 0;
    ok(st.moving == 0 && (long)st.streams == owned,
       "in the end every stream has an owner and none is moving (%zu streams, %ld owned)",
       st.streams, owned);
    place_free(p);
    return tap_done();
}
