/* store_query.c - the queries of a step's store, as PyTorch's TCPStore
 * answers them (see store_kv.h): one body in, its answers out through
 * the store's reply callback; and what spans the keys, waits and watches
 * (the store's end, a client's going). */
#include "store_kv_private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void store_kv_free(struct store_kv *kv)
{
    if (!kv)
        return;
    for (size_t i = 0; kv->b && i < kv->nb; i++)
        for (struct entry *e = kv->b[i], *next; e; e = next) {
            next = e->next;
            kv_queue_free(e);
            free(e->key);
            free(e->val);
            free(e);
        }
    kv_waiters_free(kv);
    kv_watchers_free(kv);
    kv_set_free(&kv->dropped);
    free(kv->b);
    free(kv);
}

void store_kv_gone(struct store_kv *kv, uint64_t client)
{
    kv_wait_end(kv, client);
    kv_watch_end(kv, client);
}

void store_kv_gone_group(struct store_kv *kv, uint32_t group)
{
    for (size_t i = 0; i < KV_BUCKETS; i++) {
        for (struct by_client *b = kv->w[i], *next; b; b = next) {
            next = b->next;
            if (b->client >> 32 == group)
                kv_wait_end(kv, b->client);
        }
        for (struct by_client *b = kv->watch[i], *next; b; b = next) {
            next = b->next;
            if (b->client >> 32 == group)
                kv_watch_end(kv, b->client);
        }
    }
}

int kv_put(struct store_kv *kv, struct entry *e, const uint8_t *v, size_t n)
{
    uint8_t *copy = n ? malloc(n) : NULL;
    if (n && !copy)
        return STORE_ENOMEM;
    if (n)
        memcpy(copy, v, n);
    if (kv_notify(kv, e, e->set ? TS_KEY_UPDATED : TS_KEY_CREATED, e->val, e->set ? e->vlen : 0,
                  v, n) < 0) {
        free(copy);
        return STORE_ENOMEM;
    }
    free(e->val);
    e->val = copy;
    e->vlen = n;
    kv->n_set += !e->set;
    e->set = true;
    return kv_wake(kv, e);
}

static int answer_vec(struct store_kv *kv, uint64_t client, const uint8_t *v, size_t n)
{
    uint8_t *b = malloc(8 + n);
    if (!b)
        return STORE_ENOMEM;
    kv_put_vec(b, v, n);
    int rc = kv_answer(kv, client, b, 8 + n);
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
            return kv_fail(why, len, "ADD to key '%.*s', whose value is not a number", e->key,
                           e->klen);
        v = (int64_t)((uint64_t)cur + (uint64_t)delta);
    }
    char text[24];
    int tn = snprintf(text, sizeof text, "%" PRId64, v);
    int rc = kv_put(kv, e, (const uint8_t *)text, (size_t)tn);
    return rc < 0 ? rc : kv_answer_i64(kv, client, v);
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
        rc = kv_put(kv, e, des, dl);
    } else if (e->vlen == el && (el == 0 || memcmp(e->val, exp, el) == 0)) {
        rc = kv_put(kv, e, des, dl);
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
        struct entry *e = kv_find(kv, k, kl);
        if (!e || !e->set)
            return kv_fail(why, len, "MULTI_GET of key '%.*s', which is not set", k, kl);
        total += 8 + e->vlen;
    }
    if (total > STORE_ANSWER_MAX)
        return kv_fail(why, len, "MULTI_GET whose answer is over 64 MiB (from key '%.*s')", k,
                       kl);
    uint8_t *b = malloc(total ? total : 1), *o = b;
    if (!b)
        return STORE_ENOMEM;
    while (ts_string(&c, &k, &kl) == 0) {
        struct entry *e = kv_find(kv, k, kl);
        o = kv_put_vec(o, e->val, e->vlen);
    }
    int rc = kv_answer(kv, client, b, total);
    free(b);
    return rc;
}

/* APPEND to a key that is set: past TS_VALUE_MAX fails. The old value is
 * the new one's start, told to watchers from the joined copy. */
static int append(struct store_kv *kv, struct entry *e, const uint8_t *v, size_t vl, char *why,
                  size_t why_len)
{
    if (e->vlen + vl > TS_VALUE_MAX)
        return kv_fail(why, why_len, "APPEND making key '%.*s' longer than 32 MiB less 64 KiB "
                       "(the longest value served)", e->key, e->klen);
    uint8_t *joined = realloc(e->val, e->vlen + vl ? e->vlen + vl : 1);
    if (!joined)
        return STORE_ENOMEM;
    e->val = joined;
    if (vl)
        memcpy(joined + e->vlen, v, vl);
    if (kv_notify(kv, e, TS_KEY_UPDATED, joined, e->vlen, joined, e->vlen + vl) < 0)
        return STORE_ENOMEM;
    e->vlen += vl;
    return kv_wake(kv, e);
}

/* SET, APPEND and MULTI_SET (no answer). */
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
        struct entry *e = kv_entry_of(kv, k, kl);
        if (!e)
            return STORE_ENOMEM;
        int rc = op == TS_APPEND && e->set ? append(kv, e, v, vl, why, why_len)
                                           : kv_put(kv, e, v, vl);
        if (rc < 0)
            return rc;
    }
    return STORE_OK;
}

/* CHECK: whether every key is set (or its queue holds a value). */
static int check(struct store_kv *kv, uint64_t client, struct ts_cursor c)
{
    const uint8_t *k;
    size_t kl;
    bool all = true;
    while (all && ts_string(&c, &k, &kl) == 0) {
        const struct entry *e = kv_find(kv, k, kl);
        all = e && kv_ready(e);
    }
    return kv_answer_byte(kv, client, all ? TS_READY : TS_NOT_READY);
}

/* DELETE_KEY: 1 when the key was set. */
static int delete_key(struct store_kv *kv, uint64_t client, struct entry *e)
{
    int64_t gone = e && e->set;
    if (gone) {
        if (kv_notify(kv, e, TS_KEY_DELETED, e->val, e->vlen, NULL, 0) < 0)
            return STORE_ENOMEM;
        free(e->val);
        e->val = NULL;
        e->vlen = 0;
        e->set = false;
        kv->n_set--;
    }
    return kv_answer_i64(kv, client, gone);
}

/* Queries on one key: GET, ADD, DELETE_KEY, COMPARE_SET, WATCH_KEY. */
static int one_key(struct store_kv *kv, uint64_t client, enum ts_op op, struct ts_cursor c,
                   char *why, size_t len)
{
    const uint8_t *k;
    size_t kl;
    uint64_t delta = 0;
    ts_string(&c, &k, &kl);
    if (op == TS_GET || op == TS_DELETE) {
        struct entry *e = kv_find(kv, k, kl);
        if (op == TS_DELETE)
            return delete_key(kv, client, e);
        if (!e || !e->set)
            return kv_fail(why, len, "GET of key '%.*s', which is not set", k, kl);
        return answer_vec(kv, client, e->val, e->vlen);
    }
    struct entry *e = kv_entry_of(kv, k, kl);
    if (!e)
        return STORE_ENOMEM;
    if (op == TS_WATCH_KEY)
        return kv_watch(kv, client, e, why, len);
    if (op == TS_COMPARE_SET)
        return compare_set(kv, client, e, c);
    ts_u64(&c, &delta);
    return add(kv, client, e, (int64_t)delta, why, len);
}

/* One query, as store_kv_query serves it (KV_REFUSED counting as done). */
static int serve(struct store_kv *kv, uint64_t client, enum ts_op op, const uint8_t *body,
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
    case TS_GET: case TS_ADD: case TS_DELETE: case TS_COMPARE_SET: case TS_WATCH_KEY:
        return one_key(kv, client, op, c, why, why_len);
    case TS_QUEUE_PUSH: case TS_QUEUE_POP: case TS_QUEUE_LEN:
        return kv_queue(kv, client, op, c);
    case TS_CHECK:
        ts_u64(&c, &n);
        return check(kv, client, c);
    case TS_WAIT:
        ts_u64(&c, &n);
        return kv_wait(kv, client, c, n);
    case TS_MULTI_GET:
        ts_u64(&c, &n);
        return multi_get(kv, client, c, why, why_len);
    case TS_NUM_KEYS:
        return kv_answer_i64(kv, client, kv->n_set);
    case TS_CANCEL_WAIT:
        kv_wait_end(kv, client);
        return kv_answer_byte(kv, client, TS_WAIT_CANCELED);
    default:
        snprintf(why, why_len, "%s, a query the agent answers itself, not the store",
                 ts_op_name(op));
        return STORE_FAIL;
    }
}

int store_kv_query(struct store_kv *kv, uint64_t client, enum ts_op op, const uint8_t *body,
                   size_t len, char *why, size_t why_len)
{
    int rc = serve(kv, client, op, body, len, why, why_len);
    for (size_t i = 0; kv->dropped.n && i < kv->dropped.cap; i++)
        if (kv->dropped.val[i]) /* the clients the reply callback refused go now */
            store_kv_gone(kv, kv->dropped.key[i]);
    if (kv->dropped.n)
        kv_set_free(&kv->dropped);
    return rc == KV_REFUSED ? STORE_OK : rc;
}
