/* streams_check.c - one worker of a stream-set test, for tests/streams.sh
 * (run by tests/bootstrap/spawn): cohort_init, cohort_streams_open of set
 * "cams" (capacity 2 on odd ranks when STREAMS_TEST_CAPS is "1,2", else
 * 1), rank 0 adds STREAMS_TEST_N streams "cam-I" (default 200), then every
 * worker handles its events (ASSIGN: it owns the key; REVOKE: it drops it
 * and releases it) until the coordinator says every stream is placed and
 * none is moving with every worker in. Each event is appended to
 * $STREAMS_TEST_OUT/events.R as "T assign|revoke KEY EPOCH" (T: the
 * CLOCK_MONOTONIC ns when it was polled).
 *
 * STREAMS_TEST_VICTIM=R: once all are settled, rank R writes the time to
 * $STREAMS_TEST_OUT/killed and SIGKILLs itself; the others go on until the
 * coordinator counts one worker fewer and everything is placed again. Then
 * every rank left writes the keys it owns to $STREAMS_TEST_OUT/owned.R, one
 * "KEY EPOCH" a line, prints "rank R: ok N owned" and closes the set (with
 * a victim, once every rank left has written its record, see all_done;
 * the close's barrier then fails: the victim is gone).
 * STREAMS_TEST_KILL_RELAY=NODE with STREAMS_TEST_LEFT=K: once all are
 * settled, the first rank of node NODE SIGKILLs the node's relay (its
 * child cohort-relay) and every rank of that node calls on until its call
 * fails ("rank R: FAIL: ..."); the K others go on until the coordinator
 * counts K workers and everything is placed again, then as with a victim.
 * STREAMS_TEST_STOP=R (with STREAMS_TEST_LEASE=1, the set's lease in s):
 * rank R SIGSTOPs itself (the time in $STREAMS_TEST_OUT/stopped) until
 * its lease ran out and its streams went elsewhere, then is resumed
 * (stop_phase). STREAMS_TEST_SHED=1: load reports make rank 1 shed
 * (shed_phase, shed_after_s 1).
 * STREAMS_TEST_BAD=1: rank 1 tries what must fail and prints
 * "rank 1: bad: <cohort_error()>" for each. Any error: "rank R: FAIL: ...". */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cohort.h"
#include "cohort_streams.h"
#include "proc_child.h"

#define MAX_KEYS 4096

static int rank = -1;
static char owned[MAX_KEYS][256];
static uint64_t owned_epoch[MAX_KEYS];
static int n_owned;
static long n_revoked; /* REVOKEs handled */

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void append(const char *name, const char *line)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", getenv("STREAMS_TEST_OUT"), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        (void)!write(fd, line, strlen(line));
        close(fd);
    }
}

static int fail(struct cohort *c)
{
    printf("rank %d: FAIL: %s\n", rank, cohort_error(c));
    fflush(stdout);
    return 1;
}

/* Handles every event waiting (up to 50 ms for the first): 0 or -1.
 * record: the events are logged and the keys kept (else only released). */
static int handle(struct cohort_streams *s, bool record)
{
    struct cohort_stream_event ev;
    int r;
    char name[32], line[400];
    snprintf(name, sizeof name, "events.%d", rank);
    while ((r = cohort_streams_poll(s, &ev, 50)) == 1) {
        bool assign = ev.type == COHORT_STREAM_ASSIGN;
        if (!record || strncmp(ev.key, "done-", 5) == 0) { /* all_done's */
            if (!assign && cohort_streams_release(s, &ev) != 0)
                return -1;
            continue;
        }
        snprintf(line, sizeof line, "%lld %s %s %llu\n", now_ns(), assign ? "assign" : "revoke",
                 ev.key, (unsigned long long)ev.epoch);
        append(name, line);
        int i = 0;
        while (i < n_owned && strcmp(owned[i], ev.key) != 0)
            i++;
        if (assign && i == n_owned && n_owned < MAX_KEYS) {
            snprintf(owned[n_owned], sizeof owned[0], "%s", ev.key);
            owned_epoch[n_owned++] = ev.epoch;
        } else if (assign) {
            owned_epoch[i] = ev.epoch;
        } else {
            if (i < n_owned) {
                n_owned--;
                memcpy(owned[i], owned[n_owned], sizeof owned[0]);
                owned_epoch[i] = owned_epoch[n_owned];
            }
            n_revoked++;
            if (cohort_streams_release(s, &ev) != 0)
                return -1;
        }
    }
    return r;
}

/* Until every one of n streams is placed (and any of all_done's), none
 * moving, with workers in. */
static int settle(struct cohort_streams *s, uint64_t n, uint64_t workers)
{
    for (;;) {
        struct cohort_streams_status st;
        if (handle(s, true) < 0 || cohort_streams_status(s, &st) != 0)
            return -1;
        if (st.streams >= n && !st.moving && !st.unplaced && st.workers == workers)
            return handle(s, true); /* what came before the answer */
    }
}

static void said(struct cohort *c, const char *what, int rc)
{
    printf("rank %d: bad: %s: %d %s\n", rank, what, rc, rc ? cohort_error(c) : "");
}

static void bad_calls(struct cohort *c, struct cohort_streams *s)
{
    char big[300];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = 0;
    struct cohort_stream_event ev = {COHORT_STREAM_REVOKE, "cam-0", 999999};
    said(c, "empty key", cohort_streams_add(s, "", 1));
    said(c, "long key", cohort_streams_add(s, big, 1));
    said(c, "NaN cost", cohort_streams_add(s, "x", NAN));
    said(c, "negative cost", cohort_streams_add(s, "x", -1));
    said(c, "foreign release", cohort_streams_release(s, &ev));
    said(c, "negative load", cohort_streams_report(s, "cam-0", -2));
    printf("rank %d: remove unknown: %d\n", rank, cohort_streams_remove(s, "no-such-cam"));
    fflush(stdout);
}

/* With a victim gone no collective works: each rank left adds a stream
 * "done-R" once its record is written, and goes on handling events until
 * the set holds n + survivors streams (every survivor is done). */
static int all_done(struct cohort_streams *s, uint64_t n, int survivors)
{
    char key[32];
    snprintf(key, sizeof key, "done-%d", rank);
    if (cohort_streams_add(s, key, 1e-6) != 0)
        return -1;
    for (;;) {
        struct cohort_streams_status st;
        if (handle(s, false) < 0 || cohort_streams_status(s, &st) != 0)
            return -1;
        if (st.streams == n + (uint64_t)survivors)
            return 0;
    }
}

/* STREAMS_TEST_STOP=R: rank R stops itself (SIGSTOP) until the others
 * have seen its lease run out and its streams placed elsewhere; rank 0
 * then resumes it and everyone settles again with R back in. */
static int stop_phase(struct cohort *c, struct cohort_streams *s, uint64_t n, int size,
                      int stopped, const pid_t *pids)
{
    if (rank == stopped) {
        char line[64];
        snprintf(line, sizeof line, "%lld %d\n", now_ns(), n_owned);
        append("stopped", line);
        raise(SIGSTOP);
    } else if (settle(s, n, (uint64_t)size - 1) < 0) {
        return -1;
    }
    if (rank == 0)
        kill(pids[stopped], SIGCONT);
    return settle(s, n, (uint64_t)size) < 0 || cohort_barrier(c) != 0 ? -1 : 0;
}

/* STREAMS_TEST_SHED=1: rank 1 reports a load of 100 on each stream it
 * owns, every other rank 1 on each of its own; rank 1 goes on until it
 * was told REVOKE (shed), then everyone settles again. */
static int shed_phase(struct cohort *c, struct cohort_streams *s, uint64_t n, int size)
{
    for (int i = 0; i < n_owned; i++)
        if (cohort_streams_report(s, owned[i], rank == 1 ? 100.0 : 1.0) != 0)
            return -1;
    if (cohort_barrier(c) != 0)
        return -1;
    while (rank == 1 && n_revoked == 0) {
        struct cohort_streams_status st;
        if (handle(s, true) < 0 || cohort_streams_status(s, &st) != 0)
            return -1;
    }
    printf("rank %d: revoked %ld\n", rank, n_revoked);
    return cohort_barrier(c) != 0 || settle(s, n, (uint64_t)size) < 0 || cohort_barrier(c) != 0
               ? -1 : 0;
}

/* STREAMS_TEST_KILL_RELAY: the node's relay killed by its first rank;
 * every rank of the node calls on until it fails (-1). */
static int relay_victim(struct cohort *c, struct cohort_streams *s)
{
    if (cohort_local_rank(c) == 0) {
        pid_t p = proc_child(getpid(), "cohort-relay");
        printf("rank %d: killing the relay (pid %d)\n", rank, (int)p);
        fflush(stdout);
        if (p > 0)
            kill(p, SIGKILL);
    }
    for (;;) {
        struct cohort_streams_status st;
        if (handle(s, true) < 0 || cohort_streams_status(s, &st) != 0)
            return -1;
    }
}

static int run(struct cohort *c, struct cohort_streams *s, int size, const pid_t *pids)
{
    long n = atol(getenv("STREAMS_TEST_N") ? getenv("STREAMS_TEST_N") : "200");
    const char *v = getenv("STREAMS_TEST_VICTIM");
    int victim = v && *v ? atoi(v) : -1;
    for (long i = 0; rank == 0 && i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "cam-%ld", i);
        if (cohort_streams_add(s, key, 1.0) != 0)
            return -1;
    }
    if (getenv("STREAMS_TEST_BAD") && rank == 1)
        bad_calls(c, s);
    if (settle(s, (uint64_t)n, (uint64_t)size) < 0 || cohort_barrier(c) != 0)
        return -1;
    if (victim >= 0 && rank == victim) {
        char line[64];
        snprintf(line, sizeof line, "%lld %d\n", now_ns(), n_owned);
        append("killed", line);
        raise(SIGKILL);
    }
    if (victim >= 0 && settle(s, (uint64_t)n, (uint64_t)size - 1) < 0)
        return -1;
    const char *kr = getenv("STREAMS_TEST_KILL_RELAY");
    int left = kr && *kr && getenv("STREAMS_TEST_LEFT") ? atoi(getenv("STREAMS_TEST_LEFT")) : -1;
    if (left >= 0 && cohort_node_rank(c) == atoi(kr))
        return relay_victim(c, s);
    if (left >= 0 && settle(s, (uint64_t)n, (uint64_t)left) < 0)
        return -1;
    const char *st = getenv("STREAMS_TEST_STOP");
    if (st && *st && stop_phase(c, s, (uint64_t)n, size, atoi(st), pids) < 0)
        return -1;
    if (getenv("STREAMS_TEST_SHED") && shed_phase(c, s, (uint64_t)n, size) < 0)
        return -1;
    char name[32], line[300];
    snprintf(name, sizeof name, "owned.%d", rank);
    for (int i = 0; i < n_owned; i++) {
        snprintf(line, sizeof line, "%.255s %llu\n", owned[i], (unsigned long long)owned_epoch[i]);
        append(name, line);
    }
    printf("rank %d: ok %d owned\n", rank, n_owned);
    fflush(stdout);
    return victim >= 0 ? all_done(s, (uint64_t)n, size - 1)
           : left >= 0 ? all_done(s, (uint64_t)n, left) : 0;
}

int main(void)
{
    struct cohort *c;
    if (cohort_init(&c, NULL) != 0)
        return fail(c);
    rank = cohort_rank(c);
    int size = cohort_size(c);
    const char *caps = getenv("STREAMS_TEST_CAPS");
    double cap = caps && strcmp(caps, "1,2") == 0 && rank % 2 ? 2.0 : 1.0;
    pid_t me = getpid(), *pids = malloc(sizeof *pids * (size_t)size);
    if (!pids || cohort_allgather(c, &me, sizeof me, pids) != 0)
        return fail(c);
    struct cohort_streams_opts o = {.size = sizeof o};
    o.lease_timeout_s = getenv("STREAMS_TEST_LEASE") ? atoi(getenv("STREAMS_TEST_LEASE")) : 0;
    o.shed_after_s = getenv("STREAMS_TEST_SHED") ? 1 : 0;
    struct cohort_streams *s;
    if (cohort_streams_open_opts(c, "cams", cap, &o, &s) != 0)
        return fail(c);
    int rc0 = run(c, s, size, pids);
    free(pids);
    if (rc0 != 0) {
        fail(c);
        cohort_streams_close(s);
        return 1;
    }
    int rc = cohort_streams_close(s);
    if ((getenv("STREAMS_TEST_VICTIM") && *getenv("STREAMS_TEST_VICTIM")) ||
        getenv("STREAMS_TEST_KILL_RELAY"))
        return 0; /* the close's barrier fails: the victim is gone */
    if (rc != 0)
        return fail(c);
    return cohort_finalize(c) != 0;
}
