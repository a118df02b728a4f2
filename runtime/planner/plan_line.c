/* plan_line.c - the one-line rendering of a task's plan (see plan_line.h). */
#include "plan_line.h"

#include <stdio.h>

void plan_line(char *buf, size_t len, const struct cohort_node_plan *p,
               const struct cohort_topology *topo, uint32_t local_rank)
{
    const struct cohort_task_plan *t = &p->tasks[local_rank];
    char cpus[1024], numa[128];
    hwloc_bitmap_list_snprintf(cpus, sizeof cpus, t->cpuset);
    hwloc_bitmap_list_snprintf(numa, sizeof numa, t->nodeset);
    const char *pci = t->n_gpus ? plan_gpu_pci(topo, &t->gpus[0]) : NULL;
    const char *gpu = !t->n_gpus ? "none" : pci ? pci : "unknown";
    const char *cvd = plan_task_var(t, "CUDA_VISIBLE_DEVICES");
    snprintf(buf, len,
             "cohort: rank %u/%u node %u/%u local %u/%u gpu %s cuda %d visible %s cpus %s "
             "numa %s omp %u master %s:%u mode %s",
             t->rank, t->world_size, t->node_rank, t->num_nodes, t->local_rank,
             t->local_world_size, gpu, t->cuda_device, cvd ? cvd : "-", cpus, numa,
             t->omp_threads, p->master_addr, t->master_port, plan_mode_name(p));
}
