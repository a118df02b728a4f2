/* place_ring.h - the stream placement's hash ring (place_ring.c: see
 * place_types.h): the ring for the live workers, a stream's preference
 * walk, the load bound and the choice of a worker. */
#ifndef COHORT_PLACE_RING_H
#define COHORT_PLACE_RING_H

#include "place_types.h"

#define PLACE_MAX_POINTS_FACTOR 16 /* a worker's ring points: at most this x vnodes */

/* The 64-bit hash of a stream's key: where its walk on the ring begins. */
uint64_t place_hash(const char *key);
/* The ring for the live workers now (nothing to do when they have not
 * changed): 0, or -1 when out of memory. Before every place_first and
 * place_choose. */
int place_ring_sync(struct place *p);
/* The first live worker of the preference list of hash, or -1. */
int32_t place_first(const struct place *p, uint64_t hash);
/* The n stream indices of v in increasing order, each once: their count. */
size_t place_index_order(uint32_t *v, size_t n);
/* The streams whose first live worker is w (the ring up to date), by
 * index in increasing order, into a malloc'd *out: their count, or -1
 * when out of memory. Looks only at the buckets of w's stretches of the
 * ring. */
long place_first_of(const struct place *p, uint32_t w, uint32_t **out);
/* The worker s should go to: the first of its preference list with room
 * (never exclude). With none: with fallback, the least loaded after taking
 * it (exclude only when no other is live), else -1. -1 when no worker is
 * live. */
int32_t place_choose(struct place *p, const struct stream *s, int32_t exclude, bool fallback);
double place_bound_of(const struct place *p, uint32_t w, double total_cost);

#endif
