/* nccl_profiler_abi.h - cohort's own declarations of the parts of NCCL's
 * profiler plugin interface that libcohort-nccl-profiler.so uses: the
 * table NCCL looks up by name (ncclProfiler_v5 in NCCL 2.28,
 * ncclProfiler_v4 in NCCL 2.27; 2.28 looks for v5 first, then v4, v3, v2,
 * v1), the event descriptor's leading fields, its collective and kernel
 * channel parts, and the event type bits. Only what is read is declared;
 * the offsets are those of NCCL's own headers on an LP64 machine and are
 * pinned below, so that a change here that moved a field fails to build. */
#ifndef COHORT_NCCL_PROFILER_ABI_H
#define COHORT_NCCL_PROFILER_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ncclResult_t's values that the plugin returns. */
enum {
    NCCL_PROF_SUCCESS = 0,
    NCCL_PROF_SYSTEM_ERROR = 2,
    NCCL_PROF_INVALID_USAGE = 5,
};

/* The event types (the descriptor's type, and the bits of the activation
 * mask that init hands back). */
enum {
    NCCL_PROF_COLL = 1 << 1,      /* a collective, as it is enqueued */
    NCCL_PROF_P2P = 1 << 2,       /* a send or a receive, as it is enqueued */
    NCCL_PROF_KERNEL_CH = 1 << 6, /* one channel of a kernel running one collective or p2p */
};

/* NCCL's logger (ncclDebugLogger_t): level 3 is INFO, flags 1 is INIT. */
typedef void (*nccl_prof_logger)(int level, unsigned long flags, const char *file, int line,
                                 const char *fmt, ...);
#define NCCL_PROF_LOG_INFO 3
#define NCCL_PROF_LOG_INIT 1UL

/* The collective's part of the descriptor (the same in v4 and v5; v5 adds
 * parent_group after proto, which the plugin does not read). */
struct nccl_prof_coll {
    uint64_t seq;         /* the collective's number in its communicator */
    const char *func;     /* "AllReduce", "Broadcast", ... */
    const void *sendbuff;
    void *recvbuff;
    size_t count;
    int root;
    const char *datatype;
    uint8_t nchannels;    /* the channels it runs on: one kernel channel event each */
    uint8_t nwarps;
    const char *algo;
    const char *proto;
};

/* The kernel channel's part of the descriptor. */
struct nccl_prof_kernel_ch {
    uint8_t channel;
    uint64_t ptimer;
};

/* The event descriptor of v5 (ncclProfilerEventDescr_v5_t): type is 64 bits
 * wide. parent is the handle the plugin gave the parent event (for a kernel
 * channel: its collective's or p2p's). */
struct nccl_prof_descr_v5 {
    uint64_t type;
    void *parent;
    int rank;
    union {
        struct nccl_prof_coll coll;
        struct nccl_prof_kernel_ch kernel_ch;
    };
};

/* The event descriptor of v4 (ncclProfilerEventDescr_v4_t): type is one
 * byte, the rest is where v5 has it. NCCL 2.28 fills a v4 descriptor on
 * its stack without zeroing it, so nothing but that byte may be read as
 * the type. */
struct nccl_prof_descr_v4 {
    uint8_t type;
    void *parent;
    int rank;
    union {
        struct nccl_prof_coll coll;
        struct nccl_prof_kernel_ch kernel_ch;
    };
};

/* The function tables NCCL finds by the names ncclProfiler_v5 and
 * ncclProfiler_v4. The third argument of record_state is an enum and its
 * fourth a pointer to a union of state arguments: neither is read. */
struct nccl_profiler_v5 {
    const char *name;
    int (*init)(void **context, uint64_t comm_hash, int *activation_mask, const char *comm_name,
                int nnodes, int nranks, int rank, nccl_prof_logger log);
    int (*start_event)(void *context, void **handle, struct nccl_prof_descr_v5 *descr);
    int (*stop_event)(void *handle);
    int (*record_state)(void *handle, int state, void *state_args);
    int (*finalize)(void *context);
};

struct nccl_profiler_v4 {
    const char *name;
    int (*init)(void **context, int *activation_mask, const char *comm_name, uint64_t comm_hash,
                int nnodes, int nranks, int rank, nccl_prof_logger log);
    int (*start_event)(void *context, void **handle, struct nccl_prof_descr_v4 *descr);
    int (*stop_event)(void *handle);
    int (*record_state)(void *handle, int state, void *state_args);
    int (*finalize)(void *context);
};

/* The offsets of NCCL's headers (checked against NCCL 2.28.9's
 * profiler_v4.h and profiler_v5.h). */
_Static_assert(sizeof(void *) == 8, "the layout below is LP64's");
_Static_assert(offsetof(struct nccl_prof_descr_v5, parent) == 8, "v5 parentObj");
_Static_assert(offsetof(struct nccl_prof_descr_v5, rank) == 16, "v5 rank");
_Static_assert(offsetof(struct nccl_prof_descr_v5, coll) == 24, "v5 union");
_Static_assert(offsetof(struct nccl_prof_descr_v4, coll) == 24, "v4 union");
_Static_assert(offsetof(struct nccl_prof_coll, func) == 8, "coll.func");
_Static_assert(offsetof(struct nccl_prof_coll, nchannels) == 56, "coll.nChannels");
_Static_assert(offsetof(struct nccl_prof_kernel_ch, ptimer) == 8, "kernelCh.pTimer");
_Static_assert(offsetof(struct nccl_profiler_v5, finalize) == 40, "v5 table");

#endif
