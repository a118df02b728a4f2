/* base_runs.c - the sorted runs of ids (see base_runs.h): their growth, the
 * coalescing insert and the look-ups built on base_runs_from. */
#include "base_runs.h"

#include <stdlib.h>

#include "base_sys.h"

int base_runs_reserve(struct base_runs *s, size_t more)
{
    return base_grow((void **)&s->r, &s->cap, s->n + more, sizeof *s->r);
}

void base_runs_add(struct base_runs *s, uint64_t lo, uint64_t hi)
{
    struct base_run *last = s->n ? &s->r[s->n - 1] : NULL;
    if (!last || last->hi < lo) { /* above every id, not touching */
        s->r[s->n++] = (struct base_run){lo, hi};
        return;
    }
    if (last->hi == lo) { /* touching the last run from above */
        last->hi = hi;
        return;
    }
    size_t i = base_runs_from(s, lo), j = i;
    while (j < s->n && s->r[j].lo <= hi) {
        if (s->r[j].lo < lo)
            lo = s->r[j].lo;
        if (s->r[j].hi > hi)
            hi = s->r[j].hi;
        j++;
    }
    if (j == i) {
        memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
        s->n++;
    } else {
        memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof *s->r);
        s->n -= j - i - 1;
    }
    s->r[i] = (struct base_run){lo, hi};
}

uint64_t base_runs_end(const struct base_runs *s, uint64_t id)
{
    size_t i = base_runs_from(s, id + 1); /* the first run that ends after id */
    return i < s->n && s->r[i].lo <= id ? s->r[i].hi : 0;
}

int base_runs_overlap(const struct base_runs *s, uint64_t lo, uint64_t hi, uint64_t *first)
{
    size_t i = base_runs_from(s, lo + 1); /* the first run that ends after lo */
    if (i < s->n && s->r[i].lo < hi) {
        *first = s->r[i].lo > lo ? s->r[i].lo : lo;
        return 1;
    }
    return 0;
}

void base_runs_free(struct base_runs *s)
{
    free(s->r);
    *s = (struct base_runs){0};
}
