/* watch_shm.c - a task's watch record (see watch_shm.h): its file's name,
 * and the node agent's reader. The reader trusts nothing it has not
 * checked: the file is opened without following a link or blocking on a
 * FIFO, must be a regular file of the job's uid with one name and a
 * record's size, and is mapped read-only; the slot count is bounded. It
 * uses libc alone, so that libcohort-nccl-profiler.so can carry it. */
#include "watch_shm.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct watch_shm_reader {
    const struct watch_shm *map;
};

void watch_shm_name(uint32_t rank, char *out, size_t cap)
{
    snprintf(out, cap, "rank-%" PRIu32, rank);
}

/* map_file maps rank's file in dirfd read-only when it is a regular file
 * of uid with one name and a record's size; it returns NULL otherwise. */
static const struct watch_shm *map_file(int dirfd, uint32_t rank, uid_t uid)
{
    char name[32];
    watch_shm_name(rank, name, sizeof name);
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid && st.st_nlink == 1 &&
        st.st_size == (off_t)sizeof(struct watch_shm))
        p = mmap(NULL, sizeof(struct watch_shm), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

struct watch_shm_reader *watch_shm_open(int dirfd, uint32_t rank, uid_t uid)
{
    const struct watch_shm *m = map_file(dirfd, rank, uid);
    if (!m)
        return NULL;
    /* The writer sets the magic last: once it is seen, the header is. */
    struct watch_shm_reader *r = NULL;
    if (__atomic_load_n(&m->magic, __ATOMIC_ACQUIRE) == WATCH_SHM_MAGIC &&
        m->version == WATCH_SHM_VERSION && m->rank == rank)
        r = malloc(sizeof *r);
    if (!r) {
        munmap((void *)m, sizeof *m);
        return NULL;
    }
    r->map = m;
    return r;
}

unsigned watch_shm_read(const struct watch_shm_reader *r, struct watch_shm_slot *out)
{
    const struct watch_shm *m = r->map;
    uint32_t n = atomic_load_explicit(&m->n_comms, memory_order_acquire);
    unsigned k = 0;
    for (uint32_t i = 0; i < n && i < WATCH_SHM_COMMS; i++) {
        const struct watch_shm_comm *c = &m->comm[i];
        if (!atomic_load_explicit(&c->live, memory_order_acquire))
            continue;
        out[k].comm = c->comm;
        out[k].nranks = c->nranks;
        out[k].rank = c->rank;
        /* Completed first: a collective completes after it starts, so
         * that a copy never shows more completed than started. */
        out[k].completed = atomic_load_explicit(&c->completed, memory_order_acquire);
        out[k].started = atomic_load_explicit(&c->started, memory_order_acquire);
        out[k].op = atomic_load_explicit(&c->op, memory_order_relaxed);
        k++;
    }
    return k;
}

void watch_shm_close(struct watch_shm_reader *r)
{
    if (!r)
        return;
    munmap((void *)r->map, sizeof *r->map);
    free(r);
}
