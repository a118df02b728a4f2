/* test_net_pool.c - the account of a loop's unproven connections
 * (net_pool.c), on made-up connections and addresses, no socket: sources
 * are IPv4 addresses and IPv6 /64s (an IPv4 address by IPv6 the same as
 * by IPv4); a host flooding a full room takes only its own connections'
 * places, the oldest first, however long it keeps on, and a peer of
 * another host keeps its place, as does a peer whose host holds as many;
 * on a tie the newcomer's own group gives the place; a connection of the
 * current round is taken only for a newcomer of a group smaller by two,
 * never for its own group's; a trusted connection's place is taken only
 * by another trusted one, and only when no remote one is left; the
 * largest group is followed as groups shrink. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "net_private.h"

#define ROOM 8
#define ROUNDS 1000 /* newcomers of a flooding host */

/* The source of a connection from text, an IPv4 or IPv6 address. */
static struct net_source src(const char *text)
{
    struct sockaddr_in in = {.sin_family = AF_INET};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
    struct net_source s;
    if (inet_pton(AF_INET, text, &in.sin_addr) == 1)
        net_source_of((struct sockaddr *)&in, &s);
    else if (inet_pton(AF_INET6, text, &in6.sin6_addr) == 1)
        net_source_of((struct sockaddr *)&in6, &s);
    else
        exit(printf("Bail out! %s is no address\n", text));
    return s;
}

static bool same(struct net_source a, struct net_source b)
{
    return memcmp(a.b, b.b, sizeof a.b) == 0;
}

/* A new connection from src (NULL: trusted) in round burst. */
static struct net_conn *join(struct net_pool *p, const struct net_source *src, unsigned burst)
{
    static struct net_conn all[ROUNDS + 4 * ROOM];
    static size_t used;
    struct net_conn *c = &all[used++];
    if (net_pool_join(p, c, src) < 0) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    c->burst = burst;
    return c;
}

/* A flood from a into a room held by ROOM - 1 of a's and peer, from
 * round 2 on, one newcomer a round: whether each took the place of a's
 * oldest, never the peer's. */
static bool flood(struct net_pool *p, struct net_conn **mine, const struct net_source *a,
                  struct net_conn *peer)
{
    bool good = true;
    for (unsigned r = 2; r < ROUNDS + 2; r++) {
        struct net_conn *c = net_pool_victim(p, a, r);
        good &= c == mine[0] && c != peer && p->remote == ROOM;
        net_pool_leave(p, c);
        memmove(mine, mine + 1, (ROOM - 2) * sizeof *mine);
        mine[ROOM - 2] = join(p, a, r);
    }
    return good;
}

int main(void)
{
    ok(!same(src("10.0.0.1"), src("10.0.0.2")) && same(src("10.0.0.1"), src("::ffff:10.0.0.1")) &&
       same(src("2001:db8::1"), src("2001:db8::2:3")) &&
       !same(src("2001:db8::1"), src("2001:db8:0:1::1")) &&
       !same(src("::ffff:10.0.0.1"), src("::ffff:10.0.0.2")),
       "sources: an IPv4 address each (by IPv4 or IPv6), an IPv6 /64 each");

    struct net_pool p;
    net_pool_init(&p);
    struct net_source a = src("10.0.0.1"), b = src("2001:db8::7"), c = src("10.0.0.3");
    struct net_conn *mine[ROOM], *peer;
    for (int i = 0; i < ROOM - 1; i++)
        mine[i] = join(&p, &a, 1);
    peer = join(&p, &b, 1);
    ok(flood(&p, mine, &a, peer), "a host flooding a full room takes only its own places, the "
       "oldest first, for %d newcomers: the peer of another host keeps its own", ROUNDS);
    ok(net_pool_victim(&p, &c, ROUNDS + 2) == mine[0],
       "a third host's newcomer takes the flooding host's oldest place");

    struct net_source b2 = src("2001:db8::8");
    struct net_conn *peer2 = join(&p, &b2, 2);
    ok(net_pool_victim(&p, &b, ROUNDS + 2) == mine[0],
       "a newcomer of the peer's /64 (2 there, 7 of the flood's) takes the flood's place");
    for (int i = 0; i < ROOM - 3; i++)
        net_pool_leave(&p, net_pool_victim(&p, &c, ROUNDS + 2));
    ok(p.largest == 2 && net_pool_victim(&p, &b, ROUNDS + 2) == peer &&
       net_pool_victim(&p, &a, ROUNDS + 2) == mine[ROOM - 3],
       "two groups of 2: a newcomer takes its own group's oldest place (the tie)");

    unsigned now = mine[ROOM - 3]->burst; /* the round that accepted a's oldest */
    ok(net_pool_victim(&p, &a, now) == NULL,
       "a connection of this round is not taken for a newcomer of its own group");
    net_pool_leave(&p, peer2);
    ok(net_pool_victim(&p, &b, now) == NULL,
       "nor for one of a group smaller by one only (1 against 2)");
    for (int i = 0; i < ROOM; i++)
        join(&p, &a, now);
    ok(net_pool_victim(&p, &b, now) == mine[ROOM - 3],
       "but for one of a group smaller by two or more (1 against %d): the flood's, of this "
       "round", ROOM + 2);

    struct net_pool t;
    net_pool_init(&t);
    struct net_conn *first = join(&t, NULL, 1);
    join(&t, NULL, 2);
    ok(net_pool_victim(&t, &a, 3) == NULL && net_pool_victim(&t, NULL, 3) == first &&
       net_pool_victim(&t, NULL, 1) == NULL && t.trusted.count == 2 && !t.remote,
       "trusted connections: none taken for a remote newcomer; the oldest for a trusted one "
       "(not one of its round)");
    struct net_conn *r = join(&t, &a, 2);
    ok(net_pool_victim(&t, NULL, 3) == r, "a remote one first, for a trusted newcomer");
    net_pool_free(&t);
    net_pool_free(&p);
    return tap_done();
}
