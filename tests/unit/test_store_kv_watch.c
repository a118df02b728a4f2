/* test_store_kv_watch.c - what the step's store (store_kv.h) serves of
 * torch 1.x's WATCH_KEY and torch 2.x's queues, and waits that name one
 * key many times: each change of a watched key told to each watcher as
 * TCPStore tells it (created, updated, deleted: the key, its old and new
 * value), once however often the watcher asked, no longer once it is gone;
 * at most 65536 keys watched by a client; a queue's values popped oldest
 * first with the queue's length, a push waking the client waiting longest;
 * answers the reply callback refuses (the holder closing the client): the
 * client gets nothing more and is gone once the query is served, a push
 * wakes the next waiter; a WAIT naming one key 2^20 times answered once, at
 * once, when it is set, and ended by its client's going without a trace. */
#include "tap.h"

#include "store_kv_test.h"

/* The message a watcher gets for a change of key k from old to new (NULL:
 * none, sent as an empty string). */
static void want_change(uint64_t client, uint8_t type, const char *k, const char *old,
                        const char *new)
{
    struct qb q = {.n = 0};
    q.b[q.n++] = type;
    str(&q, k);
    str(&q, old ? old : "");
    str(&q, new ? new : "");
    push(&want, client, q.b, q.n);
}

static void watches(void)
{
    fresh();
    ok(kq(9, TS_WATCH_KEY, "w", NULL) == STORE_OK && only_byte(9, TS_KEY_CALLBACK_REGISTERED),
       "WATCH_KEY is answered KEY_CALLBACK_REGISTERED");
    ok(kq(8, TS_WATCH_KEY, "w", NULL) == STORE_OK && only_byte(8, TS_KEY_CALLBACK_REGISTERED),
       "a second client watches the same key");
    want_change(9, TS_KEY_CREATED, "w", NULL, "1");
    want_change(8, TS_KEY_CREATED, "w", NULL, "1");
    ok(kq(1, TS_SET, "w", "1") == STORE_OK && answered(),
       "a SET of a new key: KEY_CREATED to both");
    want_change(9, TS_KEY_UPDATED, "w", "1", "2");
    want_change(8, TS_KEY_UPDATED, "w", "1", "2");
    ok(kq(1, TS_SET, "w", "2") == STORE_OK && answered(), "a SET again: KEY_UPDATED, old and new");
    want_i64(1, 5);
    want_change(9, TS_KEY_UPDATED, "w", "2", "5");
    want_change(8, TS_KEY_UPDATED, "w", "2", "5");
    ok(add(1, "w", 3) == STORE_OK && answered(), "an ADD: its answer and KEY_UPDATED");
    want_vec(1, "6", 1);
    want_change(9, TS_KEY_UPDATED, "w", "5", "6");
    want_change(8, TS_KEY_UPDATED, "w", "5", "6");
    ok(cas(1, "w", "5", "6") == STORE_OK && answered(), "a COMPARE_SET that sets: KEY_UPDATED");
    ok(cas(1, "w", "5", "7") == STORE_OK && only_str(1, "6"), "one that does not: told nothing");
    store_kv_gone(kv, 8);
    want_i64(1, 1);
    want_change(9, TS_KEY_DELETED, "w", "6", NULL);
    ok(kq(1, TS_DELETE, "w", NULL) == STORE_OK && answered(),
       "a DELETE_KEY: KEY_DELETED, to the watcher still there alone");
    ok(kq(1, TS_DELETE, "w", NULL) == STORE_OK && only_i64(1, 0), "a DELETE of no key: nothing");
    kq(9, TS_WATCH_KEY, "w", NULL);
    forget(&rec);
    want_change(9, TS_KEY_CREATED, "w", NULL, "x");
    ok(kq(1, TS_APPEND, "w", "x") == STORE_OK && answered(),
       "watched twice: told once (PyTorch's client runs its one callback per message)");
    want_change(9, TS_KEY_UPDATED, "w", "x", "xyz");
    ok(kq(1, TS_APPEND, "w", "yz") == STORE_OK && answered(),
       "an APPEND: KEY_UPDATED, the old value and the joined one");
    store_kv_gone_group(kv, 0);
    ok(kq(1, TS_SET, "w", "y") == STORE_OK && rec.n == 0, "its group gone: nobody is told");
}

/* A client that asks to watch a key 2000 times is told of each change
 * once; one client watches at most 65536 keys. */
static void duplicate_watches(void)
{
    fresh();
    int registered = 0;
    for (int i = 0; i < 2000; i++)
        registered += kq(9, TS_WATCH_KEY, "d", NULL) == STORE_OK &&
                      only_byte(9, TS_KEY_CALLBACK_REGISTERED);
    ok(registered == 2000, "2000 WATCH_KEYs of d by one client: each answered "
       "KEY_CALLBACK_REGISTERED (%d)", registered);
    want_change(9, TS_KEY_CREATED, "d", NULL, "1");
    ok(kq(1, TS_SET, "d", "1") == STORE_OK && answered(), "a SET of d: one message, not 2000");
    want_change(9, TS_KEY_UPDATED, "d", "1", "2");
    ok(kq(1, TS_SET, "d", "2") == STORE_OK && answered(), "the next change: one message");
    int failed = 0;
    for (int i = 1; i < 65536; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        failed += kq(9, TS_WATCH_KEY, k, NULL) != STORE_OK;
    }
    forget(&rec);
    ok(failed == 0 && kq(9, TS_WATCH_KEY, "d", NULL) == STORE_OK &&
           only_byte(9, TS_KEY_CALLBACK_REGISTERED),
       "65536 keys watched by the client; d again is no new one");
    ok(kq(9, TS_WATCH_KEY, "one more", NULL) == STORE_FAIL && strstr(why, "65536") && rec.n == 0,
       "a 65537th key fails, naming the limit (%s)", why);
    ok(kq(8, TS_WATCH_KEY, "one more", NULL) == STORE_OK &&
           only_byte(8, TS_KEY_CALLBACK_REGISTERED),
       "another client watches it");
}

/* Answers the reply callback refuses: the client is closed by the caller
 * (the holder, over its bound of what a node may have unsent). */
static void refusals(void)
{
    fresh();
    const uint8_t *key;
    size_t kl;
    kq(8, TS_WATCH_KEY, "w", NULL);
    kq(9, TS_WATCH_KEY, "w", NULL);
    kq(9, TS_WATCH_KEY, "w2", NULL);
    wait1(9, "z");
    forget(&rec);
    refused = 9;
    n_refused = 0;
    want_change(8, TS_KEY_CREATED, "w", NULL, "1");
    struct qb q = {.n = 0};
    u64le(&q, 2);
    str(&q, "w");
    str(&q, "1");
    str(&q, "w2");
    str(&q, "1");
    ok(query(1, TS_MULTI_SET, &q) == STORE_OK && answered() && n_refused == 1,
       "a MULTI_SET of two keys watched by a client whose messages are refused: the other "
       "watcher told, the refused one asked once (%d)", n_refused);
    refused = UINT64_MAX;
    want_change(8, TS_KEY_UPDATED, "w", "1", "2");
    ok(!waiting(9, &key, &kl) && kq(1, TS_SET, "w", "2") == STORE_OK && answered() &&
           kq(1, TS_SET, "w2", "2") == STORE_OK && kq(1, TS_SET, "z", "1") == STORE_OK &&
           rec.n == 0,
       "the refused client is gone once the query is served: its wait and watches ended");
    ok(wait1(2, "q") == STORE_OK && wait1(3, "q") == STORE_OK && rec.n == 0,
       "two clients wait for q, 2 first");
    refused = 2;
    ok(kq(1, TS_QUEUE_PUSH, "q", "a") == STORE_OK && only_byte(3, TS_STOP_WAITING) &&
           !waiting(2, &key, &kl),
       "a push whose answer to the oldest waiter is refused wakes the next");
    refused = 4;
    ok(kq(4, TS_QUEUE_POP, "q", NULL) == STORE_OK && rec.n == 0, "a refused QUEUE_POP");
    refused = UINT64_MAX;
    ok(kq(1, TS_QUEUE_LEN, "q", NULL) == STORE_OK && only_i64(1, 1),
       "leaves the value queued for another client");
}

/* A push wakes the client that has waited longest, as PyTorch's server
 * wakes them: in the order they came. */
static void arrival_order(void)
{
    fresh();
    ok(wait1(5, "q") == STORE_OK && wait1(6, "q") == STORE_OK && wait1(7, "q") == STORE_OK &&
           rec.n == 0,
       "clients 5, 6 and 7 wait for q, in that order");
    ok(kq(1, TS_QUEUE_PUSH, "q", "a") == STORE_OK && only_byte(5, TS_STOP_WAITING),
       "the first push wakes 5");
    ok(kq(1, TS_QUEUE_PUSH, "q", "b") == STORE_OK && only_byte(6, TS_STOP_WAITING),
       "the second 6, not the newest");
    ok(kq(1, TS_QUEUE_PUSH, "q", "c") == STORE_OK && only_byte(7, TS_STOP_WAITING),
       "the third 7");
}

static void queues(void)
{
    fresh();
    ok(kq(1, TS_QUEUE_LEN, "q", NULL) == STORE_OK && only_i64(1, 0), "QUEUE_LEN of none: 0");
    ok(kq(1, TS_QUEUE_POP, "q", NULL) == STORE_OK && only_i64(1, 0),
       "QUEUE_POP of an empty queue: its length 0 alone");
    const char *q1[] = {"q"};
    ok(keys(2, TS_CHECK, 1, q1) == STORE_OK && only_byte(2, TS_NOT_READY) &&
           wait1(2, "q") == STORE_OK && wait1(3, "q") == STORE_OK && rec.n == 0,
       "an empty queue's key is not ready: two clients wait for it");
    ok(kq(1, TS_QUEUE_PUSH, "q", "a") == STORE_OK && rec.n == 1 && rec.a[0].n == 1 &&
           rec.a[0].p[0] == TS_STOP_WAITING,
       "a push wakes one of them");
    forget(&rec);
    ok(kq(1, TS_QUEUE_PUSH, "q", "bc") == STORE_OK && rec.n == 1, "the next push the other");
    forget(&rec);
    ok(kq(1, TS_QUEUE_LEN, "q", NULL) == STORE_OK && only_i64(1, 2) &&
           keys(2, TS_CHECK, 1, q1) == STORE_OK && only_byte(2, TS_READY) &&
           wait1(2, "q") == STORE_OK && only_byte(2, TS_STOP_WAITING),
       "2 queued; the key is ready to CHECK and WAIT");
    struct qb q = {.n = 0};
    u64le(&q, 2);
    str(&q, "a");
    push(&want, 1, q.b, q.n);
    ok(kq(1, TS_QUEUE_POP, "q", NULL) == STORE_OK && answered(),
       "QUEUE_POP: the length, then the oldest value");
    q.n = 0;
    u64le(&q, 1);
    str(&q, "bc");
    push(&want, 1, q.b, q.n);
    ok(kq(1, TS_QUEUE_POP, "q", NULL) == STORE_OK && answered() &&
           kq(1, TS_QUEUE_LEN, "q", NULL) == STORE_OK && only_i64(1, 0),
       "then the next; the queue is empty");
    ok(store_kv_size(kv) == 0 && kq(1, TS_GET, "q", NULL) == STORE_FAIL,
       "a queue is not a key's value (GETNUMKEYS 0, GET fails)");
}

/* A WAIT of n copies of key (n up to 2^20). */
static int wait_copies(uint64_t client, const char *key, size_t n)
{
    size_t kl = strlen(key), len = 8 + n * (8 + kl);
    uint8_t *b = malloc(len), *o = b;
    if (!b)
        abort();
    ts_put64(o, n);
    o += 8;
    for (size_t i = 0; i < n; i++, o += 8 + kl) {
        ts_put64(o, kl);
        memcpy(o + 8, key, kl);
    }
    int rc = store_kv_query(kv, client, TS_WAIT, b, len, why, sizeof why);
    free(b);
    return rc;
}

static void repeated_waits(void)
{
    fresh();
    const uint8_t *key;
    size_t kl;
    ok(wait_copies(5, "r", TS_KEYS_MAX) == STORE_OK && rec.n == 0 && waiting(5, &key, &kl) &&
           kl == 1 && key[0] == 'r',
       "a WAIT naming key r 2^20 times waits for r");
    ok(wait_copies(6, "r", 3) == STORE_OK && wait1(7, "s") == STORE_OK, "two others wait");
    want_byte(5, TS_STOP_WAITING);
    want_byte(6, TS_STOP_WAITING);
    ok(kq(1, TS_SET, "r", "1") == STORE_OK && answered() && !waiting(5, &key, &kl),
       "r set: both answered once");
    ok(wait_copies(5, "t", TS_KEYS_MAX) == STORE_OK && wait_copies(6, "t", 2) == STORE_OK,
       "two wait again for t, named many times");
    store_kv_gone(kv, 5);
    ok(!waiting(5, &key, &kl) && waiting(6, &key, &kl), "one goes: its wait is gone alone");
    ok(kq(1, TS_SET, "t", "1") == STORE_OK && only_byte(6, TS_STOP_WAITING),
       "t set: the other answered");
    ok(kq(1, TS_SET, "s", "1") == STORE_OK && only_byte(7, TS_STOP_WAITING),
       "the third still waited for s, answered when it is set");
}

int main(void)
{
    watches();
    duplicate_watches();
    refusals();
    queues();
    arrival_order();
    repeated_waits();
    store_kv_free(kv);
    forget(&rec);
    free(rec.a);
    free(want.a);
    return tap_done();
}
