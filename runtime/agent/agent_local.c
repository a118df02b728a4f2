/* agent_local.c - the node's TCPStore clients, as the node agent serves
 * them (see agent.h). The agent listens on the loopback interface and
 * closes every connection of another user before a byte is read (the
 * kernel's socket diagnostics name its uid). It reads each query whole and
 * relays it to the store holder (it answers VALIDATE and PING itself), and
 * writes each of the holder's answers back as the client takes it. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "base_sys.h"
#include "store_msg.h"

#define READ_CHUNK 65536

int agent_local_listen(struct agent *a, struct cohort_err *err)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    a->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (a->lfd < 0 || bind(a->lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(a->lfd, 4096) < 0 || getsockname(a->lfd, (struct sockaddr *)&sa, &sl) < 0)
        return cohort_fail(err, "cannot listen on the loopback interface: %s",
                           strerror(errno));
    a->lport = ntohs(sa.sin_port);
    return 0;
}

struct client *agent_local_find(struct agent *a, uint32_t id)
{
    for (size_t i = 0; i < a->n_c; i++)
        if (a->c[i].fd >= 0 && a->c[i].id == id)
            return &a->c[i];
    return NULL;
}

/* Adds a client on fd (its socket's inode given); past AGENT_CLIENTS_MAX
 * or out of memory, it closes fd instead. */
static void add_client(struct agent *a, int fd, unsigned long inode)
{
    if (a->n_c == a->cap_c &&
        (a->n_c >= AGENT_CLIENTS_MAX ||
         base_grow((void **)&a->c, &a->cap_c, a->n_c + 1, sizeof *a->c) < 0)) {
        close(fd);
        return;
    }
    struct client *c = &a->c[a->n_c++];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->id = a->next_id++;
    c->inode = inode;
}

void agent_local_accept(struct agent *a)
{
    for (int k = 0; k < 64; k++) {
        int fd = accept4(a->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        uid_t uid;
        unsigned long inode;
        /* Another user's, or one the kernel cannot name, is closed unread. */
        if (peer_tcp_owner(fd, &uid, &inode) < 0 || uid != a->uid) {
            close(fd);
            continue;
        }
        add_client(a, fd, inode);
        if (a->up_error[0]) /* The link failed before it came, so it is told at once. */
            agent_local_resume(a);
    }
}

/* Writes what c's socket takes now of its output; a failed write marks
 * c closing and drops its output. */
static void flush_out(struct client *c)
{
    while (c->out_len) {
        ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            c->closing = true;
            c->out_len = 0;
            return;
        }
        memmove(c->out, c->out + n, c->out_len - (size_t)n);
        c->out_len -= (size_t)n;
    }
}

void agent_local_write(struct agent *a, struct client *c, const uint8_t *p, size_t n)
{
    if (c->closing)
        return; /* It is closed as TCPStore closes it: nothing more is written. */
    if (c->out_len && c->out_len + n > AGENT_CLIENT_OUT_MAX) {
        char line[300];
        snprintf(line, sizeof line, "cohort: store: this client left %zu bytes of answers "
                 "unread and another of %zu came (over %u MiB): its connection is closed",
                 c->out_len, n, AGENT_CLIENT_OUT_MAX >> 20);
        c->out_len = 0; /* They are dropped, so the close does not wait. */
        agent_local_note(a, c, line, true);
        return;
    }
    if (base_grow((void **)&c->out, &c->out_cap, c->out_len + n, 1) < 0) {
        c->closing = true;
        return;
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
    flush_out(c);
}

void agent_local_note(struct agent *a, struct client *c, const char *line, bool drop)
{
    if (!peer_note(a->uid, c->inode, line) || a->verbose)
        fprintf(stderr, "%s\n", line);
    if (drop)
        c->closing = true;
}

/* Answers one query here (VALIDATE, PING) or relays it. Returns 0, or -1
 * when the client is to be dropped. */
static int relay(struct agent *a, struct client *c, const struct ts_query *q)
{
    struct ts_cursor cur = {q->body, q->body_len};
    uint32_t v;
    if (q->op == TS_VALIDATE)
        return ts_u32(&cur, &v) == 0 && v == TS_VALIDATE_MAGIC ? 0 : -1;
    if (q->op == TS_PING) {
        agent_local_write(a, c, q->body, 4);
        return 0;
    }
    uint8_t op = (uint8_t)q->op;
    if (q->body_len + 1 + STORE_MSG_HEAD > WIRE_MAX_PAYLOAD_DEFAULT)
        return -1; /* It is over a frame: the client fails, not the link. */
    return agent_up_send(a, STORE_QUERY, c->id, &op, 1, q->body, q->body_len);
}

/* Handles every whole query in c's input while the link is up. */
static void parse(struct agent *a, struct client *c)
{
    size_t off = 0;
    while (!c->closing && a->up_ready && off < c->in_len) {
        struct ts_query q;
        char why[256];
        long used = ts_next(&c->d, c->in + off, c->in_len - off, &q, why, sizeof why);
        if (used == 0)
            break;
        if (used < 0 || relay(a, c, &q) < 0) {
            char line[400];
            snprintf(line, sizeof line, "cohort: store: %s; the connection is closed",
                     used < 0 ? why : "a query that could not be relayed (over 64 MiB?)");
            agent_local_note(a, c, line, true);
            break;
        }
        off += (size_t)used;
    }
    /* What was parsed leaves the buffer; an empty one may have none yet. */
    if (off) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
}

void agent_local_serve(struct agent *a, size_t i, unsigned events)
{
    struct client *c = &a->c[i];
    if (events & POLLOUT)
        flush_out(c);
    while (!c->closing && !agent_up_full(a)) {
        if (c->in_cap - c->in_len < READ_CHUNK) {
            uint8_t *in = c->in_len + READ_CHUNK > 2 * ((size_t)TS_VALUE_MAX + TS_KEY_MAX)
                              ? NULL
                              : realloc(c->in, c->in_len + 2 * READ_CHUNK);
            if (!in) {
                agent_local_note(a, c, "cohort: store: a query too large to serve; the "
                                       "connection is closed", true);
                break;
            }
            c->in = in;
            c->in_cap = c->in_len + 2 * READ_CHUNK;
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            c->closing = true;
        if (n <= 0)
            break;
        c->in_len += (size_t)n;
        parse(a, c);
    }
}

void agent_local_resume(struct agent *a)
{
    for (size_t i = 0; i < a->n_c; i++) {
        struct client *c = &a->c[i];
        if (c->fd < 0 || c->closing)
            continue;
        if (a->up_error[0]) {
            char line[COHORT_ERR_LEN + 64];
            snprintf(line, sizeof line, "cohort: store: %s", a->up_error);
            agent_local_note(a, c, line, true);
        } else {
            parse(a, c);
        }
    }
}

void agent_local_sweep(struct agent *a)
{
    size_t k = 0;
    for (size_t i = 0; i < a->n_c; i++) {
        struct client *c = &a->c[i];
        if (c->closing && c->fd >= 0 && c->out_len)
            flush_out(c);
        if (c->closing && c->fd >= 0 && !c->out_len) {
            agent_up_send(a, STORE_GONE, c->id, NULL, 0, NULL, 0);
            close(c->fd);
            c->fd = -1;
        }
        if (c->fd < 0) {
            free(c->in);
            free(c->out);
            continue;
        }
        a->c[k++] = *c;
    }
    a->n_c = k;
}

/* --- what the holder sends ------------------------------------------- */

/* Passes one frame of the holder's to its client: an answer, or a line
 * that notes (and may close) the client. */
static void answer(struct agent *a, const struct wire_frame *f)
{
    uint32_t id;
    const uint8_t *rest;
    size_t len;
    if (f->type != WIRE_STORE || store_msg_get(f->payload, f->len, &id, &rest, &len) < 0)
        return;
    if (node_watch_frame(a, f->flags, id, rest, len))
        return;
    struct client *c = agent_local_find(a, id);
    if (!c)
        return; /* The client is gone since. */
    if (f->flags == STORE_REPLY) {
        agent_local_write(a, c, rest, len);
    } else if (f->flags == STORE_DROP || f->flags == STORE_NOTE || f->flags == STORE_CLOSE) {
        char line[COHORT_ERR_LEN + 128];
        int k = (int)(len > COHORT_ERR_LEN ? COHORT_ERR_LEN : len);
        if (f->flags == STORE_DROP)
            snprintf(line, sizeof line, "cohort: store: PyTorch's store client asked for %.*s; "
                     "the connection is closed", k, (const char *)rest);
        else if (f->flags == STORE_CLOSE)
            snprintf(line, sizeof line, "cohort: store: %.*s; the connection is closed", k,
                     (const char *)rest);
        else
            snprintf(line, sizeof line, "%.*s", k, (const char *)rest);
        agent_local_note(a, c, line, f->flags != STORE_NOTE);
    }
}

/* Notes that the link failed or closed; every client is told once, and
 * dropped. */
static void link_down(struct agent *a, const char *why)
{
    if (a->up_error[0])
        return;
    snprintf(a->up_error, sizeof a->up_error, "%s", why);
    a->up_ready = false;
    agent_local_resume(a);
    node_watch_link_down(a);
}

void agent_local_up_events(struct agent *a, struct net_event *ev, int n)
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
            node_watch_connected(a);
        }
        node_watch_heard(a, base_now_ms());
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
