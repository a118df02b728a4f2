/* blocks.c - building the exchange result list (blocks.h). */
#include "blocks.h"

#include <stdlib.h>
#include <string.h>

#include "wire.h"

int blocks_add(struct blocks *b, uint32_t rank, const void *bytes, uint32_t n)
{
    size_t need = b->len + 8 + n;
    if (need > UINT32_MAX)
        return -1;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need)
            cap *= 2;
        uint8_t *p = realloc(b->data, cap);
        if (!p)
            return -1;
        b->data = p;
        b->cap = cap;
    }
    wire_put32(b->data + b->len, rank);
    wire_put32(b->data + b->len + 4, n);
    if (n)
        memcpy(b->data + b->len + 8, bytes, n);
    b->len = need;
    return 0;
}
