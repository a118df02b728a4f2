/* test_journal_linear.c - reading a journal costs time linear in its size
 * whatever it holds (runtime/work/journal.h, "Cost"), asserted with the
 * pass's own counters, not with a clock: the bytes it reads (at most three
 * times the file) and the spans the set of committed ids moves (at most 12
 * a span), over crafted journals: garbage after a bad frame that looks like
 * format 1 records claiming a MiB (format 1's reader read a MiB at each of
 * them), or like heads of an earlier frame claiming JFRAME_MAX; a head
 * claiming JFRAME_MAX over bad records; spans committed in descending
 * order, or shuffled, which must come out as exactly the runs committed.
 * And the writer's tree visits a logarithmic number of nodes an add. No
 * sleeps, no timing. */
#include <inttypes.h>
#include <string.h>

#include "tap.h"
#include "journal_test.h"

enum { FRAME = 1000 };

/* What one pass over a journal cost and found. */
struct cost {
    uint64_t size, read, moved, committed, torn;
    size_t runs;
};

/* One pass over the journal at p, as journal_summary and journal_open
 * make it, into done (to be freed): 0, or -1 with err. */
static int pass(const char *p, struct cost *c, struct jspans *done, struct cohort_err *err)
{
    int created, rc = -1;
    uint8_t h[JHDR_LEN];
    struct jhdr hdr;
    *done = (struct jspans){0};
    int fd = jfile_open(p, 0, &created, err);
    if (fd < 0)
        return -1;
    c->size = size_of(p);
    if (base_pread_all(fd, h, JHDR_LEN, 0) == JHDR_LEN &&
        jhdr_decode(h, JHDR_LEN, p, &hdr, err) == 0) {
        struct jscan s = {.path = p, .fd = fd, .size = c->size, .n_items = hdr.n_items,
                          .key = hdr.key, .done = done};
        rc = jscan_records(&s, err);
        *c = (struct cost){c->size, s.bytes_read + JHDR_LEN, done->moved, done->count,
                           c->size - s.end, done->runs.n};
    }
    close(fd);
    return rc;
}

/* A journal of n items whose ids[0..k-1] are committed FRAME to a group
 * commit. */
static void commit_in_frames(const char *p, uint64_t n, const uint64_t *ids, size_t k)
{
    struct journal *j;
    struct cohort_err err;
    unlink(p);
    if (journal_open(p, "lin", n, NULL, NULL, &j, &err) < 0)
        abort();
    for (size_t i = 0; i < k; i += FRAME)
        if (journal_add_committed(j, ids + i, k - i < FRAME ? k - i : FRAME, &err) < 0 ||
            journal_sync(j, &err) < 0)
            abort();
    journal_close(j);
}

/* Appends len bytes at b to the file. */
static void add_tail(const char *p, const uint8_t *b, size_t len)
{
    int fd = open(p, O_WRONLY | O_APPEND);
    if (fd < 0 || write(fd, b, len) != (ssize_t)len)
        abort();
    close(fd);
}

enum tail { V1_RECORDS, OLD_HEADS, BIG_HEAD };

/* A hostile tail of len bytes after a journal of key whose frames so far
 * number frames. */
static uint8_t *hostile(enum tail t, size_t len, uint64_t key, uint64_t frames)
{
    uint8_t *b = calloc(len, 1);
    if (t == V1_RECORDS) { /* format 1 heads of COMMITTED records of a MiB, every 512 bytes */
        for (size_t i = 0; i + (1u << 20) <= len; i += 512) {
            b[i] = JOURNAL_COMMITTED;
            jput32(b + i + 1, (1u << 20) - 16 * 16);
        }
    } else if (t == OLD_HEADS) { /* every 32 bytes a valid head of an earlier frame */
        uint8_t *f = calloc(JFRAME_HEAD + JFRAME_MAX, 1);
        jframe_seal(f, key, frames - 1, JFRAME_MAX);
        for (size_t i = 1; i + JFRAME_HEAD <= len; i += JFRAME_HEAD)
            memcpy(b + i, f, JFRAME_HEAD);
        free(f);
        b[0] = 0xff; /* the frame where the next belongs: a bad head */
    } else { /* the next frame's head, over records that do not match it */
        jframe_seal(b, key, frames, (uint32_t)(len - JFRAME_HEAD));
        b[JFRAME_HEAD + 7] ^= 1;
    }
    return b;
}

static void test_hostile_tails(void)
{
    enum { N = 100000 };
    static uint64_t ids[N / 2];
    static const char *what[] = {"format 1 records claiming a MiB every 512 bytes",
                                 "heads of an earlier frame every 32 bytes",
                                 "the next frame's head claiming 4 MiB over bad records"};
    static const size_t lens[] = {3u << 19, 1u << 20, JFRAME_MAX + JFRAME_HEAD};
    const char *p = at("tail");
    for (size_t i = 0; i < N / 2; i++)
        ids[i] = 2 * i;
    for (int t = V1_RECORDS; t <= BIG_HEAD; t++) {
        struct cost c;
        struct jspans done;
        struct cohort_err err;
        size_t len;
        commit_in_frames(p, N, ids, N / 2);
        uint8_t *whole = slurp(p, &len);
        uint8_t *tail = hostile((enum tail)t, lens[t], jget64(whole + JHDR_LEN - JCHECK_LEN),
                                N / 2 / FRAME);
        add_tail(p, tail, lens[t]);
        free(tail);
        free(whole);
        int rc = pass(p, &c, &done, &err);
        jspans_free(&done);
        ok(rc == 0 && c.torn == lens[t] && c.committed == N / 2 && c.read <= 3 * c.size,
           "a torn tail of %s: %" PRIu64 " bytes read of %" PRIu64 " (at most 3 times)%s%s",
           what[t], c.read, c.size, rc ? ": " : "", rc ? err.msg : "");
    }
}

static void test_descending(void)
{
    enum { N = 200000 };
    static uint64_t ids[N];
    struct cost c;
    struct jspans done;
    struct cohort_err err;
    const char *p = at("desc");
    for (size_t i = 0; i < N; i++) /* runs of one id, each below the last */
        ids[i] = 2 * (uint64_t)(N - 1 - i);
    commit_in_frames(p, 2 * N, ids, N);
    int rc = pass(p, &c, &done, &err);
    jspans_free(&done);
    ok(rc == 0 && c.committed == N && c.runs == N && c.moved <= 20 * (uint64_t)N &&
           c.read <= 3 * c.size,
       "%d spans committed in descending order: %" PRIu64 " spans moved (at most 20 a span), "
       "%" PRIu64 " bytes read of %" PRIu64 "%s%s", N, c.moved, c.read, c.size, rc ? ": " : "",
       rc ? err.msg : "");
}

/* Shuffled spans of two ids with gaps and some adjacent: a pass gathers
 * in batches exactly the maximal runs of the ids committed. */
static void test_shuffled(void)
{
    enum { N = 150000 };
    static uint64_t ids[2 * N];
    static unsigned char in[2 * N + 1];
    struct jspans done;
    struct cost c;
    struct cohort_err err;
    uint64_t x = 88172645463325252u, count = 0, runs = 0, d;
    size_t k = 0;
    for (uint64_t i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (x % 3 != 0) { /* two of three spans of 2 ids taken */
            ids[k++] = 2 * i;
            ids[k++] = 2 * i + 1;
            in[2 * i] = in[2 * i + 1] = 1;
            runs += i == 0 || !in[2 * i - 1];
            count += 2;
        }
    }
    for (size_t i = k / 2 - 1; i > 0; i--) { /* shuffle the pairs */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t m = x % (i + 1);
        uint64_t a = ids[2 * i], b = ids[2 * i + 1];
        ids[2 * i] = ids[2 * m], ids[2 * i + 1] = ids[2 * m + 1];
        ids[2 * m] = a, ids[2 * m + 1] = b;
    }
    commit_in_frames(at("shuf"), 2 * N, ids, k);
    int rc = pass(at("shuf"), &c, &done, &err), same = 1;
    for (uint64_t id = 0; rc == 0 && id < 2 * N; id++)
        same &= base_runs_overlap(&done.runs, id, id + 1, &d) == in[id];
    ok(rc == 0 && same && c.committed == count && c.runs == runs &&
           c.moved <= 20 * (uint64_t)(k / 2),
       "%zu shuffled spans: exactly the %" PRIu64 " runs committed, %" PRIu64 " spans moved "
       "(at most 20 a span)", k / 2, runs, c.moved);
    jspans_free(&done);
}

/* A journal of the spans (lo, hi) at sp[0..k-1], one record each, FRAME
 * records to a frame, written by hand (the writer refuses an id committed
 * twice): the byte offset of each record into at[]. */
static void craft_spans(const char *p, uint64_t n_items, const uint64_t (*sp)[2], size_t k,
                        uint64_t *at)
{
    size_t frame = JFRAME_HEAD + FRAME * (JREC_HEAD + JSPAN_LEN), len = JHDR_LEN;
    uint8_t *b = malloc(JHDR_LEN + (k / FRAME + 1) * frame);
    jhdr_encode(b, "dup", n_items);
    uint64_t key = jget64(b + JHDR_LEN - JCHECK_LEN);
    for (size_t i = 0, seq = 0; i < k; seq++) {
        size_t head = len;
        len += JFRAME_HEAD;
        for (size_t r = 0; r < FRAME && i < k; r++, i++, len += JREC_HEAD + JSPAN_LEN) {
            at[i] = len;
            b[len] = JOURNAL_COMMITTED;
            jput32(b + len + 1, JSPAN_LEN);
            jput64(b + len + JREC_HEAD, sp[i][0]);
            jput64(b + len + JREC_HEAD + 8, sp[i][1]);
        }
        jframe_seal(b + head, key, seq, (uint32_t)(len - head - JFRAME_HEAD));
    }
    spit(p, b, len);
    free(b);
}

/* Shuffled spans, one of them again later: refused, naming an id
 * committed twice at the record that committed it the second time, found
 * wherever the batches met it. */
static void test_duplicate(void)
{
    enum { N = 60000 };
    static uint64_t sp[N + 1][2], rec[N + 1];
    uint64_t x = 2463534242u;
    char want[300];
    int bad = -1;
    for (uint64_t i = 0; i < N; i++)
        sp[i][0] = 3 * i, sp[i][1] = 3 * i + 2;
    for (size_t i = N - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t m = x % (i + 1);
        uint64_t lo = sp[i][0];
        sp[i][0] = sp[m][0], sp[i][1] = sp[m][0] + 2;
        sp[m][0] = lo, sp[m][1] = lo + 2;
    }
    for (size_t t = 0; t < 40 && bad < 0; t++) { /* a copy of span a, placed at b > a */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t a = x % N, b = a + 1 + (x >> 32) % (N - a);
        memmove(sp[b + 1], sp[b], (N - b) * sizeof sp[0]);
        sp[b][0] = sp[a][0] + (x >> 40) % 2, sp[b][1] = sp[a][1];
        craft_spans(at("dup"), 3 * N, (const uint64_t(*)[2])sp, N + 1, rec);
        struct cost c;
        struct jspans done;
        struct cohort_err err;
        int rc = pass(at("dup"), &c, &done, &err);
        jspans_free(&done);
        snprintf(want, sizeof want, "is damaged at byte %" PRIu64 " (id %" PRIu64
                 " committed a second time)", rec[b], sp[b][0]);
        if (rc == 0 || !strstr(err.msg, want))
            bad = (int)t;
        memmove(sp[b], sp[b + 1], (N - b) * sizeof sp[0]);
    }
    ok(bad < 0, "an id committed twice among %d shuffled spans, 40 times: refused at the "
       "second record (first wrong: %d)", N, bad);
}

/* The writer's tree: spans added below every run, one at a time, visit
 * at most 4 log2(n) + 2 nodes each (the AA tree's height is at most
 * 2 log2(n)). */
static void test_writer_tree(void)
{
    enum { N = 200000, LOG2N = 18 };
    struct jtree t = {0};
    uint64_t d;
    int rc = 0;
    for (uint64_t i = N; i-- > 0;)
        rc |= jtree_add(&t, 3 * i, 3 * i + 1, &d);
    ok(rc == 0 && t.count == N && t.steps <= (uint64_t)N * (4 * LOG2N + 2),
       "%d spans added in descending order: %" PRIu64 " nodes visited (at most %d a span)", N,
       t.steps, 4 * LOG2N + 2);
    jtree_free(&t);
}

int main(void)
{
    if (jt_setup() < 0)
        return 1;
    test_hostile_tails();
    test_descending();
    test_shuffled();
    test_duplicate();
    test_writer_tree();
    jt_cleanup();
    return tap_done();
}
