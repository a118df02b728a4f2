/* tree_private.h - what the two halves of the bootstrap tree share: the
 * tree itself, and the helpers tree.c (joining: names, sockets, admission)
 * offers tree_exchange.c (the exchange). Not for other modules. */
#ifndef COHORT_TREE_PRIVATE_H
#define COHORT_TREE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netdb.h>

#include "net.h"
#include "tree.h"

#define LEADER_GRACE_MS 500 /* leaders wait this long past the root's deadline */
#define TASK_GRACE_MS 1000  /* tasks, this long */
#define RELAY_MS 3000       /* a parent that fails while its children join tells them until
                             * none has come for this long */
#define LINGER_MS 1000      /* after a failure, peers are given this long to read why and close */

struct tree {
    struct tree_layout l;
    uint32_t *node_first;      /* lowest rank of each node: its leader */
    uint32_t node, local_size; /* this task's node and its task count */
    uint32_t root_node, fanout; /* the node tree: see tree_up_node */
    uint32_t node_kids;        /* a leader's: the leaders below it */
    bool is_root, is_leader;
    struct auth_key key;
    uint8_t view[HS_VIEW_LEN]; /* how this task sees the step */
    int timeout_ms;
    uint32_t max_payload;
    struct net *net;
    struct net_conn *parent;   /* NULL at the root */
    struct net_conn **kids;    /* admitted children */
    size_t n_kids, cap_kids;
    uint8_t *joined;           /* per rank: admitted here */
    uint32_t expected_kids;
    uint16_t seq;
    bool gone;   /* a task left after its last result: the next exchange fails */
    uint32_t gone_rank, gone_node;
    struct addrinfo *up_addrs; /* a leader's addresses of its parent's host */
    char sock_path[108];       /* a leader's filesystem socket (munge), to remove */
    struct cohort_err refused; /* a child of another view was refused: the step fails */
    bool parent_told; /* the parent was sent this task's abort */
    bool broken; /* a past exchange failed: every later one fails at once */
    struct cohort_err broken_why;
};

long long tree_now_ms(void);

/* "rank 5 (n2)", "ranks 5, 9 (n2), 12 (n3) and 3 others": ranks sorted. */
void tree_describe_ranks(const struct tree *t, const uint32_t *ranks, size_t n, char *buf,
                         size_t len);
/* The node tree: the leaders form a k-ary tree (k = the fanout) rooted at
 * rank 0's node, in node order from it. The node whose leader is node's
 * parent, or UINT32_MAX for the root's node. */
uint32_t tree_up_node(const struct tree *t, uint32_t node);
/* The ranks of the nodes in node's subtree (node itself included), in
 * order, into a malloc'd array. */
uint32_t *tree_ranks_under(const struct tree *t, uint32_t node, size_t *n);
/* Whether node lies in top's subtree (top itself included). */
bool tree_under(const struct tree *t, uint32_t node, uint32_t top);
/* The parent's name for messages. */
void tree_parent_name(const struct tree *t, char *buf, size_t len);
/* Takes a newly admitted child into t->kids; -1 when out of memory. */
int tree_add_kid(struct tree *t, struct net_conn *c);
void tree_drop_kid(struct tree *t, size_t i);
/* Sends c an abort frame of why (its sentence and code). */
void tree_send_abort(struct tree *t, struct net_conn *c, const struct cohort_err *why);
/* Sends the parent why as this task's abort, once, when it is reached. */
void tree_tell_parent(struct tree *t, const struct cohort_err *why);
/* One net_poll of a failing task: a child admitted meanwhile is taken and
 * told why, a parent reached meanwhile is told it. Returns net_poll's. */
int tree_abort_poll(struct tree *t, int timeout_ms, const struct cohort_err *why);
/* Tells the children still joining why this task failed: until each has
 * been told, or none has come for RELAY_MS (children slow to start on a
 * loaded node keep it waiting, never past the step's deadline). */
void tree_relay(struct tree *t, const struct cohort_err *why);

#endif
