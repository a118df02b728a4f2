/* plan_gpu.h - the planner's choice of GPUs for the tasks of a node
 * (private to the planner; plan.c is its one user). The step's GPUs on
 * the node are ordered so that GPUs of one locality are adjacent, cut into
 * units (a group of GPUs per task when tasks <= GPUs, else one GPU shared
 * by up to `capacity` tasks), and every task gets a unit: tasks the user
 * bound to CPUs the one closest to their CPUs, the others in order. Pure. */
#ifndef COHORT_PLAN_GPU_H
#define COHORT_PLAN_GPU_H

#include <hwloc.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"

struct plan_unit {
    unsigned first, count; /* slice of the ordered GPU list */
    unsigned capacity, used;
    hwloc_bitmap_t cpuset; /* locality of its GPUs, NULL when unknown */
};

struct plan_gpus {
    struct cohort_task_gpu *gpus; /* the node's step GPUs, in unit order */
    unsigned n;
    struct plan_unit *units;
    unsigned n_units;
    unsigned *task_unit; /* per local task */
};

/* The step's GPUs on this node (Slurm's, else every GPU hwloc found) into
 * w (zeroed by the caller); unknown gets the ones hwloc does not know, as
 * a list ("" when none). 0, or -1 when out of memory. */
int plan_gpus_collect(struct plan_gpus *w, const struct cohort_step *step,
                      const struct cohort_topology *topo, char *unknown, size_t len);

/* Orders the GPUs, makes the units and gives each of tasks one; bound: the
 * user's CPU binding per task, or NULL. 0, or -1 when out of memory. */
int plan_gpus_assign(struct plan_gpus *w, const struct cohort_topology *topo,
                     hwloc_bitmap_t *bound, uint32_t tasks);

/* Task t's GPUs into tp (gpus, n_gpus) and their NUMA nodes into
 * tp->nodeset. 0, or -1 when out of memory. */
int plan_gpus_give(const struct plan_gpus *w, const struct cohort_topology *topo, uint32_t t,
                   struct cohort_task_plan *tp);

/* Every task's CUDA_VISIBLE_DEVICES and device index: train, every GPU
 * with the tasks' own first in local order (device LOCAL_RANK is the
 * task's own); infer, the task's GPUs only. 0, or -1 when out of memory. */
int plan_gpus_visible(const struct plan_gpus *w, struct cohort_node_plan *p);

void plan_gpus_free(struct plan_gpus *w);

#endif
