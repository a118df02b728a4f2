/* sched_bench.c - the work scheduler's own throughput (runtime/work/work_sched.h),
 * without the coordinator's connections: workers in turn lease and at once
 * commit items of no work, first with adaptive leases (a buffer of 65536
 * ids), then one item at a time. The times passed in are CLOCK_MONOTONIC
 * milliseconds, as the coordinator's would be.
 *
 *   bench/sched_bench [ITEMS [WORKERS [ITEMS_CAP1]]]   (100000000 16 10000000) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "work_sched.h"

#define BUF 65536

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Leases and commits every item; prints the rate. 0, or -1 on an error. */
static int run(const char *name, uint64_t n, unsigned nw, size_t cap, uint64_t *ids)
{
    struct sched *s;
    struct cohort_err err;
    if (sched_create(n, nw, NULL, &s, &err) < 0) {
        fprintf(stderr, "sched_bench: %s\n", err.msg);
        return -1;
    }
    uint64_t leases = 0;
    int rc = SCHED_OK;
    double t0 = now_s();
    for (unsigned w = 0; rc != SCHED_FINISHED; w = (w + 1) % nw) {
        struct sched_grant g;
        int64_t ms = (int64_t)((now_s() - t0) * 1000);
        rc = sched_lease(s, w, ms, ids, cap, &g, &err);
        if (rc == SCHED_OK) {
            leases++;
            rc = sched_commit(s, w, ms, ids, g.n, NULL, NULL, &err);
        }
        if (rc < 0 || rc == SCHED_STALE) {
            fprintf(stderr, "sched_bench: %s\n", rc < 0 ? err.msg : "a stale commit");
            sched_destroy(s);
            return -1;
        }
    }
    double dt = now_s() - t0;
    struct sched_status st;
    sched_status(s, &st);
    printf("%-9s %" PRIu64 " items, %u workers, %" PRIu64 " leases (mean %.0f items): %.3f s, "
           "%.1f M items/s leased and committed\n", name, st.committed, nw, leases,
           (double)n / (double)leases, dt, (double)n / dt / 1e6);
    sched_destroy(s);
    return st.committed == n ? 0 : -1;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000000;
    unsigned nw = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 16;
    uint64_t n1 = argc > 3 ? strtoull(argv[3], NULL, 10) : 10000000;
    uint64_t *ids = malloc(BUF * sizeof *ids);
    if (!ids)
        return 1;
    int rc = run("adaptive", n, nw, BUF, ids) < 0 || run("cap 1", n1, nw, 1, ids) < 0;
    free(ids);
    return rc;
}
