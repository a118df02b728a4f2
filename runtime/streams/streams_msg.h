/* streams_msg.h - the messages between a worker (libcohort's
 * cohort_streams) and the coordinator serving a stream set, as payloads of
 * authenticated frames (net.h) whose flags carry the operation. Most carry
 * a head (8 bytes: a big-endian u64, or a double's IEEE-754 bits) and a
 * key (1..STREAMS_KEY_MAX bytes, no NUL). Pure: bytes in, fields out, every
 * length checked before it is trusted.
 *
 *   worker -> coordinator            coordinator -> worker
 *   JOIN     capacity (head)         OK      one byte: 0 done, 1 nothing to do
 *   ADD      cost (head), key        ERROR   one sentence: this call failed
 *   REMOVE   key                     CLOSED  the worker may go
 *   RELEASE  epoch (head), key       ASSIGN  epoch (head), key: it is this
 *   REPORT   load (head), key                worker's now (any time)
 *   PING     (alive)                 REVOKE  epoch (head), key: stop, then
 *   STATUS                                   RELEASE it (any time)
 *   CLOSE                            TOTALS  streams, moving, unplaced,
 *                                            moves, live workers (u64 each)
 *
 * Answers come in the order of the requests; ASSIGN and REVOKE may come
 * before an answer, and any time in between. */
#ifndef COHORT_STREAMS_MSG_H
#define COHORT_STREAMS_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define STREAMS_KEY_MAX 255
#define STREAMS_MSG_MAX (8 + STREAMS_KEY_MAX)

enum streams_op {
    STREAMS_JOIN = 32,
    STREAMS_ADD,
    STREAMS_REMOVE,
    STREAMS_RELEASE,
    STREAMS_REPORT,
    STREAMS_PING,
    STREAMS_STATUS,
    STREAMS_CLOSE,
    STREAMS_OK = 48,
    STREAMS_ERROR,
    STREAMS_CLOSED,
    STREAMS_ASSIGN,
    STREAMS_REVOKE,
    STREAMS_TOTALS,
};

#define STREAMS_TOTALS_LEN 40

/* head and key (NUL-terminated, at most STREAMS_KEY_MAX bytes; "" for
 * none) into out (STREAMS_MSG_MAX bytes); the payload's length. */
uint32_t streams_msg_put(uint8_t *out, uint64_t head, const char *key);
/* A payload of a head and a key (with_key: 1..STREAMS_KEY_MAX bytes
 * without NUL; else none) into *head and key. 0, or -1 with err. */
int streams_msg_get(const uint8_t *p, uint32_t len, int with_key, uint64_t *head,
                    char key[STREAMS_KEY_MAX + 1], struct cohort_err *err);

#define STREAMS_PING_RATE 10000u /* pings a second a set's workers send together, at most */

/* The lease a set of `workers` uses for a lease of lease_s: the same, or,
 * where pings a third of it apart would pass STREAMS_PING_RATE a second
 * (above 100,000 workers), 3 s for every STREAMS_PING_RATE workers. */
uint32_t streams_lease_s(uint32_t lease_s, uint32_t workers);

/* A double's bits, and back. */
uint64_t streams_f64_bits(double d);
double streams_f64(uint64_t bits);

#endif
