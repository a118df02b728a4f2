/* nccl_standin.c - a stand-in for the CUDA runtime and NCCL calls that
 * cohort_nccl.c and nccl_check.c make, so that cohort_nccl_init's sequence
 * of NCCL calls can be tested where there is no GPU (tests/nccl.sh, through
 * tests/bootstrap/nccl_seq, which links it in place of libcudart and
 * libnccl). It checks no GPU code: it prints one line per communicator
 * call ("standin rank R: WHAT (caller)" or "(other thread)": whether the
 * thread that first initialised NCCL made it), and at exit how many of its
 * communicators were never destroyed or aborted. Its non-blocking
 * communicators come up after a few polls of ncclCommGetAsyncError, its
 * blocking ones at once; with NCCL_STANDIN_HANG=1 a non-blocking init
 * never comes up (a rank that never joins). */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLLS 3 /* polls before a non-blocking operation is over */

struct ncclComm {
    int id, blocking, polls; /* polls < 0: never over */
    ncclResult_t state;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t caller;
static int have_caller, next_id = 1, live;

/* Prints one line about a call, naming the thread that made it. */
__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *rank = getenv("SLURM_PROCID");
    pthread_mutex_lock(&lock);
    printf("standin rank %s: %s (%s)\n", rank ? rank : "?", what,
           have_caller && pthread_equal(caller, pthread_self()) ? "caller" : "other thread");
    fflush(stdout);
    pthread_mutex_unlock(&lock);
}

static void report_live(void)
{
    note("%d communicators left", live);
}

/* Registered before any exit handler of the code under test, so run after
 * them all. */
__attribute__((constructor)) static void watch_exit(void)
{
    atexit(report_live);
}

/* A new communicator; an operation on it is over at once when blocking,
 * else after POLLS polls (never with hang set). */
static struct ncclComm *comm_new(int blocking, int hang)
{
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    pthread_mutex_lock(&lock);
    if (!have_caller) {
        caller = pthread_self();
        have_caller = 1;
    }
    c->id = next_id++;
    live++;
    pthread_mutex_unlock(&lock);
    c->blocking = blocking;
    c->polls = blocking ? 0 : hang ? -1 : POLLS;
    c->state = c->polls ? ncclInProgress : ncclSuccess;
    return c;
}

/* Starts an operation on c: over at once when blocking, else polled. */
static ncclResult_t comm_start(struct ncclComm *c)
{
    c->polls = c->blocking ? 0 : POLLS;
    c->state = c->polls ? ncclInProgress : ncclSuccess;
    return c->state;
}

static void comm_free(struct ncclComm *c)
{
    pthread_mutex_lock(&lock);
    live--;
    pthread_mutex_unlock(&lock);
    free(c);
}

/* The config's blocking, NCCL's default (1) where left unset. */
static int config_blocking(const ncclConfig_t *config)
{
    return !config || config->blocking == NCCL_CONFIG_UNDEF_INT ? 1 : config->blocking;
}

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pci)
{
    (void)pci;
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    (void)device;
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error)
{
    (void)error;
    return "stand-in CUDA error";
}

cudaError_t cudaMalloc(void **ptr, size_t size)
{
    *ptr = malloc(size);
    return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    (void)kind;
    memcpy(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr)
{
    free(ptr);
    return cudaSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    memset(id, 0x5a, sizeof *id);
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result)
{
    return result == ncclSuccess ? "no error" : "stand-in NCCL error";
}

const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return "";
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
    (void)id;
    *comm = comm_new(config_blocking(config), getenv("NCCL_STANDIN_HANG") != NULL);
    note("init #%d rank %d of %d, 1 root, blocking %d", (*comm)->id, rank, nranks,
         (*comm)->blocking);
    return (*comm)->state;
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nids,
                                      ncclUniqueId *ids, ncclConfig_t *config)
{
    (void)ids;
    *comm = comm_new(config_blocking(config), getenv("NCCL_STANDIN_HANG") != NULL);
    note("init #%d rank %d of %d, %d roots, blocking %d", (*comm)->id, rank, nranks, nids,
         (*comm)->blocking);
    return (*comm)->state;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state)
{
    if (comm->polls > 0 && --comm->polls == 0)
        comm->state = ncclSuccess;
    *state = comm->state;
    return ncclSuccess;
}

/* The parent takes part in the split as an operation of its own. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config)
{
    (void)key;
    *newcomm = comm_new(config_blocking(config), 0);
    note("split #%d color %d into #%d, blocking %d, shared %d", comm->id, color, (*newcomm)->id,
         (*newcomm)->blocking,
         config && config->splitShare != NCCL_CONFIG_UNDEF_INT ? config->splitShare : 0);
    return comm_start(comm);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    note("finalize #%d", comm->id);
    return comm_start(comm);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    note("destroy #%d", comm->id);
    comm_free(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    note("abort #%d", comm->id);
    comm_free(comm);
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream)
{
    (void)datatype, (void)op, (void)stream;
    note("allreduce on #%d", comm->id);
    if (sendbuff != recvbuff)
        memcpy(recvbuff, sendbuff, count * sizeof(float));
    return ncclSuccess;
}
