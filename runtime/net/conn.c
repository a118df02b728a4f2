/* conn.c - buffered non-blocking bootstrap connections (conn.h). */
#include "conn.h"

#include "base_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

void conn_init(struct conn *c, int fd)
{
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->rank = c->node = UINT32_MAX;
}

/* Reads and drops what the peer sent that was never read, as far as it
 * is there now (never waiting), at most 4 MiB: a socket
 * closed with unread input makes the peer's kernel report a reset (TCP:
 * RST; Unix: ECONNRESET), which can discard the frames last sent to the
 * peer, such as the abort that says why the step failed. */
static void drain(int fd)
{
    uint8_t scrap[65536];
    for (int i = 0; i < 64 && recv(fd, scrap, sizeof scrap, MSG_DONTWAIT) > 0; i++) {
    }
}

void conn_close(struct conn *c)
{
    if (c->fd >= 0) {
        drain(c->fd);
        close(c->fd);
    }
    session_clear(&c->sess);
    free(c->in);
    free(c->out);
    conn_init(c, -1);
}

int conn_queue(struct conn *c, enum wire_type type, uint16_t flags, uint32_t rank,
               const void *payload, uint32_t len)
{
    size_t trailer = c->sess.on ? SESSION_MAC_LEN : 0;
    size_t need = c->out_len + WIRE_HEADER_LEN + len + trailer;
    if (base_grow((void **)&c->out, &c->out_cap, need, 1) < 0)
        return -1;
    uint8_t *h = c->out + c->out_len;
    wire_header(h, type, flags, rank, len);
    if (len)
        memcpy(h + WIRE_HEADER_LEN, payload, len);
    if (trailer)
        session_seal(&c->sess, h, h + WIRE_HEADER_LEN, len, h + WIRE_HEADER_LEN + len);
    c->out_len += WIRE_HEADER_LEN + len + trailer;
    return 0;
}

int conn_flush(struct conn *c)
{
    size_t done = 0;
    while (done < c->out_len) {
        ssize_t n = send(c->fd, c->out + done, c->out_len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        return -1;
    }
    memmove(c->out, c->out + done, c->out_len - done);
    c->out_len -= done;
    return 0;
}

/* Never buffer more than one frame's worth beyond what is decoded. */
bool conn_full(const struct conn *c, uint32_t max_payload)
{
    return c->in_len >= (size_t)max_payload + 2 * WIRE_HEADER_LEN + SESSION_MAC_LEN;
}

/* Room in the input for one read: a frame's worth, at most 64 KiB. */
static int room_for_read(struct conn *c, uint32_t max_payload)
{
    size_t frame = (size_t)max_payload + WIRE_HEADER_LEN + SESSION_MAC_LEN;
    return base_grow((void **)&c->in, &c->in_cap, c->in_len + (frame < 65536 ? frame : 65536), 1);
}

int conn_fill(struct conn *c, uint32_t max_payload)
{
    for (;;) {
        if (conn_full(c, max_payload))
            return 0;
        if (room_for_read(c, max_payload) < 0)
            return -1;
        size_t room = c->in_cap - c->in_len;
        ssize_t n = recv(c->fd, c->in + c->in_len, room, MSG_DONTWAIT);
        if (n > 0) {
            c->in_len += (size_t)n;
            if ((size_t)n < room)
                return 0; /* all there was: the next poll reports more */
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return -1; /* 0: closed by the peer */
    }
}

/* The socket's reads block for at most ms (SO_RCVTIMEO); every other
 * read and write passes MSG_DONTWAIT. */
static int wait_mode(struct conn *c, int ms)
{
    if (c->wait_ms == ms)
        return 0;
    int fl = fcntl(c->fd, F_GETFL);
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    if (fl < 0 || (c->wait_ms == 0 && fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK) < 0) ||
        setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
        return -1;
    c->wait_ms = ms;
    return 0;
}

int conn_wait_fill(struct conn *c, uint32_t max_payload, int timeout_ms)
{
    if (conn_full(c, max_payload))
        return 1;
    if (room_for_read(c, max_payload) < 0 || wait_mode(c, timeout_ms > 0 ? timeout_ms : 1) < 0)
        return -1;
    ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    if (n > 0) {
        c->in_len += (size_t)n;
        return 1;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    return -1; /* 0: closed by the peer */
}

int conn_next(struct conn *c, uint32_t max_payload, struct wire_frame *f,
              struct cohort_err *err)
{
    long used = wire_decode(c->in, c->in_len, max_payload, c->sess.on ? SESSION_MAC_LEN : 0, f,
                            err);
    if (used <= 0)
        return used < 0 ? -1 : 0;
    if (c->sess.on && !session_check(&c->sess, c->in, f->payload, f->len, f->trailer))
        return cohort_fail(err, "a '%s' frame failed its MAC check (changed, replayed, reordered "
                                "or injected on the way)", wire_type_name(f->type)) - 1;
    return 1;
}

void conn_consume(struct conn *c, const struct wire_frame *f)
{
    size_t used = WIRE_HEADER_LEN + f->len + (c->sess.on ? SESSION_MAC_LEN : 0);
    if (c->sess.on)
        session_advance(&c->sess);
    memmove(c->in, c->in + used, c->in_len - used);
    c->in_len -= used;
}
