/* test_work_msg.c - the work queue's messages (work_msg.h) and the
 * coordinator's start record (coord_config.h): ids to spans and back,
 * every malformed list of spans refused, totals and verdicts round trip,
 * a start record read back whole and refused at every cut and with a
 * rank on a node that does not exist. */
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "coord_config.h"
#include "tap.h"
#include "wire.h"
#include "work_msg.h"

static void spans(void)
{
    uint64_t ids[] = {5, 6, 7, 9, 2, 3, 100}, back[7];
    uint8_t b[7 * WORK_SPAN_LEN];
    size_t n = work_span_count(ids, 7);
    ok(n == 4, "7 ids in the order given form 4 spans (%zu)", n);
    work_spans_put(ids, 7, b);
    uint64_t count = 0;
    struct cohort_err e;
    int rc = work_spans_check(b, (uint32_t)(n * WORK_SPAN_LEN), 101, &count, &e);
    ok(rc == 0 && count == 7, "they check against 101 items: %llu ids", (unsigned long long)count);
    work_spans_ids(b, (uint32_t)(n * WORK_SPAN_LEN), back);
    ok(memcmp(ids, back, sizeof ids) == 0, "and expand to the same ids in the same order");
    ok(work_spans_check(b, (uint32_t)(n * WORK_SPAN_LEN), 100, &count, &e) < 0 &&
           strstr(e.msg, "not ids of this queue"),
       "id 100 of a queue of 100 is refused (%s)", e.msg);
    ok(work_spans_check(b, 17, 101, &count, &e) < 0, "17 bytes are not whole spans (%s)", e.msg);
    wire_put64(b, 8);
    wire_put64(b + 8, 8);
    ok(work_spans_check(b, WORK_SPAN_LEN, 101, &count, &e) < 0, "an empty span is refused");
    wire_put64(b, 0);
    wire_put64(b + 8, UINT64_MAX);
    wire_put64(b + 16, 0);
    wire_put64(b + 24, UINT64_MAX);
    ok(work_spans_check(b, 2 * WORK_SPAN_LEN, UINT64_MAX, &count, &e) < 0,
       "spans that hold more than 2^64 ids are refused (%s)", e.msg);
}

static void records(void)
{
    struct work_totals t = {1, 2, 3, 4, UINT64_MAX}, t2;
    struct work_verdict v = {5, 6, 7, 8, 9}, v2;
    uint8_t b[WORK_TOTALS_LEN];
    work_totals_put(&t, b);
    work_totals_get(b, &t2);
    ok(memcmp(&t, &t2, sizeof t) == 0, "totals round trip");
    work_verdict_put(&v, b);
    work_verdict_get(b, &v2);
    ok(memcmp(&v, &v2, sizeof v) == 0, "verdicts round trip");
}

static void config(void)
{
    uint32_t rank_node[] = {0, 0, 1, 1, 1};
    struct coord_config c = {.key = {.kind = AUTH_SECRET, .bytes = {1, 2, 3}},
                             .job = 77, .step = 3, .size = 5, .num_nodes = 2,
                             .rank_node = rank_node, .n_items = 1000000,
                             .lease_timeout_s = 60, .max_attempts = 3, .join_timeout_s = 120,
                             .verbose = true, .kind = COORD_STREAMS, .epsilon = 0.125,
                             .shed_after_ms = 7000, .fanout = 128},
                       d;
    memset(c.view, 0xab, sizeof c.view);
    strcpy(c.name, "frames");
    strcpy(c.journal, "/shared/q.journal");
    uint8_t *rec = NULL;
    size_t len = 0;
    struct cohort_err e;
    int rc = coord_config_encode(&c, &rec, &len);
    ok(rc == 0, "a start record of %zu bytes", len);
    ok(coord_config_decode(rec, len, &d, &e) == 0 && d.job == 77 && d.size == 5 &&
           d.rank_node[4] == 1 && d.n_items == 1000000 && d.verbose &&
           strcmp(d.name, "frames") == 0 && strcmp(d.journal, "/shared/q.journal") == 0 &&
           memcmp(d.view, c.view, sizeof c.view) == 0 && d.key.bytes[2] == 3 &&
           d.kind == COORD_STREAMS && d.epsilon == 0.125 && d.shed_after_ms == 7000 &&
           d.fanout == 128,
       "reads back whole");
    coord_config_free(&d);
    size_t cut_ok = 0;
    for (size_t cut = 0; cut < len; cut++) {
        if (coord_config_decode(rec, cut, &d, &e) < 0)
            cut_ok++;
        else
            coord_config_free(&d);
    }
    ok(cut_ok == len, "refused when cut at each of its %zu lengths (%zu refused)", len, cut_ok);
    rec[4 + 4 + 4 + sizeof c.key.bytes + 4 + 16 + 4 * 4 + 3] = 2; /* rank 4 on node 2 */
    ok(coord_config_decode(rec, len, &d, &e) < 0, "a rank on a node beyond the step is refused");
    rec[0] = 'X';
    ok(coord_config_decode(rec, len, &d, &e) < 0 && strstr(e.msg, "version"),
       "another magic is refused (%s)", e.msg);
    free(rec);
}

/* A relay's record: its node and its coordinator's host, its peers the
 * ranks of its node; a coordinator's peers the relays; the socket's name. */
static void relay_config(void)
{
    uint32_t rank_node[] = {0, 0, 1, 1, 1};
    struct coord_config c = {.kind = COORD_RELAY, .key = {.kind = AUTH_SECRET}, .job = 7,
                             .step = 1, .size = 5, .num_nodes = 2, .rank_node = rank_node,
                             .port = 40000, .node = 1, .join_timeout_s = 60, .fanout = 128},
                       d;
    strcpy(c.host, "gpu-a17.cluster");
    uint8_t nonce[16] = {0xde, 0xad, 0, 1};
    coord_relay_name(nonce, 1, c.name);
    char other[COORD_NAME_MAX + 1];
    coord_relay_name(nonce, 2, other);
    ok(strncmp(c.name, "cohort-relay-", 13) == 0 && strlen(c.name) == 13 + 32 &&
           strcmp(c.name, other) != 0 && strncmp(c.name + 13, other + 13, 8) != 0,
       "the relays' names: node 1 %s, node 2 %s", c.name, other);
    struct sockaddr_un ua;
    socklen_t alen = coord_relay_addr(c.name, &ua);
    ok(ua.sun_path[0] == 0 && memcmp(ua.sun_path + 1, c.name, strlen(c.name)) == 0 &&
           alen == offsetof(struct sockaddr_un, sun_path) + 1 + strlen(c.name),
       "its address is abstract, of the name's length");
    uint8_t *rec = NULL;
    size_t len = 0;
    struct cohort_err e;
    ok(coord_config_encode(&c, &rec, &len) == 0 && coord_config_decode(rec, len, &d, &e) == 0 &&
           d.kind == COORD_RELAY && d.node == 1 && d.port == 40000 &&
           strcmp(d.host, "gpu-a17.cluster") == 0 && strcmp(d.name, c.name) == 0,
       "a relay's record reads back whole");
    struct hs_hello h = {.rank = 2, .node = 1, .view = c.view};
    ok(coord_config_has_rank(&d, &h), "a rank of its node is the relay's peer");
    h.rank = 0;
    h.node = 0;
    ok(!coord_config_has_rank(&d, &h), "a rank of another node is not");
    h.rank = 4;
    ok(!coord_config_has_rank(&d, &h), "nor a rank that says it is on another node");
    coord_config_free(&d);
    c.kind = COORD_QUEUE;
    h = (struct hs_hello){.rank = COORD_AGENT_RANK, .node = 1, .view = c.view};
    ok(coord_config_has_rank(&c, &h), "a relay is a queue's peer");
    h.node = 2;
    ok(!coord_config_has_rank(&c, &h), "a relay of a node beyond the step is not");
    h = (struct hs_hello){.rank = 2, .node = 1, .view = c.view};
    ok(!coord_config_has_rank(&c, &h), "nor is a rank: ranks come through their relay");
    c.kind = COORD_RELAY;
    c.node = 2;
    free(rec);
    ok(coord_config_encode(&c, &rec, &len) == 0 && coord_config_decode(rec, len, &d, &e) < 0,
       "a relay's record for a node beyond the step is refused");
    free(rec);
    c.node = 1;
    c.fanout = 0;
    ok(coord_config_encode(&c, &rec, &len) == 0 && coord_config_decode(rec, len, &d, &e) < 0,
       "a record with a fanout of 0 is refused");
    free(rec);
}

/* The relays' tree at fanout 2 over 11 nodes: the coordinator above nodes
 * 0 and 1, node 0's relay above 2 and 3, node 1's above 4 and 5, node 2's
 * above 6 and 7, node 3's above 8 and 9, node 4's above 10. */
static void relay_tree(void)
{
    uint32_t rank_node[11];
    for (uint32_t i = 0; i < 11; i++)
        rank_node[i] = i;
    struct coord_config c = {.kind = COORD_QUEUE, .size = 11, .num_nodes = 11,
                             .rank_node = rank_node, .fanout = 2};
    ok(coord_relay_up(&c, 0) == COORD_TOP && coord_relay_up(&c, 1) == COORD_TOP &&
           coord_relay_up(&c, 2) == 0 && coord_relay_up(&c, 5) == 1 &&
           coord_relay_up(&c, 7) == 2 && coord_relay_up(&c, 10) == 4,
       "each relay's parent: the coordinator for nodes 0, 1; 0 for 2; 1 for 5; 4 for 10");
    ok(coord_relay_kids(&c, COORD_TOP) == 2 && coord_relay_kids(&c, 3) == 2 &&
           coord_relay_kids(&c, 4) == 1 && coord_relay_kids(&c, 5) == 0 &&
           coord_relay_kids(&c, 10) == 0,
       "relays below: 2 below the coordinator and node 3, 1 below node 4, none below 5 or 10");
    ok(coord_relay_toward(&c, COORD_TOP, 10) == 1 && coord_relay_toward(&c, 1, 10) == 4 &&
           coord_relay_toward(&c, 4, 10) == 10 && coord_relay_toward(&c, 0, 10) == UINT32_MAX &&
           coord_relay_toward(&c, COORD_TOP, 0) == 0 && coord_relay_toward(&c, 10, 10) ==
           UINT32_MAX,
       "the way down to node 10: relay 1, then 4, then 10 itself; not below 0");
    ok(coord_relay_depth(&c, 1) == 0 && coord_relay_depth(&c, 5) == 1 &&
           coord_relay_depth(&c, 10) == 2,
       "depths: 0 for node 1, 1 for 5, 2 for 10");
    uint8_t view[HS_VIEW_LEN] = {0};
    memcpy(c.view, view, sizeof view);
    struct hs_hello h = {.rank = COORD_AGENT_RANK, .node = 1, .view = c.view};
    bool top = coord_config_has_rank(&c, &h);
    h.node = 2;
    ok(top && !coord_config_has_rank(&c, &h),
       "the coordinator's peers are the top relays (node 1's), not those below (node 2's)");
    c.kind = COORD_RELAY;
    c.node = 1;
    h.node = 4;
    bool kid = coord_config_has_rank(&c, &h);
    h.node = 6;
    bool not_kid = coord_config_has_rank(&c, &h);
    h.node = 1;
    ok(kid && !not_kid && !coord_config_has_rank(&c, &h),
       "node 1's relay's peers: node 4's relay, not 6's nor another of its own node");
    c.kind = COORD_STORE;
    h.node = 10;
    ok(coord_config_has_rank(&c, &h), "a store's peers are every node's agent");
}

int main(void)
{
    spans();
    records();
    config();
    relay_config();
    relay_tree();
    return tap_done();
}
