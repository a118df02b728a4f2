/* boot_bench.c - one rank of the bootstrap benchmark: its arrival time
 * (CLOCK_MONOTONIC, shared by all processes of the machine) just before
 * cohort_init, and the time once it holds rank 0's 128-byte blob and has
 * passed a barrier. Prints "T0 T1" in ns and "cpu NS", the CPU time this
 * process spent between the two (user and system); rank 0 adds the number
 * of sockets it holds open ("sockets N"). With SPAWN_START_NS (see spawn.c)
 * it first sleeps until that instant, so that all ranks arrive at once. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cohort.h"

/* Clock id's time in ns: CLOCK_MONOTONIC, or this process's CPU time. */
static long long ns_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int open_sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    char path[300], target[64];
    while (d && (e = readdir(d))) {
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0) {
            target[len] = '\0';
            n += strncmp(target, "socket:", 7) == 0;
        }
    }
    if (d)
        closedir(d);
    return n;
}

int main(void)
{
    struct cohort *c;
    unsigned char blob[128];
    const char *start = getenv("SPAWN_START_NS");
    if (start) {
        long long at = atoll(start);
        struct timespec ts = {.tv_sec = at / 1000000000LL, .tv_nsec = at % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
            ;
    }
    long long t0 = ns_of(CLOCK_MONOTONIC), c0 = ns_of(CLOCK_PROCESS_CPUTIME_ID);
    if (cohort_init(&c, NULL) != 0) {
        fprintf(stderr, "%s\n", cohort_error(c));
        return 1;
    }
    memset(blob, cohort_rank(c) == 0 ? 0x5a : 0, sizeof blob);
    if (cohort_bcast(c, blob, sizeof blob, 0) != 0 || blob[127] != 0x5a ||
        cohort_barrier(c) != 0) {
        fprintf(stderr, "%s\n", cohort_error(c));
        return 1;
    }
    long long t1 = ns_of(CLOCK_MONOTONIC), c1 = ns_of(CLOCK_PROCESS_CPUTIME_ID);
    if (cohort_rank(c) == 0)
        printf("sockets %d\n", open_sockets());
    printf("%lld %lld\ncpu %lld\n", t0, t1, c1 - c0);
    cohort_finalize(c);
    return 0;
}
