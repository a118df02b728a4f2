/* cpu_mask_hwloc.h - between the step's hwloc-free CPU masks (cpu_mask.h)
 * and the hwloc bitmaps the planner computes with. */
#ifndef COHORT_CPU_MASK_HWLOC_H
#define COHORT_CPU_MASK_HWLOC_H

#include <hwloc.h>

#include "cpu_mask.h"

/* A new hwloc bitmap holding m's CPUs (free it with hwloc_bitmap_free), or
 * NULL when out of memory. */
hwloc_bitmap_t cpu_mask_to_hwloc(const struct cpu_mask *m);

/* m becomes the CPUs of set. Returns 0, or -1 when set is infinite, holds
 * a CPU >= CPU_MASK_LIMIT, or memory ran out (m is empty then). */
int cpu_mask_from_hwloc(struct cpu_mask *m, hwloc_const_bitmap_t set);

#endif
