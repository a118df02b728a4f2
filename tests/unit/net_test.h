/* net_test.h - what the connection layer's unit tests share: the step's
 * key they use, a process of a one-node step of two ranks, a loop's two
 * listeners and a dial to one of them. Included by tests/unit/test_net_*.c
 * after tap.h. */
#ifndef COHORT_NET_TEST_H
#define COHORT_NET_TEST_H

#include <arpa/inet.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "net.h"

static const char *nt_hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/* s: rank (0 or 1) of job's step of 2 ranks on one node, proving key k. */
TAP_UNUSED static void nt_self(struct hs_self *s, const struct auth_key *k, uint32_t job,
                               uint32_t rank)
{
    static const uint32_t rank_node[] = {0, 0};
    memset(s, 0, sizeof *s);
    s->key = k;
    s->job = job;
    s->rank = rank;
    hs_view(2, 1, rank_node, NULL, 0, s->view);
}

/* server's two listeners: a Unix socket (an abstract name made of tag and
 * the pid) and a TCP port of 127.0.0.1, each with a backlog of 128, and
 * the targets that dial them in *u and *t (*ai: t's addresses, for
 * freeaddrinfo). 0, or -1. */
TAP_UNUSED static int nt_listen(struct net *server, const char *tag, struct net_target *u,
                                struct net_target *t, struct addrinfo **ai)
{
    struct cohort_err err;
    *u = (struct net_target){.role = "test loop", .is_unix = true, .timeout_s = 10};
    snprintf(u->name, sizeof u->name, "@cohort-test-%s-%d", tag, (int)getpid());
    u->ua.sun_family = AF_UNIX;
    memcpy(u->ua.sun_path + 1, u->name + 1, strlen(u->name) - 1);
    u->ua_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(u->name));
    int ufd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t inlen = sizeof in;
    int tfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (bind(ufd, (struct sockaddr *)&u->ua, u->ua_len) < 0 || listen(ufd, 128) < 0 ||
        bind(tfd, (struct sockaddr *)&in, sizeof in) < 0 || listen(tfd, 128) < 0 ||
        getsockname(tfd, (struct sockaddr *)&in, &inlen) < 0 ||
        net_listen(server, ufd, true, &err) < 0 || net_listen(server, tfd, false, &err) < 0)
        return -1;
    char port[8];
    snprintf(port, sizeof port, "%u", ntohs(in.sin_port));
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    if (getaddrinfo("127.0.0.1", port, &hints, ai) != 0)
        return -1;
    *t = (struct net_target){.role = "test loop", .addrs = *ai, .port = ntohs(in.sin_port),
                             .timeout_s = 10};
    snprintf(t->name, sizeof t->name, "127.0.0.1:%s", port);
    return 0;
}

/* Dials t from client while polling server (and, when each is not NULL,
 * calling each(arg) after each of server's rounds, before the client's):
 * 1 when the dial was welcomed, 0 when it failed or ms passed. */
TAP_UNUSED static int nt_dial(struct net *server, struct net *client,
                              const struct net_target *t, int ms, void (*each)(void *),
                              void *arg)
{
    long long end = base_now_ms() + ms;
    struct net_conn *c = net_dial(client, t, end);
    struct net_event *ev;
    struct cohort_err err;
    int got = 0;
    while (c && base_now_ms() < end && !got) {
        if (net_poll(server, 5, &ev, &err) < 0)
            break;
        if (each)
            each(arg);
        int n = net_poll(client, 5, &ev, &err);
        for (int i = 0; i < n; i++)
            if (ev[i].c == c && ev[i].what & (NET_EV_CONNECTED | NET_EV_FAILED))
                got = ev[i].what & NET_EV_FAILED ? -1 : 1;
    }
    if (c)
        net_close(client, c); /* a dial not done yet ends here, not in the next one */
    return got == 1;
}

#endif
