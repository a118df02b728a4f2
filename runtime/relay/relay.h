/* relay.h - a node relay. There is one per node of a step for each work
 * queue or stream set, run in the node's relay process of the step (host.h:
 * cohort-work-coord with a COORD_RELAY start record, started by the node's
 * first rank in a session of its own), so that the coordinator holds one
 * connection per node up to the relays' fanout, and beyond it one per relay
 * at the top of their tree (coord_config.h).
 *
 * It dials the one above it first, the coordinator or its parent relay
 * (the step's handshake, as rank COORD_AGENT_RANK of its node), then
 * listens on its node's Unix socket (coord_relay_addr: an abstract name
 * from rank 0's nonce; other uids are closed at once, and every rank
 * proves the step's key) and, when relays dial it, on a TCP port of its
 * own, and writes "PORT ADDR" on its standard output (PORT 1 without
 * relays below; ADDR the local address of its connection up, where the
 * relays below reach it) or "error WHY". From then on it relays: a rank
 * that proved itself is told up (RELAY_JOIN), its WIRE_WORK frames go up
 * with its rank in the header, those for it come down to it, and its
 * closed connection is told up at once (RELAY_GONE); RELAY_DROP closes a
 * rank. What a relay below sends for the ranks below it goes up as it is,
 * and what comes for them goes down to it; its death is told up as
 * RELAY_GONE for each rank that joined through it. When its connection
 * up closes, or the one above says the way closed further up, every rank
 * and relay below is told where the way broke (RELAY_GONE for rank
 * UINT32_MAX: a rank fails at once, naming it), and so is each of its
 * node's ranks that joins later; it ends once every one of them has
 * joined, or after the join timeout. Otherwise it ends when nothing below
 * is connected: for the join timeout times the tree's levels plus one
 * from its start (the levels below start one after the other), for the
 * join timeout after the last one left. A rank's death never ends it: it
 * outlives the rank that started it. Its process is named
 * "cohort-relay" (ps, top). */
#ifndef COHORT_RELAY_H
#define COHORT_RELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_config.h"
#include "error.h"

/* In a process shared by several relays (host.h), a relay may hold at once
 * this many unproven connections from other hosts (strangers', and the
 * relays' below while they prove themselves), beyond the slots kept for its
 * ranks and relays (net_reserve). So a flood on one relay's port cannot take
 * the descriptors of the others, nor of its own peers (the oldest of the
 * largest source's makes room for a new one). Its node's ranks, of its uid,
 * count only against the whole: the slots and this room. It equals the
 * connection layer's NET_ROOM_MIN. */
#define RELAY_POOL 64

/* Serves cfg (a COORD_RELAY record) until the end described above. Returns
 * 0, -1 with err when it failed serving, or -2 with err when it could not
 * start (with code COHORT_E_RESOURCE when the open-file limit was too low).
 * Its start is told on standard output when tell is NULL, else on *tell,
 * which is then closed and set to -1 (also when the telling failed, which
 * returns -2). others counts the descriptors its process holds besides
 * (host.h: the node's other relays' and its own), counted with its own
 * against the open-file limit; when it is not 0, the relay's connections
 * are held to what relay_fds counts for it. A relay holds no state outside
 * its call, so several run at once in threads of one process. */
int relay_run(const struct coord_config *cfg, int *tell, uint32_t others,
              struct cohort_err *err);

/* Returns how many descriptors a relay of cfg may hold: one each for its
 * node's ranks, the relays below it, the one above and its listeners; in a
 * shared process also its loop's own two and RELAY_POOL. */
uint32_t relay_fds(const struct coord_config *cfg, bool shared);

#endif
