/* nccl_check.c - one rank of an NCCL test: cohort_init, cohort_nccl_init
 * (world and node-local communicators), an allreduce of rank + 1 over the
 * world. Prints "rank R: allreduce S (expected E)" or "rank R: FAIL: <the
 * cohort message>". */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "cohort_nccl.h"

int main(void)
{
    struct cohort *c;
    if (cohort_init(&c, NULL) != 0) {
        printf("rank ?: FAIL: %s\n", cohort_error(c));
        return 1;
    }
    int rank = cohort_rank(c), size = cohort_size(c);
    ncclComm_t world, local;
    struct cohort_nccl_opts opts = {.local = &local};
    if (cohort_nccl_init(c, &world, &opts) != 0) {
        printf("rank %d: FAIL: %s\n", rank, cohort_error(c));
        cohort_finalize(c);
        return 1;
    }
    float *buf, value = (float)(rank + 1);
    cudaMalloc((void **)&buf, sizeof *buf);
    cudaMemcpy(buf, &value, sizeof value, cudaMemcpyHostToDevice);
    ncclResult_t r = ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, world, 0);
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
