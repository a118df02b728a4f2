/* spank_opts.c - the plugin's options as srun, sbatch and salloc take
 * them (see spank_opts.h). */
#include "spank_opts.h"

#include <stdlib.h>
#include <string.h>

#include "mps_step.h"
#include "store_step.h"
#include "watch_step.h"

struct job_opts job_opts = {.mode = -1};
struct plugin_args site_args;

void job_opts_free(void)
{
    free(job_opts.mps);
    free(job_opts.store);
    free(job_opts.watch);
    job_opts.mps = job_opts.store = job_opts.watch = NULL;
}

int job_mode(const char *env, enum cohort_plugin_mode *m, struct cohort_err *err)
{
    *m = site_args.default_mode;
    if (job_opts.mode >= 0) {
        *m = (enum cohort_plugin_mode)job_opts.mode;
        return 0;
    }
    if (env && plugin_mode_parse(env, m, err) < 0)
        return cohort_fail(err, "COHORT_MODE='%s' is not one of off, env, train, infer", env);
    return 0;
}

/* An option's value as its callback gets it: sbatch and salloc pass their
 * options to the job's sruns in SLURM_SPANK_OPTION_* variables, where an
 * option given without a value reads "(null)", and slurmstepd hands such an
 * option to the remote callback as ""; both are no value (else every node's
 * log would say the option failed, for a step that runs as asked). */
static const char *option_value(const char *optarg)
{
    return optarg && *optarg && strcmp(optarg, "(null)") != 0 ? optarg : NULL;
}

static int opt_cohort_cb(int val, const char *optarg, int remote)
{
    enum cohort_plugin_mode m;
    struct cohort_err err;
    (void)val;
    optarg = option_value(optarg);
    if (plugin_mode_parse(optarg ? optarg : "", &m, &err) < 0) {
        if (!remote)
            slurm_error("cohort: --cohort=%s: %s", optarg ? optarg : "", err.msg);
        return -1;
    }
    job_opts.mode = (int)m;
    return 0;
}

static int opt_verbose_cb(int val, const char *optarg, int remote)
{
    (void)val;
    (void)optarg;
    (void)remote;
    job_opts.verbose = true;
    return 0;
}

static int opt_mps_cb(int val, const char *optarg, int remote)
{
    struct mps_args m;
    struct cohort_err err;
    (void)val;
    optarg = option_value(optarg);
    if (mps_step_want(&site_args, NULL, true, optarg, &m, &err) < 0) {
        if (!remote)
            slurm_error("cohort: %s", err.msg);
        return -1;
    }
    free(job_opts.mps);
    job_opts.mps = optarg ? strdup(optarg) : NULL;
    job_opts.mps_given = true;
    return 0;
}

static int opt_store_cb(int val, const char *optarg, int remote)
{
    bool on;
    struct cohort_err err;
    (void)val;
    optarg = option_value(optarg);
    if (store_step_want(&site_args, NULL, true, optarg, &on, &err) < 0) {
        if (!remote)
            slurm_error("cohort: %s", err.msg);
        return -1;
    }
    free(job_opts.store);
    job_opts.store = optarg ? strdup(optarg) : NULL;
    job_opts.store_given = true;
    return 0;
}

static int opt_watch_cb(int val, const char *optarg, int remote)
{
    unsigned stall_s;
    struct cohort_err err;
    (void)val;
    optarg = option_value(optarg);
    if (watch_step_want(&site_args, NULL, true, optarg, &stall_s, &err) < 0) {
        if (!remote)
            slurm_error("cohort: %s", err.msg);
        return -1;
    }
    free(job_opts.watch);
    job_opts.watch = optarg ? strdup(optarg) : NULL;
    job_opts.watch_given = true;
    return 0;
}

struct spank_option cohort_options[] = {
    {"cohort", "MODE",
     "cohort: off, env (variables only), train or infer (variables, GPU, CPU and memory "
     "binding); default set by the site",
     1, 0, opt_cohort_cb},
    {"cohort-verbose", NULL, "cohort: each task prints its plan as one line on stderr", 0, 0,
     opt_verbose_cb},
    {"cohort-mps", "[yes|no|threads=PCT,mem=SIZE]",
     "cohort: in infer mode, run the tasks sharing a GPU under an MPS daemon of the step", 2, 0,
     opt_mps_cb},
    {"cohort-store", "[yes|no]",
     "cohort: serve PyTorch's store (init_process_group's env:// rendezvous) from cohort's "
     "node agents, authenticated, instead of a TCPStore on rank 0",
     2, 0, opt_store_cb},
    {"cohort-watch", "[SECONDS|yes|no]",
     "cohort: in train mode, end the step with one line naming the rank or node when a rank "
     "dies, a node is lost, or a rank keeps the others waiting SECONDS (default 120)",
     2, 0, opt_watch_cb},
    SPANK_OPTIONS_TABLE_END,
};

