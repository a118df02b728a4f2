/* store_kv.c - the keys, values and waits of a step's store (see
 * store_kv.h). Keys hash into chained buckets; an entry, once made (set,
 * or waited for), lives as long as the store, so that a waiting client may
 * point at it whatever happens to its value. */
#include "store_kv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAITER_BUCKETS 1024

struct entry {
    struct entry *next;       /* in its bucket */
    uint64_t hash;
    uint8_t *key;
    size_t klen;
    uint8_t *val;             /* malloc'd when set (may be NULL for an empty value) */
    size_t vlen;
    bool set;
    uint64_t *waiting;        /* clients waiting for it */
    size_t n_waiting, cap_waiting;
};

struct waiter {               /* a client's wait */
    struct waiter *next;
    uint64_t client;
    size_t left;              /* its keys not set yet */
    struct entry **on;        /* the entries it waits for */
    bool *counted;            /* per entry: set since, counted in left */
    size_t n_on;
};

struct store_kv {
    store_reply_fn reply;
    void *ctx;
    struct entry **b;
    size_t nb, n_entries;
    int64_t n_set;
    struct waiter *w[WAITER_BUCKETS];
};

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

void store_kv_free(struct store_kv *kv)
{
    if (!kv)
        return;
    for (size_t i = 0; kv->b && i < kv->nb; i++)
        for (struct entry *e = kv->b[i], *next; e; e = next) {
            next = e->next;
            free(e->key);
            free(e->val);
            free(e->waiting);
            free(e);
        }
    for (size_t i = 0; i < WAITER_BUCKETS; i++)
        for (struct waiter *w = kv->w[i], *next; w; w = next) {
            next = w->next;
            free(w->on);
            free(w->counted);
            free(w);
        }
    free(kv->b);
    free(kv);
}

static struct entry *find(const struct store_kv *kv, const uint8_t *k, size_t n)
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

/* The entry of key k, made when absent; NULL when out of memory. */
static struct entry *entry_of(struct store_kv *kv, const uint8_t *k, size_t n)
{
    struct entry *e = find(kv, k, n);
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

static struct waiter **waiter_slot(struct store_kv *kv, uint64_t client)
{
    struct waiter **w = &kv->w[client % WAITER_BUCKETS];
    while (*w && (*w)->client != client)
        w = &(*w)->next;
    return w;
}

static void waiter_drop(struct waiter **slot)
{
    struct waiter *w = *slot;
    *slot = w->next;
    free(w->on);
    free(w->counted);
    free(w);
}

static int answer_byte(struct store_kv *kv, uint64_t client, uint8_t b)
{
    return kv->reply(kv->ctx, client, &b, 1) < 0 ? STORE_ENOMEM : STORE_OK;
}

static int answer_i64(struct store_kv *kv, uint64_t client, int64_t v)
{
    uint8_t b[8];
    ts_put64(b, (uint64_t)v);
    return kv->reply(kv->ctx, client, b, 8) < 0 ? STORE_ENOMEM : STORE_OK;
}

/* Every client waiting for e is told one key less; a client with none
 * left is answered. */
static int wake(struct store_kv *kv, struct entry *e)
{
    int rc = STORE_OK;
    for (size_t i = 0; i < e->n_waiting; i++) {
        struct waiter **slot = waiter_slot(kv, e->waiting[i]);
        if (!*slot)
            continue;
        for (size_t j = 0; j < (*slot)->n_on; j++)
            if ((*slot)->on[j] == e && !(*slot)->counted[j]) {
                (*slot)->counted[j] = true;
                break;
            }
        if (--(*slot)->left == 0) {
            waiter_drop(slot);
            if (answer_byte(kv, e->waiting[i], TS_STOP_WAITING) < 0)
                rc = STORE_ENOMEM;
        }
    }
    e->n_waiting = 0;
    return rc;
}

/* Sets e's value to a copy of v[0..n), and wakes its waiters. */
static int put(struct store_kv *kv, struct entry *e, const uint8_t *v, size_t n)
{
    uint8_t *copy = n ? malloc(n) : NULL;
    if (n && !copy)
        return STORE_ENOMEM;
    if (n)
        memcpy(copy, v, n);
    free(e->val);
    e->val = copy;
    e->vlen = n;
    kv->n_set += !e->set;
    e->set = true;
    return wake(kv, e);
}

void store_kv_gone(struct store_kv *kv, uint64_t client)
{
    struct waiter **slot = waiter_slot(kv, client);
    if (!*slot)
        return;
    for (size_t i = 0; i < (*slot)->n_on; i++) {
        struct entry *e = (*slot)->on[i];
        if ((*slot)->counted[i])
            continue; /* it left e's list when e was set */
        for (size_t j = 0; j < e->n_waiting; j++)
            if (e->waiting[j] == client) {
                e->waiting[j] = e->waiting[--e->n_waiting];
                break;
            }
    }
    waiter_drop(slot);
}

void store_kv_gone_group(struct store_kv *kv, uint32_t group)
{
    for (size_t i = 0; i < WAITER_BUCKETS; i++)
        for (struct waiter *w = kv->w[i], *next; w; w = next) {
            next = w->next;
            if (w->client >> 32 == group)
                store_kv_gone(kv, w->client);
        }
}

void store_kv_waiters(const struct store_kv *kv,
                      void (*fn)(void *ctx, uint64_t client, const uint8_t *key, size_t len),
                      void *ctx)
{
    for (size_t i = 0; i < WAITER_BUCKETS; i++)
        for (const struct waiter *w = kv->w[i]; w; w = w->next)
            for (size_t j = 0; j < w->n_on; j++)
                if (!w->counted[j]) {
                    fn(ctx, w->client, w->on[j]->key, w->on[j]->klen);
                    break;
                }
}

int64_t store_kv_size(const struct store_kv *kv)
{
    return kv->n_set;
}

/* --- the queries ---------------------------------------------------- */

static int fail(char *why, size_t len, const char *fmt, const uint8_t *key, size_t klen)
{
    snprintf(why, len, fmt, (int)(klen > 200 ? 200 : klen), (const char *)key);
    return STORE_FAIL;
}

static int add_waiting(struct entry *e, uint64_t client)
{
    if (e->n_waiting == e->cap_waiting) {
        size_t cap = e->cap_waiting ? 2 * e->cap_waiting : 4;
        uint64_t *w = realloc(e->waiting, cap * sizeof *w);
        if (!w)
            return STORE_ENOMEM;
        e->waiting = w;
        e->cap_waiting = cap;
    }
    e->waiting[e->n_waiting++] = client;
    return STORE_OK;
}

/* WAIT: answered now when every key is set, else once the last is. */
static int wait_keys(struct store_kv *kv, uint64_t client, struct ts_cursor c, uint64_t n)
{
    store_kv_gone(kv, client); /* a client waits once at a time */
    struct waiter *w = calloc(1, sizeof *w);
    if (!w || !(w->on = calloc(n ? n : 1, sizeof *w->on)) ||
        !(w->counted = calloc(n ? n : 1, sizeof *w->counted))) {
        if (w)
            free(w->on);
        free(w);
        return STORE_ENOMEM;
    }
    w->client = client;
    w->next = kv->w[client % WAITER_BUCKETS];
    kv->w[client % WAITER_BUCKETS] = w;
    const uint8_t *k;
    size_t kl;
    while (ts_string(&c, &k, &kl) == 0) {
        struct entry *e = entry_of(kv, k, kl);
        if (!e || (!e->set && add_waiting(e, client) < 0)) {
            store_kv_gone(kv, client);
            return STORE_ENOMEM;
        }
        if (!e->set)
            w->on[w->n_on++] = e;
    }
    w->left = w->n_on;
    if (w->left > 0)
        return STORE_OK;
    waiter_drop(waiter_slot(kv, client));
    return answer_byte(kv, client, TS_STOP_WAITING);
}

/* A value's bytes with its u64 length in front, appended to out. */
static uint8_t *put_vec(uint8_t *out, const uint8_t *v, size_t n)
{
    ts_put64(out, n);
    if (n)
        memcpy(out + 8, v, n);
    return out + 8 + n;
}

static int answer_vec(struct store_kv *kv, uint64_t client, const uint8_t *v, size_t n)
{
    uint8_t *b = malloc(8 + n);
    if (!b)
        return STORE_ENOMEM;
    put_vec(b, v, n);
    int rc = kv->reply(kv->ctx, client, b, 8 + n) < 0 ? STORE_ENOMEM : STORE_OK;
    free(b);
    return rc;
}

/* ADD: the value read as a decimal number (what TCPStore's std::stoll
 * takes: spaces, a sign, digits, anything after), plus delta. */
static int add(struct store_kv *kv, uint64_t client, struct entry *e, int64_t delta, char *why,
               size_t len)
{
    int64_t v = delta;
    if (e->set) {
        char *num = malloc(e->vlen + 1), *end;
        if (!num)
            return STORE_ENOMEM;
        if (e->vlen)
            memcpy(num, e->val, e->vlen);
        num[e->vlen] = 0;
        errno = 0;
        long long cur = strtoll(num, &end, 10);
        bool bad = end == num || errno;
        free(num);
        if (bad)
            return fail(why, len, "ADD to key '%.*s', whose value is not a number", e->key,
                        e->klen);
        v = (int64_t)((uint64_t)cur + (uint64_t)delta);
    }
    char text[24];
    int tn = snprintf(text, sizeof text, "%" PRId64, v);
    int rc = put(kv, e, (const uint8_t *)text, (size_t)tn);
    return rc < 0 ? rc : answer_i64(kv, client, v);
}

/* COMPARE_SET as TCPStore answers it: a key not set takes the new value
 * only when the expected one is empty, and the answer is the new value,
 * else the expected one; a set key takes it when it holds the expected
 * one, and the answer is what it holds then. */
static int compare_set(struct store_kv *kv, uint64_t client, struct entry *e, struct ts_cursor c)
{
    const uint8_t *exp, *des;
    size_t el, dl;
    ts_string(&c, &exp, &el);
    ts_string(&c, &des, &dl);
    int rc = STORE_OK;
    if (!e->set) {
        if (el != 0)
            return answer_vec(kv, client, exp, el);
        rc = put(kv, e, des, dl);
    } else if (e->vlen == el && (el == 0 || memcmp(e->val, exp, el) == 0)) {
        rc = put(kv, e, des, dl);
    }
    return rc < 0 ? rc : answer_vec(kv, client, e->val, e->vlen);
}

/* MULTI_GET: every key's value in turn; all must be set. */
static int multi_get(struct store_kv *kv, uint64_t client, struct ts_cursor c, char *why,
                     size_t len)
{
    struct ts_cursor scan = c;
    const uint8_t *k;
    size_t kl, total = 0;
    while (ts_string(&scan, &k, &kl) == 0) {
        struct entry *e = find(kv, k, kl);
        if (!e || !e->set)
            return fail(why, len, "MULTI_GET of key '%.*s', which is not set", k, kl);
        total += 8 + e->vlen;
    }
    if (total > STORE_ANSWER_MAX)
        return fail(why, len, "MULTI_GET whose answer is over 64 MiB (from key '%.*s')", k,
                    kl);
    uint8_t *b = malloc(total ? total : 1), *o = b;
    if (!b)
        return STORE_ENOMEM;
    while (ts_string(&c, &k, &kl) == 0) {
        struct entry *e = find(kv, k, kl);
        o = put_vec(o, e->val, e->vlen);
    }
    int rc = kv->reply(kv->ctx, client, b, total) < 0 ? STORE_ENOMEM : STORE_OK;
    free(b);
    return rc;
}

/* SET, APPEND and MULTI_SET (no answer); an APPEND past TS_VALUE_MAX
 * fails. */
static int store_values(struct store_kv *kv, enum ts_op op, struct ts_cursor c, char *why,
                        size_t why_len)
{
    uint64_t n = 1;
    if (op == TS_MULTI_SET)
        ts_u64(&c, &n);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *k, *v;
        size_t kl, vl;
        ts_string(&c, &k, &kl);
        ts_string(&c, &v, &vl);
        struct entry *e = entry_of(kv, k, kl);
        if (!e)
            return STORE_ENOMEM;
        if (op != TS_APPEND || !e->set) {
            if (put(kv, e, v, vl) < 0)
                return STORE_ENOMEM;
            continue;
        }
        if (e->vlen + vl > TS_VALUE_MAX)
            return fail(why, why_len, "APPEND making key '%.*s' longer than 32 MiB", k, kl);
        uint8_t *joined = realloc(e->val, e->vlen + vl ? e->vlen + vl : 1);
        if (!joined)
            return STORE_ENOMEM;
        if (vl)
            memcpy(joined + e->vlen, v, vl);
        e->val = joined;
        e->vlen += vl;
        if (wake(kv, e) < 0)
            return STORE_ENOMEM;
    }
    return STORE_OK;
}

/* CHECK: whether every key is set. */
static int check(struct store_kv *kv, uint64_t client, struct ts_cursor c)
{
    const uint8_t *k;
    size_t kl;
    bool all = true;
    while (all && ts_string(&c, &k, &kl) == 0) {
        const struct entry *e = find(kv, k, kl);
        all = e && e->set;
    }
    return answer_byte(kv, client, all ? TS_READY : TS_NOT_READY);
}

/* Queries on one key: GET, ADD, DELETE_KEY, COMPARE_SET. */
static int one_key(struct store_kv *kv, uint64_t client, enum ts_op op, struct ts_cursor c,
                   char *why, size_t len)
{
    const uint8_t *k;
    size_t kl;
    uint64_t delta = 0;
    ts_string(&c, &k, &kl);
    if (op == TS_GET || op == TS_DELETE) {
        struct entry *e = find(kv, k, kl);
        if (op == TS_GET && (!e || !e->set))
            return fail(why, len, "GET of key '%.*s', which is not set", k, kl);
        if (op == TS_GET)
            return answer_vec(kv, client, e->val, e->vlen);
        int64_t gone = e && e->set;
        if (gone) {
            free(e->val);
            e->val = NULL;
            e->vlen = 0;
            e->set = false;
            kv->n_set--;
        }
        return answer_i64(kv, client, gone);
    }
    struct entry *e = entry_of(kv, k, kl);
    if (!e)
        return STORE_ENOMEM;
    if (op == TS_COMPARE_SET)
        return compare_set(kv, client, e, c);
    ts_u64(&c, &delta);
    return add(kv, client, e, (int64_t)delta, why, len);
}

int store_kv_query(struct store_kv *kv, uint64_t client, enum ts_op op, const uint8_t *body,
                   size_t len, char *why, size_t why_len)
{
    size_t used;
    if ((unsigned)op > TS_OP_MAX || ts_body_len(op, body, len, &used) != 1 || used != len) {
        snprintf(why, why_len, "a malformed %s query", ts_op_name(op));
        return STORE_FAIL;
    }
    struct ts_cursor c = {body, len};
    uint64_t n = 0;
    switch (op) {
    case TS_SET: case TS_APPEND: case TS_MULTI_SET:
        return store_values(kv, op, c, why, why_len);
    case TS_GET: case TS_ADD: case TS_DELETE: case TS_COMPARE_SET:
        return one_key(kv, client, op, c, why, why_len);
    case TS_CHECK:
        ts_u64(&c, &n);
        return check(kv, client, c);
    case TS_WAIT:
        ts_u64(&c, &n);
        return wait_keys(kv, client, c, n);
    case TS_MULTI_GET:
        ts_u64(&c, &n);
        return multi_get(kv, client, c, why, why_len);
    case TS_NUM_KEYS:
        return answer_i64(kv, client, kv->n_set);
    case TS_CANCEL_WAIT:
        store_kv_gone(kv, client);
        return answer_byte(kv, client, TS_WAIT_CANCELED);
    default:
        snprintf(why, why_len, "%s, a query cohort's store does not serve", ts_op_name(op));
        return STORE_FAIL;
    }
}
