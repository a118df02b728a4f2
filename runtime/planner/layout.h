/* layout.h - where Slurm puts each task of a step: the global ranks on a
 * node (block, cyclic, plane, arbitrary) and the node of task 0. */
#ifndef COHORT_LAYOUT_H
#define COHORT_LAYOUT_H

#include <stddef.h>

#include "step.h"

/* Fills ranks[0 .. tasks_per_node[node]-1] with the node's global ranks in
 * local-id order. */
int layout_node_ranks(const struct cohort_step *s, uint32_t node, uint32_t *ranks,
                      struct cohort_err *err);

/* Fills rank_node[0 .. num_tasks-1] with each global rank's node index
 * (0, or -1 with err as layout_node_ranks gives it, or COHORT_E_RESOURCE). */
int layout_rank_nodes(const struct cohort_step *s, uint32_t *rank_node, struct cohort_err *err);

/* Host name of task 0: the first step node, or line 1 of SLURM_HOSTFILE. */
int layout_task0_host(const struct cohort_step *s, char *buf, size_t len);

const char *layout_dist_name(enum cohort_dist d);

#endif
