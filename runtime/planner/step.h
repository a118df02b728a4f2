/* step.h - what Slurm says about one job step, as the planner needs it.
 * Filled by builders that take Slurm's own text forms, so every shell (the
 * SPANK plugin from spank items, cohort-info/cohort-launch/libcohort from the
 * task environment, tests from tables) describes a step the same way. */
#ifndef COHORT_STEP_H
#define COHORT_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu_mask.h"
#include "error.h"
#include "hostlist.h"

#define COHORT_UNKNOWN UINT32_MAX
#define STEP_MAX_NODES HOSTLIST_MAX_HOSTS
#define STEP_MAX_TASKS (1u << 24)

enum cohort_dist {
    COHORT_DIST_BLOCK,
    COHORT_DIST_CYCLIC,
    COHORT_DIST_PLANE,
    COHORT_DIST_ARBITRARY,
};

struct cohort_step {
    uint32_t job_id, step_id;

    /* Layout of the whole step. */
    struct hostlist *nodes;      /* the step's nodes, in Slurm's node order */
    uint32_t num_nodes, num_tasks;
    uint32_t *tasks_per_node;    /* num_nodes entries */
    enum cohort_dist dist;
    uint32_t plane_size;         /* COHORT_DIST_PLANE */
    struct hostlist *task_hosts; /* COHORT_DIST_ARBITRARY: host of task i */

    /* This node and, inside a task, this task. */
    uint32_t node_id;
    uint32_t *node_ranks;        /* global ranks of this node's tasks, by local id;
                                    NULL until step_set_node() */
    uint32_t rank, local_rank;   /* COHORT_UNKNOWN outside a task */

    /* Ports Slurm reserved for the step (first two are used). */
    uint16_t resv_ports[2];
    unsigned n_resv_ports;

    /* GPUs allocated to the step on this node, as Slurm numbers them (gres
     * index = position among the node's NVIDIA GPUs in PCI order), and the
     * CUDA index Slurm gave each in CUDA_VISIBLE_DEVICES. */
    bool gpus_given;             /* false: nothing said; every GPU is usable */
    bool gpus_from_slurm;        /* CUDA_VISIBLE_DEVICES is Slurm's, ours to replace */
    unsigned n_gpus;
    int *gpus;
    int *gpu_cuda;

    /* Explicit user CPU binding (--cpu-bind=map_cpu/mask_cpu), per local
     * task (n_bound of them, never empty), or NULL when the user gave none. */
    struct cpu_mask *bound_cpus;
    uint32_t n_bound;

    /* CPUs (PU OS indexes) the step may use on this node; empty: all the
     * topology allows. */
    struct cpu_mask allowed_cpus;
};

void step_init(struct cohort_step *s);
void step_free(struct cohort_step *s);

/* Layout from Slurm's text forms. dist_text may be NULL (block); it is
 * SLURM_DISTRIBUTION ("cyclic", "block:cyclic", "plane", "arbitrary", ...),
 * plane_text SLURM_DIST_PLANESIZE, hostfile_text the contents of
 * SLURM_HOSTFILE (required for arbitrary). */
int step_set_layout(struct cohort_step *s, const char *nodelist, const char *num_tasks,
                    const char *tasks_per_node, const char *dist_text,
                    const char *plane_text, const char *hostfile_text,
                    struct cohort_err *err);

/* Places the caller on node node_id; gtids (SLURM_GTIDS, may be NULL) gives
 * the node's global ranks, else they are computed from the layout. */
int step_set_node(struct cohort_step *s, uint32_t node_id, const char *gtids,
                  struct cohort_err *err);

/* Places the caller on node node_id with the node's global ranks as numbers
 * (ranks[i]: local task i's, n of them), as slurmstepd gives them: n must
 * be the node's task count in the layout and every rank below the step's
 * task count. The ranks are copied. */
int step_set_node_ranks(struct cohort_step *s, uint32_t node_id, const uint32_t *ranks,
                        uint32_t n, struct cohort_err *err);

/* Places the calling task (after step_set_node); checks it against the layout. */
int step_set_task(struct cohort_step *s, uint32_t rank, uint32_t local_rank,
                  struct cohort_err *err);

/* SLURM_STEP_RESV_PORTS (may be NULL). */
int step_set_resv_ports(struct cohort_step *s, const char *text, struct cohort_err *err);

/* GPUs from SLURM_STEP_GPUS, else SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES
 * (replacing GPUs set by an earlier call).
 * slurm_gpus_on_node tells whether Slurm manages GPUs here (SLURM_GPUS_ON_NODE
 * set), so that a CUDA_VISIBLE_DEVICES without the others is known to be
 * Slurm's rather than the user's. Any may be NULL. */
int step_set_gpus(struct cohort_step *s, const char *step_gpus, const char *job_gpus,
                  const char *cuda_visible, bool slurm_gpus_on_node,
                  struct cohort_err *err);

/* SLURM_CPU_BIND_TYPE / SLURM_CPU_BIND_LIST (after step_set_node). */
int step_set_cpu_bind(struct cohort_step *s, const char *type, const char *list,
                      struct cohort_err *err);

/* The CPUs the step may use (copied); NULL resets to "all". */
int step_set_allowed_cpus(struct cohort_step *s, const struct cpu_mask *cpus,
                          struct cohort_err *err);

/* Strict decimal uint32 from variable name. */
int parse_u32(const char *name, const char *text, uint32_t *out, struct cohort_err *err);

#endif
