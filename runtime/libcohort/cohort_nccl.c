/* cohort_nccl.c - NCCL communicators with a deadline (cohort_nccl.h): the
 * task's device, the unique ids shared over the bootstrap, the
 * non-blocking init polled to the deadline, the splits handed back, and
 * the first communicator's release off the caller's path. */
#include "cohort_nccl.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base_sys.h"
#include "cohort_internal.h"

#define DEFAULT_RANKS_PER_ROOT 128
/* struct cohort_nccl_opts as version 1 had it: up to its nonblocking */
#define OPTS_V1_SIZE (offsetof(struct cohort_nccl_opts, nonblocking) + sizeof(int))

/* The task's planned GPU: COHORT_GPUS' first PCI id, else LOCAL_RANK. */
static int select_device(struct cohort *c)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        return cohort_internal_fail(
            c, COHORT_ERR_NCCL,
            "cohort: no CUDA device for rank %d (cudaGetDeviceCount: %s); check "
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
            return cohort_internal_fail(c, COHORT_ERR_NCCL,
                                        "cohort: the planned GPU %s (COHORT_GPUS) is not "
                                        "visible to rank %d",
                                        pci, cohort_rank(c));
    }
    if ((e = cudaSetDevice(dev)) != cudaSuccess)
        return cohort_internal_fail(c, COHORT_ERR_NCCL,
                                    "cohort: cudaSetDevice(%d) failed on rank %d: %s", dev,
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
        if (state != ncclInProgress || base_now_ms() > deadline)
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
        return cohort_internal_fail(c, COHORT_ERR_TIMEOUT,
                                    "cohort: the NCCL %s communicator did not come up "
                                    "within %d s on rank %d; aborted",
                                    what, secs, cohort_rank(c));
    if (state != ncclSuccess)
        return cohort_internal_fail(c, COHORT_ERR_NCCL,
                                    "cohort: NCCL %s communicator failed on rank %d: %s (%s)",
                                    what, cohort_rank(c), ncclGetErrorString(state),
                                    ncclGetLastError(comm));
    return 0;
}

/* The first communicators whose release runs on a thread of its own: how
 * many are still being released, and the longest wait for them at exit
 * (the longest deadline any call had). */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int live, wait_s;
} releases = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
static pthread_once_t releases_once = PTHREAD_ONCE_INIT;

/* At exit, waits for the releases still running (at most wait_s): NCCL and
 * CUDA must not be torn down under them. */
static void wait_releases(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    pthread_mutex_lock(&releases.lock);
    until.tv_sec += releases.wait_s;
    while (releases.live > 0 &&
           pthread_cond_timedwait(&releases.done, &releases.lock, &until) == 0)
        ;
    pthread_mutex_unlock(&releases.lock);
}

static void watch_releases(void)
{
    atexit(wait_releases);
}

/* A release's thread: ncclCommDestroy finalizes the communicator itself
 * (it has no operation of its own left), then frees it. */
static void *release_main(void *comm)
{
    ncclCommDestroy(comm);
    pthread_mutex_lock(&releases.lock);
    releases.live--;
    pthread_cond_broadcast(&releases.done);
    pthread_mutex_unlock(&releases.lock);
    return NULL;
}

/* Releases the first communicator once the blocking ones are split off it,
 * on a thread of its own so that the caller does not wait for it (they
 * keep the resources it shares with them); here only where no thread can
 * be started. */
static void release_later(ncclComm_t first, int secs)
{
    pthread_once(&releases_once, watch_releases);
    pthread_attr_t attr;
    pthread_t thread;
    int started = pthread_attr_init(&attr) == 0;
    pthread_mutex_lock(&releases.lock);
    if (started) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&thread, &attr, release_main, first) == 0;
        pthread_attr_destroy(&attr);
    }
    if (started) {
        releases.live++;
        releases.wait_s = secs > releases.wait_s ? secs : releases.wait_s;
    }
    pthread_mutex_unlock(&releases.lock);
    if (!started)
        ncclCommDestroy(first);
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
        cohort_internal_fail(c, COHORT_ERR_NCCL,
                             "cohort: ncclCommSplit (%s) failed on rank %d: %s (%s)", what,
                             cohort_rank(c), ncclGetErrorString(r), ncclGetLastError(from));
        if (*out)
            ncclCommAbort(*out);
        *out = NULL;
        return -1;
    }
    int rc = wait_comm(c, from, deadline, secs, what);
    if (rc == 0 && !*out)
        rc = cohort_internal_fail(c, COHORT_ERR_NCCL,
                                  "cohort: ncclCommSplit (%s) gave no communicator on rank %d",
                                  what, cohort_rank(c));
    if (rc == 0 && !blocking)
        rc = wait_comm(c, *out, deadline, secs, what);
    if (rc < 0 && *out) {
        ncclCommAbort(*out);
        *out = NULL;
    }
    return rc;
}

/* Every rank learns whether every rank has a device before any waits in
 * NCCL for the others. */
static int all_have_device(struct cohort *c)
{
    int have = select_device(c) == 0, size = cohort_size(c);
    int *all = malloc(sizeof *all * (size_t)size);
    if (!all)
        return cohort_internal_fail(c, COHORT_ERR_RESOURCE, "cohort: out of memory");
    char mine_err[512];
    int mine_code = have ? COHORT_OK : cohort_error_code(c);
    snprintf(mine_err, sizeof mine_err, "%s", have ? "" : cohort_error(c));
    int rc = cohort_allgather(c, &have, sizeof have, all);
    for (int r = 0; rc == 0 && r < size; r++)
        if (!all[r] && have)
            rc = cohort_internal_fail(c, COHORT_ERR_NCCL, "cohort: rank %d has no usable CUDA "
                                                          "device; no NCCL communicator",
                                      r);
        else if (!all[r])
            rc = cohort_internal_fail(c, mine_code, "%s", mine_err);
    free(all);
    return rc;
}

/* The unique ids of the nroots roots, ranks k * size / nroots: each root
 * makes one, all ranks gather every rank's. A malloc'd array, or NULL with
 * c's error. */
static ncclUniqueId *root_ids(struct cohort *c, int nroots)
{
    int rank = cohort_rank(c), size = cohort_size(c);
    ncclUniqueId id, *ids = malloc(sizeof *ids * (size_t)size), *roots = NULL;
    if (!ids) {
        cohort_internal_fail(c, COHORT_ERR_RESOURCE, "cohort: out of memory");
        return NULL;
    }
    memset(&id, 0, sizeof id);
    int is_root = 0;
    for (int k = 0; k < nroots; k++)
        is_root |= rank == (int)((long long)k * size / nroots);
    ncclResult_t r;
    if (is_root && (r = ncclGetUniqueId(&id)) != ncclSuccess) {
        cohort_internal_fail(c, COHORT_ERR_NCCL, "cohort: ncclGetUniqueId failed on rank %d: %s",
                             rank, ncclGetErrorString(r));
        /* the others learn it from the allgather below: an all-zero id */
    }
    if (cohort_allgather(c, &id, sizeof id, ids) != 0)
        goto out;
    if (!(roots = malloc(sizeof *roots * (size_t)nroots))) {
        cohort_internal_fail(c, COHORT_ERR_RESOURCE, "cohort: out of memory");
        goto out;
    }
    static const ncclUniqueId zero;
    int bad_root = -1;
    for (int k = 0; k < nroots; k++) {
        int at = (int)((long long)k * size / nroots);
        roots[k] = ids[at];
        if (memcmp(&ids[at], &zero, sizeof zero) == 0)
            bad_root = at;
    }
    if (bad_root >= 0) {
        free(roots);
        roots = NULL;
        cohort_internal_fail(c, COHORT_ERR_NCCL, "cohort: rank %d could not create an NCCL "
                                                 "unique id",
                             bad_root);
    }
out:
    free(ids);
    return roots;
}

int cohort_nccl_init(struct cohort *c, ncclComm_t *world, const struct cohort_nccl_opts *opts)
{
    *world = NULL;
    struct cohort_nccl_opts o;
    if (cohort_internal_read_opts(c, "cohort_nccl_init", "cohort_nccl_opts", opts,
                                  OPTS_V1_SIZE, &o, sizeof o) < 0)
        return -1;
    int secs = o.timeout_s > 0 ? o.timeout_s : cohort_internal_timeout_s(c);
    int per_root = o.ranks_per_root > 0 ? o.ranks_per_root : DEFAULT_RANKS_PER_ROOT;
    int rank = cohort_rank(c), size = cohort_size(c);
    int nroots = (size + per_root - 1) / per_root;
    ncclUniqueId *ids;
    if (all_have_device(c) != 0 || !(ids = root_ids(c, nroots)))
        return -1;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    long long deadline = base_now_ms() + (long long)secs * 1000;
    ncclComm_t first = NULL;
    ncclResult_t r;
    if (nroots > 1)
        r = ncclCommInitRankScalable(&first, size, rank, nroots, ids, &config);
    else
        r = ncclCommInitRankConfig(&first, size, ids[0], rank, &config);
    free(ids);
    if (r != ncclSuccess && r != ncclInProgress) {
        cohort_internal_fail(c, COHORT_ERR_NCCL, "cohort: NCCL init failed on rank %d: %s (%s)",
                             rank, ncclGetErrorString(r), ncclGetLastError(first));
        if (first)
            ncclCommAbort(first);
        return -1;
    }
    if (wait_comm(c, first, deadline, secs, "world") < 0) {
        ncclCommAbort(first);
        return -1;
    }
    bool blocking = !o.nonblocking;
    if (blocking && split_comm(c, first, 0, rank, world, true, deadline, secs, "world") < 0) {
        ncclCommAbort(first);
        return -1;
    }
    if (!blocking)
        *world = first;
    if (o.local && split_comm(c, first, cohort_node_rank(c), cohort_local_rank(c), o.local,
                              blocking, deadline, secs, "node-local") < 0) {
        if (blocking)
            ncclCommAbort(*world);
        ncclCommAbort(first);
        *world = NULL;
        return -1;
    }
    if (blocking)
        release_later(first, secs);
    return 0;
}
