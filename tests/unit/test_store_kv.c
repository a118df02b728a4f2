/* test_store_kv.c - the keys, values and waits of a step's store
 * (store_kv.h), its answers caught by a reply callback: SET and GET of
 * empty and binary values, ADD's numbers, COMPARE_SET's four cases,
 * CHECK, WAITs held until their last key is set by any query that sets,
 * answered once, cancelled, dropped with their client or its group, and
 * listed by store_kv_waiters; DELETE_KEY, APPEND, MULTI_GET and
 * MULTI_SET; what the store does not serve and malformed bodies refused
 * with a sentence; 10,000 keys. test_store_kv_model.c checks a random
 * sequence of queries against a model, test_store_kv_watch.c WATCH_KEY,
 * the queues and waits that name a key many times. */
#include "tap.h"

#include "store_kv_test.h"

/* --- the queries one by one ---------------------------------------- */

static void set_get(void)
{
    fresh();
    ok(kq(1, TS_SET, "a", "hello") == STORE_OK && rec.n == 0, "SET answers nothing");
    ok(kq(1, TS_GET, "a", NULL) == STORE_OK && only_str(1, "hello"), "GET answers the value");
    ok(kq(2, TS_SET, "a", "") == STORE_OK && kq(2, TS_GET, "a", NULL) == STORE_OK &&
           only_str(2, ""),
       "an empty value is set and read back");
    struct qb q = {.n = 0};
    bytes(&q, "k\0ey", 4);
    bytes(&q, "v\0\xff", 3);
    ok(query(3, TS_SET, &q) == STORE_OK, "a binary key and value are set");
    q.n = 0;
    bytes(&q, "k\0ey", 4);
    want_vec(3, "v\0\xff", 3);
    ok(query(3, TS_GET, &q) == STORE_OK && answered(), "and read back");
    ok(kq(4, TS_SET, "", "empty key") == STORE_OK && kq(4, TS_GET, "", NULL) == STORE_OK &&
           only_str(4, "empty key"),
       "the empty key is a key");
    ok(kq(1, TS_SET, "a", "again") == STORE_OK && kq(1, TS_GET, "a", NULL) == STORE_OK &&
           only_str(1, "again") && store_kv_size(kv) == 3,
       "SET replaces; 3 keys");
    ok(kq(1, TS_GET, "nokey", NULL) == STORE_FAIL && strstr(why, "nokey") && rec.n == 0,
       "GET of a key not set fails, naming it (%s)", why);
    ok(bare(5, TS_NUM_KEYS) == STORE_OK && only_i64(5, 3), "GETNUMKEYS answers 3");
}

static void adds(void)
{
    fresh();
    ok(add(1, "c", 5) == STORE_OK && only_i64(1, 5), "ADD 5 to no key answers 5");
    ok(kq(1, TS_GET, "c", NULL) == STORE_OK && only_str(1, "5"), "and sets it to \"5\"");
    ok(add(2, "c", 3) == STORE_OK && only_i64(2, 8), "ADD 3 answers 8");
    ok(add(2, "c", -10) == STORE_OK && only_i64(2, -2), "ADD -10 answers -2");
    ok(add(2, "c", 0) == STORE_OK && only_i64(2, -2) && kq(2, TS_GET, "c", NULL) == 0 &&
           only_str(2, "-2"),
       "ADD 0 answers -2, the value \"-2\"");
    ok(add(2, "m", INT64_MIN) == STORE_OK && only_i64(2, INT64_MIN), "ADD of INT64_MIN");
    kq(1, TS_SET, "x", "abc");
    ok(add(1, "x", 1) == STORE_FAIL && strstr(why, "'x'") && rec.n == 0,
       "ADD to \"abc\" fails (%s)", why);
    kq(1, TS_SET, "e", "");
    ok(add(1, "e", 1) == STORE_FAIL && rec.n == 0, "ADD to an empty value fails");
    kq(1, TS_SET, "s", "  +7");
    ok(add(1, "s", 1) == STORE_OK && only_i64(1, 8), "ADD to \"  +7\" answers 8 (as stoll)");
    kq(1, TS_SET, "t", "12abc");
    ok(add(1, "t", 1) == STORE_OK && only_i64(1, 13), "ADD to \"12abc\" answers 13");
    kq(1, TS_SET, "z", "0000000000000000000000000000000000000007"); /* 40 digits */
    ok(add(1, "z", 1) == STORE_OK && only_i64(1, 8),
       "ADD 1 to 7 written with 40 digits answers 8, as std::stoll reads it");
    ok(store_kv_size(kv) == 7, "7 keys set (%lld)", (long long)store_kv_size(kv));
}

static void compare_sets(void)
{
    fresh();
    ok(cas(1, "k", "", "new") == STORE_OK && only_str(1, "new"),
       "COMPARE_SET of an absent key expecting empty answers the new value");
    ok(kq(1, TS_GET, "k", NULL) == STORE_OK && only_str(1, "new"), "and sets it");
    ok(cas(1, "j", "old", "new") == STORE_OK && only_str(1, "old"),
       "expecting a value of an absent key answers the expected one");
    ok(kq(1, TS_GET, "j", NULL) == STORE_FAIL && store_kv_size(kv) == 1, "and sets nothing");
    ok(cas(2, "k", "new", "newer") == STORE_OK && only_str(2, "newer"),
       "a present key holding the expected value is replaced, the answer the new one");
    ok(cas(2, "k", "new", "newest") == STORE_OK && only_str(2, "newer"),
       "a present key holding another value answers what it holds");
    ok(kq(2, TS_GET, "k", NULL) == STORE_OK && only_str(2, "newer"), "and is left alone");
    kq(2, TS_SET, "e", "");
    ok(cas(2, "e", "", "filled") == STORE_OK && only_str(2, "filled"),
       "a present empty value expected empty is replaced");
}

static void checks(void)
{
    fresh();
    const char *ab[] = {"a", "b"};
    ok(keys(1, TS_CHECK, 2, ab) == STORE_OK && only_byte(1, TS_NOT_READY), "CHECK of none set");
    kq(1, TS_SET, "a", "1");
    ok(keys(1, TS_CHECK, 2, ab) == STORE_OK && only_byte(1, TS_NOT_READY), "CHECK of one set");
    kq(1, TS_SET, "b", "");
    ok(keys(1, TS_CHECK, 2, ab) == STORE_OK && only_byte(1, TS_READY), "CHECK of both set");
    ok(keys(1, TS_CHECK, 0, ab) == STORE_OK && only_byte(1, TS_READY), "CHECK of no keys");
    ok(kq(1, TS_DELETE, "a", NULL) == 0 && only_i64(1, 1) &&
           keys(1, TS_CHECK, 2, ab) == STORE_OK && only_byte(1, TS_NOT_READY),
       "CHECK after a DELETE_KEY");
}

/* --- waits ---------------------------------------------------------- */

/* How many answers went to client, all of them STOP_WAITING (else -1);
 * forgets every answer. */
static int stops_to(uint64_t client)
{
    int n = 0;
    for (size_t i = 0; i < rec.n; i++)
        if (rec.a[i].client == client) {
            if (n >= 0 && rec.a[i].n == 1 && rec.a[i].p[0] == TS_STOP_WAITING)
                n++;
            else
                n = -1;
        }
    forget(&rec);
    return n;
}

/* The answers are STOP_WAITING to each of c[0..n), and no other. */
static bool stops_exactly(const uint64_t *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        want_byte(c[i], TS_STOP_WAITING);
    return answered();
}

static const char *const setters[] = {"SET", "ADD", "APPEND", "MULTI_SET", "COMPARE_SET"};

/* Client 9 sets k by setters[how]. */
static int set_by(size_t how, const char *k)
{
    struct qb q = {.n = 0};
    switch (how) {
    case 0: return kq(9, TS_SET, k, "v");
    case 1: return add(9, k, 1);
    case 2: return kq(9, TS_APPEND, k, "v");
    case 3:
        u64le(&q, 2);
        str(&q, "other");
        str(&q, "x");
        str(&q, k);
        str(&q, "v");
        return query(9, TS_MULTI_SET, &q);
    default: return cas(9, k, "", "v");
    }
}

static int by_set(const char *k)
{
    return set_by(0, k);
}

static void wait_set_by_each(void)
{
    for (size_t i = 0; i < 5; i++) {
        fresh();
        kq(9, TS_SET, "pre", "1");
        const char *k[] = {"pre", "k1", "k2"};
        const uint8_t *key = NULL;
        size_t kl = 0;
        bool held = keys(7, TS_WAIT, 3, k) == STORE_OK && rec.n == 0 &&
                    waiting(7, &key, &kl) && kl == 2 && memcmp(key, "k1", 2) == 0;
        held &= kq(9, TS_SET, "k1", "1") == STORE_OK && rec.n == 0 &&
                waiting(7, &key, &kl) && kl == 2 && memcmp(key, "k2", 2) == 0;
        int rc = set_by(i, "k2");
        ok(held && rc == STORE_OK && stops_to(7) == 1 && !waiting(7, &key, &kl),
           "a WAIT is held until its last key is set by %s, then answered once",
           setters[i]);
        ok(set_by(i, "k2") == STORE_OK && by_set("k1") == STORE_OK && stops_to(7) == 0,
           "setting its keys again answers nothing more");
    }
}

static void waits(void)
{
    fresh();
    kq(1, TS_SET, "a", "1");
    kq(1, TS_SET, "b", "");
    const char *ab[] = {"a", "b"}, *dd[] = {"d", "d"}, *dde[] = {"d", "d", "e"};
    ok(keys(2, TS_WAIT, 2, ab) == STORE_OK && only_byte(2, TS_STOP_WAITING),
       "a WAIT for keys all set is answered at once");
    ok(keys(2, TS_WAIT, 0, ab) == STORE_OK && only_byte(2, TS_STOP_WAITING),
       "a WAIT for no keys is answered at once");
    ok(keys(3, TS_WAIT, 2, dd) == STORE_OK && rec.n == 0 && by_set("d") == STORE_OK &&
           stops_to(3) == 1 && by_set("d") == 0 && rec.n == 0,
       "a WAIT listing a key twice is answered once when it is set");
    ok(keys(4, TS_WAIT, 3, dde) == STORE_OK && rec.n == 0, "a WAIT for d, d, e: held");
    store_kv_gone(kv, 4);
    ok(by_set("e") == STORE_OK && by_set("d") == STORE_OK && rec.n == 0,
       "its client gone, nothing answers it");

    ok(wait1(5, "c") == STORE_OK && wait1(6, "c") == STORE_OK && rec.n == 0 &&
           by_set("c") == STORE_OK && stops_exactly((uint64_t[]){5, 6}, 2),
       "two clients waiting for a key are both answered");
    const char *fg[] = {"f", "g"};
    const uint8_t *key = NULL;
    size_t kl = 0;
    ok(keys(8, TS_WAIT, 2, fg) == STORE_OK && by_set("f") == STORE_OK &&
           kq(9, TS_DELETE, "f", NULL) == STORE_OK && only_i64(9, 1),
       "a wait for f and g; f set, then deleted");
    bool waits = waiting(8, &key, &kl);
    ok(waits && kl == 1 && key[0] == 'g',
       "it waits for g, the key whose SET still ends it, not f, counted already ('%.*s')",
       (int)kl, key ? (const char *)key : "");
    ok(by_set("g") == STORE_OK && stops_to(8) == 1,
       "a key set while waited for counts though deleted after: g's SET answers it");
}

static void cancels(void)
{
    fresh();
    const uint8_t *key;
    size_t kl;
    ok(wait1(3, "c") == STORE_OK && rec.n == 0 && bare(3, TS_CANCEL_WAIT) == STORE_OK &&
           only_byte(3, TS_WAIT_CANCELED),
       "CANCEL_WAIT answers WAIT_CANCELED");
    ok(!waiting(3, &key, &kl) && by_set("c") == STORE_OK && rec.n == 0,
       "and the wait is over: a SET of its key answers nothing");
    ok(bare(4, TS_CANCEL_WAIT) == STORE_OK && only_byte(4, TS_WAIT_CANCELED),
       "CANCEL_WAIT with no wait answers WAIT_CANCELED too");

    ok(wait1(5, "g") == STORE_OK && wait1(6, "g") == STORE_OK, "two clients wait for g");
    store_kv_gone(kv, 5);
    store_kv_gone(kv, 77); /* never waited */
    ok(!waiting(5, &key, &kl) && waiting(6, &key, &kl) &&
           by_set("g") == STORE_OK && only_byte(6, TS_STOP_WAITING),
       "store_kv_gone drops one's wait: only the other is answered");
}

static void groups(void)
{
    fresh();
    uint64_t c[] = {1ull << 32 | 5, 1ull << 32 | 6, 2ull << 32 | 5, 5, UINT64_MAX,
                    3ull << 32 | 1};
    bool held = true;
    for (size_t i = 0; i < 6; i++)
        held &= wait1(c[i], "g") == STORE_OK;
    store_kv_gone_group(kv, 1);
    store_kv_gone_group(kv, 0xffffffffu);
    store_kv_gone_group(kv, 9); /* nobody */
    uint64_t left[] = {2ull << 32 | 5, 5, 3ull << 32 | 1};
    ok(held && rec.n == 0 && by_set("g") == STORE_OK && stops_exactly(left, 3),
       "groups 1 and 0xffffffff gone: only the clients of groups 2, 0 and 3 are answered");
    for (size_t i = 0; i < 3; i++)
        wait1(left[i], "h");
    store_kv_gone_group(kv, 0);
    ok(by_set("h") == STORE_OK && stops_exactly((uint64_t[]){left[0], left[2]}, 2),
       "group 0 gone: the other two are answered");
}

static void waiters(void)
{
    fresh();
    const char *ab[] = {"a", "b"}, *cc[] = {"c", "c"}, *xb[] = {"x", "b"};
    kq(1, TS_SET, "x", "1");
    keys(10, TS_WAIT, 2, ab);
    wait1(11, "b");
    keys(12, TS_WAIT, 2, cc);
    wait1(13, "a");
    keys(14, TS_WAIT, 2, xb);
    by_set("a");
    ok(stops_to(13) == 1, "the client waiting for a alone is answered");
    struct seen s = {.n = 0};
    store_kv_waiters(kv, saw, &s);
    ok(s.n == 4 && reported(&s, 10, "b") && reported(&s, 11, "b") && reported(&s, 12, "c") &&
           reported(&s, 14, "b"),
       "store_kv_waiters: 4 clients, each once, each with its first key not set (%zu)", s.n);
    const uint8_t *key;
    size_t kl;
    ok(waiting(12, &key, &kl) && kl == 1 && key[0] == 'c' &&
           !waiting(13, &key, &kl) && !waiting(1, &key, &kl),
       "store_kv_waiters names each waiting client alone");
    by_set("b");
    by_set("c");
    forget(&rec);
    s.n = 0;
    store_kv_waiters(kv, saw, &s);
    ok(s.n == 0, "none waits once b and c are set");
}

/* --- the other queries ---------------------------------------------- */

static void deletes_appends(void)
{
    fresh();
    kq(1, TS_SET, "d", "x");
    kq(1, TS_SET, "e", "y");
    ok(kq(1, TS_DELETE, "d", NULL) == STORE_OK && only_i64(1, 1) && store_kv_size(kv) == 1,
       "DELETE_KEY of a key set answers 1; 1 key left");
    ok(kq(1, TS_DELETE, "d", NULL) == STORE_OK && only_i64(1, 0) && store_kv_size(kv) == 1,
       "again it answers 0");
    ok(kq(1, TS_DELETE, "never", NULL) == STORE_OK && only_i64(1, 0), "of a key never set, 0");
    ok(kq(1, TS_GET, "d", NULL) == STORE_FAIL && bare(1, TS_NUM_KEYS) == STORE_OK &&
           only_i64(1, 1),
       "a key deleted is not set; GETNUMKEYS answers 1");
    ok(kq(1, TS_SET, "d", "z") == STORE_OK && store_kv_size(kv) == 2, "set again, 2 keys");

    ok(kq(1, TS_APPEND, "ap", "ab") == STORE_OK && rec.n == 0 &&
           kq(1, TS_APPEND, "ap", "cd") == STORE_OK && kq(1, TS_APPEND, "ap", "") == 0 &&
           rec.n == 0 && kq(1, TS_GET, "ap", NULL) == STORE_OK && only_str(1, "abcd"),
       "APPEND sets a key absent, then concatenates, answering nothing");
    kq(1, TS_SET, "em", "");
    ok(kq(1, TS_APPEND, "em", "q") == STORE_OK && kq(1, TS_GET, "em", NULL) == STORE_OK &&
           only_str(1, "q") && store_kv_size(kv) == 4,
       "APPEND to an empty value; 4 keys");
}

static void multis(void)
{
    fresh();
    struct qb q = {.n = 0};
    u64le(&q, 3);
    str(&q, "a");
    str(&q, "1");
    str(&q, "b");
    str(&q, "");
    str(&q, "c");
    str(&q, "333");
    ok(query(1, TS_MULTI_SET, &q) == STORE_OK && rec.n == 0 && store_kv_size(kv) == 3,
       "MULTI_SET of 3 answers nothing; 3 keys");
    const char *cab[] = {"c", "a", "b", "a"}, *am[] = {"a", "missing"};
    q.n = 0;
    str(&q, "333");
    str(&q, "1");
    str(&q, "");
    str(&q, "1");
    ok(keys(2, TS_MULTI_GET, 4, cab) == STORE_OK && (push(&want, 2, q.b, q.n), answered()),
       "MULTI_GET of c, a, b, a: their values as vectors, in order");
    ok(keys(2, TS_MULTI_GET, 2, am) == STORE_FAIL && strstr(why, "missing") && rec.n == 0,
       "MULTI_GET with a key not set fails, naming it (%s)", why);
}

static void refusals(void)
{
    fresh();
    struct qb q = {.n = 4};
    ok(query(1, TS_PING, &q) == STORE_FAIL && why[0] && query(1, TS_VALIDATE, &q) == STORE_FAIL,
       "PING and VALIDATE are the agent's own, not the store's (%s)", why);
    ok(query(1, (enum ts_op)(TS_OP_MAX + 1), &q) == STORE_FAIL && why[0],
       "an op out of range fails (%s)", why);

    kq(1, TS_SET, "k", "v");
    q.n = 0;
    str(&q, "k");
    ok(query(1, TS_SET, &q) == STORE_FAIL && strstr(why, "SET"), "a SET without a value (%s)",
       why);
    ok(query(1, TS_ADD, &q) == STORE_FAIL, "an ADD without its number");
    q.b[q.n++] = 0;
    ok(query(1, TS_GET, &q) == STORE_FAIL, "a GET with a byte after its key");
    ok(kq(1, TS_NUM_KEYS, "", NULL) == STORE_FAIL && bare(1, TS_CHECK) == STORE_FAIL,
       "a GETNUMKEYS with a body, a CHECK without");
    q.n = 0;
    u64le(&q, 3);
    str(&q, "a");
    str(&q, "b");
    const uint8_t *key;
    size_t kl;
    ok(query(2, TS_WAIT, &q) == STORE_FAIL && !waiting(2, &key, &kl),
       "a WAIT for 3 keys naming 2 fails and waits for none");
    q.n = 0;
    u64le(&q, 100);
    str(&q, "k");
    ok(query(1, TS_GET, &q) == STORE_FAIL, "a GET of a key longer than its body");
    ok(rec.n == 0 && store_kv_size(kv) == 1 && kq(1, TS_GET, "k", NULL) == STORE_OK &&
           only_str(1, "v"),
       "nothing answered, nothing changed");
    reply_fails = true;
    ok(kq(1, TS_GET, "k", NULL) == STORE_ENOMEM, "an answer that cannot be sent: STORE_ENOMEM");
    reply_fails = false;
}

static void many_keys(void)
{
    fresh();
    char k[32], v[32];
    ok(wait1(7, "key/5000") == STORE_OK && wait1(8, "never") == STORE_OK, "two waits");
    int bad = 0;
    for (int i = 0; i < 10000; i++) {
        snprintf(k, sizeof k, "key/%d", i);
        snprintf(v, sizeof v, "value/%d", i * 7);
        bad += kq(1, TS_SET, k, v) != STORE_OK;
    }
    ok(bad == 0 && stops_to(7) == 1, "10,000 keys set, the wait for key/5000 answered once");
    ok(store_kv_size(kv) == 10000, "10,000 keys (%lld)", (long long)store_kv_size(kv));
    for (int i = 0; i < 10000; i++) {
        snprintf(k, sizeof k, "key/%d", i);
        snprintf(v, sizeof v, "value/%d", i * 7);
        bad += kq(1, TS_GET, k, NULL) != STORE_OK || !only_str(1, v);
    }
    ok(bad == 0, "each read back (%d wrong)", bad);
    ok(by_set("never") == STORE_OK && stops_to(8) == 1, "the other wait outlives the growth");
}

/* Where TCPStore sets no limit, the store does, so that no answer
 * outgrows a frame: an APPEND past TS_VALUE_MAX (32 MiB less 64 KiB) and a
 * MULTI_GET answer over 64 MiB fail that query alone, and a watched key
 * changed from one longest value to another is told in one answer. */
static void limits(void)
{
    fresh();
    size_t vl = TS_VALUE_MAX, n = 8 + 3 + 8 + vl;
    uint8_t *b = malloc(n);
    if (!b)
        abort();
    ts_put64(b, 3);
    memcpy(b + 8, "big", 3);
    ts_put64(b + 11, vl);
    memset(b + 19, 'x', vl);
    ok(store_kv_query(kv, 1, TS_SET, b, n, why, sizeof why) == STORE_OK,
       "a value of TS_VALUE_MAX (32 MiB less 64 KiB) is set");
    kq(2, TS_WATCH_KEY, "big", NULL);
    forget(&rec);
    b[19] = 'z';
    ok(store_kv_query(kv, 1, TS_SET, b, n, why, sizeof why) == STORE_OK && rec.n == 1 &&
           rec.a[0].n == 1 + 3 * 8 + 3 + 2 * (size_t)vl && rec.a[0].n <= STORE_ANSWER_MAX,
       "its change to another such value is one message to the watcher, within an answer's "
       "64 MiB (%zu bytes)", rec.n ? rec.a[0].n : 0);
    forget(&rec);
    free(b);
    ok(kq(1, TS_APPEND, "big", "y") == STORE_FAIL && strstr(why, "longer than 32 MiB less 64 KiB"),
       "an APPEND past it fails, naming the limit (%s)", why);
    struct qb q = {.n = 0};
    u64le(&q, 3);
    for (int i = 0; i < 3; i++)
        str(&q, "big");
    ok(query(1, TS_MULTI_GET, &q) == STORE_FAIL && strstr(why, "over 64 MiB"),
       "a MULTI_GET whose answer is over 64 MiB fails (%s)", why);
    ok(kq(1, TS_GET, "small", NULL) == STORE_FAIL && kq(1, TS_SET, "small", "1") == STORE_OK,
       "the store goes on serving");
}

int main(void)
{
    set_get();
    adds();
    compare_sets();
    checks();
    wait_set_by_each();
    waits();
    cancels();
    groups();
    waiters();
    deletes_appends();
    multis();
    refusals();
    many_keys();
    limits();
    store_kv_free(kv);
    forget(&rec);
    free(rec.a);
    free(want.a);
    return tap_done();
}
