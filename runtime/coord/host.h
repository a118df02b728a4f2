/* host.h - the node's relay process of a step: one process per node for
 * every work queue and stream set the step opens, not one per queue.
 * The process started for the node's first relay (cohort-work-coord with
 * a COORD_RELAY record) takes the node's socket for the step
 * (coord_host_name: an abstract name, this user's only), runs that relay
 * in a thread, and runs each relay a later queue or set of the step needs
 * on the node in a thread of its own, asked by the node's first rank over
 * that socket (coord_start_relay): the record in, the relay's one line
 * ("PORT ADDR" or "error WHY") out. A connection of another uid is closed
 * unread; a record of another step, node or key is answered with an
 * error. The relays' descriptors are counted together against the
 * open-file limit. The process ends when its last relay ends (the socket
 * is closed first: a rank that comes later starts a new one). When the
 * socket is taken (another process of the node holds it), the process is
 * a relay alone, as before there was one per node. */
#ifndef COHORT_HOST_H
#define COHORT_HOST_H

#include "coord_config.h"

/* Serves cfg (a COORD_RELAY record read from standard input) as above;
 * every line said (the start's on standard output, a failure's on
 * standard error). The process's exit status: 0 when every relay ended
 * well, 2 when one failed or the first could not start (a later one that
 * could not start was answered so). */
int host_main(const struct coord_config *cfg);

#endif
