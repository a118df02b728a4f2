/* session.h - what keeps a connection's frames honest after its handshake:
 * two keys derived from the handshake (one per direction) and a sequence
 * number per direction. Every frame carries HMAC-SHA256(direction key,
 * sequence || header || payload) as its trailer; the sequence is never
 * sent, so a frame that was changed, replayed, reordered, dropped or
 * injected fails the next check. */
#ifndef COHORT_SESSION_H
#define COHORT_SESSION_H

#include <nettle/hmac.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SESSION_MAC_LEN 32

struct session {
    bool on;
    struct hmac_sha256_ctx send, recv;
    uint64_t send_seq, recv_seq;
};

/* Starts the session from the handshake's shared base key (32 bytes): the
 * child sends with the "up" key and receives with "down", the parent the
 * other way round. */
void session_start(struct session *s, const uint8_t base[32], bool is_parent);

/* The trailer of the next frame sent (header and payload as bytes), and
 * advances the send sequence. */
void session_seal(struct session *s, const uint8_t *header, const uint8_t *payload,
                  uint32_t len, uint8_t mac[SESSION_MAC_LEN]);

/* Whether mac is the trailer of the next frame expected; the receive
 * sequence advances only in session_advance (a frame may be checked again
 * before it is taken). */
bool session_check(struct session *s, const uint8_t *header, const uint8_t *payload,
                   uint32_t len, const uint8_t *mac);
void session_advance(struct session *s);

/* Wipes the keys. */
void session_clear(struct session *s);

#endif
