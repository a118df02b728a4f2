/* watch_step.h - the plugin's part of the step watch (--cohort-watch,
 * COHORT_WATCH, plugstack watch= and watch_stall=; train mode only): what
 * the job asked, the node agent's record lines for it, and each task's
 * variables. The node agents watch the step (runtime/agent/node_watch.c)
 * and the plugin's thread (agent_watch.h) ends the node's tasks when the
 * agent says so. The agent is started for the watch alone when the store
 * is not served: it then serves no store, and its holder listens on a
 * port of the watch's own (watch_step_port).
 *
 * Decisions: the watch's port is keyed like the bootstrap port, from the
 * step with its top bit set, so that it is unpredictable without the
 * secret and differs from the bootstrap port of every step; it is never
 * MASTER_PORT, which PyTorch's own TCPStore binds on rank 0's node, nor
 * the runtime's bootstrap port. A relative COHORT_WATCH_FILE is made
 * absolute from the job's working directory, where the tasks run, so that
 * the agent that writes it needs no working directory of its own. */
#ifndef COHORT_WATCH_STEP_H
#define COHORT_WATCH_STEP_H

#include <slurm/spank.h>
#include <stdbool.h>
#include <stdint.h>

#include "envlist.h"
#include "error.h"
#include "node_agent.h"
#include "plan.h"
#include "plugin_args.h"

struct watch_step {
    unsigned stall_s;           /* SECONDS: how long a rank may keep the others
                                   waiting; 0: the step is not watched */
    bool asked;                 /* the job or the site asked for it */
    char file[4096];            /* COHORT_WATCH_FILE, absolute; "": none */
    unsigned fanout;            /* COHORT_WATCH_FANOUT: the agents' tree's; 0: the default */
    char profiler[4096];        /* the NCCL profiler plugin the tasks get */
    char error[COHORT_ERR_LEN]; /* asked for wrongly: each task fails with it */
    char note[COHORT_ERR_LEN];  /* asked for where it does not apply: said once */
};

/* The job's choice: --cohort-watch (opt_given; opt NULL without a value)
 * over COHORT_WATCH (env; unset or empty: not given) over the site's
 * watch= and watch_stall=. *stall_s gets the watch's seconds, 0 for none.
 * 0, or -1 with one sentence naming the bad value and what to give. */
int watch_step_want(const struct plugin_args *args, const char *env, bool opt_given,
                    const char *opt, unsigned *stall_s, struct cohort_err *err);

/* slurmstepd, user_init, once per node: what the job asked (the job's
 * COHORT_WATCH, else srun_watch, srun's; opt: --cohort-watch), in mode; a
 * watch asked for outside train mode is a note and no watch. */
void watch_step_choose(struct watch_step *w, spank_t sp, const struct plugin_args *args,
                       const char *srun_watch, bool opt_given, const char *opt,
                       enum cohort_plugin_mode mode);

/* The port of the watch's holder when no store is served: keyed by (job,
 * step ^ 0x80000000, secret) into range, and never master or bootstrap
 * (the next port of the range instead) when the range has a third port. */
uint16_t watch_step_port(uint32_t job, uint32_t step, const char *secret,
                         struct port_range range, uint16_t master, uint16_t bootstrap);

/* The node's tasks' GPUs by local id, comma-separated: each task's first
 * GPU by its PCI bus id, else by its index on the node, "" for a task
 * with none. malloc'd; NULL when out of memory. */
char *watch_step_gpus(const struct cohort_node_plan *plan, const struct cohort_topology *topo);

/* The agent's record lines for the watch (nothing when w is off):
 * COHORT_WATCH, COHORT_WATCH_FILE, COHORT_WATCH_GPUS and, when the store
 * is not served (store_served false), COHORT_STORE_SERVE=0 with the
 * holder's host (node 0's) and the watch's port, read with record's
 * COHORT_SECRET, and the job's COHORT_WATCH_FANOUT when it gave one (the
 * agents' tree, watch_tree.h). 0, or -1 when out of memory. */
int watch_step_record(const struct watch_step *w, const struct cohort_step *step,
                      const struct cohort_node_plan *plan, const struct cohort_topology *topo,
                      const struct plugin_args *args, bool store_served,
                      struct envlist *record);

/* task_init of local task local: 1 when the task must fail with w->error
 * (asked for wrongly, or the variables cannot be set), else 0 after the
 * note (local task 0) and, when the node's agent a watches, the task's
 * COHORT_WATCH_DIR and, unless the job set one, NCCL_PROFILER_PLUGIN. */
int watch_step_task(spank_t sp, struct watch_step *w, const struct node_agent *a,
                    uint32_t local);

#endif
