/* cohort_self.h - what libcohort's own modules beyond cohort.c (the work
 * queue, cohort_work.c) read of a joined handle: the step as the planner
 * described it, every rank's node, and the root's host; and a gather of
 * the blocks only some ranks give. Not exported
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

/* Collective: len bytes of every rank that gives some (mine NULL and len
 * 0: none), in *down (malloc'd, *down_len bytes) as entries [u32 rank][u32
 * len][bytes] in rank order, only of the ranks that gave some. 0, or -1
 * with c's error set. */
int cohort_self_gather(struct cohort *c, const void *mine, size_t len, uint8_t **down,
                       uint32_t *down_len);

#endif
