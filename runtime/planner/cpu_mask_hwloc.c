/* cpu_mask_hwloc.c - cpu_mask <-> hwloc bitmap (see cpu_mask_hwloc.h). */
#include "cpu_mask_hwloc.h"

hwloc_bitmap_t cpu_mask_to_hwloc(const struct cpu_mask *m)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int c = cpu_mask_next(m, -1); set && c >= 0; c = cpu_mask_next(m, c)) {
        if (hwloc_bitmap_set(set, (unsigned)c) < 0) {
            hwloc_bitmap_free(set);
            return NULL;
        }
    }
    return set;
}

int cpu_mask_from_hwloc(struct cpu_mask *m, hwloc_const_bitmap_t set)
{
    cpu_mask_free(m);
    if (hwloc_bitmap_weight(set) < 0) /* infinite */
        return -1;
    for (int c = hwloc_bitmap_first(set); c >= 0; c = hwloc_bitmap_next(set, c)) {
        if (cpu_mask_set(m, (unsigned)c) < 0) {
            cpu_mask_free(m);
            return -1;
        }
    }
    return 0;
}
