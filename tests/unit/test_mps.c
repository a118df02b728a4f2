/* test_mps.c - the verdict on a step's MPS daemon for a node (mps_plan.h)
 * over the DGX A100-like fixture: infer mode with two tasks per GPU wants
 * one; train mode, a GPU per task, the user's own pipe, Slurm's gres/mps
 * (its variables, or CUDA_MPS_ACTIVE_THREAD_PERCENTAGE that it sets) or
 * gres/shard and a site daemon each leave it alone with their reason. */
#include <string.h>

#include "mps_plan.h"
#include "step_env.h"
#include "tap.h"

/* The verdict for tasks tasks of one node in mode, with extra variables. */
static void verdict(const struct cohort_topology *topo, unsigned tasks, enum cohort_mode mode,
                    const char *extra, bool site, struct mps_verdict *v, unsigned *sharing0)
{
    char ntasks[64], tpn[64];
    snprintf(ntasks, sizeof ntasks, "SLURM_STEP_NUM_TASKS=%u", tasks);
    snprintf(tpn, sizeof tpn, "SLURM_STEP_TASKS_PER_NODE=%u", tasks);
    const char *vars[] = {"SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=n1",
                          ntasks, tpn, "SLURM_NODEID=0", extra, NULL};
    struct envlist env;
    struct cohort_policy pol;
    struct cohort_err err;
    struct cohort_step step;
    struct cohort_node_plan *p = NULL;
    envlist_init(&env);
    envlist_from_envp(&env, (char *const *)vars);
    policy_init(&pol);
    pol.mode = mode;
    memset(v, 0, sizeof *v);
    if (step_from_env(&step, &env, NULL, &err) == 0 &&
        plan_node(&step, topo, &pol, &env, &p, &err) == 0) {
        mps_decide(p, &env, site, v);
        *sharing0 = mps_sharing(p, 0);
    } else {
        snprintf(v->why, sizeof v->why, "plan failed: %.200s", err.msg);
    }
    plan_free(p);
    step_free(&step);
    envlist_clear(&env);
}

int main(void)
{
    struct cohort_topology *topo;
    struct cohort_err err;
    if (!ok(topology_load(FIXTURES "/dgx-a100.xml", false, &topo, &err) == 0,
            "the A100 fixture loads"))
        return tap_done();
    struct mps_verdict v;
    unsigned s0 = 0;
    verdict(topo, 16, COHORT_MODE_INFER, NULL, false, &v, &s0);
    ok(v.use && v.sharing == 2 && s0 == 2, "infer, 16 tasks on 8 GPUs: a daemon (2 per GPU; %s)",
       v.why);
    verdict(topo, 24, COHORT_MODE_INFER, NULL, false, &v, &s0);
    ok(v.use && v.sharing == 3, "infer, 24 tasks on 8 GPUs: a daemon (%u per GPU)", v.sharing);
    verdict(topo, 8, COHORT_MODE_INFER, NULL, false, &v, &s0);
    ok(!v.use && v.sharing == 1 && strstr(v.why, "no GPU of this node is shared"),
       "infer, 8 tasks on 8 GPUs: none: %s", v.why);
    verdict(topo, 16, COHORT_MODE_TRAIN, NULL, false, &v, &s0);
    ok(!v.use && strstr(v.why, "infer mode") && strstr(v.why, "train mode"),
       "train mode: none: %s", v.why);
    verdict(topo, 16, COHORT_MODE_INFER, "CUDA_MPS_PIPE_DIRECTORY=/home/u/mps", false, &v, &s0);
    ok(!v.use && strstr(v.why, "CUDA_MPS_PIPE_DIRECTORY is set (/home/u/mps)"),
       "the user's own pipe: left alone: %s", v.why);
    verdict(topo, 16, COHORT_MODE_INFER, "SLURM_JOB_GRES=gpu:8,mps:400", false, &v, &s0);
    ok(!v.use && strstr(v.why, "gres/mps or gres/shard"), "gres/mps: left alone: %s", v.why);
    verdict(topo, 16, COHORT_MODE_INFER, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50", false, &v, &s0);
    ok(!v.use && strstr(v.why, "gres/mps or gres/shard"),
       "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE in the job (gres/mps sets it): left alone");
    verdict(topo, 16, COHORT_MODE_INFER, "SLURM_STEP_GRES=gres/shard:16", false, &v, &s0);
    ok(!v.use && strstr(v.why, "gres/mps or gres/shard"), "gres/shard: left alone");
    verdict(topo, 16, COHORT_MODE_INFER, "SLURM_SHARDS_ON_NODE=16", false, &v, &s0);
    ok(!v.use && strstr(v.why, "gres/shard"), "SLURM_SHARDS_ON_NODE: left alone");
    verdict(topo, 16, COHORT_MODE_INFER, "SLURM_JOB_GRES=gpu:8,mpsx:1", false, &v, &s0);
    ok(v.use, "a gres merely starting with mps is no gres/mps");
    verdict(topo, 16, COHORT_MODE_INFER, NULL, true, &v, &s0);
    ok(!v.use && strstr(v.why, "MPS daemon of the site"), "a site daemon: left alone: %s",
       v.why);
    topology_free(topo);
    return tap_done();
}
