/* store_msg.h - the frames between a node agent and the step's store
 * holder (WIRE_STORE, the operation in the frame's flags): every payload
 * opens with the agent's number for one of its clients (a big-endian u32),
 * then what the operation carries. */
#ifndef COHORT_STORE_MSG_H
#define COHORT_STORE_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "net.h"

enum store_msg_op {
    STORE_QUERY = 1, /* agent -> holder: client, the query's op (u8), its body */
    STORE_GONE,      /* agent -> holder: client; it closed its connection */
    STORE_ENDED,     /* agent -> holder: a task of its node ended: rank (in the
                      * client's place), its wait status (u32), and with the watch
                      * the node's wall clock then (u64 ms since the epoch) */
    STORE_REPLY,     /* holder -> agent: client, the bytes to write to it */
    STORE_DROP,      /* holder -> agent: client, a sentence: its query failed,
                      * the connection is closed as TCPStore closes it */
    STORE_NOTE,      /* holder -> agent: client, a sentence for its task's stderr */
    STORE_CLOSE,     /* holder -> agent: client, a sentence: the holder closes it
                      * (what its node has unsent would pass the holder's bound) */
    /* The step watch's (--cohort-watch; runtime/watch/watch.h). */
    STORE_BEAT,       /* both ways, 0: nothing but the sender's being alive */
    STORE_WATCH_NODE, /* agent -> holder, its node: the node's host name, a NUL, its
                       * tasks' GPUs (COHORT_WATCH_GPUS: by local id, commas), a NUL */
    STORE_WATCH_STOP, /* agent -> holder, a rank: u8 1 (its task was seen stopped)
                       * or 0 (running again) */
    STORE_WATCH_COLL, /* agent -> holder, a rank: one communicator's counts: hash u64,
                       * size u32, the rank's place u32, started u64, completed u64,
                       * the last operation u8 */
    STORE_WATCH_BYE,  /* agent -> holder, its node: the step ended on the node */
    STORE_VERDICT,    /* holder -> agent, 0: the teller node u32, the line and a NUL,
                       * the JSON object and a NUL */
    STORE_WATCH_OVER, /* holder -> agent, 0: the holder ends as asked; its close is no loss */
    STORE_WATCH_LOST, /* agent -> holder, a node below it in the watch's tree
                       * (watch_tree.h): u8 1 (its link closed) or 0 (silent), then
                       * u32 ms since it was last heard */
};

/* In the watch's tree, an agent passes on up the frames of the agents below
 * it as they came, except their beats; the holder's verdict and the end of
 * the watch go down the same way, and a parent's beats and goodbye (its
 * STORE_WATCH_BYE, its own node's number in the head) go to the agents
 * below it. */

#define STORE_WATCH_COLL_LEN 37 /* a STORE_WATCH_COLL's bytes after the head */

#define STORE_MSG_HEAD 4 /* the client's number */
#define STORE_WATCH_LOST_LEN 5 /* a STORE_WATCH_LOST's bytes after the head */

/* Writes the client's number in front of a payload. */
void store_msg_head(uint8_t out[STORE_MSG_HEAD], uint32_t client);

/* Reads a payload's client and what follows it: 0, or -1 when it is
 * shorter than the head. */
int store_msg_get(const uint8_t *p, size_t len, uint32_t *client, const uint8_t **rest,
                  size_t *rest_len);

/* Sends op with the head client and p1, p2 after it on c, as a WIRE_STORE
 * frame from rank from. Returns 0, or -1 when out of memory. */
int store_msg_send(struct net_conn *c, uint32_t from, uint16_t op, uint32_t client,
                   const void *p1, size_t n1, const void *p2, size_t n2);

/* A STORE_VERDICT's payload (after the head): the teller node, the line and
 * a NUL, the JSON object (NULL: none, sent empty) and a NUL. malloc'd, its
 * size in *len; NULL when out of memory. */
uint8_t *store_msg_verdict(uint32_t teller, const char *line, const char *json, size_t *len);

/* "killed by signal 9", "exit code 3", "exit code 0" for a wait status. */
void store_msg_status(uint32_t status, char *buf, size_t len);

#endif
