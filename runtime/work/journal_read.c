/* journal_read.c - the journal's format (big-endian integers, checks,
 * the header), the set of committed ids, the pass over the records that
 * tells a torn tail from damage, and the read-only summary (see journal.h
 * and journal_private.h). */
#include "journal_private.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JMAGIC "COHORTJ1"
#define JWIN_MIN (64u << 10) /* bytes read at once while scanning */

void jput32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

void jput64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

uint32_t jget32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint64_t jget64(const uint8_t *p)
{
    return (uint64_t)jget32(p) << 32 | jget32(p + 4);
}

void jcheck(uint64_t off, const uint8_t *p, size_t len, uint8_t out[JCHECK_LEN])
{
    struct sha256_ctx c;
    uint8_t o[8];
    jput64(o, off);
    sha256_init(&c);
    sha256_update(&c, sizeof o, o);
    sha256_update(&c, len, p);
    sha256_digest(&c, JCHECK_LEN, out);
}

void jhdr_encode(uint8_t h[JHDR_LEN], const char *name, uint64_t n_items)
{
    size_t nl = strlen(name);
    memset(h, 0, JHDR_LEN);
    memcpy(h, JMAGIC, 8);
    jput64(h + 8, n_items);
    jput32(h + 16, (uint32_t)nl);
    memcpy(h + 20, name, nl);
    jcheck(0, h, JHDR_LEN - JCHECK_LEN, h + JHDR_LEN - JCHECK_LEN);
}

const char *jhdr_decode(const uint8_t *h, size_t len, char name[JOURNAL_NAME_MAX + 1],
                        uint64_t *n_items)
{
    uint8_t c[JCHECK_LEN];
    if (len < JHDR_LEN)
        return len >= 8 && memcmp(h, JMAGIC, 8) == 0 ? "cut short" : "not a cohort journal";
    if (memcmp(h, JMAGIC, 7) != 0)
        return "not a cohort journal";
    if (h[7] != JMAGIC[7])
        return "a journal of another format version";
    jcheck(0, h, JHDR_LEN - JCHECK_LEN, c);
    if (memcmp(c, h + JHDR_LEN - JCHECK_LEN, JCHECK_LEN) != 0)
        return "a wrong checksum";
    uint32_t nl = jget32(h + 16);
    *n_items = jget64(h + 8);
    if (nl > JOURNAL_NAME_MAX || memchr(h + 20, 0, nl) || *n_items > JOURNAL_MAX_ITEMS)
        return "a bad queue name or size";
    memcpy(name, h + 20, nl);
    name[nl] = 0;
    return NULL;
}

int jhdr_fail(struct cohort_err *err, const char *path, const char *why)
{
    return cohort_fail_code(err, COHORT_E_CONFIG,
                            "journal %s has a bad header at byte 0 (%s): give this queue "
                            "another journal, or if this is its damaged journal, move it "
                            "away to start the queue afresh",
                            path, why);
}

ssize_t jread_at(int fd, void *buf, size_t len, uint64_t off)
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

/* ---- the file ---- */

static int open_fail(const char *path, struct cohort_err *err)
{
    struct stat st;
    if (errno == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return cohort_fail_code(err, COHORT_E_AUTH,
                                "journal %s is a symbolic link, which cohort does not follow (it "
                                "could lead to another journal): give the path of the journal "
                                "file itself",
                                path);
    return cohort_fail_code(err, COHORT_E_CONFIG, "cannot open journal %s: %s", path,
                            strerror(errno));
}

/* Checks the file open as fd: regular, one link, writable by its owner
 * alone, and (own) that owner this user. */
static int vet(int fd, const char *path, int own, struct cohort_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return cohort_fail_code(err, COHORT_E_CONFIG, "cannot open journal %s: %s", path,
                                strerror(errno));
    if (!S_ISREG(st.st_mode))
        return cohort_fail_code(err, COHORT_E_CONFIG, "journal %s is not a regular file", path);
    if (own && st.st_uid != geteuid()) /* planted by another user, it could claim items done */
        return cohort_fail_code(err, COHORT_E_AUTH,
                                "journal %s belongs to uid %u, not to this user (uid %u): give a "
                                "path only you can write",
                                path, (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_nlink > 1)
        return cohort_fail_code(err, COHORT_E_AUTH,
                                "journal %s has %ju hard links (another name for the same file, "
                                "which someone else could have made): give a journal with one "
                                "link; remove the other or copy the journal to a new file",
                                path, (uintmax_t)st.st_nlink);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return cohort_fail_code(err, COHORT_E_AUTH,
                                "journal %s can be written by its group or by others (mode "
                                "%04o), who could claim its items done: chmod go-w it, or give "
                                "a path only you can write",
                                path, (unsigned)(st.st_mode & 07777));
    return 0;
}

int jfile_open(const char *path, int writer, int *created, struct cohort_err *err)
{
    int flags = O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW; /* O_NONBLOCK: a FIFO does not hang */
    int fd = writer ? open(path, flags | O_RDWR | O_CREAT | O_EXCL, 0644) : -1;
    *created = fd >= 0;
    if (fd < 0 && (!writer || errno == EEXIST))
        fd = open(path, flags | (writer ? O_RDWR : O_RDONLY));
    if (fd < 0)
        return open_fail(path, err);
    if (vet(fd, path, writer, err) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ---- the set of committed ids ---- */

/* The first run that ends at or after id (s->n: none). */
static size_t runs_from(const struct jspans *s, uint64_t id)
{
    size_t a = 0, b = s->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (s->r[m].hi < id)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

int jspans_add(struct jspans *s, uint64_t lo, uint64_t hi, uint64_t *dup)
{
    size_t i = runs_from(s, lo);
    int left = i < s->n && s->r[i].hi == lo; /* run i ends where the new one begins */
    size_t j = left ? i + 1 : i;             /* the first run that may overlap or follow */
    if (j < s->n && s->r[j].lo < hi) {
        *dup = s->r[j].lo > lo ? s->r[j].lo : lo;
        return 1;
    }
    int right = j < s->n && s->r[j].lo == hi;
    if (left && right) {
        s->r[i].hi = s->r[j].hi;
        memmove(&s->r[j], &s->r[j + 1], (s->n - j - 1) * sizeof *s->r);
        s->n--;
    } else if (left) {
        s->r[i].hi = hi;
    } else if (right) {
        s->r[j].lo = lo;
    } else {
        if (s->n == s->cap) {
            size_t ncap = s->cap ? s->cap * 2 : 16;
            struct jrun *nr = ncap <= SIZE_MAX / sizeof *nr ? realloc(s->r, ncap * sizeof *nr)
                                                            : NULL;
            if (!nr)
                return -1;
            s->r = nr;
            s->cap = ncap;
        }
        memmove(&s->r[j + 1], &s->r[j], (s->n - j) * sizeof *s->r);
        s->r[j] = (struct jrun){lo, hi};
        s->n++;
    }
    s->count += hi - lo;
    return 0;
}

int jspans_has(const struct jspans *s, uint64_t id)
{
    size_t i = runs_from(s, id);
    return i < s->n && s->r[i].lo <= id && id < s->r[i].hi;
}

void jspans_free(struct jspans *s)
{
    free(s->r);
    *s = (struct jspans){0};
}

/* ---- the pass over the records ---- */

/* A window of the file, read a large piece at a time. */
struct jwin {
    int fd;
    uint64_t size;
    uint8_t *buf;
    size_t cap, len;
    uint64_t at; /* the file offset of buf[0] */
};

/* Points *p at the len bytes at off: 1; 0 when the file ends before
 * them; -1 with errno (a read error, out of memory). */
static int win_get(struct jwin *w, uint64_t off, size_t len, const uint8_t **p)
{
    if (off > w->size || len > w->size - off)
        return 0;
    if (w->buf && off >= w->at && off + len <= w->at + w->len) {
        *p = w->buf + (off - w->at);
        return 1;
    }
    size_t want = len > JWIN_MIN ? len : JWIN_MIN;
    if (want > w->cap) {
        uint8_t *nb = realloc(w->buf, want);
        if (!nb)
            return errno = ENOMEM, -1;
        w->buf = nb;
        w->cap = want;
    }
    want = w->size - off < w->cap ? (size_t)(w->size - off) : w->cap;
    ssize_t got = jread_at(w->fd, w->buf, want, off);
    if (got < 0)
        return -1;
    w->at = off;
    w->len = (size_t)got;
    *p = w->buf;
    return w->len >= len; /* shorter: the file shrank under a reader */
}

struct jrec {
    uint8_t type;
    uint32_t len;
    const uint8_t *body; /* valid until the next win_get */
    uint64_t next;       /* the offset after it */
};

static int len_ok(uint8_t type, uint32_t len)
{
    if (type == JOURNAL_COMMITTED)
        return len > 0 && len <= JOURNAL_RECORD_MAX && len % JSPAN_LEN == 0;
    return len == JASIDE_LEN;
}

/* The record at off: 1 valid, 0 bad (*why says how), -1 with errno. */
static int rec_at(struct jwin *w, uint64_t off, struct jrec *r, const char **why)
{
    const uint8_t *p;
    uint8_t c[JCHECK_LEN];
    *why = "cut short";
    int rc = win_get(w, off, JREC_HEAD, &p);
    if (rc <= 0)
        return rc;
    r->type = p[0];
    r->len = jget32(p + 1);
    if (r->type != JOURNAL_COMMITTED && r->type != JOURNAL_SET_ASIDE) {
        *why = "an unknown record type";
        return 0;
    }
    if (!len_ok(r->type, r->len)) {
        *why = "a bad record length";
        return 0;
    }
    if ((rc = win_get(w, off, JREC_HEAD + r->len + JCHECK_LEN, &p)) <= 0)
        return rc;
    jcheck(off, p, JREC_HEAD + r->len, c);
    if (memcmp(c, p + JREC_HEAD + r->len, JCHECK_LEN) != 0) {
        *why = "a wrong checksum";
        return 0;
    }
    r->body = p + JREC_HEAD;
    r->next = off + JREC_HEAD + r->len + JCHECK_LEN;
    return 1;
}

static int damaged(const struct jscan *s, uint64_t off, const char *why,
                   struct cohort_err *err)
{
    return cohort_fail_code(err, COHORT_E_CONFIG,
                            "journal %s is damaged at byte %" PRIu64 " (%s): it cannot be "
                            "resumed; restore it from a copy, or move it away to start the "
                            "queue afresh",
                            s->path, off, why);
}

static int read_fail(const struct jscan *s, struct cohort_err *err)
{
    return cohort_fail_code(err, errno == ENOMEM ? COHORT_E_RESOURCE : COHORT_E_CONFIG,
                            "cannot read journal %s: %s", s->path, strerror(errno));
}

/* The bad record at off is a torn tail when no valid record begins after
 * it (a crash cut the last write); else the journal is damaged there. */
static int torn_or_damaged(struct jscan *s, struct jwin *w, uint64_t off, const char *why,
                           struct cohort_err *err)
{
    for (uint64_t o = off + 1; o + JREC_HEAD + JCHECK_LEN <= s->size; o++) {
        struct jrec r;
        const char *ignored;
        int rc = rec_at(w, o, &r, &ignored);
        if (rc < 0)
            return read_fail(s, err);
        if (rc > 0) {
            char what[160];
            snprintf(what, sizeof what,
                     "a record with %s, and a valid record at byte %" PRIu64 " after it", why, o);
            return damaged(s, off, what, err);
        }
    }
    s->end = off;
    return 0;
}

/* Checks a valid record's facts against the queue and replays them. */
static int apply(struct jscan *s, uint64_t off, const struct jrec *r, struct cohort_err *err)
{
    char what[160];
    struct journal_event ev = {.kind = r->type};
    for (uint32_t at = 0; at < r->len; at += r->type == JOURNAL_COMMITTED ? JSPAN_LEN : r->len) {
        uint64_t dup;
        ev.lo = jget64(r->body + at);
        ev.hi = r->type == JOURNAL_COMMITTED ? jget64(r->body + at + 8) : ev.lo + 1;
        ev.attempts = r->type == JOURNAL_SET_ASIDE ? jget32(r->body + 8) : 0;
        if (ev.lo >= s->n_items || ev.hi > s->n_items || ev.lo >= ev.hi) {
            snprintf(what, sizeof what,
                     "ids [%" PRIu64 ", %" PRIu64 ") outside the queue's %" PRIu64 " items",
                     ev.lo, ev.hi, s->n_items);
            return damaged(s, off, what, err);
        }
        int rc = r->type == JOURNAL_COMMITTED ? jspans_add(s->done, ev.lo, ev.hi, &dup) : 0;
        if (rc < 0)
            return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory reading journal %s",
                                    s->path);
        if (rc > 0) {
            snprintf(what, sizeof what, "id %" PRIu64 " committed a second time", dup);
            return damaged(s, off, what, err);
        }
        if (s->fn && s->fn(s->ctx, &ev, err) < 0)
            return -1;
    }
    return 0;
}

int jscan_records(struct jscan *s, struct cohort_err *err)
{
    struct jwin w = {.fd = s->fd, .size = s->size};
    uint64_t off = JHDR_LEN;
    int rc = 0;
    s->end = s->size;
    while (rc == 0 && off < s->size) {
        struct jrec r;
        const char *why;
        int got = rec_at(&w, off, &r, &why);
        if (got < 0) {
            rc = read_fail(s, err);
        } else if (got == 0) {
            rc = torn_or_damaged(s, &w, off, why, err);
            break;
        } else {
            rc = apply(s, off, &r, err);
            off = r.next;
        }
    }
    free(w.buf);
    return rc;
}

/* ---- the summary ---- */

struct aside_seen {
    uint64_t id, seq; /* seq: the record's place */
    uint32_t attempts;
};

struct summary_ctx {
    struct aside_seen *a;
    size_t n, cap;
};

static int collect(void *ctx, const struct journal_event *ev, struct cohort_err *err)
{
    struct summary_ctx *c = ctx;
    if (ev->kind != JOURNAL_SET_ASIDE)
        return 0;
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 16;
        struct aside_seen *na = ncap <= SIZE_MAX / sizeof *na ? realloc(c->a, ncap * sizeof *na)
                                                              : NULL;
        if (!na)
            return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
        c->a = na;
        c->cap = ncap;
    }
    c->a[c->n] = (struct aside_seen){ev->lo, c->n, ev->attempts};
    c->n++;
    return 0;
}

static int by_id_then_seq(const void *a, const void *b)
{
    const struct aside_seen *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The ids set aside and never committed, each once with its last attempts. */
static int settle_aside(struct journal_summary *s, struct summary_ctx *c,
                        const struct jspans *done, struct cohort_err *err)
{
    if (c->n == 0)
        return 0;
    qsort(c->a, c->n, sizeof *c->a, by_id_then_seq);
    if (!(s->aside = malloc(c->n * sizeof *s->aside)))
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
    for (size_t i = 0; i < c->n; i++)
        if ((i + 1 == c->n || c->a[i + 1].id != c->a[i].id) && !jspans_has(done, c->a[i].id))
            s->aside[s->n_aside++] = (struct journal_aside){c->a[i].id, c->a[i].attempts};
    return 0;
}

/* Reads the header and the records of the open file fd. */
static int summarize(int fd, const char *path, struct journal_summary *s, struct cohort_err *err)
{
    struct stat st;
    uint8_t h[JHDR_LEN];
    ssize_t got;
    if (fstat(fd, &st) < 0 || (got = jread_at(fd, h, sizeof h, 0)) < 0)
        return cohort_fail_code(err, COHORT_E_CONFIG, "cannot read journal %s: %s", path,
                                strerror(errno));
    const char *why = jhdr_decode(h, (size_t)got, s->name, &s->n_items);
    if (why)
        return jhdr_fail(err, path, why);
    struct jspans done = {0};
    struct summary_ctx c = {0};
    struct jscan sc = {path, fd, (uint64_t)st.st_size, s->n_items, &done, collect, &c, 0};
    int rc = jscan_records(&sc, err);
    if (rc == 0)
        rc = settle_aside(s, &c, &done, err);
    s->committed = done.count;
    s->remaining = s->n_items - done.count - s->n_aside;
    s->torn_bytes = (uint64_t)st.st_size - sc.end;
    s->size = (uint64_t)st.st_size;
    free(c.a);
    jspans_free(&done);
    return rc;
}

int journal_summary(const char *path, struct journal_summary *s, struct cohort_err *err)
{
    memset(s, 0, sizeof *s);
    int created;
    int fd = jfile_open(path, 0, &created, err);
    if (fd < 0)
        return -1;
    int rc = summarize(fd, path, s, err);
    close(fd);
    if (rc < 0)
        journal_summary_free(s);
    return rc;
}

void journal_summary_free(struct journal_summary *s)
{
    free(s->aside);
    s->aside = NULL;
    s->n_aside = 0;
}
