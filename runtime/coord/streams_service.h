/* streams_service.h - the stream coordinator's service: the process that serves a
 * stream set (cohort_streams.h) to the step's workers over the connection
 * layer (net.h: the step's proofs, MAC'd frames), placing the streams with
 * the placement module (place.h). It runs in cohort-work-coord, started by
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

#include "coord_config.h"
#include "error.h"
#include "net.h"

struct scoord;

/* A coordinator for cfg (kept by reference: it must outlive it). */
int scoord_new(const struct coord_config *cfg, struct scoord **out, struct cohort_err *err);
void scoord_free(struct scoord *sc);

/* net's admit callback for the coordinator's listener (ctx: the scoord). */
enum net_admit scoord_admit(void *ctx, const struct hs_hello *h, bool via_unix,
                            struct cohort_err *why);

/* Serves on net until every rank has come and gone (closed the set, or
 * lost its connection), ranks that never came being waited for until the
 * join deadline. 0 when every worker closed the set, 1 when some were
 * lost, -1 with err when out of memory. */
int scoord_run(struct scoord *sc, struct net *net, struct cohort_err *err);

#endif
