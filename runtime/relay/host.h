/* host.h - the node's relay process of a step. There is one process per
 * node for every work queue and stream set the step opens, not one per
 * queue.
 * The process started for the node's first relay (cohort-work-coord with
 * a COORD_RELAY record) takes the node's socket for the step
 * (coord_host_name: an abstract name made with the step's secret), runs
 * that relay in a thread, and runs each relay a later queue or set of the
 * step needs on the node in a thread of its own, asked by the node's
 * first rank over that socket (coord_start_relay): the record goes in, and
 * the relay's one line ("PORT ADDR", "error WHY" or "busy WHY") comes out. A
 * connection of another uid is closed unread; a record of another step,
 * node or key is answered with an error. The relays' descriptors are
 * counted together against the open-file limit, and each relay's
 * connections are held to its count (its ranks, relays and RELAY_POOL
 * strangers): a relay that does not fit is
 * answered "busy WHY", and the rank starts a process of its own for it
 * (as it does when no process serves, or when the one there closes
 * without an answer as it ends); a first relay too big to share starts
 * alone. The process ends when its last relay ends (the socket is
 * closed first: a rank that comes later starts a new one). When the
 * socket is taken (another process of the node holds it), the process is
 * a relay alone, as before there was one per node. Where the plugin
 * started the node agent (cohort-agent, for the store), the agent holds
 * the socket (host_serve), and the step's relays on the node run in it:
 * one process for the store, the queues and the sets. */
#ifndef COHORT_HOST_H
#define COHORT_HOST_H

#include "coord_config.h"
#include "error.h"

/* Serves cfg (a COORD_RELAY record read from standard input) as above, and
 * says every line itself (the start's on standard output, a failure's on
 * standard error). Returns the process's exit status: 0 when every relay
 * ended well, 2 when one failed or the first could not start (a later one
 * that could not start was answered so). */
int host_main(const struct coord_config *cfg);

/* Serves the same socket for cfg's step (its job, step, node, key and join
 * timeout; no relay of its own) from a thread of this process for as long
 * as the process lives, so that the node's relays of the step's queues and
 * sets run in it. cohort-agent, the node agent the plugin starts for the
 * store, calls it; it holds own descriptors of its own (counted with the
 * relays'). Returns 0, or -1 with err when the socket could not be had
 * (each relay then gets a process of its own, as without it). cfg must
 * outlive the process's serving. */
int host_serve(const struct coord_config *cfg, uint32_t own, struct cohort_err *err);

#endif
