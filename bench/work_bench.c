/* work_bench.c - one worker of the work queue's benchmarks
 * (bench/work-bench.sh), run by tests/bootstrap/spawn as a task of a
 * simulated step. It owns the worker side of three measurements; the
 * script owns the runs, the Redis comparison and the tables.
 *
 *   work_bench queue      cohort_work_open of WB_ITEMS items, a barrier, then
 *                         lease (cap WB_CAP), "work", commit until the queue
 *                         is done, then cohort_work_close. Rank 0 prints
 *                         "elapsed_ns T items N": from the barrier after the
 *                         open returned to the close returning.
 *   work_bench static     no queue: rank r of N takes items r, r+N, r+2N ...
 *                         of WB_ITEMS (DistributedSampler's split) and works
 *                         through them; rank 0 prints "elapsed_ns T items N"
 *                         from a barrier to a barrier after the last rank.
 *   work_bench recovery   the rank WB_VICTIM (default: the last) leases all
 *                         WB_ITEMS items (default 4) and writes "T ID..." to
 *                         $WB_OUT/victim; after a barrier it waits
 *                         until every other rank is blocked in
 *                         cohort_work_lease (in a wait on a descriptor that
 *                         queue opened, read from /proc/PID/syscall),
 *                         writes the CLOCK_MONOTONIC time to $WB_OUT/kill
 *                         (a mapped page: no system call in between) and
 *                         raises SIGKILL. Each other rank appends "T ID..." to
 *                         $WB_OUT/relet.R for every lease it gets: T is the
 *                         time the lease returned. (Their cohort_finalize
 *                         fails, the victim being gone: they exit 0.)
 *
 * "Work" (queue, static): WB_ITEM_US microseconds per item at speed 1
 * (default 0: none), rank r's speed the r-th of the comma-separated
 * WB_SPEEDS (default 1): a worker of speed s sleeps WB_ITEM_US / s per
 * item, each sleep ending at an absolute deadline counted from the start
 * of its lease (or share), so that wake-up delays do not add up.
 * With WB_TRACE set, queue prints "rank R: lease N at T ms" for each lease
 * (T from the start of its leasing). Queue and static: every rank prints "rank R: ok speed S, C committed, X stale, L leases,
 * max lease M ms" (M: the longest work of one lease). Recovery: every
 * surviving rank "rank R: ok". Any mode: "rank R: FAIL: ..." on an error. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cohort.h"
#include "cohort_work.h"

#define MAX_FDS 256
#define PEER_FDS 4
#define VICTIM_WAIT_NS 30000000000LL /* the others must block in lease within 30 s */

static int rank = -1, size;

struct stats {
    long committed, stale, leases;
    long long max_lease_ns;
};

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long env_ll(const char *name, long long otherwise)
{
    const char *v = getenv(name);
    return v && *v ? atoll(v) : otherwise;
}

static int fail(struct cohort *c, const char *what)
{
    printf("rank %d: FAIL: %s\n", rank, what ? what : cohort_error(c));
    fflush(stdout);
    cohort_finalize(c);
    return 1;
}

/* A call on the queue failed: says why, closes it, finalizes. */
static int fail_closing(struct cohort *c, struct cohort_work *w)
{
    char why[512];
    snprintf(why, sizeof why, "%s", cohort_error(c));
    cohort_work_close(w);
    return fail(c, why);
}

/* This rank's speed: the rank-th entry of WB_SPEEDS, 1 if none. */
static double my_speed(void)
{
    const char *p = getenv("WB_SPEEDS");
    for (int i = 0; p && *p; i++) {
        char *end;
        double s = strtod(p, &end);
        if (i == rank)
            return s > 0 ? s : 1;
        p = strchr(end, ',');
        p = p ? p + 1 : NULL;
    }
    return 1;
}

/* n items of item_ns each, back to back: sleeps to absolute deadlines. */
static void work(long n, long long item_ns)
{
    if (item_ns <= 0 || n <= 0)
        return;
    long long start = now_ns();
    for (long i = 1; i <= n; i++) {
        long long at = start + i * item_ns;
        struct timespec ts = {.tv_sec = at / 1000000000LL, .tv_nsec = at % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
            ;
    }
}

static void print_stats(double speed, const struct stats *st)
{
    printf("rank %d: ok speed %g, %ld committed, %ld stale, %ld leases, max lease %.1f ms\n",
           rank, speed, st->committed, st->stale, st->leases, (double)st->max_lease_ns / 1e6);
    fflush(stdout);
}

/* Leases, works and commits until the queue is done: 0, or -1. */
static int drain(struct cohort_work *w, size_t cap, long long item_ns, struct stats *st)
{
    uint64_t *ids = malloc(cap * sizeof *ids);
    long n = -1;
    bool trace = getenv("WB_TRACE") != NULL;
    long long start = now_ns();
    while (ids && (n = cohort_work_lease(w, ids, cap)) > 0) {
        long long t = now_ns();
        if (trace)
            printf("rank %d: lease %ld at %.1f ms\n", rank, n, (double)(t - start) / 1e6);
        work(n, item_ns);
        t = now_ns() - t;
        st->max_lease_ns = t > st->max_lease_ns ? t : st->max_lease_ns;
        st->leases++;
        int rc = cohort_work_commit(w, ids, (size_t)n);
        if (rc < 0) {
            n = -1;
            break;
        }
        *(rc == COHORT_WORK_STALE ? &st->stale : &st->committed) += n;
    }
    free(ids);
    return n == 0 ? 0 : -1;
}

static int mode_queue(struct cohort *c)
{
    uint64_t items = (uint64_t)env_ll("WB_ITEMS", 1000000);
    size_t cap = (size_t)env_ll("WB_CAP", 1 << 20);
    double speed = my_speed();
    long long item_ns = (long long)((double)env_ll("WB_ITEM_US", 0) * 1000.0 / speed);
    struct cohort_work_opts o = {.size = sizeof o};
    struct cohort_work *w;
    struct stats st = {0};
    if (cohort_work_open(c, "bench", items, &o, &w) != 0 || cohort_barrier(c) != 0)
        return fail(c, NULL);
    long long t0 = now_ns();
    if (drain(w, cap, item_ns, &st) != 0)
        return fail_closing(c, w);
    if (cohort_work_close(w) != 0)
        return fail(c, NULL);
    long long t1 = now_ns();
    if (rank == 0)
        printf("elapsed_ns %lld items %llu\n", t1 - t0, (unsigned long long)items);
    print_stats(speed, &st);
    return cohort_finalize(c) != 0;
}

static int mode_static(struct cohort *c)
{
    long long items = env_ll("WB_ITEMS", 1000000);
    double speed = my_speed();
    long long item_ns = (long long)((double)env_ll("WB_ITEM_US", 0) * 1000.0 / speed);
    long share = items > rank ? (long)((items - rank + size - 1) / size) : 0;
    if (cohort_barrier(c) != 0)
        return fail(c, NULL);
    long long t0 = now_ns();
    work(share, item_ns);
    long long t = now_ns() - t0;
    if (cohort_barrier(c) != 0)
        return fail(c, NULL);
    long long t1 = now_ns();
    if (rank == 0)
        printf("elapsed_ns %lld items %lld\n", t1 - t0, items);
    struct stats st = {.committed = share, .leases = 1, .max_lease_ns = t};
    print_stats(speed, &st);
    return cohort_finalize(c) != 0;
}

/* The descriptors this process holds that a queue's wait can block on
 * (sockets and epoll descriptors), into fds; their count. */
static int wait_fds(int *fds, int max)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) && n < max) {
        char path[300], target[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0) {
            target[len] = '\0';
            if (strcmp(target, "anon_inode:[eventpoll]") == 0 ||
                strncmp(target, "socket:[", 8) == 0)
                fds[n++] = atoi(e->d_name);
        }
    }
    if (d)
        closedir(d);
    return n;
}

struct peer {
    pid_t pid;
    int nfd;
    int fds[PEER_FDS]; /* what its queue opened: its socket, its epoll */
};

/* The descriptors in after[] that are not in before[], into p->fds. */
static void new_fds(const int *before, int nb, const int *after, int na, struct peer *p)
{
    p->nfd = 0;
    for (int i = 0; i < na; i++) {
        bool old = false;
        for (int j = 0; j < nb; j++)
            old |= after[i] == before[j];
        if (!old && p->nfd < PEER_FDS)
            p->fds[p->nfd++] = after[i];
    }
}

/* Whether process p->pid is blocked in a wait (epoll_wait, a read) on one
 * of its queue's descriptors. */
static bool blocked_on(const struct peer *p)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/syscall", (int)p->pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    long nr = -1;
    unsigned long arg0 = 0;
    bool ok = fgets(line, sizeof line, f) && sscanf(line, "%ld %lx", &nr, &arg0) == 2;
    fclose(f);
    bool wait = nr == SYS_recvfrom || nr == SYS_recvmsg || nr == SYS_read;
#ifdef SYS_epoll_wait
    wait |= nr == SYS_epoll_wait;
#endif
#ifdef SYS_epoll_pwait
    wait |= nr == SYS_epoll_pwait;
#endif
#ifdef SYS_epoll_pwait2
    wait |= nr == SYS_epoll_pwait2;
#endif
    bool mine = false;
    for (int i = 0; i < p->nfd; i++)
        mine |= arg0 == (unsigned long)p->fds[i];
    return ok && wait && mine;
}

/* Appends "T ID..." to $WB_OUT/NAME. */
static void record(const char *name, long long t, const uint64_t *ids, long n)
{
    char path[512], line[4096];
    snprintf(path, sizeof path, "%s/%s", getenv("WB_OUT"), name);
    int len = snprintf(line, sizeof line, "%lld", t);
    for (long i = 0; i < n && len < (int)sizeof line - 24; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %llu",
                        (unsigned long long)ids[i]);
    line[len++] = '\n';
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        (void)!write(fd, line, (size_t)len);
        close(fd);
    }
}

/* The victim: holds every item, waits for the others to block in their
 * lease, notes the time in a mapped page and dies. Returns only on error. */
static int victim(struct cohort *c, struct cohort_work *w, const struct peer *peers,
                  uint64_t items)
{
    uint64_t *ids = malloc(items * sizeof *ids);
    uint64_t held = 0;
    long n = 1;
    while (ids && held < items && (n = cohort_work_lease(w, ids + held, items - held)) > 0)
        held += (uint64_t)n;
    char path[512];
    snprintf(path, sizeof path, "%s/kill", getenv("WB_OUT"));
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    char *page = fd >= 0 && ftruncate(fd, 32) == 0
                     ? mmap(NULL, 32, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                     : MAP_FAILED;
    bool ok = ids && held == items && page != MAP_FAILED;
    if (ok)
        record("victim", now_ns(), ids, (long)held);
    free(ids);
    if (!ok)
        return fail(c, n < 0 ? NULL : "the victim could not lease every item or map its file");
    if (cohort_barrier(c) != 0)
        return fail(c, NULL);
    long long end = now_ns() + VICTIM_WAIT_NS;
    for (int r = 0; r < size; r++)
        while (r != rank && !blocked_on(&peers[r]))
            if (now_ns() > end)
                return fail(c, "the others did not block in cohort_work_lease "
                               "(is /proc/PID/syscall readable?)");
            else
                sched_yield();
    snprintf(page, 32, "%-30lld\n", now_ns());
    raise(SIGKILL);
    return 1;
}

/* Any other rank: leases until the queue is done, noting each grant. */
static int survivor(struct cohort *c, struct cohort_work *w)
{
    char name[32];
    uint64_t ids[64];
    long n;
    snprintf(name, sizeof name, "relet.%d", rank);
    if (cohort_barrier(c) != 0)
        return fail(c, NULL);
    while ((n = cohort_work_lease(w, ids, 64)) > 0) {
        long long t = now_ns();
        record(name, t, ids, n);
        if (cohort_work_commit(w, ids, (size_t)n) < 0)
            break;
    }
    if (n != 0)
        return fail_closing(c, w);
    if (cohort_work_close(w) != 0)
        return fail(c, NULL);
    printf("rank %d: ok\n", rank);
    fflush(stdout);
    cohort_finalize(c); /* its last barrier fails: the victim is gone */
    return 0;
}

/* Every rank's pid and the descriptors its queue opened, into peers: 0
 * or -1. */
static int gather_peers(struct cohort *c, const int *before, int nb, struct peer *peers)
{
    int after[MAX_FDS];
    struct peer me = {.pid = getpid()};
    new_fds(before, nb, after, wait_fds(after, MAX_FDS), &me);
    if (cohort_allgather(c, &me, sizeof me, peers) != 0)
        return -1;
    for (int r = 0; r < size; r++)
        if (peers[r].nfd == 0)
            return -1;
    return 0;
}

static int mode_recovery(struct cohort *c)
{
    uint64_t items = (uint64_t)env_ll("WB_ITEMS", 4);
    int victim_rank = (int)env_ll("WB_VICTIM", size - 1);
    int before[MAX_FDS];
    struct cohort_work_opts o = {.size = sizeof o};
    struct cohort_work *w;
    if (!getenv("WB_OUT"))
        return fail(c, "WB_OUT is not set");
    int nb = wait_fds(before, MAX_FDS);
    if (cohort_work_open(c, "recovery", items, &o, &w) != 0)
        return fail(c, NULL);
    struct peer *peers = malloc(sizeof *peers * (size_t)size);
    if (!peers || gather_peers(c, before, nb, peers) != 0) {
        free(peers);
        return fail_closing(c, w);
    }
    int rc = rank == victim_rank ? victim(c, w, peers, items) : survivor(c, w);
    free(peers);
    return rc;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "queue") && strcmp(mode, "static") && strcmp(mode, "recovery")) {
        fprintf(stderr, "usage: work_bench queue|static|recovery (see bench/work_bench.c)\n");
        return 2;
    }
    struct cohort *c;
    if (cohort_init(&c, NULL) != 0)
        return fail(c, NULL);
    rank = cohort_rank(c);
    size = cohort_size(c);
    if (strcmp(mode, "queue") == 0)
        return mode_queue(c);
    if (strcmp(mode, "static") == 0)
        return mode_static(c);
    return mode_recovery(c);
}
