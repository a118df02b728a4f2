/* base_sys.h - the helpers over the C library and the kernel that every
 * layer needs and used to write again: the monotonic and wall clocks,
 * random bytes from the kernel, whole-buffer reads and writes through short
 * counts and signals, and array growth with an overflow check. Each reports failure
 * the C library's way (-1 and errno), so each caller keeps its own words. */
#ifndef COHORT_BASE_SYS_H
#define COHORT_BASE_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* The monotonic clock (CLOCK_MONOTONIC) in nanoseconds and in whole
 * milliseconds: for deadlines and durations, never for dates. Inline, so
 * that libcohort-nccl, which sees only libcohort's exports, has it too. */
static inline int64_t base_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline long long base_now_ms(void)
{
    return (long long)(base_now_ns() / 1000000);
}

/* The wall clock (CLOCK_REALTIME) in whole milliseconds since the epoch:
 * for dates a person or another node reads, never for deadlines. */
int64_t base_wall_ms(void);

/* Fills buf[0..len) with bytes from the kernel's CSPRNG (getrandom),
 * through signals: 0, or -1 with errno (nothing else is promised of buf). */
int base_random(void *buf, size_t len);

/* Writes all of p[0..len) to fd (at its offset), through short writes and
 * signals: 0, or -1 with errno (ENOSPC when the kernel wrote nothing). */
int base_write_all(int fd, const void *p, size_t len);

/* The same at file offset off (pwrite; fd's own offset is left alone). */
int base_pwrite_all(int fd, const void *p, size_t len, uint64_t off);

/* Reads len bytes at file offset off into buf (pread), through short reads
 * and signals: how many it read (fewer than len only at the file's end),
 * or -1 with errno. */
ssize_t base_pread_all(int fd, void *buf, size_t len, uint64_t off);

/* Makes room for need elements of elem bytes at *p, which has room for
 * *cap now: when it must grow, *cap becomes the first of 16, 32, 64, ...
 * (doubling from *cap when it is not 0) that is at least need. 0, or -1
 * with errno ENOMEM (*p and *cap unchanged) when the size overflows or
 * realloc fails. */
int base_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
