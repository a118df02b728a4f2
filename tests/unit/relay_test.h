/* relay_test.h - what the node relays' unit tests share: the step's key
 * they use, the coordinator's side of a queue (a loop on a TCP port of
 * 127.0.0.1 that admits node 0's relay), a relay's start, and a rank or
 * relay dialing. Included by
 * tests/unit/test_relay.c and test_host.c after tap.h. */
#ifndef COHORT_RELAY_TEST_H
#define COHORT_RELAY_TEST_H

#include <arpa/inet.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "coord_config.h"
#include "coord_start.h"
#include "net.h"

static const char *rt_hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/* A relay's start, as a node's first rank makes it, and what came of it. */
struct rt_start {
    struct coord_config cfg;
    char path[4096];
    pid_t pid;
    uint16_t port;
    char addr[COORD_ADDR_LEN];
    char why[COHORT_ERR_LEN];
    struct net *coord; /* test_host: the queue's coordinator, kept until the relay ended */
    atomic_bool done;  /* test_host: the start returned */
};

/* The coordinator admits node 0's relay, by TCP. */
TAP_UNUSED static enum net_admit rt_coord_admit(void *ctx, const struct hs_hello *h,
                                                bool via_unix, struct cohort_err *why)
{
    (void)ctx;
    (void)why;
    return h->rank == COORD_AGENT_RANK && h->node == 0 && !via_unix ? NET_ADMIT : NET_DROP;
}

/* The coordinator's side: a loop listening on a TCP port of 127.0.0.1
 * (in cfg->port), or NULL. */
TAP_UNUSED static struct net *rt_coordinator(struct coord_config *cfg)
{
    struct hs_self top = {.key = &cfg->key, .job = cfg->job, .step = cfg->step,
                          .rank = UINT32_MAX, .node = UINT32_MAX};
    memcpy(top.view, cfg->view, sizeof top.view);
    struct net_ops ops = {.max_payload = WIRE_MAX_PAYLOAD_DEFAULT, .admit = rt_coord_admit};
    struct net *coord;
    struct cohort_err err;
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t inlen = sizeof in;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (net_new(&top, &ops, &coord, &err) < 0)
        return NULL;
    if (bind(fd, (struct sockaddr *)&in, sizeof in) < 0 || listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)&in, &inlen) < 0 ||
        net_listen(coord, fd, false, &err) < 0) {
        net_free(coord);
        return NULL;
    }
    cfg->port = ntohs(in.sin_port);
    return coord;
}

/* Admits nobody: a rank's or relay's own loop, which only dials. */
TAP_UNUSED static enum net_admit rt_no_admit(void *ctx, const struct hs_hello *h,
                                             bool via_unix, struct cohort_err *why)
{
    (void)ctx;
    (void)h;
    (void)via_unix;
    (void)why;
    return NET_DROP;
}

/* A process of the step (rank, node: a rank, or COORD_AGENT_RANK for a
 * relay) dialing t for ms: its connection once welcomed, or NULL (*n its
 * loop either way). */
TAP_UNUSED static struct net_conn *rt_dial_as(struct net **n, const struct coord_config *cfg,
                                             uint32_t rank, uint32_t node,
                                             const struct net_target *t, int ms)
{
    struct hs_self me = {.key = &cfg->key, .job = cfg->job, .step = cfg->step, .rank = rank,
                         .node = node};
    memcpy(me.view, cfg->view, sizeof me.view);
    struct net_ops ops = {.max_payload = WIRE_MAX_PAYLOAD_DEFAULT, .admit = rt_no_admit};
    struct cohort_err err;
    if (net_new(&me, &ops, n, &err) < 0)
        return NULL;
    return net_dial_wait(*n, t, base_now_ms() + ms, &err);
}

#endif
