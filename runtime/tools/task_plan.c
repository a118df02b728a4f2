/* task_plan.c - environment -> step -> plan for the command-line shells. */
#include "task_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_mask_hwloc.h"
#include "lean_load.h"
#include "route.h"
#include "step_env.h"
#include "text_file.h"

extern char **environ;

/* NAME=VALUE lines; blank lines and lines starting with '#' are skipped. */
static int env_from_file(struct envlist *env, const char *path, struct cohort_err *err)
{
    char *text = read_text_file("environment file", path, false, err);
    if (!text)
        return -1;
    int rc = 0;
    unsigned line = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && rc == 0;
         l = strtok_r(NULL, "\n", &save)) {
        line++;
        if (*l == '#' || *l == '\0')
            continue;
        char *eq = strchr(l, '=');
        if (!eq || eq == l)
            rc = cohort_fail(err, "environment file %s: line %u is not NAME=VALUE", path,
                             line);
        else {
            *eq = '\0';
            rc = envlist_set(env, l, eq + 1);
        }
    }
    free(text);
    return rc;
}

void task_plan_free(struct task_plan *tp)
{
    plan_free(tp->plan);
    topology_free(tp->topo);
    step_free(&tp->step);
    envlist_clear(&tp->env);
    memset(tp, 0, sizeof *tp);
}

int task_plan_build(const struct task_plan_request *req, struct task_plan *tp,
                    struct cohort_err *err)
{
    memset(tp, 0, sizeof *tp);
    envlist_init(&tp->env);
    step_init(&tp->step);
    struct cohort_policy policy;
    policy_init(&policy);
    char *hostfile_text = NULL;
    int rc = -1;

    if (req->env_file ? env_from_file(&tp->env, req->env_file, err) < 0
                      : envlist_from_envp(&tp->env, environ) < 0)
        goto out;
    const char *mode = req->mode ? req->mode : envlist_get(&tp->env, "COHORT_MODE");
    if (mode && mode_parse(mode, &policy.mode, err) < 0)
        goto out;
    const char *range =
        req->port_range ? req->port_range : envlist_get(&tp->env, "COHORT_PORT_RANGE");
    if (range && port_range_parse(range, &policy.ports, err) < 0)
        goto out;
    const char *hostfile = step_env_hostfile(&tp->env);
    if (hostfile && !(hostfile_text = read_text_file("SLURM_HOSTFILE", hostfile, true, err)))
        goto out;
    if (step_from_env(&tp->step, &tp->env, hostfile_text, err) < 0)
        goto out;
    if (topology_load_lean(req->topology, req->topology_is_this_system, &tp->topo, err) < 0)
        goto out;
    if (req->cpus) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        struct cpu_mask mask;
        cpu_mask_init(&mask);
        int bad = !set || hwloc_bitmap_list_sscanf(set, req->cpus) < 0;
        /* an open range ("8-") ends with the machine's CPUs */
        if (!bad && hwloc_bitmap_weight(set) < 0)
            hwloc_bitmap_and(set, set, hwloc_topology_get_complete_cpuset(tp->topo->topo));
        bad = bad || hwloc_bitmap_iszero(set);
        if (bad)
            cohort_fail(err, "--cpus '%s' is not a CPU list such as 0-7,16-23", req->cpus);
        else if ((bad = cpu_mask_from_hwloc(&mask, set) < 0))
            cohort_fail(err, "--cpus '%s': cohort takes CPU numbers below %u (or memory ran out)",
                        req->cpus, CPU_MASK_LIMIT);
        else
            bad = step_set_allowed_cpus(&tp->step, &mask, err) < 0;
        hwloc_bitmap_free(set);
        cpu_mask_free(&mask);
        if (bad)
            goto out;
    }
    struct master_route route;
    if (req->find_route) {
        master_route_find(&tp->step, &tp->env, &route);
        master_route_policy(&route, &policy);
    }
    rc = plan_node(&tp->step, tp->topo, &policy, &tp->env, &tp->plan, err);
out:
    free(hostfile_text);
    return rc;
}
