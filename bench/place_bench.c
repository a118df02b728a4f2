/* place_bench.c - the placement of streams (runtime/streams/place.h)
 * against plain modulo hashing and against consistent hashing without a
 * load bound, on the same keys: for each count of streams and workers,
 * the most loaded worker against the mean, and the streams that move when
 * a worker dies, when one joins, and when a stream is added or removed;
 * with the time cohort's placement took. Unbounded consistent hashing is
 * the same ring as cohort's with the bound out of reach (epsilon 100),
 * so the two differ only by the bound. Unit costs, equal capacities.
 *
 *   bench/place_bench "200 2000 20000" "16 256"
 *
 * Prints a Markdown table. Pure: no sockets; the time is the process's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "place.h"

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void key(char *b, long i)
{
    snprintf(b, 48, "rtsp://cam%ld/main", i);
}

static uint64_t modulo_hash(const char *k)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * UINT64_C(0x100000001b3);
    h ^= h >> 31;
    h *= UINT64_C(0x7fb5d329728ea185);
    return h ^ (h >> 27);
}

struct result {
    double max_mean;
    long moved_death, moved_join, moved_add, moved_remove;
    double ms_fill, ms_death;
};

/* Modulo hashing: owner = hash % workers; the last one dies, or one more
 * joins. */
static void modulo(long n, int w, struct result *r)
{
    int *load = calloc((size_t)w, sizeof *load);
    char k[48];
    long moved_death = 0, moved_join = 0;
    for (long i = 0; i < n; i++) {
        key(k, i);
        uint64_t h = modulo_hash(k);
        load[h % (uint64_t)w]++;
        moved_death += h % (uint64_t)w != h % (uint64_t)(w - 1);
        moved_join += h % (uint64_t)w != h % (uint64_t)(w + 1);
    }
    int max = 0;
    for (int i = 0; i < w; i++)
        max = load[i] > max ? load[i] : max;
    moved_death -= load[w - 1]; /* the last worker dies: beyond its own */
    *r = (struct result){max / ((double)n / w), moved_death, moved_join, 0, 0, 0, 0};
    free(load);
}

static uint64_t moves(const struct place *p)
{
    struct place_status st;
    place_status(p, &st);
    return st.moves;
}

/* Releases every REVOKE until the set is still. */
static void settle(struct place *p)
{
    for (int round = 0; round < 1000; round++) {
        const struct place_act *acts;
        size_t m = place_actions(p, &acts);
        if (!m)
            break;
        struct place_act *copy = malloc(m * sizeof *copy);
        memcpy(copy, acts, m * sizeof *copy);
        struct cohort_err e;
        for (size_t i = 0; i < m; i++)
            if (copy[i].type == PLACE_REVOKE)
                place_release(p, copy[i].worker, copy[i].key, copy[i].epoch, &e);
        free(copy);
    }
}

static void ring(long n, int w, double epsilon, struct result *r)
{
    struct place_opts o = {.epsilon = epsilon, .lease_ms = INT64_MAX / 4};
    struct place *p;
    struct cohort_err e;
    char k[48];
    place_new((uint32_t)w + 1, &o, &p, &e);
    for (int i = 0; i < w; i++)
        place_join(p, (uint32_t)i, 1.0, 0, &e);
    long long t0 = now_ns();
    for (long i = 0; i < n; i++) {
        key(k, i);
        place_add(p, k, 1.0, &e);
    }
    settle(p);
    r->ms_fill = (now_ns() - t0) / 1e6;
    double max = 0;
    for (int i = 0; i < w; i++)
        max = place_load(p, (uint32_t)i) > max ? place_load(p, (uint32_t)i) : max;
    r->max_mean = max / ((double)n / w);
    double before = place_load(p, (uint32_t)w / 2);
    uint64_t m0 = moves(p);
    t0 = now_ns();
    place_lost(p, (uint32_t)w / 2, &e);
    settle(p);
    r->ms_death = (now_ns() - t0) / 1e6;
    r->moved_death = (long)(moves(p) - m0) - (long)before; /* beyond its own */
    place_join(p, (uint32_t)w / 2, 1.0, 2, &e);
    settle(p);
    m0 = moves(p);
    place_join(p, (uint32_t)w, 1.0, 3, &e); /* one more worker */
    settle(p);
    r->moved_join = (long)(moves(p) - m0);
    key(k, n);
    m0 = moves(p);
    place_add(p, k, 1.0, &e);
    settle(p);
    r->moved_add = (long)(moves(p) - m0);
    key(k, 0);
    m0 = moves(p);
    place_remove(p, k, &e);
    settle(p);
    r->moved_remove = (long)(moves(p) - m0);
    place_free(p);
}

int main(int argc, char **argv)
{
    const char *ns = argc > 1 ? argv[1] : "200 2000 20000";
    const char *ws = argc > 2 ? argv[2] : "16 256";
    printf("| streams | workers | placement | max / mean load | moved when a worker dies "
           "(beyond its own) | moved when a worker joins (its fair share) | moved by a stream "
           "added / removed | time to place all (ms) | time to handle a death (ms) |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    char nb[256], wb[256];
    snprintf(nb, sizeof nb, "%s", ns);
    for (char *sn, *n_tok = strtok_r(nb, " ", &sn); n_tok; n_tok = strtok_r(NULL, " ", &sn)) {
        long n = atol(n_tok);
        snprintf(wb, sizeof wb, "%s", ws);
        for (char *sw, *w_tok = strtok_r(wb, " ", &sw); w_tok; w_tok = strtok_r(NULL, " ", &sw)) {
            int w = atoi(w_tok);
            struct result r[3];
            modulo(n, w, &r[0]);
            ring(n, w, 100, &r[1]);
            ring(n, w, 0, &r[2]);
            const char *name[] = {"modulo (hash % workers)", "consistent hashing, unbounded",
                                  "cohort (bounded, epsilon 0.25)"};
            for (int i = 0; i < 3; i++) {
                char t1[32] = "-", t2[32] = "-", add[32] = "0 / 0";
                if (i) {
                    snprintf(t1, sizeof t1, "%.2f", r[i].ms_fill);
                    snprintf(t2, sizeof t2, "%.2f", r[i].ms_death);
                    snprintf(add, sizeof add, "%ld / %ld", r[i].moved_add, r[i].moved_remove);
                }
                printf("| %ld | %d | %s | %.3f | %ld (%.1f %%) | %ld (%.1f) | %s | %s | %s |\n", n,
                       w, name[i], r[i].max_mean, r[i].moved_death,
                       100.0 * r[i].moved_death / n, r[i].moved_join, (double)n / (w + 1), add,
                       t1, t2);
            }
        }
    }
    return 0;
}
