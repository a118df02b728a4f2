/* store_step.c - the plugin's part of PyTorch's store served by cohort
 * (see store_step.h). */
#include "store_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spank_env.h"

int store_step_want(const struct plugin_args *args, const char *env, bool opt_given,
                    const char *opt, bool *out, struct cohort_err *err)
{
    struct cohort_err e;
    *out = args->store;
    if (env && *env && store_arg_parse(env, out, &e) < 0)
        return cohort_fail(err, "COHORT_STORE=%s", e.msg);
    if (opt_given && store_arg_parse(opt, out, &e) < 0)
        return cohort_fail(err, "--cohort-store=%s", e.msg);
    return 0;
}

void store_step_choose(struct store_step *s, spank_t sp, const struct plugin_args *args,
                       const char *srun_store, bool opt_given, const char *opt,
                       const struct cohort_node_plan *plan)
{
    struct cohort_err err;
    memset(s, 0, sizeof *s);
    char *v = get_env(sp, "COHORT_STORE");
    bool want = false;
    if (store_step_want(args, v ? v : srun_store, opt_given, opt, &want, &err) < 0) {
        s->want = true; /* asked for, wrongly: each task says so */
        snprintf(s->error, sizeof s->error, "%s", err.msg);
    }
    free(v);
    if (!want || s->error[0] || plan->n_tasks == 0)
        return;
    s->want = true;
    char *ma = get_env(sp, "MASTER_ADDR"), *mp = get_env(sp, "MASTER_PORT");
    if (ma || mp)
        snprintf(s->note, sizeof s->note, "cohort: note: --cohort-store: the job sets "
                 "MASTER_ADDR or MASTER_PORT itself, so PyTorch's store is left to its rank 0");
    else
        s->serve = true;
    snprintf(s->master_addr, sizeof s->master_addr, "%s", plan->master_addr);
    free(ma);
    free(mp);
}

int store_step_record(const struct store_step *s, const struct cohort_node_plan *plan,
                      struct envlist *record)
{
    if (!s->serve)
        return 0;
    int rc = envlist_set(record, "COHORT_STORE_ADDR", plan->master_addr);
    rc |= envlist_setf(record, "COHORT_STORE_PORT", "%u", plan->tasks[0].master_port);
    return rc ? -1 : 0;
}

static int set_var(spank_t sp, const char *name, const char *value, int overwrite)
{
    spank_err_t rc = spank_setenv(sp, name, value, overwrite);
    return rc != ESPANK_SUCCESS && rc != ESPANK_ENV_EXISTS;
}

int store_step_task(spank_t sp, struct store_step *s, const struct node_agent *a,
                    uint32_t local)
{
    if (!s->want)
        return 0;
    if (s->error[0])
        return 1;
    if (s->note[0] && local == 0)
        fprintf(stderr, "%s\n", s->note);
    if (!s->serve || !a->up)
        return 0;
    char port[8];
    snprintf(port, sizeof port, "%u", a->port);
    /* the plan's MASTER_ADDR and MASTER_PORT (the job set neither) become
     * the node agent's; the runtime keeps the step's in COHORT_MASTER_ADDR */
    if (set_var(sp, "MASTER_ADDR", "127.0.0.1", 1) || set_var(sp, "MASTER_PORT", port, 1) ||
        set_var(sp, "COHORT_MASTER_ADDR", s->master_addr, 0) ||
        set_var(sp, "TORCHELASTIC_USE_AGENT_STORE", "True", 0) ||
        set_var(sp, "TORCHELASTIC_RESTART_COUNT", "0", 0)) {
        snprintf(s->error, sizeof s->error, "--cohort-store: cannot set the task's variables");
        return 1;
    }
    return 0;
}
