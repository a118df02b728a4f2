/* cpu_share.h - splitting a set of CPUs among tasks: contiguous blocks of
 * whole cores while there are at least as many cores as tasks, then cores
 * shared out by hyperthread, and overlap only when there are fewer PUs than
 * tasks. */
#ifndef COHORT_CPU_SHARE_H
#define COHORT_CPU_SHARE_H

#include <hwloc.h>

/* Fills out[0..k-1] (allocated bitmaps) with the shares of avail. Returns -1
 * when avail holds no PU of the topology. */
int cpu_share_split(hwloc_topology_t topo, hwloc_const_bitmap_t avail, unsigned k,
                    hwloc_bitmap_t *out);

/* Cores touched by set (PUs when the topology has no cores), at least 1. */
unsigned cpu_share_cores(hwloc_topology_t topo, hwloc_const_bitmap_t set);

#endif
