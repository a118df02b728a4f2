/* journal_spans.c - the sets of committed ids (see journal_private.h): the
 * sorted runs a pass over a journal gathers in batches, since its spans
 * may come in any order (a sort and a merge per batch, so that reading
 * costs time linear in the journal); the radix sort both the batches and
 * the summary's set-aside ids use; and the balanced tree of the runs the
 * writer adds one at a time, in any order. */
#include "journal_private.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define JGATHER_MIN 4096 /* spans that wait before a merge, at least */

void jspans_free(struct jspans *s)
{
    base_runs_free(&s->runs);
    *s = (struct jspans){0};
}

#define DIGIT_BITS 11
#define DIGITS ((64 + DIGIT_BITS - 1) / DIGIT_BITS)
#define DIGIT(key, d) ((size_t)((key) >> (DIGIT_BITS * (d))) & ((1u << DIGIT_BITS) - 1))

struct jpair *jsort(struct jpair *a, struct jpair *tmp, size_t n, uint64_t *moved)
{
    size_t count[DIGITS][1u << DIGIT_BITS] = {{0}};
    if (n < 2)
        return a;
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < DIGITS; d++)
            count[d][DIGIT(a[i].key, d)]++;
    struct jpair *src = a, *dst = tmp;
    for (int d = 0; d < DIGITS; d++) {
        size_t *c = count[d];
        if (c[DIGIT(a[0].key, d)] == n) /* every key has this digit */
            continue;
        for (size_t b = 0, at = 0, k; b < 1u << DIGIT_BITS; b++, at += k) {
            k = c[b];
            c[b] = at;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[DIGIT(src[i].key, d)]++] = src[i];
        struct jpair *t = src;
        src = dst;
        dst = t;
        *moved += n;
    }
    return src;
}

int jgather_add(struct jgather *g, uint64_t lo, uint64_t hi, uint64_t *dup)
{
    struct jspans *s = g->done;
    struct base_runs *r = &s->runs;
    if (g->n == 0 && (r->n == 0 || lo >= r->r[r->n - 1].hi)) { /* above every id: in order */
        if (base_runs_reserve(r, 1) < 0)
            return -1;
        base_runs_add(r, lo, hi);
        s->count += hi - lo;
        s->moved++;
        return 0;
    }
    if (base_grow((void **)&g->p, &g->cap, g->n + 1, sizeof *g->p) < 0)
        return -1;
    g->p[g->n++] = (struct jpair){lo, hi};
    return g->n >= JGATHER_MIN && g->n >= r->n / 4 ? jgather_settle(g, dup) : 0;
}

/* Merges the m spans sorted at p into s's runs, in place from the top (s
 * has room for m more), the result moved down: 0, or 1 with *dup an id in
 * two of them. */
static int merge(struct jspans *s, const struct jpair *p, size_t m, uint64_t *dup)
{
    struct base_runs *r = &s->runs;
    size_t i = r->n, k = m, w = r->n + m; /* r[w..] holds what is merged; w >= i + k */
    while (i > 0 || k > 0) {
        int run = k == 0 || (i > 0 && r->r[i - 1].lo > p[k - 1].key);
        uint64_t lo = run ? r->r[i - 1].lo : p[k - 1].key, hi = run ? r->r[i - 1].hi : p[k - 1].val;
        i -= run;
        k -= !run;
        if (w < r->n + m && hi > r->r[w].lo) { /* pieces come by descending lo */
            *dup = r->r[w].lo;
            return 1;
        }
        if (w < r->n + m && hi == r->r[w].lo)
            r->r[w].lo = lo;
        else
            r->r[--w] = (struct base_run){lo, hi};
    }
    memmove(r->r, r->r + w, (r->n + m - w) * sizeof *r->r);
    s->moved += 2 * (r->n + m) - w;
    r->n = r->n + m - w;
    return 0;
}

int jgather_settle(struct jgather *g, uint64_t *dup)
{
    struct jspans *s = g->done;
    if (g->n == 0)
        return 0;
    if (base_grow((void **)&g->tmp, &g->tmp_cap, g->n, sizeof *g->tmp) < 0 ||
        base_runs_reserve(&s->runs, g->n) < 0)
        return -1;
    const struct jpair *p = jsort(g->p, g->tmp, g->n, &s->moved);
    uint64_t ids = 0;
    for (size_t k = 0; k < g->n; k++)
        ids += p[k].val - p[k].key;
    if (merge(s, p, g->n, dup))
        return 1;
    s->count += ids;
    g->n = 0;
    return 0;
}

void jgather_free(struct jgather *g)
{
    free(g->p);
    free(g->tmp);
    *g = (struct jgather){0};
}

/* ---- the writer's tree ---- */

static uint32_t skew(struct jnode *v, uint32_t t)
{
    uint32_t l = v[t].l;
    if (l == 0 || v[l].level != v[t].level)
        return t;
    v[t].l = v[l].r;
    v[l].r = t;
    return l;
}

static uint32_t split(struct jnode *v, uint32_t t)
{
    uint32_t r = v[t].r;
    if (r == 0 || v[v[r].r].level != v[t].level) /* v[0].level is 0, below every node's */
        return t;
    v[t].r = v[r].l;
    v[r].l = t;
    v[r].level++;
    return r;
}

/* Puts node into the subtree at t (the AA tree's insertion): its new root. */
static uint32_t insert(struct jtree *tr, uint32_t t, uint32_t node)
{
    if (t == 0)
        return node;
    tr->steps++;
    if (tr->v[node].lo < tr->v[t].lo)
        tr->v[t].l = insert(tr, tr->v[t].l, node);
    else
        tr->v[t].r = insert(tr, tr->v[t].r, node);
    return split(tr->v, skew(tr->v, t));
}

/* The run of the greatest lo <= x (*below) and of the least lo > x
 * (*above), 0 where none: the nodes visited. */
static uint64_t around(const struct jtree *t, uint64_t x, uint32_t *below, uint32_t *above)
{
    uint64_t steps = 0;
    *below = *above = 0;
    for (uint32_t at = t->root; at != 0; steps++) {
        if (t->v[at].lo <= x) {
            *below = at;
            at = t->v[at].r;
        } else {
            *above = at;
            at = t->v[at].l;
        }
    }
    return steps;
}

/* The overlap of lo..hi-1 with the runs around lo, b and a. */
static int overlaps(const struct jtree *t, uint32_t b, uint32_t a, uint64_t lo, uint64_t hi,
                    uint64_t *dup)
{
    if (b != 0 && t->v[b].hi > lo) {
        *dup = lo;
        return 1;
    }
    if (a != 0 && t->v[a].lo < hi) {
        *dup = t->v[a].lo;
        return 1;
    }
    return 0;
}

int jtree_overlap(const struct jtree *t, uint64_t lo, uint64_t hi, uint64_t *dup)
{
    uint32_t b, a;
    around(t, lo, &b, &a);
    return overlaps(t, b, a, lo, hi, dup);
}

int jtree_add(struct jtree *t, uint64_t lo, uint64_t hi, uint64_t *dup)
{
    uint32_t b, a;
    t->steps += around(t, lo, &b, &a);
    if (overlaps(t, b, a, lo, hi, dup))
        return 1;
    if (b != 0 && t->v[b].hi == lo) {
        t->v[b].hi = hi;
    } else if (a != 0 && t->v[a].lo == hi) {
        t->v[a].lo = lo; /* still above b, which ends at or before lo */
    } else {
        if (t->n + 1 >= t->cap) { /* cap stays a power of two below 2^31 + 1 */
            size_t cap = t->cap;
            bool fresh = !t->v;
            if (t->cap >= UINT32_MAX / 2 ||
                base_grow((void **)&t->v, &cap, (size_t)t->n + 2, sizeof *t->v) < 0)
                return -1;
            if (fresh)
                t->v[0] = (struct jnode){0};
            t->cap = (uint32_t)cap;
        }
        t->v[++t->n] = (struct jnode){lo, hi, 0, 0, 1};
        t->root = insert(t, t->root, t->n);
    }
    t->count += hi - lo;
    return 0;
}

void jtree_free(struct jtree *t)
{
    free(t->v);
    *t = (struct jtree){0};
}
