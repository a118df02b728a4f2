/* test_net_lost.c - a dial to a TCP parent whose side of the connection
 * was lost as it was made, without a reset (what the kernel does to a
 * connection that comes as the parent's listener closes and a new one
 * takes the port: a bootstrap root's restart, cohort_finalize then
 * cohort_init). The test makes such a connection: a listener accepts it
 * and drops it silently (TCP_REPAIR, which needs CAP_NET_ADMIN: skipped
 * without it); then a real loop serves the port. net_dial's probe has
 * the new listener's kernel reset the lost connection, the dial goes
 * again and is welcomed, instead of waiting for a challenge that cannot
 * come and taking the port for a stranger's. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net.h"
#include "tap.h"
#include "net_test.h"

static enum net_admit admit(void *ctx, const struct hs_hello *h, bool via_unix,
                            struct cohort_err *why)
{
    (void)ctx;
    (void)h;
    (void)via_unix;
    (void)why;
    return NET_ADMIT;
}

/* A listening TCP socket on 127.0.0.1:*port (0: one the kernel picks,
 * then in *port), or -1. */
static int listener(uint16_t *port)
{
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(*port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof in;
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&in, sizeof in) < 0 || listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)&in, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(in.sin_port);
    return fd;
}

/* The client's dial of t, polled with server's loop (when there is one)
 * until it is welcomed (1) or fails (0, why in *why), 10 s at most;
 * before that, with lfd >= 0, the first connection lfd gets is dropped
 * silently (-1 when that cannot be done, errno set). */
static int dial(struct net *client, struct net **server, const struct hs_self *me,
                const struct net_target *t, int lfd, const char **why)
{
    *why = "not welcomed within 10 s";
    long long end = base_now_ms() + 10000;
    struct net_conn *c = net_dial(client, t, end);
    struct net_event *ev;
    struct cohort_err err;
    struct net_ops ops = {.max_payload = 4096, .admit = admit};
    while (c && base_now_ms() < end) {
        int a = lfd >= 0 ? accept(lfd, NULL, NULL) : -1, on = 1;
        if (a >= 0) { /* the parent's side of the first connection, gone without a word */
            int rc = setsockopt(a, IPPROTO_TCP, TCP_REPAIR, &on, sizeof on), e = errno;
            close(a);
            close(lfd);
            uint16_t port = t->port;
            if (rc < 0)
                return errno = e, -1;
            lfd = -1; /* a new listener takes the port, as a restarted parent's would */
            if (net_new(me, &ops, server, &err) < 0 || (a = listener(&port)) < 0 ||
                net_listen(*server, a, false, &err) < 0)
                return 0;
        }
        if (*server && net_poll(*server, 5, &ev, &err) < 0)
            return 0;
        int n = net_poll(client, 5, &ev, &err);
        for (int i = 0; i < n; i++)
            if (ev[i].c == c && ev[i].what & NET_EV_FAILED)
                return *why = net_dial_error(c)->msg, 0;
            else if (ev[i].c == c && ev[i].what & NET_EV_CONNECTED)
                return *why = "welcomed", 1;
    }
    return 0;
}

int main(void)
{
    struct auth_key k;
    struct cohort_err err;
    struct hs_self parent, child;
    struct net *client, *server = NULL;
    if (auth_key_from_hex("COHORT_SECRET", nt_hex, &k, &err) < 0)
        return printf("Bail out! %s\n", err.msg), 1;
    nt_self(&parent, &k, 78, 0);
    nt_self(&child, &k, 78, 1);
    struct net_ops ops = {.max_payload = 4096, .admit = admit};
    uint16_t port = 0;
    int lfd = listener(&port);
    if (lfd < 0 || net_new(&child, &ops, &client, &err) < 0)
        return printf("Bail out! cannot listen on 127.0.0.1\n"), 1;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo("127.0.0.1", ps, &hints, &ai) != 0)
        return printf("Bail out! getaddrinfo\n"), 1;
    struct net_target t = {.role = "test parent", .addrs = ai, .port = port, .timeout_s = 10};
    snprintf(t.name, sizeof t.name, "127.0.0.1:%u", port);
    const char *why;
    int got = dial(client, &server, &parent, &t, lfd, &why);
    if (got < 0 && (errno == EPERM || errno == EACCES || errno == ENOPROTOOPT))
        tap_skip("a connection lost without a reset is made with TCP_REPAIR, which needs "
                 "CAP_NET_ADMIN (run as root) and a kernel that has it (%s)", strerror(errno));
    else
        ok(got == 1, "a dial whose first connection the parent's side lost without a reset "
           "is dialed again and welcomed by the parent now on the port (%s)",
           got < 0 ? strerror(errno) : why);
    freeaddrinfo(ai);
    net_free(client);
    net_free(server);
    return tap_done();
}
