/* nccl_init.c - one rank of bench/nccl-init.sh: after cohort_init, CUDA's
 * own start on device 0 and a barrier (all outside the timed part), makes
 * the world communicator one way, timed, then times the first allreduce
 * (one float, from its call until the stream is done) and checks it:
 *   cohort      cohort_nccl_init, its defaults (blocking communicators)
 *   cohort-nb   cohort_nccl_init with nonblocking=1 (the allreduce polled)
 *   bare        rank 0's ncclGetUniqueId broadcast over cohort, then a
 *               blocking ncclCommInitRank (what PyTorch's eager init does)
 * Prints "rank R/N MODE: init MS first_allreduce MS allreduce OK|BAD" or
 * "rank R/N MODE: FAIL: why"; rank 0 first prints "nccl X.Y.Z", the NCCL it runs with. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cohort_nccl.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The world communicator made as mode says; 0, or -1 with why filled. */
static int make_world(struct cohort *c, const char *mode, ncclComm_t *world, char *why,
                      size_t len)
{
    if (!strcmp(mode, "cohort") || !strcmp(mode, "cohort-nb")) {
        struct cohort_nccl_opts o = COHORT_NCCL_OPTS_INIT;
        o.nonblocking = !strcmp(mode, "cohort-nb");
        if (cohort_nccl_init(c, world, &o) == 0)
            return 0;
        snprintf(why, len, "%s", cohort_error(c));
        return -1;
    }
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    memset(&id, 0, sizeof id);
    if (cohort_rank(c) == 0)
        r = ncclGetUniqueId(&id);
    if (cohort_bcast(c, &id, sizeof id, 0) != 0) {
        snprintf(why, len, "%s", cohort_error(c));
        return -1;
    }
    if (r == ncclSuccess)
        r = ncclCommInitRank(world, cohort_size(c), id, cohort_rank(c));
    if (r == ncclSuccess)
        return 0;
    snprintf(why, len, "NCCL: %s", ncclGetErrorString(r));
    return -1;
}

/* One allreduce of rank + 1 over world, polled while it is in progress (a
 * non-blocking communicator); 1 when every rank's sum came back. */
static int first_allreduce(struct cohort *c, ncclComm_t world)
{
    float *buf, v = (float)(cohort_rank(c) + 1);
    int n = cohort_size(c);
    if (cudaMalloc((void **)&buf, sizeof *buf) != cudaSuccess)
        return 0;
    cudaMemcpy(buf, &v, sizeof v, cudaMemcpyHostToDevice);
    ncclResult_t r = ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, world, 0);
    while (r == ncclInProgress)
        ncclCommGetAsyncError(world, &r);
    cudaStreamSynchronize(0);
    cudaMemcpy(&v, buf, sizeof v, cudaMemcpyDeviceToHost);
    cudaFree(buf);
    return r == ncclSuccess && v == n * (n + 1) / 2.0f;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "cohort";
    struct cohort *c;
    if (strcmp(mode, "cohort") && strcmp(mode, "cohort-nb") && strcmp(mode, "bare")) {
        fprintf(stderr, "nccl_init: unknown mode '%s': use cohort, cohort-nb or bare\n", mode);
        return 2;
    }
    if (cohort_init(&c, NULL) != 0) {
        printf("rank ?/? %s: FAIL: %s\n", mode, cohort_error(c));
        return 1;
    }
    int rank = cohort_rank(c), size = cohort_size(c), version = 0;
    if (rank == 0 && ncclGetVersion(&version) == ncclSuccess)
        printf("nccl %d.%d.%d\n", version / 10000, version / 100 % 100, version % 100);
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
        printf("rank %d/%d %s: FAIL: no CUDA device 0\n", rank, size, mode);
        return 1;
    }
    cohort_barrier(c);
    ncclComm_t world = NULL;
    char why[512];
    double t0 = now_ms();
    if (make_world(c, mode, &world, why, sizeof why) != 0) {
        printf("rank %d/%d %s: FAIL: %s\n", rank, size, mode, why);
        cohort_finalize(c);
        return 1;
    }
    double t1 = now_ms();
    int ok = first_allreduce(c, world);
    double t2 = now_ms();
    printf("rank %d/%d %s: init %.1f first_allreduce %.1f allreduce %s\n", rank, size, mode,
           t1 - t0, t2 - t1, ok ? "OK" : "BAD");
    ncclCommDestroy(world);
    cohort_finalize(c);
    return !ok;
}
