/* watch_holder.h - the store holder's part of the step watch
 * (--cohort-watch): it keeps the step's watch (watch.h) fed with what the
 * node agents report, beats to every agent, and sends the verdict, once,
 * to every agent, which ends its node's tasks (the teller's node tells the
 * user). store_service.c owns the connections and calls it. */
#ifndef COHORT_WATCH_HOLDER_H
#define COHORT_WATCH_HOLDER_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_config.h"
#include "error.h"
#include "net.h"
#include "wire.h"

struct watch_holder;

/* A watch for cfg's step (cfg->watch_stall_s > 0), sending on agent[node]
 * (the holder's per-node connections, NULL where none). NULL with err when
 * out of memory. */
struct watch_holder *watch_holder_new(const struct coord_config *cfg, struct net_conn **agent,
                                      struct cohort_err *err);
void watch_holder_free(struct watch_holder *wh);

/* Node's agent was admitted. */
void watch_holder_joined(struct watch_holder *wh, uint32_t node, int64_t now);
/* Bytes came from node's agent, read now or held back (its beats count even
 * while the holder leaves its frames unread). */
void watch_holder_heard(struct watch_holder *wh, uint32_t node, int64_t now);
/* Node's link closed (after its last frames were read). */
void watch_holder_closed(struct watch_holder *wh, uint32_t node, int64_t now);

/* A frame of node's agent, its op, the head's number c, and what follows
 * the head. Returns 1 when it was the watch's (handled), 0 when it is not
 * the watch's, -1 when it is the watch's but malformed (a protocol break). */
int watch_holder_frame(struct watch_holder *wh, uint32_t node, uint16_t op, uint32_t c,
                       const uint8_t *rest, size_t len, int64_t now);

/* Sends what is due at now: a beat to every agent every WATCH_BEAT_MS, the
 * verdict once one is due. Returns the longest the holder may wait (ms)
 * before calling it again. -1 when out of memory. */
int64_t watch_holder_tick(struct watch_holder *wh, int64_t now);

/* The holder's loop woke at now, before it reads what came: a wake-up
 * seconds later than watch_holder_tick asked for means the holder was
 * stopped (a suspended step), and that time is taken off every wait. */
void watch_holder_woke(struct watch_holder *wh, int64_t now);

#endif
