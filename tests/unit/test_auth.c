/* test_auth.c - the step secret as a key, and HMAC proofs: one key, label
 * and message give one MAC; any change to them, or to the MAC, fails the
 * check; errors never echo the secret. */
#include <string.h>

#include "auth.h"
#include "tap.h"

int main(void)
{
    struct auth_key k1, k2;
    struct cohort_err err;
    const char *hex1 = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
    const char *hex2 = "f0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    ok(auth_key_from_hex("COHORT_SECRET", hex1, &k1, &err) == 0 && k1.bytes[0] == 0x00 &&
           k1.bytes[5] == 0x55 && k1.bytes[31] == 0xff,
       "64 hex digits (either case) become the 32-byte key");
    ok(auth_key_from_hex("COHORT_SECRET", hex2, &k2, &err) == 0, "a second key");
    ok(auth_key_from_hex("COHORT_SECRET", "abc", &k2, &err) < 0 &&
           strstr(err.msg, "COHORT_SECRET must be 64 hex digits"),
       "a short secret: %s", err.msg);
    char bad[65];
    memcpy(bad, hex2, 65);
    bad[40] = 'z';
    ok(auth_key_from_hex("COHORT_SECRET", bad, &k2, &err) < 0 && !strstr(err.msg, "f011") &&
           !strstr(err.msg, "z"),
       "a secret with other characters, not echoed: %s", err.msg);
    auth_key_from_hex("COHORT_SECRET", hex2, &k2, &err);

    const uint8_t msg[] = "rank 5 node 1 nonce ...";
    uint8_t mac[AUTH_MAC_LEN], again[AUTH_MAC_LEN], other[AUTH_MAC_LEN];
    ok(auth_mac(&k1, "hello", msg, sizeof msg, mac) == 0 &&
           auth_mac(&k1, "hello", msg, sizeof msg, again) == 0 &&
           memcmp(mac, again, AUTH_MAC_LEN) == 0,
       "a MAC is a function of key, label and message");
    ok(auth_check(&k1, "hello", msg, sizeof msg, mac), "the right MAC checks");
    ok(!auth_check(&k2, "hello", msg, sizeof msg, mac), "another key fails");
    ok(!auth_check(&k1, "welcome", msg, sizeof msg, mac), "another label fails (no replay "
                                                          "of one message kind as another)");
    ok(!auth_check(&k1, "hello", msg, sizeof msg - 1, mac), "another message fails");
    memcpy(other, mac, AUTH_MAC_LEN);
    other[AUTH_MAC_LEN - 1] ^= 1;
    ok(!auth_check(&k1, "hello", msg, sizeof msg, other), "a flipped bit fails");
    ok(auth_mac(&k1, "", NULL, 0, mac) == 0 && auth_check(&k1, "", NULL, 0, mac),
       "empty label and message");
    static const uint8_t kat[AUTH_MAC_LEN] = {
        0xae, 0x30, 0x4b, 0x77, 0x24, 0xe8, 0x06, 0xe6, 0x32, 0x07, 0x38, 0xdd, 0xf0, 0xc4, 0x5a, 0x93,
        0xf0, 0x81, 0xad, 0x7f, 0xa2, 0x68, 0x43, 0x6b, 0x4e, 0xa2, 0xb6, 0x07, 0x3c, 0xcd, 0x41, 0x78};
    ok(auth_mac(&k1, "kat", (const uint8_t *)"abc", 3, mac) == 0 &&
           memcmp(mac, kat, AUTH_MAC_LEN) == 0,
       "the MAC is standard HMAC-SHA256 of \"kat\\0abc\" (value from Python's hmac)");
    uint8_t n1[AUTH_NONCE_LEN], n2[AUTH_NONCE_LEN];
    ok(auth_nonce(n1, &err) == 0 && auth_nonce(n2, &err) == 0 &&
           memcmp(n1, n2, AUTH_NONCE_LEN) != 0,
       "two nonces differ");
    return tap_done();
}
