/* tree.h - the TCP/Unix-socket bootstrap of a step: a tree on the
 * connection layer (net.h). Each node's leader (its task of lowest local
 * id) accepts the node's other tasks on a Unix socket: an abstract name
 * derived from the step secret, or under munge a socket in a 0700
 * directory of the user's. The leaders form a tree of nodes, each
 * accepting at most `fanout` other nodes' leaders on TCP, on the same
 * port: rank 0, the root, reached at MASTER_ADDR, the leaders between at
 * their node's name (every address, or with bind_names only those). Up to
 * fanout + 1 nodes the root accepts every leader (two levels); at 16,384
 * nodes and the
 * default fanout of 128, no task holds more than 128 + its node's tasks
 * connections below it. Every
 * connection is authenticated both ways (handshake.h) and every frame
 * after it carries a MAC; a stranger is dropped and the others go on; a
 * task that sees the step otherwise (task count, nodes, layout) is
 * refused and the step fails, naming it.
 *
 * One operation, tree_exchange(): every rank contributes a block, the root
 * gathers them all and sends every non-empty block back down. Barrier,
 * broadcast and allgather are made of it. Every exchange has a deadline: at
 * it, or at once when a connection closes, every survivor fails with one
 * message naming the missing ranks and their hosts. */
#ifndef COHORT_TREE_H
#define COHORT_TREE_H

#include <stdbool.h>
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
    const char *socket_dir;  /* munge: the directory of the node's socket */
    uint32_t fanout;         /* leaders below one leader; 0: TREE_DEFAULT_FANOUT */
    bool bind_names;         /* listen on MASTER_ADDR's / the node name's addresses only */
};

#define TREE_DEFAULT_FANOUT 128u
#define TREE_MAX_FANOUT 65536u

struct tree;

/* Opens this task's part of the tree: the root and the leaders listen,
 * every other task starts to reach its parent. The first tree_exchange
 * completes the join (timeout_ms is its deadline). A task that cannot
 * serve (its port or socket taken, too few descriptors) fails at once and
 * tells the children that reach it within a few seconds. */
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
