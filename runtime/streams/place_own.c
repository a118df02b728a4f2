/* place_own.c - the streams of a placement (place.h) by key, and their
 * ownership: assignments, revocations, hand-offs, epochs and the actions
 * they make; each worker's lists of the streams it holds and gives up,
 * and the cost and count of those that count on it, and the sum of the
 * loads reported on those it owns. The layer under
 * place.c (the calls) and place_move.c (workers coming and going); it
 * calls only place_ring.c and place_tree.c. */
#include "base_sys.h"
#include "place_own.h"
#include "place_ring.h"
#include "place_tree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY UINT32_MAX

/* ---- streams by key ---------------------------------------------------- */

/* The table slot of key, or of the empty slot where it would go. */
static size_t slot(const struct place *p, const char *key, uint64_t hash)
{
    size_t m = p->tcap - 1, i = (size_t)hash & m;
    while (p->table[i] != EMPTY && strcmp(p->s[p->table[i]].key, key) != 0)
        i = (i + 1) & m;
    return i;
}

struct stream *place_find(const struct place *p, const char *key)
{
    if (!p->tcap)
        return NULL;
    uint32_t i = p->table[slot(p, key, place_hash(key))];
    return i == EMPTY ? NULL : &p->s[i];
}

/* Room for one more stream: the array and a table at most half full. */
static int grow(struct place *p)
{
    if (base_grow((void **)&p->s, &p->caps, p->ns + 1, sizeof *p->s) < 0)
        return -1;
    if (2 * (p->ns + 1) <= p->tcap)
        return 0;
    size_t tcap = p->tcap ? 2 * p->tcap : 128;
    uint32_t *t = malloc(tcap * sizeof *t);
    if (!t)
        return -1;
    free(p->table);
    p->table = t;
    p->tcap = tcap;
    memset(t, 0xff, tcap * sizeof *t);
    for (size_t i = 0; i < p->ns; i++)
        t[slot(p, p->s[i].key, p->s[i].hash)] = (uint32_t)i;
    return 0;
}

static void link_in(struct place *p, uint32_t *head, uint32_t i, int l)
{
    uint32_t *k = p->s[i].link[l];
    k[0] = PLACE_NONE;
    k[1] = *head;
    if (*head != PLACE_NONE)
        p->s[*head].link[l][0] = i;
    *head = i;
}

static void link_out(struct place *p, uint32_t *head, uint32_t i, int l)
{
    const uint32_t *k = p->s[i].link[l];
    if (k[0] != PLACE_NONE)
        p->s[k[0]].link[l][1] = k[1];
    else
        *head = k[1];
    if (k[1] != PLACE_NONE)
        p->s[k[1]].link[l][0] = k[0];
}

/* The head of s's bucket (PLACE_LIST_BUCKET). */
static uint32_t *bucket_of(struct place *p, const struct stream *s)
{
    return &p->bucket[PLACE_BUCKET(s->hash)];
}

struct stream *place_insert(struct place *p, const char *key, double cost)
{
    if (grow(p) < 0)
        return NULL;
    struct stream *s = &p->s[p->ns];
    memset(s, 0, sizeof *s);
    strcpy(s->key, key);
    s->hash = place_hash(key);
    s->cost = cost;
    s->load = -1;
    s->owner = s->target = -1;
    s->state = ST_UNPLACED;
    p->n_unplaced++;
    p->table[slot(p, key, s->hash)] = (uint32_t)p->ns;
    link_in(p, bucket_of(p, s), (uint32_t)p->ns, PLACE_LIST_BUCKET);
    p->ns++;
    return s;
}

/* Takes slot i out of the table, moving later entries of its run back. */
static void unslot(struct place *p, size_t i)
{
    size_t m = p->tcap - 1;
    p->table[i] = EMPTY;
    for (size_t j = (i + 1) & m; p->table[j] != EMPTY; j = (j + 1) & m) {
        uint32_t e = p->table[j];
        p->table[j] = EMPTY;
        p->table[slot(p, p->s[e].key, p->s[e].hash)] = e;
    }
}

/* ---- each worker's lists ---------------------------------------------- */

/* The worker whose HELD list s is in: its owner (OWNED), its target
 * (MOVING), or -1. */
static int32_t holder(const struct stream *s)
{
    return s->state == ST_OWNED ? s->owner : s->state == ST_MOVING ? s->target : -1;
}

/* s into (in) or out of the lists its state, owner and target put it in:
 * out before they change, in after. */
static void lists(struct place *p, const struct stream *s, bool in)
{
    uint32_t i = (uint32_t)(s - p->s);
    int32_t h = holder(s);
    void (*op)(struct place *, uint32_t *, uint32_t, int) = in ? link_in : link_out;
    if (h >= 0)
        op(p, &p->w[h].head[PLACE_LIST_HELD], i, PLACE_LIST_HELD);
    if (s->state == ST_MOVING)
        op(p, &p->w[s->owner].head[PLACE_LIST_LEAVING], i, PLACE_LIST_LEAVING);
}

long place_streams_of(const struct place *p, uint32_t w, uint32_t **out)
{
    size_t n = 0;
    for (int l = 0; l < 2; l++)
        for (uint32_t i = p->w[w].head[l]; i != PLACE_NONE; i = p->s[i].link[l][1])
            n++;
    uint32_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    n = 0;
    for (int l = 0; l < 2; l++)
        for (uint32_t i = p->w[w].head[l]; i != PLACE_NONE; i = p->s[i].link[l][1])
            v[n++] = i;
    *out = v; /* once each (moving from w back to w: in both lists) */
    return (long)place_index_order(v, n);
}

int place_lists_check(const struct place *p, struct cohort_err *err)
{
    for (uint32_t w = 0; w < p->nw; w++) {
        uint32_t held = 0, counted = 0;
        for (uint32_t i = p->w[w].head[PLACE_LIST_HELD]; i != PLACE_NONE;
             i = p->s[i].link[PLACE_LIST_HELD][1]) {
            if (i >= p->ns || holder(&p->s[i]) != (int32_t)w || ++held > p->ns)
                return cohort_fail(err, "worker %u's list of streams held is wrong", w);
            counted += !p->s[i].removed;
        }
        for (uint32_t i = p->w[w].head[PLACE_LIST_LEAVING]; i != PLACE_NONE;
             i = p->s[i].link[PLACE_LIST_LEAVING][1])
            if (i >= p->ns || p->s[i].state != ST_MOVING || p->s[i].owner != (int32_t)w ||
                ++held > 2 * p->ns)
                return cohort_fail(err, "worker %u's list of streams leaving is wrong", w);
        if (counted != p->w[w].counted)
            return cohort_fail(err, "worker %u: %u streams counted on it, %u in its list", w,
                               p->w[w].counted, counted);
    }
    return 0;
}

void place_forget(struct place *p, struct stream *s)
{
    size_t i = (size_t)(s - p->s), last = p->ns - 1;
    lists(p, s, false);
    link_out(p, bucket_of(p, s), (uint32_t)i, PLACE_LIST_BUCKET);
    p->n_unplaced -= s->state == ST_UNPLACED;
    place_rep_count(p, s, -1);
    unslot(p, slot(p, s->key, s->hash));
    if (i != last) {
        lists(p, &p->s[last], false);
        link_out(p, bucket_of(p, &p->s[last]), (uint32_t)last, PLACE_LIST_BUCKET);
        p->table[slot(p, p->s[last].key, p->s[last].hash)] = (uint32_t)i;
        p->s[i] = p->s[last];
        lists(p, &p->s[i], true);
        link_in(p, bucket_of(p, &p->s[i]), (uint32_t)i, PLACE_LIST_BUCKET);
    }
    p->ns--;
}

/* ---- ownership --------------------------------------------------------- */

/* *sum += b, and *err += its rounding error (found exactly: TwoSum),
 * rounded up; +inf where the sum is not finite. */
static void add(double *sum, double b, double *err)
{
    double a = *sum, s = a + b, bb = s - a;
    double e = (a - (s - bb)) + (b - bb);
    *sum = s;
    if (!isfinite(s) || !isfinite(e))
        *err = INFINITY;
    else if (e != 0)
        *err = (*err + fabs(e)) * (1 + 0x1p-50);
}

void place_rep_count(struct place *p, const struct stream *s, int sign)
{
    if (s->state != ST_OWNED || s->load < 0)
        return;
    struct pworker *k = &p->w[s->owner];
    add(&k->reported, sign * s->load, &k->rep_err);
    k->rep_fresh = false;
    k->n_rep += sign;
    if (!k->n_rep) /* none left: exactly none */
        k->reported = k->rep_err = 0;
    place_tree_time(p, (uint32_t)s->owner);
}

/* The reported loads of the streams w owns, summed in its list's order
 * (*err the sum's rounding, *n their count). */
static double reported_of(const struct place *p, uint32_t w, double *err, uint32_t *n)
{
    double sum = 0;
    *err = 0;
    *n = 0;
    for (uint32_t i = p->w[w].head[PLACE_LIST_HELD]; i != PLACE_NONE;
         i = p->s[i].link[PLACE_LIST_HELD][1])
        if (p->s[i].state == ST_OWNED && p->s[i].load >= 0) {
            add(&sum, p->s[i].load, err);
            ++*n;
        }
    return sum;
}

void place_rep_exact(struct place *p, uint32_t w)
{
    uint32_t n;
    p->w[w].reported = reported_of(p, w, &p->w[w].rep_err, &n);
    p->w[w].rep_fresh = true;
    place_tree_time(p, w);
}

double place_rep_total(struct place *p)
{
    for (;;) {
        const struct tspan *r = &p->ttree[1];
        if (!(r->emax > 0) || (isfinite(r->esum) && r->esum <= 1e-13 * fabs(r->rsum)))
            return r->rsum;
        size_t i = 1;
        while (i < p->leaves) /* down to the worker with the most error */
            i = 2 * i + (p->ttree[2 * i].emax < p->ttree[2 * i + 1].emax);
        place_rep_exact(p, (uint32_t)(i - p->leaves));
    }
}

int place_reported_check(const struct place *p, struct cohort_err *err)
{
    uint32_t j = 0;
    for (uint32_t w = 0; w < p->nw; w++) {
        const struct pworker *k = &p->w[w];
        while (j < p->n_over && p->over[j] < w)
            j++;
        uint32_t n;
        double off, sum = reported_of(p, w, &off, &n);
        if (n != k->n_rep || fabs(k->reported - sum) > k->rep_err + off + 1e-9 * fabs(sum))
            return cohort_fail(err, "worker %u: reported load %g (within %g) of %u streams, but "
                                    "its streams' %g of %u", w, k->reported, k->rep_err,
                               k->n_rep, sum, n);
        if (k->over_since && (j == p->n_over || p->over[j] != w))
            return cohort_fail(err, "worker %u is over its reported bound since %lld, but not "
                                    "in the list of those that are", w, (long long)k->over_since);
    }
    return 0;
}

int32_t place_counted(const struct stream *s)
{
    return s->removed ? -1 : holder(s);
}

void place_recount(struct place *p, const struct stream *s, int32_t before)
{
    int32_t after = place_counted(s);
    if (before >= 0) {
        p->w[before].load -= s->cost;
        p->w[before].counted--;
    }
    if (after >= 0) {
        p->w[after].load += s->cost;
        p->w[after].counted++;
    }
    if (before >= 0)
        place_tree_touch(p, (uint32_t)before);
    if (after >= 0 && after != before)
        place_tree_touch(p, (uint32_t)after);
}

void place_retarget(struct place *p, struct stream *s, int32_t target)
{
    int32_t before = place_counted(s);
    lists(p, s, false);
    s->target = target;
    lists(p, s, true);
    place_recount(p, s, before);
}

int place_act(struct place *p, enum place_act_type t, uint32_t w, uint64_t epoch,
              const char *key)
{
    if (base_grow((void **)&p->acts, &p->capacts, p->nacts + 1, sizeof *p->acts) < 0)
        return -1;
    struct place_act *a = &p->acts[p->nacts++];
    a->type = t;
    a->worker = w;
    a->epoch = epoch;
    strcpy(a->key, key);
    return 0;
}

int place_assign(struct place *p, struct stream *s, uint32_t w)
{
    int32_t before = place_counted(s);
    if (s->epoch)
        p->moves++;
    place_rep_count(p, s, -1);
    lists(p, s, false);
    p->n_unplaced -= s->state == ST_UNPLACED;
    s->state = ST_OWNED;
    s->owner = (int32_t)w;
    s->target = -1;
    lists(p, s, true);
    s->epoch = ++p->epoch;
    s->load = -1;
    place_recount(p, s, before);
    return place_act(p, PLACE_ASSIGN, w, s->epoch, s->key);
}

int place_revoke(struct place *p, struct stream *s, int32_t target)
{
    int32_t before = place_counted(s);
    place_rep_count(p, s, -1);
    lists(p, s, false);
    s->state = ST_MOVING;
    s->target = target;
    lists(p, s, true);
    place_recount(p, s, before);
    return place_act(p, PLACE_REVOKE, (uint32_t)s->owner, s->epoch, s->key);
}

int place_handoff(struct place *p, struct stream *s, int32_t exclude)
{
    if (s->removed) {
        place_forget(p, s);
        return 0;
    }
    int32_t to = s->state == ST_MOVING ? s->target : -1;
    if (to < 0 || !p->w[to].alive || to == exclude) {
        int32_t before = place_counted(s);
        place_rep_count(p, s, -1);
        lists(p, s, false);
        s->state = ST_UNPLACED; /* counted nowhere while it is chosen for */
        p->n_unplaced++;
        s->target = -1;
        place_recount(p, s, before);
        if (place_ring_sync(p) < 0)
            return -1;
        to = place_choose(p, s, exclude, true);
    }
    return to < 0 ? 0 : place_assign(p, s, (uint32_t)to);
}

