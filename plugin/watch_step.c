/* watch_step.c - the plugin's part of the step watch (see watch_step.h). */
#include "watch_step.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostlist.h"
#include "spank_env.h"
#include "watch_tree.h"

#ifndef COHORT_NCCL_PROFILER_PATH
#error COHORT_NCCL_PROFILER_PATH: where libcohort-nccl-profiler.so is installed (set by the build)
#endif

#define WATCH_STEP_BIT 0x80000000u /* the step's bit that keys the watch's port */

int watch_step_want(const struct plugin_args *args, const char *env, bool opt_given,
                    const char *opt, unsigned *stall_s, struct cohort_err *err)
{
    struct cohort_err e;
    *stall_s = args->watch ? args->watch_stall_s : 0;
    if (env && *env && watch_arg_parse(env, args->watch_stall_s, stall_s, &e) < 0)
        return cohort_fail(err, "COHORT_WATCH=%s", e.msg);
    if (opt_given && watch_arg_parse(opt, args->watch_stall_s, stall_s, &e) < 0)
        return cohort_fail(err, "--cohort-watch=%s", e.msg);
    return 0;
}

/* The verdict's file as the agent is to write it into w->file: the job's
 * COHORT_WATCH_FILE, from the job's working directory when relative
 * (slurmstepd is in it for user_init, as the tasks will be). 0, or -1
 * with err. */
static int watch_file(struct watch_step *w, spank_t sp, struct cohort_err *err)
{
    char *f = get_env(sp, "COHORT_WATCH_FILE"), cwd[4096] = "";
    int rc = 0;
    if (f && *f && *f != '/' && !getcwd(cwd, sizeof cwd))
        rc = cohort_fail(err, "--cohort-watch: COHORT_WATCH_FILE='%.200s' is a relative path and "
                         "the job's working directory cannot be read (%s): give an absolute "
                         "path", f, strerror(errno));
    else if (f && strchr(f, '\n'))
        rc = cohort_fail(err, "--cohort-watch: COHORT_WATCH_FILE holds a newline: give a "
                         "file name without one");
    else if (f && *f && snprintf(w->file, sizeof w->file, "%s%s%s", cwd,
                                 cwd[0] && strcmp(cwd, "/") ? "/" : "", f) >= (int)sizeof w->file)
        rc = cohort_fail(err, "--cohort-watch: COHORT_WATCH_FILE is longer than %zu bytes: "
                         "give a shorter path", sizeof w->file - 1);
    free(f);
    return rc;
}

/* The job's COHORT_WATCH_FANOUT into w->fanout (unset: 0, the default).
 * 0, or -1 with err. */
static int watch_fanout(struct watch_step *w, spank_t sp, struct cohort_err *err)
{
    char *f = get_env(sp, "COHORT_WATCH_FANOUT");
    uint32_t n = 0;
    struct cohort_err e;
    int rc = 0;
    if (f && *f && watch_tree_parse_fanout(f, &n, &e) < 0)
        rc = cohort_fail(err, "--cohort-watch: %s", e.msg);
    w->fanout = n;
    free(f);
    return rc;
}

void watch_step_choose(struct watch_step *w, spank_t sp, const struct plugin_args *args,
                       const char *srun_watch, bool opt_given, const char *opt,
                       enum cohort_plugin_mode mode)
{
    struct cohort_err err;
    memset(w, 0, sizeof *w);
    char *v = get_env(sp, "COHORT_WATCH");
    unsigned stall = 0;
    int rc = watch_step_want(args, v ? v : srun_watch, opt_given, opt, &stall, &err);
    free(v);
    w->asked = rc < 0 || stall > 0;
    if (rc == 0 && stall > 0 && mode != PLUGIN_MODE_TRAIN)
        snprintf(w->note, sizeof w->note, "cohort: note: --cohort-watch: the step watch is "
                 "for train mode, and this step's mode is %s: the step runs unwatched",
                 mode == PLUGIN_MODE_INFER ? "infer" : "env");
    else if (rc == 0 && stall > 0)
        rc = watch_file(w, sp, &err);
    if (rc == 0 && stall > 0 && !w->note[0])
        rc = watch_fanout(w, sp, &err);
    if (rc < 0) {
        snprintf(w->error, sizeof w->error, "%s", err.msg); /* each task says it */
        return;
    }
    if (!stall || w->note[0])
        return;
    char *p = get_env(sp, "COHORT_NCCL_PROFILER"); /* the tests' own build */
    snprintf(w->profiler, sizeof w->profiler, "%s", p && *p ? p : COHORT_NCCL_PROFILER_PATH);
    free(p);
    w->stall_s = stall;
}

uint16_t watch_step_port(uint32_t job, uint32_t step, const char *secret,
                         struct port_range range, uint16_t master, uint16_t bootstrap)
{
    uint16_t port = ports_keyed(job, step ^ WATCH_STEP_BIT, secret ? secret : "", range, master);
    unsigned size = (unsigned)range.hi - range.lo + 1;
    for (unsigned i = 0; i < size && (port == master || port == bootstrap); i++)
        port = port == range.hi ? range.lo : (uint16_t)(port + 1);
    return port;
}

char *watch_step_gpus(const struct cohort_node_plan *plan, const struct cohort_topology *topo)
{
    size_t cap = (size_t)plan->n_tasks * 24 + 1, used = 0; /* a PCI id or an int, a comma */
    char *text = malloc(cap);
    if (!text)
        return NULL;
    text[0] = '\0';
    for (uint32_t i = 0; i < plan->n_tasks; i++) {
        const struct cohort_task_plan *t = &plan->tasks[i];
        const char *pci = t->n_gpus ? plan_gpu_pci(topo, &t->gpus[0]) : NULL;
        const char *sep = i ? "," : "";
        if (pci)
            used += (size_t)snprintf(text + used, cap - used, "%s%s", sep, pci);
        else if (t->n_gpus)
            used += (size_t)snprintf(text + used, cap - used, "%s%d", sep, t->gpus[0].gres);
        else
            used += (size_t)snprintf(text + used, cap - used, "%s", sep);
    }
    return text;
}

int watch_step_record(const struct watch_step *w, const struct cohort_step *step,
                      const struct cohort_node_plan *plan, const struct cohort_topology *topo,
                      const struct plugin_args *args, bool store_served,
                      struct envlist *record)
{
    if (!w->stall_s)
        return 0;
    char *gpus = watch_step_gpus(plan, topo);
    int rc = envlist_setf(record, "COHORT_WATCH", "%u", w->stall_s);
    rc |= w->file[0] ? envlist_set(record, "COHORT_WATCH_FILE", w->file) : 0;
    rc |= gpus ? envlist_set(record, "COHORT_WATCH_GPUS", gpus) : -1;
    free(gpus);
    if (store_served || rc)
        return rc ? -1 : 0;
    /* The holder is node 0's agent's; it listens on the watch's own port. */
    char host[HOSTLIST_MAX_NAME + 1];
    if (hostlist_nth(step->nodes, 0, host, sizeof host) < 0)
        snprintf(host, sizeof host, "%s", plan->master_addr);
    const struct cohort_task_plan *t0 = &plan->tasks[0];
    uint16_t port = watch_step_port(step->job_id, step->step_id,
                                    envlist_get(record, "COHORT_SECRET"), args->ports,
                                    t0->master_port, t0->bootstrap_port);
    rc = envlist_set(record, "COHORT_STORE_SERVE", "0");
    rc |= envlist_set(record, "COHORT_STORE_ADDR", host);
    rc |= envlist_setf(record, "COHORT_STORE_PORT", "%u", port);
    rc |= w->fanout ? envlist_setf(record, "COHORT_WATCH_FANOUT", "%u", w->fanout) : 0;
    return rc ? -1 : 0;
}

int watch_step_task(spank_t sp, struct watch_step *w, const struct node_agent *a,
                    uint32_t local)
{
    if (!w->asked)
        return 0;
    if (w->error[0])
        return 1;
    if (w->note[0] && local == 0)
        fprintf(stderr, "%s\n", w->note);
    if (!w->stall_s || !a->up)
        return 0;
    /* COHORT_WATCH_DIR is always the step's own: one left by an outer step
     * (an srun inside a task) names that step's directory. */
    spank_err_t dir = spank_setenv(sp, "COHORT_WATCH_DIR", a->dir, 1);
    spank_err_t prof = spank_setenv(sp, "NCCL_PROFILER_PLUGIN", w->profiler, 0);
    if (dir != ESPANK_SUCCESS || (prof != ESPANK_SUCCESS && prof != ESPANK_ENV_EXISTS)) {
        snprintf(w->error, sizeof w->error, "--cohort-watch: cannot set the task's variables");
        return 1;
    }
    return 0;
}
