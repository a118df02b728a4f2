/* place_tree.h - the trees over the workers of the stream placement
 * (place_tree.c, the lowest of its modules: see place_types.h): the first
 * worker over its bound, with room, or with its lease run out, without a
 * scan of all. */
#ifndef COHORT_PLACE_TREE_H
#define COHORT_PLACE_TREE_H

#include "place_types.h"

#define PLACE_GATE_MIN 1e-100 /* below it, a capacity or cost turns the gates off */
/* Thresholds on the tree's hi (strictly above) and lo (at or below) that
 * every worker over its bound, and every worker with room for the
 * cheapest stream, passes (with few others). */
struct place_gates {
    double over, room;
};
void place_gates(const struct place *p, struct place_gates *g);
/* The threshold on the tree's rep (strictly above) that every worker
 * whose reported load is over its reported bound passes, with total the
 * reported loads' sum (+inf: none can be). */
double place_rep_gate(const struct place *p, double total);
/* What a worker must pass: PLACE_OVER, hi > thr (it may be over its
 * bound); PLACE_ROOM, lo <= thr (it may have room for the cheapest
 * stream); PLACE_TAKER, that or a load below half the cheapest stream's
 * (it may have room for any stream: place_ring.c's room); PLACE_REPORTED,
 * rep > thr (it may be over its reported bound). */
enum place_pass { PLACE_OVER, PLACE_ROOM, PLACE_TAKER, PLACE_REPORTED };
/* The trees for nw workers, all dead: 0, or -1 when out of memory. */
int place_tree_new(struct place *p);
/* Worker w's load, capacity, life or counted streams changed. */
void place_tree_touch(struct place *p, uint32_t w);
/* Worker w's capacity, life, lease or reported load changed (the second
 * tree). */
void place_tree_time(struct place *p, uint32_t w);
/* Worker w's lease alone changed (cheaper than place_tree_time). */
void place_tree_lease(struct place *p, uint32_t w);
/* min_cost changed: every worker. */
void place_tree_rebuild(struct place *p);
/* The first worker at or after from that passes, or -1. */
long place_tree_next(const struct place *p, size_t from, enum place_pass pass, double thr);
/* The first live worker at or after from whose lease ended by now, or -1. */
long place_tree_expired(const struct place *p, size_t from, int64_t now);
/* The least lo of a worker but exclude (-1: none excluded); +inf for none. */
double place_tree_least(const struct place *p, int32_t exclude);
/* The first worker whose node is not what its state says, or -1. */
long place_tree_stale(const struct place *p);

#endif
