/* store_step.h - the plugin's part of PyTorch's store served by cohort
 * (--cohort-store, COHORT_STORE, plugstack store=): what the job asked,
 * the node agent's record lines for it, and each task's variables. When
 * the node agent (node_agent.h) serves the store, each task reaches it as
 * MASTER_ADDR:MASTER_PORT (127.0.0.1 and the agent's port) with
 * TORCHELASTIC_USE_AGENT_STORE, so that init_process_group's env://
 * rendezvous becomes a client of the agent's, never a server on a port
 * other users can reach. */
#ifndef COHORT_STORE_STEP_H
#define COHORT_STORE_STEP_H

#include <slurm/spank.h>
#include <stdbool.h>
#include <stdint.h>

#include "envlist.h"
#include "error.h"
#include "node_agent.h"
#include "plan.h"
#include "plugin_args.h"

struct store_step {
    bool want;                  /* asked for (the job, else the site) */
    bool serve;                 /* the node agent is to serve it (the job set no
                                   MASTER_ADDR or MASTER_PORT of its own) */
    char master_addr[256];      /* the step's real MASTER_ADDR, for the runtime */
    char error[COHORT_ERR_LEN]; /* asked for wrongly: each task fails with it */
    char note[COHORT_ERR_LEN];  /* asked for where it does not apply: said once */
};

/* The job's choice: --cohort-store (opt_given; opt NULL without a value)
 * over COHORT_STORE (env) over the site's store=. */
int store_step_want(const struct plugin_args *args, const char *env, bool opt_given,
                    const char *opt, bool *out, struct cohort_err *err);

/* slurmstepd, user_init, once per node, after the node's plan: what the
 * job asked (the job's COHORT_STORE, else srun_store, srun's; opt:
 * --cohort-store) and whether the node agent is to serve it: not when the
 * job set MASTER_ADDR or MASTER_PORT itself (a note then). */
void store_step_choose(struct store_step *s, spank_t sp, const struct plugin_args *args,
                       const char *srun_store, bool opt_given, const char *opt,
                       const struct cohort_node_plan *plan);

/* The agent's record lines for the store it serves: the holder's host
 * and port (the step's MASTER_ADDR and MASTER_PORT). 0, or -1 when out of
 * memory. */
int store_step_record(const struct store_step *s, const struct cohort_node_plan *plan,
                      struct envlist *record);

/* task_init of local task local: 1 when the task must fail with s->error,
 * else 0 after the note (local task 0) and, when the node's agent a serves
 * the store, the task's variables (1 when they cannot be set). */
int store_step_task(spank_t sp, struct store_step *s, const struct node_agent *a,
                    uint32_t local);

#endif
