/* wire.c - bootstrap frame header encoding and checked decoding (wire.h). */
#include "wire.h"

#include <string.h>

static const uint8_t magic[4] = {'C', 'H', 'R', 'T'};

void wire_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

uint32_t wire_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void wire_put64(uint8_t *p, uint64_t v)
{
    wire_put32(p, (uint32_t)(v >> 32));
    wire_put32(p + 4, (uint32_t)v);
}

uint64_t wire_get64(const uint8_t *p)
{
    return (uint64_t)wire_get32(p) << 32 | wire_get32(p + 4);
}

void wire_header(uint8_t out[WIRE_HEADER_LEN], enum wire_type type, uint16_t flags,
                 uint32_t rank, uint32_t len)
{
    memcpy(out, magic, 4);
    out[4] = WIRE_VERSION;
    out[5] = (uint8_t)type;
    out[6] = (uint8_t)(flags >> 8);
    out[7] = (uint8_t)flags;
    wire_put32(out + 8, len);
    wire_put32(out + 12, rank);
}

const char *wire_type_name(enum wire_type t)
{
    static const char *const names[] = {"?", "challenge", "hello", "welcome", "up", "down",
                                        "abort", "work", "store", "relay"};
    return t >= 1 && t <= WIRE_TYPE_MAX ? names[t] : "?";
}

uint32_t wire_abort_encode(const struct cohort_err *why, uint8_t out[WIRE_ABORT_MAX])
{
    size_t n = strnlen(why->msg, sizeof why->msg - 1);
    out[0] = (uint8_t)why->code;
    memcpy(out + 1, why->msg, n);
    return (uint32_t)(1 + n);
}

int wire_abort_decode(const uint8_t *p, uint32_t len, struct cohort_err *why)
{
    if (len < 1 || p[0] < 1 || p[0] > COHORT_E_MAX)
        return -1;
    size_t n = len - 1 < sizeof why->msg - 1 ? len - 1 : sizeof why->msg - 1;
    memcpy(why->msg, p + 1, n);
    why->msg[n] = '\0';
    why->code = p[0];
    return 0;
}

long wire_decode(const uint8_t *buf, size_t len, uint32_t max_payload, size_t trailer,
                 struct wire_frame *f, struct cohort_err *err)
{
    /* Check what has arrived of the header as soon as it arrives, so that
     * a stranger sending garbage is dropped at its first bytes. */
    if (len == 0)
        return 0;
    size_t have = len < 4 ? len : 4;
    if (memcmp(buf, magic, have) != 0)
        return cohort_fail(err, "not a cohort bootstrap frame (bad magic)");
    if (len > 4 && buf[4] != WIRE_VERSION)
        return cohort_fail(err, "bootstrap protocol version %u, this is version %u", buf[4],
                           WIRE_VERSION);
    if (len > 5 && (buf[5] < 1 || buf[5] > WIRE_TYPE_MAX))
        return cohort_fail(err, "unknown bootstrap frame type %u", buf[5]);
    if (len < WIRE_HEADER_LEN)
        return 0;
    uint32_t payload = wire_get32(buf + 8);
    if (payload > max_payload)
        return cohort_fail(err, "bootstrap frame of %u bytes is above the limit of %u",
                           payload, max_payload);
    if (len - WIRE_HEADER_LEN < payload + trailer)
        return 0;
    f->type = (enum wire_type)buf[5];
    f->flags = (uint16_t)(buf[6] << 8 | buf[7]);
    f->len = payload;
    f->rank = wire_get32(buf + 12);
    f->payload = buf + WIRE_HEADER_LEN;
    f->trailer = trailer ? buf + WIRE_HEADER_LEN + payload : NULL;
    return (long)(WIRE_HEADER_LEN + payload + trailer);
}
