/* wire.h - the bootstrap's frames on a byte stream: a 16-byte header
 * (magic "CHRT", version, type, flags, payload length, sender rank, all
 * big-endian), a payload of at most a configured size and, once a
 * connection's handshake is done, a trailer (the frame's MAC, session.h) of
 * a length fixed for the connection. Decoding is
 * incremental and never trusts a length before checking it: malformed or
 * oversized input is an error, never a crash or a huge allocation. */
#ifndef COHORT_WIRE_H
#define COHORT_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define WIRE_HEADER_LEN 16
#define WIRE_VERSION 2
#define WIRE_MAX_PAYLOAD_DEFAULT (64u << 20)

enum wire_type {
    WIRE_CHALLENGE = 1, /* parent -> child: the parent's nonce (handshake.h) */
    WIRE_HELLO,         /* child -> parent: rank, node, view, child's nonce, proof */
    WIRE_WELCOME,       /* parent -> child: the parent's proof (mutual) */
    WIRE_UP,            /* child -> parent: a block of contributions */
    WIRE_DOWN,          /* parent -> child: the assembled result */
    WIRE_ABORT,         /* either way: why the step fails (wire_abort_encode) */
    WIRE_WORK,          /* worker <-> work coordinator: flags is the operation (work_msg.h) */
    WIRE_STORE,         /* node agent <-> store holder: flags is the operation (store_msg.h) */
    WIRE_RELAY,         /* node relay <-> coordinator: a rank came or went (flags: relay_op) */
    WIRE_TYPE_MAX = WIRE_RELAY,
};

/* A WIRE_RELAY frame's operation; its rank field names the rank, its
 * payload is empty (but a GONE's going down). A node relay's WIRE_WORK frames carry the rank they
 * come from (up) or go to (down). Relays form a tree (coord_config.h): a
 * relay passes what comes from the relays below it up, and down what is
 * for their ranks, as it does its own node's. */
enum relay_op {
    RELAY_JOIN = 1, /* up: the rank connected to its node's relay and proved itself */
    RELAY_GONE,     /* up: the rank's connection closed. Down, rank UINT32_MAX: the way
                     * to the coordinator closed; no payload: the coordinator's own
                     * connection, 4 bytes: the relay of that node between */
    RELAY_DROP,     /* down: close the rank's connection */
};

struct wire_frame {
    enum wire_type type;
    uint16_t flags;
    uint32_t rank;        /* the sender's rank */
    uint32_t len;         /* payload bytes */
    const uint8_t *payload; /* points into the decoded buffer */
    const uint8_t *trailer; /* the trailer's bytes after the payload (NULL: none) */
};

/* Writes the header of a frame with len payload bytes into out. */
void wire_header(uint8_t out[WIRE_HEADER_LEN], enum wire_type type, uint16_t flags,
                 uint32_t rank, uint32_t len);

/* Decodes one frame from the first len bytes of buf, followed by trailer
 * bytes (0: none). Returns the bytes it used (header + payload + trailer)
 * with *f filled, 0 when more bytes are needed, or -1 with err when the
 * bytes are not a frame (bad magic, version or type, a payload above
 * max_payload); err's code is left unspecified: what bad bytes mean
 * depends on where they came from, which the caller knows. */
long wire_decode(const uint8_t *buf, size_t len, uint32_t max_payload, size_t trailer,
                 struct wire_frame *f, struct cohort_err *err);

const char *wire_type_name(enum wire_type t);

/* An ABORT frame's payload: one byte, the failure's code (an enum
 * cohort_err_code, 1..COHORT_E_MAX), then its sentence without a NUL, so
 * that every task reports the code of the task that saw the failure. */
#define WIRE_ABORT_MAX COHORT_ERR_LEN /* the code, and a sentence of COHORT_ERR_LEN - 1 at most */
/* Writes why's code and sentence into out; returns the payload's length. */
uint32_t wire_abort_encode(const struct cohort_err *why, uint8_t out[WIRE_ABORT_MAX]);
/* Reads an ABORT payload into why (the sentence cut to COHORT_ERR_LEN - 1
 * bytes). Returns 0, or -1 when it holds no code or one out of range. */
int wire_abort_decode(const uint8_t *p, uint32_t len, struct cohort_err *why);

/* Big-endian u32s and u64s, the byte order of everything sent on cohort's
 * connections. */
void wire_put32(uint8_t *p, uint32_t v);
uint32_t wire_get32(const uint8_t *p);
void wire_put64(uint8_t *p, uint64_t v);
uint64_t wire_get64(const uint8_t *p);

#endif
