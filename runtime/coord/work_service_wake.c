/* work_service_wake.c - the work coordinator's held requests
 * (work_service_private.h). It answers leases or, with nothing to hand out
 * yet, holds them, and it holds closes that come before the queue is done.
 * After a change (or at the moment the scheduler said a copy may become
 * worthwhile) the held leases are tried again oldest first from a ring,
 * stopping once RETRY_WAITS in a row still find nothing: at 131,072
 * ranks, trying every held lease after every commit would cost the
 * coordinator far more than the commit. Once the queue is done, every held
 * lease and close is answered. A sweep over all ranks each SWEEP_MS
 * answers those held for the keepalive, and the closes of a queue nobody
 * will finish. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "work_service_private.h"
#include "work_sched.h"
#include "work_msg.h"

#define SWEEP_MS 1000 /* the keepalive sweeps every rank this often */
#define RETRY_WAITS 4 /* this many held leases tried in a row without result end a retry */

int work_service_wake_new(struct work_service *co)
{
    co->ring = malloc(sizeof *co->ring * co->cfg->size);
    co->closes = malloc(sizeof *co->closes * co->cfg->size);
    co->retry_at = INT64_MAX;
    return co->ring && co->closes ? 0 : -1;
}

void work_service_wake_free(struct work_service *co)
{
    free(co->ring);
    free(co->closes);
}

void work_service_lease(struct work_service *co, uint32_t rank, int64_t now)
{
    struct worker *w = &co->w[rank];
    struct sched_grant g;
    struct cohort_err e;
    size_t cap = w->cap < WORK_SERVICE_LEASE_MAX ? (size_t)w->cap : WORK_SERVICE_LEASE_MAX;
    int rc = sched_lease(co->s, rank, now, co->ids, cap, &g, &e);
    w->held = rc == SCHED_WAIT;
    if (rc == SCHED_OK) {
        size_t n = work_span_count(co->ids, g.n);
        work_spans_put(co->ids, g.n, co->spans);
        work_service_send(co, rank, WORK_GRANT, co->spans, (uint32_t)(n * WORK_SPAN_LEN));
        co->granted += g.n;
    } else if (rc == SCHED_FINISHED) {
        work_service_send(co, rank, WORK_FINISHED, NULL, 0);
    } else if (rc == SCHED_WAIT) {
        w->held_since = w->held_since ? w->held_since : now;
        work_service_hold(co, rank, false);
        /* A copy may become worthwhile then; work_service_wake wakes the loop
         * by then. */
        if (g.wait_until < co->retry_at)
            co->retry_at = g.wait_until;
    } else {
        work_service_send(co, rank, WORK_ERROR, e.msg, (uint32_t)strlen(e.msg));
    }
    if (!w->held)
        w->held_since = 0;
}

void work_service_hold(struct work_service *co, uint32_t rank, bool close)
{
    struct worker *w = &co->w[rank];
    if (close && !w->in_closes) {
        co->closes[co->n_closes++] = rank;
        w->in_closes = true;
    } else if (!close && !w->in_ring) {
        co->ring[(co->ring_head + co->ring_len++) % co->cfg->size] = rank;
        w->in_ring = true;
    }
}

/* Tries the held leases again, oldest first: all of them once the queue
 * is done (each is told so), else until RETRY_WAITS in a row find
 * nothing. One still held goes to the ring's end. */
static void retry_held(struct work_service *co, bool done, int64_t now)
{
    size_t n = co->ring_len, waits = 0;
    for (size_t i = 0; i < n && (done || waits < RETRY_WAITS); i++) {
        uint32_t r = co->ring[co->ring_head];
        struct worker *w = &co->w[r];
        co->ring_head = (co->ring_head + 1) % co->cfg->size;
        co->ring_len--;
        w->in_ring = false;
        if (!w->on || !w->held)
            continue;
        work_service_lease(co, r, now); /* If held again, it goes back into the ring. */
        waits = w->held ? waits + 1 : 0;
    }
}

/* Answers every close waiting, once the queue is done. */
static void answer_closes(struct work_service *co)
{
    for (size_t i = 0; i < co->n_closes; i++) {
        struct worker *w = &co->w[co->closes[i]];
        w->in_closes = false;
        if (w->on && w->closing && !w->closed_ok) {
            work_service_totals(co, co->closes[i], WORK_CLOSED);
            w->closed_ok = true;
        }
    }
    co->n_closes = 0;
}

/* Returns whether a queue with items left (st: the caller saw it not
 * finished) is stranded: none is leased, and every worker ever to come is
 * closing or gone, so nobody will do them. */
static bool stranded(const struct work_service *co, const struct sched_status *st)
{
    if (co->came < co->cfg->size || st->leased)
        return false;
    for (uint32_t r = 0; r < co->cfg->size; r++)
        if (co->w[r].on && !co->w[r].closing)
            return false;
    return true;
}

/* Tells every closing worker of a stranded queue why its close fails, and
 * why the last commit with results was refused, if one was (its ids went
 * back to the queue). */
static void refuse_closes(struct work_service *co, const struct sched_status *st)
{
    char msg[320 + sizeof co->refused];
    int len = snprintf(msg, sizeof msg,
                       "every worker left in queue '%s' closed it with %llu of %llu items not "
                       "done and none leased: nobody will do them (rerun the step with the "
                       "same journal to resume)%s%s",
                       co->cfg->name,
                       (unsigned long long)(st->total - st->committed - st->set_aside),
                       (unsigned long long)st->total,
                       co->refused[0] ? "; a commit with results was refused: " : "",
                       co->refused);
    len = len < (int)sizeof msg ? len : (int)sizeof msg - 1;
    for (uint32_t r = 0; r < co->cfg->size; r++)
        if (co->w[r].on && co->w[r].closing && !co->w[r].closed_ok) {
            work_service_send(co, r, WORK_ERROR, msg, (uint32_t)len);
            co->w[r].closed_ok = true;
        }
}

/* Sweeps for the keepalive: a lease or close held for about
 * WORK_SERVICE_KEEPALIVE_MS (one sweep early rather than late) is answered
 * WAIT, and a lease is tried once more first. The client then asks again. */
static void sweep(struct work_service *co, int64_t now)
{
    int64_t due = now - (WORK_SERVICE_KEEPALIVE_MS - SWEEP_MS);
    for (uint32_t r = 0; r < co->cfg->size; r++) {
        struct worker *w = &co->w[r];
        if (!w->on || !w->held_since || w->held_since > due)
            continue;
        if (w->held) {
            work_service_lease(co, r, now);
            if (w->held) {
                work_service_send(co, r, WORK_WAIT, NULL, 0);
                w->held = false;
                w->held_since = 0;
            }
        } else if (w->closing && !w->closed_ok) {
            work_service_send(co, r, WORK_WAIT, NULL, 0);
            w->held_since = now;
        }
    }
}

void work_service_wake(struct work_service *co, int64_t now)
{
    bool done = work_service_finished(co);
    co->next_wake = now + WORK_SERVICE_KEEPALIVE_MS;
    if (!done && (co->changed || now >= co->next_sweep)) {
        struct sched_status st;
        sched_status(co->s, &st);
        if (stranded(co, &st))
            refuse_closes(co, &st);
    }
    if (co->changed || done || now >= co->retry_at) {
        co->retry_at = INT64_MAX; /* The held ones still waiting set it again. */
        retry_held(co, done, now);
    }
    if (done)
        answer_closes(co);
    if (now >= co->next_sweep) {
        sweep(co, now);
        co->next_sweep = now + SWEEP_MS;
    }
    if (co->next_sweep < co->next_wake)
        co->next_wake = co->next_sweep;
    if (co->retry_at < co->next_wake)
        co->next_wake = co->retry_at;
    co->changed = false;
}
