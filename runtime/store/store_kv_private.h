/* store_kv_private.h - what the store's three files share (store_kv.c:
 * keys and waits; store_query.c: the queries; store_watch.c: WATCH_KEY's
 * callbacks and the queues): the entries, the waits and watches, and the
 * helpers each offers the others. Not for other modules. */
#ifndef COHORT_STORE_KV_PRIVATE_H
#define COHORT_STORE_KV_PRIVATE_H

#include "store_kv.h"

#define KV_BUCKETS 1024  /* waiters' and watchers' hash buckets, by client */
#define KV_DONE SIZE_MAX /* a waiter's key set since its wait began */

/* A value pushed on a key's queue (QUEUE_PUSH), oldest first. */
struct qitem {
    struct qitem *next;
    size_t len;
    uint8_t data[];
};

/* One key's place in a wait: the waiter and the index of the key in it. */
struct wref {
    struct waiter *w;
    size_t j;
};

struct entry {
    struct entry *next;       /* in its bucket */
    uint64_t hash;
    uint8_t *key;
    size_t klen;
    uint8_t *val;             /* malloc'd when set (may be NULL for an empty value) */
    size_t vlen;
    bool set;
    struct wref *waiting;     /* the waits that still count it */
    size_t n_waiting, cap_waiting;
    uint64_t *watchers;       /* clients, one per WATCH_KEY of it */
    size_t n_watch, cap_watch;
    struct qitem *q_head, *q_tail; /* its queue */
    size_t q_len;
    uint64_t mark;            /* the last pass that met it (kv->mark): a key named
                               * twice in one WAIT is counted once */
};

struct waiter {               /* a client's wait */
    struct waiter *next;
    uint64_t client;
    size_t left;              /* its keys not set yet */
    struct entry **on;        /* the entries it waits for (each once) */
    size_t *pos;              /* per entry: its index in on[j]->waiting, or KV_DONE */
    size_t n_on;
};

struct watcher {              /* a client's WATCH_KEYs */
    struct watcher *next;
    uint64_t client;
    struct entry **on;        /* one per WATCH_KEY */
    size_t n_on, cap_on;
};

struct store_kv {
    store_reply_fn reply;
    void *ctx;
    struct entry **b;
    size_t nb, n_entries;
    int64_t n_set;
    uint64_t mark;
    struct waiter *w[KV_BUCKETS];
    struct watcher *watch[KV_BUCKETS];
};

/* store_kv.c */
struct entry *kv_find(const struct store_kv *kv, const uint8_t *k, size_t n);
/* The entry of key k, made when absent; NULL when out of memory. */
struct entry *kv_entry_of(struct store_kv *kv, const uint8_t *k, size_t n);
/* Whether a wait for e is over: set, or its queue holds a value. */
bool kv_ready(const struct entry *e);
/* Every wait on e counts it as set; those left with none are answered. */
int kv_wake(struct store_kv *kv, struct entry *e);
/* Waits on e count it as set, one at a time, until one wait is answered
 * (a value pushed on e's queue is for one waiting client). */
int kv_wake_one(struct store_kv *kv, struct entry *e);
/* WAIT of the n keys under c. */
int kv_wait(struct store_kv *kv, uint64_t client, struct ts_cursor c, uint64_t n);
/* The client's wait ends unanswered (CANCEL_WAIT, or it is gone). */
void kv_wait_end(struct store_kv *kv, uint64_t client);
/* Frees every client's wait. */
void kv_waiters_free(struct store_kv *kv);
int kv_answer(struct store_kv *kv, uint64_t client, const void *p, size_t n);
int kv_answer_byte(struct store_kv *kv, uint64_t client, uint8_t b);
int kv_answer_i64(struct store_kv *kv, uint64_t client, int64_t v);
/* A sentence naming key (at most 200 bytes of it): STORE_FAIL. */
int kv_fail(char *why, size_t len, const char *fmt, const uint8_t *key, size_t klen);

/* store_query.c */
/* Sets e's value to a copy of v[0..n), tells its watchers, wakes its waits. */
int kv_put(struct store_kv *kv, struct entry *e, const uint8_t *v, size_t n);

/* store_watch.c */
/* WATCH_KEY: client is told of every change of the key from now on. */
int kv_watch(struct store_kv *kv, uint64_t client, struct entry *e);
/* Tells e's watchers of a change (enum ts_watch): its old value, and the
 * new one as two parts (an APPEND's: the old and what it adds). */
int kv_notify(struct store_kv *kv, struct entry *e, uint8_t type, const uint8_t *old,
              size_t old_len, const uint8_t *new1, size_t n1, const uint8_t *new2, size_t n2);
/* The client's watches end. */
void kv_watch_end(struct store_kv *kv, uint64_t client);
/* QUEUE_PUSH, QUEUE_POP, QUEUE_LEN. */
int kv_queue(struct store_kv *kv, uint64_t client, enum ts_op op, struct ts_cursor c);
/* Frees e's watchers and queue. */
void kv_entry_watch_free(struct entry *e);
/* Frees every client's watch record. */
void kv_watchers_free(struct store_kv *kv);

#endif
