/* work_service_loop.c - the work coordinator's event loop (work_service_run in
 * work_service.h). Each round takes in the events, the scheduler's
 * deadlines, the group commit and the held answers, and decides whether
 * it is time to stop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "work_service_private.h"

/* Syncs the offers' names and the journal, links the parts the journal
 * recorded under their names, then sends every commit answer held. Returns
 * 0, or -1 with err. */
static int answer_due(struct work_service *co, struct cohort_err *err)
{
    if (work_service_output_durable(co, err) < 0 || work_service_journal_sync(co, err) < 0 ||
        work_service_output_publish(co, err) < 0)
        return -1;
    for (uint32_t r = 0; r < co->cfg->size; r++) {
        struct worker *w = &co->w[r];
        if (!w->due)
            continue;
        work_service_send(co, r, WORK_VERDICT, w->due, w->due_len);
        free(w->due);
        w->due = NULL;
    }
    return 0;
}

/* Returns 0 to go on, 1 when every item is done and every worker has gone,
 * or 2 when work is left but no worker is left to do it. Workers that have
 * not come yet are waited for until the join deadline, even once every item
 * is done, so that a late one is told the queue is finished, not refused. */
static int should_stop(const struct work_service *co, int64_t now)
{
    if (co->connected || (co->came < co->cfg->size && now < co->join_by))
        return 0;
    return work_service_finished(co) ? 1 : 2;
}

/* Returns how long the next poll may wait (ms). */
static int wait_ms(struct work_service *co, int64_t now)
{
    struct cohort_err e;
    int64_t next = co->next_wake;
    int64_t sched_next;
    if (sched_tick(co->s, now, &sched_next, &e) == 0 && sched_next < next)
        next = sched_next;
    if (co->cfg->verbose && co->next_progress < next)
        next = co->next_progress;
    if (co->came < co->cfg->size && co->join_by < next)
        next = co->join_by;
    int64_t ms = next - now;
    return ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms;
}

/* Runs rounds until should_stop says to stop. Returns its answer, or -1
 * with err. */
static int serve(struct work_service *co, struct cohort_err *err)
{
    int64_t now = base_now_ms();
    co->next_wake = now + WORK_SERVICE_KEEPALIVE_MS;
    co->next_progress = now + WORK_SERVICE_PROGRESS_MS;
    int stop;
    while (!(stop = should_stop(co, now = base_now_ms()))) {
        struct net_event *ev;
        int n = net_poll(co->net, wait_ms(co, now), &ev, err);
        if (n < 0)
            return -1;
        now = base_now_ms();
        co->now = now;
        peers_events(co->peers, ev, n);
        struct sched_status before, after;
        sched_status(co->s, &before);
        int64_t next;
        if (sched_tick(co->s, now, &next, err) == SCHED_ENOMEM)
            co->oom = true;
        sched_status(co->s, &after);
        co->changed |= after.queued != before.queued;
        /* The first change is recorded at once. */
        if (now >= co->next_record && work_service_journal_progress(co))
            co->next_record = now + WORK_SERVICE_RECORD_MS;
        if (answer_due(co, err) < 0)
            return -1;
        work_service_wake(co, now);
        if (co->oom)
            return cohort_fail(err, "out of memory");
        if (co->cfg->verbose && now >= co->next_progress) {
            work_service_progress(co, now);
            co->next_progress = now + WORK_SERVICE_PROGRESS_MS;
        }
    }
    return stop;
}

int work_service_run(struct work_service *co, struct cohort_err *err)
{
    int stop = serve(co, err);
    /* Every worker still here is told why, not only that the coordinator is gone. */
    if (stop < 0)
        work_service_stopped(co, err);
    net_flush(co->net, base_now_ms() + 1000);
    if (stop < 0 || work_service_journal_end(co, err) < 0)
        return -1;
    work_service_report(co);
    return stop == 1 ? 0 : 1;
}
