/* handshake.c - challenge, hello, welcome and the session key
 * (handshake.h). */
#include "handshake.h"

#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>

#include "wire.h"

#define TRANSCRIPT_MAX (8 + AUTH_NONCE_LEN + HS_BODY_MAX + AUTH_DH_LEN)

void hs_view(uint32_t tasks, uint32_t nodes, const uint32_t *rank_node,
             const char *const *names, uint32_t extra, uint8_t view[HS_VIEW_LEN])
{
    struct sha256_ctx ctx;
    uint8_t be[4];
    sha256_init(&ctx);
    for (uint32_t r = 0; r < tasks; r++) {
        wire_put32(be, rank_node[r]);
        sha256_update(&ctx, sizeof be, be);
    }
    for (uint32_t n = 0; names && n < nodes; n++) {
        const char *name = names[n] ? names[n] : "";
        sha256_update(&ctx, strlen(name) + 1, (const uint8_t *)name);
    }
    if (extra) {
        wire_put32(be, extra);
        sha256_update(&ctx, sizeof be, be);
    }
    wire_put32(view, tasks);
    wire_put32(view + 4, nodes);
    sha256_digest(&ctx, 32, view + 8);
}

void hs_view_text(const uint8_t *view, char *buf, size_t len)
{
    uint32_t tasks = wire_get32(view), nodes = wire_get32(view + 4);
    snprintf(buf, len, "%u task%s on %u node%s (layout %02x%02x%02x%02x)", tasks,
             tasks == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", view[8], view[9], view[10],
             view[11]);
}

/* job, step, nonce, then the given parts: what the proofs cover. */
static size_t transcript(const struct hs_self *me, const uint8_t *nonce, const uint8_t *body,
                         size_t body_len, const uint8_t *extra, size_t extra_len,
                         uint8_t out[TRANSCRIPT_MAX])
{
    wire_put32(out, me->job);
    wire_put32(out + 4, me->step);
    memcpy(out + 8, nonce, AUTH_NONCE_LEN);
    size_t n = 8 + AUTH_NONCE_LEN;
    memcpy(out + n, body, body_len);
    n += body_len;
    if (extra_len)
        memcpy(out + n, extra, extra_len);
    return n + extra_len;
}

static bool munge(const struct hs_self *me)
{
    return me->key->kind == AUTH_MUNGE;
}

/* The session's base key: the secret's MAC of the transcript, or under
 * munge an HMAC keyed by the X25519 shared value. */
static void session_base(const struct hs_self *me, const uint8_t *shared, const uint8_t *msg,
                         size_t len, uint8_t base[32])
{
    if (!shared) {
        auth_mac(me->key, "cohort-session", msg, len, base);
        return;
    }
    struct hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, AUTH_DH_LEN, shared);
    hmac_sha256_update(&ctx, sizeof "cohort-session", (const uint8_t *)"cohort-session");
    hmac_sha256_update(&ctx, len, msg);
    hmac_sha256_digest(&ctx, 32, base);
    explicit_bzero(&ctx, sizeof ctx);
}

int hs_challenge(const struct hs_self *me, uint8_t nonce[AUTH_NONCE_LEN],
                 uint8_t out[HS_CHALLENGE_MAX], struct cohort_err *err)
{
    if (auth_nonce(nonce, err) < 0)
        return -1;
    memcpy(out, nonce, AUTH_NONCE_LEN);
    wire_put32(out + AUTH_NONCE_LEN, me->job);
    wire_put32(out + AUTH_NONCE_LEN + 4, me->step);
    if (munge(me)) /* a munge credential per stranger would load munged */
        return AUTH_NONCE_LEN + 8;
    auth_mac(me->key, "cohort-challenge", out, AUTH_NONCE_LEN + 8, out + AUTH_NONCE_LEN + 8);
    return HS_CHALLENGE_MAX;
}

int hs_challenge_check(const struct hs_self *me, const uint8_t *p, uint32_t len,
                       struct hs_child *st, struct cohort_err *err)
{
    uint32_t want = munge(me) ? AUTH_NONCE_LEN + 8 : HS_CHALLENGE_MAX;
    if (len != want)
        return cohort_fail_code(err, COHORT_E_NETWORK, "its challenge has %u bytes, not %u", len,
                                want);
    uint32_t job = wire_get32(p + AUTH_NONCE_LEN), step = wire_get32(p + AUTH_NONCE_LEN + 4);
    if (job != me->job || step != me->step)
        return cohort_fail_code(err, COHORT_E_NETWORK, "it serves step %u.%u, not %u.%u", job,
                                step, me->job, me->step);
    if (!munge(me) && !auth_check(me->key, "cohort-challenge", p, AUTH_NONCE_LEN + 8,
                                  p + AUTH_NONCE_LEN + 8))
        return cohort_fail_code(err, COHORT_E_AUTH, "its challenge was not made with this "
                                                    "task's COHORT_SECRET: different secrets?");
    memcpy(st->nonce_p, p, AUTH_NONCE_LEN);
    return 0;
}

int hs_hello(const struct hs_self *me, struct hs_child *st, uint8_t out[HS_HELLO_MAX],
             struct cohort_err *err)
{
    uint8_t *b = st->body, msg[TRANSCRIPT_MAX];
    wire_put32(b, me->rank);
    wire_put32(b + 4, me->node);
    if (auth_nonce(b + 8, err) < 0)
        return -1;
    memcpy(b + 8 + AUTH_NONCE_LEN, me->view, HS_VIEW_LEN);
    st->body_len = 8 + AUTH_NONCE_LEN + HS_VIEW_LEN;
    if (munge(me)) {
        if (auth_dh_keypair(st->dh_priv, b + st->body_len, err) < 0)
            return -1;
        st->body_len += AUTH_DH_LEN;
    }
    memcpy(out, b, st->body_len);
    size_t n = transcript(me, st->nonce_p, b, st->body_len, NULL, 0, msg);
    int proof = auth_prove(me->key, "cohort-hello", msg, n, out + st->body_len, err);
    return proof < 0 ? -1 : (int)st->body_len + proof;
}

int hs_hello_check(const struct hs_self *me, const uint8_t nonce[AUTH_NONCE_LEN],
                   const uint8_t *p, uint32_t len, struct hs_hello *h)
{
    size_t body = 8 + AUTH_NONCE_LEN + HS_VIEW_LEN + (munge(me) ? AUTH_DH_LEN : 0);
    uint8_t msg[TRANSCRIPT_MAX];
    if (len <= body)
        return -1;
    size_t n = transcript(me, nonce, p, body, NULL, 0, msg);
    if (!auth_verify(me->key, "cohort-hello", msg, n, p + body, len - body))
        return -1;
    h->rank = wire_get32(p);
    h->node = wire_get32(p + 4);
    h->view = p + 8 + AUTH_NONCE_LEN;
    h->body = p;
    h->body_len = body;
    return 0;
}

int hs_welcome(const struct hs_self *me, const uint8_t nonce[AUTH_NONCE_LEN],
               const struct hs_hello *h, uint8_t out[HS_WELCOME_MAX], uint8_t base[32],
               struct cohort_err *err)
{
    uint8_t msg[TRANSCRIPT_MAX], priv[AUTH_DH_LEN], shared[AUTH_DH_LEN];
    size_t pub_len = 0;
    if (munge(me)) {
        if (auth_dh_keypair(priv, out, err) < 0)
            return -1;
        pub_len = AUTH_DH_LEN;
        auth_dh_shared(priv, h->body + h->body_len - AUTH_DH_LEN, shared);
        explicit_bzero(priv, sizeof priv);
    }
    size_t n = transcript(me, nonce, h->body, h->body_len, out, pub_len, msg);
    int proof = auth_prove(me->key, "cohort-welcome", msg, n, out + pub_len, err);
    if (proof >= 0)
        session_base(me, pub_len ? shared : NULL, msg, n, base);
    explicit_bzero(shared, sizeof shared);
    return proof < 0 ? -1 : (int)pub_len + proof;
}

int hs_welcome_check(const struct hs_self *me, const struct hs_child *st, const uint8_t *p,
                     uint32_t len, uint8_t base[32])
{
    size_t pub_len = munge(me) ? AUTH_DH_LEN : 0;
    uint8_t msg[TRANSCRIPT_MAX], shared[AUTH_DH_LEN];
    if (len <= pub_len)
        return -1;
    size_t n = transcript(me, st->nonce_p, st->body, st->body_len, p, pub_len, msg);
    if (!auth_verify(me->key, "cohort-welcome", msg, n, p + pub_len, len - pub_len))
        return -1;
    if (pub_len)
        auth_dh_shared(st->dh_priv, p, shared);
    session_base(me, pub_len ? shared : NULL, msg, n, base);
    explicit_bzero(shared, sizeof shared);
    return 0;
}
