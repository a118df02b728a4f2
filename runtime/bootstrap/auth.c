/* auth.c - HMAC-SHA256 proofs of the step secret (auth.h). */
#include "auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int auth_key_from_hex(const char *name, const char *hex, struct auth_key *key,
                      struct cohort_err *err)
{
    if (!hex || strlen(hex) != 2 * AUTH_KEY_LEN)
        return cohort_fail(err, "%s must be %d hex digits (srun's cohort plugin sets it)",
                           name, 2 * AUTH_KEY_LEN);
    for (size_t i = 0; i < AUTH_KEY_LEN; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            auth_key_clear(key);
            return cohort_fail(err, "%s must be %d hex digits; it holds other characters",
                               name, 2 * AUTH_KEY_LEN);
        }
        key->bytes[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

void auth_key_clear(struct auth_key *key)
{
    OPENSSL_cleanse(key, sizeof *key);
}

int auth_nonce(uint8_t out[AUTH_NONCE_LEN], struct cohort_err *err)
{
    if (RAND_bytes(out, AUTH_NONCE_LEN) != 1)
        return cohort_fail(err, "no random bytes from OpenSSL for a bootstrap nonce");
    return 0;
}

int auth_mac(const struct auth_key *key, const char *label, const uint8_t *msg, size_t len,
             uint8_t out[AUTH_MAC_LEN])
{
    size_t label_len = strlen(label) + 1;
    uint8_t *buf = malloc(label_len + len);
    if (!buf)
        return -1;
    memcpy(buf, label, label_len);
    if (len)
        memcpy(buf + label_len, msg, len);
    unsigned int out_len = 0;
    const unsigned char *mac = HMAC(EVP_sha256(), key->bytes, AUTH_KEY_LEN, buf,
                                    label_len + len, out, &out_len);
    free(buf);
    return mac && out_len == AUTH_MAC_LEN ? 0 : -1;
}

bool auth_check(const struct auth_key *key, const char *label, const uint8_t *msg,
                size_t len, const uint8_t mac[AUTH_MAC_LEN])
{
    uint8_t want[AUTH_MAC_LEN];
    bool same = auth_mac(key, label, msg, len, want) == 0 &&
                CRYPTO_memcmp(want, mac, AUTH_MAC_LEN) == 0;
    OPENSSL_cleanse(want, sizeof want);
    return same;
}
