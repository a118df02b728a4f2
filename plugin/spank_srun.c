/* spank_srun.c - the plugin's srun side (see spank_srun.h): it checks the
 * job's --cohort, COHORT_MODE, MPS, store and watch choices before the
 * allocation, and just before the launch passes srun's COHORT_* variables
 * and the step's secret to slurmstepd. It owns srun's state, one struct. */
#include "spank_srun.h"

#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_sys.h"
#include "base_text.h"
#include "mps_step.h"
#include "spank_opts.h"
#include "store_step.h"
#include "watch_step.h"

/* srun's state: the secret made once per srun (64 hex digits), or empty. */
struct srun_state {
    char made_secret[65];
};

static struct srun_state srun;

int srun_check_options(void)
{
    struct cohort_err err;
    enum cohort_plugin_mode m;
    struct mps_args want;
    bool store_on;
    unsigned stall_s;
    if (job_mode(getenv("COHORT_MODE"), &m, &err) < 0 ||
        (m != PLUGIN_MODE_OFF &&
         (mps_step_want(&site_args, getenv("COHORT_MPS"), job_opts.mps_given, job_opts.mps, &want, &err) < 0 ||
          store_step_want(&site_args, getenv("COHORT_STORE"), job_opts.store_given, job_opts.store, &store_on,
                          &err) < 0 ||
          watch_step_want(&site_args, getenv("COHORT_WATCH"), job_opts.watch_given, job_opts.watch,
                          &stall_s, &err) < 0))) {
        slurm_error("cohort: %s", err.msg);
        return -1;
    }
    return 0;
}

/* NAME's value, if set, for slurmstepd in FWD. */
static void forward(const char *name, const char *fwd)
{
    const char *v = getenv(name);
    if (v && setenv(fwd, v, 1) != 0)
        slurm_error("cohort: cannot pass %s to the tasks", name);
}

/* The step's secret (never printed): the user's COHORT_SECRET if set, else
 * 64 random hex digits made once per srun into st. Slurm carries it in the
 * launch message, which munge signs but does not encrypt; under
 * secret=munge there is none, and the runtime's bootstrap and coordinator
 * authenticate through munge on every node instead. */
static void pass_secret(struct srun_state *st)
{
    const char *secret = getenv("COHORT_SECRET");
    if (!secret && !st->made_secret[0]) {
        unsigned char raw[32];
        if (base_random(raw, sizeof raw) < 0) {
            explicit_bzero(raw, sizeof raw);
            slurm_error("cohort: no random bytes for the step secret; the runtime's "
                        "bootstrap will use its fallback");
            return;
        }
        base_hex_encode(raw, sizeof raw, st->made_secret);
        explicit_bzero(raw, sizeof raw);
    }
    /* srun refuses spank_setenv here; its environment is the way on. */
    if (setenv(SRUN_SECRET, secret ? secret : st->made_secret, 1) != 0)
        slurm_error("cohort: cannot pass the step secret to the tasks");
}

void srun_pass_on(bool args_ok)
{
    struct cohort_err err;
    enum cohort_plugin_mode m;
    unsetenv(SRUN_SECRET); /* never what another srun left in the environment */
    unsetenv(SRUN_MODE);
    unsetenv(SRUN_VERBOSE);
    unsetenv(SRUN_MPS);
    unsetenv(SRUN_STORE);
    unsetenv(SRUN_WATCH);
    if (!args_ok)
        return;
    forward("COHORT_MODE", SRUN_MODE);
    forward("COHORT_VERBOSE", SRUN_VERBOSE);
    forward("COHORT_MPS", SRUN_MPS);
    forward("COHORT_STORE", SRUN_STORE);
    forward("COHORT_WATCH", SRUN_WATCH);
    if (job_mode(getenv("COHORT_MODE"), &m, &err) < 0 || m == PLUGIN_MODE_OFF ||
        site_args.secret_munge)
        return; /* secret=munge: nothing secret in the launch message */
    pass_secret(&srun);
}
