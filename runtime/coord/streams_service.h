/* streams_service.h - the stream coordinator's service. It serves a stream
 * set (cohort_streams.h) to the step's workers over the connection layer
 * (net.h: the step's proofs, MAC'd frames), and places the streams with the
 * placement module (place.h). It runs in cohort-work-coord, started by
 * rank 0 like a work queue's coordinator, never inside a worker.
 *
 * It answers each worker's requests (streams_msg.h) in order, renewing the
 * worker's lease on each, and sends each worker its ASSIGNs and REVOKEs as
 * they arise: those a request causes go out before its answer. A worker
 * whose connection closes is gone at once: its streams go to others in
 * the same round. A worker that sends nothing for its lease (the set's
 * lease_timeout_s) loses its streams (REVOKE, then ASSIGN elsewhere) and
 * joins again when it is heard from. */
#ifndef COHORT_STREAMS_SERVICE_H
#define COHORT_STREAMS_SERVICE_H

#include "coord_service.h"

/* The streams service (coord_service.h) serves a start record of a stream
 * set until every rank has come and gone (closed the set, or lost its
 * connection); it waits for ranks that never came until the join deadline.
 * Its run returns 0 when every worker closed the set, 1 when some were
 * lost, or -1 with err when out of memory. */
extern const struct coord_service_ops streams_service_ops;

#endif
