/* tcpstore.h - PyTorch's TCPStore wire protocol as a client speaks it, as
 * pure functions of bytes (no sockets): the two dialects (torch 1.x, and
 * 2.x, whose clients open with a VALIDATE query), one query's boundaries
 * and fields, and the answers' encodings.
 *
 * A query is one type byte (numbered per dialect) and a body; every string
 * and value in a body is a u64 length and its bytes, every count a u64,
 * every number the client's byte order (little-endian on every platform
 * cohort runs on). ts_op numbers the queries of both dialects alike, so
 * that the store behind an agent never sees a dialect. */
#ifndef COHORT_TCPSTORE_H
#define COHORT_TCPSTORE_H

#include <stddef.h>
#include <stdint.h>

#define TS_VALIDATE_MAGIC 0x3C85F7CEu /* a 2.x client's first query carries it */
#define TS_KEY_MAX (64u << 10)        /* the longest key served */
/* The longest value served: 32 MiB less 64 KiB, so that a watch's message
 * (the key, the old and the new value) fits in one of cohort's frames. */
#define TS_VALUE_MAX ((32u << 20) - (64u << 10))
#define TS_KEYS_MAX (1u << 20)        /* the most keys in one query */

enum ts_dialect {
    TS_UNKNOWN = 0, /* no query seen yet */
    TS_V1,          /* torch 1.x */
    TS_V2,          /* torch 2.x: VALIDATE first */
};

enum ts_op {
    TS_SET, TS_COMPARE_SET, TS_GET, TS_ADD, TS_CHECK, TS_WAIT, TS_NUM_KEYS, TS_DELETE,
    TS_APPEND, TS_MULTI_GET, TS_MULTI_SET, TS_CANCEL_WAIT,
    TS_PING, TS_VALIDATE,                          /* answered by the agent itself */
    TS_WATCH_KEY,                                  /* torch 1.x alone */
    TS_QUEUE_PUSH, TS_QUEUE_POP, TS_QUEUE_LEN,     /* torch 2.x alone */
    TS_OP_MAX = TS_QUEUE_LEN,
};

/* Answers' single bytes. */
enum { TS_READY = 0, TS_NOT_READY = 1 };          /* CHECK */
enum { TS_STOP_WAITING = 0, TS_WAIT_CANCELED = 1 }; /* WAIT, CANCEL_WAIT */
/* What a WATCH_KEY's client is sent: the first byte of a change's
 * message (then the key, its old and its new value, as strings), or the
 * answer to the WATCH_KEY itself. */
enum ts_watch {
    TS_KEY_UPDATED = 0, TS_KEY_CREATED = 1, TS_KEY_DELETED = 2, TS_KEY_CALLBACK_REGISTERED = 3
};

/* One query as read: its operation and its body (pointers into the
 * caller's buffer). */
struct ts_query {
    enum ts_op op;
    const uint8_t *body;
    size_t body_len;
};

/* Reads the next query of a client from buf[0..len): *d is the dialect,
 * decided (and set) by its first query. Returns the bytes the query takes
 * (type byte and body) with *q, 0 when more bytes are needed, or -1 with
 * why (a sentence) when the bytes are not a query of TCPStore's. */
long ts_next(enum ts_dialect *d, const uint8_t *buf, size_t len, struct ts_query *q,
             char *why, size_t why_len);

/* Parses a body of op already known whole (1) or not (0 more bytes
 * needed, -1 malformed): the same rules ts_next uses. */
int ts_body_len(enum ts_op op, const uint8_t *p, size_t len, size_t *used);

/* A cursor over a body's fields. */
struct ts_cursor {
    const uint8_t *p;
    size_t left;
};

/* The next string (key or value) of a body whose whole length was checked:
 * 0 with *s and *n, -1 when none is left. */
int ts_string(struct ts_cursor *c, const uint8_t **s, size_t *n);
/* The next u64 (a count, or an i64's bits): 0, or -1 when none is left. */
int ts_u64(struct ts_cursor *c, uint64_t *v);
/* The next u32: 0, or -1. */
int ts_u32(struct ts_cursor *c, uint32_t *v);

/* Little-endian numbers as TCPStore writes them. */
void ts_put64(uint8_t *p, uint64_t v);
uint64_t ts_get64(const uint8_t *p);

/* The query's name, for messages ("WAIT"). */
const char *ts_op_name(enum ts_op op);

#endif
