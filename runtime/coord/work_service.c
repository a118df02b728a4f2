/* work_service.c - the work coordinator's service (work_service.h). It takes
 * the workers' requests in, sends the scheduler's answers out, and commits
 * in groups. Held leases and closes are in work_service_wake.c, the report
 * lines in work_service_report.c. */
#include "work_service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "work_service_private.h"
#include "work_sched.h"
#include "wire.h"
#include "work_msg.h"

/* The peers' callbacks (peers.h) are defined at the bottom. */
static void on_joined(void *ctx, uint32_t rank);
static int on_frame(void *ctx, uint32_t rank, const struct wire_frame *f);
static void on_lost(void *ctx, uint32_t rank);

/* Makes the work service (coord_service.h's new): it creates the scheduler,
 * replays the journal and opens the output directory. Returns 0, or -1 with
 * err. */
static int service_new(const struct coord_config *cfg, void **out, struct cohort_err *err)
{
    struct work_service *co = calloc(1, sizeof *co);
    *out = co;
    if (!co || !(co->w = calloc(cfg->size, sizeof *co->w)) ||
        !(co->ids = malloc(sizeof *co->ids * WORK_SERVICE_LEASE_MAX)) ||
        !(co->spans = malloc((size_t)WORK_SPAN_LEN * WORK_SERVICE_LEASE_MAX)) ||
        !(co->verdicts = malloc(WORK_SERVICE_LEASE_MAX)) ||
        !(co->stale = malloc(sizeof *co->stale * WORK_SERVICE_LEASE_MAX)))
        return cohort_fail(err, "out of memory");
    co->cfg = cfg;
    co->ops = (struct peers_ops){.ctx = co, .joined = on_joined, .frame = on_frame,
                                 .lost = on_lost};
    if (peers_new(cfg, &co->ops, &co->peers, err) < 0)
        return -1;
    if (work_service_wake_new(co) < 0)
        return cohort_fail(err, "out of memory");
    struct sched_opts so = {.lease_timeout_ms = (int64_t)cfg->lease_timeout_s * 1000,
                            .max_attempts = cfg->max_attempts};
    if (sched_create(cfg->n_items, cfg->size, &so, &co->s, err) < 0)
        return -1;
    co->start_ms = base_now_ms();
    co->join_by = co->start_ms +
                  (int64_t)(coord_relay_levels(cfg) + 1) * cfg->join_timeout_s * 1000;
    co->out_fd = co->lock_fd = co->offers_fd = -1;
    if (gethostname(co->host, sizeof co->host - 1) < 0)
        strcpy(co->host, "?");
    if (work_service_journal_open(co, err) < 0)
        return -1;
    return work_service_output_open(co, err);
}

/* Frees the work service (coord_service.h's free); svc may be NULL. */
static void service_free(void *svc)
{
    struct work_service *co = svc;
    if (!co)
        return;
    work_service_journal_close(co);
    work_service_output_close(co);
    sched_destroy(co->s);
    free(co->ids);
    free(co->spans);
    free(co->verdicts);
    free(co->stale);
    work_service_wake_free(co);
    peers_free(co->peers);
    for (uint32_t r = 0; co->w && r < co->cfg->size; r++)
        free(co->w[r].due);
    free(co->w);
    free(co);
}

/* Runs the work service on net from now on (coord_service.h's run).
 * Returns work_service_run's result. */
static int service_run(void *svc, struct net *net, struct cohort_err *err)
{
    struct work_service *co = svc;
    co->net = net;
    peers_attach(co->peers, net);
    return work_service_run(co, err);
}

/* Admits each relay of the tree's top (coord_service.h's admit). */
static enum net_admit service_admit(void *svc, const struct hs_hello *h, bool via_unix,
                                    struct cohort_err *why)
{
    struct work_service *co = svc;
    return peers_admit(co->peers, h, via_unix, why);
}

const struct coord_service_ops work_service_ops = {
    .name = "queue", .who = "the work coordinator", .conns = "node relays, one connection each",
    .new = service_new, .admit = service_admit, .run = service_run,
    .free = service_free};

/* Builds a commit or failure's answer (work_msg.h) for the scheduler's
 * result rc and v over co->ids[0..n-1] (with co->verdicts). The answer holds
 * the verdict (taken is 0 when an all-or-nothing commit was not taken), the
 * sentence for ids this worker does not hold (e's, for SCHED_EINVAL), and the
 * ids of the call it no longer held, as spans. Returns 0 with the answer
 * malloc'd into *out, or -1 (co->oom set) when out of memory. */
static int verdict(struct work_service *co, int rc, const struct sched_verdict *v,
                   const struct cohort_err *e, size_t n, bool all, uint8_t **out, uint32_t *len)
{
    struct work_verdict wv = {all && rc != SCHED_OK ? 0 : v->taken, v->stale, v->bad,
                              v->first_stale, v->first_bad};
    const char *bad = rc == SCHED_EINVAL ? e->msg : NULL;
    size_t k = 0;
    for (size_t i = 0; i < n && v->stale; i++)
        if (co->verdicts[i] == SCHED_V_STALE)
            co->stale[k++] = co->ids[i];
    size_t m = bad ? strlen(bad) : 0, spans = work_span_count(co->stale, k);
    uint8_t *b = malloc(WORK_VERDICT_LEN + 4 + m + spans * WORK_SPAN_LEN);
    if (!b) {
        co->oom = true;
        return -1;
    }
    work_verdict_put(&wv, b);
    wire_put32(b + WORK_VERDICT_LEN, (uint32_t)m);
    memcpy(b + WORK_VERDICT_LEN + 4, bad ? bad : "", m);
    work_spans_put(co->stale, k, b + WORK_VERDICT_LEN + 4 + m);
    *out = b;
    *len = (uint32_t)(WORK_VERDICT_LEN + 4 + m + spans * WORK_SPAN_LEN);
    return 0;
}

/* Holds a commit's answer until the round's journal sync. A worker sends
 * one request at a time, so none is held before. */
static void hold(struct work_service *co, uint32_t rank, uint8_t *answer, uint32_t len)
{
    free(co->w[rank].due);
    co->w[rank].due = answer;
    co->w[rank].due_len = len;
}

/* Handles COMMIT and FAIL. The ids are checked here and by the scheduler; a
 * commit's taken ids go to the journal, and its answer waits for the sync. */
static void settle(struct work_service *co, uint32_t rank, enum work_op op,
                   const struct wire_frame *f, int64_t now)
{
    struct cohort_err e;
    uint64_t n;
    if (work_spans_check(f->payload, f->len, co->cfg->n_items, &n, &e) < 0 ||
        n > WORK_SERVICE_LEASE_MAX) {
        if (n > WORK_SERVICE_LEASE_MAX)
            snprintf(e.msg, sizeof e.msg, "%llu ids in one call, above %u",
                     (unsigned long long)n, WORK_SERVICE_LEASE_MAX);
        work_service_send(co, rank, WORK_ERROR, e.msg, (uint32_t)strlen(e.msg));
        return;
    }
    work_spans_ids(f->payload, f->len, co->ids);
    struct sched_verdict v;
    int rc = op == WORK_COMMIT
                 ? sched_commit(co->s, rank, now, co->ids, (size_t)n, &v, co->verdicts, &e)
                 : sched_fail(co->s, rank, now, co->ids, (size_t)n, &v, co->verdicts, &e);
    if (rc == SCHED_ENOMEM) {
        co->oom = true;
        return;
    }
    co->changed = true;
    uint8_t *answer;
    uint32_t len;
    if (verdict(co, rc, &v, &e, (size_t)n, false, &answer, &len) < 0)
        return;
    if (op == WORK_COMMIT && co->journal && v.taken) {
        if (work_service_journal_add(co, (size_t)n) < 0)
            free(answer);
        else
            hold(co, rank, answer, len); /* It is answered after the sync. */
        return;
    }
    work_service_send(co, rank, WORK_VERDICT, answer, len);
    free(answer);
}

/* Reads the ids of a COMMIT_OUTPUT (after its head) into co->ids, *n of
 * them, and checks that they ascend with none twice. Returns 0, or -1 with
 * the sentence for the worker. */
static int output_ids(struct work_service *co, const struct wire_frame *f, uint64_t *n,
                      struct cohort_err *e)
{
    const uint8_t *p = f->payload + WORK_OUTPUT_HEAD;
    uint32_t len = f->len - WORK_OUTPUT_HEAD;
    if (work_spans_check(p, len, co->cfg->n_items, n, e) < 0)
        return -1;
    if (*n == 0 || *n > WORK_SERVICE_LEASE_MAX)
        return cohort_fail(e, "%llu ids in one call (1 to %u)", (unsigned long long)*n,
                           WORK_SERVICE_LEASE_MAX);
    work_spans_ids(p, len, co->ids);
    for (uint64_t i = 1; i < *n; i++)
        if (co->ids[i] <= co->ids[i - 1])
            return cohort_fail(e, "the ids of a commit with results are not ascending");
    return 0;
}

/* Handles a commit with results that was refused (for its offer, or for ids
 * this worker does not hold). The ids of co->ids[0..n-1] that the worker
 * still holds go back to the queue, each with an attempt more, as at their
 * lease's end, since the worker will not commit them: its call failed. So
 * the others take them, or the closes of a queue nobody is left to finish
 * fail at once; why is kept for that line. */
static void give_back(struct work_service *co, uint32_t rank, size_t n, const char *why,
                      int64_t now)
{
    struct cohort_err e;
    if (sched_fail(co->s, rank, now, co->ids, n, NULL, NULL, &e) == SCHED_ENOMEM)
        co->oom = true;
    co->changed = true;
    snprintf(co->refused, sizeof co->refused, "%s", why);
}

/* Handles COMMIT_OUTPUT, all or nothing. The offered file is checked, then
 * every id must be this worker's; the commit and its part go to the journal,
 * and after the sync the part is linked and the answer sent. An offer that
 * loses is removed; one that cannot be checked stays the worker's. A
 * refusal (not a stale id) gives back the ids the worker holds. */
static void settle_output(struct work_service *co, uint32_t rank, const struct wire_frame *f,
                          int64_t now)
{
    struct cohort_err e;
    uint64_t n = 0;
    if (f->len <= WORK_OUTPUT_HEAD || output_ids(co, f, &n, &e) < 0) {
        if (f->len <= WORK_OUTPUT_HEAD)
            snprintf(e.msg, sizeof e.msg, "a commit with results without ids");
        work_service_send(co, rank, WORK_ERROR, e.msg, (uint32_t)strlen(e.msg));
        return;
    }
    if (work_service_output_offer(co, f->payload, wire_get64(f->payload + 16), (size_t)n, e.msg,
                                  sizeof e.msg) < 0) {
        give_back(co, rank, (size_t)n, e.msg, now);
        work_service_send(co, rank, WORK_ERROR, e.msg, (uint32_t)strlen(e.msg));
        return;
    }
    struct sched_verdict v = {0};
    int rc = sched_commit_all(co->s, rank, now, co->ids, (size_t)n, &v, co->verdicts, &e);
    if (rc == SCHED_ENOMEM) {
        co->oom = true;
        return;
    }
    if (rc != SCHED_OK)
        work_service_output_discard(co, f->payload);
    if (rc == SCHED_EINVAL && v.bad == 0) { /* It was refused whole (e.g. a worker lost). */
        work_service_send(co, rank, WORK_ERROR, e.msg, (uint32_t)strlen(e.msg));
        return;
    }
    uint8_t *answer;
    uint32_t len;
    if (verdict(co, rc, &v, &e, (size_t)n, true, &answer, &len) < 0)
        return;
    if (rc == SCHED_EINVAL)
        give_back(co, rank, (size_t)n, e.msg, now);
    if (rc != SCHED_OK) {
        work_service_send(co, rank, WORK_VERDICT, answer, len);
        free(answer);
        return;
    }
    co->changed = true;
    if (work_service_journal_publish(co, co->next_part, wire_get64(f->payload + 16),
                                     wire_get32(f->payload + 24), f->payload, (size_t)n) < 0 ||
        work_service_output_offered(co, co->next_part++, f->payload) < 0) {
        co->oom |= !co->journal_failed;
        free(answer);
        return;
    }
    hold(co, rank, answer, len); /* It is answered after the sync and the link. */
}

/* Answers a drained worker's close at once with the totals; the items left
 * stay queued, in the journal for the next step. Anything the worker still
 * holds goes back. */
static void drained(struct work_service *co, uint32_t rank, int64_t now)
{
    struct cohort_err e;
    if (sched_worker_lost(co->s, rank, now, &e) == SCHED_ENOMEM)
        co->oom = true;
    co->changed = true;
    co->drained++;
    work_service_totals(co, rank, WORK_CLOSED);
    co->w[rank].closed_ok = true;
}

/* Handles one request of a worker. */
static void request(struct work_service *co, uint32_t rank, const struct wire_frame *f, int64_t now)
{
    struct worker *w = &co->w[rank];
    struct cohort_err e;
    switch (f->flags) {
    case WORK_LEASE:
        w->cap = f->len == 8 ? wire_get64(f->payload) : 0;
        work_service_lease(co, rank, now);
        break;
    case WORK_COMMIT:
    case WORK_FAIL:
        settle(co, rank, (enum work_op)f->flags, f, now);
        break;
    case WORK_COMMIT_OUTPUT:
        settle_output(co, rank, f, now);
        break;
    case WORK_EXTEND:
        if (sched_extend(co->s, rank, now, &e) < 0)
            work_service_send(co, rank, WORK_ERROR, e.msg, (uint32_t)strlen(e.msg));
        else
            work_service_send(co, rank, WORK_OK, NULL, 0);
        break;
    case WORK_STATUS:
        work_service_totals(co, rank, WORK_TOTALS);
        break;
    case WORK_CLOSE:
        w->closing = true;
        w->held_since = now;
        co->changed = true; /* A queue nobody will finish is told at once. */
        if (f->len == 1 && f->payload[0] == WORK_CLOSE_DRAIN)
            drained(co, rank, now);
        else
            work_service_hold(co, rank, true);
        break;
    default:
        work_service_send(co, rank, WORK_ERROR, "an unknown request", 18);
    }
}

/* Handles a frame of a worker (peers.h's frame). Returns 0: an unknown
 * request is answered, never dropped. */
static int on_frame(void *ctx, uint32_t rank, const struct wire_frame *f)
{
    struct work_service *co = ctx;
    request(co, rank, f, co->now);
    return 0;
}

/* Takes rank's worker off (peers.h's lost); unless it closed properly,
 * what it held goes back to the scheduler. */
static void on_lost(void *ctx, uint32_t rank)
{
    struct work_service *co = ctx;
    struct worker *w = &co->w[rank];
    int64_t now = co->now;
    if (!w->on)
        return;
    w->on = false;
    w->held = false;
    co->connected--;
    if (!w->closed_ok) {
        struct cohort_err e;
        if (sched_worker_lost(co->s, rank, now, &e) == SCHED_ENOMEM)
            co->oom = true;
        co->changed = true;
        co->lost_workers++;
    }
}

/* Takes rank's worker on (peers.h's joined), telling the scheduler when
 * it comes back. */
static void on_joined(void *ctx, uint32_t rank)
{
    struct work_service *co = ctx;
    struct worker *w = &co->w[rank];
    struct cohort_err e;
    if (w->ever && !w->on)
        sched_worker_join(co->s, rank, &e);
    co->came += !w->ever;
    w->on = true;
    w->ever = true;
    w->closed_ok = false;
    /* A new process is in the slot: it keeps nothing of the old one's. */
    w->closing = w->held = false;
    w->held_since = 0;
    co->connected++;
}
