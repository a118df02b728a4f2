/* error.c - formatting of planner error messages (see error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

int cohort_fail(struct cohort_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}
