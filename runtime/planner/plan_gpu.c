/* plan_gpu.c - the GPUs of a node's tasks: locality groups, units, the
 * assignment, the visible devices (see plan_gpu.h). */
#include "plan_gpu.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void make_units(struct plan_gpus *w, const struct cohort_topology *topo,
                       uint32_t tasks)
{
    unsigned g = w->n;
    if (tasks <= g) {
        w->n_units = tasks;
        for (unsigned u = 0, at = 0; u < tasks; u++) {
            unsigned size = g / tasks + (u < g % tasks);
            w->units[u] = (struct plan_unit){at, size, 1, 0, NULL};
            at += size;
        }
    } else {
        w->n_units = g;
        for (unsigned u = 0; u < g; u++)
            w->units[u] = (struct plan_unit){u, 1, tasks / g + (u < tasks % g), 0, NULL};
    }
    for (unsigned u = 0; u < w->n_units; u++) {
        struct plan_unit *un = &w->units[u];
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
static void assign_units(struct plan_gpus *w, hwloc_bitmap_t *bound_cpus, uint32_t tasks)
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

int plan_gpus_collect(struct plan_gpus *w, const struct cohort_step *step,
                      const struct cohort_topology *topo, char *unknown, size_t len)
{
    unknown[0] = '\0';
    w->n = step->gpus_given ? step->n_gpus : topo->n_gpus;
    if (w->n == 0)
        return 0;
    w->gpus = calloc(w->n, sizeof *w->gpus);
    if (!w->gpus)
        return -1;
    for (unsigned i = 0; i < w->n; i++) {
        struct cohort_task_gpu *g = &w->gpus[i];
        if (step->gpus_given) {
            g->gres = step->gpus[i];
            g->cuda = step->gpu_cuda[i];
            g->topo = (unsigned)g->gres < topo->n_gpus ? g->gres : -1;
            size_t used = strlen(unknown);
            if (g->topo < 0 && used + 16 < len)
                snprintf(unknown + used, len - used, "%s%d", used ? "," : "", g->gres);
        } else {
            *g = (struct cohort_task_gpu){(int)i, (int)i, (int)i};
        }
    }
    return 0;
}

int plan_gpus_assign(struct plan_gpus *w, const struct cohort_topology *topo,
                     hwloc_bitmap_t *bound, uint32_t tasks)
{
    if (!w->n)
        return 0;
    if (tasks < w->n)
        group_by_locality(topo, w->gpus, w->n);
    w->units = calloc(w->n > tasks ? w->n : tasks, sizeof *w->units);
    w->task_unit = calloc(tasks, sizeof *w->task_unit);
    if (!w->units || !w->task_unit)
        return -1;
    make_units(w, topo, tasks);
    assign_units(w, bound, tasks);
    return 0;
}

int plan_gpus_give(const struct plan_gpus *w, const struct cohort_topology *topo, uint32_t t,
                   struct cohort_task_plan *tp)
{
    if (!w->n)
        return 0;
    const struct plan_unit *u = &w->units[w->task_unit[t]];
    tp->n_gpus = u->count;
    tp->gpus = malloc(u->count * sizeof *tp->gpus);
    if (!tp->gpus)
        return -1;
    memcpy(tp->gpus, &w->gpus[u->first], u->count * sizeof *tp->gpus);
    for (unsigned i = 0; i < u->count; i++)
        if (tp->gpus[i].topo >= 0)
            hwloc_bitmap_or(tp->nodeset, tp->nodeset, topo->gpus[tp->gpus[i].topo].nodeset);
    return 0;
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

int plan_gpus_visible(const struct plan_gpus *w, struct cohort_node_plan *p)
{
    struct cohort_task_gpu *order = malloc(w->n * sizeof *order);
    bool *used = calloc(w->n, sizeof *used);
    unsigned k = 0;
    int rc = -1;
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
        if (!tp->cuda_visible_devices)
            goto out;
    }
    rc = 0;
out:
    free(order);
    free(used);
    return rc;
}

void plan_gpus_free(struct plan_gpus *w)
{
    for (unsigned u = 0; w->units && u < w->n_units; u++)
        hwloc_bitmap_free(w->units[u].cpuset);
    free(w->units);
    free(w->task_unit);
    free(w->gpus);
    memset(w, 0, sizeof *w);
}
