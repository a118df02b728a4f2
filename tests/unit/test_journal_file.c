/* test_journal_file.c - the journal file must be what its user named and
 * only its owner can write (runtime/work/journal.h, "The file"): a
 * symbolic link to the user's own finished journal, a dangling link, a
 * second hard link, a journal its group or others can write are refused by
 * journal_open and journal_summary with one line each, the file left as it
 * was; a link to a directory on the way is the user's business; a new
 * journal is created writable by its owner alone whatever the umask. No
 * sleeps, no timing. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "tap.h"
#include "journal_test.h"

enum { N = 1000 };

/* The user's finished journal of queue "frames": every id committed. */
static void finished(const char *p)
{
    static uint64_t ids[N];
    struct cohort_err err;
    for (uint64_t i = 0; i < N; i++)
        ids[i] = i;
    if (append(p, "frames", N, ids, N, &err) < 0)
        abort();
}

/* journal_open and journal_summary of p both refused with a line holding
 * want; p's target (or p) keeps size bytes. */
static int refused(const char *p, const char *want, const char *target, uint64_t size,
                   char *why, size_t wlen)
{
    struct cohort_err e1 = {.msg = ""}, e2 = {.msg = ""};
    struct journal *j = NULL;
    struct journal_summary s;
    int o = journal_open(p, "frames", N, NULL, NULL, &j, &e1);
    int r = journal_summary(p, &s, &e2);
    snprintf(why, wlen, "open: %s; summary: %s", o == 0 ? "opened" : e1.msg,
             r == 0 ? "read" : e2.msg);
    if (o == 0)
        journal_close(j);
    if (r == 0)
        journal_summary_free(&s);
    return o < 0 && r < 0 && strstr(e1.msg, want) && strstr(e2.msg, want) &&
           size_of(target) == size;
}

static void test_symlink(void)
{
    const char *run1 = at("run1.journal"), *run2 = at("run2.journal");
    char want[600], why[1400];
    finished(run1);
    uint64_t size = size_of(run1);
    if (symlink("run1.journal", run2) < 0)
        abort();
    snprintf(want, sizeof want, "journal %s is a symbolic link, which cohort does not follow "
             "(it could lead to another journal): give the path of the journal file itself",
             run2);
    ok(refused(run2, want, run1, size, why, sizeof why),
       "a link to the user's own finished journal of the same queue is refused (%s)", why);
    const char *dangling = at("dangling.journal");
    if (symlink("new.journal", dangling) < 0)
        abort();
    ok(refused(dangling, "is a symbolic link", at("new.journal"), UINT64_MAX, why, sizeof why),
       "a link to no file is refused, and creates none (%s)", why);
    struct cohort_err err;
    struct journal *j;
    if (mkdir(at("real"), 0755) < 0 || symlink("real", at("dirlink")) < 0)
        abort();
    int rc = journal_open(at("dirlink/q.journal"), "q", 10, NULL, NULL, &j, &err);
    ok(rc == 0 && size_of(at("real/q.journal")) == JHDR_LEN,
       "a link to a directory on the way is followed: %s", rc == 0 ? "opened" : err.msg);
    if (rc == 0)
        journal_close(j);
}

static void test_hard_link(void)
{
    const char *run1 = at("h1.journal"), *run2 = at("h2.journal");
    char want[600], why[1400];
    finished(run1);
    uint64_t size = size_of(run1);
    if (link(run1, run2) < 0)
        abort();
    snprintf(want, sizeof want, "journal %s has 2 hard links (another name for the same file, "
             "which someone else could have made): give a journal with one link; remove the "
             "other or copy the journal to a new file", run2);
    ok(refused(run2, want, run1, size, why, sizeof why),
       "a second hard link to the user's journal is refused (%s)", why);
    ok(refused(run1, "has 2 hard links", run1, size, why, sizeof why),
       "and so is the first name while the second exists");
    unlink(run2);
    struct journal_summary s;
    struct cohort_err err;
    int rc = journal_summary(run1, &s, &err);
    ok(rc == 0 && s.committed == N, "once the other link is gone, it is read again");
    if (rc == 0)
        journal_summary_free(&s);
}

static void test_writable_by_others(void)
{
    const char *p = at("shared.journal");
    char want[600], why[1400];
    finished(p);
    uint64_t size = size_of(p);
    static const mode_t modes[] = {0664, 0646, 0624, 0602};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        if (chmod(p, modes[i]) < 0)
            abort();
        snprintf(want, sizeof want, "journal %s can be written by its group or by others "
                 "(mode %04o), who could claim its items done: chmod go-w it, or give a path "
                 "only you can write", p, (unsigned)modes[i]);
        ok(refused(p, want, p, size, why, sizeof why),
           "a journal of mode %04o is refused (%s)", (unsigned)modes[i], why);
    }
    chmod(p, 0640);
    struct journal *j;
    struct cohort_err err;
    int rc = journal_open(p, "frames", N, NULL, NULL, &j, &err);
    ok(rc == 0, "mode 0640 opens: %s", rc == 0 ? "" : err.msg);
    if (rc == 0)
        journal_close(j);
}

static void test_umask(void)
{
    const char *p = at("umask.journal");
    struct journal *j;
    struct cohort_err err;
    struct stat st;
    mode_t old = umask(0);
    int rc = journal_open(p, "u", 10, NULL, NULL, &j, &err);
    umask(old);
    unsigned mode = stat(p, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
    ok(rc == 0 && mode == 0644, "under umask 0 a new journal is created 0644 (%04o)", mode);
    if (rc == 0)
        journal_close(j);
    rc = journal_open(p, "u", 10, NULL, NULL, &j, &err);
    ok(rc == 0, "and opens again: %s", rc == 0 ? "" : err.msg);
    if (rc == 0)
        journal_close(j);
}

int main(void)
{
    if (jt_setup() < 0)
        return 1;
    test_symlink();
    test_hard_link();
    test_writable_by_others();
    test_umask();
    jt_cleanup();
    return tap_done();
}
