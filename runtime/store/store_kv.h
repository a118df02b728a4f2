/* store_kv.h - the keys, values and waits of a step's store, as PyTorch's
 * TCPStore serves them, with no socket and no clock: queries in (op and
 * body, tcpstore.h), answers out through a callback, now or when a key a
 * client waits for is set, or one it watches changes (torch 1.x's
 * WATCH_KEY: each change is a message to the watching client, as TCPStore
 * sends it, one per change however often the client asked to watch the
 * key; 65536 keys watched at most per client); torch 2.x's queues
 * (QUEUE_PUSH, QUEUE_POP, QUEUE_LEN; a value on a key's queue ends a WAIT
 * or CHECK of the key, as a set key does, and a push wakes the client that
 * has waited for the key longest). Clients are numbers the caller gives.
 * What TCPStore's server does not serve (it drops the client) is a failure
 * with a sentence: a GET or MULTI_GET of a key not set, an ADD to a value
 * that is not a number; and, where TCPStore has no limit, an APPEND past
 * TS_VALUE_MAX, a MULTI_GET answer over STORE_ANSWER_MAX and a client's
 * WATCH_KEY of a 65537th key. Every query
 * costs what its keys and values weigh: a WAIT naming one key 2^20 times
 * costs 2^20 steps to make, to answer and to end. Timeouts are the
 * client's own, as with TCPStore: a wait here lasts until its keys are
 * set, the client cancels it or goes. */
#ifndef COHORT_STORE_KV_H
#define COHORT_STORE_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcpstore.h"

enum { STORE_OK = 0, STORE_FAIL = -1, STORE_ENOMEM = -2 };

/* The longest answer given (MULTI_GET's, and a watch's message, the ones
 * that can be longer than a value): it fits in one of cohort's frames with
 * its head. */
#define STORE_ANSWER_MAX ((64u << 20) - 64)

/* Sends an answer's bytes to a client: 0; -1 when out of memory; or 1 when
 * the caller refuses them and closes the client instead (having told it
 * why): the store then sends it nothing more, and ends its wait and
 * watches once the query being served is done, as if it had gone (a push
 * whose answer to a waiting client is refused wakes the next). */
typedef int (*store_reply_fn)(void *ctx, uint64_t client, const uint8_t *p, size_t len);

struct store_kv;

/* An empty store answering through reply(ctx, ...). STORE_OK or STORE_ENOMEM. */
int store_kv_new(store_reply_fn reply, void *ctx, struct store_kv **out);
void store_kv_free(struct store_kv *kv);

/* Serves one query of client (a body ts_next found whole): STORE_OK,
 * STORE_FAIL with why (the client is to be dropped, as TCPStore drops
 * it), or STORE_ENOMEM. */
int store_kv_query(struct store_kv *kv, uint64_t client, enum ts_op op, const uint8_t *body,
                   size_t len, char *why, size_t why_len);

/* The client is gone: its wait ends unanswered, its watches end. */
void store_kv_gone(struct store_kv *kv, uint64_t client);

/* Every client whose number's top 32 bits are group is gone. */
void store_kv_gone_group(struct store_kv *kv, uint32_t group);

/* Calls fn for each client waiting, with the first of its keys whose set
 * it still waits for (a key set since the wait began counts, even if
 * deleted after). key is the store's own copy, at the same address for as
 * long as the store lives: one key, one address. */
void store_kv_waiters(const struct store_kv *kv,
                      void (*fn)(void *ctx, uint64_t client, const uint8_t *key, size_t len),
                      void *ctx);

/* Keys set (what GETNUMKEYS answers). */
int64_t store_kv_size(const struct store_kv *kv);

#endif
