/* watch_tree.h - the tree of nodes through which a watched step's node
 * agents reach the store holder when the step's store is not served
 * (--cohort-watch without --cohort-store), so that no process holds a
 * connection per node: at 16,384 nodes and the default fanout of 128 the
 * holder holds 129 and an agent at most 129 (its parent and its children).
 *
 * Its shape is the node relays' (coord_config.h), laid over nodes 1 to
 * N-1 with the holder at the top: node 0's agent, on the holder's own
 * node, and nodes 1 to fanout dial the holder; node j dials node
 * (j-1)/fanout when that is not 0, and the agent of node k takes the
 * nodes k*fanout+1 to k*fanout+fanout. Node 0's agent takes none, because
 * the holder listens on the same port of that node. With a fanout of 0
 * every agent dials the holder: a step whose store is served has a link
 * per node to the holder for the store's queries anyway.
 *
 * Pure functions: no socket, no state. */
#ifndef COHORT_WATCH_TREE_H
#define COHORT_WATCH_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define WATCH_TREE_TOP UINT32_MAX   /* stands for the holder */
#define WATCH_TREE_FANOUT 128u      /* the default, the relays' (COORD_DEFAULT_FANOUT) */
#define WATCH_TREE_FANOUT_MAX 65536u

/* Reads text, the job's COHORT_WATCH_FANOUT, into *out. Returns 0, or -1
 * with one sentence in err when it is not a number from 1 to
 * WATCH_TREE_FANOUT_MAX. */
int watch_tree_parse_fanout(const char *text, uint32_t *out, struct cohort_err *err);

/* The node whose agent node's agent dials, or WATCH_TREE_TOP (the holder). */
uint32_t watch_tree_up(uint32_t fanout, uint32_t node);

/* How many agents dial node's (WATCH_TREE_TOP: the holder) in a step of
 * n_nodes nodes; *first is the first of them (they are consecutive, except
 * below the holder: node 0, then nodes 1 to the count minus one). */
uint32_t watch_tree_kids(uint32_t fanout, uint32_t n_nodes, uint32_t node, uint32_t *first);

/* Whether node is top itself or below it (top: WATCH_TREE_TOP is above
 * every node). */
bool watch_tree_below(uint32_t fanout, uint32_t top, uint32_t node);

/* The levels of agents between node and the holder (0: it dials the holder). */
uint32_t watch_tree_depth(uint32_t fanout, uint32_t node);

#endif
