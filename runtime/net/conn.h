/* conn.h - one bootstrap connection: a non-blocking socket with an input
 * buffer that frames are decoded from and an output queue that is written
 * as the socket accepts, so that no peer can block another by not
 * reading. Once its session is on (session.h), every frame queued is
 * sealed with a MAC trailer and every frame decoded is checked. */
#ifndef COHORT_CONN_H
#define COHORT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"
#include "wire.h"

struct conn {
    int fd;                 /* -1: closed */
    uint32_t rank, node;    /* the peer, once it proved itself */
    bool ready;             /* authenticated (both ways) */
    struct session sess;
    uint8_t *in;
    size_t in_len, in_cap;
    uint8_t *out;
    size_t out_len, out_cap;
    int wait_ms;            /* 0: non-blocking; else conn_wait_fill's timeout */
};

void conn_init(struct conn *c, int fd);
void conn_close(struct conn *c);

/* Queues one frame (header + payload). Returns -1 when out of memory. */
int conn_queue(struct conn *c, enum wire_type type, uint16_t flags, uint32_t rank,
               const void *payload, uint32_t len);

/* Writes what the socket takes now. Returns 0, or -1 when the peer is gone. */
int conn_flush(struct conn *c);

/* Reads what has arrived, up to a read that did not fill the room it was
 * given (readiness is level-triggered everywhere: the next poll reports
 * what comes later, a close included). Returns 0, or -1 when the peer
 * closed or failed (the bytes read before stay decodable). */
int conn_fill(struct conn *c, uint32_t max_payload);

/* Waits at most timeout_ms for input and reads what came (one read):
 * 1 read something (or the input is full), 0 nothing came, -1 the peer
 * closed or failed, or the socket could not be switched. The first call
 * makes the socket's reads blocking, with a timeout (every other read and
 * write passes MSG_DONTWAIT and stays non-blocking): one read instead of
 * a poll and a read, for a connection whose owner waits on it alone. */
int conn_wait_fill(struct conn *c, uint32_t max_payload, int timeout_ms);

/* Whether the input holds as much as conn_fill will take. */
bool conn_full(const struct conn *c, uint32_t max_payload);

/* Decodes the next whole frame from the input: 1 with *f (valid until
 * conn_consume), 0 when none is complete, -1 with err when the input is not
 * a frame stream, -2 with err when a frame fails its MAC check. */
int conn_next(struct conn *c, uint32_t max_payload, struct wire_frame *f,
              struct cohort_err *err);
/* Takes the frame conn_next returned out of the input. */
void conn_consume(struct conn *c, const struct wire_frame *f);

#endif
