/* store_kv.c - the keys and waits of a step's store (see store_kv.h;
 * the queries are store_query.c's, WATCH_KEY's callbacks and the queues
 * store_watch.c's). Keys hash into chained buckets; an entry, once made
 * (set, waited for, watched or queued on), lives as long as the store, so
 * that a waiting client may point at it whatever happens to its value.
 * A wait and each of its keys know each other's place (a key's waits in a
 * list, oldest first, each taken out in constant time), and a key named
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
    free(w->refs);
    free(w);
}

void kv_waiters_free(struct store_kv *kv)
{
    for (size_t i = 0; i < KV_BUCKETS; i++)
        for (struct by_client *b = kv->w[i], *next; b; b = next) {
            next = b->next;
            waiter_free((struct waiter *)b);
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
    link_init(&e->waiting);
    link_init(&e->watching);
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
    if (kv->dropped.n && kv_set_get(&kv->dropped, client))
        return KV_REFUSED; /* refused earlier in this query: nothing more is sent */
    int r = kv->reply(kv->ctx, client, p, n);
    if (r <= 0)
        return r < 0 ? STORE_ENOMEM : STORE_OK;
    return kv_set_add(&kv->dropped, client, kv) < 0 ? STORE_ENOMEM : KV_REFUSED;
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

uint8_t *kv_put_vec(uint8_t *out, const uint8_t *v, size_t n)
{
    ts_put64(out, n);
    if (n)
        memcpy(out + 8, v, n);
    return out + 8 + n;
}

int kv_fail(char *why, size_t len, const char *fmt, const uint8_t *key, size_t klen)
{
    snprintf(why, len, fmt, (int)(klen > 200 ? 200 : klen), (const char *)key);
    return STORE_FAIL;
}

/* --- the sets and buckets of waits and watches ---------------------- */

struct by_client **kv_slot(struct by_client **buckets, uint64_t client)
{
    struct by_client **s = &buckets[client % KV_BUCKETS];
    while (*s && (*s)->client != client)
        s = &(*s)->next;
    return s;
}

static size_t set_home(const struct kv_set *s, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (s->cap - 1);
}

void *kv_set_get(const struct kv_set *s, uint64_t key)
{
    if (!s->cap)
        return NULL;
    for (size_t i = set_home(s, key); s->val[i]; i = (i + 1) & (s->cap - 1))
        if (s->key[i] == key)
            return s->val[i];
    return NULL;
}

static void set_put(struct kv_set *s, uint64_t key, void *val)
{
    size_t i = set_home(s, key);
    while (s->val[i])
        i = (i + 1) & (s->cap - 1);
    s->key[i] = key;
    s->val[i] = val;
    s->n++;
}

int kv_set_add(struct kv_set *s, uint64_t key, void *val)
{
    if (2 * (s->n + 1) > s->cap) {
        struct kv_set g = {.cap = s->cap ? 2 * s->cap : 16};
        g.key = malloc(g.cap * sizeof *g.key);
        g.val = calloc(g.cap, sizeof *g.val);
        if (!g.key || !g.val) {
            kv_set_free(&g);
            return STORE_ENOMEM;
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->val[i])
                set_put(&g, s->key[i], s->val[i]);
        kv_set_free(s);
        *s = g;
    }
    set_put(s, key, val);
    return STORE_OK;
}

void kv_set_free(struct kv_set *s)
{
    free(s->key);
    free(s->val);
    *s = (struct kv_set){0};
}

/* --- waits ---------------------------------------------------------- */

/* The wait of ref r counts r's key as set; answered when it was its last
 * key. 1 answered, 0 not (keys left, or the client refused), or
 * STORE_ENOMEM. */
static int count_set(struct store_kv *kv, struct wref *r)
{
    struct waiter *w = r->w;
    link_del(&r->l);
    if (--w->left > 0)
        return 0;
    uint64_t client = w->k.client;
    struct by_client **slot = kv_slot(kv->w, client);
    *slot = w->k.next;
    waiter_free(w);
    int rc = kv_answer_byte(kv, client, TS_STOP_WAITING);
    return rc < 0 ? STORE_ENOMEM : rc == KV_REFUSED ? 0 : 1;
}

int kv_wake(struct store_kv *kv, struct entry *e)
{
    int rc = STORE_OK;
    while (!link_empty(&e->waiting))
        if (count_set(kv, (struct wref *)e->waiting.next) < 0)
            rc = STORE_ENOMEM;
    return rc;
}

int kv_wake_one(struct store_kv *kv, struct entry *e)
{
    while (!link_empty(&e->waiting)) {
        int r = count_set(kv, (struct wref *)e->waiting.next);
        if (r != 0)
            return r < 0 ? STORE_ENOMEM : STORE_OK;
    }
    return STORE_OK;
}

void kv_wait_end(struct store_kv *kv, uint64_t client)
{
    struct by_client **slot = kv_slot(kv->w, client);
    struct waiter *w = (struct waiter *)*slot;
    if (!w)
        return;
    for (size_t j = 0; j < w->n_on; j++)
        link_del(&w->refs[j].l); /* a key set already: a link alone, unchanged */
    *slot = w->k.next;
    waiter_free(w);
}

void store_kv_waiters(const struct store_kv *kv,
                      void (*fn)(void *ctx, uint64_t client, const uint8_t *key, size_t len),
                      void *ctx)
{
    for (size_t i = 0; i < KV_BUCKETS; i++)
        for (const struct by_client *b = kv->w[i]; b; b = b->next) {
            const struct waiter *w = (const struct waiter *)b;
            for (size_t j = 0; j < w->n_on; j++)
                if (!link_empty(&w->refs[j].l)) {
                    fn(ctx, b->client, w->refs[j].e->key, w->refs[j].e->klen);
                    break;
                }
        }
}

int64_t store_kv_size(const struct store_kv *kv)
{
    return kv->n_set;
}

int kv_wait(struct store_kv *kv, uint64_t client, struct ts_cursor c, uint64_t n)
{
    kv_wait_end(kv, client); /* a client waits once at a time */
    struct waiter *w = calloc(1, sizeof *w);
    if (!w || !(w->refs = calloc(n ? n : 1, sizeof *w->refs))) {
        free(w);
        return STORE_ENOMEM;
    }
    w->k.client = client;
    w->k.next = kv->w[client % KV_BUCKETS];
    kv->w[client % KV_BUCKETS] = &w->k;
    uint64_t mark = ++kv->mark;
    const uint8_t *k;
    size_t kl;
    while (ts_string(&c, &k, &kl) == 0) {
        struct entry *e = kv_entry_of(kv, k, kl);
        if (!e) {
            kv_wait_end(kv, client);
            return STORE_ENOMEM;
        }
        if (e->mark == mark || kv_ready(e))
            continue; /* named already, or set */
        e->mark = mark;
        struct wref *r = &w->refs[w->n_on++];
        *r = (struct wref){.w = w, .e = e};
        link_add(&e->waiting, &r->l);
    }
    w->left = w->n_on;
    if (w->left > 0)
        return STORE_OK;
    kv_wait_end(kv, client);
    return kv_answer_byte(kv, client, TS_STOP_WAITING);
}
