/* test_journal.c - the work queue's journal (runtime/work/journal.h):
 * create, append, sync and replay exactly; big groups split into frames; a
 * byte flipped anywhere in the header refused; other queues and formats,
 * ids out of range, ids committed twice, frames out of order and records
 * that do not parse refused with their offset; the lock held by a forked
 * child; paths that cannot be written; a write that fails and stays
 * failed; the summary's counts; the set of committed runs against a
 * bitmap. Torn tails against damage are in test_journal_torn.c, the file's
 * rules in test_journal_file.c, the linear bounds in test_journal_linear.c.
 * No sleeps, no timing. */
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "tap.h"
#include "journal_test.h"

/* What a replay gave: times each id was committed, the set-asides. */
struct seen {
    uint64_t n;
    unsigned char *times;
    uint64_t spans, committed;
    struct journal_aside aside[16];
    size_t n_aside;
};

static int record(void *ctx, const struct journal_event *ev, struct cohort_err *err)
{
    struct seen *s = ctx;
    if (ev->kind == JOURNAL_SET_ASIDE && s->n_aside < 16) {
        s->aside[s->n_aside++] = (struct journal_aside){ev->lo, ev->attempts};
        return 0;
    }
    if (ev->kind != JOURNAL_COMMITTED || ev->lo >= ev->hi || ev->hi > s->n)
        return cohort_fail(err, "a bad event");
    for (uint64_t id = ev->lo; id < ev->hi; id++)
        s->times[id]++;
    s->spans++;
    s->committed += ev->hi - ev->lo;
    return 0;
}

static void seen_reset(struct seen *s, uint64_t n)
{
    free(s->times);
    *s = (struct seen){.n = n, .times = calloc(n, 1)};
}

static int stop_at_once(void *ctx, const struct journal_event *ev, struct cohort_err *err)
{
    (void)ctx, (void)ev;
    return cohort_fail(err, "the caller stopped the replay");
}

/* ---- 1. create, append, sync, reopen: replayed exactly ---- */

static void test_roundtrip(void)
{
    enum { N = 1000 };
    const char *p = at("round");
    struct journal *j;
    struct cohort_err err;
    struct seen s = {0};
    uint64_t perm[N], x = 2463534242u;
    ok(journal_open(p, "frames", N, NULL, NULL, &j, &err) == 0 && size_of(p) == JHDR_LEN &&
           journal_torn_bytes(j) == 0,
       "a new journal is created with its header alone");
    for (uint64_t i = 0; i < N; i++)
        perm[i] = i;
    for (uint64_t i = N - 1; i > 10; i--) { /* ids 10..N-1 shuffled */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t k = 10 + x % (i - 9), t = perm[i];
        perm[i] = perm[k];
        perm[k] = t;
    }
    int rc = journal_add_committed(j, (const uint64_t[]){0, 1, 2}, 3, &err);
    rc |= journal_add_committed(j, (const uint64_t[]){3, 4}, 2, &err);
    rc |= journal_sync(j, &err);
    ok(rc == 0 && size_of(p) == JHDR_LEN + JFRAME_HEAD + JREC_HEAD + JSPAN_LEN,
       "ids 0..2 then 3..4 go out as one span, in one frame");
    rc = journal_add_set_aside(j, 7, 3, &err) | journal_add_set_aside(j, 8, 4, &err);
    for (size_t i = 10; i < N; i += 110) {
        rc |= journal_add_committed(j, perm + i, 110, &err);
        if (i % 330 == 10)
            rc |= journal_sync(j, &err);
    }
    rc |= journal_add_committed(j, (const uint64_t[]){9, 5, 6}, 3, &err) | journal_sync(j, &err);
    journal_close(j);
    ok(rc == 0, "adds and syncs succeed %s", rc ? err.msg : "");
    seen_reset(&s, N);
    rc = journal_open(p, "frames", N, record, &s, &j, &err);
    int once = 1;
    for (uint64_t id = 0; id < N; id++)
        once &= s.times[id] == (id == 7 || id == 8 ? 0 : 1);
    ok(rc == 0 && once && s.committed == N - 2 && journal_torn_bytes(j) == 0,
       "reopened: every added id replayed once, no other (%" PRIu64 " spans)", s.spans);
    ok(s.n_aside == 2 && s.aside[0].id == 7 && s.aside[0].attempts == 3 && s.aside[1].id == 8 &&
           s.aside[1].attempts == 4,
       "the set-aside ids replayed with their attempts, in order");
    ok(rc == 0 && journal_add_committed(j, (const uint64_t[]){7}, 1, &err) == 0 &&
           journal_add_committed(j, (const uint64_t[]){7}, 1, &err) < 0 &&
           strstr(err.msg, "id 7 committed a second time") && journal_sync(j, &err) < 0 &&
           strstr(err.msg, "id 7 committed a second time"),
       "an id added twice fails, and the journal stays failed: %s", err.msg);
    journal_close(j);
    ok(journal_open(p, "frames", N, stop_at_once, NULL, &j, &err) < 0 &&
           strcmp(err.msg, "the caller stopped the replay") == 0,
       "a replay callback's failure fails journal_open with its line");
    free(s.times);
}

/* ---- 2. big groups: split into frames of at most JFRAME_MAX ---- */

static void test_big_group(void)
{
    enum { SPANS = JFRAME_MAX / JSPAN_LEN + 1000 };
    const char *p = at("big");
    struct cohort_err err;
    struct seen s = {0};
    struct journal *j;
    uint64_t *ids = malloc(SPANS * sizeof *ids);
    for (size_t i = 0; i < SPANS; i++)
        ids[i] = 2 * i;
    int rc = append(p, "big", 2 * SPANS, ids, SPANS, &err);
    seen_reset(&s, 2 * SPANS);
    rc |= journal_open(p, "big", 2 * SPANS, record, &s, &j, &err);
    ok(rc == 0 && s.spans == SPANS && s.committed == SPANS &&
           size_of(p) == JHDR_LEN + 2 * (JFRAME_HEAD + JREC_HEAD) + (uint64_t)SPANS * JSPAN_LEN,
       "%d spans in one sync go out as two frames of one record each, and replay", SPANS);
    journal_close(j);
    free(ids);
    free(s.times);
}

/* ---- 3. the header, other kinds of file, other formats ---- */

static void test_header(void)
{
    const char *p = at("header");
    uint64_t ids[3] = {0, 1, 2};
    size_t len;
    struct cohort_err err;
    struct journal *j;
    if (append(p, "q", 100, ids, 3, &err) < 0)
        abort();
    uint8_t *whole = slurp(p, &len);
    int bad = -1;
    for (size_t off = 0; off < JHDR_LEN && bad < 0; off++) {
        whole[off] ^= 0x20;
        spit(p, whole, len);
        whole[off] ^= 0x20;
        if (journal_open(p, "q", 100, NULL, NULL, &j, &err) == 0 ||
            !strstr(err.msg, "has a bad header at byte 0") || !strstr(err.msg, p))
            bad = (int)off;
    }
    ok(bad < 0, "a byte flipped at each offset of the header: a bad header (first wrong: %d)",
       bad);
    whole[7] = '1';
    spit(p, whole, len);
    char want[600];
    snprintf(want, sizeof want, "journal %s is of format 1, and this cohort reads format 2 "
             "only: finish its queue with the cohort that wrote it, or move it away to start "
             "the queue afresh", p);
    ok(journal_open(p, "q", 100, NULL, NULL, &j, &err) < 0 && !strcmp(err.msg, want) &&
           journal_summary(p, &(struct journal_summary){0}, &err) < 0 && !strcmp(err.msg, want),
       "a journal of format 1 is refused with what to do: %s", err.msg);
    spit(p, (const uint8_t *)"id,label\n1,cat\n", 15);
    ok(journal_open(p, "q", 100, NULL, NULL, &j, &err) < 0 &&
           strstr(err.msg, "(not a cohort journal)") && size_of(p) == 15,
       "another kind of file is refused and left alone: %s", err.msg);
    free(whole);
}

/* ---- 4. other queues, interrupted creation ---- */

static void test_other_queue(void)
{
    const char *p = at("other");
    struct cohort_err err;
    struct journal *j;
    char want[600];
    if (append(p, "a", 1000, (const uint64_t[]){1}, 1, &err) < 0)
        abort();
    snprintf(want, sizeof want,
             "journal %s belongs to queue 'a' of 1000 items, not 'b' of 2000: give this queue "
             "another journal", p);
    ok(journal_open(p, "b", 2000, NULL, NULL, &j, &err) < 0 && strstr(err.msg, want),
       "another queue's journal is refused: %s", err.msg);
    ok(journal_open(p, "a", 1001, NULL, NULL, &j, &err) < 0 &&
           strstr(err.msg, "queue 'a' of 1000 items, not 'a' of 1001"),
       "the same name of another size is refused");
    uint8_t h[JHDR_LEN];
    jhdr_encode(h, "half", 10);
    spit(p, h, 60);
    int rc = journal_open(p, "half", 10, NULL, NULL, &j, &err);
    ok(rc == 0 && size_of(p) == JHDR_LEN, "the start of this queue's header: its creation "
                                          "was interrupted, and is finished");
    if (rc == 0)
        journal_close(j);
    spit(p, h, 60);
    ok(journal_open(p, "whole", 10, NULL, NULL, &j, &err) < 0 &&
           strstr(err.msg, "bad header at byte 0 (cut short)"),
       "the start of another queue's header is a bad header: %s", err.msg);
    ok(journal_open(p, "x", JOURNAL_MAX_ITEMS + 1, NULL, NULL, &j, &err) < 0 &&
           err.code == COHORT_E_USAGE,
       "a queue too large to journal is refused");
}

/* Header + one frame (number seq) of records written by hand, each body
 * given as bytes. */
static void craft(const char *p, uint64_t n_items, uint64_t seq, int nrec, const uint8_t *types,
                  uint8_t (*bodies)[32], const uint32_t *lens)
{
    uint8_t b[JHDR_LEN + JFRAME_HEAD + 4 * 64];
    size_t len = JHDR_LEN + JFRAME_HEAD;
    jhdr_encode(b, "c", n_items);
    for (int i = 0; i < nrec; i++) {
        b[len] = types[i];
        jput32(b + len + 1, lens[i]);
        memcpy(b + len + JREC_HEAD, bodies[i], lens[i]);
        len += JREC_HEAD + lens[i];
    }
    jframe_seal(b + JHDR_LEN, jget64(b + JHDR_LEN - JCHECK_LEN), seq,
                (uint32_t)(len - JHDR_LEN - JFRAME_HEAD));
    spit(p, b, len);
}

static void span_body(uint8_t *b, uint64_t lo, uint64_t hi)
{
    jput64(b, lo);
    jput64(b + 8, hi);
}

/* ---- 5. ids out of range, ids committed twice, frames and records that
 * do not parse ---- */

#define REC0 (JHDR_LEN + JFRAME_HEAD) /* where the first record begins */

static void test_bad_ids(void)
{
    const char *p = at("ids");
    struct cohort_err err;
    struct journal *j;
    uint8_t bodies[2][32] = {{0}};
    char want[600];
    span_body(bodies[0], 90, 101);
    craft(p, 100, 0, 1, (const uint8_t[]){JOURNAL_COMMITTED}, bodies, (const uint32_t[]){16});
    snprintf(want, sizeof want, "journal %s is damaged at byte %d (ids [90, 101) outside the "
             "queue's 100 items)", p, REC0);
    ok(journal_open(p, "c", 100, NULL, NULL, &j, &err) < 0 && strstr(err.msg, want),
       "a committed id beyond the queue is damage: %s", err.msg);
    jput64(bodies[0], 100);
    jput32(bodies[0] + 8, 3);
    craft(p, 100, 0, 1, (const uint8_t[]){JOURNAL_SET_ASIDE}, bodies, (const uint32_t[]){12});
    ok(journal_open(p, "c", 100, NULL, NULL, &j, &err) < 0 &&
           strstr(err.msg, "ids [100, 101) outside"),
       "a set-aside id beyond the queue is damage");
    span_body(bodies[0], 0, 10);
    span_body(bodies[1], 5, 6);
    craft(p, 100, 0, 2, (const uint8_t[]){1, 1}, bodies, (const uint32_t[]){16, 16});
    snprintf(want, sizeof want, "damaged at byte %d (id 5 committed a second time)",
             REC0 + JREC_HEAD + 16);
    ok(journal_open(p, "c", 100, NULL, NULL, &j, &err) < 0 && strstr(err.msg, want),
       "an id committed in two records is damage, at the second: %s", err.msg);
    span_body(bodies[0] + 16, 9, 12);
    craft(p, 100, 0, 1, (const uint8_t[]){1}, bodies, (const uint32_t[]){32});
    ok(journal_open(p, "c", 100, NULL, NULL, &j, &err) < 0 &&
           strstr(err.msg, "(id 9 committed a second time)"),
       "overlapping spans of one record are damage");
    span_body(bodies[0], 7, 7);
    craft(p, 100, 0, 1, (const uint8_t[]){1}, bodies, (const uint32_t[]){16});
    ok(journal_open(p, "c", 100, NULL, NULL, &j, &err) < 0 && strstr(err.msg, "[7, 7)"),
       "an empty span is damage");
    unlink(p);
    int rc = journal_open(p, "c", 100, NULL, NULL, &j, &err);
    ok(rc == 0 && journal_add_committed(j, (const uint64_t[]){98, 99, 100}, 3, &err) < 0 &&
           strstr(err.msg, "id 100 committed beyond the queue's 100 items") &&
           journal_add_set_aside(j, 1, 1, &err) < 0 && strstr(err.msg, "id 100"),
       "adding an id beyond the queue fails, and for good: %s", err.msg);
    if (rc == 0)
        journal_close(j);
}

static void test_bad_frames(void)
{
    const char *p = at("frames");
    struct cohort_err err;
    struct journal *j;
    uint8_t bodies[2][32] = {{0}};
    char want[600];
    span_body(bodies[0], 0, 10);
    craft(p, 100, 1, 1, (const uint8_t[]){JOURNAL_COMMITTED}, bodies, (const uint32_t[]){16});
    snprintf(want, sizeof want, "journal %s is damaged at byte %d (frame 1 where frame 0 "
             "belongs: a write is missing or repeated)", p, JHDR_LEN);
    ok(journal_open(p, "c", 100, NULL, NULL, &j, &err) < 0 && strstr(err.msg, want),
       "a frame out of order is damage: %s", err.msg);
    craft(p, 100, 0, 1, (const uint8_t[]){3}, bodies, (const uint32_t[]){16});
    snprintf(want, sizeof want, "journal %s is damaged at byte %d (a record of a bad type or "
             "length)", p, REC0);
    ok(journal_open(p, "c", 100, NULL, NULL, &j, &err) < 0 && strstr(err.msg, want),
       "a record of an unknown type in a frame whose check holds is damage: %s", err.msg);
    craft(p, 100, 0, 1, (const uint8_t[]){JOURNAL_COMMITTED}, bodies, (const uint32_t[]){12});
    ok(journal_open(p, "c", 100, NULL, NULL, &j, &err) < 0 && strstr(err.msg, want),
       "a span record of a bad length is damage");
}

/* ---- 6. the lock: another process's coordinator holds the journal ---- */

static void test_lock(void)
{
    const char *p = at("lock");
    int up[2], down[2];
    char c = 0, want[600];
    struct cohort_err err;
    struct journal *j;
    if (pipe(up) < 0 || pipe(down) < 0)
        abort();
    pid_t pid = fork();
    if (pid == 0) {
        close(up[0]);
        close(down[1]); /* so that the parent's close is the end of down */
        int rc = journal_open(p, "l", 10, NULL, NULL, &j, &err);
        if (write(up[1], rc == 0 ? "y" : "n", 1) != 1 || read(down[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    int held = read(up[0], &c, 1) == 1 && c == 'y';
    snprintf(want, sizeof want, "journal %s is in use by another step's coordinator (pid %ld)",
             p, (long)pid);
    ok(held && journal_open(p, "l", 10, NULL, NULL, &j, &err) < 0 && strstr(err.msg, want),
       "a journal another process holds is refused with its pid: %s", err.msg);
    close(down[1]);
    int st;
    waitpid(pid, &st, 0);
    close(up[0]);
    int rc = journal_open(p, "l", 10, NULL, NULL, &j, &err);
    ok(rc == 0, "once that process is gone, it opens");
    if (rc == 0)
        journal_close(j);
}

/* ---- 7. paths that cannot be written ---- */

/* journal_open in a directory this process may not write: as root, in a
 * child that became nobody. Returns 1 (refused with the line), 0, or -1
 * when it cannot be tried. */
static int open_unwritable(const char *d, char *msg, size_t len)
{
    int fds[2];
    if (mkdir(d, 0755) < 0 || pipe(fds) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        struct cohort_err err = {.msg = ""};
        struct journal *j;
        if (geteuid() == 0 ? setgid(65534) < 0 || setuid(65534) < 0 : chmod(d, 0555) < 0)
            _exit(3);
        int rc = journal_open(at("ro/j"), "u", 1, NULL, NULL, &j, &err);
        _exit(write(fds[1], err.msg, strlen(err.msg)) < 0 ? 2 : rc < 0);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], msg, len - 1);
    msg[n > 0 ? n : 0] = 0;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    chmod(d, 0755);
    return !WIFEXITED(st) || WEXITSTATUS(st) == 3 ? -1 : WEXITSTATUS(st) == 1;
}

/* A journal another user made is refused: it could claim items done. */
static void test_foreign_owner(void)
{
    struct cohort_err err = {.msg = ""};
    struct journal *j;
    if (geteuid() != 0) {
        tap_skip("a journal of another user: needs root to give a file away");
        return;
    }
    if (journal_open(at("foreign"), "u", 4, NULL, NULL, &j, &err) < 0 ||
        (journal_close(j), chown(at("foreign"), 65534, 65534)) < 0) {
        ok(0, "cannot make a journal of uid 65534: %s", err.msg);
        return;
    }
    int rc = journal_open(at("foreign"), "u", 4, NULL, NULL, &j, &err);
    ok(rc < 0 && strstr(err.msg, "belongs to uid 65534, not to this user"),
       "a journal of uid 65534 is refused (%s)", err.msg);
    if (rc == 0)
        journal_close(j);
}

static void test_unwritable(void)
{
    struct cohort_err err;
    struct journal *j;
    char want[600], msg[600];
    snprintf(want, sizeof want, "cannot open journal %s: No such file or directory",
             at("none/j"));
    ok(journal_open(at("none/j"), "u", 1, NULL, NULL, &j, &err) < 0 && !strcmp(err.msg, want),
       "a missing directory: %s", err.msg);
    spit(at("file"), (const uint8_t *)"x", 1);
    ok(journal_open(at("file/j"), "u", 1, NULL, NULL, &j, &err) < 0 &&
           strstr(err.msg, "file/j: Not a directory"),
       "a file for a directory: %s", err.msg);
    int rc = open_unwritable(at("ro"), msg, sizeof msg);
    snprintf(want, sizeof want, "cannot open journal %s: Permission denied", at("ro/j"));
    if (rc < 0)
        tap_skip("cannot make a directory this process may not write");
    else
        ok(rc == 1 && !strcmp(msg, want), "a directory without write permission: %s", msg);
    ok(journal_summary(at("none/j"), &(struct journal_summary){0}, &err) < 0 &&
           strstr(err.msg, "No such file or directory"),
       "the summary of a missing journal: one line");
}

/* ---- 8. a write that fails (the file size limit stands in for a full disk) ---- */

static void test_write_failure(void)
{
    const char *p = at("full");
    struct cohort_err err;
    struct journal *j;
    struct rlimit old, small;
    uint64_t ids[64];
    for (int i = 0; i < 64; i++)
        ids[i] = 2 * (uint64_t)i;
    if (journal_open(p, "f", 1000, NULL, NULL, &j, &err) < 0 || getrlimit(RLIMIT_FSIZE, &old) < 0)
        abort();
    signal(SIGXFSZ, SIG_IGN);
    small = old;
    small.rlim_cur = JHDR_LEN + 100;
    int set = setrlimit(RLIMIT_FSIZE, &small) == 0;
    int rc = journal_add_committed(j, ids, 64, &err) == 0 ? journal_sync(j, &err) : 0;
    char want[600];
    snprintf(want, sizeof want, "cannot write journal %s: File too large", p);
    setrlimit(RLIMIT_FSIZE, &old);
    ok(set && rc < 0 && strstr(err.msg, want) && err.code == COHORT_E_RESOURCE,
       "a write that fails part way: one line naming the journal and why: %s", err.msg);
    ok(journal_add_set_aside(j, 1, 1, &err) < 0 && strstr(err.msg, want) &&
           journal_sync(j, &err) < 0 && strstr(err.msg, want),
       "and every later call fails with it");
    journal_close(j);
    struct journal_summary s;
    ok(journal_summary(p, &s, &err) == 0 && s.torn_bytes == 100 && s.committed == 0,
       "what it wrote is a torn tail");
    journal_summary_free(&s);
}

/* ---- 9. the summary's counts ---- */

static void test_summary(void)
{
    const char *p = at("sum");
    struct cohort_err err;
    struct journal *j;
    struct journal_summary s;
    if (journal_open(p, "sum q", 50, NULL, NULL, &j, &err) < 0)
        abort();
    int rc = journal_add_committed(j, (const uint64_t[]){0, 1, 2, 3, 4, 10}, 6, &err);
    rc |= journal_add_set_aside(j, 30, 3, &err) | journal_add_set_aside(j, 20, 3, &err);
    rc |= journal_add_set_aside(j, 40, 3, &err) | journal_sync(j, &err);
    journal_close(j);
    /* a later step: 40 committed at last, 30 set aside again */
    if (journal_open(p, "sum q", 50, NULL, NULL, &j, &err) < 0)
        abort();
    rc |= journal_add_committed(j, (const uint64_t[]){40, 11}, 2, &err);
    rc |= journal_add_set_aside(j, 30, 5, &err) | journal_sync(j, &err);
    journal_close(j);
    uint64_t size = size_of(p);
    rc |= journal_summary(p, &s, &err);
    ok(rc == 0 && !strcmp(s.name, "sum q") && s.n_items == 50 && s.committed == 8 &&
           s.n_aside == 2 && s.remaining == 40 && s.torn_bytes == 0 && s.size == size,
       "summary: 8 done, 2 set aside, 40 remaining, no torn tail");
    ok(s.n_aside == 2 && s.aside[0].id == 20 && s.aside[0].attempts == 3 &&
           s.aside[1].id == 30 && s.aside[1].attempts == 5,
       "set-aside ids ascending, with their last attempts; one committed later is done");
    journal_summary_free(&s);
}

/* ---- 10. the set of committed runs against a bitmap ---- */

/* The nodes of the subtree at t in order, checked: disjoint ascending
 * runs, AA levels (a left child one level down, a right child the same or
 * one down, a right grandchild below); -1 when wrong, else the nodes. */
static long check_tree(const struct jtree *tr, uint32_t t, uint64_t *last_hi)
{
    const struct jnode *v = tr->v;
    if (t == 0)
        return 0;
    long l = check_tree(tr, v[t].l, last_hi);
    if (l < 0 || v[t].lo >= v[t].hi || v[t].lo < *last_hi || v[v[t].l].level + 1 != v[t].level ||
        v[v[t].r].level + 1 < v[t].level || v[v[t].r].level > v[t].level ||
        v[v[v[t].r].r].level >= v[t].level)
        return -1;
    *last_hi = v[t].hi;
    long r = check_tree(tr, v[t].r, last_hi);
    return r < 0 ? -1 : l + r + 1;
}

static void test_spans(void)
{
    enum { N = 3000 };
    unsigned char in[N] = {0};
    struct jtree t = {0};
    uint64_t count = 0, x = 88172645463325252u;
    int bad = 0;
    for (int k = 0; k < 20000 && !bad; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t lo = x % N, hi = lo + 1 + (x >> 20) % 12, dup = 0, first = UINT64_MAX;
        if (hi > N)
            hi = N;
        for (uint64_t id = lo; id < hi && first == UINT64_MAX; id++)
            if (in[id])
                first = id;
        int rc = jtree_add(&t, lo, hi, &dup);
        bad = first == UINT64_MAX ? rc != 0 : rc != 1 || dup != first;
        for (uint64_t id = lo; rc == 0 && id < hi; id++)
            in[id] = 1, count++;
    }
    uint64_t last_hi = 0;
    long nodes = check_tree(&t, t.root, &last_hi);
    for (uint64_t id = 0, d; id < N && !bad; id++)
        bad = jtree_overlap(&t, id, id + 1, &d) != in[id];
    ok(!bad && nodes == (long)t.n && t.count == count,
       "the writer's tree follows a bitmap through 20000 random adds, its runs disjoint and "
       "its levels an AA tree's (%ld runs, %" PRIu64 " ids)", nodes, count);
    jtree_free(&t);
}

int main(void)
{
    if (jt_setup() < 0)
        return 1;
    test_roundtrip();
    test_big_group();
    test_header();
    test_other_queue();
    test_bad_ids();
    test_bad_frames();
    test_lock();
    test_unwritable();
    test_foreign_owner();
    test_write_failure();
    test_summary();
    test_spans();
    jt_cleanup();
    return tap_done();
}
