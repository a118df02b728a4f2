/* store_kv_test.h - what the store's unit tests share: the answers a
 * reply callback catches and those a test wants, queries written as
 * TCPStore's client writes them, and a fresh store. Included by
 * tests/unit/test_store_kv*.c after tap.h. */
#ifndef COHORT_STORE_KV_TEST_H
#define COHORT_STORE_KV_TEST_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "store_kv.h"

/* --- answers caught, and those wanted ------------------------------- */

struct answer {
    uint64_t client;
    uint8_t *p;
    size_t n;
};

TAP_UNUSED static struct answers {
    struct answer *a;
    size_t n, cap;
} rec, want;

TAP_UNUSED static bool reply_fails; /* the callback says out of memory */
TAP_UNUSED static uint64_t refused = UINT64_MAX; /* the callback refuses this client's answers */
TAP_UNUSED static int n_refused;                 /* how often it did */

TAP_UNUSED static void push(struct answers *s, uint64_t client, const void *p, size_t n)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        if (!(s->a = realloc(s->a, s->cap * sizeof *s->a)))
            abort();
    }
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy)
        abort();
    memcpy(copy, p, n);
    s->a[s->n++] = (struct answer){client, copy, n};
}

TAP_UNUSED static int reply(void *ctx, uint64_t client, const uint8_t *p, size_t len)
{
    (void)ctx;
    if (reply_fails)
        return -1;
    if (client == refused) {
        n_refused++;
        return 1;
    }
    push(&rec, client, p, len);
    return 0;
}

TAP_UNUSED static void forget(struct answers *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->a[i].p);
    s->n = 0;
}

/* The answers caught are the ones wanted, in any order; both forgotten. */
TAP_UNUSED static bool answered(void)
{
    bool r = rec.n == want.n;
    for (size_t i = 0; r && i < want.n; i++) {
        r = false;
        for (size_t j = 0; !r && j < rec.n; j++)
            if (rec.a[j].p && rec.a[j].client == want.a[i].client &&
                rec.a[j].n == want.a[i].n && memcmp(rec.a[j].p, want.a[i].p, want.a[i].n) == 0) {
                free(rec.a[j].p);
                rec.a[j].p = NULL; /* matched */
                r = true;
            }
    }
    for (size_t j = 0; !r && j < rec.n; j++) {
        printf("# answer %zu: client %llx, %zu bytes:", j, (unsigned long long)rec.a[j].client,
               rec.a[j].n);
        for (size_t i = 0; rec.a[j].p && i < rec.a[j].n && i < 16; i++)
            printf(" %02x", rec.a[j].p[i]);
        printf("\n");
    }
    forget(&rec);
    forget(&want);
    return r;
}

TAP_UNUSED static void want_byte(uint64_t client, uint8_t b)
{
    push(&want, client, &b, 1);
}

TAP_UNUSED static void want_i64(uint64_t client, int64_t v)
{
    uint8_t b[8];
    ts_put64(b, (uint64_t)v);
    push(&want, client, b, 8);
}

TAP_UNUSED static void want_vec(uint64_t client, const void *v, size_t n)
{
    uint8_t b[256];
    if (n > sizeof b - 8)
        abort();
    ts_put64(b, n);
    memcpy(b + 8, v, n);
    push(&want, client, b, 8 + n);
}

/* Exactly one answer, to client: */
TAP_UNUSED static bool only_byte(uint64_t client, uint8_t b)
{
    want_byte(client, b);
    return answered();
}

TAP_UNUSED static bool only_i64(uint64_t client, int64_t v)
{
    want_i64(client, v);
    return answered();
}

TAP_UNUSED static bool only_str(uint64_t client, const char *v)
{
    want_vec(client, v, strlen(v));
    return answered();
}

/* --- queries written ------------------------------------------------ */

struct qb {
    uint8_t b[4096];
    size_t n;
};

TAP_UNUSED static void u64le(struct qb *q, uint64_t v)
{
    ts_put64(q->b + q->n, v);
    q->n += 8;
}

TAP_UNUSED static void bytes(struct qb *q, const void *p, size_t n)
{
    if (q->n + 8 + n > sizeof q->b)
        abort(); /* the test's own mistake */
    u64le(q, n);
    memcpy(q->b + q->n, p, n);
    q->n += n;
}

TAP_UNUSED static void str(struct qb *q, const char *s)
{
    bytes(q, s, strlen(s));
}

TAP_UNUSED static struct store_kv *kv;
TAP_UNUSED static char why[512];

TAP_UNUSED static int query(uint64_t client, enum ts_op op, const struct qb *q)
{
    why[0] = 0;
    return store_kv_query(kv, client, op, q->b, q->n, why, sizeof why);
}

/* op on one key (GET, DELETE_KEY, the queues), or a key and a value (SET,
 * APPEND); v NULL for none. */
TAP_UNUSED static int kq(uint64_t client, enum ts_op op, const char *k, const char *v)
{
    struct qb q = {.n = 0};
    str(&q, k);
    if (v)
        str(&q, v);
    return query(client, op, &q);
}

TAP_UNUSED static int add(uint64_t client, const char *k, int64_t delta)
{
    struct qb q = {.n = 0};
    str(&q, k);
    u64le(&q, (uint64_t)delta);
    return query(client, TS_ADD, &q);
}

TAP_UNUSED static int cas(uint64_t client, const char *k, const char *expected, const char *desired)
{
    struct qb q = {.n = 0};
    str(&q, k);
    str(&q, expected);
    str(&q, desired);
    return query(client, TS_COMPARE_SET, &q);
}

/* CHECK, WAIT or MULTI_GET of n keys. */
TAP_UNUSED static int keys(uint64_t client, enum ts_op op, size_t n, const char *const *k)
{
    struct qb q = {.n = 0};
    u64le(&q, n);
    for (size_t i = 0; i < n; i++)
        str(&q, k[i]);
    return query(client, op, &q);
}

TAP_UNUSED static int wait1(uint64_t client, const char *k)
{
    return keys(client, TS_WAIT, 1, &k);
}

TAP_UNUSED static int bare(uint64_t client, enum ts_op op)
{
    return query(client, op, &(struct qb){.n = 0});
}

TAP_UNUSED static void fresh(void)
{
    store_kv_free(kv);
    forget(&rec);
    if (store_kv_new(reply, NULL, &kv) != STORE_OK)
        abort();
}


struct seen {
    uint64_t client[16];
    char key[16][8];
    size_t n;
};

TAP_UNUSED static void saw(void *ctx, uint64_t client, const uint8_t *key, size_t len)
{
    struct seen *s = ctx;
    if (s->n < 16 && len < 8) {
        s->client[s->n] = client;
        memcpy(s->key[s->n], key, len);
        s->key[s->n][len] = 0;
    }
    s->n++;
}

/* client was reported once, waiting for key. */
TAP_UNUSED static bool reported(const struct seen *s, uint64_t client, const char *key)
{
    int times = 0;
    for (size_t i = 0; i < s->n && i < 16; i++)
        times += s->client[i] == client && strcmp(s->key[i], key) == 0;
    return times == 1;
}

/* Whether client waits, with the key store_kv_waiters reports for it. */
struct waiting_of {
    uint64_t client;
    bool found;
    const uint8_t *key;
    size_t len;
};

TAP_UNUSED static void waiting_seen(void *ctx, uint64_t client, const uint8_t *key, size_t len)
{
    struct waiting_of *w = ctx;
    if (client == w->client) {
        w->found = true;
        w->key = key;
        w->len = len;
    }
}

TAP_UNUSED static bool waiting(uint64_t client, const uint8_t **key, size_t *len)
{
    struct waiting_of w = {.client = client};
    store_kv_waiters(kv, waiting_seen, &w);
    *key = w.key;
    *len = w.len;
    return w.found;
}

#endif
