/* store_watch.c - what torch 1.x's WATCH_KEY and torch 2.x's queues ask
 * of a step's store (see store_kv.h): a watching client is told of every
 * change of its key (its old and new value) as TCPStore tells it, once per
 * change however often it asked to watch the key, until it goes; a key's
 * queue holds the values pushed on it, oldest first, and a push wakes the
 * client that has waited for the key longest. */
#include "store_kv_private.h"

#include <stdlib.h>
#include <string.h>

/* A change's message (its type, the key, the old and the new value) fits
 * in one answer, whatever the key and values served. */
_Static_assert(1 + 3 * 8 + (uint64_t)TS_KEY_MAX + 2 * (uint64_t)TS_VALUE_MAX <= STORE_ANSWER_MAX,
               "a watch's message must fit in one answer");

int kv_watch(struct store_kv *kv, uint64_t client, struct entry *e, char *why, size_t len)
{
    struct by_client **slot = kv_slot(kv->watch, client);
    struct watcher *w = (struct watcher *)*slot;
    if (!w) {
        if (!(w = calloc(1, sizeof *w)))
            return STORE_ENOMEM;
        w->k.client = client;
        w->k.next = kv->watch[client % KV_BUCKETS];
        kv->watch[client % KV_BUCKETS] = &w->k;
    }
    /* PyTorch's client keeps one callback per key (a second watchKey
     * replaces the first) and runs it once per message: one watch per key
     * and client runs it once per change, as Store::watchKey says. */
    if (!kv_set_get(&w->on, (uintptr_t)e)) {
        if (w->on.n >= KV_WATCHES_MAX)
            return kv_fail(why, len, "WATCH_KEY of key '%.*s' by a client that watches 65536 "
                           "keys already, the most served", e->key, e->klen);
        struct watch *x = malloc(sizeof *x);
        if (!x || kv_set_add(&w->on, (uintptr_t)e, x) < 0) {
            free(x);
            return STORE_ENOMEM;
        }
        x->client = client;
        link_add(&e->watching, &x->l);
    }
    return kv_answer_byte(kv, client, TS_KEY_CALLBACK_REGISTERED);
}

int kv_notify(struct store_kv *kv, struct entry *e, uint8_t type, const uint8_t *old,
              size_t old_len, const uint8_t *new_val, size_t new_len)
{
    if (link_empty(&e->watching))
        return STORE_OK;
    size_t len = 1 + 8 + e->klen + 8 + old_len + 8 + new_len;
    uint8_t *b = malloc(len);
    if (!b)
        return STORE_ENOMEM;
    b[0] = type;
    kv_put_vec(kv_put_vec(kv_put_vec(b + 1, e->key, e->klen), old, old_len), new_val, new_len);
    int rc = STORE_OK;
    for (struct link *l = e->watching.next; l != &e->watching; l = l->next)
        if (kv_answer(kv, ((struct watch *)l)->client, b, len) < 0)
            rc = STORE_ENOMEM;
    free(b);
    return rc;
}

/* Frees the watches of w (taken out of their entries' lists when unlink). */
static void watcher_free(struct watcher *w, bool unlink)
{
    for (size_t i = 0; i < w->on.cap; i++)
        if (w->on.val[i]) {
            struct watch *x = w->on.val[i];
            if (unlink)
                link_del(&x->l);
            free(x);
        }
    kv_set_free(&w->on);
    free(w);
}

void kv_watch_end(struct store_kv *kv, uint64_t client)
{
    struct by_client **slot = kv_slot(kv->watch, client);
    struct watcher *w = (struct watcher *)*slot;
    if (!w)
        return;
    *slot = w->k.next;
    watcher_free(w, true);
}

void kv_watchers_free(struct store_kv *kv)
{
    for (size_t i = 0; i < KV_BUCKETS; i++)
        for (struct by_client *b = kv->watch[i], *next; b; b = next) {
            next = b->next;
            watcher_free((struct watcher *)b, false);
        }
}

void kv_queue_free(struct entry *e)
{
    for (struct qitem *q = e->q_head, *next; q; q = next) {
        next = q->next;
        free(q);
    }
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
    kv_put_vec(b + 8, q->data, q->len);
    int rc = kv_answer(kv, client, b, 16 + q->len);
    free(b);
    if (rc == KV_REFUSED)
        return rc; /* the value stays for another client */
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
