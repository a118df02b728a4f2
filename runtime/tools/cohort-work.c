/* cohort-work.c - tells what a work queue's journal holds: the items done,
 * set aside (with their attempts) and remaining, as text or JSON; and
 * (work_output.c) what it published in its output directory. It only
 * reads the journal, without its lock, so it may run while the queue's
 * coordinator writes it. The queue's name, the path and error lines are
 * printed with control bytes escaped: the journal may be another user's.
 * Exit status: 0, 1 a journal that cannot be read or is damaged, 2 bad
 * usage. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "journal.h"
#include "text_escape.h"
#include "work_output.h"

#define TEXT_ASIDE_MAX 20 /* set-aside ids the text names */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cohort-work status JOURNAL [--format text|json | --watch[=SECONDS]]\n"
            "       cohort-work output DIR [--journal JOURNAL] [--format text|json]\n"
            "\n"
            "status: what a work queue's journal holds: items done, set aside and remaining.\n"
            "output: the results a queue published in DIR (each part: file, ids, size), and\n"
            "        whether every id is in at most one part (with --journal: every id\n"
            "        committed with results in exactly one, as the journal records).\n"
            "  --format FMT      text (default) or json\n"
            "  --journal FILE    (output) the queue's journal, to check against\n"
            "  --watch[=S]       (status) one line again every S seconds (2) until done:\n"
            "                    committed of total, items/s, ETA, leased, set aside\n"
            "  --version, --help\n");
}

static int bad_usage(const char *what, const char *arg)
{
    fprintf(stderr, "cohort-work: %s%s%s (see cohort-work --help)\n", what, arg ? " " : "",
            arg ? arg : "");
    return 2;
}

/* The rate over the last minute of progress records (items/s; 0: none),
 * the ETA in seconds (-1: unknown), and how old the last record is. */
struct pace {
    double rate, eta_s, age_s;
    int known;
};

static struct pace pace_of(const struct journal_summary *s)
{
    struct pace p = {0, -1, 0, s->last.time_ms != 0};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    if (!p.known)
        return p;
    double dt = (double)(s->last.time_ms - s->before.time_ms) / 1e3;
    if (dt > 0 && s->last.committed >= s->before.committed)
        p.rate = (double)(s->last.committed - s->before.committed) / dt;
    if (p.rate > 0)
        p.eta_s = (double)s->remaining / p.rate;
    p.age_s = now - (double)s->last.time_ms / 1e3;
    return p;
}

static void print_pace(const struct journal_summary *s)
{
    struct pace p = pace_of(s);
    if (!p.known) {
        printf("progress:  none recorded\n");
        return;
    }
    char eta[32] = "unknown";
    if (p.eta_s >= 0)
        snprintf(eta, sizeof eta, "%.0f s", p.eta_s);
    printf("progress:  %.0f items/s over the last minute, ETA %s; %" PRIu64 " leased, %" PRIu32
           " workers (recorded %.0f s ago)\n",
           p.rate, eta, s->last.leased, s->last.workers, p.age_s);
}

static void print_text(const char *path, const struct journal_summary *s)
{
    char *p = escaped(path), *name = escaped(s->name);
    printf("journal:   %s (%" PRIu64 " bytes)\n", p ? p : "?", s->size);
    printf("queue:     '%s', %" PRIu64 " items\n", name ? name : "?", s->n_items);
    free(p);
    free(name);
    printf("done:      %" PRIu64 "\n", s->committed);
    printf("set aside: %zu", s->n_aside);
    for (size_t i = 0; i < s->n_aside && i < TEXT_ASIDE_MAX; i++)
        printf("%s%" PRIu64 " (%" PRIu32 " attempts)", i ? ", " : ": ", s->aside[i].id,
               s->aside[i].attempts);
    if (s->n_aside > TEXT_ASIDE_MAX)
        printf(", and %zu more", s->n_aside - TEXT_ASIDE_MAX);
    printf("\nremaining: %" PRIu64 "\n", s->remaining);
    if (s->torn_bytes)
        printf("torn tail: %" PRIu64 " bytes ignored (a write that did not finish)\n",
               s->torn_bytes);
    else
        printf("torn tail: none\n");
    print_pace(s);
}

/* The queue's name as a JSON string: as it is when it is UTF-8 (jansson
 * escapes its controls), else escaped as in the text. */
static json_t *json_name(const char *name)
{
    json_t *j = json_string(name);
    char *e = j ? NULL : escaped(name);
    if (e)
        j = json_string(e);
    free(e);
    return j;
}

static int print_json(const struct journal_summary *s)
{
    json_t *ids = json_array();
    for (size_t i = 0; i < s->n_aside; i++)
        json_array_append_new(ids, json_pack("{s:I, s:I}", "id", (json_int_t)s->aside[i].id,
                                             "attempts", (json_int_t)s->aside[i].attempts));
    struct pace p = pace_of(s);
    json_t *root = json_pack("{s:o, s:I, s:I, s:I, s:o, s:I, s:I}", "queue", json_name(s->name),
                             "n_items", (json_int_t)s->n_items, "committed",
                             (json_int_t)s->committed, "set_aside", (json_int_t)s->n_aside,
                             "set_aside_ids", ids, "remaining", (json_int_t)s->remaining,
                             "torn_tail_bytes", (json_int_t)s->torn_bytes);
    json_object_set_new(root, "items_per_s", p.known ? json_real(p.rate) : json_null());
    json_object_set_new(root, "eta_s", p.eta_s >= 0 ? json_real(p.eta_s) : json_null());
    json_object_set_new(root, "leased", p.known ? json_integer((json_int_t)s->last.leased)
                                                : json_null());
    json_object_set_new(root, "workers", p.known ? json_integer((json_int_t)s->last.workers)
                                                 : json_null());
    json_object_set_new(root, "recorded_s_ago", p.known ? json_real(p.age_s) : json_null());
    int rc = root && json_array_size(ids) == s->n_aside
                 ? json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII)
                 : -1;
    json_decref(root);
    if (rc == 0)
        putchar('\n');
    return rc;
}

static int status(const char *path, int json)
{
    struct journal_summary s;
    struct cohort_err err;
    if (journal_summary(path, &s, &err) < 0) {
        char *line = escaped(err.msg);
        fprintf(stderr, "cohort-work: %s\n", line ? line : err.msg);
        free(line);
        return 1;
    }
    int rc = 0;
    if (json)
        rc = print_json(&s);
    else
        print_text(path, &s);
    journal_summary_free(&s);
    if (rc < 0 || fflush(stdout) != 0) {
        fprintf(stderr, "cohort-work: cannot print the summary\n");
        return 1;
    }
    return 0;
}

/* One line of --watch: done of total, the pace, leased and set aside. */
static void watch_line(const struct journal_summary *s, int tty)
{
    struct pace p = pace_of(s);
    char eta[32] = "unknown", leased[32] = "?";
    if (p.eta_s >= 0)
        snprintf(eta, sizeof eta, "%.0f s", p.eta_s);
    if (p.known) /* once nothing remains no lease counts, whatever the last record said */
        snprintf(leased, sizeof leased, "%" PRIu64, s->remaining ? s->last.leased : 0);
    uint64_t done = s->committed + s->n_aside;
    printf("%s%" PRIu64 " of %" PRIu64 " committed (%.1f%%), %.0f items/s, ETA %s, %s leased, "
           "%zu set aside%s", tty ? "\r" : "", s->committed, s->n_items,
           s->n_items ? 100.0 * (double)done / (double)s->n_items : 100.0, p.rate,
           s->remaining ? eta : "0 s", leased, s->n_aside, tty ? "\033[K" : "\n");
}

/* --watch: the line again every `every` seconds until nothing remains. */
static int watch(const char *path, double every)
{
    int tty = isatty(STDOUT_FILENO);
    for (;;) {
        struct journal_summary s;
        struct cohort_err err;
        if (journal_summary(path, &s, &err) < 0) {
            char *line = escaped(err.msg);
            fprintf(stderr, "%scohort-work: %s\n", tty ? "\n" : "", line ? line : err.msg);
            free(line);
            return 1;
        }
        watch_line(&s, tty);
        uint64_t remaining = s.remaining;
        journal_summary_free(&s);
        if (fflush(stdout) != 0)
            return 1;
        if (remaining == 0) {
            if (tty)
                putchar('\n');
            return 0;
        }
        struct timespec ts = {(time_t)every, (long)((every - (double)(time_t)every) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

int main(int argc, char **argv)
{
    enum { OPT_VERSION = 256 };
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"journal", required_argument, NULL, 'j'},
        {"watch", optional_argument, NULL, 'w'},
        {"version", no_argument, NULL, OPT_VERSION},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    const char *journal = NULL;
    double every = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "f:j:w::h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (strcmp(optarg, "text") != 0 && strcmp(optarg, "json") != 0)
                return bad_usage("format is not one of text, json:", optarg);
            json = strcmp(optarg, "json") == 0;
            break;
        case 'j': journal = optarg; break;
        case 'w': {
            char *end;
            every = optarg ? strtod(optarg, &end) : 2.0;
            if (optarg && (*end || end == optarg || !(every >= 0.1 && every <= 3600)))
                return bad_usage("--watch takes seconds from 0.1 to 3600:", optarg);
            break;
        }
        case OPT_VERSION: puts("cohort-work " PACKAGE_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        default: return bad_usage("unknown option or missing value:", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return bad_usage("a command is needed: status JOURNAL, or output DIR", NULL);
    int out = strcmp(argv[optind], "output") == 0;
    if (!out && strcmp(argv[optind], "status") != 0)
        return bad_usage("unknown command", argv[optind]);
    if (argc - optind != 2)
        return bad_usage(out ? "output takes one DIR" : "status takes one JOURNAL", NULL);
    if (!out && journal)
        return bad_usage("--journal is for output, not status", NULL);
    if (every > 0 && (out || json))
        return bad_usage("--watch is for status in text", NULL);
    if (every > 0)
        return watch(argv[optind + 1], every);
    return out ? work_output(argv[optind + 1], journal, json) : status(argv[optind + 1], json);
}
