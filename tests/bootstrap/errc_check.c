/* errc_check.c - one rank of a bootstrap test of error codes, for
 * tests/bootstrap.sh (run by spawn): cohort_init, a broadcast from rank 0,
 * an allgather of COHORT_TEST_BYTES bytes (default 16) from every rank, a
 * barrier and cohort_finalize; prints "rank R: ok", or at the first failure
 * "rank R: code NAME: <cohort_error()>" with NAME the code's
 * (cohort_error_code()): config, usage, timeout, peer-lost, auth, network,
 * resource, nccl, pmix. The rank named by COHORT_TEST_VICTIM kills itself
 * (SIGKILL) at COHORT_TEST_DIE_AT: init (before joining) or joined (after
 * cohort_init); with "stall" it joins, then makes no call for 10 s and is
 * killed by its alarm. COHORT_TEST_CALL_TIMEOUT: the deadline after
 * cohort_init. COHORT_TEST_CASE=usage: every rank first makes three local
 * mistakes (cohort_set_timeout(c, 0), a broadcast from root size, a second
 * cohort_init) and prints "rank R: usage: CODE CODE CODE" with their codes'
 * names before the run. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cohort.h"

static const char *code_name(int code)
{
    static const char *const names[] = {"ok",        "config", "usage",    "timeout", "peer-lost",
                                        "auth",      "network", "resource", "nccl",   "pmix"};
    return code >= 0 && code < (int)(sizeof names / sizeof *names) ? names[code] : "unknown";
}

static int env_int(const char *name, int otherwise)
{
    const char *v = getenv(name);
    return v ? atoi(v) : otherwise;
}

static void maybe_die(const char *phase)
{
    const char *at = getenv("COHORT_TEST_DIE_AT");
    if (!at || env_int("COHORT_TEST_VICTIM", -1) != env_int("SLURM_PROCID", -2))
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
    printf("rank %d: code %s: %s\n", rank, code_name(cohort_error_code(c)), cohort_error(c));
    fflush(stdout);
    cohort_finalize(c);
    return 1;
}

/* Three local mistakes on a joined handle: their codes' names. */
static void usage(struct cohort *c, int rank)
{
    struct cohort *again;
    char buf[8];
    const char *set = cohort_set_timeout(c, 0) == 0 ? "none" : code_name(cohort_error_code(c));
    const char *bcast = cohort_bcast(c, buf, sizeof buf, cohort_size(c)) == 0
                            ? "none"
                            : code_name(cohort_error_code(c));
    const char *init = cohort_init(&again, NULL) == 0 ? "none" : code_name(cohort_error_code(again));
    cohort_finalize(again);
    printf("rank %d: usage: %s %s %s\n", rank, set, bcast, init);
}

int main(void)
{
    int me = env_int("SLURM_PROCID", -1);
    struct cohort *c;
    maybe_die("init");
    if (cohort_init(&c, NULL) != 0)
        return failed(c, me);
    if (getenv("COHORT_TEST_CASE") && strcmp(getenv("COHORT_TEST_CASE"), "usage") == 0)
        usage(c, me);
    int secs = env_int("COHORT_TEST_CALL_TIMEOUT", 0);
    if (secs > 0 && cohort_set_timeout(c, secs) != 0)
        return failed(c, me);
    maybe_die("joined");
    size_t n = (size_t)env_int("COHORT_TEST_BYTES", 16);
    char blob[16] = "from rank 0";
    char *in = calloc(1, n), *out = malloc(n * (size_t)cohort_size(c));
    if (!in || !out) {
        printf("rank %d: FAIL: out of memory\n", me);
        return 1;
    }
    int rc = cohort_bcast(c, blob, sizeof blob, 0) != 0 || cohort_allgather(c, in, n, out) != 0 ||
             cohort_barrier(c) != 0;
    free(in);
    free(out);
    if (rc)
        return failed(c, me);
    if (cohort_finalize(c) != 0) {
        printf("rank %d: FAIL: cohort_finalize\n", me);
        return 1;
    }
    printf("rank %d: ok\n", me);
    return 0;
}
