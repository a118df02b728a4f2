/* cpu_mask.c - a set of CPU numbers without hwloc (see cpu_mask.h). */
#include "cpu_mask.h"

#include <stdlib.h>
#include <string.h>

void cpu_mask_init(struct cpu_mask *m)
{
    m->words = NULL;
    m->n_words = 0;
}

void cpu_mask_free(struct cpu_mask *m)
{
    free(m->words);
    cpu_mask_init(m);
}

int cpu_mask_set(struct cpu_mask *m, unsigned cpu)
{
    if (cpu >= CPU_MASK_LIMIT)
        return -1;
    size_t w = cpu / 64;
    if (w >= m->n_words) {
        uint64_t *words = realloc(m->words, (w + 1) * sizeof *words);
        if (!words)
            return -1;
        memset(words + m->n_words, 0, (w + 1 - m->n_words) * sizeof *words);
        m->words = words;
        m->n_words = w + 1;
    }
    m->words[w] |= UINT64_C(1) << (cpu % 64);
    return 0;
}

bool cpu_mask_is_empty(const struct cpu_mask *m)
{
    return cpu_mask_next(m, -1) < 0;
}

int cpu_mask_next(const struct cpu_mask *m, int prev)
{
    for (size_t c = (size_t)(prev + 1); c / 64 < m->n_words; c++) {
        uint64_t rest = m->words[c / 64] >> (c % 64);
        if (!rest) {
            c = (c / 64 + 1) * 64 - 1; /* the next word */
            continue;
        }
        while (!(rest & 1)) {
            rest >>= 1;
            c++;
        }
        return (int)c;
    }
    return -1;
}

int cpu_mask_copy(struct cpu_mask *dst, const struct cpu_mask *src)
{
    cpu_mask_free(dst);
    if (src->n_words == 0)
        return 0;
    if (!(dst->words = malloc(src->n_words * sizeof *dst->words)))
        return -1;
    memcpy(dst->words, src->words, src->n_words * sizeof *dst->words);
    dst->n_words = src->n_words;
    return 0;
}
