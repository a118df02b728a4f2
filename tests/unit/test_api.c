/* test_api.c - libcohort's interface for bindings, in one process: the
 * API version at compile and run time, options read by their size
 * (COHORT_OPTS_INIT, NULL, 0, too small, larger with and without unknown
 * options set), error codes beside the sentences (configuration, usage, a
 * NULL handle), and, in a one-task step made up here, the usage errors of a
 * joined handle. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cohort.h"
#include "tap.h"

/* cohort_init outside any step: its code and sentence (copied). */
static int init_code(const struct cohort_opts *opts, char *msg, size_t len)
{
    struct cohort *c;
    int rc = cohort_init(&c, opts);
    int code = rc == 0 ? -1 : cohort_error_code(c);
    snprintf(msg, len, "%s", cohort_error(c));
    cohort_finalize(c);
    return code;
}

/* A one-task step on this machine, as srun would describe it. */
static void one_task_step(void)
{
    unsigned char raw[32];
    char secret[65];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        exit(2);
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(secret + 2 * i, 3, "%02x", raw[i]);
    setenv("SLURM_STEP_NODELIST", "n1", 1);
    setenv("SLURM_STEP_NUM_TASKS", "1", 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", "1", 1);
    setenv("SLURM_JOB_ID", "7", 1);
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_NODEID", "0", 1);
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_LOCALID", "0", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("COHORT_SECRET", secret, 1); /* the node socket's name: this run's own */
}

static void joined_handle(void)
{
    struct cohort *c, *again;
    one_task_step();
    struct cohort_opts o = COHORT_OPTS_INIT;
    o.timeout_s = 30;
    int rc = cohort_init(&c, &o);
    if (!ok(rc == 0, "a one-task step joins: %s", cohort_error(c))) {
        cohort_finalize(c);
        return;
    }
    ok(cohort_error_code(c) == COHORT_OK && cohort_error(c)[0] == '\0',
       "no error yet: code %d, \"%s\"", cohort_error_code(c), cohort_error(c));
    rc = cohort_init(&again, NULL);
    ok(rc < 0 && cohort_error_code(again) == COHORT_ERR_USAGE,
       "a second cohort_init while joined: usage (%d): %s", cohort_error_code(again),
       cohort_error(again));
    cohort_finalize(again);
    rc = cohort_set_timeout(c, 0);
    ok(rc < 0 && cohort_error_code(c) == COHORT_ERR_USAGE,
       "cohort_set_timeout(c, 0): usage (%d): %s", cohort_error_code(c), cohort_error(c));
    int x = 1;
    rc = cohort_bcast(c, &x, sizeof x, 1);
    ok(rc < 0 && cohort_error_code(c) == COHORT_ERR_USAGE,
       "cohort_bcast from root 1 of 1 rank: usage (%d): %s", cohort_error_code(c),
       cohort_error(c));
    rc = cohort_barrier(c);
    ok(rc == 0 && strcmp(cohort_bootstrap(c), "tcp") == 0,
       "a barrier after the local mistakes works (via %s)%s%s", cohort_bootstrap(c),
       rc ? ": " : "", rc ? cohort_error(c) : "");
    ok(cohort_finalize(c) == 0, "cohort_finalize");
}

int main(void)
{
    char msg[600];
    static const char *const inherited[] = {"SLURM_STEP_NODELIST", "SLURM_HOSTFILE",
                                            "SLURM_DISTRIBUTION", "COHORT_TIMEOUT",
                                            "COHORT_BOOTSTRAP", "COHORT_BOOTSTRAP_PORT",
                                            "COHORT_SOCKET_DIR", "PMIX_NAMESPACE"};
    for (size_t i = 0; i < sizeof inherited / sizeof *inherited; i++)
        unsetenv(inherited[i]); /* make check may itself run inside a job */
    ok(cohort_api_version() == COHORT_API_VERSION,
       "cohort_api_version() %d is COHORT_API_VERSION %d", cohort_api_version(),
       COHORT_API_VERSION);
    ok(COHORT_API_VERSION / 1000 == COHORT_API_VERSION_MAJOR &&
           COHORT_API_VERSION % 1000 == COHORT_API_VERSION_MINOR,
       "COHORT_API_VERSION is major * 1000 + minor");
    struct cohort_opts o = COHORT_OPTS_INIT;
    ok(o.size == sizeof o && o.timeout_s == 0, "COHORT_OPTS_INIT sets the size, defaults else");
    ok(cohort_error_code(NULL) == COHORT_ERR_RESOURCE &&
           strcmp(cohort_error(NULL), "out of memory") == 0,
       "a NULL handle (cohort_init out of memory): resource, \"out of memory\"");

    int code = init_code(NULL, msg, sizeof msg);
    ok(code == COHORT_ERR_CONFIG && strstr(msg, "not inside a Slurm job step"),
       "outside a step: configuration (%d): %s", code, msg);
    code = init_code(&o, msg, sizeof msg);
    ok(code == COHORT_ERR_CONFIG, "COHORT_OPTS_INIT is accepted (configuration next: %s)", msg);
    o.size = 0;
    code = init_code(&o, msg, sizeof msg);
    ok(code == COHORT_ERR_USAGE &&
           strcmp(msg, "cohort: cohort_init: opts->size is 0, not the size of a struct "
                       "cohort_opts: set it to sizeof(struct cohort_opts), e.g. with "
                       "COHORT_OPTS_INIT") == 0,
       "opts->size 0: usage (%d), one line: %s", code, msg);
    o.size = sizeof(int);
    code = init_code(&o, msg, sizeof msg);
    ok(code == COHORT_ERR_USAGE && strstr(msg, "opts->size is 4,"),
       "opts->size below the first version: usage (%d): %s", code, msg);
    o.size = (size_t)-1;
    code = init_code(&o, msg, sizeof msg);
    ok(code == COHORT_ERR_USAGE && strstr(msg, "not the size of a struct cohort_opts"),
       "opts->size huge (never set): usage (%d): %s", code, msg);

    /* A caller built against a later libcohort: a bigger struct. */
    struct {
        struct cohort_opts v1;
        uint64_t later;
    } big = {COHORT_OPTS_INIT, 0};
    big.v1.size = sizeof big;
    code = init_code(&big.v1, msg, sizeof msg);
    ok(code == COHORT_ERR_CONFIG, "a later, bigger struct with its new options 0 is accepted "
                                  "(configuration next: %s)", msg);
    big.later = 1;
    code = init_code(&big.v1, msg, sizeof msg);
    ok(code == COHORT_ERR_USAGE && strstr(msg, "an option of a newer libcohort"),
       "a later, bigger struct with a new option set: usage (%d): %s", code, msg);

    setenv("SLURM_STEP_NODELIST", "n1", 1);
    setenv("COHORT_TIMEOUT", "abc", 1);
    code = init_code(NULL, msg, sizeof msg);
    ok(code == COHORT_ERR_CONFIG && strstr(msg, "COHORT_TIMEOUT='abc'"),
       "COHORT_TIMEOUT=abc: configuration (%d): %s", code, msg);
    unsetenv("COHORT_TIMEOUT");
    o = (struct cohort_opts)COHORT_OPTS_INIT;
    o.timeout_s = 5; /* the options' timeout is taken before COHORT_TIMEOUT */
    setenv("COHORT_TIMEOUT", "abc", 1);
    code = init_code(&o, msg, sizeof msg);
    ok(code == COHORT_ERR_CONFIG && !strstr(msg, "COHORT_TIMEOUT"),
       "opts.timeout_s read from a sized struct (COHORT_TIMEOUT not parsed): %s", msg);
    unsetenv("COHORT_TIMEOUT");

    joined_handle();
    return tap_done();
}
