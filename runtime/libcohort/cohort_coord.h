/* cohort_coord.h - a step's coordinator process and every rank's
 * connection to it, shared by the work queue (cohort_work.c) and stream
 * sets (cohort_streams.c): rank 0 starts cohort-work-coord (a process of
 * its own, never a part of a worker; COHORT_WORK_COORD overrides its path)
 * and tells it the step and what to serve on its standard input (its
 * environment is a short list of rank 0's, never the secret); its port and
 * a nonce are broadcast (or rank 0's failure, the same line on every
 * rank); each node's first rank starts the node's relay (relay.h, the same
 * program, in a session of its own), which dials the coordinator or, past
 * the fanout's nodes, the relay above it in their tree (coord_config.h),
 * started level by level; every rank dials its node's relay on a Unix
 * socket named from the nonce, with the step's authenticated handshake
 * (net.h). The coordinator holds one connection per relay at the top of
 * the tree, at most the fanout. Not exported. */
#ifndef COHORT_COORD_H
#define COHORT_COORD_H

#include <netdb.h>
#include <stdbool.h>
#include <sys/types.h>

#include "auth.h"
#include "cohort_self.h"
#include "coord_config.h"
#include "net.h"

#define RELAY_NONCE_LEN 16

struct coord_link {
    struct cohort *c;
    struct auth_key key;       /* net's hs_self points at it */
    struct net *net;
    struct net_conn *conn;     /* to the coordinator */
    uint8_t nonce[RELAY_NONCE_LEN]; /* rank 0's: names the relays' sockets */
    pid_t pid;                 /* rank 0: the coordinator it started, to reap */
    pid_t relay_pid;           /* a node's first rank: the relay it started, to reap */
    pid_t relay_peer;          /* the relay's pid (its socket's peer), for messages */
    bool coord_closed;         /* the relay said the way to the coordinator closed ... */
    uint32_t gone_node;        /* ... at the relay of this node (UINT32_MAX: the coordinator) */
    uint32_t fanout;           /* of the relays' tree (rank 0's COHORT_RELAY_FANOUT) */
    int timeout_s;             /* a silent coordinator is given up after this */
    char where[96];            /* the coordinator's "HOST:PORT" */
};

/* Collective. cfg holds what to serve (kind, name and the kind's fields);
 * the step's fields, the key and the join deadline are filled here. func
 * names the caller, what the thing served ("queue 'q'"), for messages.
 * 0, or -1 with c's error set (every rank the same line when rank 0
 * could not start it: a coordinator that did not report its port within
 * the deadline, or failed, is killed and reaped by rank 0 first). */
int coord_link_open(struct coord_link *l, struct cohort *c, const char *func,
                    const char *what, struct coord_config *cfg);

/* A wait on the coordinator looks at the caller's frames and deadline at
 * least this often (the socket's read timeout changes only near it). */
#define COORD_WAIT_SLICE_MS 1000

/* Waits for input from the coordinator until until_ms at most, one slice
 * of at most COORD_WAIT_SLICE_MS: in one blocking read when nothing is
 * left to write, else in net_poll (which writes too). When until_ms has
 * passed, takes in what has arrived without waiting. 0, or -1 with err
 * when the event loop failed (a closed connection shows in conn->closed). */
int coord_link_wait(struct coord_link *l, long long until_ms, struct cohort_err *err);

/* The next frame from the coordinator, as conn_next (1, 0 or < 0 with
 * err); the relay's word that the coordinator closed is taken here. */
int coord_link_next(struct coord_link *l, struct wire_frame *f, struct cohort_err *err);

/* Whether nothing more comes from the coordinator: the connection
 * closed, or the relay said the way to it closed (the relay may stay). */
bool coord_link_over(const struct coord_link *l);

/* Once the link is over (coord_link_over): who is gone, for messages: "the WHAT
 * (HOST:PORT) is gone (killed, or its node failed)" when the relay said
 * so, "the relay of node N, on the way to the WHAT (HOST:PORT), is gone
 * (killed, or its node failed)" when it said that, else "this node's relay
 * to the WHAT (HOST:PORT, relay pid N) is gone (killed?)" (what: "work
 * coordinator of queue 'q'"). */
void coord_link_gone(const struct coord_link *l, const char *what, char *buf, size_t len);

/* Collective: every rank's len bytes, in rank order, into a malloc'd
 * *all (the arguments of an open, checked alike on every rank). 0, or -1
 * with c's error set. */
int coord_gather(struct cohort *c, const void *mine, size_t len, uint8_t **all);

/* Closes the connection, reaps the coordinator if it is done (rank 0). */
void coord_link_free(struct coord_link *l);

#endif
