/* tree_private.h - what the two halves of the bootstrap tree share: the
 * tree itself, and the helpers tree.c (joining: sockets, handshake) offers
 * tree_exchange.c (the exchange). Not for other modules. */
#ifndef COHORT_TREE_PRIVATE_H
#define COHORT_TREE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "tree.h"

#define UNAUTH_MAX_PAYLOAD 1024 /* what a peer may send before it proved itself */
#define MAX_STRANGERS 256      /* unauthenticated connections held at once */
#define LEADER_GRACE_MS 500    /* leaders wait this long past the root's deadline */
#define TASK_GRACE_MS 1000     /* tasks, this long */

struct tree {
    struct tree_layout l;
    uint32_t *node_first;      /* lowest rank of each node: its leader */
    uint32_t node, local_size; /* this task's node and its task count */
    bool is_root, is_leader;
    struct auth_key key;
    int timeout_ms;
    uint32_t max_payload;
    int listen_tcp, listen_unix;
    struct conn parent;
    struct conn *kids;
    size_t n_kids, cap_kids;
    uint32_t expected_kids, ready_kids;
    uint16_t seq;
    bool gone;   /* a task left after its last result: the next exchange fails */
    uint32_t gone_rank, gone_node;
    bool broken; /* a past exchange failed: every later one fails at once */
    char broken_msg[COHORT_ERR_LEN];
};

long long tree_now_ms(void);

/* "rank 5 (n2)", "ranks 5, 9 (n2), 12 (n3) and 3 others": ranks sorted. */
void tree_describe_ranks(const struct tree *t, const uint32_t *ranks, size_t n, char *buf,
                         size_t len);
/* The ranks of node, in order, into a malloc'd array. */
uint32_t *tree_ranks_of_node(const struct tree *t, uint32_t node, size_t *n);
/* The parent's name for messages. */
void tree_parent_name(const struct tree *t, char *buf, size_t len);
/* Writes c's queue out, waiting until deadline at most. */
int tree_write_all(struct conn *c, long long deadline, struct cohort_err *err);

/* Parent side: accepts every pending connection on lfd and challenges it. */
void tree_accept_kids(struct tree *t, int lfd);
/* Whether a hello names a child we expect and is signed; then welcomes it
 * and counts it ready. */
bool tree_hello_ok(struct tree *t, struct conn *c, const struct wire_frame *f);
void tree_drop_kid(struct tree *t, size_t i);

#endif
