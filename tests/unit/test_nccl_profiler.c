/* test_nccl_profiler.c - libcohort-nccl-profiler.so driven as NCCL drives
 * it, and its record read back as the node agent reads it (watch_shm.h).
 * The built module is dlopened and its tables found by name, as NCCL 2.28
 * finds ncclProfiler_v5 (and 2.27 ncclProfiler_v4); each communicator gets
 * init (hash, size, rank), then its collectives the events of 2.28: the
 * collective starts and stops when enqueued, then the proxy thread starts
 * and stops one kernel channel event per channel, each with a state record
 * before its stop; finalize ends it. Checked: the module needs libc alone
 * and exports its tables alone; started and completed (completed only when
 * every channel's kernel work stopped), the last operation, two
 * communicators in two slots, a second init of one in the same slot, the
 * record kept after finalize and taken again; point-to-point and foreign
 * events not counted; the v4 table; and the plugin declining, silently
 * without COHORT_WATCH_DIR, saying why in NCCL's log otherwise: a bad rank,
 * a relative path, a directory of another mode or owner or a link, and in
 * it a planted link, FIFO, file with two names, a file of another size or
 * another rank's record (each left as it was), and every slot taken. */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nccl_profiler_abi.h"
#include "tap.h"
#include "watch.h"
#include "watch_shm.h"

#define RANK 5
#define RING 4096 /* nccl_profiler.c's PROF_RING */
#define NOBODY 65534

static const struct nccl_profiler_v5 *v5;
static const struct nccl_profiler_v4 *v4;
static char dir[] = "/tmp/nccl-prof-test.XXXXXX";
static int dirfd;
static char logged[512];

/* The logger stands for NCCL's: it keeps the last line. */
static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
    (void)level, (void)flags, (void)file, (void)line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(logged, sizeof logged, fmt, ap);
    va_end(ap);
}

/* init5 calls init through v5 as NCCL 2.28 does; it returns the context,
 * or NULL. */
static void *init5(uint64_t comm, int nranks, int rank, int *rc)
{
    void *ctx = (void *)1;
    int mask = 0;
    logged[0] = '\0';
    *rc = v5->init(&ctx, comm, &mask, "test", 1, nranks, rank, logger);
    if (!*rc && mask != (NCCL_PROF_COLL | NCCL_PROF_KERNEL_CH))
        *rc = -1000 - mask;
    return ctx;
}

static void *start5(void *ctx, uint64_t type, void *parent, const char *func, uint8_t nch)
{
    struct nccl_prof_descr_v5 d;
    memset(&d, 0, sizeof d);
    d.type = type;
    d.parent = parent;
    d.rank = 0;
    if (type == NCCL_PROF_COLL) {
        d.coll.func = func;
        d.coll.nchannels = nch;
        d.coll.datatype = "ncclFloat32";
    }
    void *h = (void *)1;
    return v5->start_event(ctx, &h, &d) == 0 ? h : (void *)1;
}

/* kernel_stop ends a kernel channel as the proxy thread does: its state,
 * then its stop. */
static void kernel_stop(void *h)
{
    uint64_t args[2] = {123456, 0};
    if (h) {
        v5->record_state(h, 22, args);
        v5->stop_event(h);
    }
}

/* coll5 runs one collective on nch channels to its end, as NCCL 2.28
 * does. */
static void coll5(void *ctx, const char *func, uint8_t nch)
{
    void *c = start5(ctx, NCCL_PROF_COLL, NULL, func, nch);
    void *k[8] = {0};
    v5->stop_event(c);
    for (int i = 0; i < nch && i < 8; i++)
        k[i] = start5(ctx, NCCL_PROF_KERNEL_CH, c, NULL, 0);
    for (int i = 0; i < nch && i < 8; i++)
        kernel_stop(k[i]);
}

/* slot reads the slot of (comm, rank) in rank's record as the agent reads
 * it; *n gets the live slots (-1: no record). */
static struct watch_shm_slot slot(uint32_t rank, uint64_t comm, uint32_t crank, int *n)
{
    struct watch_shm_slot s[WATCH_SHM_COMMS], none = {0};
    struct watch_shm_reader *r = watch_shm_open(dirfd, rank, geteuid());
    *n = r ? (int)watch_shm_read(r, s) : -1;
    watch_shm_close(r);
    for (int i = 0; i < *n; i++)
        if (s[i].comm == comm && s[i].rank == crank)
            return s[i];
    return none;
}

#define COUNTS(s) (unsigned long long)(s).started, (unsigned long long)(s).completed

/* check_module loads the module and checks that its tables are found,
 * libc is its only need and the tables its only symbols. */
static void *check_module(void)
{
    void *h = dlopen(PROFILER_SO, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("Bail out! %s\n", dlerror());
        exit(1);
    }
    v5 = dlsym(h, "ncclProfiler_v5");
    v4 = dlsym(h, "ncclProfiler_v4");
    ok(v5 && v4 && v5->name && !strcmp(v5->name, "cohort-watch") && v4->init,
       "ncclProfiler_v5 and ncclProfiler_v4 are found by name (%s)", v5 ? v5->name : "none");
    ok(!dlsym(h, "prof_shm_take") && !dlsym(h, "watch_shm_open"), "nothing else is exported");
    struct link_map *lm = NULL;
    const char *strtab = NULL, *bad = NULL;
    int needed = 0;
    /* The sanitizer build links their runtimes in. */
    int san = getenv("COHORT_SANITIZED") != NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0)
        for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_STRTAB)
                strtab = (const char *)d->d_un.d_ptr;
    for (const ElfW(Dyn) *d = lm && strtab ? lm->l_ld : NULL; d && d->d_tag != DT_NULL; d++) {
        const char *name = d->d_tag == DT_NEEDED ? strtab + d->d_un.d_val : NULL;
        needed += name != NULL;
        if (name && strncmp(name, "libc.so", 7) && strncmp(name, "libpthread.so", 13) &&
            !(san && (!strncmp(name, "libasan.so", 10) || !strncmp(name, "libubsan.so", 11))))
            bad = name;
    }
    ok(strtab && needed >= 1 && !bad, "the module needs libc alone (%d needed%s%s)", needed,
       bad ? ", also " : "", bad ? bad : "");
    return h;
}

static void check_counts(void)
{
    int rc, n;
    void *a = init5(0xa11, 4, 2, &rc);
    struct watch_shm_slot s = slot(RANK, 0xa11, 2, &n);
    ok(rc == 0 && a && n == 1 && s.nranks == 4 && s.started == 0 && s.completed == 0,
       "init takes a slot: comm a11, 4 ranks, rank 2 (rc %d, %d slots)", rc, n);

    void *c = start5(a, NCCL_PROF_COLL, NULL, "AllReduce", 2);
    v5->stop_event(c);
    s = slot(RANK, 0xa11, 2, &n);
    ok(c && s.started == 1 && s.completed == 0 && s.op == WATCH_OP_ALLREDUCE,
       "an allreduce enqueued is started, not completed (%llu/%llu, op %u)", COUNTS(s), s.op);
    void *k0 = start5(a, NCCL_PROF_KERNEL_CH, c, NULL, 0);
    void *k1 = start5(a, NCCL_PROF_KERNEL_CH, c, NULL, 0);
    kernel_stop(k0);
    s = slot(RANK, 0xa11, 2, &n);
    ok(k0 && k1 && k0 != c && s.completed == 0,
       "one of its 2 channels done: not completed (%llu/%llu)", COUNTS(s));
    kernel_stop(k1);
    s = slot(RANK, 0xa11, 2, &n);
    ok(s.started == 1 && s.completed == 1, "both done: completed (%llu/%llu)", COUNTS(s));
    kernel_stop(k1);
    s = slot(RANK, 0xa11, 2, &n);
    ok(s.completed == 1, "a channel stopping twice counts once (%llu/%llu)", COUNTS(s));

    for (int i = 0; i < 10; i++)
        coll5(a, "AllGather", (uint8_t)(1 + i % 4));
    coll5(a, "Broadcast", 3);
    s = slot(RANK, 0xa11, 2, &n);
    ok(s.started == 12 && s.completed == 12 && s.op == WATCH_OP_BROADCAST,
       "11 more run to their end: 12/12, the last a broadcast (%llu/%llu, op %u)", COUNTS(s),
       s.op);

    c = start5(a, NCCL_PROF_COLL, NULL, "ReduceScatter", 0);
    s = slot(RANK, 0xa11, 2, &n);
    v5->stop_event(c);
    struct watch_shm_slot t = slot(RANK, 0xa11, 2, &n);
    ok(s.completed == 12 && t.started == 13 && t.completed == 13,
       "a collective without a channel count completes when enqueued (%llu/%llu)", COUNTS(t));
    v5->finalize(a);
    s = slot(RANK, 0xa11, 2, &n);
    ok(n == 1 && s.started == 13 && s.completed == 13, "finalize leaves the record (%llu/%llu)",
       COUNTS(s));
}

static void check_foreign(void)
{
    int rc, n;
    void *a = init5(0xa11, 4, 2, &rc);
    void *b = init5(0xb22, 8, 7, &rc);
    struct watch_shm_slot s = slot(RANK, 0xa11, 2, &n);
    struct watch_shm_slot t = slot(RANK, 0xb22, 7, &n);
    ok(a && b && n == 2 && s.started == 13 && t.nranks == 8 && t.started == 0,
       "after finalize, comm a11 gets its slot back; comm b22 a second one (%d slots)", n);

    void *p = start5(a, NCCL_PROF_P2P, NULL, "Send", 0);
    void *pk = start5(a, NCCL_PROF_KERNEL_CH, NULL, NULL, 0);
    void *cb = start5(b, NCCL_PROF_COLL, NULL, "AllReduce", 1);
    void *cross = start5(a, NCCL_PROF_KERNEL_CH, cb, NULL, 0);
    void *mid = start5(b, NCCL_PROF_KERNEL_CH, (char *)cb + 1, NULL, 0);
    void *group = start5(a, 1, NULL, NULL, 0);
    void *none = start5(NULL, NCCL_PROF_COLL, NULL, "AllReduce", 1);
    ok(!p && !pk && cb && !cross && !mid && !group && !none,
       "no handle for a p2p, its channels, a channel of another comm's or a bad parent, a "
       "group, or a declined comm's collective");
    v5->stop_event(NULL);
    s = slot(RANK, 0xa11, 2, &n);
    t = slot(RANK, 0xb22, 7, &n);
    ok(s.started == 13 && s.completed == 13 && t.started == 1 && t.completed == 0,
       "only comm b22's collective counts, on its slot (%llu/%llu, %llu/%llu)", COUNTS(s),
       COUNTS(t));

    void *a2 = init5(0xa11, 4, 2, &rc);
    coll5(a2, "Reduce", 2);
    s = slot(RANK, 0xa11, 2, &n);
    ok(a2 && a2 != a && n == 2 && s.started == 14 && s.completed == 14 && s.op == WATCH_OP_REDUCE,
       "a second init of comm a11 counts on its slot (%d slots, %llu/%llu)", n, COUNTS(s));

    /* The ring: RING collectives enqueued past one that never ends. */
    for (int i = 0; i < RING; i++)
        v5->stop_event(start5(b, NCCL_PROF_COLL, NULL, "AllReduce", 1));
    t = slot(RANK, 0xb22, 7, &n);
    ok(t.started == RING + 1 && t.completed == 1,
       "%d collectives past one whose kernel never ended: it is given up as completed "
       "(%llu/%llu)", RING, COUNTS(t));
    v5->finalize(a2);
    v5->finalize(b);
    v5->finalize(a);
    ok(v5->finalize(NULL) == 0, "finalize of no context");
}

/* check_v4 drives the v4 table of NCCL 2.27: its own init, a descriptor
 * whose type is one byte (the rest of the word holds anything). */
static void check_v4(void)
{
    int mask = 0, n;
    void *ctx = NULL;
    int rc = v4->init(&ctx, &mask, "v4", 0xc33, 1, 2, 1, logger);
    struct nccl_prof_descr_v4 d;
    memset(&d, 0xa5, sizeof d);
    d.type = NCCL_PROF_COLL;
    d.parent = NULL;
    d.coll.func = "AllGather";
    d.coll.nchannels = 1;
    void *c = NULL, *k = NULL;
    v4->start_event(ctx, &c, &d);
    v4->stop_event(c);
    memset(&d, 0xa5, sizeof d);
    d.type = NCCL_PROF_KERNEL_CH;
    d.parent = c;
    v4->start_event(ctx, &k, &d);
    v4->record_state(k, 22, NULL);
    v4->stop_event(k);
    struct watch_shm_slot s = slot(RANK, 0xc33, 1, &n);
    ok(rc == 0 && mask == (NCCL_PROF_COLL | NCCL_PROF_KERNEL_CH) && s.nranks == 2 &&
           s.started == 1 && s.completed == 1 && s.op == WATCH_OP_ALLGATHER,
       "v4: an allgather on comm c33 runs to its end (rc %d, %llu/%llu)", rc, COUNTS(s));
    v4->finalize(ctx);
}

/* try_init runs init with the environment as it is and finalizes the
 * context again: 0 when the plugin took the record, else its error (the
 * log line in logged). */
static int try_init(uint64_t comm)
{
    int rc;
    void *x = init5(comm, 2, 0, &rc);
    if (!rc)
        v5->finalize(x);
    else if (x)
        rc = -2000;
    return rc;
}

/* fresh_dir makes a 0700 directory for the next case and points
 * COHORT_WATCH_DIR at it. */
static char *fresh_dir(char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/nccl-prof-case.XXXXXX");
    if (!mkdtemp(path))
        path[0] = '\0';
    setenv("COHORT_WATCH_DIR", path, 1);
    return path;
}

/* Removes path's file f (when given) and path. */
static void drop(const char *path, const char *f)
{
    char p[160];
    if (f) {
        snprintf(p, sizeof p, "%s/%s", path, f);
        unlink(p);
    }
    rmdir(path);
}

static void check_env(void)
{
    int n;
    unsetenv("COHORT_WATCH_DIR");
    int rc = try_init(0xd44);
    ok(rc != 0 && !logged[0], "without COHORT_WATCH_DIR the plugin declines, silently (rc %d)", rc);
    setenv("COHORT_WATCH_DIR", "tmp/watch", 1);
    rc = try_init(0xd44);
    ok(rc != 0 && strstr(logged, "absolute"), "a relative COHORT_WATCH_DIR is declined (%s)",
       logged);
    setenv("COHORT_WATCH_DIR", dir, 1);
    setenv("RANK", "5x", 1);
    rc = try_init(0xd44);
    ok(rc != 0 && strstr(logged, "RANK=5x"), "RANK=5x is declined (%s)", logged);
    unsetenv("RANK");
    setenv("SLURM_PROCID", "3", 1);
    rc = try_init(0xd44);
    struct watch_shm_slot s = slot(3, 0xd44, 0, &n);
    ok(rc == 0 && n == 1 && s.nranks == 2, "without RANK, SLURM_PROCID=3 names rank-3 (rc %d, %d)",
       rc, n);
    unsetenv("SLURM_PROCID");
    rc = try_init(0xd44);
    ok(rc != 0 && strstr(logged, "SLURM_PROCID"), "with neither, the plugin declines (%s)", logged);
    unlinkat(dirfd, "rank-3", 0);
    setenv("RANK", "5", 1);
}

static void check_dirs(void)
{
    char d[64], link[96];
    struct stat st;
    fresh_dir(d, sizeof d);
    chmod(d, 0755);
    int rc = try_init(0xd44);
    snprintf(link, sizeof link, "%s/rank-5", d);
    ok(rc != 0 && strstr(logged, "mode 0700") && stat(link, &st) != 0,
       "a directory of mode 0755 is declined, nothing made in it (%s)", logged);
    chmod(d, 0700);
    snprintf(link, sizeof link, "%s/link", d);
    ok(symlink(dir, link) == 0, "a link to the good directory");
    setenv("COHORT_WATCH_DIR", link, 1);
    rc = try_init(0xd44);
    ok(rc != 0 && strstr(logged, "mode 0700"), "a directory named through a link is declined (%s)",
       logged);
    drop(d, "link");
    if (geteuid() != 0) {
        tap_skip("a directory of another user: chown needs root");
    } else {
        fresh_dir(d, sizeof d);
        rc = chown(d, NOBODY, NOBODY) == 0 ? try_init(0xd44) : 0;
        ok(rc != 0 && strstr(logged, "directory of uid 0"),
           "a directory of uid %d is declined for uid 0 (%s)", NOBODY, logged);
        drop(d, NULL);
    }
    setenv("COHORT_WATCH_DIR", dir, 1);
}

/* planted checks that what a neighbour (or an accident) left at rank-5's
 * name is refused and left as it was. */
static void planted(const char *what, int (*plant)(int dirfd, const char *elsewhere),
                    off_t size_after)
{
    char d[64], elsewhere[96];
    struct stat st;
    fresh_dir(d, sizeof d);
    snprintf(elsewhere, sizeof elsewhere, "%s.target", d);
    int fd = open(d, O_RDONLY | O_DIRECTORY);
    int planted_ok = fd >= 0 && plant(fd, elsewhere) == 0;
    int rc = try_init(0xd44);
    int same = fstatat(fd, "rank-5", &st, 0) == 0 && st.st_size == size_after;
    ok(planted_ok && rc != 0 && same && strstr(logged, "rank"),
       "rank-5 planted as %s: declined, left as it was (%s)", what, logged);
    unlinkat(fd, "rank-5", 0);
    unlinkat(fd, "second", 0);
    close(fd);
    unlink(elsewhere);
    drop(d, NULL);
}

static int put_file(int fd, const char *name, const void *data, size_t len, mode_t mode)
{
    int f = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL, mode);
    int rc = f >= 0 && write(f, data, len) == (ssize_t)len && fchmod(f, mode) == 0 ? 0 : -1;
    if (f >= 0)
        close(f);
    return rc;
}

static int plant_link(int fd, const char *elsewhere)
{
    return put_file(AT_FDCWD, elsewhere, "x", 1, 0600) || symlinkat(elsewhere, fd, "rank-5");
}

static int plant_fifo(int fd, const char *elsewhere)
{
    (void)elsewhere;
    return mkfifoat(fd, "rank-5", 0600);
}

static int plant_two_names(int fd, const char *elsewhere)
{
    (void)elsewhere;
    return put_file(fd, "rank-5", "", 0, 0600) || linkat(fd, "rank-5", fd, "second", 0);
}

static int plant_short(int fd, const char *elsewhere)
{
    static const char junk[100];
    (void)elsewhere;
    return put_file(fd, "rank-5", junk, sizeof junk, 0600);
}

static int plant_open(int fd, const char *elsewhere)
{
    (void)elsewhere;
    return put_file(fd, "rank-5", "", 0, 0640);
}

static int plant_rank6(int fd, const char *elsewhere)
{
    static struct watch_shm m;
    (void)elsewhere;
    m.magic = WATCH_SHM_MAGIC;
    m.version = WATCH_SHM_VERSION;
    m.rank = 6;
    return put_file(fd, "rank-5", &m, sizeof m, 0600);
}

static void check_refusals(void)
{
    check_env();
    check_dirs();
    planted("a link to a file elsewhere", plant_link, 1);
    planted("a FIFO", plant_fifo, 0);
    planted("a file with two names", plant_two_names, 0);
    planted("a file of 100 bytes", plant_short, 100);
    planted("a file others may read", plant_open, 0);
    planted("rank 6's record", plant_rank6, (off_t)sizeof(struct watch_shm));

    char d[64];
    void *ctx[WATCH_SHM_COMMS];
    int rc = 0, taken = 0;
    fresh_dir(d, sizeof d);
    for (int i = 0; i < WATCH_SHM_COMMS; i++)
        taken += (ctx[i] = init5(0x1000 + (uint64_t)i, 2, 0, &rc)) != NULL;
    void *more = init5(0x2000, 2, 0, &rc);
    ok(taken == WATCH_SHM_COMMS && !more && rc != 0 && strstr(logged, "taken"),
       "%d communicators take every slot; one more is declined (%s)", taken, logged);
    for (int i = 0; i < WATCH_SHM_COMMS; i++)
        v5->finalize(ctx[i]);
    drop(d, "rank-5");
    setenv("COHORT_WATCH_DIR", dir, 1);
}

int main(void)
{
    if (!mkdtemp(dir) || (dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        printf("Bail out! no temporary directory\n");
        return 1;
    }
    setenv("COHORT_WATCH_DIR", dir, 1);
    char rank[16];
    snprintf(rank, sizeof rank, "%d", RANK);
    setenv("RANK", rank, 1);
    void *h = check_module();
    check_counts();
    check_foreign();
    check_v4();
    check_refusals();
    dlclose(h);
    unlinkat(dirfd, "rank-5", 0);
    close(dirfd);
    rmdir(dir);
    return tap_done();
}
