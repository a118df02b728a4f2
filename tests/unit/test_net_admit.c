/* test_net_admit.c - the connection layer (net.h) tells its owner's admit
 * callback which kind of listener a proven hello came by: a rank of the
 * step dialing a loop's Unix socket and then its TCP port is seen as
 * via_unix, then not; a hello the callback drops never becomes a
 * connection. (The relays and the bootstrap tree admit a node's own ranks
 * by its Unix socket alone, the relays or leaders below by TCP alone.) */
#include <arpa/inet.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "net.h"
#include "tap.h"
#include "net_test.h"

struct seen {
    int calls;
    bool via_unix;
    uint32_t rank;
    bool drop_tcp; /* drop what comes by TCP */
};

static enum net_admit record(void *ctx, const struct hs_hello *h, bool via_unix,
                             struct cohort_err *why)
{
    struct seen *s = ctx;
    (void)why;
    s->calls++;
    s->via_unix = via_unix;
    s->rank = h->rank;
    return s->drop_tcp && !via_unix ? NET_DROP : NET_ADMIT;
}

/* Dials t from client while polling server: 1 when the dial was welcomed,
 * 0 when it failed or ms passed. */
static int dial(struct net *server, struct net *client, const struct net_target *t, int ms)
{
    long long end = net_now_ms() + ms;
    struct net_conn *c = net_dial(client, t, end);
    struct net_event *ev;
    struct cohort_err err;
    int got = 0;
    while (c && net_now_ms() < end && !got) {
        if (net_poll(server, 5, &ev, &err) < 0)
            break;
        int n = net_poll(client, 5, &ev, &err);
        for (int i = 0; i < n; i++)
            if (ev[i].c == c && ev[i].what & (NET_EV_CONNECTED | NET_EV_FAILED))
                got = ev[i].what & NET_EV_FAILED ? -1 : 1;
    }
    if (c)
        net_close(client, c); /* a dial not done yet ends here, not in the next one */
    return got == 1;
}

int main(void)
{
    struct auth_key k;
    struct cohort_err err;
    struct hs_self me, child;
    struct seen seen = {0};
    struct net *server, *client;
    if (auth_key_from_hex("COHORT_SECRET", nt_hex, &k, &err) < 0)
        return printf("Bail out! %s\n", err.msg), 1;
    nt_self(&me, &k, 77, 0);
    nt_self(&child, &k, 77, 1);
    struct net_ops ops = {.ctx = &seen, .max_payload = 4096, .admit = record};
    if (net_new(&me, &ops, &server, &err) < 0 || net_new(&child, &ops, &client, &err) < 0)
        return printf("Bail out! %s\n", err.msg), 1;

    struct net_target u = {.role = "test loop", .is_unix = true, .timeout_s = 10};
    snprintf(u.name, sizeof u.name, "@cohort-test-net-admit-%d", (int)getpid());
    u.ua.sun_family = AF_UNIX;
    memcpy(u.ua.sun_path + 1, u.name + 1, strlen(u.name) - 1);
    u.ua_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(u.name));
    int ufd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t inlen = sizeof in;
    int tfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (bind(ufd, (struct sockaddr *)&u.ua, u.ua_len) < 0 || listen(ufd, 8) < 0 ||
        bind(tfd, (struct sockaddr *)&in, sizeof in) < 0 || listen(tfd, 8) < 0 ||
        getsockname(tfd, (struct sockaddr *)&in, &inlen) < 0 ||
        net_listen(server, ufd, true, &err) < 0 || net_listen(server, tfd, false, &err) < 0)
        return printf("Bail out! cannot listen\n"), 1;
    char port[8];
    snprintf(port, sizeof port, "%u", ntohs(in.sin_port));
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo("127.0.0.1", port, &hints, &ai) != 0)
        return printf("Bail out! getaddrinfo\n"), 1;
    struct net_target t = {.role = "test loop", .addrs = ai, .port = ntohs(in.sin_port),
                           .timeout_s = 10};
    snprintf(t.name, sizeof t.name, "127.0.0.1:%s", port);

    int got = dial(server, client, &u, 10000);
    ok(got == 1 && seen.calls == 1 && seen.via_unix && seen.rank == 1,
       "a hello by the Unix socket reaches admit as via_unix (%d calls, via_unix %d, rank %u)",
       seen.calls, seen.via_unix, seen.rank);
    got = dial(server, client, &t, 10000);
    ok(got == 1 && seen.calls == 2 && !seen.via_unix && seen.rank == 1,
       "a hello by TCP reaches admit as not via_unix (%d calls, via_unix %d)", seen.calls,
       seen.via_unix);
    seen.drop_tcp = true;
    got = dial(server, client, &t, 1500);
    ok(got == 0 && seen.calls >= 3 && !seen.via_unix,
       "a hello admit drops by TCP is never welcomed (%d calls in 1.5 s)", seen.calls);
    got = dial(server, client, &u, 10000);
    ok(got == 1 && seen.via_unix, "and the same rank by the Unix socket still is");
    freeaddrinfo(ai);
    net_free(client);
    net_free(server);
    return tap_done();
}
