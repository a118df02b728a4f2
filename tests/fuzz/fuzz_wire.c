/* fuzz_wire.c - libFuzzer target for the bootstrap's frame decoder and
 * handshake parsers: any byte stream, fed whole or in the pieces the first
 * byte chooses, with or without a MAC trailer, must decode to the same
 * frames or the same error, each frame inside the input, never longer than
 * the limit; every frame's payload is also read as a challenge, a hello
 * and a welcome, which must be refused (no proof can be forged) without
 * reading past it, and as an abort's code and sentence, which must decode
 * exactly when the code is known and encode back to what was read. Also
 * linked with replay_main.c for `make check`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "handshake.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decodes frames from data as if it arrived step bytes at a time; returns
 * the number of frames, or -1 - frames at an error. */
/* Reads a payload as each handshake message of a step whose secret is
 * fixed here: none may pass, none may crash. */
static void handshake(const uint8_t *p, uint32_t len)
{
    static struct auth_key key = {.kind = AUTH_SECRET, .bytes = {1, 2, 3}};
    struct hs_self me = {.key = &key, .job = 7, .step = 0, .rank = 0};
    struct hs_child st = {.body_len = 8};
    struct hs_hello h;
    struct cohort_err err;
    uint8_t nonce[AUTH_NONCE_LEN] = {0}, base[32];
    if (hs_challenge_check(&me, p, len, &st, &err) == 0 ||
        hs_hello_check(&me, nonce, p, len, &h) == 0 || hs_welcome_check(&me, &st, p, len, base) == 0)
        abort();
}

/* Reads a payload as an abort's: a known code or a refusal; a sentence
 * inside the buffer that encodes back to the payload's prefix. */
static void abort_payload(const uint8_t *p, uint32_t len)
{
    struct cohort_err why;
    uint8_t back[WIRE_ABORT_MAX];
    if (wire_abort_decode(p, len, &why) < 0) {
        if (len >= 1 && p[0] >= 1 && p[0] <= COHORT_E_MAX)
            abort();
        return;
    }
    size_t n = strlen(why.msg);
    if (why.code < 1 || why.code > COHORT_E_MAX || n >= sizeof why.msg || n > len - 1 ||
        wire_abort_encode(&why, back) != 1 + n || memcmp(back, p, 1 + n) != 0)
        abort();
}

static long frames(const uint8_t *data, size_t size, size_t step, uint32_t limit, size_t trailer)
{
    size_t start = 0, have = 0;
    long n = 0;
    while (have < size) {
        have = have + step < size ? have + step : size;
        for (;;) {
            struct wire_frame f;
            struct cohort_err err;
            long used = wire_decode(data + start, have - start, limit, trailer, &f, &err);
            if (used < 0)
                return -1 - n;
            if (used == 0)
                break;
            if ((size_t)used > have - start || f.len > limit ||
                f.payload != data + start + WIRE_HEADER_LEN || f.type < 1 ||
                f.type > WIRE_TYPE_MAX || (trailer && f.trailer != f.payload + f.len))
                abort();
            if (step == size) {
                handshake(f.payload, f.len);
                abort_payload(f.payload, f.len);
            }
            start += (size_t)used;
            n++;
        }
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = data[0] % 17 + 1;
    uint32_t limit = (uint32_t)(data[0] % 5) * 64;
    size_t trailer = data[0] & 0x80 ? 32 : 0;
    if (frames(data + 1, size - 1, size, limit, trailer) !=
        frames(data + 1, size - 1, step, limit, trailer))
        abort();
    return 0;
}
