/* place_own.h - the stream placement's streams (place_own.c: see
 * place_types.h): by key, their ownership and epochs, each worker's lists
 * of them, their reported loads and the actions. */
#ifndef COHORT_PLACE_OWN_H
#define COHORT_PLACE_OWN_H

#include "place_types.h"

struct stream *place_find(const struct place *p, const char *key);
/* A new stream, unplaced, in the table; NULL when out of memory. */
struct stream *place_insert(struct place *p, const char *key, double cost);
/* Records an action; -1 when out of memory. */
int place_act(struct place *p, enum place_act_type t, uint32_t w, uint64_t epoch,
              const char *key);
/* Gives s to worker w under a new epoch (ASSIGN). */
int place_assign(struct place *p, struct stream *s, uint32_t w);
/* Tells s's owner to stop (REVOKE); s goes to target at the release. */
int place_revoke(struct place *p, struct stream *s, int32_t target);
/* s's ownership ended (released, owner dead or expired): its next owner. */
int place_handoff(struct place *p, struct stream *s, int32_t exclude);
/* Forgets s (the array stays dense). */
void place_forget(struct place *p, struct stream *s);
/* Where s's cost counts: its owner, its target, or -1. */
int32_t place_counted(const struct stream *s);
/* s's reported load counts on its owner's (owned, with a report) no more
 * (sign -1: before a change of its load, state or owner) or again (1:
 * after a change of its load). */
void place_rep_count(struct place *p, const struct stream *s, int sign);
/* Worker w's reported load summed afresh (rep_err that sum's rounding). */
void place_rep_exact(struct place *p, uint32_t w);
/* The set's reported load, the sum of the workers': those with the most
 * error summed afresh, each at most once, until the error left that
 * summing afresh would remove is within 1e-13 of it. */
double place_rep_total(struct place *p);
/* Whether each worker's reported load is within rep_err of its streams'
 * and each worker over its reported bound is in the list (place_check). */
int place_reported_check(const struct place *p, struct cohort_err *err);
/* Moves s's cost from where it counted (before) to where it counts now. */
void place_recount(struct place *p, const struct stream *s, int32_t before);
/* s (MOVING) goes to target (-1: chosen at the release) instead. */
void place_retarget(struct place *p, struct stream *s, int32_t target);
/* The streams in worker w's lists, by index, ascending, each once: their
 * count (*out malloc'd), or -1 when out of memory. */
long place_streams_of(const struct place *p, uint32_t w, uint32_t **out);
/* Whether the lists and counts agree with the streams (place_check). */
int place_lists_check(const struct place *p, struct cohort_err *err);

#endif
