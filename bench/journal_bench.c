/* journal_bench.c - how long reading a hostile work-queue journal takes
 * (runtime/work/journal.h, "Cost"): journals of about SIZE MiB crafted to
 * be as slow to read as the format allows, each read as `cohort-work
 * status` reads it (journal_summary) and as a resuming coordinator does
 * (journal_open, the committed runs handed to the scheduler with
 * sched_mark_committed, as work_service_journal.c does). Prints for each the
 * median of three runs, elapsed and this process's CPU time (and of the
 * resume's CPU, journal_open's); the figures are in docs/performance.md,
 * "Reading a journal".
 *
 *   bench/journal_bench [DIR [SIZE_MIB]]   (/tmp 64) */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "journal_private.h"
#include "work_sched.h"

#define RUNS 3

enum kind { DESCENDING, SHUFFLED, SMALL_FRAMES, ASIDES, MARKS, OLD_HEADS };

static const char *const names[] = {
    "spans in descending order, 4 MiB frames", "spans in random order, 4 MiB frames",
    "spans in descending order, a frame each", "set-aside records, 4 MiB frames",
    "bad frame, then the head's mark every 4 bytes", "bad frame, then old heads every 32 bytes",
};

/* Seconds on clock c: CLOCK_MONOTONIC (elapsed), or
 * CLOCK_PROCESS_CPUTIME_ID (this process's CPU, which other loads on the
 * machine do not inflate). */
static double now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

/* A record (type, body of len) at b: its bytes. */
static size_t record(uint8_t *b, uint8_t type, const uint8_t *body, uint32_t len)
{
    b[0] = type;
    jput32(b + 1, len);
    memcpy(b + JREC_HEAD, body, len);
    return JREC_HEAD + len;
}

/* The records of span k of n in kind's order (a frame's worth at b, at most
 * room bytes): their bytes; *k moves on. */
static size_t records(enum kind kind, uint8_t *b, size_t room, uint64_t *k, uint64_t n,
                      const uint64_t *perm)
{
    uint8_t body[JSPAN_LEN];
    size_t len = 0;
    if (kind == ASIDES) {
        for (; len + JREC_HEAD + JASIDE_LEN <= room && *k < n; ++*k) {
            jput64(body, *k);
            jput32(body + 8, 3);
            len += record(b + len, JOURNAL_SET_ASIDE, body, JASIDE_LEN);
        }
        return len;
    }
    size_t spans = kind == SMALL_FRAMES ? 1 : (room - JREC_HEAD) / JSPAN_LEN;
    b[0] = JOURNAL_COMMITTED;
    for (len = JREC_HEAD; spans-- > 0 && *k < n; ++*k, len += JSPAN_LEN) {
        uint64_t id = kind == SHUFFLED ? perm[*k] : n - 1 - *k;
        jput64(b + len, 2 * id); /* every other id: no two spans touch */
        jput64(b + len + 8, 2 * id + 1);
    }
    jput32(b + 1, (uint32_t)(len - JREC_HEAD));
    return len;
}

/* A shuffled 0..n-1. */
static uint64_t *permutation(uint64_t n)
{
    uint64_t *p = malloc(n * sizeof *p), x = 88172645463325252u;
    for (uint64_t i = 0; p && i < n; i++)
        p[i] = i;
    for (uint64_t i = n - 1; p && i > 0; i--) {
        uint64_t j = xorshift(&x) % (i + 1), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    return p;
}

/* The garbage after a bad frame: the mark every 4 bytes, or a valid head
 * of frame 0 (the bad one is frame 1) every 32. */
static void garbage(enum kind kind, uint8_t *b, size_t len, uint64_t key)
{
    uint8_t head[JFRAME_HEAD];
    uint8_t *f = calloc(JFRAME_HEAD + JFRAME_MAX, 1);
    jframe_seal(f, key, 0, JFRAME_MAX);
    memcpy(head, f, JFRAME_HEAD);
    free(f);
    uint64_t x = 2463534242u;
    for (size_t i = 0; i + JFRAME_HEAD <= len; i += kind == MARKS ? 4 : JFRAME_HEAD) {
        if (kind == MARKS) {
            memcpy(b + i, jframe_mark, 4);
        } else {
            memcpy(b + i, head, JFRAME_HEAD);
            b[i + JFRAME_HEAD - 1] ^= (uint8_t)(xorshift(&x) & 1); /* some valid, some not */
        }
    }
}

/* Writes the journal of kind, about mib MiB, at path: its n_items. */
static uint64_t craft(const char *path, enum kind kind, size_t mib)
{
    size_t size = mib << 20;
    uint8_t *b = calloc(size + JFRAME_HEAD + JFRAME_MAX, 1);
    uint64_t n = kind == ASIDES ? size / (JREC_HEAD + JASIDE_LEN)
               : kind == SMALL_FRAMES ? size / (JFRAME_HEAD + JREC_HEAD + JSPAN_LEN)
                                      : size / JSPAN_LEN;
    uint64_t *perm = kind == SHUFFLED ? permutation(n) : NULL, k = 0, seq = 0;
    uint64_t items = kind == ASIDES ? n : 2 * n;
    jhdr_encode(b, "bench", items);
    uint64_t key = jget64(b + JHDR_LEN - JCHECK_LEN);
    size_t len = JHDR_LEN;
    if (kind == MARKS || kind == OLD_HEADS) { /* one good frame, then a bad one */
        uint64_t one = 0;
        size_t r = records(DESCENDING, b + len + JFRAME_HEAD, JREC_HEAD + JSPAN_LEN, &one, 1, 0);
        jframe_seal(b + len, key, seq++, (uint32_t)r);
        len += JFRAME_HEAD + r;
        garbage(kind, b + len, size - len, key);
        len = size;
    }
    while (k < n && len + JFRAME_HEAD + JREC_HEAD + JSPAN_LEN <= size) {
        size_t room = size - len - JFRAME_HEAD < JFRAME_MAX ? size - len - JFRAME_HEAD : JFRAME_MAX;
        size_t r = records(kind, b + len + JFRAME_HEAD, room, &k, n, perm);
        jframe_seal(b + len, key, seq++, (uint32_t)r);
        len += JFRAME_HEAD + r;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, b, len) != (ssize_t)len || close(fd) < 0) {
        perror(path);
        exit(1);
    }
    free(perm);
    free(b);
    return items;
}

struct runs {
    struct sched_span *s;
    size_t n, cap;
};

static int collect(void *ctx, const struct journal_event *ev, struct cohort_err *err)
{
    struct runs *r = ctx;
    if (ev->kind != JOURNAL_COMMITTED)
        return 0;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        if (!(r->s = realloc(r->s, r->cap * sizeof *r->s)))
            return cohort_fail(err, "out of memory");
    }
    r->s[r->n++] = (struct sched_span){ev->lo, ev->hi};
    return 0;
}

/* The coordinator's resume: journal_open (*cpu_open: its CPU seconds),
 * then the runs to the scheduler. */
static int resume(const char *path, uint64_t items, uint64_t *committed, double *cpu_open,
                  struct cohort_err *err)
{
    struct journal *j;
    struct sched *s;
    struct runs r = {0};
    double c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    int rc = journal_open(path, "bench", items, collect, &r, &j, err);
    *cpu_open = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (rc == 0) {
        journal_close(j);
        rc = sched_create(items, 1, NULL, &s, err);
        if (rc == 0) {
            rc = sched_mark_committed(s, r.s, r.n, err);
            *committed = 0;
            for (size_t i = 0; i < r.n; i++)
                *committed += r.s[i].hi - r.s[i].lo;
            sched_destroy(s);
        }
    }
    free(r.s);
    return rc;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One kind: crafted, then read three times each way. */
static int bench(const char *dir, enum kind kind, size_t mib)
{
    char path[4096];
    double st[RUNS], re[RUNS], stc[RUNS], rec[RUNS], opc[RUNS];
    uint64_t done = 0, committed = 0, size = 0;
    struct cohort_err err;
    snprintf(path, sizeof path, "%s/journal_bench.%d", dir, (int)kind);
    for (int i = 0; i < RUNS; i++) {
        uint64_t items = craft(path, kind, mib); /* again: resume cuts a torn tail */
        struct journal_summary s;
        double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        int rc = journal_summary(path, &s, &err);
        double t1 = now_s(CLOCK_MONOTONIC), c1 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        done = s.committed + s.n_aside;
        size = s.size;
        journal_summary_free(&s);
        rc = rc < 0 ? rc : resume(path, items, &committed, &opc[i], &err);
        double t2 = now_s(CLOCK_MONOTONIC), c2 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        if (rc < 0) {
            fprintf(stderr, "journal_bench: %s\n", err.msg);
            return -1;
        }
        st[i] = t1 - t0;
        re[i] = t2 - t1;
        stc[i] = c1 - c0;
        rec[i] = c2 - c1;
    }
    unlink(path);
    double *all[] = {st, re, stc, rec, opc};
    for (int i = 0; i < 5; i++)
        qsort(all[i], RUNS, sizeof *all[i], by_value);
    printf("%-45s %4.1f MiB %7" PRIu64 ": status %.2f s (cpu %.2f), resume %.2f s (cpu %.2f, "
           "journal_open %.2f)\n", names[kind], (double)size / (1 << 20), done, st[RUNS / 2],
           stc[RUNS / 2], re[RUNS / 2], rec[RUNS / 2], opc[RUNS / 2]);
    return committed == done || kind == ASIDES ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
    int rc = 0;
    for (int k = DESCENDING; k <= OLD_HEADS; k++)
        rc |= bench(dir, (enum kind)k, mib);
    return rc ? 1 : 0;
}
