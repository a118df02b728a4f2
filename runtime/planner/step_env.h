/* step_env.h - describe a step from a task's Slurm environment (the
 * SLURM_* variables srun gives every task). Used by cohort-info,
 * cohort-launch and libcohort; the plugin uses spank items instead. */
#ifndef COHORT_STEP_ENV_H
#define COHORT_STEP_ENV_H

#include "envlist.h"
#include "step.h"

/* SLURM_HOSTFILE when the step's distribution is arbitrary, else NULL: the
 * caller reads that file and passes its text to step_from_env(). */
const char *step_env_hostfile(const struct envlist *env);

/* Fills s from env. SLURM_NODEID is required; SLURM_PROCID and SLURM_LOCALID
 * place the calling task when present. */
int step_from_env(struct cohort_step *s, const struct envlist *env,
                  const char *hostfile_text, struct cohort_err *err);

#endif
