/* store_kv_private.h - what the store's three files share (store_kv.c:
 * keys and waits; store_query.c: the queries; store_watch.c: WATCH_KEY's
 * callbacks and the queues): the entries, the waits and watches, the lists
 * and sets that hold them, and the helpers each offers the others. Not for
 * other modules. */
#ifndef COHORT_STORE_KV_PRIVATE_H
#define COHORT_STORE_KV_PRIVATE_H

#include "store_kv.h"

#define KV_BUCKETS 1024           /* waiters' and watchers' hash buckets, by client */
#define KV_WATCHES_MAX (1u << 16) /* the most keys one client watches */
#define KV_REFUSED 1              /* kv_answer: the reply callback refused the client */

/* A place in a doubly linked list that is circular through its head (a
 * struct link of its own, in the entry): a key's waits, oldest first, and
 * its watches. A link taken out points at itself. */
struct link {
    struct link *prev, *next;
};

static inline void link_init(struct link *h)
{
    h->prev = h->next = h;
}

static inline bool link_empty(const struct link *h)
{
    return h->next == h;
}

/* Puts l at the tail of h's list (the newest). */
static inline void link_add(struct link *h, struct link *l)
{
    l->prev = h->prev;
    l->next = h;
    h->prev->next = l;
    h->prev = l;
}

/* Takes l out of its list, in constant time. */
static inline void link_del(struct link *l)
{
    l->prev->next = l->next;
    l->next->prev = l->prev;
    link_init(l);
}

/* A set of non-null pointers by u64 key (open addressing, grown to stay
 * at most half full; nothing is taken out but the whole). */
struct kv_set {
    uint64_t *key;
    void **val;               /* NULL: an empty slot */
    size_t n, cap;
};

/* What a client's waits and watches are filed under: its record in one
 * of the store's buckets (the first member of struct waiter and watcher). */
struct by_client {
    struct by_client *next;
    uint64_t client;
};

/* A value pushed on a key's queue (QUEUE_PUSH), oldest first. */
struct qitem {
    struct qitem *next;
    size_t len;
    uint8_t data[];
};

struct entry {
    struct entry *next;       /* in its bucket */
    uint64_t hash;
    uint8_t *key;
    size_t klen;
    uint8_t *val;             /* malloc'd when set (may be NULL for an empty value) */
    size_t vlen;
    bool set;
    struct link waiting;      /* the waits that still count it (struct wref), oldest first */
    struct link watching;     /* its watches (struct watch), one per watching client */
    struct qitem *q_head, *q_tail; /* its queue */
    size_t q_len;
    uint64_t mark;            /* the last pass that met it (kv->mark): a key named
                               * twice in one WAIT is counted once */
};

/* One key of a wait, in its entry's list until the key is set. */
struct wref {
    struct link l;            /* first: a link in e->waiting is its wref */
    struct waiter *w;
    struct entry *e;
};

struct waiter {               /* a client's wait */
    struct by_client k;       /* first: its bucket's record is the waiter */
    size_t left;              /* its keys not set yet */
    struct wref *refs;        /* the entries it waits for (each once) */
    size_t n_on;
};

/* One client's watch of one key, in the entry's list. */
struct watch {
    struct link l;            /* first: a link in e->watching is its watch */
    uint64_t client;
};

struct watcher {              /* a client's watches */
    struct by_client k;       /* first: its bucket's record is the watcher */
    struct kv_set on;         /* entry (its address) -> the client's struct watch */
};

struct store_kv {
    store_reply_fn reply;
    void *ctx;
    struct entry **b;
    size_t nb, n_entries;
    int64_t n_set;
    uint64_t mark;
    struct by_client *w[KV_BUCKETS];     /* waiters */
    struct by_client *watch[KV_BUCKETS]; /* watchers */
    struct kv_set dropped;    /* clients the reply callback refused in this query */
};

/* store_kv.c */
struct entry *kv_find(const struct store_kv *kv, const uint8_t *k, size_t n);
/* The entry of key k, made when absent; NULL when out of memory. */
struct entry *kv_entry_of(struct store_kv *kv, const uint8_t *k, size_t n);
/* Whether a wait for e is over: set, or its queue holds a value. */
bool kv_ready(const struct entry *e);
/* The place of client's record in buckets (a null one when it has none). */
struct by_client **kv_slot(struct by_client **buckets, uint64_t client);
/* The value of key in s, or NULL. */
void *kv_set_get(const struct kv_set *s, uint64_t key);
/* Adds key with val (not NULL, key not in s): STORE_OK or STORE_ENOMEM. */
int kv_set_add(struct kv_set *s, uint64_t key, void *val);
/* Empties s, freeing its slots (not what its values point at). */
void kv_set_free(struct kv_set *s);
/* Every wait on e counts it as set; those left with none are answered. */
int kv_wake(struct store_kv *kv, struct entry *e);
/* Waits on e count it as set, oldest first, until one wait is answered
 * (a value pushed on e's queue is for one waiting client). */
int kv_wake_one(struct store_kv *kv, struct entry *e);
/* WAIT of the n keys under c. */
int kv_wait(struct store_kv *kv, uint64_t client, struct ts_cursor c, uint64_t n);
/* The client's wait ends unanswered (CANCEL_WAIT, or it is gone). */
void kv_wait_end(struct store_kv *kv, uint64_t client);
/* Frees every client's wait. */
void kv_waiters_free(struct store_kv *kv);
/* Sends bytes to client: STORE_OK, STORE_ENOMEM, or KV_REFUSED when the
 * reply callback refused it, now or earlier in this query (then nothing
 * more is sent to it, and store_kv_query ends its wait and watches once
 * the query is served). */
int kv_answer(struct store_kv *kv, uint64_t client, const void *p, size_t n);
int kv_answer_byte(struct store_kv *kv, uint64_t client, uint8_t b);
int kv_answer_i64(struct store_kv *kv, uint64_t client, int64_t v);
/* Writes a string as TCPStore does (its u64 length, then its bytes) at
 * out; returns the end of what it wrote. */
uint8_t *kv_put_vec(uint8_t *out, const uint8_t *v, size_t n);
/* A sentence naming key (at most 200 bytes of it): STORE_FAIL. */
int kv_fail(char *why, size_t len, const char *fmt, const uint8_t *key, size_t klen);

/* store_query.c */
/* Sets e's value to a copy of v[0..n), tells its watchers, wakes its waits. */
int kv_put(struct store_kv *kv, struct entry *e, const uint8_t *v, size_t n);

/* store_watch.c */
/* WATCH_KEY: client is told of every change of the key from now on, once
 * however often it asked; past KV_WATCHES_MAX keys, STORE_FAIL with why. */
int kv_watch(struct store_kv *kv, uint64_t client, struct entry *e, char *why, size_t len);
/* Tells e's watchers of a change (enum ts_watch): its old and new value. */
int kv_notify(struct store_kv *kv, struct entry *e, uint8_t type, const uint8_t *old,
              size_t old_len, const uint8_t *new_val, size_t new_len);
/* The client's watches end. */
void kv_watch_end(struct store_kv *kv, uint64_t client);
/* QUEUE_PUSH, QUEUE_POP, QUEUE_LEN. */
int kv_queue(struct store_kv *kv, uint64_t client, enum ts_op op, struct ts_cursor c);
/* Frees the values queued on e. */
void kv_queue_free(struct entry *e);
/* Frees every client's watches. */
void kv_watchers_free(struct store_kv *kv);

#endif
