/* watch_tree.c - the shape of the watch's tree of nodes (see watch_tree.h). */
#include "watch_tree.h"

#include "base_text.h"

int watch_tree_parse_fanout(const char *text, uint32_t *out, struct cohort_err *err)
{
    const char *p = text;
    uint64_t n;
    if (base_parse_decimal(&p, NULL, 0, WATCH_TREE_FANOUT_MAX, &n, NULL) < 0 || *p || n == 0)
        return cohort_fail(err, "COHORT_WATCH_FANOUT='%.40s' is not a number from 1 to %u: "
                           "give one, or unset it for the default (%u)", text,
                           WATCH_TREE_FANOUT_MAX, WATCH_TREE_FANOUT);
    *out = (uint32_t)n;
    return 0;
}

uint32_t watch_tree_up(uint32_t fanout, uint32_t node)
{
    if (fanout == 0 || node == 0 || node == WATCH_TREE_TOP)
        return WATCH_TREE_TOP;
    uint32_t p = (node - 1) / fanout;
    return p == 0 ? WATCH_TREE_TOP : p;
}

uint32_t watch_tree_kids(uint32_t fanout, uint32_t n_nodes, uint32_t node, uint32_t *first)
{
    *first = 0;
    if (fanout == 0)
        return node == WATCH_TREE_TOP ? n_nodes : 0;
    if (node == WATCH_TREE_TOP) /* node 0, and nodes 1 to fanout */
        return n_nodes - 1 < fanout ? n_nodes : fanout + 1;
    if (node == 0)
        return 0;
    uint64_t start = (uint64_t)node * fanout + 1;
    if (start >= n_nodes)
        return 0;
    *first = (uint32_t)start;
    return n_nodes - start < fanout ? (uint32_t)(n_nodes - start) : fanout;
}

bool watch_tree_below(uint32_t fanout, uint32_t top, uint32_t node)
{
    if (top == WATCH_TREE_TOP)
        return true;
    while (node != WATCH_TREE_TOP && node != top)
        node = watch_tree_up(fanout, node);
    return node == top;
}

uint32_t watch_tree_depth(uint32_t fanout, uint32_t node)
{
    uint32_t d = 0;
    while ((node = watch_tree_up(fanout, node)) != WATCH_TREE_TOP)
        d++;
    return d;
}
