/* work_check.c - one worker of a work-queue test, for tests/work.sh (run
 * by tests/bootstrap/spawn): cohort_init, cohort_work_open of queue
 * COHORT_TEST_QUEUE (default "q") with COHORT_TEST_ITEMS items (default
 * 10000), then lease (cap COHORT_TEST_CAP, default 64), "process" (usleep
 * COHORT_TEST_US microseconds per item, default 0; the rank named by
 * COHORT_TEST_SLOW_RANK takes 4x that) and commit until the queue is done,
 * then cohort_work_close. Every id this rank committed (commit returned 0)
 * is appended as a line to $COHORT_TEST_OUT/committed.R, every id it was
 * leased to $COHORT_TEST_OUT/leased.R, with write(2) as it happens (for a
 * commit that returned COHORT_WORK_STALE, its ids but the stale ones). Prints
 * "rank R: ok N committed, S stale" or "rank R: FAIL: <cohort_error()>" (and,
 * when a call failed and the close after it fails too, "rank R: close:
 * <cohort_error()>").
 *
 * COHORT_TEST_JOURNAL: the queue's journal. COHORT_TEST_LEASE_TIMEOUT and
 * COHORT_TEST_MAX_ATTEMPTS: its lease_timeout_s and max_attempts.
 * COHORT_TEST_OPTS=bad-items: the last rank opens one item more (ranks
 * disagree); bad-name: the last rank opens queue "other";
 * zero-items: every rank opens 0 items.
 * Victims (the rank COHORT_TEST_VICTIM, or every rank of the node
 * COHORT_TEST_VICTIM_NODE, at its COHORT_TEST_AT-th lease, 1 if unset,
 * while it holds that lease):
 *   COHORT_TEST_DO=kill   SIGKILL itself (before its close if the queue
 *                         ended before that lease);
 *   COHORT_TEST_DO=stop   SIGSTOP itself; rank 0 sends it SIGCONT once its
 *                         own close returned; it then commits (expecting
 *                         COHORT_WORK_STALE: "rank R: stale after stop"), and
 *                         goes on;
 *   COHORT_TEST_DO=kill-coord  SIGKILL the coordinator (rank 0's child
 *                         cohort-work-coord), then go on: every rank's next
 *                         call fails (at its close, if the queue ended
 *                         before that lease; stop-coord, foreign and
 *                         environ too);
 *   COHORT_TEST_DO=stop-coord  SIGSTOP the coordinator ("rank R: stopping
 *                         the coordinator (pid P)"; the test kills it after),
 *                         then go on: every rank's next call fails at its
 *                         deadline (COHORT_TIMEOUT);
 *   COHORT_TEST_DO=kill-relay  SIGKILL its node's relay (the cohort-relay
 *                         child of its node's first rank, ranks placed in
 *                         blocks): "rank R: killing the relay (pid P)", then
 *                         go on: its node's ranks fail at their next call;
 *   COHORT_TEST_DO=foreign commit an id it does not hold ("rank R: foreign:
 *                         <cohort_error()>"), then go on;
 *   COHORT_TEST_DO=environ print the names in the coordinator's environment
 *                         (/proc/PID/environ): "rank R: coordinator
 *                         environment: NAME ...", then go on;
 *   COHORT_TEST_DO=kill-in SIGKILL itself from a thread at a random moment
 *                         (0 to 3 ms, seeded by COHORT_TEST_SEED) while its
 *                         commit with results of that lease runs;
 *   COHORT_TEST_DO=kill-after SIGKILL itself as that commit returns.
 * COHORT_TEST_OUTPUT: the queue's output directory: every commit is a
 * cohort_work_commit_output whose results are, for each id in the call's
 * order, the id (8 bytes, big-endian) and COHORT_TEST_BYTES - 8 bytes of
 * the id's low byte (COHORT_TEST_BYTES default 16, at least 8).
 * COHORT_TEST_SOCKETS=1: once every rank has opened the queue (a barrier),
 * and before any leases (another), rank 0 prints "rank 0: coordinator sockets: N" and each node's first
 * rank "rank R: relay sockets: N" (the sockets in /proc/PID/fd of its
 * child cohort-work-coord, cohort-relay).
 * COHORT_TEST_SECOND=1: every rank also opens queue "q2" of 1000 items
 * right after the first (leased and committed after it), and with
 * COHORT_TEST_SOCKETS each
 * node's first rank prints "rank R: relay processes: N" (its children
 * named cohort-relay: one, when the node's relay process runs both
 * queues' relays).
 * COHORT_TEST_HAND (without COHORT_TEST_OUTPUT; for bench/output-bench.sh):
 * a directory where the worker writes those results itself, a file per
 * batch, synced, then commits the ids alone (save, then commit). */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cohort.h"
#include "cohort_work.h"
#include "proc_child.h"

static int rank = -1;

static long env_long(const char *name, long otherwise)
{
    const char *v = getenv(name);
    return v && *v ? atol(v) : otherwise;
}

static int fail(struct cohort *c)
{
    printf("rank %d: FAIL: %s\n", rank, cohort_error(c));
    fflush(stdout);
    cohort_finalize(c);
    return 1;
}

/* Appends ids, one per line, to $COHORT_TEST_OUT/KIND.RANK. */
static void record(const char *kind, const uint64_t *ids, long n)
{
    const char *dir = getenv("COHORT_TEST_OUT");
    if (!dir || n <= 0)
        return;
    char path[512], *buf = malloc((size_t)n * 21 + 1);
    snprintf(path, sizeof path, "%s/%s.%d", dir, kind, rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    size_t len = 0;
    for (long i = 0; buf && i < n; i++)
        len += (size_t)sprintf(buf + len, "%llu\n", (unsigned long long)ids[i]);
    if (fd >= 0 && buf)
        (void)!write(fd, buf, len);
    if (fd >= 0)
        close(fd);
    free(buf);
}

/* The coordinator: the cohort-work-coord process whose parent is pid. */
static pid_t coordinator_of(pid_t parent)
{
    return proc_child(parent, "cohort-work-coord");
}

/* The sockets process p holds (-1: unreadable). */
static int sockets_of(pid_t p)
{
    char path[64], link[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)p);
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        char fd[64 + 256 + 2];
        snprintf(fd, sizeof fd, "%s/%s", path, e->d_name);
        ssize_t len = readlink(fd, link, sizeof link - 1);
        n += len > 8 && strncmp(link, "socket:[", 8) == 0;
    }
    if (d)
        closedir(d);
    return d ? n : -1;
}

/* COHORT_TEST_SOCKETS: the coordinator's and the relays' sockets. */
static void print_sockets(void)
{
    pid_t relay = proc_child(getpid(), "cohort-relay");
    if (rank == 0)
        printf("rank 0: coordinator sockets: %d\n", sockets_of(coordinator_of(getpid())));
    if (relay > 0)
        printf("rank %d: relay sockets: %d\n", rank, sockets_of(relay));
    if (relay > 0 && getenv("COHORT_TEST_SECOND"))
        printf("rank %d: relay processes: %d\n", rank, proc_children(getpid(), "cohort-relay"));
    fflush(stdout);
}

/* "rank R: coordinator environment: NAME ..." of process p. */
static void print_environ(pid_t p)
{
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)p);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    printf("rank %d: coordinator environment:", rank);
    if (n >= 0)
        buf[n] = 0;
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
        printf(" %.*s", (int)strcspn(buf + i, "="), buf + i);
    printf("%s\n", n < 0 ? " (unreadable)" : "");
    fflush(stdout);
}

/* The results of ids (COHORT_TEST_OUTPUT): malloc'd, *len bytes. */
static uint8_t *results(const uint64_t *ids, long n, size_t *len)
{
    size_t per = (size_t)env_long("COHORT_TEST_BYTES", 16);
    per = per < 8 ? 8 : per;
    uint8_t *b = malloc(per * (size_t)n + 1);
    for (long i = 0; b && i < n; i++) {
        uint8_t *p = b + per * (size_t)i;
        for (int k = 0; k < 8; k++)
            p[k] = (uint8_t)(ids[i] >> (56 - 8 * k));
        memset(p + 8, (int)(ids[i] & 0xff), per - 8);
    }
    *len = per * (size_t)n;
    return b;
}

static void *killer(void *arg)
{
    usleep((useconds_t)(uintptr_t)arg);
    raise(SIGKILL);
    return NULL;
}

/* Results saved by hand: a file of this rank's in dir, synced. */
static void save_by_hand(const char *dir, const uint64_t *ids, long n)
{
    static long seq;
    char path[512];
    size_t len;
    uint8_t *b = results(ids, n, &len);
    snprintf(path, sizeof path, "%s/r-%d-%ld", dir, rank, seq++);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (!b || fd < 0 || write(fd, b, len) != (ssize_t)len || fdatasync(fd) < 0)
        fprintf(stderr, "rank %d: cannot save %s\n", rank, path);
    if (fd >= 0)
        close(fd);
    free(b);
}

/* The commit of ids: with results when the queue has an output directory. */
static int commit(struct cohort_work *w, const uint64_t *ids, long n)
{
    if (getenv("COHORT_TEST_HAND"))
        save_by_hand(getenv("COHORT_TEST_HAND"), ids, n);
    if (!getenv("COHORT_TEST_OUTPUT"))
        return cohort_work_commit(w, ids, (size_t)n);
    size_t len;
    uint8_t *b = results(ids, n, &len);
    int rc = b ? cohort_work_commit_output(w, ids, (size_t)n, b, len) : -1;
    free(b);
    return rc;
}

/* What the victim does at its lease. */
static void victim(struct cohort_work *w, struct cohort *c, const pid_t *pids, uint64_t *ids,
                   long n)
{
    const char *what = getenv("COHORT_TEST_DO");
    if (strcmp(what, "kill") == 0)
        raise(SIGKILL);
    if (strcmp(what, "kill-in") == 0 || strcmp(what, "kill-after") == 0) {
        pthread_t t;
        srand((unsigned)env_long("COHORT_TEST_SEED", 1) * 7919u + (unsigned)rank);
        if (what[5] == 'i')
            pthread_create(&t, NULL, killer, (void *)(uintptr_t)(rand() % 3000));
        commit(w, ids, n);
        raise(SIGKILL);
    }
    if (strcmp(what, "kill-coord") == 0 || strcmp(what, "stop-coord") == 0) {
        bool stop = what[0] == 's';
        pid_t p = coordinator_of(pids[0]);
        printf("rank %d: %s the coordinator (pid %d)\n", rank, stop ? "stopping" : "killing",
               (int)p);
        fflush(stdout);
        if (p > 0)
            kill(p, stop ? SIGSTOP : SIGKILL);
    }
    if (strcmp(what, "kill-relay") == 0) {
        pid_t p = proc_child(pids[rank - cohort_local_rank(c)], "cohort-relay");
        printf("rank %d: killing the relay (pid %d)\n", rank, (int)p);
        fflush(stdout);
        if (p > 0)
            kill(p, SIGKILL);
    }
    if (strcmp(what, "environ") == 0)
        print_environ(coordinator_of(pids[0]));
    if (strcmp(what, "foreign") == 0) {
        uint64_t items = (uint64_t)env_long("COHORT_TEST_ITEMS", 10000);
        uint64_t other = n > 0 && ids[n - 1] + 1 < items ? ids[n - 1] + 1 : 0;
        int rc = cohort_work_commit(w, &other, 1);
        printf("rank %d: foreign: %d %s\n", rank, rc, rc < 0 ? cohort_error(c) : "");
        fflush(stdout);
    }
    if (strcmp(what, "stop") == 0) {
        raise(SIGSTOP);
        int rc = commit(w, ids, n);
        printf("rank %d: %s after stop\n", rank,
               rc == COHORT_WORK_STALE ? "stale" : rc == 0 ? "committed" : cohort_error(c));
        fflush(stdout);
    }
}

/* Leases, processes and commits until the queue is done. */
static int run(struct cohort_work *w, struct cohort *c, const pid_t *pids)
{
    size_t cap = (size_t)env_long("COHORT_TEST_CAP", 64);
    long us = env_long("COHORT_TEST_US", 0), leases = 0, done = 0, stale = 0, n = -1;
    if (env_long("COHORT_TEST_SLOW_RANK", -1) == rank)
        us *= 4;
    bool is_victim = getenv("COHORT_TEST_DO") &&
                     (env_long("COHORT_TEST_VICTIM", -1) == rank ||
                      env_long("COHORT_TEST_VICTIM_NODE", -1) == cohort_node_rank(c));
    uint64_t *ids = malloc(cap * sizeof *ids);
    while (ids && (n = cohort_work_lease(w, ids, cap)) > 0) {
        record("leased", ids, n);
        if (is_victim && ++leases == env_long("COHORT_TEST_AT", 1)) {
            victim(w, c, pids, ids, n);
            if (strcmp(getenv("COHORT_TEST_DO"), "stop") == 0)
                continue;
        }
        if (us)
            usleep((useconds_t)(us * n));
        int rc = commit(w, ids, n);
        while (rc == COHORT_WORK_STALE) { /* keep the ids of the call that were not stale */
            size_t k, m = 0;
            const uint64_t *gone = cohort_work_stale_ids(w, &k);
            for (long i = 0; i < n; i++) {
                bool is_stale = false;
                for (size_t j = 0; j < k && !is_stale; j++)
                    is_stale = gone[j] == ids[i];
                if (!is_stale)
                    ids[m++] = ids[i];
            }
            stale += (long)k;
            n = (long)m;
            /* with results nothing was committed: the rest again, alone */
            rc = getenv("COHORT_TEST_OUTPUT") && n > 0 ? commit(w, ids, n) : 0;
        }
        if (rc < 0) {
            n = -1;
            break;
        }
        record("committed", ids, n);
        done += n;
    }
    const char *what = getenv("COHORT_TEST_DO");
    if (n == 0 && is_victim && leases < env_long("COHORT_TEST_AT", 1) &&
        (strcmp(what, "foreign") == 0 || strcmp(what, "kill-coord") == 0 ||
         strcmp(what, "stop-coord") == 0 || strcmp(what, "environ") == 0))
        victim(w, c, pids, ids, 0); /* the queue ended first: it acts at its close instead */
    free(ids);
    if (n == 0 && is_victim && leases < env_long("COHORT_TEST_AT", 1) &&
        strcmp(getenv("COHORT_TEST_DO"), "kill") == 0)
        raise(SIGKILL); /* the queue ended first: dies at its close instead */
    if (n < 0) {
        printf("rank %d: FAIL: %s\n", rank, cohort_error(c));
        if (cohort_work_close(w) != 0)
            printf("rank %d: close: %s\n", rank, cohort_error(c));
        return -2; /* said */
    }
    if (cohort_work_close(w) != 0)
        return -1;
    printf("rank %d: ok %ld committed, %ld stale\n", rank, done, stale);
    fflush(stdout);
    return 0;
}

/* COHORT_TEST_SECOND's queue: its items leased and committed, then
 * closed. 0, or -1. */
static int finish_second(struct cohort_work *w)
{
    uint64_t ids[64];
    long n;
    while ((n = cohort_work_lease(w, ids, 64)) > 0)
        if (cohort_work_commit(w, ids, (size_t)n) < 0) /* STALE: others commit those */
            return -1;
    return n < 0 || cohort_work_close(w) != 0 ? -1 : 0;
}

int main(void)
{
    struct cohort *c;
    if (cohort_init(&c, NULL) != 0)
        return fail(c);
    rank = cohort_rank(c);
    int size = cohort_size(c);
    pid_t me = getpid(), *pids = malloc(sizeof *pids * (size_t)size);
    if (!pids || cohort_allgather(c, &me, sizeof me, pids) != 0)
        return fail(c);
    const char *opts = getenv("COHORT_TEST_OPTS");
    uint64_t items = (uint64_t)env_long("COHORT_TEST_ITEMS", 10000);
    if (opts && strcmp(opts, "bad-items") == 0 && rank == size - 1)
        items++;
    if (opts && strcmp(opts, "zero-items") == 0)
        items = 0;
    struct cohort_work_opts o = {.size = sizeof o,
                                 .journal = getenv("COHORT_TEST_JOURNAL"),
                                 .output = getenv("COHORT_TEST_OUTPUT"),
                                 .lease_timeout_s = (int)env_long("COHORT_TEST_LEASE_TIMEOUT", 0),
                                 .max_attempts = (int)env_long("COHORT_TEST_MAX_ATTEMPTS", 0)};
    struct cohort_work *w;
    const char *queue = getenv("COHORT_TEST_QUEUE");
    if (opts && strcmp(opts, "bad-name") == 0 && rank == size - 1)
        queue = "other";
    if (cohort_work_open(c, queue ? queue : "q", items, &o, &w) != 0)
        return fail(c);
    struct cohort_work *second = NULL;
    struct cohort_work_opts none = {.size = sizeof none};
    if (getenv("COHORT_TEST_SECOND") && cohort_work_open(c, "q2", 1000, &none, &second) != 0)
        return fail(c);
    const char *what = getenv("COHORT_TEST_DO");
    if (getenv("COHORT_TEST_SOCKETS")) {
        if (cohort_barrier(c) != 0)
            return fail(c);
        print_sockets();
        if (cohort_barrier(c) != 0) /* nobody leaves before the count */
            return fail(c);
    } else if (what && strcmp(what, "kill-relay") == 0 && cohort_barrier(c) != 0) {
        return fail(c); /* every rank at its relay before one is killed: a rank that came
                         * later to the killed relay would find none (a rank that comes
                         * late to a live relay whose way up closed: tests/unit/test_relay) */
    }
    int rc = run(w, c, pids);
    if (rc == -2) {
        fflush(stdout);
        cohort_finalize(c);
        return 1;
    }
    if (rc != 0 || (second && finish_second(second) != 0))
        return fail(c);
    if (rank == 0 && what && strcmp(what, "stop") == 0)
        kill(pids[env_long("COHORT_TEST_VICTIM", -1)], SIGCONT);
    free(pids);
    return cohort_finalize(c) != 0;
}
