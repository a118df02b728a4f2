/* coord_config.h - what the rank that starts a work coordinator tells it
 * through its standard input: the step (job, step, every rank's node, the
 * view every worker's hello must carry), how to prove itself (the step's
 * secret, or munge), and what it serves. It serves a queue (name, items,
 * journal, output directory, lease timeout, attempts), a stream set (name,
 * worker lease, load bound, shedding) or the step's store (the port it
 * listens on, and whether it watches the step: --cohort-watch), whose
 * peers are the node agents, one per node. For a node
 * relay (relay.h), it says where the coordinator is and the name of the
 * node's socket. It is one binary record, encoded and checked here, so
 * that the library and the coordinator cannot disagree on it. */
#ifndef COHORT_COORD_CONFIG_H
#define COHORT_COORD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "auth.h"
#include "error.h"
#include "handshake.h"

#define COORD_NAME_MAX 128
#define COORD_PATH_MAX 4096

enum coord_kind {
    COORD_QUEUE = 0,              /* a work queue (cohort_work.h) */
    COORD_STREAMS = 1,            /* a stream set (cohort_streams.h) */
    COORD_STORE = 2,              /* the step's store (PyTorch's TCPStore queries, store_kv.h) */
    COORD_RELAY = 3,              /* a node's relay to a queue's or stream set's coordinator */
};

/* A node agent's or node relay's hello carries this rank (and its own
 * node). */
#define COORD_AGENT_RANK 0xfffffffeu

/* The relays of a queue's or stream set's step form a tree of nodes, as
 * the bootstrap's leaders do: the coordinator accepts the relays of nodes
 * 0 to fanout-1, the relay of node j those of nodes (j+1)*fanout to
 * (j+1)*fanout + fanout-1. COORD_TOP stands for the coordinator. */
#define COORD_TOP UINT32_MAX
#define COORD_DEFAULT_FANOUT 128u
#define COORD_MAX_FANOUT 65536u

struct coord_config {
    enum coord_kind kind;
    struct auth_key key;
    uint32_t job, step, size, num_nodes;
    uint32_t *rank_node;          /* size entries (malloc'd by coord_config_decode) */
    uint8_t view[HS_VIEW_LEN];
    uint64_t n_items;             /* for a queue */
    uint32_t lease_timeout_s;     /* for a queue's leases; for a stream set's workers */
    uint32_t max_attempts;        /* for a queue */
    double epsilon;               /* a stream set's load bound (place.h) */
    uint32_t shed_after_ms;       /* for a stream set (place.h) */
    uint32_t join_timeout_s;      /* Every worker connects within this, or is given up. */
    uint16_t port;                /* the port to listen on (0: one the kernel picks); for
                                   * a relay, its coordinator's */
    uint32_t node;                /* for a relay, its node */
    char host[256];               /* for a relay, the host it dials: its coordinator's or its
                                   * parent relay's (port is that one's) */
    uint32_t fanout;              /* relays below the coordinator, and below each relay
                                   * (queues and stream sets; 1 to COORD_MAX_FANOUT); for
                                   * the store, the watch's tree's (watch_tree.h), 0 when
                                   * every agent dials the holder */
    bool verbose;
    uint32_t watch_stall_s;       /* for the store: the step watch's stall in seconds
                                   * (watch.h); 0: the step is not watched */
    char name[COORD_NAME_MAX + 1]; /* what is served; for a relay, its socket's name */
    char journal[COORD_PATH_MAX + 1]; /* "": none */
    char output[COORD_PATH_MAX + 1];  /* a queue's results' directory; "": none */
};

/* Returns the node whose relay node's relay dials, or COORD_TOP. */
uint32_t coord_relay_up(const struct coord_config *cfg, uint32_t node);

/* Returns how many relays dial node's (COORD_TOP: the coordinator). */
uint32_t coord_relay_kids(const struct coord_config *cfg, uint32_t node);

/* Returns the relay below from's (COORD_TOP: the coordinator) whose subtree
 * holds node (node's own relay when it dials from's), or UINT32_MAX when
 * node is not below from. */
uint32_t coord_relay_toward(const struct coord_config *cfg, uint32_t from, uint32_t node);

/* Returns how many relays are between node's and the coordinator. */
uint32_t coord_relay_depth(const struct coord_config *cfg, uint32_t node);

/* Returns the levels of the relays' tree (1 up to fanout nodes). They start
 * one after the other, each within the join timeout, and the ranks come
 * after the last, so the coordinator waits for the ranks, and a relay for
 * anything below it, (levels + 1) join timeouts from its start. */
uint32_t coord_relay_levels(const struct coord_config *cfg);

/* Encodes the record of cfg, malloc'd into *out (*len bytes). Returns 0,
 * or -1 when out of memory. */
int coord_config_encode(const struct coord_config *cfg, uint8_t **out, size_t *len);

/* Reads a record back (cfg->rank_node is malloc'd; free it with
 * coord_config_free). Returns 0, or -1 with err when it is not a whole
 * record. */
int coord_config_decode(const uint8_t *p, size_t len, struct coord_config *cfg,
                        struct cohort_err *err);
void coord_config_free(struct coord_config *cfg);

/* Returns whether a proven hello comes from one of cfg's peers, with the
 * step's view. A store's peers are the node agents (COORD_AGENT_RANK) of
 * the step's nodes; a queue's or stream set's are the relays
 * (COORD_AGENT_RANK) that dial it; a relay's are the ranks of its node and
 * the relays that dial it. */
bool coord_config_has_rank(const struct coord_config *cfg, const struct hs_hello *h);

/* coord_relay_name writes the name of node's relay to the coordinator that
 * nonce (16 random bytes, rank 0's, given to every rank) stands for:
 * "cohort-relay-" and 32 hex digits of SHA-256(nonce, node), so that one
 * node's name (which any local user can read in /proc/net/unix once it is
 * held) tells nothing of another's. coord_relay_addr writes its Unix
 * socket's abstract address (nothing on disk; net's Unix listener refuses
 * other uids) and returns the address's length. */
void coord_relay_name(const uint8_t nonce[16], uint32_t node, char out[COORD_NAME_MAX + 1]);
socklen_t coord_relay_addr(const char *name, struct sockaddr_un *ua);

/* Writes the name of the socket of the node's relay process (host.h) for
 * the step of cfg (a relay's record): "cohort-relays-" and 32 hex digits of
 * HMAC-SHA256(the step's secret, uid, job, step, node). The name is the same
 * for every queue and set of the step, and cannot be worked out without the
 * secret (once held, /proc/net/unix shows it: a local user can take it
 * after the process ends, with the same effect as below).
 * Under munge there is no shared secret, so the name hashes the uid, job,
 * step and node with SHA-256, which a local user can work out and take
 * first. Then every queue or set has a relay process of its own, as without
 * the host: the rank checks the owner before it sends anything. */
void coord_host_name(const struct coord_config *cfg, char out[COORD_NAME_MAX + 1]);

#endif
