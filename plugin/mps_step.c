/* mps_step.c - the plugin's MPS for one step on one node (see
 * mps_step.h). */
#include "mps_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mps_site.h"
#include "spank_env.h"

int mps_step_want(const struct plugin_args *args, const char *env, bool opt_given,
                  const char *opt, struct mps_args *out, struct cohort_err *err)
{
    struct cohort_err e;
    *out = args->mps;
    if (env && *env && mps_args_parse(env, out, &e) < 0)
        return cohort_fail(err, "COHORT_MPS='%s': %s", env, e.msg);
    if (opt_given && mps_args_parse(opt, out, &e) < 0)
        return cohort_fail(err, "--cohort-mps=%s: %s", opt ? opt : "", e.msg);
    return 0;
}

void mps_step_setup(spank_t sp, const struct plugin_args *args, const struct mps_args *want,
                    const struct cohort_node_plan *plan, struct mps_step *m)
{
    struct envlist env;
    struct cohort_err err;
    memset(m, 0, sizeof *m);
    m->want = *want;
    if (!m->want.on)
        return;
    envlist_init(&env);
    if (collect_env(sp, &env, mps_env_vars, mps_n_env_vars) < 0) {
        snprintf(m->error, sizeof m->error, "out of memory");
        envlist_clear(&env);
        return;
    }
    mps_decide(plan, &env, mps_site_daemon(), &m->verdict);
    envlist_clear(&env);
    uid_t uid;
    gid_t gid;
    if (!m->verdict.use)
        return;
    if (spank_get_item(sp, S_JOB_UID, &uid) || spank_get_item(sp, S_JOB_GID, &gid))
        snprintf(m->error, sizeof m->error, "MPS: slurmstepd did not give the job's user");
    else if (mps_start(&m->daemon, args->mps_control, uid, gid, &err) < 0)
        snprintf(m->error, sizeof m->error, "MPS: %s", err.msg);
    else
        m->up = true;
}

static int set_new(const char *name, const char *value, void *sp)
{
    spank_err_t rc = spank_setenv(sp, name, value, 0); /* never the user's */
    return rc != ESPANK_SUCCESS && rc != ESPANK_ENV_EXISTS;
}

int mps_step_task(spank_t sp, struct mps_step *m, const struct cohort_node_plan *plan,
                  uint32_t t, char *note, size_t len)
{
    note[0] = '\0';
    if (!m->want.on)
        return 0;
    if (m->error[0])
        return 1;
    if (!m->up) {
        if (t == 0)
            fprintf(stderr, "cohort: note: MPS is not started for this step on this node: %s\n",
                    m->verdict.why);
        snprintf(note, len, "MPS not started");
        return 0;
    }
    char control[128];
    struct stat st;
    snprintf(control, sizeof control, "%s/control", m->daemon.pipe);
    if (lstat(control, &st) < 0) { /* the task's /tmp is another (job_container/tmpfs) */
        snprintf(m->error, sizeof m->error, "MPS: the step's daemon pipe %s is not to be "
                 "seen from the task (a /tmp of the job's own?)", m->daemon.pipe);
        return 1;
    }
    if (mps_task_env(&m->daemon, &m->want, set_new, sp) != 0) {
        snprintf(m->error, sizeof m->error, "MPS: cannot set the task's MPS variables");
        return 1;
    }
    snprintf(note, len, "MPS %s (its GPU shared by %u tasks)", m->daemon.pipe,
             mps_sharing(plan, t));
    return 0;
}

void mps_step_end(struct mps_step *m)
{
    if (m->up)
        mps_stop(&m->daemon);
    m->up = false;
}
