/* mps_plan.h - whether a node's tasks run under a per-step MPS daemon, and
 * why not: pure, from the node's plan and the step's environment. The
 * plugin starts the daemon on this verdict; cohort-info shows it.
 *
 * A daemon is wanted only in infer mode, where the planner puts several
 * tasks on one GPU; it is left to others (with the reason) when the step
 * names an MPS pipe of its own (CUDA_MPS_PIPE_DIRECTORY: the user's or a
 * site's daemon), uses Slurm's gres/mps (which sets
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) or gres/shard, or the caller saw a
 * site daemon on the node; and it is pointless when no GPU of the node is
 * shared by two tasks. */
#ifndef COHORT_MPS_PLAN_H
#define COHORT_MPS_PLAN_H

#include <stdbool.h>

#include "envlist.h"
#include "plan.h"

struct mps_verdict {
    bool use;         /* a daemon for the step on this node */
    unsigned sharing; /* most tasks of this node on one GPU */
    char why[256];    /* when not used: one sentence */
};

/* The variables of the step's environment the verdict reads. */
extern const char *const mps_env_vars[];
extern const unsigned mps_n_env_vars;

/* env: the step's environment (at least mps_env_vars); site_daemon: an MPS
 * daemon not of this step runs on the node (the caller looked). */
void mps_decide(const struct cohort_node_plan *p, const struct envlist *env, bool site_daemon,
                struct mps_verdict *v);

/* Tasks of the node on local task t's own GPU, itself included; 0 when it
 * has none. */
unsigned mps_sharing(const struct cohort_node_plan *p, uint32_t t);

#endif
