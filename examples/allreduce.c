/* allreduce.c - an NCCL allreduce over every GPU of a Slurm step, with
 * cohort instead of MPI: cohort_init joins the step's bootstrap,
 * cohort_nccl_init makes the communicator on each task's planned GPU.
 *
 *   cc -o allreduce allreduce.c $(pkg-config --cflags --libs cohort) \
 *      -lcohort-nccl -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lnccl -lcudart
 *   srun -N2 --ntasks-per-node=8 --gres=gpu:8 --cohort=train ./allreduce
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include <cohort_nccl.h>

int main(void)
{
    struct cohort *c;
    ncclComm_t comm;
    if (cohort_init(&c, NULL) != 0 || cohort_nccl_init(c, &comm, NULL) != 0) {
        fprintf(stderr, "%s\n", cohort_error(c));
        cohort_finalize(c);
        return 1;
    }
    int rank = cohort_rank(c), size = cohort_size(c);
    const size_t n = 1 << 24; /* 64 MiB of floats */
    float *buf, first = -1;
    cudaMalloc((void **)&buf, n * sizeof *buf);
    float *host = malloc(n * sizeof *host);
    for (size_t i = 0; i < n; i++)
        host[i] = (float)rank;
    cudaMemcpy(buf, host, n * sizeof *buf, cudaMemcpyHostToDevice);
    ncclResult_t r = ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, 0);
    cudaError_t e = cudaStreamSynchronize(0);
    if (e == cudaSuccess)
        e = cudaMemcpy(&first, buf, sizeof first, cudaMemcpyDeviceToHost);
    double expected = size * (size - 1) / 2.0;
    int ok = r == ncclSuccess && e == cudaSuccess && first == expected;
    if (!ok)
        fprintf(stderr, "rank %d: allreduce failed: %s, %s, %g (expected %g)\n", rank,
                ncclGetErrorString(r), cudaGetErrorString(e), first, expected);
    else if (rank == 0)
        printf("allreduce over %d ranks: %g (expected %g)\n", size, first, expected);
    free(host);
    cudaFree(buf);
    ncclCommDestroy(comm);
    cohort_finalize(c);
    return !ok;
}
