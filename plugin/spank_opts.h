/* spank_opts.h - the plugin's options (--cohort, --cohort-verbose,
 * --cohort-mps, --cohort-store, --cohort-watch) as srun, sbatch and salloc take them: each
 * checked when given (a bad value fails srun in one line; in slurmstepd it
 * is the tasks that say so), kept for the SPANK callbacks. */
#ifndef COHORT_SPANK_OPTS_H
#define COHORT_SPANK_OPTS_H

#include <slurm/spank.h>
#include <stdbool.h>

#include "plugin_args.h"

struct job_opts {
    int mode;          /* --cohort, -1 when not given */
    bool verbose;      /* --cohort-verbose */
    bool mps_given;    /* --cohort-mps[=VALUE] */
    char *mps;         /* its value, NULL without one */
    bool store_given;  /* --cohort-store[=VALUE] */
    char *store;       /* its value, NULL without one */
    bool watch_given;  /* --cohort-watch[=VALUE] */
    char *watch;       /* its value, NULL without one */
};

extern struct job_opts job_opts;

/* The site's plugstack.conf arguments (slurm_spank_init parses them
 * into it; the options are checked against them). */
extern struct plugin_args site_args;

/* The options to register, ended by SPANK_OPTIONS_TABLE_END. */
extern struct spank_option cohort_options[];

/* The step's mode: --cohort, else env (COHORT_MODE as the caller's side
 * sees it; may be NULL), else the site's default. 0, or -1 with a sentence
 * naming a bad COHORT_MODE. */
int job_mode(const char *env, enum cohort_plugin_mode *m, struct cohort_err *err);

/* Frees the options' values. */
void job_opts_free(void);

#endif
