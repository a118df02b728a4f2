/* cohort_work_private.h - what the two halves of the work queue's client
 * share: the handle, and the request/answer exchange with the coordinator
 * (cohort_work_call.c) that opening and closing (cohort_work.c) use too. */
#ifndef COHORT_WORK_PRIVATE_H
#define COHORT_WORK_PRIVATE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "cohort_coord.h"
#include "cohort_work.h"
#include "net.h"
#include "wire.h"
#include "work_msg.h"

#define WORK_NAME_MAX 128

struct cohort_work {
    struct cohort *c;
    struct coord_link link;   /* the coordinator, and this rank's connection */
    uint8_t *spans;           /* one request's ids, as spans */
    uint64_t *stale;          /* the last commit's or failure's stale ids */
    size_t n_stale, stale_cap;
    uint64_t n_items;
    char *output;             /* the results' directory, or NULL */
    int offers_fd;            /* its offers' folder (parts.h), opened at the first
                               * commit with results; -1 */
    uint64_t *ids;            /* a commit with results' ids, sorted */
    bool journal;             /* for messages: whether a rerun resumes */
    bool gone;                /* the coordinator is gone: every call fails at once */
    volatile sig_atomic_t draining; /* cohort_work_drain was called */
    char name[WORK_NAME_MAX + 1];
};

/* Sends one request (op, payload) and waits for its answer, whatever
 * WAIT keepalives come first when keep_waiting (a close, a lease); *f
 * holds the answer, to be consumed with conn_consume. func names the
 * caller in messages. 0, or -1 with w->c's error set. */
int work_call(struct cohort_work *w, const char *func, enum work_op op, const void *p,
              uint32_t len, struct wire_frame *f);

/* A commit's or failure's answer in *f (consumed): 0, COHORT_WORK_STALE
 * (w->stale holds the ids), or -1 with w->c's error (an ERROR answer, ids
 * not held, an answer of another kind). */
int work_verdict(struct cohort_work *w, const char *func, struct wire_frame *f);

/* Checks a call's ids (not NULL when n, at most WORK_LEASE_MAX, each an id
 * of the queue) and forgets the last call's stale ids: 0, or -1 with
 * w->c's error. */
int work_ids_check(struct cohort_work *w, const char *func, const uint64_t *ids, size_t n);

/* Sets w->c's error for an ERROR answer (its sentence) and returns -1. */
int work_refused(struct cohort_work *w, const char *func, const struct wire_frame *f);

#endif
