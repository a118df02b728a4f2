/* streams_sim.c - a stream set at up to 131,072 workers, simulated: the
 * real placement (runtime/streams/place.h) called in the order the stream
 * coordinator (runtime/coord/streams_service.c) calls it, on a simulated clock.
 * Nothing here opens a socket; the time measured is the placement's own.
 *
 * The model:
 * - WORKERS workers, 8 a node, of capacities 1, 2 and 4 in turn; STREAMS
 *   streams of cost 1 (default 10^6).
 * - The start: every worker's JOIN, then (cohort_streams_open's barrier)
 *   every stream's ADD, sent by the workers in turn. Each request is
 *   place_renew of its sender, its actions taken, then the call and its
 *   actions taken (streams_service.c, request). The coordinator takes ROUND
 *   requests a poll round; after each round the clock moves 1 ms and
 *   place_tick runs with its actions taken (the streams service's run).
 * - A node's death: node 1's 8 connections close (place_lost each, its
 *   actions taken: on_lost), then a poll round's place_tick.
 * - The node back: its 8 workers join again (a request each: renewal,
 *   then place_join), then a poll round's place_tick; the streams they
 *   pull from the others are revoked there (their releases are not
 *   simulated).
 * - The steady state: first every stream's owner reports its load (0.9
 *   to 1.1 of its cost, by the stream's number), ROUND reports a round;
 *   then STEADY_MS poll rounds of 1 ms, each with the pings then due (each
 *   worker once a third of the 30 s lease: WORKERS / 10 a second) and
 *   REPORTS_PER_MS load reports, each by the owner of a stream taken in a
 *   scattered order (0.9 to 1.1 again): a request each (renewal, then
 *   place_report), then the round's place_tick.
 *
 * Prints one Markdown row: workers, nodes, streams; the start's time in the
 * placement (all of it, then the joins, the first add, which brings the
 * ring up to date, every add, the ticks), its ASSIGNs and REVOKEs and the
 * most load / bound of a live worker after it; the node's death: its time,
 * the streams whose owner changed, those of them that were on the dead
 * node and all the dead node held, its ASSIGNs and REVOKEs, the most load
 * / bound after it; the node back: its time, its REVOKEs; whether the
 * set's own check held after each; the steady state: the first reports'
 * time, then the placement's CPU per simulated second, the ticks' part of
 * it, its REVOKEs; the simulator's wall time and peak memory (getrusage).
 *
 *   bench/streams_sim WORKERS [STREAMS] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "place.h"

#define PER_NODE 8
#define ROUND 4096 /* requests the coordinator takes in one poll round */
#define DEAD_NODE 1
#define STEADY_MS 2000
#define REPORTS_PER_MS 10

struct sim {
    struct place *p;
    uint32_t workers;
    long streams;
    int64_t now;            /* simulated, ms */
    long assigns, revokes;  /* since last counted */
    double tick_s;
    int failed;             /* a call that did not give PLACE_OK */
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void key(char *b, long i)
{
    snprintf(b, 32, "cam-%ld", i);
}

/* The actions, as streams_service.c's tell() takes them: counted. */
static void tell(struct sim *s)
{
    const struct place_act *a;
    size_t n = place_actions(s->p, &a);
    for (size_t i = 0; i < n; i++) {
        s->assigns += a[i].type == PLACE_ASSIGN;
        s->revokes += a[i].type == PLACE_REVOKE;
    }
}

static void check(struct sim *s, int rc, int want)
{
    if (rc != want && !s->failed++)
        fprintf(stderr, "streams_sim: a call gave %d, not %d\n", rc, want);
}

/* The end of a poll round: the clock moves, leases and shedding. */
static void round_end(struct sim *s)
{
    struct cohort_err e;
    int64_t next;
    double t = now_s();
    s->now += 1;
    check(s, place_tick(s->p, s->now, &next, &e), PLACE_OK);
    tell(s);
    s->tick_s += now_s() - t;
}

/* One request of worker r: its renewal, then the call. */
static void renew(struct sim *s, uint32_t r)
{
    struct cohort_err e;
    check(s, place_renew(s->p, r, s->now, &e), PLACE_OK);
    tell(s);
}

/* Workers first to end - 1 join (capacities 1, 2, 4 by number), ROUND a
 * round: the time taken. */
static double joins(struct sim *s, uint32_t first, uint32_t end)
{
    static const double caps[3] = {1, 2, 4};
    struct cohort_err e;
    double t = now_s();
    for (uint32_t r = first; r < end; r++) {
        renew(s, r);
        check(s, place_join(s->p, r, caps[r % 3], s->now, &e), PLACE_OK);
        tell(s);
        if ((r + 1 - first) % ROUND == 0 || r + 1 == end)
            round_end(s);
    }
    return now_s() - t;
}

/* Every ADD, ROUND a round (keys made before the round is timed); the
 * first add's own time in *first. */
static double adds(struct sim *s, double *first)
{
    static char keys[ROUND][32];
    struct cohort_err e;
    double sum = 0;
    for (long base = 0; base < s->streams; base += ROUND) {
        long n = s->streams - base < ROUND ? s->streams - base : ROUND;
        for (long i = 0; i < n; i++)
            key(keys[i], base + i);
        double t = now_s();
        for (long i = 0; i < n; i++) {
            renew(s, (uint32_t)((base + i) % s->workers));
            check(s, place_add(s->p, keys[i], 1.0, &e), PLACE_OK);
            tell(s);
            if (base + i == 0)
                *first = now_s() - t;
        }
        round_end(s);
        sum += now_s() - t;
    }
    return sum;
}

/* A load near a stream's cost: 0.9 to 1.1, by its number. */
static double load_of(uint64_t i)
{
    return 0.9 + 0.01 * (double)(i * 7919 % 21);
}

/* A load report of worker w on key: its renewal, then the call (a stream
 * moving meanwhile: a no-op). */
static void report(struct sim *s, uint32_t w, const char *k, double load)
{
    struct cohort_err e;
    renew(s, w);
    int rc = place_report(s->p, w, k, load, &e);
    check(s, rc == PLACE_NOOP ? PLACE_OK : rc, PLACE_OK);
    tell(s);
}

/* Every stream's first report, by its owner, ROUND a round: the time. */
static double first_reports(struct sim *s)
{
    static char keys[ROUND][32];
    static uint32_t owner[ROUND];
    static bool owned[ROUND];
    uint64_t epoch;
    double sum = 0;
    for (long base = 0; base < s->streams; base += ROUND) {
        long n = s->streams - base < ROUND ? s->streams - base : ROUND;
        for (long i = 0; i < n; i++) {
            key(keys[i], base + i);
            owned[i] = place_owner(s->p, keys[i], &owner[i], &epoch);
        }
        double t = now_s();
        for (long i = 0; i < n; i++)
            if (owned[i])
                report(s, owner[i], keys[i], load_of((uint64_t)(base + i)));
        round_end(s);
        sum += now_s() - t;
    }
    return sum;
}

/* The steady state's STEADY_MS rounds: the placement's time in them. */
static double steady(struct sim *s)
{
    static char keys[REPORTS_PER_MS][32];
    uint32_t owner[REPORTS_PER_MS];
    double sum = 0, pings = 0;
    uint32_t next_ping = 0;
    uint64_t pick = 0, epoch;
    for (int ms = 0; ms < STEADY_MS; ms++) {
        int n = 0;
        uint64_t num[REPORTS_PER_MS];
        for (int j = 0; j < REPORTS_PER_MS; j++) { /* the reporters: what the workers know */
            num[n] = ++pick * 2654435761u % (uint64_t)s->streams;
            key(keys[n], (long)num[n]);
            n += place_owner(s->p, keys[n], &owner[n], &epoch);
        }
        double t = now_s();
        for (pings += s->workers / 10000.0; pings >= 1; pings--)
            renew(s, next_ping++ % s->workers);
        for (int j = 0; j < n; j++)
            report(s, owner[j], keys[j], load_of(num[j] + (uint64_t)ms));
        round_end(s);
        sum += now_s() - t;
    }
    return sum;
}

/* The most load / bound of a live worker. */
static double worst(const struct sim *s)
{
    double m = 0;
    for (uint32_t w = 0; w < s->workers; w++) {
        double b = place_bound(s->p, w);
        if (b > 0 && place_load(s->p, w) / b > m)
            m = place_load(s->p, w) / b;
    }
    return m;
}

/* Every stream's owner (-1: none). */
static void owners(const struct sim *s, int32_t *own)
{
    char k[32];
    for (long i = 0; i < s->streams; i++) {
        uint32_t w;
        uint64_t epoch;
        key(k, i);
        own[i] = place_owner(s->p, k, &w, &epoch) ? (int32_t)w : -1;
    }
}

static const char *checked(const struct sim *s)
{
    struct cohort_err e;
    return place_check(s->p, &e) == 0 && !s->failed ? "yes" : "NO";
}

int main(int argc, char **argv)
{
    double t0 = now_s();
    struct sim s = {.workers = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1024,
                    .streams = argc > 2 ? strtol(argv[2], NULL, 10) : 1000000};
    struct cohort_err e;
    int32_t *before = malloc(s.streams * sizeof *before), *after = malloc(s.streams * sizeof *after);
    if (s.workers < 2 * PER_NODE || s.streams < 1 || !before || !after ||
        place_new(s.workers, NULL, &s.p, &e) != PLACE_OK) {
        fprintf(stderr, "usage: streams_sim WORKERS (16 to %u) [STREAMS]\n", PLACE_MAX_WORKERS);
        free(before);
        free(after);
        return 2;
    }
    double first = 0, join_s = joins(&s, 0, s.workers), add_s = adds(&s, &first),
           start_tick = s.tick_s;
    long start_assigns = s.assigns, start_revokes = s.revokes;
    double start_worst = worst(&s);
    const char *start_ok = checked(&s);
    owners(&s, before);

    s.assigns = s.revokes = 0;
    s.tick_s = 0;
    double t = now_s();
    for (uint32_t w = DEAD_NODE * PER_NODE; w < (DEAD_NODE + 1) * PER_NODE; w++) {
        check(&s, place_lost(s.p, w, &e), PLACE_OK);
        tell(&s);
    }
    round_end(&s);
    double death_s = now_s() - t;
    owners(&s, after);
    long moved = 0, moved_dead = 0, held_dead = 0;
    for (long i = 0; i < s.streams; i++) {
        bool on_dead = before[i] / PER_NODE == DEAD_NODE;
        held_dead += on_dead;
        moved += before[i] != after[i];
        moved_dead += before[i] != after[i] && on_dead;
    }
    double death_worst = worst(&s);
    const char *death_ok = checked(&s);
    long death_assigns = s.assigns, death_revokes = s.revokes;
    s.assigns = s.revokes = 0;
    double back_s = joins(&s, DEAD_NODE * PER_NODE, (DEAD_NODE + 1) * PER_NODE);
    const char *back_ok = checked(&s);
    long back_revokes = s.revokes;
    s.revokes = 0;
    double reports_s = first_reports(&s);
    s.tick_s = 0;
    double steady_s = steady(&s), steady_tick = s.tick_s;
    const char *steady_ok = checked(&s);
    place_free(s.p);
    free(before);
    free(after);

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("| %u | %u | %ld | %.3f | %.3f | %.3f | %.3f | %.3f | %ld / %ld | %.3f | %.4f | %ld | "
           "%ld of %ld | %ld / %ld | %.3f | %.4f | %ld | %s, %s, %s, %s | %.3f | %.1f %% | %.1f %% | "
           "%ld | %.1f | %.0f |\n",
           s.workers, s.workers / PER_NODE, s.streams, join_s + add_s, join_s, first, add_s,
           start_tick, start_assigns, start_revokes, start_worst, death_s, moved, moved_dead,
           held_dead, death_assigns, death_revokes, death_worst, back_s, back_revokes, start_ok,
           death_ok, back_ok, steady_ok, reports_s, 100 * steady_s / (STEADY_MS / 1000.0),
           100 * steady_tick / (STEADY_MS / 1000.0), s.revokes, now_s() - t0,
           ru.ru_maxrss / 1024.0);
    return s.failed ? 1 : 0;
}
