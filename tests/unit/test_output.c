/* test_output.c - the pieces of results published exactly once: a part's
 * head (parts.h) written and read back, and refused when damaged; the
 * journal's publication record (written, replayed with its part, token and
 * ids, counted as committed, read by journal_summary_each); the
 * scheduler's all-or-nothing commit (sched_commit_all); the offers'
 * folder made and checked (parts_offers_open). */
#include "tap.h"

#include <string.h>

#include "journal_test.h"
#include "parts.h"
#include "work_sched.h"

static void test_head(void)
{
    const uint64_t ids[] = {3, 4, 5, 9, 20, 21};
    uint8_t h[256];
    struct parts_head got;
    struct cohort_err err;
    size_t len = parts_head_len(3);
    const uint8_t tok[PARTS_TOKEN_LEN] = {9, 8, 7};
    parts_head_put(h, 7, tok, ids, 6, 3, 1000);
    int rc = parts_head_get(h, len, 22, &got, &err);
    ok(rc == 0 && got.kind == 7 && got.n_spans == 3 && got.n_ids == 6 && got.data_len == 1000 &&
           got.head_len == len && len == 40 + 48 + 8 && !memcmp(got.token, tok, sizeof tok),
       "a part's head reads back: kind, 3 runs, 6 ids, data length (%d)", rc);
    ok(parts_head_get(h, PARTS_FIXED, 22, &got, &err) == 1 && got.head_len == len,
       "a head read in part asks for its whole length");
    ok(parts_head_get(h, len, 21, &got, &err) < 0, "ids beyond the queue are refused (%s)",
       err.msg);
    int refused = 0;
    for (size_t i = 0; i < len; i++) {
        h[i] ^= 0x20;
        refused += parts_head_get(h, len, 22, &got, &err) != 0;
        h[i] ^= 0x20;
    }
    ok(refused == (int)len, "a change of any byte of the head is refused (%d of %zu)", refused,
       len);
    char name[PARTS_NAME_MAX];
    uint64_t part = 0;
    uint8_t token[PARTS_TOKEN_LEN] = {0xab, 0x01};
    parts_name(42, name);
    ok(strcmp(name, "part-000000000042") == 0 && parts_number(name, &part) == 0 &&
           part == 42, "a part's name and number (%s)", name);
    ok(parts_number("part-00000000004x", &part) < 0 &&
           parts_number("part-0000000000042", &part) < 0,
       "other names are not parts");
    parts_tmp_name(token, name);
    uint8_t back[PARTS_TOKEN_LEN];
    ok(strcmp(name, ".tmp-ab010000000000000000000000000000") == 0 &&
           parts_tmp_token(name, back) == 0 && !memcmp(back, token, sizeof back) &&
           parts_tmp_token(".tmp-ab01", back) < 0 &&
           parts_tmp_token(".tmp-AB010000000000000000000000000000", back) < 0,
       "an offer's name and its token back (%s); other names are not offers", name);
}

struct pubs {
    int n;
    uint64_t part, n_ids, lo, hi, committed;
    uint8_t token[JOURNAL_TOKEN_LEN];
};

static int pub(void *ctx, const struct journal_event *ev, struct cohort_err *err)
{
    struct pubs *p = ctx;
    (void)err;
    if (ev->kind == JOURNAL_PUBLISHED) {
        p->n++;
        p->part = ev->part, p->n_ids = ev->n_ids, p->lo = ev->lo, p->hi = ev->hi;
        memcpy(p->token, ev->token, JOURNAL_TOKEN_LEN);
    } else if (ev->kind == JOURNAL_COMMITTED) {
        p->committed += ev->hi - ev->lo;
    }
    return 0;
}

static void test_journal(void)
{
    const char *p = at("pub");
    struct journal *j;
    struct cohort_err err;
    const uint8_t token[JOURNAL_TOKEN_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    int rc = journal_open(p, "q", 100, NULL, NULL, &j, &err);
    rc |= journal_add_committed(j, (const uint64_t[]){0, 1}, 2, &err);
    rc |= journal_add_published(j, 5, 1234, 1, token, (const uint64_t[]){10, 11, 12, 40}, 4,
                                &err);
    rc |= journal_sync(j, &err);
    journal_close(j);
    ok(rc == 0, "a publication is written with a commit (%s)", rc ? err.msg : "ok");
    struct pubs got = {0};
    rc = journal_open(p, "q", 100, pub, &got, &j, &err);
    ok(rc == 0 && got.n == 1 && got.part == 5 && got.n_ids == 4 && got.lo == 10 && got.hi == 41 &&
           !memcmp(got.token, token, sizeof token) && got.committed == 6,
       "it replays with its part, token and ids, which count as committed (%d, %llu)", got.n,
       (unsigned long long)got.committed);
    ok(rc == 0 && journal_add_committed(j, (const uint64_t[]){11}, 1, &err) < 0 &&
           strstr(err.msg, "id 11 committed a second time"),
       "an id it published cannot be committed again (%s)", err.msg);
    journal_close(j);
    struct journal_summary s;
    struct pubs seen = {0};
    rc = journal_summary_each(p, &s, pub, &seen, &err);
    ok(rc == 0 && seen.n == 1 && seen.part == 5 && s.committed == 6 && s.remaining == 94,
       "journal_summary_each sees the publication; the summary counts its ids");
    if (rc == 0)
        journal_summary_free(&s);
    rc = journal_open(at("pub2"), "q", 100, NULL, NULL, &j, &err);
    ok(rc == 0 && journal_add_published(j, 0, 0, 0, token, (const uint64_t[]){3, 2}, 2, &err) < 0,
       "a publication's ids must be ascending (%s)", err.msg);
    journal_close(j);
}

static void test_commit_all(void)
{
    struct sched *s;
    struct cohort_err err;
    struct sched_grant g;
    struct sched_verdict v;
    struct sched_status st;
    uint64_t ids[8];
    struct sched_opts o = {.lease_timeout_ms = 1000, .first_lease = 4};
    unsigned char codes[8];
    int rc = sched_create(100, 2, &o, &s, &err);
    rc |= sched_lease(s, 0, 0, ids, 4, &g, &err);
    ok(rc == 0 && g.n == 4 && ids[0] == 0, "worker 0 leases ids 0..3");
    rc = sched_commit_all(s, 0, 2000, ids, 2, &v, codes, &err); /* past the deadline */
    sched_status(s, &st);
    ok(rc == SCHED_STALE && v.stale == 2 && st.committed == 0,
       "after its lease ran out, nothing is committed (stale %llu)",
       (unsigned long long)v.stale);
    rc = sched_lease(s, 1, 2000, ids, 4, &g, &err);
    rc |= g.n != 4 || ids[3] + 1 != 4; /* the ids taken back: 0..3 */
    uint64_t mine[4] = {ids[0], ids[1], ids[2], ids[3]};
    rc |= sched_lease(s, 0, 2000, ids, 4, &g, &err);
    uint64_t mixed[3] = {mine[3], ids[0], ids[1]}; /* one of worker 1's, two of its own */
    rc |= sched_commit_all(s, 0, 2001, mixed, 3, &v, codes, &err) != SCHED_STALE;
    sched_status(s, &st);
    ok(rc == 0 && st.committed == 0 && v.stale == 1 && v.first_stale == mine[3] &&
           codes[0] == SCHED_V_STALE,
       "an id now another worker's: nothing committed, that id named stale");
    rc = sched_commit_all(s, 0, 2001, (const uint64_t[]){ids[0], 99}, 2, &v, codes, &err);
    sched_status(s, &st);
    ok(rc == SCHED_EINVAL && v.bad == 1 && st.committed == 0,
       "an id never its own: nothing committed, refused (%s)", err.msg);
    rc = sched_commit_all(s, 0, 2002, mixed + 1, 2, &v, codes, &err);
    sched_status(s, &st);
    ok(rc == SCHED_OK && st.committed == 2 && v.taken == 2,
       "its own ids are still its own and commit all together");
    ok(sched_commit_all(s, 1, 2003, (const uint64_t[]){mine[1], mine[0]}, 2, &v, codes, &err) ==
           SCHED_EINVAL,
       "ids not ascending are refused (%s)", err.msg);
    ok(sched_check(s, &err) == 0, "the scheduler's invariants hold (%s)", err.msg);
    sched_destroy(s);
}

/* The offers' folder (parts_offers_open): made 0700 when missing, taken
 * as it is when right, refused when a symbolic link or open to others. */
static void test_offers(void)
{
    struct cohort_err err;
    struct stat st;
    int dir = open(jt_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = parts_offers_open(dir, jt_dir, &err);
    ok(fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700 &&
           st.st_uid == geteuid(),
       "a missing offers' folder is made, 0700, this user's (%s)", fd < 0 ? err.msg : "ok");
    if (fd >= 0)
        close(fd);
    fd = parts_offers_open(dir, jt_dir, &err);
    ok(fd >= 0, "an existing one is opened (%s)", fd < 0 ? err.msg : "ok");
    if (fd >= 0)
        close(fd);
    chmod(at(PARTS_OFFERS), 0755);
    fd = parts_offers_open(dir, jt_dir, &err);
    ok(fd < 0 && err.code == COHORT_E_CONFIG && strstr(err.msg, "mode 0755: chmod 700"),
       "one open to others is refused, saying what to do (%s)", err.msg);
    rmdir(at(PARTS_OFFERS));
    mkdir(at("elsewhere"), 0700);
    if (symlink(at("elsewhere"), at(PARTS_OFFERS)) < 0)
        ok(0, "cannot make a symbolic link");
    fd = parts_offers_open(dir, jt_dir, &err);
    ok(fd < 0 && strstr(err.msg, "not a symbolic link"), "a symbolic link is refused (%s)",
       err.msg);
    unlink(at(PARTS_OFFERS));
    close(dir);
}

int main(void)
{
    if (jt_setup() < 0) {
        printf("Bail out! no scratch directory\n");
        return 1;
    }
    test_head();
    test_journal();
    test_commit_all();
    test_offers();
    jt_cleanup();
    return tap_done();
}
