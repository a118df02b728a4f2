/* test_watch_text.c - the step watch's verdict as the user reads it
 * (runtime/watch/watch_text.h): each kind's line, exactly, for fixed
 * verdicts (a signal, an exit status, a silent node, a node whose agent is
 * gone, a stop, a collective not joined and one not completed, many ranks,
 * an unknown host and GPU, a line cut short), and its JSON object parsed
 * back with jansson, field by field. */
#include <jansson.h>
#include <string.h>

#include "tap.h"
#include "watch_text.h"

#define WALL 1714564803000LL /* 2024-05-01 12:00:03 UTC */

/* Hosts n1..n16, eight ranks on each (rank r on node r / 8) unless a test
 * sets another map; rank 3's GPU is "0000:47:00.0", rank 37's is "2". */
static const char *hosts[16] = {"n1", "n2",  "n3",  "n4",  "n5",  "n6",  "n7",  "n8",
                                "n9", "n10", "n11", "n12", "n13", "n14", "n15", "n16"};
static const char *gpus[128];
static uint32_t map[128];
static struct watch_names names = {hosts, gpus, map, 16, 128, 42, 7, WALL};
static char line[512];

static void eight_per_node(void)
{
    for (uint32_t r = 0; r < 128; r++)
        map[r] = r / 8;
}

static void two_per_node(void)
{
    for (uint32_t r = 0; r < 128; r++)
        map[r] = r / 2;
}

static int line_is(const struct watch_verdict *v, const char *want)
{
    watch_line(v, &names, line, sizeof line);
    if (strcmp(line, want) == 0)
        return 1;
    printf("# got:  %s\n# want: %s\n", line, want);
    return 0;
}

static void deaths(void)
{
    two_per_node();
    struct watch_verdict v = {.kind = WATCH_DIED, .node = 1, .n_ranks = 1, .ranks = {3},
                              .status = 9, .at_wall_ms = WALL + 400, .now_ms = 500};
    ok(line_is(&v, "cohort: rank 3 (n2, GPU 0000:47:00.0) was killed by signal 9 at 12:00:03; "
                   "ending the step"),
       "a rank killed by a signal, with its GPU");
    v.ranks[0] = 2;
    v.status = 1 << 8;
    ok(line_is(&v, "cohort: rank 2 (n2) exited with status 1 at 12:00:03; ending the step"),
       "a rank that exited with a status, no GPU known");
}

static void nodes(void)
{
    two_per_node();
    struct watch_verdict v = {.kind = WATCH_NODE_LOST, .node = 1, .n_ranks = 2, .ranks = {2, 3},
                              .since_ms = 1000, .now_ms = 11000};
    ok(line_is(&v, "cohort: node n2 (ranks 2-3) has not been heard from for 10 s; "
                   "ending the step"),
       "a silent node with its ranks");
    v.closed = true;
    ok(line_is(&v, "cohort: node n2's agent (ranks 2-3) is gone; ending the step"),
       "a node whose agent's link closed");
    map[3] = 3;
    ok(line_is(&v, "cohort: node n2's agent (rank 2) is gone; ending the step"),
       "a node of one rank");
    v.node = 99;
    ok(line_is(&v, "cohort: node 99's agent (no ranks) is gone; ending the step"),
       "a node of no known host and no rank");
}

static void waits(void)
{
    eight_per_node();
    struct watch_verdict v = {.kind = WATCH_STOPPED, .node = 0, .n_ranks = 1, .ranks = {3},
                              .since_ms = 5000, .now_ms = 125999};
    gpus[3] = "1";
    ok(line_is(&v, "cohort: rank 3 (n1, GPU 1) has been stopped for 120 s; ending the step"),
       "a stopped rank");
    v.comm = 0x9f3a12345678abcdull;
    v.seq = 41;
    v.op = WATCH_OP_ALLREDUCE;
    v.peers = 3;
    v.coll_since_ms = 6000;
    ok(line_is(&v, "cohort: rank 3 (n1, GPU 1) has been stopped for 120 s and has not joined "
                   "allreduce #41 of communicator 9f3a1234..., which its 3 peers started 119 s "
                   "ago; ending the step"),
       "a stopped rank its NCCL peers wait for: the collective named too");
    gpus[3] = "0000:47:00.0";
    v = (struct watch_verdict){.kind = WATCH_NOT_JOINED, .node = 4, .n_ranks = 1, .ranks = {37},
                               .since_ms = 1000, .now_ms = 131000, .comm = 0x9f3a12345678abcdull,
                               .seq = 1234, .op = WATCH_OP_ALLREDUCE, .peers = 127};
    ok(line_is(&v, "cohort: rank 37 (n5, GPU 2) has not joined allreduce #1234 of communicator "
                   "9f3a1234..., which its 127 peers started 130 s ago; ending the step"),
       "a rank that has not joined a collective");
    v = (struct watch_verdict){.kind = WATCH_NOT_COMPLETED, .node = 0, .n_ranks = 1, .ranks = {3},
                               .since_ms = 0, .now_ms = 130000, .comm = 0x9f3a12345678abcdull,
                               .seq = 12, .op = WATCH_OP_ALLREDUCE, .peers = 4};
    gpus[3] = NULL;
    ok(line_is(&v, "cohort: allreduce #12 of communicator 9f3a1234... was started by all 4 "
                   "ranks but rank 3 (n1) has not completed it for 130 s; ending the step"),
       "a collective not completed by one rank");
    gpus[3] = "0000:47:00.0";
}

static void many(void)
{
    eight_per_node();
    struct watch_verdict v = {.kind = WATCH_NOT_JOINED, .node = 0, .n_ranks = 3,
                              .ranks = {2, 3, 9}, .since_ms = 0, .now_ms = 121000,
                              .comm = 0x1ull, .seq = 5, .op = 99, .peers = 1};
    ok(line_is(&v, "cohort: ranks 2-3,9 (n1, n2) have not joined collective #5 of communicator "
                   "00000000..., which its 1 peer started 121 s ago; ending the step"),
       "three ranks on two nodes, an unknown op, one peer");
    v.n_ranks = 12;
    for (uint32_t i = 0; i < WATCH_RANKS_MAX; i++)
        v.ranks[i] = i;
    v.peers = 4;
    ok(line_is(&v, "cohort: ranks 0-7 and 4 others (n1) have not joined collective #5 of "
                   "communicator 00000000..., which its 4 peers started 121 s ago; "
                   "ending the step"),
       "twelve ranks: eight listed, the others counted");
    names.node_host = NULL;
    v = (struct watch_verdict){.kind = WATCH_STOPPED, .node = 1, .n_ranks = 1, .ranks = {9},
                               .since_ms = 0, .now_ms = 120000};
    ok(line_is(&v, "cohort: rank 9 (node 1) has been stopped for 120 s; ending the step"),
       "no host names: the node's number");
    names.node_host = hosts;
    char small[24];
    watch_line(&v, &names, small, sizeof small);
    ok(strcmp(small, "cohort: rank 9 (n2) has") == 0, "a line cut to its buffer: '%s'", small);
}

/* The object of v, parsed back; NULL (and a note) when it is not JSON. */
static json_t *object(const struct watch_verdict *v)
{
    watch_line(v, &names, line, sizeof line);
    char *text = watch_json(v, &names, line);
    json_error_t err;
    json_t *o = text ? json_loads(text, 0, &err) : NULL;
    if (text && (!o || strchr(text, '\n')))
        printf("# not one line of JSON: %s\n", text);
    free(text);
    return o;
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "(none)";
}

static json_int_t num(json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static void json_death(void)
{
    two_per_node();
    struct watch_verdict v = {.kind = WATCH_DIED, .node = 1, .n_ranks = 1, .ranks = {3},
                              .status = 9, .at_wall_ms = WALL + 400, .since_ms = 200,
                              .now_ms = 500};
    json_t *o = object(&v);
    json_t *ranks = json_object_get(o, "ranks"), *nodes = json_object_get(o, "nodes");
    ok(o && !strcmp(str(o, "kind"), "died") && num(o, "job") == 42 && num(o, "step") == 7,
       "died: kind, job and step");
    ok(json_array_size(ranks) == 1 && json_integer_value(json_array_get(ranks, 0)) == 3 &&
           json_array_size(nodes) == 1 &&
           !strcmp(json_string_value(json_array_get(nodes, 0)), "n2") &&
           !strcmp(str(o, "gpu"), "0000:47:00.0"),
       "died: ranks, nodes and GPU");
    ok(num(json_object_get(o, "status"), "signal") == 9 && !json_object_get(o, "collective"),
       "died: the signal, no collective");
    ok(!strcmp(str(o, "at"), "2024-05-01T12:00:03.400Z") &&
           !strcmp(str(o, "detected"), "2024-05-01T12:00:03.000Z") && !strcmp(str(o, "line"), line),
       "died: at (the node's clock), detected, and the line");
    json_decref(o);
    v.status = 3 << 8;
    o = object(&v);
    ok(num(json_object_get(o, "status"), "exit") == 3, "an exit status as {\"exit\": 3}");
    json_decref(o);
}

static void json_others(void)
{
    two_per_node();
    struct watch_verdict v = {.kind = WATCH_NODE_LOST, .node = 1, .n_ranks = 2, .ranks = {2, 3},
                              .since_ms = 1000, .now_ms = 11000};
    json_t *o = object(&v), *ranks = json_object_get(o, "ranks");
    ok(o && !strcmp(str(o, "kind"), "node_lost") && json_array_size(ranks) == 2 &&
           json_integer_value(json_array_get(ranks, 1)) == 3 &&
           json_is_null(json_object_get(o, "gpu")) &&
           !json_object_get(o, "status") && !strcmp(str(o, "at"), "2024-05-01T11:59:53.000Z"),
       "node_lost: its ranks, no GPU, no status, at = when it was last heard");
    json_decref(o);
    eight_per_node();
    v = (struct watch_verdict){.kind = WATCH_NOT_JOINED, .node = 4, .n_ranks = 1, .ranks = {37},
                               .since_ms = 1000, .now_ms = 131000, .comm = 0x9f3a12345678abcdull,
                               .seq = 1234, .op = WATCH_OP_ALLREDUCE, .peers = 127};
    o = object(&v);
    json_t *c = json_object_get(o, "collective");
    ok(o && !strcmp(str(o, "kind"), "not_joined") && !strcmp(str(c, "op"), "allreduce") &&
           num(c, "seq") == 1234 && !strcmp(str(c, "comm"), "9f3a12345678abcd") &&
           num(c, "peers") == 127 && num(c, "started_s_ago") == 130 && !strcmp(str(o, "gpu"), "2"),
       "not_joined: the collective's op, number, communicator, peers and wait");
    json_decref(o);
    v.kind = WATCH_NOT_COMPLETED;
    v.n_ranks = 12;
    o = object(&v);
    ok(o && !strcmp(str(o, "kind"), "not_completed") && num(o, "ranks_total") == 12 &&
           json_is_null(json_object_get(o, "gpu")) && json_object_get(o, "collective"),
       "not_completed: the ranks counted beyond those listed, no single GPU");
    json_decref(o);
    v = (struct watch_verdict){.kind = WATCH_STOPPED, .node = 0, .n_ranks = 1, .ranks = {3},
                               .since_ms = 5000, .now_ms = 125000};
    names.node_host = NULL;
    o = object(&v);
    ok(o && !strcmp(str(o, "kind"), "stopped") &&
           json_is_null(json_array_get(json_object_get(o, "nodes"), 0)),
       "stopped: a host not known is null");
    ok(o && !json_object_get(o, "collective"), "stopped with no collective known: none in it");
    json_decref(o);
    v.seq = 41;
    v.comm = 0x9f3a12345678abcdull;
    v.peers = 3;
    v.coll_since_ms = 15000;
    o = object(&v);
    json_t *coll = o ? json_object_get(o, "collective") : NULL;
    ok(coll && num(coll, "seq") == 41 && num(coll, "peers") == 3 &&
           num(coll, "started_s_ago") == 110,
       "stopped with the collective its peers wait in: the collective, since they started it");
    names.node_host = hosts;
    json_decref(o);
}

int main(void)
{
    gpus[3] = "0000:47:00.0";
    gpus[37] = "2";
    deaths();
    nodes();
    waits();
    many();
    json_death();
    json_others();
    return tap_done();
}
