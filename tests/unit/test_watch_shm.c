/* test_watch_shm.c - the node agent's reader of the tasks' watch records
 * (runtime/watch/watch_shm.c), on records written here by hand: a good
 * record's live slots are read, and read again as they change; a slot
 * count beyond the record is bounded; and watch_shm_open refuses, without
 * blocking, what is not rank R's record of the job's uid: no file, a file
 * of another size, magic, version or rank, another owner, a link to a good
 * record, a file with two names, a FIFO, a directory. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "watch_shm.h"

#define NOBODY 65534

static char dir[] = "/tmp/watch-shm-test.XXXXXX";
static char other[] = "/tmp/watch-shm-other.XXXXXX";
static int dirfd;

/* record fills m as rank's record with n_comms slots, of which those in
 * live_mask are live; slot i counts comm 0x100 + i, i + 10 started and i
 * completed. */
static void record(struct watch_shm *m, uint32_t rank, uint32_t n_comms, uint64_t live_mask)
{
    memset(m, 0, sizeof *m);
    m->magic = WATCH_SHM_MAGIC;
    m->version = WATCH_SHM_VERSION;
    m->rank = rank;
    m->pid = (uint32_t)getpid();
    m->n_comms = n_comms;
    for (uint32_t i = 0; i < WATCH_SHM_COMMS; i++) {
        m->comm[i].comm = 0x100 + i;
        m->comm[i].nranks = 4;
        m->comm[i].rank = i % 4;
        m->comm[i].started = i + 10;
        m->comm[i].completed = i;
        m->comm[i].op = 5;
        m->comm[i].live = (live_mask >> i) & 1;
    }
}

/* Writes len bytes of m as path (in dir when relative), mode 0600. */
static int put(const char *path, const void *m, size_t len)
{
    int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int ok = fd >= 0 && write(fd, m, len) == (ssize_t)len;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

/* opens says whether watch_shm_open takes rank's file as uid's record. */
static int opens(uint32_t rank, uid_t uid)
{
    struct watch_shm_reader *r = watch_shm_open(dirfd, rank, uid);
    watch_shm_close(r);
    return r != NULL;
}

static void check_good(struct watch_shm *m)
{
    char name[32];
    watch_shm_name(5, name, sizeof name);
    ok(!strcmp(name, "rank-5"), "rank 5's file is rank-5 (%s)", name);
    watch_shm_name(4000000000u, name, 8);
    ok(!strcmp(name, "rank-40"), "a short buffer gets a cut name (%s)", name);
    ok(!opens(5, geteuid()), "no file: no record");

    record(m, 5, 3, 0x5); /* slots 0 and 2 live, 1 not yet */
    put("rank-5", m, sizeof *m);
    struct watch_shm_reader *r = watch_shm_open(dirfd, 5, geteuid());
    struct watch_shm_slot s[WATCH_SHM_COMMS];
    unsigned n = r ? watch_shm_read(r, s) : 0;
    ok(n == 2 && s[0].comm == 0x100 && s[0].started == 10 && s[0].completed == 0 &&
           s[1].comm == 0x102 && s[1].nranks == 4 && s[1].rank == 2 && s[1].started == 12 &&
           s[1].completed == 2 && s[1].op == 5,
       "a record's live slots are read, the others skipped (%u: %llx %llu/%llu, %llx)", n,
       n ? (unsigned long long)s[0].comm : 0ULL, n ? (unsigned long long)s[0].started : 0ULL,
       n ? (unsigned long long)s[0].completed : 0ULL, n > 1 ? (unsigned long long)s[1].comm : 0ULL);

    /* The writer's later counts show through the same mapping. */
    int fd = openat(dirfd, "rank-5", O_RDWR);
    struct watch_shm *w = mmap(NULL, sizeof *w, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (w != MAP_FAILED) {
        w->comm[0].started = 77;
        w->comm[0].completed = 76;
        w->comm[1].live = 1;
        w->n_comms = 1000; /* beyond the record: bounded */
        for (uint32_t i = 0; i < WATCH_SHM_COMMS; i++)
            w->comm[i].live = 1;
        munmap(w, sizeof *w);
    }
    n = r ? watch_shm_read(r, s) : 0;
    ok(n == WATCH_SHM_COMMS && s[0].started == 77 && s[0].completed == 76 && s[1].comm == 0x101,
       "a kept reader sees new counts and slots; a slot count of 1000 reads %d slots (%u, %llu)",
       WATCH_SHM_COMMS, n, n ? (unsigned long long)s[0].started : 0ULL);
    watch_shm_close(r);
    watch_shm_close(NULL);
}

static void check_bad_content(struct watch_shm *m)
{
    record(m, 5, 1, 1);
    put("rank-5", m, sizeof *m - 1);
    ok(!opens(5, geteuid()), "a file a byte short is refused");
    put("rank-5", m, 0);
    ok(!opens(5, geteuid()), "an empty file (a writer not yet there) is refused");
    m->magic = 0;
    put("rank-5", m, sizeof *m);
    ok(!opens(5, geteuid()), "a record without its magic yet is refused");
    record(m, 5, 1, 1);
    m->version = WATCH_SHM_VERSION + 1;
    put("rank-5", m, sizeof *m);
    ok(!opens(5, geteuid()), "a record of another version is refused");
    record(m, 6, 1, 1);
    put("rank-5", m, sizeof *m);
    ok(!opens(5, geteuid()), "rank 6's record under rank 5's name is refused");
    record(m, 5, 1, 1);
    put("rank-5", m, sizeof *m);
    ok(opens(5, geteuid()) && !opens(5, geteuid() + 1),
       "a good record is refused to a reader expecting another owner");
}

static void check_bad_files(struct watch_shm *m)
{
    char path[128];
    record(m, 7, 1, 1);
    snprintf(path, sizeof path, "%s/rank-7", other);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    ok(fd >= 0 && write(fd, m, sizeof *m) == (ssize_t)sizeof *m, "a good record elsewhere");
    close(fd);
    ok(symlinkat(path, dirfd, "rank-7") == 0 && !opens(7, geteuid()),
       "a link to a good record is not followed");

    record(m, 8, 1, 1);
    put("rank-8", m, sizeof *m);
    ok(linkat(dirfd, "rank-8", dirfd, "eight", 0) == 0 && !opens(8, geteuid()),
       "a record with two names is refused");
    ok(mkfifoat(dirfd, "rank-9", 0600) == 0 && !opens(9, geteuid()),
       "a FIFO is refused, without waiting for a writer");
    ok(mkdirat(dirfd, "rank-10", 0700) == 0 && !opens(10, geteuid()), "a directory is refused");

    if (geteuid() != 0) {
        tap_skip("a record of another user: chown needs root");
        return;
    }
    record(m, 11, 1, 1);
    put("rank-11", m, sizeof *m);
    ok(fchownat(dirfd, "rank-11", NOBODY, NOBODY, 0) == 0 && !opens(11, 0) && opens(11, NOBODY),
       "a record owned by uid %d is refused to uid 0's reader, taken by uid %d's", NOBODY,
       NOBODY);
}

int main(void)
{
    static struct watch_shm m;
    if (!mkdtemp(dir) || !mkdtemp(other) ||
        (dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        printf("Bail out! no temporary directory\n");
        return 1;
    }
    check_good(&m);
    check_bad_content(&m);
    check_bad_files(&m);
    const char *names[] = {"rank-5", "rank-7", "rank-8", "eight", "rank-9", "rank-11"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlinkat(dirfd, names[i], 0);
    unlinkat(dirfd, "rank-10", AT_REMOVEDIR);
    char path[128];
    snprintf(path, sizeof path, "%s/rank-7", other);
    unlink(path);
    rmdir(other);
    close(dirfd);
    rmdir(dir);
    return tap_done();
}
