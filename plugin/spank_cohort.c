/* spank_cohort.c - the SPANK plugin's entry points. slurm_spank_init
 * parses the plugstack arguments and registers the options in every
 * context (and refreshes the node's topology cache in slurmd); every other
 * hook is handed by spank_context() to the side that runs it: srun's
 * (spank_srun.c) or slurmstepd's (spank_slurmstepd.c), each with its own
 * state, so that a reader knows which process a line runs in. A user's
 * mistake never fails slurm_spank_init. */
#include <slurm/spank.h>
#include <stdbool.h>

#include "plugin_args.h"
#include "spank_opts.h"
#include "spank_slurmstepd.h"
#include "spank_srun.h"
#include "topo_cache.h"

SPANK_PLUGIN(cohort, 1);

/* Whether the plugstack arguments were taken: false disables cohort. */
static bool args_ok;

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    struct cohort_err err;
    args_ok = plugin_args_parse(ac, av, &site_args, &err) == 0;
    if (!args_ok) {
        slurm_error("cohort: plugstack.conf: %s; cohort is disabled", err.msg);
        /* never fail init: that would drain nodes and break every job; the
         * options stay registered so that jobs using them still run */
    } else if (spank_context() == S_CTX_SLURMD && !site_args.topology[0] &&
               site_args.topology_cache[0] &&
               topo_cache_refresh(site_args.topology_cache, &err) < 0) {
        /* slurmd's start: a failure costs steps nothing but their own discovery */
        slurm_info("cohort: no topology cache: %s (steps discover the topology)", err.msg);
    }
    for (struct spank_option *o = cohort_options; o->name; o++)
        if (spank_option_register(sp, o) != ESPANK_SUCCESS)
            slurm_verbose("cohort: cannot register --%s here", o->name);
    return 0;
}

/* srun, before the allocation: a bad choice fails srun with one line. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    if (!args_ok || spank_context() != S_CTX_LOCAL)
        return 0;
    return srun_check_options();
}

/* srun, just before the launch. */
int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_LOCAL)
        srun_pass_on(args_ok);
    return 0;
}

/* slurmstepd, before the tasks fork. */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_REMOTE)
        stepd_user_init(sp, args_ok);
    return 0;
}

/* slurmstepd, in each task before it runs the user's program. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    return spank_context() == S_CTX_REMOTE ? stepd_task_init(sp) : 0;
}

/* slurmstepd, as each task is forked. */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_REMOTE)
        stepd_task_post_fork(sp);
    return 0;
}

/* slurmstepd, as each task ends. */
int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_REMOTE)
        stepd_task_exit(sp);
    return 0;
}

/* Every context, at its end: the options' values freed; in slurmstepd,
 * its side ended too. */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_REMOTE)
        stepd_exit();
    job_opts_free();
    return 0;
}
