/* mps_plan.c - the verdict on a per-step MPS daemon for a node (see
 * mps_plan.h). */
#include "mps_plan.h"

#include <stdio.h>
#include <string.h>

const char *const mps_env_vars[] = {
    "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "SLURM_JOB_GRES",
    "SLURM_STEP_GRES", "SLURM_SHARDS_ON_NODE"};
const unsigned mps_n_env_vars = sizeof mps_env_vars / sizeof *mps_env_vars;

/* A task's own GPU as one number (Slurm's index, else CUDA's), -1: none. */
static int own_gpu(const struct cohort_task_plan *t)
{
    if (!t->n_gpus)
        return -1;
    return t->gpus[0].gres >= 0 ? t->gpus[0].gres : t->gpus[0].cuda;
}

unsigned mps_sharing(const struct cohort_node_plan *p, uint32_t t)
{
    int g = t < p->n_tasks ? own_gpu(&p->tasks[t]) : -1;
    unsigned n = 0;
    for (uint32_t i = 0; g >= 0 && i < p->n_tasks; i++)
        n += own_gpu(&p->tasks[i]) == g;
    return n;
}

/* "mps" or "shard" as a gres name in a Slurm gres list, such as
 * "gpu:2,mps:50" or "gres/gpu:2,gres/shard:4". */
static bool sharing_gres(const char *list)
{
    while (list && *list) {
        size_t item = strcspn(list, ",");
        const char *name = list;
        if (item > 5 && (!strncmp(name, "gres/", 5) || !strncmp(name, "gres:", 5)))
            name += 5;
        size_t n = strcspn(name, ":(,");
        if ((n == 3 && !strncmp(name, "mps", 3)) || (n == 5 && !strncmp(name, "shard", 5)))
            return true;
        list += item + (list[item] == ',');
    }
    return false;
}

void mps_decide(const struct cohort_node_plan *p, const struct envlist *env, bool site_daemon,
                struct mps_verdict *v)
{
    memset(v, 0, sizeof *v);
    for (uint32_t t = 0; t < p->n_tasks; t++) {
        unsigned n = mps_sharing(p, t);
        v->sharing = n > v->sharing ? n : v->sharing;
    }
    const char *pipe = envlist_get(env, "CUDA_MPS_PIPE_DIRECTORY");
    if (p->mode != COHORT_MODE_INFER)
        snprintf(v->why, sizeof v->why, "MPS is for infer mode, where tasks share GPUs (this "
                 "step is in %s mode)", plan_mode_name(p));
    else if (pipe)
        snprintf(v->why, sizeof v->why, "CUDA_MPS_PIPE_DIRECTORY is set (%.120s): that MPS "
                 "daemon is left to whoever started it", pipe);
    else if (envlist_get(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") || /* gres/mps sets it */
             sharing_gres(envlist_get(env, "SLURM_STEP_GRES")) ||
             sharing_gres(envlist_get(env, "SLURM_JOB_GRES")) ||
             envlist_get(env, "SLURM_SHARDS_ON_NODE"))
        snprintf(v->why, sizeof v->why, "the job uses Slurm's gres/mps or gres/shard, which "
                 "share the GPUs their own way");
    else if (site_daemon)
        snprintf(v->why, sizeof v->why, "an MPS daemon of the site runs on this node "
                 "(/tmp/nvidia-mps): it serves the step");
    else if (v->sharing < 2)
        snprintf(v->why, sizeof v->why, "no GPU of this node is shared by two tasks of the "
                 "step");
    else
        v->use = true;
}
