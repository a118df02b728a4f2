/* plan_line.h - one task's plan as a single line of text, for
 * `--cohort-verbose` (plugin) and `cohort-launch --verbose`. */
#ifndef COHORT_PLAN_LINE_H
#define COHORT_PLAN_LINE_H

#include <stddef.h>

#include "plan.h"

/* "cohort: rank 3/8 node 0/2 local 3/4 gpu 0000:18:00.0 cuda 3 visible
 *  0,1,2,3 cpus 0-13 numa 0 omp 14 master n1:29500 mode train" */
void plan_line(char *buf, size_t len, const struct cohort_node_plan *p,
               const struct cohort_topology *topo, uint32_t local_rank);

#endif
