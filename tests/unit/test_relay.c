/* test_relay.c - node relays (runtime/relay/relay.c: the real
 * cohort-work-coord, started as a node's first rank starts one). At
 * fanout 2 on 4 nodes the relay of node 0 is below the coordinator and
 * above those of nodes 2 and 3. The test plays the coordinator, node 3's
 * relay and the ranks; node 2's relay is real too. A holder of the step's
 * key coming the wrong way (as a rank by TCP, as a relay below by the
 * Unix socket) is not welcomed. When the coordinator goes, node 0's ranks
 * and the relays below are told (RELAY_GONE for rank UINT32_MAX, no node
 * named); node 2's relay tells its rank at once and ends, without waiting
 * for the relay above to end; and node 0's rank that comes only after the
 * close is told too, where it would otherwise find no relay and could not
 * say what failed. Then the relays end. */
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coord_config.h"
#include "coord_start.h"
#include "net.h"
#include "tap.h"
#include "wire.h"
#include "relay_test.h"

static const uint32_t rank_node[] = {0, 0, 2, 3, 1}; /* ranks 0, 1 on node 0; 2 on 2, ... */

static void *start_relay(void *arg)
{
    struct rt_start *s = arg;
    coord_start(&s->cfg, s->path, "node relay", 10, &s->pid, &s->port, s->addr, s->why,
                sizeof s->why);
    return NULL;
}

/* Polls n until a connection of its has an event in what, or 10 s: that
 * connection (*got its bits), or NULL. */
static struct net_conn *wait_event(struct net *n, unsigned what, unsigned *got)
{
    long long end = base_now_ms() + 10000;
    struct net_event *ev;
    struct cohort_err err;
    while (base_now_ms() < end) {
        int k = net_poll(n, 50, &ev, &err);
        for (int i = 0; i < k; i++)
            if (ev[i].what & what) {
                *got = ev[i].what;
                return ev[i].c;
            }
        if (k < 0)
            break;
    }
    return NULL;
}

/* The next frame on c (polling n for it, 10 s at most): 1, or 0. */
static int next_frame(struct net *n, struct net_conn *c, struct wire_frame *f)
{
    struct cohort_err err;
    unsigned got;
    for (int tries = 0; tries < 2; tries++) {
        if (conn_next(&c->c, WIRE_MAX_PAYLOAD_DEFAULT, f, &err) > 0)
            return 1;
        if (!c->closed && !wait_event(n, NET_EV_DATA | NET_EV_CLOSED, &got))
            return 0;
    }
    return conn_next(&c->c, WIRE_MAX_PAYLOAD_DEFAULT, f, &err) > 0;
}

/* Whether f is the relay's word that the way up closed at the coordinator. */
static bool gone_at_top(const struct wire_frame *f)
{
    return f->type == WIRE_RELAY && f->flags == RELAY_GONE && f->rank == UINT32_MAX &&
           f->len == 0;
}

/* The relay of node 0 started for s (its TCP port in s->port) and joined
 * to coord: its connection there, or NULL. */
static struct net_conn *relay_up(struct rt_start *s, struct net *coord)
{
    pthread_t t;
    if (pthread_create(&t, NULL, start_relay, s) != 0)
        return NULL;
    unsigned got = 0;
    struct net_conn *relay = wait_event(coord, NET_EV_JOINED, &got);
    pthread_join(t, NULL);
    return s->port > 1 ? relay : NULL;
}

/* The next frame coord has from relay: whether it is RELAY_JOIN for rank. */
static bool join_seen(struct net *coord, struct net_conn *relay, uint32_t rank)
{
    struct wire_frame f;
    if (!next_frame(coord, relay, &f))
        return false;
    conn_consume(&relay->c, &f);
    return f.type == WIRE_RELAY && f.flags == RELAY_JOIN && f.rank == rank;
}

/* Whether c (n's) is told the coordinator went, and, with closes, then
 * closed by its relay. */
static bool told(struct net *n, struct net_conn *c, bool closes)
{
    struct wire_frame f;
    unsigned got;
    if (!c || !next_frame(n, c, &f) || !gone_at_top(&f))
        return false;
    conn_consume(&c->c, &f);
    return !closes || c->closed || wait_event(n, NET_EV_CLOSED, &got);
}

/* The relay started by s ended with status 0. */
static bool ended(const struct rt_start *s)
{
    int status;
    return s->pid > 0 && waitpid(s->pid, &status, 0) == s->pid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

static void bail(const char *why)
{
    printf("Bail out! %s\n", why);
    exit(1);
}

/* s's record: node's relay, its socket named from nonce. */
static void record(struct rt_start *s, uint32_t node, const uint8_t nonce[16])
{
    struct coord_config *cfg = &s->cfg;
    *cfg = (struct coord_config){.kind = COORD_RELAY, .job = 91, .step = 2, .size = 5,
                                 .num_nodes = 4, .rank_node = (uint32_t *)rank_node,
                                 .join_timeout_s = 30, .node = node, .fanout = 2};
    const char *build = getenv("COHORT_BUILDDIR");
    snprintf(s->path, sizeof s->path, "%s/runtime/coord/cohort-work-coord", build ? build : ".");
    struct cohort_err err;
    if (auth_key_from_hex("COHORT_SECRET", rt_hex, &cfg->key, &err) < 0)
        bail(err.msg);
    hs_view(5, 4, rank_node, NULL, 0, cfg->view);
    coord_relay_name(nonce, node, cfg->name);
    snprintf(cfg->host, sizeof cfg->host, "127.0.0.1");
}

/* t: node's relay's Unix socket (s's record); tcp: its TCP port. */
static void targets(const struct rt_start *s, struct net_target *t, struct net_target *tcp,
                    struct addrinfo **ai)
{
    *t = (struct net_target){.is_unix = true, .timeout_s = 10, .role = "node relay",
                             .listening = true};
    snprintf(t->name, sizeof t->name, "the socket of the relay of node %u", s->cfg.node);
    t->ua_len = coord_relay_addr(s->cfg.name, &t->ua);
    char port[8];
    snprintf(port, sizeof port, "%u", s->port);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    if (getaddrinfo("127.0.0.1", port, &hints, ai) != 0)
        bail("getaddrinfo 127.0.0.1 failed");
    *tcp = (struct net_target){.addrs = *ai, .port = s->port, .timeout_s = 10,
                               .role = "node relay", .listening = true};
    snprintf(tcp->name, sizeof tcp->name, "the relay's port %u", s->port);
}

int main(void)
{
    struct rt_start s, s2;
    uint8_t nonce[16];
    for (int i = 0; i < 16; i++)
        nonce[i] = (uint8_t)(getpid() >> (i % 4 * 8)) ^ (uint8_t)(i * 37);
    record(&s, 0, nonce);
    alarm(60); /* the test's own deadline: a hang fails it */
    struct net *coord = rt_coordinator(&s.cfg), *n[6] = {0};
    struct net_conn *relay = coord ? relay_up(&s, coord) : NULL;
    if (!relay)
        return printf("Bail out! the relay did not start: %s\n", s.why), 1;
    ok(1, "the relay of node 0 started and dialed the coordinator (its line: %u %s)", s.port,
       s.addr);
    struct net_target u, t;
    struct addrinfo *ai;
    targets(&s, &u, &t, &ai);
    ok(!rt_dial_as(&n[0], &s.cfg, 1, 0, &t, 1500),
       "a holder of the key posing as rank 1 of node 0 by TCP is not welcomed");
    ok(!rt_dial_as(&n[1], &s.cfg, COORD_AGENT_RANK, 3, &u, 1500),
       "nor one posing as the relay of node 3 by the node's Unix socket");
    struct net_conn *kid = rt_dial_as(&n[2], &s.cfg, COORD_AGENT_RANK, 3, &t, 10000);
    ok(kid != NULL, "the relay of node 3 is welcomed by TCP");

    struct net_conn *c0 = rt_dial_as(&n[3], &s.cfg, 0, 0, &u, 10000);
    ok(c0 && join_seen(coord, relay, 0), "rank 0 joins by the node's socket, and the relay "
       "tells the coordinator of it first (no poser did)");
    record(&s2, 2, nonce);
    s2.cfg.port = s.port;
    coord_start(&s2.cfg, s2.path, "node relay", 10, &s2.pid, &s2.port, s2.addr, s2.why,
                sizeof s2.why);
    struct net_target u2, t2;
    struct addrinfo *ai2;
    if (s2.port != 1)
        return printf("Bail out! the relay of node 2 did not start: %s\n", s2.why), 1;
    targets(&s2, &u2, &t2, &ai2);
    struct net_conn *c2 = rt_dial_as(&n[4], &s2.cfg, 2, 2, &u2, 10000);
    ok(c2 && join_seen(coord, relay, 2), "the relay of node 2 dials node 0's; its rank 2 "
       "joins, told to the coordinator on the way");

    net_close(coord, relay); /* the coordinator goes */
    net_poll(coord, 0, &(struct net_event *){0}, &(struct cohort_err){0});
    ok(told(n[3], c0, false), "rank 0 is told the coordinator went");
    ok(told(n[2], kid, false), "so is the relay of node 3");
    ok(told(n[4], c2, true), "rank 2 is told by node 2's relay, which closes at once (node "
       "0's relay is still waiting for its rank 1)");
    struct net_conn *c1 = rt_dial_as(&n[5], &s.cfg, 1, 0, &u, 10000);
    ok(c1 && told(n[5], c1, false),
       "rank 1, which comes to the relay only after the close, joins and is told so too");
    ok(ended(&s2) && ended(&s), "both relays end, with status 0");
    freeaddrinfo(ai);
    freeaddrinfo(ai2);
    for (int i = 0; i < 6; i++)
        net_free(n[i]);
    net_free(coord);
    return tap_done();
}
