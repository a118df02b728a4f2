/* handshake.h - the messages that open a bootstrap connection, as pure
 * functions of bytes (no sockets): the parent's challenge, the child's
 * hello, the parent's welcome, and the session key both sides derive.
 *
 *   parent -> child  CHALLENGE  nonce_p, job, step [, MAC of them: secret]
 *   child -> parent  HELLO      rank, node, nonce_c, view [, X25519 pub: munge],
 *                               proof of (job, step, nonce_p, all of that)
 *   parent -> child  WELCOME    [X25519 pub: munge,] proof of the same and it
 *
 * A proof is the step secret's HMAC, or a munge credential (auth.h). The
 * view is how the child sees the step (task count, node count, a digest
 * of every rank's node and the nodes' names): the parent refuses a child
 * whose view differs from its own. The session key is the secret's HMAC of
 * the transcript, or under munge an HMAC keyed by the X25519 shared value,
 * which an eavesdropper does not learn. */
#ifndef COHORT_HANDSHAKE_H
#define COHORT_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "error.h"

#define HS_VIEW_LEN 40 /* u32 tasks, u32 nodes, 32-byte digest */
#define HS_CHALLENGE_MAX (AUTH_NONCE_LEN + 8 + AUTH_MAC_LEN)
#define HS_BODY_MAX (8 + AUTH_NONCE_LEN + HS_VIEW_LEN + AUTH_DH_LEN)
#define HS_HELLO_MAX (HS_BODY_MAX + AUTH_PROOF_MAX)
#define HS_WELCOME_MAX (AUTH_DH_LEN + AUTH_PROOF_MAX)

/* Who this process is in the step. */
struct hs_self {
    const struct auth_key *key;
    uint32_t job, step, rank, node;
    uint8_t view[HS_VIEW_LEN];
};

/* A child's side of one handshake. */
struct hs_child {
    uint8_t nonce_p[AUTH_NONCE_LEN];
    uint8_t body[HS_BODY_MAX];
    size_t body_len;
    uint8_t dh_priv[AUTH_DH_LEN];
};

/* A hello as the parent read it (pointers into the payload). */
struct hs_hello {
    uint32_t rank, node;
    const uint8_t *view;
    const uint8_t *body;
    size_t body_len;
};

/* The view of a step: its task count, node count and a digest of each
 * rank's node, of the nodes' names (names[i] may be NULL) and, when not 0,
 * of extra (what else its peers must agree on: the bootstrap's fanout). */
void hs_view(uint32_t tasks, uint32_t nodes, const uint32_t *rank_node,
             const char *const *names, uint32_t extra, uint8_t view[HS_VIEW_LEN]);
/* "9 tasks on 2 nodes (layout 1a2b3c4d)". */
void hs_view_text(const uint8_t *view, char *buf, size_t len);

/* Parent: a fresh nonce and the challenge carrying it; returns its length. */
int hs_challenge(const struct hs_self *me, uint8_t nonce[AUTH_NONCE_LEN],
                 uint8_t out[HS_CHALLENGE_MAX], struct cohort_err *err);
/* Child: whether a challenge is one of this step's (the secret's MAC holds;
 * under munge, its shape and ids); 0 with the nonce in st, -1 with why. */
int hs_challenge_check(const struct hs_self *me, const uint8_t *p, uint32_t len,
                       struct hs_child *st, struct cohort_err *err);
/* Child: the hello answering st's challenge; returns its length. */
int hs_hello(const struct hs_self *me, struct hs_child *st, uint8_t out[HS_HELLO_MAX],
             struct cohort_err *err);
/* Parent: whether a hello answers nonce with a good proof; 0 with *h. */
int hs_hello_check(const struct hs_self *me, const uint8_t nonce[AUTH_NONCE_LEN],
                   const uint8_t *p, uint32_t len, struct hs_hello *h);
/* Parent: the welcome of an admitted hello, and the session's base key. */
int hs_welcome(const struct hs_self *me, const uint8_t nonce[AUTH_NONCE_LEN],
               const struct hs_hello *h, uint8_t out[HS_WELCOME_MAX], uint8_t base[32],
               struct cohort_err *err);
/* Child: whether the welcome proves the parent; 0 with the base key. */
int hs_welcome_check(const struct hs_self *me, const struct hs_child *st, const uint8_t *p,
                     uint32_t len, uint8_t base[32]);

#endif
