/* cohort_nccl.h - NCCL communicators for a cohort step (libcohort-nccl,
 * built where CUDA and NCCL are found). Link with -lcohort-nccl -lcohort.
 *
 * cohort_nccl_init() selects the task's GPU (the one the cohort plugin
 * planned: the PCI bus id in COHORT_GPUS; else LOCAL_RANK among the visible
 * devices), makes the world communicator - rank 0 creates the unique id and
 * cohort broadcasts it; above ranks_per_root ranks, several roots with
 * ncclCommInitRankScalable - initialising non-blocking and polling it until
 * the deadline, then ncclCommAbort. Collective over the step.
 *
 * The communicators returned are blocking, as NCCL's usual ones: they are
 * split (ncclCommSplit, sharing resources) off the one that came up within
 * the deadline, as NCCL fixes whether a communicator blocks when it is
 * made, and only a non-blocking init can be aborted. The one they were
 * split off is released on a thread of its own: cohort_nccl_init returns
 * without waiting for it, and at exit the process waits for it (at most
 * the timeout). With nonblocking set they are the
 * non-blocking ones themselves: then any NCCL call on them may return
 * ncclInProgress, and the caller polls ncclCommGetAsyncError before using
 * its result (NCCL's rules for non-blocking communicators). */
#ifndef COHORT_NCCL_H
#define COHORT_NCCL_H

#include <nccl.h>

#include "cohort.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options of cohort_nccl_init, grown as struct cohort_opts is (cohort.h):
 * size first, set to sizeof(struct cohort_nccl_opts), best through
 * COHORT_NCCL_OPTS_INIT; members added later come at the end, and the
 * library reads only those that fit in size. A size below the first
 * version's, or above this library's with non-zero bytes past its members,
 * fails with COHORT_ERR_USAGE.
 *   ncclComm_t world, local;
 *   struct cohort_nccl_opts o = COHORT_NCCL_OPTS_INIT;
 *   o.local = &local;
 *   cohort_nccl_init(c, &world, &o); */
struct cohort_nccl_opts {
    size_t size;         /* sizeof(struct cohort_nccl_opts) */
    int timeout_s;       /* 0: the cohort's (COHORT_TIMEOUT, else 120) */
    int ranks_per_root;  /* 0: 128; one unique id per this many ranks */
    ncclComm_t *local;   /* when not NULL: also a communicator of this node's
                            tasks (ncclCommSplit by node) */
    int nonblocking;     /* 1: return non-blocking communicators (see above) */
};
#define COHORT_NCCL_OPTS_INIT {sizeof(struct cohort_nccl_opts), 0, 0, NULL, 0}

/* Returns 0 with *world (and *opts->local) ready, or -1 with the reason in
 * cohort_error(c) (e.g. "no CUDA device ...") and its code in
 * cohort_error_code(c): COHORT_ERR_NCCL when CUDA or NCCL failed,
 * COHORT_ERR_TIMEOUT when the communicator did not come up by the
 * deadline, else the bootstrap's. opts may be NULL: the defaults. */
int cohort_nccl_init(struct cohort *c, ncclComm_t *world, const struct cohort_nccl_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
