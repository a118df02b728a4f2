/* auth.c - HMAC-SHA256 proofs of the step secret (auth.h), with Nettle:
 * no set-up cost at first use (OpenSSL 3 spent about 2 ms of every task
 * loading its providers, all tasks of a node at once). */
#include "auth.h"

#include <errno.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <string.h>
#include <sys/random.h>

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
    explicit_bzero(key, sizeof *key);
}

/* The kernel's generator. */
int auth_nonce(uint8_t out[AUTH_NONCE_LEN], struct cohort_err *err)
{
    size_t got = 0;
    while (got < AUTH_NONCE_LEN) {
        ssize_t n = getrandom(out + got, AUTH_NONCE_LEN - got, 0);
        if (n < 0 && errno != EINTR)
            return cohort_fail(err, "no random bytes for a bootstrap nonce (getrandom: %s)",
                               strerror(errno));
        got += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

int auth_mac(const struct auth_key *key, const char *label, const uint8_t *msg, size_t len,
             uint8_t out[AUTH_MAC_LEN])
{
    struct hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, AUTH_KEY_LEN, key->bytes);
    hmac_sha256_update(&ctx, strlen(label) + 1, (const uint8_t *)label);
    if (len)
        hmac_sha256_update(&ctx, len, msg);
    hmac_sha256_digest(&ctx, AUTH_MAC_LEN, out);
    explicit_bzero(&ctx, sizeof ctx);
    return 0;
}

bool auth_check(const struct auth_key *key, const char *label, const uint8_t *msg,
                size_t len, const uint8_t mac[AUTH_MAC_LEN])
{
    uint8_t want[AUTH_MAC_LEN];
    auth_mac(key, label, msg, len, want);
    bool same = memeql_sec(want, mac, AUTH_MAC_LEN);
    explicit_bzero(want, sizeof want);
    return same;
}
