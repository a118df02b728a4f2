/* cohort_internal.h - what libcohort-nccl needs of libcohort beyond the
 * public API: recording an error on c, and c's per-call timeout. Exported
 * from libcohort, not part of the public API. */
#ifndef COHORT_INTERNAL_H
#define COHORT_INTERNAL_H

#include "cohort.h"

int cohort_internal_fail(struct cohort *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int cohort_internal_timeout_s(const struct cohort *c);

#endif
