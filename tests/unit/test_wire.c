/* test_wire.c - bootstrap frames: round trip, incremental arrival, and the
 * rejection of garbage, other versions, unknown types and oversized
 * payloads as early as the bytes allow. */
#include <string.h>

#include "tap.h"
#include "wire.h"

int main(void)
{
    uint8_t buf[256];
    struct wire_frame f;
    struct cohort_err err;
    const char *msg = "ranks 5, 9 (n2) did not join";
    uint32_t len = (uint32_t)strlen(msg);
    wire_header(buf, WIRE_ABORT, 0x0102, 77, len);
    memcpy(buf + WIRE_HEADER_LEN, msg, len);
    long used = wire_decode(buf, WIRE_HEADER_LEN + len, 1024, &f, &err);
    ok(used == (long)(WIRE_HEADER_LEN + len) && f.type == WIRE_ABORT && f.flags == 0x0102 &&
           f.rank == 77 && f.len == len && memcmp(f.payload, msg, len) == 0,
       "a frame round-trips (type, flags, rank, payload)");
    int partial = 1;
    for (size_t have = 0; have < WIRE_HEADER_LEN + len; have++)
        partial &= wire_decode(buf, have, 1024, &f, &err) == 0;
    ok(partial, "every proper prefix of a frame asks for more bytes");

    /* Two frames back to back: the first is decoded alone. */
    wire_header(buf + WIRE_HEADER_LEN + len, WIRE_DOWN, 0, 0, 0);
    used = wire_decode(buf, 2 * WIRE_HEADER_LEN + len, 1024, &f, &err);
    ok(used == (long)(WIRE_HEADER_LEN + len), "frames back to back: one at a time");
    used = wire_decode(buf + used, WIRE_HEADER_LEN, 1024, &f, &err);
    ok(used == WIRE_HEADER_LEN && f.type == WIRE_DOWN && f.len == 0, "an empty payload");

    ok(wire_decode((const uint8_t *)"GE", 2, 1024, &f, &err) < 0 && strstr(err.msg, "magic"),
       "a stranger's first bytes are rejected at once: %s", err.msg);
    wire_header(buf, WIRE_UP, 0, 0, 0);
    buf[4] = 9;
    ok(wire_decode(buf, 5, 1024, &f, &err) < 0 && strstr(err.msg, "version 9"),
       "another protocol version: %s", err.msg);
    wire_header(buf, WIRE_UP, 0, 0, 0);
    buf[5] = 0;
    ok(wire_decode(buf, 6, 1024, &f, &err) < 0 && strstr(err.msg, "type 0"),
       "an unknown type: %s", err.msg);
    buf[5] = WIRE_TYPE_MAX + 1;
    ok(wire_decode(buf, 6, 1024, &f, &err) < 0, "a type past the last");
    wire_header(buf, WIRE_UP, 0, 0, 0xffffffffu);
    ok(wire_decode(buf, WIRE_HEADER_LEN, 1024, &f, &err) < 0 && strstr(err.msg, "limit of 1024"),
       "an oversized payload is refused from its header alone: %s", err.msg);
    wire_header(buf, WIRE_UP, 0, 0, 1024);
    ok(wire_decode(buf, WIRE_HEADER_LEN, 1024, &f, &err) == 0, "a payload at the limit is fine");
    ok(strcmp(wire_type_name(WIRE_HELLO), "hello") == 0 && strcmp(wire_type_name(99), "?") == 0,
       "type names");
    return tap_done();
}
