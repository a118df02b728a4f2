/* work_service_private.h - what the parts of the work coordinator share:
 * its state, and the helpers that work_service.c (requests),
 * work_service_loop.c (the event loop and when to stop),
 * work_service_journal.c (group commit) and work_service_report.c (progress
 * and the final line) offer each other. Other modules do not include it. */
#ifndef COHORT_WORK_SERVICE_PRIVATE_H
#define COHORT_WORK_SERVICE_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include "work_service.h"
#include "error.h"
#include "journal.h"
#include "peers.h"
#include "work_sched.h"
#include "work_msg.h"

struct journal;
struct journal_event;

/* A work_service_pending is a part recorded in the journal and not yet linked
 * under its name. */
struct work_service_pending {
    uint64_t part;
    uint8_t token[16];      /* the offered file's (PARTS_TOKEN_LEN) */
};

/* A worker is what the coordinator knows of one rank's worker. */
struct worker {
    bool on;                /* connected (through its node's relay, peers.h) */
    bool ever;              /* it connected once */
    bool held;              /* A lease waits for items. */
    uint64_t cap;           /* the most ids that lease asks for */
    int64_t held_since;     /* since when a lease or close is held (ms); 0: none */
    bool closing;           /* It closed the queue, answered once every item is done. */
    bool closed_ok;         /* Its close was answered. */
    bool in_ring, in_closes; /* whether in co->ring, co->closes (work_service_wake.c) */
    uint8_t *due;           /* a commit's answer waiting for the journal's sync */
    uint32_t due_len;
};

struct work_service {
    struct peers *peers;    /* the ranks, through the node relays */
    const struct coord_config *cfg;
    struct sched *s;
    struct net *net;
    struct peers_ops ops;   /* work_service.c's: requests, workers joining and lost,
                             * at co->now */
    struct worker *w;       /* per rank */
    uint64_t *ids;          /* WORK_SERVICE_LEASE_MAX: one request's ids */
    uint8_t *spans;         /* the spans of those ids */
    uint8_t *verdicts;      /* per id of a commit or failure */
    uint64_t *stale;        /* WORK_SERVICE_LEASE_MAX: the ids of one call found stale */
    struct journal *journal;
    bool journal_failed;    /* An add failed: the next sync fails with its line. */
    struct cohort_err journal_error;
    struct journal_progress said; /* the totals last recorded */
    int64_t next_record;    /* when the totals are recorded next (if changed) */
    int out_fd;             /* the output directory; -1: none */
    int lock_fd;            /* its .lock, locked while this coordinator runs; -1: none */
    int offers_fd;          /* its offers' folder (parts.h); -1: none */
    uint64_t next_part;     /* the number the next published part gets */
    struct work_service_pending *pend; /* parts recorded, to be linked after the sync */
    size_t n_pend, cap_pend;
    char host[64];          /* where the coordinator runs, for messages */
    uint32_t connected, lost_workers;
    uint32_t came;          /* workers that connected at least once */
    uint32_t drained;       /* workers that closed drained */
    uint64_t published;     /* parts published by this coordinator */
    char refused[COHORT_ERR_LEN]; /* why the last commit with results was refused; "": none */
    bool changed;           /* Items came back or finished: held leases may go. */
    uint32_t *ring;         /* held leases, oldest first: ring_len from ring_head */
    size_t ring_head, ring_len;
    uint32_t *closes;       /* closes waiting for the queue to be done */
    size_t n_closes;
    int64_t next_sweep;     /* the keepalive's next sweep over every rank */
    int64_t retry_at;       /* when held leases are tried again (a copy may be due) */
    bool oom;
    int64_t now;            /* the time of this round's events */
    int64_t start_ms, join_by, next_wake, next_progress;
    uint64_t granted, last_committed;
};

/* work_service_loop.c: work_service_run serves on co->net as the work service's
 * run says (work_service.h). */
int work_service_run(struct work_service *co, struct cohort_err *err);

/* work_service_answer.c: work_service_send sends a frame of op to rank (none
 * when it is gone); work_service_totals sends the queue's totals as op
 * (WORK_TOTALS, WORK_CLOSED); work_service_stopped tells every worker still
 * connected why the coordinator stops (WORK_STOPPED with why's code and
 * sentence); work_service_finished says whether every item is committed or set
 * aside. */
void work_service_send(struct work_service *co, uint32_t rank, enum work_op op, const void *p,
                       uint32_t len);
void work_service_totals(struct work_service *co, uint32_t rank, enum work_op op);
void work_service_stopped(struct work_service *co, const struct cohort_err *why);
bool work_service_finished(const struct work_service *co);


/* work_service_wake.c: work_service_lease answers a lease now or holds it;
 * work_service_hold notes a held lease or close; work_service_wake, called
 * each turn of the loop, tries held leases again after a change and answers
 * them once the queue is done or at the keepalive. */
int work_service_wake_new(struct work_service *co);
void work_service_wake_free(struct work_service *co);
void work_service_lease(struct work_service *co, uint32_t rank, int64_t now);
void work_service_hold(struct work_service *co, uint32_t rank, bool close);
void work_service_wake(struct work_service *co, int64_t now);

/* The journal is opened (and replayed into the scheduler) at start;
 * work_service_journal_add adds the taken ids of a commit (co->ids with
 * co->verdicts); work_service_journal_sync syncs it once a round before the
 * held answers go out. Without a journal these do nothing. */
int work_service_journal_open(struct work_service *co, struct cohort_err *err);
int work_service_journal_add(struct work_service *co, size_t n);
int work_service_journal_sync(struct work_service *co, struct cohort_err *err);
/* Records the totals for cohort-work status when they changed since the
 * last record (synced with the round). Returns whether a record was made. */
bool work_service_journal_progress(struct work_service *co);
/* At the end, writes the items set aside and syncs them. */
int work_service_journal_end(struct work_service *co, struct cohort_err *err);
void work_service_journal_close(struct work_service *co);

/* Records a commit with results (COMMIT_OUTPUT) of co->ids[0..n-1], its ids
 * and part, with the others of the round. Returns 0, or -1 when the journal
 * failed (the next sync says so). */
int work_service_journal_publish(struct work_service *co, uint64_t part, uint64_t data_len,
                                 uint32_t kind, const uint8_t *token, size_t n);

/* Published results (work_service_output.c). work_service_output_replayed
 * gathers the journal's publications at start; work_service_output_open then
 * opens (makes) the directory, finishes them and clears away offers never
 * committed. work_service_output_offer checks a worker's offered file for
 * co->ids[0..n-1] (0, or -1 with the sentence for the worker in why); once the
 * commit is recorded, work_service_output_offered keeps the part (-1: out of
 * memory); work_service_output_durable syncs the directory before the
 * journal's sync (the offers' names), and work_service_output_publish after it
 * links every recorded part under its name. work_service_output_discard
 * removes an offer that lost. */
int work_service_output_replayed(struct work_service *co, const struct journal_event *ev,
                                 struct cohort_err *err);
int work_service_output_open(struct work_service *co, struct cohort_err *err);
int work_service_output_offer(struct work_service *co, const uint8_t *token, uint64_t data_len,
                              size_t n, char *why, size_t len);
int work_service_output_offered(struct work_service *co, uint64_t part, const uint8_t *token);
int work_service_output_durable(struct work_service *co, struct cohort_err *err);
int work_service_output_publish(struct work_service *co, struct cohort_err *err);
void work_service_output_discard(struct work_service *co, const uint8_t *token);
void work_service_output_close(struct work_service *co);

/* When verbose, these write a progress line now and then, and the final
 * line. */
void work_service_progress(struct work_service *co, int64_t now);
void work_service_report(struct work_service *co);

#endif
