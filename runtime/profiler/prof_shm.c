/* prof_shm.c - the writer's side of a task's watch record (see
 * prof_shm.h): the environment read, the directory and the file checked
 * (a hostile neighbour may have planted anything a path can name, so
 * nothing outside a 0700 directory of this uid is used, and no link is
 * followed), the record mapped and its slots taken. */
#include "prof_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process maps its record once, for all its communicators: rec is set
 * while takers > 0. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch_shm *rec;
static int rec_fd = -1;
static unsigned takers;

/* task_rank reads the task's global rank from RANK, else SLURM_PROCID, in
 * decimal. */
static int task_rank(uint32_t *rank, char *why, size_t cap)
{
    const char *name = "RANK";
    const char *v = getenv(name);
    if (!v) {
        name = "SLURM_PROCID";
        v = getenv(name);
    }
    if (!v) {
        snprintf(why, cap, "neither RANK nor SLURM_PROCID is set");
        return -EINVAL;
    }
    char *end;
    errno = 0;
    unsigned long r = strtoul(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end || errno || r > UINT32_MAX) {
        snprintf(why, cap, "%s=%.32s is not a rank", name, v);
        return -EINVAL;
    }
    *rank = (uint32_t)r;
    return 0;
}

/* open_dir opens COHORT_WATCH_DIR when it is a directory of this uid, mode
 * 0700, named by an absolute path whose last part is no link. */
static int open_dir(char *why, size_t cap)
{
    const char *dir = getenv("COHORT_WATCH_DIR");
    if (!dir) {
        snprintf(why, cap, "COHORT_WATCH_DIR is not set");
        return -ENOENT;
    }
    if (dir[0] != '/') {
        snprintf(why, cap, "COHORT_WATCH_DIR=%.200s is not an absolute path", dir);
        return -EINVAL;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && S_ISDIR(st.st_mode) &&
        (st.st_mode & 07777) == 0700)
        return fd;
    snprintf(why, cap, "COHORT_WATCH_DIR=%.200s is not a directory of uid %u with mode 0700 (%s)",
             dir, (unsigned)geteuid(), fd < 0 ? strerror(errno) : "owner or mode");
    if (fd >= 0)
        close(fd);
    return -EPERM;
}

/* open_file creates the record's file in dirfd (0600), or opens it when it
 * is a regular file of this uid with one name, no access for others and
 * the size of nothing yet or of a record; it sizes it to a record. */
static int open_file(int dirfd, uint32_t rank, char *why, size_t cap)
{
    char name[32];
    watch_shm_name(rank, name, sizeof name);
    int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                    0600);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        st.st_nlink != 1 || (st.st_mode & 077)) {
        snprintf(why, cap, "%s in COHORT_WATCH_DIR is not a file of uid %u alone (%s)", name,
                 (unsigned)geteuid(), fd < 0 ? strerror(errno) : "type, owner, links or mode");
        if (fd >= 0)
            close(fd);
        return -EPERM;
    }
    if (st.st_size != 0 && st.st_size != (off_t)sizeof(struct watch_shm)) {
        snprintf(why, cap, "%s in COHORT_WATCH_DIR is %lld bytes, not a record's %zu", name,
                 (long long)st.st_size, sizeof(struct watch_shm));
        close(fd);
        return -EPERM;
    }
    /* The file's pages are taken now (not a sparse file grown by
     * ftruncate), so that a full /dev/shm fails here, with a line, instead
     * of raising SIGBUS at the first write into the mapping. */
    int fe = st.st_size == 0 ? posix_fallocate(fd, 0, sizeof(struct watch_shm)) : 0;
    if (fe != 0) {
        int e = fe;
        snprintf(why, cap, "%s in COHORT_WATCH_DIR: %s", name, strerror(e));
        close(fd);
        return -e;
    }
    return fd;
}

/* map_record maps the file and checks its header: a new file's is written
 * (the magic last, so that a reader never takes a half-written header for
 * a record); an old one's must be rank's. */
static struct watch_shm *map_record(int fd, uint32_t rank, char *why, size_t cap)
{
    void *p = mmap(NULL, sizeof(struct watch_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        snprintf(why, cap, "mapping the record: %s", strerror(errno));
        return NULL;
    }
    struct watch_shm *m = p;
    flock(fd, LOCK_EX);
    uint32_t magic = __atomic_load_n(&m->magic, __ATOMIC_ACQUIRE);
    if (magic == 0) {
        memset(m, 0, sizeof *m);
        m->version = WATCH_SHM_VERSION;
        m->rank = rank;
        __atomic_store_n(&m->magic, WATCH_SHM_MAGIC, __ATOMIC_RELEASE);
    } else if (magic != WATCH_SHM_MAGIC || m->version != WATCH_SHM_VERSION || m->rank != rank) {
        flock(fd, LOCK_UN);
        munmap(p, sizeof(struct watch_shm));
        snprintf(why, cap, "the file of rank %u in COHORT_WATCH_DIR holds no record of it", rank);
        return NULL;
    }
    m->pid = (uint32_t)getpid();
    flock(fd, LOCK_UN);
    return m;
}

/* Maps the task's record (rec, rec_fd). */
static int attach(char *why, size_t cap)
{
    int dirfd = open_dir(why, cap);
    if (dirfd < 0)
        return dirfd;
    uint32_t rank;
    int err = task_rank(&rank, why, cap);
    int fd = err ? err : open_file(dirfd, rank, why, cap);
    close(dirfd);
    if (fd < 0)
        return fd;
    rec = map_record(fd, rank, why, cap);
    if (!rec) {
        close(fd);
        return -EPERM;
    }
    rec_fd = fd;
    return 0;
}

static void detach(void)
{
    munmap(rec, sizeof *rec);
    close(rec_fd);
    rec = NULL;
    rec_fd = -1;
}

/* slot_of finds the slot of (comm, nranks, rank) in m, or takes the next
 * one: its fields first, then live, then the count that shows it to
 * readers. It returns NULL when every slot is taken. */
static struct watch_shm_comm *slot_of(struct watch_shm *m, uint64_t comm, uint32_t nranks,
                                      uint32_t rank)
{
    uint32_t n = atomic_load_explicit(&m->n_comms, memory_order_relaxed);
    for (uint32_t i = 0; i < n && i < WATCH_SHM_COMMS; i++) {
        struct watch_shm_comm *s = &m->comm[i];
        if (s->comm == comm && s->nranks == nranks && s->rank == rank)
            return s;
    }
    if (n >= WATCH_SHM_COMMS)
        return NULL;
    struct watch_shm_comm *s = &m->comm[n];
    s->comm = comm;
    s->nranks = nranks;
    s->rank = rank;
    atomic_store_explicit(&s->started, 0, memory_order_relaxed);
    atomic_store_explicit(&s->completed, 0, memory_order_relaxed);
    atomic_store_explicit(&s->op, 0, memory_order_relaxed);
    atomic_store_explicit(&s->live, 1, memory_order_release);
    atomic_store_explicit(&m->n_comms, n + 1, memory_order_release);
    return s;
}

int prof_shm_take(uint64_t comm, uint32_t nranks, uint32_t rank, struct watch_shm_comm **slot,
                  char *why, size_t cap)
{
    pthread_mutex_lock(&lock);
    int err = rec ? 0 : attach(why, cap);
    if (!err) {
        /* Another process of this rank (a fork) may take slots too. */
        flock(rec_fd, LOCK_EX);
        *slot = slot_of(rec, comm, nranks, rank);
        flock(rec_fd, LOCK_UN);
        if (*slot) {
            takers++;
        } else {
            err = -ENOSPC;
            snprintf(why, cap, "the record's %d communicators are taken", WATCH_SHM_COMMS);
        }
        if (!takers)
            detach();
    }
    pthread_mutex_unlock(&lock);
    return err;
}

void prof_shm_give(void)
{
    pthread_mutex_lock(&lock);
    if (takers && --takers == 0)
        detach();
    pthread_mutex_unlock(&lock);
}
