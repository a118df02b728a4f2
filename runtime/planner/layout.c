/* layout.c - task placement of a step (see layout.h). Block, cyclic and
 * plane are one algorithm: rounds over the nodes, each node taking up to
 * `plane` of its remaining tasks per round (block: all at once; cyclic: 1). */
#include "layout.h"

#include <stdlib.h>
#include <string.h>

const char *layout_dist_name(enum cohort_dist d)
{
    switch (d) {
    case COHORT_DIST_BLOCK: return "block";
    case COHORT_DIST_CYCLIC: return "cyclic";
    case COHORT_DIST_PLANE: return "plane";
    case COHORT_DIST_ARBITRARY: return "arbitrary";
    }
    return "?";
}

static uint32_t take(uint32_t have, uint32_t round, uint32_t plane)
{
    uint64_t used = (uint64_t)round * plane;
    if (used >= have)
        return 0;
    return have - used < plane ? (uint32_t)(have - used) : plane;
}

static int rounds_layout(const struct cohort_step *s, uint32_t node, uint32_t plane,
                         uint32_t *ranks)
{
    uint32_t want = s->tasks_per_node[node], got = 0;
    uint64_t base = 0;
    for (uint32_t round = 0; got < want; round++) {
        for (uint32_t n = 0; n < s->num_nodes; n++) {
            uint32_t k = take(s->tasks_per_node[n], round, plane);
            if (n == node)
                for (uint32_t i = 0; i < k; i++)
                    ranks[got++] = (uint32_t)(base + i);
            base += k;
        }
    }
    return 0;
}

int layout_node_ranks(const struct cohort_step *s, uint32_t node, uint32_t *ranks,
                      struct cohort_err *err)
{
    if (node >= s->num_nodes)
        return cohort_fail(err, "node index %u is outside the step's %u nodes", node,
                           s->num_nodes);
    switch (s->dist) {
    case COHORT_DIST_BLOCK:
        return rounds_layout(s, node, UINT32_MAX, ranks);
    case COHORT_DIST_CYCLIC:
        return rounds_layout(s, node, 1, ranks);
    case COHORT_DIST_PLANE:
        return rounds_layout(s, node, s->plane_size, ranks);
    case COHORT_DIST_ARBITRARY: {
        char name[HOSTLIST_MAX_NAME + 1], host[HOSTLIST_MAX_NAME + 1];
        uint32_t got = 0;
        if (hostlist_nth(s->nodes, node, name, sizeof name) < 0)
            return cohort_fail(err, "node index %u is outside the step's node list", node);
        for (uint32_t t = 0; t < s->num_tasks && got < s->tasks_per_node[node]; t++) {
            hostlist_nth(s->task_hosts, t, host, sizeof host);
            if (strcmp(host, name) == 0)
                ranks[got++] = t;
        }
        if (got != s->tasks_per_node[node])
            return cohort_fail(err,
                               "SLURM_HOSTFILE places %u tasks on %s but "
                               "SLURM_STEP_TASKS_PER_NODE says %u",
                               got, name, s->tasks_per_node[node]);
        return 0;
    }
    }
    return cohort_fail(err, "unknown distribution");
}

int layout_rank_nodes(const struct cohort_step *s, uint32_t *rank_node, struct cohort_err *err)
{
    uint32_t *ranks = malloc(sizeof *ranks * (s->num_tasks ? s->num_tasks : 1));
    int rc = ranks ? 0 : cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
    for (uint32_t n = 0; n < s->num_nodes && rc == 0; n++) {
        rc = layout_node_ranks(s, n, ranks, err);
        for (uint32_t i = 0; rc == 0 && i < s->tasks_per_node[n]; i++)
            rank_node[ranks[i]] = n;
    }
    free(ranks);
    return rc;
}

int layout_task0_host(const struct cohort_step *s, char *buf, size_t len)
{
    if (s->dist == COHORT_DIST_ARBITRARY)
        return hostlist_nth(s->task_hosts, 0, buf, len);
    return hostlist_nth(s->nodes, 0, buf, len);
}
