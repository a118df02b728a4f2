/* mps_step.h - the plugin's MPS for one step on one node, in slurmstepd:
 * what the job asked for (plugstack.conf's mps=, then COHORT_MPS, then
 * --cohort-mps), the verdict on the node's plan (mps_plan.h), the daemon
 * (mps.h), and what each task gets: the variables, a note when MPS was
 * asked and is left alone, a warning when its daemon did not come up. */
#ifndef COHORT_MPS_STEP_H
#define COHORT_MPS_STEP_H

#include <slurm/spank.h>

#include "mps.h"
#include "mps_plan.h"
#include "plugin_args.h"

struct mps_step {
    struct mps_args want;       /* the site's defaults with the job's choice over them */
    struct mps_verdict verdict; /* on this node's plan */
    struct mps_daemon daemon;   /* when up */
    bool up;
    char error[COHORT_ERR_LEN + 16]; /* why it is not up though wanted: each task says it */
};

/* What a job asks: the site's args, then env (COHORT_MPS, may be NULL),
 * then the option's value (opt_given; opt NULL for --cohort-mps alone).
 * 0, or -1 with a sentence naming the bad value. */
int mps_step_want(const struct plugin_args *args, const char *env, bool opt_given,
                  const char *opt, struct mps_args *out, struct cohort_err *err);

/* user_init, once the node is planned: the verdict, and the daemon when
 * the job asked and the verdict says so. Never fails the step: a problem
 * lands in m->error. */
void mps_step_setup(spank_t sp, const struct plugin_args *args, const struct mps_args *want,
                    const struct cohort_node_plan *plan, struct mps_step *m);

/* task_init of local task t: its variables when the daemon is up (note:
 * a phrase for the verbose line), local task 0's note when MPS was asked
 * and is left alone. 1 when the daemon was wanted and is not up (m->error
 * says why: the caller warns, or fails the task under strict=yes). */
int mps_step_task(spank_t sp, struct mps_step *m, const struct cohort_node_plan *plan,
                  uint32_t t, char *note, size_t len);

/* slurm_spank_exit: stops the daemon and removes its directories. */
void mps_step_end(struct mps_step *m);

#endif
