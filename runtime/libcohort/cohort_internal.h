/* cohort_internal.h - what libcohort-nccl needs of libcohort beyond the
 * public API: recording an error (sentence and code) on c, c's per-call
 * timeout, and reading a caller's options struct by its size. Exported
 * from libcohort under the version COHORT_PRIVATE_1 (cohort.map), not part
 * of the public API: only libcohort-nccl, built from the same tree, calls
 * them. */
#ifndef COHORT_INTERNAL_H
#define COHORT_INTERNAL_H

#include "cohort.h"

/* Sets c's error: code (enum cohort_errc) and the formatted sentence.
 * Returns -1. */
int cohort_internal_fail(struct cohort *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

int cohort_internal_timeout_s(const struct cohort *c);

/* Copies the caller's options struct opts (NULL: none), whose first member
 * is its size in bytes, into out (out_size bytes, this library's struct,
 * zeroed first: members the caller's size does not reach keep 0). Fails
 * with COHORT_ERR_USAGE, naming func and type, when the size is below min
 * (the end of the struct's first version) or above out_size with non-zero
 * bytes past it. Returns 0 or -1. */
int cohort_internal_read_opts(struct cohort *c, const char *func, const char *type,
                              const void *opts, size_t min, void *out, size_t out_size);

#endif
