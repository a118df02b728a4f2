/* conn.c - buffered non-blocking bootstrap connections (conn.h). */
#include "conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void conn_init(struct conn *c, int fd)
{
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->rank = c->node = UINT32_MAX;
}

void conn_close(struct conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->in);
    free(c->out);
    conn_init(c, -1);
}

static int reserve(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    uint8_t *p = realloc(*buf, n);
    if (!p)
        return -1;
    *buf = p;
    *cap = n;
    return 0;
}

int conn_queue(struct conn *c, enum wire_type type, uint16_t flags, uint32_t rank,
               const void *payload, uint32_t len)
{
    if (reserve(&c->out, &c->out_cap, c->out_len + WIRE_HEADER_LEN + len) < 0)
        return -1;
    wire_header(c->out + c->out_len, type, flags, rank, len);
    if (len)
        memcpy(c->out + c->out_len + WIRE_HEADER_LEN, payload, len);
    c->out_len += WIRE_HEADER_LEN + len;
    return 0;
}

int conn_flush(struct conn *c)
{
    size_t done = 0;
    while (done < c->out_len) {
        ssize_t n = send(c->fd, c->out + done, c->out_len - done, MSG_NOSIGNAL);
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

int conn_fill(struct conn *c, uint32_t max_payload)
{
    for (;;) {
        /* Never buffer more than one frame's worth beyond what is decoded. */
        if (c->in_len >= (size_t)max_payload + 2 * WIRE_HEADER_LEN)
            return 0;
        if (reserve(&c->in, &c->in_cap, c->in_len + 65536) < 0)
            return -1;
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n > 0) {
            c->in_len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return -1; /* 0: closed by the peer */
    }
}

int conn_next(struct conn *c, uint32_t max_payload, struct wire_frame *f,
              struct cohort_err *err)
{
    long used = wire_decode(c->in, c->in_len, max_payload, f, err);
    return used < 0 ? -1 : used > 0;
}

void conn_consume(struct conn *c, const struct wire_frame *f)
{
    size_t used = WIRE_HEADER_LEN + f->len;
    memmove(c->in, c->in + used, c->in_len - used);
    c->in_len -= used;
}
