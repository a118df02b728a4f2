/* tap.h - a minimal Test Anything Protocol emitter for the unit tests.
 * ok() prints one TAP line per check; tap_done() prints the plan and
 * returns the exit status. */
#ifndef COHORT_TAP_H
#define COHORT_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_count, tap_failures;

#define TAP_UNUSED __attribute__((unused))

TAP_UNUSED __attribute__((format(printf, 4, 5))) static int tap_ok(int pass, const char *file,
                                                        int line, const char *fmt, ...)
{
    va_list ap;
    printf("%sok %d - ", pass ? "" : "not ", ++tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!pass) {
        tap_failures++;
        printf("# failed at %s:%d\n", file, line);
    }
    fflush(stdout);
    return pass;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

TAP_UNUSED __attribute__((format(printf, 1, 2))) static void tap_skip(const char *fmt, ...)
{
    va_list ap;
    printf("ok %d # SKIP ", ++tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

TAP_UNUSED static int tap_done(void)
{
    printf("1..%d\n", tap_count);
    return tap_failures ? 1 : 0;
}

#endif
