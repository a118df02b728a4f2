/* tasks_per_node.h - Slurm's compressed count lists such as "2(x3),1".
 * Used by SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE and
 * SLURM_JOB_CPUS_PER_NODE. */
#ifndef COHORT_TASKS_PER_NODE_H
#define COHORT_TASKS_PER_NODE_H

#include <stdint.h>

#include "error.h"

/* Expands text into *counts (malloc'd, *n entries). At most max_entries
 * entries are accepted; every count must be at least 1. name is the variable
 * the text came from, used in the error message. */
int tasks_per_node_parse(const char *name, const char *text, uint32_t max_entries,
                         uint32_t **counts, uint32_t *n, struct cohort_err *err);

#endif
