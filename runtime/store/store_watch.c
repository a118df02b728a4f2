/* store_watch.c - what torch 1.x's WATCH_KEY and torch 2.x's queues ask
 * of a step's store (see store_kv.h): a watching client is told of every
 * change of its key (its old and new value) as TCPStore tells it, until it
 * goes; a key's queue holds the values pushed on it, oldest first, and a
 * push wakes one client waiting for the key. */
#include "store_kv_private.h"

#include <stdlib.h>
#include <string.h>

static struct watcher **watcher_slot(struct store_kv *kv, uint64_t client)
{
    struct watcher **w = &kv->watch[client % KV_BUCKETS];
    while (*w && (*w)->client != client)
        w = &(*w)->next;
    return w;
}

/* Appends v to an array of size elements, growing it: 0, or -1. */
static int grow_push(void **arr, size_t *n, size_t *cap, size_t size, const void *v)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 4;
        void *a = realloc(*arr, c * size);
        if (!a)
            return -1;
        *arr = a;
        *cap = c;
    }
    memcpy((uint8_t *)*arr + *n * size, v, size);
    (*n)++;
    return 0;
}

int kv_watch(struct store_kv *kv, uint64_t client, struct entry *e)
{
    struct watcher **slot = watcher_slot(kv, client), *w = *slot;
    if (!w) {
        if (!(w = calloc(1, sizeof *w)))
            return STORE_ENOMEM;
        w->client = client;
        w->next = kv->watch[client % KV_BUCKETS];
        kv->watch[client % KV_BUCKETS] = w;
    }
    if (grow_push((void **)&e->watchers, &e->n_watch, &e->cap_watch, sizeof client,
                  &client) < 0)
        return STORE_ENOMEM;
    if (grow_push((void **)&w->on, &w->n_on, &w->cap_on, sizeof e, &e) < 0) {
        e->n_watch--; /* the entry's half undone */
        return STORE_ENOMEM;
    }
    return kv_answer_byte(kv, client, TS_KEY_CALLBACK_REGISTERED);
}

int kv_notify(struct store_kv *kv, struct entry *e, uint8_t type, const uint8_t *old,
              size_t old_len, const uint8_t *new1, size_t n1, const uint8_t *new2, size_t n2)
{
    if (!e->n_watch)
        return STORE_OK;
    size_t len = 1 + 8 + e->klen + 8 + old_len + 8 + n1 + n2;
    uint8_t *b = malloc(len), *o = b;
    if (!b)
        return STORE_ENOMEM;
    *o++ = type;
    ts_put64(o, e->klen);
    memcpy(o + 8, e->key, e->klen);
    o += 8 + e->klen;
    ts_put64(o, old_len);
    if (old_len)
        memcpy(o + 8, old, old_len);
    o += 8 + old_len;
    ts_put64(o, n1 + n2);
    if (n1)
        memcpy(o + 8, new1, n1);
    if (n2)
        memcpy(o + 8 + n1, new2, n2);
    int rc = STORE_OK;
    for (size_t i = 0; i < e->n_watch; i++)
        if (kv_answer(kv, e->watchers[i], b, len) < 0)
            rc = STORE_ENOMEM;
    free(b);
    return rc;
}

void kv_watch_end(struct store_kv *kv, uint64_t client)
{
    struct watcher **slot = watcher_slot(kv, client), *w = *slot;
    if (!w)
        return;
    uint64_t mark = ++kv->mark; /* each entry filtered once, however often watched */
    for (size_t i = 0; i < w->n_on; i++) {
        struct entry *e = w->on[i];
        if (e->mark == mark)
            continue;
        e->mark = mark;
        size_t k = 0;
        for (size_t j = 0; j < e->n_watch; j++)
            if (e->watchers[j] != client)
                e->watchers[k++] = e->watchers[j];
        e->n_watch = k;
    }
    *slot = w->next;
    free(w->on);
    free(w);
}

void kv_watchers_free(struct store_kv *kv)
{
    for (size_t i = 0; i < KV_BUCKETS; i++)
        for (struct watcher *w = kv->watch[i], *next; w; w = next) {
            next = w->next;
            free(w->on);
            free(w);
        }
}

void kv_entry_watch_free(struct entry *e)
{
    for (struct qitem *q = e->q_head, *next; q; q = next) {
        next = q->next;
        free(q);
    }
    free(e->watchers);
}

/* QUEUE_POP's answer: the queue's length, then (when it held a value) its
 * oldest value, taken off. */
static int pop(struct store_kv *kv, uint64_t client, struct entry *e)
{
    struct qitem *q = e ? e->q_head : NULL;
    if (!q)
        return kv_answer_i64(kv, client, 0);
    uint8_t *b = malloc(16 + q->len);
    if (!b)
        return STORE_ENOMEM;
    ts_put64(b, e->q_len);
    ts_put64(b + 8, q->len);
    memcpy(b + 16, q->data, q->len);
    int rc = kv_answer(kv, client, b, 16 + q->len);
    free(b);
    if (!(e->q_head = q->next))
        e->q_tail = NULL;
    e->q_len--;
    free(q);
    return rc;
}

int kv_queue(struct store_kv *kv, uint64_t client, enum ts_op op, struct ts_cursor c)
{
    const uint8_t *k, *v;
    size_t kl, vl;
    ts_string(&c, &k, &kl);
    if (op == TS_QUEUE_LEN) {
        struct entry *e = kv_find(kv, k, kl);
        return kv_answer_i64(kv, client, e ? (int64_t)e->q_len : 0);
    }
    if (op == TS_QUEUE_POP)
        return pop(kv, client, kv_find(kv, k, kl));
    ts_string(&c, &v, &vl);
    struct entry *e = kv_entry_of(kv, k, kl);
    struct qitem *q = e ? malloc(sizeof *q + vl) : NULL;
    if (!q)
        return STORE_ENOMEM;
    q->next = NULL;
    q->len = vl;
    if (vl)
        memcpy(q->data, v, vl);
    if (e->q_tail)
        e->q_tail->next = q;
    else
        e->q_head = q;
    e->q_tail = q;
    e->q_len++;
    return kv_wake_one(kv, e);
}
