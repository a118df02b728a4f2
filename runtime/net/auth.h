/* auth.h - proofs that a peer belongs to the step. With the step's secret
 * (COHORT_SECRET, 64 hex digits, set by the plugin): Nettle's HMAC-SHA256
 * over a label and a message, compared in constant time; the secret never
 * appears in an error message. Without it, where built with munge: a munge
 * credential of the label and message, good when munged vouches that it
 * was made by this process's user. Random nonces for both. */
#ifndef COHORT_AUTH_H
#define COHORT_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define AUTH_KEY_LEN 32
#define AUTH_NONCE_LEN 32
#define AUTH_MAC_LEN 32
#define AUTH_PROOF_MAX 640 /* a munge credential of a short message fits */

enum auth_kind { AUTH_SECRET, AUTH_MUNGE };

struct auth_key {
    enum auth_kind kind;
    uint8_t bytes[AUTH_KEY_LEN]; /* AUTH_SECRET */
    char munge_socket[108];      /* AUTH_MUNGE: munged's socket, "": the default */
};

/* Parses 64 hex digits into an AUTH_SECRET key. The error names the
 * variable, never its value. */
int auth_key_from_hex(const char *name, const char *hex, struct auth_key *key,
                      struct cohort_err *err);

/* Wipes the key from memory. */
void auth_key_clear(struct auth_key *key);

/* Fills out with AUTH_NONCE_LEN bytes from the kernel's CSPRNG (getrandom). */
int auth_nonce(uint8_t out[AUTH_NONCE_LEN], struct cohort_err *err);

/* HMAC-SHA256(key, label || '\0' || msg): label keeps MACs of one kind of
 * message from being replayed as another. Returns 0. */
int auth_mac(const struct auth_key *key, const char *label, const uint8_t *msg, size_t len,
             uint8_t out[AUTH_MAC_LEN]);

/* Whether mac is label's MAC of msg under key, compared in constant time. */
bool auth_check(const struct auth_key *key, const char *label, const uint8_t *msg,
                size_t len, const uint8_t mac[AUTH_MAC_LEN]);

/* Under munge the session's key comes from an X25519 exchange whose
 * public halves the munge proofs cover (munge proves who, not secrecy):
 * a fresh private key and its public half. */
#define AUTH_DH_LEN 32
int auth_dh_keypair(uint8_t priv[AUTH_DH_LEN], uint8_t pub[AUTH_DH_LEN], struct cohort_err *err);
/* The shared value of priv and the peer's pub. */
void auth_dh_shared(const uint8_t priv[AUTH_DH_LEN], const uint8_t peer_pub[AUTH_DH_LEN],
                    uint8_t out[AUTH_DH_LEN]);

/* The key every connection of a step proves: COHORT_SECRET from env, else
 * munge's word for this user (COHORT_MUNGE_SOCKET, else munge's default
 * socket); when neither can be had, one line saying what to do. Used by
 * libcohort's bootstrap and coordinator connections and by the node
 * agent. 0, or -1 with err. */
struct envlist;
int auth_step_key(const struct envlist *env, struct auth_key *key, struct cohort_err *err);

/* An AUTH_MUNGE key, once munged answers at socket (NULL: munge's default)
 * with a credential: else -1 and why, or that this build has no munge. */
int auth_key_munge(const char *socket, struct auth_key *key, struct cohort_err *err);

/* The proof of label || '\0' || msg under key: the MAC, or a munge
 * credential. Returns its length (at most AUTH_PROOF_MAX), or -1 and why. */
int auth_prove(const struct auth_key *key, const char *label, const uint8_t *msg, size_t len,
               uint8_t out[AUTH_PROOF_MAX], struct cohort_err *err);

/* Whether proof is that of label || '\0' || msg under key (for munge: made
 * by this process's user, for exactly that message, not replayed). */
bool auth_verify(const struct auth_key *key, const char *label, const uint8_t *msg, size_t len,
                 const uint8_t *proof, size_t proof_len);

#endif
