/* cohort_work.c - opening and closing a work queue (cohort_work.h): every
 * rank's arguments compared through one allgather (so that a bad one
 * fails every rank with the same line), then the coordinator and every
 * rank's connection to it (cohort_coord.h). The calls in between are in
 * cohort_work_call.c. */
#include <nettle/sha2.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cohort_coord.h"
#include "cohort_internal.h"
#include "cohort_self.h"
#include "cohort_work_private.h"
#include "coord_config.h"

#define DEFAULT_LEASE_TIMEOUT_S 60
#define DEFAULT_MAX_ATTEMPTS 3
#define WHY_MAX 200

/* One rank's arguments, as every rank sees them after the allgather. */
struct args {
    uint8_t bad;
    uint8_t journal[SHA256_DIGEST_SIZE]; /* of the path; zero: none */
    uint8_t output[SHA256_DIGEST_SIZE];  /* likewise */
    uint32_t lease_timeout_s, max_attempts;
    uint64_t n_items;
    char name[WORK_NAME_MAX + 1];
    char why[WHY_MAX]; /* bad: what is wrong */
};
#define ARGS_LEN (1 + 2 * SHA256_DIGEST_SIZE + 4 + 4 + 8 + WORK_NAME_MAX + 1 + WHY_MAX)

static void args_put(const struct args *a, uint8_t *p)
{
    *p++ = a->bad;
    memcpy(p, a->journal, SHA256_DIGEST_SIZE);
    memcpy(p + SHA256_DIGEST_SIZE, a->output, SHA256_DIGEST_SIZE);
    p += 2 * SHA256_DIGEST_SIZE;
    wire_put32(p, a->lease_timeout_s);
    wire_put32(p + 4, a->max_attempts);
    wire_put64(p + 8, a->n_items);
    memcpy(p + 16, a->name, WORK_NAME_MAX + 1);
    memcpy(p + 16 + WORK_NAME_MAX + 1, a->why, WHY_MAX);
}

static void args_get(const uint8_t *p, struct args *a)
{
    a->bad = *p++;
    memcpy(a->journal, p, SHA256_DIGEST_SIZE);
    memcpy(a->output, p + SHA256_DIGEST_SIZE, SHA256_DIGEST_SIZE);
    p += 2 * SHA256_DIGEST_SIZE;
    a->lease_timeout_s = wire_get32(p);
    a->max_attempts = wire_get32(p + 4);
    a->n_items = wire_get64(p + 8);
    memcpy(a->name, p + 16, WORK_NAME_MAX + 1);
    a->name[WORK_NAME_MAX] = 0;
    memcpy(a->why, p + 16 + WORK_NAME_MAX + 1, WHY_MAX);
    a->why[WHY_MAX - 1] = 0;
}

static void digest(const char *s, uint8_t out[SHA256_DIGEST_SIZE])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(s), (const uint8_t *)s);
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

/* This rank's arguments, checked; a->bad with a->why when one is wrong. */
static void args_mine(struct cohort *c, const char *name, uint64_t n_items,
                      const struct cohort_work_opts *opts, struct cohort_work **w,
                      struct args *a, struct cohort_work_opts *o)
{
    memset(a, 0, sizeof *a);
    memset(o, 0, sizeof *o);
    a->n_items = n_items;
    if (cohort_internal_read_opts(c, "cohort_work_open", "cohort_work_opts", opts,
                                  offsetof(struct cohort_work_opts, output), o, sizeof *o) < 0)
        snprintf(a->why, sizeof a->why, "%s", cohort_error(c));
    else if (!w)
        snprintf(a->why, sizeof a->why, "w is NULL");
    else if (!name || !*name || strlen(name) > WORK_NAME_MAX)
        snprintf(a->why, sizeof a->why, "the queue's name must have 1 to %d characters",
                 WORK_NAME_MAX);
    else if (n_items == 0)
        snprintf(a->why, sizeof a->why, "n_items is 0: a queue holds at least one item");
    else if (o->lease_timeout_s < 0 || o->lease_timeout_s > 7 * 86400)
        snprintf(a->why, sizeof a->why, "lease_timeout_s is %d: give 1 to 604800 (0: %d)",
                 o->lease_timeout_s, DEFAULT_LEASE_TIMEOUT_S);
    else if (o->max_attempts < 0 || o->max_attempts > 1000)
        snprintf(a->why, sizeof a->why, "max_attempts is %d: give 1 to 1000 (0: %d)",
                 o->max_attempts, DEFAULT_MAX_ATTEMPTS);
    else if (o->journal && (!*o->journal || strlen(o->journal) > COORD_PATH_MAX))
        snprintf(a->why, sizeof a->why, "the journal's path must have 1 to %d characters",
                 COORD_PATH_MAX);
    else if (o->output && (!*o->output || strlen(o->output) > COORD_PATH_MAX))
        snprintf(a->why, sizeof a->why, "the output directory's path must have 1 to %d "
                 "characters", COORD_PATH_MAX);
    else if (o->output && !o->journal)
        snprintf(a->why, sizeof a->why, "output is set and journal is not: a queue that "
                 "publishes results needs a journal (they are recorded in it); give one");
    a->bad = a->why[0] != 0;
    if (a->bad)
        return;
    snprintf(a->name, sizeof a->name, "%s", name);
    a->lease_timeout_s = (uint32_t)(o->lease_timeout_s ? o->lease_timeout_s
                                                       : DEFAULT_LEASE_TIMEOUT_S);
    a->max_attempts = (uint32_t)(o->max_attempts ? o->max_attempts : DEFAULT_MAX_ATTEMPTS);
    if (o->journal)
        digest(o->journal, a->journal);
    if (o->output)
        digest(o->output, a->output);
}

/* Every rank's arguments through one allgather: 0 when all are good and
 * the same, else -1 with the same line on every rank. */
static int agree(struct cohort *c, const struct args *mine)
{
    int size = cohort_size(c);
    uint8_t in[ARGS_LEN], *all;
    args_put(mine, in);
    if (coord_gather(c, in, ARGS_LEN, &all) < 0)
        return -1;
    struct args first, a;
    args_get(all, &first);
    int rc = 0;
    for (int r = 0; r < size && rc == 0; r++) {
        args_get(all + (size_t)r * ARGS_LEN, &a);
        if (a.bad)
            rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                      "cohort: cohort_work_open failed on rank %d: %s", r, a.why);
        else if (!first.bad && (strcmp(a.name, first.name) || a.n_items != first.n_items))
            rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                      "cohort: cohort_work_open: rank %d opens queue '%s' of "
                                      "%llu items, rank 0 queue '%s' of %llu: every rank must "
                                      "open the same queue with the same n_items",
                                      r, a.name, (unsigned long long)a.n_items, first.name,
                                      (unsigned long long)first.n_items);
        else if (!first.bad && (memcmp(a.journal, first.journal, sizeof a.journal) ||
                                memcmp(a.output, first.output, sizeof a.output) ||
                                a.lease_timeout_s != first.lease_timeout_s ||
                                a.max_attempts != first.max_attempts))
            rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                      "cohort: cohort_work_open: rank %d opens queue '%s' with "
                                      "other options than rank 0 (journal, output, "
                                      "lease_timeout_s or max_attempts): every rank must give the same",
                                      r, a.name);
    }
    free(all);
    return rc;
}

static void work_free(struct cohort_work *w)
{
    if (!w)
        return;
    coord_link_free(&w->link);
    if (w->offers_fd >= 0)
        close(w->offers_fd);
    free(w->output);
    free(w->ids);
    free(w->spans);
    free(w->stale);
    free(w);
}

int cohort_work_open(struct cohort *c, const char *name, uint64_t n_items,
                     const struct cohort_work_opts *opts, struct cohort_work **out)
{
    struct cohort_self self;
    struct args a;
    struct cohort_work_opts o;
    if (out)
        *out = NULL;
    if (!c || cohort_self(c, "cohort_work_open", &self) < 0)
        return -1;
    args_mine(c, name, n_items, opts, out, &a, &o);
    if (agree(c, &a) < 0)
        return -1;
    struct cohort_work *w = calloc(1, sizeof *w);
    if (w)
        w->offers_fd = -1;
    if (!w || !(w->spans = malloc((size_t)WORK_SPAN_LEN * WORK_LEASE_MAX))) {
        work_free(w);
        return cohort_internal_fail(c, COHORT_ERR_RESOURCE, "cohort: out of memory");
    }
    w->c = c;
    if (o.output && !(w->output = strdup(o.output))) {
        work_free(w);
        return cohort_internal_fail(c, COHORT_ERR_RESOURCE, "cohort: out of memory");
    }
    w->n_items = a.n_items;
    w->journal = o.journal != NULL;
    snprintf(w->name, sizeof w->name, "%s", a.name);
    struct coord_config cfg = {.kind = COORD_QUEUE, .n_items = a.n_items,
                               .lease_timeout_s = a.lease_timeout_s,
                               .max_attempts = a.max_attempts};
    snprintf(cfg.name, sizeof cfg.name, "%s", a.name);
    snprintf(cfg.journal, sizeof cfg.journal, "%s", o.journal ? o.journal : "");
    snprintf(cfg.output, sizeof cfg.output, "%s", o.output ? o.output : "");
    char what[WORK_NAME_MAX + 16];
    snprintf(what, sizeof what, "queue '%s'", a.name);
    if (coord_link_open(&w->link, c, "cohort_work_open", what, &cfg) < 0) {
        work_free(w);
        return -1;
    }
    *out = w;
    return 0;
}

int cohort_work_close(struct cohort_work *w)
{
    static const char func[] = "cohort_work_close";
    if (!w)
        return -1;
    if (w->gone) { /* c's error still says why */
        work_free(w);
        return -1;
    }
    struct wire_frame f;
    const uint8_t drain = WORK_CLOSE_DRAIN;
    bool drained = w->draining;
    int rc = work_call(w, func, WORK_CLOSE, drained ? &drain : NULL, drained, &f);
    if (rc == 0 && f.flags == WORK_CLOSED && drained && f.len == WORK_TOTALS_LEN) {
        struct work_totals t;
        work_totals_get(f.payload, &t);
        rc = t.committed + t.set_aside < t.total ? COHORT_WORK_DRAINED : 0;
        conn_consume(&w->link.conn->c, &f);
    } else if (rc == 0 && f.flags == WORK_ERROR)
        rc = work_refused(w, func, &f);
    else if (rc == 0 && f.flags != WORK_CLOSED)
        rc = cohort_internal_fail(w->c, COHORT_ERR_NETWORK,
                                  "cohort: %s: the work coordinator of queue '%s' answered with "
                                  "operation %u (another cohort version?)",
                                  func, w->name, (unsigned)f.flags);
    work_free(w);
    return rc;
}
