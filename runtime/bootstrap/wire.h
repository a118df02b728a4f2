/* wire.h - the bootstrap's frames on a byte stream: a 16-byte header
 * (magic "CHRT", version, type, flags, payload length, sender rank, all
 * big-endian) and a payload of at most a configured size. Decoding is
 * incremental and never trusts a length before checking it: malformed or
 * oversized input is an error, never a crash or a huge allocation. */
#ifndef COHORT_WIRE_H
#define COHORT_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define WIRE_HEADER_LEN 16
#define WIRE_VERSION 1
#define WIRE_MAX_PAYLOAD_DEFAULT (64u << 20)

enum wire_type {
    WIRE_CHALLENGE = 1, /* parent -> child: the parent's nonce */
    WIRE_HELLO,         /* child -> parent: rank, node, child's nonce, proof */
    WIRE_WELCOME,       /* parent -> child: the parent's proof (mutual) */
    WIRE_UP,            /* child -> parent: a block of contributions */
    WIRE_DOWN,          /* parent -> child: the assembled result */
    WIRE_ABORT,         /* either way: a one-sentence reason, the job fails */
    WIRE_TYPE_MAX = WIRE_ABORT,
};

struct wire_frame {
    enum wire_type type;
    uint16_t flags;
    uint32_t rank;        /* the sender's rank */
    uint32_t len;         /* payload bytes */
    const uint8_t *payload; /* points into the decoded buffer */
};

/* Writes the header of a frame with len payload bytes into out. */
void wire_header(uint8_t out[WIRE_HEADER_LEN], enum wire_type type, uint16_t flags,
                 uint32_t rank, uint32_t len);

/* Decodes one frame from the first len bytes of buf. Returns the bytes it
 * used (header + payload) with *f filled, 0 when more bytes are needed, or
 * -1 with err when the bytes are not a frame (bad magic, version or type, a
 * payload above max_payload). */
long wire_decode(const uint8_t *buf, size_t len, uint32_t max_payload, struct wire_frame *f,
                 struct cohort_err *err);

const char *wire_type_name(enum wire_type t);

/* Big-endian u32s, the byte order of everything the bootstrap sends. */
void wire_put32(uint8_t *p, uint32_t v);
uint32_t wire_get32(const uint8_t *p);

#endif
