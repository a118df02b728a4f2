/* net_dial.c - the child's side of the connection layer (net.h):
 * connecting to a parent with retries, checking that the parent is this
 * step's, the hello, the welcome. */
#include "net_private.h"

#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

struct net_dial {
    struct net_target t;
    const struct addrinfo *cur; /* TCP: the address being tried */
    long long end;              /* the dial's deadline */
    long long next_try;
    int wait_ms;
    bool dropped;               /* a parent closed the connection after the hello */
    struct cohort_err error;
};

static void dial_step(struct net *n, struct net_conn *c, unsigned events);

struct net_conn *net_dial(struct net *n, const struct net_target *t, long long deadline)
{
    struct net_conn *c = net_conn_new(n, -1);
    struct net_dial *d = c ? calloc(1, sizeof *d) : NULL;
    if (!d) {
        if (c)
            net_close(n, c);
        return NULL;
    }
    d->t = *t;
    d->end = deadline;
    d->wait_ms = 1;
    d->next_try = base_now_ms();
    c->dial = d;
    c->client_step = dial_step;
    c->state = NET_DIALING;
    c->deadline = d->next_try; /* the next net_poll connects */
    return c;
}

const struct cohort_err *net_dial_error(const struct net_conn *c)
{
    static const struct cohort_err none;
    return c->dial ? &c->dial->error : &none;
}

struct net_conn *net_dial_wait(struct net *n, const struct net_target *t, long long deadline,
                               struct cohort_err *err)
{
    struct net_conn *c = net_dial(n, t, deadline);
    if (!c) {
        cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
        return NULL;
    }
    while (c->state != NET_READY) {
        struct net_event *ev;
        long long left = deadline - base_now_ms();
        int k = net_poll(n, left > 0 ? (int)left : 0, &ev, err);
        if (k < 0)
            return NULL;
        for (int i = 0; i < k; i++)
            if (ev[i].c == c && (ev[i].what & NET_EV_FAILED)) {
                *err = *net_dial_error(c);
                return NULL;
            }
    }
    return c;
}

/* Ends the dial with code (an enum cohort_err_code) and a sentence. */
static void fail(struct net *n, struct net_conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(struct net *n, struct net_conn *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->dial->error.msg, sizeof c->dial->error.msg, fmt, ap);
    va_end(ap);
    c->dial->error.code = code;
    net_close(n, c);
    net_event_add(n, c, NET_EV_FAILED);
}

/* A refused connection to a target that listened before its address was
 * given out, on its last address: it is gone, no wait will bring it back.
 * True when that failed the dial. */
static bool gone(struct net *n, struct net_conn *c, int err)
{
    struct net_dial *d = c->dial;
    if (err != ECONNREFUSED || !d->t.listening || (d->cur && d->cur->ai_next))
        return false;
    fail(n, c, COHORT_E_PEER_LOST, "%s refused the connection: it was listening, so it is gone",
         d->t.name);
    return true;
}

/* Not there, or it closed before challenging: the next address at once,
 * or all of them again after a growing wait. */
static void retry(struct net_conn *c)
{
    struct net_dial *d = c->dial;
    conn_close(&c->c);
    c->events = 0;
    c->state = NET_DIALING;
    long long now = base_now_ms();
    if (!d->t.is_unix && d->cur && d->cur->ai_next) {
        d->cur = d->cur->ai_next;
        d->next_try = now;
    } else {
        d->cur = NULL;
        d->next_try = now + d->wait_ms;
        d->wait_ms = d->wait_ms + d->wait_ms / 2 + 1;
        if (d->wait_ms > NET_RETRY_MAX_MS)
            d->wait_ms = NET_RETRY_MAX_MS;
    }
    c->deadline = d->next_try < d->end ? d->next_try : d->end;
}

static void at_end(struct net *n, struct net_conn *c)
{
    struct net_dial *d = c->dial;
    if (d->dropped)
        fail(n, c, COHORT_E_AUTH, "%s did not welcome rank %u within %d s (it closed the "
                                  "connection after the hello): does it hold this step's "
                                  "COHORT_SECRET, or is there a flood of connections on that "
                                  "port?",
             d->t.name, n->me.rank, d->t.timeout_s);
    else if (d->t.is_unix && n->me.key->kind == AUTH_SECRET) /* the name comes from the secret */
        fail(n, c, COHORT_E_NETWORK, "%s did not answer within %d s (is it running, and does "
                                     "this task hold the step's COHORT_SECRET?)",
             d->t.name, d->t.timeout_s);
    else
        fail(n, c, COHORT_E_NETWORK, "%s did not answer within %d s", d->t.name,
             d->t.timeout_s);
}

/* Whoever answered is not this step's parent (the target's role): code is
 * COHORT_E_AUTH when it serves this step but without the secret, else
 * COHORT_E_NETWORK. */
static void not_parent(struct net *n, struct net_conn *c, int code, const char *why)
{
    struct net_dial *d = c->dial;
    if (d->t.is_unix)
        fail(n, c, code, "%s: its socket answered, but not as this step's %s (%s)", d->t.name,
             d->t.role, why);
    else
        fail(n, c, code, "%s: port %u answered, but not as this step's %s (%s): is another "
                         "program using port %u?", d->t.name, d->t.port, d->t.role, why,
             d->t.port);
}

/* While a TCP parent's challenge is awaited, its kernel is probed
 * (keepalive) a second after the connect: a connection whose other side
 * was lost as it was made (the parent's listener closing as the connect
 * came and a new one taking the port, as in a restart: the kernel drops
 * the half-made connection without a reset) is then reset by the
 * parent's kernel (a listener, or no socket, answers the probe so) and
 * dialed again, rather than taken, once NET_CHALLENGE_MS passes, for a
 * stranger on the port; a live squatter's kernel answers the probe, and
 * it is still found out then. Off again once challenged. */
static void probe_parent(int fd, bool on)
{
    int v = on, one = 1;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v);
    if (on) {
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &one, sizeof one);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &one, sizeof one);
    }
}

static void connected(struct net *n, struct net_conn *c)
{
    struct net_dial *d = c->dial;
    if (d->t.is_unix) {
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(c->c.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
            cred.uid != geteuid()) {
            fail(n, c, COHORT_E_AUTH, "%s: its socket is held by uid %u, not by this job's user",
                 d->t.name, (unsigned)cred.uid);
            return;
        }
    } else {
        int one = 1;
        setsockopt(c->c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        probe_parent(c->c.fd, true);
    }
    c->state = NET_WAIT_CHALLENGE;
    long long by = base_now_ms() + NET_CHALLENGE_MS;
    c->deadline = d->t.is_unix || by > d->end ? d->end : by;
    if (net_watch(n, c, EPOLLIN) < 0)
        retry(c);
}

static void start_connect(struct net *n, struct net_conn *c)
{
    struct net_dial *d = c->dial;
    const struct sockaddr *sa = (const struct sockaddr *)&d->t.ua;
    socklen_t len = d->t.ua_len;
    int family = AF_UNIX;
    if (!d->t.is_unix) {
        if (!d->cur)
            d->cur = d->t.addrs;
        sa = d->cur->ai_addr;
        len = d->cur->ai_addrlen;
        family = d->cur->ai_family;
    }
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail(n, c, COHORT_E_RESOURCE, "cannot create a socket to reach %s: %s", d->t.name,
             strerror(errno));
        return;
    }
    conn_init(&c->c, fd);
    if (connect(fd, sa, len) == 0) {
        connected(n, c);
        return;
    }
    if (errno != EINPROGRESS) {
        if (!gone(n, c, errno))
            retry(c);
        return;
    }
    c->state = NET_CONNECTING;
    long long by = base_now_ms() + NET_CONNECT_TRY_MS;
    c->deadline = by < d->end ? by : d->end;
    if (net_watch(n, c, EPOLLOUT) < 0)
        retry(c);
}

/* A refusal's code and text, made printable (it comes before any proof).
 * Returns -1 when the frame is not an abort's (wire_abort_decode). */
static int refusal(const struct wire_frame *f, struct cohort_err *why)
{
    if (wire_abort_decode(f->payload, f->len, why) < 0)
        return -1;
    size_t n = f->len - 1 < sizeof why->msg - 1 ? f->len - 1 : sizeof why->msg - 1;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = f->payload[1 + i];
        why->msg[i] = b >= 32 && b < 127 ? (char)b : '?';
    }
    why->msg[n] = '\0';
    return 0;
}

static void on_challenge(struct net *n, struct net_conn *c, const struct wire_frame *f)
{
    struct cohort_err e;
    uint8_t hello[HS_HELLO_MAX];
    if (hs_challenge_check(&n->me, f->payload, f->len, &c->hs, &e) < 0) {
        not_parent(n, c, e.code, e.msg);
        return;
    }
    conn_consume(&c->c, f);
    if (!c->dial->t.is_unix)
        probe_parent(c->c.fd, false);
    int len = hs_hello(&n->me, &c->hs, hello, &e);
    if (len < 0) {
        fail(n, c, e.code, "%s", e.msg);
        return;
    }
    if (conn_queue(&c->c, WIRE_HELLO, 0, n->me.rank, hello, (uint32_t)len) < 0 ||
        conn_flush(&c->c) < 0) {
        retry(c);
        return;
    }
    c->state = NET_WAIT_WELCOME;
    c->deadline = c->dial->end;
}

static void on_welcome(struct net *n, struct net_conn *c, const struct wire_frame *f)
{
    uint8_t base[32];
    if (hs_welcome_check(&n->me, &c->hs, f->payload, f->len, base) < 0) {
        fail(n, c, COHORT_E_AUTH, "%s did not prove it holds this step's COHORT_SECRET",
             c->dial->t.name);
        return;
    }
    conn_consume(&c->c, f);
    session_start(&c->c.sess, base, false);
    explicit_bzero(base, sizeof base);
    explicit_bzero(&c->hs, sizeof c->hs);
    c->c.ready = true;
    c->state = NET_READY;
    net_tell(n, c, NET_EV_CONNECTED);
}

/* What the parent sent during the handshake. */
static void handshake_input(struct net *n, struct net_conn *c)
{
    struct net_dial *d = c->dial;
    bool open = net_read(n, c);
    struct wire_frame f;
    struct cohort_err e;
    char text[300];
    int got = conn_next(&c->c, NET_UNAUTH_MAX, &f, &e);
    bool challenge = c->state == NET_WAIT_CHALLENGE;
    if (got < 0 && challenge) {
        not_parent(n, c, COHORT_E_NETWORK, e.msg);
    } else if (got < 0) {
        fail(n, c, COHORT_E_AUTH, "%s sent malformed data instead of a welcome (%s)", d->t.name,
             e.msg);
    } else if (got == 0) {
        if (open)
            return;
        d->dropped |= !challenge; /* closed after the hello */
        retry(c);                 /* before it: a listener going away, or no room */
    } else if (f.type == WIRE_ABORT && refusal(&f, &e) < 0) {
        fail(n, c, challenge ? COHORT_E_NETWORK : COHORT_E_AUTH,
             "%s sent a malformed abort frame instead of a %s", d->t.name,
             challenge ? "challenge" : "welcome");
    } else if (f.type == WIRE_ABORT) {
        fail(n, c, e.code, "%s refused rank %u: %.300s", d->t.name, n->me.rank, e.msg);
    } else if (challenge && f.type == WIRE_CHALLENGE) {
        on_challenge(n, c, &f);
    } else if (!challenge && f.type == WIRE_WELCOME) {
        on_welcome(n, c, &f);
    } else if (challenge) {
        snprintf(text, sizeof text, "it sent a %s frame first", wire_type_name(f.type));
        not_parent(n, c, COHORT_E_NETWORK, text);
    } else {
        fail(n, c, COHORT_E_AUTH, "%s answered the hello with a %s frame", d->t.name,
             wire_type_name(f.type));
    }
}

static void dial_step(struct net *n, struct net_conn *c, unsigned events)
{
    struct net_dial *d = c->dial;
    long long now = base_now_ms();
    switch (c->state) {
    case NET_DIALING:
        if (now >= d->end)
            at_end(n, c);
        else if (now >= d->next_try)
            start_connect(n, c);
        return;
    case NET_CONNECTING: {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (events && getsockopt(c->c.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && !soerr)
            connected(n, c);
        else if ((events && gone(n, c, soerr)) || !(events || now >= c->deadline))
            return;
        else
            retry(c); /* refused, unreachable, or this address did not answer in time */
        return;
    }
    case NET_WAIT_CHALLENGE:
    case NET_WAIT_WELCOME:
        if (events) {
            handshake_input(n, c);
        } else if (now >= d->end) {
            at_end(n, c);
        } else if (now >= c->deadline) { /* a TCP parent that never challenges */
            char why[80];
            snprintf(why, sizeof why, "it sent no challenge within %d s", NET_CHALLENGE_MS / 1000);
            not_parent(n, c, COHORT_E_NETWORK, why);
        }
        return;
    default:
        return;
    }
}
