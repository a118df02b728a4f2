/* fuzz_wire.c - libFuzzer target for the bootstrap's frame decoder: any
 * byte stream, fed whole or in the pieces the first byte chooses, must
 * decode to the same frames or the same error, each frame inside the
 * input, never longer than the limit. Also linked with replay_main.c for
 * `make check`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decodes frames from data as if it arrived step bytes at a time; returns
 * the number of frames, or -1 - frames at an error. */
static long frames(const uint8_t *data, size_t size, size_t step, uint32_t limit)
{
    size_t start = 0, have = 0;
    long n = 0;
    while (have < size) {
        have = have + step < size ? have + step : size;
        for (;;) {
            struct wire_frame f;
            struct cohort_err err;
            long used = wire_decode(data + start, have - start, limit, &f, &err);
            if (used < 0)
                return -1 - n;
            if (used == 0)
                break;
            if ((size_t)used > have - start || f.len > limit ||
                f.payload != data + start + WIRE_HEADER_LEN || f.type < 1 ||
                f.type > WIRE_TYPE_MAX)
                abort();
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
    if (frames(data + 1, size - 1, size, limit) != frames(data + 1, size - 1, step, limit))
        abort();
    return 0;
}
