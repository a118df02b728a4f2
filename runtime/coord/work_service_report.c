/* work_service_report.c - what the work coordinator says on its standard error
 * (which is rank 0's, so srun shows it). With COHORT_VERBOSE it writes a
 * progress line every WORK_SERVICE_PROGRESS_MS, and at the end it writes one
 * line for the queue: the items, what became of them, and every worker's count
 * and rate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "work_service_private.h"

void work_service_progress(struct work_service *co, int64_t now)
{
    struct sched_status st;
    sched_status(co->s, &st);
    double secs = (double)(now - co->start_ms) / 1e3;
    double rate = secs > 0 ? (double)st.committed / secs : 0;
    uint64_t left = st.total - st.committed - st.set_aside;
    char eta[32] = "-";
    if (rate > 0)
        snprintf(eta, sizeof eta, "%.0f s", (double)left / rate);
    fprintf(stderr, "cohort: work '%s': %llu of %llu items done, %.0f items/s, ETA %s, "
                    "%u workers\n",
            co->cfg->name, (unsigned long long)st.committed, (unsigned long long)st.total, rate,
            eta, co->connected);
}

/* Appends s to buf (len bytes, *used so far), ending in "..." when full. */
static void append(char *buf, size_t len, size_t *used, const char *s)
{
    size_t n = strlen(s);
    if (*used + n + 4 > len) {
        if (*used + 4 <= len)
            memcpy(buf + *used, "...", 4);
        *used = len;
        return;
    }
    memcpy(buf + *used, s, n + 1);
    *used += n;
}

void work_service_report(struct work_service *co)
{
    struct sched_status st;
    sched_status(co->s, &st);
    if (!co->cfg->verbose && st.set_aside == 0 && st.committed == st.total)
        return; /* There is nothing to tell. */
    size_t len = 64 + (size_t)co->cfg->size * 40, used = 0;
    char *workers = malloc(len);
    if (!workers)
        return;
    workers[0] = '\0';
    for (uint32_t r = 0; r < co->cfg->size; r++) {
        struct sched_worker_stats ws;
        char one[64];
        if (sched_worker_stats(co->s, r, &ws) < 0 || !ws.leases)
            continue;
        snprintf(one, sizeof one, " %u:%llu@%.0f/s", r, (unsigned long long)ws.committed,
                 ws.rate);
        append(workers, len, &used, one);
    }
    size_t n_aside = 0;
    const struct sched_aside *aside = sched_set_aside(co->s, &n_aside);
    char first[64] = "";
    if (n_aside)
        snprintf(first, sizeof first, " (the first: id %llu, %u attempts)",
                 (unsigned long long)aside[0].lo, aside[0].attempts);
    struct rusage ru;
    double cpu = getrusage(RUSAGE_SELF, &ru) == 0
                     ? (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6
                     : 0;
    fprintf(stderr, "cohort: work '%s': %llu items, %llu committed, %llu set aside%s, %llu "
                    "left; %llu went back to the queue, %llu copies at the tail, %u workers "
                    "lost, %u drained; %llu parts published; coordinator CPU %.3f s; per rank "
                    "(items@rate):%s\n",
            co->cfg->name, (unsigned long long)st.total, (unsigned long long)st.committed,
            (unsigned long long)st.set_aside, first,
            (unsigned long long)(st.total - st.committed - st.set_aside),
            (unsigned long long)st.requeued, (unsigned long long)st.copies, co->lost_workers,
            co->drained, (unsigned long long)co->published, cpu, workers);
    free(workers);
}
