/* cpu_share.c - even, non-overlapping CPU shares (see cpu_share.h). */
#include "cpu_share.h"

#include <stdlib.h>

/* The parts of avail, one per core (or per PU without cores), in order. */
static unsigned core_parts(hwloc_topology_t topo, hwloc_const_bitmap_t avail,
                           hwloc_bitmap_t **parts)
{
    hwloc_obj_type_t type =
        hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int total = hwloc_get_nbobjs_by_type(topo, type);
    *parts = calloc(total > 0 ? (size_t)total : 1, sizeof **parts);
    unsigned n = 0;
    for (int i = 0; *parts && i < total; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, (unsigned)i);
        if (!o->cpuset || !hwloc_bitmap_intersects(o->cpuset, avail))
            continue;
        hwloc_bitmap_t p = hwloc_bitmap_alloc();
        hwloc_bitmap_and(p, o->cpuset, avail);
        (*parts)[n++] = p;
    }
    return n;
}

int cpu_share_split(hwloc_topology_t topo, hwloc_const_bitmap_t avail, unsigned k,
                    hwloc_bitmap_t *out)
{
    hwloc_bitmap_t *cores;
    unsigned nc = core_parts(topo, avail, &cores);
    if (nc == 0) {
        free(cores);
        return -1;
    }
    for (unsigned t = 0; t < k; t++)
        hwloc_bitmap_zero(out[t]);
    if (nc >= k) {
        /* Task t gets cores [t*nc/k, (t+1)*nc/k). */
        for (unsigned t = 0; t < k; t++)
            for (unsigned c = (unsigned)((unsigned long)t * nc / k);
                 c < (unsigned)((unsigned long)(t + 1) * nc / k); c++)
                hwloc_bitmap_or(out[t], out[t], cores[c]);
    } else {
        /* Core c hosts tasks [c*k/nc, (c+1)*k/nc) and splits its PUs. */
        for (unsigned c = 0; c < nc; c++) {
            unsigned t0 = (unsigned)((unsigned long)c * k / nc);
            unsigned m = (unsigned)((unsigned long)(c + 1) * k / nc) - t0;
            int p = hwloc_bitmap_weight(cores[c]);
            int pu = -1;
            for (int i = 0; i < p; i++) {
                pu = hwloc_bitmap_next(cores[c], pu);
                if ((unsigned)p >= m) {
                    unsigned t = (unsigned)((unsigned long)i * m / (unsigned)p);
                    hwloc_bitmap_set(out[t0 + t], (unsigned)pu);
                }
            }
            if ((unsigned)p < m) /* fewer PUs than tasks: overlap */
                for (unsigned t = 0; t < m; t++) {
                    int q = hwloc_bitmap_first(cores[c]);
                    for (unsigned s = 0; s < t % (unsigned)p; s++)
                        q = hwloc_bitmap_next(cores[c], q);
                    hwloc_bitmap_set(out[t0 + t], (unsigned)q);
                }
        }
    }
    for (unsigned c = 0; c < nc; c++)
        hwloc_bitmap_free(cores[c]);
    free(cores);
    return 0;
}

unsigned cpu_share_cores(hwloc_topology_t topo, hwloc_const_bitmap_t set)
{
    hwloc_obj_type_t type =
        hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    unsigned n = 0;
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_obj_by_type(topo, type, o)))
        n += o->cpuset && hwloc_bitmap_intersects(o->cpuset, set);
    return n ? n : 1;
}
