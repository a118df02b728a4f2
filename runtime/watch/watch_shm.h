/* watch_shm.h - the record through which a task's NCCL profiler plugin
 * (libcohort-nccl-profiler.so) tells its node agent how far each of the
 * task's communicators has got: a file of its own, mapped shared, in the
 * directory the agent made for the step (COHORT_WATCH_DIR, 0700, the job's
 * user's), named "rank-R" for the task's global rank R. The plugin only
 * adds to counters in it (no system call in NCCL's path); the agent reads
 * the counters once a second. */
#ifndef COHORT_WATCH_SHM_H
#define COHORT_WATCH_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WATCH_SHM_MAGIC 0x63776174u /* "cwat" */
#define WATCH_SHM_VERSION 1u
#define WATCH_SHM_COMMS 64          /* communicators a task counts; more are not counted */

/* One communicator of the task. Slots are taken in order (n_comms) and
 * never given back, so that a reader never sees a slot change owner. */
struct watch_shm_comm {
    uint64_t comm;                  /* NCCL's hash of the communicator */
    uint32_t nranks, rank;          /* its size and this task's rank in it */
    _Atomic uint64_t started;       /* collectives started on it (enqueued by this rank) */
    _Atomic uint64_t completed;     /* and completed (their kernels done on this rank's GPU:
                                     * see runtime/profiler/nccl_profiler.c) */
    _Atomic uint32_t op;            /* enum watch_op (watch.h) of the last one started */
    _Atomic uint32_t live;          /* 1 once the fields above are set */
};

struct watch_shm {
    uint32_t magic, version;
    uint32_t rank;                  /* the task's global rank */
    uint32_t pid;
    _Atomic uint32_t n_comms;       /* slots taken */
    uint32_t pad;
    struct watch_shm_comm comm[WATCH_SHM_COMMS];
};

/* The name of rank's file in the directory ("rank-R"). */
void watch_shm_name(uint32_t rank, char *out, size_t cap);

/* A copy of one live slot, as the agent reads it. */
struct watch_shm_slot {
    uint64_t comm;
    uint32_t nranks, rank;
    uint64_t started, completed;
    unsigned op;
};

/* The agent's view of one task's record, kept open between reads. */
struct watch_shm_reader;

/* Opens rank's record in dirfd when it is there: a regular file (no link
 * followed) with one name, owned by uid, of the record's size, with the
 * right magic and version and rank. NULL when it is not there (yet) or is
 * not such a record. */
struct watch_shm_reader *watch_shm_open(int dirfd, uint32_t rank, uid_t uid);
/* Copies the live slots into out (WATCH_SHM_COMMS entries); returns how
 * many. A slot caught changing is left out of this look, and a record
 * shrunk since it was opened gives none. */
unsigned watch_shm_read(struct watch_shm_reader *r, struct watch_shm_slot *out);
void watch_shm_close(struct watch_shm_reader *r);

#endif
