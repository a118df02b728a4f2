/* boot_check.c - one rank of a bootstrap test: cohort_init, the accessors
 * against SLURM_*, a 128-byte broadcast from rank 0, an allgather, a
 * barrier, a broadcast from the last rank, cohort_finalize; prints
 * "rank R: ok via tcp|pmix" or "rank R: FAIL: <cohort's message>". The rank named by
 * COHORT_TEST_VICTIM kills itself (SIGKILL) at COHORT_TEST_DIE_AT: init
 * (before joining), joined (after cohort_init) or bcast (after the first
 * broadcast); with "stall" it joins, then makes no call for 10 s (the
 * others' deadline passes first) and is killed by its alarm.
 * COHORT_TEST_CALL_TIMEOUT: the deadline after cohort_init.
 * COHORT_TEST_CASE picks another run instead:
 *   cycles      cohort_init, a barrier, cohort_finalize, COHORT_TEST_CYCLES
 *               times: "rank R: ok, N cycles"
 *   again       a second cohort_init while joined: "rank R: again: <its
 *               error>", then the usual run
 *   bad-timeout the victim's cohort_set_timeout(c, 0) fails (a local
 *               mistake), then the usual run
 *   big         an allgather of COHORT_TEST_BYTES bytes from every rank:
 *               "rank R: FAIL: <cohort's message>" or "rank R: ok, big" */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cohort.h"

static int env_int(const char *name)
{
    const char *v = getenv(name);
    return v ? atoi(v) : -1;
}

static void maybe_die(const char *phase)
{
    const char *at = getenv("COHORT_TEST_DIE_AT");
    if (!at || env_int("COHORT_TEST_VICTIM") != env_int("SLURM_PROCID"))
        return;
    if (strcmp(phase, "joined") == 0 && strcmp(at, "stall") == 0) {
        alarm(10);
        for (;;)
            pause();
    }
    if (strcmp(at, phase) == 0)
        raise(SIGKILL);
}

static int failed(struct cohort *c, int rank)
{
    printf("rank %d: FAIL: %s\n", rank, cohort_error(c));
    fflush(stdout);
    cohort_finalize(c);
    return 1;
}

static int cycles(int me)
{
    int n = env_int("COHORT_TEST_CYCLES");
    for (int i = 0; i < n; i++) {
        struct cohort *c;
        if (cohort_init(&c, NULL) != 0 || cohort_barrier(c) != 0) {
            printf("rank %d: FAIL: cycle %d: %s\n", me, i + 1, cohort_error(c));
            cohort_finalize(c);
            return 1;
        }
        if (cohort_finalize(c) != 0) {
            printf("rank %d: FAIL: cycle %d: cohort_finalize\n", me, i + 1);
            return 1;
        }
    }
    printf("rank %d: ok, %d cycles\n", me, n);
    return 0;
}

static int big(struct cohort *c, int me)
{
    size_t n = (size_t)env_int("COHORT_TEST_BYTES");
    char *in = calloc(1, n), *out = malloc(n * (size_t)cohort_size(c));
    if (!in || !out) {
        printf("rank %d: FAIL: out of memory\n", me);
        return 1;
    }
    int rc = cohort_allgather(c, in, n, out);
    free(in);
    free(out);
    if (rc != 0)
        return failed(c, me);
    printf("rank %d: ok, big\n", me);
    return cohort_finalize(c) != 0;
}

/* COHORT_TEST_CASE, "" for the usual run. */
static const char *test_case(void)
{
    const char *v = getenv("COHORT_TEST_CASE");
    return v ? v : "";
}

int main(void)
{
    int me = env_int("SLURM_PROCID");
    struct cohort *c;
    if (strcmp(test_case(), "cycles") == 0)
        return cycles(me);
    maybe_die("init");
    if (cohort_init(&c, NULL) != 0)
        return failed(c, me);
    if (strcmp(test_case(), "big") == 0)
        return big(c, me);
    if (strcmp(test_case(), "again") == 0) {
        struct cohort *again;
        int rc = cohort_init(&again, NULL);
        printf("rank %d: again: %s\n", me, rc == 0 ? "joined twice" : cohort_error(again));
        if (rc == 0)
            return 1;
        cohort_finalize(again);
    }
    if (strcmp(test_case(), "bad-timeout") == 0 && me == env_int("COHORT_TEST_VICTIM") &&
        cohort_set_timeout(c, 0) == 0) {
        printf("rank %d: FAIL: cohort_set_timeout(c, 0) did not fail\n", me);
        return 1;
    }
    int rank = cohort_rank(c), size = cohort_size(c);
    /* deadline tests: a long one to join, a short one for the calls after */
    if (env_int("COHORT_TEST_CALL_TIMEOUT") > 0 &&
        cohort_set_timeout(c, env_int("COHORT_TEST_CALL_TIMEOUT")) != 0)
        return failed(c, me);
    if (rank != me || size != env_int("SLURM_STEP_NUM_TASKS") ||
        cohort_local_rank(c) != env_int("SLURM_LOCALID") ||
        cohort_node_rank(c) != env_int("SLURM_NODEID")) {
        printf("rank %d: FAIL: accessors disagree with SLURM_*\n", me);
        return 1;
    }
    maybe_die("joined");
    unsigned char blob[128];
    for (int i = 0; i < 128; i++)
        blob[i] = rank == 0 ? (unsigned char)(i * 7 + 3) : 0;
    if (cohort_bcast(c, blob, sizeof blob, 0) != 0)
        return failed(c, me);
    for (int i = 0; i < 128; i++)
        if (blob[i] != (unsigned char)(i * 7 + 3)) {
            printf("rank %d: FAIL: broadcast byte %d is %u\n", me, i, blob[i]);
            return 1;
        }
    maybe_die("bcast");
    unsigned int mine[4] = {(unsigned)rank, (unsigned)rank * 3u, 0xc0ffeeu, (unsigned)size};
    unsigned int *all = malloc(sizeof mine * (size_t)size);
    if (!all || cohort_allgather(c, mine, sizeof mine, all) != 0)
        return failed(c, me);
    for (int r = 0; r < size; r++)
        if (all[4 * r] != (unsigned)r || all[4 * r + 1] != (unsigned)r * 3u ||
            all[4 * r + 2] != 0xc0ffeeu || all[4 * r + 3] != (unsigned)size) {
            printf("rank %d: FAIL: allgather entry %d is wrong\n", me, r);
            return 1;
        }
    free(all);
    int last = rank == size - 1 ? 4242 : 0;
    if (cohort_barrier(c) != 0 || cohort_bcast(c, &last, sizeof last, size - 1) != 0)
        return failed(c, me);
    if (last != 4242) {
        printf("rank %d: FAIL: broadcast from rank %d gave %d\n", me, size - 1, last);
        return 1;
    }
    char via[16];
    snprintf(via, sizeof via, "%s", cohort_bootstrap(c));
    if (cohort_finalize(c) != 0) {
        printf("rank %d: FAIL: cohort_finalize\n", me);
        return 1;
    }
    printf("rank %d: ok via %s\n", me, via);
    return 0;
}
