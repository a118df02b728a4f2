/* pmix_boot.h - the bootstrap through the job's own PMIx server, under
 * `srun --mpi=pmix`: an exchange is a put of this rank's block, a commit, a
 * fence that collects the data (the deadline is PMIx's timeout) and the
 * gets of the blocks wanted. Same result format as tree_exchange(). */
#ifndef COHORT_PMIX_BOOT_H
#define COHORT_PMIX_BOOT_H

#include <stdint.h>

#include "error.h"

struct pmix_boot;

/* PMIx_Init; fails unless PMIx's rank is expect_rank (SLURM_PROCID). */
int pmix_boot_open(uint32_t expect_rank, uint32_t size, int timeout_s, struct pmix_boot **out,
                   struct cohort_err *err);

/* Contributes len bytes; *down gets [u32 rank][u32 len][bytes] for every
 * rank with a non-empty block (only only_rank's when it is not UINT32_MAX). */
int pmix_boot_exchange(struct pmix_boot *b, const void *mine, uint32_t len,
                       uint32_t only_rank, const char *what, uint8_t **down,
                       uint32_t *down_len, struct cohort_err *err);

/* The PMIx timeout of later exchanges. */
void pmix_boot_set_timeout(struct pmix_boot *b, int timeout_s);

void pmix_boot_close(struct pmix_boot *b);

#endif
