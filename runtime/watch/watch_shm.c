/* watch_shm.c - a task's watch record (see watch_shm.h): its file's name,
 * and the node agent's reader. The reader trusts nothing it has not
 * checked: the file is opened without following a link or blocking on a
 * FIFO, must be a regular file of the job's uid with one name and a
 * record's size, and is read (never mapped: its owner may shrink it) twice
 * a look, a slot taken when both reads agree; the slot count is bounded. It
 * uses libc alone, so that libcohort-nccl-profiler.so can carry it. */
#include "watch_shm.h"

#include <fcntl.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct watch_shm_reader {
    int fd;
    uint32_t rank;
    struct watch_shm copy[2]; /* two reads of the record, compared */
};

void watch_shm_name(uint32_t rank, char *out, size_t cap)
{
    snprintf(out, cap, "rank-%" PRIu32, rank);
}

/* open_file opens rank's file in dirfd when it is a regular file of uid
 * with one name and a record's size; it returns -1 otherwise. */
static int open_file(int dirfd, uint32_t rank, uid_t uid)
{
    char name[32];
    watch_shm_name(rank, name, sizeof name);
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid && st.st_nlink == 1 &&
        st.st_size == (off_t)sizeof(struct watch_shm))
        return fd;
    close(fd);
    return -1;
}

/* Reads the whole record into *m; false when the file is shorter now. */
static bool read_record(int fd, struct watch_shm *m)
{
    return pread(fd, m, sizeof *m, 0) == (ssize_t)sizeof *m;
}

struct watch_shm_reader *watch_shm_open(int dirfd, uint32_t rank, uid_t uid)
{
    int fd = open_file(dirfd, rank, uid);
    if (fd < 0)
        return NULL;
    struct watch_shm_reader *r = malloc(sizeof *r);
    /* The writer sets the magic last: once it is seen, the header is. */
    if (!r || !read_record(fd, &r->copy[0]) || r->copy[0].magic != WATCH_SHM_MAGIC ||
        r->copy[0].version != WATCH_SHM_VERSION || r->copy[0].rank != rank) {
        free(r);
        close(fd);
        return NULL;
    }
    r->fd = fd;
    r->rank = rank;
    return r;
}

/* Whether slot i is live and the same in both copies. */
static bool steady(const struct watch_shm_reader *r, uint32_t i)
{
    const struct watch_shm_comm *a = &r->copy[0].comm[i], *b = &r->copy[1].comm[i];
    return a->live && b->live && a->comm == b->comm && a->nranks == b->nranks &&
           a->rank == b->rank && a->started == b->started && a->completed == b->completed &&
           a->op == b->op;
}

unsigned watch_shm_read(struct watch_shm_reader *r, struct watch_shm_slot *out)
{
    /* The record is read, not mapped: a file its owner shrinks gives a
     * short read, never a SIGBUS. It is read twice and a slot is taken
     * only when both reads agree, since a read may catch a counter while
     * it is written. */
    if (!read_record(r->fd, &r->copy[0]) || !read_record(r->fd, &r->copy[1]))
        return 0;
    uint32_t n = r->copy[0].n_comms;
    unsigned k = 0;
    for (uint32_t i = 0; i < n && i < WATCH_SHM_COMMS; i++) {
        if (!steady(r, i))
            continue;
        const struct watch_shm_comm *c = &r->copy[0].comm[i];
        out[k] = (struct watch_shm_slot){.comm = c->comm, .nranks = c->nranks, .rank = c->rank,
                                         .started = c->started, .completed = c->completed,
                                         .op = c->op};
        if (out[k].completed > out[k].started)
            out[k].completed = out[k].started;
        k++;
    }
    return k;
}

void watch_shm_close(struct watch_shm_reader *r)
{
    if (!r)
        return;
    close(r->fd);
    free(r);
}
