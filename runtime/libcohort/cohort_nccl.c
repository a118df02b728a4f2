/* cohort_nccl.c - NCCL communicators with a deadline (cohort_nccl.h). */
#include "cohort_nccl.h"

#include <cuda_runtime_api.h>
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

/* Polls a non-blocking NCCL init until it is done or the deadline passes. */
static int wait_comm(struct cohort *c, ncclComm_t comm, long long deadline, const char *what)
{
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) {
        if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
            state = ncclInternalError;
        if (state == ncclInProgress && now_ms() > deadline) {
            ncclCommAbort(comm);
            return cohort_internal_fail(c, "cohort: the NCCL %s communicator did not come up "
                                           "within %d s on rank %d; aborted",
                                        what, cohort_internal_timeout_s(c), cohort_rank(c));
        }
        if (state == ncclInProgress) {
            struct timespec ts = {0, 1000000L}; /* NCCL offers no wait: poll each ms */
            nanosleep(&ts, NULL);
        }
    }
    if (state != ncclSuccess) {
        ncclCommAbort(comm);
        return cohort_internal_fail(c, "cohort: NCCL %s communicator failed on rank %d: %s",
                                    what, cohort_rank(c), ncclGetErrorString(state));
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
    if (nroots > 1)
        r = ncclCommInitRankScalable(world, size, rank, nroots, root_ids, &config);
    else
        r = ncclCommInitRankConfig(world, size, root_ids[0], rank, &config);
    free(root_ids);
    if (r != ncclSuccess && r != ncclInProgress) {
        cohort_internal_fail(c, "cohort: NCCL init failed on rank %d: %s", rank,
                             ncclGetErrorString(r));
        goto out;
    }
    if (wait_comm(c, *world, deadline, "world") < 0) {
        *world = NULL;
        goto out;
    }
    if (opts && opts->local) {
        *opts->local = NULL;
        r = ncclCommSplit(*world, cohort_node_rank(c), cohort_local_rank(c), opts->local,
                          &config);
        if ((r != ncclSuccess && r != ncclInProgress) ||
            wait_comm(c, *opts->local, now_ms() + (long long)secs * 1000, "node-local") < 0) {
            if (r != ncclSuccess && r != ncclInProgress)
                cohort_internal_fail(c, "cohort: ncclCommSplit failed on rank %d: %s", rank,
                                     ncclGetErrorString(r));
            *opts->local = NULL;
            ncclCommAbort(*world);
            *world = NULL;
            goto out;
        }
    }
    rc = 0;
out:
    free(all);
    free(ids);
    return rc;
}
