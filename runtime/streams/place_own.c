/* place_own.c - the streams of a placement (place.h) by key, and their
 * ownership: assignments, revocations, hand-offs, epochs and the actions
 * they make. The layer under place.c (the calls) and place_move.c
 * (workers coming and going); it calls only place_ring.c. */
#include "place_private.h"

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
    if (p->ns == p->caps) {
        size_t cap = p->caps ? 2 * p->caps : 64;
        struct stream *s = realloc(p->s, cap * sizeof *s);
        if (!s)
            return -1;
        p->s = s;
        p->caps = cap;
    }
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
    p->table[slot(p, key, s->hash)] = (uint32_t)p->ns++;
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

void place_forget(struct place *p, struct stream *s)
{
    size_t i = (size_t)(s - p->s), last = p->ns - 1;
    unslot(p, slot(p, s->key, s->hash));
    if (i != last) {
        p->table[slot(p, p->s[last].key, p->s[last].hash)] = (uint32_t)i;
        p->s[i] = p->s[last];
    }
    p->ns--;
}

/* ---- ownership --------------------------------------------------------- */

int32_t place_counted(const struct stream *s)
{
    if (s->removed)
        return -1;
    return s->state == ST_OWNED ? s->owner : s->state == ST_MOVING ? s->target : -1;
}

void place_recount(struct place *p, const struct stream *s, int32_t before)
{
    int32_t after = place_counted(s);
    if (before >= 0)
        p->w[before].load -= s->cost;
    if (after >= 0)
        p->w[after].load += s->cost;
}

int place_act(struct place *p, enum place_act_type t, uint32_t w, uint64_t epoch,
              const char *key)
{
    if (p->nacts == p->capacts) {
        size_t cap = p->capacts ? 2 * p->capacts : 64;
        struct place_act *a = realloc(p->acts, cap * sizeof *a);
        if (!a)
            return -1;
        p->acts = a;
        p->capacts = cap;
    }
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
    s->state = ST_OWNED;
    s->owner = (int32_t)w;
    s->target = -1;
    s->epoch = ++p->epoch;
    s->load = -1;
    place_recount(p, s, before);
    return place_act(p, PLACE_ASSIGN, w, s->epoch, s->key);
}

int place_revoke(struct place *p, struct stream *s, int32_t target)
{
    int32_t before = place_counted(s);
    s->state = ST_MOVING;
    s->target = target;
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
        s->state = ST_UNPLACED; /* counted nowhere while it is chosen for */
        s->target = -1;
        place_recount(p, s, before);
        to = place_choose(p, s, exclude, true);
    }
    return to < 0 ? 0 : place_assign(p, s, (uint32_t)to);
}

