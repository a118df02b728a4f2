/* agent.h - what the parts of cohort-agent, the node agent, share: its
 * state, and the helpers that agent_main.c (start, the loop), agent_local.c
 * (the node's TCPStore clients, and the holder's answers to them) and
 * agent_up.c (the link to the store holder) offer each other. Other modules
 * do not include it. */
#ifndef COHORT_AGENT_H
#define COHORT_AGENT_H

#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "auth.h"
#include "coord_config.h"
#include "envlist.h"
#include "error.h"
#include "net.h"
#include "step.h"
#include "tcpstore.h"

#define AGENT_CLIENTS_MAX 4096 /* local connections at once; more are closed */
/* A client may leave at most this much of answers unread: past it, it is
 * closed with a line. A client that reads holds one answer at most, and one
 * answer is always taken, up to a frame's 64 MiB. */
#define AGENT_CLIENT_OUT_MAX (64u << 20)
/* The node's clients are not read while this much is unsent to the
 * holder, which reads the agent's queries as it sends their answers out. */
#define AGENT_UP_OUT_MAX (16u << 20)
/* The dial to the agent above in the watch's tree gives up after this (s),
 * or the step's timeout if shorter: a parent listens before its node's
 * tasks start, so one that does not answer by then never will, and the
 * holder is dialed instead. */
#define AGENT_PARENT_DIAL_S 30

/* A client is a local TCPStore client; a rank's TCPStore object holds one
 * or two. */
struct client {
    int fd;                  /* -1: gone */
    uint32_t id;             /* the agent's number for it, never reused */
    enum ts_dialect d;
    unsigned long inode;     /* its socket's inode, to find its process for notes */
    uint8_t *in, *out;
    size_t in_len, in_cap, out_len, out_cap;
    bool closing;            /* Its query failed: it is closed once its output is out. */
};

/* The agent's state. */
struct agent {
    struct cohort_step step;
    uint32_t *rank_node;
    uint8_t view[40];
    struct auth_key key;
    uid_t uid;               /* the job's user, the only one served */
    int timeout_s;
    bool verbose;
    char host[256];          /* the store holder's host and port */
    uint16_t port;
    pid_t holder;            /* on node 0, the holder it started */
    struct net *net;
    struct addrinfo *addrs;
    struct net_conn *up;     /* to the holder */
    bool up_ready;
    char up_error[COHORT_ERR_LEN]; /* "": none */
    int lfd;                 /* the loopback listener */
    uint16_t lport;
    struct client *c;
    size_t n_c, cap_c;
    uint32_t next_id;
    struct coord_config relays; /* the step and node whose relays it runs (host.h) */
    struct node_watch *watch;   /* the node's part of the step watch; NULL: not watched */
    struct node_tree *tree;     /* its place in the watch's tree; NULL: none */
};

/* agent_up.c: agent_up_start makes the agent's loop, whose admit (with a
 * as its context) takes what dials the agent. Returns 0, or -1 with err. */
int agent_up_start(struct agent *a, enum net_admit (*admit)(void *, const struct hs_hello *,
                                                            bool, struct cohort_err *),
                   struct cohort_err *err);
/* Dials node's agent (WATCH_TREE_TOP: the holder) within timeout_s, in
 * place of the link up there was. Returns 0, or -1 with err. */
int agent_up_dial(struct agent *a, uint32_t node, int timeout_s, struct cohort_err *err);
/* Sends a frame to the holder. Returns 0, or -1 when out of memory or
 * there is no link. */
int agent_up_send(struct agent *a, uint16_t op, uint32_t client, const uint8_t *p1,
                  size_t n1, const uint8_t *p2, size_t n2);
/* Returns whether the link to the holder has over AGENT_UP_OUT_MAX
 * unsent. */
bool agent_up_full(const struct agent *a);

/* agent_local.c: agent_local_listen makes the loopback listener on a port
 * the kernel picks. Returns 0, or -1 with err. */
int agent_local_listen(struct agent *a, struct cohort_err *err);
/* Accepts what waits on the listener; only the job's user's connections
 * are kept. */
void agent_local_accept(struct agent *a);
/* Reads, parses and forwards what client i sent; writes what it waits for. */
void agent_local_serve(struct agent *a, size_t i, unsigned events);
/* Sends now the queries held while the link was not up (or fails them with
 * it). */
void agent_local_resume(struct agent *a);
/* Returns the client with that number, or NULL when it is gone. */
struct client *agent_local_find(struct agent *a, uint32_t id);
/* Queues bytes for a client and writes them as it takes them. A client
 * closing gets nothing more; one that would hold over AGENT_CLIENT_OUT_MAX
 * unread is closed with a line (its answers dropped). */
void agent_local_write(struct agent *a, struct client *c, const uint8_t *p, size_t n);
/* Writes a line (no newline) into the stderr of the client's task; when
 * drop, closes the client after its output. */
void agent_local_note(struct agent *a, struct client *c, const char *line, bool drop);
/* Closes the clients that are gone or done, and frees their slots. */
void agent_local_sweep(struct agent *a);
/* Handles a round of the holder's link (its events since the last
 * net_poll): passes its answers to the clients, and tells each its
 * failure. */
void agent_local_up_events(struct agent *a, struct net_event *ev, int n);

/* node_watch.c: the node's part of the step watch (--cohort-watch).
 * node_watch_start reads COHORT_WATCH (seconds; absent: not watched),
 * COHORT_WATCH_FILE and COHORT_WATCH_GPUS from the record and makes the
 * profiler's directory. Returns 0, or -1 with err. */
int node_watch_start(struct agent *a, const struct envlist *env, struct cohort_err *err);
/* The profiler's directory (the tasks' COHORT_WATCH_DIR), or NULL when the
 * node is not watched. */
const char *node_watch_dir(const struct agent *a);
/* The watch's stall in seconds, 0 when the node is not watched. */
uint32_t node_watch_stall(const struct agent *a);
/* Takes a plugin's "task LOCAL RANK PID" line; false when it is not one. */
bool node_watch_line(struct agent *a, const char *line);
/* Tells the holder that a task of the node ended (the plugin's "ended"
 * line), with the wall clock when watched. Once every task of the node
 * ended, it says goodbye to the holder and then "bye" to the plugin (on
 * the holder's node, once the holder told every node the watch is over),
 * which waits for it before the node's part of the step ends. */
void node_watch_ended(struct agent *a, uint32_t rank, uint32_t status);
/* The link to the holder is up: the node's name and GPUs are sent. */
void node_watch_connected(struct agent *a);
/* Something came from the holder at now. */
void node_watch_heard(struct agent *a, int64_t now);
/* Takes a frame from up that is the watch's (a beat, the verdict, the end
 * of the watch, the goodbye of the agent above), c being its head; false
 * when op is not the watch's. */
bool node_watch_frame(struct agent *a, uint16_t op, uint32_t c, const uint8_t *rest,
                      size_t len);
/* The link to the holder closed or failed: unless the holder said it ends,
 * its node is lost and the node's tasks are ended. */
void node_watch_link_down(struct agent *a);
/* Once a second: a beat to the holder, the tasks' states and profiler
 * records, and the holder's silence. */
void node_watch_tick(struct agent *a, int64_t now);
/* The longest the loop may wait (ms) before node_watch_tick is due. */
int64_t node_watch_wait(const struct agent *a, int64_t now);
/* The step ended on the node: goodbye to the holder, the directory
 * removed, the watch freed. */
void node_watch_end(struct agent *a);

/* node_tree.c: the agent's place in the watch's tree of nodes
 * (watch_tree.h), in a watched step whose store is not served: it listens
 * for the agents below it (on the holder's port, on its own node), passes
 * their frames up but their beats, judges their silence as the holder
 * judges its agents' and tells up the loss of one (STORE_WATCH_LOST),
 * beats to them, and passes down the verdict and the end of the watch.
 * node_tree_start reads COHORT_STORE_SERVE and COHORT_WATCH_FANOUT (1 to
 * WATCH_TREE_FANOUT_MAX; WATCH_TREE_FANOUT when unset) from the record and
 * listens when the node has agents below it. Unwatched (watched false), or
 * with the store served, it does nothing and every agent dials the holder.
 * Returns 0, or -1 with err. */
int node_tree_start(struct agent *a, const struct envlist *env, bool watched,
                    struct cohort_err *err);
/* The tree's fanout, 0 when there is no tree (every agent dials the holder). */
uint32_t node_tree_fanout(const struct agent *a);
/* The node whose agent this one dials: WATCH_TREE_TOP for the holder. */
uint32_t node_tree_parent(const struct agent *a);
/* How long the first dial up may take (s): the step's timeout, or
 * AGENT_PARENT_DIAL_S to a parent when that is shorter. */
int node_tree_dial_s(const struct agent *a);
/* Is the loop's admit: an agent of a node right below this one, once. */
enum net_admit node_tree_admit(void *ctx, const struct hs_hello *h, bool via_unix,
                               struct cohort_err *why);
/* Serves the listener in the agent's loop (before the first net_poll).
 * Returns 0, or -1 with err. */
int node_tree_attach(struct agent *a, struct cohort_err *err);
/* Handles a round of the loop's events of the agents below. */
void node_tree_events(struct agent *a, struct net_event *ev, int n);
/* Passes a frame from up (op, head c) down to every agent below. */
void node_tree_pass(struct agent *a, uint16_t op, uint32_t c, const uint8_t *p, size_t len);
/* The link up is connected. */
void node_tree_connected(struct agent *a);
/* The agent above is gone for this one: it said goodbye, its link closed
 * or failed, or it fell silent. True when the holder is to be dialed in its
 * place (node_tree_turn); false when the one above is the holder already,
 * which is then lost. */
bool node_tree_redial(struct agent *a);
/* Once a loop turn: dials the holder when node_tree_redial said so.
 * Returns 0, or -1 with err when that dial could not start. */
int node_tree_turn(struct agent *a, struct cohort_err *err);
/* Once a second (node_watch_tick): beats down, and the silence of the
 * agents below judged; gap_ms: how late the tick is when the agent was
 * stopped (that time is no one's silence), else 0. */
void node_tree_tick(struct agent *a, int64_t now, int64_t gap_ms);
/* The node's tasks ended: the agents below are told (they dial the holder). */
void node_tree_leave(struct agent *a);
void node_tree_end(struct agent *a);

/* peer.c: peer_tcp_owner finds the uid and socket inode of the loopback
 * TCP client connected to fd (from the kernel's socket diagnostics).
 * Returns 0, or -1. */
int peer_tcp_owner(int fd, uid_t *uid, unsigned long *inode);
/* Writes line and a newline to the standard error of the process of uid
 * holding the socket inode; false when no such process was found. */
bool peer_note(uid_t uid, unsigned long inode, const char *line);

#endif
