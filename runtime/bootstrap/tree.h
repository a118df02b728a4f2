/* tree.h - the TCP/Unix-socket bootstrap of a step: a two-level tree. Each
 * node's leader (its task of lowest local id) accepts the node's other tasks
 * on an abstract Unix socket; rank 0, the root, accepts the other nodes'
 * leaders on TCP (MASTER_ADDR:COHORT_BOOTSTRAP_PORT) and its own node's
 * tasks. Every connection is authenticated both ways with the step secret
 * (auth.h); a peer that fails is dropped and the others go on.
 *
 * One operation, tree_exchange(): every rank contributes a block, the root
 * gathers them all and sends every non-empty block back down. Barrier,
 * broadcast and allgather are made of it. Every exchange has a deadline: at
 * it, or at once when a connection closes, every survivor fails with one
 * message naming the missing ranks and their hosts. */
#ifndef COHORT_TREE_H
#define COHORT_TREE_H

#include <stdint.h>

#include "auth.h"
#include "error.h"
#include "hostlist.h"

struct tree_layout {
    uint32_t rank, size;     /* this task and the step's task count */
    uint32_t num_nodes;
    const uint32_t *rank_node; /* node of every rank */
    const struct hostlist *nodes; /* for messages; NULL: "node N" */
    const char *master_addr; /* host of rank 0 */
    uint16_t port;           /* the root's TCP port */
    uint32_t job_id, step_id;
};

struct tree;

/* Joins the step's tree: the root and the leaders listen, every task but
 * the root connects to its parent and proves itself. Waits at most
 * timeout_ms for its parent. */
int tree_open(const struct tree_layout *layout, const struct auth_key *key, int timeout_ms,
              struct tree **out, struct cohort_err *err);

/* Contributes len bytes (mine may be NULL when len is 0) and returns in
 * *down the root's gather: entries [u32 rank][u32 len][bytes] in rank order,
 * for every rank whose block was not empty (*down malloc'd; free it). what
 * names the operation in messages ("cohort_barrier"). */
int tree_exchange(struct tree *t, const void *mine, uint32_t len, const char *what,
                  uint8_t **down, uint32_t *down_len, struct cohort_err *err);

/* The deadline of later exchanges. */
void tree_set_timeout(struct tree *t, int timeout_ms);

void tree_close(struct tree *t);

#endif
