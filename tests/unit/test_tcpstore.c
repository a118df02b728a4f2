/* test_tcpstore.c - PyTorch's TCPStore wire protocol as pure functions of
 * bytes (tcpstore.h): the little-endian numbers and the op names, the
 * cursors refusing reads past a body's end, the dialect decided by a
 * client's first query (torch 2.x opens with VALIDATE and its magic),
 * every query of both dialects read with its op and its exact length, a
 * stream of queries cut at every length asking for more until a query is
 * whole, oversized keys, values and counts and unknown type bytes refused
 * with a sentence, and random bytes never read out of bounds. */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tcpstore.h"

/* A query (or a stream of them) being written. */
struct qb {
    uint8_t b[4096];
    size_t n;
};

static void room(const struct qb *q, size_t k)
{
    if (q->n + k > sizeof q->b)
        abort(); /* the test's own mistake */
}

static void u8(struct qb *q, uint8_t v)
{
    room(q, 1);
    q->b[q->n++] = v;
}

static void u32le(struct qb *q, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        u8(q, (uint8_t)(v >> (8 * i)));
}

static void u64le(struct qb *q, uint64_t v)
{
    room(q, 8);
    ts_put64(q->b + q->n, v);
    q->n += 8;
}

static void str(struct qb *q, const char *s)
{
    size_t n = strlen(s);
    u64le(q, n);
    room(q, n);
    memcpy(q->b + q->n, s, n);
    q->n += n;
}

/* A body of op's shape, with made-up keys and values. */
static void body_of(enum ts_op op, struct qb *q)
{
    switch (op) {
    case TS_SET: case TS_APPEND: case TS_QUEUE_PUSH:
        str(q, "key/a");
        str(q, "value");
        break;
    case TS_COMPARE_SET:
        str(q, "k");
        str(q, "");
        str(q, "desired");
        break;
    case TS_GET: case TS_DELETE: case TS_WATCH_KEY: case TS_QUEUE_POP: case TS_QUEUE_LEN:
        str(q, "key/b");
        break;
    case TS_ADD:
        str(q, "counter");
        u64le(q, (uint64_t)-3);
        break;
    case TS_CHECK: case TS_WAIT: case TS_MULTI_GET:
        u64le(q, 2);
        str(q, "x");
        str(q, "yy");
        break;
    case TS_MULTI_SET:
        u64le(q, 2);
        str(q, "x");
        str(q, "1");
        str(q, "yy");
        str(q, "");
        break;
    case TS_PING:
        u32le(q, 12345);
        break;
    case TS_VALIDATE:
        u32le(q, TS_VALIDATE_MAGIC);
        break;
    case TS_NUM_KEYS: case TS_CANCEL_WAIT:
        break;
    }
}

/* Each dialect's type bytes, in order (what torch sends). */
static const enum ts_op v1[] = {TS_SET, TS_COMPARE_SET, TS_GET, TS_ADD, TS_CHECK,
                                TS_WAIT, TS_NUM_KEYS, TS_WATCH_KEY, TS_DELETE};
static const enum ts_op v2[] = {TS_VALIDATE, TS_SET, TS_COMPARE_SET, TS_GET, TS_ADD,
                                TS_CHECK, TS_WAIT, TS_NUM_KEYS, TS_DELETE, TS_APPEND,
                                TS_MULTI_GET, TS_MULTI_SET, TS_CANCEL_WAIT, TS_PING,
                                TS_QUEUE_PUSH, TS_QUEUE_POP, TS_QUEUE_LEN};

static void numbers(void)
{
    uint8_t b[8];
    static const uint8_t want[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    ts_put64(b, 0x0102030405060708ull);
    ok(memcmp(b, want, 8) == 0, "ts_put64 writes little-endian");
    ok(ts_get64(want) == 0x0102030405060708ull, "ts_get64 reads little-endian");
    uint64_t vs[] = {0, 1, 255, 256, 0x3C85F7CE, (uint64_t)-1, (uint64_t)INT64_MIN};
    int same = 1;
    for (size_t i = 0; i < sizeof vs / sizeof *vs; i++) {
        ts_put64(b, vs[i]);
        same &= ts_get64(b) == vs[i];
    }
    ok(same, "u64s round trip, the extremes included");
    static const char *const names[] = {
        "SET", "COMPARE_SET", "GET", "ADD", "CHECK", "WAIT", "GETNUMKEYS", "DELETE_KEY",
        "APPEND", "MULTI_GET", "MULTI_SET", "CANCEL_WAIT", "PING", "VALIDATE", "WATCH_KEY",
        "QUEUE_PUSH", "QUEUE_POP", "QUEUE_LEN"};
    int named = 1;
    for (int op = 0; op <= TS_OP_MAX; op++)
        named &= strcmp(ts_op_name((enum ts_op)op), names[op]) == 0;
    ok(named, "every op has its TCPStore name");
    ok(strcmp(ts_op_name((enum ts_op)(TS_OP_MAX + 1)), "?") == 0 &&
           strcmp(ts_op_name((enum ts_op)-1), "?") == 0,
       "an op out of range is named '?'");
}

static void cursors(void)
{
    struct qb q = {.n = 0};
    u32le(&q, 0xdeadbeef);
    u64le(&q, 0x1122334455667788ull);
    str(&q, "abc");
    str(&q, "");
    struct ts_cursor c = {q.b, q.n};
    uint32_t v32 = 0;
    uint64_t v64 = 0;
    const uint8_t *s = NULL;
    size_t n = 99;
    ok(ts_u32(&c, &v32) == 0 && v32 == 0xdeadbeef, "ts_u32 reads a u32");
    ok(ts_u64(&c, &v64) == 0 && v64 == 0x1122334455667788ull, "ts_u64 reads a u64");
    ok(ts_string(&c, &s, &n) == 0 && n == 3 && memcmp(s, "abc", 3) == 0,
       "ts_string reads a string");
    ok(ts_string(&c, &s, &n) == 0 && n == 0 && c.left == 0, "and an empty one, to the end");
    s = NULL;
    ok(ts_string(&c, &s, &n) < 0 && s == NULL, "no string past the end");
    ok(ts_u64(&c, &v64) < 0 && ts_u32(&c, &v32) < 0, "no numbers past the end");

    uint8_t seven[7] = {0};
    c = (struct ts_cursor){seven, 7};
    ok(ts_u64(&c, &v64) < 0 && c.left == 7, "7 bytes are no u64, and are not taken");
    c = (struct ts_cursor){seven, 3};
    ok(ts_u32(&c, &v32) < 0 && c.left == 3, "3 bytes are no u32");

    q.n = 0;
    u64le(&q, 5);
    u8(&q, 'a');
    u8(&q, 'b');
    u8(&q, 'c');
    u8(&q, 'd');
    c = (struct ts_cursor){q.b, q.n};
    s = NULL;
    ok(ts_string(&c, &s, &n) < 0 && s == NULL, "a string of 5 with 4 bytes left is refused");
    q.n = 0;
    u64le(&q, UINT64_MAX);
    u8(&q, 'a');
    c = (struct ts_cursor){q.b, q.n};
    ok(ts_string(&c, &s, &n) < 0 && s == NULL, "a string of 2^64-1 bytes is refused");
}

/* ts_next on a whole query of op in dialect d (already decided). */
static int reads_whole(enum ts_dialect d, uint8_t type, enum ts_op op)
{
    struct qb q = {.n = 0};
    u8(&q, type);
    body_of(op, &q);
    u8(&q, 0xee); /* the next query's first byte */
    struct ts_query r = {.op = (enum ts_op)-1};
    char why[256] = "";
    long len = ts_next(&d, q.b, q.n, &r, why, sizeof why);
    return len == (long)(q.n - 1) && r.op == op && r.body == q.b + 1 &&
           r.body_len == q.n - 2;
}

static void every_op(void)
{
    for (size_t i = 0; i < sizeof v1 / sizeof *v1; i++)
        ok(reads_whole(TS_V1, (uint8_t)i, v1[i]), "torch 1.x type %zu is %s, read whole", i,
           ts_op_name(v1[i]));
    for (size_t i = 0; i < sizeof v2 / sizeof *v2; i++)
        ok(reads_whole(TS_V2, (uint8_t)i, v2[i]), "torch 2.x type %zu is %s, read whole", i,
           ts_op_name(v2[i]));
}

static long next1(enum ts_dialect *d, const struct qb *q, size_t len, struct ts_query *r)
{
    char why[256] = "";
    return ts_next(d, q->b, len, r, why, sizeof why);
}

static void dialects(void)
{
    enum ts_dialect d = TS_UNKNOWN;
    struct ts_query r;
    struct qb q = {.n = 0};
    ok(next1(&d, &q, 0, &r) == 0 && d == TS_UNKNOWN, "no bytes: more needed, no dialect");

    u8(&q, 2); /* 1.x GET, its body not here yet */
    ok(next1(&d, &q, 1, &r) == 0 && d == TS_V1, "a first type byte of 2 decides torch 1.x");

    q.n = 0;
    u8(&q, 0);
    u32le(&q, TS_VALIDATE_MAGIC);
    for (size_t cut = 1; cut < 5; cut++) {
        d = TS_UNKNOWN;
        ok(next1(&d, &q, cut, &r) == 0 && d == TS_UNKNOWN,
           "type 0 and %zu bytes of 4: undecided", cut - 1);
    }
    d = TS_UNKNOWN;
    ok(next1(&d, &q, q.n, &r) == 5 && d == TS_V2 && r.op == TS_VALIDATE && r.body_len == 4,
       "type 0 and the magic: torch 2.x, a VALIDATE of 5 bytes");
    ok(next1(&d, &q, q.n, &r) == 5 && r.op == TS_VALIDATE,
       "a 2.x client's later type 0 is VALIDATE again");

    q.n = 0;
    u8(&q, 0);
    str(&q, "key");
    str(&q, "v");
    d = TS_UNKNOWN;
    ok(next1(&d, &q, q.n, &r) == (long)q.n && d == TS_V1 && r.op == TS_SET,
       "type 0 without the magic: a torch 1.x SET");
    d = TS_UNKNOWN;
    ok(next1(&d, &q, 5, &r) == 0 && d == TS_V1, "decided by its first 5 bytes alone");

    q.n = 0;
    u8(&q, 0);
    u32le(&q, TS_VALIDATE_MAGIC);
    u32le(&q, 0);
    d = TS_V1;
    char why[256] = "";
    ok(ts_next(&d, q.b, q.n, &r, why, sizeof why) < 0 && why[0] && d == TS_V1,
       "a VALIDATE from a 1.x client is a SET of a key over the limit (%s)", why);
}

/* Cuts the stream q (queries ending at ends[]) at every length: each query
 * asks for more until whole, then gives its exact length, also with the
 * rest of the stream behind it. Returns the mismatches. */
static int cut_everywhere(const struct qb *q, enum ts_dialect want, const size_t *ends,
                          size_t n_ends)
{
    enum ts_dialect d = TS_UNKNOWN;
    size_t off = 0;
    int bad = 0;
    for (size_t k = 0; k < n_ends; k++) {
        for (size_t p = 0; p <= ends[k] - off; p++) {
            enum ts_dialect dd = d;
            struct ts_query r;
            char why[256] = "";
            long got = ts_next(&dd, q->b + off, p, &r, why, sizeof why);
            long exp = p == ends[k] - off ? (long)p : 0;
            if (got != exp || (dd != TS_UNKNOWN && dd != want)) {
                printf("# query %zu cut at %zu of %zu: %ld (%s)\n", k, p, ends[k] - off,
                       got, why);
                bad++;
            }
        }
        struct ts_query r;
        char why[256] = "";
        long whole = ts_next(&d, q->b + off, q->n - off, &r, why, sizeof why);
        if (whole != (long)(ends[k] - off) || d != want) {
            printf("# query %zu with the rest of the stream after it: %ld (%s)\n", k, whole,
                   why);
            bad++;
        }
        off = ends[k];
    }
    return bad;
}

static void streams(void)
{
    struct qb q = {.n = 0};
    size_t ends[32], n = 0;
    for (size_t i = 0; i < sizeof v2 / sizeof *v2; i++) {
        u8(&q, (uint8_t)i);
        body_of(v2[i], &q);
        ends[n++] = q.n;
    }
    u8(&q, 3); /* a GET of a long key, last */
    str(&q, "a/rather/long/key/of/the/rendezvous/0123456789");
    ends[n++] = q.n;
    ok(cut_everywhere(&q, TS_V2, ends, n) == 0,
       "a 2.x stream of %zu queries (%zu bytes) cut at every length", n, q.n);

    q.n = 0;
    n = 0;
    for (size_t i = 0; i < sizeof v1 / sizeof *v1; i++) {
        u8(&q, (uint8_t)i);
        body_of(v1[i], &q);
        ends[n++] = q.n;
    }
    ok(cut_everywhere(&q, TS_V1, ends, n) == 0,
       "a 1.x stream of %zu queries (%zu bytes), SET first, cut at every length", n, q.n);
}

/* ts_next on q in dialect d: -1 with a sentence. */
static int refused(enum ts_dialect d, const struct qb *q, const char *what)
{
    struct ts_query r;
    char why[256] = "";
    long got = ts_next(&d, q->b, q->n, &r, why, sizeof why);
    return ok(got == -1 && why[0] != 0, "%s is refused (%s)", what, why);
}

static void malformed(void)
{
    struct qb q = {.n = 0};
    u8(&q, 9);
    refused(TS_V1, &q, "1.x type 9");
    q.b[0] = 17;
    refused(TS_V2, &q, "2.x type 17");
    q.b[0] = 255;
    refused(TS_V2, &q, "type 255");
    refused(TS_UNKNOWN, &q, "a first type byte of 255");

    q.n = 0;
    u8(&q, 3); /* 2.x GET */
    u64le(&q, TS_KEY_MAX + 1);
    refused(TS_V2, &q, "a key of TS_KEY_MAX+1 bytes, before its bytes come,");
    enum ts_dialect d = TS_V2;
    struct ts_query r;
    ts_put64(q.b + 1, TS_KEY_MAX);
    ok(next1(&d, &q, q.n, &r) == 0, "a key of TS_KEY_MAX bytes is waited for");
    ts_put64(q.b + 1, UINT64_MAX);
    refused(TS_V2, &q, "a key of 2^64-1 bytes");

    q.n = 0;
    u8(&q, 1); /* 2.x SET */
    str(&q, "k");
    u64le(&q, TS_VALUE_MAX + 1);
    refused(TS_V2, &q, "a value of TS_VALUE_MAX+1 bytes");
    ts_put64(q.b + 1 + 9, TS_VALUE_MAX);
    ok(next1(&d, &q, q.n, &r) == 0, "a value of TS_VALUE_MAX bytes is waited for");

    q.n = 0;
    u8(&q, 2); /* 2.x COMPARE_SET, its desired value too long */
    str(&q, "k");
    str(&q, "old");
    u64le(&q, TS_VALUE_MAX + 1);
    refused(TS_V2, &q, "a COMPARE_SET's second value over TS_VALUE_MAX");

    q.n = 0;
    u8(&q, 6); /* 2.x WAIT */
    u64le(&q, TS_KEYS_MAX + 1);
    refused(TS_V2, &q, "a WAIT for TS_KEYS_MAX+1 keys");
    ts_put64(q.b + 1, TS_KEYS_MAX);
    ok(next1(&d, &q, q.n, &r) == 0, "a WAIT for TS_KEYS_MAX keys is waited for");

    q.n = 0;
    u8(&q, 11); /* 2.x MULTI_SET, its second key too long */
    u64le(&q, 2);
    str(&q, "a");
    str(&q, "1");
    u64le(&q, TS_KEY_MAX + 1);
    refused(TS_V2, &q, "a MULTI_SET's second key over TS_KEY_MAX");
    q.n -= 8;
    u64le(&q, 1);
    u8(&q, 'b');
    u64le(&q, TS_VALUE_MAX + 1);
    refused(TS_V2, &q, "a MULTI_SET's second value over TS_VALUE_MAX");

    q.n = 0;
    u8(&q, 10); /* 2.x MULTI_GET, a count of 2^64-1 */
    u64le(&q, UINT64_MAX);
    refused(TS_V2, &q, "a MULTI_GET of 2^64-1 keys");
}

static void body_lens(void)
{
    struct qb q = {.n = 0};
    body_of(TS_SET, &q);
    size_t whole = q.n, used = 0;
    u8(&q, 0xaa);
    ok(ts_body_len(TS_SET, q.b, q.n, &used) == 1 && used == whole,
       "ts_body_len: a SET body of %zu bytes, the byte after it not taken", whole);
    int more = 1;
    for (size_t cut = 0; cut < whole; cut++)
        more &= ts_body_len(TS_SET, q.b, cut, &used) == 0;
    ok(more, "every shorter cut needs more");
    ok(ts_body_len(TS_NUM_KEYS, q.b, 0, &used) == 1 && used == 0 &&
           ts_body_len(TS_CANCEL_WAIT, q.b, 3, &used) == 1 && used == 0,
       "GETNUMKEYS and CANCEL_WAIT have empty bodies");
    q.n = 0;
    u64le(&q, 0);
    ok(ts_body_len(TS_WAIT, q.b, q.n, &used) == 1 && used == 8, "a WAIT for no keys is 8 bytes");
    q.n = 0;
    u64le(&q, TS_KEY_MAX + 1);
    ok(ts_body_len(TS_DELETE, q.b, q.n, &used) == -1, "a DELETE_KEY of a key too long is -1");
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Random bytes, their lengths mostly small, in either dialect: ts_next
 * answers within what it was given (the buffer is sized exactly, so that
 * an overread shows under a sanitizer). */
static void noise(void)
{
    int bad = 0, whole = 0, refusals = 0;
    for (int i = 0; i < 200000; i++) {
        size_t len = rnd() % 48;
        uint8_t *b = malloc(len ? len : 1);
        for (size_t j = 0; j < len; j++) {
            uint64_t x = rnd();
            b[j] = (uint8_t)(x % 4 ? x >> 8 & 7 : x >> 8); /* small lengths, often */
        }
        if (len && rnd() % 2)
            b[0] %= 18;
        enum ts_dialect d = (enum ts_dialect)(rnd() % 3);
        struct ts_query r;
        char why[256] = "";
        long got = ts_next(&d, b, len, &r, why, sizeof why);
        if (got > 0) {
            whole++;
            bad += got > (long)len || r.body != b + 1 || r.body_len + 1 != (size_t)got ||
                   (unsigned)r.op > TS_OP_MAX;
        } else if (got < 0) {
            refusals++;
            bad += why[0] == 0;
        }
        free(b);
    }
    ok(bad == 0, "200000 random inputs: %d whole queries, %d refused, none out of bounds",
       whole, refusals);
}

int main(void)
{
    numbers();
    cursors();
    every_op();
    dialects();
    streams();
    malformed();
    body_lens();
    noise();
    return tap_done();
}
