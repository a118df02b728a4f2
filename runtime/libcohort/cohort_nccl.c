/* cohort_nccl.c - NCCL communicators with a deadline (cohort_nccl.h). */
#include "cohort_nccl.h"

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cohort_internal.h"

#define DEFAULT_RANKS_PER_ROOT 128

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The task's planned GPU: COHORT_GPUS' first PCI id, else LOCAL_RANK. */
static int select_device(struct cohort *c)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        return cohort_internal_fail(
            c, "cohort: no CUDA device for rank %d (cudaGetDeviceCount: %s); check "
               "--gres=gpu and CUDA_VISIBLE_DEVICES='%s'",
            cohort_rank(c), e != cudaSuccess ? cudaGetErrorString(e) : "0 devices",
            getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "");
    int dev = cohort_local_rank(c) % count;
    const char *gpus = getenv("COHORT_GPUS");
    if (gpus && *gpus && strncmp(gpus, "unknown", 7) != 0) {
        char pci[32];
        size_t n = strcspn(gpus, ",");
        snprintf(pci, sizeof pci, "%.*s", (int)(n < sizeof pci ? n : sizeof pci - 1), gpus);
        if (cudaDeviceGetByPCIBusId(&dev, pci) != cudaSuccess)
            return cohort_internal_fail(c, "cohort: the planned GPU %s (COHORT_GPUS) is not "
                                           "visible to rank %d",
                                        pci, cohort_rank(c));
    }
    if ((e = cudaSetDevice(dev)) != cudaSuccess)
        return cohort_internal_fail(c, "cohort: cudaSetDevice(%d) failed on rank %d: %s", dev,
                                    cohort_rank(c), cudaGetErrorString(e));
    return 0;
}

/* Polls a non-blocking communicator's state until its last operation is
 * over or the deadline passes (then ncclInProgress). */
static ncclResult_t poll_state(ncclComm_t comm, long long deadline)
{
    ncclResult_t state = ncclInProgress;
    for (;;) {
        if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
            return ncclInternalError;
        if (state != ncclInProgress || now_ms() > deadline)
            return state;
        struct timespec ts = {0, 1000000L}; /* NCCL offers no wait: poll each ms */
        nanosleep(&ts, NULL);
    }
}

/* Waits for a non-blocking communicator to be ready (its init or split, or
 * its parent's part in a split) until the deadline, secs after the start.
 * On failure the caller aborts it. */
static int wait_comm(struct cohort *c, ncclComm_t comm, long long deadline, int secs,
                     const char *what)
{
    ncclResult_t state = poll_state(comm, deadline);
    if (state == ncclInProgress)
        return cohort_internal_fail(c, "cohort: the NCCL %s communicator did not come up "
                                       "within %d s on rank %d; aborted",
                                    what, secs, cohort_rank(c));
    if (state != ncclSuccess)
        return cohort_internal_fail(c, "cohort: NCCL %s communicator failed on rank %d: %s (%s)",
                                    what, cohort_rank(c), ncclGetErrorString(state),
                                    ncclGetLastError(comm));
    return 0;
}

/* Frees a non-blocking communicator that is no longer needed: finalize,
 * polled to the deadline, then destroy (abort when finalizing failed). */
static void release_comm(ncclComm_t comm, long long deadline)
{
    ncclResult_t state = ncclCommFinalize(comm);
    if (state == ncclInProgress)
        state = poll_state(comm, deadline);
    if (state == ncclSuccess)
        ncclCommDestroy(comm);
    else
        ncclCommAbort(comm);
}

/* The communicators handed to the caller, split off the non-blocking one
 * that came up within the deadline: blocking ones (NCCL calls behave as
 * usual) sharing its resources, or non-blocking ones polled to the
 * deadline. The parent takes part in the split as a non-blocking operation
 * of its own: it is waited for too. On failure *out is aborted and NULL;
 * the caller aborts the parent. */
static int split_comm(struct cohort *c, ncclComm_t from, int color, int key, ncclComm_t *out,
                      bool blocking, long long deadline, int secs, const char *what)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = blocking;
    config.splitShare = 1;
    *out = NULL;
    ncclResult_t r = ncclCommSplit(from, color, key, out, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
        cohort_internal_fail(c, "cohort: ncclCommSplit (%s) failed on rank %d: %s (%s)", what,
                             cohort_rank(c), ncclGetErrorString(r), ncclGetLastError(from));
        if (*out)
            ncclCommAbort(*out);
        *out = NULL;
        return -1;
    }
    if (wait_comm(c, from, deadline, secs, what) < 0 || !*out ||
        (!blocking && wait_comm(c, *out, deadline, secs, what) < 0)) {
        if (!*out)
            cohort_internal_fail(c, "cohort: ncclCommSplit (%s) gave no communicator on rank %d",
                                 what, cohort_rank(c));
        else
            ncclCommAbort(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int cohort_nccl_init(struct cohort *c, ncclComm_t *world, const struct cohort_nccl_opts *opts)
{
    *world = NULL;
    int secs = opts && opts->timeout_s > 0 ? opts->timeout_s : cohort_internal_timeout_s(c);
    int per_root = opts && opts->ranks_per_root > 0 ? opts->ranks_per_root
                                                    : DEFAULT_RANKS_PER_ROOT;
    int rank = cohort_rank(c), size = cohort_size(c);
    int nroots = (size + per_root - 1) / per_root;
    /* Every rank learns whether every rank has a device before any waits
     * in NCCL for the others. */
    int have = select_device(c) == 0;
    int *all = malloc(sizeof *all * (size_t)size);
    ncclUniqueId *ids = malloc(sizeof *ids * (size_t)size);
    int rc = -1;
    if (!all || !ids) {
        cohort_internal_fail(c, "cohort: out of memory");
        goto out;
    }
    char mine_err[512];
    snprintf(mine_err, sizeof mine_err, "%s", have ? "" : cohort_error(c));
    if (cohort_allgather(c, &have, sizeof have, all) != 0)
        goto out;
    for (int r = 0; r < size; r++)
        if (!all[r]) {
            if (have)
                cohort_internal_fail(c, "cohort: rank %d has no usable CUDA device; no NCCL "
                                        "communicator",
                                     r);
            else
                cohort_internal_fail(c, "%s", mine_err);
            goto out;
        }
    /* Roots: ranks r * size / nroots. Each makes an id; all gather them. */
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    int is_root = 0;
    for (int k = 0; k < nroots; k++)
        is_root |= rank == (int)((long long)k * size / nroots);
    ncclResult_t r;
    if (is_root && (r = ncclGetUniqueId(&id)) != ncclSuccess) {
        cohort_internal_fail(c, "cohort: ncclGetUniqueId failed on rank %d: %s", rank,
                             ncclGetErrorString(r));
        /* the others learn it from the allgather below: an all-zero id */
    }
    if (cohort_allgather(c, &id, sizeof id, ids) != 0)
        goto out;
    ncclUniqueId *root_ids = malloc(sizeof *root_ids * (size_t)nroots);
    if (!root_ids) {
        cohort_internal_fail(c, "cohort: out of memory");
        goto out;
    }
    static const ncclUniqueId zero;
    int bad_root = -1;
    for (int k = 0; k < nroots; k++) {
        int at = (int)((long long)k * size / nroots);
        root_ids[k] = ids[at];
        if (memcmp(&ids[at], &zero, sizeof zero) == 0)
            bad_root = at;
    }
    if (bad_root >= 0) {
        free(root_ids);
        cohort_internal_fail(c, "cohort: rank %d could not create an NCCL unique id", bad_root);
        goto out;
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    long long deadline = now_ms() + (long long)secs * 1000;
    ncclComm_t first = NULL;
    if (nroots > 1)
        r = ncclCommInitRankScalable(&first, size, rank, nroots, root_ids, &config);
    else
        r = ncclCommInitRankConfig(&first, size, root_ids[0], rank, &config);
    free(root_ids);
    if (r != ncclSuccess && r != ncclInProgress) {
        cohort_internal_fail(c, "cohort: NCCL init failed on rank %d: %s (%s)", rank,
                             ncclGetErrorString(r), ncclGetLastError(first));
        if (first)
            ncclCommAbort(first);
        goto out;
    }
    if (wait_comm(c, first, deadline, secs, "world") < 0) {
        ncclCommAbort(first);
        goto out;
    }
    bool blocking = !(opts && opts->nonblocking);
    if (blocking && split_comm(c, first, 0, rank, world, true, deadline, secs, "world") < 0) {
        ncclCommAbort(first);
        goto out;
    }
    if (!blocking)
        *world = first;
    if (opts && opts->local &&
        split_comm(c, first, cohort_node_rank(c), cohort_local_rank(c), opts->local, blocking,
                   deadline, secs, "node-local") < 0) {
        if (blocking)
            ncclCommAbort(*world);
        ncclCommAbort(first);
        *world = NULL;
        goto out;
    }
    if (blocking)
        release_comm(first, deadline);
    rc = 0;
out:
    free(all);
    free(ids);
    return rc;
}
