/* test_net_cap.c - the connection layer keeps a loop's slots for its
 * proven peers from strangers (net_reserve, net_cap). Where it cannot ask
 * the kernel whose a connection from this host is (sock_diag), as it
 * cannot here after NET_DIAG_OFF, a loop held to its PEERS and ROOM
 * connections more (a node relay in a shared process), its TCP port
 * flooded from 127.0.0.2 by as many strangers as its cap, who connect and
 * send nothing, holds ROOM of them, the newest; a peer dialing from
 * 127.0.0.1 is welcomed though each stranger closed connects again at
 * once; one whose hello waits unread when a burst of strangers from its
 * own address comes to its turn to make room is proven, not closed; a
 * peer by the Unix socket is welcomed under a kept flood. Where it can
 * ask, a flood from 127.0.0.1 by another uid (the user nobody), kept up
 * while a peer dials, is closed unread and the peer welcomed. A loop of
 * a relay's size takes more of its uid's connections on its Unix socket
 * at once than the room for strangers, all of them. net_fd_check asks
 * for room for strangers beyond the peers. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "tap.h"
#include "net_private.h"
#include "net_test.h"

#define PEERS 2
#define ROOM 8             /* the unproven connections the loop may hold */
#define FLOOD (PEERS + ROOM) /* strangers on its TCP port at once: its whole cap */
#define UNIX_HELD 6        /* unproven connections on its Unix socket */
#define SETTLE_MS 10000    /* the longest wait for the loop to take what came */
#define RANKS 100          /* a relay's node's ranks, more than its room (RELAY_POOL) */
#define RELAY_ROOM 64

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
    const char *from; /* the strangers' own address (TCP), or NULL */
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
    struct sockaddr_in from = {.sin_family = AF_INET};
    if (f->from && inet_pton(AF_INET, f->from, &from.sin_addr) == 1 &&
        bind(s->fd, (struct sockaddr *)&from, sizeof from) < 0)
        s->fd = -1;
    if (s->fd < 0 || connect(s->fd, f->addr, f->len) < 0) {
        printf("Bail out! cannot connect a stranger: %s\n", strerror(errno));
        exit(1);
    }
}

/* n strangers connected to addr from their own address from (or NULL). */
static void flood_start(struct flood *f, size_t n, const struct sockaddr *addr, socklen_t len,
                        const char *from)
{
    *f = (struct flood){.n = n, .addr = addr, .len = len, .from = from};
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

/* Polls server until f's strangers s[0..held) heard their challenge and
 * are open and the rest are closed, or SETTLE_MS: whether they did. */
static bool settle(struct net *server, struct flood *f, size_t held)
{
    long long end = base_now_ms() + SETTLE_MS;
    struct net_event *ev;
    struct cohort_err err;
    for (;;) {
        bool done = true;
        for (size_t i = 0; i < f->n; i++) {
            look(&f->s[i]);
            done &= i < held ? f->s[i].heard && !f->s[i].closed : f->s[i].closed;
        }
        if (done || base_now_ms() >= end || net_poll(server, 5, &ev, &err) < 0)
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
    long long end = base_now_ms() + SETTLE_MS;
    struct net_event *ev;
    struct cohort_err err;
    while (net_unproven(server) && base_now_ms() < end && net_poll(server, 5, &ev, &err) >= 0) {
    }
    return net_unproven(server) == 0;
}

/* Polls client until its dial c reaches state, or SETTLE_MS: whether it did. */
static bool client_until(struct net *client, struct net_conn *c, enum net_state state)
{
    long long end = base_now_ms() + SETTLE_MS;
    struct net_event *ev;
    struct cohort_err err;
    while (c->state != state && base_now_ms() < end && net_poll(client, 5, &ev, &err) >= 0) {
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
    struct net_conn *c = net_dial(client, t, base_now_ms() + SETTLE_MS);
    if (!c || !client_until(client, c, NET_WAIT_CHALLENGE) || net_poll(server, 0, &ev, &err) < 0)
        return false;
    unsigned before = *admits;
    struct flood late = {.n = 1, .addr = f->addr, .len = f->len, .from = f->from};
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

/* The child's side of foreign(): as the user nobody, FLOOD connections to
 * addr, each the loop closes (or that hears a byte) made again, until
 * stop is readable; then "CLOSED HEARD" on out (how many the loop closed
 * and how many heard from it first). started: a byte once all are made. */
static int nobody_floods(const struct sockaddr *addr, socklen_t len, int started, int stop,
                         int out)
{
    struct passwd *pw = getpwnam("nobody");
    if (!pw || setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
        setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
        return 2;
    static struct flood f;
    flood_start(&f, FLOOD, addr, len, NULL);
    if (write(started, "x", 1) != 1)
        return 2;
    unsigned closed = 0, heard = 0;
    struct pollfd p[FLOOD + 1];
    for (bool done = false; !done;) {
        for (size_t i = 0; i < FLOOD; i++)
            p[i] = (struct pollfd){.fd = f.s[i].fd, .events = POLLIN};
        p[FLOOD] = (struct pollfd){.fd = stop, .events = POLLIN};
        if (poll(p, FLOOD + 1, -1) < 0 && errno != EINTR)
            return 2;
        for (size_t i = 0; i < FLOOD; i++) {
            char b;
            ssize_t got = p[i].revents ? recv(p[i].fd, &b, 1, MSG_DONTWAIT) : -1;
            if (got < 0 && (!p[i].revents || errno == EAGAIN || errno == EINTR))
                continue;
            heard += got > 0;
            closed += got <= 0;
            close(f.s[i].fd);
            connect_to(&f, &f.s[i]);
        }
        done = p[FLOOD].revents != 0; /* the parent closed its end */
    }
    dprintf(out, "%u %u\n", closed, heard);
    return 0;
}

/* On server, which asks the kernel whose a connection from this host is:
 * the user nobody's flood from 127.0.0.1 on t's port, kept up by a child
 * process while a peer of this uid dials t from client. */
static void foreign(struct net *server, struct net *client, const struct net_target *t)
{
    if (geteuid() != 0) {
        tap_skip("a flood by another uid: only root can become the user nobody");
        tap_skip("the other uid's connections closed unread: not run (not root)");
        return;
    }
    int started[2], stop[2], report[2];
    if (pipe2(started, O_CLOEXEC) < 0 || pipe2(stop, O_CLOEXEC) < 0 ||
        pipe2(report, O_CLOEXEC) < 0)
        exit(printf("Bail out! no pipes: %s\n", strerror(errno)));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(started[0]);
        close(stop[1]);
        close(report[0]);
        _exit(nobody_floods(t->addrs->ai_addr, t->addrs->ai_addrlen, started[1], stop[0],
                            report[1]));
    }
    close(started[1]);
    close(stop[0]);
    close(report[1]);
    char b;
    bool up = pid > 0 && read(started[0], &b, 1) == 1;
    bool welcomed = up && nt_dial(server, client, t, SETTLE_MS, NULL, NULL) == 1;
    close(stop[1]);
    unsigned closed = 0, heard = 0;
    FILE *r = fdopen(report[0], "r");
    bool told = r && fscanf(r, "%u %u", &closed, &heard) == 2;
    int st = 1;
    if (pid > 0)
        waitpid(pid, &st, 0);
    if (r)
        fclose(r);
    close(started[0]);
    ok(welcomed, "a peer dialing 127.0.0.1 is welcomed while the user nobody keeps %d "
       "connections there, each closed made again at once", FLOOD);
    ok(told && st == 0 && heard == 0 && closed >= FLOOD,
       "the user nobody's connections were all closed unread (%u closed, %u heard a challenge)",
       closed, heard);
}

/* A loop of a relay's size (its RANKS ranks, a relay above and one below
 * kept, RELAY_ROOM more) takes RANKS dials of this uid on its Unix
 * socket at once, from client. */
static void relay_sized(const struct hs_self *me, const struct net_ops *ops, struct net *client,
                        const unsigned *admits)
{
    struct net *relay;
    struct net_target u, t;
    struct addrinfo *ai;
    struct cohort_err err;
    struct net_event *ev;
    if (net_new(me, ops, &relay, &err) < 0 || nt_listen(relay, "net-cap-relay", &u, &t, &ai) < 0)
        exit(printf("Bail out! cannot listen for the relay\n"));
    net_reserve(relay, RANKS + 2);
    net_cap(relay, RANKS + 2 + RELAY_ROOM);
    long long end = base_now_ms() + SETTLE_MS;
    static struct net_conn *d[RANKS];
    unsigned before = *admits;
    for (size_t i = 0; i < RANKS; i++)
        d[i] = net_dial(client, &u, end);
    bool held = net_poll(client, 0, &ev, &err) >= 0; /* every dial connects */
    while (held && net_unproven(relay) < RANKS && base_now_ms() < end)
        held = net_poll(relay, 5, &ev, &err) >= 0;
    size_t most = net_unproven(relay), ready = 0;
    while (ready < RANKS && base_now_ms() < end && net_poll(relay, 5, &ev, &err) >= 0 &&
           net_poll(client, 5, &ev, &err) >= 0) {
        ready = 0;
        for (size_t i = 0; i < RANKS; i++)
            ready += d[i] && d[i]->state == NET_READY;
    }
    ok(held && most == RANKS, "%d ranks dialing a relay's Unix socket at once (its room for "
       "strangers %d): all held unproven together (%zu)", RANKS, RELAY_ROOM, most);
    ok(ready == RANKS && *admits - before == RANKS, "and all welcomed (%zu, %u admitted)", ready,
       *admits - before);
    for (size_t i = 0; i < RANKS; i++)
        if (d[i])
            net_close(client, d[i]);
    freeaddrinfo(ai);
    net_free(relay);
}

/* Whether net_fd_check, under a limit of 200 descriptors, asks for room
 * for NET_ROOM_MIN strangers beyond the peers and NET_FD_SPARE (in a
 * child: the hard limit cannot be raised again). */
static bool room_checked(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {200, 200};
        struct cohort_err err;
        char want[64];
        uint32_t peers = 200 - NET_FD_SPARE - 10;
        snprintf(want, sizeof want, "raise it to at least %u",
                 peers + NET_ROOM_MIN + NET_FD_SPARE);
        _exit(!(setrlimit(RLIMIT_NOFILE, &rl) == 0 &&
                net_fd_check(peers, "the test", "peers", &err) < 0 && strstr(err.msg, want) &&
                net_fd_check(200 - NET_FD_SPARE - NET_ROOM_MIN, "the test", "peers", &err) == 0));
    }
    int st = 1;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(void)
{
    struct auth_key k;
    struct cohort_err err;
    struct hs_self me, child;
    struct net *server, *client, *asking;
    if (auth_key_from_hex("COHORT_SECRET", nt_hex, &k, &err) < 0)
        return printf("Bail out! %s\n", err.msg), 1;
    nt_self(&me, &k, 79, 0);
    nt_self(&child, &k, 79, 1);
    unsigned admits = 0;
    struct net_ops ops = {.ctx = &admits, .max_payload = 4096, .admit = admit};
    struct net_target u, t, ua, ta;
    struct addrinfo *ai, *aia;
    if (net_new(&me, &ops, &server, &err) < 0 || net_new(&child, &ops, &client, &err) < 0 ||
        net_new(&me, &ops, &asking, &err) < 0)
        return printf("Bail out! %s\n", err.msg), 1;
    net_reserve(server, PEERS);
    net_cap(server, PEERS + ROOM);
    server->diag = NET_DIAG_OFF; /* this host's connections grouped by source */
    net_reserve(asking, PEERS);
    net_cap(asking, PEERS + ROOM);
    if (nt_listen(server, "net-cap", &u, &t, &ai) < 0 ||
        nt_listen(asking, "net-cap-uid", &ua, &ta, &aia) < 0)
        return printf("Bail out! cannot listen\n"), 1;

    static struct flood tcp;
    flood_start(&tcp, FLOOD, ai->ai_addr, ai->ai_addrlen, "127.0.0.2");
    bool done = settle(server, &tcp, ROOM);
    ok(done && net_unproven(server) == ROOM,
       "%d strangers from 127.0.0.2 on the TCP port at once: the loop holds the first %d, the "
       "others were closed, not they for them (%zu unproven, %zu closed)", FLOOD, ROOM,
       net_unproven(server), closed(&tcp));
    done = nt_dial(server, client, &t, SETTLE_MS, keep, &tcp) == 1;
    ok(done, "a peer dialing the TCP port from 127.0.0.1 is welcomed while the strangers "
       "connect again as they are closed (%u times)", tcp.again);
    ok(flood_end(server, &tcp), "the strangers gone, the loop holds none");

    flood_start(&tcp, FLOOD, ai->ai_addr, ai->ai_addrlen, NULL);
    done = settle(server, &tcp, ROOM);
    ok(done && proven_for_room(server, client, &t, &tcp, &admits),
       "a peer whose hello waits when its turn to make room for strangers of its own address "
       "comes is proven, not closed");
    ok(flood_end(server, &tcp), "the strangers gone again, the loop holds none");

    flood_start(&tcp, FLOOD, ai->ai_addr, ai->ai_addrlen, "127.0.0.2");
    ok(settle(server, &tcp, ROOM) && nt_dial(server, client, &u, SETTLE_MS, keep, &tcp),
       "a peer dialing the Unix socket is welcomed while the TCP flood is kept up");
    flood_end(server, &tcp);

    foreign(asking, client, &ta);
    relay_sized(&me, &ops, client, &admits);
    ok(room_checked(), "net_fd_check asks for room for %d strangers beyond the peers",
       NET_ROOM_MIN);

    freeaddrinfo(ai);
    freeaddrinfo(aia);
    net_free(asking);
    net_free(client);
    net_free(server);
    return tap_done();
}
