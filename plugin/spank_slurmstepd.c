/* spank_cohort.c - the SPANK plugin. In srun it validates --cohort and
 * creates the step's secret; in slurmstepd it gives the step that secret,
 * loads the topology and plans the node once (user_init), and in each task
 * sets the variables and binds CPUs and memory (task_init). A job that did
 * not ask (mode off) is never touched; a user's mistake never fails
 * slurm_spank_init; an internal error costs one warning line and the task
 * runs without cohort, unless the admin set strict=yes. */
#include <errno.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apply.h"
#include "base_sys.h"
#include "base_text.h"
#include "lean_load.h"
#include "envlist.h"
#include "plan.h"
#include "plan_line.h"
#include "mps_step.h"
#include "store_step.h"
#include "plugin_args.h"
#include "spank_env.h"
#include "spank_opts.h"
#include "route.h"
#include "step.h"
#include "text_file.h"
#include "topo_cache.h"
#include "topology.h"

SPANK_PLUGIN(cohort, 1);

#define BATCH_OR_SPECIAL_STEP 0xfffffff0u /* batch, extern, interactive steps */

static char args_error[COHORT_ERR_LEN];

/* slurmstepd state, from user_init to the forked tasks */
static enum cohort_plugin_mode mode = PLUGIN_MODE_OFF;
static int verbose;
static char setup_error[COHORT_ERR_LEN];
static struct cohort_topology *topo;
static struct cohort_step step;
static struct cohort_node_plan *plan;
static char planned_gpus[4096]; /* the GPU variables the plan was made with */
static struct master_route route; /* to MASTER_ADDR, found once per node */
static bool route_found;
static double setup_ms;                  /* user_init's work on this node */
static char *srun_mode;                  /* COHORT_MODE as srun saw it, or NULL */
static struct mps_step mps;              /* the step's MPS daemon on this node */
static struct store_step store = {.events_fd = -1}; /* the step's node agent (PyTorch's store) */
static bool cache_stale;                 /* discovered: write the cache at the end */
static char topo_note[300];              /* where the topology came from, for verbose */

/* What slurmstepd must know of srun's environment whatever srun --export
 * says: srun passes its environment to the tasks only with --export=ALL,
 * but its SLURM* variables always (NONE, a list, ALL). srun sets these in
 * local_user_init, after every cli_filter hook; slurmstepd takes them out
 * of the job's environment in user_init, so that no task sees them. */
#define SRUN_SECRET "SLURM_COHORT_SRUN_SECRET"   /* the step's secret */
#define SRUN_MODE "SLURM_COHORT_SRUN_MODE"       /* srun's COHORT_MODE */
#define SRUN_VERBOSE "SLURM_COHORT_SRUN_VERBOSE" /* srun's COHORT_VERBOSE */
#define SRUN_MPS "SLURM_COHORT_SRUN_MPS"         /* srun's COHORT_MPS */
#define SRUN_STORE "SLURM_COHORT_SRUN_STORE"     /* srun's COHORT_STORE */

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

/* slurmd's start: the node's topology cache, unless the admin gave a
 * topology file or switched the cache off. A failure costs steps nothing
 * but their own discovery. */
static void cache_at_start(void)
{
    struct cohort_err err;
    if (!site_args.topology[0] && site_args.topology_cache[0] &&
        topo_cache_refresh(site_args.topology_cache, &err) < 0)
        slurm_info("cohort: no topology cache: %s (steps discover the topology)", err.msg);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    struct cohort_err err;
    args_error[0] = '\0';
    if (plugin_args_parse(ac, av, &site_args, &err) < 0) {
        snprintf(args_error, sizeof args_error, "%s", err.msg);
        slurm_error("cohort: plugstack.conf: %s; cohort is disabled", err.msg);
        /* never fail init: that would drain nodes and break every job; the
         * options stay registered so that jobs using them still run */
    } else if (spank_context() == S_CTX_SLURMD) {
        cache_at_start();
    }
    for (struct spank_option *o = cohort_options; o->name; o++)
        if (spank_option_register(sp, o) != ESPANK_SUCCESS)
            slurm_verbose("cohort: cannot register --%s here", o->name);
    return 0;
}

/* The step's mode: --cohort, else COHORT_MODE, else the site default. */
static int effective_mode(spank_t sp, enum cohort_plugin_mode *m, struct cohort_err *err)
{
    *m = site_args.default_mode;
    if (job_opts.mode >= 0) {
        *m = (enum cohort_plugin_mode)job_opts.mode;
        return 0;
    }
    /* in slurmstepd: the job's COHORT_MODE (an --export=...,COHORT_MODE=
     * wins), else srun's, which reaches the job only with --export=ALL */
    char *v = spank_remote(sp) ? get_env(sp, "COHORT_MODE") : NULL;
    const char *env = spank_remote(sp) ? (v ? v : srun_mode) : getenv("COHORT_MODE");
    int rc = 0;
    if (env && plugin_mode_parse(env, m, err) < 0)
        rc = cohort_fail(err, "COHORT_MODE='%s' is not one of off, env, train, infer", env);
    free(v);
    return rc;
}

/* srun, before the allocation: a bad mode fails srun with one line. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    struct cohort_err err;
    enum cohort_plugin_mode m;
    (void)ac;
    (void)av;
    if (args_error[0] || spank_context() != S_CTX_LOCAL)
        return 0;
    struct mps_args want;
    bool store_on;
    if (effective_mode(sp, &m, &err) < 0 ||
        (m != PLUGIN_MODE_OFF &&
         (mps_step_want(&site_args, getenv("COHORT_MPS"), job_opts.mps_given, job_opts.mps, &want, &err) < 0 ||
          store_step_want(&site_args, getenv("COHORT_STORE"), job_opts.store_given, job_opts.store, &store_on,
                          &err) < 0))) {
        slurm_error("cohort: %s", err.msg);
        return -1;
    }
    return 0;
}

/* srun: NAME's value, if set, for slurmstepd in FWD. */
static void forward(const char *name, const char *fwd)
{
    const char *v = getenv(name);
    if (v && setenv(fwd, v, 1) != 0)
        slurm_error("cohort: cannot pass %s to the tasks", name);
}

/* srun, just before launch: the step's secret (never printed), the user's
 * COHORT_SECRET if set, else 64 random hex digits made once per srun; with
 * COHORT_MODE and COHORT_VERBOSE, for slurmstepd (see SRUN_SECRET). Slurm
 * carries it in the launch message, which munge signs but does not
 * encrypt; under secret=munge there is none, and the runtime's bootstrap
 * and coordinator authenticate through munge on every node instead. */
int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
    static char made[65];
    struct cohort_err err;
    enum cohort_plugin_mode m;
    (void)ac;
    (void)av;
    unsetenv(SRUN_SECRET); /* never what another srun left in the environment */
    unsetenv(SRUN_MODE);
    unsetenv(SRUN_VERBOSE);
    unsetenv(SRUN_MPS);
    unsetenv(SRUN_STORE);
    if (args_error[0])
        return 0;
    forward("COHORT_MODE", SRUN_MODE);
    forward("COHORT_VERBOSE", SRUN_VERBOSE);
    forward("COHORT_MPS", SRUN_MPS);
    forward("COHORT_STORE", SRUN_STORE);
    if (effective_mode(sp, &m, &err) < 0 || m == PLUGIN_MODE_OFF || site_args.secret_munge)
        return 0; /* secret=munge: nothing secret in the launch message */
    const char *secret = getenv("COHORT_SECRET");
    if (!secret && !made[0]) {
        unsigned char raw[32];
        if (base_random(raw, sizeof raw) < 0) {
            explicit_bzero(raw, sizeof raw);
            slurm_error("cohort: no random bytes for the step secret; the runtime's "
                        "bootstrap will use its fallback");
            return 0;
        }
        base_hex_encode(raw, sizeof raw, made);
        explicit_bzero(raw, sizeof raw);
    }
    /* srun refuses spank_setenv here; its environment is the way on. */
    if (setenv(SRUN_SECRET, secret ? secret : made, 1) != 0)
        slurm_error("cohort: cannot pass the step secret to the tasks");
    return 0;
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

/* Plans the node with the GPU variables as the job shows them now. */
static int make_plan(spank_t sp, struct cohort_err *err)
{
    struct envlist env;
    struct cohort_policy pol;
    envlist_init(&env);
    policy_init(&pol);
    pol.mode = mode == PLUGIN_MODE_INFER ? COHORT_MODE_INFER : COHORT_MODE_TRAIN;
    pol.bind = mode != PLUGIN_MODE_ENV;
    pol.ports = site_args.ports;
    int rc = -1;
    static const char *const secret_var[] = {"COHORT_SECRET"}; /* keys the bootstrap port */
    if (collect_env(sp, &env, plan_vars, sizeof plan_vars / sizeof *plan_vars) < 0 ||
        collect_env(sp, &env, gpu_vars, sizeof gpu_vars / sizeof *gpu_vars) < 0 ||
        collect_env(sp, &env, secret_var, 1) < 0) {
        cohort_fail(err, "out of memory");
        goto out;
    }
    gpu_key(&env, planned_gpus, sizeof planned_gpus);
    if (step_set_gpus(&step, envlist_get(&env, "SLURM_STEP_GPUS"),
                      envlist_get(&env, "SLURM_JOB_GPUS"),
                      envlist_get(&env, "CUDA_VISIBLE_DEVICES"),
                      envlist_get(&env, "SLURM_GPUS_ON_NODE") != NULL, err) < 0)
        goto out;
    if (!route_found) {
        master_route_find(&step, &env, &route);
        route_found = true;
    }
    master_route_policy(&route, &pol);
    plan_free(plan);
    plan = NULL;
    rc = plan_node(&step, topo, &pol, &env, &plan, err);
out:
    envlist_clear(&env);
    return rc;
}

/* The node's topology: the admin's file, else the plugin's cache when it is
 * this machine's, else hwloc's discovery (the cache is then written again
 * at the step's end, from a discovery of the whole node as root). */
static int load_topology(struct cohort_err *err)
{
    cache_stale = false;
    topo_note[0] = '\0';
    if (site_args.topology[0])
        return topology_load_lean(site_args.topology, true, &topo, err);
    if (site_args.topology_cache[0]) {
        char why[256];
        if (topo_cache_load(site_args.topology_cache, &topo, why, sizeof why) == 0) {
            snprintf(topo_note, sizeof topo_note, "topology from the node's cache");
            return 0;
        }
        snprintf(topo_note, sizeof topo_note, "%s: discovered", why);
        cache_stale = true;
    }
    return topology_load_lean(NULL, true, &topo, err);
}

/* slurmstepd, once per node: the step, the topology, the node's plan. */
static int setup_node(spank_t sp, struct cohort_err *err)
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
    step_init(&step);
    step.job_id = job;
    step.step_id = stepid;
    if (collect_env(sp, &env, layout_vars, sizeof layout_vars / sizeof *layout_vars) < 0)
        goto out;
    const char *dist = envlist_get(&env, "SLURM_DISTRIBUTION");
    const char *hostfile_path = envlist_get(&env, "SLURM_HOSTFILE");
    if (dist && strncmp(dist, "arbitrary", 9) == 0 && hostfile_path &&
        !(hostfile = read_text_file("SLURM_HOSTFILE", hostfile_path, true, err)))
        goto out;
    if (step_set_layout(&step, envlist_get(&env, "SLURM_STEP_NODELIST"), count,
                        envlist_get(&env, "SLURM_STEP_TASKS_PER_NODE"), dist,
                        envlist_get(&env, "SLURM_DIST_PLANESIZE"), hostfile, err) < 0)
        goto out;
    /* The node's global ranks, from slurmstepd itself. */
    uint32_t *ranks = malloc((local ? local : 1) * sizeof *ranks);
    if (!ranks) {
        cohort_fail(err, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < local; i++)
        if (spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, i, &ranks[i])) {
            free(ranks);
            cohort_fail(err, "slurmstepd did not give the global id of local task %u", i);
            goto out;
        }
    rc = step_set_node_ranks(&step, nodeid, ranks, local, err);
    free(ranks);
    if (rc < 0 || (rc = step_set_resv_ports(&step, envlist_get(&env, "SLURM_STEP_RESV_PORTS"),
                                            err)) < 0 ||
        (rc = step_set_cpu_bind(&step, envlist_get(&env, "SLURM_CPU_BIND_TYPE"),
                                envlist_get(&env, "SLURM_CPU_BIND_LIST"), err)) < 0)
        goto out;
    rc = load_topology(err);
    if (rc == 0)
        rc = make_plan(sp, err);
out:
    free(hostfile);
    envlist_clear(&env);
    return rc;
}

/* The step's MPS on this node: what the job asked, the daemon if wanted. */
static void setup_mps(spank_t sp, const char *srun_mps)
{
    struct mps_args want;
    struct cohort_err err;
    char *v = get_env(sp, "COHORT_MPS");
    if (mps_step_want(&site_args, v ? v : srun_mps, job_opts.mps_given, job_opts.mps, &want, &err) < 0) {
        mps.want.on = true; /* asked for, wrongly: each task says so */
        snprintf(mps.error, sizeof mps.error, "%s", err.msg);
    } else {
        mps_step_setup(sp, &site_args, &want, plan, &mps);
    }
    free(v);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    struct cohort_err err;
    uint32_t stepid = 0;
    (void)ac;
    (void)av;
    mode = PLUGIN_MODE_OFF;
    if (!spank_remote(sp))
        return 0;
    if (spank_get_item(sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS &&
        stepid >= BATCH_OR_SPECIAL_STEP)
        return 0; /* the batch script and extern steps are not a parallel step */
    char *secret = take_env(sp, SRUN_SECRET), *srun_verbose = take_env(sp, SRUN_VERBOSE);
    char *srun_mps = take_env(sp, SRUN_MPS), *srun_store = take_env(sp, SRUN_STORE);
    free(srun_mode);
    srun_mode = take_env(sp, SRUN_MODE);
    if (args_error[0])
        goto out;
    if (effective_mode(sp, &mode, &err) < 0) {
        snprintf(setup_error, sizeof setup_error, "%s", err.msg);
        mode = PLUGIN_MODE_ENV;
        goto out;
    }
    if (mode == PLUGIN_MODE_OFF)
        goto out;
    give_secret(sp, site_args.secret_munge ? NULL : secret);
    char *v = get_env(sp, "COHORT_VERBOSE");
    const char *vv = v ? v : srun_verbose;
    verbose = job_opts.verbose || (vv && strcmp(vv, "0") != 0 && *vv);
    if (job_opts.verbose && !v) /* for what runs in the tasks: the work coordinator's progress */
        spank_setenv(sp, "COHORT_VERBOSE", "1", 0);
    free(v);
    double start = base_now_ns() / 1e6;
    int rc = setup_node(sp, &err);
    setup_ms = base_now_ns() / 1e6 - start;
    if (rc < 0) {
        snprintf(setup_error, sizeof setup_error, "%s", err.msg);
        slurm_verbose("cohort: job %u: %s", step.job_id, err.msg); /* the tasks say it */
    } else {
        setup_mps(sp, srun_mps);
        store_step_start(&store, sp, &site_args, srun_store, job_opts.store_given, job_opts.store, &step, plan,
                         verbose);
    }
out:
    if (secret)
        explicit_bzero(secret, strlen(secret));
    free(secret);
    free(srun_verbose);
    free(srun_mps);
    free(srun_store);
    return 0;
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

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    double start = base_now_ns() / 1e6;
    struct cohort_err err;
    (void)ac;
    (void)av;
    if (mode == PLUGIN_MODE_OFF)
        return 0;
    if (setup_error[0])
        return task_problem(setup_error, "cohort's settings");
    int local = 0;
    uint32_t global = 0;
    if (spank_get_item(sp, S_TASK_ID, &local) ||
        spank_get_item(sp, S_TASK_GLOBAL_ID, &global))
        return task_problem("slurmstepd did not give the task's ids", "cohort's settings");
    if (step_set_task(&step, global, (uint32_t)local, &err) < 0)
        return task_problem(err.msg, "cohort's settings");
    /* GPUs are given to the tasks by the gres plugin: plan again only if the
     * task sees other GPU variables than the node plan was made with. */
    char seen[sizeof planned_gpus];
    struct envlist gpu_env;
    envlist_init(&gpu_env);
    int rc = collect_env(sp, &gpu_env, gpu_vars, sizeof gpu_vars / sizeof *gpu_vars);
    gpu_key(&gpu_env, seen, sizeof seen);
    envlist_clear(&gpu_env);
    if (rc < 0)
        return task_problem("out of memory", "cohort's settings");
    if (strcmp(seen, planned_gpus) != 0 && make_plan(sp, &err) < 0)
        return task_problem(err.msg, "cohort's settings");
    const struct cohort_task_plan *t = &plan->tasks[local];
    if (apply_env(t, set_var, sp) != 0)
        return task_problem("cannot set the task's variables", "some of them");
    if (store_step_task(sp, &store, (uint32_t)local) == 1) { /* asked for: never without */
        slurm_error("cohort: %s", store.error);
        return -1;
    }
    char note[1024] = "", mps_note[256];
    if (mode != PLUGIN_MODE_ENV &&
        apply_binding(topo, t, site_args.membind, note, sizeof note, &err) < 0 &&
        task_problem(err.msg, "that binding") < 0)
        return -1;
    if (mps_step_task(sp, &mps, plan, (uint32_t)local, mps_note, sizeof mps_note) == 1 &&
        task_problem(mps.error, "MPS") < 0)
        return -1;
    if (verbose) {
        char line[2048];
        plan_line(line, sizeof line, plan, topo, (uint32_t)local);
        fprintf(stderr, "%s; node setup %.2f ms, task %.2f ms%s%s%s%s%s%s\n", line, setup_ms,
                base_now_ns() / 1e6 - start, note[0] ? "; " : "", note, topo_note[0] ? "; " : "",
                topo_note, mps_note[0] ? "; " : "", mps_note);
        for (unsigned i = 0; local == 0 && i < plan->n_notes; i++)
            fprintf(stderr, "cohort: note: %s\n", plan->notes[i]);
    }
    return 0;
}

/* slurmstepd, as each task is forked: its pid, for the node agent's watch. */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    pid_t pid;
    int local;
    if (store.up && spank_get_item(sp, S_TASK_ID, &local) == ESPANK_SUCCESS &&
        spank_get_item(sp, S_TASK_PID, &pid) == ESPANK_SUCCESS && local >= 0)
        store_step_forked(&store, (uint32_t)local, pid);
    return 0;
}

/* slurmstepd, as each task ends: after the node's last one, the step's MPS
 * daemon stops (before the step is reported complete: when srun returns, it
 * is gone). */
int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
    static uint32_t exited;
    uint32_t local = 0;
    (void)ac;
    (void)av;
    uint32_t rank;
    int status, task;
    if (store.up && spank_get_item(sp, S_TASK_ID, &task) == ESPANK_SUCCESS &&
        spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) == ESPANK_SUCCESS &&
        spank_get_item(sp, S_TASK_EXIT_STATUS, &status) == ESPANK_SUCCESS)
        store_step_ended(&store, (uint32_t)task, rank, status);
    if (mps.up && spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local) == ESPANK_SUCCESS &&
        ++exited >= local)
        mps_step_end(&mps);
    return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    mps_step_end(&mps);
    store_step_end(&store);
    job_opts_free();
    struct cohort_err err;
    if (cache_stale && geteuid() == 0 && topo_cache_refresh(site_args.topology_cache, &err) < 0)
        slurm_verbose("cohort: %s", err.msg);
    cache_stale = false;
    plan_free(plan);
    plan = NULL;
    topology_free(topo);
    topo = NULL;
    step_free(&step);
    free(srun_mode);
    srun_mode = NULL;
    return 0;
}
