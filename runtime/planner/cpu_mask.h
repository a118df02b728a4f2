/* cpu_mask.h - a set of CPU numbers (PU OS indexes) without hwloc: what a
 * step says about CPUs (the user's --cpu-bind map or masks, the CPUs the
 * step may use) before any topology is loaded. Describing a step therefore
 * needs no hwloc, and libcohort, which describes steps but never plans
 * CPUs, does not link it. cpu_mask_hwloc.h turns a mask into an hwloc
 * bitmap for the planner. */
#ifndef COHORT_CPU_MASK_H
#define COHORT_CPU_MASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CPU numbers are below this (a 2^20-bit set is 128 KiB). */
#define CPU_MASK_LIMIT (1u << 20)

struct cpu_mask {
    uint64_t *words; /* CPU c is bit c % 64 of words[c / 64] */
    size_t n_words;
};

/* An empty mask; cpu_mask_free() empties one again (it can be reused). */
void cpu_mask_init(struct cpu_mask *m);
void cpu_mask_free(struct cpu_mask *m);

/* Adds CPU cpu. Returns 0, or -1 when cpu >= CPU_MASK_LIMIT or out of
 * memory (m is unchanged then). */
int cpu_mask_set(struct cpu_mask *m, unsigned cpu);

bool cpu_mask_is_empty(const struct cpu_mask *m);

/* The smallest CPU greater than prev (prev -1: the smallest of all), or -1
 * when there is none. */
int cpu_mask_next(const struct cpu_mask *m, int prev);

/* dst becomes a copy of src (dst's old CPUs are freed). Returns 0, or -1
 * when out of memory (dst is empty then). */
int cpu_mask_copy(struct cpu_mask *dst, const struct cpu_mask *src);

#endif
