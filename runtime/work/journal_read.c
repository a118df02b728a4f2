/* journal_read.c - the pass over a journal's frames (see journal.h and
 * journal_private.h): each checked and its records replayed, a torn tail
 * told from damage, in time and reads linear in the file whatever it
 * holds; and the read-only summary cohort-work prints. */
#include "journal_private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JWIN_MIN (1u << 20) /* bytes read at once */

/* A window of the file, read a large piece at a time. */
struct jwin {
    int fd;
    uint64_t size;
    uint8_t *buf;
    size_t cap, len;
    uint64_t at;    /* the file offset of buf[0] */
    uint64_t *read; /* bytes read, counted */
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
    ssize_t got = base_pread_all(w->fd, w->buf, want, off);
    if (got < 0)
        return -1;
    *w->read += (uint64_t)got;
    w->at = off;
    w->len = (size_t)got;
    *p = w->buf;
    return w->len >= len; /* shorter: the file shrank under a reader */
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

/* The frame at off, which should be number s->frames: 1 valid (*f, *recs
 * its records); 0 bad (*why); 2 a frame of this journal of another number
 * (*f); -1 with errno. */
static int frame_at(struct jscan *s, struct jwin *w, uint64_t off, struct jframe *f,
                    const uint8_t **recs, const char **why)
{
    const uint8_t *p;
    uint8_t c[JCHECK_LEN];
    *why = "a frame cut short";
    int rc = win_get(w, off, JFRAME_HEAD, &p);
    if (rc <= 0)
        return rc;
    if (!jframe_head(p, s->key, f)) {
        *why = "a bad frame head";
        return 0;
    }
    if (f->seq != s->frames)
        return 2;
    if ((rc = win_get(w, off, JFRAME_HEAD + f->len, &p)) <= 0)
        return rc;
    jcheck(p + JFRAME_HEAD, f->len, c);
    if (memcmp(c, f->check, JCHECK_LEN) != 0) {
        *why = "a frame whose records do not match its check";
        return 0;
    }
    *recs = p + JFRAME_HEAD;
    return 1;
}

/* A head of a frame of this journal numbered s->frames or later that
 * begins after off: 1 with its offset and number, 0 (none), -1 with errno.
 * One pass over the rest of the file, a check wherever the mark appears. */
static int later_frame(struct jscan *s, struct jwin *w, uint64_t off, uint64_t *at,
                       uint64_t *seq)
{
    for (uint64_t o = off + 1; o + JFRAME_HEAD <= s->size;) {
        size_t n = s->size - o < JWIN_MIN ? (size_t)(s->size - o) : JWIN_MIN, i = 0;
        size_t last = n - JFRAME_HEAD; /* the last place a head fits */
        const uint8_t *p, *q;
        int rc = win_get(w, o, n, &p);
        if (rc <= 0)
            return rc;
        while (i <= last && (q = memmem(p + i, n - i, jframe_mark, sizeof jframe_mark)) &&
               (size_t)(q - p) <= last) {
            struct jframe f;
            if (jframe_head(q, s->key, &f) && f.seq >= s->frames) {
                *at = o + (uint64_t)(q - p);
                *seq = f.seq;
                return 1;
            }
            i = (size_t)(q - p) + 1;
        }
        o += last + 1;
    }
    return 0;
}

/* The bad frame at off is a torn tail when no frame of this journal
 * numbered as it or later begins after it (a crash cut the last write:
 * what follows is the rest of that write, zeros or garbage); else the
 * journal is damaged there, and what follows must not be dropped. */
static int torn_or_damaged(struct jscan *s, struct jwin *w, uint64_t off, const char *why,
                           struct cohort_err *err)
{
    uint64_t at, seq;
    char what[200];
    int rc = later_frame(s, w, off, &at, &seq);
    if (rc < 0)
        return read_fail(s, err);
    if (rc == 0)
        return 0;
    snprintf(what, sizeof what, "%s, and frame %" PRIu64 " at byte %" PRIu64 " after it", why,
             seq, at);
    return damaged(s, off, what, err);
}

/* What is done with each record of a valid frame, at byte off: 0 go on,
 * 1 stop, -1 with err. */
typedef int (*record_fn)(struct jscan *s, void *ctx, uint64_t off, uint8_t type,
                         const uint8_t *body, uint32_t len, struct cohort_err *err);

static int len_ok(uint8_t type, uint32_t len)
{
    if (type == JOURNAL_COMMITTED)
        return len > 0 && len % JSPAN_LEN == 0;
    if (type == JOURNAL_PROGRESS)
        return len == JPROG_LEN;
    if (type == JOURNAL_PUBLISHED)
        return len > JPUB_LEN && (len - JPUB_LEN) % JSPAN_LEN == 0 &&
               (len - JPUB_LEN) / JSPAN_LEN <= JOURNAL_PUB_SPANS_MAX;
    return type == JOURNAL_SET_ASIDE && len == JASIDE_LEN;
}

/* The ids a record commits: its spans (none for SET_ASIDE). */
static const uint8_t *committed_spans(uint8_t type, const uint8_t *body, uint32_t *len)
{
    if (type == JOURNAL_PUBLISHED) {
        *len -= JPUB_LEN;
        return body + JPUB_LEN;
    }
    if (type != JOURNAL_COMMITTED)
        *len = 0;
    return body;
}

/* The records of the valid frame at off (len bytes at recs), each to fn.
 * A frame whose check holds but whose records do not parse is damage. */
static int each_record(struct jscan *s, uint64_t off, const uint8_t *recs, uint32_t len,
                       record_fn fn, void *ctx, struct cohort_err *err)
{
    off += JFRAME_HEAD;
    for (uint32_t at = 0, blen; at < len; at += JREC_HEAD + blen) {
        if (len - at < JREC_HEAD)
            return damaged(s, off + at, "a record cut short inside its frame", err);
        blen = jget32(recs + at + 1);
        if (!len_ok(recs[at], blen) || blen > len - at - JREC_HEAD)
            return damaged(s, off + at, "a record of a bad type or length", err);
        int rc = fn(s, ctx, off + at, recs[at], recs + at + JREC_HEAD, blen, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* An id looked for: the records that commit it. */
struct finding {
    uint64_t id;
    int seen;
    uint64_t at; /* the record that commits it the second time */
};

static int find_commit(struct jscan *s, void *ctx, uint64_t off, uint8_t type,
                       const uint8_t *body, uint32_t len, struct cohort_err *err)
{
    struct finding *f = ctx;
    (void)s, (void)err;
    body = committed_spans(type, body, &len);
    for (uint32_t at = 0; at < len; at += JSPAN_LEN)
        if (jget64(body + at) <= f->id && f->id < jget64(body + at + 8) && ++f->seen == 2) {
            f->at = off;
            return 1;
        }
    return 0;
}

/* id is committed twice: damage, named at the record that commits it the
 * second time, which a second pass over the frames looks for. */
static int twice(struct jscan *s, struct jwin *w, uint64_t id, struct cohort_err *err)
{
    struct finding f = {id, 0, 0};
    char what[80];
    uint64_t frames = s->frames;
    s->frames = 0;
    for (uint64_t off = JHDR_LEN; off < s->size; s->frames++) {
        struct jframe fr;
        const uint8_t *recs;
        const char *why;
        int rc = frame_at(s, w, off, &fr, &recs, &why);
        if (rc < 0)
            return read_fail(s, err);
        if (rc != 1 || each_record(s, off, recs, fr.len, find_commit, &f, err) != 0)
            break; /* found (the first pass went further) */
        off += JFRAME_HEAD + fr.len;
    }
    s->frames = frames;
    snprintf(what, sizeof what, "id %" PRIu64 " committed a second time", id);
    return damaged(s, f.at, what, err);
}

/* The first pass's records. */
struct gathering {
    struct jwin *w;
    struct jgather g;
};

static int gathered(struct jscan *s, struct gathering *c, int rc, uint64_t dup,
                    struct cohort_err *err)
{
    if (rc < 0)
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory reading journal %s",
                                s->path);
    return rc > 0 ? twice(s, c->w, dup, err) : 0;
}

/* A publication's facts, replayed: its spans must be ascending. */
static int published(struct jscan *s, uint64_t off, const uint8_t *body, uint32_t len,
                     struct cohort_err *err)
{
    struct journal_event ev = {.kind = JOURNAL_PUBLISHED, .part = jget64(body),
                               .data_len = jget64(body + 8), .data_kind = jget32(body + 16),
                               .spans = body + JPUB_LEN,
                               .n_spans = (len - JPUB_LEN) / JSPAN_LEN};
    memcpy(ev.token, body + 20, JOURNAL_TOKEN_LEN);
    for (uint32_t i = 0; i < ev.n_spans; i++) {
        uint64_t lo = jget64(ev.spans + i * JSPAN_LEN), hi = jget64(ev.spans + i * JSPAN_LEN + 8);
        if (i && lo <= jget64(ev.spans + i * JSPAN_LEN - 8))
            return damaged(s, off, "a publication whose ids are out of order", err);
        ev.n_ids += hi - lo;
    }
    ev.lo = jget64(ev.spans);
    ev.hi = jget64(ev.spans + (ev.n_spans - 1) * JSPAN_LEN + 8);
    return s->fn && s->fn(s->ctx, &ev, err) < 0 ? -1 : 0;
}

/* Checks a record's facts against the queue: committed spans gathered (a
 * publication's too), a set-aside id or a publication replayed. */
static int apply(struct jscan *s, void *ctx, uint64_t off, uint8_t type, const uint8_t *body,
                 uint32_t len, struct cohort_err *err)
{
    struct gathering *c = ctx;
    char what[160];
    if (type == JOURNAL_PROGRESS) {
        struct journal_event ev = {.kind = type,
                                   .progress = {jget64(body), jget64(body + 8),
                                                jget64(body + 16), jget64(body + 24),
                                                jget32(body + 32)}};
        return s->fn && s->fn(s->ctx, &ev, err) < 0 ? -1 : 0;
    }
    if (type == JOURNAL_SET_ASIDE) {
        struct journal_event ev = {.kind = type, .lo = jget64(body), .hi = jget64(body) + 1,
                                   .attempts = jget32(body + 8)};
        if (ev.lo >= s->n_items) {
            snprintf(what, sizeof what,
                     "ids [%" PRIu64 ", %" PRIu64 ") outside the queue's %" PRIu64 " items",
                     ev.lo, ev.hi, s->n_items);
            return damaged(s, off, what, err);
        }
        return s->fn && s->fn(s->ctx, &ev, err) < 0 ? -1 : 0;
    }
    uint32_t slen = len;
    const uint8_t *spans = committed_spans(type, body, &slen);
    for (uint32_t at = 0; at < slen; at += JSPAN_LEN) {
        uint64_t lo = jget64(spans + at), hi = jget64(spans + at + 8), dup;
        if (lo >= s->n_items || hi > s->n_items || lo >= hi) {
            snprintf(what, sizeof what,
                     "ids [%" PRIu64 ", %" PRIu64 ") outside the queue's %" PRIu64 " items",
                     lo, hi, s->n_items);
            return damaged(s, off, what, err);
        }
        int rc = jgather_add(&c->g, lo, hi, &dup);
        if (rc != 0)
            return gathered(s, c, rc, dup, err);
    }
    return type == JOURNAL_PUBLISHED ? published(s, off, body, len, err) : 0;
}

/* After the pass: the last spans merged (an id committed twice is
 * damage), then every run of committed ids replayed, ascending. */
static int settle(struct jscan *s, struct gathering *c, struct cohort_err *err)
{
    uint64_t dup;
    int rc = jgather_settle(&c->g, &dup);
    if (rc != 0)
        return gathered(s, c, rc, dup, err);
    for (size_t i = 0; s->fn && i < s->done->runs.n; i++) {
        struct journal_event ev = {.kind = JOURNAL_COMMITTED, .lo = s->done->runs.r[i].lo,
                                   .hi = s->done->runs.r[i].hi};
        if (s->fn(s->ctx, &ev, err) < 0)
            return -1;
    }
    return 0;
}

int jscan_records(struct jscan *s, struct cohort_err *err)
{
    struct jwin w = {.fd = s->fd, .size = s->size, .read = &s->bytes_read};
    struct gathering c = {&w, {.done = s->done}};
    uint64_t off = JHDR_LEN;
    int rc = 0;
    s->frames = 0;
    while (rc == 0 && off < s->size) {
        struct jframe f;
        const uint8_t *recs;
        const char *why;
        char what[120];
        int got = frame_at(s, &w, off, &f, &recs, &why);
        if (got < 0) {
            rc = read_fail(s, err);
        } else if (got == 2) {
            snprintf(what, sizeof what, "frame %" PRIu64 " where frame %" PRIu64 " belongs: "
                     "a write is missing or repeated", f.seq, s->frames);
            rc = damaged(s, off, what, err);
        } else if (got == 0) {
            rc = torn_or_damaged(s, &w, off, why, err);
            break;
        } else {
            rc = each_record(s, off, recs, f.len, apply, &c, err);
            off += JFRAME_HEAD + f.len;
            s->frames++;
        }
    }
    s->end = off;
    if (rc == 0)
        rc = settle(s, &c, err);
    jgather_free(&c.g);
    free(w.buf);
    return rc;
}

/* ---- the summary ---- */

/* The ids set aside, in the journal's order. */
struct asides {
    struct jpair *a;
    size_t n, cap;
    journal_replay_fn fn; /* the caller's, for publications */
    void *ctx;
    struct journal_summary *s; /* its last progress and the one a minute before */
    struct journal_progress ring[64]; /* the last ones, for that */
    size_t n_ring;
};

/* A progress record: the last, and the earliest within a minute of it
 * (records come every few seconds: the ring holds more than a minute). */
static void progressed(struct asides *c, const struct journal_progress *p)
{
    c->ring[c->n_ring++ % 64] = *p;
    c->s->last = *p;
    size_t first = c->n_ring > 64 ? c->n_ring - 64 : 0;
    c->s->before = *p;
    for (size_t i = first; i < c->n_ring; i++) {
        const struct journal_progress *q = &c->ring[i % 64];
        if (q->time_ms + 60000 >= p->time_ms && q->time_ms <= p->time_ms) {
            c->s->before = *q;
            break;
        }
    }
}

static int collect(void *ctx, const struct journal_event *ev, struct cohort_err *err)
{
    struct asides *c = ctx;
    if (ev->kind == JOURNAL_PUBLISHED)
        return c->fn ? c->fn(c->ctx, ev, err) : 0;
    if (ev->kind == JOURNAL_PROGRESS) {
        progressed(c, &ev->progress);
        return 0;
    }
    if (ev->kind != JOURNAL_SET_ASIDE)
        return 0;
    if (base_grow((void **)&c->a, &c->cap, c->n + 1, sizeof *c->a) < 0)
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
    c->a[c->n++] = (struct jpair){ev->lo, ev->attempts};
    return 0;
}

/* The ids set aside and never committed, each once with its last
 * attempts: sorted (stably: the last record of an id comes last), then
 * one pass along the committed runs. */
static int settle_aside(struct journal_summary *s, struct asides *c, const struct jspans *done,
                        struct cohort_err *err)
{
    if (c->n == 0)
        return 0;
    struct jpair *tmp = malloc(c->n * sizeof *tmp);
    if (!tmp || !(s->aside = malloc(c->n * sizeof *s->aside))) {
        free(tmp);
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
    }
    uint64_t moved = 0;
    const struct jpair *a = jsort(c->a, tmp, c->n, &moved);
    size_t r = 0;
    for (size_t i = 0; i < c->n; i++) {
        uint64_t id = a[i].key;
        if (i + 1 < c->n && a[i + 1].key == id)
            continue;
        while (r < done->runs.n && done->runs.r[r].hi <= id)
            r++;
        if (r == done->runs.n || done->runs.r[r].lo > id)
            s->aside[s->n_aside++] = (struct journal_aside){id, (uint32_t)a[i].val};
    }
    free(tmp);
    return 0;
}

/* Reads the header and the frames of the open file fd. */
static int summarize(int fd, const char *path, struct journal_summary *s, struct asides *c,
                     struct cohort_err *err)
{
    struct stat st;
    uint8_t h[JHDR_LEN];
    struct jhdr hdr;
    ssize_t got;
    if (fstat(fd, &st) < 0 || (got = base_pread_all(fd, h, sizeof h, 0)) < 0)
        return cohort_fail_code(err, COHORT_E_CONFIG, "cannot read journal %s: %s", path,
                                strerror(errno));
    if (jhdr_decode(h, (size_t)got, path, &hdr, err) < 0)
        return -1;
    memcpy(s->name, hdr.name, sizeof s->name);
    s->n_items = hdr.n_items;
    struct jspans done = {0};
    struct jscan sc = {.path = path, .fd = fd, .size = (uint64_t)st.st_size,
                       .n_items = hdr.n_items, .key = hdr.key, .done = &done, .fn = collect,
                       .ctx = c};
    int rc = jscan_records(&sc, err);
    if (rc == 0)
        rc = settle_aside(s, c, &done, err);
    s->committed = done.count;
    s->remaining = s->n_items - done.count - s->n_aside;
    s->torn_bytes = (uint64_t)st.st_size - sc.end;
    s->size = (uint64_t)st.st_size;
    jspans_free(&done);
    return rc;
}

int journal_summary_each(const char *path, struct journal_summary *s, journal_replay_fn fn,
                         void *ctx, struct cohort_err *err)
{
    memset(s, 0, sizeof *s);
    int created;
    int fd = jfile_open(path, 0, &created, err);
    if (fd < 0)
        return -1;
    struct asides c = {.fn = fn, .ctx = ctx, .s = s};
    int rc = summarize(fd, path, s, &c, err);
    free(c.a);
    close(fd);
    if (rc < 0)
        journal_summary_free(s);
    return rc;
}

int journal_summary(const char *path, struct journal_summary *s, struct cohort_err *err)
{
    return journal_summary_each(path, s, NULL, NULL, err);
}

void journal_summary_free(struct journal_summary *s)
{
    free(s->aside);
    s->aside = NULL;
    s->n_aside = 0;
}
