/* work_output.c - `cohort-work output` (work_output.h): reads the heads of
 * an output directory's parts (never their data), checks them alone and
 * against the journal's publications, and prints them as text or JSON. */
#include "work_output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "base_sys.h"
#include "parts.h"
#include "text_escape.h"

struct part {
    uint64_t number, data_len, n_ids, size;
    uint32_t kind, n_spans;
    uint8_t token[PARTS_TOKEN_LEN]; /* of its offer */
    uint64_t *spans;  /* n_spans (lo, hi) pairs */
    int in_journal;
};

struct listing {
    struct part *p;
    size_t n, cap;
    size_t offers;    /* .tmp- files in .offers (or left by an older cohort in the
                       * directory itself): offers not (yet) published */
    json_t *problems; /* strings */
    uint64_t ids, bytes;
    uint64_t journaled; /* ids the journal's publications hold */
};

static void problem(struct listing *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void problem(struct listing *l, const char *fmt, ...)
{
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char *e = escaped(line);
    json_array_append_new(l->problems, json_string(e ? e : "?"));
    free(e);
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* Reads the head of the part named name into *pt: 0, or -1 (a problem said). */
static int read_part(struct listing *l, int dfd, const char *name, struct part *pt)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        problem(l, "%s: not a readable file (%s)", name, fd < 0 ? strerror(errno) : "type");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t want = PARTS_FIXED, got = 0;
    uint8_t *buf = NULL;
    struct parts_head h;
    struct cohort_err err;
    int rc = 1;
    while (rc == 1) {
        uint8_t *nb = realloc(buf, want);
        ssize_t k = nb ? pread(fd, nb + got, want - got, (off_t)got) : -1;
        buf = nb;
        if (k <= 0) {
            snprintf(err.msg, sizeof err.msg, "cut short in its head");
            rc = -1;
            break;
        }
        got += (size_t)k;
        rc = got < want ? 1 : parts_head_get(buf, got, 0, &h, &err);
        want = rc == 1 && got == want ? h.head_len : want;
    }
    close(fd);
    if (rc == 0 && (uint64_t)st.st_size != h.head_len + h.data_len) {
        snprintf(err.msg, sizeof err.msg, "%lld bytes, its head says %" PRIu64,
                 (long long)st.st_size, (uint64_t)h.head_len + h.data_len);
        rc = -1;
    }
    if (rc == 0 && !(pt->spans = malloc(sizeof *pt->spans * 2 * h.n_spans)))
        rc = -1, snprintf(err.msg, sizeof err.msg, "out of memory");
    if (rc < 0) {
        problem(l, "%s: %s", name, err.msg);
        free(buf);
        return -1;
    }
    for (uint32_t i = 0; i < 2 * h.n_spans; i++)
        pt->spans[i] = get64(h.spans + 8 * i);
    pt->kind = h.kind, pt->n_spans = h.n_spans, pt->data_len = h.data_len;
    memcpy(pt->token, h.token, PARTS_TOKEN_LEN);
    pt->n_ids = h.n_ids, pt->size = (uint64_t)st.st_size;
    free(buf);
    return 0;
}

static int by_number(const void *a, const void *b)
{
    const struct part *x = a, *y = b;
    return x->number < y->number ? -1 : x->number > y->number;
}

/* Every part's head, in number order. 0, or -1 when dir cannot be listed. */
static int gather(struct listing *l, const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        problem(l, "cannot read directory %s: %s", dir, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    struct dirent *de;
    uint64_t num;
    while ((de = readdir(d))) {
        if (!strncmp(de->d_name, PARTS_TMP_PREFIX, strlen(PARTS_TMP_PREFIX)))
            l->offers++;
        if (parts_number(de->d_name, &num) < 0)
            continue;
        if (base_grow((void **)&l->p, &l->cap, l->n + 1, sizeof *l->p) < 0)
            abort();
        struct part pt = {.number = num};
        if (read_part(l, dfd, de->d_name, &pt) == 0)
            l->p[l->n++] = pt;
    }
    int ofd = openat(dirfd(d), PARTS_OFFERS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    closedir(d);
    DIR *od = ofd >= 0 ? fdopendir(ofd) : NULL;
    while (od && (de = readdir(od)))
        l->offers += !strncmp(de->d_name, PARTS_TMP_PREFIX, strlen(PARTS_TMP_PREFIX));
    if (od)
        closedir(od);
    else if (ofd >= 0)
        close(ofd);
    if (l->n) /* never a null array, even for none */
        qsort(l->p, l->n, sizeof *l->p, by_number);
    return 0;
}

/* A span (lo, hi) and its part, for the check that no id is in two. */
struct owned {
    uint64_t lo, hi, part;
};

static int by_lo(const void *a, const void *b)
{
    const struct owned *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void check_once(struct listing *l)
{
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        n += l->p[i].n_spans;
    struct owned *o = malloc(sizeof *o * (n ? n : 1));
    if (!o)
        abort();
    n = 0;
    for (size_t i = 0; i < l->n; i++) {
        l->ids += l->p[i].n_ids;
        l->bytes += l->p[i].data_len;
        for (uint32_t k = 0; k < l->p[i].n_spans; k++)
            o[n++] = (struct owned){l->p[i].spans[2 * k], l->p[i].spans[2 * k + 1],
                                    l->p[i].number};
    }
    qsort(o, n, sizeof *o, by_lo);
    for (size_t i = 1; i < n; i++)
        if (o[i].lo < o[i - 1].hi)
            problem(l, "id %" PRIu64 " is in part %" PRIu64 " and in part %" PRIu64, o[i].lo,
                    o[i - 1].part, o[i].part);
    free(o);
}

/* The journal's publications, each checked against its part. */
static int published(void *ctx, const struct journal_event *ev, struct cohort_err *err)
{
    struct listing *l = ctx;
    (void)err;
    l->journaled += ev->n_ids;
    struct part key = {.number = ev->part};
    struct part *pt = l->n ? bsearch(&key, l->p, l->n, sizeof *l->p, by_number) : NULL;
    if (!pt) {
        problem(l, "part %" PRIu64 " (%" PRIu64 " ids from %" PRIu64 ") is in the journal and "
                "not in the directory", ev->part, ev->n_ids, ev->lo);
        return 0;
    }
    int same = pt->n_spans == ev->n_spans && pt->data_len == ev->data_len &&
               pt->kind == ev->data_kind && !pt->in_journal &&
               !memcmp(pt->token, ev->token, PARTS_TOKEN_LEN);
    for (uint32_t i = 0; same && i < 2 * ev->n_spans; i++)
        same = pt->spans[i] == get64(ev->spans + 8 * i);
    if (!same)
        problem(l, "part %" PRIu64 " is not what the journal records (its offer, ids, kind "
                "or length)", ev->part);
    pt->in_journal = 1;
    return 0;
}

static json_t *against_journal(struct listing *l, const char *journal)
{
    struct journal_summary s;
    struct cohort_err err;
    if (journal_summary_each(journal, &s, published, l, &err) < 0) {
        problem(l, "%s", err.msg);
        return json_null();
    }
    for (size_t i = 0; i < l->n; i++)
        if (!l->p[i].in_journal)
            problem(l, "part %" PRIu64 " is not in the journal (another queue's, or an old "
                    "run's?)", l->p[i].number);
    json_t *j = json_pack("{s:I, s:I, s:I}", "n_items", (json_int_t)s.n_items, "committed",
                          (json_int_t)s.committed, "committed_without_results",
                          (json_int_t)(s.committed - (s.committed >= l->journaled ? l->journaled
                                                                                  : 0)));
    journal_summary_free(&s);
    return j;
}

static json_t *part_json(const struct part *pt)
{
    char name[PARTS_NAME_MAX];
    parts_name(pt->number, name);
    json_t *ids = json_array();
    for (uint32_t k = 0; k < pt->n_spans; k++)
        json_array_append_new(ids, json_pack("[I, I]", (json_int_t)pt->spans[2 * k],
                                             (json_int_t)pt->spans[2 * k + 1] - 1));
    return json_pack("{s:s, s:I, s:o, s:I, s:I, s:I}", "file", name, "part",
                     (json_int_t)pt->number, "ids", ids, "n_ids", (json_int_t)pt->n_ids,
                     "kind", (json_int_t)pt->kind, "size", (json_int_t)pt->data_len);
}

static void print_text(const struct listing *l, const char *dir, const json_t *jr)
{
    char *d = escaped(dir);
    for (size_t i = 0; i < l->n; i++) {
        const struct part *pt = &l->p[i];
        char name[PARTS_NAME_MAX];
        parts_name(pt->number, name);
        printf("%s  ids ", name);
        for (uint32_t k = 0; k < pt->n_spans && k < 8; k++)
            printf(pt->spans[2 * k + 1] - pt->spans[2 * k] > 1 ? "%s%" PRIu64 "-%" PRIu64
                                                                : "%s%" PRIu64,
                   k ? "," : "", pt->spans[2 * k], pt->spans[2 * k + 1] - 1);
        printf("%s  (%" PRIu64 " ids, %" PRIu64 " bytes, kind %" PRIu32 ")\n",
               pt->n_spans > 8 ? ",..." : "", pt->n_ids, pt->data_len, pt->kind);
    }
    printf("output:    %s: %zu parts, %" PRIu64 " ids, %" PRIu64 " bytes; %zu offers not "
           "published\n", d ? d : "?", l->n, l->ids, l->bytes, l->offers);
    if (json_is_object(jr))
        printf("journal:   %" PRIu64 " of %" PRIu64 " items committed, %" PRIu64
               " of them without results\n",
               (uint64_t)json_integer_value(json_object_get(jr, "committed")),
               (uint64_t)json_integer_value(json_object_get(jr, "n_items")),
               (uint64_t)json_integer_value(json_object_get(jr, "committed_without_results")));
    size_t i;
    json_t *p;
    json_array_foreach(l->problems, i, p)
        printf("problem:   %s\n", json_string_value(p));
    printf("check:     %s\n", json_array_size(l->problems) ? "FAILED" : "ok");
    free(d);
}

int work_output(const char *dir, const char *journal, int json)
{
    struct listing l = {.problems = json_array()};
    json_t *jr = json_null();
    if (gather(&l, dir) == 0) {
        check_once(&l);
        if (journal) {
            json_decref(jr);
            jr = against_journal(&l, journal);
        }
    }
    int rc = json_array_size(l.problems) ? 1 : 0;
    if (json) {
        json_t *parts = json_array();
        for (size_t i = 0; i < l.n; i++)
            json_array_append_new(parts, part_json(&l.p[i]));
        json_t *root = json_pack("{s:o, s:I, s:I, s:I, s:O, s:O, s:b}", "parts", parts, "ids",
                                 (json_int_t)l.ids, "bytes", (json_int_t)l.bytes,
                                 "offers_not_published", (json_int_t)l.offers, "journal", jr,
                                 "problems", l.problems, "ok", rc == 0);
        if (!root || json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                                  JSON_ENSURE_ASCII) < 0)
            rc = 1;
        putchar('\n');
        json_decref(root);
    } else {
        print_text(&l, dir, jr);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.p[i].spans);
    free(l.p);
    json_decref(jr);
    json_decref(l.problems);
    return fflush(stdout) != 0 ? 1 : rc;
}
