/* cohort_self.h - what libcohort's own modules beyond cohort.c (the work
 * queue, cohort_work.c) read of a joined handle: the step as the planner
 * described it, every rank's node, and the root's host. Not exported
 * (cohort.map): no program outside libcohort sees it. */
#ifndef COHORT_SELF_H
#define COHORT_SELF_H

#include <stdint.h>

#include "cohort.h"
#include "step.h"

struct cohort_self {
    const struct cohort_step *step; /* job, step, rank, nodes, ... */
    const uint32_t *rank_node;      /* every rank's node index */
    const char *master;             /* MASTER_ADDR: rank 0's host */
};

/* Fills s from c. 0, or -1 (with c's error set, COHORT_ERR_USAGE) when c
 * has not joined the step (its cohort_init failed). */
int cohort_self(struct cohort *c, const char *func, struct cohort_self *s);

#endif
