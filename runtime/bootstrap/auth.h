/* auth.h - proof of holding the step's secret, with Nettle's HMAC-SHA256:
 * the 32-byte key from COHORT_SECRET (64 hex digits), random nonces, MACs
 * over a label and a message, and constant-time comparison. The secret
 * never appears in an error message. */
#ifndef COHORT_AUTH_H
#define COHORT_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define AUTH_KEY_LEN 32
#define AUTH_NONCE_LEN 32
#define AUTH_MAC_LEN 32

struct auth_key {
    uint8_t bytes[AUTH_KEY_LEN];
};

/* Parses 64 hex digits. The error names the variable, never its value. */
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

#endif
