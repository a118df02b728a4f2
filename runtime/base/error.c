/* error.c - formatting of error messages and their codes (see error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

static void vfail(struct cohort_err *err, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static void vfail(struct cohort_err *err, int code, const char *fmt, va_list ap)
{
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    err->code = code;
}

int cohort_fail(struct cohort_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vfail(err, COHORT_E_UNSPEC, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int cohort_fail_code(struct cohort_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vfail(err, code, fmt, ap);
        va_end(ap);
    }
    return -1;
}
