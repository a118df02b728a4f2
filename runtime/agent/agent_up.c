/* agent_up.c - the node agent's one authenticated connection up: to the
 * step's store holder, or in the watch's tree (node_tree.c) to the agent of
 * the node above it (see agent.h). It dials with the step's handshake as
 * the node's agent and sends frames on it; agent_local.c reads what comes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "coord_config.h"
#include "handshake.h"
#include "hostlist.h"
#include "store_msg.h"
#include "watch_tree.h"

int agent_up_start(struct agent *a, enum net_admit (*admit)(void *, const struct hs_hello *,
                                                            bool, struct cohort_err *),
                   struct cohort_err *err)
{
    struct hs_self me = {.key = &a->key, .job = a->step.job_id, .step = a->step.step_id,
                         .rank = COORD_AGENT_RANK, .node = a->step.node_id};
    memcpy(me.view, a->view, sizeof me.view);
    struct net_ops ops = {.ctx = a, .max_payload = WIRE_MAX_PAYLOAD_DEFAULT, .admit = admit};
    return net_new(&me, &ops, &a->net, err);
}

int agent_up_dial(struct agent *a, uint32_t node, int timeout_s, struct cohort_err *err)
{
    char host[256], ps[8];
    if (node == WATCH_TREE_TOP)
        snprintf(host, sizeof host, "%s", a->host);
    else if (hostlist_nth(a->step.nodes, node, host, sizeof host) < 0)
        return cohort_fail(err, "node %u of the step has no name in its node list", node);
    if (a->up)
        net_close(a->net, a->up);
    a->up = NULL;
    a->up_ready = false;
    a->up_error[0] = 0;
    if (a->addrs)
        freeaddrinfo(a->addrs);
    a->addrs = NULL;
    snprintf(ps, sizeof ps, "%u", a->port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    int g = getaddrinfo(host, ps, &hints, &a->addrs);
    if (g != 0)
        return cohort_fail(err, "cannot resolve %s, the host of %s: %s", host,
                           node == WATCH_TREE_TOP ? "the store holder" : "the node above in "
                           "the watch's tree", gai_strerror(g));
    struct net_target t = {.addrs = a->addrs, .port = a->port, .timeout_s = timeout_s,
                           .listening = false,
                           .role = node == WATCH_TREE_TOP ? "store holder" : "node agent"};
    if (node == WATCH_TREE_TOP)
        snprintf(t.name, sizeof t.name, "the step's store holder (%.100s:%u)", host, a->port);
    else
        snprintf(t.name, sizeof t.name, "the agent of node %u (%.100s:%u), above this one in "
                 "the watch's tree", node, host, a->port);
    if (!(a->up = net_dial(a->net, &t, base_now_ms() + (long long)timeout_s * 1000)))
        return cohort_fail(err, "out of memory");
    return 0;
}

int agent_up_send(struct agent *a, uint16_t op, uint32_t client, const uint8_t *p1,
                  size_t n1, const uint8_t *p2, size_t n2)
{
    if (!a->up_ready)
        return -1;
    return store_msg_send(a->up, COORD_AGENT_RANK, op, client, p1, n1, p2, n2);
}

bool agent_up_full(const struct agent *a)
{
    return a->up_ready && a->up->c.out_len > AGENT_UP_OUT_MAX;
}
