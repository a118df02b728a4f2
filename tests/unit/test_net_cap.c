/* test_net_cap.c - the connection layer keeps a loop's slots for its
 * proven peers from strangers (net_reserve, net_cap). A loop held to its
 * PEERS and ROOM connections more (a node relay in a shared process), its
 * TCP port flooded by as many strangers as its cap, who connect and send
 * nothing, holds ROOM of them, the newest; a peer dialing then takes the
 * place of the oldest and is welcomed, though each stranger closed
 * connects again at once (before, every connection past the cap was
 * closed at once, the peers' too, for as long as the strangers kept it
 * full); one whose hello waits unread when a burst of strangers comes to
 * its turn to make room is proven, not closed. Connections on its Unix
 * socket take the strangers' places down to the TCP port's even share of
 * the room; a second flood on the TCP port then takes only that share's
 * places, never the Unix socket's; and a peer by the Unix socket is still
 * welcomed. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>

#include "net.h"
#include "tap.h"
#include "net_test.h"

#define PEERS 2
#define ROOM 8             /* the unproven connections the loop may hold */
#define FLOOD (PEERS + ROOM) /* strangers on its TCP port at once: its whole cap */
#define UNIX_HELD 6        /* unproven connections on its Unix socket */
#define SETTLE_MS 10000    /* the longest wait for the loop to take what came */

/* A connection the test holds open without a word. */
struct stranger {
    int fd;
    bool heard;  /* the loop's challenge came: it was accepted */
    bool closed; /* the loop closed it */
};

/* Strangers on one address, in the order they connected. */
struct flood {
    struct stranger s[FLOOD];
    size_t n;
    const struct sockaddr *addr;
    socklen_t len;
    unsigned again; /* connections made again after the loop closed them */
};

/* Admits every hello, counting them in *(unsigned *)ctx. */
static enum net_admit admit(void *ctx, const struct hs_hello *h, bool via_unix,
                            struct cohort_err *why)
{
    (void)h;
    (void)via_unix;
    (void)why;
    ++*(unsigned *)ctx;
    return NET_ADMIT;
}

/* s connected to f's address (a blocking connect: the backlog holds it). */
static void connect_to(const struct flood *f, struct stranger *s)
{
    *s = (struct stranger){.fd = socket(f->addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    if (s->fd < 0 || connect(s->fd, f->addr, f->len) < 0) {
        printf("Bail out! cannot connect a stranger: %s\n", strerror(errno));
        exit(1);
    }
}

/* n strangers connected to addr. */
static void flood_start(struct flood *f, size_t n, const struct sockaddr *addr, socklen_t len)
{
    *f = (struct flood){.n = n, .addr = addr, .len = len};
    for (size_t i = 0; i < n; i++)
        connect_to(f, &f->s[i]);
}

/* What came on s: the challenge, the loop's close. */
static void look(struct stranger *s)
{
    char b[512];
    while (!s->closed) {
        ssize_t got = recv(s->fd, b, sizeof b, MSG_DONTWAIT);
        if (got > 0)
            s->heard = true;
        else if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            s->closed = true;
        else
            return;
    }
}

/* Every stranger of f (a struct flood) the loop closed connects again at
 * once, as an attacker's does to keep its flood up: before the peer's
 * next step (nt_dial), so that before the fix the strangers fill the cap
 * again each time their time to prove ran out, ahead of the peer. */
static void keep(void *arg)
{
    struct flood *f = arg;
    for (size_t i = 0; i < f->n; i++) {
        look(&f->s[i]);
        if (f->s[i].closed) {
            close(f->s[i].fd);
            connect_to(f, &f->s[i]);
            f->again++;
        }
    }
}

/* Polls server until f's strangers s[0..first_open) are closed and the
 * rest heard their challenge and are open, or SETTLE_MS: whether they
 * did. */
static bool settle(struct net *server, struct flood *f, size_t first_open)
{
    long long end = net_now_ms() + SETTLE_MS;
    struct net_event *ev;
    struct cohort_err err;
    for (;;) {
        bool done = true;
        for (size_t i = 0; i < f->n; i++) {
            look(&f->s[i]);
            done &= i < first_open ? f->s[i].closed : f->s[i].heard && !f->s[i].closed;
        }
        if (done || net_now_ms() >= end || net_poll(server, 5, &ev, &err) < 0)
            return done;
    }
}

/* How many of f's strangers the loop closed. */
static size_t closed(const struct flood *f)
{
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++)
        k += f->s[i].closed;
    return k;
}

/* f's strangers gone, and the loop rid of them (or SETTLE_MS): whether it is. */
static bool flood_end(struct net *server, struct flood *f)
{
    for (size_t i = 0; i < f->n; i++)
        close(f->s[i].fd);
    long long end = net_now_ms() + SETTLE_MS;
    struct net_event *ev;
    struct cohort_err err;
    while (net_unproven(server) && net_now_ms() < end && net_poll(server, 5, &ev, &err) >= 0) {
    }
    return net_unproven(server) == 0;
}

/* Polls client until its dial c reaches state, or SETTLE_MS: whether it did. */
static bool client_until(struct net *client, struct net_conn *c, enum net_state state)
{
    long long end = net_now_ms() + SETTLE_MS;
    struct net_event *ev;
    struct cohort_err err;
    while (c->state != state && net_now_ms() < end && net_poll(client, 5, &ev, &err) >= 0) {
    }
    return c->state == state;
}

/* With f's strangers filling the room: a peer's dial accepted, a stranger
 * connecting, the peer's hello sent, and ROOM more strangers connecting,
 * all before the loop's next round, which takes the connections first
 * (the listener was ready first) and comes to the peer's turn to make
 * room: whether it admitted the peer then (*admits counts them). */
static bool proven_for_room(struct net *server, struct net *client, const struct net_target *t,
                            struct flood *f, const unsigned *admits)
{
    struct net_event *ev;
    struct cohort_err err;
    struct net_conn *c = net_dial(client, t, net_now_ms() + SETTLE_MS);
    if (!c || !client_until(client, c, NET_WAIT_CHALLENGE) || net_poll(server, 0, &ev, &err) < 0)
        return false;
    unsigned before = *admits;
    struct flood late = {.n = 1, .addr = f->addr, .len = f->len};
    connect_to(&late, &late.s[0]);
    bool sent = client_until(client, c, NET_WAIT_WELCOME);
    for (late.n = 1; late.n <= ROOM; late.n++)
        connect_to(&late, &late.s[late.n]);
    bool proven = sent && net_poll(server, 0, &ev, &err) >= 0 && *admits == before + 1;
    for (size_t i = 0; i < late.n; i++)
        close(late.s[i].fd);
    net_close(client, c);
    return proven;
}

int main(void)
{
    struct auth_key k;
    struct cohort_err err;
    struct hs_self me, child;
    struct net *server, *client;
    if (auth_key_from_hex("COHORT_SECRET", nt_hex, &k, &err) < 0)
        return printf("Bail out! %s\n", err.msg), 1;
    nt_self(&me, &k, 79, 0);
    nt_self(&child, &k, 79, 1);
    unsigned admits = 0;
    struct net_ops ops = {.ctx = &admits, .max_payload = 4096, .admit = admit};
    struct net_target u, t;
    struct addrinfo *ai;
    if (net_new(&me, &ops, &server, &err) < 0 || net_new(&child, &ops, &client, &err) < 0)
        return printf("Bail out! %s\n", err.msg), 1;
    net_reserve(server, PEERS);
    net_cap(server, PEERS + ROOM);
    if (nt_listen(server, "net-cap", &u, &t, &ai) < 0)
        return printf("Bail out! cannot listen\n"), 1;
    const struct sockaddr *unix_addr = (const struct sockaddr *)&u.ua;

    static struct flood tcp, held, more;
    flood_start(&tcp, FLOOD, ai->ai_addr, ai->ai_addrlen);
    bool done = settle(server, &tcp, FLOOD - ROOM);
    ok(done && net_unproven(server) == ROOM,
       "%d strangers on the TCP port: the loop holds the newest %d, the others were closed "
       "for them (%zu unproven, %zu closed)", FLOOD, ROOM, net_unproven(server), closed(&tcp));
    done = nt_dial(server, client, &t, SETTLE_MS, keep, &tcp) == 1;
    ok(done, "a peer dialing the TCP port is welcomed while the strangers connect again as "
       "they are closed (%u times)", tcp.again);
    ok(flood_end(server, &tcp), "the strangers gone, the loop holds none");

    flood_start(&tcp, FLOOD, ai->ai_addr, ai->ai_addrlen);
    done = settle(server, &tcp, FLOOD - ROOM);
    ok(done && proven_for_room(server, client, &t, &tcp, &admits),
       "a peer whose hello waits when its turn to make room comes is proven, not closed");
    ok(flood_end(server, &tcp), "the strangers gone again, the loop holds none");

    flood_start(&tcp, FLOOD, ai->ai_addr, ai->ai_addrlen);
    done = settle(server, &tcp, FLOOD - ROOM);
    /* the Unix socket's take the strangers' places until both listeners
     * hold their even share, ROOM / 2; then the places of its own oldest */
    flood_start(&held, UNIX_HELD, unix_addr, u.ua_len);
    done = done && settle(server, &held, UNIX_HELD - ROOM / 2) &&
           settle(server, &tcp, FLOOD - ROOM / 2);
    ok(done && net_unproven(server) == ROOM,
       "%d connections on the Unix socket take the strangers' places down to the TCP port's "
       "share of %d (%zu of them closed, %zu of the strangers; %zu unproven)", UNIX_HELD,
       ROOM / 2, closed(&held), closed(&tcp), net_unproven(server));
    flood_start(&more, FLOOD, ai->ai_addr, ai->ai_addrlen);
    done = settle(server, &more, FLOOD - ROOM / 2) && settle(server, &tcp, FLOOD) &&
           settle(server, &held, UNIX_HELD - ROOM / 2);
    ok(done && net_unproven(server) == ROOM,
       "%d more strangers on the TCP port take only its own share's places: the Unix "
       "socket keeps its %d (%zu of them closed, %zu unproven)", FLOOD, ROOM / 2,
       closed(&held), net_unproven(server));
    ok(nt_dial(server, client, &u, SETTLE_MS, keep, &more) == 1,
       "a peer dialing the Unix socket is welcomed while the TCP flood is kept up");

    flood_end(server, &tcp);
    flood_end(server, &held);
    flood_end(server, &more);
    freeaddrinfo(ai);
    net_free(client);
    net_free(server);
    return tap_done();
}
