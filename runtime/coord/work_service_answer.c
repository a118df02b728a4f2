/* work_service_answer.c - what the work coordinator sends a worker
 * (work_service_private.h): a frame of the queue's messages, the queue's
 * totals and why it stops; it also says whether every item is done.
 * work_service.c, work_service_wake.c and work_service_loop.c call it; it
 * calls none of them. */
#include <string.h>

#include "work_service_private.h"
#include "net.h"
#include "wire.h"
#include "work_msg.h"

void work_service_send(struct work_service *co, uint32_t rank, enum work_op op, const void *p,
                       uint32_t len)
{
    if (peers_send(co->peers, rank, (uint16_t)op, p, len) < 0)
        co->oom = true;
}

void work_service_totals(struct work_service *co, uint32_t rank, enum work_op op)
{
    struct sched_status st;
    sched_status(co->s, &st);
    struct work_totals t = {st.total, st.committed, st.leased, st.queued, st.set_aside};
    uint8_t b[WORK_TOTALS_LEN];
    work_totals_put(&t, b);
    work_service_send(co, rank, op, b, sizeof b);
}

void work_service_stopped(struct work_service *co, const struct cohort_err *why)
{
    uint8_t b[WORK_STOPPED_HEAD + COHORT_ERR_LEN];
    size_t n = strnlen(why->msg, COHORT_ERR_LEN - 1);
    wire_put32(b, (uint32_t)why->code);
    memcpy(b + WORK_STOPPED_HEAD, why->msg, n);
    for (uint32_t r = 0; r < co->cfg->size; r++)
        if (co->w[r].on)
            work_service_send(co, r, WORK_STOPPED, b, (uint32_t)(WORK_STOPPED_HEAD + n));
}

bool work_service_finished(const struct work_service *co)
{
    struct sched_status st;
    sched_status(co->s, &st);
    return st.committed + st.set_aside == st.total;
}
