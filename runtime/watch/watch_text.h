/* watch_text.h - a verdict of the step watch (watch.h) as the user reads
 * it: one line for the step's stderr, and one JSON object (jansson) for the
 * file the job names in COHORT_WATCH_FILE, so that a batch script can
 * resubmit without the node. */
#ifndef COHORT_WATCH_TEXT_H
#define COHORT_WATCH_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "watch.h"

/* What a verdict names besides its numbers: node host names by node id,
 * each rank's GPU text ("" or NULL: none known), the step's ids, and the
 * wall clock (ms since the epoch) that matches the verdict's now_ms. */
struct watch_names {
    const char *const *node_host;  /* n_nodes */
    const char *const *rank_gpu;   /* n_ranks, entries may be NULL */
    const uint32_t *rank_node;     /* n_ranks */
    uint32_t n_nodes, n_ranks;
    uint32_t job, step;
    int64_t wall_now_ms;
};

/* The line, without a newline ("cohort: rank 3 (n2, GPU 0000:47:00.0) was
 * killed by signal 9 at 12:00:03; ending the step"), cut to cap. */
void watch_line(const struct watch_verdict *v, const struct watch_names *n, char *out,
                size_t cap);

/* The JSON object (one line, malloc'd) naming kind, ranks, nodes, GPU,
 * status, collective and times, with line as its "line". NULL when out of
 * memory. */
char *watch_json(const struct watch_verdict *v, const struct watch_names *n, const char *line);

#endif
