/* base_sys.c - the wall clock, random bytes, whole-buffer I/O and array
 * growth every layer shares (see base_sys.h). */
#include "base_sys.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

int64_t base_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int base_random(void *buf, size_t len)
{
    for (size_t got = 0; got < len;) {
        ssize_t n = getrandom((uint8_t *)buf + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? (errno = EIO, -1) : -1;
        got += (size_t)n;
    }
    return 0;
}

/* Writes all of p[0..len): at fd's offset when off < 0, else at off. */
static int write_at(int fd, const uint8_t *p, size_t len, int64_t off)
{
    while (len > 0) {
        ssize_t n = off < 0 ? write(fd, p, len) : pwrite(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? (errno = ENOSPC, -1) : -1;
        p += n;
        len -= (size_t)n;
        if (off >= 0)
            off += n;
    }
    return 0;
}

int base_write_all(int fd, const void *p, size_t len)
{
    return write_at(fd, p, len, -1);
}

int base_pwrite_all(int fd, const void *p, size_t len, uint64_t off)
{
    if (off > INT64_MAX)
        return errno = EINVAL, -1;
    return write_at(fd, p, len, (int64_t)off);
}

ssize_t base_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

int base_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap = ncap > SIZE_MAX / 2 ? need : 2 * ncap;
    void *np = elem && ncap <= SIZE_MAX / elem ? realloc(*p, ncap * elem) : NULL;
    if (!np)
        return errno = ENOMEM, -1;
    *p = np;
    *cap = ncap;
    return 0;
}
