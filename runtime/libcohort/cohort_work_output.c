/* cohort_work_output.c - a worker's commit with results
 * (cohort_work_commit_output): the results written by this worker as an
 * offered part in the offers' folder of the queue's output directory
 * (parts.h: .offers, this user's alone, so that no other user can reach
 * an offer, nor hard-link it) and synced,
 * then offered to the coordinator with the ids, all or nothing. The
 * coordinator links the part under its name once the commit is durable,
 * or removes the offer when it lost; a worker that cannot tell (the
 * coordinator went silent or away after the offer) leaves the file to
 * the next step over the journal, which publishes or removes it. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base_sys.h"
#include "cohort_internal.h"
#include "cohort_work_private.h"
#include "parts.h"

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ids sorted into w->ids; their runs in *spans. 0, or -1 with the error
 * (an id twice, too many runs, out of memory). */
static int sorted(struct cohort_work *w, const char *func, const uint64_t *ids, size_t n,
                  size_t *spans)
{
    uint64_t *s = realloc(w->ids, sizeof *s * n);
    if (!s)
        return cohort_internal_fail(w->c, COHORT_ERR_RESOURCE, "cohort: %s: out of memory",
                                    func);
    w->ids = s;
    memcpy(s, ids, sizeof *s * n);
    qsort(s, n, sizeof *s, cmp_id);
    for (size_t i = 1; i < n; i++)
        if (s[i] == s[i - 1])
            return cohort_internal_fail(w->c, COHORT_ERR_USAGE,
                                        "cohort: %s: id %llu is given twice", func,
                                        (unsigned long long)s[i]);
    *spans = work_span_count(s, n);
    if (*spans > PARTS_SPANS_MAX)
        return cohort_internal_fail(w->c, COHORT_ERR_USAGE,
                                    "cohort: %s: the ids form %zu runs, above %u: commit them "
                                    "in smaller calls",
                                    func, *spans, PARTS_SPANS_MAX);
    return 0;
}

static int write_fail(struct cohort_work *w, const char *func, const char *what, int e)
{
    return cohort_internal_fail(w->c, COHORT_ERR_RESOURCE,
                                "cohort: %s: queue '%s': cannot %s results in %s: %s", func,
                                w->name, what, w->output, strerror(e));
}

/* The output directory's offers' folder, opened at the first commit with
 * results as the coordinator opened it: the directory not through a
 * symbolic link, this user's, not writable by group or others; the folder
 * made when missing and checked (parts_offers_open). 0, or -1 with the
 * error. */
static int open_offers(struct cohort_work *w, const char *func)
{
    struct stat st;
    struct cohort_err e;
    if (w->offers_fd >= 0)
        return 0;
    int fd = open(w->output, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return write_fail(w, func, "open the directory (not a symbolic link) for", errno);
    if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        close(fd);
        return cohort_internal_fail(w->c, COHORT_ERR_CONFIG,
                                    "cohort: %s: queue '%s': output directory %s belongs to "
                                    "another user or is writable by its group or others (here: "
                                    "not on a filesystem every node sees?)",
                                    func, w->name, w->output);
    }
    w->offers_fd = parts_offers_open(fd, w->output, &e);
    close(fd);
    if (w->offers_fd < 0)
        return cohort_internal_fail(w->c, COHORT_ERR_CONFIG, "cohort: %s: queue '%s': %s", func,
                                    w->name, e.msg);
    return 0;
}

/* A fresh random token. 0, or -1 with the error. */
static int draw(struct cohort_work *w, const char *func, uint8_t *token)
{
    if (base_random(token, PARTS_TOKEN_LEN) < 0)
        return write_fail(w, func, "draw a random name for", errno);
    return 0;
}

/* The offered part of token: head and data written to a new file of the
 * user's alone and synced. 0, or -1 with the error (and no file left). */
static int offer_file(struct cohort_work *w, const char *func, const uint8_t *head,
                      size_t head_len, const void *data, size_t len, const uint8_t *token)
{
    char name[PARTS_NAME_MAX];
    parts_tmp_name(token, name);
    int fd = openat(w->offers_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return write_fail(w, func, "create a file for", errno);
    int e = base_write_all(fd, head, head_len) < 0 || base_write_all(fd, data, len) < 0 ||
                    fdatasync(fd) < 0 ? errno : 0;
    if (close(fd) < 0 && !e)
        e = errno;
    if (!e)
        return 0;
    unlinkat(w->offers_fd, name, 0);
    return write_fail(w, func, "write", e);
}

/* The COMMIT_OUTPUT request of the sorted ids (work_msg.h), malloc'd. */
static uint8_t *request(const struct cohort_work *w, const uint8_t *token, size_t len,
                        uint32_t kind, size_t n, size_t spans, uint32_t *req_len)
{
    *req_len = (uint32_t)(WORK_OUTPUT_HEAD + spans * WORK_SPAN_LEN);
    uint8_t *req = malloc(*req_len);
    if (!req)
        return NULL;
    memcpy(req, token, PARTS_TOKEN_LEN);
    wire_put64(req + 16, (uint64_t)len);
    wire_put32(req + 24, kind);
    work_spans_put(w->ids, n, req + WORK_OUTPUT_HEAD);
    return req;
}

static int commit_output(struct cohort_work *w, const char *func, const uint64_t *ids,
                         size_t n, const void *data, size_t len, uint32_t kind)
{
    if (!w || work_ids_check(w, func, ids, n) < 0)
        return -1;
    if (!w->output || n == 0 || (!data && len))
        return cohort_internal_fail(w->c, COHORT_ERR_USAGE, "cohort: %s: queue '%s': %s", func,
                                    w->name,
                                    !w->output ? "opened without an output directory (set "
                                                 "opts.output)"
                                    : n == 0   ? "no ids: results belong to ids"
                                               : "data is NULL");
    if (w->gone)
        return work_call(w, func, WORK_COMMIT_OUTPUT, NULL, 0, NULL); /* says why */
    size_t spans = 0, head_len;
    uint8_t token[PARTS_TOKEN_LEN], *head;
    if (sorted(w, func, ids, n, &spans) < 0 || open_offers(w, func) < 0 || draw(w, func, token) < 0)
        return -1;
    head_len = parts_head_len((uint32_t)spans);
    if (!(head = malloc(head_len)))
        return cohort_internal_fail(w->c, COHORT_ERR_RESOURCE, "cohort: %s: out of memory",
                                    func);
    parts_head_put(head, kind, token, w->ids, n, (uint32_t)spans, (uint64_t)len);
    int rc = offer_file(w, func, head, head_len, data, len, token);
    free(head);
    if (rc < 0)
        return -1;
    uint32_t req_len;
    uint8_t *req = request(w, token, len, kind, n, spans, &req_len);
    struct wire_frame f;
    char name[PARTS_NAME_MAX];
    parts_tmp_name(token, name);
    if (!req) {
        unlinkat(w->offers_fd, name, 0);
        return cohort_internal_fail(w->c, COHORT_ERR_RESOURCE, "cohort: %s: out of memory",
                                    func);
    }
    rc = work_call(w, func, WORK_COMMIT_OUTPUT, req, req_len, &f);
    free(req);
    if (rc < 0)
        return -1; /* the offer may have been taken: the next step settles it */
    if (f.flags == WORK_ERROR) /* refused before any commit: the offer is this worker's */
        unlinkat(w->offers_fd, name, 0);
    return work_verdict(w, func, &f);
}

int cohort_work_commit_output(struct cohort_work *w, const uint64_t *ids, size_t n,
                              const void *data, size_t len)
{
    return commit_output(w, "cohort_work_commit_output", ids, n, data, len,
                         COHORT_WORK_OUTPUT_BYTES);
}

int cohort_work_commit_output_kind(struct cohort_work *w, const uint64_t *ids, size_t n,
                                   const void *data, size_t len, uint32_t kind)
{
    return commit_output(w, "cohort_work_commit_output_kind", ids, n, data, len, kind);
}
