/* nccl_check.c - one rank of an NCCL test: cohort_init, cohort_nccl_init
 * (world and node-local communicators), an allreduce of rank + 1 over the
 * world. NCCL_CHECK_RANKS_PER_ROOT sets ranks_per_root (several roots with
 * few ranks), NCCL_CHECK_TIMEOUT the NCCL deadline in seconds,
 * NCCL_CHECK_NONBLOCKING=1 asks for non-blocking communicators (the
 * allreduce is then polled until enqueued).
 * NCCL_CHECK_SKIP_RANK=R: rank R takes part in cohort_nccl_init's two
 * exchanges (device check, unique ids) but never starts NCCL, so the others'
 * init runs into its deadline; R then waits in a barrier until they leave.
 * Prints "rank R: allreduce S (expected E)" or "rank R: FAIL: <the cohort
 * message>". */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "cohort_nccl.h"

int main(void)
{
    struct cohort *c;
    if (cohort_init(&c, NULL) != 0) {
        printf("rank ?: FAIL: %s\n", cohort_error(c));
        return 1;
    }
    int rank = cohort_rank(c), size = cohort_size(c);
    const char *skip = getenv("NCCL_CHECK_SKIP_RANK");
    if (skip && atoi(skip) == rank) {
        int have = 1;
        int *all = calloc((size_t)size, sizeof *all);
        ncclUniqueId none = {{0}}, *ids = calloc((size_t)size, sizeof *ids);
        int ok = all && ids && cohort_allgather(c, &have, sizeof have, all) == 0 &&
                 cohort_allgather(c, &none, sizeof none, ids) == 0;
        printf("rank %d: skipped NCCL (%s)\n", rank,
               ok && cohort_barrier(c) != 0 ? cohort_error(c) : "exchanges failed");
        free(all);
        free(ids);
        cohort_finalize(c);
        return 0;
    }
    ncclComm_t world, local;
    const char *per_root = getenv("NCCL_CHECK_RANKS_PER_ROOT");
    const char *timeout = getenv("NCCL_CHECK_TIMEOUT");
    struct cohort_nccl_opts opts = {.size = sizeof opts,
                                    .local = &local,
                                    .ranks_per_root = per_root ? atoi(per_root) : 0,
                                    .timeout_s = timeout ? atoi(timeout) : 0,
                                    .nonblocking = getenv("NCCL_CHECK_NONBLOCKING") != NULL};
    if (cohort_nccl_init(c, &world, &opts) != 0) {
        printf("rank %d: FAIL: %s\n", rank, cohort_error(c));
        cohort_finalize(c);
        return 1;
    }
    float *buf, value = (float)(rank + 1);
    cudaMalloc((void **)&buf, sizeof *buf);
    cudaMemcpy(buf, &value, sizeof value, cudaMemcpyHostToDevice);
    ncclResult_t r = ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, world, 0);
    while (opts.nonblocking && r == ncclInProgress)
        ncclCommGetAsyncError(world, &r);
    cudaStreamSynchronize(0);
    cudaMemcpy(&value, buf, sizeof value, cudaMemcpyDeviceToHost);
    printf("rank %d: allreduce %g (expected %g)%s\n", rank, value, size * (size + 1) / 2.0,
           r == ncclSuccess ? "" : " FAIL: ncclAllReduce failed");
    cudaFree(buf);
    ncclCommDestroy(local);
    ncclCommDestroy(world);
    cohort_finalize(c);
    return r != ncclSuccess;
}
