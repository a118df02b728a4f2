/* step_env.c - a cohort_step from SLURM_* variables (see step_env.h). */
#include "step_env.h"

#include <string.h>

static const char *get2(const struct envlist *env, const char *a, const char *b)
{
    const char *v = envlist_get(env, a);
    return v ? v : envlist_get(env, b);
}

const char *step_env_hostfile(const struct envlist *env)
{
    const char *dist = envlist_get(env, "SLURM_DISTRIBUTION");
    if (dist && strncmp(dist, "arbitrary", 9) == 0)
        return envlist_get(env, "SLURM_HOSTFILE");
    return NULL;
}

int step_from_env(struct cohort_step *s, const struct envlist *env,
                  const char *hostfile_text, struct cohort_err *err)
{
    step_init(s);
    if (parse_u32("SLURM_JOB_ID", get2(env, "SLURM_JOB_ID", "SLURM_JOBID"), &s->job_id,
                  err) < 0 ||
        parse_u32("SLURM_STEP_ID", get2(env, "SLURM_STEP_ID", "SLURM_STEPID"),
                  &s->step_id, err) < 0)
        return -1;
    if (step_set_layout(s, envlist_get(env, "SLURM_STEP_NODELIST"),
                        envlist_get(env, "SLURM_STEP_NUM_TASKS"),
                        envlist_get(env, "SLURM_STEP_TASKS_PER_NODE"),
                        envlist_get(env, "SLURM_DISTRIBUTION"),
                        envlist_get(env, "SLURM_DIST_PLANESIZE"), hostfile_text, err) < 0)
        return -1;
    uint32_t node;
    if (parse_u32("SLURM_NODEID", envlist_get(env, "SLURM_NODEID"), &node, err) < 0 ||
        step_set_node(s, node, envlist_get(env, "SLURM_GTIDS"), err) < 0)
        return -1;
    const char *procid = envlist_get(env, "SLURM_PROCID");
    const char *localid = envlist_get(env, "SLURM_LOCALID");
    if (procid || localid) {
        uint32_t rank, local;
        if (parse_u32("SLURM_PROCID", procid, &rank, err) < 0 ||
            parse_u32("SLURM_LOCALID", localid, &local, err) < 0 ||
            step_set_task(s, rank, local, err) < 0)
            return -1;
    }
    if (step_set_resv_ports(s, envlist_get(env, "SLURM_STEP_RESV_PORTS"), err) < 0)
        return -1;
    if (step_set_gpus(s, envlist_get(env, "SLURM_STEP_GPUS"),
                      envlist_get(env, "SLURM_JOB_GPUS"),
                      envlist_get(env, "CUDA_VISIBLE_DEVICES"),
                      envlist_get(env, "SLURM_GPUS_ON_NODE") != NULL, err) < 0)
        return -1;
    return step_set_cpu_bind(s, envlist_get(env, "SLURM_CPU_BIND_TYPE"),
                             envlist_get(env, "SLURM_CPU_BIND_LIST"), err);
}
