/* tcpstore.c - PyTorch's TCPStore wire protocol (see tcpstore.h). */
#include "tcpstore.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Each dialect's type bytes, in ts_op order of what it sends; -1: absent. */
static const int v1_ops[] = {TS_SET, TS_COMPARE_SET, TS_GET, TS_ADD, TS_CHECK, TS_WAIT,
                             TS_NUM_KEYS, TS_WATCH_KEY, TS_DELETE};
static const int v2_ops[] = {TS_VALIDATE, TS_SET, TS_COMPARE_SET, TS_GET, TS_ADD,
                             TS_CHECK, TS_WAIT, TS_NUM_KEYS, TS_DELETE, TS_APPEND,
                             TS_MULTI_GET, TS_MULTI_SET, TS_CANCEL_WAIT, TS_PING,
                             TS_QUEUE_PUSH, TS_QUEUE_POP, TS_QUEUE_LEN};

static const char *const names[] = {
    "SET", "COMPARE_SET", "GET", "ADD", "CHECK", "WAIT", "GETNUMKEYS", "DELETE_KEY",
    "APPEND", "MULTI_GET", "MULTI_SET", "CANCEL_WAIT", "PING", "VALIDATE", "WATCH_KEY",
    "QUEUE_PUSH", "QUEUE_POP", "QUEUE_LEN"};

const char *ts_op_name(enum ts_op op)
{
    return (unsigned)op <= TS_OP_MAX ? names[op] : "?";
}

void ts_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t ts_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int ts_u64(struct ts_cursor *c, uint64_t *v)
{
    if (c->left < 8)
        return -1;
    *v = ts_get64(c->p);
    c->p += 8;
    c->left -= 8;
    return 0;
}

int ts_u32(struct ts_cursor *c, uint32_t *v)
{
    if (c->left < 4)
        return -1;
    *v = (uint32_t)c->p[0] | (uint32_t)c->p[1] << 8 | (uint32_t)c->p[2] << 16 |
         (uint32_t)c->p[3] << 24;
    c->p += 4;
    c->left -= 4;
    return 0;
}

int ts_string(struct ts_cursor *c, const uint8_t **s, size_t *n)
{
    if (c->left < 8 || ts_get64(c->p) > c->left - 8)
        return -1;
    uint64_t len = ts_get64(c->p);
    *s = c->p + 8;
    *n = (size_t)len;
    c->p += 8 + len;
    c->left -= 8 + (size_t)len;
    return 0;
}

/* What a body holds, field by field. */
enum field { F_END, F_KEY, F_VALUE, F_I64, F_U32, F_KEYS, F_PAIRS };

static const enum field shapes[TS_OP_MAX + 1][4] = {
    [TS_SET] = {F_KEY, F_VALUE},         [TS_COMPARE_SET] = {F_KEY, F_VALUE, F_VALUE},
    [TS_GET] = {F_KEY},                  [TS_ADD] = {F_KEY, F_I64},
    [TS_CHECK] = {F_KEYS},               [TS_WAIT] = {F_KEYS},
    [TS_NUM_KEYS] = {F_END},             [TS_DELETE] = {F_KEY},
    [TS_APPEND] = {F_KEY, F_VALUE},      [TS_MULTI_GET] = {F_KEYS},
    [TS_MULTI_SET] = {F_PAIRS},          [TS_CANCEL_WAIT] = {F_END},
    [TS_PING] = {F_U32},                 [TS_VALIDATE] = {F_U32},
    [TS_WATCH_KEY] = {F_KEY},            [TS_QUEUE_PUSH] = {F_KEY, F_VALUE},
    [TS_QUEUE_POP] = {F_KEY},            [TS_QUEUE_LEN] = {F_KEY},
};

/* One string of at most max bytes: 1 read, 0 more needed, -1 too long. */
static int take_string(struct ts_cursor *c, uint64_t max)
{
    uint64_t n;
    if (c->left < 8)
        return 0;
    n = ts_get64(c->p);
    if (n > max)
        return -1;
    if (c->left - 8 < n)
        return 0;
    c->p += 8 + n;
    c->left -= 8 + (size_t)n;
    return 1;
}

/* A count and that many keys (with a value each when pairs). */
static int take_list(struct ts_cursor *c, bool pairs)
{
    uint64_t n;
    if (ts_u64(c, &n) < 0)
        return 0;
    if (n > TS_KEYS_MAX)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        int r = take_string(c, TS_KEY_MAX);
        if (r == 1 && pairs)
            r = take_string(c, TS_VALUE_MAX);
        if (r != 1)
            return r;
    }
    return 1;
}

int ts_body_len(enum ts_op op, const uint8_t *p, size_t len, size_t *used)
{
    struct ts_cursor c = {p, len};
    if ((unsigned)op > TS_OP_MAX)
        return -1;
    for (int i = 0; i < 4 && shapes[op][i] != F_END; i++) {
        int r;
        switch (shapes[op][i]) {
        case F_KEY: r = take_string(&c, TS_KEY_MAX); break;
        case F_VALUE: r = take_string(&c, TS_VALUE_MAX); break;
        case F_I64: r = c.left >= 8 ? (c.p += 8, c.left -= 8, 1) : 0; break;
        case F_U32: r = c.left >= 4 ? (c.p += 4, c.left -= 4, 1) : 0; break;
        case F_KEYS: r = take_list(&c, false); break;
        default: r = take_list(&c, true); break;
        }
        if (r != 1)
            return r;
    }
    *used = len - c.left;
    return 1;
}

/* A 2.x client opens with VALIDATE: type 0 and the magic, which a 1.x SET
 * (type 0) cannot start with (a key of over 1 GB). 1 decided, 0 more
 * bytes needed. */
static int decide(enum ts_dialect *d, const uint8_t *buf, size_t len)
{
    if (*d != TS_UNKNOWN)
        return 1;
    if (len >= 1 && buf[0] != 0) {
        *d = TS_V1;
        return 1;
    }
    if (len < 5)
        return 0;
    uint32_t m = (uint32_t)buf[1] | (uint32_t)buf[2] << 8 | (uint32_t)buf[3] << 16 |
                 (uint32_t)buf[4] << 24;
    *d = m == TS_VALIDATE_MAGIC ? TS_V2 : TS_V1;
    return 1;
}

long ts_next(enum ts_dialect *d, const uint8_t *buf, size_t len, struct ts_query *q,
             char *why, size_t why_len)
{
    if (len == 0 || !decide(d, buf, len))
        return 0;
    const int *ops = *d == TS_V2 ? v2_ops : v1_ops;
    size_t n_ops = *d == TS_V2 ? sizeof v2_ops / sizeof *v2_ops : sizeof v1_ops / sizeof *v1_ops;
    if (buf[0] >= n_ops) {
        snprintf(why, why_len, "query type %u is not one of torch %s's TCPStore", buf[0],
                 *d == TS_V2 ? "2.x" : "1.x");
        return -1;
    }
    q->op = (enum ts_op)ops[buf[0]];
    size_t used = 0;
    int r = ts_body_len(q->op, buf + 1, len - 1, &used);
    if (r < 0) {
        snprintf(why, why_len, "a %s query with a key over %u bytes, a value over %u bytes or "
                 "over %u keys", ts_op_name(q->op), TS_KEY_MAX, TS_VALUE_MAX, TS_KEYS_MAX);
        return -1;
    }
    if (r == 0)
        return 0;
    q->body = buf + 1;
    q->body_len = used;
    return (long)(used + 1);
}
