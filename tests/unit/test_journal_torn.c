/* test_journal_torn.c - a torn tail against damage (runtime/work/journal.h):
 * what a crash can leave of the last group commit (a prefix cut at every
 * byte; the rest up to the write's end zeros or garbage; a page of it
 * never written while later ones were) is ignored with its size told, cut
 * away and appended after; a byte inserted, deleted or flipped anywhere
 * before the last write is refused, naming a byte offset at or before it,
 * with the file left as it was, by journal_open and journal_summary alike.
 * No sleeps, no timing. */
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "tap.h"
#include "journal_test.h"

enum { N = 5000, PAGE = 4096 };

/* A journal of five group commits, the last one over three pages: ids, set
 * asides, out-of-order spans. *last: where the last write begins; *done:
 * the ids committed before it. */
static void five_commits(const char *p, uint64_t *last, uint64_t *done)
{
    static uint64_t ids[N];
    struct journal *j;
    struct cohort_err err;
    unlink(p);
    if (journal_open(p, "torn", N, NULL, NULL, &j, &err) < 0)
        abort();
    size_t n = 0;
    for (uint64_t i = 0; i < 400; i++) /* every third id: many spans */
        ids[n++] = 3 * i;
    int rc = journal_add_committed(j, ids, 100, &err) | journal_sync(j, &err);
    rc |= journal_add_set_aside(j, 1, 3, &err) | journal_add_committed(j, ids + 200, 100, &err);
    rc |= journal_sync(j, &err) | journal_add_committed(j, ids + 100, 100, &err);
    rc |= journal_sync(j, &err) | journal_add_set_aside(j, 4, 2, &err) | journal_sync(j, &err);
    *last = size_of(p);
    *done = 300;
    for (uint64_t id = 1200; id < 2100; id += 2) { /* 450 spans, 45 set aside: 3 pages */
        rc |= journal_add_committed(j, &id, 1, &err);
        if (id % 20 == 0)
            rc |= journal_add_set_aside(j, id + 1, 3, &err);
    }
    rc |= journal_sync(j, &err);
    journal_close(j);
    if (rc != 0 || size_of(p) < *last + 2 * PAGE)
        abort();
}

/* The next of a fixed sequence of garbage bytes. */
static uint8_t garbage(void)
{
    static uint64_t x = 0x9e3779b97f4a7c15u;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return (uint8_t)(x >> 24);
}

enum fill { NONE, ZEROS, GARBAGE };

/* The journal whole up to keep, then up to end (NONE: not at all) zeros or
 * garbage: accepted as a torn tail from cut on, done ids counted, the file
 * cut there and appended after (check_append). */
static int torn_ok(const char *p, const uint8_t *whole, size_t keep, size_t end, enum fill f,
                   uint64_t cut, uint64_t done, int check_append, char *why, size_t wlen)
{
    struct cohort_err err = {.msg = ""};
    struct journal *j;
    struct journal_summary s = {0};
    size_t size = f == NONE ? keep : end;
    uint8_t *b = malloc(size);
    memcpy(b, whole, keep);
    for (size_t i = keep; i < size; i++)
        b[i] = f == ZEROS ? 0 : garbage();
    spit(p, b, size);
    free(b);
    int sum = journal_summary(p, &s, &err) == 0 && s.torn_bytes == size - cut &&
              s.committed == done && size_of(p) == size;
    journal_summary_free(&s);
    int rc = journal_open(p, "torn", N, NULL, NULL, &j, &err);
    int good = sum && rc == 0 && journal_torn_bytes(j) == size - cut && size_of(p) == cut;
    if (rc == 0 && check_append)
        good = good && journal_add_committed(j, (const uint64_t[]){4999}, 1, &err) == 0 &&
               journal_sync(j, &err) == 0;
    if (rc == 0)
        journal_close(j);
    if (good && check_append) {
        good = journal_summary(p, &s, &err) == 0 && s.torn_bytes == 0 &&
               s.committed == done + 1;
        journal_summary_free(&s);
    }
    if (!good)
        snprintf(why, wlen, ": keep %zu of %zu (fill %d): %s", keep, size, (int)f,
                 rc < 0 ? err.msg : "counts, cut or append wrong");
    return good;
}

/* The journal of five_commits, as bytes. */
struct fixture {
    uint8_t *whole; /* malloc'd */
    size_t len;
    uint64_t last, done;
};

static struct fixture fixture(void)
{
    struct fixture fx;
    five_commits(at("orig"), &fx.last, &fx.done);
    fx.whole = slurp(at("orig"), &fx.len);
    return fx;
}

static void test_torn(void)
{
    const char *p = at("torn");
    char why[700] = "";
    struct fixture fx = fixture();
    uint8_t *whole = fx.whole;
    size_t len = fx.len;
    uint64_t last = fx.last, done = fx.done;
    static const char *what[] = {"cut there", "zeros after it to the write's end",
                                 "garbage after it to the write's end"};
    for (int f = NONE; f <= GARBAGE; f++) {
        int good = 1;
        size_t cuts = 0;
        for (size_t keep = last; keep < len && good; keep++, cuts++)
            good = torn_ok(p, whole, keep, len, (enum fill)f, last, done, keep % 211 == 0, why,
                           sizeof why);
        ok(good && cuts == len - last,
           "the last group commit (%zu bytes) cut at each byte, %s: a torn tail, cut away, "
           "appended after%s", (size_t)(len - last), what[f], why);
    }
    ok(torn_ok(p, whole, len, len + PAGE, ZEROS, len, done + 450, 1, why, sizeof why),
       "zeros after the last write: a torn tail%s", why);
    /* a crash wrote the last write's pages out of order: one in the middle never */
    uint64_t hole = (last / PAGE + 1) * PAGE;
    memset(whole + hole, 0, PAGE);
    why[0] = 0;
    ok(torn_ok(p, whole, len, len, NONE, last, done, 1, why, sizeof why),
       "a page of the last write never written, the next one written: a torn tail%s", why);
    free(whole);
}

enum edit { INSERT, DELETE, FLIP };

/* The journal with one byte inserted, deleted or flipped at off: refused
 * by journal_open and journal_summary with a line naming the journal and
 * a byte at or before off, the file left as it was. */
static int refused(const char *p, const uint8_t *whole, size_t len, size_t off, enum edit e,
                   char *why, size_t wlen)
{
    struct cohort_err e1 = {.msg = ""}, e2 = {.msg = ""};
    struct journal *j;
    struct journal_summary s;
    uint8_t *b = malloc(len + 1);
    size_t size = e == INSERT ? len + 1 : e == DELETE ? len - 1 : len;
    memcpy(b, whole, off);
    if (e == INSERT) {
        b[off] = 0x5a;
        memcpy(b + off + 1, whole + off, len - off);
    } else if (e == DELETE) {
        memcpy(b + off, whole + off + 1, len - off - 1);
    } else {
        memcpy(b + off, whole + off, len - off);
        b[off] ^= 0x10;
    }
    spit(p, b, size);
    free(b);
    int o = journal_open(p, "torn", N, NULL, NULL, &j, &e1), r = journal_summary(p, &s, &e2);
    if (o == 0)
        journal_close(j);
    if (r == 0)
        journal_summary_free(&s);
    char head[300];
    unsigned long long at_byte = ULLONG_MAX;
    snprintf(head, sizeof head, "journal %s ", p);
    const char *d = strstr(e1.msg, "is damaged at byte ");
    if (d)
        at_byte = strtoull(d + strlen("is damaged at byte "), NULL, 10);
    else if (strstr(e1.msg, "has a bad header at byte 0"))
        at_byte = 0;
    int good = o < 0 && r < 0 && strstr(e1.msg, head) == e1.msg && at_byte <= off &&
               strcmp(e1.msg, e2.msg) == 0 && size_of(p) == size;
    if (!good)
        snprintf(why, wlen, ": %s at %zu: %s", e == INSERT ? "inserted" : e == DELETE ? "deleted"
                 : "flipped", off, o == 0 ? "opened" : e1.msg);
    return good;
}

static void test_damage(void)
{
    struct fixture fx = fixture();
    char why[700] = "";
    const char *p = at("damage");
    const uint8_t *whole = fx.whole;
    size_t len = fx.len, last = fx.last;
    static const char *what[] = {"inserted", "deleted", "flipped"};
    for (int e = INSERT; e <= FLIP; e++) {
        int good = 1;
        size_t offs = 0;
        for (size_t off = 0; off < last && good; off++, offs++)
            good = refused(p, whole, len, off, (enum edit)e, why, sizeof why);
        ok(good && offs == last,
           "a byte %s at each of the %zu offsets before the last write: refused at or before "
           "it, the file left as it was%s", what[e], offs, why);
    }
    ok(refused(p, whole, len, last, INSERT, why, sizeof why),
       "a byte inserted just before the last write: refused%s", why);
    free(fx.whole);
}

int main(void)
{
    if (jt_setup() < 0)
        return 1;
    test_torn();
    test_damage();
    jt_cleanup();
    return tap_done();
}
