/* session.c - per-frame MACs with sequence numbers (session.h), Nettle's
 * HMAC-SHA256 with each direction's key set once. */
#include "session.h"

#include <nettle/memops.h>
#include <string.h>

#include "wire.h"

static void direction_key(const uint8_t base[32], const char *label, uint8_t out[32])
{
    struct hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, 32, base);
    hmac_sha256_update(&ctx, strlen(label) + 1, (const uint8_t *)label);
    hmac_sha256_digest(&ctx, 32, out);
    explicit_bzero(&ctx, sizeof ctx);
}

void session_start(struct session *s, const uint8_t base[32], bool is_parent)
{
    uint8_t up[32], down[32];
    direction_key(base, "cohort-up", up);
    direction_key(base, "cohort-down", down);
    hmac_sha256_set_key(&s->send, 32, is_parent ? down : up);
    hmac_sha256_set_key(&s->recv, 32, is_parent ? up : down);
    explicit_bzero(up, sizeof up);
    explicit_bzero(down, sizeof down);
    s->send_seq = s->recv_seq = 0;
    s->on = true;
}

/* HMAC(key, seq || header || payload); ctx is left ready for the next. */
static void frame_mac(struct hmac_sha256_ctx *ctx, uint64_t seq, const uint8_t *header,
                      const uint8_t *payload, uint32_t len, uint8_t out[SESSION_MAC_LEN])
{
    uint8_t be[8];
    wire_put32(be, (uint32_t)(seq >> 32));
    wire_put32(be + 4, (uint32_t)seq);
    hmac_sha256_update(ctx, sizeof be, be);
    hmac_sha256_update(ctx, WIRE_HEADER_LEN, header);
    if (len)
        hmac_sha256_update(ctx, len, payload);
    hmac_sha256_digest(ctx, SESSION_MAC_LEN, out); /* resets ctx to the key */
}

void session_seal(struct session *s, const uint8_t *header, const uint8_t *payload,
                  uint32_t len, uint8_t mac[SESSION_MAC_LEN])
{
    frame_mac(&s->send, s->send_seq++, header, payload, len, mac);
}

bool session_check(struct session *s, const uint8_t *header, const uint8_t *payload,
                   uint32_t len, const uint8_t *mac)
{
    uint8_t want[SESSION_MAC_LEN];
    frame_mac(&s->recv, s->recv_seq, header, payload, len, want);
    return memeql_sec(want, mac, SESSION_MAC_LEN);
}

void session_advance(struct session *s)
{
    s->recv_seq++;
}

void session_clear(struct session *s)
{
    explicit_bzero(s, sizeof *s);
}
