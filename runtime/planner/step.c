/* step.c - building a cohort_step from Slurm's text forms and, for the
 * node's global task ids, from the numbers slurmstepd gives (see step.h). */
#include "step.h"

#include <stdlib.h>
#include <string.h>

#include "base_text.h"
#include "layout.h"
#include "ports.h"
#include "tasks_per_node.h"

void step_init(struct cohort_step *s)
{
    memset(s, 0, sizeof *s);
    cpu_mask_init(&s->allowed_cpus);
    s->rank = s->local_rank = s->node_id = COHORT_UNKNOWN;
}

void step_free(struct cohort_step *s)
{
    hostlist_free(s->nodes);
    hostlist_free(s->task_hosts);
    free(s->tasks_per_node);
    free(s->node_ranks);
    free(s->gpus);
    free(s->gpu_cuda);
    for (uint32_t i = 0; s->bound_cpus && i < s->n_bound; i++)
        cpu_mask_free(&s->bound_cpus[i]);
    free(s->bound_cpus);
    cpu_mask_free(&s->allowed_cpus);
    step_init(s);
}

int parse_u32(const char *name, const char *text, uint32_t *out, struct cohort_err *err)
{
    if (!text)
        return cohort_fail(err, "%s is not set", name);
    uint64_t acc;
    const char *p = text;
    if (base_parse_decimal(&p, NULL, 0, UINT32_MAX, &acc, NULL) < 0 || *p)
        return cohort_fail(err, "%s='%s' is not a non-negative integer", name, text);
    *out = (uint32_t)acc;
    return 0;
}

static int parse_dist(struct cohort_step *s, const char *dist, const char *plane,
                      struct cohort_err *err)
{
    s->dist = COHORT_DIST_BLOCK;
    if (!dist || !*dist)
        return 0;
    size_t n = strcspn(dist, ":,=");
    static const struct { const char *name; enum cohort_dist d; } known[] = {
        {"block", COHORT_DIST_BLOCK},         {"cyclic", COHORT_DIST_CYCLIC},
        {"plane", COHORT_DIST_PLANE},         {"arbitrary", COHORT_DIST_ARBITRARY},
        {"*", COHORT_DIST_BLOCK},             {"pack", COHORT_DIST_BLOCK},
        {"nopack", COHORT_DIST_BLOCK},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strlen(known[i].name) != n || strncmp(dist, known[i].name, n) != 0)
            continue;
        s->dist = known[i].d;
        if (s->dist != COHORT_DIST_PLANE)
            return 0;
        const char *size = dist[n] == '=' ? dist + n + 1 : plane;
        if (!size)
            return cohort_fail(err, "SLURM_DISTRIBUTION=plane needs SLURM_DIST_PLANESIZE");
        if (parse_u32("SLURM_DIST_PLANESIZE", size, &s->plane_size, err) < 0)
            return -1;
        if (s->plane_size == 0)
            return cohort_fail(err, "SLURM_DIST_PLANESIZE=0 is not a valid plane size");
        return 0;
    }
    return cohort_fail(err,
                       "SLURM_DISTRIBUTION='%s' is not a distribution cohort knows "
                       "(block, cyclic, plane, arbitrary)",
                       dist);
}

static int check_hostfile(struct cohort_step *s, const char *text, struct cohort_err *err)
{
    struct cohort_err e;
    if (!text)
        return cohort_fail(err, "the step uses -m arbitrary but SLURM_HOSTFILE was not given");
    if (hostlist_parse(text, &s->task_hosts, &e) < 0)
        return cohort_fail(err, "SLURM_HOSTFILE: %s", e.msg);
    if (hostlist_count(s->task_hosts) < s->num_tasks)
        return cohort_fail(err, "SLURM_HOSTFILE lists %llu hosts but the step has %u tasks",
                           (unsigned long long)hostlist_count(s->task_hosts), s->num_tasks);
    char host[HOSTLIST_MAX_NAME + 1];
    for (uint32_t t = 0; t < s->num_tasks; t++) {
        hostlist_nth(s->task_hosts, t, host, sizeof host);
        if (hostlist_find(s->nodes, host) < 0)
            return cohort_fail(err, "SLURM_HOSTFILE line %u names %s, which is not a node "
                                    "of the step",
                               t + 1, host);
    }
    return 0;
}

int step_set_layout(struct cohort_step *s, const char *nodelist, const char *num_tasks,
                    const char *tasks_per_node, const char *dist_text,
                    const char *plane_text, const char *hostfile_text,
                    struct cohort_err *err)
{
    struct cohort_err e;
    if (!nodelist)
        return cohort_fail(err, "SLURM_STEP_NODELIST is not set: not inside a Slurm job "
                                "step (run under srun)");
    if (hostlist_parse(nodelist, &s->nodes, &e) < 0)
        return cohort_fail(err, "SLURM_STEP_NODELIST: %s", e.msg);
    if (hostlist_count(s->nodes) == 0)
        return cohort_fail(err, "SLURM_STEP_NODELIST='%s' names no node", nodelist);
    s->num_nodes = (uint32_t)hostlist_count(s->nodes);
    if (parse_u32("SLURM_STEP_NUM_TASKS", num_tasks, &s->num_tasks, err) < 0)
        return -1;
    if (s->num_tasks == 0 || s->num_tasks > STEP_MAX_TASKS)
        return cohort_fail(err, "SLURM_STEP_NUM_TASKS=%u is outside 1-%u", s->num_tasks,
                           STEP_MAX_TASKS);
    uint32_t n;
    if (!tasks_per_node)
        return cohort_fail(err, "SLURM_STEP_TASKS_PER_NODE is not set");
    if (tasks_per_node_parse("SLURM_STEP_TASKS_PER_NODE", tasks_per_node, s->num_nodes,
                             &s->tasks_per_node, &n, &e) < 0)
        return cohort_fail(err, "%s (the step has %u nodes)", e.msg, s->num_nodes);
    if (n != s->num_nodes)
        return cohort_fail(err,
                           "SLURM_STEP_TASKS_PER_NODE='%s' lists %u nodes but "
                           "SLURM_STEP_NODELIST='%s' has %u",
                           tasks_per_node, n, nodelist, s->num_nodes);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += s->tasks_per_node[i];
    if (sum != s->num_tasks)
        return cohort_fail(err,
                           "SLURM_STEP_TASKS_PER_NODE='%s' adds up to %llu tasks but "
                           "SLURM_STEP_NUM_TASKS=%u",
                           tasks_per_node, (unsigned long long)sum, s->num_tasks);
    if (parse_dist(s, dist_text, plane_text, err) < 0)
        return -1;
    if (s->dist == COHORT_DIST_ARBITRARY)
        return check_hostfile(s, hostfile_text, err);
    return 0;
}

/* Comma-separated uint32 list "a,b-c" into a malloc'd array: values at most
 * max_value, at most max_count of them. */
static int parse_index_list(const char *name, const char *text, uint32_t max_value,
                            uint32_t max_count, uint32_t **out, uint32_t *n,
                            struct cohort_err *err)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *p = text;
        uint32_t at = 0;
        while (*p) {
            char *end;
            if (*p < '0' || *p > '9')
                goto bad;
            unsigned long lo = strtoul(p, &end, 10), hi = lo;
            p = end;
            if (*p == '-') {
                if (p[1] < '0' || p[1] > '9')
                    goto bad;
                hi = strtoul(p + 1, &end, 10);
                p = end;
            }
            if (lo > max_value || hi > max_value || hi < lo || hi - lo + 1 > max_count - at)
                return cohort_fail(err, "%s='%s' lists too many or too large values", name,
                                   text);
            for (unsigned long v = lo; v <= hi; v++, at++)
                if (pass)
                    (*out)[at] = (uint32_t)v;
            if (*p == ',' && p[1])
                p++;
            else if (*p)
                goto bad;
        }
        if (!pass) {
            if (at == 0)
                goto bad;
            cap = at;
            if (!(*out = malloc(cap * sizeof **out)))
                return cohort_fail(err, "out of memory parsing %s", name);
        }
        *n = at;
    }
    return 0;
bad:
    free(*out);
    *out = NULL;
    return cohort_fail(err, "%s='%s' is malformed; expected numbers such as 0,1,2", name,
                       text);
}

/* Checks node_id against the layout and takes it; the node's ranks are
 * reset, for the caller to fill. */
static int take_node(struct cohort_step *s, uint32_t node_id, struct cohort_err *err)
{
    if (node_id >= s->num_nodes)
        return cohort_fail(err, "SLURM_NODEID=%u but the step has %u nodes", node_id,
                           s->num_nodes);
    s->node_id = node_id;
    free(s->node_ranks);
    s->node_ranks = NULL;
    return 0;
}

int step_set_node(struct cohort_step *s, uint32_t node_id, const char *gtids,
                  struct cohort_err *err)
{
    if (take_node(s, node_id, err) < 0)
        return -1;
    uint32_t want = s->tasks_per_node[node_id];
    if (gtids) {
        uint32_t n;
        if (parse_index_list("SLURM_GTIDS", gtids, s->num_tasks - 1, s->num_tasks,
                             &s->node_ranks, &n, err) < 0)
            return -1;
        if (n != want)
            return cohort_fail(err,
                               "SLURM_GTIDS='%s' lists %u tasks but "
                               "SLURM_STEP_TASKS_PER_NODE gives node %u %u",
                               gtids, n, node_id, want);
        return 0;
    }
    if (!(s->node_ranks = malloc(want * sizeof *s->node_ranks)))
        return cohort_fail(err, "out of memory");
    return layout_node_ranks(s, node_id, s->node_ranks, err);
}

int step_set_node_ranks(struct cohort_step *s, uint32_t node_id, const uint32_t *ranks,
                        uint32_t n, struct cohort_err *err)
{
    if (take_node(s, node_id, err) < 0)
        return -1;
    uint32_t want = s->tasks_per_node[node_id];
    if (n != want)
        return cohort_fail(err,
                           "node %u was given the global ids of %u tasks but "
                           "SLURM_STEP_TASKS_PER_NODE gives it %u",
                           node_id, n, want);
    for (uint32_t i = 0; i < n; i++)
        if (ranks[i] >= s->num_tasks)
            return cohort_fail(err,
                               "local task %u of node %u has the global id %u but the "
                               "step has %u tasks",
                               i, node_id, ranks[i], s->num_tasks);
    if (!(s->node_ranks = malloc(want * sizeof *s->node_ranks)))
        return cohort_fail(err, "out of memory");
    memcpy(s->node_ranks, ranks, want * sizeof *ranks);
    return 0;
}

int step_set_task(struct cohort_step *s, uint32_t rank, uint32_t local_rank,
                  struct cohort_err *err)
{
    uint32_t here = s->tasks_per_node[s->node_id];
    if (rank >= s->num_tasks)
        return cohort_fail(err, "SLURM_PROCID=%u but the step has %u tasks", rank,
                           s->num_tasks);
    if (local_rank >= here)
        return cohort_fail(err, "SLURM_LOCALID=%u but node %u runs %u tasks of the step",
                           local_rank, s->node_id, here);
    if (s->node_ranks[local_rank] != rank)
        return cohort_fail(err,
                           "SLURM_PROCID=%u does not match the %s layout, which puts "
                           "task %u at SLURM_LOCALID=%u of node %u",
                           rank, layout_dist_name(s->dist), s->node_ranks[local_rank],
                           local_rank, s->node_id);
    s->rank = rank;
    s->local_rank = local_rank;
    return 0;
}

int step_set_resv_ports(struct cohort_step *s, const char *text, struct cohort_err *err)
{
    s->n_resv_ports = 0;
    if (!text || !*text)
        return 0;
    return resv_ports_parse(text, s->resv_ports, 2, &s->n_resv_ports, err);
}

/* CUDA_VISIBLE_DEVICES entries as integers; -1 when not all are integers. */
static int cuda_indexes(const char *cvd, uint32_t **out, uint32_t *n)
{
    struct cohort_err ignored;
    if (!cvd || !*cvd)
        return -1;
    return parse_index_list("CUDA_VISIBLE_DEVICES", cvd, 1u << 16, 1u << 16, out, n,
                            &ignored);
}

int step_set_gpus(struct cohort_step *s, const char *step_gpus, const char *job_gpus,
                  const char *cuda_visible, bool slurm_gpus_on_node,
                  struct cohort_err *err)
{
    const char *name = step_gpus ? "SLURM_STEP_GPUS" : "SLURM_JOB_GPUS";
    const char *list = step_gpus ? step_gpus : job_gpus;
    uint32_t *gres = NULL, *cuda = NULL, n = 0, n_cuda = 0;
    free(s->gpus);
    free(s->gpu_cuda);
    s->gpus = NULL;
    s->gpu_cuda = NULL;
    s->gpus_given = s->gpus_from_slurm = false;
    s->n_gpus = 0;
    if (list && *list) {
        if (parse_index_list(name, list, 1u << 16, 1u << 16, &gres, &n, err) < 0)
            return -1;
        s->gpus_from_slurm = true;
    } else if (cuda_visible && *cuda_visible) {
        if (cuda_indexes(cuda_visible, &gres, &n) < 0)
            return cohort_fail(err, "CUDA_VISIBLE_DEVICES='%s' is not a list of GPU indexes; "
                                    "cohort needs indexes (or unset it)",
                               cuda_visible);
        s->gpus_from_slurm = slurm_gpus_on_node;
    } else {
        return 0;
    }
    s->gpus_given = true;
    s->n_gpus = n;
    s->gpus = malloc(n * sizeof *s->gpus);
    s->gpu_cuda = malloc(n * sizeof *s->gpu_cuda);
    if (!s->gpus || !s->gpu_cuda) {
        free(gres);
        return cohort_fail(err, "out of memory");
    }
    /* Slurm numbers GPUs in CUDA_VISIBLE_DEVICES either like the gres indexes
     * or, with cgroup ConstrainDevices, 0..n-1: take its numbering when it
     * matches the allocation one for one, else count from 0. */
    bool mapped = cuda_indexes(cuda_visible, &cuda, &n_cuda) == 0 && n_cuda == n;
    for (uint32_t i = 0; i < n; i++) {
        s->gpus[i] = (int)gres[i];
        s->gpu_cuda[i] = mapped ? (int)cuda[i] : (step_gpus || job_gpus ? (int)i : (int)gres[i]);
    }
    free(gres);
    free(cuda);
    return 0;
}

/* A hex mask ("0x3", "f0") into a set of CPU numbers. */
static int hex_mask(const char *text, size_t len, struct cpu_mask *set)
{
    if (len > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        text += 2;
        len -= 2;
    }
    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        char c = text[len - 1 - i];
        int v = base_hex_digit(c);
        if (v < 0)
            return -1;
        for (int b = 0; b < 4; b++)
            if ((v & (1 << b)) && (4 * i + (size_t)b >= CPU_MASK_LIMIT ||
                                   cpu_mask_set(set, (unsigned)(4 * i + (size_t)b)) < 0))
                return -1;
    }
    return 0;
}

int step_set_cpu_bind(struct cohort_step *s, const char *type, const char *list,
                      struct cohort_err *err)
{
    if (!type || !list || !*list)
        return 0;
    bool mask = strstr(type, "mask_cpu") != NULL, map = strstr(type, "map_cpu") != NULL;
    if (!mask && !map)
        return 0;
    uint32_t here = s->tasks_per_node[s->node_id];
    size_t n_items = 1;
    for (const char *p = list; *p; p++)
        n_items += (*p == ',');
    const char **items = calloc(n_items, sizeof *items);
    size_t *lens = calloc(n_items, sizeof *lens);
    s->bound_cpus = calloc(here, sizeof *s->bound_cpus); /* zeroed: empty masks */
    s->n_bound = s->bound_cpus ? here : 0;
    if (!items || !lens || !s->bound_cpus) {
        free(items);
        free(lens);
        return cohort_fail(err, "out of memory");
    }
    const char *p = list;
    for (size_t i = 0; i < n_items; i++) {
        items[i] = p;
        lens[i] = strcspn(p, ",");
        p += lens[i] + (p[lens[i]] ? 1 : 0);
    }
    int rc = 0;
    for (uint32_t t = 0; t < here && rc == 0; t++) {
        size_t i = t % n_items;
        struct cpu_mask *set = &s->bound_cpus[t];
        if (mask) {
            rc = hex_mask(items[i], lens[i], set);
        } else {
            char *end;
            unsigned long cpu = strtoul(items[i], &end, 0);
            rc = (end == items[i] + lens[i] && lens[i] && cpu < CPU_MASK_LIMIT) ? 0 : -1;
            if (!rc)
                rc = cpu_mask_set(set, (unsigned)cpu);
        }
        if (rc == 0 && cpu_mask_is_empty(set))
            rc = -1;
    }
    free(items);
    free(lens);
    if (rc)
        return cohort_fail(err, "SLURM_CPU_BIND_LIST='%s' is malformed for %s", list,
                           mask ? "mask_cpu (hex masks such as 0x3)"
                                : "map_cpu (CPU numbers)");
    return 0;
}

int step_set_allowed_cpus(struct cohort_step *s, const struct cpu_mask *cpus,
                          struct cohort_err *err)
{
    cpu_mask_free(&s->allowed_cpus);
    if (!cpus)
        return 0;
    if (cpu_mask_is_empty(cpus))
        return cohort_fail(err, "the step may use no CPU at all");
    if (cpu_mask_copy(&s->allowed_cpus, cpus) < 0)
        return cohort_fail(err, "out of memory");
    return 0;
}
