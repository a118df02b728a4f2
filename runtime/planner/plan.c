/* plan.c - GPU choice, CPU and memory locality, and the torchrun-style
 * environment of each task on a node (see plan.h). */
#include "plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_mask_hwloc.h"
#include "cpu_share.h"

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

/* --- GPUs ------------------------------------------------------------- */

/* A unit is what one task is given: a group of GPUs (tasks <= GPUs) or one
 * GPU shared by up to `capacity` tasks (tasks > GPUs). */
struct unit {
    unsigned first, count;  /* slice of the ordered GPU list */
    unsigned capacity, used;
    hwloc_bitmap_t cpuset;  /* locality of its GPUs, NULL when unknown */
};

struct gpu_work {
    struct cohort_task_gpu *gpus; /* the node's step GPUs, in unit order */
    unsigned n;
    struct unit *units;
    unsigned n_units;
    unsigned *task_unit;          /* per local task */
};

static hwloc_const_bitmap_t gpu_cpuset(const struct cohort_topology *topo,
                                       const struct cohort_task_gpu *g)
{
    return g->topo >= 0 ? topo->gpus[g->topo].cpuset : NULL;
}

/* Reorders gpus so that GPUs with the same locality are adjacent, keeping
 * the first-seen order of localities and PCI order within each. */
static void group_by_locality(const struct cohort_topology *topo,
                              struct cohort_task_gpu *gpus, unsigned n)
{
    struct cohort_task_gpu *out = malloc(n * sizeof *out);
    bool *taken = calloc(n, sizeof *taken);
    if (!out || !taken) {
        free(out);
        free(taken);
        return;
    }
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        if (taken[i])
            continue;
        hwloc_const_bitmap_t ci = gpu_cpuset(topo, &gpus[i]);
        for (unsigned j = i; j < n; j++) {
            hwloc_const_bitmap_t cj = gpu_cpuset(topo, &gpus[j]);
            bool same = (!ci && !cj) || (ci && cj && hwloc_bitmap_isequal(ci, cj));
            if (!taken[j] && same) {
                taken[j] = true;
                out[k++] = gpus[j];
            }
        }
    }
    memcpy(gpus, out, n * sizeof *out);
    free(out);
    free(taken);
}

static void make_units(struct gpu_work *w, const struct cohort_topology *topo,
                       uint32_t tasks)
{
    unsigned g = w->n;
    if (tasks <= g) {
        w->n_units = tasks;
        for (unsigned u = 0, at = 0; u < tasks; u++) {
            unsigned size = g / tasks + (u < g % tasks);
            w->units[u] = (struct unit){at, size, 1, 0, NULL};
            at += size;
        }
    } else {
        w->n_units = g;
        for (unsigned u = 0; u < g; u++)
            w->units[u] = (struct unit){u, 1, tasks / g + (u < tasks % g), 0, NULL};
    }
    for (unsigned u = 0; u < w->n_units; u++) {
        struct unit *un = &w->units[u];
        for (unsigned i = un->first; i < un->first + un->count; i++) {
            hwloc_const_bitmap_t c = gpu_cpuset(topo, &w->gpus[i]);
            if (!c)
                continue;
            if (!un->cpuset)
                un->cpuset = hwloc_bitmap_alloc();
            hwloc_bitmap_or(un->cpuset, un->cpuset, c);
        }
    }
}

/* Tasks the user bound to CPUs take the free unit closest to those CPUs,
 * best overlap first across all of them; the others take free units in
 * order. */
static void assign_units(struct gpu_work *w, hwloc_bitmap_t *bound_cpus, uint32_t tasks)
{
    hwloc_bitmap_t tmp = hwloc_bitmap_alloc();
    bool *placed = calloc(tasks, sizeof *placed);
    for (;;) {
        int best_task = -1, best_unit = -1, best_overlap = -1;
        for (uint32_t t = 0; placed && t < tasks; t++) {
            hwloc_const_bitmap_t bound = bound_cpus ? bound_cpus[t] : NULL;
            if (!bound || placed[t])
                continue;
            for (unsigned u = 0; u < w->n_units; u++) {
                if (w->units[u].used == w->units[u].capacity)
                    continue;
                int overlap = 0;
                if (w->units[u].cpuset) {
                    hwloc_bitmap_and(tmp, w->units[u].cpuset, bound);
                    overlap = hwloc_bitmap_weight(tmp);
                }
                if (overlap > best_overlap) {
                    best_task = (int)t;
                    best_unit = (int)u;
                    best_overlap = overlap;
                }
            }
        }
        if (best_task < 0)
            break;
        placed[best_task] = true;
        w->task_unit[best_task] = (unsigned)best_unit;
        w->units[best_unit].used++;
    }
    hwloc_bitmap_free(tmp);
    unsigned u = 0;
    for (uint32_t t = 0; t < tasks; t++) {
        if (placed && placed[t])
            continue;
        while (w->units[u].used == w->units[u].capacity)
            u++;
        w->task_unit[t] = u;
        w->units[u].used++;
    }
    free(placed);
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

static int collect_gpus(struct gpu_work *w, const struct cohort_step *step,
                        const struct cohort_topology *topo, struct cohort_node_plan *p)
{
    w->n = step->gpus_given ? step->n_gpus : topo->n_gpus;
    if (w->n == 0)
        return 0;
    w->gpus = calloc(w->n, sizeof *w->gpus);
    if (!w->gpus)
        return -1;
    char unknown[256] = "";
    for (unsigned i = 0; i < w->n; i++) {
        struct cohort_task_gpu *g = &w->gpus[i];
        if (step->gpus_given) {
            g->gres = step->gpus[i];
            g->cuda = step->gpu_cuda[i];
            g->topo = (unsigned)g->gres < topo->n_gpus ? g->gres : -1;
            size_t len = strlen(unknown);
            if (g->topo < 0 && len < sizeof unknown - 16)
                snprintf(unknown + len, sizeof unknown - len, "%s%d", len ? "," : "", g->gres);
        } else {
            *g = (struct cohort_task_gpu){(int)i, (int)i, (int)i};
        }
    }
    if (unknown[0])
        add_note(p,
                 "GPU(s) %s of the step are not among the %u NVIDIA GPUs hwloc found; "
                 "their locality is unknown",
                 unknown, topo->n_gpus);
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

static char *join_cuda(const struct cohort_task_gpu *g, unsigned n)
{
    size_t cap = n * 12 + 1;
    char *s = malloc(cap), *w = s;
    if (!s)
        return NULL;
    *s = '\0';
    for (unsigned i = 0; i < n; i++)
        w += snprintf(w, cap - (size_t)(w - s), "%s%d", i ? "," : "", g[i].cuda);
    return s;
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

static void visible_devices(struct cohort_node_plan *p, struct gpu_work *w)
{
    /* train: every GPU, the tasks' own GPUs first in local order, so that
     * device LOCAL_RANK is the task's own; infer: the task's GPUs only. */
    struct cohort_task_gpu *order = malloc(w->n * sizeof *order);
    bool *used = calloc(w->n, sizeof *used);
    unsigned k = 0;
    if (!order || !used)
        goto out;
    for (uint32_t t = 0; t < p->n_tasks; t++) {
        unsigned first = w->units[w->task_unit[t]].first;
        if (!used[first]) {
            used[first] = true;
            order[k++] = w->gpus[first];
        }
    }
    for (unsigned i = 0; i < w->n; i++)
        if (!used[i])
            order[k++] = w->gpus[i];
    for (uint32_t t = 0; t < p->n_tasks; t++) {
        struct cohort_task_plan *tp = &p->tasks[t];
        tp->cuda_device = 0;
        if (p->mode == COHORT_MODE_TRAIN) {
            tp->cuda_visible_devices = join_cuda(order, k);
            for (unsigned i = 0; i < k; i++)
                if (order[i].gres == tp->gpus[0].gres)
                    tp->cuda_device = (int)i;
        } else {
            tp->cuda_visible_devices = join_cuda(tp->gpus, tp->n_gpus);
        }
    }
out:
    free(order);
    free(used);
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
    struct gpu_work w = {0};
    hwloc_bitmap_t *loc = NULL;
    hwloc_bitmap_t *bound = NULL; /* the user's binding per task, NULL: none */
    hwloc_bitmap_t step_cpus = NULL;
    hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(topo->topo);
    uint16_t master_port, bootstrap_port;
    int rc = -1;

    p->bind = policy->bind;
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
    if (ports_for(step, policy, env, &master_port, &bootstrap_port, err) < 0)
        goto fail;

    p->tasks = calloc(p->n_tasks, sizeof *p->tasks);
    loc = calloc(p->n_tasks, sizeof *loc);
    if (!p->tasks || !loc || bound_to_hwloc(step, n_tasks, &bound) < 0 ||
        collect_gpus(&w, step, topo, p) < 0)
        goto oom;
    if (!cpu_mask_is_empty(&step->allowed_cpus)) {
        if (!(step_cpus = cpu_mask_to_hwloc(&step->allowed_cpus)))
            goto oom;
        allowed = step_cpus;
    }
    if (w.n) {
        if (p->n_tasks < w.n)
            group_by_locality(topo, w.gpus, w.n);
        w.units = calloc(w.n > p->n_tasks ? w.n : p->n_tasks, sizeof *w.units);
        w.task_unit = calloc(p->n_tasks, sizeof *w.task_unit);
        if (!w.units || !w.task_unit)
            goto oom;
        make_units(&w, topo, p->n_tasks);
        assign_units(&w, bound, p->n_tasks);
        if (p->n_tasks > w.n && p->mode == COHORT_MODE_TRAIN)
            add_note(p,
                     "%u tasks share %u GPUs in train mode: LOCAL_RANK is not a CUDA "
                     "device index for every task; each task's own GPU is listed first "
                     "(use mode infer for several tasks per GPU)",
                     p->n_tasks, w.n);
    }

    for (uint32_t t = 0; t < p->n_tasks; t++) {
        struct cohort_task_plan *tp = &p->tasks[t];
        tp->rank = step->node_ranks[t];
        tp->local_rank = t;
        tp->node_rank = step->node_id;
        tp->world_size = step->num_tasks;
        tp->local_world_size = p->n_tasks;
        tp->num_nodes = step->num_nodes;
        tp->master_port = master_port;
        tp->cuda_device = -1;
        tp->bootstrap_port = bootstrap_port;
        tp->cpuset = hwloc_bitmap_alloc();
        tp->nodeset = hwloc_bitmap_alloc();
        if (!tp->cpuset || !tp->nodeset)
            goto oom;
        if (w.n) {
            struct unit *u = &w.units[w.task_unit[t]];
            tp->n_gpus = u->count;
            tp->gpus = malloc(u->count * sizeof *tp->gpus);
            if (!tp->gpus)
                goto oom;
            memcpy(tp->gpus, &w.gpus[u->first], u->count * sizeof *tp->gpus);
            for (unsigned i = 0; i < u->count; i++)
                if (tp->gpus[i].topo >= 0)
                    hwloc_bitmap_or(tp->nodeset, tp->nodeset,
                                    topo->gpus[tp->gpus[i].topo].nodeset);
        }
        if (bound) {
            tp->cpus_from_user = true;
            hwloc_bitmap_copy(tp->cpuset, bound[t]);
            continue;
        }
        loc[t] = hwloc_bitmap_alloc();
        if (w.n && w.units[w.task_unit[t]].cpuset)
            hwloc_bitmap_and(loc[t], w.units[w.task_unit[t]].cpuset, allowed);
        if (hwloc_bitmap_iszero(loc[t])) {
            if (w.n && w.units[w.task_unit[t]].cpuset)
                add_note(p, "the CPUs near task %u's GPU are outside the step's CPUs; "
                            "it gets a share of the step's CPUs instead",
                         tp->rank);
            hwloc_bitmap_copy(loc[t], allowed);
        }
    }
    if (place_cpus(p, topo, loc) < 0) {
        cohort_fail(err, "the step's CPUs hold no processing unit of the topology");
        goto fail;
    }
    if (w.n)
        visible_devices(p, &w);
    for (uint32_t t = 0; t < p->n_tasks; t++) {
        struct cohort_task_plan *tp = &p->tasks[t];
        if (hwloc_bitmap_iszero(tp->nodeset) || tp->cpus_from_user)
            hwloc_cpuset_to_nodeset(topo->topo, tp->cpuset, tp->nodeset);
        tp->omp_threads = cpu_share_cores(topo->topo, tp->cpuset);
        if ((w.n && !tp->cuda_visible_devices) || task_env(tp, p, topo, step, env) < 0)
            goto oom;
    }
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
    for (unsigned u = 0; w.units && u < w.n_units; u++)
        hwloc_bitmap_free(w.units[u].cpuset);
    free(w.units);
    free(w.task_unit);
    free(w.gpus);
    return rc;
}
