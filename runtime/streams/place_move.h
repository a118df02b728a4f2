/* place_move.h - what moves streams in the stream placement
 * (place_move.c: see place_types.h): bounds and shedding, a worker's
 * death or silence. */
#ifndef COHORT_PLACE_MOVE_H
#define COHORT_PLACE_MOVE_H

#include "place_types.h"

/* Workers above their bound shed their costliest streams. */
int place_settle(struct place *p);
/* Every stream w held or was about to get goes elsewhere; expired: w is
 * alive but silent (its owned streams are revoked to tell it). */
int place_drop_worker(struct place *p, uint32_t w, bool expired);

#endif
