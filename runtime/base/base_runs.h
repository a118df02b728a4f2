/* base_runs.h - sorted runs of ids: a set of uint64 ids kept as an array of
 * sorted, disjoint, non-adjacent runs lo..hi-1, with the lower bound that
 * finds a run in it (and, for any array of structs sorted by a uint64
 * field, the same search). The work scheduler's ids taken back from a
 * worker, the journal's committed ids and the stream placement's ring use
 * it, so the search and the coalescing insert are written once. */
#ifndef COHORT_BASE_RUNS_H
#define COHORT_BASE_RUNS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct base_run {
    uint64_t lo, hi; /* ids lo..hi-1 */
};

/* r[0..n-1]: ascending, disjoint, and never touching (r[i].hi <
 * r[i+1].lo); room for cap. {0} is the empty set. */
struct base_runs {
    struct base_run *r;
    size_t n, cap;
};

/* The index of the first of the n elements at a, each stride bytes and
 * sorted ascending by the uint64_t at byte off of each, whose key is at
 * or above key (n: none). Inline, so that a constant stride and offset
 * make it as quick as a search written for one type. */
static inline size_t base_lower_bound(const void *a, size_t n, size_t stride, size_t off,
                                      uint64_t key)
{
    const unsigned char *p = (const unsigned char *)a + off;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        uint64_t k;
        memcpy(&k, p + m * stride, sizeof k);
        if (k < key)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* The index of the first run of s that ends at or after id (its hi >= id;
 * s->n: none). */
static inline size_t base_runs_from(const struct base_runs *s, uint64_t id)
{
    return base_lower_bound(s->r, s->n, sizeof *s->r, offsetof(struct base_run, hi), id);
}

/* Makes room in s for more runs than it holds: 0, or -1 with errno ENOMEM
 * (s unchanged). */
int base_runs_reserve(struct base_runs *s, size_t more);

/* Adds ids lo..hi-1 (lo < hi) to s, merged with every run they overlap or
 * touch: at most one run more, so base_runs_reserve(s, 1) must have
 * succeeded first. Adding above every id costs no search. */
void base_runs_add(struct base_runs *s, uint64_t lo, uint64_t hi);

/* The end (hi) of the run of s that holds id, or 0 when id is not in s. */
uint64_t base_runs_end(const struct base_runs *s, uint64_t id);

/* 1 when some of ids lo..hi-1 (lo < hi) are in s, *first the lowest such;
 * else 0. */
int base_runs_overlap(const struct base_runs *s, uint64_t lo, uint64_t hi, uint64_t *first);

/* Frees s's array; s is the empty set after. */
void base_runs_free(struct base_runs *s);

#endif
