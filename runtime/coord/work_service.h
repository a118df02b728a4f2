/* work_service.h - the work coordinator's service. It runs in one process
 * per queue, apart from every worker, and serves the step's workers over the
 * connection layer (net.h: the step's proofs, MAC'd frames) with the
 * scheduling module (work_sched.h) and, when asked, a journal (journal.h).
 *
 * It answers each worker's requests (work_msg.h); a lease that finds nothing
 * to hand out yet is held until items come back (a commit, a failure, a lost
 * worker, an expired lease) or at most WORK_SERVICE_KEEPALIVE_MS, then
 * answered WAIT so the worker knows the coordinator lives. A worker whose
 * connection closes loses its leases at once. Commits are written to the
 * journal and synced once per round of events before any of them is answered
 * (group commit): a commit a worker was told of is durable. */
#ifndef COHORT_WORK_SERVICE_H
#define COHORT_WORK_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_service.h"
#include "work_msg.h"

#define WORK_SERVICE_KEEPALIVE_MS 5000 /* A held request is answered within this. */
#define WORK_SERVICE_LEASE_MAX WORK_LEASE_MAX
#define WORK_SERVICE_PROGRESS_MS 5000  /* When verbose, a progress line comes this often. */
#define WORK_SERVICE_RECORD_MS 2000    /* The journal records the totals at most this often. */

/* The work service (coord_service.h) serves a start record of a queue
 * until every rank has come and gone (closed the queue, or lost its
 * connection); it waits for ranks that never came until the join
 * deadline. Its run returns 0 when every item is committed or set
 * aside, 1 when workers left before, -1 with err on a failure of the
 * coordinator itself (the journal cannot be written, a part cannot be
 * published, out of memory), which every worker still connected is told
 * (WORK_STOPPED) before it returns. */
extern const struct coord_service_ops work_service_ops;

#endif
