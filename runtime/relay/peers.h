/* peers.h - a queue's or stream set's coordinator's workers, as it sees
 * them through the node relays (relay.h). It holds one authenticated
 * connection per relay at the top of the relays' tree (at most the fanout,
 * however many nodes), not one per rank. A relay tells of each rank below it joining
 * (RELAY_JOIN) and going (RELAY_GONE), and carries their WIRE_WORK frames
 * with the rank in the header, both ways. A relay's death is the loss of
 * every rank it carried; a relay that speaks for a rank not below it, or
 * sends what is not a frame of this protocol, is closed as dead (with one
 * line). The coordinator's services (work_service.c, streams_service.c) see
 * ranks only. */
#ifndef COHORT_PEERS_H
#define COHORT_PEERS_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_config.h"
#include "net.h"
#include "wire.h"

/* The service's callbacks, each called with ctx. */
struct peers_ops {
    void *ctx;
    /* Rank proved itself to its node's relay. */
    void (*joined)(void *ctx, uint32_t rank);
    /* Takes a WIRE_WORK frame of rank. Returns 0, or -1 when it is not one
     * of the service's requests (the service has said so; the rank is
     * dropped). */
    int (*frame)(void *ctx, uint32_t rank, const struct wire_frame *f);
    /* Rank is gone: its connection closed, it was dropped, or its relay died. */
    void (*lost)(void *ctx, uint32_t rank);
};

struct peers;

/* Makes the peers for cfg's ranks (cfg and ops outlive it). Returns 0, or
 * -1 with err. */
int peers_new(const struct coord_config *cfg, const struct peers_ops *ops, struct peers **out,
              struct cohort_err *err);
void peers_free(struct peers *p);

/* Is net's admit for the coordinator (ctx: the peers): it admits a relay of
 * one of the step's nodes, one at a time per node. */
enum net_admit peers_admit(void *ctx, const struct hs_hello *h, bool via_unix,
                           struct cohort_err *why);

/* Gives the peers the loop whose connections they are (before the first
 * net_poll). */
void peers_attach(struct peers *p, struct net *net);

/* Handles a round of net_poll's events, in order: relays joining, their
 * frames (ranks joining, their requests, ranks going) and relays lost. */
void peers_events(struct peers *p, struct net_event *ev, int n);

/* Queues a WIRE_WORK frame to rank, when it is connected, on its relay's
 * connection; the next net_poll writes it with the round's others. Returns
 * 0, or -1 when out of memory (a dead relay shows as its ranks lost). */
int peers_send(struct peers *p, uint32_t rank, uint16_t op, const void *b, uint32_t len);

/* Closes rank's connection (its relay is told) and calls lost. */
void peers_drop(struct peers *p, uint32_t rank);

#endif
