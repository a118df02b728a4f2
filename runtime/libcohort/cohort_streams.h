/* cohort_streams.h - long-lived inputs (camera streams) placed on every
 * worker of a step: each stream on one worker at a time, kept there while
 * that worker lives (sticky), no worker above (1 + epsilon) times its fair
 * share of the total cost (capacity-weighted), and moved only after its
 * owner let it go.
 *
 *   struct cohort_streams *s;
 *   if (cohort_streams_open(c, "cams", 1.0, &s) != 0) ... cohort_error(c)
 *   if (cohort_rank(c) == 0)
 *       for (int i = 0; i < 200; i++) cohort_streams_add(s, url[i], 1.0);
 *   struct cohort_stream_event ev;
 *   while (running) {
 *       int r = cohort_streams_poll(s, &ev, 100);
 *       if (r == 1 && ev.type == COHORT_STREAM_ASSIGN)
 *           ... open ev.key, tag its results with ev.epoch ...
 *       else if (r == 1)
 *           ... stop working on ev.key, then cohort_streams_release(s, &ev) ...
 *       ... work on this worker's streams ...
 *   }
 *   cohort_streams_close(s);
 *
 * The set is served by a coordinator process of its own (started by rank
 * 0 at cohort_streams_open, apart from every worker: the same program as a
 * work queue's), reached over cohort's authenticated connections.
 * Placement: consistent hashing with bounded loads (Mirrokni, Thorup and
 * Zadimoghaddam), weighted by capacity; adding or removing a stream, or a
 * worker joining or dying, moves only the streams that have to move.
 *
 * Never two owners: a stream goes to another worker only after its owner
 * released it (cohort_streams_release after a REVOKE), or after the owner
 * is known dead (its connection closed: its streams are assigned elsewhere
 * at once), or its lease ran out: a worker that does not call into the
 * set (cohort_streams_poll is enough) for lease_timeout_s loses its
 * streams, and is told REVOKE for them when it calls again. A worker that
 * stalls that long cannot be stopped by anyone but itself: until it calls
 * again it may still work on streams another worker now owns. Every
 * ownership has a larger epoch than the one before, so tag results with
 * the epoch: a late owner's carry an older one than the current owner's.
 *
 * Every call may wait for the coordinator's answer; none waits without a
 * deadline. Calls on one set from one thread at a time. */
#ifndef COHORT_STREAMS_H
#define COHORT_STREAMS_H

#include <stddef.h>
#include <stdint.h>

#include "cohort.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cohort_streams;

enum cohort_stream_event_type { COHORT_STREAM_ASSIGN = 1, COHORT_STREAM_REVOKE = 2 };

struct cohort_stream_event {
    enum cohort_stream_event_type type;
    char key[256];          /* the stream, e.g. "rtsp://cam17/main" */
    uint64_t epoch;         /* fencing number of this ownership */
};

struct cohort_streams_opts {
    size_t size;            /* sizeof(struct cohort_streams_opts), so the struct can grow */
    double epsilon;         /* 0: 0.25; no worker above (1 + epsilon) x its fair share */
    int lease_timeout_s;    /* 0: 30; a worker silent this long loses its streams */
    int shed_after_s;       /* 0: 10; reported load above the bound this long: shed */
};

/* Collective: every rank joins the set (name, 1..128 characters, the same
 * on every rank) as a worker of the given capacity (> 0, relative to the
 * others': e.g. 2.0 for a worker twice as fast; 0 means 1.0), and returns
 * once every rank is in. 0, or -1 with the reason in cohort_error(c). */
int cohort_streams_open(struct cohort *c, const char *name, double capacity,
                        struct cohort_streams **s);
/* The same with options (NULL: the defaults); every rank gives the same. */
int cohort_streams_open_opts(struct cohort *c, const char *name, double capacity,
                             const struct cohort_streams_opts *opts, struct cohort_streams **s);

/* Any rank, any time: add a stream (key of 1..255 bytes; cost > 0, 0 means
 * 1.0). Adding a stream the set has is a no-op (its cost stays). 0 or -1. */
int cohort_streams_add(struct cohort_streams *s, const char *key, double cost);
/* Any rank, any time: remove a stream; its owner is told REVOKE. Removing
 * a stream the set does not have is a no-op, not an error. 0 or -1. */
int cohort_streams_remove(struct cohort_streams *s, const char *key);

/* The next change of this worker's streams: 1 with *ev filled, 0 when none
 * came within timeout_ms (0: only what has arrived), -1 on error. */
int cohort_streams_poll(struct cohort_streams *s, struct cohort_stream_event *ev,
                        int timeout_ms);

/* This worker has stopped working on the stream of ev (a REVOKE, or an
 * ASSIGN it gives up: the stream goes to another worker, one with room if
 * any; with no other worker in the set it comes back to this one under a
 * new epoch). Only then may another worker get it. A release of an ownership
 * that already ended (the stream moved on after this worker's lease ran
 * out, or was removed) is a no-op. -1 when this worker does not own it at
 * that epoch (named in cohort_error). */
int cohort_streams_release(struct cohort_streams *s, const struct cohort_stream_event *ev);

/* Optional: this worker's measured load on a stream it owns (>= 0, e.g.
 * ms of GPU time per second; one unit for the whole set). A worker whose
 * reported load stays above its bound for shed_after_s gives up its most
 * loaded streams (REVOKE). A report for a stream it no longer owns is
 * dropped. 0 or -1. */
int cohort_streams_report(struct cohort_streams *s, const char *key, double load);

/* The set as the coordinator sees it. */
struct cohort_streams_status {
    uint64_t streams;       /* in the set */
    uint64_t moving;        /* revoked, waiting for their owner's release */
    uint64_t unplaced;      /* no worker to hold them (none is in the set) */
    uint64_t moves;         /* streams that went from one worker to another, so far */
    uint64_t workers;       /* in the set now */
};
/* Every ASSIGN and REVOKE for this worker that the coordinator sent
 * before its answer is queued for cohort_streams_poll when this returns.
 * 0 or -1. */
int cohort_streams_status(struct cohort_streams *s, struct cohort_streams_status *st);

/* Collective: this worker leaves the set, its streams going at once to
 * the workers still in it (stop working on them first), then waits for
 * every rank to close; frees s. 0 or -1. */
int cohort_streams_close(struct cohort_streams *s);

#ifdef __cplusplus
}
#endif

#endif
