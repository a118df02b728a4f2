/* cohort_work_call.c - a worker's calls on an open work queue
 * (cohort_work.h): lease, commit, fail, extend, status, each one request
 * to the coordinator and its answer over the authenticated connection,
 * with a deadline on the coordinator's silence and one line when it is
 * gone (its own reason when it stopped on an error and said so).
 * Opening and closing are in cohort_work.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cohort_internal.h"
#include "cohort_work_private.h"

/* The coordinator is gone (its connection closed): this call and every
 * later one fail with one line naming it. */
static int gone(struct cohort_work *w, const char *func)
{
    char what[WORK_NAME_MAX + 40], who[COHORT_ERR_LEN / 2];
    w->gone = true;
    snprintf(what, sizeof what, "work coordinator of queue '%s'", w->name);
    coord_link_gone(&w->link, what, who, sizeof who);
    return cohort_internal_fail(
        w->c, COHORT_ERR_PEER_LOST, "cohort: %s: %s: %s", func, who,
        w->journal ? "rerun the step with the same journal to resume"
                   : "the queue's progress is lost (open it with a journal to resume a rerun)");
}

/* The coordinator stopped on an error and said why (STOPPED, sent before
 * it exited): this call fails with its sentence, every later one at once. */
static int stopped(struct cohort_work *w, const char *func, struct wire_frame *f)
{
    uint32_t code = f->len >= WORK_STOPPED_HEAD ? wire_get32(f->payload) : 0;
    uint32_t n = f->len > WORK_STOPPED_HEAD ? f->len - WORK_STOPPED_HEAD : 0;
    w->gone = true;
    int rc = cohort_internal_fail(
        w->c, code > 0 && code <= COHORT_E_MAX ? (int)code : COHORT_ERR_PEER_LOST,
        "cohort: %s: the work coordinator of queue '%s' (%s) stopped: %.*s", func, w->name,
        w->link.where, n < COHORT_ERR_LEN ? (int)n : COHORT_ERR_LEN,
        (const char *)f->payload + WORK_STOPPED_HEAD);
    conn_consume(&w->link.conn->c, f);
    return rc;
}

/* Waits for the next frame from the coordinator, at most w->link.timeout_s. */
static int next_frame(struct cohort_work *w, const char *func, struct wire_frame *f)
{
    long long end = base_now_ms() + (long long)w->link.timeout_s * 1000;
    for (;;) {
        struct cohort_err e;
        int got = coord_link_next(&w->link, f, &e);
        if (got > 0 && f->type == WIRE_WORK && f->flags == WORK_STOPPED)
            return stopped(w, func, f);
        if (got > 0 && f->type == WIRE_WORK)
            return 0;
        if (got != 0) {
            w->gone = true;
            return cohort_internal_fail(w->c, COHORT_ERR_AUTH,
                                        "cohort: %s: the connection to the work coordinator of "
                                        "queue '%s' (%s) was tampered with: %s",
                                        func, w->name, w->link.where,
                                        got > 0 ? "a frame of another kind" : e.msg);
        }
        if (coord_link_over(&w->link))
            return gone(w, func);
        long long now = base_now_ms();
        if (now >= end) {
            w->gone = true;
            return cohort_internal_fail(w->c, COHORT_ERR_TIMEOUT,
                                        "cohort: %s: the work coordinator of queue '%s' (%s) "
                                        "did not answer within %d s (stopped, or its node "
                                        "hangs?)",
                                        func, w->name, w->link.where, w->link.timeout_s);
        }
        if (coord_link_wait(&w->link, end, &e) < 0)
            return cohort_internal_fail(w->c, e.code ? e.code : COHORT_ERR_RESOURCE,
                                        "cohort: %s: %s", func, e.msg);
    }
}

int work_call(struct cohort_work *w, const char *func, enum work_op op, const void *p,
              uint32_t len, struct wire_frame *f)
{
    if (w->gone)
        return cohort_internal_fail(w->c, COHORT_ERR_USAGE,
                                    "cohort: %s: queue '%s' failed earlier (see that call's "
                                    "error); close it", func, w->name);
    if (net_send(w->link.conn, WIRE_WORK, (uint16_t)op, w->link.conn->c.rank, p, len) < 0)
        return cohort_internal_fail(w->c, COHORT_ERR_RESOURCE, "cohort: %s: out of memory", func);
    for (;;) {
        if (next_frame(w, func, f) < 0)
            return -1;
        if (f->flags != WORK_WAIT || (op != WORK_CLOSE && op != WORK_LEASE))
            return 0;
        conn_consume(&w->link.conn->c, f); /* alive: a close waits on */
        if (op == WORK_LEASE) /* a lease asks again */
            return 0;
    }
}

int work_refused(struct cohort_work *w, const char *func, const struct wire_frame *f)
{
    int n = f->len < COHORT_ERR_LEN - 1 ? (int)f->len : COHORT_ERR_LEN - 1;
    int rc = cohort_internal_fail(w->c, COHORT_ERR_USAGE, "cohort: %s: queue '%s': %.*s", func,
                                  w->name, n, (const char *)f->payload);
    conn_consume(&w->link.conn->c, f);
    return rc;
}

/* The answer had an unexpected operation: the coordinator is not one of
 * this version. */
static int odd(struct cohort_work *w, const char *func, struct wire_frame *f)
{
    unsigned op = f->flags;
    conn_consume(&w->link.conn->c, f);
    w->gone = true;
    return cohort_internal_fail(w->c, COHORT_ERR_NETWORK,
                                "cohort: %s: the work coordinator of queue '%s' answered with "
                                "operation %u (another cohort version?)",
                                func, w->name, op);
}

/* A grant's ids into ids (at most cap). Returns their count or -1. */
static long granted(struct cohort_work *w, struct wire_frame *f, uint64_t *ids, size_t cap)
{
    struct cohort_err e;
    uint64_t n;
    if (work_spans_check(f->payload, f->len, w->n_items, &n, &e) < 0 || n == 0 || n > cap) {
        conn_consume(&w->link.conn->c, f);
        w->gone = true;
        return cohort_internal_fail(w->c, COHORT_ERR_NETWORK,
                                    "cohort: cohort_work_lease: queue '%s': the coordinator "
                                    "granted %s",
                                    w->name, n > cap ? "more ids than asked for" : e.msg);
    }
    work_spans_ids(f->payload, f->len, ids);
    conn_consume(&w->link.conn->c, f);
    return (long)n;
}

long cohort_work_lease(struct cohort_work *w, uint64_t *ids, size_t cap)
{
    static const char func[] = "cohort_work_lease";
    if (!w || !ids || cap == 0)
        return w ? cohort_internal_fail(w->c, COHORT_ERR_USAGE,
                                        "cohort: %s: ids is NULL or cap is 0", func)
                 : -1;
    uint8_t b[8];
    wire_put64(b, cap > WORK_LEASE_MAX ? WORK_LEASE_MAX : cap);
    if (w->draining)
        return 0; /* leases nothing more: the loop ends, the close drains */
    for (;;) {
        struct wire_frame f;
        if (work_call(w, func, WORK_LEASE, b, sizeof b, &f) < 0)
            return -1;
        switch (f.flags) {
        case WORK_WAIT:
            if (w->draining)
                return 0; /* drained while waiting for items */
            continue; /* consumed: nothing yet, ask again */
        case WORK_GRANT:
            return granted(w, &f, ids, cap);
        case WORK_FINISHED:
            conn_consume(&w->link.conn->c, &f);
            return 0;
        case WORK_ERROR:
            return work_refused(w, func, &f);
        default:
            return odd(w, func, &f);
        }
    }
}

/* A verdict's stale ids (spans, count of them) into w->stale. 0, or -1
 * when they do not add up or memory is short. */
static int stale_ids(struct cohort_work *w, const uint8_t *p, uint32_t len, uint64_t count)
{
    struct cohort_err e;
    uint64_t n;
    w->n_stale = 0;
    if (work_spans_check(p, len, w->n_items, &n, &e) < 0 || n != count || n > WORK_LEASE_MAX)
        return -1;
    if (n > w->stale_cap) {
        uint64_t *s = realloc(w->stale, sizeof *s * (size_t)n);
        if (!s)
            return -1;
        w->stale = s;
        w->stale_cap = (size_t)n;
    }
    work_spans_ids(p, len, w->stale);
    w->n_stale = (size_t)n;
    return 0;
}

int work_verdict(struct cohort_work *w, const char *func, struct wire_frame *f)
{
    if (f->flags == WORK_ERROR)
        return work_refused(w, func, f);
    if (f->flags != WORK_VERDICT || f->len < WORK_VERDICT_LEN)
        return odd(w, func, f);
    struct work_verdict v;
    work_verdict_get(f->payload, &v);
    uint32_t m = f->len >= WORK_VERDICT_LEN + 4 ? wire_get32(f->payload + WORK_VERDICT_LEN) : 0;
    if (f->len < WORK_VERDICT_LEN + 4 || m > f->len - WORK_VERDICT_LEN - 4 ||
        stale_ids(w, f->payload + WORK_VERDICT_LEN + 4 + m,
                  f->len - WORK_VERDICT_LEN - 4 - m, v.stale) < 0)
        return odd(w, func, f);
    if (v.bad) {
        int k = m < COHORT_ERR_LEN - 1 ? (int)m : COHORT_ERR_LEN - 1;
        cohort_internal_fail(w->c, COHORT_ERR_USAGE,
                             "cohort: %s: queue '%s': %llu of the ids are not held by this "
                             "worker (first: %llu): %.*s",
                             func, w->name, (unsigned long long)v.bad,
                             (unsigned long long)v.first_bad, k,
                             (const char *)f->payload + WORK_VERDICT_LEN + 4);
    }
    conn_consume(&w->link.conn->c, f);
    return v.bad ? -1 : v.stale ? COHORT_WORK_STALE : 0;
}

int work_ids_check(struct cohort_work *w, const char *func, const uint64_t *ids, size_t n)
{
    if ((!ids && n) || n > WORK_LEASE_MAX)
        return cohort_internal_fail(w->c, COHORT_ERR_USAGE,
                                    "cohort: %s: %s (at most %u ids per call)", func,
                                    ids ? "too many ids" : "ids is NULL", WORK_LEASE_MAX);
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= w->n_items)
            return cohort_internal_fail(w->c, COHORT_ERR_USAGE,
                                        "cohort: %s: id %llu is not an id of queue '%s' "
                                        "(0..%llu)",
                                        func, (unsigned long long)ids[i], w->name,
                                        (unsigned long long)w->n_items - 1);
    w->n_stale = 0;
    return 0;
}

/* COMMIT or FAIL of ids: 0, COHORT_WORK_STALE or -1. */
static int settle(struct cohort_work *w, const char *func, enum work_op op, const uint64_t *ids,
                  size_t n)
{
    if (!w || work_ids_check(w, func, ids, n) < 0)
        return -1;
    if (n == 0)
        return 0;
    size_t spans = work_span_count(ids, n);
    work_spans_put(ids, n, w->spans);
    struct wire_frame f;
    if (work_call(w, func, op, w->spans, (uint32_t)(spans * WORK_SPAN_LEN), &f) < 0)
        return -1;
    return work_verdict(w, func, &f);
}

int cohort_work_drain(struct cohort_work *w)
{
    if (!w)
        return -1;
    w->draining = 1;
    return 0;
}

const uint64_t *cohort_work_stale_ids(const struct cohort_work *w, size_t *n)
{
    *n = w ? w->n_stale : 0;
    return w && w->n_stale ? w->stale : NULL;
}

int cohort_work_commit(struct cohort_work *w, const uint64_t *ids, size_t n)
{
    return settle(w, "cohort_work_commit", WORK_COMMIT, ids, n);
}

int cohort_work_fail(struct cohort_work *w, const uint64_t *ids, size_t n)
{
    return settle(w, "cohort_work_fail", WORK_FAIL, ids, n);
}

int cohort_work_extend(struct cohort_work *w)
{
    static const char func[] = "cohort_work_extend";
    struct wire_frame f;
    if (!w || work_call(w, func, WORK_EXTEND, NULL, 0, &f) < 0)
        return -1;
    if (f.flags == WORK_ERROR)
        return work_refused(w, func, &f);
    if (f.flags != WORK_OK)
        return odd(w, func, &f);
    conn_consume(&w->link.conn->c, &f);
    return 0;
}

int cohort_work_status(struct cohort_work *w, struct cohort_work_status *st)
{
    static const char func[] = "cohort_work_status";
    struct wire_frame f;
    if (!w || !st)
        return w ? cohort_internal_fail(w->c, COHORT_ERR_USAGE, "cohort: %s: st is NULL", func)
                 : -1;
    if (work_call(w, func, WORK_STATUS, NULL, 0, &f) < 0)
        return -1;
    if (f.flags != WORK_TOTALS || f.len != WORK_TOTALS_LEN)
        return odd(w, func, &f);
    struct work_totals t;
    work_totals_get(f.payload, &t);
    conn_consume(&w->link.conn->c, &f);
    *st = (struct cohort_work_status){t.total, t.committed, t.leased, t.queued, t.set_aside};
    return 0;
}
