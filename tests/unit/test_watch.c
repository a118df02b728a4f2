/* test_watch.c - the step watch's decisions (runtime/watch/watch.h) on a
 * simulated clock: each verdict kind at its edge (one millisecond early:
 * none; on time: the verdict) and watch_next's wake-up for it; a death's
 * settle window naming the earliest death, the cascade and a step that
 * Slurm ended; a node silent, closed, gone away or never joined; stops;
 * collectives not joined or not completed; which verdict wins when several
 * are due; the teller; one verdict only; bad reports refused. And the
 * false alarms that must not happen: a rank computing long, every rank at
 * the same collective for hours, a slow rank or a stopped one back in
 * time, exit status 0, the stale counts of an ended rank or a left node's,
 * and three simulated hours of a healthy run with a slow step. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "watch.h"

#define S 1000
#define STALL (120 * S)
#define COMM 0x9f3a000000000001ull
#define NEVER INT64_MAX

static struct watch_verdict v;

/* A step of ranks ranks in blocks over nodes nodes (the same count each);
 * join: every node joined at time 0. */
static struct watch *block(uint32_t ranks, uint32_t nodes, bool join)
{
    uint32_t map[64];
    for (uint32_t r = 0; r < ranks; r++)
        map[r] = r / (ranks / nodes);
    struct watch *w = watch_new(ranks, nodes, map, STALL);
    for (uint32_t n = 0; join && n < nodes; n++)
        watch_node_joined(w, n, 0);
    return w;
}

/* Every node of mask heard from at now. */
static void beat(struct watch *w, uint32_t nodes, unsigned mask, int64_t now)
{
    for (uint32_t n = 0; n < nodes; n++)
        if (mask & (1u << n))
            watch_node_heard(w, n, now);
}

/* Counts of ranks lo..hi-1 on one communicator of size nranks. */
static void report(struct watch *w, uint32_t lo, uint32_t hi, uint32_t nranks, uint64_t started,
                   uint64_t completed, int64_t now)
{
    for (uint32_t r = lo; r < hi; r++)
        watch_progress(w, r, COMM, nranks, r, started, completed, WATCH_OP_ALLREDUCE, now);
}

/* No verdict at now - 1, watch_next says now, and one at now. */
static int edge(struct watch *w, int64_t now)
{
    int early = watch_check(w, now - 1, &v);
    return early == 0 && watch_next(w, now - 1) == now && watch_check(w, now, &v) == 1 &&
           v.now_ms == now;
}

static void basics(void)
{
    uint32_t bad_map[2] = {0, 2};
    ok(!watch_new(0, 1, bad_map, STALL) && errno == EINVAL, "a step of no ranks is refused");
    ok(!watch_new(2, 2, bad_map, STALL) && errno == EINVAL, "a rank on no node is refused");
    ok(!watch_new(1, 1, bad_map, 0) && errno == EINVAL, "a stall of 0 ms is refused");
    ok(!strcmp(watch_op_name(WATCH_OP_ALLREDUCE), "allreduce") &&
           !strcmp(watch_op_name(99), "collective"),
       "op names: allreduce; collective out of range");
    struct watch *w = block(4, 2, true);
    ok(watch_check(w, 5 * S, &v) == 0 && watch_next(w, 5 * S) == 10 * S,
       "a fresh step: no verdict; the next wake-up is the first node's silence");
    watch_free(w);
}

/* ---- deaths ---- */

static void deaths(void)
{
    struct watch *w = block(4, 2, false);
    watch_task_ended(w, 2, 9, 50000, 1000);
    ok(edge(w, 1000 + WATCH_SETTLE_MS) && v.kind == WATCH_DIED && v.ranks[0] == 2 &&
           v.n_ranks == 1 && v.status == 9 && v.at_wall_ms == 50000 && v.node == 1,
       "a death is named WATCH_SETTLE_MS after it is reported, not before");
    ok(v.teller == 0, "its teller is the lowest node that is not its own (0)");
    ok(watch_check(w, 10 * S, &v) == 0 && watch_next(w, 10 * S) == NEVER,
       "then nothing more, and watch_next says so");
    watch_free(w);

    w = block(4, 2, false);
    watch_task_ended(w, 1, 6 << 8, 50200, 1000); /* the cascade, reported first */
    watch_task_ended(w, 3, 9, 50100, 1100);      /* the first death, reported later */
    watch_task_ended(w, 2, 11, 50100, 1200);     /* as early: the lower rank wins */
    ok(watch_check(w, 1299, &v) == 0 && watch_check(w, 1300, &v) == 1 && v.ranks[0] == 2 &&
           v.at_wall_ms == 50100,
       "the settle window counts from the first report and names the earliest death "
       "(ties: the lower rank), not the first reported");
    watch_task_ended(w, 0, 6 << 8, 50050, 1350);
    ok(watch_check(w, 1650, &v) == 0, "an earlier death reported after the verdict is not named");
    watch_free(w);

    w = block(4, 2, false);
    watch_task_ended(w, 1, 15, 50000, 1000);
    watch_task_ended(w, 0, 15, 50001, 1050);
    watch_task_ended(w, 2, 15, 50002, 1100);
    watch_task_ended(w, 3, 15, 50003, 1299);
    ok(watch_check(w, 1300, &v) == 0 && watch_next(w, 1300) == NEVER &&
           watch_check(w, 999 * S, &v) == 0,
       "every rank ended within the window (Slurm ended the step): no verdict, ever");
    watch_free(w);

    w = block(4, 2, false);
    watch_task_ended(w, 1, 0, 50000, 1000);
    watch_task_ended(w, 3, 0, 50000, 1000);
    ok(watch_check(w, 5000, &v) == 0 && watch_next(w, 5000) == NEVER,
       "exit status 0 is never a death");
    watch_free(w);
}

/* ---- nodes ---- */

static void nodes(void)
{
    struct watch *w = block(4, 2, true);
    watch_node_heard(w, 0, 5 * S);
    ok(edge(w, 10 * S) && v.kind == WATCH_NODE_LOST && v.node == 1 && !v.closed &&
           v.since_ms == 0 && v.n_ranks == 2 && v.ranks[0] == 2 && v.ranks[1] == 3,
       "a node silent for exactly WATCH_LOST_MS is lost, with its ranks");
    ok(v.teller == 0, "its teller is the other node");
    watch_free(w);

    w = block(4, 2, true);
    beat(w, 2, 3, 7 * S);
    ok(watch_check(w, 16999, &v) == 0 && watch_next(w, 16999) == 17 * S,
       "a beat restarts the silence");
    beat(w, 2, 1, 12 * S);
    beat(w, 2, 3, 19 * S);
    ok(watch_check(w, 19 * S, &v) == 1 && v.kind == WATCH_NODE_LOST && v.node == 1 &&
           v.since_ms == 7 * S,
       "a node heard again after 10 s of silence stays lost");
    watch_free(w);

    w = block(4, 2, true);
    watch_node_closed(w, 1, 3 * S);
    ok(watch_next(w, 3 * S) == 3 * S && watch_check(w, 3 * S, &v) == 1 &&
           v.kind == WATCH_NODE_LOST && v.closed && v.node == 1,
       "a link closed without a goodbye is a lost node at once");
    watch_free(w);

    w = block(4, 2, true);
    watch_node_left(w, 1, 1 * S);
    watch_node_closed(w, 1, 2 * S);
    beat(w, 2, 1, 9 * S);
    ok(watch_check(w, 15 * S, &v) == 0 && watch_next(w, 15 * S) == 19 * S,
       "a node that said goodbye is never lost, closed or silent");
    watch_free(w);

    w = block(4, 2, false);
    watch_node_joined(w, 0, 0);
    ok(watch_check(w, 999 * S, &v) == 1 && v.node == 0,
       "a node that never joined is not watched (node 0 is lost, node 1 is not)");
    watch_free(w);

    w = block(4, 2, true);
    watch_node_heard(w, 0, 5 * S);
    watch_task_ended(w, 2, 9, 50000, 10 * S);
    ok(watch_check(w, 10 * S, &v) == 1 && v.kind == WATCH_NODE_LOST && v.node == 1,
       "a rank's death reported once its node is lost is not a death: the node is the news");
    watch_free(w);

    w = block(4, 2, true);
    watch_task_ended(w, 2, 9, 50000, 4 * S);
    watch_node_closed(w, 1, 4100);
    ok(watch_check(w, 4100, &v) == 0 && watch_check(w, 4300, &v) == 1 && v.kind == WATCH_DIED,
       "a death reported before its node is lost settles and wins");
    watch_free(w);
}

/* Nodes below the holder in the watch's tree: their agents do not reach it,
 * and their loss comes from the agent above them. */
static void tree_nodes(void)
{
    struct watch *w = block(6, 3, false);
    watch_node_joined(w, 0, 0);
    watch_node_joined(w, 1, 0);
    beat(w, 3, 3, 9 * S);
    ok(watch_check(w, 18 * S, &v) == 0 && watch_next(w, 18 * S) == 19 * S,
       "a node whose agent does not reach the holder is never judged silent by it");
    watch_node_lost(w, 2, false, 8 * S, 18 * S);
    ok(watch_next(w, 18 * S) == 18 * S && watch_check(w, 18 * S, &v) == 1 &&
           v.kind == WATCH_NODE_LOST && v.node == 2 && !v.closed && v.since_ms == 8 * S &&
           v.n_ranks == 2 && v.ranks[0] == 4 && v.ranks[1] == 5 && v.teller == 0,
       "a node reported lost by the agent above it is named with its ranks, silent since "
       "when that agent last heard it");
    watch_free(w);

    w = block(6, 3, false);
    watch_node_joined(w, 0, 0);
    watch_node_left(w, 2, 1 * S);
    watch_node_lost(w, 2, true, 2 * S, 2 * S);
    watch_node_lost(w, 9, true, 2 * S, 2 * S);
    ok(watch_check(w, 3 * S, &v) == 0, "a node that left, or is none, is not lost when reported");
    watch_node_lost(w, 1, true, 4 * S, 3 * S);
    ok(watch_check(w, 3 * S, &v) == 1 && v.node == 1 && v.closed && v.since_ms == 3 * S,
       "a closed link reported is a loss at once; a silence never starts after now");
    watch_free(w);

    w = block(4, 2, true);
    ok(watch_death_seen(w) == INT64_MAX, "no death seen yet");
    watch_task_ended(w, 1, 9, 50000, 1500);
    watch_task_ended(w, 0, 9, 49000, 1600);
    ok(watch_death_seen(w) == 1500, "the first death's report is when it was seen");
    watch_free(w);
}

static void tellers(void)
{
    struct watch *w = block(6, 3, true);
    ok(watch_teller(w, 0) == 1 && watch_teller(w, 1) == 0, "the teller: the lowest other node");
    watch_node_left(w, 1, 1000);
    ok(watch_teller(w, 0) == 2, "a node that left does not tell");
    watch_node_closed(w, 2, 1000);
    ok(watch_teller(w, 0) == 0, "with none else to tell, the lost node itself");
    ok(watch_check(w, 1000, &v) == 1 && v.node == 2 && v.teller == 0,
       "the verdict's teller is the lowest node left to tell");
    watch_free(w);
}

/* ---- stops ---- */

static void stops(void)
{
    struct watch *w = block(4, 2, false);
    watch_task_stopped(w, 3, true, 1000);
    ok(edge(w, 1000 + STALL) && v.kind == WATCH_STOPPED && v.ranks[0] == 3 && v.since_ms == 1000,
       "a rank stopped for stall_ms is named, not 1 ms before");
    watch_free(w);

    w = block(4, 2, false);
    watch_task_stopped(w, 3, true, 1000);
    watch_task_stopped(w, 3, false, STALL);
    watch_task_stopped(w, 3, true, 200 * S);
    ok(watch_check(w, 200 * S + STALL - 1, &v) == 0 && watch_next(w, 0) == 200 * S + STALL,
       "a rank running again before stall_ms is not named; stopped again, it starts over");
    watch_task_stopped(w, 3, false, 300 * S);
    ok(watch_check(w, 9999 * S, &v) == 0 && watch_next(w, 9999 * S) == NEVER,
       "a rank back in time is never named");
    watch_task_stopped(w, 2, true, 9999 * S);
    watch_task_ended(w, 2, 0, 0, 9999 * S);
    ok(watch_check(w, 99999 * S, &v) == 0, "a stopped rank that ended is not named");
    watch_free(w);

    w = block(4, 2, false);
    for (uint32_t r = 0; r < 4; r++)
        watch_task_stopped(w, r, true, 1000 + r);
    ok(watch_check(w, 1000 + 10 * STALL, &v) == 0 && watch_next(w, 1000) > 1000 + 10 * STALL,
       "every rank stopped together (Slurm suspended the step): nobody is named");
    watch_task_stopped(w, 0, false, 2000 + 10 * STALL);
    ok(watch_check(w, 2000 + 10 * STALL, &v) == 1 && v.kind == WATCH_STOPPED && v.ranks[0] == 1,
       "once one of them runs again, the others still stopped are");
    watch_free(w);
}

/* The holder itself stopped (a suspended step stops it with its agents). */
static void paused(void)
{
    struct watch *w = block(4, 2, true);
    watch_node_heard(w, 1, 5 * S);
    watch_task_stopped(w, 3, true, 6 * S);
    report(w, 0, 4, 4, 5, 5, 6 * S);
    report(w, 0, 3, 4, 6, 5, 6 * S);
    watch_pause(w, 3600 * S);
    ok(watch_check(w, 3600 * S + 7 * S, &v) == 0,
       "after an hour's pause nobody is silent, stopped or behind for the hour");
    int64_t due = 3600 * S + 6 * S + STALL;
    for (int64_t t = 3600 * S + 8 * S; t < due; t += 5 * S)
        beat(w, 2, 3, t);
    ok(watch_check(w, due - 1, &v) == 0 && watch_check(w, due, &v) == 1 && v.ranks[0] == 3 &&
           (v.kind == WATCH_STOPPED || v.kind == WATCH_NOT_JOINED),
       "the waits resume where they were: rank 3 is named a stall after its stop began, not before");
    watch_free(w);
}

/* ---- collectives ---- */

static void not_joined(void)
{
    struct watch *w = block(4, 2, false);
    report(w, 0, 4, 4, 5, 5, 0);
    report(w, 0, 3, 4, 6, 5, 1000);
    report(w, 0, 3, 4, 7, 6, 2000);
    ok(edge(w, 1000 + STALL) && v.kind == WATCH_NOT_JOINED && v.ranks[0] == 3 &&
           v.n_ranks == 1 && v.seq == 6 && v.peers == 3 && v.comm == COMM &&
           v.op == WATCH_OP_ALLREDUCE && v.since_ms == 1000 && v.node == 1,
       "a rank behind is named stall_ms after its peers started its next collective");
    ok(v.teller == 0, "its teller is the lowest node not its own");
    watch_free(w);

    w = block(4, 2, false);
    report(w, 0, 4, 4, 5, 5, 0);
    report(w, 0, 3, 4, 6, 6, 1000);
    report(w, 0, 3, 4, 7, 6, 50 * S);
    report(w, 3, 4, 4, 6, 6, 100 * S);
    ok(watch_check(w, 1000 + STALL, &v) == 0 && watch_next(w, 0) == 50 * S + STALL,
       "a slow rank one collective further waits from when its peers started the next");
    report(w, 0, 4, 4, 7, 7, 50 * S + STALL - 1);
    ok(watch_check(w, 9999 * S, &v) == 0 && watch_next(w, 0) == NEVER,
       "a slow rank that caught up before stall_ms is never named");
    watch_free(w);

    w = block(4, 2, false);
    report(w, 0, 4, 4, 5, 5, 0);
    ok(watch_check(w, 36000 * S, &v) == 0 && watch_next(w, 0) == NEVER,
       "every rank at the same collective for ten hours (computing): never named");
    watch_free(w);

    w = block(16, 2, false);
    for (uint32_t r = 0; r < 16; r++)
        watch_progress(w, r, COMM, 16, r, r < 12 ? 1 : 2, 1, WATCH_OP_BROADCAST, 0);
    ok(watch_check(w, STALL, &v) == 1 && v.n_ranks == 12 && v.ranks[0] == 0 && v.ranks[7] == 7 &&
           v.peers == 4 && v.op == WATCH_OP_BROADCAST,
       "twelve ranks behind: counted, the lowest eight listed");
    watch_free(w);
}

static void not_completed(void)
{
    struct watch *w = block(4, 2, false);
    report(w, 0, 3, 4, 6, 5, 0);
    report(w, 3, 4, 4, 6, 5, 1000);
    report(w, 0, 2, 4, 6, 6, 2000);
    report(w, 3, 4, 4, 6, 6, 2000);
    ok(edge(w, 1000 + STALL) && v.kind == WATCH_NOT_COMPLETED && v.ranks[0] == 2 &&
           v.n_ranks == 1 && v.seq == 6 && v.peers == 4 && v.since_ms == 1000,
       "a collective started by all but not completed by one is named stall_ms after the "
       "last rank started it");
    watch_free(w);

    w = block(4, 2, false);
    report(w, 0, 3, 4, 6, 5, 0);
    report(w, 0, 2, 4, 6, 6, 0);
    ok(watch_check(w, 999 * S, &v) == 0,
       "a place never reported is not named, and without it not completed is not decided");
    watch_free(w);

    w = block(4, 2, false);
    report(w, 0, 4, 4, 6, 5, 0);
    report(w, 0, 4, 4, 6, 6, STALL - 1);
    ok(watch_check(w, 999 * S, &v) == 0, "completed by all before stall_ms: never named");
    watch_free(w);
}

/* Ranks 2-3 (node 1) stale behind the others: named only while they count. */
static void stale(void)
{
    struct watch *w = block(4, 2, true);
    report(w, 0, 4, 4, 5, 5, 0);
    report(w, 0, 2, 4, 6, 5, 1000);
    watch_node_left(w, 1, 2000);
    report(w, 2, 4, 4, 5, 4, 3000); /* a late report of a left node's rank */
    watch_task_stopped(w, 2, true, 3000);
    for (int64_t t = 3 * S; t < 400 * S; t += S)
        beat(w, 2, 1, t);
    ok(watch_check(w, 400 * S, &v) == 0,
       "the ranks of a left node are never named, nor their late reports");
    watch_free(w);

    w = block(4, 2, false);
    report(w, 0, 4, 4, 5, 5, 0);
    report(w, 0, 3, 4, 6, 6, 1000);
    watch_task_ended(w, 3, 0, 0, 2000);
    ok(watch_check(w, 400 * S, &v) == 0 && watch_next(w, 0) == NEVER,
       "a rank that exited 0 with stale counts is never named");
    watch_free(w);
}

static void priorities(void)
{
    struct watch *w = block(4, 2, false);
    report(w, 0, 4, 4, 5, 5, 0);
    report(w, 0, 3, 4, 6, 5, 0);
    watch_task_stopped(w, 3, true, 0);
    ok(watch_check(w, STALL, &v) == 1 && v.kind == WATCH_STOPPED,
       "stopped wins over not joined when both are due");
    ok(v.comm == COMM && v.seq == 6 && v.peers == 3 && v.op == WATCH_OP_ALLREDUCE &&
           v.coll_since_ms == 0,
       "and names the collective its peers wait in (#6 of 3 peers, since 0)");
    watch_free(w);

    w = block(4, 2, false);
    watch_task_stopped(w, 3, true, 0);
    ok(watch_check(w, STALL, &v) == 1 && v.kind == WATCH_STOPPED && v.seq == 0,
       "a stopped rank with no counts (Gloo): no collective named");
    watch_free(w);

    w = block(4, 2, false);
    report(w, 0, 4, 4, 5, 5, 0);
    report(w, 0, 3, 4, 6, 5, 0); /* COMM: rank 3 not joined, due first */
    for (uint32_t r = 0; r < 4; r++)
        watch_progress(w, r, 7, 4, r, 2, r == 1 ? 1 : 2, WATCH_OP_SEND, 1000);
    ok(watch_check(w, 1000 + STALL, &v) == 1 && v.kind == WATCH_NOT_COMPLETED && v.comm == 7 &&
           v.ranks[0] == 1 && v.op == WATCH_OP_SEND,
       "not completed wins over not joined when both are due");
    watch_free(w);

    w = block(4, 2, true);
    watch_task_stopped(w, 0, true, 0);
    watch_node_closed(w, 1, 1000);
    watch_task_ended(w, 1, 9, 50000, 1100);
    ok(watch_check(w, 1200, &v) == 0 && watch_next(w, 1200) == 1400,
       "a settling death holds a lost node's verdict");
    ok(watch_check(w, STALL, &v) == 1 && v.kind == WATCH_DIED && v.ranks[0] == 1,
       "a death wins over a lost node and a stop");
    watch_free(w);

    w = block(4, 2, true);
    watch_task_stopped(w, 0, true, 0);
    watch_node_closed(w, 1, 1000);
    ok(watch_check(w, STALL, &v) == 1 && v.kind == WATCH_NODE_LOST,
       "a lost node wins over a stop");
    watch_free(w);
}

static void bad_reports(void)
{
    struct watch *w = block(4, 2, false);
    errno = 0;
    int a = watch_progress(w, 4, COMM, 4, 0, 1, 0, 0, 0);
    int b = watch_progress(w, 0, COMM, 4, 4, 1, 0, 0, 0);
    int c = watch_progress(w, 0, COMM, 5, 0, 1, 0, 0, 0);
    int d = watch_progress(w, 0, COMM, 0, 0, 1, 0, 0, 0);
    ok(a == -1 && b == -1 && c == -1 && d == -1 && errno == EINVAL,
       "a rank, place or size out of range is refused (EINVAL)");
    ok(watch_progress(w, 0, COMM, 2, 0, 1, 0, 0, 0) == 0 &&
           watch_progress(w, 1, COMM, 4, 1, 1, 0, 0, 0) == -1 &&
           watch_progress(w, 1, COMM, 2, 0, 5, 0, 0, 0) == -1 && errno == EINVAL,
       "a known communicator with another size, or a place taken by another rank, is refused");
    ok(watch_check(w, 999 * S, &v) == 0, "and refused reports change nothing");
    watch_task_stopped(w, 99, true, 0);
    watch_task_ended(w, 99, 9, 0, 0);
    watch_node_closed(w, 99, 0);
    ok(watch_check(w, 999 * S, &v) == 0, "a rank or node out of range is ignored");
    watch_free(w);
}

/* The peers start a hundred collectives, one a second, while rank 3 stays
 * at 0: the first times kept are the last 64, so its wait is counted from
 * a later time than the truth, never an earlier one. */
static void long_wait(void)
{
    struct watch *w = block(4, 2, false);
    report(w, 0, 4, 4, 0, 0, 0);
    for (uint64_t k = 1; k <= 100; k++)
        report(w, 0, 3, 4, k, k, (int64_t)k * S);
    ok(watch_check(w, 1000 + STALL, &v) == 0 && watch_check(w, 100 * S + STALL, &v) == 1 &&
           v.kind == WATCH_NOT_JOINED && v.seq == 1 && v.ranks[0] == 3,
       "a wait older than the times kept is named late, never early");
    watch_free(w);
}

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng % n;
}

/* Three simulated hours of a healthy run, 16 ranks on 4 nodes, a world
 * communicator and one per node: each second every node beats and each
 * rank reports what it had reached at a random moment of that second;
 * once, rank 5 computes for 110 s while the others wait in the next
 * allreduce. No verdict, ever. */
static void healthy(void)
{
    struct watch *w = block(16, 4, true);
    uint64_t seq = 0, node_seq = 0;
    int verdicts = 0;
    for (int64_t t = 0; t < 3 * 3600 * S; t += S) {
        bool slow = t >= 5000 * S && t < 5110 * S;
        beat(w, 4, 0xf, t);
        seq += slow ? 0 : 10;
        node_seq += 3;
        for (uint32_t r = 0; r < 16; r++) {
            uint64_t lag = rnd(11), mine = seq - lag + (slow && r != 5);
            watch_progress(w, r, COMM, 16, r, mine, mine - rnd(2) * (mine > 0),
                           WATCH_OP_ALLREDUCE, t);
            uint64_t n = node_seq - rnd(3);
            watch_progress(w, r, 100 + r / 4, 4, r % 4, n, n, WATCH_OP_ALLGATHER, t);
        }
        verdicts += watch_check(w, t, &v);
    }
    ok(verdicts == 0 && watch_next(w, 0) > 3 * 3600 * S,
       "three hours of a healthy run with a 110 s slow step: no verdict");
    watch_free(w);
}

/* A model of one communicator of 8 ranks: the first time any rank reached
 * each count, the first time all had, and the waits' due times, worked out
 * the long way. */
struct model {
    uint64_t started[8], completed[8];
    bool reported[8], ended[8];
    int64_t peers_first[64], all_first[64];
};

static int64_t model_next(const struct model *m, int64_t stall)
{
    uint64_t lo = UINT64_MAX, done = UINT64_MAX, max = 0;
    int active = 0;
    for (int r = 0; r < 8; r++) {
        max = m->reported[r] && m->started[r] > max ? m->started[r] : max;
        if (!m->reported[r] || m->ended[r])
            continue;
        active++;
        lo = m->started[r] < lo ? m->started[r] : lo;
        done = m->completed[r] < done ? m->completed[r] : done;
    }
    int64_t t = NEVER;
    if (active && max > lo)
        t = m->peers_first[lo + 1] + stall;
    if (active == 8 && lo > done && m->all_first[done + 1] + stall < t)
        t = m->all_first[done + 1] + stall;
    return t;
}

/* One random report (or, rarely, an end) into the watch and the model. */
static void model_step(struct watch *w, struct model *m, int64_t now)
{
    uint32_t r = (uint32_t)rnd(8);
    if (rnd(100) == 0) {
        watch_task_ended(w, r, 0, 0, now);
        m->ended[r] = true;
        return;
    }
    uint64_t st = m->started[r] + rnd(2), done;
    st = st > 60 ? 60 : st;
    done = m->completed[r] + rnd(st - m->completed[r] + 1);
    watch_progress(w, r, COMM, 8, r, st, done, 0, now);
    m->reported[r] = true;
    m->started[r] = st;
    m->completed[r] = done;
    for (uint64_t k = 1; k <= st; k++)
        m->peers_first[k] = m->peers_first[k] ? m->peers_first[k] : now;
    uint64_t lo = UINT64_MAX;
    for (int i = 0; i < 8; i++)
        lo = !m->reported[i] || m->ended[i] ? 0 : m->started[i] < lo ? m->started[i] : lo;
    for (uint64_t k = 1; k <= lo && lo != UINT64_MAX; k++)
        m->all_first[k] = m->all_first[k] ? m->all_first[k] : now;
}

/* Random runs of the model: watch_next always says what it works out. */
static void model(void)
{
    int wrong = 0, runs = 200;
    uint32_t map[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    for (int run = 0; run < runs; run++) {
        struct watch *w = watch_new(8, 2, map, 3600 * S);
        struct model m = {0};
        for (int64_t now = 1; now < 400 * S; now += 1 + (int64_t)rnd(2 * S)) {
            model_step(w, &m, now);
            wrong += watch_next(w, now) != model_next(&m, 3600 * S);
        }
        watch_free(w);
    }
    ok(wrong == 0, "the collective waits' due times match a model over %d random runs (%d wrong)",
       runs, wrong);
}

int main(void)
{
    basics();
    deaths();
    nodes();
    tree_nodes();
    tellers();
    stops();
    paused();
    not_joined();
    not_completed();
    stale();
    priorities();
    bad_reports();
    long_wait();
    healthy();
    model();
    return tap_done();
}
