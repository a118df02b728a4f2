/* test_watch_tree.c - the shape of the watch's tree of nodes
 * (watch_tree.h): every node below exactly one parent, which counts it
 * among its kids; node 0 and the first fanout nodes at the holder; the
 * sockets of the holder and of every agent at 1,024 and 16,384 nodes
 * within the issue's ~1,100; a fanout of 0 with every node at the holder;
 * COHORT_WATCH_FANOUT's values, good and bad. */
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "watch_tree.h"

/* Checks every node of a step of n nodes under fanout f: its parent
 * counts it among its kids, it is below its parent and the top, and the
 * kids' counts add up. Returns the number of faults; *most gets the most
 * sockets a process holds (kids, and one up for an agent). */
static unsigned check_shape(uint32_t f, uint32_t n, uint32_t *most)
{
    unsigned bad = 0;
    uint64_t total = 0;
    uint32_t first;
    *most = watch_tree_kids(f, n, WATCH_TREE_TOP, &first);
    total += *most;
    for (uint32_t node = 0; node < n; node++) {
        uint32_t up = watch_tree_up(f, node), k = watch_tree_kids(f, n, node, &first);
        uint32_t pf, pk = watch_tree_kids(f, n, up, &pf);
        bool counted = up == WATCH_TREE_TOP ? (node == 0 || node < pk)
                                            : node >= pf && node - pf < pk;
        bad += !counted || !watch_tree_below(f, up, node) ||
               !watch_tree_below(f, WATCH_TREE_TOP, node) || !watch_tree_below(f, node, node);
        bad += k && watch_tree_up(f, first) != node;
        if (k + 1 > *most)
            *most = k + 1;
        total += k;
    }
    return bad + (total != n);
}

int main(void)
{
    uint32_t first, most;
    ok(watch_tree_up(128, 0) == WATCH_TREE_TOP && watch_tree_up(128, 1) == WATCH_TREE_TOP &&
           watch_tree_up(128, 128) == WATCH_TREE_TOP && watch_tree_up(128, 129) == 1 &&
           watch_tree_up(128, 256) == 1 && watch_tree_up(128, 257) == 2,
       "node 0 and nodes 1-128 dial the holder; 129-256 node 1, 257 node 2");
    ok(watch_tree_kids(128, 2, WATCH_TREE_TOP, &first) == 2 &&
           watch_tree_kids(128, 300, WATCH_TREE_TOP, &first) == 129 &&
           watch_tree_kids(128, 300, 0, &first) == 0 &&
           watch_tree_kids(128, 300, 1, &first) == 128 && first == 129 &&
           watch_tree_kids(128, 300, 2, &first) == 43 && first == 257 &&
           watch_tree_kids(128, 300, 3, &first) == 0,
       "the holder takes node 0 and up to 128 more; node 0 takes none; node k the 128 after "
       "k*128");
    ok(watch_tree_up(1, 3) == 2 && watch_tree_up(1, 2) == 1 && watch_tree_up(1, 1) == WATCH_TREE_TOP &&
           watch_tree_depth(1, 3) == 2 && watch_tree_below(1, 1, 3) && !watch_tree_below(1, 3, 1) &&
           !watch_tree_below(1, 0, 3),
       "a fanout of 1 is a chain from node 1: node 3 below 2 below 1, none below node 0");
    unsigned bad = 0;
    uint32_t shapes[][2] = {{1, 7}, {2, 9}, {3, 40}, {128, 1}, {128, 129}, {128, 130}, {128, 1024},
                            {128, 16384}, {7, 16384}};
    for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        bad += check_shape(shapes[i][0], shapes[i][1], &most);
    ok(bad == 0, "every node of 9 shapes (fanout 1-128, 1-16,384 nodes) is counted by its "
       "parent once and is below it (%u faults)", bad);
    check_shape(128, 16384, &most);
    ok(most <= 1100 && watch_tree_depth(128, 16383) == 1,
       "16,384 nodes at the default fanout: no process holds over %u of the tree's sockets "
       "(the bound ~1,100), and the tree is 2 levels", most);
    check_shape(128, 1024, &most);
    ok(most == 129, "1,024 nodes: the holder and the busiest agent hold %u", most);
    ok(watch_tree_up(0, 5) == WATCH_TREE_TOP &&
           watch_tree_kids(0, 9, WATCH_TREE_TOP, &first) == 9 &&
           watch_tree_kids(0, 9, 1, &first) == 0 && watch_tree_below(0, 5, 5) &&
           !watch_tree_below(0, 1, 5),
       "a fanout of 0 (the store served): every node at the holder, none below another");
    uint32_t f = 7;
    struct cohort_err e;
    ok(watch_tree_parse_fanout("1", &f, &e) == 0 && f == 1 &&
           watch_tree_parse_fanout("65536", &f, &e) == 0 && f == 65536,
       "COHORT_WATCH_FANOUT: 1 and 65536 are taken");
    const char *wrong[] = {"0", "65537", "12x", "-3", " 4", ""};
    unsigned refused = 0;
    for (unsigned i = 0; i < sizeof wrong / sizeof wrong[0]; i++)
        refused += watch_tree_parse_fanout(wrong[i], &f, &e) < 0 && f == 65536;
    ok(refused == 6 && !strcmp(e.msg, "COHORT_WATCH_FANOUT='' is not a number from 1 to "
                                      "65536: give one, or unset it for the default (128)"),
       "0, 65537, 12x, -3, ' 4' and '' are refused in one line, *out untouched (%u of 6): %s",
       refused, e.msg);
    return tap_done();
}
