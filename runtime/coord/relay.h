/* relay.h - a node relay: one process per node of a step for each work
 * queue or stream set, started by the node's first rank in a session of
 * its own (cohort-work-coord with a COORD_RELAY start record), so that
 * the coordinator holds one connection per node, not per rank.
 *
 * It dials the coordinator first (the step's handshake, as rank
 * COORD_AGENT_RANK of its node), then listens on its node's Unix socket
 * (coord_relay_addr: an abstract name from rank 0's nonce; other uids are
 * closed at once, and every rank proves the step's key) and writes "1" on
 * its standard output (or "error WHY"). From then on it relays: a rank that
 * proved itself is told up (RELAY_JOIN), its WIRE_WORK frames go up with
 * its rank in the header, the coordinator's come down to it, and its closed
 * connection is told up at once (RELAY_GONE); RELAY_DROP closes a rank.
 * It ends when the coordinator closes its connection (every rank is then
 * told so, RELAY_GONE for rank UINT32_MAX, and closed), or when no rank of
 * its node is connected: for twice the join timeout from its start (other
 * nodes' relays may start that much later), for the join timeout after the
 * last one left. A rank's death never ends it: it outlives the rank that
 * started it. Its process is named "cohort-relay" (ps, top). */
#ifndef COHORT_RELAY_H
#define COHORT_RELAY_H

#include "coord_config.h"
#include "error.h"

/* Serves cfg (a COORD_RELAY record) until the end above: 0, -1 with err
 * when it failed serving, -2 with err when it could not start. */
int relay_run(const struct coord_config *cfg, struct cohort_err *err);

#endif
