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
 * the deadline. That split has no deadline of its own: it runs only once
 * every rank's NCCL is connected. With nonblocking set they are the
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

struct cohort_nccl_opts {
    int timeout_s;       /* 0: the cohort's (COHORT_TIMEOUT, else 120) */
    int ranks_per_root;  /* 0: 128; one unique id per this many ranks */
    ncclComm_t *local;   /* when not NULL: also a communicator of this node's
                            tasks (ncclCommSplit by node) */
    int nonblocking;     /* 1: return non-blocking communicators (see above) */
};

/* Returns 0 with *world (and *opts->local) ready, or -1 with the reason in
 * cohort_error(c) (e.g. "no CUDA device ..."). */
int cohort_nccl_init(struct cohort *c, ncclComm_t *world, const struct cohort_nccl_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
