/* store_kv.c - the keys and waits of a step's store (see store_kv.h;
 * the queries are store_query.c's, WATCH_KEY's callbacks and the queues
 * store_watch.c's). Keys hash into chained buckets; an entry, once made
 * (set, waited for, watched or queued on), lives as long as the store, so
 * that a waiting client may point at it whatever happens to its value.
 * A wait and each of its keys know each other's place, and a key named
 * twice in one WAIT is counted once, so that a wait costs its keys' count
 * to make, to answer and to end (a WAIT of one key 2^20 times included). */
#include "store_kv_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_of(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

int store_kv_new(store_reply_fn reply, void *ctx, struct store_kv **out)
{
    struct store_kv *kv = calloc(1, sizeof *kv);
    *out = kv;
    if (!kv || !(kv->b = calloc(kv->nb = 256, sizeof *kv->b)))
        return STORE_ENOMEM;
    kv->reply = reply;
    kv->ctx = ctx;
    return STORE_OK;
}

static void waiter_free(struct waiter *w)
{
    free(w->on);
    free(w->pos);
    free(w);
}

void kv_waiters_free(struct store_kv *kv)
{
    for (size_t i = 0; i < KV_BUCKETS; i++)
        for (struct waiter *w = kv->w[i], *next; w; w = next) {
            next = w->next;
            waiter_free(w);
        }
}

struct entry *kv_find(const struct store_kv *kv, const uint8_t *k, size_t n)
{
    uint64_t h = hash_of(k, n);
    for (struct entry *e = kv->b[h % kv->nb]; e; e = e->next)
        if (e->hash == h && e->klen == n && (n == 0 || memcmp(e->key, k, n) == 0))
            return e;
    return NULL;
}

static void grow(struct store_kv *kv)
{
    size_t nb = kv->nb * 4;
    struct entry **b = calloc(nb, sizeof *b);
    if (!b)
        return; /* longer chains, still right */
    for (size_t i = 0; i < kv->nb; i++)
        for (struct entry *e = kv->b[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash % nb];
            b[e->hash % nb] = e;
        }
    free(kv->b);
    kv->b = b;
    kv->nb = nb;
}

struct entry *kv_entry_of(struct store_kv *kv, const uint8_t *k, size_t n)
{
    struct entry *e = kv_find(kv, k, n);
    if (e)
        return e;
    if (kv->n_entries >= 2 * kv->nb)
        grow(kv);
    if (!(e = calloc(1, sizeof *e)) || !(e->key = malloc(n ? n : 1))) {
        free(e);
        return NULL;
    }
    memcpy(e->key, k, n);
    e->klen = n;
    e->hash = hash_of(k, n);
    e->next = kv->b[e->hash % kv->nb];
    kv->b[e->hash % kv->nb] = e;
    kv->n_entries++;
    return e;
}

bool kv_ready(const struct entry *e)
{
    return e->set || e->q_len > 0;
}

int kv_answer(struct store_kv *kv, uint64_t client, const void *p, size_t n)
{
    return kv->reply(kv->ctx, client, p, n) < 0 ? STORE_ENOMEM : STORE_OK;
}

int kv_answer_byte(struct store_kv *kv, uint64_t client, uint8_t b)
{
    return kv_answer(kv, client, &b, 1);
}

int kv_answer_i64(struct store_kv *kv, uint64_t client, int64_t v)
{
    uint8_t b[8];
    ts_put64(b, (uint64_t)v);
    return kv_answer(kv, client, b, 8);
}

int kv_fail(char *why, size_t len, const char *fmt, const uint8_t *key, size_t klen)
{
    snprintf(why, len, fmt, (int)(klen > 200 ? 200 : klen), (const char *)key);
    return STORE_FAIL;
}

/* --- waits ---------------------------------------------------------- */

static struct waiter **waiter_slot(struct store_kv *kv, uint64_t client)
{
    struct waiter **w = &kv->w[client % KV_BUCKETS];
    while (*w && (*w)->client != client)
        w = &(*w)->next;
    return w;
}

/* Takes e's i-th wait reference out (the last one takes its place). */
static void unref(struct entry *e, size_t i)
{
    struct wref last = e->waiting[--e->n_waiting];
    if (i == e->n_waiting)
        return;
    e->waiting[i] = last;
    last.w->pos[last.j] = i;
}

/* The wait of e's i-th reference counts e as set; answered when it was
 * its last key. 1 answered, 0 not yet, or STORE_ENOMEM. */
static int count_set(struct store_kv *kv, struct entry *e, size_t i)
{
    struct waiter *w = e->waiting[i].w;
    w->pos[e->waiting[i].j] = KV_DONE;
    unref(e, i);
    if (--w->left > 0)
        return 0;
    uint64_t client = w->client;
    struct waiter **slot = waiter_slot(kv, client);
    *slot = w->next;
    waiter_free(w);
    return kv_answer_byte(kv, client, TS_STOP_WAITING) < 0 ? STORE_ENOMEM : 1;
}

int kv_wake(struct store_kv *kv, struct entry *e)
{
    int rc = STORE_OK;
    while (e->n_waiting)
        if (count_set(kv, e, e->n_waiting - 1) < 0)
            rc = STORE_ENOMEM;
    return rc;
}

int kv_wake_one(struct store_kv *kv, struct entry *e)
{
    while (e->n_waiting) {
        int r = count_set(kv, e, 0);
        if (r != 0)
            return r < 0 ? STORE_ENOMEM : STORE_OK;
    }
    return STORE_OK;
}

void kv_wait_end(struct store_kv *kv, uint64_t client)
{
    struct waiter **slot = waiter_slot(kv, client), *w = *slot;
    if (!w)
        return;
    for (size_t j = 0; j < w->n_on; j++)
        if (w->pos[j] != KV_DONE)
            unref(w->on[j], w->pos[j]);
    *slot = w->next;
    waiter_free(w);
}

void store_kv_waiters(const struct store_kv *kv,
                      void (*fn)(void *ctx, uint64_t client, const uint8_t *key, size_t len),
                      void *ctx)
{
    for (size_t i = 0; i < KV_BUCKETS; i++)
        for (const struct waiter *w = kv->w[i]; w; w = w->next)
            for (size_t j = 0; j < w->n_on; j++)
                if (w->pos[j] != KV_DONE) {
                    fn(ctx, w->client, w->on[j]->key, w->on[j]->klen);
                    break;
                }
}

int64_t store_kv_size(const struct store_kv *kv)
{
    return kv->n_set;
}

/* e is waited for by w, as its key j. */
static int add_ref(struct entry *e, struct waiter *w, size_t j)
{
    if (e->n_waiting == e->cap_waiting) {
        size_t cap = e->cap_waiting ? 2 * e->cap_waiting : 4;
        struct wref *r = realloc(e->waiting, cap * sizeof *r);
        if (!r)
            return STORE_ENOMEM;
        e->waiting = r;
        e->cap_waiting = cap;
    }
    w->pos[j] = e->n_waiting;
    e->waiting[e->n_waiting++] = (struct wref){w, j};
    return STORE_OK;
}

int kv_wait(struct store_kv *kv, uint64_t client, struct ts_cursor c, uint64_t n)
{
    kv_wait_end(kv, client); /* a client waits once at a time */
    struct waiter *w = calloc(1, sizeof *w);
    if (!w || !(w->on = calloc(n ? n : 1, sizeof *w->on)) ||
        !(w->pos = calloc(n ? n : 1, sizeof *w->pos))) {
        if (w)
            free(w->on);
        free(w);
        return STORE_ENOMEM;
    }
    w->client = client;
    w->next = kv->w[client % KV_BUCKETS];
    kv->w[client % KV_BUCKETS] = w;
    uint64_t mark = ++kv->mark;
    const uint8_t *k;
    size_t kl;
    while (ts_string(&c, &k, &kl) == 0) {
        struct entry *e = kv_entry_of(kv, k, kl);
        if (e && (e->mark == mark || kv_ready(e)))
            continue; /* named already, or set */
        if (!e || add_ref(e, w, w->n_on) < 0) {
            kv_wait_end(kv, client);
            return STORE_ENOMEM;
        }
        e->mark = mark;
        w->on[w->n_on++] = e;
    }
    w->left = w->n_on;
    if (w->left > 0)
        return STORE_OK;
    kv_wait_end(kv, client);
    return kv_answer_byte(kv, client, TS_STOP_WAITING);
}
