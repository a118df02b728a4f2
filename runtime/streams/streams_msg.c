/* streams_msg.c - the stream set's messages, and the lease a set of very
 * many workers uses (streams_msg.h). */
#include "streams_msg.h"

#include <string.h>

#include "wire.h"

uint32_t streams_msg_put(uint8_t *out, uint64_t head, const char *key)
{
    size_t n = strnlen(key, STREAMS_KEY_MAX);
    wire_put64(out, head);
    memcpy(out + 8, key, n);
    return (uint32_t)(8 + n);
}

int streams_msg_get(const uint8_t *p, uint32_t len, int with_key, uint64_t *head,
                    char key[STREAMS_KEY_MAX + 1], struct cohort_err *err)
{
    if (len < 8 || len > STREAMS_MSG_MAX || (with_key ? len == 8 : len != 8))
        return cohort_fail(err, "a stream message of %u bytes (%s)", len,
                           with_key ? "a head and a key of 1 to 255 bytes expected"
                                    : "a head of 8 bytes expected");
    if (memchr(p + 8, 0, len - 8))
        return cohort_fail(err, "a stream key with a NUL byte");
    *head = wire_get64(p);
    memcpy(key, p + 8, len - 8);
    key[len - 8] = 0;
    return 0;
}

uint64_t streams_f64_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

double streams_f64(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

uint32_t streams_lease_s(uint32_t lease_s, uint32_t workers)
{
    uint64_t floor_s = (3ull * workers + STREAMS_PING_RATE - 1) / STREAMS_PING_RATE;
    return lease_s > floor_s ? lease_s : (uint32_t)floor_s;
}
