/* nccl_profiler.c - libcohort-nccl-profiler.so, the step watch's NCCL
 * profiler plugin: NCCL (NCCL_PROFILER_PLUGIN=path) calls init for each
 * communicator, then start and stop for its events; the plugin counts, per
 * communicator, the collectives started and completed on this rank in the
 * task's watch record (prof_shm.h, runtime/watch/watch_shm.h), which the
 * node agent reads. It exports ncclProfiler_v5 (NCCL 2.28) and
 * ncclProfiler_v4 (NCCL 2.27), and nothing else.
 *
 * What the counts mean, from NCCL 2.28's sources (src/plugin/profiler.cc,
 * src/enqueue.cc, src/transport/profiler.cc):
 * - started: a collective's event starts on the host when NCCL hands its
 *   kernel plan over (hostStreamPlanTask, right after the kernel launch;
 *   in a CUDA graph, when the graph reaches it). A rank whose host has not
 *   got there (stopped, hung in Python, computing) has not started it.
 * - completed: not the collective's stop event, which NCCL sends as soon as
 *   the collective is enqueued. With kernel channel events asked for, NCCL
 *   adds to every collective one profiler proxy operation per channel it
 *   runs on, and its proxy thread starts and stops one kernel channel event
 *   when the GPU starts and finishes that channel's part. The collective
 *   is completed on this rank when the last of its coll.nchannels kernel
 *   channel events stops: its kernel work is done on this GPU. A
 *   collective whose descriptor gives no channel count (CollNet's) is
 *   counted completed when enqueued, which never names a rank falsely.
 * - Point-to-point events are not counted: ranks of one communicator send
 *   and receive different numbers of times, so their counts would make a
 *   healthy rank look behind. Collectives run in copy engines or symmetric
 *   kernels (NCCL 2.28 with registered windows) have no event at all.
 * Nothing per event blocks, allocates or calls the system: the context
 * holds a ring of PROF_RING collectives' channel counts, allocated at init.
 * When the ring comes round to a collective whose channels have not all
 * stopped (PROF_RING collectives enqueued past it), that one is counted
 * completed, so that an old one never stays owed: a true hang is still
 * seen, since the host stops enqueueing long before. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_profiler_abi.h"
#include "prof_shm.h"
#include "watch.h"

#define PROF_RING 4096
#define PROF_MASK (NCCL_PROF_COLL | NCCL_PROF_KERNEL_CH)
#define EXPORT __attribute__((visibility("default")))

enum { TAG_COLL = 1, TAG_KERNEL_CH = 2 };

/* Each entry of the ring stands for one collective. The handles NCCL gets
 * point into tag: the collective's at tag[0] (TAG_COLL), its kernel
 * channels' at tag[1] (TAG_KERNEL_CH), so that stop_event tells them apart
 * by the byte. */
struct prof_coll {
    struct watch_shm_comm *slot;
    _Atomic uint32_t left; /* kernel channel events still to stop */
    uint8_t at_stop;       /* no channel count: completed when enqueued */
    uint8_t tag[2];
};

/* A communicator's context holds its slot and its ring. */
struct prof_ctx {
    struct watch_shm_comm *slot;
    _Atomic uint64_t issued; /* collectives started through this context */
    struct prof_coll ring[PROF_RING];
};

/* op_of maps NCCL's operation name to enum watch_op. */
static unsigned op_of(const char *func)
{
    static const struct {
        const char *name;
        unsigned op;
    } ops[] = {
        {"AllReduce", WATCH_OP_ALLREDUCE}, {"AllGather", WATCH_OP_ALLGATHER},
        {"ReduceScatter", WATCH_OP_REDUCESCATTER}, {"Broadcast", WATCH_OP_BROADCAST},
        {"Reduce", WATCH_OP_REDUCE}, {"AlltoAll", WATCH_OP_ALLTOALL},
        {"Send", WATCH_OP_SEND}, {"Recv", WATCH_OP_RECV},
    };
    for (size_t i = 0; func && i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(func, ops[i].name))
            return ops[i].op;
    return WATCH_OP_OTHER;
}

static void coll_completed(struct prof_coll *c)
{
    atomic_fetch_add_explicit(&c->slot->completed, 1, memory_order_release);
}

/* coll_start counts a collective started: the next ring entry owes
 * nchannels kernel channel stops (an entry still owing is given up as
 * completed). */
static void *coll_start(struct prof_ctx *x, const char *func, uint8_t nchannels)
{
    uint64_t i = atomic_fetch_add_explicit(&x->issued, 1, memory_order_relaxed);
    struct prof_coll *c = &x->ring[i % PROF_RING];
    c->at_stop = nchannels == 0;
    if (atomic_exchange_explicit(&c->left, nchannels, memory_order_acq_rel) != 0)
        coll_completed(c);
    atomic_store_explicit(&x->slot->op, op_of(func), memory_order_relaxed);
    atomic_fetch_add_explicit(&x->slot->started, 1, memory_order_release);
    return &c->tag[0];
}

/* coll_of finds the ring entry that parent (a handle from coll_start)
 * names; it returns NULL when parent is none of this context's (a
 * point-to-point's, or nothing). */
static struct prof_coll *coll_of(struct prof_ctx *x, const void *parent)
{
    const char *p = parent, *base = (const char *)x->ring;
    if (!p || p < base || p >= base + sizeof x->ring)
        return NULL;
    struct prof_coll *c = &x->ring[(size_t)(p - base) / sizeof x->ring[0]];
    return p == (const char *)&c->tag[0] ? c : NULL;
}

/* kernel_ch_stop counts one kernel channel of c done: the last one
 * completes c. */
static void kernel_ch_stop(struct prof_coll *c)
{
    uint32_t v = atomic_load_explicit(&c->left, memory_order_relaxed);
    while (v && !atomic_compare_exchange_weak_explicit(&c->left, &v, v - 1, memory_order_acq_rel,
                                                       memory_order_relaxed))
        ;
    if (v == 1)
        coll_completed(c);
}

/* start_event handles the events of either version once their type is
 * read. */
static int start_event(void *context, void **handle, uint64_t type, const void *parent,
                       const struct nccl_prof_coll *coll)
{
    struct prof_ctx *x = context;
    struct prof_coll *c;
    *handle = NULL;
    if (!x)
        return NCCL_PROF_SUCCESS;
    if (type == NCCL_PROF_COLL)
        *handle = coll_start(x, coll->func, coll->nchannels);
    else if (type == NCCL_PROF_KERNEL_CH && (c = coll_of(x, parent)))
        *handle = &c->tag[1];
    return NCCL_PROF_SUCCESS;
}

static int start_v5(void *context, void **handle, struct nccl_prof_descr_v5 *d)
{
    return start_event(context, handle, d->type, d->parent, &d->coll);
}

static int start_v4(void *context, void **handle, struct nccl_prof_descr_v4 *d)
{
    return start_event(context, handle, d->type, d->parent, &d->coll);
}

static int stop_event(void *handle)
{
    const uint8_t *t = handle;
    if (t && *t == TAG_COLL) {
        struct prof_coll *c = (struct prof_coll *)(t - offsetof(struct prof_coll, tag));
        if (c->at_stop)
            coll_completed(c);
    } else if (t && *t == TAG_KERNEL_CH) {
        kernel_ch_stop((struct prof_coll *)(t - 1 - offsetof(struct prof_coll, tag)));
    }
    return NCCL_PROF_SUCCESS;
}

static int record_state(void *handle, int state, void *state_args)
{
    (void)handle, (void)state, (void)state_args;
    return NCCL_PROF_SUCCESS;
}

/* init makes a communicator's context, with its slot in the task's
 * record. It declines (an error, which makes NCCL go on without the plugin
 * for this communicator, saying why in its INFO log) when the watch is off
 * or the record cannot be had safely. */
static int init(void **context, uint64_t comm, int *mask, int nranks, int rank,
                nccl_prof_logger log)
{
    char why[320] = "";
    struct prof_ctx *x = NULL;
    int err = nranks > 0 && rank >= 0 && rank < nranks ? 0 : -EINVAL;
    if (!err && !(x = calloc(1, sizeof *x)))
        err = -ENOMEM;
    if (!err)
        err = prof_shm_take(comm, (uint32_t)nranks, (uint32_t)rank, &x->slot, why, sizeof why);
    *context = NULL;
    if (err) {
        free(x);
        if (log && why[0] && err != -ENOENT)
            log(NCCL_PROF_LOG_INFO, NCCL_PROF_LOG_INIT, __FILE__, __LINE__,
                "cohort watch: this rank is not watched: %s", why);
        errno = -err;
        return err == -ENOENT || err == -EINVAL ? NCCL_PROF_INVALID_USAGE : NCCL_PROF_SYSTEM_ERROR;
    }
    for (size_t i = 0; i < PROF_RING; i++) {
        x->ring[i].slot = x->slot;
        x->ring[i].tag[0] = TAG_COLL;
        x->ring[i].tag[1] = TAG_KERNEL_CH;
    }
    *mask = PROF_MASK;
    *context = x;
    return NCCL_PROF_SUCCESS;
}

static int init_v5(void **context, uint64_t comm, int *mask, const char *name, int nnodes,
                   int nranks, int rank, nccl_prof_logger log)
{
    (void)name, (void)nnodes;
    return init(context, comm, mask, nranks, rank, log);
}

static int init_v4(void **context, int *mask, const char *name, uint64_t comm, int nnodes,
                   int nranks, int rank, nccl_prof_logger log)
{
    (void)name, (void)nnodes;
    return init(context, comm, mask, nranks, rank, log);
}

static int finalize(void *context)
{
    if (context) {
        free(context);
        prof_shm_give();
    }
    return NCCL_PROF_SUCCESS;
}

EXPORT extern const struct nccl_profiler_v5 ncclProfiler_v5;
EXPORT extern const struct nccl_profiler_v4 ncclProfiler_v4;

const struct nccl_profiler_v5 ncclProfiler_v5 = {
    "cohort-watch", init_v5, start_v5, stop_event, record_state, finalize,
};

const struct nccl_profiler_v4 ncclProfiler_v4 = {
    "cohort-watch", init_v4, start_v4, stop_event, record_state, finalize,
};
