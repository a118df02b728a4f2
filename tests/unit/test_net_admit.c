/* test_net_admit.c - the connection layer (net.h) tells its owner's admit
 * callback which kind of listener a proven hello came by: a rank of the
 * step dialing a loop's Unix socket and then its TCP port is seen as
 * via_unix, then not; a hello the callback drops never becomes a
 * connection. (The relays and the bootstrap tree admit a node's own ranks
 * by its Unix socket alone, the relays or leaders below by TCP alone.) */
#include <stdio.h>

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

    struct net_target u, t;
    struct addrinfo *ai;
    if (nt_listen(server, "net-admit", &u, &t, &ai) < 0)
        return printf("Bail out! cannot listen\n"), 1;

    int got = nt_dial(server, client, &u, 10000, NULL, NULL);
    ok(got == 1 && seen.calls == 1 && seen.via_unix && seen.rank == 1,
       "a hello by the Unix socket reaches admit as via_unix (%d calls, via_unix %d, rank %u)",
       seen.calls, seen.via_unix, seen.rank);
    got = nt_dial(server, client, &t, 10000, NULL, NULL);
    ok(got == 1 && seen.calls == 2 && !seen.via_unix && seen.rank == 1,
       "a hello by TCP reaches admit as not via_unix (%d calls, via_unix %d)", seen.calls,
       seen.via_unix);
    seen.drop_tcp = true;
    got = nt_dial(server, client, &t, 1500, NULL, NULL);
    ok(got == 0 && seen.calls >= 3 && !seen.via_unix,
       "a hello admit drops by TCP is never welcomed (%d calls in 1.5 s)", seen.calls);
    got = nt_dial(server, client, &u, 10000, NULL, NULL);
    ok(got == 1 && seen.via_unix, "and the same rank by the Unix socket still is");
    freeaddrinfo(ai);
    net_free(client);
    net_free(server);
    return tap_done();
}
