/* journal.c - the coordinator's side of the journal: creating or checking
 * and replaying the file under its lock, cutting a torn tail away, and the
 * group commit (records gathered in memory into a frame, one write and one
 * fdatasync a round). See journal.h; the format is in journal_format.c,
 * the pass over the frames in journal_read.c. */
#include "journal_private.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NO_OPEN SIZE_MAX

struct journal {
    int fd;
    char *path;
    uint64_t n_items;
    uint64_t key;         /* the header's check, which every frame's covers */
    uint64_t end;         /* where the next frame goes: the end of the last synced one */
    uint64_t seq;         /* the number of the next frame written */
    uint64_t torn;        /* bytes of the torn tail journal_open cut away */
    struct jspans replayed; /* ids committed when it was opened */
    struct jtree added;   /* ids committed since */
    uint8_t *buf;         /* the frames the next sync writes, the last one open */
    size_t len, cap;
    size_t frame;         /* where in buf the open frame begins */
    size_t closed;        /* frames in buf before it */
    size_t open;          /* where in buf the COMMITTED record being filled begins */
    int failed;
    struct cohort_err why; /* the failure every later call repeats */
};

static int again(const struct journal *j, struct cohort_err *err)
{
    if (err)
        *err = j->why;
    return -1;
}

/* The journal's final failure: formatted into j->why and err. */
__attribute__((format(printf, 4, 5))) static int broken(struct journal *j,
                                                         struct cohort_err *err, int code,
                                                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->why.msg, sizeof j->why.msg, fmt, ap);
    va_end(ap);
    j->why.code = code;
    j->failed = 1;
    return again(j, err);
}

static int datasync(int fd)
{
    int rc;
    while ((rc = fdatasync(fd)) < 0 && errno == EINTR)
        ;
    return rc;
}

/* Makes the directory entry of a new file durable. A filesystem that
 * cannot sync a directory (EINVAL) keeps it as it keeps its files. */
static int sync_dir(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return -1;
    char *slash = strrchr(dir, '/');
    const char *d = !slash ? "." : slash == dir ? "/" : (*slash = 0, dir);
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd < 0 ? -1 : fsync(fd) < 0 && errno != EINVAL ? -1 : 0;
    int saved = errno;
    if (fd >= 0)
        close(fd);
    free(dir);
    errno = saved;
    return rc;
}

/* Opens (creating when missing) the file: *size its bytes. */
static int file_open(struct journal *j, int *created, uint64_t *size, struct cohort_err *err)
{
    struct stat st;
    if ((j->fd = jfile_open(j->path, 1, created, &j->why)) < 0) {
        j->failed = 1;
        return again(j, err);
    }
    if (fstat(j->fd, &st) < 0)
        return broken(j, err, COHORT_E_CONFIG, "cannot open journal %s: %s", j->path,
                      strerror(errno));
    *size = (uint64_t)st.st_size;
    return 0;
}

/* The whole file's write lock, or the line naming who holds it. */
static int file_lock(struct journal *j, struct cohort_err *err)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(j->fd, F_SETLK, &fl) == 0)
        return 0;
    if (errno != EACCES && errno != EAGAIN)
        return broken(j, err, COHORT_E_CONFIG,
                      "cannot lock journal %s: %s (a journal needs fcntl locks, so that two "
                      "steps cannot write it at once)",
                      j->path, strerror(errno));
    struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    char who[40] = "pid unknown";
    if (fcntl(j->fd, F_GETLK, &q) == 0 && q.l_type != F_UNLCK && q.l_pid > 0)
        snprintf(who, sizeof who, "pid %ld", (long)q.l_pid);
    return broken(j, err, COHORT_E_CONFIG,
                  "journal %s is in use by another step's coordinator (%s): a journal serves "
                  "one step at a time; wait for that step to end, or give this queue another "
                  "journal",
                  j->path, who);
}

/* Writes this queue's header into a new, empty or half-created file, or
 * checks the one there. */
static int file_header(struct journal *j, const char *name, int created, uint64_t *size,
                       struct cohort_err *err)
{
    uint8_t want[JHDR_LEN], have[JHDR_LEN];
    struct jhdr h;
    jhdr_encode(want, name, j->n_items);
    j->key = jget64(want + JHDR_LEN - JCHECK_LEN);
    ssize_t got = base_pread_all(j->fd, have, sizeof have, 0);
    if (got < 0)
        return broken(j, err, COHORT_E_CONFIG, "cannot read journal %s: %s", j->path,
                      strerror(errno));
    if ((size_t)got < JHDR_LEN && memcmp(have, want, (size_t)got) == 0) {
        if (base_pwrite_all(j->fd, want, JHDR_LEN, 0) < 0 || datasync(j->fd) < 0 ||
            (created && sync_dir(j->path) < 0))
            return broken(j, err, COHORT_E_RESOURCE, "cannot write journal %s: %s", j->path,
                          strerror(errno));
        *size = JHDR_LEN;
        return 0;
    }
    if (jhdr_decode(have, (size_t)got, j->path, &h, &j->why) < 0) {
        j->failed = 1;
        return again(j, err);
    }
    if (strcmp(h.name, name) != 0 || h.n_items != j->n_items)
        return broken(j, err, COHORT_E_CONFIG,
                      "journal %s belongs to queue '%s' of %" PRIu64 " items, not '%s' of %" PRIu64
                      ": give this queue another journal, or open it with the name and size "
                      "the journal was made for",
                      j->path, h.name, h.n_items, name, j->n_items);
    return 0;
}

/* Replays the frames; a torn tail is cut away, so that appends follow the
 * last valid frame. */
static int replay(struct journal *j, uint64_t size, journal_replay_fn fn, void *ctx,
                  struct cohort_err *err)
{
    struct jscan s = {.path = j->path, .fd = j->fd, .size = size, .n_items = j->n_items,
                      .key = j->key, .done = &j->replayed, .fn = fn, .ctx = ctx};
    if (jscan_records(&s, &j->why) < 0) {
        j->failed = 1;
        return again(j, err);
    }
    j->end = s.end;
    j->seq = s.frames;
    j->torn = size - s.end;
    if (j->torn && (ftruncate(j->fd, (off_t)s.end) < 0 || datasync(j->fd) < 0))
        return broken(j, err, COHORT_E_RESOURCE,
                      "cannot cut the torn tail of journal %s at byte %" PRIu64 ": %s", j->path,
                      s.end, strerror(errno));
    return 0;
}

int journal_open(const char *path, const char *name, uint64_t n_items, journal_replay_fn fn,
                 void *ctx, struct journal **out, struct cohort_err *err)
{
    *out = NULL;
    if (strlen(name) > JOURNAL_NAME_MAX || n_items > JOURNAL_MAX_ITEMS)
        return cohort_fail_code(err, COHORT_E_USAGE,
                                "journal %s: a queue name above %d bytes or above %" PRIu64
                                " items cannot be journaled",
                                path, JOURNAL_NAME_MAX, JOURNAL_MAX_ITEMS);
    struct journal *j = calloc(1, sizeof *j);
    if (!j || !(j->path = strdup(path))) {
        free(j);
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory opening journal %s",
                                path);
    }
    j->fd = -1;
    j->n_items = n_items;
    j->frame = j->open = NO_OPEN;
    int created;
    uint64_t size;
    if (file_open(j, &created, &size, err) < 0 || file_lock(j, err) < 0 ||
        file_header(j, name, created, &size, err) < 0 || replay(j, size, fn, ctx, err) < 0) {
        journal_close(j);
        return -1;
    }
    *out = j;
    return 0;
}

uint64_t journal_torn_bytes(const struct journal *j)
{
    return j->torn;
}

/* Ends the COMMITTED record being filled: its type and length. */
static void close_open(struct journal *j)
{
    if (j->open == NO_OPEN)
        return;
    uint8_t *r = j->buf + j->open;
    r[0] = JOURNAL_COMMITTED;
    jput32(r + 1, (uint32_t)(j->len - j->open - JREC_HEAD));
    j->open = NO_OPEN;
}

/* Ends the open frame: its head, numbered after the frames before it. */
static void close_frame(struct journal *j)
{
    if (j->frame == NO_OPEN)
        return;
    close_open(j);
    jframe_seal(j->buf + j->frame, j->key, j->seq + j->closed,
                (uint32_t)(j->len - j->frame - JFRAME_HEAD));
    j->closed++;
    j->frame = NO_OPEN;
}

/* Room for need more bytes of records in the open frame (a new one begun
 * when there is none, or when they would take it past JFRAME_MAX): 0, or
 * -1 when out of memory. */
static int room(struct journal *j, size_t need)
{
    if (j->frame != NO_OPEN && j->len - j->frame - JFRAME_HEAD + need > JFRAME_MAX)
        close_frame(j);
    if (base_grow((void **)&j->buf, &j->cap, j->len + JFRAME_HEAD + need, 1) < 0)
        return -1;
    if (j->frame == NO_OPEN) {
        j->frame = j->len;
        j->len += JFRAME_HEAD;
    }
    return 0;
}

static int oom(struct journal *j, struct cohort_err *err)
{
    return broken(j, err, COHORT_E_RESOURCE, "out of memory adding to journal %s", j->path);
}

/* Ids lo..hi-1 (lo < hi), checked, into the record being filled: a span
 * that continues its last one extends it. */
static int add_span(struct journal *j, uint64_t lo, uint64_t hi, struct cohort_err *err)
{
    uint64_t dup;
    if (hi > j->n_items)
        return broken(j, err, COHORT_E_USAGE,
                      "journal %s: id %" PRIu64 " committed beyond the queue's %" PRIu64 " items",
                      j->path, hi - 1, j->n_items);
    int rc = base_runs_overlap(&j->replayed.runs, lo, hi, &dup)
                 ? 1 : jtree_add(&j->added, lo, hi, &dup);
    if (rc > 0)
        return broken(j, err, COHORT_E_USAGE,
                      "journal %s: id %" PRIu64 " committed a second time", j->path, dup);
    if (rc < 0)
        return oom(j, err);
    if (j->open != NO_OPEN) {
        uint8_t *last = j->buf + j->len - JSPAN_LEN;
        if (jget64(last + 8) == lo) {
            jput64(last + 8, hi);
            return 0;
        }
    }
    if (room(j, JREC_HEAD + JSPAN_LEN) < 0)
        return oom(j, err);
    if (j->open == NO_OPEN) {
        j->open = j->len;
        j->len += JREC_HEAD;
    }
    jput64(j->buf + j->len, lo);
    jput64(j->buf + j->len + 8, hi);
    j->len += JSPAN_LEN;
    return 0;
}

int journal_add_committed(struct journal *j, const uint64_t *ids, size_t n,
                          struct cohort_err *err)
{
    if (j->failed)
        return again(j, err);
    for (size_t i = 0, k; i < n; i = k) {
        for (k = i + 1; k < n && ids[k - 1] < j->n_items && ids[k] == ids[k - 1] + 1; k++)
            ;
        if (ids[i] >= j->n_items)
            return broken(j, err, COHORT_E_USAGE,
                          "journal %s: id %" PRIu64 " committed beyond the queue's %" PRIu64
                          " items",
                          j->path, ids[i], j->n_items);
        if (add_span(j, ids[i], ids[k - 1] + 1, err) < 0)
            return -1;
    }
    return 0;
}

int journal_add_published(struct journal *j, uint64_t part, uint64_t data_len,
                          uint32_t data_kind, const uint8_t token[JOURNAL_TOKEN_LEN],
                          const uint64_t *ids, size_t n, struct cohort_err *err)
{
    if (j->failed)
        return again(j, err);
    size_t spans = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= j->n_items || (i && ids[i] <= ids[i - 1]))
            return broken(j, err, COHORT_E_USAGE,
                          "journal %s: the ids of part %" PRIu64 " are beyond the queue or "
                          "not ascending", j->path, part);
        spans += !i || ids[i] != ids[i - 1] + 1;
    }
    if (spans == 0 || spans > JOURNAL_PUB_SPANS_MAX)
        return broken(j, err, COHORT_E_USAGE, "journal %s: part %" PRIu64 " has %zu runs of ids "
                      "(1 to %u)", j->path, part, spans, JOURNAL_PUB_SPANS_MAX);
    close_open(j);
    size_t blen = JPUB_LEN + spans * JSPAN_LEN;
    if (room(j, JREC_HEAD + blen) < 0)
        return oom(j, err);
    uint8_t *r = j->buf + j->len, *sp = r + JREC_HEAD + JPUB_LEN;
    r[0] = JOURNAL_PUBLISHED;
    jput32(r + 1, (uint32_t)blen);
    jput64(r + JREC_HEAD, part);
    jput64(r + JREC_HEAD + 8, data_len);
    jput32(r + JREC_HEAD + 16, data_kind);
    memcpy(r + JREC_HEAD + 20, token, JOURNAL_TOKEN_LEN);
    for (size_t i = 0, k; i < n; i = k, sp += JSPAN_LEN) {
        for (k = i + 1; k < n && ids[k] == ids[k - 1] + 1; k++)
            ;
        uint64_t dup;
        int rc = base_runs_overlap(&j->replayed.runs, ids[i], ids[k - 1] + 1, &dup)
                     ? 1 : jtree_add(&j->added, ids[i], ids[k - 1] + 1, &dup);
        if (rc > 0)
            return broken(j, err, COHORT_E_USAGE,
                          "journal %s: id %" PRIu64 " committed a second time", j->path, dup);
        if (rc < 0)
            return oom(j, err);
        jput64(sp, ids[i]);
        jput64(sp + 8, ids[k - 1] + 1);
    }
    j->len += JREC_HEAD + blen;
    return 0;
}

int journal_add_progress(struct journal *j, const struct journal_progress *p,
                         struct cohort_err *err)
{
    if (j->failed)
        return again(j, err);
    close_open(j);
    if (room(j, JREC_HEAD + JPROG_LEN) < 0)
        return oom(j, err);
    uint8_t *r = j->buf + j->len;
    r[0] = JOURNAL_PROGRESS;
    jput32(r + 1, JPROG_LEN);
    jput64(r + JREC_HEAD, p->time_ms);
    jput64(r + JREC_HEAD + 8, p->committed);
    jput64(r + JREC_HEAD + 16, p->leased);
    jput64(r + JREC_HEAD + 24, p->set_aside);
    jput32(r + JREC_HEAD + 32, p->workers);
    j->len += JREC_HEAD + JPROG_LEN;
    return 0;
}

int journal_add_set_aside(struct journal *j, uint64_t id, uint32_t attempts,
                          struct cohort_err *err)
{
    if (j->failed)
        return again(j, err);
    if (id >= j->n_items)
        return broken(j, err, COHORT_E_USAGE,
                      "journal %s: id %" PRIu64 " set aside beyond the queue's %" PRIu64 " items",
                      j->path, id, j->n_items);
    close_open(j);
    if (room(j, JREC_HEAD + JASIDE_LEN) < 0)
        return oom(j, err);
    uint8_t *r = j->buf + j->len;
    r[0] = JOURNAL_SET_ASIDE;
    jput32(r + 1, JASIDE_LEN);
    jput64(r + JREC_HEAD, id);
    jput32(r + JREC_HEAD + 8, attempts);
    j->len += JREC_HEAD + JASIDE_LEN;
    return 0;
}

int journal_sync(struct journal *j, struct cohort_err *err)
{
    if (j->failed)
        return again(j, err);
    close_frame(j);
    for (size_t at = 0, n; at < j->len; at += n) { /* each frame its own write and sync */
        n = JFRAME_HEAD + jget32(j->buf + at + 4);
        if (base_pwrite_all(j->fd, j->buf + at, n, j->end) < 0 || datasync(j->fd) < 0)
            return broken(j, err, COHORT_E_RESOURCE,
                          "cannot write journal %s: %s; the commits since its last sync are not "
                          "durable: fix this and rerun the step to resume from the journal",
                          j->path, strerror(errno));
        j->end += n;
        j->seq++;
    }
    j->len = j->closed = 0;
    return 0;
}

void journal_close(struct journal *j)
{
    if (!j)
        return;
    if (j->fd >= 0)
        close(j->fd);
    jspans_free(&j->replayed);
    jtree_free(&j->added);
    free(j->buf);
    free(j->path);
    free(j);
}
