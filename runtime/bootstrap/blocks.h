/* blocks.h - the result of an exchange: a list of entries [u32 rank]
 * [u32 length][bytes], big-endian (wire_get32 reads them), in rank order. The tree and PMIx
 * transports build it; libcohort reads it. */
#ifndef COHORT_BLOCKS_H
#define COHORT_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

struct blocks {
    uint8_t *data;
    size_t len, cap;
};

/* Appends one entry. Returns -1 when out of memory. */
int blocks_add(struct blocks *b, uint32_t rank, const void *bytes, uint32_t n);

#endif
