/* error.h - one-line error messages carried out of the planner.
 * Every fallible planner function fills a struct cohort_err with a single
 * sentence that names what was wrong and, where it can, what to do. */
#ifndef COHORT_ERROR_H
#define COHORT_ERROR_H

#define COHORT_ERR_LEN 512

struct cohort_err {
    char msg[COHORT_ERR_LEN];
};

/* Formats the message into err (when err is not NULL) and returns -1, so a
 * caller can write `return cohort_fail(err, "...", ...);`. */
int cohort_fail(struct cohort_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
