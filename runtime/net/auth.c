/* auth.c - proofs of belonging to the step (auth.h): HMAC-SHA256 of the
 * step secret with Nettle, which costs nothing to set up at first use
 * (OpenSSL 3 spent about 2 ms of every task loading its providers, all tasks
 * of a node at once); munge credentials where there is no secret; and
 * which of the two a step's process uses (auth_step_key). */
#include "config.h"

#include "auth.h"

#include "base_sys.h"
#include "base_text.h"
#include "envlist.h"

#include <errno.h>
#include <nettle/curve25519.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_MUNGE
#include <munge.h>
#endif

int auth_key_from_hex(const char *name, const char *hex, struct auth_key *key,
                      struct cohort_err *err)
{
    if (!hex || strlen(hex) != 2 * AUTH_KEY_LEN)
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "%s must be %d hex digits (srun's cohort plugin sets it)", name,
                                2 * AUTH_KEY_LEN);
    if (base_hex_decode(hex, AUTH_KEY_LEN, key->bytes) < 0) {
        auth_key_clear(key);
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "%s must be %d hex digits; it holds other characters", name,
                                2 * AUTH_KEY_LEN);
    }
    key->kind = AUTH_SECRET;
    return 0;
}

void auth_key_clear(struct auth_key *key)
{
    explicit_bzero(key, sizeof *key);
}

/* The kernel's generator. */
int auth_nonce(uint8_t out[AUTH_NONCE_LEN], struct cohort_err *err)
{
    if (base_random(out, AUTH_NONCE_LEN) < 0)
        return cohort_fail_code(err, COHORT_E_RESOURCE,
                                "no random bytes for a bootstrap nonce (getrandom: %s)",
                                strerror(errno));
    return 0;
}

int auth_dh_keypair(uint8_t priv[AUTH_DH_LEN], uint8_t pub[AUTH_DH_LEN], struct cohort_err *err)
{
    if (auth_nonce(priv, err) < 0) /* 32 random bytes; curve25519_mul clamps them */
        return -1;
    curve25519_mul_g(pub, priv);
    return 0;
}

void auth_dh_shared(const uint8_t priv[AUTH_DH_LEN], const uint8_t peer_pub[AUTH_DH_LEN],
                    uint8_t out[AUTH_DH_LEN])
{
    curve25519_mul(out, priv, peer_pub);
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

#ifdef HAVE_MUNGE
static munge_ctx_t munge_context(const struct auth_key *key)
{
    munge_ctx_t ctx = munge_ctx_create();
    if (ctx && key->munge_socket[0] &&
        munge_ctx_set(ctx, MUNGE_OPT_SOCKET, key->munge_socket) != EMUNGE_SUCCESS) {
        munge_ctx_destroy(ctx);
        return NULL;
    }
    return ctx;
}

/* label || '\0' || msg in a new buffer. */
static uint8_t *labelled(const char *label, const uint8_t *msg, size_t len, size_t *total)
{
    size_t label_len = strlen(label) + 1;
    uint8_t *buf = malloc(label_len + len + 1);
    if (buf) {
        memcpy(buf, label, label_len);
        if (len)
            memcpy(buf + label_len, msg, len);
        *total = label_len + len;
    }
    return buf;
}

static int munge_prove(const struct auth_key *key, const char *label, const uint8_t *msg,
                       size_t len, uint8_t out[AUTH_PROOF_MAX], struct cohort_err *err)
{
    size_t total;
    uint8_t *buf = labelled(label, msg, len, &total);
    munge_ctx_t ctx = munge_context(key);
    char *cred = NULL;
    munge_err_t e = buf && ctx ? munge_encode(&cred, ctx, buf, (int)total) : EMUNGE_NO_MEMORY;
    int n = -1;
    if (e != EMUNGE_SUCCESS)
        cohort_fail_code(err, COHORT_E_AUTH, "munge cannot make a credential (%s)",
                         ctx ? munge_ctx_strerror(ctx) : munge_strerror(e));
    else if (strlen(cred) >= AUTH_PROOF_MAX)
        cohort_fail_code(err, COHORT_E_AUTH, "the munge credential is longer than %d bytes",
                         AUTH_PROOF_MAX - 1);
    else {
        n = (int)strlen(cred);
        memcpy(out, cred, (size_t)n);
    }
    free(cred);
    free(buf);
    if (ctx)
        munge_ctx_destroy(ctx);
    return n;
}

static bool munge_verify(const struct auth_key *key, const char *label, const uint8_t *msg,
                         size_t len, const uint8_t *proof, size_t proof_len)
{
    char cred[AUTH_PROOF_MAX + 1];
    size_t total;
    if (proof_len == 0 || proof_len > AUTH_PROOF_MAX || memchr(proof, '\0', proof_len))
        return false;
    memcpy(cred, proof, proof_len);
    cred[proof_len] = '\0';
    uint8_t *want = labelled(label, msg, len, &total);
    munge_ctx_t ctx = munge_context(key);
    void *got = NULL;
    int got_len = 0;
    uid_t uid;
    gid_t gid;
    bool same = want && ctx &&
                munge_decode(cred, ctx, &got, &got_len, &uid, &gid) == EMUNGE_SUCCESS &&
                uid == geteuid() && (size_t)got_len == total && memcmp(got, want, total) == 0;
    free(got);
    free(want);
    if (ctx)
        munge_ctx_destroy(ctx);
    return same;
}
#endif

int auth_key_munge(const char *socket, struct auth_key *key, struct cohort_err *err)
{
#ifdef HAVE_MUNGE
    uint8_t proof[AUTH_PROOF_MAX];
    key->kind = AUTH_MUNGE;
    if (snprintf(key->munge_socket, sizeof key->munge_socket, "%s", socket ? socket : "") >=
        (int)sizeof key->munge_socket)
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "the munge socket path is longer than %zu bytes",
                                sizeof key->munge_socket - 1);
    return munge_prove(key, "cohort-probe", NULL, 0, proof, err) < 0 ? -1 : 0;
#else
    (void)socket;
    (void)key;
    return cohort_fail_code(err, COHORT_E_CONFIG, "this libcohort was built without munge");
#endif
}

int auth_prove(const struct auth_key *key, const char *label, const uint8_t *msg, size_t len,
               uint8_t out[AUTH_PROOF_MAX], struct cohort_err *err)
{
#ifdef HAVE_MUNGE
    if (key->kind == AUTH_MUNGE)
        return munge_prove(key, label, msg, len, out, err);
#endif
    (void)err;
    auth_mac(key, label, msg, len, out);
    return AUTH_MAC_LEN;
}

bool auth_verify(const struct auth_key *key, const char *label, const uint8_t *msg, size_t len,
                 const uint8_t *proof, size_t proof_len)
{
#ifdef HAVE_MUNGE
    if (key->kind == AUTH_MUNGE)
        return munge_verify(key, label, msg, len, proof, proof_len);
#endif
    return proof_len == AUTH_MAC_LEN && auth_check(key, label, msg, len, proof);
}

int auth_step_key(const struct envlist *env, struct auth_key *key, struct cohort_err *err)
{
    const char *secret = envlist_get(env, "COHORT_SECRET");
    if (secret)
        return auth_key_from_hex("COHORT_SECRET", secret, key, err);
    /* no plugin: munge vouches for the user instead, where it runs */
    const char *socket = envlist_get(env, "COHORT_MUNGE_SOCKET");
    struct cohort_err why;
    if (auth_key_munge(socket, key, &why) == 0)
        return 0;
    return cohort_fail_code(err, COHORT_E_CONFIG,
                            "COHORT_SECRET is not set and munge cannot stand in (%s): the "
                            "cohort plugin sets it for every step (srun --cohort=env|train|infer); "
                            "without the plugin, export 64 random hex digits as COHORT_SECRET "
                            "before srun (with srun --export=NONE or a list, name it there: "
                            "--export=COHORT_SECRET=...), or run munged%s",
                            why.msg,
                            socket ? "" : " (or name its socket: --export=COHORT_MUNGE_SOCKET=PATH)");
}
