/* spank_slurmstepd.c - the plugin's slurmstepd side (S_CTX_REMOTE; see
 * spank_slurmstepd.h). In user_init it gives the step srun's secret, loads
 * the topology and plans the node once, and starts the step's MPS daemon
 * and node agent when asked; in each task (task_init) it sets the
 * variables and binds CPUs and memory; it follows the tasks' forks and
 * exits, and ends it all in exit. The node agent is started when the
 * step serves PyTorch's store or is watched (either, or both). A job that
 * did not ask (mode off) is never touched; an internal error costs one
 * warning line and the task runs without cohort, unless the admin set
 * strict=yes. It owns slurmstepd's state, one struct from user_init to
 * the forked tasks. */
#include "spank_slurmstepd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apply.h"
#include "base_sys.h"
#include "envlist.h"
#include "lean_load.h"
#include "mps_step.h"
#include "plan.h"
#include "plan_line.h"
#include "route.h"
#include "spank_env.h"
#include "spank_opts.h"
#include "spank_srun.h"
#include "node_agent.h"
#include "step.h"
#include "store_step.h"
#include "text_file.h"
#include "topo_cache.h"
#include "topology.h"
#include "watch_step.h"

#define BATCH_OR_SPECIAL_STEP 0xfffffff0u /* batch, extern, interactive steps */

/* slurmstepd's state, from user_init to the forked tasks and exit. */
struct stepd_state {
    enum cohort_plugin_mode mode;
    bool verbose;
    char setup_error[COHORT_ERR_LEN];
    struct cohort_topology *topo;
    struct cohort_step step;
    struct cohort_node_plan *plan;
    char planned_gpus[4096];   /* the GPU variables the plan was made with */
    struct master_route route; /* to MASTER_ADDR, found once per node */
    bool route_found;
    double setup_ms;           /* user_init's work on this node */
    char *srun_mode;           /* COHORT_MODE as srun saw it, or NULL */
    struct mps_step mps;       /* the step's MPS daemon on this node */
    struct store_step store;   /* what the job asked of PyTorch's store */
    struct watch_step watch;   /* what the job asked of the step watch */
    struct node_agent agent;   /* the step's node agent, for the store or the watch */
    bool cache_stale;          /* discovered: write the cache at the end */
    char topo_note[300];       /* where the topology came from, for verbose */
    uint32_t exited;           /* the node's tasks that ended */
};

static struct stepd_state stepd = {.mode = PLUGIN_MODE_OFF, .agent = {.events_fd = -1}};

static const char *const gpu_vars[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS",
                                       "CUDA_VISIBLE_DEVICES", "SLURM_GPUS_ON_NODE"};

/* Variables the plan may set: read to keep the user's values. */
static const char *const plan_vars[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
    "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR",
    "MASTER_PORT", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "OMP_NUM_THREADS",
    "COHORT_MODE", "COHORT_BOOTSTRAP_PORT", "COHORT_GPUS", "COHORT_CPUS",
    "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"};

/* The GPU variables as one string, to tell whether a task sees other ones
 * than the node plan was made with. */
static void gpu_key(const struct envlist *env, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof gpu_vars / sizeof *gpu_vars; i++) {
        const char *v = envlist_get(env, gpu_vars[i]);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s;", v ? v : "");
    }
}

static int set_var(const char *name, const char *value, void *sp)
{
    return spank_setenv(sp, name, value, 1) != ESPANK_SUCCESS;
}

/* slurmstepd, before the tasks fork: the step's secret from srun becomes
 * every task's COHORT_SECRET, unless the job's environment holds one (the
 * user's, by --export=ALL or --export=...,COHORT_SECRET=...). */
static void give_secret(spank_t sp, char *secret)
{
    char *own = get_env(sp, "COHORT_SECRET");
    if (own) {
        explicit_bzero(own, strlen(own));
        free(own);
    } else if (secret && spank_setenv(sp, "COHORT_SECRET", secret, 0) != ESPANK_SUCCESS)
        slurm_error("cohort: cannot give the tasks the step secret");
}

/* One warning line in the task saying what it runs without; with strict=yes
 * the task fails instead. */
static int task_problem(const char *what, const char *without)
{
    if (site_args.strict) {
        slurm_error("cohort: %s", what);
        return -1;
    }
    fprintf(stderr, "cohort: warning: %s; this task runs without %s\n", what, without);
    return 0;
}

/* The job's mode in slurmstepd: --cohort, else the job's COHORT_MODE (an
 * --export=...,COHORT_MODE= wins), else srun's, which reaches the job only
 * with --export=ALL, else the site's default. */
static int stepd_mode(struct stepd_state *st, spank_t sp, struct cohort_err *err)
{
    char *v = get_env(sp, "COHORT_MODE");
    int rc = job_mode(v ? v : st->srun_mode, &st->mode, err);
    free(v);
    return rc;
}

/* Plans the node with the GPU variables as the job shows them now. */
static int make_plan(struct stepd_state *st, spank_t sp, struct cohort_err *err)
{
    struct envlist env;
    struct cohort_policy pol;
    envlist_init(&env);
    policy_init(&pol);
    pol.mode = st->mode == PLUGIN_MODE_INFER ? COHORT_MODE_INFER : COHORT_MODE_TRAIN;
    pol.bind = st->mode != PLUGIN_MODE_ENV;
    pol.ports = site_args.ports;
    int rc = -1;
    static const char *const secret_var[] = {"COHORT_SECRET"}; /* keys the bootstrap port */
    if (collect_env(sp, &env, plan_vars, sizeof plan_vars / sizeof *plan_vars) < 0 ||
        collect_env(sp, &env, gpu_vars, sizeof gpu_vars / sizeof *gpu_vars) < 0 ||
        collect_env(sp, &env, secret_var, 1) < 0) {
        cohort_fail(err, "out of memory");
        goto out;
    }
    gpu_key(&env, st->planned_gpus, sizeof st->planned_gpus);
    if (step_set_gpus(&st->step, envlist_get(&env, "SLURM_STEP_GPUS"),
                      envlist_get(&env, "SLURM_JOB_GPUS"),
                      envlist_get(&env, "CUDA_VISIBLE_DEVICES"),
                      envlist_get(&env, "SLURM_GPUS_ON_NODE") != NULL, err) < 0)
        goto out;
    if (!st->route_found) {
        master_route_find(&st->step, &env, &st->route);
        st->route_found = true;
    }
    master_route_policy(&st->route, &pol);
    plan_free(st->plan);
    st->plan = NULL;
    rc = plan_node(&st->step, st->topo, &pol, &env, &st->plan, err);
out:
    envlist_clear(&env);
    return rc;
}

/* The node's topology: the admin's file, else the plugin's cache when it is
 * this machine's, else hwloc's discovery (the cache is then written again
 * at the step's end, from a discovery of the whole node as root). */
static int load_topology(struct stepd_state *st, struct cohort_err *err)
{
    st->cache_stale = false;
    st->topo_note[0] = '\0';
    if (site_args.topology[0])
        return topology_load_lean(site_args.topology, true, &st->topo, err);
    if (site_args.topology_cache[0]) {
        char why[256];
        if (topo_cache_load(site_args.topology_cache, &st->topo, why, sizeof why) == 0) {
            snprintf(st->topo_note, sizeof st->topo_note, "topology from the node's cache");
            return 0;
        }
        snprintf(st->topo_note, sizeof st->topo_note, "%s: discovered", why);
        st->cache_stale = true;
    }
    return topology_load_lean(NULL, true, &st->topo, err);
}

/* The node's global ranks, from slurmstepd itself, placing st's step on
 * node nodeid. */
static int set_node(struct stepd_state *st, spank_t sp, uint32_t nodeid, uint32_t local,
                    struct cohort_err *err)
{
    uint32_t *ranks = malloc((local ? local : 1) * sizeof *ranks);
    if (!ranks)
        return cohort_fail(err, "out of memory");
    int rc = 0;
    for (uint32_t i = 0; i < local && rc == 0; i++)
        if (spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, i, &ranks[i]))
            rc = cohort_fail(err, "slurmstepd did not give the global id of local task %u", i);
    if (rc == 0)
        rc = step_set_node_ranks(&st->step, nodeid, ranks, local, err);
    free(ranks);
    return rc;
}

/* slurmstepd, once per node: the step, the topology, the node's plan. */
static int setup_node(struct stepd_state *st, spank_t sp, struct cohort_err *err)
{
    uint32_t job = 0, stepid = 0, nodeid = 0, ntasks = 0, local = 0;
    if (spank_get_item(sp, S_JOB_ID, &job) || spank_get_item(sp, S_JOB_STEPID, &stepid) ||
        spank_get_item(sp, S_JOB_NODEID, &nodeid) ||
        spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) ||
        spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local))
        return cohort_fail(err, "slurmstepd did not give the job's ids and task counts");
    static const char *const layout_vars[] = {
        "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE", "SLURM_DISTRIBUTION",
        "SLURM_DIST_PLANESIZE", "SLURM_HOSTFILE", "SLURM_STEP_RESV_PORTS",
        "SLURM_CPU_BIND_TYPE", "SLURM_CPU_BIND_LIST"};
    struct envlist env;
    envlist_init(&env);
    char count[16], *hostfile = NULL;
    int rc = -1;
    snprintf(count, sizeof count, "%u", ntasks);
    step_init(&st->step);
    st->step.job_id = job;
    st->step.step_id = stepid;
    if (collect_env(sp, &env, layout_vars, sizeof layout_vars / sizeof *layout_vars) < 0)
        goto out;
    const char *dist = envlist_get(&env, "SLURM_DISTRIBUTION");
    const char *hostfile_path = envlist_get(&env, "SLURM_HOSTFILE");
    if (dist && strncmp(dist, "arbitrary", 9) == 0 && hostfile_path &&
        !(hostfile = read_text_file("SLURM_HOSTFILE", hostfile_path, true, err)))
        goto out;
    if (step_set_layout(&st->step, envlist_get(&env, "SLURM_STEP_NODELIST"), count,
                        envlist_get(&env, "SLURM_STEP_TASKS_PER_NODE"), dist,
                        envlist_get(&env, "SLURM_DIST_PLANESIZE"), hostfile, err) < 0)
        goto out;
    if ((rc = set_node(st, sp, nodeid, local, err)) < 0 ||
        (rc = step_set_resv_ports(&st->step, envlist_get(&env, "SLURM_STEP_RESV_PORTS"),
                                  err)) < 0 ||
        (rc = step_set_cpu_bind(&st->step, envlist_get(&env, "SLURM_CPU_BIND_TYPE"),
                                envlist_get(&env, "SLURM_CPU_BIND_LIST"), err)) < 0)
        goto out;
    rc = load_topology(st, err);
    if (rc == 0)
        rc = make_plan(st, sp, err);
out:
    free(hostfile);
    envlist_clear(&env);
    return rc;
}

/* The step's MPS on this node: what the job asked, the daemon if wanted. */
static void setup_mps(struct stepd_state *st, spank_t sp, const char *srun_mps)
{
    struct mps_args want;
    struct cohort_err err;
    char *v = get_env(sp, "COHORT_MPS");
    if (mps_step_want(&site_args, v ? v : srun_mps, job_opts.mps_given, job_opts.mps, &want, &err) < 0) {
        st->mps.want.on = true; /* asked for, wrongly: each task says so */
        snprintf(st->mps.error, sizeof st->mps.error, "%s", err.msg);
    } else {
        mps_step_setup(sp, &site_args, &want, st->plan, &st->mps);
    }
    free(v);
}

/* The step's node agent on this node: what the job asked of the store
 * and of the watch, the agent started with the record lines of each when
 * either needs it. */
static void setup_agent(struct stepd_state *st, spank_t sp, const char *srun_store,
                        const char *srun_watch)
{
    store_step_choose(&st->store, sp, &site_args, srun_store, job_opts.store_given,
                      job_opts.store, st->plan);
    watch_step_choose(&st->watch, sp, &site_args, srun_watch, job_opts.watch_given,
                      job_opts.watch, st->mode);
    bool store = st->store.serve, watch = st->watch.stall_s > 0;
    if ((!store && !watch) || st->plan->n_tasks == 0)
        return;
    struct envlist r;
    envlist_init(&r);
    int rc = node_agent_record(sp, &st->step, st->verbose, &r);
    rc |= store_step_record(&st->store, st->plan, &r);
    rc |= watch_step_record(&st->watch, &st->step, st->plan, st->topo, &site_args, store, &r);
    node_agent_start(&st->agent, sp, rc == 0 ? &r : NULL, store, watch, &st->step,
                     st->plan->n_tasks);
    node_agent_record_clear(&r);
}

void stepd_user_init(spank_t sp, bool args_ok)
{
    struct stepd_state *st = &stepd;
    struct cohort_err err;
    uint32_t stepid = 0;
    st->mode = PLUGIN_MODE_OFF;
    if (spank_get_item(sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS &&
        stepid >= BATCH_OR_SPECIAL_STEP)
        return; /* the batch script and extern steps are not a parallel step */
    char *secret = take_env(sp, SRUN_SECRET), *srun_verbose = take_env(sp, SRUN_VERBOSE);
    char *srun_mps = take_env(sp, SRUN_MPS), *srun_store = take_env(sp, SRUN_STORE);
    char *srun_watch = take_env(sp, SRUN_WATCH);
    free(st->srun_mode);
    st->srun_mode = take_env(sp, SRUN_MODE);
    if (!args_ok)
        goto out;
    if (stepd_mode(st, sp, &err) < 0) {
        snprintf(st->setup_error, sizeof st->setup_error, "%s", err.msg);
        st->mode = PLUGIN_MODE_ENV;
        goto out;
    }
    if (st->mode == PLUGIN_MODE_OFF)
        goto out;
    give_secret(sp, site_args.secret_munge ? NULL : secret);
    char *v = get_env(sp, "COHORT_VERBOSE");
    const char *vv = v ? v : srun_verbose;
    st->verbose = job_opts.verbose || (vv && strcmp(vv, "0") != 0 && *vv);
    if (job_opts.verbose && !v) /* for what runs in the tasks: the work coordinator's progress */
        spank_setenv(sp, "COHORT_VERBOSE", "1", 0);
    free(v);
    double start = base_now_ns() / 1e6;
    int rc = setup_node(st, sp, &err);
    st->setup_ms = base_now_ns() / 1e6 - start;
    if (rc < 0) {
        snprintf(st->setup_error, sizeof st->setup_error, "%s", err.msg);
        slurm_verbose("cohort: job %u: %s", st->step.job_id, err.msg); /* the tasks say it */
    } else {
        setup_mps(st, sp, srun_mps);
        setup_agent(st, sp, srun_store, srun_watch);
    }
out:
    if (secret)
        explicit_bzero(secret, strlen(secret));
    free(secret);
    free(srun_verbose);
    free(srun_mps);
    free(srun_store);
    free(srun_watch);
}

/* task_init's part of the store and the watch: -1 when the task must fail
 * (one line said: the agent asked for and not had, a bad choice, variables
 * not set), else 0 after each one's note and variables. */
static int agent_task(struct stepd_state *st, spank_t sp, uint32_t local)
{
    const char *why = NULL;
    if (st->agent.error[0] && (st->store.serve || st->watch.stall_s))
        why = st->agent.error;
    else if (store_step_task(sp, &st->store, &st->agent, local))
        why = st->store.error;
    else if (watch_step_task(sp, &st->watch, &st->agent, local))
        why = st->watch.error;
    if (why)
        slurm_error("cohort: %s", why);
    return why ? -1 : 0;
}

/* Plans again, for the task in hand, when it sees other GPU variables than
 * the node plan was made with: GPUs are given to the tasks by the gres
 * plugin. 0, or -1 with err set. */
static int replan_for_task(struct stepd_state *st, spank_t sp, struct cohort_err *err)
{
    char seen[sizeof st->planned_gpus];
    struct envlist gpu_env;
    envlist_init(&gpu_env);
    int rc = collect_env(sp, &gpu_env, gpu_vars, sizeof gpu_vars / sizeof *gpu_vars);
    gpu_key(&gpu_env, seen, sizeof seen);
    envlist_clear(&gpu_env);
    if (rc < 0)
        return cohort_fail(err, "out of memory");
    if (strcmp(seen, st->planned_gpus) != 0)
        return make_plan(st, sp, err);
    return 0;
}

int stepd_task_init(spank_t sp)
{
    struct stepd_state *st = &stepd;
    double start = base_now_ns() / 1e6;
    struct cohort_err err;
    if (st->mode == PLUGIN_MODE_OFF)
        return 0;
    if (st->setup_error[0])
        return task_problem(st->setup_error, "cohort's settings");
    int local = 0;
    uint32_t global = 0;
    if (spank_get_item(sp, S_TASK_ID, &local) ||
        spank_get_item(sp, S_TASK_GLOBAL_ID, &global))
        return task_problem("slurmstepd did not give the task's ids", "cohort's settings");
    if (step_set_task(&st->step, global, (uint32_t)local, &err) < 0 ||
        replan_for_task(st, sp, &err) < 0)
        return task_problem(err.msg, "cohort's settings");
    const struct cohort_task_plan *t = &st->plan->tasks[local];
    if (apply_env(t, set_var, sp) != 0)
        return task_problem("cannot set the task's variables", "some of them");
    if (agent_task(st, sp, (uint32_t)local) < 0) /* asked for: never without */
        return -1;
    char note[1024] = "", mps_note[256];
    if (st->mode != PLUGIN_MODE_ENV &&
        apply_binding(st->topo, t, site_args.membind, note, sizeof note, &err) < 0 &&
        task_problem(err.msg, "that binding") < 0)
        return -1;
    if (mps_step_task(sp, &st->mps, st->plan, (uint32_t)local, mps_note, sizeof mps_note) == 1 &&
        task_problem(st->mps.error, "MPS") < 0)
        return -1;
    if (st->verbose) {
        char line[2048];
        plan_line(line, sizeof line, st->plan, st->topo, (uint32_t)local);
        fprintf(stderr, "%s; node setup %.2f ms, task %.2f ms%s%s%s%s%s%s\n", line,
                st->setup_ms, base_now_ns() / 1e6 - start, note[0] ? "; " : "", note,
                st->topo_note[0] ? "; " : "", st->topo_note, mps_note[0] ? "; " : "",
                mps_note);
        for (unsigned i = 0; local == 0 && i < st->plan->n_notes; i++)
            fprintf(stderr, "cohort: note: %s\n", st->plan->notes[i]);
    }
    return 0;
}

void stepd_task_post_fork(spank_t sp)
{
    struct stepd_state *st = &stepd;
    pid_t pid;
    int local;
    if (st->agent.up && spank_get_item(sp, S_TASK_ID, &local) == ESPANK_SUCCESS &&
        spank_get_item(sp, S_TASK_PID, &pid) == ESPANK_SUCCESS && local >= 0 &&
        (uint32_t)local < st->plan->n_tasks)
        node_agent_forked(&st->agent, (uint32_t)local, st->step.node_ranks[local], pid);
}

void stepd_task_exit(spank_t sp)
{
    struct stepd_state *st = &stepd;
    uint32_t local = 0, rank;
    int status, task;
    if (st->agent.up && spank_get_item(sp, S_TASK_ID, &task) == ESPANK_SUCCESS &&
        spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) == ESPANK_SUCCESS &&
        spank_get_item(sp, S_TASK_EXIT_STATUS, &status) == ESPANK_SUCCESS)
        node_agent_ended(&st->agent, (uint32_t)task, rank, status);
    if (st->mps.up && spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local) == ESPANK_SUCCESS &&
        ++st->exited >= local)
        mps_step_end(&st->mps);
}

void stepd_exit(void)
{
    struct stepd_state *st = &stepd;
    struct cohort_err err;
    mps_step_end(&st->mps);
    node_agent_end(&st->agent);
    if (st->cache_stale && geteuid() == 0 &&
        topo_cache_refresh(site_args.topology_cache, &err) < 0)
        slurm_verbose("cohort: %s", err.msg);
    st->cache_stale = false;
    plan_free(st->plan);
    st->plan = NULL;
    topology_free(st->topo);
    st->topo = NULL;
    step_free(&st->step);
    free(st->srun_mode);
    st->srun_mode = NULL;
}
