/* test_plan.c - the planner over real topologies: cohort's own fixtures
 * (DGX A100-like, DGX H100-like) and, when present, every XML in
 * ../shared/topologies with its GPU -> NUMA truth. Checks, in train mode
 * (a task per GPU) and infer mode (2 tasks per GPU): each task's cores
 * inside its GPU's locality and disjoint from the others', memory on its
 * GPU's NUMA node(s), CUDA_VISIBLE_DEVICES as the mode says. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "step_env.h"
#include "tap.h"

static int plan_for(const struct cohort_topology *topo, unsigned tasks, enum cohort_mode mode,
                    const char *bind_list, struct cohort_node_plan **out,
                    struct cohort_step *step)
{
    char ntasks[64], tpn[64];
    snprintf(ntasks, sizeof ntasks, "SLURM_STEP_NUM_TASKS=%u", tasks);
    snprintf(tpn, sizeof tpn, "SLURM_STEP_TASKS_PER_NODE=%u", tasks);
    char bind[4096];
    snprintf(bind, sizeof bind, "SLURM_CPU_BIND_LIST=%s", bind_list ? bind_list : "");
    const char *vars[] = {"SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=n1",
                          ntasks, tpn, "SLURM_NODEID=0",
                          bind_list ? "SLURM_CPU_BIND_TYPE=mask_cpu:" : NULL, bind, NULL};
    struct envlist env;
    struct cohort_policy pol;
    struct cohort_err err;
    envlist_init(&env);
    envlist_from_envp(&env, (char *const *)vars);
    policy_init(&pol);
    pol.mode = mode;
    int rc = step_from_env(step, &env, NULL, &err);
    if (rc == 0)
        rc = plan_node(step, topo, &pol, &env, out, &err);
    if (rc)
        printf("# plan failed: %s\n", err.msg);
    envlist_clear(&env);
    return rc;
}

/* The properties every plan must have; label names the case. */
static void check_plan(const char *label, const struct cohort_topology *topo,
                       unsigned per_gpu, enum cohort_mode mode)
{
    unsigned n = topo->n_gpus * per_gpu;
    struct cohort_node_plan *p;
    struct cohort_step step;
    if (!ok(plan_for(topo, n, mode, NULL, &p, &step) == 0, "%s %s x%u: plans", label,
            mode_name(mode), per_gpu)) {
        step_free(&step);
        return;
    }
    int inside = 1, disjoint = 1, numa = 1, cvd = 1, spread = 1;
    unsigned *users = calloc(topo->n_gpus, sizeof *users);
    for (unsigned t = 0; t < n; t++) {
        struct cohort_task_plan *tp = &p->tasks[t];
        const struct cohort_gpu *g = &topo->gpus[tp->gpus[0].topo];
        inside &= !hwloc_bitmap_iszero(tp->cpuset) && hwloc_bitmap_isincluded(tp->cpuset, g->cpuset);
        numa &= hwloc_bitmap_isequal(tp->nodeset, g->nodeset);
        users[tp->gpus[0].topo]++;
        for (unsigned u = 0; u < t; u++)
            disjoint &= !hwloc_bitmap_intersects(tp->cpuset, p->tasks[u].cpuset);
        /* The task's own GPU sits at cuda_device in CUDA_VISIBLE_DEVICES. */
        char *list = strdup(tp->cuda_visible_devices), *save = NULL;
        int idx = 0, found = -1, count = 0;
        for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save), idx++) {
            count++;
            if (atoi(s) == tp->gpus[0].cuda)
                found = idx;
        }
        free(list);
        if (mode == COHORT_MODE_TRAIN)
            cvd &= found == (int)tp->local_rank && count == (int)topo->n_gpus;
        else
            cvd &= found == 0 && count == 1;
    }
    for (unsigned g = 0; g < topo->n_gpus; g++)
        spread &= users[g] == per_gpu;
    ok(inside, "%s %s x%u: every task's CPUs lie in its GPU's locality", label,
       mode_name(mode), per_gpu);
    /* Tasks of one locality overlap only when it has fewer PUs than tasks. */
    int crowded = 0;
    for (unsigned g = 0; g < topo->n_gpus; g++) {
        unsigned sharing = 0;
        for (unsigned h = 0; h < topo->n_gpus; h++)
            sharing += hwloc_bitmap_isequal(topo->gpus[g].cpuset, topo->gpus[h].cpuset) * per_gpu;
        crowded |= hwloc_bitmap_weight(topo->gpus[g].cpuset) < (int)sharing;
    }
    ok(disjoint || crowded, "%s %s x%u: tasks' CPUs are disjoint%s", label, mode_name(mode),
       per_gpu, crowded ? " (or a locality has fewer PUs than tasks)" : "");
    ok(numa, "%s %s x%u: memory on the GPU's NUMA node(s)", label, mode_name(mode), per_gpu);
    ok(cvd, "%s %s x%u: CUDA_VISIBLE_DEVICES puts the own GPU at %s", label, mode_name(mode),
       per_gpu, mode == COHORT_MODE_TRAIN ? "LOCAL_RANK" : "0, alone");
    ok(spread, "%s %s x%u: %u task(s) on every GPU", label, mode_name(mode), per_gpu, per_gpu);
    free(users);
    plan_free(p);
    step_free(&step);
}

static char *cpus_of(const struct cohort_node_plan *p, unsigned t, char *buf, size_t len)
{
    hwloc_bitmap_list_snprintf(buf, len, p->tasks[t].cpuset);
    return buf;
}

static char *numa_of(const struct cohort_node_plan *p, unsigned t, char *buf, size_t len)
{
    hwloc_bitmap_list_snprintf(buf, len, p->tasks[t].nodeset);
    return buf;
}

static void fixture_a100(void)
{
    struct cohort_topology *topo;
    struct cohort_err err;
    if (!ok(topology_load(FIXTURES "/dgx-a100.xml", false, &topo, &err) == 0,
            "dgx-a100 fixture loads"))
        return;
    static const char *numa[] = {"3", "3", "1", "1", "7", "7", "5", "5"};
    ok(topo->n_gpus == 8, "dgx-a100: 8 GPUs, NVSwitches not counted (%u)", topo->n_gpus);
    for (unsigned i = 0; i < topo->n_gpus && i < 8; i++) {
        char buf[64];
        hwloc_bitmap_list_snprintf(buf, sizeof buf, topo->gpus[i].nodeset);
        ok(strcmp(buf, numa[i]) == 0, "dgx-a100: GPU %u (%s) on NUMA %s (got %s)", i,
           topo->gpus[i].pci_id, numa[i], buf);
    }
    check_plan("dgx-a100", topo, 1, COHORT_MODE_TRAIN);
    check_plan("dgx-a100", topo, 2, COHORT_MODE_INFER);

    struct cohort_node_plan *p;
    struct cohort_step step;
    char b1[256], b2[64];
    /* Whole cores first: GPU0 and GPU1 share NUMA 3 (cores 48-63 + siblings). */
    if (plan_for(topo, 8, COHORT_MODE_TRAIN, NULL, &p, &step) == 0) {
        ok(strcmp(cpus_of(p, 0, b1, sizeof b1), "48-55,176-183") == 0,
           "dgx-a100: task 0 gets 8 whole cores of NUMA 3 (%s)", b1);
        ok(strcmp(cpus_of(p, 1, b1, sizeof b1), "56-63,184-191") == 0,
           "dgx-a100: task 1 the other 8 (%s)", b1);
        ok(p->tasks[0].omp_threads == 8, "dgx-a100: OMP_NUM_THREADS=8");
        plan_free(p);
    }
    step_free(&step);
    /* More GPUs than tasks: locality-grouped shares. */
    if (plan_for(topo, 2, COHORT_MODE_TRAIN, NULL, &p, &step) == 0) {
        ok(p->tasks[0].n_gpus == 4 && p->tasks[1].n_gpus == 4, "dgx-a100: 2 tasks get 4 GPUs each");
        ok(strcmp(numa_of(p, 0, b2, sizeof b2), "1,3") == 0,
           "dgx-a100: task 0's share is GPUs of NUMA 3 and 1 (%s)", b2);
        ok(strcmp(p->tasks[0].cuda_visible_devices, "0,4,1,2,3,5,6,7") == 0,
           "dgx-a100: CUDA_VISIBLE_DEVICES own GPUs first (%s)",
           p->tasks[0].cuda_visible_devices);
        plan_free(p);
    }
    step_free(&step);
    /* Tasks the user bound to CPUs get the free GPU closest to them. */
    if (plan_for(topo, 2, COHORT_MODE_INFER, "0x0000ffff,0xffff0000", &p, &step) == 0) {
        ok(p->tasks[0].cpus_from_user, "dgx-a100: user's binding kept");
        ok(strcmp(cpus_of(p, 0, b1, sizeof b1), "0-15") == 0, "dgx-a100: task 0 keeps 0-15 (%s)", b1);
        ok(strcmp(cpus_of(p, 1, b1, sizeof b1), "16-31") == 0, "dgx-a100: task 1 keeps 16-31 (%s)", b1);
        int near = 0;
        for (unsigned i = 0; i < p->tasks[1].n_gpus; i++)
            near |= p->tasks[1].gpus[i].topo == 2 || p->tasks[1].gpus[i].topo == 3;
        ok(near, "dgx-a100: task 1 (cores on NUMA 1) gets the share with NUMA 1's GPUs");
        plan_free(p);
    }
    step_free(&step);
    /* 8 tasks bound to NUMA 5,5,7,7,1,1,3,3: GPUs 6,7,4,5,2,3,0,1. */
    char masks[1024] = "";
    static const int numa_of_task[] = {5, 5, 7, 7, 1, 1, 3, 3};
    for (int t = 0; t < 8; t++) {
        size_t len = strlen(masks);
        snprintf(masks + len, sizeof masks - len, "%s0xffff", t ? "," : "");
        for (int z = 0; z < 4 * numa_of_task[t]; z++)
            strcat(masks, "0");
    }
    if (plan_for(topo, 8, COHORT_MODE_TRAIN, masks, &p, &step) == 0) {
        static const int want[] = {6, 7, 4, 5, 2, 3, 0, 1};
        int right = 1;
        for (int t = 0; t < 8; t++)
            right &= p->tasks[t].gpus[0].topo == want[t];
        ok(right, "dgx-a100: 8 bound tasks each get the free GPU of their NUMA node");
        ok(strcmp(p->tasks[0].cuda_visible_devices, "6,7,4,5,2,3,0,1") == 0 &&
               p->tasks[0].cuda_device == 0 && p->tasks[5].cuda_device == 5,
           "dgx-a100: device LOCAL_RANK is still the task's own GPU (%s)",
           p->tasks[0].cuda_visible_devices);
        plan_free(p);
    }
    step_free(&step);
    topology_free(topo);
}

static void fixture_h100(void)
{
    struct cohort_topology *topo;
    struct cohort_err err;
    if (!ok(topology_load(FIXTURES "/dgx-h100.xml", false, &topo, &err) == 0,
            "dgx-h100 fixture loads"))
        return;
    int right = topo->n_gpus == 8;
    for (unsigned i = 0; right && i < 8; i++)
        right &= hwloc_bitmap_isset(topo->gpus[i].nodeset, i < 4 ? 0 : 1) &&
                 hwloc_bitmap_weight(topo->gpus[i].nodeset) == 1;
    ok(right, "dgx-h100: GPUs 0-3 on NUMA 0, 4-7 on NUMA 1");
    check_plan("dgx-h100", topo, 1, COHORT_MODE_TRAIN);
    check_plan("dgx-h100", topo, 2, COHORT_MODE_INFER);
    /* More tasks than PUs overlap rather than fail. */
    struct cohort_node_plan *p;
    struct cohort_step step;
    ok(plan_for(topo, 300, COHORT_MODE_INFER, NULL, &p, &step) == 0 &&
           !hwloc_bitmap_iszero(p->tasks[299].cpuset),
       "dgx-h100: 300 tasks on 224 PUs still plan");
    plan_free(p);
    step_free(&step);
    topology_free(topo);
}

/* ../shared/topologies/GPU-NUMA-hwloc-2.9.txt: "[pci vendor:dev numa=N cpus=L ...]". */
static void shared_truth(const char *dir, const char *file, const struct cohort_topology *topo)
{
    char path[8192], line[8192];
    snprintf(path, sizeof path, "%s/GPU-NUMA-hwloc-2.9.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t flen = strlen(file);
    unsigned checked = 0, right = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, file, flen) != 0 || line[flen] != ':')
            continue;
        for (char *s = strchr(line, '['); s; s = strchr(s + 1, '[')) {
            char pci[32], ids[32], cpus[512];
            int numa;
            if (sscanf(s, "[%31s %31s numa=%d cpus=%511s", pci, ids, &numa, cpus) != 4 ||
                strncmp(ids, "10de:", 5) != 0)
                continue;
            for (unsigned g = 0; g < topo->n_gpus; g++) {
                if (strcmp(topo->gpus[g].pci_id, pci) != 0)
                    continue;
                char got[512];
                hwloc_bitmap_list_snprintf(got, sizeof got, topo->gpus[g].cpuset);
                checked++;
                right += hwloc_bitmap_isset(topo->gpus[g].nodeset, (unsigned)numa) &&
                         strcmp(got, cpus) == 0;
            }
        }
    }
    fclose(f);
    ok(checked > 0 && checked == right, "%s: %u/%u NVIDIA GPUs have the validated NUMA and CPUs",
       file, right, checked);
}

static void shared_topologies(void)
{
    const char *src = getenv("COHORT_SRCDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/../shared/topologies", src ? src : ".");
    DIR *d = opendir(dir);
    if (!d) {
        tap_skip("../shared/topologies not present beside the checkout");
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".xml") != 0)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct cohort_topology *topo;
        struct cohort_err err;
        if (!ok(topology_load(path, false, &topo, &err) == 0, "%s loads (%s)", e->d_name,
                err.msg))
            continue;
        if (topo->n_gpus == 0) {
            ok(1, "%s: no NVIDIA GPU (AMD node), nothing to map", e->d_name);
        } else {
            shared_truth(dir, e->d_name, topo);
            check_plan(e->d_name, topo, 1, COHORT_MODE_TRAIN);
            check_plan(e->d_name, topo, 2, COHORT_MODE_INFER);
        }
        if (strcmp(e->d_name, "psmgmt_topo.jrc0323.xml") == 0)
            ok(strcmp(topo->gpus[0].pci_id, "0000:03:00.0") == 0 &&
                   hwloc_bitmap_isset(topo->gpus[0].nodeset, 3) &&
                   hwloc_bitmap_isset(topo->gpus[1].nodeset, 1),
               "JURECA-DC: GPU 0 on NUMA 3, GPU 1 on NUMA 1 (GPU i is not on NUMA i)");
        topology_free(topo);
    }
    closedir(d);
}

int main(void)
{
    struct cohort_topology *topo;
    struct cohort_err err;
    ok(topology_load("/nonexistent.xml", false, &topo, &err) < 0 &&
           strstr(err.msg, "/nonexistent.xml"),
       "missing XML named: %s", err.msg);
    ok(topology_load(FIXTURES "/make-fixtures.py", false, &topo, &err) < 0 &&
           strstr(err.msg, "not an hwloc XML"),
       "non-XML named: %s", err.msg);
    fixture_a100();
    fixture_h100();
    shared_topologies();
    return tap_done();
}
