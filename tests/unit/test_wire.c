/* test_wire.c - bootstrap frames: round trip, incremental arrival, and the
 * rejection of garbage, other versions, unknown types and oversized
 * payloads as early as the bytes allow; abort payloads with their codes. */
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
    long used = wire_decode(buf, WIRE_HEADER_LEN + len, 1024, 0, &f, &err);
    ok(used == (long)(WIRE_HEADER_LEN + len) && f.type == WIRE_ABORT && f.flags == 0x0102 &&
           f.rank == 77 && f.len == len && memcmp(f.payload, msg, len) == 0,
       "a frame round-trips (type, flags, rank, payload)");
    int partial = 1;
    for (size_t have = 0; have < WIRE_HEADER_LEN + len; have++)
        partial &= wire_decode(buf, have, 1024, 0, &f, &err) == 0;
    ok(partial, "every proper prefix of a frame asks for more bytes");

    /* Two frames back to back: the first is decoded alone. */
    wire_header(buf + WIRE_HEADER_LEN + len, WIRE_DOWN, 0, 0, 0);
    used = wire_decode(buf, 2 * WIRE_HEADER_LEN + len, 1024, 0, &f, &err);
    ok(used == (long)(WIRE_HEADER_LEN + len), "frames back to back: one at a time");
    used = wire_decode(buf + used, WIRE_HEADER_LEN, 1024, 0, &f, &err);
    ok(used == WIRE_HEADER_LEN && f.type == WIRE_DOWN && f.len == 0, "an empty payload");

    ok(wire_decode((const uint8_t *)"GE", 2, 1024, 0, &f, &err) < 0 && strstr(err.msg, "magic"),
       "a stranger's first bytes are rejected at once: %s", err.msg);
    wire_header(buf, WIRE_UP, 0, 0, 0);
    buf[4] = 9;
    ok(wire_decode(buf, 5, 1024, 0, &f, &err) < 0 && strstr(err.msg, "version 9"),
       "another protocol version: %s", err.msg);
    wire_header(buf, WIRE_UP, 0, 0, 0);
    buf[5] = 0;
    ok(wire_decode(buf, 6, 1024, 0, &f, &err) < 0 && strstr(err.msg, "type 0"),
       "an unknown type: %s", err.msg);
    buf[5] = WIRE_TYPE_MAX + 1;
    ok(wire_decode(buf, 6, 1024, 0, &f, &err) < 0, "a type past the last");
    wire_header(buf, WIRE_UP, 0, 0, 0xffffffffu);
    ok(wire_decode(buf, WIRE_HEADER_LEN, 1024, 0, &f, &err) < 0 && strstr(err.msg, "limit of 1024"),
       "an oversized payload is refused from its header alone: %s", err.msg);
    wire_header(buf, WIRE_UP, 0, 0, 1024);
    ok(wire_decode(buf, WIRE_HEADER_LEN, 1024, 0, &f, &err) == 0, "a payload at the limit is fine");
    ok(strcmp(wire_type_name(WIRE_HELLO), "hello") == 0 && strcmp(wire_type_name(99), "?") == 0,
       "type names");

    /* An abort's payload: the code, then the sentence. */
    struct cohort_err why, got;
    uint8_t p[WIRE_ABORT_MAX];
    cohort_fail_code(&why, COHORT_E_TIMEOUT, "%s", msg);
    uint32_t n = wire_abort_encode(&why, p);
    ok(n == 1 + len && p[0] == COHORT_E_TIMEOUT && memcmp(p + 1, msg, len) == 0,
       "an abort's payload is its code byte and its sentence without a NUL");
    int rc = wire_abort_decode(p, n, &got);
    ok(rc == 0 && got.code == COHORT_E_TIMEOUT && strcmp(got.msg, msg) == 0,
       "an abort round-trips with its code: %d, %s", got.code, got.msg);
    rc = wire_abort_decode(p, 1, &got);
    ok(rc == 0 && got.code == COHORT_E_TIMEOUT && got.msg[0] == '\0',
       "an abort with a code and no sentence");
    ok(wire_abort_decode(p, 0, &got) < 0, "an abort without a code is refused");
    p[0] = 0;
    ok(wire_abort_decode(p, n, &got) < 0, "an abort with code 0 (no failure) is refused");
    p[0] = COHORT_E_MAX + 1;
    ok(wire_abort_decode(p, n, &got) < 0, "an abort with a code past the last is refused");
    for (int i = 0; i < COHORT_ERR_LEN - 1; i++)
        why.msg[i] = 'a' + i % 26;
    why.msg[COHORT_ERR_LEN - 1] = '\0';
    why.code = COHORT_E_MAX;
    n = wire_abort_encode(&why, p);
    ok(n == WIRE_ABORT_MAX && wire_abort_decode(p, n, &got) == 0 &&
           strcmp(got.msg, why.msg) == 0 && got.code == COHORT_E_MAX,
       "the longest sentence fits an abort and comes back whole");
    uint8_t longer[WIRE_ABORT_MAX + 100];
    memset(longer, 'x', sizeof longer);
    longer[0] = COHORT_E_AUTH;
    ok(wire_abort_decode(longer, sizeof longer, &got) == 0 &&
           strlen(got.msg) == COHORT_ERR_LEN - 1,
       "a longer sentence from a peer is cut to fit");
    return tap_done();
}
