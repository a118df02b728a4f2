/* plan.h - the planner: (step, topology, policy, the tasks' environment)
 * -> what every task of this node gets. Pure: reads its inputs only, sets
 * no variable and binds nothing; shells apply or print the result. */
#ifndef COHORT_PLAN_H
#define COHORT_PLAN_H

#include <hwloc.h>
#include <stdbool.h>
#include <stdint.h>

#include "envlist.h"
#include "hostlist.h"
#include "plan_step.h" /* plan_master_addr, plan_step_ports: the plan's step-wide values */
#include "ports.h"
#include "step.h"
#include "topology.h"

enum cohort_mode {
    COHORT_MODE_TRAIN, /* all node GPUs visible, own GPU at index LOCAL_RANK */
    COHORT_MODE_INFER, /* own GPU(s) only; several tasks per GPU allowed */
};

struct cohort_policy {
    enum cohort_mode mode;
    bool bind;               /* false: variables only (the plugin's env mode) */
    struct port_range ports; /* range for hashed ports */
    /* The interface this host reaches MASTER_ADDR through, found by the
     * shell (route_interface); NULL when unknown. Becomes NCCL_SOCKET_IFNAME
     * and GLOO_SOCKET_IFNAME unless the user set them; a loopback interface
     * only when the step has one node. */
    const char *socket_ifname;
    bool socket_ifname_loopback;
    /* Why the shell found no such interface (a note says it), or NULL. */
    const char *socket_route_error;
};

void policy_init(struct cohort_policy *p);
int mode_parse(const char *text, enum cohort_mode *out, struct cohort_err *err);
const char *mode_name(enum cohort_mode m);

struct cohort_task_gpu {
    int gres; /* Slurm's index on this node */
    int cuda; /* index in CUDA_VISIBLE_DEVICES as Slurm numbers them */
    int topo; /* index into cohort_topology.gpus, -1 when hwloc did not see it */
};

struct cohort_task_plan {
    uint32_t rank, local_rank, node_rank;
    uint32_t world_size, local_world_size, num_nodes;
    uint16_t master_port, bootstrap_port;
    struct cohort_task_gpu *gpus; /* first one is the task's own GPU */
    unsigned n_gpus;
    char *cuda_visible_devices;   /* NULL when the plan does not set it */
    int cuda_device;              /* the own GPU's index in it (set_device), -1: none */
    hwloc_bitmap_t cpuset;        /* PU OS indexes */
    hwloc_bitmap_t nodeset;       /* NUMA OS indexes for memory */
    unsigned omp_threads;
    bool cpus_from_user;          /* the user's --cpu-bind is kept */
    struct envlist env;           /* variables to set */
    struct envlist kept;          /* variables the user set, left alone */
};

struct cohort_node_plan {
    enum cohort_mode mode;
    bool bind;
    uint32_t node_rank;
    char master_addr[HOSTLIST_MAX_NAME + 1];
    char socket_ifname[16];         /* "" when the plan sets none */
    uint32_t n_tasks;
    struct cohort_task_plan *tasks; /* by local rank */
    char **notes;                   /* one sentence each: what the plan could not do */
    unsigned n_notes;
};

/* Plans every task of the step on this node. task_env is the environment
 * the tasks start with (a variable set there is the user's and is kept,
 * except CUDA_VISIBLE_DEVICES when Slurm wrote it). */
int plan_node(const struct cohort_step *step, const struct cohort_topology *topo,
              const struct cohort_policy *policy, const struct envlist *task_env,
              struct cohort_node_plan **out, struct cohort_err *err);
void plan_free(struct cohort_node_plan *p);

/* The mode as the tasks see it in COHORT_MODE: env, train or infer. */
const char *plan_mode_name(const struct cohort_node_plan *p);

/* The value the task ends up with for name: set by the plan, or the user's
 * kept value; NULL when neither. */
const char *plan_task_var(const struct cohort_task_plan *t, const char *name);

/* The GPU's PCI bus id, or NULL when hwloc did not see it. */
const char *plan_gpu_pci(const struct cohort_topology *topo, const struct cohort_task_gpu *g);

#endif
