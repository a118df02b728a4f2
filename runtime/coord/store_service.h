/* store_service.h - the step's store, which the coordinator process (kind
 * COORD_STORE) serves to the step's node agents. It holds one authenticated
 * connection per node, over which each agent relays the TCPStore queries of
 * its node's ranks (store_msg.h), and it keeps the keys, values and waits
 * (store_kv.h). Once a task has ended abnormally, or a node's agent
 * is gone, every rank that waits over a second for one key is told which
 * key and what is gone (a note in its task's stderr, once); PyTorch's own
 * timeout then ends the wait, as it would with its own store. An agent's
 * queries are read while less than 16 MiB of answers to it are unsent
 * (the agent closes a client that does not read its own), and an answer or
 * a watch's message that would leave over 80 MiB unsent to a node closes
 * the client it is for, with a line, so that the holder's memory is its
 * keys and values and a bounded queue per node. */
#ifndef COHORT_STORE_SERVICE_H
#define COHORT_STORE_SERVICE_H

#include "coord_service.h"

/* The store service (coord_service.h) serves a start record of the step's
 * store until every agent that came has gone and the others are given up
 * (the join deadline). Its run returns 0, or -1 with err (out of memory, or
 * the event loop failed). */
extern const struct coord_service_ops store_service_ops;

#endif
