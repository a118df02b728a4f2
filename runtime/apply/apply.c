/* apply.c - CPU/memory binding and variable walking for a task plan. */
#include "apply.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int membind_parse(const char *text, enum membind_policy *out, struct cohort_err *err)
{
    if (strcmp(text, "bind") == 0)
        *out = MEMBIND_BIND;
    else if (strcmp(text, "interleave") == 0)
        *out = MEMBIND_INTERLEAVE;
    else if (strcmp(text, "none") == 0)
        *out = MEMBIND_NONE;
    else
        return cohort_fail(err, "memory binding '%s' is not one of bind, interleave, none",
                           text);
    return 0;
}

int apply_binding(const struct cohort_topology *topo, const struct cohort_task_plan *t,
                  enum membind_policy mem, char *note, size_t note_len,
                  struct cohort_err *err)
{
    note[0] = '\0';
    if (!topo->this_system) {
        snprintf(note, note_len, "%s; no binding",
                 topo->not_this_machine[0] ? topo->not_this_machine
                                           : "the topology is not this machine's");
        return 1;
    }
    hwloc_const_bitmap_t here = hwloc_topology_get_allowed_cpuset(topo->topo);
    if (!hwloc_bitmap_isincluded(t->cpuset, here)) {
        char want[512], have[512];
        hwloc_bitmap_list_snprintf(want, sizeof want, t->cpuset);
        hwloc_bitmap_list_snprintf(have, sizeof have, here);
        snprintf(note, note_len,
                 "planned CPUs %s are not all among the CPUs %s this task may use; no "
                 "binding",
                 want, have);
        return 1;
    }
    if (hwloc_set_cpubind(topo->topo, t->cpuset, HWLOC_CPUBIND_PROCESS) < 0)
        return cohort_fail(err, "binding to CPUs failed: %s", strerror(errno));
    /* With one NUMA node there is nothing to choose: leave the policy alone. */
    if (mem == MEMBIND_NONE || hwloc_bitmap_iszero(t->nodeset) ||
        hwloc_get_nbobjs_by_type(topo->topo, HWLOC_OBJ_NUMANODE) <= 1)
        return 0;
    hwloc_membind_policy_t pol =
        mem == MEMBIND_INTERLEAVE ? HWLOC_MEMBIND_INTERLEAVE : HWLOC_MEMBIND_BIND;
    if (hwloc_set_membind(topo->topo, t->nodeset, pol,
                          HWLOC_MEMBIND_PROCESS | HWLOC_MEMBIND_BYNODESET) < 0)
        return cohort_fail(err, "binding memory to NUMA nodes failed: %s", strerror(errno));
    return 0;
}

int apply_env(const struct cohort_task_plan *t,
              int (*set)(const char *name, const char *value, void *ctx), void *ctx)
{
    for (size_t i = 0; i < t->env.n; i++) {
        int rc = set(t->env.names[i], t->env.values[i], ctx);
        if (rc)
            return rc;
    }
    return 0;
}
