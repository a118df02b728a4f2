/* agent_up.c - the node agent's one authenticated connection to the step's
 * store holder (see agent.h). It dials the holder with the step's handshake
 * as the node's agent and sends frames on it; agent_local.c reads what
 * comes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "coord_config.h"
#include "handshake.h"
#include "store_msg.h"

int agent_up_start(struct agent *a, struct cohort_err *err)
{
    struct hs_self me = {.key = &a->key, .job = a->step.job_id, .step = a->step.step_id,
                         .rank = COORD_AGENT_RANK, .node = a->step.node_id};
    memcpy(me.view, a->view, sizeof me.view);
    struct net_ops ops = {.max_payload = WIRE_MAX_PAYLOAD_DEFAULT};
    char ps[8];
    snprintf(ps, sizeof ps, "%u", a->port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    int g = getaddrinfo(a->host, ps, &hints, &a->addrs);
    if (g != 0)
        return cohort_fail(err, "cannot resolve the store holder's host %s: %s", a->host,
                           gai_strerror(g));
    if (net_new(&me, &ops, &a->net, err) < 0)
        return -1;
    struct net_target t = {.addrs = a->addrs, .port = a->port, .timeout_s = a->timeout_s,
                           .listening = false, .role = "store holder"};
    snprintf(t.name, sizeof t.name, "the step's store holder (%.100s:%u)", a->host, a->port);
    if (!(a->up = net_dial(a->net, &t, base_now_ms() + (long long)a->timeout_s * 1000)))
        return cohort_fail(err, "out of memory");
    return 0;
}

int agent_up_send(struct agent *a, uint16_t op, uint32_t client, const uint8_t *p1,
                  size_t n1, const uint8_t *p2, size_t n2)
{
    if (!a->up_ready)
        return -1;
    uint8_t *b = malloc(STORE_MSG_HEAD + n1 + n2);
    if (!b)
        return -1;
    store_msg_head(b, client);
    if (n1)
        memcpy(b + STORE_MSG_HEAD, p1, n1);
    if (n2)
        memcpy(b + STORE_MSG_HEAD + n1, p2, n2);
    int rc = net_send(a->up, WIRE_STORE, op, COORD_AGENT_RANK, b,
                      (uint32_t)(STORE_MSG_HEAD + n1 + n2));
    free(b);
    return rc;
}

bool agent_up_full(const struct agent *a)
{
    return a->up && a->up->c.out_len > AGENT_UP_OUT_MAX;
}
