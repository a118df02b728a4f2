/* prof_shm.h - the writer's side of a task's watch record
 * (runtime/watch/watch_shm.h), as libcohort-nccl-profiler.so keeps it: the
 * process maps the record once, while at least one communicator holds a
 * slot, and each communicator's profiler context holds a pointer to its
 * slot. Taking and giving back are for NCCL's init and finalize only (they
 * lock, open files and map); what happens per event is done on the slot
 * by the caller, with atomics alone. */
#ifndef COHORT_PROF_SHM_H
#define COHORT_PROF_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "watch_shm.h"

/* The slot of communicator comm (NCCL's hash) for this task's rank in it:
 * the one already there for (comm, rank), else a new one. The first taker
 * maps the record: "rank-R" in COHORT_WATCH_DIR (an absolute path to a
 * directory of this process's effective uid, mode 0700, not a link), R
 * being RANK, else SLURM_PROCID; the file is created 0600, or opened when
 * it is a regular file of this uid, not a link, with one name, no access
 * for others and either empty or a record of the same rank. Returns 0 with
 * *slot set; else a negative errno with why (one sentence, cap bytes) and
 * the record untouched: -ENOENT when COHORT_WATCH_DIR is not set, -EINVAL
 * for a bad rank or path, -EPERM for a directory or file that is not the
 * task's own, -ENOSPC when every slot is taken. */
int prof_shm_take(uint64_t comm, uint32_t nranks, uint32_t rank, struct watch_shm_comm **slot,
                  char *why, size_t cap);

/* One taker is done: the last one unmaps the record (the file stays for
 * the agent). */
void prof_shm_give(void);

#endif
