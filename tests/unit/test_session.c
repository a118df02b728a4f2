/* test_session.c - the handshake (handshake.h) and the per-frame MACs
 * (session.h) without sockets: a parent and a child of one step agree on a
 * session key; any change to a challenge, hello or welcome, an answer to an
 * old nonce, or another step's secret fails the check; after the handshake
 * a frame that is changed, replayed, reordered, reflected or made with
 * another key fails. */
#include <string.h>

#include "handshake.h"
#include "session.h"
#include "tap.h"
#include "wire.h"

static const char *hex1 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
static const char *hex2 = "f0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

struct pair {
    struct hs_self parent, child;
    uint8_t nonce[AUTH_NONCE_LEN];
    uint8_t chal[HS_CHALLENGE_MAX], hello[HS_HELLO_MAX], welcome[HS_WELCOME_MAX];
    int chal_len, hello_len, welcome_len;
    struct hs_child st;
    struct hs_hello h;
    uint8_t base_p[32], base_c[32];
};

static void self(struct hs_self *s, const struct auth_key *k, uint32_t rank, uint32_t node)
{
    static const uint32_t rank_node[] = {0, 0, 1, 1};
    static const char *const names[] = {"n1", "n2"};
    memset(s, 0, sizeof *s);
    s->key = k;
    s->job = 1234;
    s->step = 0;
    s->rank = rank;
    s->node = node;
    hs_view(4, 2, rank_node, names, 0, s->view);
}

/* Runs the handshake to its end; returns how far it got (5: both keys). */
static int handshake(struct pair *p)
{
    struct cohort_err err;
    if ((p->chal_len = hs_challenge(&p->parent, p->nonce, p->chal, &err)) < 0)
        return 0;
    if (hs_challenge_check(&p->child, p->chal, (uint32_t)p->chal_len, &p->st, &err) < 0)
        return 1;
    if ((p->hello_len = hs_hello(&p->child, &p->st, p->hello, &err)) < 0)
        return 2;
    if (hs_hello_check(&p->parent, p->nonce, p->hello, (uint32_t)p->hello_len, &p->h) < 0)
        return 3;
    if ((p->welcome_len = hs_welcome(&p->parent, p->nonce, &p->h, p->welcome, p->base_p, &err)) <
        0)
        return 4;
    if (hs_welcome_check(&p->child, &p->st, p->welcome, (uint32_t)p->welcome_len, p->base_c) < 0)
        return 5;
    return 6;
}

static void handshake_cases(const struct auth_key *k1, const struct auth_key *k2)
{
    struct pair p;
    self(&p.parent, k1, 0, 0);
    self(&p.child, k1, 2, 1);
    ok(handshake(&p) == 6 && memcmp(p.base_p, p.base_c, 32) == 0,
       "one step's parent and child agree on a session key");
    ok(p.h.rank == 2 && p.h.node == 1 && memcmp(p.h.view, p.parent.view, HS_VIEW_LEN) == 0,
       "the parent reads the child's rank, node and view");
    uint8_t first[32];
    memcpy(first, p.base_p, 32);
    ok(handshake(&p) == 6 && memcmp(first, p.base_p, 32) != 0,
       "fresh nonces: another connection gets another key");

    struct cohort_err err;
    struct pair q = p;
    q.child.key = k2;
    ok(hs_challenge_check(&q.child, p.chal, (uint32_t)p.chal_len, &q.st, &err) < 0,
       "a challenge made with another secret is refused: %s", err.msg);
    q = p;
    q.child.job = 1235;
    ok(hs_challenge_check(&q.child, p.chal, (uint32_t)p.chal_len, &q.st, &err) < 0,
       "a challenge of another job is refused: %s", err.msg);
    q = p;
    q.chal[0] ^= 1;
    ok(hs_challenge_check(&q.child, q.chal, (uint32_t)q.chal_len, &q.st, &err) < 0,
       "a changed challenge is refused");
    ok(hs_challenge_check(&q.child, p.chal, (uint32_t)p.chal_len - 1, &q.st, &err) < 0,
       "a short challenge is refused");

    int bad = 0;
    for (int i = 0; i < p.hello_len; i++) {
        q = p;
        q.hello[i] ^= 0x40;
        bad += hs_hello_check(&q.parent, q.nonce, q.hello, (uint32_t)q.hello_len, &q.h) < 0;
    }
    ok(bad == p.hello_len, "a hello changed in any of its %d bytes is refused (%d were)",
       p.hello_len, bad);
    uint8_t other[AUTH_NONCE_LEN];
    memcpy(other, p.nonce, sizeof other);
    other[3] ^= 1;
    ok(hs_hello_check(&p.parent, other, p.hello, (uint32_t)p.hello_len, &q.h) < 0,
       "a hello replayed to a new challenge is refused");
    q = p;
    q.child.key = k2;
    ok(handshake(&q) == 1, "a child of another secret stops at the challenge");
    q = p;
    q.parent.key = k2;
    q.child.key = k2;
    q.st = p.st;
    ok(hs_hello_check(&q.parent, p.nonce, p.hello, (uint32_t)p.hello_len, &q.h) < 0,
       "a hello proven with another secret is refused");

    bad = 0;
    for (int i = 0; i < p.welcome_len; i++) {
        q = p;
        q.welcome[i] ^= 0x40;
        bad += hs_welcome_check(&q.child, &q.st, q.welcome, (uint32_t)q.welcome_len, q.base_c) <
               0;
    }
    ok(p.welcome_len > 0 && bad == p.welcome_len,
       "a welcome changed in any of its %d bytes is refused (%d were)", p.welcome_len, bad);

    q = p;
    q.child.view[10] ^= 1;
    ok(handshake(&q) == 6 && memcmp(q.h.view, q.parent.view, HS_VIEW_LEN) != 0,
       "a child with another view proves itself; the parent sees the views differ");
    char a[96], b[96];
    hs_view_text(p.parent.view, a, sizeof a);
    hs_view_text(q.h.view, b, sizeof b);
    ok(strstr(a, "4 tasks on 2 nodes (layout ") && strcmp(a, b) != 0, "views read '%s', '%s'", a,
       b);
}

/* A frame: header of type, seq and rank, then payload. */
static void frame(uint8_t hdr[WIRE_HEADER_LEN], enum wire_type type, uint16_t seq,
                  uint32_t len)
{
    wire_header(hdr, type, seq, 7, len);
}

static void session_cases(void)
{
    uint8_t base[32], base2[32];
    for (int i = 0; i < 32; i++) {
        base[i] = (uint8_t)i;
        base2[i] = (uint8_t)(i + 1);
    }
    struct session parent, child, stranger;
    session_start(&parent, base, true);
    session_start(&child, base, false);
    session_start(&stranger, base2, false);
    const uint8_t pay[3][5] = {"up-0", "up-1", "up-2"};
    uint8_t hdr[3][WIRE_HEADER_LEN], mac[3][SESSION_MAC_LEN];
    for (int i = 0; i < 3; i++) {
        frame(hdr[i], WIRE_UP, 1, 5);
        session_seal(&child, hdr[i], pay[i], 5, mac[i]);
    }
    ok(!session_check(&parent, hdr[1], pay[1], 5, mac[1]), "a frame ahead of its turn fails");
    ok(session_check(&parent, hdr[0], pay[0], 5, mac[0]), "the first frame passes");
    ok(session_check(&parent, hdr[0], pay[0], 5, mac[0]), "checked again before it is taken");
    session_advance(&parent);
    ok(!session_check(&parent, hdr[0], pay[0], 5, mac[0]), "the first frame replayed fails");
    uint8_t changed[5];
    memcpy(changed, pay[1], 5);
    changed[2] ^= 1;
    ok(!session_check(&parent, hdr[1], changed, 5, mac[1]), "a changed payload fails");
    uint8_t h2[WIRE_HEADER_LEN];
    frame(h2, WIRE_ABORT, 1, 5);
    ok(!session_check(&parent, h2, pay[1], 5, mac[1]), "a changed header (type) fails");
    uint8_t forged[SESSION_MAC_LEN];
    session_seal(&stranger, hdr[1], pay[1], 5, forged);
    ok(!session_check(&parent, hdr[1], pay[1], 5, forged), "a frame sealed with another key fails");
    ok(session_check(&parent, hdr[1], pay[1], 5, mac[1]), "the second frame, in turn, passes");
    session_advance(&parent);
    uint8_t back[SESSION_MAC_LEN];
    session_seal(&parent, hdr[2], pay[2], 5, back);
    ok(!session_check(&parent, hdr[2], pay[2], 5, back),
       "a parent's own frame reflected back to it fails (one key per direction)");
    ok(session_check(&child, hdr[2], pay[2], 5, back), "the child takes the parent's frame");
    ok(session_check(&parent, hdr[2], pay[2], 5, mac[2]), "the third frame passes");
    session_clear(&parent);
    ok(!parent.on, "cleared");
    session_clear(&child);
    session_clear(&stranger);
}

int main(void)
{
    struct auth_key k1, k2;
    struct cohort_err err;
    auth_key_from_hex("COHORT_SECRET", hex1, &k1, &err);
    auth_key_from_hex("COHORT_SECRET", hex2, &k2, &err);
    handshake_cases(&k1, &k2);
    session_cases();
    return tap_done();
}
