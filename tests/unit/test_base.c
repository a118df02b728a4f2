/* test_base.c - layer 0's strict decimal parser, hex codec, array growth,
 * whole-buffer I/O and sorted runs of ids: the edges its callers (ports, counts, hostlists,
 * the step's numbers, secrets, the journal) rely on. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base_runs.h"
#include "base_sys.h"
#include "base_text.h"
#include "tap.h"

/* Parses text with the limits given: the value, or -1 when rejected; *rest
 * is what follows the digits. */
static long long dec(const char *text, const char *end, int digits, uint64_t max,
                     const char **rest)
{
    uint64_t v = 0;
    const char *p = text;
    int rc = base_parse_decimal(&p, end, digits, max, &v, NULL);
    *rest = p;
    return rc < 0 ? -1 : (long long)v;
}

static void decimals(void)
{
    const char *rest;
    ok(dec("65535", NULL, 5, 65535, &rest) == 65535 && !*rest, "the largest value is taken");
    ok(dec("65536", NULL, 5, 65535, &rest) == -1 && !strcmp(rest, "65536"),
       "one above the largest is refused and nothing is consumed");
    ok(dec("000001", NULL, 5, 65535, &rest) == -1, "a sixth digit is refused, leading zeros too");
    ok(dec("17", NULL, 0, 5, &rest) == -1, "a value above a small maximum is refused");
    ok(dec("4294967295", NULL, 0, UINT32_MAX, &rest) == 4294967295LL, "UINT32_MAX is taken");
    ok(dec("4294967296", NULL, 0, UINT32_MAX, &rest) == -1, "UINT32_MAX + 1 is refused");
    ok(dec("00000000000000000000042", NULL, 0, UINT32_MAX, &rest) == 42,
       "without a digit limit any number of leading zeros is taken");
    uint64_t big = 0;
    const char *q = "18446744073709551615";
    ok(base_parse_decimal(&q, NULL, 0, UINT64_MAX, &big, NULL) == 0 && big == UINT64_MAX && !*q,
       "UINT64_MAX is taken");
    ok(dec("18446744073709551616", NULL, 0, UINT64_MAX, &rest) == -1 &&
           *rest == '1',
       "UINT64_MAX + 1 is refused");
    ok(dec("12x", NULL, 9, UINT64_MAX, &rest) == 12 && !strcmp(rest, "x"),
       "the parse stops at the first non-digit");
    const char *s = "98765";
    ok(dec(s, s + 2, 9, UINT64_MAX, &rest) == 98 && rest == s + 2, "digits after end are not read");
    ok(dec("", NULL, 9, UINT64_MAX, &rest) == -1 && dec("-1", NULL, 9, UINT64_MAX, &rest) == -1 &&
           dec(" 1", NULL, 9, UINT64_MAX, &rest) == -1 &&
           dec("+1", NULL, 9, UINT64_MAX, &rest) == -1,
       "no digit, a sign or a space is refused");
    uint64_t v;
    int width = 0;
    const char *p = "0042]";
    ok(base_parse_decimal(&p, NULL, 18, UINT64_MAX, &v, &width) == 0 && v == 42 && width == 4,
       "the width counts leading zeros");
}

static void hex(void)
{
    uint8_t in[4] = {0x00, 0x9f, 0xa0, 0xff}, out[4] = {0};
    char text[9];
    ok(!strcmp(base_hex_encode(in, 4, text), "009fa0ff"), "bytes encode to lowercase hex");
    ok(base_hex_decode("009FA0ff", 4, out) == 0 && !memcmp(in, out, 4),
       "either case decodes back");
    ok(base_hex_decode("0g", 1, out) < 0 && base_hex_decode("g0", 1, out) < 0,
       "a non-hex digit is refused");
    ok(base_hex_digit('f') == 15 && base_hex_digit('F') == 15 && base_hex_digit('/') == -1 &&
           base_hex_digit(':') == -1 && base_hex_digit('G') == -1,
       "hex digits and their neighbours");
}

static void grow_and_io(void)
{
    int *a = NULL;
    size_t cap = 0;
    ok(base_grow((void **)&a, &cap, 1, sizeof *a) == 0 && a && cap >= 1, "growth from nothing");
    a[0] = 7;
    ok(base_grow((void **)&a, &cap, 1000, sizeof *a) == 0 && cap >= 1000 && a[0] == 7,
       "growth keeps the elements");
    size_t before = cap;
    int *keep = a;
    errno = 0;
    ok(base_grow((void **)&a, &cap, SIZE_MAX / 2, sizeof *a) < 0 && errno == ENOMEM &&
           a == keep && cap == before,
       "an overflowing size is refused with ENOMEM and nothing changed");
    free(a);

    char path[] = "/tmp/test_base_XXXXXX";
    int fd = mkstemp(path);
    char back[8] = {0};
    ok(fd >= 0 && base_write_all(fd, "abc", 3) == 0 && base_pwrite_all(fd, "XY", 2, 5) == 0 &&
           base_pread_all(fd, back, sizeof back, 0) == 7 && !memcmp(back, "abc\0\0XY", 7),
       "whole writes at the offset and at a position, read back to the file's end");
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    uint8_t r1[32] = {0}, r2[32] = {0};
    ok(base_random(r1, sizeof r1) == 0 && base_random(r2, sizeof r2) == 0 &&
           memcmp(r1, r2, sizeof r1),
       "random bytes, two draws differ");
    int64_t t0 = base_now_ns();
    long long m = base_now_ms();
    int64_t t1 = base_now_ns();
    ok(t0 > 0 && t0 <= t1 && m >= t0 / 1000000 && m <= t1 / 1000000,
       "the clock in ms lies between two readings in ns");
    time_t w0 = time(NULL);
    int64_t wall = base_wall_ms();
    time_t w1 = time(NULL);
    ok(wall >= (int64_t)w0 * 1000 - 1000 && wall <= ((int64_t)w1 + 1) * 1000 + 1000,
       "the wall clock in ms is within a second of time()");
}

/* Adds lo..hi-1 to s (room made first): 0, or -1 when out of memory. */
static int add(struct base_runs *s, uint64_t lo, uint64_t hi)
{
    if (base_runs_reserve(s, 1) < 0)
        return -1;
    base_runs_add(s, lo, hi);
    return 0;
}

/* Whether s holds exactly the runs want[0..n-1] (pairs lo, hi). */
static int runs_are(const struct base_runs *s, const uint64_t *want, size_t n)
{
    if (s->n != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s->r[i].lo != want[2 * i] || s->r[i].hi != want[2 * i + 1])
            return 0;
    return 1;
}

static void runs(void)
{
    struct base_runs s = {0};
    int rc = add(&s, 10, 20) | add(&s, 30, 40) | add(&s, 50, 60);
    ok(rc == 0 && runs_are(&s, (uint64_t[]){10, 20, 30, 40, 50, 60}, 3),
       "disjoint runs added in order stay apart, sorted");
    rc = add(&s, 0, 5) | add(&s, 60, 62) | add(&s, 25, 27);
    ok(rc == 0 && runs_are(&s, (uint64_t[]){0, 5, 10, 20, 25, 27, 30, 40, 50, 62}, 5),
       "a run below all goes first, one touching the last extends it, one between goes between");
    rc = add(&s, 20, 25);
    ok(rc == 0 && runs_are(&s, (uint64_t[]){0, 5, 10, 27, 30, 40, 50, 62}, 4),
       "a run touching both neighbours merges the three");
    rc = add(&s, 3, 55);
    ok(rc == 0 && runs_are(&s, (uint64_t[]){0, 62}, 1),
       "a run overlapping several merges them all into one");
    rc = add(&s, 100, 110) | add(&s, 70, 80);
    ok(rc == 0 && runs_are(&s, (uint64_t[]){0, 62, 70, 80, 100, 110}, 3),
       "a run added below the last one goes before it");
    ok(base_runs_end(&s, 0) == 62 && base_runs_end(&s, 61) == 62 && base_runs_end(&s, 62) == 0 &&
       base_runs_end(&s, 69) == 0 && base_runs_end(&s, 79) == 80 && base_runs_end(&s, 80) == 0,
       "the end of the run holding an id, 0 for an id in none (the first past a run's end too)");
    uint64_t first = 0;
    ok(base_runs_overlap(&s, 62, 70, &first) == 0 && base_runs_overlap(&s, 80, 100, &first) == 0,
       "the gaps between runs, ends excluded, overlap nothing");
    ok(base_runs_overlap(&s, 65, 75, &first) == 1 && first == 70,
       "a span reaching into a run overlaps it from the run's first id");
    ok(base_runs_overlap(&s, 75, 200, &first) == 1 && first == 75,
       "a span starting inside a run overlaps it from the span's first id");
    ok(base_runs_from(&s, 0) == 0 && base_runs_from(&s, 62) == 0 && base_runs_from(&s, 63) == 1 &&
       base_runs_from(&s, 111) == 3, "the lower bound: the first run ending at or after an id");
    struct keyed {
        uint32_t pad;
        uint64_t key;
    } v[] = {{1, 5}, {2, 7}, {3, 7}, {4, 9}};
    size_t off = offsetof(struct keyed, key);
    size_t at[] = {base_lower_bound(v, 4, sizeof *v, off, 7),
                   base_lower_bound(v, 4, sizeof *v, off, 10),
                   base_lower_bound(v, 0, sizeof *v, off, 0)};
    ok(at[0] == 1 && at[1] == 4 && at[2] == 0,
       "the search over a struct's field: the first of equal keys, past the end, an empty array");
    base_runs_free(&s);
    ok(s.r == NULL && s.n == 0 && s.cap == 0, "freed runs are the empty set");
}

int main(void)
{
    decimals();
    hex();
    grow_and_io();
    runs();
    return tap_done();
}
