/* plan_format.c - table, env and JSON renderings of a plan (see plan_format.h). */
#include "plan_format.h"

#include <jansson.h>
#include <string.h>

int plan_format_parse(const char *text, enum plan_format *out, struct cohort_err *err)
{
    if (strcmp(text, "table") == 0)
        *out = PLAN_TABLE;
    else if (strcmp(text, "json") == 0)
        *out = PLAN_JSON;
    else if (strcmp(text, "env") == 0)
        *out = PLAN_ENV;
    else
        return cohort_fail(err, "format '%s' is not one of table, json, env", text);
    return 0;
}

static json_t *task_json(const struct cohort_task_plan *t, const struct cohort_node_plan *p,
                         const struct cohort_topology *topo)
{
    char cpus[4096];
    json_t *gpus = json_array(), *numa = json_array(), *env = json_object(),
           *kept = json_object();
    for (unsigned i = 0; i < t->n_gpus; i++) {
        const char *pci = plan_gpu_pci(topo, &t->gpus[i]);
        json_array_append_new(gpus, pci ? json_string(pci) : json_null());
    }
    unsigned node;
    hwloc_bitmap_foreach_begin(node, t->nodeset) json_array_append_new(numa, json_integer(node));
    hwloc_bitmap_foreach_end();
    for (size_t i = 0; i < t->env.n; i++)
        json_object_set_new(env, t->env.names[i], json_string(t->env.values[i]));
    for (size_t i = 0; i < t->kept.n; i++)
        json_object_set_new(kept, t->kept.names[i], json_string(t->kept.values[i]));
    hwloc_bitmap_list_snprintf(cpus, sizeof cpus, t->cpuset);
    const char *cvd = plan_task_var(t, "CUDA_VISIBLE_DEVICES");
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:s, s:i, s:i, s:o, s:o, s:o, s:s, s:o, "
                     "s:i, s:b, s:o, s:o}",
                     "rank", (json_int_t)t->rank, "local_rank", (json_int_t)t->local_rank,
                     "node_rank", (json_int_t)t->node_rank, "world_size",
                     (json_int_t)t->world_size, "local_world_size",
                     (json_int_t)t->local_world_size, "master_addr", p->master_addr,
                     "master_port", (int)t->master_port, "bootstrap_port",
                     (int)t->bootstrap_port, "gpus", gpus, "cuda_device",
                     t->cuda_device >= 0 ? json_integer(t->cuda_device) : json_null(),
                     "cuda_visible_devices",
                     cvd ? json_string(cvd) : json_null(), "cpus", cpus, "numa", numa,
                     "omp_num_threads", (int)t->omp_threads, "cpus_from_user",
                     t->cpus_from_user, "env", env, "kept", kept);
}

static int print_json(FILE *out, const struct cohort_node_plan *p,
                      const struct cohort_topology *topo, uint32_t first, uint32_t count,
                      const struct mps_verdict *mps)
{
    json_t *tasks = json_array(), *notes = json_array();
    for (uint32_t i = first; i < first + count; i++)
        json_array_append_new(tasks, task_json(&p->tasks[i], p, topo));
    for (unsigned i = 0; i < p->n_notes; i++)
        json_array_append_new(notes, json_string(p->notes[i]));
    json_t *root = json_pack("{s:s, s:o, s:o}", "mode", plan_mode_name(p), "tasks", tasks,
                             "notes", notes);
    if (root && mps)
        json_object_set_new(root, "mps", json_pack("{s:b, s:i, s:s?}", "use", mps->use,
                                                   "sharing", (int)mps->sharing, "why",
                                                   mps->use ? NULL : mps->why));
    int rc = root ? json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : -1;
    fputc('\n', out);
    json_decref(root);
    return rc;
}

static void print_env(FILE *out, const struct cohort_node_plan *p, uint32_t first,
                      uint32_t count)
{
    for (uint32_t i = first; i < first + count; i++) {
        const struct cohort_task_plan *t = &p->tasks[i];
        if (count > 1)
            fprintf(out, "# rank %u\n", t->rank);
        for (size_t k = 0; k < t->env.n; k++)
            fprintf(out, "%s=%s\n", t->env.names[k], t->env.values[k]);
    }
}

static void print_table(FILE *out, const struct cohort_node_plan *p,
                        const struct cohort_topology *topo, uint32_t first, uint32_t count,
                        const struct mps_verdict *mps)
{
    const struct cohort_task_plan *t0 = &p->tasks[first];
    fprintf(out, "node %u of %u, mode %s, %u tasks of %u here, master %s:%u\n",
            p->node_rank, t0->num_nodes, plan_mode_name(p), p->n_tasks, t0->world_size,
            p->master_addr, t0->master_port);
    fprintf(out, "%-6s %-5s %-14s %-5s %-20s %-6s %-24s %-4s %s\n", "RANK", "LOCAL", "GPU",
            "CUDA", "CUDA_VISIBLE_DEVICES", "NUMA", "CPUS", "OMP", "PORT");
    for (uint32_t i = first; i < first + count; i++) {
        const struct cohort_task_plan *t = &p->tasks[i];
        char cpus[4096], numa[256], gpu[64] = "-", cuda[16] = "-";
        hwloc_bitmap_list_snprintf(cpus, sizeof cpus, t->cpuset);
        hwloc_bitmap_list_snprintf(numa, sizeof numa, t->nodeset);
        if (t->n_gpus) {
            const char *pci = plan_gpu_pci(topo, &t->gpus[0]);
            snprintf(gpu, sizeof gpu, "%s%s", pci ? pci : "unknown",
                     t->n_gpus > 1 ? "+" : "");
            snprintf(cuda, sizeof cuda, "%d", t->cuda_device);
        }
        const char *cvd = plan_task_var(t, "CUDA_VISIBLE_DEVICES");
        fprintf(out, "%-6u %-5u %-14s %-5s %-20s %-6s %-24s %-4u %u%s\n", t->rank,
                t->local_rank, gpu, cuda, cvd ? cvd : "-", numa, cpus, t->omp_threads,
                t->master_port, t->cpus_from_user ? " (cpus: user's --cpu-bind)" : "");
    }
    for (unsigned i = 0; i < p->n_notes; i++)
        fprintf(out, "note: %s\n", p->notes[i]);
    if (mps && mps->use)
        fprintf(out, "MPS: yes, a daemon of the step serves this node's tasks (up to %u on "
                "one GPU)\n", mps->sharing);
    else if (mps)
        fprintf(out, "MPS: no, %s\n", mps->why);
}

int plan_print(FILE *out, enum plan_format fmt, const struct cohort_node_plan *p,
               const struct cohort_topology *topo, uint32_t first, uint32_t count,
               const struct mps_verdict *mps)
{
    switch (fmt) {
    case PLAN_JSON:
        return print_json(out, p, topo, first, count, mps);
    case PLAN_ENV:
        print_env(out, p, first, count);
        return 0;
    case PLAN_TABLE:
        print_table(out, p, topo, first, count, mps);
        return 0;
    }
    return -1;
}
