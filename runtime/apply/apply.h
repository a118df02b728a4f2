/* apply.h - applying one task's plan to the calling process: CPU and memory
 * binding through hwloc. Setting variables is left to the shell (setenv in
 * cohort-launch, spank_setenv in the plugin): apply_env() walks them. */
#ifndef COHORT_APPLY_H
#define COHORT_APPLY_H

#include <stdbool.h>
#include <stddef.h>

#include "plan.h"

enum membind_policy {
    MEMBIND_BIND,       /* allocate only on the GPU's NUMA node(s) */
    MEMBIND_INTERLEAVE, /* interleave over them */
    MEMBIND_NONE,       /* leave memory policy alone */
};

int membind_parse(const char *text, enum membind_policy *out, struct cohort_err *err);

/* Binds the calling process to t's CPUs and memory (memory only where there
 * is more than one NUMA node). Returns 0 when bound;
 * 1 when binding does not apply here (the topology is not this machine's,
 * or names CPUs this process may not use), with note saying why; -1 with
 * err when the system refused a binding (e.g. no NUMA support). */
int apply_binding(const struct cohort_topology *topo, const struct cohort_task_plan *t,
                  enum membind_policy mem, char *note, size_t note_len,
                  struct cohort_err *err);

/* Calls set(name, value, ctx) for every variable the plan sets. Returns the
 * first non-zero value set returned. */
int apply_env(const struct cohort_task_plan *t,
              int (*set)(const char *name, const char *value, void *ctx), void *ctx);

#endif
