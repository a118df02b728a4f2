/* plan.c - the plan of a node: its tasks' ids, CPU and memory locality
 * and torchrun-style environment, in steps (network, GPUs by plan_gpu.h,
 * each task, the CPUs, the rest); see plan.h. */
#include "plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_mask_hwloc.h"
#include "cpu_share.h"
#include "plan_gpu.h"

void policy_init(struct cohort_policy *p)
{
    p->mode = COHORT_MODE_TRAIN;
    p->bind = true;
    p->socket_ifname = NULL;
    p->socket_ifname_loopback = false;
    p->socket_route_error = NULL;
    p->ports.lo = PORTS_DEFAULT_LO;
    p->ports.hi = PORTS_DEFAULT_HI;
}

int mode_parse(const char *text, enum cohort_mode *out, struct cohort_err *err)
{
    if (text && strcmp(text, "train") == 0)
        *out = COHORT_MODE_TRAIN;
    else if (text && strcmp(text, "infer") == 0)
        *out = COHORT_MODE_INFER;
    else
        return cohort_fail(err, "mode '%s' is not one of train, infer", text ? text : "");
    return 0;
}

const char *mode_name(enum cohort_mode m)
{
    return m == COHORT_MODE_INFER ? "infer" : "train";
}

const char *plan_mode_name(const struct cohort_node_plan *p)
{
    return p->bind ? mode_name(p->mode) : "env";
}

static void add_note(struct cohort_node_plan *p, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **n = realloc(p->notes, (p->n_notes + 1) * sizeof *n);
    if (!n)
        return;
    p->notes = n;
    if ((n[p->n_notes] = strdup(buf)))
        p->n_notes++;
}

void plan_free(struct cohort_node_plan *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; p->tasks && i < p->n_tasks; i++) {
        struct cohort_task_plan *t = &p->tasks[i];
        free(t->gpus);
        free(t->cuda_visible_devices);
        hwloc_bitmap_free(t->cpuset);
        hwloc_bitmap_free(t->nodeset);
        envlist_clear(&t->env);
        envlist_clear(&t->kept);
    }
    free(p->tasks);
    for (unsigned i = 0; i < p->n_notes; i++)
        free(p->notes[i]);
    free(p->notes);
    free(p);
}

const char *plan_task_var(const struct cohort_task_plan *t, const char *name)
{
    const char *v = envlist_get(&t->env, name);
    return v ? v : envlist_get(&t->kept, name);
}

const char *plan_gpu_pci(const struct cohort_topology *topo, const struct cohort_task_gpu *g)
{
    return g->topo >= 0 ? topo->gpus[g->topo].pci_id : NULL;
}


/* The user's CPU binding of the node's tasks as hwloc bitmaps (*out NULL
 * when the user gave none). Returns 0, or -1 when out of memory. */
static int bound_to_hwloc(const struct cohort_step *step, uint32_t tasks, hwloc_bitmap_t **out)
{
    *out = NULL;
    if (!step->bound_cpus || step->n_bound < tasks)
        return 0;
    hwloc_bitmap_t *bound = calloc(tasks, sizeof *bound);
    if (!bound)
        return -1;
    *out = bound;
    for (uint32_t t = 0; t < tasks; t++)
        if (!(bound[t] = cpu_mask_to_hwloc(&step->bound_cpus[t])))
            return -1;
    return 0;
}


/* --- CPUs and memory -------------------------------------------------- */

static unsigned find_root(unsigned *parent, unsigned x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* Tasks whose localities overlap share one pool of CPUs, split evenly. */
static int place_cpus(struct cohort_node_plan *p, const struct cohort_topology *topo,
                      hwloc_bitmap_t *loc)
{
    uint32_t n = p->n_tasks;
    unsigned *parent = malloc(n * sizeof *parent);
    hwloc_bitmap_t *share = calloc(n, sizeof *share);
    uint32_t *members = malloc(n * sizeof *members);
    hwloc_bitmap_t pool = hwloc_bitmap_alloc(), user = hwloc_bitmap_alloc();
    int rc = 0;
    if (!parent || !share || !members || !pool || !user) {
        rc = -1;
        goto out;
    }
    for (uint32_t t = 0; t < n; t++) {
        parent[t] = t;
        if (p->tasks[t].cpus_from_user)
            hwloc_bitmap_or(user, user, p->tasks[t].cpuset);
    }
    for (uint32_t a = 0; a < n; a++)
        for (uint32_t b = a + 1; b < n; b++)
            if (loc[a] && loc[b] && hwloc_bitmap_intersects(loc[a], loc[b]))
                parent[find_root(parent, b)] = find_root(parent, a);
    for (uint32_t root = 0; root < n; root++) {
        uint32_t k = 0;
        hwloc_bitmap_zero(pool);
        for (uint32_t t = 0; t < n; t++)
            if (loc[t] && find_root(parent, t) == root) {
                members[k++] = t;
                hwloc_bitmap_or(pool, pool, loc[t]);
            }
        if (k == 0)
            continue;
        /* Stay off CPUs the user gave to other tasks, when that leaves enough. */
        if (hwloc_bitmap_intersects(pool, user)) {
            hwloc_bitmap_t rest = hwloc_bitmap_alloc();
            hwloc_bitmap_andnot(rest, pool, user);
            if ((uint32_t)hwloc_bitmap_weight(rest) >= k)
                hwloc_bitmap_copy(pool, rest);
            hwloc_bitmap_free(rest);
        }
        for (uint32_t i = 0; i < k; i++)
            share[i] = p->tasks[members[i]].cpuset;
        if (cpu_share_split(topo->topo, pool, k, share) < 0) {
            rc = -1;
            goto out;
        }
    }
out:
    free(parent);
    free(share);
    free(members);
    hwloc_bitmap_free(pool);
    hwloc_bitmap_free(user);
    return rc;
}

/* --- environment ------------------------------------------------------ */

static int put(struct cohort_task_plan *t, const struct envlist *task_env,
               const char *name, const char *value, bool replace_slurm)
{
    const char *user = envlist_get(task_env, name);
    if (user && !replace_slurm)
        return envlist_set(&t->kept, name, user);
    return envlist_set(&t->env, name, value);
}

static int putf(struct cohort_task_plan *t, const struct envlist *task_env,
                const char *name, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return put(t, task_env, name, buf, false);
}


static int task_env(struct cohort_task_plan *t, const struct cohort_node_plan *p,
                    const struct cohort_topology *topo, const struct cohort_step *step,
                    const struct envlist *env)
{
    char gpus[1024] = "", cpus[4096];
    int rc = 0;
    rc |= putf(t, env, "RANK", "%u", t->rank);
    rc |= putf(t, env, "WORLD_SIZE", "%u", t->world_size);
    rc |= putf(t, env, "LOCAL_RANK", "%u", t->local_rank);
    rc |= putf(t, env, "LOCAL_WORLD_SIZE", "%u", t->local_world_size);
    rc |= putf(t, env, "NODE_RANK", "%u", t->node_rank);
    rc |= putf(t, env, "GROUP_RANK", "%u", t->node_rank);
    rc |= putf(t, env, "GROUP_WORLD_SIZE", "%u", t->num_nodes);
    rc |= putf(t, env, "ROLE_RANK", "%u", t->rank);
    rc |= putf(t, env, "ROLE_WORLD_SIZE", "%u", t->world_size);
    rc |= putf(t, env, "ROLE_NAME", "default");
    rc |= putf(t, env, "MASTER_ADDR", "%s", p->master_addr);
    rc |= putf(t, env, "MASTER_PORT", "%u", t->master_port);
    if (t->cuda_visible_devices) {
        rc |= put(t, env, "CUDA_VISIBLE_DEVICES", t->cuda_visible_devices,
                  step->gpus_from_slurm);
        rc |= putf(t, env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    }
    rc |= putf(t, env, "OMP_NUM_THREADS", "%u", t->omp_threads);
    if (p->socket_ifname[0]) {
        rc |= putf(t, env, "NCCL_SOCKET_IFNAME", "%s", p->socket_ifname);
        rc |= putf(t, env, "GLOO_SOCKET_IFNAME", "%s", p->socket_ifname);
    }
    rc |= putf(t, env, "COHORT_MODE", "%s", plan_mode_name(p));
    rc |= putf(t, env, "COHORT_BOOTSTRAP_PORT", "%u", t->bootstrap_port);
    for (unsigned i = 0; i < t->n_gpus; i++) {
        const char *pci = plan_gpu_pci(topo, &t->gpus[i]);
        size_t len = strlen(gpus);
        snprintf(gpus + len, sizeof gpus - len, "%s%s", i ? "," : "", pci ? pci : "unknown");
    }
    if (t->n_gpus)
        rc |= putf(t, env, "COHORT_GPUS", "%s", gpus);
    hwloc_bitmap_list_snprintf(cpus, sizeof cpus, t->cpuset);
    rc |= putf(t, env, "COHORT_CPUS", "%s", cpus);
    return rc ? -1 : 0;
}

/* --- the plan --------------------------------------------------------- */

static int ports_for(const struct cohort_step *step, const struct cohort_policy *policy,
                     const struct envlist *env, uint16_t *master, uint16_t *bootstrap,
                     struct cohort_err *err)
{
    plan_step_ports(step, policy->ports, envlist_get(env, "COHORT_SECRET"), master, bootstrap);
    const char *user = envlist_get(env, "MASTER_PORT");
    if (user && port_parse("MASTER_PORT", user, master, err) < 0)
        return -1;
    return 0;
}


/* MASTER_ADDR, and the interface NCCL and Gloo should use to reach it. */
static void plan_network(struct cohort_node_plan *p, const struct cohort_step *step,
                         const struct cohort_policy *policy, const struct envlist *env)
{
    plan_master_addr(step, env, p->master_addr, sizeof p->master_addr);
    if (policy->socket_ifname && policy->socket_ifname_loopback && step->num_nodes > 1)
        add_note(p,
                 "MASTER_ADDR %s is reached through the loopback interface %s here; "
                 "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME are left unset (give the "
                 "host a non-loopback address in /etc/hosts or DNS)",
                 p->master_addr, policy->socket_ifname);
    else if (policy->socket_ifname && strlen(policy->socket_ifname) < sizeof p->socket_ifname)
        snprintf(p->socket_ifname, sizeof p->socket_ifname, "%s", policy->socket_ifname);
    else if (policy->socket_route_error)
        add_note(p, "%s; NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME are left unset",
                 policy->socket_route_error);
}

/* The GPUs, with a note on those hwloc does not know and on tasks sharing
 * GPUs in train mode. */
static int plan_gpus(struct cohort_node_plan *p, struct plan_gpus *w,
                     const struct cohort_step *step, const struct cohort_topology *topo,
                     hwloc_bitmap_t *bound)
{
    char unknown[256];
    if (plan_gpus_collect(w, step, topo, unknown, sizeof unknown) < 0 ||
        plan_gpus_assign(w, topo, bound, p->n_tasks) < 0)
        return -1;
    if (unknown[0])
        add_note(p,
                 "GPU(s) %s of the step are not among the %u NVIDIA GPUs hwloc found; "
                 "their locality is unknown",
                 unknown, topo->n_gpus);
    if (w->n && p->n_tasks > w->n && p->mode == COHORT_MODE_TRAIN)
        add_note(p,
                 "%u tasks share %u GPUs in train mode: LOCAL_RANK is not a CUDA "
                 "device index for every task; each task's own GPU is listed first "
                 "(use mode infer for several tasks per GPU)",
                 p->n_tasks, w->n);
    return 0;
}

/* Task t's ids, GPUs and where its CPUs should be: the user's binding, else
 * (into *loc) the step's CPUs near its GPUs, else all the step's CPUs. */
static int plan_task(struct cohort_node_plan *p, uint32_t t, const struct cohort_step *step,
                     const struct cohort_topology *topo, const struct plan_gpus *w,
                     hwloc_bitmap_t *bound, hwloc_const_bitmap_t allowed, hwloc_bitmap_t *loc)
{
    struct cohort_task_plan *tp = &p->tasks[t];
    tp->rank = step->node_ranks[t];
    tp->local_rank = t;
    tp->node_rank = step->node_id;
    tp->world_size = step->num_tasks;
    tp->local_world_size = p->n_tasks;
    tp->num_nodes = step->num_nodes;
    tp->cuda_device = -1;
    tp->cpuset = hwloc_bitmap_alloc();
    tp->nodeset = hwloc_bitmap_alloc();
    if (!tp->cpuset || !tp->nodeset || plan_gpus_give(w, topo, t, tp) < 0)
        return -1;
    if (bound) {
        tp->cpus_from_user = true;
        hwloc_bitmap_copy(tp->cpuset, bound[t]);
        return 0;
    }
    hwloc_const_bitmap_t near = w->n ? w->units[w->task_unit[t]].cpuset : NULL;
    if (!(*loc = hwloc_bitmap_alloc()))
        return -1;
    if (near)
        hwloc_bitmap_and(*loc, near, allowed);
    if (hwloc_bitmap_iszero(*loc)) {
        if (near)
            add_note(p, "the CPUs near task %u's GPU are outside the step's CPUs; "
                        "it gets a share of the step's CPUs instead",
                     tp->rank);
        hwloc_bitmap_copy(*loc, allowed);
    }
    return 0;
}

/* After the CPUs are placed: memory nodes, threads and the variables. */
static int plan_finish(struct cohort_node_plan *p, const struct cohort_step *step,
                       const struct cohort_topology *topo, const struct plan_gpus *w,
                       const struct envlist *env, uint16_t master_port, uint16_t bootstrap_port)
{
    if (w->n && plan_gpus_visible(w, p) < 0)
        return -1;
    for (uint32_t t = 0; t < p->n_tasks; t++) {
        struct cohort_task_plan *tp = &p->tasks[t];
        tp->master_port = master_port;
        tp->bootstrap_port = bootstrap_port;
        if (hwloc_bitmap_iszero(tp->nodeset) || tp->cpus_from_user)
            hwloc_cpuset_to_nodeset(topo->topo, tp->cpuset, tp->nodeset);
        tp->omp_threads = cpu_share_cores(topo->topo, tp->cpuset);
        if (task_env(tp, p, topo, step, env) < 0)
            return -1;
    }
    return 0;
}

int plan_node(const struct cohort_step *step, const struct cohort_topology *topo,
              const struct cohort_policy *policy, const struct envlist *env,
              struct cohort_node_plan **out, struct cohort_err *err)
{
    *out = NULL;
    if (step->node_id == COHORT_UNKNOWN || !step->node_ranks)
        return cohort_fail(err, "internal: the step's node is not set");
    struct cohort_node_plan *p = calloc(1, sizeof *p);
    if (!p)
        return cohort_fail(err, "out of memory");
    uint32_t n_tasks = step->tasks_per_node[step->node_id];
    p->mode = policy->mode;
    p->node_rank = step->node_id;
    p->n_tasks = n_tasks;
    p->bind = policy->bind;
    struct plan_gpus w = {0};
    hwloc_bitmap_t *loc = NULL, *bound = NULL; /* bound: the user's binding per task, or NULL */
    hwloc_bitmap_t step_cpus = NULL;
    hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(topo->topo);
    uint16_t master_port, bootstrap_port;
    int rc = -1;

    plan_network(p, step, policy, env);
    if (ports_for(step, policy, env, &master_port, &bootstrap_port, err) < 0)
        goto fail;
    p->tasks = calloc(p->n_tasks, sizeof *p->tasks);
    loc = calloc(p->n_tasks, sizeof *loc);
    if (!p->tasks || !loc || bound_to_hwloc(step, n_tasks, &bound) < 0 ||
        plan_gpus(p, &w, step, topo, bound) < 0)
        goto oom;
    if (!cpu_mask_is_empty(&step->allowed_cpus)) {
        if (!(step_cpus = cpu_mask_to_hwloc(&step->allowed_cpus)))
            goto oom;
        allowed = step_cpus;
    }
    for (uint32_t t = 0; t < p->n_tasks; t++)
        if (plan_task(p, t, step, topo, &w, bound, allowed, &loc[t]) < 0)
            goto oom;
    if (place_cpus(p, topo, loc) < 0) {
        cohort_fail(err, "the step's CPUs hold no processing unit of the topology");
        goto fail;
    }
    if (plan_finish(p, step, topo, &w, env, master_port, bootstrap_port) < 0)
        goto oom;
    rc = 0;
    *out = p;
    goto done;
oom:
    cohort_fail(err, "out of memory while planning");
fail:
    plan_free(p);
done:
    for (uint32_t t = 0; loc && t < n_tasks; t++)
        hwloc_bitmap_free(loc[t]);
    free(loc);
    for (uint32_t t = 0; bound && t < n_tasks; t++)
        hwloc_bitmap_free(bound[t]);
    free(bound);
    hwloc_bitmap_free(step_cpus);
    plan_gpus_free(&w);
    return rc;
}
