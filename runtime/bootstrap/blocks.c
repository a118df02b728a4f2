/* blocks.c - building the exchange result list (blocks.h). */
#include "blocks.h"

#include <stdlib.h>
#include <string.h>

#include "base_sys.h"
#include "wire.h"

int blocks_add(struct blocks *b, uint32_t rank, const void *bytes, uint32_t n)
{
    size_t need = b->len + 8 + n;
    if (need > UINT32_MAX)
        return -1;
    if (base_grow((void **)&b->data, &b->cap, need, 1) < 0)
        return -1;
    wire_put32(b->data + b->len, rank);
    wire_put32(b->data + b->len + 4, n);
    if (n)
        memcpy(b->data + b->len + 8, bytes, n);
    b->len = need;
    return 0;
}
