/* coord_config.c - encodes and decodes the coordinator's start record
 * (coord_config.h): "CWC6", then big-endian fields and length-prefixed
 * strings. It also answers the relay tree's questions and names the node
 * relays' sockets. */
#include "coord_config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "wire.h"
#include "base_text.h"
#include "work_msg.h"

#define MAGIC "CWC6"

/* A writer appends to p, or with p NULL only counts the bytes in len. */
struct writer {
    uint8_t *p;
    size_t len;
};

/* Appends n bytes of src (or only counts them). */
static void put(struct writer *w, const void *src, size_t n)
{
    if (w->p)
        memcpy(w->p + w->len, src, n);
    w->len += n;
}

/* Appends v as 4 big-endian bytes. */
static void put32(struct writer *w, uint32_t v)
{
    uint8_t b[4];
    wire_put32(b, v);
    put(w, b, 4);
}

/* Appends s's length, then its bytes. */
static void put_str(struct writer *w, const char *s)
{
    put32(w, (uint32_t)strlen(s));
    put(w, s, strlen(s));
}

/* Writes the record, or with w->p NULL only counts its bytes. */
static void write_all(struct writer *w, const struct coord_config *c)
{
    uint8_t b8[8];
    put(w, MAGIC, 4);
    put32(w, c->kind);
    put32(w, c->key.kind);
    put(w, c->key.bytes, sizeof c->key.bytes);
    put_str(w, c->key.munge_socket);
    put32(w, c->job);
    put32(w, c->step);
    put32(w, c->size);
    put32(w, c->num_nodes);
    for (uint32_t r = 0; r < c->size; r++)
        put32(w, c->rank_node[r]);
    put(w, c->view, sizeof c->view);
    wire_put64(b8, c->n_items);
    put(w, b8, 8);
    put32(w, c->lease_timeout_s);
    put32(w, c->max_attempts);
    uint64_t eps;
    memcpy(&eps, &c->epsilon, 8);
    wire_put64(b8, eps);
    put(w, b8, 8);
    put32(w, c->shed_after_ms);
    put32(w, c->join_timeout_s);
    put32(w, c->port);
    put32(w, c->node);
    put_str(w, c->host);
    put32(w, c->fanout);
    put32(w, c->verbose);
    put32(w, c->watch_stall_s);
    put_str(w, c->name);
    put_str(w, c->journal);
    put_str(w, c->output);
}

int coord_config_encode(const struct coord_config *cfg, uint8_t **out, size_t *len)
{
    struct writer w = {0};
    write_all(&w, cfg);
    *len = w.len;
    if (!(w.p = malloc(w.len)))
        return -1;
    w.len = 0;
    write_all(&w, cfg);
    *out = w.p;
    return 0;
}

/* A reader takes bytes from p; bad is set once a take fails. */
struct reader {
    const uint8_t *p;
    size_t len, off;
    bool bad;
};

/* Takes n bytes. Returns them, or NULL (and r->bad set) when fewer are
 * left. */
static const uint8_t *take(struct reader *r, size_t n)
{
    if (r->bad || r->len - r->off < n) {
        r->bad = true;
        return NULL;
    }
    r->off += n;
    return r->p + r->off - n;
}

/* Takes 4 big-endian bytes. Returns their value, or 0 when none are left. */
static uint32_t take32(struct reader *r)
{
    const uint8_t *b = take(r, 4);
    return b ? wire_get32(b) : 0;
}

/* Takes a length-prefixed string of at most max bytes into out, ending it
 * with a NUL; a longer or cut one sets r->bad. */
static void take_str(struct reader *r, char *out, size_t max)
{
    uint32_t n = take32(r);
    const uint8_t *b = n <= max ? take(r, n) : NULL;
    if (!b) {
        r->bad = true;
        return;
    }
    memcpy(out, b, n);
    out[n] = '\0';
}

int coord_config_decode(const uint8_t *p, size_t len, struct coord_config *c,
                        struct cohort_err *err)
{
    struct reader r = {.p = p, .len = len};
    memset(c, 0, sizeof *c);
    const uint8_t *m = take(&r, 4);
    if (!m || memcmp(m, MAGIC, 4) != 0)
        return cohort_fail(err, "its start record is not one of this version of cohort");
    uint32_t kind = take32(&r);
    c->kind = kind <= COORD_RELAY ? (enum coord_kind)kind : COORD_QUEUE;
    c->key.kind = take32(&r) == AUTH_MUNGE ? AUTH_MUNGE : AUTH_SECRET;
    const uint8_t *k = take(&r, sizeof c->key.bytes);
    if (k)
        memcpy(c->key.bytes, k, sizeof c->key.bytes);
    take_str(&r, c->key.munge_socket, sizeof c->key.munge_socket - 1);
    c->job = take32(&r);
    c->step = take32(&r);
    c->size = take32(&r);
    c->num_nodes = take32(&r);
    if (!r.bad && (c->size == 0 || c->num_nodes == 0 || (len - r.off) / 4 < c->size))
        r.bad = true;
    if (!r.bad && !(c->rank_node = malloc(sizeof *c->rank_node * c->size)))
        return cohort_fail(err, "out of memory");
    for (uint32_t i = 0; !r.bad && i < c->size; i++)
        if ((c->rank_node[i] = take32(&r)) >= c->num_nodes)
            r.bad = true;
    const uint8_t *v = take(&r, sizeof c->view);
    if (v)
        memcpy(c->view, v, sizeof c->view);
    const uint8_t *n = take(&r, 8);
    c->n_items = n ? wire_get64(n) : 0;
    c->lease_timeout_s = take32(&r);
    c->max_attempts = take32(&r);
    const uint8_t *e = take(&r, 8);
    uint64_t eps = e ? wire_get64(e) : 0;
    memcpy(&c->epsilon, &eps, 8);
    c->shed_after_ms = take32(&r);
    c->join_timeout_s = take32(&r);
    uint32_t port = take32(&r);
    c->port = (uint16_t)port;
    if (port > 65535)
        r.bad = true;
    c->node = take32(&r);
    take_str(&r, c->host, sizeof c->host - 1);
    c->fanout = take32(&r);
    if ((c->kind == COORD_RELAY && c->node >= c->num_nodes) ||
        (c->kind != COORD_STORE && c->fanout < 1) || c->fanout > COORD_MAX_FANOUT)
        r.bad = true;
    c->verbose = take32(&r) != 0;
    c->watch_stall_s = take32(&r);
    if (c->kind != COORD_STORE && c->watch_stall_s)
        r.bad = true;
    take_str(&r, c->name, COORD_NAME_MAX);
    take_str(&r, c->journal, COORD_PATH_MAX);
    take_str(&r, c->output, COORD_PATH_MAX);
    if (r.bad || r.off != len) {
        coord_config_free(c);
        return cohort_fail(err, "its start record is cut short or malformed");
    }
    return 0;
}

void coord_config_free(struct coord_config *c)
{
    free(c->rank_node);
    c->rank_node = NULL;
    auth_key_clear(&c->key);
}

uint32_t coord_relay_up(const struct coord_config *c, uint32_t node)
{
    uint32_t p = node / c->fanout;
    return p == 0 ? COORD_TOP : p - 1;
}

uint32_t coord_relay_kids(const struct coord_config *c, uint32_t node)
{
    uint64_t first = (node == COORD_TOP ? 0 : (uint64_t)node + 1) * c->fanout;
    return first >= c->num_nodes ? 0
           : c->num_nodes - first < c->fanout ? (uint32_t)(c->num_nodes - first) : c->fanout;
}

uint32_t coord_relay_toward(const struct coord_config *c, uint32_t from, uint32_t node)
{
    while (node < c->num_nodes) {
        uint32_t up = coord_relay_up(c, node);
        if (up == from)
            return node;
        node = up;
    }
    return UINT32_MAX;
}

uint32_t coord_relay_depth(const struct coord_config *c, uint32_t node)
{
    uint32_t d = 0;
    while ((node = coord_relay_up(c, node)) != COORD_TOP)
        d++;
    return d;
}

uint32_t coord_relay_levels(const struct coord_config *c)
{
    return coord_relay_depth(c, c->num_nodes - 1) + 1;
}

bool coord_config_has_rank(const struct coord_config *c, const struct hs_hello *h)
{
    if (memcmp(h->view, c->view, HS_VIEW_LEN) != 0)
        return false;
    if (h->rank == COORD_AGENT_RANK && h->node < c->num_nodes)
        return c->kind == COORD_STORE ||
               coord_relay_up(c, h->node) == (c->kind == COORD_RELAY ? c->node : COORD_TOP);
    return c->kind == COORD_RELAY && h->rank < c->size && c->rank_node[h->rank] == h->node &&
           h->node == c->node;
}

/* Writes to out prefix and 32 hex digits of msg's digest: HMAC-SHA256
 * under key, or SHA-256 when key is NULL. */
static void digest_name(const char *prefix, const uint8_t *msg, size_t len,
                        const struct auth_key *key, char out[COORD_NAME_MAX + 1])
{
    uint8_t d[SHA256_DIGEST_SIZE];
    if (key) {
        auth_mac(key, "node relays", msg, len, d);
    } else {
        struct sha256_ctx ctx;
        sha256_init(&ctx);
        sha256_update(&ctx, len, msg);
        sha256_digest(&ctx, sizeof d, d);
    }
    base_hex_encode(d, 16, out + sprintf(out, "%s", prefix));
}

void coord_relay_name(const uint8_t nonce[16], uint32_t node, char out[COORD_NAME_MAX + 1])
{
    uint8_t msg[20];
    memcpy(msg, nonce, 16);
    wire_put32(msg + 16, node);
    digest_name("cohort-relay-", msg, sizeof msg, NULL, out);
}

void coord_host_name(const struct coord_config *cfg, char out[COORD_NAME_MAX + 1])
{
    uint8_t msg[16];
    wire_put32(msg, (uint32_t)geteuid());
    wire_put32(msg + 4, cfg->job);
    wire_put32(msg + 8, cfg->step);
    wire_put32(msg + 12, cfg->node);
    digest_name("cohort-relays-", msg, sizeof msg,
                cfg->key.kind == AUTH_SECRET ? &cfg->key : NULL, out);
}

socklen_t coord_relay_addr(const char *name, struct sockaddr_un *ua)
{
    memset(ua, 0, sizeof *ua);
    ua->sun_family = AF_UNIX;
    size_t n = strnlen(name, sizeof ua->sun_path - 2);
    memcpy(ua->sun_path + 1, name, n); /* The address is abstract: sun_path[0] is 0. */
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}
