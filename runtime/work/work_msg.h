/* work_msg.h - the messages between a worker (libcohort's cohort_work) and
 * the work coordinator, as payloads of authenticated frames (net.h) whose
 * flags carry the operation. Pure: bytes in, structs out, every length
 * checked before it is trusted.
 *
 *   worker -> coordinator          coordinator -> worker
 *   LEASE   cap                    GRANT   spans of ids (at least one id)
 *                                  WAIT    nothing yet: ask again
 *                                  FINISHED every item committed or set aside
 *   COMMIT  spans of ids           VERDICT taken, stale, bad, first stale/bad,
 *                                          the sentence for bad ids (u32
 *                                          length, bytes), the stale ids as spans
 *   COMMIT_OUTPUT token (16 bytes), VERDICT (all or nothing: taken 0
 *           data length (u64),             when any id is stale or bad)
 *           kind (u32), spans of ids
 *           (ascending)
 *   FAIL    spans of ids           VERDICT
 *   EXTEND                         OK
 *   STATUS                         TOTALS  total, committed, leased, queued, set aside
 *   CLOSE   nothing, or            CLOSED  the same totals, once every item is done
 *           DRAIN (u8)                     (drained: at once)
 *                                  ERROR   one sentence: this worker's call failed
 *                                  STOPPED code (u32: an enum cohort_err_code),
 *                                          one sentence: the coordinator stops on
 *                                          an error and says why, unasked, to every
 *                                          worker before it exits (the answer to
 *                                          whatever call is waiting, or the next)
 *
 * Ids travel as spans (lo, hi): the runs of consecutive ids in the order
 * the caller gave them, so a lease of a million fresh ids is 16 bytes. */
#ifndef COHORT_WORK_MSG_H
#define COHORT_WORK_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

enum work_op {
    WORK_LEASE = 1,
    WORK_COMMIT,
    WORK_FAIL,
    WORK_EXTEND,
    WORK_STATUS,
    WORK_CLOSE,
    WORK_COMMIT_OUTPUT,
    WORK_GRANT = 16,
    WORK_WAIT,
    WORK_FINISHED,
    WORK_VERDICT,
    WORK_OK,
    WORK_TOTALS,
    WORK_CLOSED,
    WORK_ERROR,
    WORK_STOPPED,
};

#define WORK_SPAN_LEN 16 /* two big-endian u64 */
#define WORK_CLOSE_DRAIN 1 /* a CLOSE's payload: the worker drained, answer at once */
#define WORK_OUTPUT_HEAD 28 /* COMMIT_OUTPUT before its spans: token 16, length 8, kind 4 */
#define WORK_STOPPED_HEAD 4 /* STOPPED before its sentence: the code */
#define WORK_LEASE_MAX (1u << 20) /* ids in one lease, commit or failure at most */

struct work_totals {
    uint64_t total, committed, leased, queued, set_aside;
};
#define WORK_TOTALS_LEN 40

struct work_verdict {
    uint64_t taken, stale, bad, first_stale, first_bad;
};
#define WORK_VERDICT_LEN 40

/* The number of spans the n ids form (runs of consecutive ids). */
size_t work_span_count(const uint64_t *ids, size_t n);
/* Writes the spans of ids into out (work_span_count(ids, n) * WORK_SPAN_LEN
 * bytes). */
void work_spans_put(const uint64_t *ids, size_t n, uint8_t *out);
/* Checks a payload of spans: a whole number of spans, each lo < hi <=
 * n_items; *n_ids gets how many ids they hold. 0, or -1 with err. */
int work_spans_check(const uint8_t *p, uint32_t len, uint64_t n_items, uint64_t *n_ids,
                     struct cohort_err *err);
/* Expands checked spans into ids (*n_ids of them). */
void work_spans_ids(const uint8_t *p, uint32_t len, uint64_t *ids);

void work_totals_put(const struct work_totals *t, uint8_t out[WORK_TOTALS_LEN]);
void work_totals_get(const uint8_t in[WORK_TOTALS_LEN], struct work_totals *t);
void work_verdict_put(const struct work_verdict *v, uint8_t out[WORK_VERDICT_LEN]);
void work_verdict_get(const uint8_t in[WORK_VERDICT_LEN], struct work_verdict *v);

#endif
