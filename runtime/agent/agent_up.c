/* agent_up.c - the node agent's one authenticated connection to the
 * step's store holder (see agent.h): dialed with the step's handshake as
 * the node's agent, the holder's answers handed to the node's clients. */
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
    if (!(a->up = net_dial(a->net, &t, net_now_ms() + (long long)a->timeout_s * 1000)))
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

/* One frame of the holder's. */
static void answer(struct agent *a, const struct wire_frame *f)
{
    uint32_t id;
    const uint8_t *rest;
    size_t len;
    if (f->type != WIRE_STORE || store_msg_get(f->payload, f->len, &id, &rest, &len) < 0)
        return;
    struct client *c = agent_local_find(a, id);
    if (!c)
        return; /* gone since */
    if (f->flags == STORE_REPLY) {
        agent_local_write(a, c, rest, len);
    } else if (f->flags == STORE_DROP || f->flags == STORE_NOTE) {
        char line[COHORT_ERR_LEN + 128];
        int k = (int)(len > COHORT_ERR_LEN ? COHORT_ERR_LEN : len);
        if (f->flags == STORE_DROP)
            snprintf(line, sizeof line, "cohort: store: PyTorch's store client asked for %.*s; "
                     "the connection is closed", k, (const char *)rest);
        else
            snprintf(line, sizeof line, "%.*s", k, (const char *)rest);
        agent_local_note(a, c, line, f->flags == STORE_DROP);
    }
}

/* The link failed, or closed: every client is told once, and dropped. */
static void link_down(struct agent *a, const char *why)
{
    if (a->up_error[0])
        return;
    snprintf(a->up_error, sizeof a->up_error, "%s", why);
    a->up_ready = false;
    agent_local_resume(a);
}

void agent_up_events(struct agent *a, struct net_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        if (ev[i].c != a->up)
            continue;
        if (ev[i].what & NET_EV_FAILED) {
            link_down(a, net_dial_error(a->up)->msg);
            continue;
        }
        if (ev[i].what & NET_EV_CONNECTED) {
            a->up_ready = true;
            agent_local_resume(a);
        }
        struct wire_frame f;
        struct cohort_err e;
        int got;
        while ((got = conn_next(&a->up->c, WIRE_MAX_PAYLOAD_DEFAULT, &f, &e)) > 0) {
            answer(a, &f);
            conn_consume(&a->up->c, &f);
        }
        if (got < 0)
            link_down(a, e.msg);
        else if (ev[i].what & NET_EV_CLOSED)
            link_down(a, "the step's store holder closed its connection (it ended: its "
                         "node's tasks are done, or it was killed)");
    }
}
