/* plan_format.h - printing a node plan: a readable table, NAME=VALUE lines,
 * or JSON ({"tasks": [...], "notes": [...]}) for scripts and tests. */
#ifndef COHORT_PLAN_FORMAT_H
#define COHORT_PLAN_FORMAT_H

#include <stdio.h>

#include "mps_plan.h"
#include "plan.h"

enum plan_format { PLAN_TABLE, PLAN_JSON, PLAN_ENV };

int plan_format_parse(const char *text, enum plan_format *out, struct cohort_err *err);

/* Prints tasks [first, first+count) of the plan; with mps (NULL: not
 * asked), whether the node's tasks run under a step's MPS daemon (table
 * and JSON). */
int plan_print(FILE *out, enum plan_format fmt, const struct cohort_node_plan *p,
               const struct cohort_topology *topo, uint32_t first, uint32_t count,
               const struct mps_verdict *mps);

#endif
