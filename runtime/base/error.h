/* error.h - one-line error messages carried out of the planner and the
 * bootstrap. Every fallible function fills a struct cohort_err with a
 * single sentence that names what was wrong and, where it can, what to do,
 * and a code saying what kind of failure it was. */
#ifndef COHORT_ERROR_H
#define COHORT_ERROR_H

#define COHORT_ERR_LEN 512

/* The kinds of failure: the values of enum cohort_errc in cohort.h,
 * libcohort's public API, which checks at compile time that they agree
 * (the planner sits below libcohort and does not include its header). */
enum cohort_err_code {
    COHORT_E_UNSPEC = 0, /* cohort_fail: the caller knows (the planner: configuration) */
    COHORT_E_CONFIG,
    COHORT_E_USAGE,
    COHORT_E_TIMEOUT,
    COHORT_E_PEER_LOST,
    COHORT_E_AUTH,
    COHORT_E_NETWORK,
    COHORT_E_RESOURCE,
    COHORT_E_NCCL,
    COHORT_E_PMIX,
    COHORT_E_MAX = COHORT_E_PMIX,
};

struct cohort_err {
    char msg[COHORT_ERR_LEN];
    int code; /* an enum cohort_err_code */
};

/* Formats the message into err (when err is not NULL), with the code
 * COHORT_E_UNSPEC, and returns -1, so a caller can write
 * `return cohort_fail(err, "...", ...);`. */
int cohort_fail(struct cohort_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The same with a code (an enum cohort_err_code). */
int cohort_fail_code(struct cohort_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
