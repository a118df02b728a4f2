/* store_step.h - the plugin's part of PyTorch's store served by cohort
 * (--cohort-store, COHORT_STORE, plugstack store=): on each node of a step
 * that asked, the node agent (cohort-agent) started as the job's user with
 * its start record on a pipe that stays open as the way to tell it of the
 * node's task exits; each task then reaches its node's agent as
 * MASTER_ADDR:MASTER_PORT (127.0.0.1 and the agent's port) with
 * TORCHELASTIC_USE_AGENT_STORE, so that init_process_group's env://
 * rendezvous becomes a client of the agent's, never a server on a port
 * other users can reach. An agent that dies while the step runs is told
 * to the node's tasks in one line each (agent_watch.h). */
#ifndef COHORT_STORE_STEP_H
#define COHORT_STORE_STEP_H

#include <slurm/spank.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "envlist.h"
#include "error.h"
#include "plan.h"
#include "plugin_args.h"
#include "step.h"
#include "agent_watch.h"

struct store_step {
    bool want;                 /* asked for (the job, else the site) */
    bool up;                   /* the node's agent serves the tasks */
    pid_t pid;                 /* the agent */
    unsigned long long started;
    int events_fd;             /* the agent's standard input; -1: none */
    struct agent_watch *watch; /* its death told to the node's tasks (agent_watch.h) */
    uint16_t port;             /* the agent's loopback port */
    char master_addr[256];     /* the step's real MASTER_ADDR, for the runtime */
    char error[COHORT_ERR_LEN]; /* asked for and not had: each task fails with it */
    char note[COHORT_ERR_LEN];  /* asked for where it does not apply: said once */
};

/* The job's choice: --cohort-store (opt_given; opt NULL without a value)
 * over COHORT_STORE (env) over the site's store=. */
int store_step_want(const struct plugin_args *args, const char *env, bool opt_given,
                    const char *opt, bool *out, struct cohort_err *err);

/* slurmstepd, user_init, once per node, after the node's plan: what the
 * job asked (srun_store: srun's COHORT_STORE; opt: --cohort-store) and,
 * when it wants the store, the agent started as the job's user with its
 * record (NAME=VALUE lines: the step's layout with the node's global
 * ranks from step->node_ranks, secret, the holder's host
 * and port, the timeout), its port read. Nothing is started when the job
 * set MASTER_ADDR or MASTER_PORT itself. */
void store_step_start(struct store_step *s, spank_t sp, const struct plugin_args *args,
                      const char *srun_store, bool opt_given, const char *opt,
                      const struct cohort_step *step, const struct cohort_node_plan *plan,
                      bool verbose);

/* A task's variables: 0, or 1 when the task must fail with s->error. */
int store_step_task(spank_t sp, struct store_step *s, uint32_t local);

/* slurmstepd, task_post_fork: the node's task local was forked as pid
 * (told if the agent dies while it runs). */
void store_step_forked(struct store_step *s, uint32_t local, pid_t pid);

/* A task of the node ended (its local id, its global rank, its wait
 * status). */
void store_step_ended(struct store_step *s, uint32_t local, uint32_t rank, int status);

/* The step ends on this node: the watch stopped, the agent told (its
 * input closes) and reaped, killed if it does not end within 2 s. */
void store_step_end(struct store_step *s);

#endif
