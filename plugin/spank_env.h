/* spank_env.h - the job's environment as slurmstepd holds it, read through
 * SPANK: one variable into a malloc'd string, several into an envlist, one
 * taken out. */
#ifndef COHORT_SPANK_ENV_H
#define COHORT_SPANK_ENV_H

#include <slurm/spank.h>
#include <stddef.h>

#include "envlist.h"

/* NAME's value (malloc'd), or NULL when unset (or out of memory). */
char *get_env(spank_t sp, const char *name);

/* The variables of names that are set, into env; -1 when out of memory. */
int collect_env(spank_t sp, struct envlist *env, const char *const *names, size_t n);

/* NAME's value taken out of the job's environment, or NULL. */
char *take_env(spank_t sp, const char *name);

#endif
